"""Growing the perturbation tree (steps 1-5 of :mod:`ppdp.tasks.sanitize.perturbation_tree`, whose module
docstring describes the algorithm): each record's leaf and the splits, leaves under a minimum merged with their
closest relative in the tree."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ppdp.schemas.params.perturbation_tree import EPSILON
from ppdp.tasks.core.kmeans import kmeans_labels
from ppdp.tasks.core.matrix import as_matrix, positive_int

__all__ = [
    "KMEANS_ITERATIONS",
    "TIE",
    "Split",
    "Splits",
    "group_means",
    "merge_small_leaves",
    "tree_leaves",
]

TIE = 1e-10  # normalized variances within this relative difference are equal (the first column is chosen)
KMEANS_ITERATIONS = 25  # Lloyd iterations at most for a node divided by k-means (step 5)


# -- algorithm -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Split:
    """One split of the perturbation tree.

    Attributes
    ----------
    node : int
        The split node (breadth-first numbering: the root is 0, the children of the nodes split at one depth are
        numbered left to right after all nodes of that depth).
    depth : int
        The node's depth (the root has depth 0).
    attribute : int
        Column of the splitting matrix (the attribute of highest normalized variance in the node).
    threshold : float
        Records with a value below it went left, the others right, in the attribute's own units: the mid-range
        (or median) of the node's values, moved by ``nudge`` * epsilon * (the attribute's range) when records
        lay on it.
    nudge : int
        -1 or +1 when the threshold was moved (the records on it went right, resp. left), 0 otherwise.
    left, right : int
        Node ids of the children.
    left_size, right_size : int
        Records in each child.
    """

    node: int
    depth: int
    attribute: int
    threshold: float
    nudge: int
    left: int
    right: int
    left_size: int
    right_size: int


@dataclass(frozen=True, eq=False)
class Splits(Sequence):
    """The splits of a perturbation tree, breadth-first, stored as arrays (one entry per split); indexing or
    iterating gives :class:`Split` records. ``node``, ``depth``, ``attribute``, ``threshold``, ``nudge``,
    ``left_size`` and ``right_size`` are as in :class:`Split`; the children of split i are nodes
    ``first_child[i]`` (left) and ``first_child[i] + 1`` (right)."""

    node: np.ndarray
    depth: np.ndarray
    attribute: np.ndarray
    threshold: np.ndarray
    nudge: np.ndarray
    first_child: np.ndarray
    left_size: np.ndarray
    right_size: np.ndarray

    def __len__(self) -> int:
        return len(self.node)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return Split(node=int(self.node[i]), depth=int(self.depth[i]), attribute=int(self.attribute[i]),
                     threshold=float(self.threshold[i]), nudge=int(self.nudge[i]), left=int(self.first_child[i]),
                     right=int(self.first_child[i]) + 1, left_size=int(self.left_size[i]),
                     right_size=int(self.right_size[i]))


def tree_leaves(
    x: np.ndarray,
    leaf_size: int,
    *,
    split: Literal["midrange", "median"] = "midrange",
    epsilon: float = EPSILON,
    min_leaf: int = 1,
    max_depth: int | None = None,
    seed: int | np.random.Generator = 0,
) -> tuple[np.ndarray, Splits]:
    """Grow the perturbation tree on ``x`` and return each row's leaf and the splits (steps 1-5).

    Parameters
    ----------
    x : ndarray of shape (n, d)
        The splitting attributes in their own units (finite numbers), n >= 1. A column may be constant.
    leaf_size : int
        A node with at most this many records is not split (>= 1).
    split : {"midrange", "median"}
        Where a node is cut on its chosen attribute.
    epsilon : float
        The threshold nudge when records lie on the threshold, as a share of the attribute's range (> 0).
    min_leaf : int
        Leaves with fewer records are merged with a neighbour (:func:`merge_small_leaves`); 1 (the default)
        keeps the paper's tree as it is.
    max_depth : int, optional
        Nodes at this depth (root 0) are not split; one with more than ``leaf_size`` records whose values vary
        is divided by k-means into ceil(size / leaf_size) clusters (the paper's step 5). None: no bound.
    seed : int or numpy Generator
        Draws the nudge directions and the k-means starts.

    Returns
    -------
    leaf_ids : ndarray of shape (n,), int64
        Dense leaf ids 0..L-1 numbered left to right in the tree (after merging, merged leaves share the id).
    splits : Splits
        Every split, breadth-first (node order): a sequence of :class:`Split` records backed by arrays.

    Raises
    ------
    ValueError
        If ``x`` is not a finite 2-D numeric matrix with at least one row, or a parameter is out of range, or
        ``min_leaf`` exceeds n.

    Notes
    -----
    The min-max normalization is affine per attribute, so the mid-range and the median commute with it and the
    normalized variance is the raw variance divided by the squared range: the tree is computed on the raw values
    (exact comparisons with the threshold) with variances weighted by 1 / range^2; a constant attribute is never
    chosen. Ties between attributes of equal variance (within a relative 1e-10, so that rounding does not decide)
    go to the first column.

    The tree is grown one depth at a time over all nodes of that depth at once (segment sums with
    ``np.add.reduceat``, a stable two-way partition by counting), so the cost is O(n d) per depth and there is
    no Python loop over nodes or records (only over the k-means nodes, which exist only with ``max_depth``).
    """
    x, leaf_size, min_leaf, epsilon, max_depth = _tree_arguments(x, leaf_size, split, epsilon, min_leaf, max_depth)
    n = x.shape[0]
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    leaves = _Leaves(np.empty(n, dtype=np.int64), np.full(n + 1, -1, dtype=np.int64))
    parts = _grow(x, leaf_size, split, epsilon, max_depth, rng, leaves)
    return leaves.ids(min_leaf), _splits_of(parts)


def _grow(x: np.ndarray, leaf_size: int, split: str, epsilon: float, max_depth: int | None,
          rng: np.random.Generator, leaves: _Leaves) -> list[tuple[np.ndarray, ...]]:
    """Grow the tree one depth at a time, closing leaves into ``leaves``; per depth, the columns of its splits."""
    n = x.shape[0]
    lo, hi = x.min(axis=0), x.max(axis=0)
    span = hi - lo
    weight = np.where(span > 0, 1.0 / np.where(span > 0, span, 1.0) ** 2, 0.0)  # 1 / range^2 (normalization)
    parts: list[tuple[np.ndarray, ...]] = []  # per depth: the columns of Splits
    next_node = 1
    active = _Active(rows=np.arange(n, dtype=np.int64), xa=np.ascontiguousarray(x.T),
                     sizes=np.array([n], dtype=np.int64), nodes=np.array([0], dtype=np.int64),
                     gstart=np.array([0], dtype=np.int64))
    depth = 0
    if n <= leaf_size:
        leaves.close(active.rows, active.sizes, active.gstart)
        active.sizes = active.sizes[:0]
    while len(active.sizes):
        offs, seg = _segments(active.sizes)
        # step 2: the attribute of highest normalized variance in each node
        best, attr, seg_min, seg_max = _split_attributes(active.xa, offs, seg, active.sizes, weight)
        varies = best >= 0
        bounded = max_depth is not None and depth >= max_depth
        # nodes where nothing varies stay leaves; at the depth bound, nodes that vary go to k-means
        if not varies.all() or bounded:
            keep = _close_unsplit(active, varies, bounded, offs, seg, leaf_size, weight, depth, rng, leaves)
            attr, seg_min, seg_max = attr[keep], seg_min[keep], seg_max[keep]
            if not len(active.sizes):
                break
            offs, seg = _segments(active.sizes)
        # step 3: the threshold (in the attribute's units) and the records that go left
        used, nudge, left, n_left = _cut(active, attr, seg_min, seg_max, offs, seg, split, epsilon * span[attr],
                                         rng)
        a = len(active.sizes)
        child_left = next_node + 2 * np.arange(a)
        next_node += 2 * a
        parts.append((active.nodes, np.full(a, depth, dtype=np.int64), attr, used, nudge.astype(np.int64),
                      child_left, n_left, active.sizes - n_left))
        leaves.boundary_depth[active.gstart + n_left] = depth
        active = _children(active, left, n_left, child_left, offs, seg, leaf_size, leaves)
        depth += 1
    return parts


def _tree_arguments(x: np.ndarray, leaf_size: int, split: str, epsilon: float, min_leaf: int,
                    max_depth: int | None) -> tuple[np.ndarray, int, int, float, int | None]:
    """:func:`tree_leaves`' arguments checked: the matrix, leaf_size, min_leaf, epsilon and max_depth."""
    x = as_matrix(x, "the matrix")
    leaf_size = positive_int(leaf_size, "leaf_size")
    min_leaf = positive_int(min_leaf, "min_leaf")
    if split not in ("midrange", "median"):
        raise ValueError(f"split must be 'midrange' or 'median', got {split!r}")
    epsilon = float(epsilon)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError("epsilon must be a positive number")
    if max_depth is not None:
        max_depth = operator.index(max_depth)
        if max_depth < 0:
            raise ValueError("max_depth must be at least 0")
    n = x.shape[0]
    if n == 0:
        raise ValueError("x has no rows")
    if min_leaf > n:
        raise ValueError(f"{n} records cannot form a leaf of at least {min_leaf}")
    return x, leaf_size, min_leaf, epsilon, max_depth


@dataclass
class _Leaves:
    """The leaves closed so far while the tree grows: each row's leaf (numbered in order of creation), each
    batch of leaves' global start positions, and the depth of the split at each right child's start."""

    leaf_of: np.ndarray
    boundary_depth: np.ndarray
    leaf_start: list[np.ndarray] = field(default_factory=list)
    n_leaves: int = 0

    def close(self, seg_rows: np.ndarray, seg_sizes: np.ndarray, seg_gstart: np.ndarray) -> None:
        """Close segments (rows in order, sizes, global starts) as leaves."""
        count = len(seg_sizes)
        if count == 0:
            return
        self.leaf_of[seg_rows] = np.repeat(np.arange(self.n_leaves, self.n_leaves + count), seg_sizes)
        self.leaf_start.append(seg_gstart)
        self.n_leaves += count

    def ids(self, min_leaf: int) -> np.ndarray:
        """Dense leaf ids numbered left to right in the tree; leaves under ``min_leaf`` merged."""
        starts = np.concatenate(self.leaf_start)
        rank = np.empty(self.n_leaves, dtype=np.int64)
        by_position = np.argsort(starts, kind="stable")
        rank[by_position] = np.arange(self.n_leaves)
        leaf_ids = rank[self.leaf_of]
        if min_leaf > 1:
            ordered = starts[by_position]
            leaf_ids = merge_small_leaves(leaf_ids, self.boundary_depth[ordered[1:]], min_leaf)
        return leaf_ids


@dataclass
class _Active:
    """The segments still to split: their rows in order, the rows' values (attributes x rows), each segment's
    size, node id and global start."""

    rows: np.ndarray
    xa: np.ndarray
    sizes: np.ndarray
    nodes: np.ndarray
    gstart: np.ndarray


def _segments(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each segment's offset and each row's segment, for segments of ``sizes`` laid out one after the other."""
    a = len(sizes)
    offs = np.zeros(a, dtype=np.int64)
    np.cumsum(sizes[:-1], out=offs[1:])
    return offs, np.repeat(np.arange(a), sizes)


def _split_attributes(xa: np.ndarray, offs: np.ndarray, seg: np.ndarray, sizes: np.ndarray,
                      weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Step 2, per segment: the highest normalized variance (two-pass; -1 when nothing varies), its attribute
    and that attribute's minimum and maximum in the segment."""
    a = len(sizes)
    best = np.full(a, -1.0)
    attr = np.zeros(a, dtype=np.int64)
    seg_min = np.zeros(a)
    seg_max = np.zeros(a)
    for j in range(len(weight)):
        if weight[j] == 0:
            continue
        v = xa[j]
        mn = np.minimum.reduceat(v, offs)
        mx = np.maximum.reduceat(v, offs)
        dev = v - (np.add.reduceat(v, offs) / sizes)[seg]
        var = np.add.reduceat(dev * dev, offs) / sizes * weight[j]
        var = np.where(mx > mn, var, -1.0)
        better = var > best + TIE * np.abs(best)  # equal up to rounding: the first column keeps it
        best = np.where(better, var, best)
        attr = np.where(better, j, attr)
        seg_min = np.where(better, mn, seg_min)
        seg_max = np.where(better, mx, seg_max)
    return best, attr, seg_min, seg_max


def _close_unsplit(active: _Active, varies: np.ndarray, bounded: bool, offs: np.ndarray, seg: np.ndarray,
                   leaf_size: int, weight: np.ndarray, depth: int, rng: np.random.Generator,
                   leaves: _Leaves) -> np.ndarray:
    """Close the segments that will not be split (nothing varies; at the depth bound, the others by k-means)
    and drop them from ``active`` in place; the mask of the segments kept."""
    done = ~varies
    stop = done | varies if bounded else done
    keep_rows = ~stop[seg]
    if bounded:
        for s in np.flatnonzero(varies):
            lo_s, hi_s = offs[s], offs[s] + active.sizes[s]
            _kmeans_leaves(active.xa[:, lo_s:hi_s], active.rows[lo_s:hi_s], int(active.gstart[s]), leaf_size,
                           weight, depth, rng, leaves.close, leaves.boundary_depth)
    leaves.close(active.rows[done[seg]], active.sizes[done], active.gstart[done])
    active.rows, active.xa = active.rows[keep_rows], active.xa[:, keep_rows]
    keep = ~stop
    active.sizes, active.nodes, active.gstart = active.sizes[keep], active.nodes[keep], active.gstart[keep]
    return keep


def _cut(active: _Active, attr: np.ndarray, seg_min: np.ndarray, seg_max: np.ndarray, offs: np.ndarray,
         seg: np.ndarray, split: str, step: np.ndarray,
         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Step 3, per segment: the threshold used, the nudge (-1, 0, +1), each row's side (True: left) and the
    records that went left. ``step`` is the nudge's size, epsilon x the attribute's range."""
    sizes = active.sizes
    m, a = len(active.rows), len(sizes)
    v = active.xa[attr[seg], np.arange(m)]
    if split == "midrange":
        threshold = (seg_min + seg_max) / 2.0
    else:
        threshold = _segment_medians(v, seg, offs, sizes)
    tied = np.add.reduceat((v == threshold[seg]).astype(np.int64), offs) > 0
    sign = np.where(rng.random(a) < 0.5, -1, 1)
    nudge = np.where(tied, sign, 0)
    left = v < (threshold + nudge * step)[seg]
    n_left = np.add.reduceat(left.astype(np.int64), offs)
    empty = (n_left == 0) | (n_left == sizes)
    if empty.any():  # the drawn sign leaves a side empty: the other sign
        nudge = np.where(empty, -nudge, nudge)
        left = v < (threshold + nudge * step)[seg]
        n_left = np.add.reduceat(left.astype(np.int64), offs)
        empty = (n_left == 0) | (n_left == sizes)
        if empty.any():  # epsilon exceeds the node's spread: tied records go to the side that splits
            tie_left = np.add.reduceat((v < threshold[seg]).astype(np.int64), offs) == 0
            nudge = np.where(empty, np.where(tie_left, 1, -1), nudge)
            fix = empty[seg]
            left[fix] = (v[fix] < threshold[seg][fix]) | ((v[fix] == threshold[seg][fix]) & tie_left[seg][fix])
            n_left = np.add.reduceat(left.astype(np.int64), offs)
            step = np.where(empty, 0.0, step)
    return threshold + nudge * step, nudge, left, n_left


def _children(active: _Active, left: np.ndarray, n_left: np.ndarray, child_left: np.ndarray, offs: np.ndarray,
              seg: np.ndarray, leaf_size: int, leaves: _Leaves) -> _Active:
    """Partition every segment stably in two (left records first), close the children of at most
    ``leaf_size`` records as leaves; the other children, to be split at the next depth."""
    m = len(active.rows)
    n_right = active.sizes - n_left
    cum_left = np.cumsum(left) - left
    rank_left = cum_left - cum_left[offs][seg]
    rank_right = (np.arange(m) - offs[seg]) - rank_left
    new_pos = np.where(left, offs[seg] + rank_left, offs[seg] + n_left[seg] + rank_right)
    order = np.empty(m, dtype=np.int64)
    order[new_pos] = np.arange(m)
    c_sizes = np.column_stack((n_left, n_right)).ravel()
    c_nodes = np.column_stack((child_left, child_left + 1)).ravel()
    c_gstart = np.column_stack((active.gstart, active.gstart + n_left)).ravel()
    rows = active.rows[order]
    small = c_sizes <= leaf_size
    small_rows = np.repeat(small, c_sizes)
    leaves.close(rows[small_rows], c_sizes[small], c_gstart[small])
    keep_rows = ~small_rows
    return _Active(rows=rows[keep_rows], xa=active.xa[:, order[keep_rows]], sizes=c_sizes[~small],
                   nodes=c_nodes[~small], gstart=c_gstart[~small])


def _splits_of(parts: list[tuple[np.ndarray, ...]]) -> Splits:
    """The per-depth columns of the splits as one :class:`Splits`."""
    columns = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0) for i in range(8)]
    return Splits(*(c.astype(np.float64 if i == 3 else np.int64) for i, c in enumerate(columns)))


def merge_small_leaves(leaf_ids: np.ndarray, boundary_depth: np.ndarray, min_leaf: int) -> np.ndarray:
    """Merge leaves with fewer than ``min_leaf`` records into neighbours until every group has ``min_leaf``.

    Parameters
    ----------
    leaf_ids : ndarray of shape (n,)
        Dense leaf ids 0..L-1 in left-to-right tree order.
    boundary_depth : ndarray of shape (L - 1,)
        For each pair of consecutive leaves (i, i + 1), the depth of the split that separates them (of their
        lowest common ancestor).
    min_leaf : int
        Smallest group; at most n.

    Returns
    -------
    ndarray of shape (n,), int64
        Dense group ids, each group a run of consecutive leaves with at least ``min_leaf`` records (when n >=
        ``min_leaf``).

    Notes
    -----
    In rounds: every group (a run of consecutive leaves) smaller than ``min_leaf`` is joined to the adjacent
    group across the deeper of its two boundaries, i.e. to its closest relative in the tree (a leaf's sibling,
    or the nearest leaf of its sibling's subtree); on equal depths (clusters of one k-means node) to the smaller
    neighbour, then to the left. Each round every small group grows, so there are at most ``min_leaf`` - 1
    rounds, each O(L). Groups have no upper bound beyond what the merges give (at most the sizes of a leaf and
    the small neighbours merged into it).
    """
    leaf_ids = np.asarray(leaf_ids, dtype=np.int64)
    n = len(leaf_ids)
    if n == 0:
        return leaf_ids.copy()
    count = int(leaf_ids.max()) + 1
    sizes = np.bincount(leaf_ids, minlength=count)
    open_ = np.ones(max(count - 1, 0), dtype=bool)  # boundary i (between leaf i and i+1) still separates
    depth = np.asarray(boundary_depth, dtype=np.int64)
    if depth.shape != (max(count - 1, 0),):
        raise ValueError("boundary_depth must hold one depth per pair of consecutive leaves")
    while True:
        # current groups: runs of leaves between open boundaries
        group_of_leaf = np.concatenate(([0], np.cumsum(open_))) if count > 1 else np.zeros(1, dtype=np.int64)
        g = int(group_of_leaf[-1]) + 1
        gsize = np.bincount(group_of_leaf, weights=sizes, minlength=g).astype(np.int64)
        small = np.flatnonzero(gsize < min_leaf)
        if not len(small) or g == 1:
            break
        first_leaf = np.searchsorted(group_of_leaf, np.arange(g), side="left")
        last_leaf = np.searchsorted(group_of_leaf, np.arange(g), side="right") - 1
        open_idx = np.flatnonzero(open_)
        # the boundary left of group j is open_idx[j - 1], right of it open_idx[j]
        has_left = small > 0
        has_right = small < g - 1
        left_b = np.where(has_left, first_leaf[small] - 1, 0)
        right_b = np.where(has_right, last_leaf[small], 0)
        ld = np.where(has_left, depth[np.minimum(left_b, len(depth) - 1)], -2)
        rd = np.where(has_right, depth[np.minimum(right_b, len(depth) - 1)], -2)
        lsize = np.where(has_left, gsize[np.maximum(small - 1, 0)], np.iinfo(np.int64).max)
        rsize = np.where(has_right, gsize[np.minimum(small + 1, g - 1)], np.iinfo(np.int64).max)
        go_right = (rd > ld) | ((rd == ld) & (rsize < lsize))
        close = np.where(go_right, right_b, left_b)
        open_[close] = False
        del open_idx
    group_of_leaf = np.concatenate(([0], np.cumsum(open_))) if count > 1 else np.zeros(1, dtype=np.int64)
    return group_of_leaf[leaf_ids].astype(np.int64)


# -- internals -----------------------------------------------------------------------------------
def group_means(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    count = int(groups.max()) + 1 if len(groups) else 0
    sizes = np.bincount(groups, minlength=count).astype(np.float64)
    means = np.empty((count, x.shape[1]))
    for j in range(x.shape[1]):
        means[:, j] = np.bincount(groups, weights=x[:, j], minlength=count) / np.maximum(sizes, 1.0)
    return means


def _segment_medians(v: np.ndarray, seg: np.ndarray, offs: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The median of v within each segment (segments contiguous in seg order), as np.median computes it."""
    order = np.lexsort((v, seg))
    sv = v[order]
    lo = sv[offs + (sizes - 1) // 2]
    hi = sv[offs + sizes // 2]
    return (lo + hi) / 2.0


def _kmeans_leaves(xa: np.ndarray, rows: np.ndarray, gstart: int, leaf_size: int, weight: np.ndarray, depth: int,
                   rng: np.random.Generator, close, boundary_depth: np.ndarray) -> None:
    """Step 5: divide one node (columns of xa, its rows) into ceil(size / leaf_size) k-means clusters, ordered
    by their centroid on the node's attribute of highest normalized variance, and close them as leaves."""
    size = xa.shape[1]
    z = (xa * np.sqrt(weight)[:, None]).T  # normalized units (constant attributes weigh 0)
    c = min(-(-size // leaf_size), size)
    labels = kmeans_labels(z, c, rng, max_iter=KMEANS_ITERATIONS, tol=0.0, init="kmeans++", assign="all",
                           empty="drop")
    count = int(labels.max()) + 1
    centroids = group_means(z, labels)
    axis = int(np.argmax(z.var(axis=0)))
    rank = np.empty(count, dtype=np.int64)
    rank[np.lexsort((np.arange(count), centroids[:, axis]))] = np.arange(count)
    labels = rank[labels]
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels, minlength=count)
    starts = gstart + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    boundary_depth[starts[1:]] = depth  # deeper than every split above the node
    close(rows[order], sizes, starts)
