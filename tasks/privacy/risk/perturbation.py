"""Privacy of a perturbed numeric matrix against its original: VD, RP, RK, CP and CK of paper 004 (Li & Xi,
section 3.2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppdp.tasks.privacy.risk._checks import check_matrix

__all__ = ["MatrixDistortion", "matrix_distortion"]


@dataclass(frozen=True)
class MatrixDistortion:
    """Privacy measures of a modified numeric matrix against its original (paper 004, section 3.2).

    Higher VD, RP and CP and lower RK and CK mean better-hidden values.

    Attributes
    ----------
    vd
        ``||A - MA||_F / ||A||_F``.
    rp
        Mean absolute change of an element's rank within its column (in rank units, 0..n-1).
    rk
        Share of elements keeping their rank within their column.
    cp
        Mean absolute change of the rank of a column's mean among the column means (0..m-1).
    ck
        Share of columns whose mean keeps its rank.
    """

    vd: float
    rp: float
    rk: float
    cp: float
    ck: float


def _ordinal_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ascending ranks along axis 0; ties ranked by position (stable sort)."""
    order = np.argsort(values, axis=0, kind="stable")
    ranks = np.empty(values.shape, dtype=np.int64)
    steps = np.broadcast_to(np.arange(1, values.shape[0] + 1).reshape(-1, *([1] * (values.ndim - 1))), values.shape)
    np.put_along_axis(ranks, order, steps, axis=0)
    return ranks


def matrix_distortion(original: np.ndarray, modified: np.ndarray) -> MatrixDistortion:
    """VD, RP, RK, CP and CK of ``modified`` (MA) against ``original`` (A).

    Parameters
    ----------
    original : numpy.ndarray
        A: n x m numeric matrix (records x attributes), finite, not all zero.
    modified : numpy.ndarray
        MA: the perturbed matrix, same shape, rows aligned with ``original`` (row i of MA is record i
        modified).

    Returns
    -------
    MatrixDistortion

    Raises
    ------
    ValueError
        Non-2-D, empty or non-finite input, shape mismatch, or an all-zero ``original`` (VD undefined).

    Notes
    -----
    Li & Xi, "A New Algorithm-independent Method for Privacy-Preserving Classification Based on Sample
    Generation", section 3.2, equations (1)-(6), after Xu et al. (2006) and Wang et al. (2006, 2008):

    * ``VD = ||A - MA||_F / ||A||_F``;
    * ``RP = sum_i sum_j |Rank_j^i - MRank_j^i| / (n m)``, ranks ascending within each attribute;
    * ``RK`` = share of elements with ``Rank_j^i = MRank_j^i``;
    * ``CP = sum_i |RankV_i - MRankV_i| / m``, ``RankV_i`` the ascending rank of attribute i's mean among the
      m means;
    * ``CK`` = share of attributes with ``RankV_i = MRankV_i``.

    The paper does not say how ties are ranked. Here ranks are ordinal (1..n) from a stable argsort: tied
    values are ranked by row order. So MA equal to A always gives RK = CK = 1 and RP = CP = 0, and a column
    that is constant in both keeps every rank.
    """
    a = check_matrix(original, "original")
    ma = check_matrix(modified, "modified")
    if a.shape != ma.shape:
        raise ValueError(f"original and modified differ in shape ({a.shape} vs {ma.shape}): shape mismatch")
    norm = np.linalg.norm(a)
    if norm == 0.0:
        raise ValueError("original is all zeros: VD (divided by its Frobenius norm) is undefined")
    vd = float(np.linalg.norm(a - ma) / norm)
    rank_a, rank_ma = _ordinal_ranks(a), _ordinal_ranks(ma)
    rp = float(np.mean(np.abs(rank_a - rank_ma)))
    rk = float(np.mean(rank_a == rank_ma))
    mean_rank_a, mean_rank_ma = _ordinal_ranks(a.mean(axis=0)), _ordinal_ranks(ma.mean(axis=0))
    cp = float(np.mean(np.abs(mean_rank_a - mean_rank_ma)))
    ck = float(np.mean(mean_rank_a == mean_rank_ma))
    return MatrixDistortion(vd=vd, rp=rp, rk=rk, cp=cp, ck=ck)
