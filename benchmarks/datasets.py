"""Loaders for the research data sets used by the benchmarks (``../shared/data`` and scikit-learn).

Every loader returns ``(frame, roles)``: all attributes numeric quasi-identifiers (as the condensation paper
treats them) and one class column. Not part of the test suite.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles

REPO = Path(__file__).resolve().parents[1]
# PPDP_BENCH_SHARED: the tiny stand-in folder of a smoke run (benchmarks/smoke.py), else ../shared/data
SHARED = Path(os.environ.get("PPDP_BENCH_SHARED") or REPO.parent / "shared" / "data")


def numeric_roles(frame: pd.DataFrame, cls: str) -> Roles:
    cols = [ColumnTag(name=c, role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared",
                      reason="benchmark: every attribute numeric") for c in frame.columns if c != cls]
    cols.append(ColumnTag(name=cls, role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="label"))
    return Roles(columns=cols)


def _csv(rel: str) -> pd.DataFrame:
    path = SHARED / rel
    if not path.is_file():
        raise FileNotFoundError(f"{path} (the shared research data is not on this machine)")
    return pd.read_csv(path)


def breast_cancer() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.data.copy()
    frame["class"] = np.where(data.target == 1, "benign", "malignant")
    return frame


def iris() -> pd.DataFrame:
    from sklearn.datasets import load_iris

    data = load_iris(as_frame=True)
    frame = data.data.copy()
    frame["class"] = np.asarray(data.target_names)[data.target]
    return frame


def adult() -> pd.DataFrame:
    """UCI Adult without the 2,399 rows holding '?' (30,162 rows, as the paper's approximate GCD implies);
    the 8 text attributes coded as integers (categories in sorted order), as numeric tools read them."""
    frame = _csv("adult/adult.csv")
    frame = frame[~frame.eq("?").any(axis=1)].reset_index(drop=True)
    for col in frame.columns:
        if col != "income" and not pd.api.types.is_numeric_dtype(frame[col]):
            frame[col] = pd.Categorical(frame[col], categories=sorted(frame[col].unique())).codes.astype(np.int64)
    return frame.rename(columns={"income": "class"})


def waveform() -> pd.DataFrame:
    """Waveform with 40 attributes (21 relevant + 19 noise): the paper's Table 1 lists 40 columns."""
    return _csv("waveform/waveform_noise40.csv").astype({"class": str})


def ionosphere() -> pd.DataFrame:
    return _csv("ionosphere/ionosphere.csv")


def magic() -> pd.DataFrame:
    return _csv("magic/magic.csv")


def german_numeric() -> pd.DataFrame:
    return _csv("german/german_numeric.csv").astype({"class": str})


LOADERS = {
    "Breast cancer": breast_cancer,
    "Adult": adult,
    "Waveform": waveform,
    "Ionosphere": ionosphere,
    "Magic": magic,
    "Iris": iris,
    "German": german_numeric,
}


def load(name: str) -> tuple[pd.DataFrame, Roles]:
    frame = LOADERS[name]()
    return frame, numeric_roles(frame, "class")
