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
from ppdp.tasks.core.hierarchy_intervals import interval_table, ordinal_table, sorted_distinct
from ppdp.tasks.core.hierarchy_text import distinct_texts, text_of, value_texts
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
        texts = value_texts(uniques)
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
    if spec is None:
        spec = _automatic_spec(series, kind)
    table, kind_name, bounds = _spec_table(series, spec, kind=kind, label=label, base=base, order=order)
    table, bounds = _unique_rows(table, bounds, label)
    _check_table(table, label, kind_name)
    return Hierarchy(column=column, table=table, kind=kind_name, bounds=bounds)


def _automatic_spec(series: pd.Series, kind: ColumnKind) -> HierarchySpec:
    """The hierarchy a column without a spec gets, by its dtype and kind (see :func:`build_hierarchy`)."""
    if pd.api.types.is_datetime64_any_dtype(series):
        return DateHierarchy()
    if pd.api.types.is_bool_dtype(series):
        return FlatHierarchy()
    if kind is ColumnKind.numeric:
        return IntervalHierarchy()
    if kind is ColumnKind.ordinal:
        return IntervalHierarchy()
    if _looks_like_codes(series):
        return PrefixHierarchy()
    return FlatHierarchy()


def _spec_table(series: pd.Series, spec: HierarchySpec, *, kind: ColumnKind, label: str, base: Path | None,
                order: list[str] | None) -> tuple[np.ndarray, str, np.ndarray | None]:
    """The table a spec builds over the column (rows not yet deduplicated nor checked), its kind and bounds."""
    is_date = pd.api.types.is_datetime64_any_dtype(series)
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
            categories = list(order) if order else sorted_distinct(series)
            table, bounds = ordinal_table(series, categories, spec, label)
        else:
            table, bounds = interval_table(series, spec, label, nominal=kind is ColumnKind.nominal)
        kind_name = "intervals"
    else:  # pragma: no cover - the union is closed
        raise SpecError(f"{label}: unknown hierarchy type")
    return table, kind_name, bounds


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
    values = distinct_texts(series)
    if len(values) == 0:
        return np.empty((0, 2), dtype=object)
    return np.column_stack([values, np.full(len(values), ROOT, dtype=object)])


def _looks_like_codes(series: pd.Series) -> bool:
    """Text (or integers) whose distinct values are codes of one length >= 2, letters or digits with at least
    one digit (postcodes read as text or as integers)."""
    if (pd.api.types.is_float_dtype(series) or pd.api.types.is_bool_dtype(series)
            or pd.api.types.is_datetime64_any_dtype(series)):
        return False
    values = pd.Series(distinct_texts(series), dtype=object)
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
    values = pd.Series(distinct_texts(series), dtype=object)
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
