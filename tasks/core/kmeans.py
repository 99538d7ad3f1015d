"""Lloyd's k-means: the one implementation, used by condensation (``modified`` and ``class_wise`` grouping) and by
the perturbation tree (nodes at the depth bound, its step 5).

The two callers keep their own variant through explicit parameters (every difference changes which records end
up together, so none is a default the other inherits):

* condensation: ``init="kd"`` (:func:`~ppdp.tasks.core.partition.balanced_partition`) or ``"random"``,
  ``assign="near"`` (each row compared with the centres nearest its current centre, float32 distances),
  ``empty="reseed"`` (an empty cluster takes the rows farthest from their centre), stops when at most ``tol`` of
  the rows change cluster;
* perturbation tree: ``init="kmeans++"`` (drawn from the caller's generator), ``assign="all"`` (every centre,
  float64), ``empty="drop"`` (an empty cluster keeps its centre and disappears from the labels, which are made
  dense), ``tol=0`` (stops when no row changes cluster).

Also the nearest-row search and batch sizing that condensation's grouping shares with it. scipy is imported
where it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from ppdp.tasks.core.partition import balanced_partition

if TYPE_CHECKING:  # scipy is imported where it is used: reading a spec or a manifest does not need it
    from scipy.spatial import cKDTree

__all__ = [
    "KD_MAX_DIMS",
    "NEIGHBOUR_CENTRES",
    "batch_bytes",
    "centre_neighbours",
    "cluster_sums",
    "kmeans_labels",
    "nearest_indices",
]

KD_MAX_DIMS = 16  # above this, a k-d tree is no faster than brute force
_BATCH_MAX = 64 * 2**20  # memory for one batch of vectorized work ...
NEIGHBOUR_CENTRES = 24  # assign="near": a point may move only to one of the centres nearest its current centre


def batch_bytes(x: np.ndarray) -> int:
    """... at most 1/8 of the data's own size (2 to 64 MiB), so temporaries stay small beside the data."""
    return int(min(_BATCH_MAX, max(2 * 2**20, x.nbytes // 8)))


def kmeans_labels(x: np.ndarray, n_clusters: int, seed: int | np.random.Generator, max_iter: int = 50,
                  tol: float = 1e-3, init: Literal["kd", "random", "kmeans++"] = "kd",
                  assign: Literal["near", "all"] = "near",
                  empty: Literal["reseed", "drop"] = "reseed") -> np.ndarray:
    """Lloyd's k-means with ``n_clusters`` clusters; returns a label per row.

    Parameters
    ----------
    x : ndarray of shape (n, d)
        Finite float64 numbers.
    n_clusters : int
        Clusters asked for; 1 or fewer: every row in cluster 0.
    seed : int or numpy Generator
        The random starts (``init`` "random" and "kmeans++"; "kd" draws nothing). An int seeds a new generator; a
        generator is drawn from (the caller's stream moves on).
    max_iter : int
        Assignment steps at most.
    tol : float
        Stop once at most this share of the rows changed cluster in an assignment step (0: once none changed).
    init : {"kd", "random", "kmeans++"}
        "kd": the cells of :func:`balanced_partition` (a k-d tree initialisation: near a good solution, so few
        iterations are needed); "random": distinct random records as centres; "kmeans++": k-means++ seeding (each
        further centre a record drawn with probability proportional to its squared distance to the nearest
        centre chosen; uniformly when every record sits on a centre).
    assign : {"near", "all"}
        "near": every row goes to the nearest of the :data:`NEIGHBOUR_CENTRES` centres nearest its current centre
        (Lloyd moves are local: a full n x n_clusters distance matrix per iteration is what made k-means the
        bottleneck on 1M rows), distances in float32, the centre neighbour lists refreshed at iterations 0, 1, 2,
        4, 8, ... (centres move less and less). "all": the nearest of all centres, float64 distances by the
        |x|^2 - 2 x.c + |c|^2 expansion.
    empty : {"reseed", "drop"}
        "reseed": an empty cluster's centre is 0 and, after each assignment, empty clusters are re-seeded with
        the rows farthest from their centre; labels are 0..n_clusters-1. "drop": an empty cluster keeps its
        last centre; the labels returned are made dense (empty clusters dropped).

    Returns
    -------
    ndarray of shape (n,), int64
    """
    n = x.shape[0]
    if n_clusters <= 1:
        return np.zeros(n, dtype=np.int64)
    if init == "kmeans++" and assign == "near":
        raise ValueError('assign="near" moves rows from their current cluster: it needs init "kd" or "random"')
    centres, labels = _initial(x, n_clusters, seed, init)
    x32 = x.astype(np.float32) if assign == "near" else None
    neighbours = None
    for it in range(max_iter):
        if labels is not None:  # the centres of the current labels
            centres = _centres_of(x, labels, centres, n_clusters, empty)
        if assign == "near":
            if neighbours is None or (it & (it - 1)) == 0:  # centres settle: refresh at iterations 0, 1, 2, 4, 8, ...
                neighbours = centre_neighbours(centres, NEIGHBOUR_CENTRES)
            assert labels is not None  # "near" is refused with kmeans++, the one init without labels
            new, dist = _assign_near(x, centres, labels, neighbours, x32)
        else:
            dist = (x * x).sum(axis=1)[:, None] - 2.0 * x @ centres.T + (centres * centres).sum(axis=1)[None, :]
            new = np.argmin(dist, axis=1)
        if empty == "reseed":
            _reseed_empty(new, dist, n_clusters)
        changed = n if labels is None else int(np.count_nonzero(new != labels))
        labels = new
        if changed <= tol * n:
            break
    assert labels is not None
    if empty == "drop":
        _, dense = np.unique(labels, return_inverse=True)
        return dense.reshape(-1).astype(np.int64)
    return labels


def _initial(x: np.ndarray, n_clusters: int, seed: int | np.random.Generator,
             init: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The starting centres and labels (None: kmeans++, whose first step assigns every row)."""
    n, d = x.shape
    labels: np.ndarray | None
    centres = np.zeros((n_clusters, d))
    if init == "kmeans++":
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        centres = _kmeans_pp(x, n_clusters, rng)
        labels = None
    elif init == "random":
        rng = np.random.default_rng(seed)
        centres = x[rng.choice(n, size=n_clusters, replace=False)].copy()
        labels, _ = _assign(x, centres)
    else:
        labels = balanced_partition(x, n_clusters)
    return centres, labels


def _centres_of(x: np.ndarray, labels: np.ndarray, centres: np.ndarray, n_clusters: int, empty: str) -> np.ndarray:
    """The clusters' means; an empty cluster's centre is 0 ("reseed") or stays where it was ("drop", in place)."""
    counts = np.bincount(labels, minlength=n_clusters).astype(float)
    sums = cluster_sums(labels, x, n_clusters)
    if empty == "reseed":
        return sums / np.maximum(counts, 1.0)[:, None]
    present = counts > 0
    centres[present] = sums[present] / counts[present, None]
    return centres


def _reseed_empty(new: np.ndarray, dist: np.ndarray, n_clusters: int) -> None:
    """Give each empty cluster one of the rows farthest from their centre (in place)."""
    missing = np.setdiff1d(np.arange(n_clusters), new)
    if missing.size:
        far = np.argsort(-dist, kind="stable")[: missing.size]
        new[far] = missing


def _kmeans_pp(x: np.ndarray, c: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: ``c`` centres, the first a uniform record, each further one a record drawn with
    probability proportional to its squared distance to the nearest centre so far (uniform if that is 0
    everywhere)."""
    n = len(x)
    centres = np.empty((c, x.shape[1]))
    centres[0] = x[rng.integers(n)]
    closest = ((x - centres[0]) ** 2).sum(axis=1)
    for i in range(1, c):
        total = closest.sum()
        pick = int(rng.choice(n, p=closest / total)) if total > 0 else int(rng.integers(n))
        centres[i] = x[pick]
        np.minimum(closest, ((x - centres[i]) ** 2).sum(axis=1), out=closest)
    return centres


def centre_neighbours(centres: np.ndarray, m: int) -> np.ndarray:
    """For each centre, the ``m`` nearest centres (itself first): (K, m)."""
    from scipy.spatial import cKDTree  # heavy: scipy is loaded when rows are searched

    m = min(m, len(centres))
    tree = cKDTree(centres) if centres.shape[1] <= KD_MAX_DIMS else None
    sq = None if tree is not None else np.einsum("ij,ij->i", centres, centres)
    return nearest_indices(centres, centres, m, tree, sq)


def _assign_near(x: np.ndarray, centres: np.ndarray, labels: np.ndarray, neighbours: np.ndarray,
                 x32: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of each row among its current centre's ``neighbours``, and the squared distance
    (float32 arithmetic: only the order of distances matters here)."""
    n, d = x.shape
    m = neighbours.shape[1]
    c32 = centres.astype(np.float32)
    csq = np.einsum("ij,ij->i", c32, c32)
    x32 = x.astype(np.float32) if x32 is None else x32
    xsq = np.einsum("ij,ij->i", x32, x32)
    new = np.empty(n, dtype=np.int64)
    best = np.empty(n)
    step = max(1, int(batch_bytes(x) // (4 * m * (d + 4))))
    for s in range(0, n, step):
        c = neighbours[labels[s : s + step]]  # (B, m) candidate centres
        d2 = csq[c] - 2.0 * np.einsum("bd,bmd->bm", x32[s : s + step], c32[c])
        j = np.argmin(d2, axis=1)
        rows = np.arange(len(c))
        new[s : s + step] = c[rows, j]
        best[s : s + step] = np.maximum(d2[rows, j] + xsq[s : s + step], 0.0)
    return new, best


def cluster_sums(labels: np.ndarray, x: np.ndarray, n_clusters: int) -> np.ndarray:
    """Per-cluster sums of the rows of ``x`` (a sparse indicator product: no loop over rows)."""
    from scipy import sparse  # heavy: scipy is loaded when clusters are summed

    indicator = sparse.csr_matrix(
        (np.ones(len(labels)), (labels, np.arange(len(labels)))), shape=(n_clusters, len(labels))
    )
    return np.asarray(indicator @ x)


def _assign(x: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of each row and the squared distance to it."""
    from scipy.spatial import cKDTree  # heavy: scipy is loaded when rows are assigned

    if x.shape[1] <= KD_MAX_DIMS:
        dist, idx = cKDTree(centres).query(x, k=1)
        return idx.astype(np.int64), dist**2
    n = len(x)
    c2 = np.einsum("ij,ij->i", centres, centres)
    idx = np.empty(n, dtype=np.int64)
    best = np.empty(n)
    step = max(1, int(batch_bytes(x) // (8 * max(len(centres), 1))))
    for s in range(0, n, step):
        block = x[s : s + step]
        d2 = c2[None, :] - 2.0 * block @ centres.T
        j = np.argmin(d2, axis=1)
        idx[s : s + step] = j
        best[s : s + step] = d2[np.arange(len(block)), j] + np.einsum("ij,ij->i", block, block)
    return idx, np.maximum(best, 0.0)


def nearest_indices(x: np.ndarray, points: np.ndarray, m: int, tree: cKDTree | None, sq: np.ndarray | None
             ) -> np.ndarray:
    """For each row of ``points``, indices of the ``m`` rows of ``x`` nearest to it, nearest first: (P, m).

    A k-d tree answers in low dimension; otherwise squared distances come from one matrix product per batch
    of points (``sq`` holds the rows' squared norms) and ``argpartition`` picks the m smallest.
    """
    points = np.atleast_2d(points)
    m = min(m, len(x))
    if tree is not None:
        _, idx = tree.query(points, k=m)
        return np.asarray(idx).reshape(len(points), m)
    assert sq is not None  # without a tree the caller gives the rows' squared norms
    out = np.empty((len(points), m), dtype=np.int64)
    step = max(1, int(max(batch_bytes(x), 8 * len(x)) // (8 * max(len(x), 1))))
    for s in range(0, len(points), step):
        block = points[s : s + step]
        d2 = sq[:, None] - 2.0 * (x @ block.T)  # (n, B); the points' own norms do not change the order
        if m < len(x):
            part = np.argpartition(d2, m - 1, axis=0)[:m]  # (m, B)
            vals = np.take_along_axis(d2, part, axis=0)
            order = np.argsort(vals, axis=0, kind="stable")
            out[s : s + step] = np.take_along_axis(part, order, axis=0).T
        else:
            out[s : s + step] = np.argsort(d2, axis=0, kind="stable").T
    return out


