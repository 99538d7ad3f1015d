"""The spec's ``method`` section with ``name: condensation``: :class:`CondensationParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.condensation`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit

Variant = Literal["original", "modified", "class_wise"]


class CondensationParams(MethodParams):
    """Parameters of :class:`Condensation` (the spec's ``method`` section with ``name: condensation``)."""

    unit: ClassVar[Unit] = "generating_group"
    tunable: ClassVar[dict[str, Safer]] = {"k": "larger"}
    keeps_groups: ClassVar[bool] = True

    name: Literal["condensation"] = Field("condensation", description="selects condensation (paper 000): groups "
                                          "of k or more records replaced by synthetic records")
    variant: Variant = Field("class_wise", description="original | modified | class_wise (paper 000)")
    k: int | None = Field(None, ge=2, description="group size; tuned when null")
    class_weight: float = Field(
        2.0, gt=0, description="weight of the class label in the k-means distance (modified and original)"
    )
    distribution: Literal["uniform", "gaussian"] = Field(
        "uniform", description="distribution of the synthetic records along each eigenvector of their group's "
        "covariance (the same variance either way)")
    kmeans_max_iter: int = Field(20, ge=1, le=1000, description="k-means iterations (modified and class_wise)")
