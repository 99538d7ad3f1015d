"""Keeping each record's group of the dataset's previous release (the series option ``keep_groups``), shared by the
grouping methods that can (:attr:`ppdp.tasks.sanitize.base.Sanitizer.keeps_groups`: MDAV, condensation).

After m-invariance (Xiao & Tao, "m-Invariance: Towards Privacy Preserving Re-publication of Dynamic Datasets",
SIGMOD 2007), which keeps each record's group signature the same across releases so that intersecting them
gains nothing; here the invariant is the membership itself (no counterfeit records: a group that can no longer
hold k records is suppressed instead). An attacker who intersects a record's groups across two consecutive
releases is left with at least k candidates. The rule, applied before any data value is read:

1. A record with a previous group (``previous >= 0``) is placed in that group again, restricted to the records
   present now. Its candidate set across the two releases is then that whole group, at least k records.
2. A previous group with fewer than k present records (members left the table) is suppressed whole: its present
   records are not published. Any other placement would shrink their intersection below k (the records they
   shared a group with in the previous release are fewer than k now, whatever group they join).
3. New records (``previous < 0``: not in the previous release, or suppressed in it) are grouped among themselves
   by the method's own algorithm when there are at least k of them (per stratum, e.g. per class for class-wise
   condensation). Fewer than k new records join, each, the kept group whose centroid is nearest in the method's
   distance space (squared Euclidean; within their stratum: a kept group all of whose present records are in it).
   Joining an old group shrinks no old member's intersection: their candidate set in the new release is a
   superset of the previous one. With no such kept group they are suppressed too.

The guarantee is for two consecutive releases (``previous`` is the latest one). Over a longer series it holds
for every pair of consecutive releases, and for the whole chain as long as no new record joined a kept group (a
joined record later counts as a member of that group, so a group may stay at k present records while fewer than
k of its first members remain).

:func:`keep_plan` decides rows 1, 2 and which new records can be placed from ``previous`` alone (counts, no
values), so a method can encode only the rows it will publish; :func:`keep_labels` then groups those rows.
Pure NumPy: no frames, roles or Prefect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["KeepPlan", "keep_labels", "keep_plan"]


@dataclass(frozen=True)
class KeepPlan:
    """Where each input row goes under ``keep_groups`` (see the module docstring).

    Attributes
    ----------
    k : int
        Smallest group size.
    kept : ndarray of shape (n,), int64
        Dense id (0..K-1) of the previous group a row is placed in again; -1 for new and suppressed rows.
    new : ndarray of shape (n,), bool
        Rows that are new and placed (grouped among themselves or joining a kept group).
    strata : ndarray of shape (n,), int64
        Each row's stratum (0 for every row when the method has none).
    """

    k: int
    kept: np.ndarray
    new: np.ndarray
    strata: np.ndarray

    @property
    def placed(self) -> np.ndarray:
        """Rows that are published (kept or new and placed)."""
        return (self.kept >= 0) | self.new

    @property
    def kept_members(self) -> int:
        """Records placed in their previous group."""
        return int(np.count_nonzero(self.kept >= 0))

    @property
    def suppressed_rows(self) -> int:
        """Records not published."""
        return int(np.count_nonzero(~self.placed))


def keep_plan(previous: np.ndarray, k: int, strata: np.ndarray | None = None) -> KeepPlan:
    """Which rows keep which previous group, which new rows are placed, which are suppressed.

    Parameters
    ----------
    previous : ndarray of shape (n,)
        Each row's group id in the previous release (any non-negative ints), negative for a new row.
    k : int
        Smallest group size, k >= 1.
    strata : ndarray of shape (n,) or None
        Non-negative stratum code per row: new rows are grouped within their stratum and join only kept groups
        whose rows are all of it. None: one stratum.

    Returns
    -------
    KeepPlan
    """
    previous = np.asarray(previous, dtype=np.int64)
    n = len(previous)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    strata = np.zeros(n, dtype=np.int64) if strata is None else np.asarray(strata, dtype=np.int64)
    if strata.shape != (n,) or (n and strata.min() < 0):
        raise ValueError("strata must hold one non-negative code per row")
    old = previous >= 0
    kept = np.full(n, -1, dtype=np.int64)
    if old.any():
        _, inverse, counts = np.unique(previous[old], return_inverse=True, return_counts=True)
        big = counts >= k
        dense = np.where(big, np.cumsum(big) - 1, -1)
        kept[old] = dense[inverse.reshape(-1)]
    fresh = ~old
    n_strata = int(strata.max()) + 1 if n else 0
    new_count = np.bincount(strata[fresh], minlength=n_strata)
    hosts = np.zeros(n_strata, dtype=bool)  # strata with a kept group all of whose rows are in the stratum
    if (kept >= 0).any():
        members = kept >= 0
        n_kept = int(kept.max()) + 1
        low = np.full(n_kept, n_strata, dtype=np.int64)
        high = np.full(n_kept, -1, dtype=np.int64)
        np.minimum.at(low, kept[members], strata[members])
        np.maximum.at(high, kept[members], strata[members])
        hosts[low[low == high]] = True
    placeable = (new_count >= k) | hosts
    return KeepPlan(k=int(k), kept=kept, new=fresh & placeable[strata], strata=strata)


def keep_labels(plan: KeepPlan, x: np.ndarray,
                group_new: Callable[[np.ndarray, int], np.ndarray]) -> np.ndarray:
    """Group the placed rows of ``plan``: kept groups as planned, new rows by ``group_new`` or joining the nearest
    kept group.

    Parameters
    ----------
    plan : KeepPlan
    x : ndarray of shape (m, d)
        The placed rows only (in input order) in the method's distance space.
    group_new : callable
        ``group_new(rows, stratum)``: the method's own grouping of ``x[rows]`` (at least k rows, all new, all of
        ``stratum``), one label per row, every group at least k rows.

    Returns
    -------
    ndarray of shape (m,), int64
        Dense group labels: kept groups first (0..K-1), then the new groups. Every group has at least k rows.
    """
    placed = plan.placed
    kept, strata = plan.kept[placed], plan.strata[placed]
    x = np.asarray(x, dtype=np.float64)
    if len(x) != len(kept):
        raise ValueError(f"x has {len(x)} rows for {len(kept)} placed rows")
    labels = kept.copy()
    members = kept >= 0
    n_kept = int(kept.max()) + 1 if members.any() else 0
    centres = np.zeros((0, x.shape[1]))
    pure = np.zeros(0, dtype=np.int64)
    if n_kept:
        sizes = np.bincount(kept[members], minlength=n_kept).astype(np.float64)
        centres = np.stack([np.bincount(kept[members], weights=x[members, j], minlength=n_kept)
                            for j in range(x.shape[1])], axis=1) / sizes[:, None]
        pure = np.full(n_kept, -1, dtype=np.int64)  # a kept group's stratum when all its rows share one
        low = np.full(n_kept, np.iinfo(np.int64).max)
        high = np.full(n_kept, -1, dtype=np.int64)
        np.minimum.at(low, kept[members], strata[members])
        np.maximum.at(high, kept[members], strata[members])
        pure[low == high] = low[low == high]
    nxt = n_kept
    for s in np.unique(strata[~members]).tolist():
        rows = np.flatnonzero(~members & (strata == s))
        if len(rows) >= plan.k:
            own = np.unique(np.asarray(group_new(rows, int(s))), return_inverse=True)[1].reshape(-1)
            labels[rows] = own + nxt
            nxt += int(own.max()) + 1
            continue
        hosts = np.flatnonzero(pure == s)  # keep_plan placed these rows only if there is one
        for r in rows:
            diff = centres[hosts] - x[r]
            labels[r] = hosts[int(np.argmin(np.einsum("ij,ij->i", diff, diff)))]
    return labels
