"""Tuning for any parameter of any method: Figure 6 (bisect) in both directions and on reals, grid, the
best-utility objective, suggested (approximate GCD), fixed, bounds, and the lattice search."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.methods import FloatRange, IntRange
from ppdp.schemas.reports import Evaluation
from ppdp.schemas.spec import PrivacyThresholds, TuningSpec
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.sanitize.condensation import Condensation
from ppdp.tasks.sanitize.noise import Noise
from ppdp.tasks.sanitize.svd import Svd
from ppdp.tasks.tune import (
    boundary_search,
    grid_values,
    lattice_search,
    most_private_value,
    pick_within_gap,
    rule_based_search,
    tune,
)


def fake_evaluator(accuracy_of, log, meets=None):
    def many(values):
        log.extend(values)
        return [Evaluation(value=v, privacy=v / 1000, accuracy=accuracy_of(v), per_class={},
                           meets_policy=None if meets is None else meets(v), runs=1, seconds=0.0) for v in values]
    return many


@settings(max_examples=200, deadline=None)
@given(t=st.integers(2, 500), span=st.integers(0, 20000), drop=st.floats(0, 1), cliff=st.integers(2, 20000),
       gap=st.floats(0.001, 0.5))
def test_rule_based_terminates_in_logarithmic_evaluations(t, span, drop, cliff, gap):
    smallest = t + span
    log: list[float] = []
    chosen, seen = rule_based_search(t, smallest, gap, fake_evaluator(lambda k: 0.9 - drop * (k >= cliff) * 0.5, log))
    assert t <= chosen <= smallest
    assert len(log) == len(set(log))  # no value evaluated twice
    assert len(log) <= 2 + 2 * math.ceil(math.log2(max(span, 2))) + 2


def test_rule_based_follows_figure_6():
    log: list[float] = []
    # accuracy collapses above 100: the search must move left after the first midpoint
    chosen, seen = rule_based_search(20, 2000, 0.05, fake_evaluator(lambda k: 0.9 if k <= 100 else 0.5, log))
    assert log[:2] == [20, 2000] and log[2] == 200  # g3 = round(sqrt(20 * 2000))
    assert seen[200].accuracy == 0.5 and log[3] == round(math.sqrt(20 * 200))
    log2: list[float] = []  # flat accuracy: privacy matters, the search moves right to the most private end
    chosen2, _ = rule_based_search(20, 2000, 0.05, fake_evaluator(lambda k: 0.9, log2))
    assert chosen2 >= 1900


def test_rule_based_guard_against_pinned_midpoint():
    log: list[float] = []
    chosen, _ = rule_based_search(10, 11, 0.05, fake_evaluator(lambda k: 0.9, log))  # round(sqrt(110)) == 10
    assert chosen in (10, 11) and len(log) <= 3


def test_rule_based_on_reals_and_in_the_smaller_is_safer_direction():
    log: list[float] = []
    chosen, _ = rule_based_search(0.01, 2.0, 0.05, fake_evaluator(lambda s: 0.9 if s < 0.5 else 0.6, log),
                                  integer=False, log=True)
    assert 0.01 < chosen < 0.5 and len(log) < 45  # Figure 6 is greedy: it stays below the first cliff seen
    log2: list[float] = []  # a parameter whose smaller values are safer: start from the large (least private) end
    chosen2, _ = rule_based_search(100, 2, 0.05, fake_evaluator(lambda v: 0.9 if v >= 30 else 0.5, log2))
    assert sorted(log2[:2]) == [2, 100] and 2 <= chosen2 <= 100


def test_boundary_search_finds_the_least_private_value_meeting_the_policy():
    log: list[float] = []
    value, _ = boundary_search(2, 500, fake_evaluator(lambda k: 1 - k / 1000, log, meets=lambda k: k >= 37))
    assert value == 37
    none, _ = boundary_search(2, 500, fake_evaluator(lambda k: 0.5, [], meets=lambda k: False))
    assert none is None


def test_grid_values_and_pick():
    assert grid_values(10, 15, None, True, True) == [10, 11, 12, 13, 14, 15]
    assert grid_values(10, 110, 5, True, True) == [10, 35, 60, 85, 110]
    reals = grid_values(0.01, 1.0, 3, False, True)
    assert reals == pytest.approx([0.01, 0.1, 1.0])
    evs = [Evaluation(value=k, privacy=p, accuracy=a, per_class={}, runs=1, seconds=0)
           for k, p, a in [(10, 0.5, 0.95), (20, 0.7, 0.93), (30, 0.9, 0.80), (40, 0.7, 0.94)]]
    assert pick_within_gap(evs, 0.05, "larger").value == 40  # highest privacy within 5% of the best; safer on ties
    assert pick_within_gap(evs, 0.05, "smaller").value == 20


def test_strategies_fixed_suggested_grid_and_bounds():
    sizes = {"a": 1001, "b": 501}
    policy = PrivacyThresholds(k=20)
    base = Condensation(k=33)
    domains = {"k": IntRange(low=2, high=501)}
    assert tune(TuningSpec(strategy="fixed"), sanitizer=base, domains=domains, policy=policy, sizes=sizes,
                evaluate_many=None).chosen == 33
    free = Condensation()
    suggest = lambda t: ({"k": 20 * math.gcd(1001 // int(t), 501 // int(t))}, "approximate GCD")  # noqa: E731
    trace = tune(TuningSpec(strategy="suggested"), sanitizer=free, domains=domains, policy=policy, sizes=sizes,
                 evaluate_many=None, suggest=suggest)
    assert trace.chosen == 500 and trace.suggested == 500 and "GCD" in trace.rule
    capped = tune(TuningSpec(strategy="suggested", max=200), sanitizer=free, domains=domains, policy=policy,
                  sizes=sizes, evaluate_many=None, suggest=suggest)
    assert capped.chosen == 200 and "clamped" in capped.rule
    log: list[float] = []
    trace = tune(TuningSpec(strategy="grid", buckets=4), sanitizer=free, domains=domains, policy=policy, sizes=sizes,
                 evaluate_many=fake_evaluator(lambda k: 0.9, log))
    assert trace.candidates == 4 and len(trace.evaluations) == 4 and trace.chosen == 501
    assert min(log) == 20  # the lower bound defaults to privacy.k
    bisect = tune(TuningSpec(strategy="bisect", max=100), sanitizer=free, domains=domains, policy=policy,
                  sizes=sizes, evaluate_many=fake_evaluator(lambda k: 0.9, []))
    assert 20 <= bisect.chosen <= 100 and bisect.high == 100 and "Figure 6" in bisect.rule
    with pytest.raises(InputError, match="the data allow at most 10, below privacy.k"):
        tune(TuningSpec(strategy="bisect"), sanitizer=free, domains={"k": IntRange(low=2, high=10)}, policy=policy,
             sizes=sizes, evaluate_many=fake_evaluator(lambda k: 0.9, []))


def test_best_utility_meeting_policy_on_a_real_parameter():
    noise = Noise()
    domains = {"scale": FloatRange(low=0.01, high=2.0, log=True)}
    spec = TuningSpec(strategy="grid", buckets=8, objective="best_utility_meeting_policy")
    trace = tune(spec, sanitizer=noise, domains=domains, policy=PrivacyThresholds(min_vd=0.1), sizes={},
                 evaluate_many=fake_evaluator(lambda s: 1 - s / 10, [], meets=lambda s: s >= 0.3))
    assert trace.chosen >= 0.3 and all(e.value >= trace.chosen or not e.meets_policy for e in trace.evaluations)
    with pytest.raises(InputError, match="passes the privacy gates"):
        tune(spec, sanitizer=noise, domains=domains, policy=PrivacyThresholds(min_vd=0.1), sizes={},
             evaluate_many=fake_evaluator(lambda s: 0.5, [], meets=lambda s: False))


def test_lattice_search_is_optimal_and_prunes():
    max_level = {"age": 3, "zip": 4, "sex": 1}
    meets = lambda node: node["age"] + node["zip"] >= 4 and node["sex"] >= 0  # noqa: E731 - monotone
    loss = lambda node: 1.0 * node["age"] + 0.5 * node["zip"] + 3.0 * node["sex"]  # noqa: E731
    best, checked, total = lattice_search(max_level, meets, loss)
    brute = min((dict(age=a, zip=z, sex=s) for a in range(4) for z in range(5) for s in range(2)
                 if meets(dict(age=a, zip=z, sex=s))), key=loss)
    assert loss(best) == loss(brute) and total == 4 * 5 * 2 and checked < total


@settings(max_examples=150, deadline=None)
@given(low=st.integers(2, 300), span=st.integers(0, 3000), cliff=st.integers(2, 4000), gap=st.floats(0.001, 0.3),
       resolution=st.one_of(st.none(), st.floats(0.01, 0.9)), larger_safer=st.booleans())
def test_progress_bound_holds_and_resolution_stops_early(low, span, cliff, gap, resolution, larger_safer):
    """The i/N progress count's N (most_evaluations) is never exceeded, whatever the accuracies, and a
    resolution never costs more evaluations than the full search; its result stays inside the searched range."""
    from ppdp.tasks.tune import most_evaluations

    high = low + span
    least, most = (low, high) if larger_safer else (high, low)
    accuracy = (lambda v: 0.9 if v < cliff else 0.5) if larger_safer else (lambda v: 0.9 if v > cliff else 0.5)
    full, narrowed = [], []
    chosen_full, _ = rule_based_search(least, most, gap, fake_evaluator(accuracy, full))
    chosen, _ = rule_based_search(least, most, gap, fake_evaluator(accuracy, narrowed), resolution=resolution)
    assert len(set(full)) <= most_evaluations(least, most, True, True)
    assert len(set(narrowed)) <= most_evaluations(least, most, True, True, resolution=resolution)
    assert len(set(narrowed)) <= len(set(full))
    assert low <= chosen <= high
    if resolution is None:
        assert chosen == chosen_full


def test_resolution_applies_to_bisect_only():
    with pytest.raises(ValueError, match="resolution applies only"):
        TuningSpec(strategy="grid", resolution=0.05)
    assert TuningSpec(strategy="bisect", resolution=0.05).resolution == 0.05


def _one_at_a_time(least, most, gap, accuracy, integer=True, log=True, resolution=None):
    """Figure 6 as written (one evaluation per step): the reference for the batched search."""
    from ppdp.tasks.tune import _midpoint, _narrow

    evaluated = {float(least), float(most)}
    g1, g2 = float(least), float(most)
    if _narrow(g1, g2, resolution):
        return (g2 if abs(accuracy(g1) - accuracy(g2)) <= accuracy(g1) * gap else g1), evaluated
    g3, span = g1, abs(g2 - g1)
    for _ in range(10_000 if integer else 60):
        if g1 == g2 or (not integer and abs(g2 - g1) <= 1e-3 * span) or _narrow(g1, g2, resolution):
            break
        g3 = _midpoint(g1, g2, integer, log)
        evaluated.add(g3)
        new = (g1, g3) if abs(accuracy(g1) - accuracy(g2)) > accuracy(g1) * gap else (g3, g2)
        if new == (g1, g2):
            break
        g1, g2 = new
    return g3, evaluated


@settings(max_examples=200, deadline=None)
@given(low=st.integers(1, 500), span=st.integers(0, 5000), seed=st.integers(0, 2**32 - 1), gap=st.floats(0.001, 0.3),
       resolution=st.one_of(st.none(), st.floats(0.01, 0.5)), larger_safer=st.booleans(), log=st.booleans())
def test_batched_rule_based_search_evaluates_and_chooses_as_one_at_a_time(low, span, seed, gap, resolution,
                                                                          larger_safer, log):
    """The batched search (midpoints already decided are evaluated together) evaluates exactly the values the
    one-at-a-time Figure 6 evaluates and chooses the same one, for arbitrary accuracies; after the two ends, a
    round has at most two values."""
    import numpy as np

    rng = np.random.default_rng(seed)
    table: dict[float, float] = {}

    def accuracy(v):
        return table.setdefault(float(v), float(rng.choice([0.5, 0.7, 0.8, 0.81, 0.9])))

    least, most = (low, low + span) if larger_safer else (low + span, low)
    batches = []

    def many(values):
        batches.append(list(values))
        return [Evaluation(value=v, privacy=None, accuracy=accuracy(v), per_class={}, meets_policy=None, runs=1,
                           seconds=0.0) for v in values]

    chosen, seen = rule_based_search(least, most, gap, many, log=log, resolution=resolution)
    expected, evaluated = _one_at_a_time(least, most, gap, accuracy, log=log, resolution=resolution)
    assert chosen == expected and set(seen) == evaluated
    assert sum(len(b) for b in batches) == len(evaluated)  # nothing evaluated twice, nothing speculative
    assert all(len(b) <= 2 for b in batches[1:])


@settings(max_examples=150, deadline=None)
@given(strategy=st.sampled_from(["bisect", "grid"]),
       objective=st.sampled_from(["most_privacy_within_gap", "best_utility_meeting_policy"]),
       method=st.sampled_from(["condensation", "svd", "noise"]), low=st.integers(1, 50), span=st.integers(0, 400),
       bound=st.sampled_from([None, "min", "max"]), cliff=st.floats(0, 1), buckets=st.sampled_from([None, 3, 7]))
def test_the_most_private_value_is_the_safest_value_every_search_evaluates(strategy, objective, method, low, span,
                                                                            bound, cliff, buckets):
    # compare's cheap refusal (issue 33) probes this value first: every search must evaluate it, and evaluate
    # nothing safer, or a refusal there would not stand for the tuning it skips
    sanitizer, domain = {
        "condensation": (Condensation(), IntRange(low=low, high=low + span)),
        "svd": (Svd(), IntRange(low=low, high=low + span)),
        "noise": (Noise(), FloatRange(low=low / 100, high=(low + span + 1) / 100, log=True)),
    }[method]
    parameter = next(iter(sanitizer.tunable))
    lo, hi = float(domain.low), float(domain.high)
    edge = lo + (hi - lo) * cliff
    extra = {} if bound is None else {bound: edge}
    spec = TuningSpec(strategy=strategy, objective=objective, buckets=buckets if strategy == "grid" else None,
                      **extra)
    log: list[float] = []
    larger = sanitizer.tunable[parameter] == "larger"
    trace = None
    try:
        trace = tune(spec, sanitizer=sanitizer, domains={parameter: domain}, policy=PrivacyThresholds(), sizes={},
                     evaluate_many=fake_evaluator(lambda v: 1 / (1 + v), log,
                                                  meets=lambda v: (v >= edge) if larger else (v <= edge)))
    except InputError:
        pass  # an empty range, or no value meets the policy: the value is still the safest one evaluated
    found = most_private_value(spec, sanitizer, {parameter: domain}, PrivacyThresholds()) if log else None
    if not log:  # the range was empty: most_private_value refuses it in the tuner's words
        with pytest.raises(InputError, match="no value of"):
            most_private_value(spec, sanitizer, {parameter: domain}, PrivacyThresholds())
        return
    assert found is not None and found[0] == parameter
    assert found[1] == (max(log) if larger else min(log))
    assert trace is None or all((e.value <= found[1]) if larger else (e.value >= found[1])
                                for e in trace.evaluations)


def test_a_strategy_that_searches_no_range_has_no_most_private_value():
    domains = {"k": IntRange(low=2, high=501)}
    for strategy in ("fixed", "suggested"):
        assert most_private_value(TuningSpec(strategy=strategy), Condensation(k=5), domains,
                                  PrivacyThresholds()) is None
    assert most_private_value(TuningSpec(strategy="bisect"), Condensation(), domains,
                              PrivacyThresholds(k=20)) == ("k", 501)
    assert most_private_value(TuningSpec(strategy="bisect", max=100), Condensation(), domains,
                              PrivacyThresholds(k=20)) == ("k", 100)


@settings(max_examples=200, deadline=None)
@given(low=st.floats(1e-6, 1e6), factor=st.sampled_from([1.0, 1.0 + 1e-12, 1.5, 1000.0]),
       buckets=st.one_of(st.none(), st.integers(2, 20)), log=st.booleans())
def test_grid_values_stay_within_the_range(low, factor, buckets, log):
    """A grid never evaluates a value outside [low, high] (geomspace's inner values of a one-point range came out
    above it by rounding: 0.020000000000000004 for low = high = 0.02), and it holds both ends."""
    from ppdp.tasks.tune import grid_values

    high = low * factor
    values = grid_values(low, high, buckets, integer=False, log=log)
    assert min(values) == low and max(values) == high
    assert all(low <= v <= high for v in values)
