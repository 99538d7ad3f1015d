"""The checks every pure algorithm function makes of its input: a finite 2-D float64 matrix, a whole number of at
least 1 (a group size, a leaf size)."""

from __future__ import annotations

import operator

import numpy as np

__all__ = ["as_matrix", "positive_int"]


def positive_int(value: int, what: str, error: type[Exception] = ValueError) -> int:
    """``value`` as an int of at least 1 (a bool is refused), or ``error`` naming it ``what`` (``"k"``,
    ``"leaf_size"``, ``"suppression: k"``, ...)."""
    if isinstance(value, bool):
        raise error(f"{what} must be an integer")
    value = operator.index(value)
    if value < 1:
        raise error(f"{what} must be at least 1, got {value}")
    return value


def as_matrix(x: np.ndarray, what: str = "x", *, need_columns: bool = False) -> np.ndarray:
    """``x`` as a 2-D float64 matrix (no copy when it already is one), or ValueError naming it ``what``.

    Parameters
    ----------
    x : array-like
        Integers, floats or booleans, 2-D, every value finite.
    what : str
        The argument's name in the messages (``"x"``, ``"the matrix"``, ...).
    need_columns : bool
        Refuse a matrix with no column (MDAV needs at least one).
    """
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{what} must be a 2-D matrix (rows, columns), got {x.ndim} dimension(s)")
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating) or x.dtype == bool):
        raise ValueError(f"{what} must hold real numbers")
    if need_columns and x.shape[1] == 0:
        raise ValueError(f"{what} has no columns")
    x = x.astype(np.float64, copy=False)
    if not np.isfinite(x).all():
        raise ValueError(f"{what} holds missing or infinite values")
    return x
