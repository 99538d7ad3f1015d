"""The spec's ``method`` section with ``name: generalization``: :class:`GeneralizationParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.generalization`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from ppdp.schemas.hierarchy import HierarchySpec
from ppdp.schemas.methods import MethodParams, Safer, Unit

Measure = Literal["loss", "discernibility", "aecs", "precision", "entropy"]


class GeneralizationParams(MethodParams):
    """Parameters of :class:`Generalization` (the spec's ``method`` section with ``name: generalization``)."""

    unit: ClassVar[Unit] = "equivalence_class"
    tunable: ClassVar[dict[str, Safer]] = {"levels": "larger"}
    lattice_parameters: ClassVar[tuple[str, ...]] = ("levels",)

    name: Literal["generalization"] = Field("generalization", description="selects full-domain generalization "
                                            "with record suppression")
    k: int | None = Field(None, ge=2, description="k-anonymity: smallest equivalence class")
    l: int | None = Field(None, ge=2, description="distinct l-diversity of every sensitive column per class")  # noqa: E741
    t: float | None = Field(None, ge=0, le=1, description="t-closeness: largest EMD between a class's distribution "
                                                          "of a sensitive column and the table's")
    suppression_limit: float = Field(0.0, ge=0, lt=1, description="share of the records that may be suppressed "
                                                                  "(published with every quasi-identifier '*')")
    measure: Measure = Field("loss", description="utility measure the node is chosen by (ARX's definitions)")
    hierarchies: dict[str, HierarchySpec] | None = Field(
        None, description="column -> hierarchy; quasi-identifiers without one get automatic hierarchies")
    levels: dict[str, Annotated[int, Field(ge=0)]] | None = Field(
        None, description="the node: a level per quasi-identifier; null: searched (the lattice strategy)")
    suppression: Literal["records", "cells"] = Field(
        "records", description="records: a failing record is published with every quasi-identifier '*' (ARX's "
                               "record suppression); cells: at the chosen node, local suppression sets as few "
                               "cells as a greedy can to '*' until every class holds k records (k only)")
