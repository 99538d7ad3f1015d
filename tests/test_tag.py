"""Tagging: declared roles, automatic rules with reasons, identifiers never published as they are."""

from __future__ import annotations

import hashlib
import hmac
import re

import numpy as np
import pandas as pd
import pytest

from ppdp.schemas.spec import IdentifierPolicy, Role
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.ingest import ingest
from ppdp.tasks.spec import load_spec
from ppdp.tasks.tag import name_rule, protect_identifiers, tag_columns, value_rule


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("ssn", Role.identifier), ("Patient-ID", Role.identifier), ("email", Role.identifier),
        ("first_name", Role.identifier), ("phoneNumber", Role.identifier), ("record_id", Role.identifier),
        ("age", Role.quasi_identifier), ("Gender", Role.quasi_identifier), ("zip_code", Role.quasi_identifier),
        ("postal-code", Role.quasi_identifier), ("date_of_birth", Role.quasi_identifier),
        ("marital-status", Role.quasi_identifier), ("native-country", Role.quasi_identifier),
        ("education-num", Role.quasi_identifier), ("race", Role.quasi_identifier),
        ("occupation", Role.quasi_identifier),
    ],
)
def test_name_rules(name, role):
    rule = name_rule(name)
    assert rule is not None and rule[0] is role and rule[1]


@pytest.mark.parametrize("name", ["hours_per_week", "fnlwgt", "capital-gain", "paid", "glucose", "x01"])
def test_names_that_say_nothing(name):
    assert name_rule(name) is None


def test_value_rules_find_identifier_shaped_columns():
    rng = np.random.default_rng(0)
    n = 200
    emails = pd.Series([f"user{i}@example.org" for i in rng.integers(0, 50, n)])
    ssns = pd.Series([f"{rng.integers(100, 999)}-{rng.integers(10, 99)}-{rng.integers(1000, 9999)}" for _ in range(n)])
    phones = pd.Series([f"+1 (555) {rng.integers(100, 999)}-{rng.integers(1000, 9999)}" for _ in range(n)])
    codes = pd.Series([f"K{i:06d}" for i in rng.permutation(n)])
    ints = pd.Series(rng.permutation(n) + 10_000)
    floats = pd.Series(rng.normal(size=n))
    for series, word in [(emails, "e-mail"), (ssns, "social security"), (phones, "phone"), (codes, "near-unique"),
                         (ints, "near-unique")]:
        rule = value_rule(series, 0.9)
        assert rule is not None and rule[0] is Role.identifier and word in rule[1]
        assert str(series.iloc[0]) not in rule[1]
    assert value_rule(floats, 0.9) is None  # continuous measurements are not identifiers
    assert value_rule(pd.Series(rng.integers(0, 5, n)), 0.9) is None


def test_tagging_the_demo_table(workspace):
    spec = load_spec(workspace.spec())
    frame, _ = ingest(spec)
    roles = tag_columns(frame, spec)
    by = {c.name: c for c in roles.columns}
    assert by["person_id"].source == "declared" and by["person_id"].role is Role.identifier
    assert by["ssn"].role is Role.identifier and by["ssn"].source == "auto"
    assert by["name"].role is Role.identifier
    for qi in ["age", "sex", "zip", "race", "marital_status", "occupation"]:
        assert by[qi].role is Role.quasi_identifier, qi
    assert by["zip"].kind.value == "nominal"  # postal codes are codes, not quantities
    assert by["education"].kind.value == "ordinal" and by["education"].order
    assert roles.class_column == "income"
    assert all(c.reason for c in roles.columns)
    assert {c.name for c in roles.columns} == set(frame.columns)


def test_reid_contribution_tags_a_quasi_identifier(workspace):
    rng = np.random.default_rng(1)
    n = 500
    frame = pd.DataFrame({"age": rng.integers(20, 30, n), "weight_kg": rng.normal(70, 12, n).round(1),
                          "flag": rng.integers(0, 2, n), "income": rng.choice(["a", "b"], n)})
    path = workspace.dir / "w.csv"
    frame.to_csv(path, index=False)
    spec = load_spec(workspace.spec(data=path, columns={"income": "class"}))
    roles = tag_columns(ingest(spec)[0], spec)
    assert roles.get("weight_kg").role is Role.quasi_identifier
    assert "re-identification" in roles.get("weight_kg").reason
    assert roles.get("flag").role is Role.other


def test_auto_tagging_off(workspace):
    spec = load_spec(workspace.spec(tagging={"auto": False}, columns={"income": "class", "age": "quasi_identifier"}))
    frame = ingest(spec)[0]
    roles = tag_columns(frame, spec)
    assert roles.get("ssn").role is Role.other and roles.get("ssn").treatment == "dropped"  # never published
    spec = load_spec(workspace.spec(tagging={"auto": False, "undeclared": "keep"},
                                    columns={"income": "class", "age": "quasi_identifier"}))
    roles = tag_columns(frame, spec)
    assert roles.get("ssn").role is Role.other and "off" in roles.get("ssn").reason
    assert roles.get("ssn").treatment is None


def test_identifiers_dropped_or_pseudonymized(workspace):
    spec = load_spec(workspace.spec())
    frame, _ = ingest(spec)
    roles = tag_columns(frame, spec)
    before = frame.copy()
    dropped = protect_identifiers(frame, roles, IdentifierPolicy(action="drop"), None)
    assert not set(roles.identifiers) & set(dropped.columns)
    pd.testing.assert_frame_equal(frame, before)  # input untouched

    key = b"k3y"
    spec = load_spec(workspace.spec(identifiers={"action": "pseudonymize"}))
    roles = tag_columns(frame, spec)
    assert {c.treatment for c in roles.columns if c.role is Role.identifier} == {"pseudonymized"}
    pseudo = protect_identifiers(frame, roles, IdentifierPolicy(action="pseudonymize"), key)
    expected = hmac.new(key, str(frame.loc[0, "ssn"]).encode(), hashlib.sha256).hexdigest()
    assert pseudo.loc[0, "ssn"] == expected
    assert not (pseudo["ssn"] == frame["ssn"]).any()
    other = protect_identifiers(frame, roles, IdentifierPolicy(action="pseudonymize"), b"other")
    assert not (other["ssn"] == pseudo["ssn"]).any()
    with pytest.raises(SpecError, match="PPDP_PSEUDONYM_KEY"):
        protect_identifiers(frame, roles, IdentifierPolicy(action="pseudonymize"), None)


def test_kinds_of_dates_codes_and_many_categories():
    from ppdp.tasks.tag import MAX_ONE_HOT, infer_kind

    n = 500
    assert infer_kind(pd.Series(pd.date_range("2000-01-01", periods=n)), Role.quasi_identifier).value == "numeric"
    assert infer_kind(pd.Series([f"{i % 300:05d}" for i in range(n)]), Role.quasi_identifier).value == "ordinal"
    assert infer_kind(pd.Series([f"c{i % MAX_ONE_HOT}" for i in range(n)]), Role.other).value == "nominal"
    assert infer_kind(pd.Series(range(n)), Role.quasi_identifier, "name matches ... (zip code)").value == "ordinal"
    assert infer_kind(pd.Series([i % 7 for i in range(n)]), Role.quasi_identifier, "(zip code)").value == "nominal"


# -- conservative tagging of undeclared text columns (issue 7, section 1) ---------------------------------------
def _spec(tmp_path, **overrides):
    from ppdp.schemas.spec import ReleaseSpec
    from tests.conftest import base_spec

    overrides.setdefault("columns", {"label": "class"})
    return ReleaseSpec.model_validate(base_spec(tmp_path / "in.csv", tmp_path / "releases", **overrides))


def _luhn_ok(number: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _card(rng) -> str:
    stem = "4" + "".join(str(d) for d in rng.integers(0, 10, 14))
    check = next(str(c) for c in range(10) if _luhn_ok(stem + str(c)))
    return stem + check


def _iban(rng) -> str:
    bban = "".join(str(d) for d in rng.integers(0, 10, 18))
    digits = "".join(str(int(c, 36)) for c in bban + "DE00")
    return f"DE{98 - int(digits) % 97:02d}{bban}"


N = 400
_RNG = np.random.default_rng(11)
_LOW = _RNG.choice(["red", "green", "blue", "grey"], N)
_WORDS = np.array("the patient said that she felt unwell after taking two pills at night and called back".split())


def _with(share_rows: int, make, filler="unknown") -> list[str]:
    """``share_rows`` identifier-shaped cells among otherwise low-cardinality filler (a dirty column)."""
    values = [filler if i % 2 else str(_LOW[i]) for i in range(N)]
    rng = np.random.default_rng(5)
    for i in rng.choice(N, share_rows, replace=False):
        values[i] = make(rng)
    return values


PATTERN_CASES = {
    "US social security numbers": lambda r: f"{r.integers(100, 899)}-{r.integers(10, 99)}-{r.integers(1000, 9999)}",
    "e-mail addresses": lambda r: f"reach me at p{r.integers(0, 10**6)}@mail.example.com",
    "phone numbers": lambda r: f"+44 20 {r.integers(1000, 9999)} {r.integers(1000, 9999)}",
    "payment card numbers": _card,
    "IBANs": _iban,
    "IP addresses": lambda r: f"10.{r.integers(0, 255)}.{r.integers(0, 255)}.{r.integers(1, 255)}",
    "URLs": lambda r: f"https://social.example/u/{r.integers(0, 10**6)}",
}


@pytest.mark.parametrize("label", list(PATTERN_CASES))
def test_an_identifier_pattern_in_one_percent_of_cells_drops_the_column(tmp_path, label):
    dirty = _with(4, PATTERN_CASES[label])  # 4 of 400 cells: 1%
    frame = pd.DataFrame({"colour": _LOW, "ref": dirty, "label": _RNG.choice(["a", "b"], N)})
    roles = tag_columns(frame, _spec(tmp_path))
    tag = roles.get("ref")
    assert tag.treatment == "dropped" and tag.role is Role.other and tag.position == 1
    assert label in tag.reason and "1.0%" in tag.reason
    assert "ref" not in roles.attributes and roles.dropped == ["ref"]
    assert roles.get("colour").treatment is None and "colour" in roles.attributes
    # fewer than 1% (3 of 400) does not fire the pattern rule
    assert tag_columns(frame.assign(ref=_with(3, PATTERN_CASES[label])), _spec(tmp_path)).get("ref").treatment is None


def test_near_misses_of_identifier_patterns_are_not_identifiers(tmp_path):
    from ppdp.tasks.tag import IDENTIFIER_DETECTORS

    rng = np.random.default_rng(2)
    bad_card = _card(rng)
    bad_card = bad_card[:-1] + str((int(bad_card[-1]) + 1) % 10)  # Luhn check digit off by one
    assert IDENTIFIER_DETECTORS["payment card numbers"](_card(rng))
    assert not IDENTIFIER_DETECTORS["payment card numbers"](bad_card)
    good_iban = _iban(rng)
    assert IDENTIFIER_DETECTORS["IBANs"](good_iban)
    assert not IDENTIFIER_DETECTORS["IBANs"](good_iban[:2] + f"{(int(good_iban[2:4]) + 1) % 100:02d}" + good_iban[4:])
    assert not IDENTIFIER_DETECTORS["IP addresses"]("10.300.1.1")
    assert IDENTIFIER_DETECTORS["IP addresses"]("host 2001:db8::8a2e:370:7334 down")
    for not_a_phone in ["2024-03-15", "15.03.2024", "1234567.89", "12345", "A-12"]:
        assert not IDENTIFIER_DETECTORS["phone numbers"](not_a_phone), not_a_phone
    for phone in ["+1 (555) 123-4567", "555-123-4567", "0044 20 7946 0958"]:
        assert IDENTIFIER_DETECTORS["phone numbers"](phone), phone


def test_many_distinct_values_and_prose_drop_the_column(tmp_path):
    rng = np.random.default_rng(3)
    half = [f"v{i // 2}" for i in range(N)]  # 200 distinct of 400: exactly 50%
    below = [f"v{i // 3}" for i in range(N)]  # 134 distinct: 33.5%
    notes = ["none" if i % 4 else " ".join(rng.choice(_WORDS, 7)) for i in range(N)]  # 25% prose, mostly repeated
    long_labels = rng.choice(["Some college but no degree", "Associate degree occupational program", "None"], N)
    frame = pd.DataFrame({"half": half, "below": below, "notes": notes, "labels": long_labels,
                          "label": rng.choice(["a", "b"], N)})
    roles = tag_columns(frame, _spec(tmp_path))
    assert roles.get("half").treatment == "dropped" and "many distinct values: 200 distinct among 400" in \
        roles.get("half").reason
    assert roles.get("below").treatment is None
    assert roles.get("notes").treatment == "dropped" and "prose" in roles.get("notes").reason
    assert roles.get("labels").treatment is None  # two long category labels are not prose
    assert roles.dropped == ["half", "notes"]


def test_tiny_tables_are_not_judged_by_the_distinct_ratio(tmp_path):
    frame = pd.DataFrame({"pet": ["cat", "dog", "emu", "yak", "cat", "owl"], "label": list("ababab")})
    assert tag_columns(frame, _spec(tmp_path)).get("pet").treatment is None  # 6 values: a ratio says little
    frame = pd.DataFrame({"pet": [f"p{i}" for i in range(20)], "label": list("ab" * 10)})
    assert tag_columns(frame, _spec(tmp_path)).get("pet").treatment == "dropped"  # from 20 values on


def test_numbers_and_declared_columns_are_not_dropped_by_the_conservative_rules(tmp_path):
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"amount": rng.normal(size=N), "count": rng.integers(0, 300, N),
                          "free": [f"x{i}" for i in range(N)], "label": rng.choice(["a", "b"], N)})
    spec = _spec(tmp_path, columns={"label": "class", "free": "sensitive"})
    roles = tag_columns(frame, spec)
    assert [c.treatment for c in roles.columns] == [None, None, None, None]
    assert roles.get("free").reason.startswith("declared in spec")


def _risky_frame() -> pd.DataFrame:
    rng = np.random.default_rng(6)
    ssn = [f"{rng.integers(100, 899)}-{rng.integers(10, 99)}-{rng.integers(1000, 9999)}" for _ in range(N)]
    for i in range(0, N, 4):
        ssn[i] = "unknown"  # a quarter of the cells: no longer 90% SSN-shaped, no longer near-unique
    return pd.DataFrame({"colour": _LOW, "tax_ref": ssn, "label": rng.choice(["a", "b"], N),
                         "remarks": [" ".join(rng.choice(_WORDS, 9)) for _ in range(N)]})


def test_undeclared_modes_drop_refuse_keep(tmp_path):
    frame = _risky_frame()
    dropped = tag_columns(frame, _spec(tmp_path))
    assert dropped.dropped == ["tax_ref", "remarks"]
    assert "75.0%" in dropped.get("tax_ref").reason and "US social security" in dropped.get("tax_ref").reason
    assert dropped.attributes == ["colour"]

    with pytest.raises(SpecError) as info:
        tag_columns(frame, _spec(tmp_path, tagging={"undeclared": "refuse"}))
    message = str(info.value)
    assert "column 2 ('tax_ref')" in message and "column 4 ('remarks')" in message and "\n" not in message
    assert "tagging.undeclared" in message

    kept = tag_columns(frame, _spec(tmp_path, tagging={"undeclared": "keep"}))  # the old rules only
    assert kept.get("tax_ref").role is not Role.identifier and kept.get("tax_ref").treatment is None
    assert kept.get("remarks").role is Role.identifier  # near-unique (rule 3)
    assert kept.dropped == ["remarks"] and kept.attributes == ["colour", "tax_ref"]
    protected = protect_identifiers(frame, kept, IdentifierPolicy(action="drop"), None)
    assert list(protected.columns) == ["colour", "tax_ref", "label"]


def test_the_refusal_names_columns_as_every_message_does_and_never_a_data_like_name(tmp_path):
    """1-based positions, as the ingest step's messages (``tasks.core.labels.column_label``); a column whose name
    is a data value (a headerless file read with its first row as the header) is named by position alone."""
    frame = _risky_frame().rename(columns={"tax_ref": "123-45-6789"})
    with pytest.raises(SpecError) as info:
        tag_columns(frame, _spec(tmp_path, tagging={"undeclared": "refuse"}))
    message = str(info.value)
    assert "column 2:" in message and "123-45-6789" not in message and "column 4 ('remarks')" in message


def test_conservative_rules_apply_with_auto_tagging_off(tmp_path):
    frame = _risky_frame()
    roles = tag_columns(frame, _spec(tmp_path, tagging={"auto": False}))
    assert roles.dropped == ["tax_ref", "remarks"] and roles.get("colour").reason.startswith("not declared")


def test_positions_treatments_and_protection(tmp_path):
    frame = _risky_frame().assign(email=[f"u{i}@example.org" for i in range(N)], occupation=_LOW)
    frame = frame[["email", "colour", "tax_ref", "occupation", "label", "remarks"]]
    for action, treatment in [("drop", "dropped"), ("pseudonymize", "pseudonymized")]:
        roles = tag_columns(frame, _spec(tmp_path, identifiers={"action": action}))
        assert [c.position for c in roles.columns] == list(range(frame.shape[1]))
        assert roles.get("email").role is Role.identifier and roles.get("email").treatment == treatment
        assert roles.get("tax_ref").treatment == "dropped" and roles.get("remarks").treatment == "dropped"
        assert roles.get("occupation").role is Role.quasi_identifier and roles.get("occupation").treatment is None
        assert roles.attributes == ["colour", "occupation"]
        before = frame.copy()
        out = protect_identifiers(frame, roles, IdentifierPolicy(action=action), b"key")
        pd.testing.assert_frame_equal(frame, before)
        expected = ["colour", "occupation", "label"] + (["email"] if action == "pseudonymize" else [])
        assert sorted(out.columns) == sorted(expected)
        if action == "pseudonymize":
            assert out["email"].str.fullmatch(r"[0-9a-f]{64}").all()


def test_a_named_quasi_identifier_with_free_text_is_dropped(tmp_path):
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"occupation": [f"job title {i}" for i in range(N)], "label": rng.choice(["a", "b"], N)})
    tag = tag_columns(frame, _spec(tmp_path)).get("occupation")
    assert tag.role is Role.other and tag.treatment == "dropped"
    assert tag.reason.startswith("name matches well-known quasi-identifier (occupation), but")


def test_no_value_in_any_reason_or_message(tmp_path):
    frame = _risky_frame()
    frame["contact"] = _with(40, PATTERN_CASES["e-mail addresses"], filler="n/a")
    frame["card"] = _with(10, _card, filler="none")
    frame["site"] = _with(10, PATTERN_CASES["URLs"], filler="-")
    values = {str(v) for col in frame.columns for v in frame[col].dropna().unique() if len(str(v)) >= 3}
    texts = [c.reason for c in tag_columns(frame, _spec(tmp_path)).columns]
    with pytest.raises(SpecError) as info:
        tag_columns(frame, _spec(tmp_path, tagging={"undeclared": "refuse"}))
    texts.append(str(info.value))
    for text in texts:
        leaked = [v for v in values if re.search(rf"(?<!\w){re.escape(v)}(?!\w)", text)]
        assert not leaked, (text, leaked[:3])


def test_a_large_column_is_checked_on_a_seeded_sample():
    """Beyond SCAN_ROWS cells, the pattern and prose rules read a seeded sample (the reason says so); the
    distinct ratio is exact."""
    from ppdp.tasks.tag import SCAN_ROWS, undeclared_risk

    n = SCAN_ROWS + 20_000
    series = pd.Series([f"u{i}@example.org" if i % 50 == 0 else f"c{i % 7}" for i in range(n)])  # 2% e-mails
    reason = undeclared_risk(series)
    assert reason is not None and f"of {SCAN_ROWS} sampled non-missing values hold e-mail addresses" in reason
    assert "many distinct values" not in reason and reason == undeclared_risk(series)  # seeded: the same answer
