"""The spec's ``method`` section with ``name: perturbation_tree``: :class:`PerturbationTreeParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.perturbation_tree`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit

EPSILON = 1e-6  # default threshold nudge, as a share of the attribute's range (the paper gives no value)


class PerturbationTreeParams(MethodParams):
    """Parameters of :class:`PerturbationTree` (the spec's ``method`` section with ``name: perturbation_tree``)."""

    unit: ClassVar[Unit] = "generating_group"
    tunable: ClassVar[dict[str, Safer]] = {"leaf_size": "larger", "k": "larger"}

    name: Literal["perturbation_tree"] = Field("perturbation_tree", description="selects the perturbation tree "
                                               "(paper 003)")
    leaf_size: int | None = Field(None, ge=2, description="a node with at most this many records is not split "
                                                          "(the paper's leaf size); tuned when null")
    k: int | None = Field(None, ge=2, description="smallest published group: smaller leaves are merged with a "
                                                  "neighbour; 2 when null and not tuned")
    split: Literal["midrange", "median"] = Field("midrange", description="where a node is cut")
    aggregation: Literal["mean", "microaggregation"] = Field(
        "mean", description="mean: each leaf publishes its mean; microaggregation: MDAV groups inside each leaf")
    group_size: int = Field(2, ge=2, description="MDAV's group size inside leaves (microaggregation; raised to k)")
    epsilon: float = Field(EPSILON, gt=0, lt=0.5, description="threshold nudge when records lie on it, as a "
                                                              "share of the attribute's range")
    max_depth: int | None = Field(None, ge=0, description="nodes at this depth are not split; larger ones are "
                                                          "divided by k-means; null: no bound")
