"""Ingest: read a CSV or Parquet table through pyarrow, validate it with a Great Expectations suite, hash it.

The suite is the base suite stored as JSON under ``expectations/`` plus expectations derived from the spec:
declared columns exist, the class column has no nulls, quasi-identifiers are not entirely null, and numeric
quasi-identifiers hold numbers. Failures are told in plain words (:mod:`ppdp.tasks.expectation_text`): the column
by position and name, how many rows fail and the first failing data row, never a value. The cheap expectations are
decided with pandas first, so a bad input is refused before Great Expectations is imported (seconds); a good input
then runs the whole suite in Great Expectations.

Before the suite, hostile input is refused with one line naming the column (by position and name) and the data
row (1 = the first row after the header), never a value: a header that looks like data (its names are then
never echoed), a header that does not split on the separator, nested or binary Parquet columns, NaN, infinite or
huge numbers (beyond :data:`MAX_MAGNITUDE`), values outside a declared ``order``, sensitive values missing from
their hierarchy. A UTF-8 byte-order mark is read as such; a UTF-16 one is named.
"""

from __future__ import annotations

import codecs
import csv
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ppdp.expectations import base_suite_path, load_suite_json, validate_frame
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import IngestReport
from ppdp.schemas.source import SourceSpec
from ppdp.tasks import expectation_text, tag
from ppdp.tasks.core.encoding import MAX_MAGNITUDE  # one bound for ingest and the sanitizers
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.labels import column_label, guess_separator, key_path, looks_like_data
from ppdp.tasks.digests import file_sha256  # noqa: F401  (re-exported: callers import it from here)

if TYPE_CHECKING:
    from ppdp.schemas.spec import ReleaseSpec

NUMERIC_REGEX = r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$"
# a text column whose non-missing values parse as numbers at least this often is a number column with stray text
NUMERIC_INTENT = 0.95


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


def _first_row(mask: np.ndarray) -> int:
    """The 1-based data row of the first True in ``mask``."""
    return int(np.flatnonzero(mask)[0]) + 1


def _bad_numbers(values: np.ndarray, missing: np.ndarray | None = None) -> tuple[dict[str, int], np.ndarray]:
    """Counts of NaN (where ``missing`` says a NaN is not a missing value), infinite and huge values, and
    the mask of all of them."""
    nan = np.isnan(values) & (~missing if missing is not None else False)
    inf = np.isinf(values)
    with np.errstate(invalid="ignore"):
        huge = np.abs(values) > MAX_MAGNITUDE
    huge &= ~inf
    counts = {"NaN": int(nan.sum()), "infinite": int(inf.sum()), f"beyond ±{MAX_MAGNITUDE:g}": int(huge.sum())}
    return counts, nan | inf | huge


def _refuse_numbers(path: Path, label: str, counts: dict[str, int], mask: np.ndarray) -> None:
    parts = [f"{n} {what}" for what, n in counts.items() if n]
    total = int(mask.sum())
    raise InputError(
        f"input {path}: {label} holds {total} number{'s' if total > 1 else ''} that cannot be used "
        f"({', '.join(parts)}; first at data row {_first_row(mask)}): numbers must be finite and within "
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
        counts, mask = _bad_numbers(values, missing=column.is_null().to_numpy(zero_copy_only=False))
        if mask.any():
            _refuse_numbers(path, column_label(i + 1, name), counts, mask)


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


def numeric_intent(series: pd.Series) -> bool:
    """A text column that is really numbers with some stray text (at least 95% parse, not all do).

    A text column whose values all parse is left alone: it is text on purpose (codes with leading zeros,
    or typed as text in Parquet)."""
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    counts = series.value_counts(dropna=True, sort=False)  # each distinct value parsed once, weighted by its cells
    counts = counts[counts.to_numpy() > 0]
    if counts.empty:
        return False
    parsed = pd.to_numeric(pd.Series(counts.index, dtype=object).astype(str), errors="coerce")
    share = float(counts.to_numpy()[parsed.notna().to_numpy()].sum() / counts.to_numpy().sum())
    return NUMERIC_INTENT <= share < 1.0


NUMBER_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


def wants_number(name: str, series: pd.Series, spec: ReleaseSpec) -> bool:
    """Declared numeric, or an undeclared-kind attribute column of numbers with stray text."""
    col = spec.declared().get(name)
    if col is not None and (col.role in (Role.class_, Role.identifier) or col.kind is not None):
        return col.kind is ColumnKind.numeric
    return numeric_intent(series)


def derived_expectations(spec: ReleaseSpec, frame: pd.DataFrame) -> list[dict]:
    """Expectations the spec implies, as GX JSON configurations: declared columns exist; the class has no
    nulls; quasi-identifiers are not entirely missing; numeric quasi-identifiers are numbers; a column of
    numbers with stray text fails (declare its missing-value markers in source.na_values, or its kind)."""
    declared = spec.declared()
    out: list[dict] = [{"type": "expect_column_to_exist", "kwargs": {"column": n}} for n in declared]
    cls = spec.declared_class()
    if cls is not None:
        out.append({"type": "expect_column_values_to_not_be_null", "kwargs": {"column": cls}})
    qis = tag.quasi_identifier_candidates(spec, list(frame.columns))
    for name in qis:
        out.append({"type": "expect_column_values_to_not_be_null", "kwargs": {"column": name, "mostly": 1e-12},
                    "meta": {"ppdp": "quasi-identifier not entirely missing"}})
        kind = declared[name].kind if name in declared else None
        if pd.api.types.is_numeric_dtype(frame[name]) and kind in (None, ColumnKind.numeric):
            out.append({"type": "expect_column_values_to_be_in_type_list",
                        "kwargs": {"column": name, "type_list": NUMBER_TYPES}})
    for name in frame.columns:
        series = frame[name]
        if not pd.api.types.is_numeric_dtype(series) and wants_number(name, series, spec):
            out.append({"type": "expect_column_values_to_match_regex",
                        "kwargs": {"column": name, "regex": NUMERIC_REGEX},
                        "meta": {"ppdp": "numeric column holds numbers"}})
    return out


def coerce_types(frame: pd.DataFrame, spec: ReleaseSpec) -> pd.DataFrame:
    """After validation: number columns read as text (declared numeric, or numbers with stray text) become
    floats. Everything else keeps the type pyarrow read."""
    out = frame.copy()
    for name in out.columns:
        series = out[name]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        if wants_number(name, series, spec):
            out[name] = pd.to_numeric(series, errors="coerce").astype("float64")
    return out


def ingest(spec: ReleaseSpec, keyed: bool = True) -> tuple[pd.DataFrame, IngestReport]:
    """Read, validate and hash the input: its SHA-256 (kept in memory for the publisher's private record) and the
    keyed digest a release publishes (:mod:`ppdp.tasks.digests`; ``keyed`` False: none, e.g. one partition of an
    input whose digest is made over all its files, on a worker that holds no key). Raises :class:`InputError`
    listing failed expectations by name."""
    from ppdp.tasks.digests import input_digest

    source = spec.source
    header = read_header(source)
    digest = file_sha256(source.path)
    frame = read_table(source)
    check_orders(frame, spec)
    check_hierarchies(frame, spec)
    suite_json = load_suite_json(base_suite_path("input"))
    suite_json["expectations"] = list(suite_json["expectations"]) + derived_expectations(spec, frame)
    # the cheap expectations first, with pandas: a bad input is refused before Great Expectations is even imported
    refuse_failures(source.path, expectation_text.quick_failures(frame, suite_json))
    outcomes = validate_frame(frame, suite_json)  # the whole suite, in Great Expectations (the authority)
    # published: the keyed digest; the unkeyed SHA-256 goes only to the private record
    made = input_digest(digest, spec.publish.root) if keyed else None
    report = IngestReport(
        path=str(source.path),
        format=source.format,
        rows=len(frame),
        columns=header,
        input_digest=made.digest if made else None,
        input_key_id=made.key_id if made else None,
        private_sha256=digest,
        suite=suite_json["name"],
        expectation_count=len(suite_json["expectations"]),
        expectations=outcomes,
    )
    refuse_failures(source.path, expectation_text.describe(report.failed, suite_json, frame))
    out = coerce_types(frame, spec)
    for i, name in enumerate(out.columns, start=1):  # numbers read as text ("1e400") only become numbers here
        if pd.api.types.is_float_dtype(out[name]) and not pd.api.types.is_float_dtype(frame[name]):
            counts, mask = _bad_numbers(out[name].to_numpy(dtype=np.float64))  # NaN: a missing cell
            if mask.any():
                _refuse_numbers(source.path, column_label(i, name), counts, mask)
    return out, report


def check_orders(frame: pd.DataFrame, spec: ReleaseSpec) -> None:
    """Every value of a column with a declared ``order`` is in that order (compared as text, as the encoder
    ranks them). Names the column and the first data row, never the value."""
    positions = {name: i for i, name in enumerate(frame.columns, start=1)}
    for name, col in spec.declared().items():
        if col.order is None or name not in positions:
            continue
        outside = _outside(frame[name], set(col.order))
        if outside.any():
            n = int(outside.sum())
            raise InputError(
                f"input {spec.source.path}: {column_label(positions[name], name)}: {n} row{'s' if n > 1 else ''} "
                f"hold{'' if n > 1 else 's'} a value not in its declared order (columns.{key_path([name])}.order; "
                f"first at data row {_first_row(outside)}): add the value to the order or mark it missing "
                "(source.na_values)"
            )


def _outside(series: pd.Series, allowed: set[str]) -> np.ndarray:
    """Rows whose non-missing value, as text, is not in ``allowed`` (distinct values are compared once)."""
    foreign = [v for v in pd.unique(series.dropna()) if str(v) not in allowed]
    return series.isin(foreign).to_numpy() if foreign else np.zeros(len(series), dtype=bool)


def check_hierarchies(frame: pd.DataFrame, spec: ReleaseSpec) -> None:
    """Each sensitive column with a hierarchy (``privacy.hierarchies``) has no missing value and every value is
    a leaf of its hierarchy (an ARX CSV: value;level1;...;root), so hierarchical t-closeness can place them."""
    from ppdp.tasks.core.hierarchy import read_hierarchy

    positions = {name: i for i, name in enumerate(frame.columns, start=1)}
    for name, hpath in spec.privacy.hierarchies.items():
        if name not in positions:
            continue
        key = f"spec privacy.hierarchies.{key_path([name])}"
        try:
            table = read_hierarchy(hpath)
        except (OSError, ValueError):  # pandas' parser and decoding errors are ValueErrors
            raise SpecError(f"{key}: cannot read hierarchy {hpath}") from None
        if table.shape[0] == 0 or table.shape[1] < 2:
            raise SpecError(f"{key}: hierarchy {hpath} must have rows value;level1;...;root")
        leaves = table.iloc[:, 0]
        twice = leaves.duplicated().to_numpy()
        if twice.any():
            raise SpecError(f"{key}: hierarchy {hpath} lists a value twice (row {_first_row(twice)})")
        series = frame[name]
        label = column_label(positions[name], name)
        missing = series.isna().to_numpy()
        if missing.any():
            raise InputError(
                f"input {spec.source.path}: {label}: {int(missing.sum())} missing value(s) (first at data row "
                f"{_first_row(missing)}), which its hierarchy cannot place: remove those rows or give them a value"
            )
        outside = _outside(series, set(leaves))
        if outside.any():
            raise InputError(
                f"input {spec.source.path}: {label}: {int(outside.sum())} row(s) hold a value that is not a leaf "
                f"of its hierarchy {hpath} (first at data row {_first_row(outside)})"
            )


MAX_PROBLEMS_LISTED = 5
"""Most failed expectations listed, one line each; the rest are counted."""


def refuse_failures(path: Path, problems: list[str]) -> None:
    """Raise :class:`InputError` with one line per problem (each naming the file; at most
    :data:`MAX_PROBLEMS_LISTED`, then how many more), or return when there is none."""
    if not problems:
        return
    lines = [f"input {path}: {p}" for p in problems[:MAX_PROBLEMS_LISTED]]
    if len(problems) > MAX_PROBLEMS_LISTED:
        rest = len(problems) - MAX_PROBLEMS_LISTED
        lines.append(f"input {path}: and {rest} more problem{'s' if rest > 1 else ''}")
    raise InputError("\n".join(lines))

