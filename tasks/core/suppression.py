"""Local (cell) suppression to k-anonymity, and record suppression to compare it with.

Both work on a matrix of integer codes: one row per record, one column per quasi-identifier, holding the codes
of the values about to be published (already generalized, e.g. by a full-domain generalization node). A
suppressed cell is published as ``*``, which is a regular value when the published table is recounted
(``ppdp validate`` groups the published rows by their quasi-identifier values with
:func:`ppdp.tasks.core.groups.equivalence_class_ids`): two rows fall in the same equivalence class when they hold
the same values, ``*`` included, in every quasi-identifier. So a record suppressed in columns S joins the other
records suppressed in exactly S (or already ``*`` there) that agree with it elsewhere, and the records whose
every quasi-identifier is ``*`` form one class of their own, which must hold k records too.

Finding the fewest cells to suppress is NP-hard (Meyerson & Williams, "On the complexity of optimal
k-anonymity", PODS 2004, section 3); :func:`local_suppression` is a greedy in the manner of the set-cover greedy
(Chvátal 1979) applied to suppression patterns (see its Notes). The greedy of :func:`local_suppression`:

The rows of classes smaller than k are the *violating* rows. A suppression pattern S is a set of columns;
giving a violating row pattern S costs the cells of S it does not already hold as ``*``. Patterns are taken
in order of cost, fewest suppressed columns first (the cost per row covered of the set-cover greedy), and
within a level of s columns by coverage:

1. For each pattern S of s columns, the *gain* is the number of violating rows that, with S suppressed,
   would fall in a group of at least k rows: the other violating rows given S, plus the rows already
   published with ``*`` in S that agree elsewhere (rows settled earlier, rows already ``*`` in the input).
2. The pattern with the largest gain (ties: the first in column order) is applied to exactly those rows,
   which leave the violating set; the gains of the other patterns can only fall, so they are re-evaluated
   lazily (a priority queue of stale gains, as in the lazy greedy of Minoux 1978). The level ends when no
   pattern gains a row (checked by a full re-evaluation); then s + 1.
3. Violating rows left after s = q - 1 are suppressed entirely. If the all-``*`` class then holds between 1
   and k - 1 rows, it is filled to k with rows of other classes, fewest published (non-``*``) cells first:
   rows a class of more than k can spare, else whole classes (see ``filled``).
4. If the total exceeds the cells of record suppression (every quasi-identifier of every violating row,
   filled the same way), the record suppression is returned instead (``method="record"``); so local
   suppression never costs more cells than record suppression.

With q quasi-identifiers there are C(q, s) patterns of s columns; a level with more than
:data:`MAX_PATTERNS` tries the one-column extensions of the patterns of the level below that brought the
most violating rows together (groups of two or more), ``MAX_PATTERNS / q`` of them. Each evaluation costs
one sort of the violating rows (plus the rows already ``*`` in S), so a level costs about its number of
patterns times that.

Suppressing rows of large classes to fill small groups (e.g. one spare row of a class of k + 1 completing
a group of k - 1 violating rows) is left out, except to fill the all-``*`` class in step 3.

No Python loop runs over rows.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.matrix import positive_int

__all__ = ["MAX_PATTERNS", "SuppressionResult", "local_suppression", "record_suppression"]

MAX_PATTERNS = 512
"""Suppression patterns tried per level (number of suppressed columns): every one while C(q, s) is at most this,
otherwise the one-column extensions of the most promising patterns of the level below (a beam)."""


@dataclass(frozen=True)
class SuppressionResult:
    """Which cells to publish as ``*``.

    Attributes
    ----------
    mask : ndarray of bool, shape (n_rows, n_qis)
        True for every cell this call suppresses (cells already ``*`` in the input are never marked).
    cells : int
        Cells suppressed (``mask.sum()``).
    rows_fully_suppressed : int
        Rows whose every quasi-identifier is ``*`` once the mask is applied (the all-``*`` class; rows already
        all ``*`` in the input are counted too).
    violating : ndarray of int64
        Rows that were in a class of fewer than k rows before suppression (what record suppression removes).
    filled : ndarray of int64
        Rows fully suppressed only so that the all-``*`` class reaches k, taken from classes that hold more
        than k rows (or from whole classes): rows that were never violating, or violating rows that a partial
        suppression had already placed in a class of k or more. Empty unless the all-``*`` class would
        otherwise hold between 1 and k - 1 rows.
    method : str
        ``"local"`` (the greedy) or ``"record"`` (every quasi-identifier of every violating row; also what
        :func:`local_suppression` returns in the rare case where the greedy needs more cells than that).
    """

    mask: np.ndarray
    cells: int
    rows_fully_suppressed: int
    violating: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    filled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    method: str = "local"

    @property
    def cells_per_column(self) -> np.ndarray:
        """Suppressed cells of each quasi-identifier (int64, one per column)."""
        return self.mask.sum(axis=0).astype(np.int64)

    @property
    def rows_touched(self) -> int:
        """Rows with at least one suppressed cell."""
        return int(self.mask.any(axis=1).sum())


def local_suppression(codes: np.ndarray, k: int, *, max_cells: int | None = None,
                      star: Sequence[int | None] | None = None) -> SuppressionResult | None:
    """Suppress as few cells as a greedy can so that every equivalence class holds at least k rows.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_qis)
        Codes of the (generalized) quasi-identifier values; any integers (e.g. hierarchy table rows, -1 for a
        missing value, which is a value of its own).
    k : int
        Smallest class size, at least 1.
    max_cells : int, optional
        Give up (return None) as soon as more cells than this are certain to be needed; for a search over
        generalization nodes that allows a suppression budget.
    star : sequence of (int or None), optional
        Per column, the code that is already published as ``*`` (a column generalized to the root of its
        hierarchy), so that suppressed cells join the rows already ``*`` there, as they will in the published
        table. None: no input code means ``*``.

    Returns
    -------
    SuppressionResult or None
        None only when ``max_cells`` is exceeded. After applying ``mask`` (suppressed cells -> ``*``), every
        class, the all-``*`` one included, holds at least k rows, and ``cells`` never exceeds the cells of
        :func:`record_suppression`.

    Raises
    ------
    SpecError
        If k < 1.
    InputError
        If there are fewer rows than k (no release can be k-anonymous).

    Notes
    -----
    The greedy (set-cover order of patterns, lazy re-evaluation, the all-``*`` class filled, never more cells
    than record suppression) is described in the module docstring.
    """
    m, native = _prepare(codes, k, star)
    k = int(k)
    before = m.copy()
    violating = _violating(m, k)
    if violating.size == 0:
        return _result(before, m, native, k, violating, np.zeros(0, dtype=np.int64), "local")
    if max_cells is not None and _lower_bound(before, native, violating) > max_cells:
        return None
    record_cells = _record_cells(before, native, violating, k)
    if max_cells is not None and record_cells <= max_cells:
        max_cells = None  # the answer is at most record suppression's cells: within the budget whatever happens
    rows = _suppress_patterns(m, native, violating.copy(), k, max_cells)
    if rows is None:
        return None
    m[rows] = native
    filled = _fill_star_class(m, native, k)
    out = _result(before, m, native, k, violating, filled, "local")
    if out.cells > record_cells:
        out = record_suppression(codes, k, star=star)
    if max_cells is not None and out.cells > max_cells:
        return None
    return out


def record_suppression(codes: np.ndarray, k: int, *, star: Sequence[int | None] | None = None) -> SuppressionResult:
    """Record suppression: every quasi-identifier of every row in a class of fewer than k rows.

    ``violating`` lists those rows (ARX's record suppression leaves them out of the release). Published instead
    as all-``*`` rows they form one class; when it would hold between 1 and k - 1 rows it is filled to k as in
    :func:`local_suppression` (``filled``), so that the mask, like local suppression's, gives a k-anonymous
    table. Parameters and errors as in :func:`local_suppression`.
    """
    m, native = _prepare(codes, k, star)
    k = int(k)
    before = m.copy()
    violating = _violating(m, k)
    m[violating] = native
    filled = _fill_star_class(m, native, k) if violating.size else np.zeros(0, dtype=np.int64)
    return _result(before, m, native, k, violating, filled, "record")


# ---------------------------------------------------------------------------------------------------- internals


def _suppress_patterns(m: np.ndarray, native: np.ndarray, rows: np.ndarray, k: int,
                       max_cells: int | None) -> np.ndarray | None:
    """Steps 1-2 of :func:`local_suppression`, level by level (s = 1 .. q - 1 suppressed columns), suppressing in
    ``m`` in place: the violating rows left, or None as soon as more than ``max_cells`` cells are certain."""
    q = m.shape[1]
    cells = 0
    previous: list[tuple[int, ...]] = []
    near: dict[tuple[int, ...], int] = {}
    for s in range(1, q):
        if rows.size == 0:
            break
        patterns = _patterns(q, s, previous, near)
        level = _suppress_level(m, native, rows, patterns, k, cells, max_cells)
        if level is None:
            return None
        rows, cells = level
        previous = patterns
        beam = rows.size and s + 1 < q and math.comb(q, s + 1) > MAX_PATTERNS
        near = {p: int(_gain(m, native, rows, p, k)[1].sum()) for p in patterns} if beam else {}
    return rows


def _suppress_level(m: np.ndarray, native: np.ndarray, rows: np.ndarray, patterns: list[tuple[int, ...]], k: int,
                    cells: int, max_cells: int | None) -> tuple[np.ndarray, int] | None:
    """One level of the lazy greedy: apply the pattern of largest gain until none gains a row; the violating rows
    left and the cells suppressed so far, or None when ``max_cells`` is exceeded."""
    gains = {p: _gain(m, native, rows, p, k) for p in patterns}
    heap = [(-int(ok.sum()), i, p) for i, (p, (ok, _)) in enumerate(gains.items())]
    heapq.heapify(heap)
    while rows.size:
        picked = None
        while heap:
            _, i, p = heapq.heappop(heap)
            ok, _ = _gain(m, native, rows, p, k)
            gain = int(ok.sum())
            if gain == 0:
                continue  # gains never rise within a level but through rows already '*': checked below
            if not heap or gain >= -heap[0][0]:
                picked = (p, ok)
                heapq.heappush(heap, (0, i, p))
                break
            heapq.heappush(heap, (-gain, i, p))
        if picked is None:  # full re-evaluation: no pattern gains a row any more (or one rose: go on)
            fresh = [(-int(_gain(m, native, rows, p, k)[0].sum()), i, p) for i, p in enumerate(patterns)]
            if all(g == 0 for g, _, _ in fresh):
                break
            heap = fresh
            heapq.heapify(heap)
            continue
        p, ok = picked
        chosen = rows[ok]
        cols = list(p)
        cells += int((m[np.ix_(chosen, cols)] != native[cols]).sum())
        m[np.ix_(chosen, cols)] = native[cols]
        rows = rows[~ok]
        if max_cells is not None and cells + _lower_bound(m, native, rows) > max_cells:
            return None
    return rows, cells


def _prepare(codes: np.ndarray, k: int, star: Sequence[int | None] | None) -> tuple[np.ndarray, np.ndarray]:
    """Dense internal codes (0..c_j - 1 per column) and each column's code of ``*`` (c_j unless given)."""
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must be a 2-D matrix (rows, quasi-identifiers), got {codes.ndim} dimension(s)")
    if codes.size and not np.issubdtype(codes.dtype, np.integer):
        raise ValueError("codes must be integers")
    k = positive_int(k, "suppression: k", SpecError)
    n, q = codes.shape
    if n < k:
        raise InputError(f"suppression: {n} rows cannot form a class of k={k}")
    if star is not None and len(star) != q:
        raise ValueError(f"star must give one code (or None) per column: {q} expected, got {len(star)}")
    m = np.empty((n, q), dtype=np.int64)
    native = np.empty(q, dtype=np.int64)
    for j in range(q):
        uniques, inverse = np.unique(codes[:, j], return_inverse=True)
        m[:, j] = inverse.reshape(-1)
        code = None if star is None else star[j]
        at = int(np.searchsorted(uniques, code)) if code is not None else len(uniques)
        native[j] = at if code is not None and at < len(uniques) and uniques[at] == code else len(uniques)
    return m, native


def _keys(rows: np.ndarray) -> np.ndarray:
    """Dense ids of identical rows of a non-negative int64 matrix (mixed radix, densified before overflow)."""
    n, q = rows.shape
    key = np.zeros(n, dtype=np.int64)
    size = 1
    for j in range(q):
        card = int(rows[:, j].max()) + 1 if n else 1
        if size * card >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
            size = int(key.max()) + 1 if n else 1
        key = key * card + rows[:, j]
        size *= card
    return key


def _violating(m: np.ndarray, k: int) -> np.ndarray:
    _, inverse, counts = np.unique(_keys(m), return_inverse=True, return_counts=True)
    return np.flatnonzero(counts[inverse.reshape(-1)] < k)


def _gain(m: np.ndarray, native: np.ndarray, rows: np.ndarray, pattern: tuple[int, ...],
          k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``rows`` given ``pattern``: does it land in a group of at least k rows, of at least 2?"""
    cols = list(pattern)
    target = m[rows]
    target[:, cols] = native[cols]
    pool = (m[:, cols] == native[cols]).all(axis=1)
    pool[rows] = False
    stacked = np.concatenate((m[pool], target)) if pool.any() else target
    _, inverse, counts = np.unique(_keys(stacked), return_inverse=True, return_counts=True)
    size = counts[inverse.reshape(-1)[len(stacked) - len(rows):]]
    return size >= k, size >= 2


def _lower_bound(m: np.ndarray, native: np.ndarray, violating: np.ndarray) -> int:
    """Cells any solution needs: one per violating row without a ``*`` (no other row can join its class, so it
    must change), and at least one if there are violating rows at all."""
    plain = int((~(m[violating] == native).any(axis=1)).sum())
    return max(plain, int(violating.size > 0))


def _patterns(q: int, s: int, previous: list[tuple[int, ...]], near: dict[tuple[int, ...], int]
              ) -> list[tuple[int, ...]]:
    if math.comb(q, s) <= MAX_PATTERNS or not previous:
        return list(itertools.combinations(range(q), s))
    width = max(1, MAX_PATTERNS // q)
    best = sorted(previous, key=lambda p: (-near.get(p, 0), p))[:width]
    grown = {tuple(sorted((*p, j))) for p in best for j in range(q) if j not in p}
    return sorted(grown)


def _record_cells(before: np.ndarray, native: np.ndarray, violating: np.ndarray, k: int) -> int:
    m = before.copy()
    m[violating] = native
    _fill_star_class(m, native, k)
    return int((m != before).sum())


def _fill_star_class(m: np.ndarray, native: np.ndarray, k: int) -> np.ndarray:
    """Fill the all-``*`` class to k rows when it holds 1 to k - 1 (in place); returns the rows added.

    Each other class (all of at least k rows by now) offers rows at the same cost each: its published cells.
    Classes are taken cheapest first: first the rows a class can spare (its size less k), then, if the spares
    of every class are not enough, whole classes (cheapest first); spares taken from the dearest classes are
    then given back while the all-``*`` class stays at k or more.
    """
    full = (m == native).all(axis=1)
    need = k - int(full.sum())
    if full.sum() == 0 or need <= 0:
        return np.zeros(0, dtype=np.int64)
    others = np.flatnonzero(~full)
    ids = _keys(m[others])
    _, first, inverse, counts = np.unique(ids, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    cost = (m[others[first]] != native).sum(axis=1)
    order = np.lexsort((-counts, cost))  # cheapest first, larger classes first on ties
    spare = counts - k
    take = np.zeros(len(counts), dtype=np.int64)
    left = need
    for g in order:
        if left <= 0:
            break
        t = min(int(spare[g]), left)
        take[g] = t
        left -= t
    if left > 0:  # the spares are not enough: whole classes, cheapest first
        for g in order:
            if left <= 0:
                break
            left -= int(counts[g] - take[g])
            take[g] = counts[g]
        for g in order[::-1]:  # give back spares of the dearest partly taken classes
            if left >= 0 and 0 < take[g] < counts[g]:
                back = min(int(take[g]), -left)
                take[g] -= back
                left += back
    # the rows taken from each class: its last rows in row order
    rank = np.empty(len(others), dtype=np.int64)
    by_class = np.lexsort((-others, inverse))
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    rank[by_class] = np.arange(len(others)) - np.repeat(starts, counts)
    chosen = others[rank < take[inverse]]
    m[chosen] = native
    return np.sort(chosen)


def _result(before: np.ndarray, after: np.ndarray, native: np.ndarray, k: int, violating: np.ndarray,
            filled: np.ndarray, method: str) -> SuppressionResult:
    mask = after != before
    full = int((after == native).all(axis=1).sum()) if after.shape[1] else 0
    return SuppressionResult(mask=mask, cells=int(mask.sum()), rows_fully_suppressed=full,
                             violating=violating.astype(np.int64), filled=filled.astype(np.int64), method=method)
