"""Univariate microaggregation (UMA): every numeric attribute is microaggregated on its own.

Follows the baseline of Roy, "Performance Analysis of Clustering in Privacy Preserving Data Mining"
(``../shared/papers/003_dc231582cb6f4fc4.txt``), section 2.3: "for a data set with a single confidential
attribute univariate microaggregation (UMA) involves sorting records by the confidential attribute, grouping
adjacent records into groups of small sizes, and replacing the individual confidential values in each group with
the group average". The paper (after Sarkar & Liu 2006, its reference [17]) uses it as a baseline of its
perturbation tree; with several attributes each one is treated in turn, independently of the others (the
"individual ranking" of the statistical disclosure control literature, e.g. Defays & Nanopoulos 1993).

The algorithm part is pure NumPy (:func:`uma_groups`, :func:`uma_aggregate`); the sanitizer (:class:`Uma`, at
the end) applies it to the columns of a frame. Its privacy unit is ``record``: each column is partitioned on its
own, so records are not grouped across columns and the release has no equivalence class; what it guarantees is
per column: every published value of an aggregated column is the mean of at least k input values of that
column.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import Domain, IntRange, MethodParams
from ppdp.schemas.params.uma import Partition, UmaParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import as_numbers, integers_within, refuse_huge
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.matrix import positive_int
from ppdp.tasks.core.records import record_release
from ppdp.tasks.sanitize.base import Release, Sanitizer

__all__ = ["Uma", "uma_aggregate", "uma_groups"]

_DAY_NS = 86_400e9


# -- algorithm ---------------------------------------------------------------------------------------
def uma_groups(values: np.ndarray, k: int, partition: Partition = "fixed") -> np.ndarray:
    """Partition a 1-D array of numbers into groups of k to 2k - 1 consecutive values in sorted order.

    Parameters
    ----------
    values : ndarray of shape (m,)
        Finite numbers.
    k : int
        Minimum group size, k >= 1.
    partition : {"fixed", "optimal"}
        ``fixed``: sort (ties by position), cut into groups of k consecutive values, the last group takes the
        remainder (k to 2k - 1 values). ``optimal``: the partition into groups of k to 2k - 1 consecutive
        sorted values with the least within-group sum of squares (Hansen & Mukherjee, "A polynomial algorithm
        for optimal univariate microaggregation", IEEE TKDE 15(4), 2003: an optimal k-partition of univariate
        data consists of such groups, and the best one is a shortest path, found here by dynamic programming
        in O(m k)).

    Returns
    -------
    ndarray of shape (m,), int64
        Each value's group, dense 0..G-1 numbered in ascending order of value, G = the number of groups.

    Raises
    ------
    ValueError
        If ``values`` is not 1-D finite numbers, k < 1, ``partition`` is unknown, or m < k (m = 0 gives an
        empty array).

    Notes
    -----
    The paper (section 2.3) only says "groups of small sizes". The fixed rule is the one usually meant by UMA
    with a fixed group size; a group never straddles a smaller and a larger value out of order, so it is a
    univariate k-partition of the kind Hansen & Mukherjee show the optimum to be, but not necessarily the
    optimum itself: 1, 2, 3, 10, 11 with k = 2 gives fixed {1, 2}, {3, 10, 11} (SSE 38.5) but optimal
    {1, 2, 3}, {10, 11} (SSE 2.5).

    The dynamic programme runs on the values scaled by a power of two into (-1, 1) (exact, so the partition is
    the one of the raw values) and centred, so that its sums of squares stay finite for any finite input (raw
    values near 1e308 overflowed them to NaN); the trace back refuses with :class:`ValueError` rather than loop
    if it ever meets an impossible step.
    """
    v = np.asarray(values)
    if v.ndim != 1:
        raise ValueError(f"values must be 1-D, got {v.ndim} dimension(s)")
    if not (np.issubdtype(v.dtype, np.integer) or np.issubdtype(v.dtype, np.floating) or v.dtype == bool):
        raise ValueError("values must be real numbers")
    v = v.astype(np.float64, copy=False)
    if not np.isfinite(v).all():
        raise ValueError("values hold missing or infinite numbers")
    k = positive_int(k, "k")
    m = len(v)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if m < k:
        raise ValueError(f"univariate microaggregation needs at least k = {k} values, got {m}")
    order = np.argsort(v, kind="stable")
    if partition == "fixed":
        sizes = np.full(m // k, k, dtype=np.int64)
        sizes[-1] += m % k
    elif partition == "optimal":
        sizes = _optimal_sizes(v[order], k)
    else:
        raise ValueError(f"partition must be 'fixed' or 'optimal', got {partition!r}")
    labels = np.empty(m, dtype=np.int64)
    labels[order] = np.repeat(np.arange(len(sizes)), sizes)
    return labels


def uma_aggregate(x: np.ndarray, k: int, partition: Partition = "fixed") -> np.ndarray:
    """Univariate microaggregation of each column of ``x``: every value replaced by its group's mean.

    Parameters
    ----------
    x : ndarray of shape (n,) or (n, d)
        Numbers; NaN marks a missing value, which stays NaN and takes part in no group.
    k : int
        Minimum group size (see :func:`uma_groups`).
    partition : {"fixed", "optimal"}
        See :func:`uma_groups`.

    Returns
    -------
    ndarray of float64, the shape of ``x``
        Column j's present values partitioned by :func:`uma_groups` and replaced by their group means.

    Raises
    ------
    ValueError
        If a column has between 1 and k - 1 present values, or holds infinite values.
    """
    x = np.asarray(x, dtype=np.float64)
    flat = x.ndim == 1
    mat = x[:, None] if flat else x
    if mat.ndim != 2:
        raise ValueError(f"x must be 1-D or 2-D, got {x.ndim} dimensions")
    out = mat.copy()
    for j in range(mat.shape[1]):
        present = ~np.isnan(mat[:, j])
        if not present.any():
            continue
        vals = mat[present, j]
        labels = uma_groups(vals, k, partition)
        # sums of values scaled by a power of two into (-1, 1): exact scaling, no overflow near 1e308
        e = _exponent(vals)
        z = np.ldexp(vals, -e)
        count = int(labels.max()) + 1
        means = np.bincount(labels, weights=z, minlength=count) / np.bincount(labels, minlength=count)
        low, high = np.full(count, np.inf), np.full(count, -np.inf)
        np.minimum.at(low, labels, z)
        np.maximum.at(high, labels, z)
        out[present, j] = np.ldexp(np.clip(means, low, high), e)[labels]  # clip: rounding stays in the group
    return out[:, 0] if flat else out


def _exponent(v: np.ndarray) -> int:
    """e such that every |v| * 2**-e is below 1 (0 for an empty or all-zero array)."""
    top = float(np.max(np.abs(v))) if v.size else 0.0
    return int(np.frexp(top)[1]) if top > 0 else 0


def _optimal_sizes(v: np.ndarray, k: int) -> np.ndarray:
    """Group sizes, in sorted order, of the least-SSE partition of sorted ``v`` into runs of k to 2k - 1."""
    m = len(v)
    z = np.ldexp(v, -_exponent(v))  # in (-1, 1): a power of two scales every cost alike, exactly
    c = z - z.mean()  # centred (in (-2, 2)): the prefix-sum SSE loses less to cancellation
    s1 = np.concatenate(([0.0], np.cumsum(c)))
    s2 = np.concatenate(([0.0], np.cumsum(c * c)))
    best = np.full(m + 1, np.inf)
    best[0] = 0.0
    size = np.zeros(m + 1, dtype=np.int64)
    for j in range(k, m + 1):
        s = np.arange(k, min(2 * k - 1, j) + 1)
        i = j - s
        sse = (s2[j] - s2[i]) - (s1[j] - s1[i]) ** 2 / s
        cost = best[i] + np.maximum(sse, 0.0)
        t = int(np.argmin(cost))  # ties: the smallest last group
        best[j], size[j] = cost[t], s[t]
    if not np.isfinite(best[m]):
        raise ValueError("univariate microaggregation: the partition costs are not finite")
    sizes = []
    j = m
    while j > 0:  # every step takes k >= 1 values off j, so the loop ends
        step = int(size[j])
        if not k <= step <= j:
            raise ValueError("univariate microaggregation: the optimal partition cannot be traced back")
        sizes.append(step)
        j -= step
    return np.asarray(sizes[::-1], dtype=np.int64)


# -- the sanitizer -------------------------------------------------------------------------------------
class Uma(Sanitizer):
    """Univariate microaggregation of numeric attributes (privacy unit ``record``); see the module docstring.

    Each aggregated column is sorted on its own (ties by row), cut into groups of k to 2k - 1 consecutive
    values (:func:`uma_groups`) and each value replaced by its group's mean. Which columns: ``columns =
    "all_numeric"`` aggregates every numeric attribute (quasi-identifiers, sensitive and other columns; dates as
    nanoseconds), since a raw value left beside its record could link it; ``"sensitive"`` only the numeric
    sensitive attributes, as the paper perturbs only its confidential attribute. Identifiers, the class,
    ordinal and nominal columns are kept. Integer columns stay integers (the group mean rounded to the nearest
    integer, as :class:`~ppdp.tasks.sanitize.mdav.Mdav` does), dates are rounded to whole days when the column
    holds whole days; so the published value of such a column is its group mean to within half a unit (for
    magnitudes up to 2**53; beyond, to within float64's precision). A rounded mean is clipped to the column's
    input range and cast to the column's own integer dtype without overflow
    (:func:`~ppdp.tasks.core.encoding.integers_within`: the mean of 2**63 - 1 and 2**63 - 1 is 2**63 as a float,
    published as 2**63 - 1, never wrapped around to -2**63). Missing values stay missing and belong to no group.
    An aggregated column holding an infinite value or one beyond ±1e100 (the bound the ingest step applies) is
    refused with :class:`~ppdp.tasks.core.errors.InputError` before any work.

    Parameters
    ----------
    k : int
        Smallest group size (at least 2); every column with a present value needs at least k of them.
    columns : {"all_numeric", "sensitive"}
        Which numeric attributes are aggregated.
    partition : {"fixed", "optimal"}
        How each sorted column is cut (see :func:`uma_groups`).
    seed : int
        Seed of the published row order (UMA itself is deterministic).

    Notes
    -----
    Roy (paper 003), section 2.3 describes UMA with one confidential attribute and notes that, like additive and
    multiplicative noise, it biases the variance of the confidential attribute (it can only shrink: the group
    means keep the column mean and remove the within-group variance) and the relationships between attributes.
    The privacy unit is ``record``: there are no groups of records, so no k-anonymity claim is made; the
    per-column guarantee above is what :mod:`tests.test_uma` checks.
    """

    name: ClassVar[str] = "uma"
    description: ClassVar[str] = "univariate microaggregation: each numeric attribute aggregated on its own"
    Params: ClassVar[type[MethodParams]] = UmaParams
    randomized: ClassVar[bool] = False

    k: int | None
    columns: Literal["all_numeric", "sensitive"]
    partition: Partition

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"k": IntRange(low=2, high=max(2, len(frame)))}

    def aggregated_columns(self, frame: pd.DataFrame, roles: Roles) -> list[str]:
        """The columns this sanitizer aggregates on ``frame`` (in frame order)."""
        kinds = roles.kinds()
        attributes = set(roles.attributes) - set(roles.identifiers)
        if self.columns == "sensitive":
            attributes &= set(roles.names(Role.sensitive))
        return [c for c in frame.columns if c in attributes and kinds.get(c) is ColumnKind.numeric and (
            pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_datetime64_any_dtype(frame[c]))
            and not pd.api.types.is_bool_dtype(frame[c])]

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.k is None:
            raise SpecError("uma: k is required (set method.k or a tuning strategy)")
        k = int(self.k)
        n = len(frame)
        if n < k:
            raise InputError(f"uma: {n} records cannot form a group of k={k}")
        chosen = self.aggregated_columns(frame, roles)
        if not chosen:
            which = "sensitive numeric" if self.columns == "sensitive" else "numeric"
            raise InputError(f"uma: no {which} attribute to aggregate")
        refuse_huge("uma", frame, chosen)
        aggregated = {name: self._aggregate(frame[name], k, pos) for pos, name in enumerate(frame.columns)
                      if name in chosen}
        return record_release(frame, aggregated, "aggregated")

    def _aggregate(self, series: pd.Series, k: int, pos: int) -> object:
        is_date = pd.api.types.is_datetime64_any_dtype(series)
        x = as_numbers(series)  # dates as nanoseconds; missing as NaN
        present = ~np.isnan(x)
        count = int(present.sum())
        if 0 < count < k:
            raise InputError(f"uma: column {pos} ('{series.name}') has {count} present values, fewer than k={k}")
        y = uma_aggregate(x, k, self.partition)
        finite = x[present]
        if is_date:
            step = _DAY_NS if finite.size and bool(np.all(np.mod(finite, _DAY_NS) == 0)) else 1.0
            return pd.to_datetime(np.rint(y / step) * step, unit="ns").to_numpy()
        integer = pd.api.types.is_integer_dtype(series) or (
            finite.size > 0 and bool(np.all(finite == np.round(finite))))
        if not integer:
            return y
        y = np.rint(y)
        if not pd.api.types.is_integer_dtype(series):
            return y
        # clipped to the exact input range and cast without overflow (2**63 - 1 is 2**63 as a float)
        # pandas-stubs: ExtensionDtype has no numpy_dtype (the nullable integer dtypes have)
        numpy_dtype = series.dtype if isinstance(series.dtype, np.dtype) else series.dtype.numpy_dtype  # type: ignore[attr-defined]
        lo, hi = (int(series.min()), int(series.max())) if count else (0, 0)
        ints = integers_within(y, lo, hi, numpy_dtype)
        if isinstance(series.dtype, np.dtype):  # no missing value
            return ints
        out = pd.array(ints, dtype=series.dtype)  # type: ignore[call-overload]  # pandas-stubs: pd.array takes no ExtensionDtype instance (pandas does)
        out[~present] = pd.NA
        return out
