"""Small shared I/O every layer may import: a file's SHA-256, and reading a CSV or Parquet table's header and rows.

Reading is pyarrow for both formats, with the missing-value markers of the spec. Hostile input is refused with one
line naming the column (by position and name) and the data row (1 = the first row after the header), never a value:
a header that looks like data, a header that does not split on the separator, nested or binary Parquet columns, NaN,
infinite or huge numbers (beyond :data:`ppdp.tasks.core.encoding.MAX_MAGNITUDE`). Validation against the
expectation suite is :mod:`ppdp.tasks.ingest`'s.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ppdp.schemas.source import SourceSpec
from ppdp.tasks.core.encoding import MAX_MAGNITUDE  # one bound for ingest and the sanitizers
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.core.labels import column_label, guess_separator, looks_like_data


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_header(source: SourceSpec) -> list[str]:
    """Column names only (cheap): lets a spec be checked before any data is read. Refuses a header that does
    not split on the separator, that looks like data, or (Parquet) columns of nested or binary types."""
    path = source.path
    if path.is_dir():
        raise InputError(f"input {path}: a folder (a partitioned table): ppdp run releases it partition by partition "
                         "(generalization, mondrian) and ppdp validate FOLDER checks it; this command reads one file")
    if not path.is_file():
        hint = f"\ninput {path}: where to get it (source.obtain): {' '.join(source.obtain.split())}" \
            if source.obtain else ""
        raise InputError(f"input {path}: file not found{hint}")
    if source.format == "parquet":
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError):
            raise InputError(f"input {path}: not a readable Parquet file") from None
        names = list(schema.names)
    else:
        names = _csv_header(source)
    names = [n.strip() for n in names]
    if not names or all(n == "" for n in names):
        raise InputError(f"input {path}: no header line")
    if source.format == "csv" and len(names) == 1 and (guess := guess_separator(names, source.sep)):
        raise InputError(f"input {path}: the header has one column: is the separator {guess!r}? "
                         f"(source.sep is {source.sep!r})")
    if any(n == "" for n in names):
        raise InputError(f"input {path}: column {names.index('') + 1} has an empty name")
    data_like = [(i, what) for i, n in enumerate(names, start=1) if (what := looks_like_data(n))]
    if data_like:
        i, what = data_like[0]
        more = f" (and {len(data_like) - 1} more column{'s' if len(data_like) > 2 else ''})" if len(data_like) > 1 \
            else ""
        raise InputError(f"input {path}: the name of column {i}{more} looks like a data value ({what}), not a "
                         "column name: the first line must be a header of column names")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"input {path}: duplicate column names: {', '.join(dupes)}")
    if source.format == "parquet":
        for i, field in enumerate(schema, start=1):
            what = _unsupported_type(field.type)
            if what:
                raise InputError(f"input {path}: {column_label(i, names[i - 1])} has a Parquet {what} type: ppdp "
                                 "reads flat columns of numbers, text, booleans and dates only")
    return names


def _csv_header(source: SourceSpec) -> list[str]:
    path = source.path
    if path.stat().st_size == 0:
        raise InputError(f"input {path}: the file is empty (no header, no rows)")
    try:
        codec = codecs.lookup(source.encoding).name
    except LookupError:
        raise InputError(f"input {path}: unknown encoding {source.encoding!r} (source.encoding)") from None
    with open(path, "rb") as fh:
        start = fh.read(4)
    if codec == "utf-8" and start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise InputError(f"input {path}: starts with a UTF-16 byte-order mark: set source.encoding: utf-16 or "
                         "save the file as UTF-8")
    try:
        # utf-8-sig drops a UTF-8 byte-order mark, as pyarrow does when it reads the rows
        with open(path, encoding="utf-8-sig" if codec == "utf-8" else source.encoding, newline="") as fh:
            return next(csv.reader(fh, delimiter=source.sep), [])
    except UnicodeDecodeError:
        raise InputError(f"input {path}: not readable as {source.encoding} text") from None
    except csv.Error:
        raise InputError(f"input {path}: the header line is not valid CSV") from None


def _unsupported_type(kind: pa.DataType) -> str | None:
    """What a Parquet column type is when ppdp cannot read it as a flat column (list, struct, ...), else None."""
    if pa.types.is_dictionary(kind):
        return _unsupported_type(kind.value_type)
    checks = (
        ("list", ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view")),
        ("struct", ("is_struct",)), ("map", ("is_map",)), ("union", ("is_union",)),
        ("binary", ("is_binary", "is_large_binary", "is_fixed_size_binary", "is_binary_view")),
        ("time-of-day", ("is_time",)), ("duration", ("is_duration", "is_interval")),
    )
    for what, names in checks:
        if any(getattr(pa.types, n, lambda _t: False)(kind) for n in names):
            return what
    if isinstance(kind, pa.ExtensionType):
        return "extension"
    return None


def read_table(source: SourceSpec) -> pd.DataFrame:
    """Read the whole table: pyarrow for both formats, missing markers per the spec."""
    path = source.path
    if source.format == "parquet":
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError):
            raise InputError(f"input {path}: not a readable Parquet file") from None
    else:
        table = _read_csv(source)
    table = _flat_numbers(table, path)
    check_numbers(table, path)
    try:
        frame = table.to_pandas()
    except (pa.ArrowException, ValueError, OverflowError):
        raise InputError(f"input {path}: {_unconvertible(table)} holds values out of range for its type") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if source.format == "parquet" and source.na_values:
        # Parquet has real nulls; na_values still applies to text columns for symmetry with CSV
        for col in frame.columns:
            if frame[col].dtype == object or pd.api.types.is_string_dtype(frame[col]):
                frame[col] = frame[col].mask(frame[col].isin(source.na_values))
    return frame


def _flat_numbers(table: pa.Table, path: Path) -> pa.Table:
    """Decimal and half-precision columns as float64 (pandas has no fast type for either)."""
    for i, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type) or pa.types.is_float16(field.type):
            try:
                table = table.set_column(i, field.name, pc.cast(table.column(i), pa.float64()))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise InputError(f"input {path}: {column_label(i + 1, field.name)} cannot be read as numbers") from None
    return table


def _unconvertible(table: pa.Table) -> str:
    """The first column pandas cannot take (e.g. dates beyond its range), by position and name."""
    for i, name in enumerate(table.column_names):
        try:
            table.column(i).to_pandas()
        except (pa.ArrowException, ValueError, OverflowError):
            return column_label(i + 1, name)
    return "a column"


def first_row(mask: np.ndarray) -> int:
    """The 1-based data row of the first True in ``mask``."""
    return int(np.flatnonzero(mask)[0]) + 1


def bad_numbers(values: np.ndarray, missing: np.ndarray | None = None) -> tuple[dict[str, int], np.ndarray]:
    """Counts of NaN (where ``missing`` says a NaN is not a missing value), infinite and huge values, and
    the mask of all of them."""
    nan = np.isnan(values) & (~missing if missing is not None else False)
    inf = np.isinf(values)
    with np.errstate(invalid="ignore"):
        huge = np.abs(values) > MAX_MAGNITUDE
    huge &= ~inf
    counts = {"NaN": int(nan.sum()), "infinite": int(inf.sum()), f"beyond ±{MAX_MAGNITUDE:g}": int(huge.sum())}
    return counts, nan | inf | huge


def refuse_numbers(path: Path, label: str, counts: dict[str, int], mask: np.ndarray) -> None:
    parts = [f"{n} {what}" for what, n in counts.items() if n]
    total = int(mask.sum())
    raise InputError(
        f"input {path}: {label} holds {total} number{'s' if total > 1 else ''} that cannot be used "
        f"({', '.join(parts)}; first at data row {first_row(mask)}): numbers must be finite and within "
        f"±{MAX_MAGNITUDE:g}; make such cells missing (nulls; in a CSV, list the marker in source.na_values) "
        "or remove them"
    )


def check_numbers(table: pa.Table, path: Path) -> None:
    """Refuse NaN, infinite and huge values in the table's float columns (a NaN read from the file is a value,
    not a missing cell: missing cells are nulls). Names the column and the first data row, never the value."""
    for i, name in enumerate(table.column_names):
        column = table.column(i)
        if not pa.types.is_floating(column.type) or len(column) == 0:
            continue
        values = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        counts, mask = bad_numbers(values, missing=column.is_null().to_numpy(zero_copy_only=False))
        if mask.any():
            refuse_numbers(path, column_label(i + 1, name), counts, mask)


def _read_csv(source: SourceSpec) -> pa.Table:
    path = source.path
    ragged: list[tuple[int | None, int, int]] = []

    def on_invalid(row: pacsv.InvalidRow) -> str:
        ragged.append((row.number, row.expected_columns, row.actual_columns))
        return "skip"

    header = read_header(source)

    def read(threads: bool) -> pa.Table:
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(encoding=source.encoding, use_threads=threads),
            parse_options=pacsv.ParseOptions(delimiter=source.sep, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(
                null_values=["", *source.na_values], strings_can_be_null=True, quoted_strings_can_be_null=True,
                column_types={name: pa.string() for name in header},
            ),
        )

    try:
        table = read(True)
        if ragged:  # read again single-threaded: pyarrow only knows row numbers then
            ragged.clear()
            read(False)
    except pa.ArrowInvalid as exc:
        text = str(exc)
        if "Empty CSV" in text:
            raise InputError(f"input {path}: the file is empty (no header, no rows)") from None
        # pyarrow's messages may quote the offending row: never pass them on
        raise InputError(f"input {path}: not valid CSV with separator {source.sep!r}") from None
    except (UnicodeDecodeError, pa.ArrowException):
        raise InputError(f"input {path}: not readable as {source.encoding} CSV") from None
    if ragged:
        number, expected, actual = ragged[0]
        line = f"line {number}" if number is not None else "a line"
        raise InputError(
            f"input {path}: {len(ragged)} ragged row{'s' if len(ragged) > 1 else ''}: "
            f"{line} has {actual} fields, the header has {expected}"
        )
    return pa.table({name: _infer_type(table.column(i)) for i, name in enumerate(table.column_names)})


def _infer_type(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Integers, then floats, else text. Codes with leading zeros (zip codes, ids) stay text."""
    if column.null_count == len(column):
        return column
    stripped = pc.utf8_trim_whitespace(column)
    if pc.any(pc.match_substring_regex(stripped, r"^[-+]?0[0-9]")).as_py():
        return column
    for target in (pa.int64(), pa.float64()):
        try:
            return pc.cast(stripped, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return column
