"""What a method can do on a partitioned input: an optional capability the sanitizer itself declares.

A sanitizer class that runs on a folder of partitions names an object implementing :class:`OnPartitions` in its
class attribute ``on_partitions`` (:attr:`ppdp.tasks.sanitize.base.Sanitizer.on_partitions`; None: the method is
refused on partitions in one line, :func:`ppdp.tasks.distributed.methods.partitioned_method`). The object lives
beside the method (``generalization_partitions``, ``mondrian_partitions``, ``mdav_partitions``,
``noise_partitions``) and is stateless: state travels in the
values its methods return.

The partitioned run (:mod:`ppdp.tasks.distributed.plan`) drives it in passes over the partitions, each pass one task per
partition returning counts (never rows), merged as a tree of tasks (:mod:`ppdp.tasks.distributed.tree`: consecutive
partitions' counts, then consecutive merges, so :meth:`OnPartitions.merge` must give the same result however
consecutive partitions are grouped); then a fit on the merged counts (the method's search: the tune step); then each
partition is recoded as its own task. Every method below except ``count``, ``allot_count`` and ``recode`` runs in a
task beside the merged counts (on a worker with Dask), so the flow's process receives small results only:

* :meth:`OnPartitions.start`: what the method needs from pass 1's merged counts (hierarchies, dictionaries);
* :meth:`OnPartitions.next_pass` / :meth:`~OnPartitions.count` / :meth:`~OnPartitions.merge` /
  :meth:`~OnPartitions.absorb`: the passes (None: done);
* :meth:`OnPartitions.fit`: the method with its (tuned) parameters on the merged counts;
* :meth:`OnPartitions.local_jobs` / :meth:`~OnPartitions.finish_part` (or :meth:`~OnPartitions.finish_rows`, given
  the partitions to read its rows from) / :meth:`~OnPartitions.finish_local`: work the fit leaves to one task each (a
  Mondrian part finished on one worker on its counts, an MDAV part on its rows);
* :meth:`OnPartitions.allot_pass` / :meth:`~OnPartitions.allot_count` / :meth:`~OnPartitions.allot`: a pass the
  recoding needs after the fit;
* :meth:`OnPartitions.partition_jobs`: what each partition's recode receives (default: the allot pass's share);
* :meth:`OnPartitions.recode`: one partition's published rows, and :meth:`~OnPartitions.published_types`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

import pandas as pd
import pyarrow as pa

from ppdp.schemas.methods import Domain, Treatment
from ppdp.schemas.reports import LatticeSearch, Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts
from ppdp.tasks.core.errors import InputError, InternalError, SpecError

Sanitizer = Any
"""The sanitizer a capability is given (a :class:`ppdp.tasks.sanitize.base.Sanitizer`: base names this module's
Protocol as the type of ``on_partitions``, so this module does not import base back)."""

TEXT = pa.large_string()
"""The type of a column a method publishes as labels (values, intervals, ``*``), whatever its input type: text, as
pandas writes a text column (the one-table release's type for the same column)."""

M = TypeVar("M")


@dataclass
class Fitted(Generic[M]):
    """A partitioned method after its fit: what each partition's recoding needs (small: sent with every recode
    task), the treatments of the columns it changes, and what the manifest's method record counts."""

    model: M
    treatments: dict[str, Treatment]
    groups: int | None = None
    suppressed_rows: int = 0
    suppressed_cells: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class OnPartitions(Protocol):
    """A method's capability to run on a partitioned input (see the module docstring). The payloads of the passes
    (``state``, ``job``, the counts, the fitted model) are each implementation's own types; the defaults below
    are what a method without that step does (an implementation may subclass this Protocol to inherit them)."""

    name: ClassVar[str]
    counts_after_rule: ClassVar[bool] = False
    """True: :meth:`start` is given the counts of the rows the rare-value rule leaves, counted again, when the rule
    leaves rows out (a rare class label's): the values its start reads (a range's span, a hierarchy's leaves) are
    then those of the rows one table's run sanitizes. False: pass 1's counts of every input row."""

    def rare_rule_skip(self, roles: Roles) -> tuple[str, ...]:
        """Columns the rare-value rule leaves to the method: a recoding of every row publishes each
        quasi-identifier value only in classes of at least k records (as the single-table ``every_row`` shape)."""
        return tuple(roles.rare_rule_skip)

    def start(self, spec: ReleaseSpec, sanitizer: Sanitizer, roles: Roles, counts: Counts) -> Any:
        """The method's state from pass 1's merged counts (``sanitizer``: the method's sanitizer, untuned)."""
        ...

    def next_pass(self, state: Any) -> Any | None:
        """What the next pass over the partitions needs (sent with each task), or None when the passes are done."""
        return None

    def count(self, job: Any, frame: pd.DataFrame) -> Any:
        """One partition's counts for the pass ``job``."""
        raise InternalError(f"{self.name}: no pass over the partitions to count")

    def merge(self, parts: Sequence[Any]) -> Any:
        """Counts of consecutive partitions (in partition order) as one."""
        raise InternalError(f"{self.name}: no pass over the partitions to merge")

    def absorb(self, state: Any, merged: Any) -> Any:
        """The state after a pass."""
        return state

    def domains(self, state: Any) -> dict[str, Domain]:
        """The tunable parameters' domains (as :meth:`ppdp.tasks.sanitize.base.Sanitizer.domains`)."""
        return {}

    def search(self, state: Any) -> LatticeSearch:
        """The lattice search on the merged counts (the ``lattice`` tuning strategy)."""
        raise SpecError(f"tuning.strategy lattice: method {self.name} has no lattice parameter")

    def fit(self, state: Any, sanitizer: Sanitizer) -> Fitted[Any]:
        """The method with its (tuned) parameters on the merged counts."""
        ...

    def local_jobs(self, fitted: Fitted[Any]) -> list[Any]:
        """Work the fit leaves to one task each (:meth:`finish_part`); none by default."""
        return []

    def finish_part(self, job: Any) -> Any:
        """One job of :meth:`local_jobs`, run as its own task."""
        raise InternalError(f"{self.name}: no part left to a task of its own")

    def finish_rows(self, job: Any, load: Callable[[int], pd.DataFrame]) -> Any:
        """One job of :meth:`local_jobs` given ``load(i)``: partition i as the method receives it (read when called;
        a job that needs its part's rows reads the partitions holding them and keeps only those rows). By default
        the job carries all it needs (:meth:`finish_part`) and nothing is read."""
        return self.finish_part(job)

    def finish_local(self, fitted: Fitted[Any], results: list[Any]) -> Fitted[Any]:
        """The fit with the local jobs' results."""
        return fitted

    def allot_pass(self, fitted: Fitted[Any]) -> Any | None:
        """A pass over the partitions that the recoding needs after the fit (sent with each task), or None."""
        return None

    def allot_count(self, job: Any, frame: pd.DataFrame) -> Any:
        """One partition's counts for the pass of :meth:`allot_pass`."""
        raise InternalError(f"{self.name}: no pass over the partitions to allot")

    def allot(self, fitted: Fitted[Any], per_partition: list[Any]) -> list[Any]:
        """Per-partition recoding instructions from the pass of :meth:`allot_pass`."""
        return [None] * len(per_partition)

    def partition_jobs(self, fitted: Fitted[Any], allotted: list[Any]) -> list[Any]:
        """What each partition's :meth:`recode` receives as ``allotted``, by partition: by default the allot pass's
        instructions (``allotted[i]``; None without that pass). A method whose recoding depends on the partition's
        number (noise: a generator seeded per partition) puts it here."""
        return allotted

    def recode(self, fitted: Fitted[Any], frame: pd.DataFrame, allotted: Any) -> pd.DataFrame:
        """One partition's published rows (same row order as ``frame``)."""
        ...

    def published_types(self, fitted: Fitted[Any]) -> dict[str, pa.DataType]:
        """The type of each column the method recodes, in every row file (the other columns keep their
        partitions' types, unified: :func:`ppdp.tasks.distributed.output.release_schema`)."""
        return {}


def partition_quasi_identifiers(method: str, verb: str, roles: Roles, counts: Counts,
                                hierarchies: Any) -> tuple[list[str], dict[str, Any]]:
    """The quasi-identifiers a method recodes (counted in pass 1) and its hierarchy specs, each of which must name
    one of the input's columns."""
    qis = [q for q in roles.quasi_identifiers if q in counts.columns and q not in roles.identifiers]
    if not qis:
        raise InputError(f"{method}: no quasi-identifier to {verb}")
    specs = dict(hierarchies or {})
    for name in specs:
        if name not in counts.columns:
            raise SpecError(f"{method}: a hierarchy is given for column '{name}', which is not a quasi-identifier of "
                            "the input")
    return qis, specs
