"""The spec's ``method`` section with ``name: dmpd``: :class:`DmpdParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.dmpd`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class DmpdParams(MethodParams):
    """Parameters of :class:`Dmpd` (the spec's ``method`` section with ``name: dmpd``)."""

    unit: ClassVar[Unit] = "equivalence_class"
    tunable: ClassVar[dict[str, Safer]] = {"k": "larger"}

    name: Literal["dmpd"] = Field("dmpd", description="selects DMPD feature-set partitioning (paper 001): disjoint "
                                                     "feature subsets published as separate k-anonymous tables")
    k: int | None = Field(None, ge=2, description="smallest equivalence class of every subset over its "
                                                  "quasi-identifiers; tuned when null")
    inducer: Literal["naive_bayes", "tree"] = Field(
        "tree", description="the inducer trained per subset in the search's fitness: naive_bayes, or tree (a "
                            "C4.5-like entropy tree)")
    population: int = Field(50, ge=2, le=1000, description="partitions per generation of the genetic search "
                                                          "(the paper: 50)")
    generations: int = Field(100, ge=1, le=10_000, description="generations of the genetic search (the paper: 100)")
    p_crossover: float = Field(0.7, ge=0.0, le=1.0, description="probability that two parents are recombined by "
                                                                "group-wise crossover")
    p_mutation: float = Field(0.05, ge=0.0, le=1.0, description="probability that a feature moves to another or a "
                                                                "new subset")
    inner_folds: int = Field(3, ge=2, le=20, description="folds of the inner cross-validation that scores a "
                                                         "partition")
