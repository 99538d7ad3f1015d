"""Count tables: a column's distinct values with their counts (:class:`ValueCounts`), a table's distinct rows with
their counts (:func:`row_counts`), both merged over consecutive partitions in order, and pass 1's merged counts of a
partitioned input (:class:`Counts`). What the partitioned release counts (:mod:`ppdp.tasks.distributed`) and what a
method's capability on partitions reads (:mod:`ppdp.tasks.sanitize.partitions`): no rows, only counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class ValueCounts:
    """A column's distinct values (missing included, as one value) in order of first appearance, and how many
    rows hold each."""

    values: pd.Index
    counts: np.ndarray

    @classmethod
    def of(cls, series: pd.Series) -> ValueCounts:
        codes, uniques = pd.factorize(series, use_na_sentinel=False)
        return cls(pd.Index(uniques, dtype=series.dtype if not isinstance(uniques, pd.Index) else uniques.dtype),
                   np.bincount(np.asarray(codes, dtype=np.int64), minlength=len(uniques)).astype(np.int64))

    @classmethod
    def merge(cls, parts: list[ValueCounts]) -> ValueCounts:
        """The counts of consecutive partitions as one (first appearance over the partitions in order)."""
        parts = [p for p in parts if len(p.values)] or parts[:1]
        if len(parts) == 1:
            return parts[0]
        values = parts[0].values.append([p.values for p in parts[1:]])
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        weights = np.concatenate([p.counts for p in parts]).astype(np.float64)
        total = np.bincount(np.asarray(codes, dtype=np.int64), weights=weights, minlength=len(uniques))
        return cls(pd.Index(uniques), np.rint(total).astype(np.int64))

    def series(self) -> pd.Series:
        """The distinct values as a column (one row each), for builders that need only the distinct values."""
        return pd.Series(self.values, dtype=self.values.dtype)

    def as_counts(self) -> pd.Series:
        """Counts by value, missing left out (as ``Series.value_counts(dropna=True)`` counts)."""
        present = ~pd.isna(self.values)
        return pd.Series(self.counts[present], index=self.values[present])


def column_counts(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, ValueCounts]:
    """Each of ``columns``' distinct values in ``frame`` with their counts (:meth:`ValueCounts.of`)."""
    return {c: ValueCounts.of(frame[c]) for c in columns}


def merged_column_counts(parts: Sequence[dict[str, ValueCounts]]) -> dict[str, ValueCounts]:
    """:func:`column_counts` of consecutive partitions as one, column by column (the first part's columns)."""
    return {c: ValueCounts.merge([p[c] for p in parts]) for c in parts[0]} if parts else {}


def row_counts(table: pd.DataFrame) -> pd.DataFrame:
    """A count table: ``table``'s distinct rows (missing a value of its own) in order of first appearance, with how
    many rows hold each (column ``n``)."""
    return table.groupby(list(table.columns), dropna=False, sort=False).size().reset_index(name="n")


def summed_counts(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Count tables of consecutive partitions (:func:`row_counts`) as one: first appearance over the partitions in
    order, ``n`` summed."""
    tables = [t for t in tables if len(t)] or list(tables[:1])
    if len(tables) == 1:
        return tables[0]
    joined = pd.concat(tables, ignore_index=True)
    return joined.groupby([c for c in joined.columns if c != "n"], dropna=False, sort=False)["n"].sum().reset_index()


@dataclass
class Counts:
    """Pass 1 merged: each counted column's values and counts over the whole input, its values by class, and the
    rows of each partition."""

    columns: dict[str, ValueCounts]
    by_class: dict[str, pd.DataFrame]
    rows: list[int]

    @property
    def total(self) -> int:
        return int(sum(self.rows))
