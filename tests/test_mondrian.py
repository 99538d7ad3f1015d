"""Mondrian (tasks/sanitize/mondrian.py): the vectorized rounds against a one-partition-at-a-time transcription of
LeFevre et al.'s recursion, every published class of at least k records (recounted on the published table),
strict partitions disjoint in value space, relaxed at least as fine as strict, every original value inside its
published interval or under its published label, and bad inputs failing with one clear line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.hierarchy import TreeHierarchy
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError, PpdpError, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.core.hierarchy import build_hierarchy
from ppdp.tasks.sanitize.mondrian import (
    Dimension,
    Mondrian,
    hierarchy_dimension,
    mondrian_partition,
    numeric_dimension,
    partition_labels,
)

ARX = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "arx"

TREE = {"*": {"Europe": {"West": {"fr": None, "de": None, "nl": None}, "East": {"pl": None, "cz": None}},
              "Asia": {"jp": None, "kr": None, "cn": None}, "us": None}}
COUNTRIES = ["fr", "de", "nl", "pl", "cz", "jp", "kr", "cn", "us"]
ORDER = ["none", "basic", "school", "college", "degree", "doctor"]


def tag(name: str, role: Role, kind: ColumnKind, order: list[str] | None = None) -> ColumnTag:
    return ColumnTag(name=name, role=role, kind=kind, source="declared", reason="test", order=order)


ROLES = Roles(columns=[
    tag("age", Role.quasi_identifier, ColumnKind.numeric),
    tag("height", Role.quasi_identifier, ColumnKind.numeric),
    tag("country", Role.quasi_identifier, ColumnKind.nominal),
    tag("school", Role.quasi_identifier, ColumnKind.ordinal, ORDER),
    tag("wage", Role.sensitive, ColumnKind.numeric),
    tag("label", Role.class_, ColumnKind.nominal),
])
QIS = ["age", "height", "country", "school"]
SPECS = {"country": TreeHierarchy(tree=TREE)}


def make_frame(n: int, seed: int, missing: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 40, n).astype(float),  # few distinct values: ties at the median
        "height": rng.normal(170, 10, n).round(1),
        "country": rng.choice(COUNTRIES, n, p=rng.dirichlet(np.full(len(COUNTRIES), 0.7))),
        "school": rng.choice(ORDER, n),
        "wage": rng.lognormal(2, 0.5, n),
        "label": rng.choice(["x", "y"], n),
    })
    if missing:
        for col in ("age", "country", "school"):
            frame[col] = frame[col].astype(object) if col != "age" else frame[col]
            frame.loc[rng.random(n) < missing, col] = np.nan if col == "age" else None
    frame.index = rng.permutation(n) * 7 + 2  # shuffled, non-default index
    return frame


def aligned(frame: pd.DataFrame, out) -> pd.DataFrame:
    return frame.reset_index(drop=True).iloc[out.row_source].reset_index(drop=True)


# -- the oracle: LeFevre et al.'s recursion, one partition at a time --------------------------------------------
def naive_mondrian(dims: list[Dimension], k: int, mode: str) -> list[frozenset[int]]:
    """The paper's Anonymize(partition) recursion, written out per partition with the rules of
    :func:`mondrian_partition` (widest allowable dimension, first on ties; strict cuts before relaxed ones)."""
    out: list[frozenset[int]] = []

    def range_cut(d: Dimension, part: list[int]):
        codes = [int(d.code[i]) for i in part]
        u = len(d.values)
        lo, hi = min(codes), max(codes)
        if lo == u:
            width = 0.0
        elif hi == u:
            width = 1.0
        else:
            span = float(d.values[-1] - d.values[0])
            width = (d.values[hi] - d.values[lo]) / span if span > 0 else 0.0
        ordered = sorted(part, key=lambda i: (int(d.code[i]), i))
        med = int(d.code[ordered[(len(part) - 1) // 2]])
        le = [i for i in part if d.code[i] <= med]
        lt = [i for i in part if d.code[i] < med]
        options = []
        for left in (le, lt):
            if len(left) >= k and len(part) - len(left) >= k:
                options.append((min(len(left), len(part) - len(left)), left))
        strict = None
        if options:
            best = options[0] if len(options) == 1 or options[0][0] >= options[1][0] else options[1]
            left = set(best[1])
            strict = [[i for i in part if i in left], [i for i in part if i not in left]]
        relaxed = None
        if len(part) >= 2 * k and lo < hi:
            half = len(part) // 2
            relaxed = [sorted(ordered[:half]), sorted(ordered[half:])]
        return width, strict, relaxed

    def hierarchy_cut(d: Dimension, part: list[int]):
        codes = [int(d.code[i]) for i in part]
        level = next(lv for lv in range(d.nodes.shape[1]) if len({int(d.nodes[c, lv]) for c in codes}) == 1)
        width = d.leaves[codes[0], level] / float(d.leaves[0, -1])
        if level == 0:
            return width, None, None
        children: dict[int, list[int]] = {}
        for i, c in zip(part, codes):
            children.setdefault(int(d.nodes[c, level - 1]), []).append(i)
        groups = [children[key] for key in sorted(children)]
        strict = groups if min(len(g) for g in groups) >= k else None
        big = [g for g in groups if len(g) >= k]
        small = [i for g in groups if len(g) < k for i in g]
        relaxed = None
        if len(big) >= 2 or (len(big) == 1 and len(small) >= k):
            if len(small) >= k:
                relaxed = big + [small]
            else:
                smallest = min(range(len(big)), key=lambda j: len(big[j]))
                relaxed = [g + small if j == smallest else g for j, g in enumerate(big)]
        return width, strict, relaxed

    def anonymize(part: list[int]) -> None:
        cuts = [range_cut(d, part) if d.kind == "range" else hierarchy_cut(d, part) for d in dims]
        for which in ((1, 2) if mode == "relaxed" else (1,)):
            allowed = [(c[0], -j) for j, c in enumerate(cuts) if c[which] is not None]
            if allowed:
                j = -max(allowed)[1]
                for piece in cuts[j][which]:
                    anonymize(sorted(piece))
                return
        out.append(frozenset(part))

    anonymize(list(range(dims[0].n)))
    return out


def dims_of(frame: pd.DataFrame) -> list[Dimension]:
    h = build_hierarchy(frame["country"], SPECS["country"], kind=ColumnKind.nominal, column="country")
    ranks = frame["school"].map({c: i for i, c in enumerate(ORDER)}).to_numpy(dtype=float)
    return [numeric_dimension(frame["age"].to_numpy(dtype=float)),
            numeric_dimension(frame["height"].to_numpy(dtype=float)),
            hierarchy_dimension(h, h.codes(frame["country"])),
            numeric_dimension(ranks)]


def as_sets(labels: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(labels == g).tolist()) for g in np.unique(labels)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 120), seed=st.integers(0, 10_000), k=st.integers(1, 12),
       mode=st.sampled_from(["strict", "relaxed"]), missing=st.sampled_from([0.0, 0.15]),
       which=st.sampled_from([[0, 1, 2, 3], [2], [2, 3]]))
def test_rounds_match_the_recursion_of_the_paper(n, seed, k, mode, missing, which):
    if n < k:
        return
    frame = make_frame(n, seed, missing).reset_index(drop=True)
    dims = [dims_of(frame)[j] for j in which]
    labels = mondrian_partition(dims, k, mode)
    assert as_sets(labels) == set(naive_mondrian(dims, k, mode))
    assert np.bincount(labels).min() >= k
    first = pd.unique(labels)
    assert list(first) == list(range(len(first)))  # numbered in order of first record


def hierarchy_row(value: object) -> list[str]:
    h = build_hierarchy(pd.Series(COUNTRIES), SPECS["country"], kind=ColumnKind.nominal, column="country")
    return list(h.table[h.table[:, 0] == value][0])


def inside(value: object, label: object, kind: str) -> bool:
    """Is an original value inside its published interval / under its published label?"""
    missing = pd.isna(value)
    if pd.isna(label):
        return missing
    if label == "*":
        return True
    if missing:
        return False
    if kind == "country":
        return label in hierarchy_row(value)
    if kind == "school":
        rank = ORDER.index(value)
        ends = label[1:-1].split("-") if label.startswith("[") else [label, label]
        return ORDER.index(ends[0]) <= rank <= ORDER.index(ends[1])
    ends = label[1:-1].split("-") if label.startswith("[") else [label, label]
    return float(ends[0]) <= float(value) <= float(ends[1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 150), seed=st.integers(0, 10_000), k=st.integers(2, 10),
       mode=st.sampled_from(["strict", "relaxed"]), missing=st.sampled_from([0.0, 0.1]))
def test_every_published_class_has_k_records_and_holds_its_records_values(n, seed, k, mode, missing):
    frame = make_frame(n, seed, missing)
    if n < k:
        with pytest.raises(InputError):
            Mondrian(k=k, mode=mode, hierarchies=SPECS).sanitize(frame, ROLES)
        return
    out = Mondrian(k=k, mode=mode, hierarchies=SPECS, seed=seed).sanitize(frame, ROLES)
    ids = equivalence_class_ids(out.frame, QIS)  # recount on the published table
    assert np.bincount(ids).min() >= k
    assert len(np.unique(np.stack([ids, out.group], axis=1), axis=0)) == ids.max() + 1 == out.group.max() + 1
    src = aligned(frame, out)
    for col in QIS:
        assert out.treatments[col] == "generalized"
        published = out.frame[col].tolist()
        assert all(pd.isna(v) or isinstance(v, str) for v in published)  # text in every row
        assert all(inside(v, p, col) for v, p in zip(src[col].tolist(), published))
    for col in ("wage", "label"):
        assert out.treatments[col] == "kept"
        assert src[col].tolist() == out.frame[col].tolist()
    assert sorted(out.row_source.tolist()) == list(range(n))
    assert out.suppressed_rows == 0 and not out.suppressed_cells


def boxes(dims: list[Dimension], labels: np.ndarray) -> list[list[set[int]]]:
    """Each partition's region per dimension, as the set of values (ranks or leaves) it spans."""
    out = []
    for g in range(int(labels.max()) + 1):
        members = labels == g
        region = []
        for d in dims:
            codes = d.code[members]
            if d.kind == "range":
                region.append(set(range(int(codes.min()), int(codes.max()) + 1)))
            else:
                level = next(lv for lv in range(d.nodes.shape[1]) if len(set(d.nodes[codes, lv].tolist())) == 1)
                node = d.nodes[codes[0], level]
                region.append(set(np.flatnonzero(d.nodes[:, level] == node).tolist()))
        out.append(region)
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 150), seed=st.integers(0, 10_000), k=st.integers(1, 10),
       missing=st.sampled_from([0.0, 0.1]))
def test_strict_regions_are_disjoint_and_relaxed_refines_strict(n, seed, k, missing):
    if n < k:
        return
    frame = make_frame(n, seed, missing).reset_index(drop=True)
    dims = dims_of(frame)
    strict = mondrian_partition(dims, k, "strict")
    regions = boxes(dims, strict)
    for a in range(len(regions)):
        for b in range(a + 1, len(regions)):
            assert any(not (ra & rb) for ra, rb in zip(regions[a], regions[b]))  # apart in some dimension
    relaxed = mondrian_partition(dims, k, "relaxed")
    assert np.bincount(relaxed).min() >= k
    # every relaxed partition lies inside one strict partition, so there are at least as many
    pairs = np.unique(np.stack([relaxed, strict], axis=1), axis=0)
    assert len(np.unique(pairs[:, 0])) == len(pairs)
    assert relaxed.max() >= strict.max()
    # and so on the published tables
    k = max(k, 2)
    out_s = Mondrian(k=k, mode="strict", hierarchies=SPECS).sanitize(frame, ROLES)
    out_r = Mondrian(k=k, mode="relaxed", hierarchies=SPECS).sanitize(frame, ROLES)
    assert equivalence_class_ids(out_r.frame, QIS).max() >= equivalence_class_ids(out_s.frame, QIS).max()


def test_hand_example_strict_and_relaxed():
    # k = 2, one dimension 1 2 3 3 5 6: strict cuts at the median 3 (<= 3 | > 3), then {1, 2} | {3, 3}
    d = numeric_dimension(np.array([3.0, 1.0, 6.0, 3.0, 2.0, 5.0]))
    strict = mondrian_partition([d], 2, "strict")
    assert as_sets(strict) == {frozenset({1, 4}), frozenset({0, 3}), frozenset({2, 5})}
    assert partition_labels(d, strict).tolist() == ["3", "[1-2]", "[5-6]"]  # partitions in order of first row
    # values 1 1 1 1 2: no strict cut leaves two records on each side; relaxed halves them: {1, 1} | {1, 1, 2}
    d = numeric_dimension(np.array([1.0, 1.0, 2.0, 1.0, 1.0]))
    assert mondrian_partition([d], 2, "strict").tolist() == [0] * 5
    relaxed = mondrian_partition([d], 2, "relaxed")
    assert as_sets(relaxed) == {frozenset({0, 1}), frozenset({2, 3, 4})}
    assert sorted(partition_labels(d, relaxed).tolist()) == ["1", "[1-2]"]  # regions overlap at 1


def test_hierarchy_cuts_follow_the_children_of_the_current_node():
    values = ["fr"] * 3 + ["de"] * 3 + ["pl"] * 2 + ["jp"] * 3 + ["kr"] * 1
    h = build_hierarchy(pd.Series(values), SPECS["country"], kind=ColumnKind.nominal, column="country")
    d = hierarchy_dimension(h, h.codes(pd.Series(values)))
    strict = mondrian_partition([d], 2, "strict")
    # root -> Europe (8) | Asia (4); Europe -> West (6) | East (2, all pl: published pl); West -> fr | de;
    # Asia -> jp (3) | kr (1) is not allowable
    assert sorted(partition_labels(d, strict).tolist()) == ["Asia", "de", "fr", "pl"]
    # relaxed: kr would join jp, the only child of k records: one part, no cut either
    assert sorted(partition_labels(d, mondrian_partition([d], 2, "relaxed")).tolist()) == ["Asia", "de", "fr", "pl"]
    # k = 3: Europe -> West (6) | East (2) is not allowable; Asia -> jp (3) | kr (1) neither
    assert sorted(partition_labels(d, mondrian_partition([d], 3, "strict")).tolist()) == ["Asia", "Europe"]
    # relaxed, small children joining the smallest big one: West holds fr 3, de 3, nl 1; k = 3
    values = ["fr"] * 3 + ["de"] * 3 + ["nl"]
    h = build_hierarchy(pd.Series(values), SPECS["country"], kind=ColumnKind.nominal, column="country")
    d = hierarchy_dimension(h, h.codes(pd.Series(values)))
    assert partition_labels(d, mondrian_partition([d], 3, "strict")).tolist() == ["West"]
    assert partition_labels(d, mondrian_partition([d], 3, "relaxed")).tolist() == ["West", "de"]  # {fr, nl} | de
    # relaxed, small children pooled: Europe 4 (fr 2, de 2: published West), Asia 2, us 1 under the root; k = 3
    values = ["fr", "fr", "de", "de", "jp", "kr", "us"]
    h = build_hierarchy(pd.Series(values), SPECS["country"], kind=ColumnKind.nominal, column="country")
    d = hierarchy_dimension(h, h.codes(pd.Series(values)))
    assert partition_labels(d, mondrian_partition([d], 3, "strict")).tolist() == ["*"]
    assert partition_labels(d, mondrian_partition([d], 3, "relaxed")).tolist() == ["West", "*"]


def test_missing_values_are_a_value_of_their_own():
    frame = pd.DataFrame({"age": [20.0, 21, 22, 23, np.nan, np.nan, np.nan, np.nan],
                          "country": ["fr", "fr", "de", "de", None, None, "jp", "jp"],
                          "wage": np.arange(8.0), "label": list("xyxyxyxy")})
    roles = Roles(columns=[tag("age", Role.quasi_identifier, ColumnKind.numeric),
                           tag("country", Role.quasi_identifier, ColumnKind.nominal),
                           tag("wage", Role.sensitive, ColumnKind.numeric),
                           tag("label", Role.class_, ColumnKind.nominal)])
    out = Mondrian(k=2, hierarchies=SPECS).sanitize(frame, roles)
    src = aligned(frame, out)
    rows = dict(zip(zip(src["age"].fillna(-1), src["country"].fillna("?")),
                    zip(out.frame["age"].fillna("?"), out.frame["country"].fillna("?"))))
    assert rows[(-1, "?")] == ("?", "?")  # missing in every column: published missing
    assert rows[(-1, "jp")] == ("?", "jp")
    assert rows[(20.0, "fr")] == ("[20-21]", "fr")


def test_adult_with_the_arx_hierarchies():
    if not (ARX / "adult.csv").is_file():
        pytest.skip("the shared ARX Adult data is not on this machine")
    frame = pd.read_csv(ARX / "adult.csv", sep=";").iloc[:8000]
    qis = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    roles = Roles(columns=[tag(c, Role.quasi_identifier, ColumnKind.numeric if c == "age" else ColumnKind.nominal)
                           for c in qis] + [tag("salary-class", Role.class_, ColumnKind.nominal)])
    specs = {c: {"type": "file", "file": str(ARX / f"adult_hierarchy_{c}.csv")} for c in qis if c != "age"}
    classes = {}
    for mode in ("strict", "relaxed"):
        out = Mondrian(k=5, mode=mode, hierarchies=specs).sanitize(frame, roles)
        ids = equivalence_class_ids(out.frame, qis)
        assert np.bincount(ids).min() >= 5
        classes[mode] = ids.max() + 1
        table = pd.read_csv(ARX / "adult_hierarchy_education.csv", sep=";", header=None, dtype=str)
        assert set(out.frame["education"]) <= set(table.to_numpy().ravel())  # labels of the hierarchy
    assert classes["relaxed"] >= classes["strict"] > 8000 / 5 / 3


def test_bad_inputs_fail_with_one_clear_line():
    frame = make_frame(6, 1)
    with pytest.raises(InputError) as err:
        Mondrian(k=7, hierarchies=SPECS).sanitize(frame, ROLES)
    assert "\n" not in str(err.value) and "k=7" in str(err.value) and "6 records" in str(err.value)
    with pytest.raises(SpecError):
        Mondrian(hierarchies=SPECS).sanitize(frame, ROLES)  # k missing
    with pytest.raises(SpecError) as err:
        Mondrian(k=2, hierarchies={"nope": {"type": "flat"}}).sanitize(frame, ROLES)
    assert "'nope'" in str(err.value)
    with pytest.raises(PpdpError):
        Mondrian(k=2, mode="loose").sanitize(frame, ROLES)
    bad = make_frame(20, 2)
    bad["country"] = bad["country"].astype(object)
    bad.loc[bad.index[3], "country"] = "Zq9-secret"  # not in the tree hierarchy: named by row, never quoted
    with pytest.raises(InputError) as err:
        Mondrian(k=2, hierarchies=SPECS).sanitize(bad, ROLES)
    assert "Zq9" not in str(err.value) and "column" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError):
        mondrian_partition([], 2)


# -- hostile-input review (F7, F15) -----------------------------------------------------------------------------
def test_an_entirely_missing_nominal_quasi_identifier_is_published_missing():
    frame = pd.DataFrame({"age": [1, 2, 3, 4], "city": [None] * 4})
    roles = Roles(columns=[tag("age", Role.quasi_identifier, ColumnKind.numeric),
                           tag("city", Role.quasi_identifier, ColumnKind.nominal)])
    for mode in ("strict", "relaxed"):
        out = Mondrian(k=2, mode=mode).sanitize(frame, roles)
        assert out.frame["city"].isna().all()
        assert sorted(out.frame["age"]) == ["[1-2]", "[1-2]", "[3-4]", "[3-4]"]
        assert np.bincount(equivalence_class_ids(out.frame, ["age", "city"])).min() >= 2


def test_an_empty_string_is_a_value_of_its_own():
    frame = pd.DataFrame({"city": pd.array(["", "a", "", "a"], dtype="string"), "age": [1, 1, 2, 2]})
    roles = Roles(columns=[tag("city", Role.quasi_identifier, ColumnKind.nominal),
                           tag("age", Role.quasi_identifier, ColumnKind.numeric)])
    out = Mondrian(k=2).sanitize(frame, roles)
    src = aligned(frame, out)
    assert (out.frame["city"].to_numpy() == src["city"].to_numpy()).all()  # cut on city: '' | 'a', kept as is
    assert np.bincount(equivalence_class_ids(out.frame, ["city", "age"])).min() >= 2
