"""PRAM, the post-randomization method, as sdcMicro defines it (privacy unit ``record``; it protects attribute values).

Source: Templ, Kowarik & Meindl, "Statistical Disclosure Control for Micro-Data Using the R Package sdcMicro",
Journal of Statistical Software 67(4), 2015, section 4 (PRAM), and the sdcMicro reference manual's ``pram``
(``R/pram.R`` of github.com/sdcTools/sdcMicro, ``pramWORK``'s ``calcTransitionMatrix`` and ``do.pram``), after
Gouweleeuw, Kooiman, Willenborg & de Wolf (1998). Each value of a categorical column is replaced at random: a record
with category i publishes category j with probability Rs[i, j], the row i of a transition (Markov) matrix. sdcMicro
builds Rs from ``pd`` and ``alpha`` (defaults 0.8 and 0.5), for the L categories of the column:

1. a keep probability d_i drawn uniformly in [pd, 1] for each category (``runif(L, pd, 1)``);
2. P: d_i on the diagonal, the rest of row i spread evenly, (1 - d_i) / (L - 1), over the other categories;
3. with p the column's category frequencies, the backward matrix Q[k, j] = P[j, k] p_j / sum_l p_l P[l, k];
4. R = P Q, which is invariant: p R = p (the expected frequencies of the published column are the input's);
5. Rs = alpha R + (1 - alpha) I (still invariant), the matrix used.

:func:`invariant_matrix` is steps 2 to 5 for given keep probabilities, :func:`pram_matrix` draws them (step 1), and
:func:`pram_codes` draws each record's published category.

Where this departs from sdcMicro:

* which columns: ``columns = "sensitive"`` (the default) randomizes the categorical sensitive attributes, the values
  the method protects (:meth:`Sanitizer.protected_columns`, which the safety floor's attribute-disclosure row
  measures); ``"categorical"`` every categorical attribute that is not an identifier nor the class (sdcMicro's
  ``variables``, chosen by role here). Numeric columns and the class are kept;
* the categories are those the column holds (after the release's rare-value rule), not a factor's declared levels,
  in the roles' order for an ordinal column and by their text otherwise (the order the keep probabilities are drawn
  in); missing values stay missing, as in sdcMicro;
* no strata (sdcMicro's ``strata_variables``) and no user-given matrix (``pd`` as a matrix);
* the matrix used is not recorded in the release's manifest: a method's record holds its parameters only (the drawn
  keep probabilities and the input's frequencies are not parameters). With ``pd = 1`` Rs is the identity and with
  ``alpha = 0`` too; otherwise it is reproducible from the seed and the input only.

``pd`` is the least probability of keeping a value: a smaller ``pd`` randomizes more, so ``smaller`` is safer.
The release has one row per input row (``row_source`` is the identity before the shuffle).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import Domain, FloatRange, MethodParams, Protection
from ppdp.schemas.params.pram import PramParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.records import record_release
from ppdp.tasks.sanitize.base import Release, Sanitizer


def invariant_matrix(frequencies: np.ndarray, keep: np.ndarray, alpha: float) -> np.ndarray:
    """sdcMicro's invariant transition matrix Rs = alpha P Q + (1 - alpha) I (steps 2 to 5 of the module docstring)
    for category ``frequencies`` (counts or shares, all > 0) and keep probabilities ``keep`` (P's diagonal)."""
    p = np.asarray(frequencies, dtype=float)
    p = p / p.sum()
    d = np.asarray(keep, dtype=float)
    size = d.size
    if size == 1:
        return np.ones((1, 1))
    forward = np.repeat(((1.0 - d) / (size - 1))[:, None], size, axis=1)
    np.fill_diagonal(forward, d)
    reached = p @ forward  # s_k = sum_l p_l P[l, k]
    backward = (forward * p[:, None]).T / reached[:, None]  # Q[k, j] = P[j, k] p_j / s_k
    return alpha * (forward @ backward) + (1.0 - alpha) * np.eye(size)


def pram_matrix(frequencies: np.ndarray, pd_: float, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """The transition matrix sdcMicro's ``pram`` uses: keep probabilities drawn uniformly in [``pd_``, 1], one per
    category in order, then :func:`invariant_matrix`."""
    keep = rng.uniform(pd_, 1.0, len(frequencies))
    return invariant_matrix(frequencies, keep, alpha)


def pram_codes(codes: np.ndarray, matrix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each category code (0..L-1; -1 for missing, kept) replaced by a draw from its row of ``matrix``."""
    out = np.array(codes, dtype=np.int64, copy=True)
    cumulative = np.cumsum(matrix, axis=1)
    cumulative[:, -1] = 1.0
    for i in range(matrix.shape[0]):
        rows = np.flatnonzero(codes == i)
        if rows.size:
            out[rows] = np.searchsorted(cumulative[i], rng.random(rows.size), side="right")
    return out


class Pram(Sanitizer):
    """Post-randomization of categorical attributes with sdcMicro's invariant matrix; see the module docstring.

    Parameters
    ----------
    pd : float
        Least keep probability: each category's keep probability is drawn uniformly in [pd, 1].
    alpha : float
        Amount of perturbation: Rs = alpha R + (1 - alpha) I.
    columns : {"sensitive", "categorical"}
        The categorical sensitive attributes, or every categorical attribute (never an identifier nor the class).
    seed : int
        Seed of the keep probabilities, the draws and the row order.
    """

    name: ClassVar[str] = "pram"
    description: ClassVar[str] = "PRAM: categorical values replaced at random through an invariant transition matrix"
    Params: ClassVar[type[MethodParams]] = PramParams
    protects: ClassVar[Protection] = "attribute"  # identities stay visible: the randomized values are protected

    # its own constructor: the parameter ``pd`` would shadow pandas in class-level annotations
    def __init__(self, *, pd: float | None = None, alpha: float = 0.5,
                 columns: Literal["sensitive", "categorical"] = "sensitive", seed: int = 0) -> None:
        self.pd = pd
        self.alpha = alpha
        self.columns = columns
        self.seed = seed

    def randomized_columns(self, frame: pd.DataFrame, roles: Roles) -> list[str]:
        """The columns this sanitizer randomizes on ``frame`` (in frame order)."""
        wanted = {t.name for t in roles.columns if t.kind in (ColumnKind.nominal, ColumnKind.ordinal)
                  and t.role not in (Role.identifier, Role.class_)
                  and (self.columns == "categorical" or t.role is Role.sensitive)}
        return [c for c in frame.columns if c in wanted and c in roles.attributes]

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"pd": FloatRange(low=0.0, high=0.95)}

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.pd is None:
            raise SpecError("pram: method.pd is required (set method.pd or a tuning strategy)")
        chosen = self.randomized_columns(frame, roles)
        if not chosen:
            which = "categorical sensitive" if self.columns == "sensitive" else "categorical"
            raise InputError(f"pram: the input has no {which} attribute to randomize (identifiers and the class are "
                             "never randomized)")
        orders = roles.orders()
        return record_release(frame, {name: self._randomize(frame[name], orders.get(name), rng) for name in chosen},
                              "perturbed")

    def _randomize(self, series: pd.Series, order: list[str] | None, rng: np.random.Generator) -> object:
        name = str(series.name)
        kind = ColumnKind.ordinal if order else ColumnKind.nominal
        encoder = TableEncoder(columns=[name], kinds={name: kind}, orders={name: order} if order else None,
                               standardize=False).fit(series.to_frame(name))
        present = {str(v) for v in series.dropna().unique()}
        levels = [c for c in encoder.codes_[0].categories if str(c) in present]  # the core's order of categories
        if not levels:  # every value missing
            return series.to_numpy()
        lookup = {str(c): i for i, c in enumerate(levels)}
        missing = series.isna().to_numpy()
        codes = np.array([-1 if m else lookup[str(v)] for v, m in zip(series.to_numpy(dtype=object), missing)],
                         dtype=np.int64)
        matrix = pram_matrix(np.bincount(codes[~missing], minlength=len(levels)), float(self.pd or 0.0),
                             float(self.alpha), rng)
        drawn = pram_codes(codes, matrix, rng)
        out = series.to_numpy(dtype=object, copy=True)
        out[~missing] = np.asarray(levels, dtype=object)[drawn[~missing]]
        return out
