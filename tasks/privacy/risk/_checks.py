"""Input checks shared by the risk measures: messages name the column or parameter, never a data value."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def check_columns(frame: pd.DataFrame, columns: Sequence[str], what: str, table: str) -> list[str]:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{table} must be a pandas DataFrame")
    if isinstance(columns, str):
        raise ValueError(f"{what} must be a list of column names, not a single string")
    cols = list(columns)
    seen: set[str] = set()
    for col in cols:
        if col in seen:
            raise ValueError(f"{what} names column {col!r} twice")
        seen.add(col)
        if col not in frame.columns:
            raise ValueError(f"{what} column {col!r} is not in {table}")
    return cols


def check_nonempty(frame: pd.DataFrame, table: str) -> None:
    if len(frame) == 0:
        raise ValueError(f"{table} is empty: no records to measure")


def check_matrix(values: np.ndarray, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (records x attributes), got {arr.ndim} dimension(s)")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds missing or infinite values")
    return arr


def check_int(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}")
    return int(value)
