"""A partitioned release's output: each partition loaded, recoded and spread over the release's row files; the
files shuffled and written; the utility sample.

Which published file a row lands in must say nothing about the input partition it came from (partitions are
often by date or region: a file of one partition's rows would publish that value beside the generalized
quasi-identifiers). So each partition's published rows go to the release's row files at random (a generator
seeded by the release seed, the publisher's series key and the partition's number), as piece files in the
staging folder (``.shuffle/``: sanitized rows only, never input rows); each row file is then one task that reads
its pieces, shuffles them (seeded the same way by the file's number) and writes ``data/part-<n>.parquet``. A task
holds one partition's rows, or one row file's (about a partition's).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.expectations import validate_frame
from ppdp.schemas.reports import ExpectationOutcome, Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.errors import InternalError, ReleaseRejected
from ppdp.tasks.core.io import read_table
from ppdp.tasks.core.labels import column_label
from ppdp.tasks.distributed.inputs import Counts, Inputs
from ppdp.tasks.distributed.measure import known_columns
from ppdp.tasks.distributed.rare import RarePlan, apply_rare
from ppdp.tasks.distributed.series import write_members
from ppdp.tasks.expectation_text import describe
from ppdp.tasks.ingest import coerce_types
from ppdp.tasks.layout import data_file_name
from ppdp.tasks.publish import output_suite, write_data_file
from ppdp.tasks.tag import protect_identifiers

SHUFFLE = ".shuffle"


def derived_seed(seed: int, key: bytes | None, *what: object) -> int:
    """A 128-bit seed for one random choice of a partitioned release (``what``: its purpose and number), from the
    release seed and the publisher's key (the row order must not be recomputable from the manifest's seed alone)."""
    digest = hashlib.sha256(b"ppdp distributed v1\0" + str(int(seed)).encode())
    digest.update(b"\0key\0" + (hmac.new(key, b"ppdp distributed", hashlib.sha256).digest() if key else b""))
    for w in what:
        digest.update(b"\0" + str(w).encode())
    return int.from_bytes(digest.digest()[:16], "big")


def read_partition(spec: ReleaseSpec, inputs: Inputs, index: int) -> pd.DataFrame:
    """Partition ``index`` as read (its checks passed at ingest), number columns read as text made numbers."""
    source = spec.source.model_copy(update={"path": inputs.files[index], "format": "parquet"})
    return coerce_types(read_table(source), spec)


def load_partition(spec: ReleaseSpec, inputs: Inputs, index: int, roles: Roles, pseudonym_key: bytes | None,
                   rare: RarePlan, raw: pd.DataFrame | None = None) -> pd.DataFrame:
    """Partition ``index`` as the method receives it: :func:`read_partition` (or ``raw``, what it returned),
    identifiers dropped or pseudonymized, the rare-value rule applied (the index kept: rows left out are missing
    from it)."""
    frame = read_partition(spec, inputs, index) if raw is None else raw
    frame = protect_identifiers(frame, roles, spec.identifiers, pseudonym_key)
    return apply_rare(frame, rare)


# -- the utility sample ---------------------------------------------------------------------------------------
@dataclass
class SamplePlan:
    """How many records of each class each partition gives to the utility sample (the same share of every class:
    stratified; largest remainders so that the totals are exact)."""

    size: int
    population: int
    take: list[dict[Any, int]] = field(default_factory=list)  # per partition: class label -> records
    per_class: dict[str, int] = field(default_factory=dict)


def _largest_remainder(total: int, weights: np.ndarray) -> np.ndarray:
    if total <= 0 or weights.sum() == 0:
        return np.zeros(len(weights), dtype=np.int64)
    exact = total * weights / weights.sum()
    out = np.floor(exact).astype(np.int64)
    short = total - int(out.sum())
    if short > 0:
        order = np.argsort(-(exact - out), kind="stable")
        out[order[:short]] += 1
    return np.minimum(out, weights.astype(np.int64))


def sample_plan(per_partition: list[pd.Series], size: int) -> SamplePlan:
    """``per_partition``: each partition's rows by class label (after the rare-value rule); ``size``: the sample's
    records (every record when the table has fewer)."""
    labels = pd.Index([])
    for s in per_partition:
        labels = labels.append(pd.Index(s.index)).unique()
    matrix = np.array([[int(s.get(label, 0)) for label in labels] for s in per_partition], dtype=np.int64)
    population = int(matrix.sum())
    size = min(int(size), population)
    class_totals = matrix.sum(axis=0)
    per_class = _largest_remainder(size, class_totals.astype(np.float64))
    take = np.zeros_like(matrix)
    for j in range(len(labels)):
        take[:, j] = _largest_remainder(int(per_class[j]), matrix[:, j].astype(np.float64))
    return SamplePlan(size=int(take.sum()), population=population,
                      take=[{labels[j]: int(take[i, j]) for j in range(len(labels)) if take[i, j]}
                            for i in range(len(per_partition))],
                      per_class={str(labels[j]): int(take[:, j].sum()) for j in range(len(labels))})


def sample_rows(frame: pd.DataFrame, class_column: str | None, take: dict[Any, int], seed: int) -> np.ndarray:
    """The positions of one partition's sample rows (sorted)."""
    rng = np.random.default_rng(seed)
    if class_column is None:
        n = int(sum(take.values()))
        return np.sort(rng.choice(len(frame), size=min(n, len(frame)), replace=False))
    labels = frame[class_column].to_numpy(dtype=object)
    chosen = []
    for label, n in take.items():
        rows = np.flatnonzero(labels == label)
        chosen.append(rng.choice(rows, size=min(n, len(rows)), replace=False))
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)


# -- recoding and the row files -------------------------------------------------------------------------------
@dataclass
class Recoded:
    """One partition recoded: its rows in and out, and its sample (original and published rows, aligned)."""

    index: int
    rows: int
    sample_original: pd.DataFrame
    sample_published: pd.DataFrame
    pieces: int
    schema: pa.Schema  # the types of its published columns, before the release's schema unifies them


def write_pieces(published: pd.DataFrame, staging: Path, index: int, files: int, seed: int) -> tuple[int, pa.Schema]:
    """Spread one partition's published rows over ``files`` row files at random: piece files
    ``.shuffle/<file>-<partition>.parquet``; returns how many were written and the pieces' schema (the types
    pyarrow gives this partition's published columns, metadata aside)."""
    folder = staging / SHUFFLE
    folder.mkdir(exist_ok=True)
    target = np.random.default_rng(seed).integers(0, files, size=len(published))
    written = 0
    table = pa.Table.from_pandas(published, preserve_index=False)
    order = np.argsort(target, kind="stable")
    bounds = np.searchsorted(target[order], np.arange(files + 1))
    grouped = table.take(pa.array(order))  # the rows by target file (in order within each): one take, then slices
    for f in range(files):
        size = int(bounds[f + 1] - bounds[f])
        if size == 0:
            continue
        pq.write_table(grouped.slice(int(bounds[f]), size), folder / f"{f:05d}-{index:05d}.parquet")
        written += 1
    return written, table.schema.remove_metadata()


def recode_partition(spec: ReleaseSpec, inputs: Inputs, index: int, roles: Roles, pseudonym_key: bytes | None,
                     rare: RarePlan, method: Any, fitted: Any, allotted: Any, staging: Path, files: int,
                     order_key: bytes | None, sample_take: dict[Any, int], identity: Any = None,
                     protected: tuple[str, ...] = ()) -> Recoded:
    """Load partition ``index``, publish its rows (:meth:`PartitionedMethod.recode`), spread them over the row
    files, keep its utility sample, and (``identity``: a
    :class:`ppdp.tasks.distributed.series.PartitionedIdentity`) write its records' series pieces."""
    raw = read_partition(spec, inputs, index)
    frame = load_partition(spec, inputs, index, roles, pseudonym_key, rare, raw=raw)
    published = method.recode(fitted, frame, allotted)
    if identity is not None:
        qis, beside = known_columns(roles, [str(c) for c in published.columns])
        write_members(raw, published, [*qis, *beside], protected, identity, staging, index)
    pieces, schema = write_pieces(published, staging, index, files,
                                  derived_seed(spec.seed, order_key, "files", index))
    rows = sample_rows(frame, roles.class_column, sample_take, derived_seed(spec.seed, None, "sample", index))
    return Recoded(index=index, rows=len(frame), sample_original=frame.iloc[rows].reset_index(drop=True),
                   sample_published=published.iloc[rows].reset_index(drop=True), pieces=pieces, schema=schema)


def _plain(kind: pa.DataType) -> pa.DataType:
    """A dictionary column by its values' type (partitions' dictionaries differ in size, hence in index width)."""
    return kind.value_type if pa.types.is_dictionary(kind) else kind


def release_schema(schemas: list[pa.Schema], declared: dict[str, pa.DataType]) -> pa.Schema:
    """The release's schema: one type per published column, the type of that column in every row file.

    ``schemas``: each partition's published columns as pyarrow typed them (:class:`Recoded`); ``declared``: the
    method's type for each column it recodes (:meth:`PartitionedMethod.published_types`: text for a generalized
    column, whose values are labels, intervals or ``*`` whatever the input type). Every other column gets its
    partitions' types unified as pandas types the whole table (one table read at once): a partition's all-missing
    text column (no type of its own) takes the others' type, integers beside a partition's missing values (read as
    floats) become floats, a dictionary is its values' type. Partitions whose types cannot be unified are an
    :class:`InternalError` (ppdp published a column two ways; the input's partitions agree on their schema)."""
    names = list(schemas[0].names) if schemas else []
    if any(list(s.names) != names for s in schemas):
        raise InternalError("the partitions' published columns differ (names or order); nothing was published")
    fields = []
    for i, name in enumerate(names):
        if name in declared:
            fields.append(pa.field(name, declared[name]))
            continue
        kinds = [pa.schema([pa.field(name, _plain(s.field(i).type))]) for s in schemas]
        try:
            fields.append(pa.unify_schemas(kinds, promote_options="permissive").field(0))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            seen = sorted({str(k.field(0).type) for k in kinds})
            raise InternalError(f"the partitions publish {column_label(i + 1, name)} as {' and '.join(seen)}, which "
                                "do not unify; nothing was published") from None
    return pa.schema(fields)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (a piece of one partition's rows) in the release's schema: its columns cast to their declared
    types, no pandas metadata (readers type the columns from the schema alone)."""
    return pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema], schema=schema)


@dataclass
class RowFile:
    """One written row file: its name relative to the release folder, rows, and the output suite's outcomes on it."""

    name: str
    rows: int
    outcomes: list[ExpectationOutcome]


def write_row_file(staging: Path, number: int, release_id: str, spec: ReleaseSpec, roles: Roles,
                   order_key: bytes | None, schema: pa.Schema) -> RowFile:
    """Row file ``number``: its pieces read in the release's ``schema`` (:func:`release_schema`: every row file has
    the same types), shuffled, checked with the output suite (identifiers absent or pseudonyms; the class-based
    expectations are measured over every file from counts instead) and written as ``data/part-<number>.parquet``;
    its pieces removed. A file with no piece is not written."""
    pieces = sorted((staging / SHUFFLE).glob(f"{number:05d}-*.parquet"))
    name = data_file_name(number)
    if not pieces:
        return RowFile(name, 0, [])
    table = pa.concat_tables([conform(pq.read_table(p), schema) for p in pieces])
    perm = np.random.default_rng(derived_seed(spec.seed, order_key, "order", number)).permutation(table.num_rows)
    table = table.take(pa.array(perm))
    frame = table.to_pandas()
    suite = output_suite(list(frame.columns), roles, spec, "record")
    outcomes = validate_frame(frame, suite)
    failed = [o for o in outcomes if not o.success]
    if failed:  # in plain words, never a value (the rows are shuffled: no row number)

        raise ReleaseRejected(f"output suite failed on {name}: " + "; ".join(describe(failed, suite, None,
                              list(frame.columns))), [o.expectation for o in failed])
    rows, _ = write_data_file(table, staging / name, release_id)
    for p in pieces:
        p.unlink()
    return RowFile(name, rows, outcomes)


def clear_pieces(staging: Path) -> None:
    """Remove the (emptied) piece folder once every row file is written."""
    folder = staging / SHUFFLE
    if folder.exists():
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


def partition_classes(counts: Counts, per_partition_class: list[Any], rare: RarePlan, class_column: str | None
                      ) -> list[pd.Series]:
    """Each partition's rows by class label after the rare-value rule (rows of a removed label left out)."""
    out = []
    for i, vc in enumerate(per_partition_class):
        if vc is None:
            out.append(pd.Series({"(all)": counts.rows[i]}))
            continue
        s = vc.as_counts()
        for a in rare.actions:
            if a.column != class_column:
                continue
            if a.action == "rows_removed":
                s = s[~s.index.isin(a.rare)]
            elif a.action == "merged" and a.token is not None:
                rare_rows = int(s[s.index.isin(a.rare)].sum())
                s = s[~s.index.isin(a.rare)]
                if rare_rows:
                    s = pd.concat([s, pd.Series({a.token: rare_rows})])
        out.append(s)
    return out


def class_totals(by_class: list[pd.Series]) -> dict[str, int]:
    """Published records per class label (as text) over every partition (:func:`partition_classes`)."""
    totals: dict[str, int] = {}
    for per in by_class:
        for label, count in per.items():
            totals[str(label)] = totals.get(str(label), 0) + int(count)
    return totals


def join_samples(recoded: list[Recoded]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The utility sample: its original rows and their published rows, aligned, in partition order."""
    return (pd.concat([r.sample_original for r in recoded], ignore_index=True),
            pd.concat([r.sample_published for r in recoded], ignore_index=True))
