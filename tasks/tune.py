"""Tune any tunable parameter of any method as a release step (paper 000's tuning, generalized).

A method declares its tunable parameters and which direction is safer (``Sanitizer.tunable``) and their domains
on the data (``Sanitizer.domains``: an integer or float range, or a lattice of levels). The spec bounds the
search (``tuning.min`` / ``tuning.max``; for a group size ``k`` the lower bound defaults to ``privacy.k``).

Strategies (paper 000, sections "Class-wise condensation method" and "Rule-based approach"):

* ``fixed``: the value in the spec's method section.
* ``suggested``: the method's own rule (condensation: the approximate GCD
  g* = t * GCD(floor(|C1|/t), ..., floor(|Cm|/t)) over the training class sizes), clamped to the bounds.
* ``bisect``: the paper's Figure 6 on any ordered parameter. g1 = the least private end, g2 = the most private
  end; evaluate both; loop: g3 = the midpoint (geometric, round(sqrt(g1 * g2)), for integers and log-scale
  ranges; arithmetic otherwise), evaluate g3; if |acc(g1) - acc(g2)| > acc(g1) * t_a then g2 = g3 (utility
  matters: search towards the less private end) else g1 = g3 (privacy matters); return the last g3. Guards:
  integer rounding can pin g3 to an end (g1 = 10, g2 = 11): the loop stops when an iteration leaves (g1, g2)
  unchanged; real ranges stop after 40 iterations or when the interval is below 1e-3 of the range.
* ``grid``: every integer of the range (or ``buckets`` evenly spaced values; for reals 10 by default,
  log-spaced on log ranges).
* ``lattice``: hierarchy levels, bottom-up with monotone pruning (needs a method with a lattice domain).

Objectives:

* ``most_privacy_within_gap`` (the paper's): ``bisect`` picks Figure 6's last midpoint g3 (the search above);
  ``grid`` picks (:func:`pick_within_gap`) the value with the highest privacy figure among those whose accuracy
  is at least (1 - t_a) times the best evaluated accuracy, the safer value on ties (and among values without a
  figure). The choice rule (``tuning.choice``) then applies:

  - ``non_dominated`` (the default; :func:`undominated`): if an evaluated value dominates the pick
    (:func:`dominates`: at least as safe, at least as accurate, strictly better in one), the choice moves to the
    dominating value with the highest privacy figure, the safer value on ties, which no evaluated value
    dominates. Otherwise the pick stands (grid's pick is never dominated). A value whose release the classifier
    answers with one class (:func:`informative`) is never moved to: its accuracy is the majority class's share.
  - ``paper`` (``bisect`` only): Figure 6 as written, its last midpoint. Figure 6 assumes accuracy falls as the
    parameter gets safer: where it rises instead (the census demo: accuracy 0.68 at k=20, 0.733 at k=200), its
    rule 1 reads the gap as "utility matters" and searches towards the less private end, and its last midpoint
    (k=62, accuracy 0.703) is dominated by a value it evaluated (k=200). Kept to reproduce the paper (Table 2).

* ``best_utility_meeting_policy``: the most accurate value whose release passes every privacy gate of the
  spec, the safer value on ties (``bisect`` assumes that passing is monotone in the parameter and searches the
  boundary).

Safety of an evaluated value: its privacy figure (larger is more private for every unit; a value without one
ranks below every value with one) and its parameter value in the tunable's own direction (``Sanitizer.tunable``:
``larger`` for k, leaf_size, scale, rate; ``smaller`` for rank, epsilon).

An evaluation sanitizes the training rows at one value (``repeats`` seeds) and measures utility (accuracy on the
held-out original rows) and the unit's privacy figure (generating_group: paper 000's confidence-interval
privacy; record: the DCR quantile of the policy; equivalence_class: the smallest class). Evaluations are asked
for in batches through an ``evaluate_many`` callable so that the flow can run them as parallel Prefect tasks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ppdp.schemas.methods import Domain, FloatRange, IntRange, Lattice
from ppdp.schemas.privacy import gates_judged
from ppdp.schemas.reports import Evaluation, LatticeSearch, Roles, TuningTrace
from ppdp.schemas.spec import PrivacyThresholds, TuningSpec
from ppdp.schemas.units import unit_of
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.shapes import shape_of
from ppdp.tasks.utility import feature_encoder

EvaluateMany = Callable[[list[float]], list[Evaluation]]
_REAL_ITERATIONS = 40


def refuse_uncounted_mechanism(sanitizer: Sanitizer) -> None:
    """Raise :class:`SpecError` for a differentially private method (unit ``differential_privacy``): a tuning
    evaluation (or search) would run its mechanism on the input's rows, spending privacy budget that no ledger
    counts, and choose its parameters by what that spending shows. Only ``ppdp run``, which charges the one run it
    publishes to the dataset's budget, runs such a mechanism (``tuning.strategy: fixed``)."""
    if unit_of(sanitizer.unit).spends_budget:
        raise SpecError(f"{sanitizer.name}: a differentially private method is never tuned on the data (each "
                        "evaluation would run its mechanism on the input's rows, spending privacy budget no ledger "
                        "counts): set its parameters and tuning.strategy: fixed")


def class_sizes(frame: pd.DataFrame, roles: Roles) -> dict[str, int]:
    """Training class sizes by class position (labels are data values: they never enter a trace)."""
    cls = roles.class_column
    if cls is None:
        return {"(all)": len(frame)}
    counts = frame[cls].astype(str).value_counts().sort_index()
    return {f"class #{i}": int(v) for i, v in enumerate(counts.to_numpy())}


def evaluate_value(
    sanitizer: Sanitizer,
    parameter: str,
    value: float,
    train: pd.DataFrame,
    test: pd.DataFrame,
    roles: Roles,
    classifier: str,
    repeats: int = 1,
    policy: PrivacyThresholds | None = None,
    check_policy: bool = False,
    standardize: bool = True,
) -> Evaluation:
    """Sanitize the method's rows (its shape's :meth:`~ppdp.tasks.shapes.ReleaseShape.tuning_rows`) with
    ``parameter = value`` (``repeats`` seeds); measure held-out accuracy, the privacy figure and, when
    ``check_policy``, whether every gate of ``policy`` passes (all runs must pass), as the shape scores a run."""
    refuse_uncounted_mechanism(sanitizer)
    started = time.perf_counter()
    shape = shape_of(sanitizer)
    encoder = feature_encoder(train, roles, standardize)
    source = shape.tuning_rows(train, test)
    privacy, accs, per, meets = [], [], [], []
    for r in range(repeats):
        run = sanitizer.with_params(**{parameter: value, "seed": sanitizer.seed + r})
        score = shape.score(run, run.sanitize(source, roles), train, test, roles, classifier,
                            policy or PrivacyThresholds(), check_policy, sanitizer.seed + r, encoder, standardize)
        if score.privacy is not None:
            privacy.append(score.privacy)
        if score.meets_policy is not None:
            meets.append(score.meets_policy)
        accs.append(score.accuracy)
        per.append(score.per_class)
    labels = sorted({c for p in per for c in p})
    return Evaluation(
        value=float(value),
        privacy=float(np.mean(privacy)) if privacy else None,
        accuracy=float(np.mean(accs)),
        per_class={f"class #{i}": float(np.mean([p.get(c, 0.0) for p in per])) for i, c in enumerate(labels)},
        meets_policy=all(meets) if check_policy else None,
        runs=repeats,
        seconds=time.perf_counter() - started,
    )


def most_private_value(spec: TuningSpec, sanitizer: Sanitizer, domains: dict[str, Domain],
                       policy: PrivacyThresholds) -> tuple[str, int | float] | None:
    """The tuned parameter and the most private value a ``bisect`` or ``grid`` search may choose: its range's safer
    end (the spec's bounds, else ``privacy.k`` for k, else the method's domain; both searches evaluate it). None for
    a strategy that searches no range of values, or a method without a tunable parameter."""
    if spec.strategy not in ("bisect", "grid"):
        return None
    parameter = spec.parameter or next(iter(sanitizer.tunable), None)
    if parameter is None:
        return None
    r = _search_range(spec, domains[parameter], parameter, sanitizer.tunable[parameter], policy)
    return parameter, (int(r.most) if r.integer else float(r.most))


def search_lattice(sanitizer: Sanitizer, parameter: str, frame: pd.DataFrame, roles: Roles) -> LatticeSearch:
    """The method's lattice search for ``parameter`` on ``frame`` (the ``lattice`` strategy's one evaluation)."""
    refuse_uncounted_mechanism(sanitizer)
    return sanitizer.search_parameter(parameter, frame, roles)


def tuned(sanitizer: Sanitizer, trace: TuningTrace) -> Sanitizer:
    """The sanitizer the trace chose: its lattice node, its chosen value, or the spec's own (nothing tuned)."""
    if trace.lattice is not None:
        return sanitizer.with_tuned(trace.parameter, dict(trace.lattice.node))
    return sanitizer.with_tuned(trace.parameter, trace.chosen)


def sequential(evaluate_one: Callable[[float], Evaluation]) -> EvaluateMany:
    """An ``evaluate_many`` that runs values one after another (outside Prefect)."""
    return lambda values: [evaluate_one(v) for v in values]


# -- searches ----------------------------------------------------------------------------------------------
class _Seen:
    """Evaluations by value, asked for in batches (each value at most once)."""

    def __init__(self, evaluate_many: EvaluateMany) -> None:
        self.evaluate_many = evaluate_many
        self.by_value: dict[float, Evaluation] = {}

    def ensure(self, *values: float) -> None:
        todo = list(dict.fromkeys(float(v) for v in values if float(v) not in self.by_value))  # in the given order
        if todo:
            for v, ev in zip(todo, self.evaluate_many(todo)):
                self.by_value[v] = ev

    def __getitem__(self, value: float) -> Evaluation:
        return self.by_value[float(value)]


def _midpoint(a: float, b: float, integer: bool, log: bool) -> float:
    if integer:
        return float(round(math.sqrt(a * b))) if a > 0 and b > 0 else float(round((a + b) / 2))
    return math.sqrt(a * b) if log and a > 0 and b > 0 else (a + b) / 2


def _narrow(a: float, b: float, resolution: float | None) -> bool:
    """The range [a, b] is narrower than ``resolution`` times its larger end (never, without a resolution)."""
    return resolution is not None and abs(b - a) <= resolution * max(abs(a), abs(b))


def rule_based_search(least: float, most: float, gap: float, evaluate_many: EvaluateMany, *, integer: bool = True,
                      log: bool = True, resolution: float | None = None) -> tuple[float, dict[float, Evaluation]]:
    """Paper 000's Figure 6 between the least private value ``least`` (g1) and the most private ``most`` (g2);
    returns (chosen value, every evaluation by value). Works in either direction (``least`` > ``most`` for a
    parameter whose smaller values are safer). With a ``resolution`` the search stops once the range is that
    narrow (relative to its larger end) and returns its last midpoint, as Figure 6 does at its end.

    Figure 6 decides where to go from the accuracies at the range's two ends, never at its midpoint g3; g3 only
    becomes an end of the next range. So the midpoint of the next range, and of the one after it, are known
    before g3's accuracy is: each round evaluates, as one batch (parallel tasks in the flow), every midpoint the
    search is bound to evaluate with what it knows (two per round once started). The values evaluated, and the
    value chosen, are exactly those of the one-at-a-time search; it only takes about half as many rounds."""
    seen = _Seen(evaluate_many)
    g1, g2 = float(least), float(most)
    seen.ensure(g1, g2)
    if _narrow(g1, g2, resolution):  # no midpoint to take: the more private end if it keeps accuracy
        return (g2 if abs(seen[g1].accuracy - seen[g2].accuracy) <= seen[g1].accuracy * gap else g1), seen.by_value
    span = abs(g2 - g1)
    steps = 10_000 if integer else _REAL_ITERATIONS

    def stops(a: float, b: float) -> bool:
        return a == b or (not integer and abs(b - a) <= 1e-3 * span) or _narrow(a, b, resolution)

    def decide(a: float, b: float, g3: float) -> tuple[float, float]:
        if abs(seen[a].accuracy - seen[b].accuracy) > seen[a].accuracy * gap:
            return a, g3  # utility matters: towards the less private end
        return g3, b  # privacy matters: towards the more private end

    def ahead(a: float, b: float, budget: int) -> list[float]:
        """The midpoints the search will evaluate from (a, b), as far as known accuracies decide its path."""
        todo = []
        for _ in range(budget):
            if stops(a, b):
                break
            g3 = _midpoint(a, b, integer, log)
            todo.append(g3)
            if a not in seen.by_value or b not in seen.by_value:
                break  # the next step depends on an accuracy not known yet
            new = decide(a, b, g3)
            if new == (a, b):
                break
            a, b = new
        return todo

    g3 = g1
    for step in range(steps):
        if stops(g1, g2):
            break
        g3 = _midpoint(g1, g2, integer, log)
        if g3 not in seen.by_value:
            seen.ensure(*ahead(g1, g2, steps - step))  # g3 and the midpoints after it that are already decided
        new = decide(g1, g2, g3)
        if new == (g1, g2):  # rounding pinned g3 to an end: the range cannot shrink any further
            break
        g1, g2 = new
    return g3, seen.by_value


def most_evaluations(least: float, most: float, integer: bool, log: bool, budget: int = 200_000,
                     resolution: float | None = None) -> int | None:
    """The most values :func:`rule_based_search` or :func:`boundary_search` can evaluate between ``least`` and
    ``most`` (both ends included), over every outcome of the comparisons: the N of an "i/N" progress count.
    None for a real range or when working it out would visit more than ``budget`` intervals."""
    if not integer:
        return None
    memo: dict[tuple[float, float], int] = {}
    stack_budget = [budget]

    def depth(g1: float, g2: float) -> int:
        if g1 == g2 or _narrow(g1, g2, resolution):
            return 0
        key = (g1, g2)
        if key in memo:
            return memo[key]
        stack_budget[0] -= 1
        if stack_budget[0] < 0:
            raise OverflowError
        g3 = _midpoint(g1, g2, integer, log)
        best = 1
        for new in ((g1, g3), (g3, g2)):
            if new != (g1, g2):
                best = max(best, 1 + depth(*new))
        memo[key] = best
        return best

    try:
        if _narrow(float(least), float(most), resolution):
            return 2
        return 2 + depth(float(least), float(most))
    except (OverflowError, RecursionError):
        return None


def boundary_search(least: float, most: float, evaluate_many: EvaluateMany, *, integer: bool = True,
                    log: bool = True, resolution: float | None = None) -> tuple[float | None, dict[float, Evaluation]]:
    """The least private value that still meets the policy, assuming meeting it is monotone (the most private
    end meets it whenever any value does); None when even the most private value fails."""
    seen = _Seen(evaluate_many)
    lo, hi = float(least), float(most)  # lo: the least private candidate; hi: a value that meets the policy
    seen.ensure(lo, hi)
    if not seen[hi].meets_policy:
        return None, seen.by_value
    if seen[lo].meets_policy:
        return lo, seen.by_value
    span = abs(hi - lo)
    for _ in range(10_000 if integer else _REAL_ITERATIONS):
        mid = _midpoint(lo, hi, integer, log)
        if mid in (lo, hi) or (not integer and abs(hi - lo) <= 1e-3 * span) or _narrow(lo, hi, resolution):
            break
        seen.ensure(mid)
        if seen[mid].meets_policy:
            hi = mid
        else:
            lo = mid
    return hi, seen.by_value


def grid_values(low: float, high: float, buckets: int | None, integer: bool, log: bool) -> list[float]:
    """Every integer of [low, high] (or ``buckets`` evenly spaced values; reals: 10 by default)."""
    if integer:
        if buckets is None or buckets >= high - low + 1:
            return [float(v) for v in range(int(low), int(high) + 1)]
        return sorted({float(round(v)) for v in np.linspace(low, high, buckets)})
    n = buckets or 10
    values = np.geomspace(low, high, n) if log and low > 0 else np.linspace(low, high, n)
    # clipped: geomspace's inner values of a one-point range (low == high) come out above it by rounding
    return sorted({float(v) for v in np.clip(values, low, high)})


def _figure(e: Evaluation) -> float:
    """An evaluation's privacy figure for comparisons (larger is more private for every unit): one not measured
    (or not a number) ranks below every measured one."""
    return -math.inf if e.privacy is None or math.isnan(e.privacy) else float(e.privacy)


def _safety(e: Evaluation, safer: str) -> tuple[float, float]:
    """The order "safer": the privacy figure first, then the parameter value in its safer direction."""
    return _figure(e), (e.value if safer == "larger" else -e.value)


def dominates(a: Evaluation, b: Evaluation, safer: str) -> bool:
    """``a`` dominates ``b``: ``a`` is at least as safe (its value is ``b``'s or on its safer side, ``safer`` being
    the tunable's direction, and its privacy figure is at least ``b``'s) and at least as accurate, and strictly
    better in one of the three."""
    sign = 1.0 if safer == "larger" else -1.0
    at_least = (sign * a.value >= sign * b.value and _figure(a) >= _figure(b) and a.accuracy >= b.accuracy)
    better = sign * a.value > sign * b.value or _figure(a) > _figure(b) or a.accuracy > b.accuracy
    return at_least and better


def pick_within_gap(evaluations: list[Evaluation], gap: float, safer: str) -> Evaluation:
    """Grid's pick: among the values whose accuracy is at least (1 - ``gap``) times the best evaluated accuracy,
    the highest privacy figure; the safer value on ties (and among values without a figure).

    No evaluated value dominates it (:func:`dominates`): a value as accurate is eligible too, and among the eligible
    none is safer in both the figure and the parameter."""
    best = max(e.accuracy for e in evaluations)
    eligible = [e for e in evaluations if e.accuracy >= best * (1.0 - gap)]
    return max(eligible, key=lambda e: _safety(e, safer))


def recalls_two_classes(recalls: Sequence[float]) -> bool:
    """Per-class recalls (one per class) of a classifier trained on a release: it recalls held-out rows of at least
    two classes, or there are fewer than two classes; its accuracy then measures utility, not the majority class's
    share (the tuner's :func:`informative` and ``ppdp compare``'s signal rule)."""
    return len(recalls) < 2 or sum(1 for r in recalls if r > 0) > 1


def informative(e: Evaluation) -> bool:
    """The classifier trained on the value's release recalls held-out rows of at least two classes
    (:func:`recalls_two_classes`)."""
    return recalls_two_classes(list(e.per_class.values()))


def undominated(pick: Evaluation, evaluations: list[Evaluation], safer: str) -> Evaluation:
    """The ``non_dominated`` choice rule: ``pick`` unless an informative evaluated value (:func:`informative`)
    dominates it (:func:`dominates`); then, among the informative values that dominate it, the one with the highest
    privacy figure, the safer value on ties.

    No informative evaluated value dominates the result: dominance is transitive, so one dominating the result
    dominates ``pick`` too, and would be at least as high in (figure, safety), that is the result itself. A value
    whose classifier answers with one class never replaces a pick: on a skewed table the majority class's share can
    beat a weak classifier on every informative release, and "more accurate" would then mean "carries nothing"."""
    over = [e for e in evaluations if informative(e) and dominates(e, pick, safer)]
    return max(over, key=lambda e: _safety(e, safer)) if over else pick


def pick_best_utility(evaluations: list[Evaluation], safer: str) -> Evaluation | None:
    """The most accurate value whose release meets the policy; the safer one on ties."""
    ok = [e for e in evaluations if e.meets_policy]
    if not ok:
        return None
    sign = 1.0 if safer == "larger" else -1.0
    return max(ok, key=lambda e: (e.accuracy, sign * e.value))


def lattice_search(max_level: dict[str, int], meets: Callable[[dict[str, int]], bool],
                   loss: Callable[[dict[str, int]], float]) -> tuple[dict[str, int] | None, int, int]:
    """Bottom-up search of a generalization lattice for the node of least ``loss`` that ``meets`` the policy,
    pruning with monotonicity (every generalization of a node that meets the policy meets it too, as ARX's
    Flash and OLA assume): a node above a known passing node is never checked, only scored. Returns (node,
    nodes checked, nodes in the lattice)."""
    names = list(max_level)
    total = int(np.prod([max_level[n] + 1 for n in names])) if names else 1
    passing: list[tuple[int, ...]] = []
    checked = 0
    best: tuple[float, tuple[int, ...]] | None = None
    levels = [range(max_level[n] + 1) for n in names]
    nodes = sorted(np.array(np.meshgrid(*levels, indexing="ij")).reshape(len(names), -1).T.tolist(), key=sum)
    for node in map(tuple, nodes):
        as_dict = dict(zip(names, node))
        if any(all(a >= b for a, b in zip(node, p)) for p in passing):
            ok = True
        else:
            checked += 1
            ok = meets(as_dict)
            if ok:
                passing.append(node)
        if ok:
            score = loss(as_dict)
            if best is None or score < best[0]:
                best = (score, node)
    return (dict(zip(names, best[1])) if best else None), checked, total


# -- the step ----------------------------------------------------------------------------------------------
def tune(
    spec: TuningSpec,
    *,
    sanitizer: Sanitizer,
    domains: dict[str, Domain],
    policy: PrivacyThresholds,
    sizes: dict[str, int],
    evaluate_many: EvaluateMany | None,
    suggest: Callable[[float | None], tuple[dict[str, Any], str]] | None = None,
    search: Callable[[str], LatticeSearch] | None = None,
    plan: Callable[[int | None], None] | None = None,
    inherited: tuple[str, ...] = (),
) -> TuningTrace:
    """Choose the value of the tuned parameter (see the module docstring). ``domains`` are the method's
    domains on the training data; ``suggest(threshold)`` is the method's own rule; ``search(parameter)`` its
    lattice search (:meth:`ppdp.tasks.sanitize.base.Sanitizer.search_parameter`); ``plan(n)`` is told, before the
    first evaluation, the most values the search can evaluate (None when unknown), for progress counts;
    ``inherited``: the method parameters that took the policy's value (:attr:`ReleaseSpec.inherited`), named as
    such in a fixed value's rule."""
    started = time.perf_counter()
    tunable = list(sanitizer.tunable)
    parameter = spec.parameter or (tunable[0] if tunable else None)
    searching = spec.strategy in ("bisect", "grid")  # the strategies that evaluate values, by an objective
    within_gap = searching and spec.objective == "most_privacy_within_gap"
    common: dict[str, Any] = dict(strategy=spec.strategy, parameter=parameter,
                                  objective=spec.objective if searching else None,
                                  accuracy_gap=spec.accuracy_gap if within_gap else None,
                                  choice=spec.choice if within_gap else None, class_sizes=sizes)
    if parameter is None:
        return TuningTrace(**common, chosen=None, rule=f"method {sanitizer.name} has no tunable parameter",
                           seconds=time.perf_counter() - started)
    safer = sanitizer.tunable[parameter]
    common["safer"] = safer
    if spec.strategy != "fixed":
        refuse_uncounted_mechanism(sanitizer)
    if spec.strategy == "fixed":
        return _fixed(sanitizer, parameter, inherited, common, started)
    if spec.strategy == "lattice":
        return _lattice(sanitizer, parameter, search, common, started)
    r = _search_range(spec, domains[parameter], parameter, safer, policy)
    common.update(low=r.low, high=r.high, threshold=r.threshold)
    done = _Done(common, r.integer, started)
    if spec.strategy == "suggested":
        if suggest is None:
            raise SpecError(f"tuning.strategy suggested: method {sanitizer.name} has no suggestion rule")
        suggested, why = suggest(r.low)
        value = float(suggested[parameter])
        clamped = min(max(value, r.low), r.high)
        note = "" if clamped == value else f", clamped to [{r.low:g}, {r.high:g}]"
        return done(clamped, [], 1, f"{why}: {parameter} = {value:g}{note}", suggested=value)
    if evaluate_many is None:
        raise ValueError(f"tuning strategy {spec.strategy} needs an evaluator")
    if spec.strategy == "bisect":
        return _bisect(spec, r, evaluate_many, plan, done)
    if spec.strategy == "grid":
        return _grid(spec, r, evaluate_many, plan, done)
    raise SpecError(f"tuning.strategy {spec.strategy}: method {sanitizer.name} has no lattice parameter")


def _fixed(sanitizer: Sanitizer, parameter: str, inherited: tuple[str, ...], common: dict[str, Any],
           started: float) -> TuningTrace:
    """The trace of a value not tuned: the spec's (or the policy's) value of the parameter."""
    value = getattr(sanitizer, parameter)
    if isinstance(value, dict):  # a node of a lattice of levels (generalization): not a number to trace
        node = ", ".join(f"{c}={v}" for c, v in value.items())
        return TuningTrace(**common, chosen=None, candidates=1,
                           rule=f"method.{parameter} = ({node}) from the spec (not tuned)",
                           seconds=time.perf_counter() - started)
    origin = f"privacy.{parameter} (method.{parameter} is not set)" if parameter in inherited else "the spec"
    return TuningTrace(**common, chosen=value, candidates=1,
                       rule=f"method.{parameter} = {value} from {origin} (not tuned)",
                       seconds=time.perf_counter() - started)


def _lattice(sanitizer: Sanitizer, parameter: str, search: Callable[[str], LatticeSearch] | None,
             common: dict[str, Any], started: float) -> TuningTrace:
    """The trace of the method's own lattice search."""
    if search is None:
        raise SpecError(f"tuning.strategy lattice: method {sanitizer.name} has no lattice parameter")
    lattice = search(parameter)
    node = ", ".join(f"{c}={v}" for c, v in lattice.node.items())
    return TuningTrace(**common, chosen=None, lattice=lattice, candidates=lattice.total,
                       rule=f"lattice search with monotone pruning: the node ({node}) of least {lattice.measure} "
                            f"among those meeting every gate; {lattice.checked} of {lattice.total} nodes checked",
                       seconds=time.perf_counter() - started)


@dataclass(frozen=True)
class _Range:
    """The values a search may take: ``[low, high]``, ``least`` the least private end, ``most`` the other."""

    parameter: str
    safer: str
    low: float
    high: float
    threshold: float | None
    integer: bool
    log: bool

    @property
    def least(self) -> float:
        return self.low if self.safer == "larger" else self.high

    @property
    def most(self) -> float:
        return self.high if self.safer == "larger" else self.low

    @property
    def span(self) -> str:
        return f"[{self.low:g}, {self.high:g}]"


def _search_range(spec: TuningSpec, domain: Domain, parameter: str, safer: str,
                  policy: PrivacyThresholds) -> _Range:
    """The range of values to search: the spec's bounds, else privacy.k for k, else the method's domain."""
    if isinstance(domain, Lattice):
        raise SpecError(f"tuning: parameter {parameter} is a lattice of levels: use tuning.strategy lattice")
    integer = isinstance(domain, IntRange)
    log = integer or (isinstance(domain, FloatRange) and domain.log)
    k = policy.k if "k" in gates_judged(policy) else None  # a k kept, not judged, bounds nothing
    threshold = float(k) if parameter == "k" and k is not None else None
    low = spec.min if spec.min is not None else (threshold if threshold is not None else float(domain.low))
    high_domain = float(domain.high) if domain.high is not None else low
    high = min(spec.max, high_domain) if spec.max is not None else high_domain
    if integer:
        low, high = float(math.ceil(low)), float(math.floor(high))
    if high < low:
        upper = (f"tuning.max is {spec.max:g}" if spec.max is not None and spec.max < high_domain else
                 f"the data allow at most {high_domain:g}")
        lower = "privacy.k" if threshold == low and spec.min is None else "the lower bound"
        raise InputError(f"tuning: no value of {parameter} to search: {upper}, below {lower} ({low:g})")
    return _Range(parameter, safer, low, high, threshold, integer, log)


class _Done:
    """Writes the trace of a chosen value (rounded for an integer parameter), its evaluations sorted by value."""

    def __init__(self, common: dict[str, Any], integer: bool, started: float) -> None:
        self.common, self.integer, self.started = common, integer, started

    def __call__(self, value: float, evaluations: list[Evaluation], candidates: int, rule: str,
                 **extra: Any) -> TuningTrace:
        chosen: float | int = int(round(value)) if self.integer else float(value)
        return TuningTrace(**self.common, **extra, chosen=chosen, candidates=candidates,
                           evaluations=sorted(evaluations, key=lambda e: e.value), rule=rule,
                           seconds=time.perf_counter() - self.started)


def _bisect(spec: TuningSpec, r: _Range, evaluate_many: EvaluateMany, plan: Callable[[int | None], None] | None,
            done: _Done) -> TuningTrace:
    """Bisection: the boundary of the gates (best utility meeting the policy) or Figure 6's rule-based search."""
    parameter, safer, span, integer = r.parameter, r.safer, r.span, r.integer
    count = int(r.high - r.low + 1) if integer else None  # a real range: the values evaluated
    if plan is not None:
        plan(most_evaluations(r.least, r.most, integer, r.log, resolution=spec.resolution))
    if spec.objective == "best_utility_meeting_policy":
        found, seen = boundary_search(r.least, r.most, evaluate_many, integer=integer, log=r.log,
                                      resolution=spec.resolution)
        if found is None:
            raise InputError(f"tuning: no value of {parameter} in {span} gives a release that passes the "
                             "privacy gates (the safest was tried)")
        return done(found, list(seen.values()), count or len(seen),
                    f"bisect over {span}: the least private {parameter} whose release passes every privacy "
                    f"gate (best utility meeting the policy; {safer} is safer)")
    value, seen = rule_based_search(r.least, r.most, spec.accuracy_gap, evaluate_many, integer=integer, log=r.log,
                                    resolution=spec.resolution)
    narrowed = "" if spec.resolution is None else f", to a range within {spec.resolution:g} of its end"
    ended = int(round(value)) if integer else float(value)
    evaluations = list(seen.values())
    rule = (f"rule-based bisection over {span}{narrowed} (Kim, Chen & Gangopadhyay 2012, their Figure 6): the "
            f"most private {parameter} whose accuracy stays within the accuracy gap {spec.accuracy_gap:g} "
            f"(tuning.accuracy_gap, the paper's t_a) of the least private one's ({safer} is safer)")
    if spec.choice == "paper":
        return done(value, evaluations, count or len(seen),
                    f"{rule}; Figure 6's last midpoint as the paper returns it (tuning.choice paper)",
                    figure6_value=ended)
    pick = undominated(seen[value], evaluations, safer)
    if pick.value == value:
        rule += "; no evaluated value dominates it"
    else:
        rule += (f"; Figure 6 ended at {parameter}={value:g}, which {parameter}={pick.value:g} dominates (at "
                 f"least as safe and as accurate, evaluated): chosen instead, the most private such value")
    return done(pick.value, evaluations, count or len(seen), rule, figure6_value=ended)


def _grid(spec: TuningSpec, r: _Range, evaluate_many: EvaluateMany, plan: Callable[[int | None], None] | None,
          done: _Done) -> TuningTrace:
    """A grid of values: the most accurate meeting the policy, or the most private within the accuracy gap."""
    parameter, safer, span = r.parameter, r.safer, r.span
    values = grid_values(r.low, r.high, spec.buckets, r.integer, r.log)
    if plan is not None:
        plan(len(values))
    evaluations = evaluate_many(values)
    pick: Evaluation | None  # the chosen evaluation (None: no value passes the gates)
    if spec.objective == "best_utility_meeting_policy":
        pick = pick_best_utility(evaluations, safer)
        if pick is None:
            raise InputError(f"tuning: none of the {len(values)} values of {parameter} in {span} gives a "
                             "release that passes the privacy gates")
        rule = (f"grid over {len(values)} values in {span}: the most accurate {parameter} whose release passes "
                "every privacy gate")
    else:
        pick = undominated(pick_within_gap(evaluations, spec.accuracy_gap, safer), evaluations, safer)
        rule = (f"grid over {len(values)} values in {span}: highest privacy among values within "
                f"{spec.accuracy_gap * 100:g}% of the best accuracy ({safer} {parameter} is safer on ties); no "
                "evaluated value dominates it")
    return done(pick.value, evaluations, len(values), rule)
