"""The spec's ``method`` section with ``name: uma``: :class:`UmaParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.uma`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit

Partition = Literal["fixed", "optimal"]


class UmaParams(MethodParams):
    """Parameters of :class:`Uma` (the spec's ``method`` section with ``name: uma``)."""

    unit: ClassVar[Unit] = "record"
    tunable: ClassVar[dict[str, Safer]] = {"k": "larger"}

    name: Literal["uma"] = Field("uma", description="selects univariate microaggregation")
    k: int | None = Field(None, ge=2, description="smallest group size of every column; tuned when null")
    columns: Literal["all_numeric", "sensitive"] = Field(
        "all_numeric", description="all_numeric: every numeric attribute (quasi-identifier, sensitive, other); "
        "sensitive: the numeric sensitive attributes only (the paper's confidential attributes)")
    partition: Partition = Field(
        "fixed", description="fixed: groups of k consecutive sorted values, the last takes the remainder; "
        "optimal: the least-SSE grouping into runs of k to 2k-1 (Hansen & Mukherjee 2003)")
