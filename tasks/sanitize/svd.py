"""SVD-based data distortion: the basic (BSVD) and the sparsified (SSVD) method, one record at a time.

BSVD (Xu, Zhang, Han & Wang 2006, "Singular value decomposition based data distortion strategy for privacy
protection", section 3): the n x m matrix A of the numeric attributes is replaced by its rank-k reconstruction
A_k = U_k Sigma_k V_k^T, with no centring and no scaling (the raw values, as the paper decomposes them). SSVD
(the same paper's sparsified SVD, and Wang, Zhang, Xu & Zhong 2008; in the form Li & Xi (paper 004, section
3.4) use as their baseline): after the truncation, a share e (``sparsity``) of the smallest-magnitude entries of
the reserved components U_k and V_k is set to zero, and U'_k Sigma_k V'_k^T is published. Xu et al. drop the
entries below an absolute threshold; Li & Xi give e as the proportion of entries turned to zero, which is what
is implemented here.

Reading of "the proportion e of the entries": **pooled over U_k and V_k**. The round(e (n + m) k) entries of
smallest absolute value among all the entries of U_k and V_k together are set to zero (round half up; ties in
magnitude broken by position, U_k before V_k, row-major): the zeroed entries are exactly those below one common
threshold, Xu et al.'s single epsilon, chosen so that the share e of the entries falls below it. The entries of U_k
are of order 1/sqrt(n) and those of V_k of order 1/sqrt(m), so this mostly sparsifies U_k (the records'
coordinates); a loading of V_k goes only when it is tiny, which happens to an attribute on a much smaller scale than
the others (Pima's diabetes pedigree, 0.08 to 2.4 beside insulin up to 846: with k = 6 and e = 0.15 its loadings all
go in every split of the benchmark (in most splits under the other readings too), and it reconstructs as 0 in every
row, so the release publishes it as its minimum). Counting the share in U_k and in V_k separately
(``scope="matrix"``) zeroes e of the few loadings whatever their size: with 4 attributes and k = 2 (Iris) it zeroes
4 of the 8, and when both loadings of an attribute are among them (Iris's petal width) that attribute reconstructs
as 0 in every row. ``benchmarks/sample_generation_table_1.py`` compares the readings (pooled, per matrix, per
singular vector; count rounded or rounded down) against Table 1 of Li & Xi: all of them but the per-vector one
reproduce Pima's SSVD row, none reproduces Iris's (see ``benchmarks/results/sample_generation_table_1.md`` for the
figures and for why the pooled reading was kept).

What is perturbed: the numeric attributes that are not identifiers and not the class (quasi-identifiers,
sensitive and other columns), taken together as one matrix in the frame's column order. Ordinal, nominal,
boolean and date columns and the class label are kept as they are: a singular value decomposition needs
numbers on one scale, and dates as days since the epoch would dominate an unscaled decomposition. Missing
values are replaced by their column's mean for the decomposition only and stay missing in the release.

What is published: the papers publish the raw reconstruction. Here every value is clipped to its column's
input range and integer columns (an integer dtype, or floats that are all whole) are rounded, so that no
impossible value (a negative count, a fractional number of pregnancies) is published; the benchmark reports
Table 1 both on the raw reconstruction (:func:`svd_distort`, the papers' reading) and on the release. An integer
dtype column keeps its dtype: the rounded value is clipped to the column's exact input range and cast without
overflow (:func:`~ppdp.tasks.core.encoding.integers_within`; 2**63 - 1 is 2**63 as a float, which a plain cast
wrapped around to -2**63); beyond 2**53 the values are exact only to float64's precision. A distorted column
holding an infinite value or one beyond ±1e100 (the bound the ingest step applies) is refused with
:class:`~ppdp.tasks.core.errors.InputError` before any work.

The method is deterministic (``randomized = False``): the seed only sets the order of the released rows. The
release has one row per input row (``row_source`` is the identity before the shuffle); the privacy unit is the
record. Larger ``rank`` keeps more of the data (better utility, weaker privacy), so ``smaller`` is safer.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Domain, IntRange, MethodParams
from ppdp.schemas.params.svd import SvdParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import as_numbers, integers_within, refuse_huge
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.records import record_release
from ppdp.tasks.sanitize.base import Release, Sanitizer

Scope = Literal["matrix", "joint", "column"]
Count = Literal["round", "floor"]
SCOPE: Scope = "joint"  # the method's reading of Li & Xi's share e (see the module docstring)
COUNT: Count = "round"


def _zero_smallest(values: np.ndarray, count: int) -> np.ndarray:
    """``values`` with its ``count`` smallest entries by absolute value set to zero (ties: first position)."""
    out = np.array(values, dtype=float, copy=True)
    if count > 0:
        order = np.argsort(np.abs(out), axis=None, kind="stable")[:count]
        out.flat[order] = 0.0
    return out


def _how_many(share: float, size: int, count: Count) -> int:
    raw = share * size
    return int(np.floor(raw + 0.5)) if count == "round" else int(np.floor(raw + 1e-12))


def svd_factors(matrix: np.ndarray, rank: int, sparsity: float = 0.0, *, scope: Scope = SCOPE,
                count: Count = COUNT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reserved components (U_k, sigma_k, V_k) of ``matrix``, sparsified when ``sparsity`` > 0.

    Parameters
    ----------
    matrix : numpy.ndarray
        A: n x m, finite (not centred, not scaled).
    rank : int
        k, 1 <= k <= min(n, m).
    sparsity : float
        e in [0, 1): share of entries set to zero (Li & Xi's SSVD parameter).
    scope : {"joint", "matrix", "column"}
        How the share is counted: over the entries of U_k and V_k pooled (the method's reading), in U_k and in
        V_k separately, or within each column (singular vector) of U_k and of V_k.
    count : {"round", "floor"}
        The number of entries zeroed: e times their number rounded half up (the method's reading), or down.

    Returns
    -------
    (U_k, sigma_k, V_k) : n x k, k, m x k
    """
    a = np.asarray(matrix, dtype=float)
    n, m = a.shape
    if not 1 <= rank <= min(n, m):
        raise ValueError(f"rank {rank} is outside 1..{min(n, m)} for a {n} x {m} matrix")
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    uk, sk, vk = u[:, :rank], s[:rank], vt[:rank].T
    if sparsity > 0:
        if scope == "matrix":
            uk = _zero_smallest(uk, _how_many(sparsity, uk.size, count))
            vk = _zero_smallest(vk, _how_many(sparsity, vk.size, count))
        elif scope == "joint":
            both = _zero_smallest(np.concatenate([uk.ravel(), vk.ravel()]),
                                  _how_many(sparsity, uk.size + vk.size, count))
            uk, vk = both[:uk.size].reshape(uk.shape), both[uk.size:].reshape(vk.shape)
        elif scope == "column":
            uk = np.column_stack([_zero_smallest(c, _how_many(sparsity, c.size, count)) for c in uk.T])
            vk = np.column_stack([_zero_smallest(c, _how_many(sparsity, c.size, count)) for c in vk.T])
        else:
            raise ValueError(f"unknown scope {scope!r}")
    return uk, sk, vk


def svd_distort(matrix: np.ndarray, rank: int, sparsity: float = 0.0, *, scope: Scope = SCOPE,
                count: Count = COUNT) -> np.ndarray:
    """The raw BSVD (``sparsity`` 0) or SSVD reconstruction U'_k Sigma_k V'_k^T of ``matrix`` (see
    :func:`svd_factors`); no clipping, no rounding."""
    uk, sk, vk = svd_factors(matrix, rank, sparsity, scope=scope, count=count)
    return (uk * sk) @ vk.T


class Svd(Sanitizer):
    """Basic or sparsified SVD data distortion of the numeric attributes; see the module docstring.

    Parameters
    ----------
    rank : int
        k: the number of singular components kept (1 .. number of numeric attributes).
    sparsity : float
        e: share of the smallest-magnitude entries of U_k and V_k (pooled) set to zero; 0 is the basic SVD
        method.
    seed : int
        Seed of the row order (the distortion itself is deterministic).
    """

    name: ClassVar[str] = "svd"
    description: ClassVar[str] = "SVD: numeric attributes replaced by a sparsified low-rank reconstruction"
    Params: ClassVar[type[MethodParams]] = SvdParams
    randomized: ClassVar[bool] = False

    rank: int | None
    sparsity: float

    @staticmethod
    def numeric_columns(frame: pd.DataFrame, roles: Roles) -> list[str]:
        """The columns the method distorts: numeric attributes, not identifiers, not the class, held as
        numbers (not booleans, not dates), in the frame's order."""
        kinds = roles.kinds()
        attributes = set(roles.attributes) - set(roles.identifiers) - {roles.class_column}
        return [c for c in frame.columns if c in attributes and kinds.get(c) is ColumnKind.numeric
                and pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"rank": IntRange(low=1, high=max(1, len(self.numeric_columns(frame, roles))))}

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.rank is None:
            raise SpecError("svd: method.rank is required (set method.rank or a tuning strategy)")
        rank = int(self.rank)
        columns = self.numeric_columns(frame, roles)
        if not columns:
            raise InputError("svd: the input has no numeric attribute to distort (identifiers and the class are "
                             "never distorted)")
        if rank > len(columns):
            raise SpecError(f"svd: method.rank ({rank}) is above the number of numeric attributes ({len(columns)})")
        refuse_huge("svd", frame, columns)
        n = len(frame)
        if rank > n:
            raise InputError(f"svd: method.rank ({rank}) is above the number of input rows ({n})")
        a = np.column_stack([as_numbers(frame[c]) for c in columns])
        missing = np.isnan(a)
        if missing.any():
            means = np.array([np.nanmean(col) if (~np.isnan(col)).any() else 0.0 for col in a.T])
            a = np.where(missing, means, a)
        distorted = svd_distort(a, rank, float(self.sparsity))
        position = {c: j for j, c in enumerate(columns)}
        distorted_columns = {name: _publish(frame[name], distorted[:, position[name]], missing[:, position[name]])
                             for name in frame.columns if name in position}
        return record_release(frame, distorted_columns, "perturbed")


def _publish(series: pd.Series, values: np.ndarray, missing: np.ndarray) -> object:
    """Clip to the column's input range, round integer columns, keep missing cells missing, keep the dtype."""
    x = as_numbers(series)
    finite = x[~missing]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    y = np.clip(values, lo, hi)
    integer = pd.api.types.is_integer_dtype(series) or (finite.size > 0 and bool(np.all(finite == np.round(finite))))
    if integer:
        y = np.rint(y)
    y[missing] = np.nan
    if pd.api.types.is_integer_dtype(series):
        # clipped to the exact input range and cast without overflow (2**63 - 1 is 2**63 as a float)
        bounds = (int(series.min()), int(series.max())) if finite.size else (0, 0)
        # pandas-stubs: ExtensionDtype has no numpy_dtype (the nullable integer dtypes have)
        numpy_dtype = series.dtype if isinstance(series.dtype, np.dtype) else series.dtype.numpy_dtype  # type: ignore[attr-defined]
        ints = integers_within(y, *bounds, numpy_dtype)
        if isinstance(series.dtype, np.dtype):  # a NumPy integer column has no missing value
            return ints
        out = pd.array(ints, dtype=series.dtype)  # type: ignore[call-overload]  # pandas-stubs: pd.array takes no ExtensionDtype instance (pandas does)
        out[missing] = pd.NA
        return out
    return y
