"""Top and bottom coding, as sdcMicro defines it (privacy unit ``record``): the tails of numeric attributes recoded.

Source: Templ, Kowarik & Meindl, "Statistical Disclosure Control for Micro-Data Using the R Package sdcMicro",
Journal of Statistical Software 67(4), 2015, section 4 (top and bottom coding among the non-perturbative methods),
and the sdcMicro reference manual's ``topBotCoding(obj, value, replacement, kind = "top")`` (``R/topBotCoding.R``
of github.com/sdcTools/sdcMicro, ``topBotCodingWORK``): with ``kind = "top"`` every value strictly above ``value``
becomes ``replacement`` (``x[x > value] <- replacement``), with ``kind = "bottom"`` every value strictly below it.

Here, per numeric attribute, the bounds are the column's ``quantile`` (top) and ``1 - quantile`` (bottom) quantiles
(numpy's linear interpolation, R's default type 7), or the values a spec gives per column in ``limits`` (which
override the quantile's bound on their side); ``kind`` chooses the tails coded (top, bottom or both). A coded value
becomes its bound (``replacement = "bound"``: sdcMicro's usual call, ``replacement`` equal to ``value``) or the mean
of the values coded on its side (``"mean"``: how mu-Argus and sdcMicro's ``rankSwap`` group the tails).

Where this departs from sdcMicro:

* sdcMicro takes one bound and one replacement value per call and column; here a quantile (the tunable parameter,
  one for every column) or per-column bounds, and the replacement is the bound or the tail's mean, computed from
  the data rather than given (a replacement value of a spec's choosing could publish an impossible value);
* an integer column (an integer dtype, or floats that are all whole) keeps whole values: a quantile bound is
  rounded outwards (the top bound up, the bottom bound down, so no value inside the bounds changes) and a tail's
  mean to the nearest integer; an integer dtype is kept;
* which columns: every numeric attribute that is not an identifier nor the class, held as numbers (not booleans,
  not dates); ordinal and nominal columns are kept (sdcMicro refuses non-numeric ones too). Missing values stay
  missing. (In sdcMicro 5.x, the method for plain vectors passes ``kind = "top"`` whatever it is given, so bottom
  coding works only on an sdcMicro object; both tails work here.)

The method is deterministic (``randomized = False``): the seed only sets the order of the released rows. A lower
quantile codes more values, so ``smaller`` is safer. The release has one row per input row.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.methods import Domain, FloatRange, MethodParams
from ppdp.schemas.params.top_bottom_coding import CodingLimits, TopBottomCodingParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import as_numbers, integers_within, refuse_huge
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.labels import key_path
from ppdp.tasks.core.records import record_release
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.svd import Svd


def code_tails(x: np.ndarray, top: float | None, bottom: float | None,
               replacement: Literal["bound", "mean"] = "bound") -> np.ndarray:
    """``x`` (floats, NaN missing) with the values above ``top`` and below ``bottom`` recoded (None: that tail is
    not coded) to the bound or the tail's mean (sdcMicro's ``x[x > value] <- replacement``, each side)."""
    out = np.array(x, dtype=float, copy=True)
    tails = []
    with np.errstate(invalid="ignore"):  # NaN compares False: missing values are never coded
        if top is not None:
            tails.append((top, x > top))
        if bottom is not None:
            tails.append((bottom, x < bottom))
    for bound, tail in tails:
        if tail.any():
            out[tail] = float(np.mean(x[tail])) if replacement == "mean" else bound
    return out

class TopBottomCoding(Sanitizer):
    """Top and bottom coding of the numeric attributes; see the module docstring.

    Parameters
    ----------
    quantile : float
        q in [0.5, 1]: the top bound is the column's q-quantile, the bottom bound its (1 - q)-quantile.
    kind : {"top", "bottom", "both"}
        The tails coded.
    replacement : {"bound", "mean"}
        What a coded value becomes: its bound, or the mean of the values coded on its side.
    limits : dict
        Column -> :class:`~ppdp.schemas.params.top_bottom_coding.CodingLimits` (bounds as values, overriding the
        quantile's on the sides given).
    seed : int
        Seed of the row order (the coding itself is deterministic).
    """

    name: ClassVar[str] = "top_bottom_coding"
    description: ClassVar[str] = "top and bottom coding: the tails of the numeric attributes recoded to their bounds"
    Params: ClassVar[type[MethodParams]] = TopBottomCodingParams
    randomized: ClassVar[bool] = False

    quantile: float | None
    kind: Literal["top", "bottom", "both"]
    replacement: Literal["bound", "mean"]
    limits: dict | None

    coded_columns = staticmethod(Svd.numeric_columns)
    """The columns the method codes: SVD's (numeric attributes, not identifiers, not the class, held as numbers: not
    booleans, not dates), in the frame's order."""

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"quantile": FloatRange(low=0.5, high=0.99)}

    def bounds(self, series: pd.Series) -> tuple[float | None, float | None]:
        """(top, bottom) of ``series`` (None: that tail is not coded)."""
        params = self.params()
        assert isinstance(params, TopBottomCodingParams)
        x = as_numbers(series)
        finite = x[~np.isnan(x)]
        if finite.size == 0 or params.quantile is None:
            return None, None
        q = float(params.quantile)
        integer = pd.api.types.is_integer_dtype(series) or bool(np.all(finite == np.round(finite)))
        top, bottom = float(np.quantile(finite, q)), float(np.quantile(finite, round(1.0 - q, 12)))
        if integer:  # outwards, past float noise (a quantile of 2 - 1e-15 is 2)
            top, bottom = float(np.ceil(top - 1e-9)), float(np.floor(bottom + 1e-9))
        given = (params.limits or {}).get(str(series.name), CodingLimits())
        top = given.top if given.top is not None else top
        bottom = given.bottom if given.bottom is not None else bottom
        if params.kind == "both" and bottom > top:
            raise SpecError(f"top_bottom_coding: method.limits.{key_path([str(series.name)])}: its bottom bound is "
                            "above its top bound (with the quantile's bound on the other side)")
        return (top if params.kind in ("top", "both") else None, bottom if params.kind in ("bottom", "both") else None)

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.quantile is None:
            raise SpecError("top_bottom_coding: method.quantile is required (set method.quantile or a tuning "
                            "strategy)")
        columns = self.coded_columns(frame, roles)
        unknown = sorted(set(self.limits or {}) - set(columns))
        if unknown:
            raise SpecError(f"top_bottom_coding: method.limits.{key_path([unknown[0]])} is not a numeric attribute "
                            "of the input (identifiers and the class are never coded)")
        if not columns:
            raise InputError("top_bottom_coding: the input has no numeric attribute to code (identifiers and the "
                             "class are never coded)")
        refuse_huge("top_bottom_coding", frame, columns)
        coded = {name: _publish(frame[name], code_tails(as_numbers(frame[name]), *self.bounds(frame[name]),
                                                        self.replacement)) for name in columns}
        return record_release(frame, coded, "generalized")


def _publish(series: pd.Series, values: np.ndarray) -> object:
    """Coded values in the column's type: whole numbers rounded in an integer column (its dtype kept)."""
    missing = np.isnan(values)
    if not pd.api.types.is_integer_dtype(series):
        x = as_numbers(series)
        finite = x[~np.isnan(x)]
        return np.rint(values) if finite.size and bool(np.all(finite == np.round(finite))) else values
    numpy_dtype = series.dtype if isinstance(series.dtype, np.dtype) else series.dtype.numpy_dtype  # type: ignore[attr-defined]
    info = np.iinfo(numpy_dtype)
    ints = integers_within(np.where(missing, 0.0, values), int(info.min), int(info.max), numpy_dtype)
    if isinstance(series.dtype, np.dtype):
        return ints
    out = pd.array(ints, dtype=series.dtype)  # type: ignore[call-overload]
    out[missing] = pd.NA
    return out
