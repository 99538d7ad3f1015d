"""Ingest: read a CSV or Parquet table through pyarrow, validate it with a Great Expectations suite, hash it.

The suite is the base suite stored as JSON under ``expectations/`` plus expectations derived from the spec:
declared columns exist, the class column has no nulls, quasi-identifiers are not entirely null, and numeric
quasi-identifiers hold numbers. Failures are reported by expectation name, column and counts, never values.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ppdp.expectations import base_suite_path, load_suite_json, validate_frame
from ppdp.schemas.reports import ExpectationOutcome, IngestReport
from ppdp.schemas.spec import ColumnKind, ReleaseSpec, Role, SourceSpec
from ppdp.tasks import tag
from ppdp.tasks.core.errors import InputError

NUMERIC_REGEX = r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$"
# a text column whose non-missing values parse as numbers at least this often is a number column with stray text
NUMERIC_INTENT = 0.95


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_header(source: SourceSpec) -> list[str]:
    """Column names only (cheap): lets a spec be checked before any data is read."""
    path = source.path
    if not path.is_file():
        raise InputError(f"input {path}: file not found")
    if source.format == "parquet":
        try:
            names = pq.read_schema(path).names
        except (pa.ArrowException, OSError):
            raise InputError(f"input {path}: not a readable Parquet file") from None
    else:
        if path.stat().st_size == 0:
            raise InputError(f"input {path}: the file is empty (no header, no rows)")
        try:
            with open(path, encoding=source.encoding, newline="") as fh:
                names = next(csv.reader(fh, delimiter=source.sep), [])
        except (UnicodeDecodeError, LookupError):
            raise InputError(f"input {path}: not readable as {source.encoding} text") from None
        except csv.Error:
            raise InputError(f"input {path}: the header line is not valid CSV") from None
    names = [n.strip() for n in names]
    if not names or all(n == "" for n in names):
        raise InputError(f"input {path}: no header line")
    if any(n == "" for n in names):
        raise InputError(f"input {path}: column {names.index('') + 1} has an empty name")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"input {path}: duplicate column names: {', '.join(dupes)}")
    return names


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
    frame = table.to_pandas()
    frame.columns = [str(c).strip() for c in frame.columns]
    if source.format == "parquet" and source.na_values:
        # Parquet has real nulls; na_values still applies to text columns for symmetry with CSV
        for col in frame.columns:
            if frame[col].dtype == object or pd.api.types.is_string_dtype(frame[col]):
                frame[col] = frame[col].mask(frame[col].isin(source.na_values))
    return frame


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
    values = series.dropna()
    if values.empty or pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    parsed = pd.to_numeric(values.astype(str), errors="coerce")
    share = float(parsed.notna().mean())
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


def ingest(spec: ReleaseSpec) -> tuple[pd.DataFrame, IngestReport]:
    """Read, validate and hash the input. Raises :class:`InputError` listing failed expectations by name."""
    source = spec.source
    header = read_header(source)
    digest = file_sha256(source.path)
    frame = read_table(source)
    suite_json = load_suite_json(base_suite_path("input"))
    suite_json["expectations"] = list(suite_json["expectations"]) + derived_expectations(spec, frame)
    outcomes = validate_frame(frame, suite_json)
    report = IngestReport(
        path=str(source.path),
        format=source.format,
        rows=len(frame),
        columns=header,
        input_sha256=digest,
        suite=suite_json["name"],
        expectation_count=len(suite_json["expectations"]),
        expectations=outcomes,
    )
    if report.failed:
        raise InputError(f"input {source.path}: failed {len(report.failed)} expectation"
                         f"{'s' if len(report.failed) > 1 else ''}: {describe_failures(report.failed)}")
    return coerce_types(frame, spec), report


def describe_failures(failed: list[ExpectationOutcome]) -> str:
    parts = []
    for f in failed:
        what = f.expectation + (f"({f.column})" if f.column else "")
        if f.unexpected_count is not None:
            what += f" {f.unexpected_count} of {f.element_count} rows unexpected"
        parts.append(what)
    return "; ".join(parts)
