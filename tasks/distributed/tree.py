"""Merges off the driver: a partitioned release's count tables merged as a tree of tasks (:func:`merge_tree`, fan-in
:data:`ppdp.tasks.privacy.partitioned_runner.FANIN`, as ``ppdp validate FOLDER`` merges its cell tables), and the
steps that read the merged counts run as tasks beside them (the method's start and passes, its domains, the lattice
search, the fit, the jobs the fit leaves), so that on a Dask cluster the merged tables stay on the workers and the
flow's process receives only small results: the next pass's job, the chosen node, the domains, the fit's summary
(:func:`fit_summary`) and the ingest's per-partition records without their value counts (:func:`slim_ingests`).

Exact: a tree merges consecutive runs of partitions, in partition order, and each method's ``merge`` is associative
over consecutive runs (first appearance over the partitions in order, counts summed), so the tree's result equals the
flat merge of every partition in order (``tests/test_merge_tree.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pyarrow as pa

from ppdp.schemas.methods import Domain
from ppdp.schemas.reports import LatticeSearch, Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts
from ppdp.tasks.distributed.inputs import Inputs, PartitionIngest
from ppdp.tasks.distributed.output import load_partition
from ppdp.tasks.distributed.rare import RarePlan
from ppdp.tasks.privacy.partitioned_runner import FANIN
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.partitions import Fitted, OnPartitions
from ppdp.tasks.steps import Pending, Runner, Step

__all__ = ["FANIN", "FitSummary", "absorb", "allot_job", "allotted", "domains", "finish_local", "fit", "fit_summary",
           "job_count", "local_jobs", "merge_pass", "merge_tree", "next_pass", "nth_part", "search", "slim_ingests",
           "start"]


def merge_tree(runner: Runner, step: Step[Any], leaves: Sequence[Pending[Any]], *args: Any, fanin: int = FANIN
               ) -> Pending[Any]:
    """``step(*args, group)`` submitted over consecutive groups of at most ``fanin`` of ``leaves`` (in order), then
    over groups of those results, until one remains: the merged result, as a submitted step (at least one merge,
    so a single leaf is merged too). With Dask the merges run on the workers, each beside its inputs."""
    if fanin < 2:
        raise ValueError(f"a merge tree needs a fan-in of at least 2, got {fanin}")
    if not leaves:
        raise ValueError("a merge tree needs at least one leaf")
    level = list(leaves)
    while True:
        level = [runner.submit(step, *args, level[i:i + fanin]) for i in range(0, len(level), fanin)]
        if len(level) == 1:
            return level[0]


# -- the steps that run beside the merged counts ------------------------------------------------------------------
def slim_ingests(parts: list[PartitionIngest], class_column: str | None) -> list[PartitionIngest]:
    """Each partition's ingest as the flow's process needs it: its report, hash and constant columns, and of its
    value counts only the class column's (the class totals); pass 1's counts are merged on the workers."""
    keep = [class_column] if class_column is not None else []
    return [replace(p, counts={c: p.counts[c] for c in keep if c in p.counts}, class_counts={})
            for p in sorted(parts, key=lambda p: p.index)]


def start(method: OnPartitions, spec: ReleaseSpec, sanitizer: Sanitizer, roles: Roles, counts: Counts) -> Any:
    return method.start(spec, sanitizer, roles, counts)


def merge_pass(method: OnPartitions, parts: Sequence[Any]) -> Any:
    return method.merge(parts)


def next_pass(method: OnPartitions, state: Any) -> Any | None:
    return method.next_pass(state)


def absorb(method: OnPartitions, state: Any, merged: Any) -> Any:
    return method.absorb(state, merged)


def domains(method: OnPartitions, state: Any) -> dict[str, Domain]:
    return method.domains(state)


def search(method: OnPartitions, state: Any) -> LatticeSearch:
    return method.search(state)


def fit(method: OnPartitions, state: Any, sanitizer: Sanitizer) -> Fitted[Any]:
    return method.fit(state, sanitizer)


def finish_local(method: OnPartitions, fitted: Fitted[Any], results: list[Any]) -> Fitted[Any]:
    return method.finish_local(fitted, results)


def local_jobs(method: OnPartitions, fitted: Fitted[Any]) -> list[Any]:
    """The jobs the fit leaves to a task each (the fit hands them over: :meth:`OnPartitions.local_jobs`)."""
    return method.local_jobs(fitted)


def job_count(jobs: list[Any]) -> int:
    return len(jobs)


def nth_part(method: OnPartitions, jobs: list[Any], index: int, spec: ReleaseSpec | None = None,
             inputs: Inputs | None = None, roles: Roles | None = None, pseudonym_key: bytes | None = None,
             rare: RarePlan | None = None) -> Any:
    """Job ``index`` of :func:`local_jobs` finished (:meth:`OnPartitions.finish_rows`: a job that needs its part's
    rows reads the partitions holding them, as the method receives them)."""

    def load(i: int) -> pd.DataFrame:
        assert spec is not None and inputs is not None and roles is not None and rare is not None
        return load_partition(spec, inputs, i, roles, pseudonym_key, rare)

    return method.finish_rows(jobs[index], load)


def allotted(method: OnPartitions, fitted: Fitted[Any], per_partition: list[Any] | None, n: int) -> list[Any]:
    """What each partition's recode receives (:meth:`OnPartitions.partition_jobs`), from the allot pass's counts
    (``per_partition``; None: no pass)."""
    shares = method.allot(fitted, per_partition) if per_partition is not None else [None] * n
    return method.partition_jobs(fitted, shares)


@dataclass
class FitSummary:
    """What the flow's process keeps of a fit: what the manifest records (the model left out), the published
    columns' types, and whether the recoding needs a pass (:meth:`OnPartitions.allot_pass`: :func:`allot_job`)."""

    fitted: Fitted[None]
    types: dict[str, pa.DataType]
    allots: bool


def fit_summary(method: OnPartitions, fitted: Fitted[Any]) -> FitSummary:
    return FitSummary(fitted=replace(fitted, model=None), types=method.published_types(fitted),
                      allots=method.allot_pass(fitted) is not None)


def allot_job(method: OnPartitions, fitted: Fitted[Any]) -> Any | None:
    return method.allot_pass(fitted)
