"""A partitioned input: its files, one partition's ingest, the input hash over every file, and the distinct values
of the needed columns with their counts (pass 1), merged over the partitions in file order.

A partition is one Parquet file of the folder (:func:`ppdp.tasks.privacy.partitioned.partition_files`: recursive,
sorted by path below the folder, ``.``/``_`` names skipped). Every file must have the first file's columns, in the
same order, of the same types (:func:`ppdp.tasks.privacy.partitioned.common_schema`, one line naming the file and
the column). Each partition is ingested as a single file is (:func:`ppdp.tasks.ingest.ingest`: the hostile-input
checks, the input suite of Great Expectations with the expectations the spec implies, the declared orders and
hierarchies), one task per partition; an error names the partition's file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ExpectationOutcome, IngestReport, Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts, ValueCounts, column_counts, merged_column_counts, summed_counts
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.core.io import file_sha256, read_table
from ppdp.tasks.digests import input_digest, listing_sha256
from ppdp.tasks.distributed.series import column_constants
from ppdp.tasks.ingest import coerce_types, ingest
from ppdp.tasks.privacy.partitioned import common_schema, partition_files
from ppdp.tasks.publish import ensure_root
from ppdp.tasks.spec import check_spec_against_header

SAMPLE_ROWS = 200_000
"""Rows of the first partition the tag step detects roles on (declared roles need none)."""


@dataclass(frozen=True)
class Inputs:
    """The folder's files (in partition order) and their column names."""

    folder: Path
    files: tuple[Path, ...]
    header: tuple[str, ...]

    def relative(self, path: Path) -> str:
        return path.relative_to(self.folder).as_posix()


def list_inputs(spec: ReleaseSpec) -> Inputs:
    """The partitions of ``spec.source.path`` (a folder), their schemas checked to agree, and the header; the spec
    is checked against the header as for one file."""
    folder = spec.source.path
    files = partition_files(folder)
    schema = common_schema(files)
    header = [str(n).strip() for n in schema.names]
    check_spec_against_header(spec, header)
    ensure_root(spec.publish.root)
    return Inputs(folder=folder, files=tuple(files), header=tuple(header))


def partition_spec(spec: ReleaseSpec, path: Path) -> ReleaseSpec:
    """``spec`` reading one partition (messages then name the partition's file)."""
    return spec.model_copy(update={"source": spec.source.model_copy(update={"path": path, "format": "parquet"})})


def read_partition(spec: ReleaseSpec, path: Path) -> tuple[pd.DataFrame, IngestReport]:
    """One partition ingested as a single file is (:func:`ppdp.tasks.ingest.ingest`): its frame and report (no keyed
    digest: the input's is made over every file, by :func:`ingest_report`)."""
    return ingest(partition_spec(spec, path), keyed=False)


def sample_frame(spec: ReleaseSpec, inputs: Inputs) -> pd.DataFrame:
    """The first partition's first :data:`SAMPLE_ROWS` rows, read and typed as ingest types them (for tagging:
    detection rules need values; declared roles do not). Its checks and suite run in its ingest task."""
    frame = read_table(partition_spec(spec, inputs.files[0]).source)
    return coerce_types(frame.iloc[:SAMPLE_ROWS].reset_index(drop=True), spec)


@dataclass
class PartitionIngest:
    """What one partition's ingest returns to the flow: counts only (never a value but the distinct values of the
    counted columns, which stay in memory)."""

    index: int
    file: str
    sha256: str
    report: IngestReport
    counts: dict[str, ValueCounts] = field(default_factory=dict)
    class_counts: dict[str, pd.DataFrame] = field(default_factory=dict)  # column -> rows by (class, value)
    constants: dict[str, int | None] = field(default_factory=dict)  # column -> keyed hash of its one value, or None


def counted_columns(roles: Roles) -> list[str]:
    """The columns pass 1 counts: every quasi-identifier, sensitive attribute, the class, every categorical
    column the rare-value rule applies to, and every column published beside them (an attacker's view may make it
    a quasi-identifier); identifiers dropped or pseudonymized are not published as read."""
    out = []
    for tag in roles.columns:
        if tag.treatment in ("dropped", "pseudonymized") or tag.role is Role.identifier:
            continue
        if tag.role in (Role.quasi_identifier, Role.sensitive, Role.class_, Role.other) or tag.kind in (
                ColumnKind.nominal, ColumnKind.ordinal):
            out.append(tag.name)
    return out


def count_frame(frame: pd.DataFrame, roles: Roles) -> tuple[dict[str, ValueCounts], dict[str, pd.DataFrame]]:
    """Pass 1 over one partition: each of :func:`counted_columns`' values with their counts, and the same by class
    label (a column -> rows by (class, value) table; empty without a class)."""
    columns = [c for c in counted_columns(roles) if c in frame.columns]
    counts = column_counts(frame, columns)
    cls = roles.class_column
    class_counts: dict[str, pd.DataFrame] = {}
    by: tuple[np.ndarray, np.ndarray] | None = None  # the class column factorized, once
    if cls is not None and cls in frame.columns:
        categorical = {t.name for t in roles.columns if t.kind in (ColumnKind.nominal, ColumnKind.ordinal)}
        for c in columns:
            if c == cls or c not in categorical:  # the rare-value rule counts categorical columns only
                continue
            by = by if by is not None else factorized(frame[cls])
            class_counts[c] = class_value_counts(by, frame[c])
    return counts, class_counts


def factorized(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column's codes in order of first appearance (missing one value of its own) and its distinct values as
    objects, the groups of the column taken as objects (a categorical or number column is factorized as it is:
    the same groups, without making an object per cell)."""
    typed = isinstance(series.dtype, pd.CategoricalDtype) or (pd.api.types.is_numeric_dtype(series)
                                                              and not pd.api.types.is_bool_dtype(series))
    codes, uniques = pd.factorize(series if typed else series.astype(object), use_na_sentinel=False)
    return np.asarray(codes, dtype=np.int64), np.asarray(uniques, dtype=object)


def class_value_counts(by: tuple[np.ndarray, np.ndarray], values: pd.Series) -> pd.DataFrame:
    """The rows of each (class label, value) pair, as ``row_counts`` counts the two columns taken as objects
    (first appearance, missing a value of its own, the same column types): ``by`` is the class column
    :func:`factorized`. The pairs are counted on integer codes; only the distinct pairs are grouped as objects."""
    class_codes, labels = by
    codes, distinct = factorized(values)
    width = max(len(distinct), 1)
    pairs, first = pd.factorize(class_codes * width + codes)
    n = np.bincount(pairs, minlength=len(first)).astype(np.int64)
    pairs_seen = pd.DataFrame({"class": labels[first // width], "value": distinct[first % width], "n": n})
    return pairs_seen.groupby(["class", "value"], dropna=False, sort=False)["n"].sum().reset_index()


def ingest_partition(spec: ReleaseSpec, inputs: Inputs, index: int, roles: Roles, hash_key: str = "ppdp constants"
                     ) -> PartitionIngest:
    """Ingest partition ``index``: read it, run the input suite and the spec's checks, hash it, count the values of
    :func:`counted_columns` (with the class beside each, for the rare-value rule), and tell which columns hold one
    value (keyed by ``hash_key``: :func:`ppdp.tasks.distributed.series.column_constants`)."""
    path = inputs.files[index]
    if _rows(path) == 0:  # an empty partition (a day without records) holds nothing to check; the table's rows

        frame = read_table(partition_spec(spec, path).source)
        report = IngestReport(path=str(path), format="parquet", rows=0, columns=list(frame.columns),
                              suite="", expectation_count=0, expectations=[])
    else:
        frame, report = read_partition(spec, path)
    if list(frame.columns) != list(inputs.header):  # common_schema checked the files; the frame must agree
        raise InputError(f"input {path}: its columns differ from the first file's")
    counts, class_counts = count_frame(frame, roles)
    sha256 = report.private_sha256 or file_sha256(path)  # ingest hashed the file it read; an empty one: here
    return PartitionIngest(index=index, file=inputs.relative(path), sha256=sha256, report=report,
                           counts=counts, class_counts=class_counts, constants=column_constants(frame, hash_key))


def _rows(path: Path) -> int:
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # noqa: BLE001 - unreadable: the ingest names it
        return -1


def input_sha256(inputs: Inputs, parts: list[PartitionIngest]) -> str:
    """SHA-256 of the lines ``<file relative to the folder> <its SHA-256>``, one per file in partition order (sorted
    by path below the folder): a file added, removed, renamed or changed changes it. Never published: a release
    publishes its keyed digest (:func:`ingest_report`), the publisher's private record keeps this."""
    return listing_sha256([(p.file, p.sha256) for p in sorted(parts, key=lambda p: p.index)])


def merged_outcomes(outcomes: list[ExpectationOutcome]) -> list[ExpectationOutcome]:
    """Outcomes of one suite run on several partitions (or row files) as one per expectation: passed when it
    passed on each, counts summed (an expectation a partition's values did not call for counts where it ran)."""

    def add(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else int(a or 0) + int(b or 0)

    merged: dict[tuple[str, str | None], ExpectationOutcome] = {}
    for e in outcomes:
        key = (e.expectation, e.column)
        seen = merged.get(key)
        merged[key] = e.model_copy() if seen is None else seen.model_copy(update={
            "success": seen.success and e.success,
            "unexpected_count": add(seen.unexpected_count, e.unexpected_count),
            "element_count": add(seen.element_count, e.element_count),
            "observed": None if seen.observed is None or e.observed is None else seen.observed + e.observed})
    return list(merged.values())


def ingest_report(spec: ReleaseSpec, inputs: Inputs, parts: list[PartitionIngest]) -> IngestReport:
    """The input's report: the folder, its rows, the keyed digest of the hash over its files, the suite's outcomes
    over every partition."""
    every = [p.report for p in sorted(parts, key=lambda p: p.index)]
    rows = sum(r.read_rows for r in every)
    reports = [r for r in every if r.read_rows]  # an empty partition ran no suite
    if rows == 0 or not reports:
        raise InputError(f"input {inputs.folder}: the table has no rows")
    sha = input_sha256(inputs, parts)
    keyed = input_digest(sha, spec.publish.root)  # the partitions' own hashes are never published
    return IngestReport(path=str(inputs.folder), format="parquet", rows=rows, columns=list(inputs.header),
                        input_digest=keyed.digest, input_key_id=keyed.key_id, private_sha256=sha,
                        suite=reports[0].suite,
                        expectation_count=max(r.expectation_count for r in reports),
                        expectations=merged_outcomes([e for r in reports for e in r.expectations]))


def ingest_counts(part: PartitionIngest) -> Counts:
    """One partition's pass 1 counts."""
    return Counts(columns=part.counts, by_class=part.class_counts, rows=[part.report.read_rows])


def frames_counts(frames: Sequence[pd.DataFrame], roles: Roles) -> Counts:
    """Pass 1 over partitions held as frames (in partition order), as the ingest tasks count them and merge-counts
    merges them (for a caller holding the partitions in memory: tests, benchmarks)."""
    parts = []
    for frame in frames:
        columns, by_class = count_frame(frame, roles)
        parts.append(Counts(columns=columns, by_class=by_class, rows=[len(frame)]))
    return merge_counts(parts)


def merge_counts(parts: Sequence[PartitionIngest | Counts]) -> Counts:
    """Pass 1's counts of consecutive partitions as one (partition order): partitions' ingests (sorted by index), or
    the merged counts of consecutive runs of them in order (a level of the merge tree,
    :func:`ppdp.tasks.distributed.tree.merge_tree`): the result is the same."""
    ingests = [p for p in parts if isinstance(p, PartitionIngest)]
    counts = [ingest_counts(p) for p in sorted(ingests, key=lambda p: p.index)] if len(ingests) == len(parts) else [
        p if isinstance(p, Counts) else ingest_counts(p) for p in parts]
    columns = merged_column_counts([p.columns for p in counts])
    by_class: dict[str, pd.DataFrame] = {}
    for c in counts[0].by_class:
        by_class[c] = summed_counts([p.by_class[c] for p in counts])
    return Counts(columns=columns, by_class=by_class, rows=[r for p in counts for r in p.rows])
