"""The spec's ``method`` section with ``name: noise``: :class:`NoiseParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.noise`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class NoiseParams(MethodParams):
    """Parameters of :class:`Noise` (the spec's ``method`` section with ``name: noise``)."""

    unit: ClassVar[Unit] = "record"
    tunable: ClassVar[dict[str, Safer]] = {"scale": "larger"}

    name: Literal["noise"] = Field("noise", description="selects additive or multiplicative noise")
    kind: Literal["additive", "multiplicative"] = Field(
        "additive", description="additive: x + e, e ~ scale * sd; multiplicative: x * (1 + e), e ~ scale")
    scale: float | None = Field(None, gt=0, le=10, description="noise scale (see kind); tuned when null")
    distribution: Literal["gaussian", "laplace"] = Field("gaussian", description="distribution of the noise e "
                                                                              "(the same standard deviation)")
