"""The spec's ``method`` section with ``name: rank_swap``: :class:`RankSwapParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.rank_swap`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class RankSwapParams(MethodParams):
    """Parameters of :class:`RankSwap` (the spec's ``method`` section with ``name: rank_swap``)."""

    unit: ClassVar[Unit] = "record"
    tunable: ClassVar[dict[str, Safer]] = {"p": "larger"}

    name: Literal["rank_swap"] = Field("rank_swap", description="selects rank swapping (sdcMicro's rankSwap)")
    p: float | None = Field(None, gt=0, le=100, description="P: two values may be swapped when their ranks differ by "
                                                           "less than P percent of the column's values (15 is usual); "
                                                           "tuned when null")
