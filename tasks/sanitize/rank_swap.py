"""Rank swapping, as sdcMicro defines it (privacy unit ``record``): each numeric or ordinal attribute on its own.

Source: Templ, Kowarik & Meindl, "Statistical Disclosure Control for Micro-Data Using the R Package sdcMicro",
Journal of Statistical Software 67(4), 2015, section 4 (rank swapping), and the sdcMicro reference manual's
``rankSwap`` (``R/rankSwap.R`` and its C++ routine ``src/RankSwapping.h`` of github.com/sdcTools/sdcMicro), after
Moore (1996), "Controlled data-swapping techniques for masking public use microdata", U.S. Census Bureau RR 96-04.
Per column: the values are ranked from the highest to the lowest; going down the ranks, each value not yet swapped
is swapped with one drawn uniformly among the values not yet swapped whose rank r' satisfies r < r' < r + m P / 100
(m the column's non-missing values; sdcMicro's ``(int)(j + NbNotSwapped * P)`` as the exclusive end). A value with
no such partner left stays where it is. Missing values are never swapped. Each column is swapped independently, so
the published values of each column are exactly the input's (the same multiset): only which record holds them
changes, each by a bounded rank distance.

Where this departs from sdcMicro:

* the rank range: the manual states |i - j| <= P N / 100 with P a percentage; its C++ routine, as read at the
  commit cited in the tests, multiplies by P without the division by 100 (with P = 15 any partner is allowed).
  Here P is a percentage, as the manual says, and the strict bound of the C++ routine is kept;
* only P: sdcMicro's alternatives R0 (correlation preservation, its default 0.95) and K0 (subset-mean preservation)
  and its top and bottom grouping (TopPercent, BottomPercent, 5 each: the tails replaced by their mean before
  swapping) are not offered; top and bottom coding is its own method (:mod:`ppdp.tasks.sanitize.top_bottom_coding`);
* equal values are ranked by their position in the input (sdcMicro's hash sort leaves their order to its lists);
* which columns: every numeric (numbers and dates) and ordinal attribute that is not an identifier nor the class
  (sdcMicro's ``variables``, chosen by role here); an ordinal column is ranked by its declared order (by its text
  without one), and its categories are swapped as they are.

A larger P allows partners further apart, so ``larger`` is safer. The release has one row per input row.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Domain, FloatRange, MethodParams
from ppdp.schemas.params.rank_swap import RankSwapParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import TableEncoder, as_numbers, refuse_huge
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.records import record_release
from ppdp.tasks.sanitize.base import Release, Sanitizer


def rank_swap_order(keys: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """Where each position takes its value from after rank swapping ``keys`` (NaN: missing, never swapped): a
    permutation ``source`` with the swapped column equal to ``column[source]``; ``p`` is P, a percentage."""
    keys = np.asarray(keys, dtype=float)
    source = np.arange(keys.size)
    present = np.flatnonzero(~np.isnan(keys))
    m = present.size
    ranked = present[np.argsort(-keys[present], kind="stable")]  # highest first; ties by position
    swapped = np.zeros(m, dtype=bool)
    for j in range(m):
        if swapped[j]:
            continue
        end = min(m, int(j + m * p / 100.0))
        candidates = j + 1 + np.flatnonzero(~swapped[j + 1:end])
        if candidates.size:
            partner = int(candidates[rng.integers(candidates.size)])
            a, b = ranked[j], ranked[partner]
            source[a], source[b] = b, a
            swapped[j] = swapped[partner] = True
    return source


class RankSwap(Sanitizer):
    """Rank swapping of the numeric and ordinal attributes, column by column; see the module docstring.

    Parameters
    ----------
    p : float
        P: two values may be swapped when their ranks differ by less than P percent of the column's values.
    seed : int
        Seed of the partners drawn and of the row order.
    """

    name: ClassVar[str] = "rank_swap"
    description: ClassVar[str] = "rank swapping: each numeric or ordinal value swapped with one of close rank"
    Params: ClassVar[type[MethodParams]] = RankSwapParams

    p: float | None

    @staticmethod
    def swapped_columns(frame: pd.DataFrame, roles: Roles) -> list[str]:
        """The columns the method swaps: numeric (numbers, dates; not booleans) and ordinal attributes, not
        identifiers, not the class, in the frame's order."""
        kinds = roles.kinds()
        attributes = set(roles.attributes) - set(roles.identifiers) - {roles.class_column}
        out = []
        for c in frame.columns:
            if c not in attributes or pd.api.types.is_bool_dtype(frame[c]):
                continue
            numeric = pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_datetime64_any_dtype(frame[c])
            if kinds.get(c) is ColumnKind.ordinal or (kinds.get(c) is ColumnKind.numeric and numeric):
                out.append(c)
        return out

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"p": FloatRange(low=1.0, high=50.0)}

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.p is None:
            raise SpecError("rank_swap: method.p is required (set method.p or a tuning strategy)")
        columns = self.swapped_columns(frame, roles)
        if not columns:
            raise InputError("rank_swap: the input has no numeric or ordinal attribute to swap (identifiers and the "
                             "class are never swapped)")
        kinds, orders = roles.kinds(), roles.orders()
        refuse_huge("rank_swap", frame, [c for c in columns if kinds.get(c) is ColumnKind.numeric])
        swapped: dict[str, object] = {}
        for name in columns:
            keys = _ordinal_ranks(frame[name], orders.get(name)) if kinds.get(name) is ColumnKind.ordinal \
                else as_numbers(frame[name])
            swapped[name] = frame[name].array.take(rank_swap_order(keys, float(self.p), rng))
        return record_release(frame, swapped, "perturbed")



def _ordinal_ranks(series: pd.Series, order: list[str] | None) -> np.ndarray:
    """An ordinal column's ranks as the core's encoder reads them (its declared order, by value without one; a value
    outside the declared order is an InputError); missing -> NaN."""
    name = str(series.name)
    encoder = TableEncoder(columns=[name], kinds={name: ColumnKind.ordinal}, orders={name: order} if order else None,
                           standardize=False).fit(series.to_frame(name))
    ranks = encoder.transform(series.to_frame(name))[:, 0]
    return np.where(series.isna().to_numpy(), np.nan, ranks)
