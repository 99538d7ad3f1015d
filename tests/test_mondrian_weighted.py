"""Mondrian for a table too big for one machine (tasks/sanitize/mondrian.py): strict Mondrian on weighted records
(``weights``: distinct code tuples with their counts) and its first rounds from marginal counts (``cut_round``,
``apply_cuts``), each resulting partition finished on its own records with the dimensions' global metadata. Both
must give exactly the partition of one strict run on the rows (compared as partitions: labels factorized by first
appearance)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.hierarchy import TreeHierarchy
from ppdp.tasks.core.hierarchy import build_hierarchy
from ppdp.tasks.sanitize.mondrian import (
    Cut,
    Dimension,
    apply_cuts,
    cut_round,
    hierarchy_dimension,
    mondrian_partition,
    numeric_dimension,
    partition_labels,
)

TREE = {"*": {"Europe": {"West": {"fr": None, "de": None, "nl": None}, "East": {"pl": None, "cz": None}},
              "Asia": {"jp": None, "kr": None, "cn": None}, "us": None}}
COUNTRIES = ["fr", "de", "nl", "pl", "cz", "jp", "kr", "cn", "us"]
CODES = ["A1", "A2", "A3", "B1", "B2", "C1", "C7", "D4"]  # equal-length codes: an automatic prefix hierarchy
KINDS = st.lists(st.sampled_from(["range", "tree", "prefix"]), min_size=1, max_size=3)
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def dims_of_k_or_more(n: int, seed: int, k: int, kinds: list[str], missing: float) -> list[Dimension]:
    """``make_dims`` for a draw with n >= k; hypothesis rejects the others (fewer than k records cannot be
    partitioned)."""
    assume(n >= k)
    return make_dims(n, seed, kinds, missing)


def categorical(values: list[str], spec: TreeHierarchy | None) -> Dimension:
    series = pd.Series(values, dtype=object)
    h = build_hierarchy(series, spec, kind=ColumnKind.nominal, column="c")
    return hierarchy_dimension(h, h.codes(series))


def make_dims(n: int, seed: int, kinds: list[str], missing: float) -> list[Dimension]:
    """Random quasi-identifiers over n records: few distinct values (ties at the median, repeated tuples), NaN /
    None where missing (code U / T)."""
    rng = np.random.default_rng(seed)
    dims = []
    for kind in kinds:
        gone = rng.random(n) < missing
        if kind == "range":
            x = rng.integers(0, int(rng.integers(1, 12)), n).astype(float) * float(rng.choice([1.0, 0.5, 7.0]))
            x[gone] = np.nan
            dims.append(numeric_dimension(x))
            continue
        pool = COUNTRIES if kind == "tree" else CODES
        p = rng.dirichlet(np.full(len(pool), 0.6))
        values = [None if g else v for g, v in zip(gone, rng.choice(pool, n, p=p).tolist())]
        dims.append(categorical(values, TreeHierarchy(tree=TREE) if kind == "tree" else None))
    return dims


def factorized(labels: np.ndarray) -> np.ndarray:
    return pd.factorize(np.asarray(labels))[0]


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(factorized(a), factorized(b))


def restricted(dims: list[Dimension], rows: np.ndarray) -> list[Dimension]:
    """The dimensions over some records, with the global metadata (value span, missing rank, leaf count)."""
    return [replace(d, code=d.code[rows]) for d in dims]


def distinct(dims: list[Dimension]) -> tuple[list[Dimension], np.ndarray, np.ndarray]:
    """The distinct code tuples as dimensions, their counts, and each record's tuple."""
    tuples = np.stack([d.code for d in dims], axis=1)
    uniq, inverse, counts = np.unique(tuples, axis=0, return_inverse=True, return_counts=True)
    return [replace(d, code=uniq[:, j].copy()) for j, d in enumerate(dims)], counts, inverse.reshape(-1)


def marginals(dims: list[Dimension], part: np.ndarray, rng: np.random.Generator
              ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per dimension, the (partition, code, count) histogram of the records, as a cluster would count it: in a
    random order, some pairs split in two entries (one possibly of count 0)."""
    out = []
    for d in dims:
        top = int(d.code.max()) + 1
        key, count = np.unique(part * top + d.code, return_counts=True)
        split = rng.random(len(key)) < 0.3
        piece = rng.integers(0, count[split] + 1)  # 0..count: an entry of count 0 now and then
        head = count.copy()
        head[split] = piece
        key = np.concatenate([key, key[split]])
        count = np.concatenate([head, count[split] - piece])
        order = rng.permutation(len(key))
        out.append((key[order] // top, key[order] % top, count[order]))
    return out


def global_meta(dims: list[Dimension]) -> list[Dimension]:
    """What a coordinator holds: the dimensions' metadata without records."""
    return [replace(d, code=np.zeros(0, dtype=np.int64)) for d in dims]


def one_round(dims: list[Dimension], part: np.ndarray, k: int, rng: np.random.Generator
              ) -> tuple[list[Cut | None], np.ndarray]:
    cuts = cut_round(global_meta(dims), marginals(dims, part, rng), np.bincount(part), k)
    assert len(cuts) == int(part.max()) + 1
    new = apply_cuts(cuts, part, [d.code for d in dims], dims)
    # a machine holding some of the records numbers them as one holding all of them
    some = rng.random(len(part)) < 0.5
    assert np.array_equal(apply_cuts(cuts, part[some], [d.code[some] for d in dims], dims), new[some])
    assert np.array_equal(np.unique(new), np.arange(int(new.max()) + 1))  # dense
    pairs = np.unique(np.stack([new, part], axis=1), axis=0)
    assert len(np.unique(pairs[:, 0])) == len(pairs)  # the new partitions refine the old ones
    for g, cut in enumerate(cuts):
        children = np.unique(new[part == g])
        assert len(children) == (1 if cut is None else cut.parts)
        if cut is not None:
            assert all((new == c).sum() >= k for c in children)  # allowable: every part holds k records
    return cuts, new


def finish(dims: list[Dimension], part: np.ndarray, k: int, weighted: bool) -> np.ndarray:
    """Each partition finished on its own (its rows, or its distinct tuples with their counts)."""
    out = np.empty(len(part), dtype=np.int64)
    offset = 0
    for g in np.unique(part):
        rows = np.flatnonzero(part == g)
        local = restricted(dims, rows)
        if weighted:
            tuples, counts, inverse = distinct(local)
            labels = mondrian_partition(tuples, k, "strict", weights=counts)[inverse]
        else:
            labels = mondrian_partition(local, k, "strict")
        out[rows] = offset + labels
        offset += int(labels.max()) + 1
    return out


# -- weighted records ---------------------------------------------------------------------------------------------
@settings(max_examples=40, **SETTINGS)
@given(n=st.integers(1, 300), seed=st.integers(0, 10_000), k=st.integers(2, 10), kinds=KINDS,
       missing=st.sampled_from([0.0, 0.2, 1.0]), heavy=st.integers(1, 6))
def test_weighted_records_give_the_partition_and_labels_of_their_rows(n, seed, k, kinds, missing, heavy):
    dims = make_dims(n, seed, kinds, missing)
    weights = np.random.default_rng(seed + 1).integers(1, heavy + 1, n)
    rows = np.repeat(np.arange(n), weights)  # the records each weighted record stands for
    expanded = restricted(dims, rows)
    if len(rows) < k:
        with pytest.raises(ValueError):
            mondrian_partition(dims, k, "strict", weights=weights)
        return
    on_rows = mondrian_partition(expanded, k, "strict")
    weighted = mondrian_partition(dims, k, "strict", weights=weights)  # records may repeat: still fine
    assert same_partition(weighted[rows], on_rows)
    assert np.bincount(weighted, weights=weights).min() >= k
    first = pd.unique(weighted)
    assert list(first) == list(range(len(first)))  # numbered in order of first record
    for d, e in zip(dims, expanded):  # the published labels depend on lo/hi/LCA only
        assert partition_labels(d, weighted)[weighted[rows]].tolist() == partition_labels(e, on_rows)[on_rows].tolist()
    # the distinct tuples with their counts
    tuples, counts, inverse = distinct(expanded)
    assert same_partition(mondrian_partition(tuples, k, "strict", weights=counts)[inverse], on_rows)


@settings(max_examples=15, **SETTINGS)
@given(n=st.integers(1, 200), seed=st.integers(0, 10_000), k=st.integers(1, 10), kinds=KINDS,
       missing=st.sampled_from([0.0, 0.2]))
def test_unit_weights_give_the_unweighted_labels_exactly(n, seed, k, kinds, missing):
    dims = dims_of_k_or_more(n, seed, k, kinds, missing)
    plain = mondrian_partition(dims, k, "strict")
    ones = mondrian_partition(dims, k, "strict", weights=np.ones(n, dtype=np.int64))
    assert plain.dtype == ones.dtype and plain.tobytes() == ones.tobytes()


def test_weights_count_as_records():
    # two distinct records of weight 3 with k = 3: two partitions; k = 4: one; k = 7: more than there are
    d = numeric_dimension(np.array([1.0, 2.0]))
    assert mondrian_partition([d], 3, weights=np.array([3, 3])).tolist() == [0, 1]
    assert mondrian_partition([d], 4, weights=np.array([3, 3])).tolist() == [0, 0]
    with pytest.raises(ValueError, match="k = 7 and n = 6"):
        mondrian_partition([d], 7, weights=np.array([3, 3]))
    # the median is counted in weight: 1 x1, 2 x1, 3 x5 -> median 3, cut "< 3 | >= 3" leaves 2 | 5 for k = 2
    d = numeric_dimension(np.array([1.0, 2.0, 3.0]))
    assert mondrian_partition([d], 2, weights=np.array([1, 1, 5])).tolist() == [0, 0, 1]


def test_weights_are_checked():
    d = numeric_dimension(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="relaxed Mondrian splits equal records: it needs the rows"):
        mondrian_partition([d], 2, "relaxed", weights=np.array([1, 1, 1]))
    for bad in (np.array([1, 1]), np.array([1, 0, 1]), np.array([1.0, 1.0, 1.0])):
        with pytest.raises(ValueError):
            mondrian_partition([d], 1, weights=bad)


# -- top cuts from marginal counts ----------------------------------------------------------------------------------
@settings(max_examples=45, **SETTINGS)
@given(n=st.integers(1, 300), seed=st.integers(0, 10_000), k=st.integers(2, 10), kinds=KINDS,
       missing=st.sampled_from([0.0, 0.2, 1.0]), rounds=st.integers(0, 5), weighted=st.booleans())
def test_rounds_from_marginals_then_local_runs_give_the_one_machine_partition(n, seed, k, kinds, missing, rounds,
                                                                             weighted):
    dims = dims_of_k_or_more(n, seed, k, kinds, missing)
    whole = mondrian_partition(dims, k, "strict")
    rng = np.random.default_rng(seed + 2)
    part = np.zeros(n, dtype=np.int64)
    for _ in range(rounds):
        _, part = one_round(dims, part, k, rng)
    assert same_partition(finish(dims, part, k, weighted), whole)


@settings(max_examples=30, **SETTINGS)
@given(n=st.integers(1, 300), seed=st.integers(0, 10_000), k=st.integers(2, 10), kinds=KINDS,
       missing=st.sampled_from([0.0, 0.2]))
def test_rounds_from_marginals_alone_run_to_the_one_machine_partition(n, seed, k, kinds, missing):
    dims = dims_of_k_or_more(n, seed, k, kinds, missing)
    rng = np.random.default_rng(seed + 3)
    part = np.zeros(n, dtype=np.int64)
    for _ in range(n):  # each round cuts at least one partition until none is left to cut
        cuts, new = one_round(dims, part, k, rng)
        if all(c is None for c in cuts):
            assert np.array_equal(new, part)  # final partitions keep their records (and here their ids)
            break
        part = new
    assert same_partition(part, mondrian_partition(dims, k, "strict"))


def test_cut_round_hand_examples():
    # one dimension 3 1 6 3 2 5, k = 2: ranks of 1 2 3 5 6 are 0..4, the median (position 2 of 0 1 2 2 3 4) is
    # rank 2 (the value 3), cut "<= 3 | > 3" (both cuts leave 2 on the small side: the first wins)
    d = numeric_dimension(np.array([3.0, 1.0, 6.0, 3.0, 2.0, 5.0]))
    margin = (np.zeros(5, dtype=np.int64), np.arange(5), np.array([1, 1, 2, 1, 1]))
    cuts = cut_round([replace(d, code=np.zeros(0, dtype=np.int64))], [margin], np.array([6]), 2)
    assert cuts == [Cut(dim=0, kind="range", median=2, below_right=False)]
    assert apply_cuts(cuts, np.zeros(6, dtype=np.int64), [d.code], [d]).tolist() == [0, 0, 1, 0, 0, 1]
    # a partition of three 1s and one 2 (k = 2) has no strict cut; the other one keeps numbering after it
    margin = (np.array([1, 0, 0, 1, 1]), np.array([0, 0, 1, 3, 4]), np.array([2, 3, 1, 2, 2]))
    cuts = cut_round([d], [margin], np.array([4, 6]), 2)
    assert cuts == [None, Cut(dim=0, kind="range", median=3, below_right=False)]
    assert apply_cuts(cuts, np.array([1, 0, 1, 1]), [np.array([4, 1, 0, 3])], [d]).tolist() == [2, 0, 1, 1]
    # a hierarchy: Europe (fr 3, de 3, pl 2) | Asia (jp 3, kr 1), k = 2: cut at the root into its children
    values = ["fr"] * 3 + ["de"] * 3 + ["pl"] * 2 + ["jp"] * 3 + ["kr"]
    h = categorical(values, TreeHierarchy(tree=TREE))
    code, count = np.unique(h.code, return_counts=True)
    cuts = cut_round([h], [(np.zeros(len(code), dtype=np.int64), code, count)], np.array([12]), 2)
    cut = cuts[0]
    assert cut is not None and cut.kind == "hierarchy" and cut.dim == 0 and cut.parts == 2
    assert cut.level == h.nodes.shape[1] - 2 and list(cut.children) == sorted(cut.children)
    new = apply_cuts(cuts, np.zeros(12, dtype=np.int64), [h.code], [h])
    assert same_partition(new, np.array([0] * 8 + [1] * 4))
    # a record in a child its partition's marginal did not hold cannot be placed
    with pytest.raises(ValueError, match="child"):
        apply_cuts([replace(cut, children=cut.children[:1])], np.zeros(12, dtype=np.int64), [h.code], [h])
    for wrong in (replace(cut, dim=1), replace(cut, kind="range"), replace(cut, children=())):
        with pytest.raises(ValueError, match="does not fit"):
            apply_cuts([wrong], np.zeros(12, dtype=np.int64), [h.code], [h])


def test_cut_round_checks_its_marginals():
    d = numeric_dimension(np.array([1.0, 2.0, 3.0, 4.0]))
    good = (np.zeros(4, dtype=np.int64), np.arange(4), np.ones(4, dtype=np.int64))
    assert cut_round([d], [good], np.array([4]), 2)[0] is not None
    assert cut_round([d], [good], np.array([4]), 3) == [None]
    bad = [
        ((np.zeros(4, dtype=np.int64), np.arange(4), np.ones(4, dtype=np.int64)), np.array([5])),  # sums to 4
        ((np.zeros(4, dtype=np.int64), np.arange(4) + 2, np.ones(4, dtype=np.int64)), np.array([4])),  # code > U
        ((np.ones(4, dtype=np.int64), np.arange(4), np.ones(4, dtype=np.int64)), np.array([4])),  # partition 1
        ((np.zeros(4, dtype=np.int64), np.arange(4), -np.ones(4, dtype=np.int64)), np.array([-4])),
    ]
    for margin, sizes in bad:
        with pytest.raises(ValueError):
            cut_round([d], [margin], sizes, 2)
    with pytest.raises(ValueError):
        cut_round([d, d], [good], np.array([4]), 2)
    assert cut_round([d], [good], np.zeros(0, dtype=np.int64), 2) == []
