"""Vectorized grouping helpers shared by tagging and privacy measures."""

from __future__ import annotations

import numpy as np
import pandas as pd


def equivalence_class_ids(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Dense id (0..G-1) of each row's equivalence class: rows sharing every value of ``columns``.

    Missing values form a class of their own (a missing value is a value an attacker can match). No Python
    loop over rows or classes: each column is factorized, then codes are combined in mixed radix and
    re-densified whenever the product of cardinalities could overflow 63 bits.
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:  # pandas 3 may group by a list literal instead of raising: check names first
        raise KeyError(f"columns not in table: {', '.join(missing)}")
    n = len(frame)
    if not columns:
        return np.zeros(n, dtype=np.int64)
    key = np.zeros(n, dtype=np.int64)
    size = 1
    for col in columns:
        codes, uniques = pd.factorize(frame[col], use_na_sentinel=False)
        card = max(len(uniques), 1)
        if size * card >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            size = int(key.max()) + 1 if n else 1
        key = key * card + codes.astype(np.int64)
        size *= card
    _, dense = np.unique(key, return_inverse=True)
    return dense.astype(np.int64).reshape(-1)


def text_class_ids(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Dense id of each row's class over the ``columns`` present, values compared as text (a published table and
    the same table read back from its file give the same ids; missing values are one value): classes numbered in
    sorted order of their text. One class when no column is present."""
    cols = [c for c in columns if c in frame.columns]
    if not cols or not len(frame):
        return np.zeros(len(frame), dtype=np.int64)
    keys = frame[cols].astype("string").fillna("\x00<NA>")
    return keys.groupby(cols, sort=True, dropna=False).ngroup().to_numpy(dtype=np.int64)


def class_sizes_per_row(ids: np.ndarray) -> np.ndarray:
    """Size of each row's class, aligned with the rows."""
    if ids.size == 0:
        return ids.copy()
    return np.bincount(ids)[ids]


def unique_share(frame: pd.DataFrame, columns: list[str]) -> float:
    """Share of rows that are alone in their equivalence class over ``columns`` (sample uniques)."""
    if len(frame) == 0:
        return 0.0
    ids = equivalence_class_ids(frame, columns)
    return float(np.mean(class_sizes_per_row(ids) == 1))
