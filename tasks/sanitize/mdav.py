"""MDAV microaggregation: partition the records into groups of at least k similar records, then publish each
record as its group's centroid.

Follows Domingo-Ferrer & Torra, "Ordinal, continuous and heterogeneous k-anonymity through microaggregation"
(Data Mining and Knowledge Discovery 11(2), 2005), section 4, algorithm MDAV (maximum distance to average
vector), as implemented in sdcMicro (``src/Mdav.cpp``, function ``Mdav``; R wrapper ``R/mdav.R``), which was
read for the details below.

The sanitizer (:class:`Mdav`, at the end) encodes the quasi-identifiers and replaces them by their group's
values; the release's privacy unit is ``equivalence_class``.

The algorithm part (the first section) is pure NumPy on a float matrix that the caller has already standardized
(see :func:`standardize`); it knows nothing of frames, roles or Prefect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import Domain, IntRange, MethodParams, Treatment
from ppdp.schemas.params.mdav import MdavParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import TableEncoder, as_numbers
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.matrix import as_matrix, positive_int
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.keeping import Kept, frozen_keys, frozen_plan, frozen_release
from ppdp.tasks.sanitize.mdav_partitions import MdavOnPartitions
from ppdp.tasks.sanitize.partitions import OnPartitions

if TYPE_CHECKING:  # scipy is imported where it is used: reading a spec or a manifest does not need it
    from scipy.spatial import cKDTree

# -- algorithm --

__all__ = [
    "Mdav",
    "aggregate",
    "centroids",
    "information_loss",
    "mdav_groups",
    "mdav_groups_batched",
    "mdav_groups_exact",
    "standardize",
]

TAIL_GROUPS = 200  # mdav_groups: classic MDAV once at most 200 k rows remain (and for n <= 200 k)
PEEL_SHARE = 0.05  # candidate seeds per round: this share of the groups still to form
PASSES = 8  # claim-and-resolve passes per round
RAMP = 1.1  # the first rounds take 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, ... candidates (x 1.1 + 1 each round)
REBUILD = 1.5  # rebuild the k-d tree when it holds more than this many times the remaining rows
_COMPACT_AT = 0.6  # mdav_groups_exact: compact the working arrays when at most this share of them remains


def standardize(x: np.ndarray) -> np.ndarray:
    """Centre each column and divide it by its population standard deviation (ddof = 0).

    This is sdcMicro's scaling: ``Mdav.cpp`` weights each squared difference by 1 / variance (population
    variance, sum of squares / n - mean^2), which gives the same distances as dividing each column by its
    standard deviation. A constant column (variance 0) keeps weight 1, as in sdcMicro; here it is only centred,
    so it becomes all zeros and adds nothing to any distance.

    Parameters
    ----------
    x : ndarray of shape (n, d)
        Finite numbers.

    Returns
    -------
    ndarray of shape (n, d), float64
    """
    x = as_matrix(x, need_columns=True)
    if len(x) == 0:
        return x.copy()
    centred = x - x.mean(axis=0)
    std = np.sqrt((centred * centred).mean(axis=0))
    std[std == 0] = 1.0
    return centred / std


def mdav_groups(x: np.ndarray, k: int) -> np.ndarray:
    """MDAV microaggregation, fast: the same greedy rule as classic MDAV, run in parallel rounds.

    Parameters
    ----------
    x : ndarray of shape (n, d)
        Finite numbers, already standardized by the caller (:func:`standardize` does what sdcMicro does).
    k : int
        Minimum group size, k >= 1.

    Returns
    -------
    ndarray of shape (n,), int64
        Dense group labels 0..G-1, numbered in the order of each group's first row. Every group has k rows
        except the last one formed, which has k to 2k - 1 (as in classic MDAV).

    Raises
    ------
    ValueError
        If ``x`` is not a 2-D finite numeric matrix, k < 1, or n < k.

    Notes
    -----
    Classic MDAV (Domingo-Ferrer & Torra 2005, section 4; :func:`mdav_groups_exact`) forms one group at a
    time: the record r farthest from the centroid of the remaining records, with its k - 1 nearest remaining
    records, then the same around the record s farthest from r. Each step scans every remaining record, so it
    costs O(n^2 / k) (sdcMicro: 2.5 s at 30,000 rows, 38 s at 100,000 as measured by the issue's author). This
    function keeps the rule "the remaining record farthest from the centroid takes its k nearest remaining
    records" but applies it to many seeds per round:

    1. Sets of at least 2k identical rows: all but k to 2k - 1 of them form groups of k at once (zero loss,
       what MDAV does too when a seed has k exact copies); the rest join the pool. This also keeps the k-d
       tree fast on data with many duplicates.
    2. While more than ``TAIL_GROUPS * k`` rows remain, rounds: order the remaining rows by distance to their
       centroid (farthest first, ties by row index; the order and the centroid are refreshed each time the
       remaining count has halved); take the first m rows as candidate seeds, m = ``PEEL_SHARE`` * remaining
       / k, but 1, 2, 3, ... in the first rounds (grown by ``RAMP``); find each one's nearest remaining rows
       with a k-d tree (rebuilt on the remaining rows when it holds more than ``REBUILD`` times as many);
       then, in up to ``PASSES`` passes, every candidate still remaining claims its k nearest remaining rows
       (ties by row index), and a candidate none of whose claims is also claimed by an earlier candidate
       (one farther from the centroid) becomes a group with them. Candidates still undecided wait for the
       next round. So every group is a seed with its k nearest remaining rows, and a seed never takes rows
       that an earlier seed claims in the same pass: an approximation of visiting the seeds one by one in
       that order, as classic MDAV does.
    3. The last ``TAIL_GROUPS * k`` rows (or fewer) are grouped by classic MDAV, which also makes the one
       group of k to 2k - 1 rows.

    Departures from classic MDAV: seeds are taken all around the shell of the remaining data in one round
    instead of r and its antipode s in turn; the centroid is refreshed each time the remaining count has
    halved instead of after every step; and a lower-priority seed may take rows that a higher-priority seed
    of the same round would have reached after losing its first choice. The slow start keeps the last one
    from mattering where it would most (isolated outliers, which come first: without it, one outlier paired
    with a far row cost up to 6% on Adult at k = 2). On the benchmark data the information loss (SSE/SST)
    stays within about 1.5% of :func:`mdav_groups_exact`, often below it (``benchmarks/results/mdav_speed.md``
    for k = 5; k = 2, 3, 10, 25 and heavy-tailed data were checked during development). When n is at most
    ``TAIL_GROUPS * k`` the result is exactly :func:`mdav_groups_exact`. Deterministic: there is no random
    choice, and the k-d tree is built deterministically.
    """
    x = as_matrix(x, need_columns=True)
    k = _check_k(x, k)
    n = len(x)
    tail = max(TAIL_GROUPS, 2) * k  # at least 2k, so that the classic tail always gets k rows or more
    if n <= tail:
        return _mdav_exact(x, k)
    labels = np.full(n, -1, dtype=np.int64)
    chunks, pool = _duplicate_chunks(x, k)
    labels[chunks.ravel()] = np.repeat(np.arange(len(chunks)), k)
    labels[pool] = _peel(x[pool], k, tail) + len(chunks)
    return _first_seen_order(labels, int(labels.max()) + 1)


def mdav_groups_exact(x: np.ndarray, k: int) -> np.ndarray:
    """Classic MDAV over all rows (Domingo-Ferrer & Torra 2005, section 4), following sdcMicro's ``Mdav.cpp``.

    O(n^2 / k): each step scans every remaining row. The reference for tests and benchmarks; use
    :func:`mdav_groups` on real data.

    Parameters
    ----------
    x : ndarray of shape (n, d)
        Finite numbers, already standardized.
    k : int
        Minimum group size, k >= 1.

    Returns
    -------
    ndarray of shape (n,), int64
        Dense group labels numbered in the order of each group's first row.

    Raises
    ------
    ValueError
        If ``x`` is not a 2-D finite numeric matrix, k < 1, or n < k.

    Notes
    -----
    As in sdcMicro: while at least 2k rows remain, take the centroid c of the remaining rows and the row r
    farthest from c; find the row s farthest from r (over the rows remaining before r's group is removed);
    r's group is r's k nearest remaining rows (r among them); it is removed; then, if at least 2k rows are
    still left (3k or more at the start of the step), s's group is s's k nearest rows among those remaining.
    The k to 2k - 1 rows left at the end form the last group. Distances are squared Euclidean on the
    standardized matrix (sdcMicro: squared differences weighted by 1 / variance, the same thing).

    Departures from sdcMicro, none of which changes the result on data without exact or near ties:

    * ties: the farthest row is the first in row order, as sdcMicro's strict ``>`` scan gives; among rows at
      equal distance from r (or s), the k nearest are taken in row order, while sdcMicro's hash sort puts the
      later row first;
    * arithmetic: distances in float64 (sdcMicro accumulates them in float32), so near-ties may resolve
      differently;
    * missing values: refused (``ValueError``); sdcMicro codes them as -999, gives a mismatch the column's
      squared range, and would also treat a genuine value of -999 as missing.
    """
    x = as_matrix(x, need_columns=True)
    k = _check_k(x, k)
    return _mdav_exact(x, k)


def centroids(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The mean of each group: row g is the centroid of the rows labelled g (labels dense 0..G-1)."""
    x = as_matrix(x, need_columns=True)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (len(x),):
        raise ValueError("labels must hold one group label per row")
    if len(labels) == 0:
        return np.zeros((0, x.shape[1]))
    if labels.min() < 0:
        raise ValueError("labels must be non-negative")
    g = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=g).astype(np.float64)
    sums = np.zeros((g, x.shape[1]))
    for j in range(x.shape[1]):
        sums[:, j] = np.bincount(labels, weights=x[:, j], minlength=g)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / sizes[:, None]
    means[sizes == 0] = 0.0
    return means


def aggregate(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Replace every row by its group's centroid (the microaggregated matrix)."""
    return centroids(x, labels)[np.asarray(labels, dtype=np.int64)]


def information_loss(x: np.ndarray, labels: np.ndarray) -> float:
    """SSE / SST: the within-group sum of squares over the total sum of squares, on the given matrix.

    0 means no loss (every group constant), 1 means every row replaced by the overall mean. Returns 0.0 when
    SST is 0 (all rows identical). Domingo-Ferrer & Torra (2005) report it as a percentage.
    """
    x = as_matrix(x, need_columns=True)
    labels = np.asarray(labels, dtype=np.int64)
    if len(x) == 0:
        return 0.0
    sst = float(((x - x.mean(axis=0)) ** 2).sum())
    if sst == 0.0:
        return 0.0
    sse = float(((x - aggregate(x, labels)) ** 2).sum())
    return sse / sst


# ---------------------------------------------------------------------------------------------------- internals


def _check_k(x: np.ndarray, k: int) -> int:
    k = positive_int(k, "k")
    if len(x) < k:
        raise ValueError(f"MDAV needs at least k = {k} rows, got {len(x)}")
    return k


def _sq_dist(xt: np.ndarray, point: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """Squared distances from every column of each batch row of xt (b, d, w) to that row's point (b, d), as sums
    of squared differences in column order (not by the |a|^2 - 2ab + |b|^2 expansion), so a row's distance to
    itself is exactly 0 and identical rows get identical distances; ``out`` and ``tmp`` are (b, w)."""
    np.subtract(xt[:, 0], point[:, 0, None], out=out)
    np.multiply(out, out, out=out)
    for j in range(1, xt.shape[1]):
        np.subtract(xt[:, j], point[:, j, None], out=tmp)
        np.multiply(tmp, tmp, out=tmp)
        np.add(out, tmp, out=out)
    return out


def _k_nearest(dist: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest entries of dist (finite or +inf), ties to the lower positions.

    A full ``np.partition`` costs several passes over dist; instead the k-th smallest of the minima of c
    chunks is a bound t with at least k entries <= t, usually only a few more (the k nearest rows lie in
    different chunks unless the rows are stored in spatial order); the selection then runs on those.
    """
    w = len(dist)
    chunks = max(64, 2 * k)
    if w >= 4 * chunks:
        mins = dist[: w - w % chunks].reshape(chunks, -1).min(axis=1)
        cand = np.flatnonzero(dist <= np.partition(mins, k - 1)[k - 1])
    else:
        cand = np.arange(w)
    vals = dist[cand]
    kth = np.partition(vals, k - 1)[k - 1]
    less = cand[vals < kth]
    return np.concatenate((less, cand[vals == kth][: k - len(less)]))


def _mdav_exact(x: np.ndarray, k: int) -> np.ndarray:
    """Classic MDAV (see :func:`mdav_groups_exact`) on one matrix: :func:`mdav_groups_batched` with a batch of
    one."""
    return mdav_groups_batched(x[None], k)[0]


def mdav_groups_batched(z: np.ndarray, k: int, *, centroid: Literal["pairwise", "by_rows"] = "pairwise",
                        compact: bool = True) -> np.ndarray:
    """Classic MDAV (:func:`mdav_groups_exact`) on b matrices of the same shape at once, vectorized within each
    step; the one implementation of classic MDAV (:func:`mdav_groups_exact`, the tail of :func:`mdav_groups`, and
    the perturbation tree's leaves of equal size).

    All b matrices take the same steps, since the steps depend only on the count of remaining rows: while at
    least 2k remain, r = the remaining row farthest from the centroid of the remaining ones, s = the remaining
    row farthest from r; r's k nearest remaining rows form a group, then, if at least 2k are still left, s's k
    nearest; the rest form the last group. Ties go to the first row in row order.

    Parameters
    ----------
    z : ndarray of shape (b, n, d)
        b matrices of n rows (finite float64, already standardized), n >= k.
    k : int
        Minimum group size (already checked, >= 1).
    centroid : {"pairwise", "by_rows"}
        How the centroid's sums are computed (the results differ in the last bits, which can decide near-ties):
        "pairwise" sums each column over the remaining rows in one contiguous run (NumPy's pairwise summation;
        :func:`mdav_groups_exact` and :func:`mdav_groups`); "by_rows" sums a (b, n, d) array, removed rows zeroed,
        over its rows (the perturbation tree's batched leaves).
    compact : bool
        Drop grouped rows from the working arrays when at most ``_COMPACT_AT`` of them remain (faster on large
        matrices; with "pairwise" it changes which rows share a partial sum, so it is part of the result).

    Returns
    -------
    ndarray of shape (b, n), int64
        Each matrix's dense group labels, numbered in the order of each group's first row.

    Notes
    -----
    Working layout: ``xt`` (b, d, w) holds the rows ``rows`` (ascending per batch row, so position order is row
    order); grouped columns are zeroed, so a plain sum over columns is the sum of the remaining rows, and their
    ``penalty`` is +inf (0 for remaining rows), so dist - penalty and dist + penalty leave them out of the
    farthest and the nearest search.
    """
    b, n, _ = z.shape
    xt = np.array(z.transpose(0, 2, 1), dtype=np.float64, order="C")  # a copy: grouped columns are zeroed in place
    line = np.arange(b)
    col = line[:, None]
    rows = np.tile(np.arange(n), (b, 1))
    penalty = np.zeros((b, n))
    labels = np.full((b, n), -1, dtype=np.int64)
    dist, tmp = np.empty((b, n)), np.empty((b, n))
    group, cnt = 0, n
    while cnt >= 2 * k:
        if compact and cnt <= _COMPACT_AT * rows.shape[1]:
            keep = np.nonzero(penalty == 0)[1].reshape(b, cnt)
            xt = np.ascontiguousarray(np.take_along_axis(xt, keep[:, None, :], axis=2))
            rows = np.take_along_axis(rows, keep, axis=1)
            penalty, dist, tmp = np.zeros((b, cnt)), np.empty((b, cnt)), np.empty((b, cnt))
        xr, xs = _far_seeds(xt, penalty, dist, tmp, cnt, centroid)  # leaves dist = distances to r
        for seed in (xr, xs):  # r's group is removed (first in row order on ties)
            if seed is xs:
                _sq_dist(xt, xs, dist, tmp)
            np.add(dist, penalty, out=tmp)
            if b == 1:
                sel = _k_nearest(tmp[0], k)[None]
            else:
                sel = np.argsort(tmp, axis=1, kind="stable")[:, :k]
            labels[col, rows[col, sel]] = group
            group += 1
            penalty[col, sel] = np.inf
            xt[col, :, sel] = 0.0
            cnt -= k
            if cnt < 2 * k:
                break
    left = penalty == 0
    labels[np.nonzero(left)[0], rows[left]] = group
    return _first_row_order(labels, group + 1)


def _far_seeds(xt: np.ndarray, penalty: np.ndarray, dist: np.ndarray, tmp: np.ndarray, cnt: int,
               centroid: str) -> tuple[np.ndarray, np.ndarray]:
    """One MDAV step's seeds in every batch row: r, the remaining row farthest from the remaining rows' centroid,
    and s, the remaining row farthest from r (first in row order on ties). ``dist`` is left holding each row's
    squared distance to r."""
    line = np.arange(xt.shape[0])
    if centroid == "pairwise":
        mean = xt.sum(axis=2) / cnt
    else:
        mean = np.ascontiguousarray(xt.transpose(0, 2, 1)).sum(axis=1) / cnt
    _sq_dist(xt, mean, dist, tmp)
    xr = xt[line, :, np.subtract(dist, penalty, out=tmp).argmax(axis=1)]  # r: farthest from the centroid
    _sq_dist(xt, xr, dist, tmp)
    xs = xt[line, :, np.subtract(dist, penalty, out=tmp).argmax(axis=1)]  # s: farthest from r, before
    return xr, xs


def _first_row_order(labels: np.ndarray, groups: int) -> np.ndarray:
    """Batched labels (b, n) renumbered in the order of each group's first row."""
    b, n = labels.shape
    first = np.full((b, groups), n, dtype=np.int64)
    np.minimum.at(first, (np.repeat(np.arange(b), n), labels.ravel()), np.tile(np.arange(n), b))
    rank = np.argsort(np.argsort(first, axis=1, kind="stable"), axis=1, kind="stable")
    return np.take_along_axis(rank, labels, axis=1)


def _duplicate_chunks(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sets of c >= 2k identical rows give floor(c / k) - 1 groups of k (lowest row indices first); the other
    k to 2k - 1 copies, and every row with fewer than 2k copies, stay in the pool. Returns (groups as a
    (q, k) array of row indices, pool row indices ascending); the pool holds at least k rows when n >= k."""
    n = len(x)
    # only rows whose first value occurs at least 2k times can have 2k copies: sort the others away cheaply
    first = np.argsort(x[:, 0], kind="stable")
    often = _run_lengths(x[first, :1])[0] >= 2 * k
    if not often.any():
        return np.zeros((0, k), dtype=np.int64), np.arange(n)
    maybe = np.sort(first[often])
    order = maybe[np.lexsort(x[maybe].T[::-1])]  # stable: copies in row order
    copies, rank = _run_lengths(x[order])
    chunked = rank < np.maximum(copies // k - 1, 0) * k
    pooled = np.ones(n, dtype=bool)
    pooled[order[chunked]] = False
    return order[chunked].reshape(-1, k), np.flatnonzero(pooled)


def _run_lengths(sorted_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted so that equal rows are adjacent: how many rows equal each row, and its rank among them."""
    starts = np.flatnonzero(np.r_[True, (sorted_rows[1:] != sorted_rows[:-1]).any(axis=1)])
    sizes = np.diff(np.r_[starts, len(sorted_rows)])
    return np.repeat(sizes, sizes), np.arange(len(sorted_rows)) - np.repeat(starts, sizes)


def _neighbour_lists(tree: cKDTree, tree_rows: np.ndarray, points: np.ndarray, alive: np.ndarray,
                     k: int) -> np.ndarray:
    """For each point, its nearest rows of the tree, sorted by (distance, row), padded with the dead sentinel
    ``len(alive) - 1``, with at least k of them remaining. A list with fewer is queried again, 4x longer each
    time, and then keeps only its first 3k remaining rows (still a prefix of the remaining rows sorted by
    distance, so its first k remaining rows stay the k nearest)."""
    size = len(tree_rows)
    width = kk = min(3 * k, size)
    lists = _query_sorted(tree, tree_rows, points, kk)
    short = np.flatnonzero(alive[lists].sum(axis=1) < k)
    while len(short) and kk < size:
        kk = min(4 * kk, size)
        longer = _query_sorted(tree, tree_rows, points[short], kk)
        free = alive[longer]
        rank = np.cumsum(free, axis=1)
        free &= rank <= width
        packed = np.full((len(short), width), len(alive) - 1, dtype=np.int64)
        at = np.nonzero(free)
        packed[at[0], rank[free] - 1] = longer[free]
        lists[short] = packed
        short = short[rank[:, -1] < k]
    return lists


def _query_sorted(tree: cKDTree, tree_rows: np.ndarray, points: np.ndarray, kk: int) -> np.ndarray:
    dist, idx = tree.query(points, k=kk)
    if kk == 1:
        dist, idx = dist[:, None], idx[:, None]
    rows = tree_rows[idx]
    tied = np.flatnonzero((np.diff(dist, axis=1) == 0).any(axis=1))
    if len(tied):  # the tree returns equal distances in no particular order: put them in row order
        by_row = np.argsort(rows[tied], axis=1, kind="stable")
        by_dist = np.argsort(np.take_along_axis(dist[tied], by_row, axis=1), axis=1, kind="stable")
        rows[tied] = np.take_along_axis(rows[tied], np.take_along_axis(by_row, by_dist, axis=1), axis=1)
    return rows


def _tree(points: np.ndarray, rows: np.ndarray) -> tuple[cKDTree, np.ndarray, np.ndarray]:
    """A k-d tree on ``points`` (the rows ``rows``) and each row's rank in the tree's leaf order."""
    from scipy.spatial import cKDTree  # heavy: scipy is loaded when MDAV peels

    tree = cKDTree(points, balanced_tree=False, compact_nodes=False)  # sliding midpoint: quick to build
    leaf_rank = np.zeros(rows.max() + 1, dtype=np.int64)
    leaf_rank[rows[tree.indices]] = np.arange(len(rows))
    return tree, rows, leaf_rank


def _peel(x: np.ndarray, k: int, tail: int) -> np.ndarray:
    """Steps 2 and 3 of :func:`mdav_groups` on a pool of at least k rows; returns dense labels."""
    n = len(x)
    if n <= tail:
        return _mdav_exact(x, k)
    alive = np.ones(n + 1, dtype=bool)  # slot n: the dead sentinel that pads neighbour lists
    alive[n] = False
    owner = np.empty(n + 1, dtype=np.int64)
    labels = np.full(n, -1, dtype=np.int64)
    tree, tree_rows, leaf_rank = _tree(x, np.arange(n))
    group, cnt = 0, n
    queue, cnt_at_queue = np.arange(0), 0
    ramp = 0
    while cnt > tail:
        if cnt <= cnt_at_queue / 2 or not len(queue):
            rows = np.flatnonzero(alive[:n])
            xa = x[rows]
            centred = xa - xa.mean(axis=0)
            queue = rows[np.lexsort((rows, -np.einsum("ij,ij->i", centred, centred)))]
            cnt_at_queue = cnt
            if len(tree_rows) > REBUILD * cnt:
                tree, tree_rows, leaf_rank = _tree(xa, rows)
        else:
            queue = queue[alive[queue]]
        ramp = int(min(ramp * RAMP, n)) + 1
        m = min(max(1, int(PEEL_SHARE * cnt / k)), ramp, (cnt - tail) // k + 1, len(queue))
        cand = queue[:m]
        by_leaf = np.argsort(leaf_rank[cand], kind="stable")  # nearby queries one after another: cache-friendly
        lists = np.empty((m, min(3 * k, len(tree_rows))), dtype=np.int64)
        lists[by_leaf] = _neighbour_lists(tree, tree_rows, x[cand[by_leaf]], alive, k)
        undecided = np.arange(m)
        won = []
        for _ in range(PASSES):
            free = alive[lists[undecided]]
            seeded = alive[cand[undecided]]
            able = seeded & (free.sum(axis=1) >= k)
            # a candidate taken into an earlier candidate's group drops out; one whose list ran out of
            # remaining rows waits for a longer query in the next round
            undecided, free = undecided[able], free[able]
            if not len(undecided):
                break
            free &= np.cumsum(free, axis=1) <= k  # the first k remaining rows of each list
            claims = lists[undecided][free].reshape(-1, k)
            flat = claims.ravel()
            owner[flat] = m
            np.minimum.at(owner, flat, np.repeat(undecided, k))
            wins = (owner[claims] == undecided[:, None]).all(axis=1)
            won.append(claims[wins])
            alive[claims[wins].ravel()] = False
            undecided = undecided[~wins]
        groups = np.concatenate(won)
        labels[groups.ravel()] = np.repeat(np.arange(group, group + len(groups)), k)
        group += len(groups)
        cnt -= k * len(groups)
    rest = np.flatnonzero(alive[:n])
    labels[rest] = _mdav_exact(x[rest], k) + group
    return labels


def _first_seen_order(labels: np.ndarray, groups: int) -> np.ndarray:
    """Renumber dense labels so that groups are numbered in the order of their first row."""
    first = np.full(groups, len(labels), dtype=np.int64)
    np.minimum.at(first, labels, np.arange(len(labels)))
    rank = np.empty(groups, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(groups)
    return rank[labels]


# -- the sanitizer ---------------------------------------------------------------------------------
class Mdav(Sanitizer):
    """MDAV microaggregation of the quasi-identifiers (privacy unit ``equivalence_class``).

    The quasi-identifiers are encoded and standardized (:class:`~ppdp.tasks.core.encoding.TableEncoder`:
    numbers and dates z-scored, ordinal categories by rank, nominal ones one-hot), grouped by
    :func:`mdav_groups` into groups of at least k records, and every record's quasi-identifiers are replaced by
    its group's: the mean for numbers (rounded for integer columns; dates to whole days when the column holds
    whole days), the most frequent category for ordinal and nominal columns (the smallest in sort order on
    ties). So the records of a group share every published quasi-identifier value and each equivalence class of
    the release has at least k records. Other (non-sensitive) attributes are aggregated over the same groups,
    so no raw value of theirs is published beside its record; sensitive attributes and the class are kept as
    they are (what l-diversity and t-closeness then measure; their categorical values already passed the
    release's rare-value rule). A missing quasi-identifier value counts as
    its own category for categorical columns; numeric means skip missing values (a group with none stays
    missing).

    Parameters
    ----------
    k : int
        Smallest group size (at least 2).
    seed : int
        Seed of the published row order (MDAV itself is deterministic).

    Notes
    -----
    With the series option ``keep_groups`` each record keeps its group of the dataset's previous release
    (:meth:`_sanitize_keeping`).
    """

    name: ClassVar[str] = "mdav"
    description: ClassVar[str] = ("MDAV microaggregation: records clustered in groups of at least k, "
                                  "quasi-identifiers replaced by the group's aggregate")
    Params: ClassVar[type[MethodParams]] = MdavParams
    randomized: ClassVar[bool] = False
    on_partitions: ClassVar[OnPartitions | None] = MdavOnPartitions(mdav_groups)

    k: int | None

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"k": IntRange(low=2, high=max(2, len(frame)))}

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        k = self._group_size()
        n = len(frame)
        if n < k:
            raise InputError(f"mdav: {n} records cannot form a group of k={k}")
        labels = mdav_groups(self._encode(frame, roles), k)
        return self._publish(frame, roles, labels)

    def _sanitize_keeping(self, source: pd.DataFrame, roles: Roles, rng: np.random.Generator,
                          previous: Kept) -> Release:
        """MDAV with the previous release's groups kept frozen (the series option ``keep_groups``).

        The rule (:mod:`ppdp.tasks.sanitize.keeping`, after m-invariance, Xiao & Tao, SIGMOD 2007): a previous
        group with at least k present members publishes exactly its previous rows (a present member keeps its old
        row; the row of a member who left stays as a counterfeit, ``row_source`` -1); a group with fewer is retired
        and its present members held; records in no earlier group are grouped among themselves by
        :func:`mdav_groups` (and published as :meth:`_sanitize` publishes them) when at least k are new, else held
        until k can form a group; a record grouped in an earlier release and in no kept group now stays held. A
        previous row's group is found by its published quasi-identifiers, which every row of an MDAV group shares.
        Raises :class:`InputError` when no row can be published or the previous table's columns differ.
        """
        k = self._group_size()
        qis = self._quasi_identifiers(source, roles)
        table_keys, member_keys = frozen_keys(previous, qis, self.name)
        plan = frozen_plan(previous.groups, member_keys, previous.seen, table_keys, k)
        return frozen_release(previous, plan, source, lambda new: self._sanitize(new, roles, rng),
                              self._treatments(source, roles), "equivalence_class", self.name)

    def _group_size(self) -> int:
        if self.k is None:
            raise SpecError("mdav: k is required (set method.k or a tuning strategy)")
        return int(self.k)

    @staticmethod
    def _quasi_identifiers(frame: pd.DataFrame, roles: Roles) -> list[str]:
        qis = [q for q in roles.quasi_identifiers if q in frame.columns and q not in roles.identifiers]
        if not qis:
            raise InputError("mdav: no quasi-identifier to aggregate")
        return qis

    def _encode(self, frame: pd.DataFrame, roles: Roles) -> np.ndarray:
        """The quasi-identifiers encoded and standardized: MDAV's distance space."""
        qis = self._quasi_identifiers(frame, roles)
        return TableEncoder(columns=qis, kinds=roles.kinds(), orders=roles.orders()).fit_transform(frame)

    def _treatments(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Treatment]:
        """Each column's treatment: quasi-identifiers and other attributes aggregated over the group (a raw value
        beside its record would be published verbatim); sensitive attributes and the class kept as they are."""
        qis = self._quasi_identifiers(frame, roles)
        aggregated = set(qis) | {c for c in roles.attributes if c in frame.columns and roles.get(c).role is Role.other}
        return {name: "aggregated" if name in aggregated else "kept" for name in frame.columns}

    def _publish(self, frame: pd.DataFrame, roles: Roles, labels: np.ndarray) -> Release:
        """Every row of ``frame`` published as its group's (dense ``labels``): quasi-identifiers and other
        attributes aggregated, sensitive attributes and the class kept."""
        n = len(frame)
        kinds = roles.kinds()
        data: dict[str, object] = {}
        treatments = self._treatments(frame, roles)
        for name in frame.columns:
            if treatments[name] == "aggregated":
                data[name] = _aggregate_column(frame[name], labels, kinds[name])
            else:
                data[name] = frame[name].to_numpy()
        return Release(frame=pd.DataFrame(data, index=pd.RangeIndex(n)), unit="equivalence_class",
                       treatments=treatments, row_source=np.arange(n, dtype=np.int64), group=labels,
                       input_group=labels)


def _aggregate_column(series: pd.Series, labels: np.ndarray, kind: ColumnKind) -> object:
    """One published value per group: the mean (numbers, dates) or the most frequent category."""
    groups = int(labels.max()) + 1 if labels.size else 0
    is_date = pd.api.types.is_datetime64_any_dtype(series)
    if kind is ColumnKind.numeric and (pd.api.types.is_numeric_dtype(series) or is_date):
        values = as_numbers(series)  # dates as nanoseconds; missing as NaN
        present = ~np.isnan(values)
        sums = np.bincount(labels[present], weights=values[present], minlength=groups)
        counts = np.bincount(labels[present], minlength=groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        finite = values[present]
        if is_date:
            day = 86_400e9
            step = day if finite.size and bool(np.all(np.mod(finite, day) == 0)) else 1.0
            out = np.rint(means / step) * step
            return pd.to_datetime(out[labels], unit="ns").to_numpy()
        if pd.api.types.is_integer_dtype(series) or (finite.size and bool(np.all(finite == np.round(finite)))):
            means = np.rint(means)
            if pd.api.types.is_integer_dtype(series):
                return pd.array(np.where(np.isnan(means[labels]), np.array(None, dtype=object),
                                         means[labels]).tolist(), dtype="Int64") \
                    if np.isnan(means).any() else means[labels].astype(np.int64)
        return means[labels]
    codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=False)
    table = np.zeros((groups, len(uniques)), dtype=np.int64)
    np.add.at(table, (labels, codes), 1)
    mode = np.argmax(table, axis=1)  # the first (smallest in sort order) of the most frequent on ties
    values = np.asarray(uniques, dtype=object)[mode][labels]
    try:
        return pd.array(values, dtype=series.dtype)
    except (TypeError, ValueError):
        return values
