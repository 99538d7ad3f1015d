"""Tune a sanitizer's integer privacy parameter (the group size k) as a release step.

Strategies (paper 000, sections "Class-wise condensation method" and "Rule-based approach"):

* ``none``: use the spec's ``method.params.k``.
* ``approximate_gcd``: g* = t * GCD(floor(|C1|/t), ..., floor(|Cm|/t)) over the training class sizes.
* ``rule_based``: the paper's Figure 6. g1 = t, g2 = the smallest class; evaluate both; loop while g1 < g2:
  g3 = round(sqrt(g1 * g2)), evaluate g3; if |acc(g1) - acc(g2)| > acc(g1) * t_a then g2 = g3 (search the
  left, utility matters) else g1 = g3 (search the right, privacy matters); return the last g3. Guard: integer
  rounding can pin g3 to g1 (e.g. g1 = 10, g2 = 11), which would loop forever; the loop stops when an
  iteration leaves (g1, g2) unchanged.
* ``brute_force``: every size in [t, smallest class] (or ``buckets`` equal-width sizes of that range); pick
  the highest measured privacy among the sizes whose accuracy is within t_a (relative) of the best accuracy,
  the larger size on ties.

An evaluation sanitizes the training rows at one size and measures privacy (confidence-interval privacy of
paper 000) and utility (accuracy on the held-out original rows). Evaluations are requested in batches through
an ``evaluate_many`` callable so that the flow can run them as parallel Prefect tasks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from ppdp.schemas.reports import Evaluation, Roles, TuningTrace
from ppdp.schemas.spec import TuningSpec
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.privacy import interval_privacy
from ppdp.tasks.sanitize import Sanitizer, approximate_gcd
from ppdp.tasks.utility import accuracy, feature_encoder

EvaluateMany = Callable[[list[int]], list[Evaluation]]


def class_sizes(frame: pd.DataFrame, roles: Roles) -> dict[str, int]:
    cls = roles.class_column
    if cls is None:
        return {"(all)": len(frame)}
    counts = frame[cls].astype(str).value_counts()
    return {str(k): int(v) for k, v in sorted(counts.items())}


def evaluate_size(
    sanitizer: Sanitizer,
    k: int,
    train: pd.DataFrame,
    test: pd.DataFrame,
    roles: Roles,
    classifier: str,
    repeats: int = 1,
    standardize: bool = True,
) -> Evaluation:
    """Sanitize ``train`` with group size ``k`` (``repeats`` seeds), measure privacy and held-out accuracy
    (classifier features standardized unless ``standardize`` is False)."""
    started = time.perf_counter()
    encoder = feature_encoder(train, roles, standardize)
    privacy, accs, per = [], [], []
    for r in range(repeats):
        run = sanitizer.with_params(**{sanitizer.privacy_parameter: int(k), "seed": sanitizer.seed + r})
        release = run.sanitize(train, roles)
        p = interval_privacy(train, release, roles, seed=sanitizer.seed + r)
        if p is not None:
            privacy.append(p)
        acc, per_class, _ = accuracy(release.frame, test, roles, classifier, encoder, sanitizer.seed + r)
        accs.append(acc)
        per.append(per_class)
    labels = sorted({c for p in per for c in p})
    return Evaluation(
        k=int(k),
        privacy=float(np.mean(privacy)) if privacy else None,
        accuracy=float(np.mean(accs)),
        per_class={c: float(np.mean([p.get(c, 0.0) for p in per])) for c in labels},
        runs=repeats,
        seconds=time.perf_counter() - started,
    )


def sequential(evaluate_one: Callable[[int], Evaluation]) -> EvaluateMany:
    """An ``evaluate_many`` that runs sizes one after another (outside Prefect)."""
    return lambda sizes: [evaluate_one(k) for k in sizes]


def rule_based_search(t: int, smallest: int, gap: float, evaluate_many: EvaluateMany
                      ) -> tuple[int, dict[int, Evaluation]]:
    """The paper's Figure 6; returns (chosen size, every evaluation by size)."""
    seen: dict[int, Evaluation] = {}

    def ensure(*sizes: int) -> None:
        todo = sorted({s for s in sizes if s not in seen})
        if todo:
            for ev in evaluate_many(todo):
                seen[ev.k] = ev

    g1, g2 = t, smallest
    ensure(g1, g2)
    g3 = g1
    while g1 < g2:
        g3 = int(round(math.sqrt(g1 * g2)))
        ensure(g3)
        if abs(seen[g1].accuracy - seen[g2].accuracy) > seen[g1].accuracy * gap:
            new = (g1, g3)
        else:
            new = (g3, g2)
        if new == (g1, g2):  # rounding pinned g3 to an end: the range cannot shrink any further
            break
        g1, g2 = new
    return g3, seen


def brute_force_sizes(t: int, smallest: int, buckets: int | None) -> list[int]:
    if buckets is None or buckets >= smallest - t + 1:
        return list(range(t, smallest + 1))
    return sorted({int(round(v)) for v in np.linspace(t, smallest, buckets)})


def pick_brute_force(evaluations: list[Evaluation], gap: float) -> Evaluation:
    """Highest privacy among sizes whose accuracy is within ``gap`` (relative) of the best; larger k on ties."""
    best = max(e.accuracy for e in evaluations)
    eligible = [e for e in evaluations if e.accuracy >= best * (1.0 - gap)]
    return max(eligible, key=lambda e: (e.privacy if e.privacy is not None else -math.inf, e.k))


def tune(
    spec: TuningSpec,
    *,
    threshold: int,
    sizes: dict[str, int],
    fixed_k: int | None,
    evaluate_many: EvaluateMany | None,
) -> TuningTrace:
    """Choose the group size. ``sizes`` are the training class sizes; ``evaluate_many`` is needed by the
    rule-based and brute-force strategies."""
    started = time.perf_counter()
    smallest = min(sizes.values()) if sizes else 0
    common = dict(strategy=spec.strategy, threshold=threshold, accuracy_gap=spec.accuracy_gap, class_sizes=sizes)
    if spec.strategy == "none":
        assert fixed_k is not None
        return TuningTrace(**common, chosen=int(fixed_k), candidates=1, rule="method.params.k from the spec",
                           seconds=time.perf_counter() - started)
    if smallest < threshold:
        raise InputError(
            f"tuning: the smallest class has {smallest} training records, fewer than the threshold t={threshold}"
        )
    gcd = approximate_gcd(list(sizes.values()), threshold)
    common["approximate_gcd"] = gcd
    if spec.strategy == "approximate_gcd":
        return TuningTrace(**common, chosen=gcd, candidates=1,
                           rule=f"approximate GCD t*GCD(floor(|Ci|/t)) with t={threshold}",
                           seconds=time.perf_counter() - started)
    if evaluate_many is None:
        raise ValueError(f"tuning strategy {spec.strategy} needs an evaluator")
    if spec.strategy == "rule_based":
        chosen, seen = rule_based_search(threshold, smallest, spec.accuracy_gap, evaluate_many)
        return TuningTrace(**common, chosen=chosen, candidates=smallest - threshold + 1,
                           evaluations=sorted(seen.values(), key=lambda e: e.k),
                           rule=f"rule-based search (Figure 6) over [{threshold}, {smallest}], t_a={spec.accuracy_gap}",
                           seconds=time.perf_counter() - started)
    candidates = brute_force_sizes(threshold, smallest, spec.buckets)
    evaluations = sorted(evaluate_many(candidates), key=lambda e: e.k)
    pick = pick_brute_force(evaluations, spec.accuracy_gap)
    return TuningTrace(**common, chosen=pick.k, candidates=len(candidates), evaluations=evaluations,
                       rule=f"brute force over {len(candidates)} sizes in [{threshold}, {smallest}]: highest privacy "
                            f"among sizes within {spec.accuracy_gap:.0%} of the best accuracy",
                       seconds=time.perf_counter() - started)
