"""The naive Bayes model of :mod:`ppdp.tasks.federated`: the published counts as a table (one row per cell)
and back, and :class:`FederatedModel`, which predicts from them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.schemas.federate import FederatedManifest, FederateSpec
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.federated.protocol import Layout, encode_frame, layout_of

COLUMNS = ["class", "attribute", "value", "count", "suppressed"]


@dataclass(frozen=True)
class Suppressed:
    """The counts as published (suppressed cells 0), which cells are suppressed, and why; ``audited``: the
    suppression passed :func:`audit_suppression` (the release rule's own check before publishing)."""

    counts: np.ndarray
    mask: np.ndarray
    primary: int
    complementary: int
    audited: bool = False


def model_table(result: Suppressed, layout: Layout) -> pd.DataFrame:
    """The model as a table: one row per cell (class counts with attribute and value null, then every (class,
    attribute, value)); the values are the declared domain values or bin labels (spec values, not data)."""
    rows: list[tuple] = []
    n = len(layout.classes)
    for c, label in enumerate(layout.classes):
        rows.append((label, None, None, int(result.counts[c]), bool(result.mask[c])))
    for j, name in enumerate(layout.attributes):
        counts, mask = layout.block(result.counts, j), layout.block(result.mask, j)
        for c in range(n):
            for v, value in enumerate(layout.values[j]):
                rows.append((layout.classes[c], name, value, int(counts[c, v]), bool(mask[c, v])))
    return pd.DataFrame(rows, columns=COLUMNS)


def counts_from_table(frame: pd.DataFrame, layout: Layout) -> np.ndarray:
    """The count vector of a published model table (the inverse of :func:`model_table`); raise
    :class:`InputError` when the table does not hold exactly the layout's cells."""
    expected = model_table(Suppressed(np.zeros(layout.size, np.int64), np.zeros(layout.size, bool), 0, 0), layout)
    if list(frame.columns) != COLUMNS or len(frame) != len(expected):
        raise InputError("the model table does not have the layout its manifest declares")
    def cells(series: pd.Series) -> list:
        return [None if pd.isna(v) else str(v) for v in series.tolist()]

    for column in ("class", "attribute", "value"):
        if cells(frame[column]) != cells(expected[column]):
            raise InputError(f"the model table's {column} column does not follow the layout its manifest declares")
    return frame["count"].to_numpy(dtype=np.int64)


# -- the model ---------------------------------------------------------------------------------------------
class FederatedModel:
    """Naive Bayes from counts, with Laplace correction (alpha = 1) on the conditional probabilities and the
    empirical class prior: ``P(c) = N_c / N``, ``P(A_j = v | c) = (N_cjv + 1) / (sum_v' N_cjv' + |D_j|)``. With
    nothing suppressed ``sum_v' N_cjv' = N_c``. The arithmetic is scikit-learn's ``CategoricalNB(alpha=1)``
    (same order of operations), so the two predict the same classes from the same counts. A class whose count
    is 0 (absent, or suppressed) has prior 0 and is never predicted."""

    alpha = 1.0

    def __init__(self, layout: Layout, counts: np.ndarray) -> None:
        counts = np.asarray(counts, dtype=np.int64)
        if counts.shape != (layout.size,) or (counts < 0).any():
            raise InputError("counts do not fit the model's layout")
        n = len(layout.classes)
        self.layout = layout
        self.classes_ = np.array(layout.class_values, dtype=object)
        self.class_count_ = counts[:n].astype(np.float64)
        if not self.class_count_.any():
            raise InputError("every class count is 0: no model")
        self.category_count_ = [layout.block(counts, j).astype(np.float64) for j in range(len(layout.attributes))]
        with np.errstate(divide="ignore"):
            log_class_count = np.log(self.class_count_)
        self.class_log_prior_ = log_class_count - np.log(self.class_count_.sum())
        self.feature_log_prob_ = []
        for category_count in self.category_count_:
            smoothed = category_count + self.alpha
            self.feature_log_prob_.append(np.log(smoothed) - np.log(smoothed.sum(axis=1).reshape(-1, 1)))

    @classmethod
    def from_counts(cls, spec: FederateSpec, counts: np.ndarray) -> FederatedModel:
        return cls(layout_of(spec), counts)

    @classmethod
    def from_release(cls, folder: str | os.PathLike[str]) -> FederatedModel:
        """The model of a published federated release folder (its manifest and data.parquet)."""
        folder = Path(folder)
        try:
            manifest = FederatedManifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))
            frame = pq.read_table(folder / "data.parquet").to_pandas()
        except (OSError, ValueError, pa.ArrowException):
            raise InputError(f"{folder}: not a readable federated release (manifest.json and data.parquet)") from None
        layout = layout_of(manifest.spec)
        return cls(layout, counts_from_table(frame, layout))

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """The attribute columns of ``frame`` (by name; other columns are ignored) as codes."""
        codes, _ = encode_frame(frame, self.layout, "input")
        return codes

    def joint_log_likelihood(self, codes: np.ndarray) -> np.ndarray:
        codes = np.asarray(codes, dtype=np.int64)
        jll = np.zeros((codes.shape[0], len(self.classes_)))
        for j in range(len(self.feature_log_prob_)):
            jll += self.feature_log_prob_[j][:, codes[:, j]].T
        return jll + self.class_log_prior_

    def predict_log_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Log-probabilities of each class (columns in the spec's class order)."""
        jll = self.joint_log_likelihood(self.encode(frame))
        top = jll.max(axis=1, keepdims=True)
        return jll - (np.log(np.exp(jll - top).sum(axis=1, keepdims=True)) + top)

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Probabilities of each class (columns in the spec's class order)."""
        return np.exp(self.predict_log_proba(frame))

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        """The most probable class of each row (ties: the first in the spec's class order)."""
        return self.classes_[np.argmax(self.joint_log_likelihood(self.encode(frame)), axis=1)]
