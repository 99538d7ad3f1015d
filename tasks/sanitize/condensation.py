"""Condensation: replace each group of at least k similar records by synthetic records with the group's
mean and covariance.

Follows Kim, Chen & Gangopadhyay (2012), ``../shared/papers/000_74849bd42309de0e.txt``:

* ``original`` (Aggarwal & Yu 2004, section "Condensation method"): repeatedly pick a random unassigned record
  as a seed and give it its k-1 nearest unassigned records; the fewer than k records left join the group of
  their nearest seed. Every group has at least k records.
* ``modified`` (Banerjee et al. 2010, the paper's Figure 3): k-means with floor(n/k) clusters on weighted
  Euclidean distance (the class label, when present, one-hot with weight ``class_weight``); clusters sorted by
  size ascending; each cluster with fewer than k records takes the k-|C| records closest to its centre from
  clusters larger than k, never pulling a donor below k.
* ``class_wise`` (Figure 5): the modified method run separately inside each class with group size k; no group
  mixes classes. The paper's approximate GCD g* = t * GCD(floor(|C1|/t), ..., floor(|Cm|/t)) is the method's
  suggestion for k (:meth:`Condensation.suggest`, the tuner's ``suggested`` strategy).
* synthesis (Figure 3, steps 2-1 to 2-6) for every variant: per group, mean and covariance; eigen-decompose;
  draw |C| points with independent coordinates along the eigenvectors and variance equal to each eigenvalue
  (uniform on [-sqrt(3 lambda), sqrt(3 lambda)] as in Aggarwal & Yu, or gaussian); the draws are centred so
  each synthetic group keeps its group's mean exactly; rotate back and add the mean.

Encoding (see :mod:`tasks.core.encoding`): every published attribute except the class (quasi-identifiers,
sensitive and other columns alike: a raw value beside a synthetic record would link it back) is encoded to
numbers and standardized, so that distances and the principal axes are not dominated by one unit of measure;
synthesis happens in that space and the result is decoded to valid values (nominal columns: the category with
the largest synthetic indicator; ordinal: the nearest rank; numbers clipped to the column's range and rounded if
they were integers). The class label is copied in ``class_wise`` (groups are pure); in the other variants it is
synthesized as a one-hot block like any nominal column. Pseudonymized identifier columns pass through with
their record.

Degenerate groups: a constant column has a zero eigenvalue, so its synthetic values equal the constant; a
singular covariance simply has zero eigenvalues (no spread along those axes); k identical rows produce k
copies of that row (still k-anonymous). Negative eigenvalues from rounding are clipped to zero, missing values
are imputed by the encoder, so no NaN can be produced.
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Domain, IntRange, MethodParams, Treatment
from ppdp.schemas.params.condensation import CondensationParams, Variant
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.kmeans import KD_MAX_DIMS as _KD_MAX_DIMS
from ppdp.tasks.core.kmeans import NEIGHBOUR_CENTRES as _NEIGHBOUR_CENTRES
from ppdp.tasks.core.kmeans import batch_bytes as _batch_bytes
from ppdp.tasks.core.kmeans import cluster_sums as _cluster_sums
from ppdp.tasks.core.kmeans import kmeans_labels
from ppdp.tasks.core.kmeans import nearest_indices as _nearest
from ppdp.tasks.core.threads import single_threaded_blas
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.keeping import Kept, frozen_keys, frozen_plan, frozen_release


# -- group size ------------------------------------------------------------------------------------
def approximate_gcd(class_sizes: list[int] | np.ndarray, threshold: int) -> int:
    """The paper's approximate GCD: ``t * GCD(floor(|C1|/t), ..., floor(|Cm|/t))`` (Theorem 1).

    >>> approximate_gcd([15, 10], 5)
    5
    >>> approximate_gcd([1001, 501], 20)
    500
    """
    t = int(threshold)
    if t < 1:
        raise ValueError("threshold t must be at least 1")
    units = [int(s) // t for s in class_sizes]
    if not units or min(units) < 1:
        raise InputError(f"approximate GCD: a class has fewer records than the threshold t={t}")
    return t * reduce(math.gcd, units)


# -- grouping --------------------------------------------------------------------------------------
class _DonorIndex:
    """Nearest-record search restricted to records of clusters that still have surplus (size > k).

    Built over the donor records only; as donors give records away, entries go stale (filtered by the caller)
    and the index is rebuilt once more than half of it is stale. Returns global row indices.
    """

    def __init__(self, x: np.ndarray, labels: np.ndarray, sizes: np.ndarray, k: int) -> None:
        self.x, self.labels, self.sizes, self.k = x, labels, sizes, k
        self.rebuild()

    def rebuild(self) -> None:
        from scipy.spatial import cKDTree  # heavy: SciPy, loaded when neighbours are searched

        self.pool = np.flatnonzero(self.sizes[self.labels] > self.k)
        sub = self.x[self.pool]
        self.sub = sub
        self.tree = cKDTree(sub) if sub.shape[1] <= _KD_MAX_DIMS and len(sub) else None
        self.sq = None if self.tree is not None else np.einsum("ij,ij->i", sub, sub)

    def stale(self) -> bool:
        return int(np.count_nonzero(self.sizes[self.labels[self.pool]] <= self.k)) * 2 > len(self.pool)

    def query(self, points: np.ndarray, m: int) -> np.ndarray:
        if len(self.pool) == 0:
            return np.zeros((len(np.atleast_2d(points)), 0), dtype=np.int64)
        return self.pool[_nearest(self.sub, points, min(m, len(self.pool)), self.tree, self.sq)]


def modified_groups(x: np.ndarray, k: int, seed: int, max_iter: int = 20) -> np.ndarray:
    """Figure 3, step 1: k-means with floor(n/k) clusters; then, smallest cluster first, each cluster with
    fewer than k records takes the k-|C| records nearest its centre from clusters larger than k, never
    pulling a donor below k.

    Returns dense group ids; every group has at least k rows.
    """
    from scipy.spatial import cKDTree  # heavy: SciPy, loaded when neighbours are searched

    n = len(x)
    if n < k:
        raise InputError(f"condensation: {n} records cannot form a group of k={k}")
    n_clusters = n // k
    if n_clusters <= 1:
        return np.zeros(n, dtype=np.int64)
    labels = kmeans_labels(x, n_clusters, seed, max_iter)
    sizes = np.bincount(labels, minlength=n_clusters)
    centres = _cluster_sums(labels, x, n_clusters) / np.maximum(sizes, 1)[:, None]
    small = [int(c) for c in np.argsort(sizes, kind="stable") if 0 < sizes[c] < k]
    if not small:
        return _dense(labels)
    # candidates first come from the members of the clusters whose centres are nearest (cheap, local); the
    # index over every donor record answers only when those are exhausted
    m_near = min(4 * _NEIGHBOUR_CENTRES, n_clusters)
    tree_c = cKDTree(centres) if x.shape[1] <= _KD_MAX_DIMS else None
    sq_c = None if tree_c is not None else np.einsum("ij,ij->i", centres, centres)
    near_clusters = _nearest(centres, centres[small], m_near, tree_c, sq_c)  # (S, m_near)
    order = np.argsort(labels, kind="stable")
    starts = np.r_[0, np.cumsum(sizes)]
    donors_index: _DonorIndex | None = None
    for i, c in enumerate(small):
        need = k - sizes[c]
        nb = near_clusters[i]
        nb = nb[sizes[nb] > k]
        lengths = starts[nb + 1] - starts[nb]
        if lengths.sum():
            offs = np.repeat(starts[nb] - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(lengths.sum())
            members = order[offs]
            diff = x[members] - centres[c]
            members = members[np.argsort(np.einsum("ij,ij->i", diff, diff), kind="stable")]
            take = _allowed_takes(members, labels, sizes, k, need)
        else:
            take = members = np.zeros(0, dtype=np.int64)
        if len(take) < need:
            if donors_index is None:
                donors_index = _DonorIndex(x, labels, sizes, k)
            elif donors_index.stale():
                donors_index.rebuild()
            m = 2 * k + 64
            while True:
                take = _allowed_takes(donors_index.query(centres[c], m)[0], labels, sizes, k, need)
                if len(take) == need or m >= len(donors_index.pool):
                    break
                m *= 4
            if len(take) < need:
                donors_index.rebuild()
                take = _allowed_takes(donors_index.query(centres[c], n)[0], labels, sizes, k, need)
        if len(take) < need:  # cannot happen: floor(n/k) clusters always leave enough surplus
            raise RuntimeError("condensation: not enough records to top up a group")
        np.subtract.at(sizes, labels[take], 1)
        labels[take] = c
        sizes[c] = k
    return _dense(labels)


def _allowed_takes(cand: np.ndarray, labels: np.ndarray, sizes: np.ndarray, k: int, need: int) -> np.ndarray:
    """The first ``need`` candidates (nearest first) a donor may give: the j-th record offered by a donor goes
    only while the donor keeps at least k."""
    donors = labels[cand]
    ok = sizes[donors] > k
    cand, donors = cand[ok], donors[ok]
    if not len(cand):
        return cand
    order = np.argsort(donors, kind="stable")
    sd = donors[order]
    starts = np.r_[0, np.flatnonzero(sd[1:] != sd[:-1]) + 1]
    ranks = np.empty(len(donors), dtype=np.int64)
    ranks[order] = np.arange(len(sd)) - np.repeat(starts, np.diff(np.r_[starts, len(sd)]))
    return cand[ranks < (sizes[donors] - k)][:need]


def _dense(labels: np.ndarray) -> np.ndarray:
    _, dense = np.unique(labels, return_inverse=True)
    return dense.reshape(-1).astype(np.int64)


def original_groups(x: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Aggarwal & Yu: a random unassigned record seeds a group and takes its k-1 nearest unassigned records,
    while at least k records are unassigned; the rest join the group of their nearest seed.

    Returns dense group ids; every group has at least k rows. The loop runs once per group, not per record.
    """
    from scipy.spatial import cKDTree  # heavy: SciPy, loaded when neighbours are searched

    n = len(x)
    if n < k:
        raise InputError(f"condensation: {n} records cannot form a group of k={k}")
    rng = np.random.default_rng(seed)
    labels = np.full(n, -1, dtype=np.int64)
    seeds: list[int] = []
    low_dim = x.shape[1] <= _KD_MAX_DIMS
    pool = np.arange(n)  # rows not yet known to be assigned (what the tree, if any, was built on)
    tree = cKDTree(x) if low_dim else None
    remaining = n
    for s in rng.permutation(n):
        if remaining < k:
            break
        if labels[s] >= 0:
            continue
        m = 2 * k
        while True:
            if tree is None:
                sub = x[pool]
                local = _nearest(sub, x[s], min(m, len(pool)), None, np.einsum("ij,ij->i", sub, sub))[0]
            else:
                local = _nearest(x, x[s], min(m, len(pool)), tree, None)[0]
            cand = pool[local]
            cand = cand[(labels[cand] < 0) & (cand != s)]
            if len(cand) >= k - 1 or m >= len(pool):
                break
            m *= 4
        take = np.r_[s, cand[: k - 1]]
        labels[take] = len(seeds)
        seeds.append(int(s))
        remaining -= len(take)
        if tree is None:
            pool = pool[labels[pool] < 0]
        elif remaining < len(pool) // 2:  # rebuild on the unassigned rows: queries stay short
            pool = np.flatnonzero(labels < 0)
            tree = cKDTree(x[pool]) if len(pool) else None
            if tree is None:
                break
    left = np.flatnonzero(labels < 0)
    if left.size:
        _, nearest_seed = cKDTree(x[np.asarray(seeds)]).query(x[left], k=1)
        labels[left] = np.asarray(nearest_seed, dtype=np.int64)
    return labels


# -- synthesis -------------------------------------------------------------------------------------
def synthesize(
    x: np.ndarray, groups: np.ndarray, rng: np.random.Generator, distribution: str = "uniform",
    inplace: bool = False,
) -> np.ndarray:
    """Replace each group's rows by as many synthetic rows with the group's mean and covariance.

    Row i of the result is a synthetic record of group ``groups[i]``. Groups of equal size are processed
    together (batched covariance and eigen-decomposition); no Python loop over records. ``inplace=True``
    overwrites ``x`` (a float64 array) instead of allocating the result: each batch is read before it is
    written, and batches never share rows.

    A group of ``size`` rows has a covariance of rank at most ``size - 1``. When the group is small beside the
    number of columns d (one-hot encoded categories make d large; see :func:`_gram_route`), its non-zero
    eigenvalues are found from the ``size x size`` Gram matrix ``C C^T / size`` of the centred rows C instead of
    the ``d x d`` covariance ``C^T C / size``: the same non-zero spectrum, and row j of ``u_j^T C`` is
    ``sqrt(size * lambda_j)`` times the unit eigenvector v_j. On Adult (d = 90) at k = 10 that takes 0.1 s
    instead of 4 s. The random draws are the same either way (a ``(groups, size, d)`` block per batch; the draws
    along the d - size zero eigenvalues, which ``eigh`` lists first, are multiplied by zero), but an
    eigenvector's sign is arbitrary and the Gram route cannot reproduce the one LAPACK picks for the covariance,
    so its signs follow :func:`_sign_weights` (stable under rounding). Every other group takes the covariance
    route, unchanged: the same records as before the Gram route existed, bit for bit.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    out = x if inplace else np.empty_like(x)
    if n == 0:
        return out
    order = np.argsort(groups, kind="stable")
    ids, starts, counts = np.unique(groups[order], return_index=True, return_counts=True)
    for size in np.unique(counts).tolist():
        which = np.flatnonzero(counts == size)
        per_group = max(1, int(_batch_bytes(x) // (8 * (size * d * 3 + d * d * 2))))
        for b in range(0, len(which), per_group):
            sel = which[b : b + per_group]
            rows = order[starts[sel][:, None] + np.arange(size)[None, :]]  # (G, size)
            block = x[rows]  # (G, size, d)
            mean = block.mean(axis=1, keepdims=True)
            centred = block - mean
            if _gram_route(size, d):
                out[rows] = _synthesize_small(centred, rng, distribution) + mean
                continue
            cov = np.einsum("gsi,gsj->gij", centred, centred) / size
            eigval, eigvec = np.linalg.eigh(cov)
            eigval = np.clip(eigval, 0.0, None)
            if distribution == "gaussian":
                draw = rng.standard_normal((len(sel), size, d)) * np.sqrt(eigval)[:, None, :]
            else:
                half = np.sqrt(3.0 * eigval)[:, None, :]
                draw = rng.uniform(-1.0, 1.0, (len(sel), size, d)) * half
            draw -= draw.mean(axis=1, keepdims=True)  # the synthetic group keeps the mean exactly
            out[rows] = np.einsum("gsk,gik->gsi", draw, eigvec) + mean
    return out


_GRAM_MIN_COLUMNS = 48  # below, the covariance route costs under 0.15 ms a group (one BLAS thread): no need


def _gram_route(size: int, d: int) -> bool:
    """Whether :func:`synthesize` takes the Gram route for groups of ``size`` rows in d columns: at least
    :data:`_GRAM_MIN_COLUMNS` columns and at least twice as many columns as rows (an eigen-decomposition 8 times
    smaller or more). Elsewhere the gain is small, and the covariance route keeps earlier releases' records: the
    paper's data sets (at most 40 numeric columns) never take the Gram route, Adult's 90 encoded columns do for
    k up to 45."""
    return d >= _GRAM_MIN_COLUMNS and 2 * size <= d


def _synthesize_small(centred: np.ndarray, rng: np.random.Generator, distribution: str) -> np.ndarray:
    """Centred synthetic rows of small groups, (G, size, d), through the Gram matrix (see :func:`synthesize`); the
    same draws from ``rng`` as the covariance route."""
    g, size, d = centred.shape
    spread = 1.0 if distribution == "gaussian" else 3.0  # a draw's variance: N(0, 1), or U(-1, 1) times sqrt(3)
    eigval, u = np.linalg.eigh(np.matmul(centred, centred.transpose(0, 2, 1)) / size)
    axes = np.matmul(u.transpose(0, 2, 1), centred)  # (G, size, d): axes[j] = sqrt(size * lambda_j) v_j
    scale = np.where(eigval > 0, np.sqrt(spread / size), 0.0)  # sqrt(spread lambda_j) / sqrt(size lambda_j)
    scale *= np.where(axes @ _sign_weights(d) < 0, -1.0, 1.0)
    if distribution == "gaussian":
        draw = rng.standard_normal((g, size, d))
    else:
        draw = rng.uniform(-1.0, 1.0, (g, size, d))
    draw = draw[:, :, d - size :] * scale[:, None, :]  # the covariance's other d - size eigenvalues are zero
    draw -= draw.mean(axis=1, keepdims=True)  # the synthetic group keeps the mean exactly
    return np.matmul(draw, axes)


def _sign_weights(d: int) -> np.ndarray:
    """A fixed vector with no structure (1 + the fractional parts of j times the golden ratio): each eigenvector
    is taken with the sign that makes its dot product with this vector positive. Eigenvectors are defined up to
    sign and LAPACK's choice changes with rounding; a fixed rule keeps the records the same for the same seed.
    (Eigenvectors of a repeated eigenvalue remain defined only up to a rotation.)"""
    return 1.0 + (np.arange(1, d + 1) * 0.6180339887498949) % 1.0


# -- the sanitizer ---------------------------------------------------------------------------------
class Condensation(Sanitizer):
    """Condensation-based sanitization (original, modified or class-wise); see the module docstring.

    Parameters
    ----------
    variant : {"class_wise", "modified", "original"}
    k : int
        Group size (at least 2): every generating group has at least k records.
    class_weight : float
        Weight of the class label in the grouping distance (``modified`` and ``original``).
    distribution : {"uniform", "gaussian"}
        Distribution of synthetic coordinates along each eigenvector.
    kmeans_max_iter : int
        Iteration cap of k-means (``modified`` and ``class_wise``).
    seed : int
        Seed of every random choice (k-means starts, seeds, synthetic draws, row order).

    Notes
    -----
    With the series option ``keep_groups`` each record keeps its generating group of the dataset's previous
    release (:meth:`_sanitize_keeping`).
    """

    name: ClassVar[str] = "condensation"
    description: ClassVar[str] = ("condensation: synthetic records generated from groups of at least k similar "
                                  "records (Aggarwal and Yu)")
    Params: ClassVar[type[MethodParams]] = CondensationParams

    variant: Variant
    k: int | None
    class_weight: float
    distribution: Literal["uniform", "gaussian"]
    kmeans_max_iter: int

    @property
    def needs_class(self) -> bool:  # type: ignore[override]
        return self.variant == "class_wise"

    def _class_counts(self, frame: pd.DataFrame, roles: Roles) -> np.ndarray:
        cls = roles.class_column
        if self.variant != "class_wise" or cls is None or cls not in frame.columns:
            return np.array([len(frame)])
        return frame[cls].value_counts(dropna=False).to_numpy()

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        """k from 2 to the smallest class (class_wise) or the table size."""
        return {"k": IntRange(low=2, high=max(2, int(self._class_counts(frame, roles).min())))}

    def suggest(self, frame: pd.DataFrame, roles: Roles, threshold: float | None) -> tuple[dict[str, Any], str]:
        """Paper 000's approximate GCD: k = t * GCD(floor(|C1|/t), ..., floor(|Cm|/t)) over the class sizes."""
        t = int(threshold or 2)
        return ({"k": approximate_gcd(self._class_counts(frame, roles).tolist(), t)},
                f"approximate GCD t*GCD(floor(|Ci|/t)) with t={t}")

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        with single_threaded_blas():  # thousands of small products and eigen-decompositions: see tasks.core.threads
            return self._condense(frame, roles, rng)

    def _sanitize_keeping(self, source: pd.DataFrame, roles: Roles, rng: np.random.Generator,
                          previous: Kept) -> Release:
        """Condensation with the previous release's generating groups kept frozen (series ``keep_groups``).

        The rule (:mod:`ppdp.tasks.sanitize.keeping`, after m-invariance, Xiao & Tao, SIGMOD 2007): a previous
        group with at least k present members publishes exactly its previous synthetic rows (those beyond its
        present members are counterfeits: the rows of members who left); a group with fewer is retired and its
        present members held; records in no earlier group are condensed among themselves as :meth:`_sanitize`
        condenses a table (``class_wise``: within their class) when at least k are new (of their class), else held
        until k can form a group; a record grouped in an earlier release and in no kept group now stays held. A
        previous row's group is its published group id. Raises :class:`InputError` when no row can be published or
        the previous table's columns differ.
        """
        if self.k is None:
            raise SpecError("condensation: k is required (set method.k or a tuning strategy)")
        strata = None
        if self.variant == "class_wise":  # the class column is checked by Sanitizer.sanitize (needs_class)
            strata = pd.factorize(source[roles.class_column], sort=True)[0]
        table_keys, member_keys = frozen_keys(previous, [], self.name, by_group=True)
        plan = frozen_plan(previous.groups, member_keys, previous.seen, table_keys, int(self.k), strata)
        with single_threaded_blas():
            return frozen_release(previous, plan, source, lambda new: self._condense(new, roles, rng),
                                  self._treatments(source, roles), "generating_group", self.name)

    def _treatments(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Treatment]:
        """Each column's treatment: the attributes synthesized; the class kept (``class_wise``) or synthesized."""
        attrs = [c for c in roles.attributes if c in frame.columns and c not in roles.identifiers]
        out: dict[str, Treatment] = {a: "synthesized" for a in attrs}
        cls = roles.class_column
        if cls is not None and cls in frame.columns:
            out[cls] = "kept" if self.variant == "class_wise" else "synthesized"
        for name in frame.columns:
            out.setdefault(name, "kept")
        return out

    def _condense(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.k is None:
            raise SpecError("condensation: k is required (set method.k or a tuning strategy)")
        k = int(self.k)
        cls = roles.class_column
        attrs = [c for c in roles.attributes if c in frame.columns and c not in roles.identifiers]
        kinds = roles.kinds()
        encoder = TableEncoder(columns=attrs, kinds=kinds, orders=roles.orders()).fit(frame)
        x = encoder.transform(frame)
        n = len(frame)
        treatments = self._treatments(frame, roles)

        if self.variant == "class_wise":  # the class column is checked by Sanitizer.sanitize (needs_class)
            assert cls is not None
            labels = frame[cls]
            codes, uniques = pd.factorize(labels, sort=True)
            sizes = np.bincount(codes, minlength=len(uniques))
            if sizes.min() < k:
                raise InputError(
                    f"condensation class_wise: a class of '{cls}' has {int(sizes.min())} records, fewer than k={k}"
                )
            groups = np.empty(n, dtype=np.int64)
            offset = 0
            class_seeds = rng.integers(0, 2**31 - 1, size=len(uniques))
            for c in range(len(uniques)):  # one k-means per class: no group mixes classes
                idx = np.flatnonzero(codes == c)
                g = modified_groups(x[idx], k, int(class_seeds[c]), self.kmeans_max_iter)
                groups[idx] = g + offset
                offset += int(g.max()) + 1
            synthesize(x, groups, rng, self.distribution, inplace=True)
            columns = encoder.inverse_columns(x)
            del x  # free the encoded matrix before the frame is built
            columns[cls] = labels.to_numpy()
        else:
            if n < k:
                raise InputError(f"condensation: {n} records cannot form a group of k={k}")
            if cls is not None:
                cls_enc = TableEncoder(columns=[cls], kinds={cls: ColumnKind.nominal}, standardize=False).fit(frame)
                onehot = cls_enc.transform(frame)
                space = np.hstack([x, self.class_weight * onehot])
            else:
                cls_enc, onehot, space = None, None, x
            seed = int(rng.integers(0, 2**31 - 1))
            if self.variant == "modified":
                def grouping(z: np.ndarray) -> np.ndarray:
                    return modified_groups(z, k, seed, self.kmeans_max_iter)
            else:
                def grouping(z: np.ndarray) -> np.ndarray:
                    return original_groups(z, k, seed)
            groups = grouping(space)
            width = x.shape[1]
            full = x if onehot is None else np.hstack([x, onehot])
            del x, space
            synthesize(full, groups, rng, self.distribution, inplace=True)
            columns = encoder.inverse_columns(full[:, :width])
            if cls_enc is not None and cls is not None:  # a class column is encoded when there is one
                columns[cls] = cls_enc.inverse_columns(full[:, width:])[cls]
            del full  # free the encoded matrix before the frame is built
        data = {}
        for name in frame.columns:  # input column order; pseudonymized identifiers travel with their record
            values = columns.pop(name) if name in columns else frame[name].to_numpy()
            data[name] = _as_dtype(values, frame[name].dtype)
        return Release(frame=pd.DataFrame(data, copy=False), unit="generating_group", treatments=treatments,
                       row_source=np.full(n, -1, dtype=np.int64), group=groups, input_group=groups)


def _as_dtype(values: np.ndarray, dtype) -> object:
    """Decoded values in the input column's dtype where they fit it (else as they are)."""
    if values.dtype == dtype:
        return values
    try:
        return pd.array(values, dtype=dtype)
    except (TypeError, ValueError):
        return values
