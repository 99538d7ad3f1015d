"""The spec's ``method`` section with ``name: dp_synthesizer``: :class:`DpSynthesizerParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.dp_synthesizer`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ppdp.schemas.methods import MethodParams, Safer, Unit

DomainValue = str | int | float | bool


def _text(value: Any) -> str:
    """A category as the text OpenDP's keys hold: integral numbers without a decimal point."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        f = float(value)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(value)


class DpSynthesizerParams(MethodParams):
    """Parameters of :class:`DpSynthesizer` (the spec's ``method`` section with ``name: dp_synthesizer``)."""

    unit: ClassVar[Unit] = "differential_privacy"
    tunable: ClassVar[dict[str, Safer]] = {"epsilon": "smaller"}

    name: Literal["dp_synthesizer"] = Field("dp_synthesizer", description="selects the differentially private "
                                            "synthesizer (OpenDP's MST)")
    epsilon: float | None = Field(None, gt=0, le=100, description="the privacy-loss budget epsilon of the release "
                                  "(smaller is safer); set it with tuning.strategy: fixed (epsilon is not tuned on "
                                  "the data)")
    delta: float = Field(1e-7, ge=0, lt=1e-3, description="the delta of (epsilon, delta)-DP, spent on discovering the "
                         "categories of columns without public ones (0: every column's categories must be public, "
                         "and the release is pure epsilon-DP)")
    mechanism: Literal["mst"] = Field("mst", description="the synthesizer: mst (OpenDP's MST over a contingency "
                                      "table)")
    bins: dict[str, list[float]] | None = Field(
        None, description="numeric column -> public bin edges: lower bound, inner edges, upper bound "
        "(strictly increasing; values outside are clipped); required for every numeric column (edges read from the "
        "data would spend budget)")
    categories: dict[str, list[DomainValue]] | None = Field(
        None, description="column -> its public list of categories (a code book); columns with a declared order use "
        "it; categories of other columns are discovered privately (needs delta > 0)")
    samples: int | None = Field(None, ge=1, le=100_000_000, description="rows to generate; null: the model's noisy "
                                "estimate of the input's row count (no extra budget)")

    @field_validator("bins")
    @classmethod
    def _edges(cls, value: dict[str, list[float]] | None) -> dict[str, list[float]] | None:
        for column, edges in (value or {}).items():
            if len(edges) < 2:
                raise ValueError(f"bins.{column}: give at least a lower and an upper bound")
            if not all(math.isfinite(e) for e in edges):
                raise ValueError(f"bins.{column}: edges must be finite numbers")
            if any(b <= a for a, b in zip(edges, edges[1:])):
                raise ValueError(f"bins.{column}: edges must be strictly increasing")
        return value

    @field_validator("categories")
    @classmethod
    def _categories(cls, value: dict[str, list[DomainValue]] | None) -> dict[str, list[DomainValue]] | None:
        for column, listed in (value or {}).items():
            if not listed:
                raise ValueError(f"categories.{column}: list at least one category")
            if len({_text(c) for c in listed}) != len(listed):
                raise ValueError(f"categories.{column}: a category is listed twice")
        return value
