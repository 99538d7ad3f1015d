"""The methods on a partitioned input: a method runs there through the capability its sanitizer class declares
(:attr:`ppdp.tasks.sanitize.base.Sanitizer.on_partitions`, the interface
:class:`ppdp.tasks.sanitize.partitions.OnPartitions`), or is refused in one line; and the per-partition
functions the partitioned run makes its tasks of (each loads its partition as the method receives it and calls the
capability; the steps beside the merged counts are in :mod:`ppdp.tasks.distributed.tree`)."""

from __future__ import annotations

from typing import Any

from ppdp.schemas.reports import Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.distributed.inputs import Inputs, count_frame
from ppdp.tasks.distributed.output import load_partition
from ppdp.tasks.distributed.rare import RarePlan
from ppdp.tasks.sanitize.partitions import TEXT, Fitted, OnPartitions
from ppdp.tasks.sanitize.registry import REGISTRY

__all__ = ["TEXT", "WHY_NOT", "Fitted", "OnPartitions", "partitioned_method", "partitioned_methods"]

WHY_NOT: dict[str, str] = {
}
"""Why a method asked for on partitioned inputs is not offered (said in its refusal)."""


def partitioned_methods() -> dict[str, OnPartitions]:
    """The methods that run on a partitioned input, by name: those whose sanitizer declares the capability."""
    return {name: cls.on_partitions for name, cls in REGISTRY.items() if cls.on_partitions is not None}


def partitioned_method(name: str) -> OnPartitions:
    """Method ``name``'s capability on partitions; a one-line refusal for a method that has none."""
    cls = REGISTRY.get(name)
    if cls is not None and cls.on_partitions is not None:
        return cls.on_partitions
    why = f" ({WHY_NOT[name]})" if name in WHY_NOT else ""
    raise SpecError(f"spec method.name: {name} cannot run on a partitioned input (a folder of Parquet files)"
                    f"{why}: methods that can: {', '.join(sorted(partitioned_methods()))}")


# -- the tasks' functions -------------------------------------------------------------------------------------
def count_partition(method: OnPartitions, job: Any, spec: ReleaseSpec, inputs: Inputs, index: int, roles: Roles,
                    pseudonym_key: bytes | None, rare: RarePlan) -> Any:
    """One pass of ``method`` over partition ``index`` (loaded as the method receives it)."""
    return method.count(job, load_partition(spec, inputs, index, roles, pseudonym_key, rare))


def recounted(method: OnPartitions, rare: RarePlan) -> bool:
    """Whether ``method``'s start is given the counts of the rows the rare-value rule leaves
    (:attr:`OnPartitions.counts_after_rule`, when the rule leaves rows out), counted again by
    :func:`recount_partition`, instead of pass 1's."""
    return method.counts_after_rule and rare.report.rows_removed > 0


def recount_partition(spec: ReleaseSpec, inputs: Inputs, index: int, roles: Roles, pseudonym_key: bytes | None,
                      rare: RarePlan) -> Counts:
    """Pass 1's counts of partition ``index`` as the method receives it (the rare-value rule applied)."""
    frame = load_partition(spec, inputs, index, roles, pseudonym_key, rare)
    counts, by_class = count_frame(frame, roles)
    return Counts(columns=counts, by_class=by_class, rows=[len(frame)])


def allot_partition(method: OnPartitions, job: Any, spec: ReleaseSpec, inputs: Inputs, index: int,
                    roles: Roles, pseudonym_key: bytes | None, rare: RarePlan) -> Any:
    """The recoding's pass (:meth:`OnPartitions.allot_pass`) over partition ``index``."""
    return method.allot_count(job, load_partition(spec, inputs, index, roles, pseudonym_key, rare))
