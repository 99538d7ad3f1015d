"""Tuning strategies: the rule-based search (Figure 6), brute force, approximate GCD, none."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.reports import Evaluation
from ppdp.schemas.spec import TuningSpec
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.tune import brute_force_sizes, pick_brute_force, rule_based_search, tune


def fake_evaluator(accuracy_of, log):
    def many(sizes):
        log.extend(sizes)
        return [Evaluation(k=k, privacy=k / 1000, accuracy=accuracy_of(k), per_class={}, runs=1, seconds=0.0)
                for k in sizes]
    return many


@settings(max_examples=200, deadline=None)
@given(t=st.integers(2, 500), span=st.integers(0, 20000), drop=st.floats(0, 1), cliff=st.integers(2, 20000),
       gap=st.floats(0.001, 0.5))
def test_rule_based_terminates_in_logarithmic_evaluations(t, span, drop, cliff, gap):
    smallest = t + span
    log: list[int] = []
    chosen, seen = rule_based_search(t, smallest, gap, fake_evaluator(lambda k: 0.9 - drop * (k >= cliff) * 0.5, log))
    assert t <= chosen <= smallest
    assert len(log) == len(set(log))  # no size evaluated twice
    # geometric bisection: the ratio g2/g1 is square-rooted each step -> O(log log) halvings of log(range)
    assert len(log) <= 2 + 2 * math.ceil(math.log2(max(span, 2))) + 2


def test_rule_based_follows_figure_6():
    log: list[int] = []
    # accuracy collapses above 100: the search must move left after the first midpoint
    chosen, seen = rule_based_search(20, 2000, 0.05, fake_evaluator(lambda k: 0.9 if k <= 100 else 0.5, log))
    assert log[:2] == [20, 2000] and log[2] == 200  # g3 = round(sqrt(20 * 2000))
    assert seen[200].accuracy == 0.5 and log[3] == round(math.sqrt(20 * 200))
    # flat accuracy: privacy matters, the search moves right to the smallest class
    log2: list[int] = []
    chosen2, _ = rule_based_search(20, 2000, 0.05, fake_evaluator(lambda k: 0.9, log2))
    assert chosen2 >= 1900


def test_rule_based_guard_against_pinned_midpoint():
    log: list[int] = []
    chosen, _ = rule_based_search(10, 11, 0.05, fake_evaluator(lambda k: 0.9, log))  # round(sqrt(110)) == 10
    assert chosen in (10, 11) and len(log) <= 3


def test_brute_force_sizes_and_pick():
    assert brute_force_sizes(10, 15, None) == [10, 11, 12, 13, 14, 15]
    assert brute_force_sizes(10, 110, 5) == [10, 35, 60, 85, 110]
    evs = [Evaluation(k=k, privacy=p, accuracy=a, per_class={}, runs=1, seconds=0)
           for k, p, a in [(10, 0.5, 0.95), (20, 0.7, 0.93), (30, 0.9, 0.80), (40, 0.7, 0.94)]]
    assert pick_brute_force(evs, 0.05).k == 40  # highest privacy within 5% of the best; larger k on a tie


def test_strategies_none_and_gcd_and_class_too_small():
    sizes = {"a": 1001, "b": 501}
    assert tune(TuningSpec(strategy="none"), threshold=20, sizes=sizes, fixed_k=33, evaluate_many=None).chosen == 33
    trace = tune(TuningSpec(strategy="approximate_gcd"), threshold=20, sizes=sizes, fixed_k=None, evaluate_many=None)
    assert trace.chosen == 500 and trace.approximate_gcd == 500
    with pytest.raises(InputError, match="fewer than the threshold"):
        tune(TuningSpec(strategy="approximate_gcd"), threshold=600, sizes=sizes, fixed_k=None, evaluate_many=None)
    log: list[int] = []
    trace = tune(TuningSpec(strategy="brute_force", buckets=4), threshold=20, sizes=sizes, fixed_k=None,
                 evaluate_many=fake_evaluator(lambda k: 0.9, log))
    assert trace.candidates == 4 and len(trace.evaluations) == 4 and trace.chosen == 501
