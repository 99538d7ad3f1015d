"""The encoder one machine's :class:`~ppdp.tasks.core.encoding.TableEncoder` fits on a whole table, fitted instead
from each column's value counts merged over the table's partitions (MDAV's distance space on partitions, and the
record-level figures of a partitioned release: :mod:`ppdp.tasks.sanitize.mdav_partitions`,
:mod:`ppdp.tasks.distributed.nearest`)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.tasks.core.counts import ValueCounts
from ppdp.tasks.core.encoding import TableEncoder


def fit_encoder(values: dict[str, ValueCounts], columns: list[str], kinds: dict[str, ColumnKind],
                orders: dict[str, list[str]] | None) -> TableEncoder:
    """The encoder :class:`TableEncoder` fits on the whole input, from each column's merged value counts: fitted on
    the distinct values (which give the same categories), then each number's and rank's fill (the median of the
    present values), centre (the mean after filling) and scale (one over the standard deviation) set from the
    counts."""
    width = max((len(values[c].values) for c in columns), default=0)
    distinct = pd.DataFrame({c: pd.Series(np.resize(np.asarray(values[c].values, dtype=object), width)
                                          if len(values[c].values) else [None] * width,
                                          dtype=values[c].values.dtype if len(values[c].values) else object)
                             for c in columns})
    encoder = TableEncoder(columns=columns, kinds=kinds, orders=orders).fit(distinct)
    raw = TableEncoder(columns=columns, kinds=kinds, orders=orders, standardize=False).fit(distinct)
    raw.codes_ = [replace(code, center=0.0, scale=1.0, fill=math.nan) for code in raw.codes_]
    codes = []
    for code, plain in zip(encoder.codes_, raw.codes_, strict=True):
        if code.kind is ColumnKind.nominal:
            codes.append(code)
            continue
        vc = values[code.name]
        probe = distinct.iloc[np.zeros(len(vc.values), dtype=np.int64)].reset_index(drop=True)
        probe[code.name] = vc.series().reset_index(drop=True)  # the column's distinct values, the others any
        x = raw.transform(probe)[:, plain.start]
        fill, center, scale = moments(x, vc.counts.astype(np.int64))
        codes.append(replace(code, fill=fill, center=center, scale=scale))
    encoder.codes_ = codes
    return encoder


def moments(x: np.ndarray, counts: np.ndarray) -> tuple[float, float, float]:
    """(the fill, centre and scale) :meth:`TableEncoder.fit` computes on the column whose distinct values (NaN:
    missing) are ``x``, each held by ``counts`` rows."""
    present = ~np.isnan(x)
    v, c = x[present], counts[present]
    order = np.argsort(v, kind="stable")
    v, c = v[order], c[order]
    n = int(c.sum())
    fill = 0.0
    if n:
        ends = np.cumsum(c)
        mid = [int(np.searchsorted(ends, i, side="right")) for i in ((n - 1) // 2, n // 2)]
        fill = float(np.mean(v[mid])) if n % 2 == 0 else float(v[mid[1]])
    total = int(counts.sum())
    filled, weights = np.append(v, fill), np.append(c, total - n).astype(np.float64)
    if total == 0:
        return fill, 0.0, 1.0
    center = math.fsum(filled * weights) / total
    sd = math.sqrt(math.fsum(weights * (filled - center) ** 2) / total)
    return fill, center, 1.0 / sd if sd > 0 else 1.0
