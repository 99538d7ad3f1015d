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

from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import Domain, IntRange, MethodParams, Protection, Treatment
from ppdp.schemas.params.perturbation_tree import PerturbationTreeParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import TableEncoder, as_numbers, refuse_huge
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.labels import column_label
from ppdp.tasks.core.matrix import as_matrix, positive_int
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.mdav import mdav_groups, mdav_groups_batched, standardize
from ppdp.tasks.sanitize.perturbation_tree_growth import (
    Split,
    Splits,
    group_means,
    merge_small_leaves,
    tree_leaves,
)

__all__ = [
    "PerturbationTree",
    "Split",
    "Splits",
    "aggregation_groups",
    "merge_small_leaves",
    "perturb_confidential",
    "tree_leaves",
]

BATCH_MDAV = 256  # leaves of up to this many records run MDAV in batches of equal size (larger: one at a time)


# -- algorithm (steps 6-7; steps 1-5, tree_leaves, in perturbation_tree_growth) ----------------------------
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
    g = positive_int(group_size, "group_size")
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
    out = group_means(matrix, groups)[groups]
    return out[:, 0] if one else out


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

    leaf_size: int | None
    k: int | None
    split: Literal["midrange", "median"]
    aggregation: Literal["mean", "microaggregation"]
    group_size: int
    epsilon: float
    max_depth: int | None

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
