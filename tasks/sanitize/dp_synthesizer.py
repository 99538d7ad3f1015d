"""Differentially private synthetic data: OpenDP's MST over a contingency table (privacy unit
``differential_privacy``, every row generated).

McKenna, Miklau and Sheldon, "Winning the NIST Contest: A scalable and general approach to differentially private
synthetic data" (J. Priv. Confidentiality 11(3), 2021; arXiv 2108.04978), MST as OpenDP 0.16 implements it
(``opendp.extras.mbi``: ``make_contingency_table`` with ``MST``, Private-PGM's ``mbi`` 1.1.0 fitting the graphical
model). Every column is made categorical (numbers cut at public bin edges); then, with the budget epsilon (and
delta):

1. **one-way marginals** (half of epsilon, OpenDP's default split): a noisy count of every category of every
   column (Laplace noise). A column whose categories are not public has them *discovered* here: only the categories
   whose noisy count passes a threshold OpenDP sets from delta are kept (the rest become missing), which is what
   spends delta; with every column's categories public, nothing is discovered and the release is pure epsilon-DP
   (delta spent: 0);
2. **selection** (a tenth of the rest): MST chooses, one noisy-max at a time, the pairs of columns the one-way
   model represents worst, until every column is connected (a maximum spanning tree);
3. **measurement** (the rest): a noisy count of every cell of each chosen pair (Laplace noise);
4. **generation** (no budget: post-processing): Private-PGM fits a graphical model to all the noisy counts; rows
   are drawn from it (ppdp's port of ``mbi``'s ``synthetic_data``, "round" method, drawing from this method's
   seeded generator instead of NumPy's global one) and each bin is turned back into a number drawn uniformly inside
   the bin.

Neighbouring tables differ by one row added or removed (``dp.unit_of(contributions=1)``): the guarantee covers a
person who is one row of the method's input. The (epsilon, delta) recorded is OpenDP's own privacy map of the
measurement for one row (:attr:`ppdp.schemas.reports.DifferentialPrivacy.epsilon_spent`), never more than the
parameters ask for.

What is *not* data-dependent, and why that matters:

* **Bin edges are public** (``bins``: the lower bound, the inner edges and the upper bound of each numeric column,
  given in the spec). Edges read from the data (quantiles, min and max) would disclose the extreme records without
  spending budget; ppdp does not estimate them, so it spends nothing on them. Values outside the bounds are clipped
  to them (a row-by-row transformation: no privacy cost). A numeric column without public edges is refused.
* **Categories** are public when listed in ``categories`` or declared as the column's ``order`` in the spec; the
  others are discovered privately in step 1 (so they need ``delta > 0``). A category listed but absent from the
  data is a cell like any other (noisy count about 0).
* **The row count** is not published exactly: by default (``samples`` null) the release has as many rows as the
  model's total, a noisy estimate of the input's size from the step-1 counts (post-processing: no extra budget).
  ``samples: n`` publishes exactly n rows: n is then the publisher's choice, not a count of the data.

What the guarantee does not cover: the rows the method receives are chosen by steps that read the data outside
the mechanism (the tagger's automatic roles, the rare-value rule, the hold-out split), as for every method; declare
the columns' roles and kinds, and list public categories, to leave the least to them. Whether the release is
published at all depends on the utility gate, measured on real rows (one bit about the data). Everything else the
release publishes beside the table is public or DP: the manifest, report, audit entries and Prefect artifacts of a
``differential_privacy`` release withhold every exact figure of the input (its row count, rare-value counts, the
utility check's held-out accuracy and class sizes, the attacker's view measured against the input: exact copies,
the random-query attacker; :mod:`ppdp.tasks.private_record`), which only the publisher's private record keeps, and
name the input by a keyed digest (:mod:`ppdp.tasks.digests`). A release's spent epsilon is basic-composed with the
dataset's earlier DP releases by the series ledger (``privacy.budget``).

Reproducibility: the DP noise comes from OpenDP's cryptographically secure generator, which takes no seed, on
purpose: noise drawn from the seed the manifest publishes could be recomputed and subtracted by anyone. The seed
drives everything after the noisy measurements (which rows are drawn from the model, the values inside each bin,
the row order). So the same seed gives the same release *from the same measurements*, and ``ppdp validate
--release`` re-checks the (epsilon, delta) claim from the manifest (the mechanism rebuilt from the recorded
parameters and mapped again), not by re-running the release.

``epsilon`` is not tuned on the data: each evaluation would spend its own epsilon on the same rows, and the choice
would depend on them, so the published epsilon would understate the loss. Set ``method.epsilon`` with
``tuning.strategy: fixed``.

Known library issue worked around: OpenDP 0.16's MST asks for its selection budget as a sum of per-step budgets
that floating-point rounding can put a hair above the budget it was given (opendp/opendp#2789, "insufficient budget
for query"); :class:`_MST` gives the selection a budget smaller by one part in 10^9 (it spends slightly less, never
more). AIM (``opendp.extras.mbi.AIM``) is not offered: in OpenDP 0.16 it fails under (epsilon, delta)-DP accounting
and, under zero-concentrated DP, took about 3 minutes on the 3,000-row census demo (MST: seconds).
"""

from __future__ import annotations

import functools
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Domain, FloatRange, MethodParams, Protection, Treatment
from ppdp.schemas.params.dp_synthesizer import DpSynthesizerParams, _text
from ppdp.schemas.reports import DifferentialPrivacy, Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.sanitize.base import DpRelease, Release, Sanitizer

if TYPE_CHECKING:  # OpenDP is imported when the mechanism is built
    from opendp.extras.polars.contingency_table import ContingencyTableQuery

LIBRARY = "opendp"
SELECTION_SLACK = 1e-9  # the selection's share of the budget is made smaller by this fraction (opendp#2789)


@dataclass(frozen=True)
class _Column:
    """How one published column goes through the mechanism."""

    name: str
    binned: bool
    edges: tuple[float, ...] = ()  # binned: lower bound, inner edges, upper bound
    keys: tuple[str, ...] | None = None  # categorical: public categories as text (None: discovered privately)


@dataclass(frozen=True)
class Plan:
    """The public configuration of the mechanism: everything it is built from, nothing read from the data."""

    columns: tuple[_Column, ...]
    epsilon: float
    delta: float  # asked for; 0 is spent when every column's categories are public
    mechanism: str

    @property
    def pure(self) -> bool:
        return all(c.binned or c.keys is not None for c in self.columns)

    def keys(self) -> dict[str, list]:
        """OpenDP's ``keys``: bin numbers of binned columns, public categories of the others."""
        out: dict[str, list] = {}
        for c in self.columns:
            if c.binned:
                out[c.name] = list(range(len(c.edges) - 1))
            elif c.keys is not None:
                out[c.name] = list(c.keys)
        return out


def plan_columns(columns: list[str], roles: Roles, params: DpSynthesizerParams,
                 numeric: dict[str, bool]) -> Plan:
    """The mechanism's configuration for ``columns`` (``numeric``: column -> published as a number): public bin edges
    for numbers, public categories (``categories``, else a declared order) or private discovery for the rest.
    Raises :class:`SpecError` naming the column and key (never a value)."""
    orders = roles.orders()
    bins, listed = params.bins or {}, params.categories or {}
    unknown = [c for c in [*bins, *listed] if c not in columns]
    if unknown:
        key = "bins" if unknown[0] in bins else "categories"
        raise SpecError(f"dp_synthesizer: method.{key} names column '{unknown[0]}', which is not published")
    out = []
    for name in columns:
        if numeric[name]:
            if name in listed:
                raise SpecError(f"dp_synthesizer: method.categories.{name}: '{name}' is numeric; give its public bin "
                                f"edges in method.bins.{name}")
            if name not in bins:
                raise SpecError(f"dp_synthesizer: numeric column '{name}' needs public bin edges (method.bins.{name}: "
                                "lower bound, inner edges, upper bound); edges read from the data would spend "
                                "privacy budget")
            out.append(_Column(name, True, edges=tuple(float(e) for e in bins[name])))
            continue
        if name in bins:
            raise SpecError(f"dp_synthesizer: method.bins.{name}: '{name}' is not numeric; list its categories in "
                            f"method.categories.{name} instead")
        declared = listed.get(name) or orders.get(name)
        keys = tuple(_text(v) for v in declared) if declared else None
        if keys is None and params.delta == 0:
            raise SpecError(f"dp_synthesizer: column '{name}' has no public categories: list them in "
                            f"method.categories.{name} (or declare its order), or set method.delta > 0 to discover "
                            "them privately")
        out.append(_Column(name, False, keys=keys))
    assert params.epsilon is not None  # a mechanism is planned only with its budget (_sanitize checks it first)
    return Plan(columns=tuple(out), epsilon=float(params.epsilon), delta=float(params.delta),
                mechanism=params.mechanism)


# -- the mechanism (OpenDP) ---------------------------------------------------------------------------------------
def _mst_class():
    """OpenDP's MST with the selection budget fix for opendp/opendp#2789 (see the module docstring)."""
    import itertools

    from opendp._internal import _new_pure_function
    from opendp.combinators import then_adaptive_composition
    from opendp.extras.mbi import MST
    from opendp.extras.mbi._mst import _make_mst_select
    from opendp.extras.mbi._utilities import get_associated_metric, make_noise_marginals, make_stable_marginals, prior
    from opendp.mod import binary_search_chain

    @dataclass(kw_only=True, frozen=True)
    class _MST(MST):
        """``opendp.extras.mbi.MST.make_marginals`` as OpenDP 0.16 writes it, except that the selection is given
        ``d_select * (1 - SELECTION_SLACK)``: its per-step budgets then add up to no more than ``d_select``."""

        def make_marginals(self, input_domain, input_metric, output_measure, d_in, d_out, *, marginals, model):
            d_measure = d_out * self.measure_split
            d_select = prior(prior(d_out - d_measure))
            lp_metric = get_associated_metric(output_measure)
            edges: list[tuple[str, str]] = list(itertools.combinations(input_domain.columns, 2))
            # OpenDP types the cliques as list[tuple[str, ...]] (invariant list): pairs are cliques
            t_marginals = make_stable_marginals(input_domain, input_metric, lp_metric, edges)  # type: ignore[arg-type]
            d_marginals = t_marginals.map(d_in)

            def function(qbl):
                m_select = _make_mst_select(*t_marginals.output_space, output_measure, d_in=d_marginals,
                                            d_out=d_select * (1 - SELECTION_SLACK), edges=edges, model=model,
                                            num_selections=self.num_selections)
                selected = qbl(m_select)
                m_measure = binary_search_chain(
                    lambda s: make_noise_marginals(*t_marginals.output_space, output_measure, selected, scale=s),
                    d_in=d_marginals, d_out=d_measure, T=float)
                measured = marginals.add(*qbl(m_measure))
                return measured, self.estimator(model.domain, measured.flatten(), potentials=model.potentials)

            return t_marginals >> then_adaptive_composition(
                output_measure=output_measure, d_in=t_marginals.map(d_in), d_mids=[d_select, d_measure]
            ) >> _new_pure_function(function)

    return _MST


_LOCK = threading.Lock()


def _absl_to_process_stderr() -> None:
    """Point absl's logging handler (absl is imported by JAX, which Private-PGM uses) at the process's own stderr.

    absl builds its handler on import, keeping whatever ``sys.stderr`` is at that moment (a test runner's capture, a
    CLI runner's buffer); when logging is reconfigured later (Prefect's ``dictConfig`` at its first flow run shuts
    every handler down), absl closes that stream if it is no longer ``sys.stderr``, closing someone else's file.
    ``sys.__stderr__`` is never closed by it. The handler is not attached to any logger: nothing is logged through
    it either way."""
    try:
        from absl import logging as absl_logging
    except ImportError:  # pragma: no cover - absl comes with JAX
        return
    handler = absl_logging.get_absl_handler().python_handler
    if sys.__stderr__ is not None and handler.stream is not sys.__stderr__:
        handler.setStream(sys.__stderr__)


@dataclass(frozen=True)
class Built:
    """An OpenDP measurement ready to release a contingency table, and what it spends for one row."""

    measurement: Any
    epsilon_spent: float
    delta_spent: float
    threshold: int | None  # categories discovered privately need a noisy count above this
    library: str


def _empty_frame(plan: Plan):
    """A polars LazyFrame with the mechanism's input schema and no row: the measurement is built from it alone."""
    import polars as pl

    schema = {c.name: (pl.Int64 if c.binned else pl.String) for c in plan.columns}
    return pl.DataFrame(schema=schema).lazy()


@functools.lru_cache(maxsize=8)
def build(plan: Plan) -> Built:
    """Build the measurement for ``plan`` from public information only (the input schema, the public categories and
    bins, epsilon, delta): a measurement can be reused for any table of that schema, so it is cached (OpenDP's
    construction searches the noise scales numerically: seconds)."""
    from importlib.metadata import version

    import opendp.prelude as dp

    with _LOCK:
        dp.enable_features("contrib")  # OpenDP's mbi synthesizers are contributed code, not yet vetted by its review
        import mbi  # noqa: F401  (imports JAX, and with it absl)

        _absl_to_process_stderr()
    loss = dp.loss_of(epsilon=plan.epsilon) if plan.pure else dp.loss_of(epsilon=plan.epsilon, delta=plan.delta)
    query_loss = {"epsilon": plan.epsilon} if plan.pure else {"epsilon": plan.epsilon, "delta": plan.delta}
    context = dp.Context.compositor(data=_empty_frame(plan), privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=loss)
    # OpenDP types query() as a Query or a LazyFrameQuery; contingency_table() makes a ContingencyTableQuery
    query = cast("ContingencyTableQuery",
                 context.query(**query_loss).contingency_table(keys=plan.keys(), algorithm=_mst_class()()))
    measurement = query.resolve()
    spent = measurement.map(context.d_in)
    eps, delta = (float(spent), 0.0) if plan.pure else (float(spent[0]), float(spent[1]))
    return Built(measurement, eps, delta, query.oneway_threshold, f"{LIBRARY} {version(LIBRARY)}")


def to_mechanism_input(frame: pd.DataFrame, plan: Plan):
    """The rows as the mechanism reads them: bin numbers (values clipped to the public bounds) and categories as
    text; missing values stay missing (a category of their own)."""
    import polars as pl

    data = {}
    for c in plan.columns:
        series = frame[c.name]
        if c.binned:
            values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            edges = np.asarray(c.edges)
            clipped = np.clip(values, edges[0], edges[-1])
            codes = np.clip(np.searchsorted(edges, clipped, side="right") - 1, 0, len(edges) - 2)
            data[c.name] = pl.Series(c.name, np.where(np.isnan(values), np.array(None, dtype=object), codes).tolist(),
                                     dtype=pl.Int64)
        else:
            text = [None if pd.isna(v) else _text(v) for v in series.astype(object).to_numpy()]
            data[c.name] = pl.Series(c.name, text, dtype=pl.String)
    return pl.DataFrame(data).lazy()


# -- generation (seeded) ------------------------------------------------------------------------------------------
def sample_model(model, total: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``total`` rows drawn from a fitted Private-PGM model, as index codes per attribute.

    A port of ``mbi.MarkovRandomField.synthetic_data`` (mbi 1.1.0, method "round") that draws from ``rng`` rather
    than NumPy's global generator: the first attribute of the junction tree's elimination order is drawn by
    randomized rounding of its marginal, each next one conditionally on the attributes it depends on, by
    stratified draws within each group of rows that share them.
    """
    from mbi import junction_tree, marginal_oracles

    domain = model.domain
    cliques = [set(cl) for cl in model.cliques]
    jtree, elimination_order = junction_tree.make_junction_tree(domain, cliques)
    marginals = marginal_oracles.message_passing_stable(model.potentials.expand(list(jtree.nodes)))

    def rounded(counts: np.ndarray) -> np.ndarray:
        counts = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
        options = np.arange(counts.size)
        if counts.sum() <= 0:
            counts = np.ones_like(counts)
        counts = counts * (total / counts.sum())
        frac, whole = np.modf(counts)
        whole = whole.astype(np.int64)
        extra = total - int(whole.sum())
        if extra > 0:
            whole[rng.choice(options, extra, replace=False, p=frac / frac.sum())] += 1
        values = np.repeat(options, whole)
        rng.shuffle(values)
        return values

    data: dict[str, np.ndarray] = {}
    order = list(elimination_order[::-1])
    first = order[0]
    data[first] = rounded(np.asarray(marginals.project((first,)).datavector(flatten=False)))
    used = {first}
    for col in order[1:]:
        relevant = used.intersection(set().union(*[cl for cl in cliques if col in cl]))
        proj = tuple(relevant)
        used.add(col)
        if not proj:
            data[col] = rounded(np.asarray(marginals.project((col,)).datavector(flatten=False)))
            continue
        current = np.stack([data[c] for c in proj], -1)
        marg = np.asarray(marginals.project(proj + (col,)).datavector(flatten=False), dtype=np.float64)
        parents = marg.sum(axis=-1, keepdims=True)
        cdfs = np.divide(marg, parents, out=np.zeros_like(marg), where=parents != 0).cumsum(axis=-1)
        uniques, inverse, counts = np.unique(current, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        perm = np.argsort(inverse, kind="stable")
        starts = np.zeros(len(counts), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        ranks = np.empty(total, dtype=np.int64)
        ranks[perm] = np.arange(total) - starts[inverse[perm]]
        u = (ranks + rng.random(total)) / counts[inverse]
        unique_cdfs = cdfs[tuple(uniques.T)]
        choices = np.empty(total, dtype=np.int64)
        u_sorted = u[perm]
        start = 0
        for i, count in enumerate(counts):
            end = start + count
            picked = np.searchsorted(unique_cdfs[i], u_sorted[start:end], side="right")
            choices[perm[start:end]] = np.minimum(picked, domain[col] - 1)
            start = end
        data[col] = choices
    return data


def _fill_missing_class(codes: np.ndarray, model, column: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """Class codes with the missing ones (the null category, last of ``size``) redrawn from the model's marginal of
    the class over its categories (post-processing of the model: no privacy cost); unchanged when that marginal has
    no category (no class discovered)."""
    missing = codes == size - 1
    if not missing.any():
        return codes
    weights = np.clip(np.asarray(model.project((column,)).datavector(), dtype=np.float64)[:size - 1], 0.0, None)
    if weights.size == 0 or weights.sum() <= 0:
        return codes
    out = codes.copy()
    out[missing] = rng.choice(weights.size, int(missing.sum()), p=weights / weights.sum())
    return out


def _numbers(codes: np.ndarray, edges: tuple[float, ...], integer: bool, rng: np.random.Generator) -> np.ndarray:
    """Bin numbers -> values drawn uniformly inside each bin (NaN for the missing bin, numbered past the last)."""
    e = np.asarray(edges)
    bins = len(e) - 1
    out = np.full(codes.size, np.nan)
    inside = codes < bins
    lo, hi = e[codes[inside]], e[codes[inside] + 1]
    if integer:  # the integers of [lo, hi) (the last bin: [lo, hi]); a bin holding none gets its rounded middle
        first = np.ceil(lo)
        last = np.where(codes[inside] == bins - 1, np.floor(hi), np.ceil(hi) - 1)
        empty = last < first
        span = np.where(empty, 0, last - first)
        drawn = first + np.floor(rng.random(lo.size) * (span + 1))
        out[inside] = np.where(empty, np.clip(np.round((lo + hi) / 2), e[0], e[-1]), np.minimum(drawn, last))
    else:
        out[inside] = lo + rng.random(lo.size) * (hi - lo)
    return out


def _as_column(series: pd.Series, values: np.ndarray) -> object:
    """Generated numbers in the input column's dtype (integers nullable where a cell is missing)."""
    present = ~np.isnan(values)
    if pd.api.types.is_integer_dtype(series):
        ints = np.where(present, values, 0).astype(np.int64)
        if isinstance(series.dtype, np.dtype) and present.all():
            return ints.astype(series.dtype)
        out = pd.array(ints, dtype="Int64" if isinstance(series.dtype, np.dtype) else series.dtype)  # type: ignore[call-overload]  # pandas-stubs: pd.array takes no ExtensionDtype instance (pandas does)
        out[~present] = pd.NA
        return out
    if pd.api.types.is_float_dtype(series):
        return values.astype(series.dtype if isinstance(series.dtype, np.dtype) else np.float64)
    return values


def _as_categories(series: pd.Series, keys: list, codes: np.ndarray, declared: list | None) -> object:
    """Generated category codes -> the column's values (a released key back in the column's type: the data's own
    value with that text, else the declared one); the null key and unknown codes -> missing."""
    lookup: dict[str, Any] = {_text(v): v for v in (declared or [])}
    try:
        uniques = pd.unique(series.dropna())
    except TypeError:
        uniques = series.dropna().unique()
    lookup.update({_text(v): v for v in uniques})
    table = np.array([None if k is None else lookup.get(str(k), k) for k in keys] + [None], dtype=object)
    values = table[np.minimum(codes, len(keys))]
    try:
        return pd.array(values, dtype=series.dtype)
    except (TypeError, ValueError):
        return pd.array(values, dtype=object)


class DpSynthesizer(Sanitizer):
    """Differentially private synthetic rows from OpenDP's MST; see the module docstring.

    Parameters
    ----------
    epsilon : float
        The release's privacy-loss budget (smaller is safer).
    delta : float
        Spent on discovering the categories of columns without public ones (default 1e-7; 0 needs every column's
        categories public and gives pure epsilon-DP).
    mechanism : {"mst"}
        OpenDP's MST over a contingency table.
    bins : dict
        Numeric column -> public bin edges (lower bound, inner edges, upper bound); required for every number.
    categories : dict
        Column -> public categories; columns with a declared order use it.
    samples : int or None
        Rows to generate; None: the model's noisy estimate of the input's row count.
    seed : int
        Seed of the generation from the fitted model and of the row order (not of the DP noise: see the module
        docstring).

    Notes
    -----
    McKenna, Miklau and Sheldon 2021 (MST, section 4); OpenDP 0.16's ``opendp.extras.mbi``.
    """

    name: ClassVar[str] = "dp_synthesizer"
    description: ClassVar[str] = ("differentially private synthesizer: OpenDP's MST fits a graphical model to noisy "
                                  "one- and two-way counts and generates every row from it")
    Params: ClassVar[type[MethodParams]] = DpSynthesizerParams
    protects: ClassVar[Protection] = "identity"
    needs_class: ClassVar[bool] = False
    randomized: ClassVar[bool] = True
    reproducible: ClassVar[bool] = False

    @classmethod
    def rebuild_guarantee(cls, params: dict[str, Any], columns: list[str], roles: Roles, numeric: dict[str, bool]
                          ) -> tuple[float, float, str]:
        """:func:`guarantee_from_manifest` (``ppdp validate --release`` re-derives the recorded guarantee)."""
        return guarantee_from_manifest(params, columns, roles, numeric)

    def __init__(self, *, epsilon: float | None = None, delta: float = 1e-7, mechanism: str = "mst",
                 bins: dict[str, list[float]] | None = None, categories: dict[str, list] | None = None,
                 samples: int | None = None, seed: int = 0) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bins = bins
        self.categories = categories
        self.samples = samples
        self.seed = seed

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        """epsilon's range for the tuner; refused when epsilon is left to tuning (see the module docstring)."""
        if self.epsilon is None:
            raise SpecError("dp_synthesizer: epsilon is not tuned on the data (each evaluation would spend its own "
                            "epsilon on the same rows, and the choice would depend on them): set method.epsilon "
                            "and tuning.strategy: fixed")
        return {"epsilon": FloatRange(low=0.01, high=10.0, log=True)}

    # -- the work -------------------------------------------------------------------------------------
    def _published(self, frame: pd.DataFrame, roles: Roles) -> tuple[list[str], list[str]]:
        """(generated columns, dropped columns): identifiers still in the input (pseudonyms) and columns tagged
        dropped are not published (a generated row belongs to no record)."""
        tags = {c.name: c for c in roles.columns}
        identifiers = set(roles.identifiers)
        dropped = [c for c in frame.columns if c in identifiers or (c in tags and tags[c].treatment == "dropped")]
        return [c for c in frame.columns if c not in dropped], dropped

    @staticmethod
    def _is_number(series: pd.Series, kind: ColumnKind | None) -> bool:
        if pd.api.types.is_datetime64_any_dtype(series) or pd.api.types.is_timedelta64_dtype(series):
            return False
        numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series) and not isinstance(
            series.dtype, pd.CategoricalDtype)
        return numeric and kind in (ColumnKind.numeric, None)

    def plan(self, frame: pd.DataFrame, roles: Roles) -> Plan:
        """The mechanism's public configuration for ``frame``'s columns (see :func:`plan_columns`)."""
        params = self.params()
        assert isinstance(params, DpSynthesizerParams)
        generated, _ = self._published(frame, roles)
        dates = [c for c in generated if pd.api.types.is_datetime64_any_dtype(frame[c])
                 or pd.api.types.is_timedelta64_dtype(frame[c])]
        if dates:
            raise InputError(f"dp_synthesizer: column '{dates[0]}' holds dates, which this method does not "
                             "synthesize: drop it (role identifier) or publish it as text categories")
        kinds = roles.kinds()
        numeric = {c: self._is_number(frame[c], kinds.get(c)) for c in generated}
        return plan_columns(generated, roles, params, numeric)

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.epsilon is None:
            raise SpecError("dp_synthesizer: method.epsilon is required (it is not tuned on the data)")
        generated, dropped = self._published(frame, roles)
        if not generated:
            raise InputError("dp_synthesizer: no column to synthesize (every column is an identifier or dropped)")
        plan = self.plan(frame, roles)
        built = build(plan)
        table = built.measurement(to_mechanism_input(frame, plan))
        model = table.model
        rows = int(self.samples) if self.samples is not None else max(1, int(round(float(model.total))))
        codes = sample_model(model, rows, rng)
        cls = roles.class_column
        if cls in codes:  # a class is never missing: a generated row in the null cell gets a class drawn from the
            codes[cls] = _fill_missing_class(codes[cls], model, cls, len(table.keys[cls]), rng)  # model (free)
        params = self.params()
        assert isinstance(params, DpSynthesizerParams)
        out: dict[str, object] = {}
        treatments: dict[str, Treatment] = {}
        for c in plan.columns:
            series = frame[c.name]
            if c.binned:
                integer = pd.api.types.is_integer_dtype(series)
                out[c.name] = _as_column(series, _numbers(codes[c.name], c.edges, integer, rng))
            else:
                keys = table.keys[c.name].to_list()
                declared = (params.categories or {}).get(c.name) or roles.orders().get(c.name)
                out[c.name] = _as_categories(series, keys, codes[c.name], declared)
        for name in frame.columns:
            treatments[name] = "dropped" if name in dropped else "synthesized"
        published = pd.DataFrame({name: out[name] for name in generated}, index=pd.RangeIndex(rows), copy=False)
        discovered = [c.name for c in plan.columns if not c.binned and c.keys is None]
        guarantee = DifferentialPrivacy(
            library=built.library, mechanism=plan.mechanism, definition="pure" if plan.pure else "approximate",
            epsilon=plan.epsilon, delta=plan.delta, epsilon_spent=built.epsilon_spent, delta_spent=built.delta_spent,
            binned=[c.name for c in plan.columns if c.binned],
            public_categories=[c.name for c in plan.columns if not c.binned and c.keys is not None],
            discovered=discovered, discovery_threshold=built.threshold if discovered else None,
            rows="declared (samples)" if self.samples is not None else "the model's noisy estimate of the input's "
                                                                        "row count")
        return DpRelease(frame=published, unit="differential_privacy", treatments=treatments,
                       row_source=np.full(rows, -1, dtype=np.int64), dp=guarantee)


def guarantee_from_manifest(params: dict, columns: list[str], roles: Roles, numeric: dict[str, bool]
                            ) -> tuple[float, float, str]:
    """Rebuild the mechanism a release recorded (its parameters, its published columns and roles) and map it again:
    (epsilon spent, delta spent, library) for one row added or removed. Reads no data."""
    known = {k: v for k, v in params.items() if k in DpSynthesizerParams.model_fields and k != "name"}
    plan = plan_columns(columns, roles, DpSynthesizerParams(**known), numeric)
    built = build(plan)
    return built.epsilon_spent, built.delta_spent, built.library
