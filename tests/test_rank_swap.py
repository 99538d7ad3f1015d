"""Rank swapping (tasks/sanitize/rank_swap.py): a hand-computed swap on 6 rows, and the properties of sdcMicro's
definition: each column keeps its multiset of values, partners are within P percent of ranks, missing values stay."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.sanitize.rank_swap import RankSwap, rank_swap_order
from ppdp.tasks.sanitize.registry import REGISTRY


def tag(name, role, kind=ColumnKind.numeric, order=None):
    return ColumnTag(name=name, role=role, kind=kind, order=order, source="declared", reason="t")


def unshuffled(out):
    return out.frame.take(np.argsort(out.row_source)).reset_index(drop=True)


def test_six_rows_by_hand():
    """x = 10 40 20 60 30 50, P = 40: m P / 100 = 2.4, so a value's partner must be the next rank down (rank + 1 <
    rank + 2.4, rank + 2 is not below int(rank + 2.4)). From the highest: 60 (row 3) <-> 50 (row 5), 40 (row 1) <->
    30 (row 4), 20 (row 2) <-> 10 (row 0): 20 30 10 50 40 60, whatever the seed."""
    frame = pd.DataFrame({"x": [10, 40, 20, 60, 30, 50], "label": list("pqpqpq")})
    roles = Roles(columns=[tag("x", Role.quasi_identifier), tag("label", Role.class_, ColumnKind.nominal)])
    for seed in (0, 1, 2):
        back = unshuffled(RankSwap(p=40.0, seed=seed).sanitize(frame, roles))
        assert back["x"].tolist() == [20, 30, 10, 50, 40, 60]
        assert back["label"].tolist() == frame["label"].tolist() and back["x"].dtype == frame["x"].dtype
    # P = 50: 6 * 0.5 = 3, so rank j may take rank j + 1 or j + 2 (ranks from the top: 60 50 40 30 20 10 are rows
    # 3 5 1 4 2 0). Rank 0 with 1, then 2 with 3 (then 4 with 5) or 2 with 4 (then 3 with 5); or rank 0 with 2, then
    # 1 with 3, 4 with 5. Read back by row, the three possible releases:
    seen = {tuple(unshuffled(RankSwap(p=50.0, seed=s).sanitize(frame, roles))["x"]) for s in range(40)}
    assert seen == {(20, 30, 10, 50, 40, 60), (30, 20, 40, 50, 10, 60), (20, 60, 10, 40, 50, 30)}
    # P small enough that no partner is in range (6 * 0.3 = 1.8 < 2): nothing moves
    assert unshuffled(RankSwap(p=30.0).sanitize(frame, roles))["x"].tolist() == frame["x"].tolist()


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.integers(-50, 50), st.none()), min_size=1, max_size=80),
       p=st.floats(0.5, 100), seed=st.integers(0, 10_000))
def test_property_multiset_kept_partners_within_p_missing_stay(values, p, seed):
    keys = np.array([np.nan if v is None else float(v) for v in values])
    source = rank_swap_order(keys, p, np.random.default_rng(seed))
    assert sorted(source.tolist()) == list(range(keys.size))  # a permutation: the multiset is kept
    present = np.flatnonzero(~np.isnan(keys))
    assert np.array_equal(source[np.isnan(keys)], np.flatnonzero(np.isnan(keys)))  # missing never swapped
    assert np.array_equal(source[source], np.arange(keys.size))  # swaps are pairs
    ranked = present[np.argsort(-keys[present], kind="stable")]
    rank = np.empty(keys.size, dtype=np.int64)
    rank[ranked] = np.arange(present.size)
    moved = present[source[present] != present]
    assert np.all(np.abs(rank[moved] - rank[source[moved]]) < present.size * p / 100.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 60), p=st.floats(1, 100), seed=st.integers(0, 10_000))
def test_property_the_release_keeps_every_columns_values(n, p, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.lognormal(10, 1, n),
                          "grade": rng.choice(["low", "mid", "high"], n), "city": rng.choice(["a", "b"], n),
                          "label": rng.choice(["p", "q"], n)})
    roles = Roles(columns=[tag("age", Role.quasi_identifier), tag("income", Role.sensitive),
                           tag("grade", Role.quasi_identifier, ColumnKind.ordinal, ["low", "mid", "high"]),
                           tag("city", Role.quasi_identifier, ColumnKind.nominal),
                           tag("label", Role.class_, ColumnKind.nominal)])
    out = RankSwap(p=p, seed=seed).sanitize(frame, roles)
    back = unshuffled(out)
    for c in frame.columns:
        assert sorted(back[c].tolist()) == sorted(frame[c].tolist())
    for kept in ("city", "label"):
        assert back[kept].tolist() == frame[kept].tolist()
    assert out.treatments["grade"] == "perturbed" and out.treatments["city"] == "kept"


def test_ordinal_ranks_follow_the_declared_order():
    frame = pd.DataFrame({"grade": ["high", "low", "mid", "low", "high", "mid"]})
    roles = Roles(columns=[tag("grade", Role.quasi_identifier, ColumnKind.ordinal, ["low", "mid", "high"])])
    # ranks from the top: high (0), high (4), mid (2), mid (5), low (1), low (3); P = 40 pairs neighbours: equal values
    back = unshuffled(RankSwap(p=40.0).sanitize(frame, roles))
    assert back["grade"].tolist() == frame["grade"].tolist()


def test_no_attribute_to_swap_and_traits():
    frame = pd.DataFrame({"city": ["a", "b"], "label": ["p", "q"]})
    roles = Roles(columns=[tag("city", Role.quasi_identifier, ColumnKind.nominal),
                           tag("label", Role.class_, ColumnKind.nominal)])
    with pytest.raises(InputError, match="no numeric or ordinal attribute"):
        RankSwap(p=10.0).sanitize(frame, roles)
    assert REGISTRY["rank_swap"] is RankSwap and RankSwap.tunable == {"p": "larger"} and RankSwap.randomized
