"""Attacker measures for releases whose records are synthetic or perturbed, not generalized copies."""

from __future__ import annotations

import numpy as np

from ppdp.tasks.core.neighbours import nearest_rows

_CI_PAIRS = 400_000  # record/synthetic pairs sampled by the confidence-interval estimator


def nearest_released(original: np.ndarray, released: np.ndarray) -> np.ndarray:
    """Index of the nearest released row (Euclidean) for each original row
    (:func:`ppdp.tasks.core.neighbours.nearest_rows`); all zeros when either side has no row."""
    if len(released) == 0 or len(original) == 0:
        return np.zeros(len(original), dtype=np.int64)
    return nearest_rows(original, released)[1]


def linkage_risk(
    original: np.ndarray, released: np.ndarray, source_groups: np.ndarray, released_groups: np.ndarray,
    nearest: np.ndarray | None = None,
) -> float:
    """Share of original records whose nearest released record (same encoded, standardized space) came from
    their own group: how often distance-based record linkage lands in the right group. ``nearest`` (the
    nearest released row of each original row) saves the search when it is already known."""
    if len(original) == 0:
        return 0.0
    keep = source_groups >= 0  # suppressed records are not in the release
    idx = nearest_released(original[keep], released) if nearest is None else nearest[keep]
    return float(np.mean(released_groups[idx] == source_groups[keep]))


def confidence_interval_privacy(
    original: np.ndarray,
    released: np.ndarray,
    source_groups: np.ndarray,
    released_groups: np.ndarray,
    *,
    confidence: float = 0.95,
    seed: int = 0,
) -> float | None:
    """Privacy as paper 000 measures it (Agrawal & Srikant's confidence interval), averaged over attributes.

    For each attribute: the width of the interval in which an original value lies with ``confidence`` given a
    released value, divided by the attribute's range (max - min over the original records).

    Estimator: the interval is the central ``confidence`` quantile range of the differences original -
    released between an original record and the synthetic records of its own group (what an attacker who knew
    the group would face). Up to 400,000 (record, synthetic record of its group) pairs are drawn uniformly with
    a fixed seed; when fewer pairs exist, all are used. Attributes with zero range are skipped. Returns None
    when no attribute has a range.
    """
    original = np.asarray(original, dtype=float)
    released = np.asarray(released, dtype=float)
    if original.ndim != 2 or original.shape[1] == 0 or len(released) == 0:
        return None
    rng = np.random.default_rng(seed)
    keep = np.flatnonzero(source_groups >= 0)
    order = np.argsort(released_groups, kind="stable")
    ids, starts, counts = np.unique(released_groups[order], return_index=True, return_counts=True)
    slot = np.searchsorted(ids, source_groups[keep])
    valid = (slot < len(ids)) & (ids[np.minimum(slot, len(ids) - 1)] == source_groups[keep])
    keep, slot = keep[valid], slot[valid]
    if keep.size == 0:
        return None
    total_pairs = int(np.sum(counts[slot]))
    if total_pairs <= _CI_PAIRS:
        rec = np.repeat(keep, counts[slot])
        base = np.repeat(starts[slot], counts[slot])
        within = np.arange(total_pairs) - np.repeat(np.cumsum(counts[slot]) - counts[slot], counts[slot])
        syn = order[base + within]
    else:
        pick = rng.integers(0, keep.size, _CI_PAIRS)
        rec = keep[pick]
        syn = order[starts[slot[pick]] + rng.integers(0, counts[slot[pick]])]
    diffs = original[rec] - released[syn]
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(diffs, [tail, 1.0 - tail], axis=0)
    ranges = original.max(axis=0) - original.min(axis=0)
    ok = ranges > 0
    if not ok.any():
        return None
    return float(np.mean((hi[ok] - lo[ok]) / ranges[ok]))
