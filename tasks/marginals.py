"""Utility measures that need no label: how far a release's 1-way and 2-way marginal distributions, and its
numeric columns' pairwise correlations, are from the input's.

* **1-way marginal distance**: the total variation distance (TVD, half the L1 distance, in [0, 1]) between a
  column's distribution in the input and in the release, averaged over the compared columns.
* **2-way marginal distance**: the same over the joint distribution of every pair of compared columns, averaged
  over the pairs.
* **correlation difference**: the mean absolute difference of the Pearson correlations of every pair of numeric
  columns (pairwise complete rows; a correlation that is not defined, a constant column's, reads as 0).

How cells are read (:func:`cell_codes`): a numeric column is binned on bins fixed from the input alone (up to
:data:`BINS` equal-frequency bins; a value of the release below or above them falls in the first or last bin); a
released numeric cell that is an interval label (``[40-50)``, a generalization's) is read as its midpoint; a
missing cell, ``*`` and any other label that is not a number is one category of its own ("missing"). Every other
column is read as text categories. The compared columns are the published columns that are also input columns,
direct identifiers and the release's own bookkeeping columns (a group id) aside.

The comparison is asymmetric only through the bins (taken from the first table); on tables without numeric
columns it is symmetric. Plain functions (numpy and pandas), reusable by any utility step.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import Roles
from ppdp.schemas.utility import MarginalDistances
from ppdp.tasks.utility import label_midpoint

BINS = 10
"""Equal-frequency bins of a numeric column, fixed from the input."""

_MISSING = -1


def total_variation(x: np.ndarray, y: np.ndarray) -> float:
    """The total variation distance between the empirical distributions of two arrays of integer codes: 0 when
    they are equal, 1 when they share no value; 0 when both are empty, 1 when only one is."""
    if len(x) == 0 or len(y) == 0:
        return 0.0 if len(x) == len(y) else 1.0
    ux, cx = np.unique(x, return_counts=True)
    uy, cy = np.unique(y, return_counts=True)
    keys = np.union1d(ux, uy)
    p = np.zeros(len(keys))
    q = np.zeros(len(keys))
    p[np.searchsorted(keys, ux)] = cx / len(x)
    q[np.searchsorted(keys, uy)] = cy / len(y)
    return float(min(1.0, 0.5 * np.abs(p - q).sum()))


def as_numbers(series: pd.Series) -> np.ndarray:
    """A column's cells as floats: numbers as they are, dates as nanoseconds, interval labels (``[40-50)``) as
    their midpoint, every other cell (missing, ``*``, text) as NaN."""
    if pd.api.types.is_bool_dtype(series):
        return series.astype(float).to_numpy()
    if pd.api.types.is_datetime64_any_dtype(series):
        values = series.to_numpy(dtype="datetime64[ns]")
        out = values.astype(np.int64).astype(float)
        out[np.isnat(values)] = np.nan
        return out
    if pd.api.types.is_numeric_dtype(series):
        return series.to_numpy(dtype=float, na_value=np.nan)
    return np.array([label_midpoint(v) for v in series.to_numpy(dtype=object)], dtype=float)


def _edges(values: np.ndarray) -> np.ndarray:
    """The inner edges of up to :data:`BINS` equal-frequency bins of ``values`` (NaN aside)."""
    finite = values[~np.isnan(values)]
    if not finite.size:
        return np.array([])
    return np.unique(np.quantile(finite, np.linspace(0, 1, BINS + 1)[1:-1]))


def cell_codes(original: pd.Series, released: pd.Series, numeric: bool) -> tuple[np.ndarray, np.ndarray]:
    """Both columns' cells as integer codes of one shared code space (see the module docstring): bins fixed from
    ``original`` for a numeric column, text categories otherwise; ``-1`` for a missing cell."""
    if numeric:
        a, b = as_numbers(original), as_numbers(released)
        edges = _edges(a)
        return (np.where(np.isnan(a), _MISSING, np.searchsorted(edges, a, side="right")),
                np.where(np.isnan(b), _MISSING, np.searchsorted(edges, b, side="right")))
    x = original.astype(object).where(original.notna(), None).to_numpy(dtype=object)
    y = released.astype(object).where(released.notna(), None).to_numpy(dtype=object)
    text_x = np.array(["" if v is None else str(v) for v in x], dtype=object)
    text_y = np.array(["" if v is None else str(v) for v in y], dtype=object)
    categories, codes = np.unique(np.concatenate([text_x, text_y]).astype(str), return_inverse=True)
    codes = codes.astype(np.int64)
    missing = np.concatenate([np.array([v is None for v in x], dtype=bool), np.array([v is None for v in y],
                                                                                        dtype=bool)])
    codes[missing] = _MISSING
    return codes[:len(x)], codes[len(x):]


def compared_columns(original: pd.DataFrame, released: pd.DataFrame, roles: Roles | None = None) -> list[str]:
    """The columns both tables hold, in the release's order, direct identifiers aside (and, with ``roles``,
    only the columns it tags: a method's bookkeeping column such as a group id is not an input column)."""
    out = []
    for name in released.columns:
        if name not in original.columns:
            continue
        if roles is not None:
            tag = next((t for t in roles.columns if t.name == name), None)
            if tag is None or tag.role is Role.identifier:
                continue
        out.append(str(name))
    return out


def numeric_columns(columns: Sequence[str], original: pd.DataFrame, roles: Roles | None = None) -> list[str]:
    """The columns read as numbers: tagged numeric (with ``roles``), else of a numeric or date dtype."""
    out = []
    for name in columns:
        if roles is not None:
            tag = next((t for t in roles.columns if t.name == name), None)
            numeric = tag is not None and tag.kind is ColumnKind.numeric and tag.role is not Role.class_
        else:
            s = original[name]
            numeric = (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)) or \
                pd.api.types.is_datetime64_any_dtype(s)
        if numeric:
            out.append(name)
    return out


def correlation_difference(original: pd.DataFrame, released: pd.DataFrame, numeric: Sequence[str]) -> float | None:
    """Mean absolute difference of the pairwise Pearson correlations of the ``numeric`` columns (read by
    :func:`as_numbers`; pairwise complete rows; an undefined correlation reads as 0); None with fewer than two."""
    if len(numeric) < 2:
        return None
    a = pd.DataFrame({c: as_numbers(original[c]) for c in numeric})
    b = pd.DataFrame({c: as_numbers(released[c]) for c in numeric})
    ca = a.corr().to_numpy()
    cb = b.corr().to_numpy()
    iu = np.triu_indices(len(numeric), 1)
    return float(np.mean(np.abs(np.nan_to_num(ca[iu]) - np.nan_to_num(cb[iu]))))


def marginal_distances(original: pd.DataFrame, released: pd.DataFrame, roles: Roles | None = None
                       ) -> MarginalDistances:
    """The label-free utility of ``released`` against ``original`` (the module docstring says how each figure is
    measured). ``roles`` names the numeric columns and leaves identifiers and unknown columns aside; without it
    the dtypes decide and every shared column is compared."""
    columns = compared_columns(original, released, roles)
    numeric = numeric_columns(columns, original, roles)
    codes = {c: cell_codes(original[c], released[c], c in numeric) for c in columns}
    one = [total_variation(*codes[c]) for c in columns]
    two = []
    for a, b in combinations(columns, 2):
        (xa, ya), (xb, yb) = codes[a], codes[b]
        width = int(max(xa.max(initial=0), ya.max(initial=0), xb.max(initial=0), yb.max(initial=0))) + 2
        two.append(total_variation((xa + 1) * width + (xb + 1), (ya + 1) * width + (yb + 1)))
    return MarginalDistances(
        columns=len(columns), pairs=len(two), numeric_columns=len(numeric), bins=BINS,
        one_way=float(np.mean(one)) if one else None, two_way=float(np.mean(two)) if two else None,
        one_way_worst=float(max(one)) if one else None,
        correlation_difference=correlation_difference(original, released, numeric))


def similarity(d: MarginalDistances) -> float:
    """The tuning's label-free utility (larger is better, 0 to 1): 1 minus the 2-way marginal distance (the 1-way
    one with a single compared column; 1 with none)."""
    distance = d.two_way if d.two_way is not None else d.one_way
    return 1.0 - (distance or 0.0)


SIMILARITY_MEASURE = "1 - mean 2-way marginal distance (total variation) between the release and its input rows"
"""How :func:`similarity` is described in a tuning trace."""
