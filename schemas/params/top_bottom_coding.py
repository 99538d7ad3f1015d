"""The spec's ``method`` section with ``name: top_bottom_coding``: :class:`TopBottomCodingParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.top_bottom_coding`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ppdp.schemas.base import StrictModel
from ppdp.schemas.methods import MethodParams, Safer, Unit


class CodingLimits(StrictModel):
    """One column's bounds as values (sdcMicro's ``value``), each overriding the quantile's bound on its side."""

    top: float | None = Field(None, description="values above this are top coded (None: the quantile's bound)")
    bottom: float | None = Field(None, description="values below this are bottom coded (None: the quantile's bound)")

    @model_validator(mode="after")
    def _ordered(self) -> CodingLimits:
        if self.top is not None and self.bottom is not None and self.bottom > self.top:
            raise ValueError(f"bottom ({self.bottom:g}) is above top ({self.top:g})")
        return self


class TopBottomCodingParams(MethodParams):
    """Parameters of :class:`TopBottomCoding` (the spec's ``method`` section with ``name: top_bottom_coding``)."""

    unit: ClassVar[Unit] = "record"
    tunable: ClassVar[dict[str, Safer]] = {"quantile": "smaller"}  # a lower quantile codes more values

    name: Literal["top_bottom_coding"] = Field("top_bottom_coding", description="selects top and bottom coding "
                                                                                "(sdcMicro's topBotCoding)")
    quantile: float | None = Field(None, ge=0.5, le=1, description="q: values above the column's q-quantile are top "
                                   "coded and (kind both or bottom) values below its (1 - q)-quantile bottom coded; "
                                   "tuned when null")
    kind: Literal["top", "bottom", "both"] = Field("both", description="which tail is coded")
    replacement: Literal["bound", "mean"] = Field(
        "bound", description="what a coded value becomes: the bound itself, or the mean of the values coded on that "
                             "side (as mu-Argus and sdcMicro's rankSwap group the tails)")
    limits: dict[str, CodingLimits] | None = Field(
        None, description="column -> bounds as values, overriding the quantile's on each side given (sides that kind "
                          "codes)")
