"""The faster pass-1 counts of a partition (issue 32, speed) count what the plain pandas grouping counts: the same
(class, value) pairs, in the same order, with the same column types and counts, whatever the columns' types."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.tasks.core.counts import row_counts
from ppdp.tasks.distributed.inputs import class_value_counts, factorized

VALUES = np.array(["a", "b", None, np.nan, "c", 3, 2.5, pd.NA, True, 0.0, -0.0], dtype=object)
LABELS = np.array([">50K", "<=50K", None, np.nan, 1, 0], dtype=object)


def _column(rng: np.random.Generator, kind: int, m: int) -> pd.Series:
    """A column of one of several types: mixed objects with missing values, categorical, small integers, floats
    with NaN, nullable integers, booleans, text."""
    if kind == 0:
        return pd.Series(rng.choice(VALUES[:rng.integers(1, len(VALUES) + 1)], m), dtype=object)
    if kind == 1:
        return pd.Series(rng.choice(["x", "y", "z", None], m), dtype=object).astype("category")
    if kind == 2:
        return pd.Series(rng.integers(0, 6, m).astype(np.int16))
    if kind == 3:
        return pd.Series(rng.integers(0, 5, m).astype(float)).where(rng.random(m) > 0.3)
    if kind == 4:
        return pd.Series(rng.integers(0, 4, m)).astype("Int64").where(rng.random(m) > 0.3)
    if kind == 5:
        return pd.Series(rng.random(m) > 0.5)
    return pd.Series(rng.choice(["p", "q", None], m), dtype="str")


@pytest.mark.parametrize("seed", range(2))
def test_class_value_counts_equal_the_grouping_of_objects(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for trial in range(100):
        m = int(rng.integers(0, 80))
        labels = pd.Series(rng.choice(LABELS[:rng.integers(1, len(LABELS) + 1)], m), dtype=object)
        if trial % 4 == 0:
            labels = labels.astype("category")
        values = _column(rng, trial % 7, m)
        expected = row_counts(pd.DataFrame({"class": labels.astype(object), "value": values.astype(object)}))
        got = class_value_counts(factorized(labels), values)
        pd.testing.assert_frame_equal(got, expected)
        assert int(got["n"].sum()) == m
