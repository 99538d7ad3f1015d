"""Generalization hierarchies (ppdp.tasks.core.hierarchy): builders, structural checks, coverage, messages."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

import ppdp.schemas.hierarchy as hschema
import ppdp.tasks.core.hierarchy_intervals as hmod_intervals
import ppdp.tasks.core.hierarchy_text as hmod_text
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.hierarchy import FileHierarchy, FlatHierarchy, IntervalHierarchy, PrefixHierarchy, TreeHierarchy
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.hierarchy import (
    Hierarchy,
    build_hierarchy,
    hierarchies_for,
    read_hierarchy,
    text_of,
    validate_hierarchy,
)
from tests.conftest import SHARED_DATA

ARX = SHARED_DATA / "adult" / "arx"
CANARY = "ZQXCANARY9"  # planted value: must never appear in a message


# -- helpers -------------------------------------------------------------------------------------------
def assert_coarsening(h: Hierarchy) -> None:
    """Independently of the module's own check: level i -> level i + 1 is a function, the root is one label."""
    table = h.table
    assert table.shape[1] == h.height + 1 >= 2
    for i in range(h.height):
        pairs = pd.DataFrame({"a": table[:, i], "b": table[:, i + 1]}).drop_duplicates()
        assert pairs["a"].is_unique, f"level {i + 1} is not a coarsening of level {i}"
    assert set(table[:, -1]) == {"*"}
    assert pd.Index(table[:, 0]).is_unique


def assert_roundtrip(h: Hierarchy, series: pd.Series) -> None:
    codes = h.codes(series)
    missing = series.isna().to_numpy()
    assert codes.dtype == np.int64
    assert np.all((codes == -1) == missing)
    back = h.labels(codes, 0)
    assert list(back[~missing]) == list(text_of(series)[~missing])
    assert all(v is None for v in back[missing])


def spec(data: dict) -> object:
    return TypeAdapter(hschema.HierarchySpec).validate_python(data)


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n")
    return path


def roles(frame: pd.DataFrame, qis: dict[str, ColumnKind], order: dict[str, list[str]] | None = None) -> Roles:
    tags = []
    for i, name in enumerate(frame.columns):
        role = Role.quasi_identifier if name in qis else Role.other
        tags.append(ColumnTag(name=name, role=role, kind=qis.get(name, ColumnKind.nominal), source="declared",
                              reason="test", position=i, order=(order or {}).get(name)))
    return Roles(columns=tags)


# -- schema ----------------------------------------------------------------------------------------------
def test_spec_union_picks_by_type() -> None:
    assert isinstance(spec({"type": "file", "file": "h.csv"}), FileHierarchy)
    assert isinstance(spec({"type": "intervals", "bins": 8, "fanout": 3}), IntervalHierarchy)
    assert isinstance(spec({"type": "dates"}), hschema.DateHierarchy)
    assert isinstance(spec({"type": "prefix", "step": 2}), PrefixHierarchy)
    assert isinstance(spec({"type": "flat"}), FlatHierarchy)
    assert isinstance(spec({"type": "tree", "tree": {"*": {"a": None}}}), TreeHierarchy)
    for bad in ({"type": "intervals", "bins": 1}, {"type": "intervals", "fanout": 1}, {"type": "prefix", "step": 0},
                {"type": "flat", "extra": 1}, {"type": "nope"}, {"type": "tree", "tree": {}}):
        with pytest.raises(ValidationError):
            spec(bad)


# -- text_of ------------------------------------------------------------------------------------------------
def test_text_of() -> None:
    assert list(text_of(pd.Series([39, 40]))) == ["39", "40"]
    assert list(text_of(pd.Series([39.0, None, 2.5]))) == ["39", None, "2.5"]
    assert list(text_of(pd.Series([1, 2, None], dtype="Int64"))) == ["1", "2", None]
    days = pd.Series(pd.to_datetime(["2020-03-14", None, "2021-01-02 13:45"], format="ISO8601"))
    assert list(text_of(days)) == ["2020-03-14", None, "2021-01-02"]
    assert list(text_of(pd.Series(["a", None, 3, 4.0, True], dtype=object))) == ["a", None, "3", "4", "True"]
    s = pd.Series([1.5, 2.0], index=[10, 20], name="x")
    out = text_of(s)
    assert list(out.index) == [10, 20] and out.name == "x"


# -- builders ------------------------------------------------------------------------------------------------
def test_intervals_equal_width_integers() -> None:
    s = pd.Series(np.arange(17, 91))
    h = build_hierarchy(s, IntervalHierarchy(bins=16, fanout=2), kind=ColumnKind.numeric, column="age")
    assert h.kind == "intervals"
    assert_coarsening(h)
    row = h.table[list(h.table[:, 0]).index("42")]
    assert list(row) == ["42", "[40-45)", "[35-45)", "[35-55)", "[15-55)", "*"]
    top = h.table[list(h.table[:, 0]).index("90")]
    assert top[1] == "[85-90]"  # the last interval is closed, and integers show no decimals
    assert h.bounds is not None and h.bounds.shape == (len(h.table), h.height + 1, 2)
    assert list(h.bounds[list(h.table[:, 0]).index("42"), 1]) == [40, 45]


def test_intervals_fanout_and_level_count() -> None:
    s = pd.Series(np.arange(0, 64))
    h = build_hierarchy(s, IntervalHierarchy(bins=16, fanout=4), kind=ColumnKind.numeric, column="x")
    # 16 intervals of width 4, then 4 of width 16, then the root (the level with one interval is '*')
    assert [len(set(h.table[:, i])) for i in range(h.height + 1)] == [64, 16, 4, 1]


@pytest.mark.parametrize(("lo", "hi", "integer"), [(0, 63, True), (17, 90, True), (0, 1, False), (-3.7, 12.2, False),
                                                   (1000, 987_654, True), (0.001, 0.0042, False)])
@pytest.mark.parametrize("bins", [2, 5, 16, 30])
def test_equal_width_interval_count_is_about_bins(lo: float, hi: float, integer: bool, bins: int) -> None:
    edges, _ = hmod_intervals._edges_equal_width(lo, hi, bins, integer)
    m = len(edges) - 1
    if integer and (hi - lo) / bins < 10:  # whole widths: 2.1 rounds up to 3
        lowest = math.floor((hi - lo) / math.ceil((hi - lo) / bins))
    else:
        lowest = math.floor(0.74 * bins)
    assert lowest <= m <= bins + 1
    assert edges[0] <= lo and edges[-1] >= hi and np.all(np.diff(edges) > 0)
    if integer:
        assert np.all(edges == np.round(edges))


@pytest.mark.parametrize("values", [[0.0, 3.07e-273], [-1.7e308, 1.7e308], [1.7e308], [5.0], [-0.0, 0.0, 1e-9],
                                    [2**62, 2**62 + 4096]])
@pytest.mark.parametrize("binning", ["equal_width", "quantile"])
def test_intervals_extreme_ranges(values: list[float], binning: str) -> None:
    s = pd.Series(values)
    h = build_hierarchy(s, IntervalHierarchy(binning=binning, bins=4), kind=ColumnKind.numeric, column="x")
    assert_coarsening(h)
    assert_roundtrip(h, s)
    x = h.table[:, 0].astype(float)
    assert np.all(np.isfinite(h.bounds)) and np.all(h.bounds[:, :, 0] <= x[:, None])


def test_intervals_drop_levels_that_repeat_the_values() -> None:
    s = pd.Series([1, 2, 3, 4])  # unit intervals would group exactly like the values
    h = build_hierarchy(s, None, kind=ColumnKind.numeric, column="x")
    counts = [len(set(h.table[:, i])) for i in range(h.height + 1)]
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == len(counts)


def test_intervals_quantile_balances_rows() -> None:
    rng = np.random.default_rng(3)
    s = pd.Series(np.round(rng.exponential(10.0, size=4000), 2))
    h = build_hierarchy(s, IntervalHierarchy(binning="quantile", bins=4), kind=ColumnKind.numeric, column="x")
    assert_coarsening(h)
    level1 = h.labels(h.codes(s), 1)
    shares = pd.Series(level1).value_counts(normalize=True)
    assert len(shares) == 4 and shares.max() < 0.3  # about a quarter each
    eq = build_hierarchy(s, IntervalHierarchy(bins=4), kind=ColumnKind.numeric, column="x")
    assert pd.Series(eq.labels(eq.codes(s), 1)).value_counts(normalize=True).max() > 0.5  # skewed: unequal


def test_intervals_on_text_numbers_and_bad_cells() -> None:
    s = pd.Series(["1", "2", None, "10"], dtype=object)
    h = build_hierarchy(s, IntervalHierarchy(bins=2), kind=ColumnKind.numeric, column="x")
    assert_roundtrip(h, s)
    bad = pd.Series(["1", "2", CANARY, "4"], dtype=object)
    with pytest.raises(InputError) as err:
        build_hierarchy(bad, IntervalHierarchy(), kind=ColumnKind.numeric, column="x", position=2)
    assert "data row 3" in str(err.value) and "column 2 ('x')" in str(err.value) and CANARY not in str(err.value)
    with pytest.raises(SpecError):
        build_hierarchy(pd.Series(pd.to_datetime(["2020-01-01"])), IntervalHierarchy(), kind=ColumnKind.numeric,
                        column="d")


def test_ordinal_intervals_over_ranks() -> None:
    order = ["Preschool", "Primary", "HS-grad", "Bachelors", "Masters"]
    s = pd.Series(["Primary", "Masters", None])
    h = build_hierarchy(s, None, kind=ColumnKind.ordinal, column="edu", order=order)
    assert h.kind == "intervals" and list(h.table[:, 0]) == order  # every declared category, present or not
    assert_coarsening(h)
    assert h.table[1, 1] == "[Preschool-Primary]"
    assert h.table[4, 1] == "[Masters]"
    assert list(h.bounds[2, 1]) == [2, 4]  # ranks [first, last + 1)
    h2 = build_hierarchy(s, IntervalHierarchy(bins=2), kind=ColumnKind.ordinal, column="edu", order=order)
    assert list(h2.table[:, 1]) == ["[Preschool-HS-grad]"] * 3 + ["[Bachelors-Masters]"] * 2
    with pytest.raises(InputError) as err:
        build_hierarchy(pd.Series(["Primary", CANARY]), None, kind=ColumnKind.ordinal, column="edu", order=order,
                        position=4)
    assert "data row 2" in str(err.value) and CANARY not in str(err.value)


def test_dates() -> None:
    s = pd.Series(pd.to_datetime(["2020-03-14", "2020-03-20", None, "2021-12-01 08:00"], format="ISO8601"))
    h = build_hierarchy(s, None, kind=ColumnKind.numeric, column="birth")
    assert h.kind == "dates"
    assert list(h.table[0]) == ["2020-03-14", "2020-03", "2020-Q1", "2020", "*"]
    assert list(h.table[2]) == ["2021-12-01", "2021-12", "2021-Q4", "2021", "*"]
    assert_coarsening(h)
    assert_roundtrip(h, s)
    ns = pd.Timestamp("2020-03-14").value
    assert h.bounds[0, 0, 0] == ns and h.bounds[0, 0, 1] == ns + 86_400 * 10**9
    assert h.bounds[0, 1, 0] == pd.Timestamp("2020-03-01").value
    assert h.bounds[0, 2, 1] == pd.Timestamp("2020-04-01").value
    old = pd.Series(pd.to_datetime([dt.date(1600, 11, 30)]))  # before 1678: beyond nanosecond timestamps
    h_old = build_hierarchy(old, None, kind=ColumnKind.numeric, column="birth")
    assert list(h_old.table[0]) == ["1600-11-30", "1600-11", "1600-Q4", "1600", "*"]
    assert h_old.bounds[0, 2, 0] == np.datetime64("1600-10-01", "s").astype(np.int64) * 1e9
    assert_roundtrip(h_old, old)
    text = pd.Series(["2020-03-14", CANARY])
    with pytest.raises(InputError) as err:
        build_hierarchy(text, hschema.DateHierarchy(), kind=ColumnKind.nominal, column="d")
    assert "data row 2" in str(err.value) and CANARY not in str(err.value)


def test_prefix() -> None:
    s = pd.Series(["13053", "13055", "14000", None])
    h = build_hierarchy(s, None, kind=ColumnKind.nominal, column="zip")  # codes of equal length -> prefix
    assert h.kind == "prefix"
    assert list(h.table[0]) == ["13053", "1305*", "130**", "13***", "1****", "*"]
    h2 = build_hierarchy(s, PrefixHierarchy(step=2), kind=ColumnKind.nominal, column="zip")
    assert list(h2.table[0]) == ["13053", "130**", "1****", "*"]
    mixed = pd.Series(["123", "12345"])  # unequal lengths: masked keeping length
    h3 = build_hierarchy(mixed, PrefixHierarchy(), kind=ColumnKind.nominal, column="code")
    assert list(h3.table[0]) == ["123", "12*", "1**", "***", "***", "*"]
    assert list(h3.table[1]) == ["12345", "1234*", "123**", "12***", "1****", "*"]
    assert_coarsening(h3)


def test_flat_and_auto_choice() -> None:
    s = pd.Series(["Male", "Female", None, "Male"])
    h = build_hierarchy(s, None, kind=ColumnKind.nominal, column="sex")
    assert h.kind == "flat" and h.height == 1
    assert sorted(map(tuple, h.table)) == [("Female", "*"), ("Male", "*")]
    assert_roundtrip(h, s)
    assert build_hierarchy(pd.Series([13053, 14000]), None, kind=ColumnKind.nominal, column="zip").kind == "prefix"
    assert build_hierarchy(pd.Series([True, False]), None, kind=ColumnKind.numeric, column="b").kind == "flat"
    # letter-only codes, one-character codes and numbers tagged nominal stay flat
    for values in (["AB", "CD"], ["1", "2"]):
        assert build_hierarchy(pd.Series(values), None, kind=ColumnKind.nominal, column="c").kind == "flat"


def test_tree_with_padding_and_list_leaves() -> None:
    tree = {"*": {"Higher": {"Bachelors": None, "Masters": None}, "School": ["Primary", "HS-grad"],
                  "Preschool": None}}
    s = pd.Series(["Masters", "Preschool", "HS-grad"])
    h = build_hierarchy(s, spec({"type": "tree", "tree": tree}), kind=ColumnKind.nominal, column="edu")
    rows = {r[0]: list(r) for r in h.table}
    assert rows["Masters"] == ["Masters", "Higher", "*"]
    assert rows["HS-grad"] == ["HS-grad", "School", "*"]
    assert rows["Preschool"] == ["Preschool", "Preschool", "*"]  # padded
    deep = {"A": {"a": {"a1": None}}, "b": None}  # no '*' key: placed under the root
    h2 = build_hierarchy(pd.Series(["a1", "b"]), TreeHierarchy(tree=deep), kind=ColumnKind.nominal, column="t")
    assert {r[0]: list(r) for r in h2.table} == {"a1": ["a1", "a", "A", "*"], "b": ["b", "b", "b", "*"]}
    with pytest.raises(SpecError):
        build_hierarchy(s, TreeHierarchy(tree={"*": {"x": 3}}), kind=ColumnKind.nominal, column="t")
    twice = {"*": {"A": {"x": None}, "B": {"x": None}}}  # one value under two parents
    with pytest.raises(SpecError, match="twice"):
        build_hierarchy(pd.Series(["x"]), TreeHierarchy(tree=twice), kind=ColumnKind.nominal, column="t")


def test_file_relative_to_base_and_read_hierarchy(tmp_path: Path) -> None:
    write(tmp_path / "h.csv", ["a;AB;*", "b;AB;*", "c;C;*"])
    assert read_hierarchy(tmp_path / "h.csv").shape == (3, 3)  # unchanged contract
    s = pd.Series(["a", "c", None])
    h = build_hierarchy(s, FileHierarchy(file=Path("h.csv")), kind=ColumnKind.nominal, column="x", base=tmp_path)
    assert h.kind == "file" and h.bounds is None and h.height == 2
    assert_roundtrip(h, s)
    assert list(h.leaves(1)) == [2, 2, 1] and list(h.leaves(2)) == [3, 3, 3] and list(h.leaves(0)) == [1, 1, 1]
    assert list(h.level_codes(1)) == [0, 0, 1]
    assert list(h.labels(np.array([0, -1, 2]), 1)) == ["AB", None, "C"]
    write(tmp_path / "noroot.csv", ["a;A", "b;B"])  # no single root: '*' appended
    h2 = build_hierarchy(s.iloc[:1], FileHierarchy(file=tmp_path / "noroot.csv"), kind=ColumnKind.nominal, column="x")
    assert list(h2.table[0]) == ["a", "A", "*"]
    with pytest.raises(SpecError, match="does not exist"):
        build_hierarchy(s, FileHierarchy(file=Path("missing.csv")), kind=ColumnKind.nominal, column="x",
                        base=tmp_path)


@pytest.mark.parametrize("kind", [ColumnKind.numeric, ColumnKind.nominal, ColumnKind.ordinal])
def test_entirely_missing_column(kind: ColumnKind) -> None:
    s = pd.Series([None, None], dtype=object)
    h = build_hierarchy(s, None, kind=kind, column="empty")
    validate_hierarchy(h, s)
    assert list(h.codes(s)) == [-1, -1] and list(h.labels(h.codes(s), h.height)) == [None, None]


# -- bad inputs named by the issue ------------------------------------------------------------------------
def test_uncovered_value_names_the_row_not_the_value(tmp_path: Path) -> None:
    write(tmp_path / "h.csv", ["a;A;*", "b;A;*"])
    s = pd.Series(["a", "b", None, "a", "b", "a", CANARY, CANARY])
    h = build_hierarchy(s, FileHierarchy(file=tmp_path / "h.csv"), kind=ColumnKind.nominal, column="grade")
    with pytest.raises(InputError) as err:
        validate_hierarchy(h, s, position=3)
    message = str(err.value)
    assert "column 3 ('grade')" in message and "data row 7" in message and "2 row(s)" in message
    assert CANARY not in message and "'a'" not in message
    # a column name that looks like data is not echoed
    h2 = build_hierarchy(s, FileHierarchy(file=tmp_path / "h.csv"), kind=ColumnKind.nominal, column="987-65-4329")
    with pytest.raises(InputError) as err2:
        h2.codes(s, position=5)
    assert "987-65-4329" not in str(err2.value) and "column 5" in str(err2.value)


def test_not_monotone(tmp_path: Path) -> None:
    write(tmp_path / "h.csv", [f"x1;{CANARY};P;*", f"x2;{CANARY};Q;*", "x3;R;Q;*"])
    with pytest.raises(SpecError) as err:
        build_hierarchy(pd.Series(["x1"]), FileHierarchy(file=tmp_path / "h.csv"), kind=ColumnKind.nominal,
                        column="c", position=1)
    message = str(err.value)
    assert "level 2" in message and "column 1 ('c')" in message
    assert CANARY not in message and "'P'" not in message and "x1" not in message
    # the same check on a Hierarchy built by hand
    h = Hierarchy(column="c", table=np.array([["a", "A", "*"], ["b", "A", "*"], ["c", "c", "*"]], dtype=object),
                  kind="tree")
    validate_hierarchy(h, pd.Series(["a", "c"]))
    bad = Hierarchy(column="c", table=np.array([["a", "A", "X", "*"], ["b", "A", "Y", "*"]], dtype=object),
                    kind="tree")
    with pytest.raises(SpecError, match="level 2 is not a coarsening of level 1"):
        validate_hierarchy(bad, pd.Series(["a"]))


def test_ragged_and_duplicated_rows(tmp_path: Path) -> None:
    write(tmp_path / "ragged.csv", ["a;A;*", "b;*"])
    with pytest.raises(SpecError, match="row 2 has an empty label"):
        build_hierarchy(pd.Series(["a"]), FileHierarchy(file=tmp_path / "ragged.csv"), kind=ColumnKind.nominal,
                        column="c")
    write(tmp_path / "dup.csv", ["a;A;*", "b;B;*", "a;B;*"])
    with pytest.raises(SpecError, match=r"twice .*row 3"):
        build_hierarchy(pd.Series(["a"]), FileHierarchy(file=tmp_path / "dup.csv"), kind=ColumnKind.nominal,
                        column="c")
    write(tmp_path / "same.csv", ["a;A;*", "b;B;*", "a;A;*"])  # listed twice the same way: harmless
    h = build_hierarchy(pd.Series(["a"]), FileHierarchy(file=tmp_path / "same.csv"), kind=ColumnKind.nominal,
                        column="c")
    assert len(h.table) == 2


def test_hierarchies_for(tmp_path: Path) -> None:
    frame = pd.DataFrame({"age": [30, 41, 55], "zip": ["13053", "13055", "14000"], "sex": ["M", "F", "M"],
                          "income": [1.0, 2.0, 3.0]})
    r = roles(frame, {"age": ColumnKind.numeric, "zip": ColumnKind.nominal, "sex": ColumnKind.nominal})
    write(tmp_path / "sex.csv", ["M;*", "F;*"])
    out = hierarchies_for(frame, r, {"sex": FileHierarchy(file=Path("sex.csv"))}, base=tmp_path)
    assert list(out) == ["age", "zip", "sex"]
    assert [out[c].kind for c in out] == ["intervals", "prefix", "file"]
    with pytest.raises(SpecError) as err:
        hierarchies_for(frame, r, {"postcode": FlatHierarchy()})
    assert "'postcode'" in str(err.value) and "not in the input" in str(err.value)
    with pytest.raises(SpecError) as err2:
        hierarchies_for(frame, r, {"123-45-6789": FlatHierarchy()})
    assert "123-45-6789" not in str(err2.value)
    write(tmp_path / "short.csv", ["M;*"])  # misses 'F' (row 2)
    with pytest.raises(InputError) as err3:
        hierarchies_for(frame, r, {"sex": FileHierarchy(file=tmp_path / "short.csv")})
    assert "column 3 ('sex')" in str(err3.value) and "data row 2" in str(err3.value)


# -- ARX's own files ----------------------------------------------------------------------------------------
@pytest.mark.skipif(not (ARX / "adult.csv").exists(), reason=f"ARX's adult files are not under {ARX}")
def test_arx_adult_hierarchies_pass() -> None:
    frame = pd.read_csv(ARX / "adult.csv", sep=";")
    specs = {c: FileHierarchy(file=Path(f"adult_hierarchy_{c}.csv")) for c in frame.columns}
    r = roles(frame, {c: ColumnKind.nominal for c in frame.columns})
    out = hierarchies_for(frame, r, specs, base=ARX)
    assert set(out) == set(frame.columns)
    assert out["age"].height == 4 and out["education"].height == 3
    for c, h in out.items():
        assert_coarsening(h)
        codes = h.codes(frame[c])
        assert (codes >= 0).all()
        assert list(h.labels(codes, 0)) == list(text_of(frame[c]))


# -- vectorization -------------------------------------------------------------------------------------------
def test_codes_work_per_distinct_value_not_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    original = hmod_text._value_text

    def counting(v: object) -> str | None:
        calls["n"] += 1
        return original(v)

    monkeypatch.setattr(hmod_text, "_value_text", counting)
    values = np.array(["13053", "13055", "14000", None], dtype=object)
    s = pd.Series(values[np.random.default_rng(0).integers(0, 4, 1_000_000)], dtype=object)
    h = build_hierarchy(s, PrefixHierarchy(), kind=ColumnKind.nominal, column="zip")
    calls["n"] = 0
    codes = h.codes(s)
    assert calls["n"] <= 3  # the three distinct values, never the million cells
    assert len(codes) == 1_000_000 and ((codes == -1) == s.isna().to_numpy()).all()
    numbers = pd.Series(np.random.default_rng(1).integers(0, 100, 1_000_000))
    hn = build_hierarchy(numbers, None, kind=ColumnKind.numeric, column="n")
    assert (hn.labels(hn.codes(numbers), 0) == numbers.astype(str).to_numpy()).all()


# -- properties ------------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False)), min_size=1,
                    max_size=60),
    integers=st.booleans(),
    bins=st.integers(2, 20),
    fanout=st.integers(2, 5),
    binning=st.sampled_from(["equal_width", "quantile"]),
    with_missing=st.booleans(),
)
def test_intervals_properties(values: list, integers: bool, bins: int, fanout: int, binning: str,
                              with_missing: bool) -> None:
    x = np.array([round(v) if integers else v for v in values], dtype=float)
    s = pd.Series(np.append(x, np.nan) if with_missing else x)
    h = build_hierarchy(s, IntervalHierarchy(binning=binning, bins=bins, fanout=fanout), kind=ColumnKind.numeric,
                        column="x")
    assert_coarsening(h)
    assert_roundtrip(h, s)
    numbers = h.table[:, 0].astype(float)
    for level in range(1, h.height + 1):
        low, high = h.bounds[:, level, 0], h.bounds[:, level, 1]
        closed = np.array([str(t).endswith("]") or t == "*" for t in h.table[:, level]])
        assert np.all(low <= numbers)
        assert np.all((numbers < high) | (closed & (numbers <= high)))
        if level < h.height:
            labels = pd.Series(h.table[:, level])
            assert labels.str.fullmatch(r"\[-?[\d.e+-]+--?[\d.e+-]+[)\]]").all()
            if integers:
                assert not labels.str.contains(r"\.").any()
    assert np.all(h.bounds[:, 0, 0] == numbers)


@settings(max_examples=40, deadline=None)
@given(codes=st.lists(st.text(alphabet="0123456789AB", min_size=1, max_size=7), min_size=1, max_size=40),
       step=st.integers(1, 3))
def test_prefix_properties(codes: list[str], step: int) -> None:
    s = pd.Series(codes)
    h = build_hierarchy(s, PrefixHierarchy(step=step), kind=ColumnKind.nominal, column="c")
    assert_coarsening(h)
    assert_roundtrip(h, s)
    for row in h.table:
        value = row[0]
        for label in row[1:-1]:
            kept = len(label.rstrip("*"))
            assert len(label) == len(value) and label[:kept] == value[:kept]


@settings(max_examples=40, deadline=None)
@given(days=st.lists(st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31)), min_size=1, max_size=40))
def test_date_properties(days: list[dt.date]) -> None:
    s = pd.Series(pd.to_datetime(days))
    h = build_hierarchy(s, None, kind=ColumnKind.numeric, column="d")
    assert_coarsening(h)
    assert_roundtrip(h, s)
    ns = h.table[:, 0].astype("datetime64[D]").astype(np.int64).astype(float) * 86_400e9
    for level in range(h.height + 1):
        assert np.all(h.bounds[:, level, 0] <= ns) and np.all(ns < h.bounds[:, level, 1])


_names = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
_trees = st.recursive(st.none(), lambda children: st.dictionaries(_names, children, min_size=1, max_size=3),
                      max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(tree=st.dictionaries(_names, _trees, min_size=1, max_size=3))
def test_tree_properties(tree: dict) -> None:
    # leaves may repeat across branches or clash with inner labels: then the check must refuse the tree
    try:
        h = build_hierarchy(pd.Series(["x"]).iloc[:0], TreeHierarchy(tree=tree), kind=ColumnKind.nominal,
                            column="t")
    except SpecError as err:
        assert "twice" in str(err) or "coarsening" in str(err)
        return
    assert_coarsening(h)
    s = pd.Series(h.table[:, 0])
    assert_roundtrip(h, s)
    for level in range(h.height + 1):
        ids = h.level_codes(level)
        assert (h.leaves(level) == np.bincount(ids)[ids]).all()


# -- hostile-input review (F9, F15, F20) ------------------------------------------------------------------------
def test_a_tree_list_holding_a_mapping_is_one_spec_error_naming_the_column() -> None:
    for tree in ({"*": [{CANARY: None}, "b"]}, {"*": {"A": [["x", CANARY]]}}, {"*": [None, "b"]}):
        with pytest.raises(SpecError) as err:
            build_hierarchy(pd.Series(["b"]), TreeHierarchy(tree=tree), kind=ColumnKind.nominal, column="city",
                            position=2)
        message = str(err.value)
        assert "column 2 ('city')" in message and "depth" in message and "\n" not in message
        assert CANARY not in message


@pytest.mark.parametrize("kind", [ColumnKind.nominal, ColumnKind.ordinal])
def test_an_empty_string_is_a_value_of_automatic_hierarchies(kind: ColumnKind) -> None:
    s = pd.Series(pd.array(["", "a", None, "", "b"], dtype="string"))
    h = build_hierarchy(s, None, kind=kind, column="city")
    validate_hierarchy(h, s, position=1)
    assert "" in set(h.table[:, 0])
    assert_roundtrip(h, s)
    assert_coarsening(h)
    assert list(h.codes(s) >= 0) == [True, True, False, True, True]
    flat = build_hierarchy(s, FlatHierarchy(), kind=ColumnKind.nominal, column="city")
    assert sorted(map(tuple, flat.table)) == [("", "*"), ("a", "*"), ("b", "*")]
    prefix = build_hierarchy(pd.Series(["", "12", "13"]), PrefixHierarchy(), kind=ColumnKind.nominal, column="c")
    assert_coarsening(prefix)
    validate_hierarchy(prefix, pd.Series(["", "12", "13"]))


def test_a_file_hierarchy_still_refuses_an_empty_field(tmp_path: Path) -> None:
    write(tmp_path / "h.csv", ["a;A;*", ";A;*"])  # an empty value in an ARX file: a ragged or broken row
    with pytest.raises(SpecError, match="row 2 has an empty label at level 0"):
        build_hierarchy(pd.Series(["a"]), FileHierarchy(file=tmp_path / "h.csv"), kind=ColumnKind.nominal,
                        column="c")


@pytest.mark.parametrize("bad", [
    {"type": "intervals", "bins": 10_001},
    {"type": "intervals", "bins": 10**7},
    {"type": "intervals", "fanout": 10_001},
    {"type": "prefix", "step": 10_001},
])
def test_hierarchy_settings_are_bounded(bad: dict) -> None:
    with pytest.raises(ValidationError, match="less than or equal to 10000"):
        spec(bad)
    ok = {**bad, **{key: 10_000 for key in bad if key != "type"}}
    spec(ok)
