"""Differentially private synthetic data: OpenDP's MST over a contingency table (privacy unit
``differential_privacy``, every row generated).

McKenna, Miklau and Sheldon, "Winning the NIST Contest: A scalable and general approach to differentially private
synthetic data" (J. Priv. Confidentiality 11(3), 2021; arXiv 2108.04978), MST as OpenDP 0.16 implements it
(``opendp.extras.mbi``: ``make_contingency_table`` with ``MST``, Private-PGM's ``mbi`` 1.1.0 fitting the graphical
model). Every column is made categorical (numbers cut at bin edges: public, or found under DP first, see below);
then, with the budget epsilon (and delta) or what the DP bin edges leave of it:

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
measurement for one row (:attr:`ppdp.schemas.reports.DifferentialPrivacy.epsilon_spent`; with bin edges found
under DP, its sum with the DP quantiles' map), never more than the parameters ask for.

What is *not* data-dependent, and why that matters:

* **Bin edges are public, or found under DP from part of the budget.** Each numeric column needs ``bins``: either
  its public edges (lower bound, inner edges, upper bound, given in the spec), or public bounds and a number of bins
  (``{lower, upper, count}``, optional ``step``) whose count - 1 inner edges are then *DP quantiles* of the column
  (at 1/count, 2/count, ...). Edges read from the data without noise (exact quantiles, min and max) would disclose
  the extreme records without spending budget; ppdp never reads them. The DP quantiles are OpenDP's
  ``make_private_quantile`` (exponential mechanism; Smith 2011) over a public grid of candidates strictly inside the
  bounds (``lower + k * step``; default step a 1000th of the range), missing values left out; they spend
  ``bin_share`` of epsilon (default 0.1), split evenly over the columns and, inside a column, over its quantiles
  (composed by OpenDP's ``make_composition``), and are pure epsilon-DP. Sorting them and merging equal ones (so edges
  are strictly increasing; fewer bins may result) is post-processing. The synthesizer then gets the rest of epsilon
  (and all of delta), and the release's (epsilon, delta) is the basic (sequential) composition of the two maps,
  each OpenDP's own: their sum, rounded up, never more than ``method.epsilon``. The edges found are DP output: the
  manifest publishes them (:attr:`~ppdp.schemas.reports.DifferentialPrivacy.found_edges`, with the quantiles' own
  epsilon), and ``ppdp validate --release`` rebuilds both measurements from them and the recorded parameters. Values
  outside the bounds are clipped to them (a row-by-row transformation: no privacy cost). A numeric column without
  bins is refused.
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

Reproducibility: the DP noise (of the quantiles as of the counts) comes from OpenDP's cryptographically secure
generator, which takes no seed, on purpose: noise drawn from the seed the manifest publishes could be recomputed and
subtracted by anyone. The seed drives everything after the noisy measurements (which rows are drawn from the
model, the values inside each bin, the row order). So the same seed gives the same release *from the same
measurements* (and the same DP bin edges), and ``ppdp validate --release`` re-checks the (epsilon, delta) claim
from the manifest (the mechanism rebuilt from the recorded parameters and mapped again), not by re-running the
release.

``epsilon`` is not tuned on the data: each evaluation would spend its own epsilon on the same rows, and the choice
would depend on them, so the published epsilon would understate the loss. Set ``method.epsilon`` with
``tuning.strategy: fixed``.

Known library issue worked around: OpenDP 0.16's MST asks for its selection budget as a sum of per-step budgets
that floating-point rounding can put a hair above the budget it was given (opendp/opendp#2789, "insufficient budget
for query"); :class:`_MST` gives the selection a budget smaller by one part in 10^9 (it spends slightly less, never
more).

**AIM** (``mechanism: aim``; McKenna, Mullins, Sheldon and Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", PVLDB 15(11), 2022; arXiv 2201.12677), as OpenDP 0.16 implements it
(``opendp.extras.mbi.AIM`` with its defaults: a workload of every marginal of up to 3 columns, at most 16 rounds per
column, a model of at most 80 MB) in place of steps 2 and 3: after the same one-way counts, round by round, a noisy
max (a tenth of the round's budget) picks the candidate marginal the current model fits worst, given the noise its
measurement would carry, a noisy count of it is taken (the rest) and the model is refitted; a round whose
measurement barely moved the model quadruples the next round's budget; OpenDP's privacy filter stops it at the
budget. The (epsilon, delta) recorded is OpenDP's map of that whole measurement, as for MST. ppdp changes two
things. (1) A fix (:func:`aim_class`): OpenDP's loop hands what is left of the budget to one more round, and when
that is a rounding crumb (measured: 5.6e-17 of epsilon 1) the round's noisy max finds no noise scale and the binary
search raises an OpenDPException that OpenDP's AIM does not catch (it expects a ValueError): the release fails (on
270 rows of 4 census columns: 3 of 3 runs under pure DP, 2 of 3 under (epsilon, delta) with a column discovered; the
census demo's 9 columns happened not to hit it in 7 runs). ppdp's AIM stops when less than one part in 10^9 of the
budget is left (it spends slightly less, never more). (2) Speed, by post-processing only: the estimator
(``Algorithm.estimator``, OpenDP's extension point) is OpenDP's default (``mbi``'s mirror descent) returning a model
whose marginals are computed in NumPy (:func:`aim_estimator`). Measured on this machine (2 cores shared with other
jobs, load average 2.6 to 11): AIM as OpenDP ships it took 129 to 217 s on the census demo (9 columns, epsilon 1),
of which 2,236 JAX compilations took 241 s of a 428 s profiled run: ``mbi`` 1.1.0 computes each of the 129
candidates' marginals with JAX operations compiled one by one for every new shape, in every round; with the NumPy
marginals it takes 32 to 41 s in a fresh process and 13 to 19 s in a warm one (MST: 59 s and 17 s, its pair
selection reading the model through the same JAX path), and on Adult (15 columns, 24,129 rows, epsilon 1, 575
candidates) 182 to 315 s wall, 135 to 202 s of CPU (MST: 84 to 180 s), its 13 to 16 model fits then being most of it
(utility: docs/methods/dp_synthesizer.md). ``mechanism: auto`` (:func:`choose_mechanism`) takes AIM when its
workload has at most :data:`AUTO_MAX_CANDIDATES` candidate marginals of at most :data:`AUTO_MAX_CELLS` cells in all
(the census demo: 129 and 56,723), else MST (Adult: 575 and 498,387; ask for ``aim`` to run it there); the rule
reads only public information (the columns, their public categories and bins), so ``ppdp validate --release``
rebuilds the same mechanism, and the manifest records the choice and the figures
(:attr:`DifferentialPrivacy.mechanism_choice`).
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
import threading
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Domain, FloatRange, MethodParams, Protection, Treatment
from ppdp.schemas.params.dp_synthesizer import DpBins, DpSynthesizerParams, category_text
from ppdp.schemas.reports import DifferentialPrivacy, Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.pgm import aim_class, aim_estimator, mst_class, sample_model
from ppdp.tasks.sanitize.base import DpRelease, Release, Sanitizer

if TYPE_CHECKING:  # OpenDP is imported when the mechanism is built
    from opendp.extras.polars.contingency_table import ContingencyTableQuery

LIBRARY = "opendp"
COMPOSITION_SLACK = 1e-9  # with DP bins, each part's budget is made smaller by this fraction (float rounding)


@dataclass(frozen=True)
class _Column:
    """How one published column goes through the mechanism."""

    name: str
    binned: bool
    edges: tuple[float, ...] = ()  # binned: lower bound, inner edges, upper bound (found under DP: () until found)
    keys: tuple[str, ...] | None = None  # categorical: public categories as text (None: discovered privately)
    bounds: tuple[float, float] | None = None  # inner edges found under DP: the public bounds,
    count: int = 0  # the bins asked for (count - 1 quantiles)
    candidates: tuple[float, ...] = ()  # and the public grid of candidate inner edges

    @property
    def found(self) -> bool:
        """Its inner edges are found under DP (DP quantiles), not given."""
        return self.bounds is not None


@dataclass(frozen=True)
class Plan:
    """The public configuration of the mechanism: everything it is built from, nothing read from the data (bin edges
    found under DP are filled in by :meth:`with_edges` from the quantile measurement's output)."""

    columns: tuple[_Column, ...]
    epsilon: float
    delta: float  # asked for; 0 is spent when every column's categories are public
    mechanism: str
    bin_share: float = 0.0  # of epsilon, for finding bin edges under DP (0: every column's edges are public)

    @property
    def pure(self) -> bool:
        return all(c.binned or c.keys is not None for c in self.columns)

    @property
    def bins_epsilon(self) -> float:
        """The epsilon given to the DP quantiles (0 without columns whose edges are found under DP)."""
        return self.epsilon * self.bin_share if any(c.found for c in self.columns) else 0.0

    @property
    def mechanism_epsilon(self) -> float:
        """The epsilon given to the synthesizer: all of it, or the rest after the DP quantiles (made smaller by
        :data:`COMPOSITION_SLACK` so that the sum, rounded up, stays within epsilon)."""
        if not self.bins_epsilon:
            return self.epsilon
        return (self.epsilon - self.bins_epsilon) * (1 - COMPOSITION_SLACK)

    def with_edges(self, found: dict[str, tuple[float, ...]]) -> Plan:
        """This plan with the edges of the columns whose edges are found under DP filled in (``found``: column ->
        lower bound, inner edges, upper bound). Raises :class:`SpecError` when a column's edges are missing or do not
        fit its bounds, count and grid (a manifest that does not match its method's parameters)."""
        columns = []
        for c in self.columns:
            if c.found:
                assert c.bounds is not None
                edges = tuple(float(e) for e in found.get(c.name, ()))
                grid = set(c.candidates)
                if (len(edges) < 2 or edges[0] != c.bounds[0] or edges[-1] != c.bounds[1] or len(edges) > c.count + 1
                        or any(b <= a for a, b in zip(edges, edges[1:])) or not grid.issuperset(edges[1:-1])):
                    raise SpecError(f"dp_synthesizer: the bin edges of '{c.name}' found under DP are missing or do "
                                    f"not fit method.bins.{c.name} (bounds, count, grid)")
                c = _Column(c.name, True, edges=edges, bounds=c.bounds, count=c.count, candidates=c.candidates)
            columns.append(c)
        return Plan(columns=tuple(columns), epsilon=self.epsilon, delta=self.delta, mechanism=self.mechanism,
                    bin_share=self.bin_share)

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
    for numbers (or public bounds, a count and the grid of candidate edges, for edges found under DP), public
    categories (``categories``, else a declared order) or private discovery for the rest. Raises :class:`SpecError`
    naming the column and key (never a value)."""
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
                                "lower bound, inner edges, upper bound) or public bounds and a number of bins whose "
                                f"edges are found under DP (method.bins.{name}: {{lower, upper, count}})")
            given = bins[name]
            if isinstance(given, DpBins):
                out.append(_Column(name, True, bounds=(float(given.lower), float(given.upper)), count=int(given.count),
                                   candidates=tuple(float(g) for g in given.candidates())))
            else:
                out.append(_Column(name, True, edges=tuple(float(e) for e in given)))
            continue
        if name in bins:
            raise SpecError(f"dp_synthesizer: method.bins.{name}: '{name}' is not numeric; list its categories in "
                            f"method.categories.{name} instead")
        declared = listed.get(name) or orders.get(name)
        keys = tuple(category_text(v) for v in declared) if declared else None
        if keys is None and params.delta == 0:
            raise SpecError(f"dp_synthesizer: column '{name}' has no public categories: list them in "
                            f"method.categories.{name} (or declare its order), or set method.delta > 0 to discover "
                            "them privately")
        out.append(_Column(name, False, keys=keys))
    assert params.epsilon is not None  # a mechanism is planned only with its budget (_sanitize checks it first)
    return Plan(columns=tuple(out), epsilon=float(params.epsilon), delta=float(params.delta),
                mechanism=params.mechanism, bin_share=params.share())


# -- the mechanism (OpenDP) ---------------------------------------------------------------------------------------
# -- AIM (McKenna, Mullins, Sheldon and Miklau 2022) ----------------------------------------------------------------
AIM_DEGREE = 3  # AIM's workload: every marginal of up to 3 columns (the paper's default and OpenDP's)
AUTO_MAX_CANDIDATES = 200  # mechanism auto: AIM when its workload has at most this many candidate marginals, ...
AUTO_MAX_CELLS = 200_000  # ... and their cells add up to at most this many (else MST); see choose_mechanism


def _workload(plan: Plan) -> list[tuple[int, ...]]:
    """The shapes (cells per column) of AIM's candidate marginals for ``plan``: every set of 1 to :data:`AIM_DEGREE`
    columns (OpenDP's ``AIM(queries=3)`` expanded). A column's size counts its missing category (OpenDP adds it
    to every column); a column whose categories are discovered privately counts as 1 + 1 (its size is known only
    after the release), so the figure is a lower bound for those; a column whose edges are found under DP counts
    the bins asked for (``count``: equal edges merged can only make fewer)."""
    sizes = [(c.count if c.found else len(c.edges) - 1 if c.binned else len(c.keys) if c.keys is not None else 1) + 1
             for c in plan.columns]
    degree = min(AIM_DEGREE, len(sizes))
    return [tuple(sizes[i] for i in combo) for k in range(1, degree + 1)
            for combo in itertools.combinations(range(len(sizes)), k)]


def choose_mechanism(plan: Plan) -> tuple[str, str]:
    """(mechanism, why) for ``plan``: ``mst`` and ``aim`` are taken as asked; ``auto`` picks AIM when its workload
    is small enough for it to run in reasonable time (at most :data:`AUTO_MAX_CANDIDATES` candidate marginals
    whose cells add up to at most :data:`AUTO_MAX_CELLS`), else MST. Public information only (the columns and
    their public categories and bins): the same plan always gets the same answer, so ``ppdp validate --release``
    rebuilds the same mechanism."""
    if plan.mechanism != "auto":
        return plan.mechanism, "asked for (method.mechanism)"
    shapes = _workload(plan)
    candidates, cells = len(shapes), sum(math.prod(s) for s in shapes)
    small = candidates <= AUTO_MAX_CANDIDATES and cells <= AUTO_MAX_CELLS
    why = (f"auto: AIM's workload (the marginals of up to {AIM_DEGREE} columns) has {candidates} candidate "
           f"marginals (limit {AUTO_MAX_CANDIDATES}) of {cells} cells in all (limit {AUTO_MAX_CELLS})")
    return ("aim" if small else "mst"), why


def _algorithm(plan: Plan):
    """The contingency table's algorithm for ``plan`` (:func:`choose_mechanism`): ppdp's MST, or OpenDP's AIM with
    its defaults (workload of degree :data:`AIM_DEGREE`, rounds 16 per column, model size up to 80 MB) and
    :func:`aim_estimator`."""
    mechanism, _ = choose_mechanism(plan)
    if mechanism == "aim":
        return aim_class()(queries=AIM_DEGREE, estimator=aim_estimator)
    return mst_class()()


_LOCK = threading.Lock()


def _absl_to_process_stderr() -> None:
    """Point absl's logging handler (absl is imported by JAX, which Private-PGM uses) at the process's own stderr.

    absl builds its handler on import, keeping whatever ``sys.stderr`` is at that moment (a test runner's capture, a
    CLI runner's buffer); when logging is reconfigured later (Prefect's ``dictConfig`` at its first flow run shuts
    every handler down), absl closes that stream if it is no longer ``sys.stderr``, closing someone else's file.
    ``sys.__stderr__`` is never closed by it. The handler is not attached to any logger: nothing is logged through
    it either way."""
    try:
        from absl import logging as absl_logging  # heavy: absl comes with JAX, loaded by mbi
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
    import polars as pl  # heavy: Polars, OpenDP's input frame

    schema = {c.name: (pl.Int64 if c.binned else pl.String) for c in plan.columns}
    return pl.DataFrame(schema=schema).lazy()


@functools.lru_cache(maxsize=8)
def build(plan: Plan) -> Built:
    """Build the measurement for ``plan`` from public information only (the input schema, the public categories and
    bins, epsilon, delta): a measurement can be reused for any table of that schema, so it is cached (OpenDP's
    construction searches the noise scales numerically: seconds)."""
    import opendp.prelude as dp  # heavy: OpenDP, loaded when a mechanism is built

    with _LOCK:
        dp.enable_features("contrib")  # OpenDP's mbi synthesizers are contributed code, not yet vetted by its review
        import mbi  # noqa: F401  (imports JAX, and with it absl)

        _absl_to_process_stderr()
    assert all(c.edges for c in plan.columns if c.binned), "edges found under DP are filled in first (with_edges)"
    epsilon = plan.mechanism_epsilon  # all of epsilon, or the rest after the DP quantiles
    loss = dp.loss_of(epsilon=epsilon) if plan.pure else dp.loss_of(epsilon=epsilon, delta=plan.delta)
    query_loss = {"epsilon": epsilon} if plan.pure else {"epsilon": epsilon, "delta": plan.delta}
    context = dp.Context.compositor(data=_empty_frame(plan), privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=loss)
    # OpenDP types query() as a Query or a LazyFrameQuery; contingency_table() makes a ContingencyTableQuery
    query = cast("ContingencyTableQuery",
                 context.query(**query_loss).contingency_table(keys=plan.keys(), algorithm=_algorithm(plan)))
    measurement = query.resolve()
    spent = measurement.map(context.d_in)
    eps, delta = (float(spent), 0.0) if plan.pure else (float(spent[0]), float(spent[1]))
    return Built(measurement, eps, delta, query.oneway_threshold, f"{LIBRARY} {version(LIBRARY)}")


@dataclass(frozen=True)
class Quantiles:
    """OpenDP measurements of the DP quantiles that find the inner bin edges of the plan's columns with bounds and a
    count, and the epsilon they spend together for one row."""

    measurements: tuple[tuple[str, Any], ...]  # column -> measurement: its values -> count - 1 quantiles
    epsilon_spent: float  # the columns' maps (each OpenDP's own) basic-composed, rounded up


def composed(parts: list[float]) -> float:
    """Basic (sequential) composition of pure epsilons: their sum, rounded up when it may be inexact."""
    total = math.fsum(parts)
    return math.nextafter(total, math.inf) if len(parts) > 1 else total


def build_quantiles(plan: Plan) -> Quantiles:
    """The DP quantile measurements of ``plan``'s columns whose edges are found under DP, from public information
    only (their bounds, counts and grids of candidates, and :attr:`Plan.bins_epsilon`, split evenly over the columns
    that have inner edges to find)."""
    wanted = tuple((c.name, c.count, c.candidates) for c in plan.columns if c.found and c.count > 1)
    return _quantiles(wanted, plan.bins_epsilon)


@functools.lru_cache(maxsize=8)
def _quantiles(wanted: tuple[tuple[str, int, tuple[float, ...]], ...], epsilon: float) -> Quantiles:
    """For each (column, count, candidates): OpenDP's exponential-mechanism quantiles at 1/count, ..., (count-1)/count
    over the candidates, each with its noise scale searched for an equal part of the column's share of ``epsilon``,
    composed by OpenDP's ``make_composition`` (its map: the column's epsilon); neighbouring inputs differ by one
    value added or removed (one row)."""
    import opendp.prelude as dp  # heavy: OpenDP, loaded when a mechanism is built

    with _LOCK:
        dp.enable_features("contrib")  # make_private_quantile is contributed code
    if not wanted:
        return Quantiles((), 0.0)
    share = epsilon / len(wanted) * (1 - COMPOSITION_SLACK)
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    metric = dp.symmetric_distance()
    out, spent = [], []
    for name, count, candidates in wanted:
        grid, part = list(candidates), share / (count - 1) * (1 - COMPOSITION_SLACK)

        def quantile(alpha: float, grid: list[float] = grid, part: float = part):
            return dp.binary_search_chain(lambda scale: dp.m.make_private_quantile(
                domain, metric, dp.max_divergence(), grid, alpha=alpha, scale=scale), d_in=1, d_out=part, T=float)

        parts = [quantile(k / count) for k in range(1, count)]
        measurement = dp.c.make_composition(parts)  # one search over the composition takes seconds; this, 0.1 s
        epsilon_spent = float(measurement.map(1))
        if epsilon_spent > share:  # pragma: no cover - the parts are below the share by COMPOSITION_SLACK
            raise RuntimeError(f"dp_synthesizer: the quantiles of '{name}' would spend more than their share")
        out.append((name, measurement))
        spent.append(epsilon_spent)
    return Quantiles(tuple(out), composed(spent))


def find_edges(frame: pd.DataFrame, plan: Plan, quantiles: Quantiles) -> dict[str, tuple[float, ...]]:
    """The bin edges of ``plan``'s columns with bounds and a count: the lower bound, the DP quantiles of the column's
    values (missing ones left out, the others clipped to the bounds: row by row), sorted and with equal ones merged
    (post-processing), the upper bound. The quantiles' noise is OpenDP's (no seed)."""
    measured = dict(quantiles.measurements)
    out: dict[str, tuple[float, ...]] = {}
    for c in plan.columns:
        if not c.found:
            continue
        assert c.bounds is not None
        lower, upper = c.bounds
        inner: list[float] = []
        if c.name in measured:
            values = pd.to_numeric(frame[c.name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            values = np.clip(values[~np.isnan(values)], lower, upper)
            inner = [float(q) for q in measured[c.name](values.tolist())]
        out[c.name] = (lower, *sorted({q for q in inner if lower < q < upper}), upper)
    return out


@dataclass(frozen=True)
class Spent:
    """What a release's mechanism spends for one row: the DP quantiles (if any) and the synthesizer, composed."""

    epsilon: float
    delta: float
    bins_epsilon: float  # the DP quantiles' part (0 without edges found under DP)
    built: Built


def spend(plan: Plan, quantiles: Quantiles | None) -> Spent:
    """The synthesizer built for ``plan`` (edges filled in) and the total it spends with ``quantiles``: basic
    composition of OpenDP's maps (the quantiles are pure: delta is the synthesizer's). Never more than the plan asks
    for (checked: fails closed)."""
    built = build(plan)
    if quantiles is None:
        return Spent(built.epsilon_spent, built.delta_spent, 0.0, built)
    total = composed([quantiles.epsilon_spent, built.epsilon_spent])
    if total > plan.epsilon or built.delta_spent > plan.delta:
        raise RuntimeError("dp_synthesizer: the composed mechanism would spend more than method.epsilon / delta")
    return Spent(total, built.delta_spent, quantiles.epsilon_spent, built)


def to_mechanism_input(frame: pd.DataFrame, plan: Plan):
    """The rows as the mechanism reads them: bin numbers (values clipped to the public bounds) and categories as
    text; missing values stay missing (a category of their own)."""
    import polars as pl  # heavy: Polars, OpenDP's input frame

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
            text = [None if pd.isna(v) else category_text(v) for v in series.astype(object).to_numpy()]
            data[c.name] = pl.Series(c.name, text, dtype=pl.String)
    return pl.DataFrame(data).lazy()


# -- generation (seeded) ------------------------------------------------------------------------------------------
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
    lookup: dict[str, Any] = {category_text(v): v for v in (declared or [])}
    try:
        uniques = pd.unique(series.dropna())
    except TypeError:
        uniques = series.dropna().unique()
    lookup.update({category_text(v): v for v in uniques})
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
    mechanism : {"mst", "aim", "auto"}
        OpenDP's MST over a contingency table, OpenDP's AIM (with ppdp's stop for the budget's last crumbs and its
        NumPy marginals), or auto: AIM when its workload is small (:func:`choose_mechanism`), else MST.
    bins : dict
        Numeric column -> public bin edges (lower bound, inner edges, upper bound), or public bounds and a number of
        bins (``{"lower": 17, "upper": 90, "count": 10}``, optional ``step``) whose inner edges are found under DP;
        required for every number.
    bin_share : float or None
        Share of epsilon spent on the bin edges found under DP (None: 0.1 when some are).
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
    def rebuild_guarantee(cls, params: dict[str, Any], columns: list[str], roles: Roles, numeric: dict[str, bool],
                          found: dict[str, list[float]] | None = None) -> tuple[float, float, str]:
        """:func:`guarantee_from_manifest` (``ppdp validate --release`` re-derives the recorded guarantee)."""
        return guarantee_from_manifest(params, columns, roles, numeric, found)

    epsilon: float | None
    delta: float
    mechanism: str
    bins: dict[str, list[float] | dict[str, Any]] | None
    bin_share: float | None
    categories: dict[str, list] | None
    samples: int | None

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
        quantiles = None
        if any(c.found for c in plan.columns):  # inner bin edges found under DP first (part of epsilon)
            quantiles = build_quantiles(plan)
            plan = plan.with_edges(find_edges(frame, plan, quantiles))
        spent = spend(plan, quantiles)
        built = spent.built
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
        mechanism, choice = choose_mechanism(plan)
        guarantee = DifferentialPrivacy(
            library=built.library, mechanism=mechanism, mechanism_choice=choice,
            definition="pure" if plan.pure else "approximate",
            epsilon=plan.epsilon, delta=plan.delta, epsilon_spent=spent.epsilon, delta_spent=spent.delta,
            binned=[c.name for c in plan.columns if c.binned],
            found_edges={c.name: list(c.edges) for c in plan.columns if c.found},
            bins_epsilon=plan.bins_epsilon if quantiles is not None else None,
            bins_epsilon_spent=spent.bins_epsilon if quantiles is not None else None,
            public_categories=[c.name for c in plan.columns if not c.binned and c.keys is not None],
            discovered=discovered, discovery_threshold=built.threshold if discovered else None,
            rows="declared (samples)" if self.samples is not None else "the model's noisy estimate of the input's "
                                                                        "row count")
        return DpRelease(frame=published, unit="differential_privacy", treatments=treatments,
                       row_source=np.full(rows, -1, dtype=np.int64), dp=guarantee)


def guarantee_from_manifest(params: dict, columns: list[str], roles: Roles, numeric: dict[str, bool],
                            found: dict[str, list[float]] | None = None) -> tuple[float, float, str]:
    """Rebuild the mechanism a release recorded (its parameters, its published columns and roles, and ``found``: the
    bin edges it found under DP, :attr:`DifferentialPrivacy.found_edges`) and map it again: (epsilon spent, delta
    spent, library) for one row added or removed, the DP quantiles and the synthesizer composed as the release
    composed them. Reads no data; recorded edges that do not fit the parameters raise :class:`SpecError`."""
    known = {k: v for k, v in params.items() if k in DpSynthesizerParams.model_fields and k != "name"}
    plan = plan_columns(columns, roles, DpSynthesizerParams(**known), numeric)
    quantiles = None
    if any(c.found for c in plan.columns):
        quantiles = build_quantiles(plan)
        plan = plan.with_edges({c: tuple(e) for c, e in (found or {}).items()})
    spent = spend(plan, quantiles)
    return spent.epsilon, spent.delta, spent.built.library
