"""How a cell is written as a generalization-hierarchy value (:func:`text_of`), and the column texts the
hierarchy builders of :mod:`ppdp.tasks.core.hierarchy` start from."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["distinct_texts", "first_row", "number_text", "text_of", "value_texts"]


def text_of(series: pd.Series) -> pd.Series:
    """How each cell is written as a hierarchy value (object Series, same index; missing stays None).

    Integers (and floats with no fractional part) without ``.0``; dates as ISO ``yyyy-mm-dd`` (a time of day
    is dropped); anything else as ``str()``. Computed once per distinct value.
    """
    cell_codes, uniques = pd.factorize(series, use_na_sentinel=True)
    texts = np.append(value_texts(uniques), np.array([None], dtype=object))  # code -1 (missing) picks None
    return pd.Series(texts[cell_codes], index=series.index, dtype=object, name=series.name)


def value_texts(uniques: pd.Index | np.ndarray) -> np.ndarray:
    """:func:`text_of` for an array of distinct non-missing values (object array of str)."""
    if isinstance(uniques, pd.DatetimeIndex) or pd.api.types.is_datetime64_any_dtype(uniques.dtype):
        stamps = pd.DatetimeIndex(uniques)
        return np.asarray(stamps.strftime("%Y-%m-%d"), dtype=object)
    dtype = getattr(uniques, "dtype", None)
    if dtype is not None and (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
        return np.asarray(pd.Index(uniques).astype(str), dtype=object)
    if dtype is not None and pd.api.types.is_float_dtype(dtype):
        return _float_texts(np.asarray(uniques, dtype=float))
    values = np.asarray(uniques, dtype=object)
    return np.array([_value_text(v) for v in values.tolist()], dtype=object)


def _float_texts(x: np.ndarray) -> np.ndarray:
    """Floats as ``str()`` writes them (NumPy's shortest repr is the same), whole ones without ``.0``."""
    out = x.astype(str).astype(object)
    whole = np.isfinite(x) & (np.abs(x) < 2.0**63)
    whole[whole] = x[whole] == np.floor(x[whole])
    out[whole] = x[whole].astype(np.int64).astype(str).astype(object)
    return out


def number_text(v: float) -> str:
    if math.isfinite(v) and v == math.floor(v) and abs(v) < 2**63:
        return str(int(v))
    return str(v)


def _value_text(v: object) -> str | None:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float | np.floating):
        return None if math.isnan(v) else number_text(float(v))
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, pd.Timestamp | np.datetime64):
        return pd.Timestamp(v).strftime("%Y-%m-%d")
    return str(v)

def distinct_texts(series: pd.Series) -> np.ndarray:
    """The column's distinct non-missing values as text, in order of first occurrence."""
    _, uniques = pd.factorize(series, use_na_sentinel=True)
    texts = value_texts(uniques)
    texts = texts[~pd.isna(pd.Series(texts, dtype=object)).to_numpy()]
    return np.asarray(pd.unique(pd.Series(texts, dtype=object)), dtype=object)


def first_row(series: pd.Series, bad_texts: set[str]) -> tuple[int, int]:
    """How many rows hold one of ``bad_texts``, and the first one's 1-based data row."""
    mask = text_of(series).isin(list(bad_texts)).to_numpy()
    return int(mask.sum()), int(np.flatnonzero(mask)[0]) + 1

