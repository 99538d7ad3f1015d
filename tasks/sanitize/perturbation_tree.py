"""Perturbation tree: a kd-tree over the non-confidential attributes whose leaves publish the mean (or a
microaggregate) of the confidential attributes (privacy unit ``generating_group``).

Follows Roy, "Performance Analysis of Clustering in Privacy Preserving Data Mining" (paper 003 in
``/work/shared/papers``), chapter 4 ("Proposed Method": the perturbation tree algorithm, steps 1-6, the worked
example of Table 4.1 and the leaf microaggregation of section 4.1) and section 5.2 (Tables 5.1 and 5.2), which
builds on Sarkar & Liu, "A Tree-Based Data Perturbation Approach for Privacy Preserving Data Mining" (IEEE TKDE
18(9), 2006).

The algorithm (pure NumPy, first section):

1. Min-max normalize every splitting attribute to [0, 1] (step 1).
2. A node is split on the attribute of highest variance of the normalized values within the node (step 2),
   at its mid-range (min + max) / 2 or, as an option, its median (step 3). Records below the threshold go left,
   records above go right. When the threshold equals the value of one or more records, it is moved by
   +epsilon or -epsilon (in normalized units: a share of the attribute's range; the sign drawn at random) so
   that those records lie on one side, as the paper says; a sign that would leave a side empty is replaced by
   the other one (and if both would, because epsilon exceeds the node's spread, the tied records go together to
   the side that keeps both children non-empty).
3. Splitting recurses (step 4) until a node holds at most ``leaf_size`` records, or nothing varies in it (every
   splitting attribute is constant in the node: no hyperplane can separate its records; such a node stays one
   leaf, however large), or it reaches depth ``max_depth`` (the root has depth 0; no bound by default).
4. The paper's step 5 applies k-means to "each node that contains more than a pre-specified maximum number of
   records" but gives no bound. Here the bound is the depth: a node at depth ``max_depth`` with more than
   ``leaf_size`` records whose values vary is divided by k-means (Lloyd's iterations after a k-means++ start,
   seeded, on the normalized attributes) into ceil(size / leaf_size) clusters, which become leaves. Without a
   depth bound (the default) every leaf ends with at most ``leaf_size`` records or is constant, so k-means never
   runs.
5. Leaves with fewer than ``min_leaf`` records are merged with a neighbour (:func:`merge_small_leaves`), so that no
   published value is computed from fewer than ``min_leaf`` records. The paper does not do this (its Table 5.2
   publishes some wages unchanged); a leaf of one record would publish its exact confidential value.
6. The confidential values of each leaf's records are replaced by the leaf mean (the worked example), or, in the
   improved variant (section 4.1: "we microaggregate the data within each leaf using multivariate
   microaggregation"), each leaf is partitioned by MDAV (:func:`ppdp.tasks.sanitize.mdav.mdav_groups`) on the
   standardized confidential attributes into groups of ``group_size`` to 2 * ``group_size`` - 1 records (the
   paper's groups of 2-3 are ``group_size = 2``), each group publishing its mean (step 6).

The mean over all records of every confidential attribute is preserved by both variants (the paper's property 1:
each record gets the mean of a group it belongs to and the groups partition the records); the variance can only
shrink (property 2). Both hold when no confidential cell is missing; see below for missing cells.

Missing confidential values (the paper's data have none). A published confidential value is always the mean of
at least k *present* values of its group, k being the group minimum the sanitizer guarantees (``k``; g =
max(k, ``group_size``) in the microaggregation variant): a group's mean of a confidential attribute is taken over
its records whose value is present, and it is published only when at least k of them are present. A group with
fewer present values publishes that attribute missing on every one of its records (otherwise a group of two
records, one of them missing, would publish the other record's own value); those suppressed cells (the present
input cells published missing) are counted per column in ``Release.suppressed_cells``. A record whose input value
is missing is published missing (never imputed with its group's mean). The groups themselves are formed as
without missing values (MDAV's distances impute a missing value by the column median).

Which attributes the tree splits on. The paper's step 1 normalizes "J attributes, including the confidential
attributes", but its worked example describes the perturbed value as the conditional expectation of the
confidential attribute given the non-confidential ones (E(Income | Age < 40.5; YearEdu < 15)), its chapter 4
says "the confidential attributes are perturbed using all of the nonconfidential attributes", and the groups of
its Table 5.1 are cut along education and experience, not along wages. Splitting on a confidential attribute
would also make a leaf's confidential values alike, so that the published mean would be close to each record's
own value. The sanitizer therefore splits on the non-confidential attributes only: numeric columns by value
(dates as nanoseconds) and ordinal columns by rank (missing values imputed by the column median for splitting
only); nominal columns and the class column are not split on. Every non-confidential column is published
unchanged. The pure functions take any matrix, so a caller who wants the confidential attributes among the
splitting ones can pass them.

The sanitizer (:class:`PerturbationTree`, at the end). Confidential attributes are the columns whose role is
``sensitive``; each must be numeric. Privacy unit ``generating_group``: the records of a leaf (mean variant) or
of a microaggregation group inside a leaf share one published value of every confidential attribute, computed
from those records only, and the release publishes that group's id in :data:`GROUP_COLUMN`. It is not an
``equivalence_class`` release because the non-confidential attributes are published unchanged, so records are
not hidden among each other on the quasi-identifiers; the claim is over the groups: every group has at least
``k`` records (k = the smallest group). Exact guarantee: every published group has at least ``k`` records in
the mean variant, and between g and 2g - 1 records in the microaggregation variant, g = max(k, ``group_size``)
(leaves are merged up to g records; MDAV splits a leaf of 2g or more into groups of g to 2g - 1, a smaller leaf
is one group); the input must hold at least that many records, or the sanitizer raises :class:`InputError`.
``k`` defaults to 2, so that no published value is one record's own; it is a parameter (and tunable) besides
``leaf_size`` because ``leaf_size`` bounds a leaf from above only: a mid-range split can cut off a single
record. In a release spec, ``method.k`` left unset takes ``privacy.k`` (unless k is the tuned parameter).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import Domain, IntRange, MethodParams, Protection, Treatment
from ppdp.schemas.params.perturbation_tree import EPSILON, PerturbationTreeParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import TableEncoder, as_numbers, refuse_huge
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.kmeans import kmeans_labels
from ppdp.tasks.core.labels import column_label
from ppdp.tasks.core.matrix import as_matrix
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.mdav import mdav_groups, mdav_groups_batched, standardize

__all__ = [
    "PerturbationTree",
    "Split",
    "Splits",
    "aggregation_groups",
    "merge_small_leaves",
    "perturb_confidential",
    "tree_leaves",
]

TIE = 1e-10  # normalized variances within this relative difference are equal (the first column is chosen)
BATCH_MDAV = 256  # leaves of up to this many records run MDAV in batches of equal size (larger: one at a time)
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
    x = as_matrix(x, "the matrix")
    leaf_size = _positive_int(leaf_size, "leaf_size")
    min_leaf = _positive_int(min_leaf, "min_leaf")
    if split not in ("midrange", "median"):
        raise ValueError(f"split must be 'midrange' or 'median', got {split!r}")
    epsilon = float(epsilon)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError("epsilon must be a positive number")
    if max_depth is not None:
        max_depth = operator.index(max_depth)
        if max_depth < 0:
            raise ValueError("max_depth must be at least 0")
    n, d = x.shape
    if n == 0:
        raise ValueError("x has no rows")
    if min_leaf > n:
        raise ValueError(f"{n} records cannot form a leaf of at least {min_leaf}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    lo, hi = x.min(axis=0), x.max(axis=0)
    span = hi - lo
    weight = np.where(span > 0, 1.0 / np.where(span > 0, span, 1.0) ** 2, 0.0)  # 1 / range^2 (normalization)
    xt = np.ascontiguousarray(x.T)

    leaf_of = np.empty(n, dtype=np.int64)  # temporary leaf number (in order of creation)
    leaf_start: list[np.ndarray] = []  # per batch of leaves: their global start positions (left-to-right order)
    boundary_depth = np.full(n + 1, -1, dtype=np.int64)  # position of a right child's start -> split depth
    parts: list[tuple[np.ndarray, ...]] = []  # per depth: the columns of Splits
    n_leaves = 0
    next_node = 1

    # the active (to be split) segments: their rows in order, sizes, node ids and global starts
    rows = np.arange(n, dtype=np.int64)
    xa = xt
    sizes = np.array([n], dtype=np.int64)
    nodes = np.array([0], dtype=np.int64)
    gstart = np.array([0], dtype=np.int64)
    depth = 0

    def close(seg_rows: np.ndarray, seg_sizes: np.ndarray, seg_gstart: np.ndarray) -> None:
        nonlocal n_leaves
        count = len(seg_sizes)
        if count == 0:
            return
        leaf_of[seg_rows] = np.repeat(np.arange(n_leaves, n_leaves + count), seg_sizes)
        leaf_start.append(seg_gstart)
        n_leaves += count

    if n <= leaf_size:
        close(rows, sizes, gstart)
        sizes = sizes[:0]
    while len(sizes):
        m, a = len(rows), len(sizes)
        offs = np.zeros(a, dtype=np.int64)
        np.cumsum(sizes[:-1], out=offs[1:])
        seg = np.repeat(np.arange(a), sizes)
        # step 2: the attribute of highest normalized variance in each node (two-pass variance)
        best = np.full(a, -1.0)
        attr = np.zeros(a, dtype=np.int64)
        seg_min = np.zeros(a)
        seg_max = np.zeros(a)
        for j in range(d):
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
        varies = best >= 0
        bounded = max_depth is not None and depth >= max_depth
        # nodes where nothing varies stay leaves; at the depth bound, nodes that vary go to k-means
        if not varies.all() or bounded:
            done = ~varies
            stop = done | varies if bounded else done
            keep_rows = ~stop[seg]
            if bounded:
                for s in np.flatnonzero(varies):
                    lo_s, hi_s = offs[s], offs[s] + sizes[s]
                    _kmeans_leaves(xa[:, lo_s:hi_s], rows[lo_s:hi_s], int(gstart[s]), leaf_size, weight, depth,
                                   rng, close, boundary_depth)
            close(rows[done[seg]], sizes[done], gstart[done])
            rows, xa, seg = rows[keep_rows], xa[:, keep_rows], seg[keep_rows]
            keep = ~stop
            sizes, nodes, gstart = sizes[keep], nodes[keep], gstart[keep]
            attr, seg_min, seg_max = attr[keep], seg_min[keep], seg_max[keep]
            if not len(sizes):
                break
            m, a = len(rows), len(sizes)
            offs = np.zeros(a, dtype=np.int64)
            np.cumsum(sizes[:-1], out=offs[1:])
            seg = np.repeat(np.arange(a), sizes)
        # step 3: the threshold (in the attribute's units) and the values it is compared with
        v = xa[attr[seg], np.arange(m)]
        if split == "midrange":
            threshold = (seg_min + seg_max) / 2.0
        else:
            threshold = _segment_medians(v, seg, offs, sizes)
        tied = np.add.reduceat((v == threshold[seg]).astype(np.int64), offs) > 0
        step = epsilon * span[attr]
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
        used = threshold + nudge * step
        n_right = sizes - n_left
        child_left = next_node + 2 * np.arange(a)
        next_node += 2 * a
        parts.append((nodes, np.full(a, depth, dtype=np.int64), attr, used, nudge.astype(np.int64), child_left,
                      n_left, n_right))
        boundary_depth[gstart + n_left] = depth
        # a stable two-way partition of every segment: left records first
        cum_left = np.cumsum(left) - left
        rank_left = cum_left - cum_left[offs][seg]
        rank_right = (np.arange(m) - offs[seg]) - rank_left
        new_pos = np.where(left, offs[seg] + rank_left, offs[seg] + n_left[seg] + rank_right)
        order = np.empty(m, dtype=np.int64)
        order[new_pos] = np.arange(m)
        c_sizes = np.column_stack((n_left, n_right)).ravel()
        c_nodes = np.column_stack((child_left, child_left + 1)).ravel()
        c_gstart = np.column_stack((gstart, gstart + n_left)).ravel()
        rows = rows[order]
        small = c_sizes <= leaf_size
        small_rows = np.repeat(small, c_sizes)
        close(rows[small_rows], c_sizes[small], c_gstart[small])
        keep_rows = ~small_rows
        rows = rows[keep_rows]
        xa = xa[:, order[keep_rows]]
        sizes, nodes, gstart = c_sizes[~small], c_nodes[~small], c_gstart[~small]
        depth += 1

    starts = np.concatenate(leaf_start)
    rank = np.empty(n_leaves, dtype=np.int64)
    by_position = np.argsort(starts, kind="stable")
    rank[by_position] = np.arange(n_leaves)
    leaf_ids = rank[leaf_of]
    if min_leaf > 1:
        ordered = starts[by_position]
        leaf_ids = merge_small_leaves(leaf_ids, boundary_depth[ordered[1:]], min_leaf)
    columns = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0) for i in range(8)]
    splits = Splits(*(c.astype(np.float64 if i == 3 else np.int64) for i, c in enumerate(columns)))
    return leaf_ids, splits


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


def aggregation_groups(
    y: np.ndarray,
    leaf_ids: np.ndarray,
    aggregation: Literal["mean", "microaggregation"] = "mean",
    group_size: int = 2,
) -> np.ndarray:
    """The groups whose means replace the confidential values (step 6).

    Parameters
    ----------
    y : ndarray of shape (n, c)
        The confidential attributes (finite numbers; used by microaggregation only).
    leaf_ids : ndarray of shape (n,)
        Each record's leaf (dense ids), e.g. from :func:`tree_leaves`.
    aggregation : {"mean", "microaggregation"}
        "mean": the groups are the leaves. "microaggregation": each leaf is partitioned by MDAV on the
        standardized confidential attributes (standardized over all records) into groups of ``group_size`` to
        2 * ``group_size`` - 1 records; a leaf with fewer than 2 * ``group_size`` records is one group (also one
        of fewer than ``group_size``: leaves are not merged here). Leaves of up to ``BATCH_MDAV`` records run
        classic MDAV (the result of :func:`ppdp.tasks.sanitize.mdav.mdav_groups_exact`) batched over leaves of
        equal size; larger leaves run :func:`ppdp.tasks.sanitize.mdav.mdav_groups` one at a time.
    group_size : int
        MDAV's minimum group size (>= 1).

    Returns
    -------
    ndarray of shape (n,), int64
        Dense group ids, numbered leaf by leaf (groups of leaf 0 first).
    """
    leaf_ids = np.asarray(leaf_ids, dtype=np.int64)
    n = len(leaf_ids)
    if aggregation not in ("mean", "microaggregation"):
        raise ValueError(f"aggregation must be 'mean' or 'microaggregation', got {aggregation!r}")
    if n and leaf_ids.min() < 0:
        raise ValueError("leaf ids must be non-negative")
    _, leaf_ids = np.unique(leaf_ids, return_inverse=True)
    leaf_ids = leaf_ids.reshape(-1).astype(np.int64)
    if aggregation == "mean" or n == 0:
        return leaf_ids
    g = _positive_int(group_size, "group_size")
    y = as_matrix(y, "the matrix")
    if len(y) != n:
        raise ValueError("y and leaf_ids must have the same number of rows")
    z = standardize(y)
    sizes = np.bincount(leaf_ids)
    sub = np.zeros(n, dtype=np.int64)  # group number inside the leaf
    if (sizes >= 2 * g).any():
        order = np.argsort(leaf_ids, kind="stable")  # each leaf's records in row order
        starts = np.concatenate(([0], np.cumsum(sizes)))
        for size in np.unique(sizes[sizes >= 2 * g]):
            leaves = np.flatnonzero(sizes == size)
            members = order[starts[leaves][:, None] + np.arange(size)]  # (leaves, size)
            if size <= BATCH_MDAV:
                sub[members] = mdav_groups_batched(z[members], g, centroid="by_rows", compact=False)
            else:
                for row in members:
                    sub[row] = mdav_groups(z[row], g)
    per_leaf = np.zeros(len(sizes), dtype=np.int64)
    np.maximum.at(per_leaf, leaf_ids, sub)
    first = np.concatenate(([0], np.cumsum(per_leaf + 1)))
    return first[leaf_ids] + sub


def perturb_confidential(
    y: np.ndarray,
    leaf_ids: np.ndarray,
    aggregation: Literal["mean", "microaggregation"] = "mean",
    group_size: int = 2,
) -> np.ndarray:
    """Replace each record's confidential values by the mean of its group (:func:`aggregation_groups`).

    Parameters
    ----------
    y : ndarray of shape (n,) or (n, c)
        The confidential attributes (finite numbers).
    leaf_ids, aggregation, group_size
        As in :func:`aggregation_groups`.

    Returns
    -------
    ndarray, float64, of the shape of ``y``
        The perturbed values (not rounded).
    """
    y = np.asarray(y)
    one = y.ndim == 1
    matrix = as_matrix(y[:, None] if one else y, "the matrix")
    groups = aggregation_groups(matrix, leaf_ids, aggregation, group_size)
    out = _group_means(matrix, groups)[groups]
    return out[:, 0] if one else out


# ---------------------------------------------------------------------------------------------------- internals
def _positive_int(value: int, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer")
    value = operator.index(value)
    if value < 1:
        raise ValueError(f"{what} must be at least 1, got {value}")
    return value


def _group_means(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
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
    centroids = _group_means(z, labels)
    axis = int(np.argmax(z.var(axis=0)))
    rank = np.empty(count, dtype=np.int64)
    rank[np.lexsort((np.arange(count), centroids[:, axis]))] = np.arange(count)
    labels = rank[labels]
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels, minlength=count)
    starts = gstart + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    boundary_depth[starts[1:]] = depth  # deeper than every split above the node
    close(rows[order], sizes, starts)


# -- the sanitizer ---------------------------------------------------------------------------------
class PerturbationTree(Sanitizer):
    """Perturbation tree with leaf means or leaf microaggregation (privacy unit ``generating_group``); see the
    module docstring for the algorithm, the attributes split on and the guarantee.

    Parameters
    ----------
    leaf_size : int
        A node with at most this many records is not split (the paper's leaf size, >= 2). Larger is safer:
        larger leaves publish means over more records.
    k : int, optional
        The smallest published group (>= 2; None: 2 unless tuned). Leaves with fewer records are merged with
        their closest relative in the tree (:func:`merge_small_leaves`); in the microaggregation variant leaves
        are merged up to g = max(k, group_size) records and MDAV forms groups of g to 2g - 1.
    split : {"midrange", "median"}
        Where a node is cut on its attribute of highest normalized variance (the paper: either).
    aggregation : {"mean", "microaggregation"}
        "mean": every record of a leaf publishes the leaf mean of each confidential attribute (the worked
        example, Table 4.1). "microaggregation": MDAV inside each leaf (section 4.1, Table 5.2).
    group_size : int
        MDAV's group size inside a leaf (groups of group_size to 2 * group_size - 1 records; the paper's 2-3 is
        2). Used by "microaggregation" only.
    epsilon : float
        The threshold nudge when records lie on the threshold, as a share of the attribute's range.
    max_depth : int, optional
        Depth bound (root 0); a node at this depth with more than ``leaf_size`` records is divided by k-means
        (the paper's step 5). None: no bound (k-means never runs).
    seed : int
        Seed of the nudge directions, the k-means starts and the published row order.

    Notes
    -----
    Confidential attributes: the columns whose role is ``sensitive`` (at least one; each numeric). Missing
    confidential values: every published confidential value is the mean of at least k present values of its
    group (k = :meth:`smallest_group`); a group with fewer present values publishes that column missing for the
    whole group (counted in ``Release.suppressed_cells``); a record whose input value is missing stays missing;
    MDAV's distances impute a missing value by the column median (see the module docstring). Infinite values and
    values beyond ±1e100 (the ingest step's bound) in a confidential or numeric splitting column are refused with
    :class:`InputError` before any work. Integer confidential columns are published as floats (the
    paper publishes 61.3 for incomes 65, 57 and 62): rounding would move the mean. Splitting attributes: the
    other published attributes that are numeric (dates as nanoseconds) or ordinal (by rank), missing values
    imputed by the median for splitting; no splitting attribute means one leaf (every record gets the overall
    mean, or MDAV over all records). Treatments: confidential columns "aggregated", every other column "kept".
    """

    name: ClassVar[str] = "perturbation_tree"
    description: ClassVar[str] = "perturbation tree: records partitioned by a tree, values replaced within each leaf"
    Params: ClassVar[type[MethodParams]] = PerturbationTreeParams
    protects: ClassVar[Protection] = "attribute"  # the non-confidential attributes are published as they are

    def __init__(
        self,
        *,
        leaf_size: int | None = None,
        k: int | None = None,
        split: Literal["midrange", "median"] = "midrange",
        aggregation: Literal["mean", "microaggregation"] = "mean",
        group_size: int = 2,
        epsilon: float = EPSILON,
        max_depth: int | None = None,
        seed: int = 0,
    ) -> None:
        self.leaf_size = leaf_size
        self.k = k
        self.split = split
        self.aggregation = aggregation
        self.group_size = group_size
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.seed = seed

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        high = IntRange(low=2, high=max(2, len(frame) // 2))
        return {"leaf_size": high, "k": high.model_copy()}

    def smallest_group(self) -> int:
        """The guaranteed smallest published group: k (default 2), or max(k, group_size) for microaggregation."""
        k = 2 if self.k is None else int(self.k)
        return max(k, int(self.group_size)) if self.aggregation == "microaggregation" else k

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.leaf_size is None:
            raise SpecError("perturbation_tree: leaf_size is required (set method.leaf_size or a tuning strategy)")
        n = len(frame)
        smallest = self.smallest_group()
        confidential = self._confidential(frame, roles)
        if n < smallest:
            raise InputError(f"perturbation_tree: {n} records cannot form a group of {smallest}")
        kinds = roles.kinds()
        excluded = set(confidential) | set(roles.identifiers) | set(roles.dropped)
        splitting = [c for c in roles.attributes if c in frame.columns and c not in excluded
                     and (kinds[c] is ColumnKind.ordinal or (kinds[c] is ColumnKind.numeric and (
                         pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_datetime64_any_dtype(frame[c]))))]
        refuse_huge("perturbation_tree", frame, [c for c in confidential + splitting if kinds[c] is ColumnKind.numeric])
        if splitting:
            x = TableEncoder(columns=splitting, kinds=kinds, orders=roles.orders(), standardize=False).fit_transform(
                frame)
            leaves, _ = tree_leaves(x, int(self.leaf_size), split=self.split, epsilon=float(self.epsilon),
                                    min_leaf=smallest, max_depth=self.max_depth, seed=rng)
        else:
            leaves = np.zeros(n, dtype=np.int64)
        y = np.column_stack([as_numbers(frame[c]) for c in confidential])
        missing = np.isnan(y)
        if self.aggregation == "microaggregation":
            medians = np.array([np.median(col[~np.isnan(col)]) if (~np.isnan(col)).any() else 0.0 for col in y.T])
            groups = aggregation_groups(np.where(missing, medians, y), leaves, "microaggregation", smallest)
        else:
            groups = aggregation_groups(y, leaves, "mean")
        count = int(groups.max()) + 1
        out = frame.copy()
        treatments: dict[str, Treatment] = {c: "kept" for c in frame.columns}
        suppressed: dict[str, int] = {}
        for j, name in enumerate(confidential):
            present = ~missing[:, j]
            sums = np.bincount(groups[present], weights=y[present, j], minlength=count)
            counts = np.bincount(groups[present], minlength=count)
            shown = counts >= smallest  # a mean of fewer present values could be one record's own value
            means = np.where(shown, sums / np.maximum(counts, 1), np.nan)
            values = means[groups]
            values[~present] = np.nan  # a missing input value stays missing
            out[name] = values
            treatments[name] = "aggregated"
            hidden = int(counts[~shown].sum())
            if hidden:
                suppressed[name] = hidden
        return Release(frame=out, unit="generating_group", treatments=treatments,
                       row_source=np.arange(n, dtype=np.int64), group=groups, input_group=groups,
                       suppressed_cells=suppressed)

    def _confidential(self, frame: pd.DataFrame, roles: Roles) -> list[str]:
        names = [c for c in roles.names(Role.sensitive) if c in frame.columns and c not in roles.dropped]
        if not names:
            raise InputError("perturbation_tree: no confidential column (a column whose role is sensitive) to "
                             "perturb")
        kinds = roles.kinds()
        for name in names:
            series = frame[name]
            if kinds[name] is not ColumnKind.numeric or not pd.api.types.is_numeric_dtype(series) \
                    or pd.api.types.is_bool_dtype(series):
                tag = roles.get(name)
                position = tag.position + 1 if tag.position is not None else list(frame.columns).index(name) + 1
                raise InputError(f"perturbation_tree: confidential {column_label(position, name)} is not numeric: "
                                 "a leaf mean needs numbers")
        return names
