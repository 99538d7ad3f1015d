"""Generalization hierarchies in ARX's format."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def read_hierarchy(path: Path) -> pd.DataFrame:
    """An ARX hierarchy CSV (';', no header): each row a value and its generalizations up to '*'."""
    return pd.read_csv(path, sep=";", header=None, dtype=str, keep_default_na=False)
