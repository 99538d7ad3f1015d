"""Additive and multiplicative noise: each record is perturbed on its own (privacy unit ``record``).

Additive noise (Kim 1986; the "value distortion" of Agrawal & Srikant 2000): every numeric attribute x_j gets
x_j + e with e ~ N(0, (scale * sd_j)^2) (or Laplace with the same standard deviation), sd_j the column's
standard deviation in the input. Multiplicative noise (Kim & Winkler 2003): x_j * (1 + e) with
e ~ N(0, scale^2) (or Laplace), which keeps zero at zero and perturbs large values more.

What is perturbed: every numeric attribute (quasi-identifiers, sensitive and other columns; dates as days) and
every ordinal attribute (its rank, then rounded and clipped to the known categories). Nominal attributes and
the class label are kept: noise has no meaning on unordered categories (the rare-value rule of the release
still applies to them). Integer columns stay integers (rounded), and every perturbed value is clipped to the
column's input range, so no impossible value is published. Missing values stay missing.

The release has one row per input row (``row_source`` is the identity before shuffling); there is no k: its
claims compare records (distance to the closest original record, linkage, paper 004's value distortion).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Domain, FloatRange, MethodParams
from ppdp.schemas.params.noise import NoiseParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import as_numbers, snap_to
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.records import record_release
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.noise_partitions import NoiseOnPartitions, as_published
from ppdp.tasks.sanitize.partitions import OnPartitions

_DAY_NS = 86_400 * 10**9


class Noise(Sanitizer):
    """Additive or multiplicative noise on numeric and ordinal attributes; see the module docstring.

    Parameters
    ----------
    kind : {"additive", "multiplicative"}
    scale : float
        Additive: noise standard deviation as a multiple of each column's standard deviation.
        Multiplicative: standard deviation of the relative factor e in x * (1 + e).
    distribution : {"gaussian", "laplace"}
        Distribution of the noise (the Laplace noise has the same standard deviation).
    seed : int
        Seed of the noise and of the row order.
    """

    name: ClassVar[str] = "noise"
    description: ClassVar[str] = "additive or multiplicative noise on the numeric attributes"
    Params: ClassVar[type[MethodParams]] = NoiseParams
    on_partitions: ClassVar[OnPartitions | None] = NoiseOnPartitions()

    kind: Literal["additive", "multiplicative"]
    scale: float | None
    distribution: Literal["gaussian", "laplace"]

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"scale": FloatRange(low=0.01, high=2.0, log=True)}

    def _draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.distribution == "laplace":
            return rng.laplace(0.0, 1.0 / np.sqrt(2.0), n)  # unit standard deviation
        return rng.standard_normal(n)

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.scale is None:
            raise SpecError("noise: scale is required (set method.scale or a tuning strategy)")
        scale = float(self.scale)
        kinds = roles.kinds()
        orders = roles.orders()
        perturbed: dict[str, object] = {}
        perturbable = [c for c in roles.attributes if c in frame.columns and c not in roles.identifiers]
        for name in frame.columns:  # in the input's order: the draws from rng follow it
            series = frame[name]
            kind = kinds.get(name)
            if name in perturbable and kind is ColumnKind.numeric and (
                    pd.api.types.is_numeric_dtype(series) or pd.api.types.is_datetime64_any_dtype(series)):
                perturbed[name] = self._perturb_numeric(series, scale, rng)
            elif name in perturbable and kind is ColumnKind.ordinal:
                perturbed[name] = self._perturb_ordinal(series, orders.get(name), scale, rng)
        if not perturbed:  # nothing to perturb: the table would be published as it is
            raise InputError("noise: no numeric or ordinal attribute to perturb (identifiers and the class are never "
                             "perturbed)")
        return record_release(frame, perturbed, "perturbed")

    def _noisy(self, x: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
        e = self._draw(rng, len(x))
        if self.kind == "multiplicative":
            return x * (1.0 + scale * e)
        finite = x[np.isfinite(x)]
        sd = float(finite.std()) if finite.size else 0.0
        return x + scale * (sd if sd > 0 else 1.0) * e

    def _perturb_numeric(self, series: pd.Series, scale: float, rng: np.random.Generator) -> object:
        is_date = pd.api.types.is_datetime64_any_dtype(series)
        x = as_numbers(series) / (_DAY_NS if is_date else 1)  # dates in days; missing as NaN
        missing = np.isnan(x)
        finite = x[~missing]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        y = np.clip(self._noisy(x, scale, rng), lo, hi)
        integer = pd.api.types.is_integer_dtype(series) or (
            finite.size > 0 and bool(np.all(finite == np.round(finite))))
        return as_published(series, y, missing, integer)

    def _perturb_ordinal(self, series: pd.Series, order: list[str] | None, scale: float,
                         rng: np.random.Generator) -> np.ndarray:
        values = series.to_numpy(dtype=object)
        present = pd.notna(values)
        if order:
            cats = list(order)
        else:
            cats = sorted({v for v in values[present]}, key=lambda v: (str(type(v)), v))
        if not cats:
            return values
        lookup = {str(c): i for i, c in enumerate(cats)}
        ranks = np.array([lookup.get(str(v), np.nan) if p else np.nan for v, p in zip(values, present)], dtype=float)
        noisy = self._noisy(ranks, scale, rng)
        seen = np.unique(ranks[~np.isnan(ranks)]).astype(np.int64)  # publish only categories the input holds
        if seen.size == 0:
            return values
        picked = snap_to(np.nan_to_num(noisy, nan=float(seen[0])), seen)
        out = np.array(cats, dtype=object)[picked]
        out[~present | np.isnan(ranks)] = None
        return out
