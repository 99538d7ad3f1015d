"""The spec's ``method`` section with ``name: sap``: :class:`SapParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.sap`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class SapParams(MethodParams):
    """Parameters of :class:`Sap` (the spec's ``method`` section with ``name: sap``)."""

    unit: ClassVar[Unit] = "equivalence_class"
    tunable: ClassVar[dict[str, Safer]] = {"rate": "larger"}

    name: Literal["sap"] = Field("sap", description="selects SAP, the Suppression Algorithm for Privacy")
    scenario: Literal["S1", "S2"] = Field("S2", description="S1: suppress quasi-identifier values; "
                                                            "S2: suppress the class (sensitive) value")
    rate: float | None = Field(None, ge=0.0, lt=1.0, description="p, the share suppressed (0 <= p < 1); tuned "
                                                                 "when null")
    variant: Literal["prose", "appendix"] = Field(
        "prose", description="S1 only: rule-matching values (the paper's prose) or random positions (its appendix)")
