"""The record-level figures of a partitioned release, exactly: for every input record, its nearest published row
over every published row file (linkage, nearest-record distances), and for every published row, whether some input
record equals it (exact copies), as the one-table measure computes them
(:func:`ppdp.tasks.privacy.measure.measure_release` for the ``record`` unit, the attacker's view's copies).

No sampling and no approximate search: the work is split into blocks, a block being one input partition (as the
method received it) against one published row file, and merged exactly:

* the standardization is the one-table encoder's (:class:`ppdp.tasks.core.encoding.TableEncoder` over the known
  columns), fitted on the whole input from its merged value counts (:func:`fit_encoder`: the same categories,
  median, mean and standard deviation; the last two summed in another order, so equal to one machine's up to a
  float's rounding, about 1e-16 of the value);
* nearest-record distance: each input record's distance to the nearest row of each published file
  (:func:`ppdp.tasks.core.neighbours.nearest_rows`, recomputed from the two rows), the smallest over the files;
* linkage: the record's own published row is made again from the fitted method (a partition's published rows are
  reproducible: :attr:`Originals.publish`), and the record counts as linked when that row is at the smallest
  distance over every file (:func:`tied`: within a billionth of it, far above a float's rounding). Where another
  published row is as near, the one-table search takes whichever its tree returns first; here the record counts as
  linked (the higher figure: never below one machine's; equal to it where every nearest row is unique);
* exact copies: each published row's canonical key (:func:`ppdp.tasks.privacy.attacker.copy_mask`) against each
  input partition's, combined by ``or``.

Each input partition is one task (it reads every published file once) and each published file is one task (it
reads every input partition once) on the Dask cluster when there is one; what comes back is one distance per input
record (the quantiles need them all) and counts. The work grows with (input rows) x (published rows): no block is
skipped (a bound that proves a file holds no nearer row is not used here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.schemas.reports import Roles
from ppdp.tasks.core.counts import ValueCounts, column_counts, merged_column_counts
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.encoding_counts import fit_encoder
from ppdp.tasks.core.neighbours import nearest_rows
from ppdp.tasks.privacy import risk
from ppdp.tasks.privacy.attacker import copy_mask, known_columns, roles_treatment
from ppdp.tasks.privacy.partitioned import partition_files
from ppdp.tasks.privacy.partitioned_runner import pass_runner


@dataclass
class Originals:
    """The input partitions as the method received them, for the record-level figures: how many, how partition
    ``i`` is loaded (``load(i)``), and how its published rows are made again (``publish(frame, i)``: the method is
    reproducible, the rows come out in the frame's order)."""

    partitions: int
    load: Callable[[int], pd.DataFrame]
    publish: Callable[[pd.DataFrame, int], pd.DataFrame]


def republish(method: Any, fitted: Any, jobs: Sequence[Any], frame: pd.DataFrame, index: int) -> pd.DataFrame:
    """Partition ``index``'s published rows again (``method.recode`` with that partition's job)."""
    return method.recode(fitted, frame, jobs[index])


@dataclass
class RecordFigures:
    """The record-level figures over every partition: records, the records whose own published row is nearest, each
    input record's nearest-record distance (partition order), published rows and those that copy an input
    record."""

    records: int
    linked: int
    distances: np.ndarray
    published: int
    copies: int

    @property
    def linkage_risk(self) -> float:
        return self.linked / self.records if self.records else 0.0

    @property
    def exact_copies(self) -> float:
        return self.copies / self.published if self.published else 0.0

    def dcr(self) -> risk.DistanceToClosestRecord:
        return risk.dcr_summary(self.distances)

    def dcr_quantiles(self) -> dict[str, float]:
        d = self.dcr()
        return {f"q{int(round(level * 100)):02d}": float(v) for level, v in zip(d.levels, d.values)}


@dataclass
class Plan:
    """What each block task needs: the encoder over the known columns and the columns compared for copies."""

    encoder: TableEncoder
    copy_columns: list[str]


# -- blocks ------------------------------------------------------------------------------------------------------
def block_distances(x_original: np.ndarray, x_published: np.ndarray) -> np.ndarray:
    """Each original row's distance to its nearest row of one published block (infinity: an empty block)."""
    if len(x_published) == 0:
        return np.full(len(x_original), np.inf)
    return nearest_rows(x_original, x_published)[0]


def own_distances(x_original: np.ndarray, x_own: np.ndarray) -> np.ndarray:
    """Each original row's distance to its own published row (aligned), computed as :func:`nearest_rows`
    recomputes a distance from the two rows."""
    diff = x_original - x_own
    return np.sqrt(np.einsum("ij,ij->i", diff, diff))


def figures_of_blocks(originals: Sequence[pd.DataFrame], owns: Sequence[pd.DataFrame],
                      published: Sequence[pd.DataFrame], plan: Plan) -> RecordFigures:
    """The figures over in-memory blocks (``owns[i]``: partition ``i``'s own published rows, aligned with
    ``originals[i]``; ``published``: the published blocks, in any order), block by block as the tasks do."""
    x_pub = [plan.encoder.transform(p) for p in published]
    records = linked = 0
    distances = []
    for frame, own in zip(originals, owns, strict=True):
        d, hit = _input_block(frame, own, x_pub, plan)
        records, linked = records + len(frame), linked + hit
        distances.append(d)
    copies = sum(_copies(p, originals, plan) for p in published)
    return RecordFigures(records=records, linked=linked, distances=_joined(distances),
                         published=sum(len(p) for p in published), copies=copies)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


def _input_block(frame: pd.DataFrame, own: pd.DataFrame, x_published: Sequence[np.ndarray], plan: Plan
                 ) -> tuple[np.ndarray, int]:
    """One input partition against every published block: (its records' nearest distances, how many are linked)."""
    x = plan.encoder.transform(frame)
    best = np.full(len(x), np.inf)
    for xp in x_published:
        best = np.minimum(best, block_distances(x, xp))
    own_d = own_distances(x, plan.encoder.transform(own))
    return best, int(np.count_nonzero(own_d <= tied(best)))


TIE = 1e-9
"""Distances within this share of the nearest (plus this much) count as equally near: far above the rounding of a
distance computed from two rows (about 1e-16 of it), which could otherwise split a tie either way."""


def tied(best: np.ndarray) -> np.ndarray:
    """The largest distance that counts as tied with ``best``."""
    return best * (1.0 + TIE) + TIE


def _copies(published: pd.DataFrame, originals: Sequence[pd.DataFrame], plan: Plan) -> int:
    mask = np.zeros(len(published), dtype=bool)
    for frame in originals:
        mask |= copy_mask(published, frame, plan.copy_columns)
    return int(np.count_nonzero(mask))


# -- the tasks ---------------------------------------------------------------------------------------------------
def _read(path: str, schema: pa.Schema | None) -> pd.DataFrame:
    return pq.read_table(path, schema=schema).to_pandas()


def count_task(index: int, originals: Originals, columns: list[str]) -> dict[str, ValueCounts]:
    return column_counts(originals.load(index), columns)


def input_task(index: int, originals: Originals, plan: Plan, files: list[str], schema: pa.Schema | None
               ) -> tuple[np.ndarray, int]:
    """Input partition ``index`` against every published file: its records' nearest distances and linked count."""
    frame = originals.load(index)
    own = originals.publish(frame, index)
    return _input_block(frame, own, [plan.encoder.transform(_read(f, schema)) for f in files], plan)


def file_task(path: str, originals: Originals, plan: Plan, schema: pa.Schema | None) -> tuple[int, int]:
    """Published file ``path`` against every input partition: (its rows, those that copy an input record)."""
    published = _read(path, schema)
    mask = np.zeros(len(published), dtype=bool)
    for i in range(originals.partitions):
        mask |= copy_mask(published, originals.load(i), plan.copy_columns)
    return len(published), int(np.count_nonzero(mask))


def _map(runner: Any, fn: Callable, items: Sequence[Any], *args: Any) -> list[Any]:
    client = getattr(runner, "client", None)
    if client is None:
        return [fn(item, *args) for item in items]
    return list(client.gather([client.submit(fn, item, *args, pure=False) for item in items]))


def record_columns(roles: Roles, columns: list[str]) -> tuple[list[str], list[str]]:
    """(the known columns the distances are over, the columns compared for copies: pseudonyms aside)."""
    known = known_columns(pd.DataFrame(columns=columns), roles)  # its rule reads the column names only
    return known, [c for c in known if roles_treatment(roles, c) != "pseudonymized"]


def measure_records(data: Path, roles: Roles, columns: list[str], originals: Originals, schema: pa.Schema | None,
                    cluster: str | None = None) -> RecordFigures | None:
    """The record-level figures of the release in ``data`` (its row files, read in ``schema``) against
    ``originals`` (see the module docstring); None when no column is known to the attacker."""
    known, copy_columns = record_columns(roles, columns)
    if not known:
        return None
    files = [str(f) for f in partition_files(data)]
    items = list(range(originals.partitions))
    with pass_runner(cluster, max(len(items), len(files))) as runner:
        values = merged_column_counts(_map(runner, count_task, items, originals, known))
        plan = Plan(fit_encoder(values, known, roles.kinds(), roles.orders()), copy_columns)
        per_input = _map(runner, input_task, items, originals, plan, files, schema)
        per_file = _map(runner, file_task, files, originals, plan, schema)
    return RecordFigures(records=sum(len(d) for d, _ in per_input), linked=sum(h for _, h in per_input),
                         distances=_joined([d for d, _ in per_input]), published=sum(r for r, _ in per_file),
                         copies=sum(c for _, c in per_file))
