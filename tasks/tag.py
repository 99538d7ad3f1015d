"""Tag every column with a role, and keep direct identifiers out of the release.

Declared roles come from the spec. Every undeclared column is tagged automatically, first rule wins, and the
reason is recorded:

1. direct identifier by name (name, email, phone, SSN, record id, ...);
2. quasi-identifier by a well-known name (age, sex/gender, zip/postcode, birth date, race, marital status,
   education, occupation, country);
3. direct identifier by values: most sampled values look like e-mail addresses, phone numbers or SSNs, or a
   text/integer column is near-unique (distinct / non-missing >= ``tagging.near_unique_ratio``);
4. quasi-identifier by re-identification contribution: adding the column to the quasi-identifiers found so far
   raises the share of sample-unique records by at least ``tagging.reid_contribution``;
5. otherwise "other".

Reasons hold rates and counts, never values.
"""

from __future__ import annotations

import hashlib
import hmac
import re

import pandas as pd

from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.schemas.spec import ColumnKind, IdentifierPolicy, ReleaseSpec, Role
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.core.groups import unique_share

_IDENTIFIER_TOKENS = {
    "name", "names", "firstname", "lastname", "surname", "fullname", "forename", "email", "mail", "phone",
    "telephone", "mobile", "fax", "ssn", "nino", "passport", "uuid", "guid", "id", "ids",
    "identifier", "iban", "mrn", "address", "street", "username", "login", "rownames",
}
_IDENTIFIER_PHRASES = {
    ("social", "security"), ("record", "id"), ("first", "name"), ("last", "name"), ("full", "name"),
    ("e", "mail"), ("phone", "number"), ("account", "number"), ("customer", "number"), ("patient", "number"),
    ("medical", "record"), ("ip", "address"), ("national", "id"), ("row", "names"),
}
_QI_TOKENS = {
    "age": "age", "sex": "sex", "gender": "gender", "zip": "zip code", "zipcode": "zip code",
    "postcode": "postcode", "postalcode": "postcode", "birth": "birth date", "birthdate": "birth date",
    "birthday": "birth date", "dob": "birth date", "race": "race", "ethnicity": "race/ethnicity",
    "marital": "marital status", "education": "education", "occupation": "occupation", "country": "country",
    "nationality": "country", "yob": "birth date",
}
_QI_PHRASES = {("postal", "code"): "postcode", ("zip", "code"): "zip code", ("date", "of", "birth"): "birth date"}

_VALUE_PATTERNS = {
    "e-mail addresses": re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$"),
    "US social security numbers": re.compile(r"^\d{3}-\d{2}-\d{4}$"),
    "phone numbers": re.compile(r"^\+?\(?\d{1,4}\)?([\s.-]?\(?\d{2,4}\)?){2,5}$"),
}
_PATTERN_SHARE = 0.9
_SAMPLE = 2000
_MIN_ROWS_NEAR_UNIQUE = 20


def tokens(name: str) -> list[str]:
    """``"Patient-ID"`` -> ``["patient", "id"]``; ``"maritalStatus"`` -> ``["marital", "status"]``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def _has_phrase(toks: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(toks[i : i + n]) == phrase for i in range(len(toks) - n + 1))


def name_rule(name: str) -> tuple[Role, str] | None:
    """Role implied by a column's name alone, with the reason; None when the name says nothing."""
    toks = tokens(name)
    for phrase in _IDENTIFIER_PHRASES:
        if _has_phrase(toks, phrase):
            return Role.identifier, f"name matches direct identifier '{' '.join(phrase)}'"
    for t in toks:
        if t in _IDENTIFIER_TOKENS:
            return Role.identifier, f"name contains direct identifier word '{t}'"
    for phrase, label in _QI_PHRASES.items():
        if _has_phrase(toks, phrase):
            return Role.quasi_identifier, f"name matches well-known quasi-identifier ({label})"
    for t in toks:
        if t in _QI_TOKENS:
            return Role.quasi_identifier, f"name matches well-known quasi-identifier ({_QI_TOKENS[t]})"
    return None


def quasi_identifier_candidates(spec: ReleaseSpec, header: list[str]) -> list[str]:
    """Declared quasi-identifiers and the undeclared columns whose names make them quasi-identifiers (known
    from the header alone, before any data is read)."""
    declared = spec.declared()
    out = [n for n, c in declared.items() if c.role is Role.quasi_identifier]
    if spec.tagging.auto:
        for name in header:
            if name not in declared and (rule := name_rule(name)) is not None and rule[0] is Role.quasi_identifier:
                out.append(name)
    return out


def value_rule(series: pd.Series, near_unique_ratio: float) -> tuple[Role, str] | None:
    """Direct identifier judged from values: identifier-shaped text, or a near-unique text/integer column."""
    values = series.dropna()
    if values.empty:
        return None
    is_text = pd.api.types.is_string_dtype(series) or series.dtype == object
    if is_text:
        sample = values.astype(str).str.strip()
        if len(sample) > _SAMPLE:
            sample = sample.sample(_SAMPLE, random_state=0)
        for label, pattern in _VALUE_PATTERNS.items():
            share = float(sample.str.match(pattern).mean())
            if share >= _PATTERN_SHARE:
                return Role.identifier, f"{share:.0%} of {len(sample)} sampled values look like {label}"
    if (is_text or pd.api.types.is_integer_dtype(series)) and len(values) >= _MIN_ROWS_NEAR_UNIQUE:
        ratio = values.nunique() / len(values)
        if ratio >= near_unique_ratio:
            return Role.identifier, f"near-unique: {ratio:.1%} of non-missing values are distinct"
    return None


_CODE_LABELS = {"zip code", "postcode"}
MAX_ONE_HOT = 100  # a nominal column with more categories is encoded by sorted rank instead of one-hot


def infer_kind(series: pd.Series, role: Role, name_reason: str | None = None) -> ColumnKind:
    """Nominal for labels, identifiers, booleans, text and postal codes (numbers that are codes); numeric for
    other number columns and for dates; ordinal (sorted rank) for a text column with more than 100 categories,
    whose one-hot encoding would dominate every distance."""
    if role in (Role.class_, Role.identifier):
        return ColumnKind.nominal
    if pd.api.types.is_datetime64_any_dtype(series):
        return ColumnKind.numeric
    if pd.api.types.is_bool_dtype(series):
        return ColumnKind.nominal
    is_code = name_reason is not None and any(f"({label})" in name_reason for label in _CODE_LABELS)
    if pd.api.types.is_numeric_dtype(series) and not is_code:
        return ColumnKind.numeric
    if series.nunique(dropna=True) > MAX_ONE_HOT:
        return ColumnKind.ordinal
    return ColumnKind.nominal


def _kind_note(kind: ColumnKind, series: pd.Series, declared: bool) -> str:
    if kind is ColumnKind.ordinal and not declared and not pd.api.types.is_numeric_dtype(series):
        return f"; {series.nunique(dropna=True)} categories: encoded by sorted rank, not one-hot"
    return ""


def tag_columns(frame: pd.DataFrame, spec: ReleaseSpec) -> Roles:
    """Give every column of ``frame`` a role, a kind and the reason for both."""
    declared = spec.declared()
    tags: dict[str, ColumnTag] = {}
    for name, col in declared.items():
        kind = col.kind or infer_kind(frame[name], col.role, (name_rule(name) or (None, None))[1])
        if col.role is Role.class_:
            kind = ColumnKind.nominal
        series = frame[name]
        if kind is ColumnKind.numeric and not (pd.api.types.is_numeric_dtype(series)
                                               or pd.api.types.is_datetime64_any_dtype(series)):
            raise SpecError(f"spec columns.{name}: declared numeric but the column is not numbers")
        reason = "declared in spec" + ("" if col.kind else _kind_note(kind, series, False))
        tags[name] = ColumnTag(name=name, role=col.role, kind=kind, source="declared", reason=reason, order=col.order)

    undeclared = [c for c in frame.columns if c not in declared]
    pending: list[str] = []
    for name in undeclared:
        rule = name_rule(name) if spec.tagging.auto else None
        if rule is None:
            pending.append(name)
            continue
        role, reason = rule
        kind = infer_kind(frame[name], role, reason)
        tags[name] = ColumnTag(name=name, role=role, kind=kind, source="auto",
                               reason=reason + _kind_note(kind, frame[name], False))

    qis = [n for n, t in tags.items() if t.role is Role.quasi_identifier]
    base = unique_share(frame, qis) if spec.tagging.auto else 0.0
    for name in pending:
        series = frame[name]
        role, reason = Role.other, "no identifying name, values or re-identification contribution"
        if not spec.tagging.auto:
            reason = "not declared (automatic tagging is off)"
        elif (rule := value_rule(series, spec.tagging.near_unique_ratio)) is not None:
            role, reason = rule
        else:
            with_col = unique_share(frame, [*qis, name])
            if with_col - base >= spec.tagging.reid_contribution:
                role = Role.quasi_identifier
                reason = (
                    f"re-identification contribution: sample uniques rise from {base:.1%} to {with_col:.1%} "
                    "when added to the quasi-identifiers"
                )
        kind = infer_kind(series, role)
        tags[name] = ColumnTag(name=name, role=role, kind=kind, source="auto", reason=reason + _kind_note(kind, series,
                                                                                                        False))

    return Roles(columns=[tags[c] for c in frame.columns])


def pseudonym(values: pd.Series, key: bytes) -> pd.Series:
    """Keyed HMAC-SHA256 of each value's text (hex); missing stays missing."""

    def one(v: object) -> str:
        return hmac.new(key, str(v).encode("utf-8"), hashlib.sha256).hexdigest()

    out = values.map(one, na_action="ignore")
    return out.astype("string")


def protect_identifiers(frame: pd.DataFrame, roles: Roles, policy: IdentifierPolicy, key: bytes | None) -> pd.DataFrame:
    """Drop direct identifiers, or replace them by keyed pseudonyms; the input frame is not changed."""
    ids = roles.identifiers
    if not ids:
        return frame.copy()
    if policy.action == "drop":
        return frame.drop(columns=ids)
    if not key:
        raise SpecError(
            f"spec identifiers.action: pseudonymize needs a key: set the environment variable {policy.key_env}"
            + (f" or the Prefect Secret block '{policy.key_secret_block}'" if policy.key_secret_block else "")
        )
    out = frame.copy()
    for name in ids:
        out[name] = pseudonym(out[name], key)
    return out
