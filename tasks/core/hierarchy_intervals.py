"""Interval hierarchies: nested intervals over a numeric column (round equal-width or quantile edges) or over
an ordinal column's ranks; the ``intervals`` builder of :func:`ppdp.tasks.core.hierarchy.build_hierarchy`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ppdp.schemas.hierarchy import ROOT, IntervalHierarchy
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.hierarchy_text import distinct_texts, first_row, number_text, text_of, value_texts

__all__ = ["ROUND_WIDTHS", "interval_table", "ordinal_table", "sorted_distinct"]


def sorted_distinct(series: pd.Series) -> list[str]:
    """An ordinal column's distinct values, as text, numbers first in numeric order, then text sorted."""

    def key(text: str) -> tuple:
        try:
            return (0, float(text), "")
        except ValueError:
            return (1, 0.0, text)

    return sorted(distinct_texts(series).tolist(), key=key)


ROUND_WIDTHS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
"""Mantissas of the interval widths :func:`_nice` picks (x 10^k): neighbours at most 4/3 apart, so an equal-width
level has from about 0.75 x bins to bins + 1 intervals."""


def _nice(target: float, integer: bool) -> float:
    """The smallest round width (:data:`ROUND_WIDTHS` x 10^k) at least ``target`` (integers: a whole number;
    below 10, any whole number)."""
    if target <= 0 or not math.isfinite(target) or (integer and target <= 1):
        return 1.0
    if integer and target < 10:
        return float(math.ceil(target - 1e-12))  # any whole width below 10 reads well
    exponent = math.floor(math.log10(target))
    for e in (exponent, exponent + 1):
        for m in ROUND_WIDTHS:
            w = m * 10.0**e
            if integer and w != round(w):
                continue
            if w >= target * (1 - 1e-12):
                return float(round(w, 12 - e)) if e < 0 else w
    return 10.0 ** (exponent + 2)  # pragma: no cover


def _decimals(w: float) -> int:
    """Decimals needed to write multiples of the round width ``w``."""
    for d in range(0, 17):
        if abs(round(w, d) - w) <= 1e-9 * w:
            return d
    return 17  # finer widths fail the check in _checked_edges and fall back to unrounded edges


def _edges_equal_width(lo: float, hi: float, bins: int, integer: bool) -> tuple[np.ndarray, int | None]:
    """Round edges ``e0 <= lo < ... `` every ``w`` (a round width at least (hi - lo) / bins), covering hi."""
    if not math.isfinite(hi - lo):
        return _checked_edges(np.array([np.nan]), None, lo, hi, bins)
    w = _nice((hi - lo) / bins, integer)
    d = 0 if integer else _decimals(w)
    e0 = round(math.floor(lo / w + 1e-9) * w, d)
    if e0 > lo:
        e0 = round(e0 - w, d)
    m = max(1, math.ceil((hi - e0) / w - 1e-9))
    edges = np.round(e0 + w * np.arange(m + 1), d)
    if edges[-1] < hi:  # the tolerance above cut one interval too few
        edges = np.round(e0 + w * np.arange(m + 2), d)
    return _checked_edges(edges, d, lo, hi, bins)


def _edges_quantile(x: np.ndarray, weights: np.ndarray, bins: int,
                    integer: bool) -> tuple[np.ndarray, int | None]:
    """Edges at the rows' quantiles (distinct values ``x`` sorted, ``weights`` their row counts), rounded."""
    lo, hi = float(x[0]), float(x[-1])
    d = 0 if integer else _decimals(_nice((hi - lo) / bins, False) / 10)
    scale = 10.0**d
    cum = np.cumsum(weights) / weights.sum()
    probs = np.arange(1, bins) / bins
    inner = x[np.minimum(np.searchsorted(cum, probs - 1e-12, side="left") + 1, len(x) - 1)]
    if not (math.isfinite(hi - lo) and math.isfinite(lo * scale) and math.isfinite(hi * scale)):
        return _checked_edges(np.array([np.nan]), None, lo, hi, bins)
    e0 = math.floor(lo * scale + 1e-9) / scale
    if e0 > lo:
        e0 = round(e0 - 1 / scale, d)
    top = math.ceil(hi * scale - 1e-9) / scale
    if top < hi or top <= e0:
        top = round(max(top, e0) + 1 / scale, d)
    inner = np.unique(np.round(inner, d))
    inner = inner[(inner > e0) & (inner < top)]
    return _checked_edges(np.concatenate([[e0], inner, [top]]), d, lo, hi, bins)


def _checked_edges(edges: np.ndarray, d: int | None, lo: float, hi: float,
                   bins: int) -> tuple[np.ndarray, int | None]:
    """``edges`` if they are finite, increasing and cover [lo, hi]; else (widths too fine or too coarse for
    rounding, e.g. a range of 1e-300) ``bins`` unrounded equal-width edges, written as ``str()`` writes them."""
    if (np.all(np.isfinite(edges)) and len(edges) >= 2 and np.all(np.diff(edges) > 0) and edges[0] <= lo
            and edges[-1] >= hi):
        return edges, d
    if hi > lo:
        t = np.linspace(0.0, 1.0, bins + 1)
        edges = np.unique(np.concatenate([[lo], lo * (1 - t[1:-1]) + hi * t[1:-1], [hi]]))  # no overflow
    else:
        edges = np.array([lo, np.nextafter(lo, np.inf)])
    return edges, None


def _edge_text(e: float, d: int | None) -> str:
    if d is None or d == 0:
        return number_text(float(e))
    text = f"{e:.{d}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _nested_levels(m: int, fanout: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The interval levels above 0 (before the root) over ``m`` finest intervals: per level, its width in
    finest intervals and, per interval j of that level, its first and last-plus-one edge index."""
    out = []
    width = 1
    while math.ceil(m / width) > 1:
        start = np.arange(0, m, width)
        out.append((width, start, np.minimum(start + width, m)))
        width *= fanout
    return out


def _drop_repeated_levels(table: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop inner levels that group the rows exactly like the level below (same number of labels)."""
    keep = [0]
    previous = pd.unique(table[:, 0]).size
    for level in range(1, table.shape[1] - 1):
        count = pd.unique(table[:, level]).size
        if count < previous:
            keep.append(level)
            previous = count
    keep.append(table.shape[1] - 1)
    return table[:, keep], bounds[:, keep]


def interval_table(series: pd.Series, spec: IntervalHierarchy, label: str, *,
                    nominal: bool) -> tuple[np.ndarray, np.ndarray]:
    """Nested intervals over a numeric column.

    Parameters
    ----------
    series : Series
        The column; its distinct values (as :func:`text_of`) become the rows, read as numbers.
    spec : IntervalHierarchy
        ``binning``: ``equal_width`` cuts [min, max] every ``w``, the smallest round width (1, 1.2, 1.5, 2, 2.5,
        3, 4, 5, 6, 8 x 10^k; for integer columns a whole number) at least (max - min) / bins, edges at multiples
        of ``w`` (so about ``bins`` intervals, from 0.75 x bins to bins + 1, with readable labels like
        ``[40-50)``);
        ``quantile`` puts edges at the
        rows' quantiles ``1/bins, 2/bins, ...`` (rounded to one digit more than an equal-width edge; equal
        edges merge, so there may be fewer intervals). Each further level merges ``fanout`` neighbouring
        intervals; the level that would hold a single interval is the root ``*``. Levels that group the values
        exactly like the level below (e.g. unit intervals over few integers) are dropped.
    label : str
        The column, for messages.
    nominal : bool
        The column was tagged nominal (intervals were asked for in the spec): a non-number is a SpecError.

    Returns
    -------
    table : ndarray of object, shape (n_values, height + 1)
        Labels closed-open ``[40-50)``; the last interval is closed ``[80-90]`` when the maximum is its upper
        edge. Integer columns (every value whole) show integer edges.
    bounds : ndarray of float, shape (n_values, height + 1, 2)
        ``[v, v]`` at level 0, each interval's edges above, the outermost edges at the root.
    """
    cell_codes, uniques = pd.factorize(series, use_na_sentinel=True)
    texts = value_texts(uniques)
    numbers = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(numbers) & ~pd.isna(pd.Series(texts, dtype=object)).to_numpy()
    if bad.any():
        rows = np.isin(cell_codes, np.flatnonzero(bad))
        what = "a value that is not a finite number"
        message = (f"{label}: {int(rows.sum())} row(s) hold {what} (first at data row "
                   f"{int(np.flatnonzero(rows)[0]) + 1}), which an interval hierarchy cannot place")
        raise (SpecError if nominal else InputError)(message)
    weights = np.bincount(cell_codes[cell_codes >= 0], minlength=len(texts)).astype(float)
    keep = ~np.isnan(numbers)
    frame = pd.DataFrame({"text": texts[keep], "x": numbers[keep], "w": weights[keep]})
    frame = frame.groupby("text", sort=False).agg(x=("x", "first"), w=("w", "sum")).reset_index()
    if frame.empty:
        return np.empty((0, 2), dtype=object), np.empty((0, 2, 2))
    x = frame["x"].to_numpy(dtype=float)
    integer = bool(np.all(x == np.round(x)))
    lo, hi = float(x.min()), float(x.max())
    if spec.binning == "quantile":
        order = np.argsort(x, kind="stable")
        edges, d = _edges_quantile(x[order], frame["w"].to_numpy(dtype=float)[order], spec.bins, integer)
    else:
        edges, d = _edges_equal_width(lo, hi, spec.bins, integer)
    m = len(edges) - 1
    index = np.clip(np.searchsorted(edges[1:-1], x, side="right"), 0, m - 1)
    edge_texts = [_edge_text(e, d) for e in edges.tolist()]
    n = len(x)
    columns = [frame["text"].to_numpy(dtype=object)]
    bounds = [np.stack([x, x], axis=1)]
    for width, start, stop in _nested_levels(m, spec.fanout):
        closed = (stop == m) & (hi >= edges[-1])
        written = np.array([f"[{edge_texts[a]}-{edge_texts[b]}{']' if c else ')'}" for a, b, c in
                            zip(start.tolist(), stop.tolist(), closed.tolist(), strict=True)], dtype=object)
        row = index // width
        columns.append(written[row])
        bounds.append(np.stack([edges[start][row], edges[stop][row]], axis=1))
    columns.append(np.full(n, ROOT, dtype=object))
    bounds.append(np.tile([edges[0], edges[-1]], (n, 1)))
    table, bnd = np.column_stack(columns), np.stack(bounds, axis=1)
    return _drop_repeated_levels(table, bnd)


def ordinal_table(series: pd.Series, categories: list[str], spec: IntervalHierarchy,
                   label: str) -> tuple[np.ndarray, np.ndarray]:
    """Nested intervals over an ordinal column's ranks.

    The categories' ranks 0..n-1 are cut like an integer column (:func:`interval_table`, same binning and
    fan-out; ``quantile`` weights each rank by its rows); a label names the first and last category it
    holds, ``[Primary-HS-grad]`` (one category: ``[Primary]``). Every category of ``categories`` is a row,
    present in the data or not; a cell outside ``categories`` is an :class:`InputError` naming its row.
    Bounds are ranks: ``[r, r]`` at level 0, ``[first, last + 1)`` above.
    """
    categories = [str(c) for c in categories]
    if len(set(categories)) != len(categories):
        raise SpecError(f"{label}: its order lists a category twice")
    outside = set(distinct_texts(series).tolist()) - set(categories)
    if outside:
        count, first = first_row(series, outside)
        raise InputError(f"{label}: {count} row(s) hold a value that is not in its declared order (first at data "
                         f"row {first})")
    n = len(categories)
    if n == 0:
        return np.empty((0, 2), dtype=object), np.empty((0, 2, 2))
    ranks = np.arange(n, dtype=float)
    if spec.binning == "quantile":
        counts = text_of(series).value_counts()
        weights = np.array([float(counts.get(c, 0)) for c in categories]) + 1e-9
        edges, _ = _edges_quantile(ranks, weights, spec.bins, True)
        edges[-1] = n  # ranks are unit cells [r, r + 1): the top edge is n, open
    else:  # exact widths: the labels name categories, so round edges buy nothing
        width = max(1, math.ceil(n / spec.bins))
        edges = np.append(np.arange(0, n, width, dtype=float), float(n))
    m = len(edges) - 1
    index = np.clip(np.searchsorted(edges[1:-1], ranks, side="right"), 0, m - 1)
    columns = [np.array(categories, dtype=object)]
    bounds = [np.stack([ranks, ranks], axis=1)]
    for width, start, stop in _nested_levels(m, spec.fanout):
        first = np.clip(edges[start], 0, n - 1).astype(int)
        last = np.clip(edges[stop] - 1, 0, n - 1).astype(int)
        written = np.array([f"[{categories[a]}]" if a == b else f"[{categories[a]}-{categories[b]}]"
                            for a, b in zip(first.tolist(), last.tolist(), strict=True)], dtype=object)
        row = index // width
        columns.append(written[row])
        bounds.append(np.stack([first[row], last[row] + 1], axis=1).astype(float))
    columns.append(np.full(n, ROOT, dtype=object))
    bounds.append(np.tile([0.0, float(n)], (n, 1)))
    table, bnd = np.column_stack(columns), np.stack(bounds, axis=1)
    return _drop_repeated_levels(table, bnd)
