"""Ingest: read a CSV or Parquet table (:mod:`ppdp.tasks.core.io`), validate it with a Great Expectations suite, hash
it.

The suite is the base suite stored as JSON under ``expectations/`` plus expectations derived from the spec:
declared columns exist, the class column has no nulls, quasi-identifiers are not entirely null, and numeric
quasi-identifiers hold numbers. Failures are told in plain words (:mod:`ppdp.tasks.expectation_text`): the column
by position and name, how many rows fail and the first failing data row, never a value. The cheap expectations are
decided with pandas first, so a bad input is refused before Great Expectations is imported (seconds); a good input
then runs the whole suite in Great Expectations.

Before the suite, hostile input is refused (by the reader, :mod:`ppdp.tasks.core.io`) with one line naming the
column (by position and name) and the data row (1 = the first row after the header), never a value: a header that
looks like data (its names are then never echoed), a header that does not split on the separator, nested or binary
Parquet columns, NaN, infinite or huge numbers (beyond :data:`ppdp.tasks.core.encoding.MAX_MAGNITUDE`), values
outside a declared ``order``, sensitive values missing from their hierarchy. A UTF-8 byte-order mark is read as
such; a UTF-16 one is named.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ppdp.expectations import base_suite_path, load_suite_json, validate_frame
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import IngestReport
from ppdp.tasks import expectation_text, tag
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.hierarchy import read_hierarchy
from ppdp.tasks.core.io import bad_numbers, file_sha256, first_row, read_header, read_table, refuse_numbers
from ppdp.tasks.core.labels import column_label, key_path
from ppdp.tasks.digests import input_digest

if TYPE_CHECKING:
    from ppdp.schemas.spec import ReleaseSpec

NUMERIC_REGEX = r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$"
# a text column whose non-missing values parse as numbers at least this often is a number column with stray text
NUMERIC_INTENT = 0.95


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
            counts, mask = bad_numbers(out[name].to_numpy(dtype=np.float64))  # NaN: a missing cell
            if mask.any():
                refuse_numbers(source.path, column_label(i, name), counts, mask)
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
                f"first at data row {first_row(outside)}): add the value to the order or mark it missing "
                "(source.na_values)"
            )


def _outside(series: pd.Series, allowed: set[str]) -> np.ndarray:
    """Rows whose non-missing value, as text, is not in ``allowed`` (distinct values are compared once)."""
    foreign = [v for v in pd.unique(series.dropna()) if str(v) not in allowed]
    return series.isin(foreign).to_numpy() if foreign else np.zeros(len(series), dtype=bool)


def check_hierarchies(frame: pd.DataFrame, spec: ReleaseSpec) -> None:
    """Each sensitive column with a hierarchy (``privacy.hierarchies``) has no missing value and every value is
    a leaf of its hierarchy (an ARX CSV: value;level1;...;root), so hierarchical t-closeness can place them."""
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
            raise SpecError(f"{key}: hierarchy {hpath} lists a value twice (row {first_row(twice)})")
        series = frame[name]
        label = column_label(positions[name], name)
        missing = series.isna().to_numpy()
        if missing.any():
            raise InputError(
                f"input {spec.source.path}: {label}: {int(missing.sum())} missing value(s) (first at data row "
                f"{first_row(missing)}), which its hierarchy cannot place: remove those rows or give them a value"
            )
        outside = _outside(series, set(leaves))
        if outside.any():
            raise InputError(
                f"input {spec.source.path}: {label}: {int(outside.sum())} row(s) hold a value that is not a leaf "
                f"of its hierarchy {hpath} (first at data row {first_row(outside)})"
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

