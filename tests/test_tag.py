"""Tagging: declared roles, automatic rules with reasons, identifiers never published as they are."""

from __future__ import annotations

import hashlib
import hmac

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
    roles = tag_columns(ingest(spec)[0], spec)
    assert roles.get("ssn").role is Role.other and "off" in roles.get("ssn").reason


def test_identifiers_dropped_or_pseudonymized(workspace):
    spec = load_spec(workspace.spec())
    frame, _ = ingest(spec)
    roles = tag_columns(frame, spec)
    before = frame.copy()
    dropped = protect_identifiers(frame, roles, IdentifierPolicy(action="drop"), None)
    assert not set(roles.identifiers) & set(dropped.columns)
    pd.testing.assert_frame_equal(frame, before)  # input untouched

    key = b"k3y"
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
