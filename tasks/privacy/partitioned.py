"""Privacy validation of a partitioned Parquet table (a folder of files) from equivalence-class counts.

Every model ``ppdp validate`` computes over equivalence classes (k-anonymity, Sweeney 2002; distinct, entropy
and recursive (c,l)-diversity, Machanavajjhala et al. 2007, Definitions 4.1-4.3; (alpha,k)-anonymity, Wong et al.
2006; t-closeness, Li, Li & Venkatasubramanian 2007, Section IV, including its hierarchical ground distance;
delta-disclosure, Brickell & Shmatikov 2008; beta-likeness, Cao & Karras 2012, Definitions 2-3; ARX's prosecutor
and marketer re-identification risk, El Emam 2013) is a function of two count tables: the size of each class
(rows sharing every quasi-identifier value) and, per sensitive attribute, how many rows of each class hold each
sensitive value. Counts over disjoint parts of a table add up, so each partition (one file) is counted on its own
and the partitions' tables are summed over equal keys; the models then run on the combined tables through the
very functions of :mod:`ppdp.tasks.privacy.models` that the single-file path uses, so every value, every worst
class number and every gate is the one ``ppdp validate`` gives on the concatenation of the files (in
:func:`partition_files` order).

Two passes over the files, each embarrassingly parallel (serial in-process, or as ``dask.delayed`` tasks on a
``distributed`` cluster; the results are identical):

1. :func:`column_counts`: per file, each needed column's distinct values (first-appearance order) and their
   counts. Combined in file order they give one global dictionary per column (so a value has the same code in
   every partition), the checks of the single-file path (all-missing quasi-identifier, numbers with stray text)
   and the class numbering of :func:`ppdp.tasks.core.groups.equivalence_class_ids` (classes in lexicographic
   order of the columns' first-appearance codes).
2. :func:`cell_counts`: per file, read in row-group batches (memory bounded by the batch, not the file), each
   row's codes packed into one int64 key (several when the product of the cardinalities passes 2**62), counted
   by sorting; the per-file tables (sorted keys, counts) are merged in a tree (:func:`merge_cells`; its size is
   the number of distinct (class, sensitive values) cells), and :func:`measure_cells` computes the report.

Missing values: a missing value is a value of its own, as in the single-file path (pandas ``factorize`` with
``use_na_sentinel=False``): Arrow nulls and float NaN are one key, ``-0.0`` is ``0.0``, and ``--na-values``
markers in text columns are missing. Not available on a folder (refused with one line): the random-query
attacker (``--attack``: it draws whole records) and journalist risk (``--population``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.reports import PrivacyReport, RiskMeasures
from ppdp.schemas.source import SourceSpec
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.core.io import file_sha256, read_header
from ppdp.tasks.core.labels import column_label
from ppdp.tasks.digests import listing_sha256
from ppdp.tasks.privacy import class_models, class_table, models
from ppdp.tasks.privacy.measure import anonymity_measures, check_gates
from ppdp.tasks.privacy.partitioned_runner import FANIN, pass_runner
from ppdp.tasks.privacy.validate import Coded, check_column, check_names, load_hierarchies

__all__ = [
    "FANIN",
    "Cells",
    "CountPlan",
    "FolderValidation",
    "Layout",
    "build_plan",
    "cell_counts",
    "check_release_schema",
    "column_counts",
    "common_schema",
    "file_schema",
    "measure_cells",
    "merge_cells",
    "partition_files",
    "validate_folder",
]

PARQUET_SUFFIXES = (".parquet", ".pq")
BATCH_ROWS = 1 << 20  # rows per Arrow batch read from a file (row groups are read one at a time)
REDUCE_ROWS = 1 << 22  # raw keys buffered before they are counted (8 bytes a row and key word)
_WORD = 2**62  # a key word holds columns while the product of their cardinalities stays below this


# -- the folder -------------------------------------------------------------------------------------------------
def partition_files(folder: Path) -> list[Path]:
    """The folder's Parquet files (``*.parquet``, ``*.pq``), recursively, sorted by their path below ``folder``.

    Hive-style subfolders (``year=2020/part-0.parquet``) are walked; their keys are not read as columns (a
    column must be in the files). Names starting with ``.`` or ``_`` (``_SUCCESS``, ``_common_metadata``,
    hidden files) are skipped, as pyarrow and Spark skip them.

    Raises
    ------
    InputError
        Not a folder, no Parquet file in it, or another file in it (one line naming the file).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"input {folder}: not a folder")
    files: list[tuple[tuple[str, ...], Path]] = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part.startswith((".", "_")) for part in rel.parts) or path.is_dir():
            continue
        if path.suffix.lower() not in PARQUET_SUFFIXES:
            raise InputError(f"input {path}: not a Parquet file (a partitioned folder holds *.parquet files only)")
        files.append((rel.parts, path))
    if not files:
        raise InputError(f"input {folder}: no Parquet files (*.parquet) in the folder")
    return [path for _, path in sorted(files)]


def folder_sha256(folder: Path) -> str:
    """The unkeyed hash of a folder of Parquet files as the release flow lists it (:func:`partition_files`; the
    lines ``<relative path> <sha256>``: :func:`ppdp.tasks.digests.listing_sha256`), for ``ppdp validate --release
    --original FOLDER``."""
    folder = Path(folder)
    return listing_sha256([(f.relative_to(folder).as_posix(), file_sha256(f)) for f in partition_files(folder)])


def _same_type(kind: pa.DataType) -> pa.DataType:
    """A column's type as the partitions must agree on it: a dictionary column by its values' type (its index
    width may differ between files), large text as text."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_large_string(kind):
        return pa.string()
    return kind


def common_schema(files: Sequence[Path]) -> pa.Schema:
    """The first file's schema, after checking every file as ``ppdp validate`` checks one (readable Parquet, a
    header of names, flat columns) and that every file has the same columns, in the same order, of the same
    types (one line naming the file, the column by position and name, and the two types)."""
    first: pa.Schema | None = None
    first_path = None
    for path in files:
        read_header(SourceSpec(path=path, format="parquet"))
        schema = pq.read_schema(path)
        if first is None:
            first, first_path = schema, path
            continue
        a, b = first.names, schema.names
        for i in range(max(len(a), len(b))):
            if i >= len(a):
                raise InputError(f"input {path}: {column_label(i + 1, b[i])} is not in the first file {first_path} "
                                 "(the partitions' schemas must agree)")
            if i >= len(b):
                raise InputError(f"input {path}: lacks {column_label(i + 1, a[i])} of the first file {first_path} "
                                 "(the partitions' schemas must agree)")
            if a[i] != b[i]:
                raise InputError(f"input {path}: {column_label(i + 1, b[i])} is {column_label(i + 1, a[i])} in "
                                 f"the first file {first_path} (the partitions' schemas must agree)")
            ta, tb = _same_type(first.field(i).type), _same_type(schema.field(i).type)
            if not ta.equals(tb):
                raise InputError(f"input {path}: {column_label(i + 1, b[i])} has type {tb}, {ta} in the first file "
                                 f"{first_path} (the partitions' schemas must agree)")
    assert first is not None
    return first


def file_schema(path: Path) -> pa.Schema:
    """A Parquet file's schema without its key-value metadata (one line when it cannot be read)."""
    try:
        return pq.read_schema(path).remove_metadata()
    except (pa.ArrowException, OSError):
        raise InputError(f"{path}: not a readable Parquet file") from None


def check_release_schema(files: Sequence[Path], schema: pa.Schema) -> pa.Schema:
    """A release's own row files: every file has exactly ``schema``'s columns and types (the type the release
    declared for each column, metadata aside); one line naming the file and the column otherwise. Their values
    are the release's, not input: they are not checked as hostile input is."""
    want = schema.remove_metadata()
    for path in files:
        have = file_schema(path)
        if have.equals(want):
            continue
        for i in range(max(len(have), len(want))):
            if i >= len(have) or i >= len(want) or have.names[i] != want.names[i]:
                raise InputError(f"{path}: its columns are not the release's columns {want.names}")
            if not have.field(i).type.equals(want.field(i).type):
                raise InputError(f"{path}: {column_label(i + 1, have.names[i])} has type {have.field(i).type}, "
                                 f"the release declares {want.field(i).type}")
    return want


# -- values as keys ---------------------------------------------------------------------------------------------
def _normalize(values: pa.Array, na_values: Sequence[str]) -> pa.Array:
    """Values compared as the single-file path compares them: float NaN is missing (null) and ``-0.0`` is
    ``0.0`` (pandas reads both so), and ``na_values`` markers in text columns are missing."""
    kind = values.type
    if pa.types.is_floating(kind):
        values = pc.if_else(pc.is_nan(values), pa.scalar(None, kind), values)
        values = pc.add(values, pa.scalar(0.0, kind))  # -0.0 + 0.0 == +0.0
    elif na_values and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        markers = pc.is_in(values, value_set=pa.array(list(na_values), kind))
        values = pc.if_else(markers, pa.scalar(None, kind), values)
    return values


def _value_counts(column: pa.Array, na_values: Sequence[str]) -> tuple[pa.Array, np.ndarray]:
    """Distinct values (null included) in first-appearance order, and how many rows hold each. A dictionary
    column is counted through its indices; its values may then repeat (two markers both missing), which
    :func:`_merge_values` sums."""
    if pa.types.is_dictionary(column.type):
        dictionary = _normalize(column.dictionary, na_values)
        size = len(dictionary)
        first = pc.fill_null(pc.unique(column.indices), size).to_numpy(zero_copy_only=False).astype(np.int64)
        indices = pc.fill_null(column.indices, size).to_numpy(zero_copy_only=False)
        counts = np.bincount(indices, minlength=size + 1).astype(np.int64)
        values = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)]).take(pa.array(first))
        return values, counts[first]
    vc = pc.value_counts(_normalize(column, na_values))
    return vc.field("values"), vc.field("counts").to_numpy(zero_copy_only=False).astype(np.int64)


def _merge_values(parts: Sequence[tuple[pa.Array, np.ndarray]], kind: pa.DataType | None = None
                  ) -> tuple[pa.Array, np.ndarray]:
    """Value counts of consecutive parts of a column as one: values in order of first appearance over the parts
    in order, counts summed."""
    arrays = [v if kind is None or v.type.equals(kind) else v.cast(kind) for v, _ in parts]
    values = pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]
    counts = np.concatenate([c for _, c in parts]) if len(parts) > 1 else parts[0][1]
    unique = pc.unique(values)
    where = pc.index_in(values, value_set=unique).to_numpy(zero_copy_only=False)
    total = np.bincount(where, weights=counts, minlength=len(unique))  # float64: exact below 2**53 rows
    return unique, np.rint(total).astype(np.int64)


def _open(path: str | Path, columns: Sequence[str]) -> pq.ParquetFile:
    """The file, its text columns read dictionary-encoded (no Python string per row)."""
    try:
        schema = pq.read_schema(path)
        text = [c for c in columns if c in schema.names and (
            pa.types.is_string(schema.field(c).type) or pa.types.is_large_string(schema.field(c).type))]
        return pq.ParquetFile(path, read_dictionary=text)
    except (pa.ArrowException, OSError):
        raise InputError(f"input {path}: not a readable Parquet file") from None


def _batches(path: str | Path, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
    parquet = _open(path, columns)
    try:
        yield from parquet.iter_batches(batch_size=batch_rows, columns=list(columns))
    except (pa.ArrowException, OSError):
        raise InputError(f"input {path}: not a readable Parquet file") from None
    finally:
        parquet.close()


def column_counts(path: str | Path, columns: Sequence[str], na_values: Sequence[str] = (),
                  batch_rows: int = BATCH_ROWS) -> tuple[int, list[tuple[pa.Array, np.ndarray]]]:
    """Pass 1 over one partition: its number of rows and, for each of ``columns`` (names as in the file), its
    distinct values in first-appearance order with their counts."""
    rows = 0
    parts: list[list[tuple[pa.Array, np.ndarray]]] = [[] for _ in columns]
    for batch in _batches(path, columns, batch_rows):
        rows += batch.num_rows
        for i in range(len(columns)):
            parts[i].append(_value_counts(batch.column(i), na_values))
    out = []
    for i, name in enumerate(columns):
        if parts[i]:
            out.append(_merge_values(parts[i]))
        else:  # no rows: an empty column of the file's type
            kind = _open(path, columns).schema_arrow.field(name).type
            kind = kind.value_type if pa.types.is_dictionary(kind) else kind
            out.append((pa.array([], kind), np.zeros(0, dtype=np.int64)))
    return rows, out


# -- keys -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """How a row's column codes are packed into int64 key words: mixed radix, most significant column first,
    the quasi-identifiers then the sensitive attributes, a new word whenever the product of the cardinalities
    would reach 2**62. Sorting the words lexicographically sorts rows by (quasi-identifier codes, sensitive
    codes), the order :func:`ppdp.tasks.core.groups.equivalence_class_ids` numbers classes in."""

    radices: tuple[int, ...]
    words: tuple[tuple[int, ...], ...]
    n_qi: int

    @classmethod
    def of(cls, radices: Sequence[int], n_qi: int) -> Layout:
        words: list[tuple[int, ...]] = []
        current: list[int] = []
        size = 1
        for i, radix in enumerate(radices):
            radix = max(int(radix), 1)
            if current and size * radix >= _WORD:
                words.append(tuple(current))
                current, size = [], 1
            current.append(i)
            size *= radix
        words.append(tuple(current))
        return cls(tuple(max(int(r), 1) for r in radices), tuple(words), n_qi)

    def encode(self, codes: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = []
        for word in self.words:
            key = codes[word[0]].astype(np.int64, copy=True)
            for i in word[1:]:
                key *= self.radices[i]
                key += codes[i]
            out.append(key)
        return out

    def _below(self, column: int) -> tuple[int, int]:
        """(word holding ``column``, product of the radices after it in that word)."""
        for w, word in enumerate(self.words):
            if column in word:
                return w, math.prod(self.radices[i] for i in word[word.index(column) + 1:])
        raise IndexError(column)

    def decode(self, words: Sequence[np.ndarray], column: int) -> np.ndarray:
        w, below = self._below(column)
        return (words[w] // below) % self.radices[column]

    def class_parts(self, words: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The words with the sensitive attributes divided out: equal parts, same class."""
        out = []
        for w, word in enumerate(self.words):
            qis = [i for i in word if i < self.n_qi]
            if not qis:
                continue
            below = math.prod(self.radices[i] for i in word if i >= self.n_qi)
            out.append(words[w] // below if below > 1 else words[w])
        return out


@dataclass
class Cells:
    """Counted rows: the distinct keys (one array per key word, sorted lexicographically, no repeats) and how
    many rows hold each."""

    words: list[np.ndarray]
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def nbytes(self) -> int:
        return int(sum(w.nbytes for w in self.words) + self.counts.nbytes)


def _starts(words: Sequence[np.ndarray]) -> np.ndarray:
    n = len(words[0])
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for w in words:
        change[1:] |= w[1:] != w[:-1]
    return np.flatnonzero(change)


def _count_rows(words: list[np.ndarray]) -> Cells:
    """Distinct keys of raw rows and their counts (a sort, no hash table)."""
    n = len(words[0])
    if len(words) == 1:
        ordered = [np.sort(words[0])]
    else:
        order = np.lexsort(words[::-1])
        ordered = [w[order] for w in words]
    starts = _starts(ordered)
    return Cells([w[starts] for w in ordered], np.diff(np.append(starts, n)).astype(np.int64))


def merge_cells(parts: Sequence[Cells]) -> Cells:
    """Several counted tables as one: counts summed over equal keys (the combine step; its output's size is the
    number of distinct cells, whatever the number of rows)."""
    parts = [p for p in parts if len(p)] or list(parts[:1])
    if len(parts) == 1:
        return parts[0]
    words = [np.concatenate([p.words[w] for p in parts]) for w in range(len(parts[0].words))]
    counts = np.concatenate([p.counts for p in parts])
    order = np.argsort(words[0], kind="stable") if len(words) == 1 else np.lexsort(words[::-1])
    words = [w[order] for w in words]
    counts = counts[order]
    del order
    starts = _starts(words)
    return Cells([w[starts] for w in words], np.add.reduceat(counts, starts).astype(np.int64))


# -- the plan for pass 2 ----------------------------------------------------------------------------------------
@dataclass
class CountPlan:
    """What every partition's pass 2 needs: the columns (names as in the files, quasi-identifiers first), the
    global dictionary of each (null included when the column has missing values), the sorted code of each
    dictionary entry for the sensitive attributes (ascending values, missing last, as
    :mod:`ppdp.tasks.privacy.models` codes them), and the key layout."""

    where: str
    columns: list[str]
    names: list[str]
    n_qi: int
    dictionaries: list[pa.Array]
    null_codes: list[int]
    ranks: list[np.ndarray | None]
    attrs: list[Any]  # class_table.Attr of each sensitive attribute (values, kind), counts filled by measure_cells
    layout: Layout
    na_values: list[str]
    batch_rows: int = BATCH_ROWS
    reduce_rows: int = REDUCE_ROWS

    @property
    def qi(self) -> list[str]:
        return self.names[:self.n_qi]

    @property
    def sa(self) -> list[str]:
        return self.names[self.n_qi:]


def _codes(column: pa.Array, plan: CountPlan, i: int, path: str | Path) -> np.ndarray:
    """Global codes of one batch's column (the sorted codes for a sensitive attribute)."""
    dictionary = plan.dictionaries[i]
    if pa.types.is_dictionary(column.type):
        local = _normalize(column.dictionary, plan.na_values)
        if not local.type.equals(dictionary.type):
            dictionary = dictionary.cast(local.type)
        mapped = pc.fill_null(pc.index_in(local, value_set=dictionary), -1).to_numpy(zero_copy_only=False)
        lookup = np.append(mapped.astype(np.int64), plan.null_codes[i])
        indices = pc.fill_null(column.indices, len(local)).to_numpy(zero_copy_only=False)
        codes = lookup[indices]
    else:
        values = _normalize(column, plan.na_values)
        if not values.type.equals(dictionary.type):
            dictionary = dictionary.cast(values.type)
        codes = pc.fill_null(pc.index_in(values, value_set=dictionary), -1).to_numpy(zero_copy_only=False)
        codes = codes.astype(np.int64)
    if codes.size and codes.min() < 0:
        raise InputError(f"input {path}: {column_label(i + 1, plan.names[i])} changed while it was read")
    rank = plan.ranks[i]
    return rank[codes] if rank is not None else codes


def cell_counts(path: str | Path, plan: CountPlan) -> Cells:
    """Pass 2 over one partition: its rows counted per cell (quasi-identifier values and sensitive values),
    read in batches of ``plan.batch_rows`` rows and counted every ``plan.reduce_rows`` rows."""
    buffered: list[list[np.ndarray]] = []
    rows = 0
    counted: list[Cells] = []
    for batch in _batches(path, plan.columns, plan.batch_rows):
        codes = [_codes(batch.column(i), plan, i, path) for i in range(len(plan.columns))]
        buffered.append(plan.layout.encode(codes))
        rows += batch.num_rows
        if rows >= plan.reduce_rows:
            counted.append(_count_rows([np.concatenate(ws) for ws in zip(*buffered)]))
            buffered, rows = [], 0
    if buffered:
        counted.append(_count_rows([np.concatenate(ws) for ws in zip(*buffered)]))
    if not counted:
        return Cells([np.zeros(0, dtype=np.int64) for _ in plan.layout.words], np.zeros(0, dtype=np.int64))
    return merge_cells(counted)


# -- measuring from counts --------------------------------------------------------------------------------------
class _CountContext:
    """The part of :class:`ppdp.tasks.privacy.class_table.Context` the models read (``sa``, ``gen``,
    ``qi_partition``, ``table``), built from counts instead of rows."""

    gen = True

    def __init__(self, sa: list[str], partition: Any, tables: dict[str, Any]) -> None:
        self.sa = list(sa)
        self.qi_partition = partition
        self._tables = tables

    def table(self, name: str, gen: bool | None = None) -> Any:
        return self._tables[name]




def measure_cells(cells: Cells, plan: CountPlan, thresholds: PrivacyThresholds,
                  hierarchies: dict[str, pd.DataFrame] | None = None) -> PrivacyReport:
    """The report :func:`ppdp.tasks.privacy.validate.validate_file` gives (every model, prosecutor and marketer
    risk, gates), from the combined cell counts.

    Classes are numbered as :func:`ppdp.tasks.core.groups.equivalence_class_ids` numbers them on the
    concatenated table (the cells are sorted by first-appearance codes), so the worst class named by a gate is
    the same.
    """
    n = int(cells.counts.sum())
    sizes, partition, tables = _class_tables(cells, plan, n)
    n_classes = len(sizes)
    details, recursive = _model_details(_CountContext(plan.sa, partition, tables), plan, sizes, thresholds,
                                        hierarchies)
    measures = anonymity_measures(details, int(sizes.min()))
    risk = _class_risk(sizes, n, thresholds)
    report = PrivacyReport(unit="equivalence_class", k=measures.k_anonymity, quasi_identifiers=plan.qi,
                           sensitive_attributes=plan.sa, records=n, groups=n_classes,
                           mean_group_size=float(sizes.mean()), measures=measures, risk=risk, details=details,
                           recursive=recursive)
    return check_gates(report, thresholds)


def _class_tables(cells: Cells, plan: CountPlan, n: int) -> tuple[np.ndarray, class_table.Partition,
                                                                   dict[str, class_table.Table]]:
    """The class sizes, a partition of ``n`` rows into those classes, and each sensitive attribute's (class,
    value, count) table, from the cells sorted by class."""
    counts = cells.counts
    change_starts = _starts(plan.layout.class_parts(cells.words)) if plan.n_qi else np.zeros(1, dtype=np.int64)
    cls = np.zeros(len(counts), dtype=np.int64)
    cls[change_starts[1:]] = 1
    np.cumsum(cls, out=cls)
    sizes = np.add.reduceat(counts, change_starts).astype(np.int64)
    del change_starts
    n_classes = len(sizes)
    # models read len(partition.ids) as the number of rows: a zero-stride array of n rows, no memory
    partition = class_table.Partition(np.broadcast_to(np.zeros(1, dtype=np.int64), (n,)), sizes)
    tables: dict[str, Any] = {}
    for j, name in enumerate(plan.sa):
        attr = plan.attrs[j]
        code = plan.layout.decode(cells.words, plan.n_qi + j)
        m = attr.m
        if len(plan.sa) == 1:  # cells are unique (class, value) pairs, sorted by class then value
            t_cls, t_val, t_cnt = cls, code, counts
        else:
            key = cls * m + code
            order = np.argsort(key, kind="stable")
            key, t_cnt = key[order], counts[order]
            starts = _starts([key])
            key, t_cnt = key[starts], np.add.reduceat(t_cnt, starts).astype(np.int64)
            t_cls, t_val = key // m, key % m
        attr = dataclasses.replace(attr, counts=np.rint(np.bincount(t_val, weights=t_cnt, minlength=m)
                                                        ).astype(np.int64))
        t_starts = np.zeros(n_classes + 1, dtype=np.int64)
        np.cumsum(np.bincount(t_cls, minlength=n_classes), out=t_starts[1:])
        tables[name] = class_table.Table(attr, partition, t_cls, t_val, t_cnt, t_starts)
    return sizes, partition, tables


def _model_details(ctx: _CountContext, plan: CountPlan, sizes: np.ndarray, thresholds: PrivacyThresholds,
                   hierarchies: dict[str, pd.DataFrame] | None) -> tuple[dict[str, models.MeasureDetail],
                                                                          tuple | None]:
    """Every anonymity model's detail over the classes (k alone without a sensitive attribute), and recursive
    (c, l)-diversity's ratio when the policy asks for it."""
    details: dict[str, models.MeasureDetail] = {}
    try:
        if plan.sa:
            wanted = ["k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity",
                      "entropy_l_diversity_value", "recursive_c_l_diversity", "t_closeness", "delta_disclosure",
                      "basic_beta_likeness", "enhanced_beta_likeness"]
            hier = {s: h for s, h in (hierarchies or {}).items() if s in plan.sa}
            if hier:
                wanted.append("hierarchical_t_closeness")
            for name in wanted:
                if name == "entropy_l_diversity_value":
                    details[name] = class_models.entropy_value_model(ctx)
                elif name == "hierarchical_t_closeness":
                    details[name] = class_models.hierarchical_t_model(ctx, hier, [s for s in plan.sa if s in hier])
                else:
                    details[name] = class_models.MEASURES[name](ctx)
        else:
            details["k_anonymity"] = models.MeasureDetail(int(sizes.min()), int(np.argmin(sizes)), None)
        recursive = None
        if thresholds.l is not None and thresholds.l_variant == "recursive" and thresholds.c is not None \
                and plan.sa:
            d = class_models.recursive_ratio_model(ctx, int(thresholds.l))
            recursive = (float(d.value), d.worst_class, d.worst_attribute)
    except ValueError as exc:  # the models name the column or parameter, never a value
        raise InputError(f"{plan.where}: {str(exc).splitlines()[0]}") from None
    return details, recursive


def _class_risk(sizes: np.ndarray, n: int, thresholds: PrivacyThresholds) -> RiskMeasures:
    """Prosecutor and marketer risk and sample uniques from the class sizes (no population)."""
    threshold = float(thresholds.risk_threshold)  # ARX's prosecutor and marketer risk without a population, as
    average = len(sizes) / n  # ppdp.tasks.privacy.risk.reidentification_risk computes them from class sizes
    return RiskMeasures(
        prosecutor_max=float(1.0 / sizes.min()), prosecutor_average=average,
        records_at_risk=float(sizes[1.0 / sizes > threshold].sum() / n), risk_threshold=threshold,
        journalist_max=None, journalist_average=None, marketer=average,
        sample_uniques=float(np.count_nonzero(sizes == 1) / n),
    )


# -- validating a folder ----------------------------------------------------------------------------------------
@dataclass
class FolderValidation:
    """A folder's report and how it was read."""

    report: PrivacyReport
    partitions: int
    files: list[Path]
    cells: int  # distinct (class, sensitive values) cells: the size of the combine step


def _pandas_values(values: pa.Array, field: pa.Field, metadata: dict | None) -> pd.Series:
    """A global dictionary as pandas sees the column (the file's pandas metadata, e.g. nullable or categorical
    dtypes), so that types, sorting and checks are the single-file path's."""
    array = values.dictionary_encode() if pa.types.is_dictionary(field.type) else values
    try:
        table = pa.Table.from_arrays([array], schema=pa.schema([pa.field(field.name, array.type)], metadata=metadata))
        return table.to_pandas(split_blocks=True).iloc[:, 0]
    except (pa.ArrowException, ValueError, TypeError, KeyError):
        return pd.Series(array.to_pandas())


@dataclass
class _Counted(Coded):
    """A column known by its distinct values and their counts (for :func:`check_column`)."""

    weights: np.ndarray | None = None

    def counts(self) -> np.ndarray:
        assert self.weights is not None  # build_plan gives every column its counts
        return self.weights


def build_plan(where: str, schema: pa.Schema, qi: list[str], sa: list[str], merged: list[tuple[pa.Array, np.ndarray]],
               na_values: list[str], *, batch_rows: int = BATCH_ROWS, reduce_rows: int = REDUCE_ROWS,
               checked: bool = True) -> CountPlan:
    """Checks every column as the single-file path does (from its distinct values and counts; not when
    ``checked`` is False: a release's own row files) and makes the plan of pass 2."""
    by_name = {str(n).strip(): n for n in schema.names}
    names = [*qi, *sa]
    ranks: list[np.ndarray | None]  # None for a quasi-identifier
    dictionaries, null_codes, ranks, attrs, radices = [], [], [], [], []
    for i, name in enumerate(names):
        values, counts = merged[i]
        field = schema.field(by_name[name])
        series = _pandas_values(values, field, schema.metadata)
        numeric = pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
        column = _Counted(np.zeros(0, dtype=np.int64), pd.Index(series), numeric, None, False, counts)
        if checked:
            check_column(name, column, name in qi, where)
        nulls = np.flatnonzero(np.asarray(values.is_null()))
        null_codes.append(int(nulls[0]) if nulls.size else -1)
        dictionaries.append(values)
        if i < len(qi):
            ranks.append(None)
            radices.append(len(values))
        else:
            attr = class_table.encode_attr(series.reset_index(drop=True), name)  # sorted codes of the entries
            ranks.append(attr.codes)
            attrs.append(dataclasses.replace(attr, codes=np.zeros(0, dtype=np.int64)))
            radices.append(attr.m)
    return CountPlan(where=where, columns=[by_name[n] for n in names], names=names, n_qi=len(qi),
                     dictionaries=dictionaries, null_codes=null_codes, ranks=ranks, attrs=attrs,
                     layout=Layout.of(radices, len(qi)), na_values=list(na_values), batch_rows=batch_rows,
                     reduce_rows=reduce_rows)


def validate_folder(folder: Path, qi: list[str], sa: list[str], thresholds: PrivacyThresholds, *,
                    na_values: list[str] | None = None, population: Path | None = None,
                    hierarchies: dict[str, Path] | None = None, attack: int = 0, cluster: str | None = None,
                    batch_rows: int = BATCH_ROWS, reduce_rows: int = REDUCE_ROWS,
                    schema: pa.Schema | None = None) -> FolderValidation:
    """Measure and gate a partitioned Parquet table (a folder of files, see :func:`partition_files`) as
    :func:`ppdp.tasks.privacy.validate.validate_file` measures and gates one file: same checks, same report,
    same gates, from per-partition counts (see the module docstring).

    Parameters
    ----------
    folder : Path
        The folder.
    qi, sa, thresholds, na_values, hierarchies
        As for :func:`~ppdp.tasks.privacy.validate.validate_file`.
    population, attack
        Refused (one line): journalist risk and the random-query attacker are not computed from counts.
    cluster : str, optional
        None: serially in this process. ``"local"``: a Dask LocalCluster for the call. Otherwise a Dask
        scheduler's address (``tcp://host:8786``). The report is the same.
    batch_rows, reduce_rows
        Rows per batch read, rows buffered before counting (memory per partition task).
    schema : pyarrow.Schema, optional
        The folder is a release's own row files (``data/`` of a distributed release) and this its schema: every
        file must have exactly these columns and types (:func:`check_release_schema`), and the values are measured
        as the release declared them, without the checks for hostile input (numbers with stray text, mixed types,
        an entirely missing quasi-identifier): a generalized integer column holds numbers and ``*`` as text.
    """
    where = str(folder)
    files = partition_files(folder)
    release = schema is not None
    schema = check_release_schema(files, schema) if schema is not None else common_schema(files)
    by_name = {str(n).strip(): n for n in schema.names}
    check_names(list(by_name), qi, sa, where)
    if attack:
        raise InputError("--attack: the random-query attacker draws whole records; it is not run on a partitioned "
                         "folder (validate one file for it)")
    if population is not None:
        raise InputError("--population: journalist risk is not computed on a partitioned folder (validate one file "
                         "for it)")
    columns = [by_name[n] for n in [*qi, *sa]]
    na = list(na_values or [])
    with pass_runner(cluster, len(files)) as run:
        first = run.map(column_counts, files, columns, na, batch_rows)
        if sum(rows for rows, _ in first) == 0:
            raise InputError(f"{where}: the table has no rows")
        merged = []
        for i in range(len(columns)):
            parts = [counts[i] for _, counts in first]
            kind = _same_type(schema.field(columns[i]).type)
            merged.append(_merge_values(parts, kind))
        del first
        plan = build_plan(where, schema, qi, sa, merged, na, batch_rows=batch_rows, reduce_rows=reduce_rows,
                          checked=not release)
        needs_sa = thresholds.sensitive_gates()
        if needs_sa and not sa:
            raise InputError(f"--{needs_sa[0]}: this gate needs a sensitive attribute (--sa)")
        hier = load_hierarchies(hierarchies or {}) if hierarchies else None
        report, n_cells = run.tree(cell_counts, files, plan, merge_cells, _measure_and_size, (thresholds, hier))
    return FolderValidation(report=report, partitions=len(files), files=files, cells=n_cells)


def _measure_and_size(cells: Cells, plan: CountPlan, thresholds: PrivacyThresholds,
                      hierarchies: dict[str, pd.DataFrame] | None) -> tuple[PrivacyReport, int]:
    return measure_cells(cells, plan, thresholds, hierarchies), len(cells)
