"""The spec's ``method`` section with ``name: dp_synthesizer``: :class:`DpSynthesizerParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.dp_synthesizer`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, ValidationError, field_validator, model_validator

from ppdp.schemas.base import StrictModel
from ppdp.schemas.methods import MethodParams, Safer, Unit

DomainValue = str | int | float | bool


def category_text(value: Any) -> str:
    """A category as the text OpenDP's keys hold: integral numbers without a decimal point."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        f = float(value)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(value)


DEFAULT_BIN_SHARE = 0.1  # of epsilon, spent on finding bin edges under DP when some column asks for it
MAX_CANDIDATES = 10_000  # candidate edges of one column (the public grid inside its bounds)


class DpBins(StrictModel):
    """A numeric column's bins found under differential privacy: public bounds and a number of bins; the inner edges
    are DP quantiles of the column, chosen from a public grid of candidates inside the bounds."""

    lower: float = Field(..., description="public lower bound (values below it are clipped to it)")
    upper: float = Field(..., description="public upper bound (values above it are clipped to it)")
    count: int = Field(..., ge=1, le=1000, description="bins wanted: count - 1 inner edges are DP quantiles (at "
                       "1/count, 2/count, ...) of the column; equal quantiles are merged, so fewer bins may result")
    step: float | None = Field(None, gt=0, description="spacing of the public grid of candidate edges, lower + step, "
                               "lower + 2 step, ... below upper (null: a 1000th of the range; 1 suits integers)")

    @model_validator(mode="after")
    def _bounds(self) -> DpBins:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise ValueError("lower and upper must be finite numbers")
        if self.upper <= self.lower:
            raise ValueError("lower must be below upper")
        if self.step is not None and not math.isfinite(self.step):
            raise ValueError("step must be a finite number")
        if len(self.candidates()) < 1 and self.count > 1:
            raise ValueError("step leaves no candidate edge between lower and upper")
        return self

    def candidates(self) -> list[float]:
        """The public grid of candidate inner edges: lower + k * step strictly inside (lower, upper), at most
        :data:`MAX_CANDIDATES` of them (a finer step is refused)."""
        step = self.step if self.step is not None else (self.upper - self.lower) / 1000
        n = math.ceil((self.upper - self.lower) / step)
        if n - 1 > MAX_CANDIDATES:
            raise ValueError(f"step gives more than {MAX_CANDIDATES:,} candidate edges between lower and upper")
        digits = max(0, 3 - math.floor(math.log10(step)))  # rounded to a thousandth of the step: no float residue
        grid = {round(self.lower + k * step, digits) for k in range(1, n)}
        return sorted(g for g in grid if self.lower < g < self.upper)


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
    mechanism: Literal["mst", "aim", "auto"] = Field(
        "mst", description="the synthesizer: mst (OpenDP's MST: noisy one-way counts and a spanning tree of noisy "
        "pairs), aim (OpenDP's AIM: marginals of up to 3 columns chosen adaptively, round by round; slower), or auto "
        "(AIM when its workload is small: at most 200 candidate marginals of at most 200,000 cells in all, else MST; "
        "the choice and its reason are recorded in the manifest)")
    bins: dict[str, list[float] | DpBins] | None = Field(
        None, description="numeric column -> its bins, required for every numeric column: either public bin edges "
        "(lower bound, inner edges, upper bound; strictly increasing; values outside are clipped), or public bounds "
        "and a number of bins (DpBins: {lower, upper, count, step}) whose count - 1 inner edges are found under DP as "
        "quantiles, chosen from the public grid lower + step, lower + 2 step, ... (step: null, a 1000th of the range; "
        "1 suits integers), spending bin_share of epsilon; equal quantiles are merged")
    bin_share: float | None = Field(
        None, gt=0, lt=1, description="share of epsilon spent on finding the bin edges of the columns whose bins give "
        f"a count (DP quantiles); the synthesizer gets the rest (null: {DEFAULT_BIN_SHARE} when some bins are found "
        "under DP; set only then)")
    categories: dict[str, list[DomainValue]] | None = Field(
        None, description="column -> its public list of categories (a code book); columns with a declared order use "
        "it; categories of other columns are discovered privately (needs delta > 0)")
    samples: int | None = Field(None, ge=1, le=100_000_000, description="rows to generate; null: the model's noisy "
                                "estimate of the input's row count (no extra budget)")

    @field_validator("bins", mode="before")
    @classmethod
    def _dp_bins(cls, value: Any) -> Any:
        """A mapping (bounds and count) is read as :class:`DpBins`, with one message naming the setting."""
        if not isinstance(value, dict):
            return value
        out = {}
        for column, given in value.items():
            if isinstance(given, dict):
                try:
                    given = DpBins.model_validate(given)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    where = ".".join(str(p) for p in err.get("loc", ()))
                    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
                    raise ValueError(f"bins.{column}{'.' + where if where else ''}: {msg}") from None
            out[column] = given
        return out

    @field_validator("bins")
    @classmethod
    def _edges(cls, value: dict[str, list[float] | DpBins] | None) -> dict[str, list[float] | DpBins] | None:
        for column, edges in (value or {}).items():
            if isinstance(edges, DpBins):
                continue
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
            if len({category_text(c) for c in listed}) != len(listed):
                raise ValueError(f"categories.{column}: a category is listed twice")
        return value

    @model_validator(mode="after")
    def _share(self) -> DpSynthesizerParams:
        if self.bin_share is not None and not self.found_bins():
            raise ValueError("bin_share: no column's bins are found under DP (bins given as lower, upper and count), "
                             "so there is nothing to spend it on")
        return self

    def found_bins(self) -> dict[str, DpBins]:
        """The columns whose inner bin edges are found under DP."""
        return {c: b for c, b in (self.bins or {}).items() if isinstance(b, DpBins)}

    def share(self) -> float:
        """The share of epsilon spent on finding bin edges (0 when every column's edges are public)."""
        if not self.found_bins():
            return 0.0
        return self.bin_share if self.bin_share is not None else DEFAULT_BIN_SHARE
