"""Clustering utility: how much a perturbation changes a k-means clustering (the misclassification error M_E).

Roy, "Performance Analysis of Clustering in Privacy Preserving Data Mining" (``../shared/papers/
003_dc231582cb6f4fc4.txt``), section 5.3, after Oliveira & Zaiane (2003, its reference [4]), measures a
perturbation by the share of points that k-means puts in a different cluster once the data are perturbed:

    M_E = 1/N * sum_i | Cluster_i(D) - Cluster_i(D') |

The paper does not say how the clusters of D' are paired with those of D, how k-means is started, or whether
the bars mean a set difference or a difference of sizes. :func:`misclassification_error` reads it as the share
of points whose cluster on D' is not the one paired with their cluster on D, the clusters paired one to one so
that as many points as possible agree (the Hungarian method); :func:`size_difference_error` is the literal
reading of the printed formula (a difference of cluster sizes, which a point moving between two clusters counts
twice and opposite moves cancel in). scikit-learn is imported on first use.
"""

from __future__ import annotations

import numpy as np

from ppdp.tasks.core.matrix import as_matrix

__all__ = [
    "kmeans_fit",
    "kmeans_pair",
    "kmeans_refit",
    "matched_disagreement",
    "misclassification_error",
    "size_difference_error",
]


def misclassification_error(original: np.ndarray, perturbed: np.ndarray, n_clusters: int, seed: int) -> float:
    """The misclassification error M_E between k-means on the original and on the perturbed data.

    Parameters
    ----------
    original, perturbed : ndarray of shape (n, d)
        The same records, rows aligned (row i of ``perturbed`` is the perturbed row i of ``original``), finite,
        already on the scale k-means should see (the caller normalizes).
    n_clusters : int
        K, the number of clusters (1 <= K <= n).
    seed : int
        Seed of the k-means run on the original data.

    Returns
    -------
    float
        In [0, 1): the share of rows whose cluster on the perturbed data is not the one paired with their
        cluster on the original data (0: the same partition, up to the names of the clusters).

    Raises
    ------
    ValueError
        If the arrays are not 2-D, finite, of the same shape, or K is out of range.

    Notes
    -----
    Roy (paper 003), section 5.3, after Oliveira & Zaiane (2003). Two choices the paper leaves open:

    * k-means runs on the original data with ``n_init=10`` seeded starts (scikit-learn's
      :class:`~sklearn.cluster.KMeans`, k-means++); on the perturbed data it runs once, started from the
      original's final centres (``init=centres, n_init=1``), so that a difference reflects the perturbation and
      not another local optimum or another numbering of the clusters.
    * clusters are paired by the Hungarian method (:func:`scipy.optimize.linear_sum_assignment` on the K x K
      contingency table), maximizing the rows that agree; M_E is 1 - agreeing rows / n
      (:func:`matched_disagreement`).

    Since a row either agrees or not, M_E moves in steps of 1/n.
    """
    a, b = kmeans_pair(original, perturbed, n_clusters, seed)
    return matched_disagreement(a, b)


def kmeans_pair(original: np.ndarray, perturbed: np.ndarray, n_clusters: int, seed: int,
                n_init: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Cluster labels of k-means on ``original`` (:func:`kmeans_fit`) and on ``perturbed`` started from the
    original's final centres (:func:`kmeans_refit`); see :func:`misclassification_error`.

    Returns
    -------
    (ndarray, ndarray)
        Labels 0..K-1 of each row, on the original and on the perturbed data.
    """
    x = as_matrix(original, "original")
    y = as_matrix(perturbed, "perturbed")
    if x.shape != y.shape:
        raise ValueError(f"original and perturbed must have the same shape, got {x.shape} and {y.shape}")
    labels, centres = kmeans_fit(x, n_clusters, seed, n_init)
    return labels, kmeans_refit(y, centres)


def kmeans_fit(x: np.ndarray, n_clusters: int, seed: int, n_init: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """k-means (scikit-learn, k-means++ starts, the best of ``n_init`` seeded runs) on ``x``.

    Returns
    -------
    (ndarray of shape (n,), ndarray of shape (K, d))
        Each row's cluster 0..K-1 and the final centres.
    """
    from sklearn.cluster import KMeans  # heavy: scikit-learn, loaded when a clustering runs

    x = as_matrix(x, "x")
    k = int(n_clusters)
    if not 1 <= k <= len(x):
        raise ValueError(f"n_clusters must be between 1 and the number of rows ({len(x)}), got {k}")
    fit = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(x)
    return fit.labels_.astype(np.int64), fit.cluster_centers_


def kmeans_refit(y: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """One k-means run on ``y`` started from ``centres`` (deterministic); each row's cluster, numbered as the
    centres are."""
    from sklearn.cluster import KMeans  # heavy: scikit-learn, loaded when a clustering runs

    y = as_matrix(y, "perturbed")
    centres = as_matrix(centres, "centres")
    if centres.shape[1] != y.shape[1] or not 1 <= len(centres) <= len(y):
        raise ValueError("centres must have the data's columns and between 1 and n rows")
    return KMeans(n_clusters=len(centres), init=centres, n_init=1).fit(y).labels_.astype(np.int64)


def matched_disagreement(labels_a: np.ndarray, labels_b: np.ndarray) -> float:
    """Share of rows whose label in ``labels_b`` is not the one paired with their label in ``labels_a``.

    Labels are paired one to one by the Hungarian method so that as many rows as possible agree (labels with no
    partner, when the two sides have different numbers of labels, agree with nothing). 0 when ``labels_b`` is
    ``labels_a`` with its labels renamed.

    Parameters
    ----------
    labels_a, labels_b : ndarray of shape (n,)
        Non-negative integer labels of the same rows.

    Returns
    -------
    float
        In [0, 1]; 0.0 for n = 0.
    """
    from scipy.optimize import linear_sum_assignment  # heavy: SciPy, loaded when labels are matched

    table = _contingency(labels_a, labels_b)
    n = int(table.sum())
    if n == 0:
        return 0.0
    rows, cols = linear_sum_assignment(table, maximize=True)
    return 1.0 - float(table[rows, cols].sum()) / n


def size_difference_error(labels_a: np.ndarray, labels_b: np.ndarray) -> float:
    """The printed formula read literally: sum over paired clusters of | |C_i(D)| - |C_i(D')| |, over n.

    Clusters are paired as in :func:`matched_disagreement`. A row moving from cluster i to j changes two sizes
    (counted twice), and moves in opposite directions cancel, so this is neither a share of rows nor bounded by
    :func:`matched_disagreement` (it is at most twice it).
    """
    from scipy.optimize import linear_sum_assignment  # heavy: SciPy, loaded when labels are matched

    table = _contingency(labels_a, labels_b)
    n = int(table.sum())
    if n == 0:
        return 0.0
    size = max(table.shape)
    square = np.zeros((size, size), dtype=np.int64)
    square[: table.shape[0], : table.shape[1]] = table
    rows, cols = linear_sum_assignment(square, maximize=True)
    return float(np.abs(square.sum(axis=1)[rows] - square.sum(axis=0)[cols]).sum()) / n


def _contingency(labels_a: np.ndarray, labels_b: np.ndarray) -> np.ndarray:
    a = np.asarray(labels_a)
    b = np.asarray(labels_b)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError("labels_a and labels_b must be 1-D and of the same length")
    if a.size == 0:
        return np.zeros((0, 0), dtype=np.int64)
    if not (np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer)) or min(a.min(), b.min()) < 0:
        raise ValueError("labels must be non-negative integers")
    table = np.zeros((int(a.max()) + 1, int(b.max()) + 1), dtype=np.int64)
    np.add.at(table, (a, b), 1)
    return table

