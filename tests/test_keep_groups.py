"""series.keep_groups (tasks/sanitize/keeping.py, MDAV and condensation): the previous release's groups are kept
frozen (m-invariance's counterfeits, Xiao & Tao 2007): a kept group publishes exactly its previous rows, a group
with fewer than k present members is retired, new records are grouped among themselves or held.

Every claim is re-counted from the two releases' published frames and ``input_group`` arrays (which record shared a
group with which, which rows each group published), not from the method's own counters.
"""

from __future__ import annotations

from collections import Counter

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
from ppdp.tasks.sanitize.keeping import Kept
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


def kept_of(ids1: np.ndarray, release1: Release, ids2: np.ndarray, seen: np.ndarray | None = None) -> Kept:
    """What the ledger gives a keeping method for table 2: each record's group in release 1 and the row that stood
    for it there (-1: not in table 1, or not published), and release 1's published rows."""
    g1 = pd.Series(release1.input_group, index=ids1)
    rows = np.full(len(ids1), -1, dtype=np.int64)
    rs = np.asarray(release1.row_source)
    rows[rs[rs >= 0]] = np.flatnonzero(rs >= 0)
    r1 = pd.Series(rows, index=ids1)
    groups = g1.reindex(ids2).fillna(-1).to_numpy(dtype=np.int64)
    return Kept(groups=groups, rows=r1.reindex(ids2).fillna(-1).to_numpy(dtype=np.int64),
                seen=(groups >= 0) if seen is None else (groups >= 0) | seen, table=release1.frame, release_id="r1")


def rows_of(frame: pd.DataFrame, mask: np.ndarray) -> Counter:
    """The published rows under ``mask`` as a multiset (every column but the group id, which each release numbers
    anew)."""
    cols = [c for c in frame.columns if c != GROUP_COLUMN]
    return Counter(map(tuple, frame.loc[mask, cols].astype(str).to_numpy().tolist()))


def joint_sizes(ids1, g1, ids2, g2) -> pd.Series:
    """For each record placed in both releases: how many records shared its group in release 1 AND in release 2."""
    both = pd.DataFrame({"a": pd.Series(g1, index=ids1), "b": pd.Series(g2, index=ids2)}).dropna()
    both = both[(both["a"] >= 0) & (both["b"] >= 0)]
    return both.groupby(["a", "b"])["a"].transform("size")


def expected(previous: Kept, k: int, classes: np.ndarray | None):
    """The rule, recounted here with pandas: (kept rows, new rows grouped, held rows)."""
    g = previous.groups
    old = g >= 0
    present = pd.Series(g[old]).value_counts()
    kept = old & (pd.Series(g).map(present).fillna(0).to_numpy() >= k)
    fresh = ~previous.seen & ~old
    strata = np.zeros(len(g), dtype=int) if classes is None else classes
    per = pd.Series(strata[fresh]).value_counts()
    new = fresh & (pd.Series(strata).map(per).fillna(0).to_numpy() >= k)
    return kept, new, ~kept & ~new


def check_series(release1: Release, ids1, release2: Release, ids2, previous: Kept, k, classes=None) -> None:
    g1, g2 = release1.input_group, release2.input_group
    f1, f2 = release1.frame, release2.frame
    assert len(g2) == len(ids2)
    # every published group has at least k rows, in the bookkeeping and in the published table
    assert np.bincount(release2.group).min() >= k
    if release2.unit == "generating_group":
        assert f2[GROUP_COLUMN].value_counts().min() >= k
    else:
        assert np.bincount(equivalence_class_ids(f2, QIS)).min() >= k
    kept, new, held = expected(previous, k, classes)
    assert np.array_equal(g2 >= 0, kept | new)  # no held or retired record is published
    assert release2.held_rows == release2.suppressed_rows == int(held.sum())
    assert release2.kept_members == int(kept.sum())
    # the intersection of the two groups of every record in both releases keeps at least k records
    sizes = joint_sizes(ids1, g1, ids2, g2)
    assert sizes.empty or sizes.min() >= k
    # frozen: each kept group of release 2 publishes exactly the rows its release-1 group published
    kept_rows = 0
    for label in np.unique(g2[kept]):
        before = np.unique(previous.groups[g2 == label])
        assert (previous.groups[kept][np.isin(previous.groups[kept], before)] >= 0).all()
        assert set(np.unique(g2[np.isin(previous.groups, before)])) == {label}  # one previous group, one group now
        mine = np.asarray(release2.group) == label
        assert rows_of(f2, mine) == rows_of(f1, np.isin(np.asarray(release1.group), before))
        kept_rows += int(mine.sum())
        assert not new[g2 == label].any()  # no new record joins a kept group
    assert release2.counterfeit_rows == kept_rows - int(kept.sum())
    assert len(f2) == kept_rows + int(new.sum())  # one row per new record, in groups of new records only
    assert not np.isin(g2[new], g2[kept]).any()
    if release2.unit == "equivalence_class":  # a kept member keeps its own row of release 1
        rs2 = np.asarray(release2.row_source)
        at = np.flatnonzero(rs2 >= 0)
        members = rs2[at]
        old_rows = previous.rows[members]
        published = f2.iloc[at].astype(str).to_numpy()
        linked = kept[members]
        assert (old_rows[linked] >= 0).all()
        assert (published[linked] == f1.iloc[old_rows[linked]].astype(str).to_numpy()).all()
        assert sorted(members.tolist()) == np.flatnonzero(g2 >= 0).tolist()
    if classes is not None:  # class-wise: no new group mixes classes
        placed = new
        assert (pd.Series(classes[placed]).groupby(g2[placed]).nunique() == 1).all()


@pytest.mark.parametrize(("cls", "params"), METHODS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_old=st.integers(16, 60), n_new=st.integers(0, 5) | st.integers(6, 30),
       removed=st.floats(0.0, 0.4) | st.floats(0.9, 1.0),  # near 1: no old group left, new records alone
       k=st.integers(2, 5), seed=st.integers(0, 10_000))
def test_groups_kept_frozen_across_two_releases(cls, params, n_old, n_new, removed, k, seed):
    base = records(n_old, n_new, seed)
    rng = np.random.default_rng(seed + 1)
    ids1 = rng.permutation(n_old)
    release1 = cls(**params, k=k, seed=seed).sanitize(table(base, ids1, seed), ROLES)
    stay = rng.permutation(n_old)[: n_old - int(removed * n_old)]
    ids2 = rng.permutation(np.r_[stay, np.arange(n_old, n_old + n_new)])
    previous = kept_of(ids1, release1, ids2)
    frame2 = table(base, ids2, seed + 2)
    try:
        release2 = cls(**params, k=k, seed=seed).sanitize(frame2, ROLES, previous=previous)
    except InputError:  # nothing can be published: every old group lost members and fewer than k are new
        _, _, held = expected(previous, k, _classes(params, frame2))
        assert held.all()
        return
    check_series(release1, ids1, release2, ids2, previous, k, _classes(params, frame2))
    again = cls(**params, k=k, seed=seed).sanitize(frame2, ROLES, previous=previous)
    pd.testing.assert_frame_equal(release2.frame, again.frame)
    assert np.array_equal(release2.input_group, again.input_group)


def _classes(params, frame):
    return pd.factorize(frame["label"], sort=True)[0] if params.get("variant") == "class_wise" else None


@pytest.mark.parametrize(("cls", "params"), METHODS)
def test_growing_table_keeps_every_old_group_unchanged(cls, params):
    """Rows only appended: every old group publishes its rows again, unchanged; the new ones form their own."""
    base = records(40, 25, 7)
    ids1 = np.arange(40)
    release1 = cls(**params, k=4, seed=1).sanitize(table(base, ids1, 1), ROLES)
    ids2 = np.random.default_rng(2).permutation(65)
    previous = kept_of(ids1, release1, ids2)
    release2 = cls(**params, k=4, seed=1).sanitize(table(base, ids2, 3), ROLES, previous=previous)
    check_series(release1, ids1, release2, ids2, previous, 4, _classes(params, table(base, ids2, 3)))
    assert release2.kept_members == 40 and release2.counterfeit_rows == 0 and release2.retired_groups == 0
    # each old record's candidate set is its whole release-1 group
    sizes = joint_sizes(ids1, release1.input_group, ids2, release2.input_group)
    g1 = release1.input_group
    whole = pd.Series(np.bincount(g1)[g1], index=ids1)
    assert len(sizes) == 40 and (sizes == whole.reindex(sizes.index)).all()
    # every release-1 row is published again
    assert rows_of(release2.frame, np.ones(len(release2.frame), bool)) >= rows_of(
        release1.frame, np.ones(len(release1.frame), bool))


@pytest.mark.parametrize(("cls", "params"), METHODS)
def test_group_ids_are_only_labels(cls, params):
    """Arbitrary, non-contiguous previous ids give the same release as dense ones (generating groups are keyed by
    their published id, so there the table's ids are relabelled alike)."""
    base = records(30, 10, 3)
    ids1 = np.arange(30)
    release1 = cls(**params, k=3, seed=5).sanitize(table(base, ids1, 0), ROLES)
    ids2 = np.r_[np.arange(4, 40)]
    previous = kept_of(ids1, release1, ids2)
    relabel = np.where(previous.groups >= 0, previous.groups * 7919 + 100_003, -1)
    other = release1.frame.copy()
    if GROUP_COLUMN in other.columns:
        other[GROUP_COLUMN] = other[GROUP_COLUMN] * 7919 + 100_003
    b_prev = Kept(groups=relabel, rows=previous.rows, seen=previous.seen, table=other)
    a = cls(**params, k=3, seed=5).sanitize(table(base, ids2, 1), ROLES, previous=previous)
    b = cls(**params, k=3, seed=5).sanitize(table(base, ids2, 1), ROLES, previous=b_prev)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert np.array_equal(a.input_group, b.input_group)


def test_few_new_records_are_held_and_a_leaver_stays_as_a_counterfeit():
    frame = pd.DataFrame({
        "age": [20, 21, 22, 23, 70, 71, 72, 69],
        "score": np.arange(8.0),
        "city": ["a", "a", "a", "a", "b", "b", "b", "b"],
        "label": ["p", "q", "p", "q", "q", "p", "q", "p"],
    })
    release1 = Mdav(k=3, seed=0).sanitize(frame.iloc[:7], ROLES)
    ids1 = np.arange(7)
    # the new record (7) is held: fewer than k are new; it never joins the group near it
    out = Mdav(k=3, seed=0).sanitize(frame, ROLES, previous=kept_of(ids1, release1, np.arange(8)))
    assert out.input_group[7] == -1 and out.held_rows == 1 and out.kept_members == 7
    assert rows_of(out.frame, np.ones(7, bool)) == rows_of(release1.frame, np.ones(7, bool))
    # record 0 erased: its group (4 records) keeps 3 present, so its old row stays as a counterfeit
    ids2 = np.arange(1, 7)
    out = Mdav(k=3, seed=0).sanitize(frame.iloc[ids2], ROLES, previous=kept_of(ids1, release1, ids2))
    assert out.counterfeit_rows == 1 and out.held_rows == 0 and len(out.frame) == 7
    assert rows_of(out.frame, np.ones(7, bool)) == rows_of(release1.frame, np.ones(7, bool))
    assert (np.asarray(out.row_source) == -1).sum() == 1
    # a group that lost members below k is retired: its present members are held, none of its rows published
    ids3 = np.r_[0, 1, 4, 5, 6]
    out = Mdav(k=3, seed=0).sanitize(frame.iloc[ids3], ROLES, previous=kept_of(ids1, release1, ids3))
    assert list(out.input_group[:2]) == [-1, -1] and out.retired_groups == 1 and len(out.frame) == 3
    # a record grouped before and in no kept group now stays held even when k new records could take it in
    seen = np.r_[True, False, False, False, False]
    fresh = pd.concat([frame.iloc[[0]], frame.iloc[[1, 2, 3]].assign(age=[40, 41, 42])], ignore_index=True)
    prev = Kept(groups=np.full(4, -1), rows=np.full(4, -1), seen=seen[:4], table=release1.frame)
    with pytest.raises(InputError) as err:  # three new records at k=4: nothing can be published
        Mdav(k=4, seed=0).sanitize(fresh, ROLES, previous=prev)
    assert "70" not in str(err.value) and "21" not in str(err.value)  # no data value in the message
    out = Mdav(k=3, seed=0).sanitize(fresh, ROLES, previous=prev)
    assert out.input_group[0] == -1 and (out.input_group[1:] >= 0).all()


def test_class_wise_new_records_are_grouped_within_their_class_or_held():
    base = records(40, 0, 5)
    release1 = Condensation(variant="class_wise", k=3, seed=0).sanitize(base, ROLES)
    extra = pd.DataFrame({"age": [30, 31, 32, 33], "score": [0.0, 0.1, 0.2, 5.0], "city": ["a"] * 4,
                          "label": ["p", "p", "p", "q"]})
    both = pd.concat([base, extra], ignore_index=True)
    out = Condensation(variant="class_wise", k=3, seed=0).sanitize(
        both, ROLES, previous=kept_of(np.arange(40), release1, np.arange(44)))
    g = out.input_group
    assert g[40] == g[41] == g[42] >= 0 and g[43] == -1 and out.held_rows == 1  # three p grouped, one q held


def test_columns_other_than_the_previous_table_s_are_refused():
    base = records(30, 0, 2)
    release1 = Mdav(k=3, seed=0).sanitize(base, ROLES)
    previous = kept_of(np.arange(30), release1, np.arange(30))
    previous = Kept(groups=previous.groups, rows=previous.rows, seen=previous.seen,
                    table=release1.frame.rename(columns={"score": "points"}), release_id="r1")
    with pytest.raises(InputError, match="other columns than this one would"):
        Mdav(k=3, seed=0).sanitize(base, ROLES, previous=previous)


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
    kept = Mdav(k=k, seed=0).sanitize(table(base, ids, 1), ROLES, previous=kept_of(ids, first, ids))
    assert joint_sizes(ids, first.input_group, ids, kept.input_group).min() >= k
    assert rows_of(kept.frame, np.ones(120, bool)) == rows_of(first.frame, np.ones(120, bool))
    # keeping at k + 1 groups formed at k: every group of exactly k records is retired, here all of them
    with pytest.raises(InputError):
        Mdav(k=k + 1, seed=0).sanitize(table(base, ids, 1), ROLES, previous=kept_of(ids, first, ids))


def test_a_method_without_keeps_groups_refuses_previous():
    frame = records(30, 0, 1)
    with pytest.raises(SpecError, match="series.keep_groups"):
        Generalization(k=3, suppression_limit=0.1, seed=0).sanitize(frame, ROLES, previous=Kept.first(30))
    assert not Generalization.keeps_groups and Mdav.keeps_groups and Condensation.keeps_groups


def test_run_method_records_kept_members():
    frame = records(30, 6, 2)
    release1, record1 = run_method(Mdav(k=3, seed=0), frame.iloc[:30], ROLES)
    assert record1.kept_members is None and release1.kept_members == 0
    previous = kept_of(np.arange(30), release1, np.arange(36))
    release2, record2 = run_method(Mdav(k=3, seed=0), frame, ROLES, previous=previous)
    assert record2.kept_members == release2.kept_members == 30
    assert record2.suppressed_rows == release2.held_rows == 0  # six new records: groups of their own


def test_all_new_records_is_the_plain_method():
    """No earlier release: the same groups as the method without keep_groups."""
    frame = records(50, 0, 4)
    plain = Mdav(k=4, seed=2).sanitize(frame, ROLES)
    kept = Mdav(k=4, seed=2).sanitize(frame, ROLES, previous=Kept.first(50))
    pd.testing.assert_frame_equal(plain.frame, kept.frame)
    assert kept.kept_members == 0 and kept.suppressed_rows == 0
