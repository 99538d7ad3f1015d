"""Keeping the groups of the dataset's previous release frozen (the series option ``keep_groups``), shared by the
grouping methods that can (:attr:`ppdp.tasks.sanitize.base.Sanitizer.keeps_groups`: MDAV, condensation).

After m-invariance (Xiao & Tao, "m-Invariance: Towards Privacy Preserving Re-publication of Dynamic Datasets",
SIGMOD 2007). A group whose members change between two releases publishes, as the difference of its two sets of
rows, the rows of whoever joined or left it: the values of one newcomer, or of one erased person, read off two
releases. m-invariance keeps each group's published signature the same in every release and stands *counterfeit*
records in for members who left. Here the invariant is the strongest form of that: a kept group publishes exactly
the rows it published before, so the difference of two releases carries nothing about who joined or left.

The rule (:func:`frozen_plan`), decided from memberships and counts before any data value is read:

1. **Kept groups are frozen.** A group of the previous release whose present members are at least k (every one of
   them, when the previous release's groups and its published classes do not line up one to one: see below)
   publishes exactly the rows it published then. A present member keeps its old published row; the row of a member
   who left, or was erased, stays in place as a *counterfeit*: a published row standing for no input record
   (``row_source`` -1, no ledger member). New records never join a kept group.
2. **Retired groups.** A previous group with fewer than k present members is not published at all (none of its
   rows), and its present members are *held*: not published in this release.
3. **New records** (in no class or group of any counted earlier release) are grouped among themselves by the
   method's own algorithm when at least k of them are new (per stratum: class-wise condensation groups each class
   alone); else they are held back until k can form a group.
4. **Once grouped, held for good.** A record that was in a class or group of an earlier release but is not in a
   kept group now (its group retired, or it was held since) stays held: grouping it with other records would leave
   it sharing a group, across the series, with fewer records than any one release shows.

Erasure is rule 1 run for a record deleted from the input: its old row stays as a counterfeit, so nothing new is
published about anyone. Its old published row (a group aggregate, published already) stays public.

Which rows are a group's: each previous published row carries a *key* (the method's: MDAV's published
quasi-identifiers, which every row of an MDAV group shares; condensation's published group id), each present member
a previous group (its class or group in the ledger) and the key of its old row. Groups and keys that share a present
member are one frozen unit (connected components), so a counterfeit row is found by its key even though no record
stands for it, and two groups that published the same key are kept or retired together.

:func:`frozen_plan` is pure NumPy on memberships and keys; :func:`frozen_release` puts the kept rows of the
previous table and the method's release of the new records together. No roles, no Prefect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.release import Release
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.core.groups import text_class_ids

__all__ = ["FrozenPlan", "Kept", "frozen_keys", "frozen_plan", "frozen_release", "row_keys"]


@dataclass(frozen=True)
class Kept:
    """What a method keeping groups (``series.keep_groups``) receives about the dataset's previous release.

    Attributes
    ----------
    groups : ndarray of shape (n,), int64
        Each input row's class or group in the previous release (any non-negative ids), -1: not in one.
    rows : ndarray of shape (n,), int64
        The row of ``table`` that stood for each input row (-1: none; a generating group's rows stand for no
        record).
    seen : ndarray of shape (n,), bool
        The record was in a class or group of some counted earlier release (held since, or now kept).
    table : DataFrame or None
        The previous release's published rows (None when there is no previous release).
    release_id : str or None
        The previous release (for messages).
    """

    groups: np.ndarray
    rows: np.ndarray
    seen: np.ndarray
    table: pd.DataFrame | None = field(default=None, repr=False)
    release_id: str | None = None

    @classmethod
    def first(cls, n: int) -> Kept:
        """No previous release: every record is new."""
        none = np.full(n, -1, dtype=np.int64)
        return cls(groups=none, rows=none.copy(), seen=np.zeros(n, dtype=bool))

    def check(self, n: int, method: str) -> Kept:
        """This, validated for ``n`` input rows (arrays of the right shape and type)."""
        groups = np.asarray(self.groups, dtype=np.int64)
        rows = np.asarray(self.rows, dtype=np.int64)
        seen = np.asarray(self.seen, dtype=bool)
        if groups.shape != (n,) or rows.shape != (n,) or seen.shape != (n,):
            raise ValueError(f"{method}: previous memberships have {groups.size} entries for {n} rows")
        if self.table is not None and (rows >= len(self.table)).any():
            raise ValueError(f"{method}: a previous row number is beyond the previous table's {len(self.table)} rows")
        return replace(self, groups=groups, rows=rows, seen=seen | (groups >= 0))


@dataclass(frozen=True)
class FrozenPlan:
    """Where each input row and each previous published row goes (see the module docstring).

    Attributes
    ----------
    k : int
    unit : ndarray of shape (n,), int64
        Dense id (0..K-1) of the kept unit an input row is published in; -1 otherwise.
    new : ndarray of shape (n,), bool
        New rows grouped among themselves in this release.
    table_unit : ndarray of shape (m,), int64
        Dense kept unit of each previous published row (-1: not published again).
    retired : int
        Previous units with present members that are not kept (their rows are not published).
    """

    k: int
    unit: np.ndarray
    new: np.ndarray
    table_unit: np.ndarray
    retired: int

    @property
    def placed(self) -> np.ndarray:
        """Input rows published (in a kept unit, or new and grouped)."""
        return (self.unit >= 0) | self.new

    @property
    def held(self) -> np.ndarray:
        """Input rows not published in this release."""
        return ~self.placed

    @property
    def kept_members(self) -> int:
        return int(np.count_nonzero(self.unit >= 0))

    @property
    def held_rows(self) -> int:
        return int(np.count_nonzero(self.held))

    @property
    def kept_rows(self) -> int:
        """Previous published rows published again."""
        return int(np.count_nonzero(self.table_unit >= 0))

    @property
    def counterfeits(self) -> int:
        """Published rows of kept units standing for no present record."""
        return self.kept_rows - self.kept_members


def row_keys(table: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """A key per row of ``table``: equal values on ``columns`` (missing values equal), as dense ints."""
    return text_class_ids(table, list(columns))


def frozen_keys(previous: Kept, columns: Sequence[str], method: str, by_group: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
    """(the key of every previous published row, the key of each input row's old row: -1 none). ``by_group``:
    the key is the published group id (generating groups, whose rows stand for no record: a member's key is
    its group, which the ledger numbers as the table does); else the row's values on ``columns``, which every
    row of a previous group shares. Refuses (:class:`InputError`) when the previous table cannot be read or
    lacks those columns while records kept a group."""
    present = previous.groups >= 0
    table = previous.table
    none = np.full(len(previous.groups), -1, dtype=np.int64)
    if table is None:
        if present.any():
            raise InputError(f"{method}: series.keep_groups: the published table of the previous release "
                             f"{previous.release_id} cannot be read: its groups cannot be kept frozen")
        return np.zeros(0, dtype=np.int64), none
    if by_group:
        if GROUP_COLUMN not in table.columns:
            raise InputError(f"{method}: series.keep_groups: the previous release {previous.release_id} publishes "
                             "no group column: its groups cannot be kept frozen")
        return table[GROUP_COLUMN].to_numpy(dtype=np.int64), np.where(present, previous.groups, -1)
    missing = [c for c in columns if c not in table.columns]
    if missing and present.any():
        raise InputError(f"{method}: series.keep_groups: the previous release {previous.release_id} published "
                         f"other columns than this one would ({', '.join(map(str, missing[:5]))}): its groups "
                         "cannot be kept frozen")
    keys = row_keys(table, columns)
    linked = present & (previous.rows >= 0)
    none[linked] = keys[previous.rows[linked]]
    return keys, none


def frozen_plan(groups: np.ndarray, member_keys: np.ndarray, seen: np.ndarray, table_keys: np.ndarray, k: int,
                strata: np.ndarray | None = None) -> FrozenPlan:
    """Which previous units are kept (frozen), which retired, which new rows are grouped and which rows are held.

    Parameters
    ----------
    groups : ndarray of shape (n,)
        Each input row's previous group (non-negative), -1: none.
    member_keys : ndarray of shape (n,)
        The key of the previous row standing for each input row with a previous group (-1: unknown; the row's
        unit is then retired: its rows cannot all be found).
    seen : ndarray of shape (n,), bool
        Rows that were in a class or group of some counted earlier release (never grouped anew).
    table_keys : ndarray of shape (m,)
        The key of every previous published row (-1: a row of no unit).
    k : int
        Smallest group size, k >= 1.
    strata : ndarray of shape (n,) or None
        Non-negative stratum per row: new rows are grouped within their stratum. None: one stratum.
    """
    groups = np.asarray(groups, dtype=np.int64)
    member_keys = np.asarray(member_keys, dtype=np.int64)
    seen = np.asarray(seen, dtype=bool) | (groups >= 0)
    table_keys = np.asarray(table_keys, dtype=np.int64)
    n, m = len(groups), len(table_keys)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    strata = np.zeros(n, dtype=np.int64) if strata is None else np.asarray(strata, dtype=np.int64)
    if strata.shape != (n,) or (n and strata.min() < 0) or member_keys.shape != (n,) or seen.shape != (n,):
        raise ValueError("groups, member_keys, seen and strata must hold one entry per row")
    unit = np.full(n, -1, dtype=np.int64)
    table_unit = np.full(m, -1, dtype=np.int64)
    present = groups >= 0
    retired = 0
    if present.any():
        from scipy.sparse import coo_matrix  # heavy: SciPy, loaded when groups are joined
        from scipy.sparse.csgraph import connected_components  # heavy: SciPy, loaded when groups are joined

        g_ids, g_of = np.unique(groups[present], return_inverse=True)
        g_of = g_of.reshape(-1)
        keyed = table_keys[table_keys >= 0]
        key_ids = np.unique(np.r_[keyed, member_keys[present & (member_keys >= 0)]])
        n_g, n_key = g_ids.size, key_ids.size
        # nodes: previous groups 0..n_g-1, then keys; an edge per present member between its group and its row's key
        linked = member_keys[present] >= 0
        src = g_of[linked]
        dst = n_g + np.searchsorted(key_ids, member_keys[present][linked])
        graph = coo_matrix((np.ones(src.size), (src, dst)), shape=(n_g + n_key, n_g + n_key))
        _, comp = connected_components(graph, directed=False)
        count = np.bincount(g_of, minlength=n_g)  # present members per previous group
        bad = np.zeros(n_g, dtype=bool)
        bad[g_of[~linked]] = True  # a present member whose old row cannot be found
        n_comp = int(comp.max()) + 1
        low = np.full(n_comp, np.iinfo(np.int64).max)
        np.minimum.at(low, comp[:n_g], np.where(bad, -1, count))
        has_group = np.zeros(n_comp, dtype=bool)
        has_group[comp[:n_g]] = True
        ok = has_group & (low >= k)
        retired = int(np.count_nonzero(has_group & ~ok))
        # dense ids of the kept components, in order of their first row in the previous table
        row_comp = np.full(m, -1, dtype=np.int64)
        row_comp[table_keys >= 0] = comp[n_g + np.searchsorted(key_ids, table_keys[table_keys >= 0])]
        kept_rows = (row_comp >= 0) & ok[np.maximum(row_comp, 0)]
        order = pd.unique(row_comp[kept_rows])
        dense = np.full(n_comp, -1, dtype=np.int64)
        dense[order] = np.arange(order.size)
        table_unit[kept_rows] = dense[row_comp[kept_rows]]
        member_comp = comp[g_of]
        unit[present] = np.where(ok[member_comp], dense[member_comp], -1)
    fresh = ~seen
    n_strata = int(strata.max()) + 1 if n else 0
    enough = np.bincount(strata[fresh], minlength=n_strata) >= k
    return FrozenPlan(k=int(k), unit=unit, new=fresh & enough[strata], table_unit=table_unit,
                      retired=retired)


def frozen_release(kept: Kept, plan: FrozenPlan, source: pd.DataFrame, fresh: Callable[[pd.DataFrame], Release],
                   treatments: dict, unit: str, method: str) -> Release:
    """The release of ``source`` under ``plan``: the kept units' previous rows (``kept.table``), then the method's
    own release of the new rows (``fresh``, called on them alone when there are any), with every bookkeeping array
    over both. Refuses (:class:`InputError`, one line) when nothing can be published or the previous table's columns
    are not the ones this release publishes (its groups cannot be kept frozen)."""
    columns = list(source.columns)
    old = pd.DataFrame(columns=columns)
    old_source = np.zeros(0, dtype=np.int64)
    old_group = np.zeros(0, dtype=np.int64)
    if plan.kept_rows:
        table = kept.table
        assert table is not None  # a kept unit is found in the previous table
        published = [c for c in table.columns if c != GROUP_COLUMN]
        if sorted(map(str, published)) != sorted(map(str, columns)):
            extra = sorted(set(map(str, published)) ^ set(map(str, columns)))
            raise InputError(f"{method}: series.keep_groups: the previous release {kept.release_id} published other "
                             f"columns than this one would ({', '.join(extra[:5])}): its groups cannot be kept frozen")
        rows = np.flatnonzero(plan.table_unit >= 0)
        old = table.iloc[rows][columns].reset_index(drop=True)
        at = np.full(len(table), -1, dtype=np.int64)
        at[rows] = np.arange(rows.size)
        old_source = np.full(rows.size, -1, dtype=np.int64)
        mine = np.flatnonzero((plan.unit >= 0) & (kept.rows >= 0))  # a present member keeps its old row
        old_source[at[kept.rows[mine]]] = mine
        old_group = plan.table_unit[rows]
    new_rows = np.flatnonzero(plan.new)
    if not rows_published(plan):
        raise InputError(f"{method}: keep_groups: no previous group keeps k={plan.k} present records and fewer than "
                         "k records are new: nothing can be published")
    n_kept = int(old_group.max()) + 1 if old_group.size else 0
    input_group = np.full(len(source), -1, dtype=np.int64)
    input_group[plan.unit >= 0] = plan.unit[plan.unit >= 0]
    frame, row_source, group = old, old_source, old_group
    if new_rows.size:
        out = fresh(source.iloc[new_rows].reset_index(drop=True))
        rs = np.asarray(out.row_source, dtype=np.int64)
        new_group = np.asarray(out.group, dtype=np.int64) + n_kept
        ig = np.asarray(out.input_group, dtype=np.int64)
        input_group[new_rows] = np.where(ig >= 0, ig + n_kept, -1)
        treatments = dict(out.treatments)
        frame = _stack(old, out.frame[columns])
        row_source = np.r_[old_source, np.where(rs >= 0, new_rows[np.maximum(rs, 0)], -1)]
        group = np.r_[old_group, new_group]
    return Release(frame=frame, unit=unit, treatments=treatments,  # type: ignore[arg-type]
                   row_source=row_source.astype(np.int64), group=group.astype(np.int64), input_group=input_group,
                   suppressed_rows=plan.held_rows, kept_members=plan.kept_members, held_rows=plan.held_rows,
                   counterfeit_rows=plan.counterfeits, retired_groups=plan.retired)


def rows_published(plan: FrozenPlan) -> bool:
    return bool(plan.kept_rows or plan.new.any())


def _stack(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The kept rows then the new ones, each column in the new rows' type where the kept values fit it."""
    if not len(old):
        return new.reset_index(drop=True)
    if not len(new):
        return old
    parts = {}
    for c in new.columns:
        a, b = old[c], new[c]
        if a.dtype != b.dtype:
            try:
                a = a.astype(b.dtype)
            except (TypeError, ValueError):
                pass
        parts[c] = pd.concat([a.reset_index(drop=True), b.reset_index(drop=True)], ignore_index=True)
    return pd.DataFrame(parts)
