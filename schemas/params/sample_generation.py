"""The spec's ``method`` section with ``name: sample_generation``: :class:`SampleGenerationParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.sample_generation`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class SampleGenerationParams(MethodParams):
    """Parameters of :class:`SampleGeneration` (the spec's ``method`` section with ``name: sample_generation``)."""

    unit: ClassVar[Unit] = "record"
    tunable: ClassVar[dict[str, Safer]] = {}

    name: Literal["sample_generation"] = Field("sample_generation", description="selects sample generation "
                                               "labelled by classifier consensus (paper 004)")
    samples: int | None = Field(None, ge=1, le=100_000_000,
                                description="rows to generate; null: as many as the training rows (the paper)")
    max_draws_factor: int = Field(100, ge=1, le=100_000,
                                  description="at most max_draws_factor * samples candidates are drawn before the "
                                              "method refuses (the classifiers agree too rarely)")
    tree_min_samples_leaf: int = Field(2, ge=1, description="fewest training rows in a leaf of the decision tree "
                                                            "(J48's -M, default 2)")
