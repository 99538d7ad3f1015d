"""The spec's ``method`` section with ``name: pram``: :class:`PramParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.pram`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class PramParams(MethodParams):
    """Parameters of :class:`Pram` (the spec's ``method`` section with ``name: pram``)."""

    unit: ClassVar[Unit] = "record"
    tunable: ClassVar[dict[str, Safer]] = {"pd": "smaller"}  # pd is the least keep probability: smaller is safer

    name: Literal["pram"] = Field("pram", description="selects PRAM, the post-randomization method (sdcMicro's pram)")
    pd: float | None = Field(None, ge=0, le=1, description="least probability of keeping a value: each category's "
                             "keep probability is drawn uniformly in [pd, 1] (sdcMicro's default 0.8); tuned when null")
    alpha: float = Field(0.5, ge=0, le=1, description="amount of perturbation of the invariant matrix: alpha R + "
                                                      "(1 - alpha) I (sdcMicro's default 0.5)")
    columns: Literal["sensitive", "categorical"] = Field(
        "sensitive", description="sensitive: the categorical sensitive attributes; categorical: every categorical "
                                 "attribute (quasi-identifiers, sensitive and other columns; never the class)")
