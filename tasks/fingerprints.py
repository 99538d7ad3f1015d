"""Record fingerprints for the series ledger: which columns identify a record (:class:`Basis`), their values hashed
column by column, and each record's keyed fingerprint (HMAC of its hashes under the ledger's key): a release's
records are recognised in a later release without the ledger holding any value."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ppdp.schemas.reports import Roles
from ppdp.tasks.core.siphash import keyed_hashes
from ppdp.tasks.keys import (  # noqa: F401  (the series key lives beside the audit key; re-exported here)
    ENV_SERIES_KEY,
    KEY_NAME,
    MIN_KEY_CHARS,
    existing_series_key,
    series_key,
)


# -- fingerprints -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Basis:
    """The columns a release's fingerprints are taken over (sorted by name) and why: ``identifiers`` (the declared
    identifiers) or ``record`` (every published, non-constant input column)."""

    columns: tuple[str, ...]
    kind: Literal["identifiers", "record"]

    @property
    def key(self) -> str:
        return json.dumps([self.kind, list(self.columns)], separators=(",", ":"))

    @classmethod
    def of(cls, columns_json: str, kind: str) -> Basis:
        return cls(tuple(json.loads(columns_json)), "identifiers" if kind == "identifiers" else "record")

    @property
    def text(self) -> str:
        if self.kind == "identifiers":
            return f"declared identifiers ({', '.join(self.columns)})"
        return (f"the input record: {len(self.columns)} columns in any order (constant and unpublished columns "
                "left out)")


def basis_of(roles: Roles, columns: Sequence[str], constant: set[str]) -> Basis:
    """A release's own basis: the declared identifiers; else every input column that is published (not dropped
    before sanitizing) and not in ``constant`` (holding one value), every published column when all are."""
    ids = sorted(str(c) for c in roles.identifiers if c in columns)
    if ids:
        return Basis(tuple(ids), "identifiers")
    dropped = set(roles.dropped)
    kept = [str(c) for c in columns if c not in dropped]
    varying = [c for c in kept if c not in constant]
    return Basis(tuple(sorted(varying or kept or [str(c) for c in columns])), "record")


def record_basis(roles: Roles, frame: pd.DataFrame) -> Basis:
    """:func:`basis_of` an input table."""
    constant = {str(c) for c in frame.columns if frame[c].nunique(dropna=False) <= 1}
    return basis_of(roles, [str(c) for c in frame.columns], constant)


_MISSING = np.uint64(0x9E3779B97F4A7C15)  # the hash of a missing value
_PRIME = np.uint64(0x100000001B3)


def _number_hashes(values: np.ndarray) -> np.ndarray:
    """Numbers (float64) hashed in one form: an integral number as the integer (``3`` and ``3.0`` agree), others as
    their float, NaN as the missing value."""
    integral = np.isfinite(values) & (np.abs(values) < 2.0**53)
    integral[integral] = values[integral] == np.round(values[integral])
    out = pd.util.hash_array(values)
    out[integral] = pd.util.hash_array(values[integral].astype(np.int64))
    out[np.isnan(values)] = _MISSING
    return out


def column_hashes(series: pd.Series) -> np.ndarray:
    """A 64-bit hash of each cell in one form whatever the column's type: a number is the same whether the column
    holds integers, floats or numbers written as text (``3``, ``3.0`` and ``"3"`` agree), booleans by their text,
    missing values alike (unkeyed: :func:`fingerprints` keys the record's hash). Text is hashed per distinct value."""
    series = series.reset_index(drop=True)
    if pd.api.types.is_integer_dtype(series) and not series.isna().any():
        return pd.util.hash_array(series.to_numpy(dtype=np.int64))  # exact, beyond 2**53 too
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return _number_hashes(series.to_numpy(dtype=np.float64, na_value=np.nan))
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    text = pd.Series(np.asarray(uniques, dtype=object)).astype("string")
    hashed = pd.util.hash_array(text.to_numpy(dtype=object)) if len(text) else np.zeros(0, dtype=np.uint64)
    if not pd.api.types.is_bool_dtype(series) and len(text):
        numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        parsed = ~np.isnan(numbers)
        if parsed.any():  # numbers written as text
            hashed[parsed] = _number_hashes(numbers[parsed])
    return np.append(hashed, _MISSING)[codes]  # code -1 (missing) takes the last


def record_hashes(frame: pd.DataFrame, columns: Sequence[str], hashed: Mapping[str, np.ndarray] | None = None
                  ) -> np.ndarray:
    """An unkeyed 64-bit hash of each row over ``columns`` taken in name order (whatever the frame's order);
    ``hashed``: :func:`column_hashes` of some of the frame's columns already taken (by name)."""
    out = np.zeros(len(frame), dtype=np.uint64)
    for name in sorted(columns):
        out = (out * _PRIME) ^ (hashed[name] if hashed is not None and name in hashed else column_hashes(frame[name]))
    return out


def fingerprints(frame: pd.DataFrame, columns: Sequence[str], hash_key: str) -> np.ndarray:
    """A keyed 64-bit fingerprint of every row of ``frame`` over ``columns`` (:func:`record_hashes`, then SipHash
    under ``hash_key``), aligned with the rows. Identical records get different fingerprints by their occurrence
    number (the first keeps the plain one, so appending rows keeps the earlier rows' fingerprints)."""
    if not len(frame):
        return np.zeros(0, dtype=np.int64)
    base = record_hashes(frame, columns)
    occurrence = pd.Series(base).groupby(base).cumcount().to_numpy()
    repeated = occurrence > 0
    if repeated.any():
        base = base.copy()
        base[repeated] = (base[repeated] * _PRIME) ^ pd.util.hash_array(occurrence[repeated].astype(np.int64))
    return keyed_hashes(base, hash_key).view(np.int64)  # pandas' keyed hash of base.view("S8"), vectorized
