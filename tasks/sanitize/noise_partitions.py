"""Additive or multiplicative noise on a partitioned input: the capability :class:`NoiseOnPartitions` that
:attr:`ppdp.tasks.sanitize.noise.Noise.on_partitions` names (the interface:
:class:`ppdp.tasks.sanitize.partitions.OnPartitions`).

Noise perturbs each record on its own, as :class:`ppdp.tasks.sanitize.noise.Noise` does on one table, with the same
column treatments: every numeric attribute (dates as days) gets ``x + scale * sd * e`` (additive) or
``x * (1 + scale * e)`` (multiplicative), ``e`` Gaussian or Laplace of unit standard deviation, clipped to the
column's input range and rounded when the column holds integers; every ordinal attribute's rank is perturbed the
same way, then snapped to the ranks the input holds; nominal attributes, the class and identifiers are kept;
missing values stay missing. What one machine computes from the whole column comes from one pass over the
partitions, merged (never a partition's own): each column's standard deviation (Chan's parallel merge of counts,
means and squared deviations), range, whether it holds integers only, and for an ordinal column its categories and
their ranks' standard deviation.

The draws: partition ``i`` is perturbed with a generator seeded by the method's seed and ``i``
(:func:`partition_generator`), in the input's column order, so the release is the same for the same spec, input
and seed (it is not one machine's draws: those run over the concatenated rows with one generator). Every input
row is published (one published row per input row; the partitioned release holds nothing out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Treatment
from ppdp.schemas.params.noise import NoiseParams
from ppdp.schemas.reports import Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts
from ppdp.tasks.core.encoding import as_numbers, snap_to
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.partitions import Fitted, OnPartitions

DAY_NS = 86_400 * 10**9


def partition_generator(seed: int, index: int) -> np.random.Generator:
    """The generator of partition ``index``'s draws: seeded by the method's seed and the partition's number."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), 0x6E6F6973, int(index)]))


@dataclass
class Moments:
    """A numeric column's finite values over some partitions: how many, their mean and sum of squared deviations
    (merged by Chan et al.'s parallel formula), range, whether every one is a whole number; ``numeric``: every
    partition holding a value typed it as numbers or dates."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf
    integral: bool = True
    numeric: bool = True

    @classmethod
    def of(cls, series: pd.Series) -> Moments:
        typed = pd.api.types.is_numeric_dtype(series) or pd.api.types.is_datetime64_any_dtype(series)
        if not typed:
            return cls(numeric=bool(series.isna().all()))
        x = numbers(series)
        finite = x[np.isfinite(x)]
        if finite.size == 0:
            return cls()
        mean = float(finite.mean())
        return cls(n=int(finite.size), mean=mean, m2=float(np.sum((finite - mean) ** 2)), lo=float(finite.min()),
                   hi=float(finite.max()), integral=bool(np.all(finite == np.round(finite))))

    def merged(self, other: Moments) -> Moments:
        n = self.n + other.n
        numeric = self.numeric and other.numeric
        if n == 0:
            return Moments(numeric=numeric)
        delta = other.mean - self.mean
        return Moments(n=n, mean=self.mean + delta * other.n / n,
                       m2=self.m2 + other.m2 + delta * delta * self.n * other.n / n, lo=min(self.lo, other.lo),
                       hi=max(self.hi, other.hi), integral=self.integral and other.integral, numeric=numeric)

    @property
    def sd(self) -> float:
        return math.sqrt(self.m2 / self.n) if self.n else 0.0


def numbers(series: pd.Series) -> np.ndarray:
    """A numeric column as floats, dates as days (as the noise perturbs them); missing as NaN."""
    return as_numbers(series) / (DAY_NS if pd.api.types.is_datetime64_any_dtype(series) else 1)


NoiseJob = tuple[list[str], list[str]]
"""The pass's job: the numeric attributes and the ordinal attributes the noise may perturb."""


@dataclass
class NoiseState:
    numeric: list[str]
    ordinal: list[str]
    orders: dict[str, list[str]]
    counted: dict[str, Any] | None = None  # the pass merged: Moments by numeric column, value counts by ordinal one


@dataclass
class NoiseModel:
    """What perturbing one partition needs: the parameters, the seed, each numeric column's global moments, each
    ordinal column's categories, the ranks the input holds and the ranks' standard deviation."""

    kind: str
    scale: float
    distribution: str
    seed: int
    numeric: dict[str, Moments]
    ordinal: dict[str, tuple[list[Any], np.ndarray, float]] = field(default_factory=dict)


class NoiseOnPartitions(OnPartitions):
    """Noise on a partitioned input (see the module docstring)."""

    name: ClassVar[str] = "noise"

    def rare_rule_skip(self, roles: Roles) -> tuple[str, ...]:
        """None: every published value is counted by the rare-value rule (as the one-table ``rows`` shape)."""
        return ()

    def start(self, spec: ReleaseSpec, sanitizer: Sanitizer, roles: Roles, counts: Counts) -> NoiseState:
        kinds = roles.kinds()
        perturbable = [c for c in roles.attributes if c in counts.columns and c not in roles.identifiers]
        return NoiseState(numeric=[c for c in perturbable if kinds.get(c) is ColumnKind.numeric],
                          ordinal=[c for c in perturbable if kinds.get(c) is ColumnKind.ordinal],
                          orders=dict(roles.orders()))

    def next_pass(self, state: NoiseState) -> NoiseJob | None:
        return None if state.counted is not None else (state.numeric, state.ordinal)

    def count(self, job: NoiseJob, frame: pd.DataFrame) -> dict[str, Any]:
        numeric, ordinal = job
        out: dict[str, Any] = {c: Moments.of(frame[c]) for c in numeric if c in frame.columns}
        for c in ordinal:
            if c in frame.columns:
                values = frame[c].dropna()
                out[c] = values.astype(object).value_counts(sort=False) if len(values) else pd.Series(dtype=np.int64)
        return out

    def merge(self, parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for part in parts:
            for c, v in part.items():
                if c not in out:
                    out[c] = v
                elif isinstance(v, Moments):
                    out[c] = out[c].merged(v)
                else:
                    out[c] = pd.concat([out[c], v]).groupby(level=0, sort=False).sum()
        return out

    def absorb(self, state: NoiseState, merged: dict[str, Any]) -> NoiseState:
        state.counted = merged
        return state

    def fit(self, state: NoiseState, sanitizer: Sanitizer) -> Fitted[NoiseModel]:
        p = sanitizer.params()
        assert isinstance(p, NoiseParams)
        if p.scale is None:
            raise SpecError("noise: scale is required (set method.scale or a tuning strategy)")
        counted = state.counted or {}
        numeric = {c: m for c in state.numeric if isinstance(m := counted.get(c), Moments) and m.numeric}
        ordinal = {}
        for c in state.ordinal:
            counts = counted.get(c)
            if counts is None or not len(counts) and not state.orders.get(c):
                continue
            ordinal[c] = ordinal_scale(counts, state.orders.get(c))
        if not numeric and not ordinal:
            raise InputError("noise: no numeric or ordinal attribute to perturb (identifiers and the class are never "
                             "perturbed)")
        model = NoiseModel(kind=p.kind, scale=float(p.scale), distribution=p.distribution, seed=int(sanitizer.seed),
                           numeric=numeric, ordinal=ordinal)
        treatments: dict[str, Treatment] = {c: "perturbed" for c in [*numeric, *ordinal]}
        return Fitted(model=model, treatments=treatments)

    def partition_jobs(self, fitted: Fitted[NoiseModel], allotted: list[Any]) -> list[Any]:
        """Each partition's number (its generator's seed: :func:`partition_generator`)."""
        return list(range(len(allotted)))

    def recode(self, fitted: Fitted[NoiseModel], frame: pd.DataFrame, allotted: Any) -> pd.DataFrame:
        model = fitted.model
        rng = partition_generator(model.seed, int(allotted))
        out = frame.copy()
        for name in frame.columns:  # in the input's order: the draws follow it
            if name in model.numeric:
                out[name] = perturb_numeric(frame[name], model.numeric[name], model, rng)
            elif name in model.ordinal and model.ordinal[name][1].size:
                out[name] = perturb_ordinal(frame[name], model.ordinal[name], model, rng)
        return out


def ordinal_scale(counts: pd.Series, order: list[str] | None) -> tuple[list[Any], np.ndarray, float]:
    """An ordinal column's categories (its declared order, else its values sorted as the one-table noise sorts
    them), the ranks its values hold (sorted) and the standard deviation of its values' ranks, from its merged
    value counts."""
    cats = list(order) if order else sorted(counts.index, key=lambda v: (str(type(v)), v))
    lookup = {str(c): i for i, c in enumerate(cats)}
    ranks = np.array([lookup.get(str(v), np.nan) for v in counts.index], dtype=float)
    weights = counts.to_numpy(dtype=np.float64)
    held = ~np.isnan(ranks) & (weights > 0)
    r, w = ranks[held], weights[held]
    sd = 0.0
    if w.sum() > 0:
        mean = float(np.sum(r * w) / w.sum())
        sd = math.sqrt(float(np.sum(w * (r - mean) ** 2) / w.sum()))
    return cats, np.unique(r).astype(np.int64), sd


def draw(model: NoiseModel, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` draws of unit standard deviation (Gaussian, or Laplace with the same standard deviation)."""
    if model.distribution == "laplace":
        return rng.laplace(0.0, 1.0 / np.sqrt(2.0), n)
    return rng.standard_normal(n)


def noisy(x: np.ndarray, sd: float, model: NoiseModel, rng: np.random.Generator) -> np.ndarray:
    e = draw(model, rng, len(x))
    if model.kind == "multiplicative":
        return x * (1.0 + model.scale * e)
    return x + model.scale * (sd if sd > 0 else 1.0) * e


def perturb_numeric(series: pd.Series, moments: Moments, model: NoiseModel, rng: np.random.Generator) -> Any:
    """One partition's numeric column perturbed with the column's global moments (as the one-table noise does with
    the whole column's)."""
    x = numbers(series)
    missing = np.isnan(x)
    lo, hi = (moments.lo, moments.hi) if moments.n else (0.0, 0.0)
    y = np.clip(noisy(x, moments.sd, model, rng), lo, hi)
    integer = pd.api.types.is_integer_dtype(series) or (moments.n > 0 and moments.integral)
    return as_published(series, y, missing, integer)


def as_published(series: pd.Series, y: np.ndarray, missing: np.ndarray, integer: bool) -> Any:
    """A perturbed numeric column ``y`` (dates in days) published in ``series``' type: dates as dates, whole numbers
    rounded when the column holds integers (an integer column with missing values as pandas' nullable integers),
    missing values missing (one machine's noise and each partition's)."""
    if pd.api.types.is_datetime64_any_dtype(series):
        return pd.to_datetime(np.where(missing, np.nan, np.rint(y)), unit="D").to_numpy()
    if integer:
        y = np.rint(y)
    y[missing] = np.nan
    if pd.api.types.is_integer_dtype(series) and not missing.any():
        return y.astype(series.dtype.numpy_dtype if hasattr(series.dtype, "numpy_dtype") else np.int64)
    if pd.api.types.is_integer_dtype(series):
        return pd.array(np.where(missing, np.array(None, dtype=object), y).tolist(), dtype="Int64")
    return y


def perturb_ordinal(series: pd.Series, scale: tuple[list[Any], np.ndarray, float], model: NoiseModel,
                    rng: np.random.Generator) -> np.ndarray:
    """One partition's ordinal column: ranks perturbed with the global ranks' deviation, snapped to the ranks the
    input holds; missing (or a value outside the declared order) stays missing."""
    cats, seen, sd = scale
    values = series.to_numpy(dtype=object)
    present = pd.notna(values)
    lookup = {str(c): i for i, c in enumerate(cats)}
    ranks = np.array([lookup.get(str(v), np.nan) if p else np.nan for v, p in zip(values, present)], dtype=float)
    picked = snap_to(np.nan_to_num(noisy(ranks, sd, model, rng), nan=float(seen[0])), seen)
    out = np.array(cats, dtype=object)[picked]
    out[~present | np.isnan(ranks)] = None
    return out
