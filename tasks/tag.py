"""Tag every column with a role and a treatment, and keep direct identifiers and free text out of the release.

Declared roles come from the spec. Every undeclared column is tagged automatically, first rule wins, and the
reason is recorded:

1. direct identifier by name (name, email, phone, SSN, record id, ...);
2. quasi-identifier by a well-known name (age, sex/gender, zip/postcode, birth date, race, marital status,
   education, occupation, country);
3. direct identifier by values: most sampled values look like e-mail addresses, phone numbers or SSNs (or
   another identifier pattern below), or a text/integer column is near-unique (distinct / non-missing >=
   ``tagging.near_unique_ratio``);
4. quasi-identifier by re-identification contribution: adding the column to the quasi-identifiers found so far
   raises the share of sample-unique records by at least ``tagging.reid_contribution``;
5. otherwise "other".

Treatments (:attr:`ColumnTag.treatment`): identifiers (declared or not) are "dropped" or "pseudonymized" per
``identifiers.action``. An undeclared *text* column that is not an identifier is checked by the conservative
rules of :func:`undeclared_risk` (after rules 1-3, whether or not ``tagging.auto`` is on; a column that looks
like prose is checked before rule 3, so that free text is dropped, never pseudonymized); if one fires, then
per ``tagging.undeclared`` the column is dropped (role "other", treatment "dropped", the rule in the reason),
the release is refused (:class:`SpecError` naming the column by position and name), or it is kept as before.
The conservative rules, over the column's non-missing values (a seeded sample of 100,000 cells for larger
columns; cells compared as text):

* identifier pattern: at least 1% of values (each counted under the first pattern it matches) contain an
  e-mail address, a URL, a US SSN (``123-45-6789`` or with spaces), a payment card number (13-19 digits,
  Luhn-checked), an IBAN (mod-97-checked), an IPv4/IPv6 address (validated), or are a phone number as a whole
  (7-15 digits with separators, ``+`` or ``00``; dates and decimal numbers excluded);
* many distinct values: distinct / non-missing >= 50%, for columns with at least 20 non-missing values (below
  that a ratio says little; the rare-value rule of :mod:`tasks.rare` still merges every value seen fewer than
  k times);
* prose: a cell is prose-like when it has at least 5 words (whitespace-separated tokens holding a letter) or at
  least 80 characters; the column is prose when prose-like cells are at least 10% of its values and there are
  at least 5 distinct prose-like values (a handful of long category labels is not prose).

Reasons and messages hold rates and counts, never values.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from typing import TYPE_CHECKING

import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.core.groups import unique_share
from ppdp.tasks.core.labels import column_label
from ppdp.tasks.utility import check_regression_targets

if TYPE_CHECKING:
    from ppdp.schemas.spec import ColumnSpec, IdentifierPolicy, ReleaseSpec, TaggingSpec

_IDENTIFIER_TOKENS = {
    "name", "names", "firstname", "lastname", "surname", "fullname", "forename", "email", "mail", "phone",
    "telephone", "mobile", "fax", "ssn", "nino", "passport", "uuid", "guid", "id", "ids",
    "identifier", "iban", "mrn", "address", "street", "username", "login", "rownames",
}
_IDENTIFIER_PHRASES: set[tuple[str, ...]] = {
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

_PATTERN_SHARE = 0.9
_SAMPLE = 2000
_MIN_ROWS_NEAR_UNIQUE = 20

# -- conservative rules for undeclared text columns (see the module docstring) -------------------------------
PATTERN_MIN_SHARE = 0.01
DISTINCT_MIN_SHARE = 0.5
DISTINCT_MIN_VALUES = 20
PROSE_MIN_WORDS = 5
PROSE_MIN_CHARS = 80
PROSE_MIN_SHARE = 0.1
PROSE_MIN_DISTINCT = 5
SCAN_ROWS = 100_000

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
_URL = re.compile(r"(?i)\b(?:https?|ftp)://[^\s/$.?#][^\s]*|\bwww\.[\w-]+\.[a-z]{2,}")
_SSN = re.compile(r"(?<![\d-])\d{3}([- ])\d{2}\1\d{4}(?![\d-])")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])")
_PHONE = re.compile(r"^(?:\+|00)?[\d\s().-]{7,22}$")
_PHONE_NOT = re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$|^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$|^[+-]?\d+(?:\.\d+)?$")
_WORD = re.compile(r"\S*[^\W\d_]\S*")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _has_card(text: str) -> bool:
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and _luhn(digits):
            return True
    return False


def _has_iban(text: str) -> bool:
    for m in _IBAN.finditer(text):
        code = m.group().replace(" ", "")
        if 15 <= len(code) <= 34:
            moved = code[4:] + code[:4]
            if int("".join(str(int(c, 36)) for c in moved)) % 97 == 1:
                return True
    return False


def _has_ip(text: str) -> bool:
    for m in _IPV4.finditer(text):
        if all(int(part) <= 255 for part in m.group().split(".")):
            return True
    if ":" in text:
        for m in _IPV6.finditer(text):
            candidate = m.group()
            if sum(c.isalnum() for c in candidate) >= 4:
                try:
                    ipaddress.IPv6Address(candidate)
                    return True
                except ValueError:
                    continue
    return False


def _is_phone(text: str) -> bool:
    text = text.strip()
    if not _PHONE.match(text) or _PHONE_NOT.match(text):
        return False
    digits = sum(c.isdigit() for c in text)
    separated = text.startswith(("+", "00", "(")) or bool(re.search(r"\d[\s().-]+\d", text))
    return 7 <= digits <= 15 and separated


IDENTIFIER_DETECTORS = {  # in priority order: a value is counted under the first that matches
    "e-mail addresses": lambda t: _EMAIL.search(t) is not None,
    "URLs": lambda t: _URL.search(t) is not None,
    "US social security numbers": lambda t: _SSN.search(t) is not None,
    "payment card numbers": _has_card,
    "IBANs": _has_iban,
    "IP addresses": _has_ip,
    "phone numbers": _is_phone,
}
"""Label -> test of one value's text: does it hold (or, for phone numbers, is it) that kind of identifier. A
value is counted under the first detector that matches (an SSN is not also a phone number)."""


def is_text(series: pd.Series) -> bool:
    """Text columns: str / object dtype, or categorical with non-numeric categories."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return not pd.api.types.is_numeric_dtype(series.cat.categories.dtype)
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        return False
    return pd.api.types.is_string_dtype(series) or series.dtype == object


def _text_counts(values: pd.Series) -> pd.Series:
    """Non-missing values as text -> how many cells hold each (a seeded sample of SCAN_ROWS cells if larger)."""
    if len(values) > SCAN_ROWS:
        values = values.sample(SCAN_ROWS, random_state=0)
    return values.astype(str).value_counts(sort=False)


def identifier_shares(counts: pd.Series) -> dict[str, float]:
    """Share of cells (``counts``: text value -> cells) under each identifier detector (the first that matches)."""
    total = int(counts.sum())
    cells_of = dict.fromkeys(IDENTIFIER_DETECTORS, 0)
    for text, cells in zip(counts.index.to_list(), counts.to_numpy()):
        label = next((label for label, test in IDENTIFIER_DETECTORS.items() if test(text)), None)
        if label is not None:
            cells_of[label] += int(cells)
    return {label: cells / total if total else 0.0 for label, cells in cells_of.items()}


def undeclared_risk(series: pd.Series) -> str | None:
    """Why an undeclared text column could identify someone or carry free text; None when no rule fires.

    The rules and thresholds are in the module docstring. The answer holds rates and counts, never values.
    """
    return "; ".join(undeclared_risks(series).values()) or None


def undeclared_risks(series: pd.Series) -> dict[str, str]:
    """The conservative rules that fire on a text column: ``{"pattern" | "distinct" | "prose": reason}``."""
    values = series.dropna()
    n = len(values)
    if n == 0 or not is_text(series):
        return {}
    reasons: dict[str, str] = {}
    counts = _text_counts(values)
    scanned = int(counts.sum())
    of = f"of {scanned} {'sampled ' if scanned < n else ''}non-missing values"
    hits = [(share, label) for label, share in identifier_shares(counts).items() if share >= PATTERN_MIN_SHARE]
    if hits:
        share, label = max(hits)
        reasons["pattern"] = (f"identifier pattern: {share:.1%} {of} hold {label}"
                              + (f" (and {len(hits) - 1} other pattern(s))" if len(hits) > 1 else ""))
    distinct = int(values.astype(str).nunique()) if scanned < n else len(counts)
    if n >= DISTINCT_MIN_VALUES and distinct / n >= DISTINCT_MIN_SHARE:
        reasons["distinct"] = (f"many distinct values: {distinct} distinct among {n} non-missing values "
                               f"({distinct / n:.1%} >= {DISTINCT_MIN_SHARE:.0%})")
    texts = counts.index.to_series(index=pd.RangeIndex(len(counts))).astype(str)
    prose = ((texts.str.count(_WORD.pattern) >= PROSE_MIN_WORDS) | (texts.str.len() >= PROSE_MIN_CHARS)).to_numpy()
    prose_share = float(counts.to_numpy()[prose].sum()) / scanned
    if prose_share >= PROSE_MIN_SHARE and int(prose.sum()) >= PROSE_MIN_DISTINCT:
        reasons["prose"] = (f"prose: {prose_share:.1%} {of} have >= {PROSE_MIN_WORDS} words or >= "
                            f"{PROSE_MIN_CHARS} characters ({int(prose.sum())} distinct)")
    return reasons


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
    """Direct identifier judged from values: identifier-shaped text (most sampled values hold one of
    :data:`IDENTIFIER_DETECTORS`), or a near-unique text/integer column."""
    values = series.dropna()
    if values.empty:
        return None
    text = is_text(series)
    if text:
        sample = values.astype(str).str.strip()
        if len(sample) > _SAMPLE:
            sample = sample.sample(_SAMPLE, random_state=0)
        shares = identifier_shares(sample.value_counts(sort=False))
        label, share = max(shares.items(), key=lambda item: item[1])
        if share >= _PATTERN_SHARE:
            return Role.identifier, f"{share:.0%} of {len(sample)} sampled values look like {label}"
    if (text or pd.api.types.is_integer_dtype(series)) and len(values) >= _MIN_ROWS_NEAR_UNIQUE:
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
    """Give every column of ``frame`` a role, a kind, a treatment and the reason for them, as the spec declares
    and tags them (:func:`tag_frame`); a ``utility.regression`` column that is not a numeric attribute is a
    :class:`SpecError` naming it."""
    roles = tag_frame(frame, spec.declared(), spec.tagging, spec.identifiers.action)
    check_regression_targets(spec.utility, roles)
    return roles


def tag_frame(frame: pd.DataFrame, declared: dict[str, ColumnSpec], tagging: TaggingSpec,
              identifier_action: str = "drop") -> Roles:
    """Give every column of ``frame`` a role, a kind, a treatment and the reason for them: ``declared`` columns
    as declared, the others by ``tagging``'s rules (see the module docstring); identifiers are dropped or
    pseudonymized per ``identifier_action``.

    Raises
    ------
    SpecError
        ``tagging.undeclared: refuse`` and an undeclared text column could identify someone or carry free text
        (every such column is named by position and name, with the rule that fired; never a value).
    """
    tags = _Tags(frame, "pseudonymized" if identifier_action == "pseudonymize" else "dropped")
    _tag_declared(frame, declared, tags)
    undeclared = [c for c in frame.columns if c not in declared]
    pending, named_qis = _tag_by_name(frame, undeclared, tagging, tags)
    _tag_risky(frame, undeclared, tagging, tags, pending, named_qis)
    for name, reason in named_qis.items():
        kind = infer_kind(frame[name], Role.quasi_identifier, reason)
        tags.put(name, Role.quasi_identifier, kind, "auto", reason + _kind_note(kind, frame[name], False))
    _tag_by_contribution(frame, [n for n in pending if n not in tags.tags], tagging, tags)
    return Roles(columns=[tags.tags[c] for c in frame.columns])


class _Tags:
    """The column tags given so far, in the order given; an identifier gets the identifier policy's treatment."""

    def __init__(self, frame: pd.DataFrame, id_treatment: str) -> None:
        self.position = {name: i for i, name in enumerate(frame.columns)}
        self.id_treatment = id_treatment
        self.tags: dict[str, ColumnTag] = {}

    def put(self, name: str, role: Role, kind: ColumnKind, source: str, reason: str, order: list[str] | None = None,
            treatment: str | None = None) -> None:
        if role is Role.identifier:
            treatment = self.id_treatment
        self.tags[name] = ColumnTag(name=name, role=role, kind=kind, source=source, reason=reason, order=order,
                                    position=self.position[name], treatment=treatment)


def _tag_declared(frame: pd.DataFrame, declared: dict[str, ColumnSpec], tags: _Tags) -> None:
    """The declared columns, as declared (a class column is nominal; a declared number must hold numbers)."""
    for name, col in declared.items():
        kind = col.kind or infer_kind(frame[name], col.role, (name_rule(name) or (None, None))[1])
        if col.role is Role.class_:
            kind = ColumnKind.nominal
        series = frame[name]
        if kind is ColumnKind.numeric and not (pd.api.types.is_numeric_dtype(series)
                                               or pd.api.types.is_datetime64_any_dtype(series)):
            raise SpecError(f"spec columns.{name}: declared numeric but the column is not numbers")
        reason = "declared in spec" + ("" if col.kind else _kind_note(kind, series, False))
        tags.put(name, col.role, kind, "declared", reason, col.order)


def _tag_by_name(frame: pd.DataFrame, undeclared: list[str], tagging: TaggingSpec,
                 tags: _Tags) -> tuple[list[str], dict[str, str]]:
    """Undeclared columns whose name says they identify (tagged now); the columns whose name says nothing
    (pending) and those it names quasi-identifiers (with the reason), tagged later."""
    pending: list[str] = []
    named_qis: dict[str, str] = {}
    for name in undeclared:
        rule = name_rule(name) if tagging.auto else None
        if rule is None:
            pending.append(name)
        elif rule[0] is Role.identifier:
            tags.put(name, Role.identifier, infer_kind(frame[name], Role.identifier, rule[1]), "auto", rule[1])
        else:
            named_qis[name] = rule[1]
    return pending, named_qis


def _tag_risky(frame: pd.DataFrame, undeclared: list[str], tagging: TaggingSpec, tags: _Tags, pending: list[str],
               named_qis: dict[str, str]) -> None:
    """The conservative rules (not under ``tagging.undeclared: keep``): identifying values, then undeclared text
    that could identify someone or carry free text, refused or dropped (free text is dropped, never
    pseudonymized). Columns tagged here leave ``pending`` and ``named_qis``."""
    risks = {} if tagging.undeclared == "keep" else {
        name: r for name in undeclared if name not in tags.tags and (r := undeclared_risks(frame[name]))}
    if tagging.auto:
        for name in pending:
            if "prose" in risks.get(name, {}):
                continue
            if (rule := value_rule(frame[name], tagging.near_unique_ratio)) is not None:
                tags.put(name, Role.identifier, infer_kind(frame[name], Role.identifier), "auto", rule[1])
    risky = {name: "; ".join(r.values()) for name, r in risks.items() if name not in tags.tags}
    if risky and tagging.undeclared == "refuse":
        listed = "; ".join(f"{column_label(tags.position[n] + 1, n)}: {r}" for n, r in risky.items())
        raise SpecError(
            f"spec tagging.undeclared is refuse and {len(risky)} undeclared column(s) could identify someone or "
            f"carry free text: {listed}; declare them in columns, or set tagging.undeclared to drop or keep"
        )
    for name, risk in risky.items():
        series = frame[name]
        before = named_qis.pop(name, None)
        if name in pending:
            pending.remove(name)
        reason = (f"{before}, but " if before else "") + (
            f"undeclared text column that could identify someone or carry free text: {risk}; "
            "dropped (tagging.undeclared: drop)")
        tags.put(name, Role.other, infer_kind(series, Role.other), "auto", reason, treatment="dropped")


def _tag_by_contribution(frame: pd.DataFrame, pending: list[str], tagging: TaggingSpec, tags: _Tags) -> None:
    """The columns still untagged: a quasi-identifier when adding it raises the sample uniques enough, else
    other."""
    qis = [n for n, t in tags.tags.items() if t.role is Role.quasi_identifier]
    base = unique_share(frame, qis) if tagging.auto and pending else 0.0
    for name in pending:
        series = frame[name]
        role, reason = Role.other, "no identifying name, values or re-identification contribution"
        if not tagging.auto:
            reason = "not declared (automatic tagging is off)"
        else:
            with_col = unique_share(frame, [*qis, name])
            if with_col - base >= tagging.reid_contribution:
                role = Role.quasi_identifier
                reason = (
                    f"re-identification contribution: sample uniques rise from {base:.1%} to {with_col:.1%} "
                    "when added to the quasi-identifiers"
                )
        kind = infer_kind(series, role)
        tags.put(name, role, kind, "auto", reason + _kind_note(kind, series, False))


def pseudonym(values: pd.Series, key: bytes) -> pd.Series:
    """Keyed HMAC-SHA256 of each value's text (hex); missing stays missing."""

    def one(v: object) -> str:
        return hmac.new(key, str(v).encode("utf-8"), hashlib.sha256).hexdigest()

    out = values.map(one, na_action="ignore")
    return out.astype("string")


def protect_identifiers(frame: pd.DataFrame, roles: Roles, policy: IdentifierPolicy, key: bytes | None) -> pd.DataFrame:
    """Drop every column whose treatment is "dropped" (identifiers under ``identifiers.action: drop``, and
    undeclared columns that could identify or carry free text), replace "pseudonymized" ones by keyed
    pseudonyms; the input frame is not changed.

    A tag without a treatment (hand-built roles) follows the old rule: identifiers per ``policy.action``.
    """
    drop: list[str] = []
    pseudo: list[str] = []
    for tag in roles.columns:
        if tag.name not in frame.columns:
            continue
        treatment = tag.treatment  # what tagging recorded (from the same spec) is what happens
        if treatment is None and tag.role is Role.identifier:
            treatment = "pseudonymized" if policy.action == "pseudonymize" else "dropped"
        if treatment == "dropped":
            drop.append(tag.name)
        elif treatment == "pseudonymized":
            pseudo.append(tag.name)
    if pseudo and not key:
        raise SpecError(
            f"spec identifiers.action: pseudonymize needs a key: set the environment variable {policy.key_env}"
            + (f" or the Prefect Secret block '{policy.key_secret_block}'" if policy.key_secret_block else "")
        )
    out = frame.drop(columns=drop)
    if not pseudo:
        return out if drop else frame.copy()
    assert key is not None  # refused above: pseudonyms need a key
    for name in pseudo:
        out[name] = pseudonym(out[name], key)
    return out
