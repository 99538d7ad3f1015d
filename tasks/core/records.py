"""A record-by-record release built from the columns a method replaced (noise, SVD, UMA: one published row per input
row, in input order, every other column kept as it is)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ppdp.schemas.methods import Treatment
from ppdp.schemas.release import Release


def record_release(frame: pd.DataFrame, replaced: Mapping[str, object], treatment: Treatment) -> Release:
    """The record release of ``frame`` (index 0..n-1) with each column of ``replaced`` published as given (its values,
    one per row) under ``treatment``, and every other column kept; columns in the input's order."""
    out: dict[str, object] = {}
    treatments: dict[str, Treatment] = {}
    for name in frame.columns:
        if name in replaced:
            out[name] = replaced[name]
            treatments[name] = treatment
        else:
            out[name] = frame[name].to_numpy()
            treatments[name] = "kept"
    n = len(frame)
    return Release(frame=pd.DataFrame(out, index=pd.RangeIndex(n)), unit="record", treatments=treatments,
                   row_source=np.arange(n, dtype=np.int64))
