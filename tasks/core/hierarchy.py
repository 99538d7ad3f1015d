"""Generalization hierarchies: each quasi-identifier value and its chain of ever coarser labels, up to ``*``.

A :class:`Hierarchy` is a table with one row per value the column may hold: column 0 is the value as text
(:func:`text_of`), column ``i`` its label at generalization level ``i``, the last column ``*`` (the root, the
whole domain). This is ARX's representation (Prasser, Kohlmayer, Kuhn, "The ARX data anonymization tool",
Handbook of Big Data Privacy, 2020, section 3.1, and ARX's CSV hierarchy files: ``value;level1;...;*``), and the
generalization hierarchies of Samarati and Sweeney's full-domain generalization (Samarati, "Protecting
respondents' identities in microdata release", IEEE TKDE 13(6), 2001, section 3: value generalization
hierarchies).

Builders (:func:`build_hierarchy`, chosen by a :mod:`ppdp.schemas.hierarchy` spec or, without one, by the
column's kind):

* ``intervals``: nested intervals over numbers (equal width or quantiles), ``fanout`` neighbours merged per
  level, labels ``[40-50)`` (ARX's interval hierarchies, closed-open, the last interval closed);
* ``dates``: day -> month -> quarter -> year -> ``*``;
* ``prefix``: codes masked from the right: ``13053`` -> ``1305*`` -> ... -> ``*``;
* ``flat``: value -> ``*``;
* ``tree``: a category tree written in the spec;
* ``file``: an ARX CSV (:func:`read_hierarchy`).

Every hierarchy is checked before any work (:func:`validate_hierarchy`): it covers every value of its column,
has the same number of levels on every row, lists no value twice with different generalizations, and each
level is a coarsening of the one below. Messages name the column (``column 3 ('zip')``), the level and row
numbers, never a value or a label.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.hierarchy import (
    ROOT,
    DateHierarchy,
    FileHierarchy,
    FlatHierarchy,
    HierarchySpec,
    IntervalHierarchy,
    PrefixHierarchy,
    TreeHierarchy,
)
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.labels import column_label, key_text

__all__ = [
    "ROOT",
    "Hierarchy",
    "build_hierarchy",
    "hierarchies_for",
    "read_hierarchy",
    "text_of",
    "validate_hierarchy",
]

_DAY_NS = 86_400 * 10**9


def read_hierarchy(path: Path) -> pd.DataFrame:
    """An ARX hierarchy CSV (';', no header): each row a value and its generalizations up to '*'."""
    return pd.read_csv(path, sep=";", header=None, dtype=str, keep_default_na=False)


# -- the hierarchy -----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Hierarchy:
    """One column's generalization hierarchy.

    Parameters
    ----------
    column : str
        The column's name.
    table : ndarray of object (str), shape (n_values, height + 1)
        One row per value: column 0 the value as text (:func:`text_of`), column ``i`` its label at level ``i``,
        the last column ``*``. Rows are unique in column 0.
    kind : str
        ``"file"``, ``"intervals"``, ``"dates"``, ``"prefix"``, ``"flat"`` or ``"tree"``.
    bounds : ndarray of float, shape (n_values, height + 1, 2), optional
        Intervals and dates: each label's numeric range ``[low, high)`` (dates in nanoseconds since the epoch,
        like :func:`ppdp.tasks.core.encoding.as_numbers`; an ordinal column's intervals in ranks of its order).
        Level 0 of a number is ``[v, v]``; an interval closed on the right (the last one, when the column's
        maximum is its upper edge) has ``high`` included. None for other kinds.

    Notes
    -----
    Cells are mapped to rows once (:meth:`codes`); everything else works on those int64 codes:
    ``h.level_codes(level)[codes]`` groups records at a level, ``h.labels(codes, level)`` writes them.
    """

    column: str
    table: np.ndarray
    kind: str
    bounds: np.ndarray | None = None
    _index: pd.Index = field(init=False, repr=False, compare=False)
    _cache: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table = np.asarray(self.table, dtype=object)
        if table.ndim != 2 or table.shape[1] < 2:
            raise ValueError("a hierarchy table needs two dimensions and at least two columns (value and root)")
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "_index", pd.Index(table[:, 0], dtype=object))
        object.__setattr__(self, "_cache", {})

    @property
    def height(self) -> int:
        """The number of generalization levels above the value (the root's level)."""
        return int(self.table.shape[1]) - 1

    def codes(self, series: pd.Series, position: int | None = None) -> np.ndarray:
        """Each cell's row in :attr:`table` (int64); a missing cell is -1.

        Parameters
        ----------
        series : Series
            The column's cells (any dtype; compared as :func:`text_of`).
        position : int, optional
            The column's 1-based position, for messages (``column 3 ('zip')``).

        Raises
        ------
        InputError
            A non-missing cell is not a value of the hierarchy: names the column, the number of such rows and
            the first one's 1-based data row, never the value.

        Notes
        -----
        Vectorized: the cells are factorized (distinct values once), the distinct texts looked up with
        ``pd.Index.get_indexer``; no Python per row.
        """
        if not self._index.is_unique:
            raise SpecError(f"{self._label(position)}: its hierarchy lists a value twice")
        cell_codes, uniques = pd.factorize(series, use_na_sentinel=True)
        texts = _texts(uniques)
        found = self._index.get_indexer(pd.Index(texts, dtype=object))
        found = np.append(found.astype(np.int64), -1)  # cell code -1 (missing) picks the appended -1
        out = found[cell_codes]
        uncovered = (out < 0) & (cell_codes >= 0)
        if uncovered.any():
            first = int(np.flatnonzero(uncovered)[0]) + 1
            raise InputError(
                f"{self._label(position)}: {int(uncovered.sum())} row(s) hold a value that its hierarchy does not "
                f"cover (first at data row {first}): add the value to the hierarchy"
            )
        return out

    def labels(self, codes: np.ndarray, level: int) -> np.ndarray:
        """The label of each cell at ``level`` (object array of str); None where the code is -1 (missing)."""
        level = self._level(level)
        codes = np.asarray(codes, dtype=np.int64)
        column = np.append(self.table[:, level], np.array([None], dtype=object))  # code -1 picks the appended None
        return column[codes]

    def level_codes(self, level: int) -> np.ndarray:
        """Per table row, the dense id (0, 1, ... in order of first row) of its label at ``level`` (int64).

        ``h.level_codes(level)[codes]`` groups cells by their label at ``level`` (index with -1-free codes;
        a missing cell's code -1 would pick the last row).
        """
        level = self._level(level)
        key = ("ids", level)
        if key not in self._cache:
            ids, _ = pd.factorize(pd.Series(self.table[:, level], dtype=object))
            ids = ids.astype(np.int64)
            ids.flags.writeable = False
            self._cache[key] = ids
        return self._cache[key]

    def leaves(self, level: int) -> np.ndarray:
        """Per table row, how many table rows (values) share its label at ``level`` (int64); 1 at level 0,
        the number of rows at the root. ARX's loss measure divides by it."""
        level = self._level(level)
        key = ("leaves", level)
        if key not in self._cache:
            ids = self.level_codes(level)
            counts = np.bincount(ids)[ids].astype(np.int64)
            counts.flags.writeable = False
            self._cache[key] = counts
        return self._cache[key]

    def _level(self, level: int) -> int:
        level = int(level)
        if not 0 <= level <= self.height:
            raise ValueError(f"level {level} is outside 0..{self.height}")
        return level

    def _label(self, position: int | None) -> str:
        return column_label(position, self.column) if position is not None else f"column {key_text(self.column)}"


# -- cell text -----------------------------------------------------------------------------------------
def text_of(series: pd.Series) -> pd.Series:
    """How each cell is written as a hierarchy value (object Series, same index; missing stays None).

    Integers (and floats with no fractional part) without ``.0``; dates as ISO ``yyyy-mm-dd`` (a time of day
    is dropped); anything else as ``str()``. Computed once per distinct value.
    """
    cell_codes, uniques = pd.factorize(series, use_na_sentinel=True)
    texts = np.append(_texts(uniques), np.array([None], dtype=object))  # code -1 (missing) picks None
    return pd.Series(texts[cell_codes], index=series.index, dtype=object, name=series.name)


def _texts(uniques: pd.Index | np.ndarray) -> np.ndarray:
    """:func:`text_of` for an array of distinct non-missing values (object array of str)."""
    if isinstance(uniques, pd.DatetimeIndex) or pd.api.types.is_datetime64_any_dtype(uniques.dtype):
        stamps = pd.DatetimeIndex(uniques)
        return np.asarray(stamps.strftime("%Y-%m-%d"), dtype=object)
    dtype = getattr(uniques, "dtype", None)
    if dtype is not None and (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
        return np.asarray(pd.Index(uniques).astype(str), dtype=object)
    if dtype is not None and pd.api.types.is_float_dtype(dtype):
        return _float_texts(np.asarray(uniques, dtype=float))
    values = np.asarray(uniques, dtype=object)
    return np.array([_value_text(v) for v in values.tolist()], dtype=object)


def _float_texts(x: np.ndarray) -> np.ndarray:
    """Floats as ``str()`` writes them (NumPy's shortest repr is the same), whole ones without ``.0``."""
    out = x.astype(str).astype(object)
    whole = np.isfinite(x) & (np.abs(x) < 2.0**63)
    whole[whole] = x[whole] == np.floor(x[whole])
    out[whole] = x[whole].astype(np.int64).astype(str).astype(object)
    return out


def _number_text(v: float) -> str:
    if math.isfinite(v) and v == math.floor(v) and abs(v) < 2**63:
        return str(int(v))
    return str(v)


def _value_text(v: object) -> str | None:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float | np.floating):
        return None if math.isnan(v) else _number_text(float(v))
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, pd.Timestamp | np.datetime64):
        return pd.Timestamp(v).strftime("%Y-%m-%d")
    return str(v)


# -- building ------------------------------------------------------------------------------------------
def build_hierarchy(
    series: pd.Series,
    spec: HierarchySpec | None,
    *,
    kind: ColumnKind,
    column: str,
    position: int | None = None,
    base: Path | None = None,
    order: list[str] | None = None,
) -> Hierarchy:
    """The hierarchy of one column, from its spec or, without one, chosen by the column's kind.

    Parameters
    ----------
    series : Series
        The column's cells (the values the hierarchy must cover; builders other than ``file`` and ``tree`` list
        exactly its distinct values, an ordinal order all of its categories).
    spec : HierarchySpec or None
        What to build (:mod:`ppdp.schemas.hierarchy`). None: automatic, by ``kind``:

        * a date column (datetime dtype) -> ``dates``;
        * numeric -> ``intervals`` (equal width, 16 bins, fan-out 2; integer columns get integer bounds);
        * ordinal -> ``intervals`` over the ranks of ``order`` (or of the sorted distinct values), labels
          naming the first and last category: ``[Primary-HS-grad]``;
        * nominal text or integers whose values are codes of equal length (two or more letters or digits,
          with at least one digit, e.g. postcodes) -> ``prefix`` (step 1);
        * any other nominal, and booleans -> ``flat``.
    kind : ColumnKind
        The column's kind (from tagging).
    column : str
        The column's name.
    position : int, optional
        The column's 1-based position, for messages.
    base : Path, optional
        The folder a relative hierarchy file is resolved against (the spec's folder).
    order : list of str, optional
        An ordinal column's declared order, lowest first.

    Returns
    -------
    Hierarchy
        Structurally checked (same number of levels on every row, no value listed twice with different
        generalizations, each level a coarsening of the previous, a single root); call
        :func:`validate_hierarchy` to also check that it covers the column.

    Raises
    ------
    SpecError
        The spec does not fit the column (intervals over text, a file that cannot be read, a tree that is not
        a mapping), or the hierarchy is malformed.
    InputError
        A cell cannot be read as the builder needs (a non-number for intervals, a non-date for dates, a value
        outside the declared order): names the column and the first such data row.
    """
    label = column_label(position, column) if position is not None else f"column {key_text(column)}"
    is_date = pd.api.types.is_datetime64_any_dtype(series)
    if spec is None:
        if is_date:
            spec = DateHierarchy()
        elif pd.api.types.is_bool_dtype(series):
            spec = FlatHierarchy()
        elif kind is ColumnKind.numeric:
            spec = IntervalHierarchy()
        elif kind is ColumnKind.ordinal:
            spec = IntervalHierarchy()
        elif _looks_like_codes(series):
            spec = PrefixHierarchy()
        else:
            spec = FlatHierarchy()
    if isinstance(spec, FileHierarchy):
        path = spec.file if spec.file.is_absolute() or base is None else Path(base) / spec.file
        table, kind_name, bounds = _file_table(path, label), "file", None
    elif isinstance(spec, TreeHierarchy):
        table, kind_name, bounds = _tree_table(spec.tree, label), "tree", None
    elif isinstance(spec, FlatHierarchy):
        table, kind_name, bounds = _flat_table(series), "flat", None
    elif isinstance(spec, PrefixHierarchy):
        table, kind_name, bounds = _prefix_table(series, spec.step), "prefix", None
    elif isinstance(spec, DateHierarchy):
        table, bounds = _date_table(series, label)
        kind_name = "dates"
    elif isinstance(spec, IntervalHierarchy):
        if is_date:
            raise SpecError(f"{label}: a date column takes a hierarchy of type dates, not intervals")
        if kind is ColumnKind.ordinal:
            categories = list(order) if order else _sorted_distinct(series)
            table, bounds = _ordinal_table(series, categories, spec, label)
        else:
            table, bounds = _interval_table(series, spec, label, nominal=kind is ColumnKind.nominal)
        kind_name = "intervals"
    else:  # pragma: no cover - the union is closed
        raise SpecError(f"{label}: unknown hierarchy type")
    table, bounds = _unique_rows(table, bounds, label)
    _check_table(table, label, kind_name)
    return Hierarchy(column=column, table=table, kind=kind_name, bounds=bounds)


def hierarchies_for(
    frame: pd.DataFrame,
    roles: Roles,
    specs: Mapping[str, HierarchySpec],
    *,
    base: Path | None = None,
) -> dict[str, Hierarchy]:
    """One validated hierarchy per quasi-identifier of ``roles``, in their order.

    Parameters
    ----------
    frame : DataFrame
        The input table.
    roles : Roles
        :class:`ppdp.schemas.reports.Roles` (``quasi_identifiers``, ``get(name)`` with ``kind``, ``order``,
        ``position`` 0-based).
    specs : mapping
        Column name -> :data:`HierarchySpec`; a quasi-identifier without one gets the automatic hierarchy of
        its kind (:func:`build_hierarchy`). Specs for columns that are in the frame but are not
        quasi-identifiers are ignored (they may serve other steps, e.g. hierarchical t-closeness).
    base : Path, optional
        The folder relative hierarchy files are resolved against.

    Raises
    ------
    SpecError
        A spec names a column that is not in the frame (the key is named unless it looks like a data value).
    InputError, SpecError
        From :func:`build_hierarchy` and :func:`validate_hierarchy`.
    """
    for name in specs:
        if name not in frame.columns:
            raise SpecError(f"a hierarchy is given for column {key_text(name)}, which is not in the input")
    out: dict[str, Hierarchy] = {}
    for name in roles.quasi_identifiers:
        tag = roles.get(name)
        if tag.position is not None:
            position = int(tag.position) + 1
        else:
            position = int(cast(int, frame.columns.get_loc(name))) + 1  # column names are unique
        h = build_hierarchy(frame[name], specs.get(name), kind=tag.kind, column=name, position=position,
                            base=base, order=tag.order)
        validate_hierarchy(h, frame[name], position)
        out[name] = h
    return out


def validate_hierarchy(h: Hierarchy, series: pd.Series, position: int | None = None) -> None:
    """Check a hierarchy against its column before any work.

    * the same number of levels on every row (no missing label; in a ``file`` hierarchy no empty field either,
      while elsewhere ``""`` is a value and a label like any other), and a single label at the last level (a
      hierarchy with no row, built for a column that is entirely missing, passes);
    * no value listed twice;
    * each level a coarsening of the previous one: two rows with the same label at level i have the same
      label at level i + 1;
    * every non-missing cell of ``series`` is a value of the hierarchy.

    Raises
    ------
    SpecError
        A structural fault: names the column, the level or the hierarchy row, never a label.
    InputError
        A cell the hierarchy does not cover: names the column and the first such data row (1-based), never
        the value.
    """
    label = h._label(position)
    _check_table(h.table, label, h.kind)
    h.codes(series, position)


# -- structural checks ---------------------------------------------------------------------------------
def _check_table(table: np.ndarray, label: str, kind: str) -> None:
    """The structural checks of :func:`validate_hierarchy`. An empty string is a label like any other (text and
    Parquet columns hold ``""`` as a value), save in a ``file`` hierarchy, where an empty field is a short row."""
    if table.shape[0] == 0:  # a column with no value at all (files and trees refuse to be empty)
        return
    for level in range(table.shape[1]):
        column = table[:, level]
        empty = pd.isna(column)
        if kind == "file":
            empty |= column == ""
        if empty.any():
            raise SpecError(
                f"{label}: its hierarchy's row {int(np.flatnonzero(empty)[0]) + 1} has an empty label at level "
                f"{level} (every row needs the same number of levels)"
            )
    values = pd.Index(table[:, 0], dtype=object)
    if not values.is_unique:
        twice = values.duplicated()
        raise SpecError(
            f"{label}: its hierarchy lists a value twice with different generalizations (row "
            f"{int(np.flatnonzero(twice)[0]) + 1})"
        )
    if pd.unique(table[:, -1]).size != 1:
        raise SpecError(f"{label}: its hierarchy's last level (level {table.shape[1] - 1}) must be one label")
    ids = [pd.factorize(table[:, i])[0].astype(np.int64) for i in range(table.shape[1])]
    for i in range(table.shape[1] - 1):
        pairs = pd.unique(ids[i] * (int(ids[i + 1].max()) + 1) + ids[i + 1])
        if len(pairs) > int(ids[i].max()) + 1:
            raise SpecError(
                f"{label}: its hierarchy's level {i + 1} is not a coarsening of level {i} (values with the same "
                f"label at level {i} get different labels at level {i + 1})"
            )


def _unique_rows(table: np.ndarray, bounds: np.ndarray | None, label: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Drop rows repeated identically (a value listed twice the same way); different repeats stay (an error)."""
    if len(table) == 0 or pd.Index(table[:, 0], dtype=object).is_unique:
        return table, bounds
    keep = ~pd.DataFrame(table).duplicated().to_numpy()
    return table[keep], (bounds[keep] if bounds is not None else None)


# -- builders ------------------------------------------------------------------------------------------
def _distinct_texts(series: pd.Series) -> np.ndarray:
    """The column's distinct non-missing values as text, in order of first occurrence."""
    _, uniques = pd.factorize(series, use_na_sentinel=True)
    texts = _texts(uniques)
    texts = texts[~pd.isna(pd.Series(texts, dtype=object)).to_numpy()]
    return np.asarray(pd.unique(pd.Series(texts, dtype=object)), dtype=object)


def _first_row(series: pd.Series, bad_texts: set[str]) -> tuple[int, int]:
    """How many rows hold one of ``bad_texts``, and the first one's 1-based data row."""
    mask = text_of(series).isin(list(bad_texts)).to_numpy()
    return int(mask.sum()), int(np.flatnonzero(mask)[0]) + 1


def _flat_table(series: pd.Series) -> np.ndarray:
    """value -> ``*``.

    Parameters
    ----------
    series : Series
        The column; its distinct non-missing values become the rows.

    Returns
    -------
    ndarray of object, shape (n_values, 2)
    """
    values = _distinct_texts(series)
    if len(values) == 0:
        return np.empty((0, 2), dtype=object)
    return np.column_stack([values, np.full(len(values), ROOT, dtype=object)])


def _looks_like_codes(series: pd.Series) -> bool:
    """Text (or integers) whose distinct values are codes of one length >= 2, letters or digits with at least
    one digit (postcodes read as text or as integers)."""
    if (pd.api.types.is_float_dtype(series) or pd.api.types.is_bool_dtype(series)
            or pd.api.types.is_datetime64_any_dtype(series)):
        return False
    values = pd.Series(_distinct_texts(series), dtype=object)
    if len(values) < 2:
        return False
    lengths = values.str.len()
    if lengths.nunique() != 1 or int(lengths.iloc[0]) < 2:
        return False
    return bool(values.str.fullmatch(r"[0-9A-Za-z]+").all() and values.str.contains(r"[0-9]").all())


def _prefix_table(series: pd.Series, step: int) -> np.ndarray:
    """Codes masked from the right, ``step`` characters per level.

    Parameters
    ----------
    series : Series
        The column; its distinct values (as text) become the rows.
    step : int
        Characters masked per level.

    Returns
    -------
    ndarray of object, shape (n_values, height + 1)
        Level ``i`` (0 < i < height) masks the last ``min(i * step, len)`` characters with ``*``, keeping the
        value's length: ``13053`` -> ``1305*`` -> ``130**`` -> ``13***`` -> ``1****`` -> ``*``. The height is
        ``ceil(longest length / step)``; the last level is ``*``. A shorter value is fully masked earlier
        (``***`` for a 3-character value) and stays so until the root; values of different lengths never
        share a label below the root.
    """
    values = pd.Series(_distinct_texts(series), dtype=object)
    if len(values) == 0:
        return np.empty((0, 2), dtype=object)
    text = values.astype(object)
    lengths = text.str.len().to_numpy()
    longest = max(int(lengths.max()), 1)
    height = max(math.ceil(longest / step), 1)
    columns = [text.to_numpy(dtype=object)]
    for level in range(1, height):
        masked = np.minimum(level * step, lengths)
        kept = lengths - masked
        out = [v[:k] + "*" * m for v, k, m in zip(text.tolist(), kept.tolist(), masked.tolist(), strict=True)]
        columns.append(np.array(out, dtype=object))
    columns.append(np.full(len(values), ROOT, dtype=object))
    return np.column_stack(columns)


def _date_table(series: pd.Series, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Dates: day (``2020-03-14``) -> month (``2020-03``) -> quarter (``2020-Q1``) -> year (``2020``) -> ``*``.

    Parameters
    ----------
    series : Series
        A datetime column, or text holding dates (parsed; a cell that is not a date is an :class:`InputError`
        naming its row). A time of day is dropped (the value is the day).
    label : str
        The column, for messages.

    Returns
    -------
    table : ndarray of object, shape (n_days, 5)
    bounds : ndarray of float, shape (n_days, 5, 2)
        Nanoseconds since the epoch, ``[start, next start)`` of the day, month, quarter and year; the root
        spans the first to the last day.
    """
    if pd.api.types.is_datetime64_any_dtype(series):
        stamps = series
    else:
        stamps = pd.to_datetime(series, errors="coerce", format="ISO8601")
        bad = stamps.isna().to_numpy() & series.notna().to_numpy()
        if bad.any():
            raise InputError(
                f"{label}: {int(bad.sum())} row(s) hold a value that is not a date (first at data row "
                f"{int(np.flatnonzero(bad)[0]) + 1}), which a date hierarchy cannot place"
            )
    if getattr(stamps.dt, "tz", None) is not None:
        stamps = stamps.dt.tz_localize(None)
    days = pd.DatetimeIndex(pd.unique(stamps.dropna().dt.normalize())).sort_values()
    n = len(days)
    if n == 0:
        return np.empty((0, 5), dtype=object), np.empty((0, 5, 2))
    day = days.to_numpy().astype("datetime64[D]")  # NumPy calendar units: no nanosecond overflow before 1678
    month = day.astype("datetime64[M]")
    month_number = (month - month.astype("datetime64[Y]")).astype(np.int64)  # 0..11
    quarter = month - (month_number % 3).astype("timedelta64[M]")
    year = day.astype("datetime64[Y]")
    years = year.astype(np.int64) + 1970
    table = np.column_stack([
        np.asarray(day.astype(str), dtype=object),
        np.asarray(month.astype(str), dtype=object),
        np.asarray([f"{y}-Q{q}" for y, q in zip(years.tolist(), (month_number // 3 + 1).tolist(), strict=True)],
                   dtype=object),
        np.asarray(year.astype(str), dtype=object),
        np.full(n, ROOT, dtype=object),
    ])

    def ns(stamps: np.ndarray) -> np.ndarray:  # nanoseconds since the epoch, as floats (exact to the day)
        return stamps.astype("datetime64[D]").astype(np.int64).astype(float) * _DAY_NS

    bounds = np.empty((n, 5, 2))
    bounds[:, 0] = np.stack([ns(day), ns(day + 1)], axis=1)
    bounds[:, 1] = np.stack([ns(month), ns(month + 1)], axis=1)
    bounds[:, 2] = np.stack([ns(quarter), ns(quarter + 3)], axis=1)
    bounds[:, 3] = np.stack([ns(year), ns(year + 1)], axis=1)
    bounds[:, 4] = [ns(day).min(), ns(day + 1).max()]
    return table, bounds


def _tree_table(tree: Mapping, label: str) -> np.ndarray:
    """A category tree (nested mapping, root first) as a hierarchy table.

    Parameters
    ----------
    tree : mapping
        ``{"*": {"Higher": {"Bachelors": None, "Masters": None}, "School": {...}}}``. A leaf is a key mapped to
        None or an empty mapping (a list of names is a shortcut for leaves); each inner key labels the group of
        leaves below it. A single top key ``*`` is the root; otherwise the top keys are placed under ``*``.
        Keys are read as text.
    label : str
        The column, for messages.

    Returns
    -------
    ndarray of object, shape (n_leaves, height + 1)
        One row per leaf: the leaf, its ancestors from the nearest up, then ``*``. Leaves at different depths
        are padded: a shallow leaf repeats its own label on the missing levels just above it, so every row has
        the same number of levels (the tree ``{"*": {"A": {"a1": None}, "b": None}}`` gives rows
        ``a1;A;*`` and ``b;b;*``).
    """
    if not isinstance(tree, Mapping) or not tree:
        raise SpecError(f"{label}: a tree hierarchy must be a non-empty mapping")
    if len(tree) == 1 and str(next(iter(tree))) == ROOT:
        top = next(iter(tree.values()))
    else:
        top = tree
    paths: list[list[str]] = []

    def walk(node: object, ancestors: list[str], depth: int) -> None:
        if depth > 64:
            raise SpecError(f"{label}: its tree hierarchy is nested too deeply")
        if isinstance(node, list | tuple):
            for i, item in enumerate(node):
                if not isinstance(item, str | int | float):  # a mapping, a list or null names no leaf
                    raise SpecError(f"{label}: its tree hierarchy has a list whose item {i + 1} (at depth {depth}) "
                                    "is not a value name: a list holds leaf names only, write groups as a mapping")
            node = {item: None for item in node}
        if not isinstance(node, Mapping):
            raise SpecError(f"{label}: its tree hierarchy has a node that is neither a mapping, a list nor empty "
                            f"(at depth {depth})")
        for key, child in node.items():
            if isinstance(child, Mapping | list | tuple) and len(child) > 0:
                walk(child, [str(key), *ancestors], depth + 1)
            elif child is None or isinstance(child, Mapping | list | tuple):
                paths.append([str(key), *ancestors])
            else:
                raise SpecError(f"{label}: its tree hierarchy has a leaf mapped to a scalar (at depth {depth + 1}); "
                                "map leaves to null")

    if top is None or (isinstance(top, Mapping | list | tuple) and len(top) == 0):
        raise SpecError(f"{label}: its tree hierarchy has no value")
    walk(top, [], 1)
    depth = max(len(p) for p in paths)
    rows = [[p[0]] * (depth - len(p)) + p + [ROOT] for p in paths]
    return np.array(rows, dtype=object).reshape(len(rows), depth + 1)


def _file_table(path: Path, label: str) -> np.ndarray:
    """An ARX hierarchy CSV (:func:`read_hierarchy`: ``;``, no header, ``value;level1;...;*``) as a table.

    A file whose last column is not the single label ``*`` gets a ``*`` column appended. Rows with fewer fields
    than the longest are an error (every row needs the same number of levels).
    """
    try:
        frame = read_hierarchy(path)
    except FileNotFoundError:
        raise SpecError(f"{label}: its hierarchy file {path} does not exist") from None
    except (OSError, ValueError):  # pandas' parser and decoding errors are ValueErrors
        raise SpecError(f"{label}: cannot read its hierarchy file {path} (an ARX CSV: value;level1;...;*)") from None
    table = frame.to_numpy(dtype=object)
    if table.shape[0] == 0:
        raise SpecError(f"{label}: its hierarchy file {path} is empty")
    table = np.where(pd.isna(pd.DataFrame(table)).to_numpy(), "", table).astype(object)
    last = table[:, -1]
    if table.shape[1] < 2 or not np.all(last == ROOT):
        if not np.all(last == "") or table.shape[1] < 2:
            table = np.column_stack([table, np.full(len(table), ROOT, dtype=object)])
    return table


def _sorted_distinct(series: pd.Series) -> list[str]:
    """An ordinal column's distinct values, as text, numbers first in numeric order, then text sorted."""

    def key(text: str) -> tuple:
        try:
            return (0, float(text), "")
        except ValueError:
            return (1, 0.0, text)

    return sorted(_distinct_texts(series).tolist(), key=key)


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
        return _number_text(float(e))
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


def _interval_table(series: pd.Series, spec: IntervalHierarchy, label: str, *,
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
    texts = _texts(uniques)
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


def _ordinal_table(series: pd.Series, categories: list[str], spec: IntervalHierarchy,
                   label: str) -> tuple[np.ndarray, np.ndarray]:
    """Nested intervals over an ordinal column's ranks.

    The categories' ranks 0..n-1 are cut like an integer column (:func:`_interval_table`, same binning and
    fan-out; ``quantile`` weights each rank by its rows); a label names the first and last category it
    holds, ``[Primary-HS-grad]`` (one category: ``[Primary]``). Every category of ``categories`` is a row,
    present in the data or not; a cell outside ``categories`` is an :class:`InputError` naming its row.
    Bounds are ranks: ``[r, r]`` at level 0, ``[first, last + 1)`` above.
    """
    categories = [str(c) for c in categories]
    if len(set(categories)) != len(categories):
        raise SpecError(f"{label}: its order lists a category twice")
    outside = set(_distinct_texts(series).tolist()) - set(categories)
    if outside:
        count, first = _first_row(series, outside)
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
