"""series.keep_groups (tasks/sanitize/keeping.py, MDAV and condensation): each record keeps its group of the
previous release, so intersecting a record's groups across two releases leaves at least k candidates.

Every claim is re-counted from the two releases' ``input_group`` arrays (which record shared a group with which,
in release 1 and in release 2), not from the method's own bookkeeping.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.sanitize.base import GROUP_COLUMN, Release
from ppdp.tasks.sanitize.condensation import Condensation
from ppdp.tasks.sanitize.generalization import Generalization
from ppdp.tasks.sanitize.keeping import keep_plan
from ppdp.tasks.sanitize.mdav import Mdav
from ppdp.tasks.sanitize.registry import run_method

ROLES = Roles(columns=[
    ColumnTag(name="age", role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared", reason="t"),
    ColumnTag(name="score", role=Role.sensitive, kind=ColumnKind.numeric, source="declared", reason="t"),
    ColumnTag(name="city", role=Role.quasi_identifier, kind=ColumnKind.nominal, source="declared", reason="t"),
    ColumnTag(name="label", role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"),
])
QIS = ["age", "city"]
METHODS = [
    pytest.param(Mdav, {}, id="mdav"),
    pytest.param(Condensation, {"variant": "class_wise"}, id="condensation-class_wise"),
    pytest.param(Condensation, {"variant": "modified"}, id="condensation-modified"),
    pytest.param(Condensation, {"variant": "original"}, id="condensation-original"),
]


def records(n_old: int, n_new: int, seed: int) -> pd.DataFrame:
    """n_old + n_new records (one per row, record id = position): the first n_old have both classes equally often
    (class-wise condensation needs every class at least k in release 1), the new ones draw theirs."""
    rng = np.random.default_rng(seed)
    n = n_old + n_new
    labels = np.r_[rng.permutation(np.arange(n_old) % 2), rng.integers(0, 2, n_new)]
    return pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "score": rng.normal(0, 1, n) + 2.0 * labels,
        "city": rng.choice(["a", "b", "c"], n),
        "label": np.where(labels == 1, "q", "p"),
    })


def table(base: pd.DataFrame, ids: np.ndarray, seed: int) -> pd.DataFrame:
    """The records ``ids`` in that order, under a shuffled, non-default index (positions are what count)."""
    out = base.iloc[ids].copy()
    out.index = np.random.default_rng(seed).permutation(len(ids)) * 5 + 3
    return out


def previous_of(ids1: np.ndarray, release1: Release, ids2: np.ndarray) -> np.ndarray:
    """Each record of table 2: its group in release 1 (-1: not in table 1, or suppressed there)."""
    g1 = pd.Series(release1.input_group, index=ids1)
    return g1.reindex(ids2).fillna(-1).to_numpy(dtype=np.int64)


def joint_sizes(ids1, g1, ids2, g2) -> pd.Series:
    """For each record placed in both releases: how many records shared its group in release 1 AND in release 2
    (the candidate set of an attacker who intersects its two groups)."""
    both = pd.DataFrame({"a": pd.Series(g1, index=ids1), "b": pd.Series(g2, index=ids2)}).dropna()
    both = both[(both["a"] >= 0) & (both["b"] >= 0)]
    return both.groupby(["a", "b"])["a"].transform("size")


def expected_placement(previous: np.ndarray, k: int, classes: np.ndarray | None):
    """The rule, recounted here: (kept rows, suppressed rows)."""
    old = previous >= 0
    present = pd.Series(previous[old]).value_counts()
    kept = old & (pd.Series(previous).map(present).fillna(0).to_numpy() >= k)
    suppressed = old & ~kept
    strata = np.zeros(len(previous), dtype=int) if classes is None else classes
    for s in np.unique(strata[~old]):
        new = ~old & (strata == s)
        hosts = pd.Series(strata[kept]).groupby(previous[kept]).nunique()
        host_strata = pd.Series(strata[kept]).groupby(previous[kept]).first()[hosts == 1]
        if new.sum() < k and not (host_strata == s).any():
            suppressed |= new
    return kept, suppressed


def check_series(release1: Release, ids1, release2: Release, ids2, previous, k, classes=None) -> None:
    g1, g2 = release1.input_group, release2.input_group
    assert len(g2) == len(ids2)
    # every published group has at least k records, in the bookkeeping and in the published table
    assert np.bincount(g2[g2 >= 0]).min() >= k
    if release2.unit == "generating_group":
        assert release2.frame[GROUP_COLUMN].value_counts().min() >= k
    else:
        assert np.bincount(equivalence_class_ids(release2.frame, QIS)).min() >= k
        assert sorted(release2.row_source.tolist()) == np.flatnonzero(g2 >= 0).tolist()
    assert len(release2.frame) == int((g2 >= 0).sum())
    # the intersection of the two groups of every record in both releases keeps at least k records
    sizes = joint_sizes(ids1, g1, ids2, g2)
    assert sizes.empty or sizes.min() >= k
    # a record in both that is not published in release 2 is suppressed, and counted
    assert release2.suppressed_rows == int((g2 < 0).sum())
    kept, suppressed = expected_placement(previous, k, classes)
    assert np.array_equal(g2 < 0, suppressed)
    assert release2.kept_members == int(kept.sum())
    # kept: same previous group <=> same group now
    pairs = pd.DataFrame({"prev": previous[kept], "now": g2[kept]})
    assert (pairs.groupby("prev")["now"].nunique() == 1).all()
    assert (pairs.groupby("now")["prev"].nunique() == 1).all()
    new = (previous < 0) & ~suppressed
    old_groups = set(g2[kept].tolist())
    strata = np.zeros(len(previous), dtype=int) if classes is None else classes
    for s in np.unique(strata[new]):
        joined = np.isin(g2[new & (strata == s)], list(old_groups))
        if (new & (strata == s)).sum() >= k:
            assert not joined.any()  # grouped among themselves
        else:
            assert joined.all()  # joined kept groups
    if classes is not None:  # class-wise (records keep their class here): no group mixes classes
        placed = g2 >= 0
        assert (pd.Series(classes[placed]).groupby(g2[placed]).nunique() == 1).all()


@pytest.mark.parametrize(("cls", "params"), METHODS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_old=st.integers(16, 60), n_new=st.integers(0, 5) | st.integers(6, 30),
       removed=st.floats(0.0, 0.4) | st.floats(0.9, 1.0),  # near 1: no old group left, new records alone
       k=st.integers(2, 5), seed=st.integers(0, 10_000))
def test_groups_kept_across_two_releases(cls, params, n_old, n_new, removed, k, seed):
    base = records(n_old, n_new, seed)
    rng = np.random.default_rng(seed + 1)
    ids1 = rng.permutation(n_old)
    release1 = cls(**params, k=k, seed=seed).sanitize(table(base, ids1, seed), ROLES)
    stay = rng.permutation(n_old)[: n_old - int(removed * n_old)]
    ids2 = rng.permutation(np.r_[stay, np.arange(n_old, n_old + n_new)])
    previous = previous_of(ids1, release1, ids2)
    frame2 = table(base, ids2, seed + 2)
    try:
        release2 = cls(**params, k=k, seed=seed).sanitize(frame2, ROLES, previous=previous)
    except InputError:  # nothing can be published: every old group lost members and fewer than k are new
        kept, suppressed = expected_placement(previous, k, _classes(params, frame2))
        assert suppressed.all()
        return
    check_series(release1, ids1, release2, ids2, previous, k, _classes(params, frame2))
    again = cls(**params, k=k, seed=seed).sanitize(frame2, ROLES, previous=previous)
    pd.testing.assert_frame_equal(release2.frame, again.frame)
    assert np.array_equal(release2.input_group, again.input_group)


def _classes(params, frame):
    return pd.factorize(frame["label"], sort=True)[0] if params.get("variant") == "class_wise" else None


@pytest.mark.parametrize(("cls", "params"), METHODS)
def test_growing_table_keeps_every_old_record(cls, params):
    """Rows only appended: every old group keeps all its records, nothing is suppressed."""
    base = records(40, 25, 7)
    ids1 = np.arange(40)
    release1 = cls(**params, k=4, seed=1).sanitize(table(base, ids1, 1), ROLES)
    ids2 = np.random.default_rng(2).permutation(65)
    previous = previous_of(ids1, release1, ids2)
    release2 = cls(**params, k=4, seed=1).sanitize(table(base, ids2, 3), ROLES, previous=previous)
    check_series(release1, ids1, release2, ids2, previous, 4, _classes(params, table(base, ids2, 3)))
    assert release2.suppressed_rows == 0 and release2.kept_members == 40
    sizes = joint_sizes(ids1, release1.input_group, ids2, release2.input_group)
    # each old record's candidate set is its whole release-1 group
    g1 = release1.input_group
    whole = pd.Series(np.bincount(g1)[g1], index=ids1)
    assert len(sizes) == 40 and (sizes == whole.reindex(sizes.index)).all()


@pytest.mark.parametrize(("cls", "params"), METHODS)
def test_group_ids_are_only_labels(cls, params):
    """Arbitrary, non-contiguous previous ids give the same release as dense ones."""
    base = records(30, 10, 3)
    ids1 = np.arange(30)
    release1 = cls(**params, k=3, seed=5).sanitize(table(base, ids1, 0), ROLES)
    ids2 = np.r_[np.arange(4, 40)]
    previous = previous_of(ids1, release1, ids2)
    relabelled = np.where(previous >= 0, previous * 7919 + 100_003, -1)
    a = cls(**params, k=3, seed=5).sanitize(table(base, ids2, 1), ROLES, previous=previous)
    b = cls(**params, k=3, seed=5).sanitize(table(base, ids2, 1), ROLES, previous=relabelled)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert np.array_equal(a.input_group, b.input_group)


def test_few_new_records_join_the_nearest_kept_group():
    frame = pd.DataFrame({
        "age": [20, 21, 22, 70, 71, 72, 69],
        "score": np.arange(7.0),
        "city": ["a", "a", "a", "b", "b", "b", "b"],
        "label": ["p", "q", "p", "q", "p", "q", "p"],
    })
    previous = np.array([8, 8, 8, 3, 3, 3, -1])
    out = Mdav(k=3, seed=0).sanitize(frame, ROLES, previous=previous)
    g = out.input_group
    assert g[6] == g[3] == g[4] == g[5] and g[0] == g[1] == g[2] != g[3]
    assert out.kept_members == 6 and out.suppressed_rows == 0
    # a group that lost a member is suppressed whole; then the new record has no group to join either
    with pytest.raises(InputError) as err:
        Mdav(k=3, seed=0).sanitize(frame.iloc[[0, 1, 3, 4]], ROLES, previous=previous[[0, 1, 3, 4]])
    assert "70" not in str(err.value) and "21" not in str(err.value)  # no data value in the message
    out = Mdav(k=3, seed=0).sanitize(frame.iloc[[0, 1, 3, 4, 5, 6]], ROLES, previous=previous[[0, 1, 3, 4, 5, 6]])
    assert out.suppressed_rows == 2 and list(out.input_group[:2]) == [-1, -1] and out.kept_members == 3


def test_class_wise_new_records_stay_in_their_class():
    """Class-wise condensation: fewer than k new records of a class join a kept group of that class, or are
    suppressed when their class has none."""
    frame = pd.DataFrame({
        "age": [20, 21, 22, 70, 71, 72, 21, 71],
        "score": np.arange(8.0),
        "city": ["a"] * 8,
        "label": ["p", "p", "p", "q", "q", "q", "q", "r"],
    })
    previous = np.array([4, 4, 4, 9, 9, 9, -1, -1])
    out = Condensation(variant="class_wise", k=3, seed=0).sanitize(frame, ROLES, previous=previous)
    g = out.input_group
    assert g[6] == g[3] != g[0]  # the q record near the p group still joins the q group
    assert g[7] == -1 and out.suppressed_rows == 1  # no kept group of class r


def test_keep_plan_decides_from_counts_alone():
    plan = keep_plan(np.array([5, 5, 5, 2, 2, -1, -1, -1]), 3)
    assert plan.kept.tolist() == [0, 0, 0, -1, -1, -1, -1, -1]
    assert plan.new.tolist() == [False] * 5 + [True] * 3
    assert plan.kept_members == 3 and plan.suppressed_rows == 2
    with pytest.raises(ValueError):
        keep_plan(np.array([1, 1]), 0)


def test_without_keep_groups_the_intersection_falls_below_k():
    """The attack the option stops: two independent MDAV runs (k, then k + 1) on the same records leave some
    records with fewer than k candidates once their two groups are intersected."""
    base = records(120, 0, 11)
    ids = np.arange(120)
    k = 3
    first = Mdav(k=k, seed=0).sanitize(table(base, ids, 0), ROLES)
    second = Mdav(k=k + 1, seed=0).sanitize(table(base, ids, 1), ROLES)
    sizes = joint_sizes(ids, first.input_group, ids, second.input_group)
    assert (sizes < k).any()
    kept = Mdav(k=k, seed=0).sanitize(table(base, ids, 1), ROLES, previous=first.input_group)
    assert joint_sizes(ids, first.input_group, ids, kept.input_group).min() >= k
    # keeping at k + 1 groups formed at k: every group of exactly k records is suppressed, here all of them
    with pytest.raises(InputError):
        Mdav(k=k + 1, seed=0).sanitize(table(base, ids, 1), ROLES, previous=first.input_group)


def test_a_method_without_keeps_groups_refuses_previous():
    frame = records(30, 0, 1)
    with pytest.raises(SpecError, match="series.keep_groups"):
        Generalization(k=3, suppression_limit=0.1, seed=0).sanitize(frame, ROLES, previous=np.full(30, -1))
    assert not Generalization.keeps_groups and Mdav.keeps_groups and Condensation.keeps_groups


def test_run_method_records_kept_members():
    frame = records(30, 6, 2)
    release1, record1 = run_method(Mdav(k=3, seed=0), frame.iloc[:30], ROLES)
    assert record1.kept_members is None and release1.kept_members == 0
    previous = np.r_[release1.input_group, np.full(6, -1)]
    release2, record2 = run_method(Mdav(k=3, seed=0), frame, ROLES, previous=previous)
    assert record2.kept_members == release2.kept_members == 30


def test_all_new_records_is_the_plain_method():
    """No earlier release: the same groups as the method without keep_groups."""
    frame = records(50, 0, 4)
    plain = Mdav(k=4, seed=2).sanitize(frame, ROLES)
    kept = Mdav(k=4, seed=2).sanitize(frame, ROLES, previous=np.full(50, -1))
    pd.testing.assert_frame_equal(plain.frame, kept.frame)
    assert kept.kept_members == 0 and kept.suppressed_rows == 0
