"""The spec's ``method`` section with ``name: svd``: :class:`SvdParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.svd`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class SvdParams(MethodParams):
    """Parameters of :class:`Svd` (the spec's ``method`` section with ``name: svd``)."""

    unit: ClassVar[Unit] = "record"
    tunable: ClassVar[dict[str, Safer]] = {"rank": "smaller"}

    name: Literal["svd"] = Field("svd", description="selects SVD-based distortion (basic or sparsified)")
    rank: int | None = Field(None, ge=1, description="k: singular components kept (at most the number of numeric "
                                                     "attributes); tuned when null")
    sparsity: float = Field(0.0, ge=0.0, lt=1.0, description="e: share of the smallest entries of U_k and V_k "
                                                             "(pooled) set to zero (0: basic SVD; > 0: sparsified "
                                                             "SVD)")
