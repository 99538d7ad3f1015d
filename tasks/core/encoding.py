"""Numeric encoding of mixed tables, and back.

The numeric methods (condensation, the utility classifiers, distance-based linkage) work on numbers. Each
column is encoded by its kind:

* numeric (dates too, as nanoseconds since the epoch): missing values imputed by the column median, then
  standardized (z-score);
* ordinal: the category's rank in the declared order (or the sorted distinct values), missing imputed by the
  median rank, then standardized like a number;
* nominal: one-hot, one indicator per category seen in fitting, a missing value being a category of its own;
  indicators are scaled by 1/sqrt(2) so that two different categories are at distance 1, like one standard
  deviation of a numeric column.

Decoding (:meth:`TableEncoder.inverse_transform`) maps numbers back to valid values: numeric columns are
clipped to the fitted range and rounded when the column held integers; ordinal ranks are rounded and clipped to
the categories that occur in the fitted data (never a declared category the data do not hold); a one-hot
block becomes the category with the largest indicator. Every released value is
therefore a value the column could hold, though not necessarily one that occurred.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.tasks.core.errors import InputError

ONEHOT_SCALE = 1.0 / math.sqrt(2.0)
_MISSING = object()  # the category of missing nominal values


@dataclass
class _ColumnCode:
    name: str
    kind: ColumnKind
    start: int
    width: int
    center: float = 0.0
    scale: float = 1.0
    lo: float = 0.0
    hi: float = 0.0
    integer: bool = False
    fill: float = 0.0
    categories: list = field(default_factory=list)
    datetime: bool = False
    step: float = 1.0  # integers and dates are rounded to multiples of this (dates: whole days, seconds, ...)
    present: np.ndarray | None = None  # ordinal: the ranks that occur in the fitted data (decoding snaps to them)


_DAY_NS, _SECOND_NS = 86_400e9, 1e9


def _resolution(ns: np.ndarray) -> float:
    """The coarsest of day / second / nanosecond in which every date of the column is whole."""
    for step in (_DAY_NS, _SECOND_NS):
        if ns.size and bool(np.all(np.mod(ns, step) == 0)):
            return step
    return 1.0


_NS_SECONDS = (int(pd.Timestamp.min.value // 10**9) + 1, int(pd.Timestamp.max.value // 10**9) - 1)


def as_numbers(series: pd.Series) -> np.ndarray:
    """A numeric or date column as floats (dates: nanoseconds since the epoch); missing -> NaN."""
    if pd.api.types.is_datetime64_any_dtype(series):
        stamps = series.dt.tz_localize(None) if getattr(series.dt, "tz", None) is not None else series
        seconds = stamps.dropna().to_numpy().astype("datetime64[s]").astype(np.int64)
        if seconds.size and (seconds.min() < _NS_SECONDS[0] or seconds.max() > _NS_SECONDS[1]):
            # nanoseconds since the epoch would wrap around silently (a Parquet timestamp[ms] of 9999-12-31)
            raise InputError(f"column '{series.name}': dates before 1677-09-22 or after 2262-04-11 are not "
                             "supported (nanosecond timestamps)")
        ns = stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(float)
        return np.where(stamps.isna().to_numpy(), np.nan, ns)
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)


def _by_value(series: pd.Series) -> bool:
    """Text and categorical columns: equal values have the same text, so work per distinct value is exact."""
    return isinstance(series.dtype, (pd.StringDtype, pd.CategoricalDtype))


def _distinct(series: pd.Series) -> Any:
    """The values of ``series`` to look at one by one: its distinct values when :func:`_by_value`, else all."""
    return pd.unique(series) if _by_value(series) else series


def _map_values(series: pd.Series, mapper: Any) -> np.ndarray:
    """``series.map(mapper, na_action="ignore")`` as floats (missing -> NaN). A text or categorical column is mapped
    once per distinct value (``pd.factorize``) instead of once per row: the same result, several times faster."""
    if not _by_value(series):
        return series.map(mapper, na_action="ignore").to_numpy(dtype=float)
    codes, uniques = pd.factorize(series)
    if len(uniques) == 0:
        return np.full(len(series), np.nan)
    mapped = pd.Series(np.asarray(uniques, dtype=object)).map(mapper).to_numpy(dtype=float)
    return np.where(codes >= 0, mapped[codes], np.nan)


def _sort_key(value: object) -> tuple:
    try:
        return (0, float(value), "")  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


class TableEncoder:
    """Encode ``columns`` of a frame to a float matrix and decode such matrices back to a frame.

    Parameters
    ----------
    columns : list of str
        Columns to encode, in order.
    kinds : dict
        Column name -> :class:`ColumnKind`.
    orders : dict, optional
        Column name -> category order (lowest first) for ordinal columns.
    standardize : bool
        Standardize numeric and ordinal columns and scale one-hot indicators (default), or keep raw units.
    """

    def __init__(
        self,
        *,
        columns: list[str],
        kinds: dict[str, ColumnKind],
        orders: dict[str, list[str]] | None = None,
        standardize: bool = True,
    ) -> None:
        self.columns = columns
        self.kinds = kinds
        self.orders = orders
        self.standardize = standardize

    # -- fitting ------------------------------------------------------------------------------------
    def fit(self, frame: pd.DataFrame) -> TableEncoder:
        codes: list[_ColumnCode] = []
        start = 0
        for name in self.columns:
            kind = self.kinds[name]
            series = frame[name]
            if kind is ColumnKind.nominal:
                cats = list(pd.unique(series.dropna()))
                cats.sort(key=_sort_key)
                if series.isna().any():
                    cats.append(_MISSING)
                scale = ONEHOT_SCALE if self.standardize else 1.0
                code = _ColumnCode(name, kind, start, max(len(cats), 1), scale=scale, categories=cats)
            else:
                if kind is ColumnKind.ordinal:
                    cats = self._ordinal_categories(name, series)
                    values = self._ranks(series, cats)
                else:
                    cats = []
                    values = as_numbers(series)
                finite = values[~np.isnan(values)]
                fill = float(np.median(finite)) if finite.size else 0.0
                filled = np.where(np.isnan(values), fill, values)
                center = float(filled.mean()) if filled.size else 0.0
                sd = float(filled.std()) if filled.size else 0.0
                integer = kind is ColumnKind.numeric and (
                    pd.api.types.is_integer_dtype(series)
                    or (finite.size > 0 and bool(np.all(finite == np.round(finite))))
                )
                code = _ColumnCode(
                    name,
                    kind,
                    start,
                    1,
                    center=center if self.standardize else 0.0,
                    scale=(1.0 / sd if sd > 0 else 1.0) if self.standardize else 1.0,
                    lo=float(finite.min()) if finite.size else 0.0,
                    hi=float(finite.max()) if finite.size else 0.0,
                    integer=integer,
                    step=_resolution(finite) if pd.api.types.is_datetime64_any_dtype(series) else 1.0,
                    fill=fill,
                    categories=cats,
                    datetime=pd.api.types.is_datetime64_any_dtype(series),
                    present=np.unique(finite).astype(np.int64) if kind is ColumnKind.ordinal and finite.size else None,
                )
            codes.append(code)
            start += code.width
        self.codes_ = codes
        self.width_ = start
        return self

    def _ordinal_categories(self, name: str, series: pd.Series) -> list:
        if self.orders and name in self.orders:
            declared = list(self.orders[name])
            extra = sorted({str(v) for v in _distinct(series.dropna())} - set(declared))
            if extra:
                raise InputError(f"column '{name}': {len(extra)} value(s) not in its declared order")
            return declared
        cats = list(pd.unique(series.dropna()))
        cats.sort(key=_sort_key)
        return cats

    @staticmethod
    def _ranks(series: pd.Series, cats: list) -> np.ndarray:
        lookup = {str(c): i for i, c in enumerate(cats)}
        return _map_values(series, lambda v: lookup.get(str(v), np.nan))

    # -- encoding -----------------------------------------------------------------------------------
    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        n = len(frame)
        out = np.zeros((n, self.width_), dtype=np.float64)
        for code in self.codes_:
            series = frame[code.name]
            if code.kind is ColumnKind.nominal:
                cats = code.categories
                index = {c: i for i, c in enumerate(cats) if c is not _MISSING}
                pos = _map_values(series, index)
                if _MISSING in cats:
                    pos = np.where(series.isna().to_numpy(), cats.index(_MISSING), pos)
                known = ~np.isnan(pos)  # unseen categories encode as all zeros
                rows = np.nonzero(known)[0]
                out[rows, code.start + pos[known].astype(np.int64)] = code.scale
            else:
                if code.kind is ColumnKind.ordinal:
                    values = self._ranks(series, code.categories)
                else:
                    values = as_numbers(series)
                values = np.where(np.isnan(values), code.fill, values)
                out[:, code.start] = (values - code.center) * code.scale
        return out

    def fit_transform(self, frame: pd.DataFrame) -> np.ndarray:
        return self.fit(frame).transform(frame)

    def inverse_transform(self, matrix: np.ndarray, index: pd.Index | None = None) -> pd.DataFrame:
        return pd.DataFrame(self.inverse_columns(matrix), index=index)

    def inverse_columns(self, matrix: np.ndarray) -> dict[str, np.ndarray]:
        """Decoded columns as arrays (see the module docstring), without building a frame."""
        data: dict[str, np.ndarray] = {}
        for code in self.codes_:
            block = matrix[:, code.start : code.start + code.width]
            if code.kind is ColumnKind.nominal:
                if not code.categories:
                    data[code.name] = np.full(len(matrix), None, dtype=object)
                    continue
                picks = np.argmax(block, axis=1)
                values = np.array(code.categories, dtype=object)[picks]
                values = np.where(values == np.array(_MISSING, dtype=object), np.array(None, dtype=object), values)
                data[code.name] = values
            else:
                raw = block[:, 0] / code.scale + code.center
                if code.kind is ColumnKind.ordinal:
                    if code.present is not None and code.present.size:
                        ranks = snap_to(raw, code.present)  # only categories the fitted data hold
                    else:
                        ranks = np.clip(np.rint(raw), 0, max(len(code.categories) - 1, 0)).astype(np.int64)
                    data[code.name] = np.array(code.categories, dtype=object)[ranks]
                else:
                    raw = np.clip(raw, code.lo, code.hi)
                    if code.datetime:
                        data[code.name] = (np.rint(raw / code.step) * code.step).astype(np.int64).astype(
                            "datetime64[ns]")
                    else:
                        data[code.name] = np.rint(raw).astype(np.int64) if code.integer else raw
        return data

    def blocks(self) -> dict[str, slice]:
        """Column name -> its slice of the encoded matrix."""
        return {c.name: slice(c.start, c.start + c.width) for c in self.codes_}


def snap_to(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Each value replaced by the nearest of the sorted ranks ``present`` (the lower one on ties)."""
    pos = np.clip(np.searchsorted(present, values), 1, max(len(present) - 1, 1))
    lower, upper = present[pos - 1], present[np.minimum(pos, len(present) - 1)]
    return np.where(np.abs(values - lower) <= np.abs(upper - values), lower, upper).astype(np.int64)


def encoder_for(frame: pd.DataFrame, columns: list[str], kinds: dict[str, ColumnKind],
                orders: dict[str, list[str]] | None = None) -> TableEncoder:
    """A fitted standardizing encoder (the common case)."""
    return TableEncoder(columns=columns, kinds=kinds, orders=orders).fit(frame)


MAX_MAGNITUDE = 1e100
"""Largest magnitude of a number the numeric methods accept: the bound the ingest step applies to what it reads
(``ppdp.tasks.ingest.MAX_MAGNITUDE``), so that squares of differences and their sums stay finite. Sanitizers
called from Python check their numeric columns with :func:`refuse_huge`."""


def refuse_huge(method: str, frame: pd.DataFrame, columns: list[str]) -> None:
    """Raise :class:`InputError` naming the first of ``columns`` (numeric or date columns of ``frame``) that holds
    an infinite value or one beyond ±:data:`MAX_MAGNITUDE` (missing values are fine); the message names the
    column, never a value."""
    for name in columns:
        with np.errstate(invalid="ignore"):
            huge = np.abs(as_numbers(frame[name])) > MAX_MAGNITUDE  # NaN compares False, ±inf True
        if huge.any():
            raise InputError(f"{method}: column '{name}' holds infinite or too large values "
                             f"(beyond ±{MAX_MAGNITUDE:g})")


def integers_within(values: np.ndarray, lo: int, hi: int, dtype=np.int64) -> np.ndarray:
    """Float ``values`` rounded to the nearest integer and clipped to ``[lo, hi]`` (exact integer bounds, e.g. a
    column's input range), as ``dtype``, without overflow.

    A float cast to an integer type wraps around when out of range: ``float(2**63 - 1)`` is 2**63, and
    ``np.float64(2**63).astype(np.int64)`` is -2**63. Here a value at or above ``float(hi)`` becomes ``hi``
    itself, one at or below ``float(lo)`` becomes ``lo``, and only values strictly between (which fit ``dtype``
    when ``lo`` and ``hi`` do) are cast. NaN becomes ``lo``: mask missing cells yourself.
    """
    y = np.rint(np.asarray(values, dtype=np.float64))
    out = np.full(y.shape, lo, dtype=dtype)
    top = y >= float(hi)
    inside = (y > float(lo)) & ~top  # NaN: False
    out[inside] = y[inside].astype(dtype)
    out[top] = hi
    return np.clip(out, np.array(lo, dtype=dtype), np.array(hi, dtype=dtype))
