"""The spec's ``method`` section with ``name: mondrian``: :class:`MondrianParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.mondrian`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from ppdp.schemas.hierarchy import HierarchySpec
from ppdp.schemas.methods import MethodParams, Safer, Unit


class MondrianParams(MethodParams):
    """Parameters of :class:`Mondrian` (the spec's ``method`` section with ``name: mondrian``)."""

    unit: ClassVar[Unit] = "equivalence_class"
    tunable: ClassVar[dict[str, Safer]] = {"k": "larger"}

    name: Literal["mondrian"] = Field("mondrian", description="selects Mondrian multidimensional recoding")
    k: int | None = Field(None, ge=2, description="smallest equivalence class; tuned when null")
    mode: Literal["strict", "relaxed"] = Field(
        "strict", description="strict: partitions do not overlap (records equal to the median stay together); "
        "relaxed: where no strict cut is allowable, records equal to the median may be divided between the sides "
        "(and small hierarchy children pooled), so more cuts are allowed")
    hierarchies: dict[str, HierarchySpec] = Field(
        default_factory=dict, description="per quasi-identifier: a generalization hierarchy (its column is cut "
        "into hierarchy nodes and published as their labels); numeric columns without one are cut at the median "
        "and published as intervals, other columns get the automatic hierarchy of their kind")

    @field_validator("hierarchies", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        return {} if value is None else value
