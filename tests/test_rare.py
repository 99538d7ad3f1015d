"""The rare-value rule: no published categorical cell holds a value seen fewer than k times in the input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.schemas.spec import ColumnKind, Role
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.rare import RARE_TOKEN, categorical_columns, merge_rare_categories

ORDER = ["none", "low", "mid", "high", "top"]


def tag(name: str, kind: ColumnKind, role: Role = Role.other, position: int = 0, **extra) -> ColumnTag:
    return ColumnTag(name=name, role=role, kind=kind, source="declared", reason="t", position=position, **extra)


@st.composite
def frames(draw):
    """A mixed frame (text, numbers-as-codes, booleans, categoricals, an ordered ordinal, numbers, a pseudonymized
    identifier, a class) with skewed value frequencies, missing cells and a shuffled, non-default index."""
    n = draw(st.integers(1, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def skewed(pool: list, missing: float = 0.1) -> list:
        p = rng.dirichlet(np.full(len(pool), 0.4))
        values = [pool[i] for i in rng.choice(len(pool), n, p=p)]
        return [None if rng.random() < missing else v for v in values]

    text = skewed([f"city{i}" for i in range(12)] + [RARE_TOKEN])  # a real value equal to the token
    codes = [int(v) for v in rng.choice([2134, 2138, 2139, 2141, 2150, 99501], n, p=[.4, .3, .1, .1, .05, .05])]
    frame = pd.DataFrame({
        "city": pd.Series(text, dtype="str"),
        "zip": codes,
        "obj": pd.Series(skewed(["a", 1, "b", 2.5, "c"]), dtype=object),
        "flag": rng.random(n) < draw(st.sampled_from([0.02, 0.5, 0.98])),
        "cat": pd.Categorical(skewed(["x", "y", "z"]), categories=["x", "y", "z", "never"]),
        "grade": pd.Series(skewed(ORDER), dtype="str"),
        "score": rng.normal(size=n),
        "hashed": [f"{rng.integers(0, 2**62):016x}" for _ in range(n)],
        "label": pd.Series(skewed(["p", "q", "r", "s"], missing=0.0), dtype="str"),
    })
    if draw(st.booleans()):
        frame["label"] = [int(v[0] == "p") + 2 * int(v[0] == "s") for v in frame["label"]]  # number labels
    index = rng.permutation(n) * 7 + 100
    if draw(st.booleans()) and n > 1:
        index[0] = index[1]  # duplicate labels too
    frame.index = pd.Index(index, name="rid")
    roles = Roles(columns=[
        tag("city", ColumnKind.nominal, Role.quasi_identifier, 0),
        tag("zip", ColumnKind.nominal, Role.quasi_identifier, 1),
        tag("obj", ColumnKind.nominal, Role.sensitive, 2),
        tag("flag", ColumnKind.nominal, Role.other, 3),
        tag("cat", ColumnKind.nominal, Role.other, 4),
        tag("grade", ColumnKind.ordinal, Role.quasi_identifier, 5, order=ORDER),
        tag("score", ColumnKind.numeric, Role.sensitive, 6),
        tag("hashed", ColumnKind.nominal, Role.identifier, 7, treatment="pseudonymized"),
        tag("label", ColumnKind.nominal, Role.class_, 8),
    ])
    return frame, roles, draw(st.integers(1, min(6, n)))


def _as_key(v) -> object:
    return None if pd.isna(v) else v


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_no_published_categorical_value_is_rare(case):
    frame, roles, k = case
    before = frame.copy(deep=True)
    out, report = merge_rare_categories(frame, roles, k)

    pd.testing.assert_frame_equal(frame, before)  # the input is not modified
    assert list(out.columns) == list(frame.columns)
    assert report.k == k and report.rows_in == len(frame) and report.rows_out == len(out)
    assert report.columns_checked == 7  # every nominal / ordinal column but the pseudonymized identifier

    # rows: a subsequence of the input's rows (the positions of the kept labels, in order)
    kept = np.flatnonzero(np.ones(len(frame), bool))
    by = {c.name: c for c in report.columns}
    if "label" in by and by["label"].action == "rows_removed":
        counts = frame["label"].value_counts()
        kept = np.flatnonzero(~frame["label"].isin(counts.index[counts < k]).to_numpy())
        assert by["label"].cells_affected == len(frame) - len(out) > 0
    else:
        assert len(out) == len(frame)
    source = frame.iloc[kept]
    assert list(out.index) == list(source.index)

    # untouched columns: numbers and the pseudonyms
    pd.testing.assert_series_equal(out["score"], source["score"])
    pd.testing.assert_series_equal(out["hashed"], source["hashed"])

    for name in ["city", "zip", "obj", "flag", "cat", "grade", "label"]:
        col = by.get(name)
        base = frame[name] if name == "label" else source[name]  # the class is counted on the whole input
        counts = base.value_counts(dropna=True)
        counts = counts[counts > 0]
        published = out[name]
        token = col.token if col is not None else None
        for value, n in published.value_counts(dropna=True).items():
            if n == 0:
                continue
            if token is not None and value == token:
                assert n >= k, (name, "token below k")
                assert token not in {str(v) for v in frame[name].dropna()}  # never collides with a real value
            else:
                assert counts.get(value, 0) >= k, (name, "a rare value is published")
        if name == "grade":
            assert set(published.dropna()) <= set(ORDER)
        if name == "label":
            assert published.notna().all()
        changed = [i for i, (a, b) in enumerate(zip(source[name], published)) if _as_key(a) != _as_key(b)]
        rare_values = int((counts < k).sum())
        if col is None:
            assert changed == [] and rare_values == 0, name
            continue
        assert col.values_merged == rare_values > 0, name
        assert col.position == list(frame.columns).index(name)
        if col.action != "rows_removed":
            assert col.cells_affected == len(changed), name  # counts add up to the cells actually changed
            if col.action == "merged":
                assert all(published.iloc[i] == token for i in changed)
            if col.action == "suppressed":
                assert all(pd.isna(published.iloc[i]) for i in changed)
    if isinstance(out["cat"].dtype, pd.CategoricalDtype):
        assert set(out["cat"].cat.categories) == set(out["cat"].dropna())  # no unused category left behind
    assert report.cells_affected == sum(c.cells_affected for c in report.columns if c.action != "rows_removed")


def test_merged_token_suppression_and_collisions():
    frame = pd.DataFrame({
        "city": ["a"] * 5 + ["b", "c", "d"] + [RARE_TOKEN],  # four rare values, one equal to the token
        "few": ["a"] * 8 + ["z"],  # one rare cell: a token would still be rare -> suppressed
        "zip": [2134] * 8 + [99501],  # a number column: no token possible -> suppressed, nullable integers
    }, index=list("ihgfedcba"))
    roles = Roles(columns=[tag("city", ColumnKind.nominal, position=0), tag("few", ColumnKind.nominal, position=1),
                           tag("zip", ColumnKind.nominal, position=2)])
    out, report = merge_rare_categories(frame, roles, 2)
    by = {c.name: c for c in report.columns}
    assert by["city"].action == "merged" and by["city"].token == RARE_TOKEN + "_"
    assert by["city"].values_merged == 4 and by["city"].cells_affected == 4
    assert (out["city"] == RARE_TOKEN + "_").sum() == 4 and (out["city"] == "a").sum() == 5
    assert by["few"].action == "suppressed" and out["few"].isna().sum() == 1
    assert by["zip"].action == "suppressed" and str(out["zip"].dtype) == "Int64" and out["zip"].isna().sum() == 1
    assert list(out.index) == list(frame.index)
    assert not any(v in report.model_dump_json() for v in ["99501", '"b"', '"c"', '"d"'])


def test_ordered_ordinal_merges_into_the_nearest_frequent_category():
    values = ["none"] + ["low"] * 3 + ["mid"] + ["high"] * 3 + ["top"]
    frame = pd.DataFrame({"grade": values})
    roles = Roles(columns=[tag("grade", ColumnKind.ordinal, order=ORDER)])
    out, report = merge_rare_categories(frame, roles, 2)
    # none -> low (nearest), mid -> low (tie between low and high: the lower), top -> high
    assert list(out["grade"]) == ["low"] * 5 + ["high"] * 4
    [col] = report.columns
    assert col.action == "merged_adjacent" and col.values_merged == 3 and col.cells_affected == 3
    # no category frequent: suppressed
    out, report = merge_rare_categories(pd.DataFrame({"grade": ["none", "low", "top"]}), roles, 2)
    assert out["grade"].isna().all() and report.columns[0].action == "suppressed"


def test_rare_class_labels_are_merged_or_their_rows_left_out():
    frame = pd.DataFrame({"x": range(10), "label": ["p"] * 6 + ["q", "r", "s"] + ["t"]})
    roles = Roles(columns=[tag("x", ColumnKind.numeric), tag("label", ColumnKind.nominal, Role.class_, 1)])
    out, report = merge_rare_categories(frame, roles, 3)
    assert report.columns[0].action == "merged" and (out["label"] == RARE_TOKEN).sum() == 4
    out, report = merge_rare_categories(frame, roles, 5)  # the token would hold 4 < 5 rows: rows left out
    assert report.columns[0].action == "rows_removed" and list(out["x"]) == list(range(6))
    assert report.rows_removed == 4 and report.cells_affected == 0
    numbers = frame.assign(label=[0] * 6 + [1, 2, 3, 4])
    out, report = merge_rare_categories(numbers, roles, 2)  # number labels: no token, rows left out
    assert report.columns[0].action == "rows_removed" and set(out["label"]) == {0}


def test_other_columns_are_counted_after_rare_class_rows_are_removed():
    frame = pd.DataFrame({"city": ["a", "a", "b", "b", "b"], "label": [0, 0, 0, 0, 1]})
    roles = Roles(columns=[tag("city", ColumnKind.nominal), tag("label", ColumnKind.nominal, Role.class_, 1)])
    out, report = merge_rare_categories(frame, roles, 2)
    # "b" occurs 3 times in the input but twice once the row of the rare label is left out: still published
    assert list(out["city"]) == ["a", "a", "b", "b"] and [c.name for c in report.columns] == ["label"]
    out, report = merge_rare_categories(frame, roles, 3)
    # "b" occurs 3 times in the input, twice in the rows left: rare, like "a"; together they reach k
    assert report.rows_out == 4 and list(out["city"]) == [RARE_TOKEN] * 4


def test_categorical_dtype_loses_rare_and_unused_categories():
    frame = pd.DataFrame({"c": pd.Categorical(["x"] * 4 + ["y"] * 2 + ["z"], categories=["x", "y", "z", "w"],
                                              ordered=True)})
    out, report = merge_rare_categories(frame, Roles(columns=[tag("c", ColumnKind.nominal)]), 2)
    assert list(out["c"].cat.categories) == ["x", "y"] and out["c"].cat.ordered
    assert out["c"].isna().sum() == 1 and report.columns[0].action == "suppressed"


def test_which_columns_the_rule_covers():
    roles = Roles(columns=[
        tag("age", ColumnKind.numeric), tag("zip", ColumnKind.nominal), tag("edu", ColumnKind.ordinal),
        tag("ssn", ColumnKind.nominal, Role.identifier, treatment="pseudonymized"),
        tag("notes", ColumnKind.nominal, treatment="dropped"), tag("label", ColumnKind.nominal, Role.class_),
    ])
    frame = pd.DataFrame({c.name: [1] for c in roles.columns}).drop(columns=["notes"])
    assert [c.name for c in categorical_columns(frame, roles)] == ["label", "zip", "edu"]
    with pytest.raises(ValueError):
        merge_rare_categories(frame, roles, 0)
    with pytest.raises(InputError, match="larger than the table"):
        merge_rare_categories(frame, roles, 2)  # one row: no value could ever be published


def test_decoders_emit_only_values_that_pass_the_rule():
    """End of the chain: after the rule, a sanitizer's published categorical cells all occur >= k times in the
    input (census(500, seed=4): 'Primary' occurs 8 < 10 times and is merged into its neighbour)."""
    from ppdp.schemas.spec import ReleaseSpec
    from ppdp.tasks.sanitize.registry import build_sanitizer
    from ppdp.tasks.tag import protect_identifiers, tag_columns
    from tests.conftest import base_spec, census

    frame = census(500, seed=4)
    spec = ReleaseSpec.model_validate(base_spec(Path("in.csv"), Path("releases")))
    roles = tag_columns(frame, spec)
    protected = protect_identifiers(frame, roles, spec.identifiers, None)
    merged, _ = merge_rare_categories(protected, roles, spec.rare_k)
    counts = protected["education"].value_counts()
    assert (counts < spec.rare_k).any()  # the case this test is about
    for seed in range(3):
        published = build_sanitizer(spec.method, seed=seed).sanitize(merged, roles).frame
        for column in [c.name for c in categorical_columns(merged, roles)]:
            seen = protected[column].value_counts()
            for value in published[column].dropna().unique():
                assert seen.get(value, 0) >= spec.rare_k or str(value).startswith(RARE_TOKEN), column


def test_a_class_of_numbers_left_with_one_label_is_refused_saying_why():
    """A numeric target read as the class (each value seen a few times): the rule leaves the rows of its rare
    labels out, one label remains, and the release plan refuses it naming the column, the counts and what to do,
    not merely "a single class" (the column held 60 values); never a value."""
    from ppdp.schemas.spec import ReleaseSpec
    from ppdp.tasks import plan
    from ppdp.tasks.sanitize.registry import method_class
    from ppdp.tasks.tag import protect_identifiers, tag_columns
    from tests.conftest import base_spec, census

    frame = census(500, seed=4)
    frame["income"] = np.where(np.arange(500) < 200, 1000.0, 1001.0 + np.arange(500) % 60 * 17.5)
    spec = ReleaseSpec.model_validate(base_spec(Path("in.csv"), Path("releases")))
    roles = tag_columns(frame, spec)
    protected = protect_identifiers(frame, roles, spec.identifiers, None)
    with pytest.raises(InputError) as info:
        plan.prepare_rows(spec, method_class(spec.method.name), protected, roles)
    message = str(info.value)
    position = list(frame.columns).index("income") + 1
    assert message.startswith(f"class column {position} ('income'): 60 of its labels are each seen fewer than k = 10")
    assert "300 rows are left out" in message and "leaving 1 class" in message and "utility.regression" in message
    assert "1000" not in message and "1001" not in message
    # two labels left: no refusal here (the hold-out goes on)
    two = frame.assign(income=np.where(np.arange(500) < 250, 5.0, 6.0))
    plan.prepare_rows(spec, method_class(spec.method.name), protect_identifiers(two, roles, spec.identifiers, None),
                      roles)
