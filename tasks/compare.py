"""Which method for my table? Run every applicable method on the spec's data, judge each like a release, recommend one.

``ppdp compare SPEC`` (the flow: :mod:`ppdp.flows.compare`) reads, tags and protects the spec's input once, then
runs one task per registered method (:func:`compare_method`, a plain function: no Prefect here). A method's row is
made exactly as ``ppdp run`` would make its release, without publishing it:

* **its spec** (:func:`method_spec`): the spec's own method keeps its section and its tuning; every other method
  runs with its default parameters (the spec's ``hierarchies``, ``bins`` and ``categories``, which describe the
  data rather than tune a method, are carried to a method that takes them) and its default tuning strategy
  (:func:`default_tuning`), with the spec's tuning objective, accuracy gap, repeats and bisect resolution;
* **its policy** (:func:`method_policy`, :data:`POLICY_RULE`): the spec's policy as given, every gate kept; the
  gates that do not apply to the method's privacy unit are listed in ``privacy.not_applicable`` (kept, not judged:
  ``privacy.k`` still sets the rare-value rule) and said in one line (:func:`not_applicable_line`). When no gate
  of the spec applies, the safety floor's own limits are added as gates (``max_average_risk`` for classes and
  groups, ``max_linkage_risk`` for records, ``max_disclosure_gain`` for attribute protection), plus ``k`` = the
  rare-value rule's k for a method hiding identities by classes or groups: they add nothing to the floor.
  ``privacy.accept_below_floor`` is not carried (compare never recommends a release below the floor, and the tuner
  aims at the floor), nor ``privacy.budget`` to a method that is not differentially private;
* a cheap refusal first (:func:`safest_attempt`): a method whose release at the most private value its tuning could
  choose already fails a privacy gate or the floor is refused with that release's figures, untuned;
* rare values, hold-out, tuning (its evaluations run one after another inside the method's task), sanitizing,
  promoting columns published beside the quasi-identifiers (and running again), the privacy gates, the attacker's
  view and the safety floor, utility (the method's release shape measures both: :mod:`ppdp.tasks.shapes`): the
  steps of the release plan (:mod:`ppdp.tasks.plan`) that the release flow runs.

A differentially private method (unit ``differential_privacy``) is never run (:func:`not_run_reason`): every run of
its mechanism on the input's rows spends privacy budget, and a run here would spend it on the same rows uncounted
by the dataset's budget (``ppdp run`` charges the one run it publishes). Its row says so in words and carries no
figure. A method that cannot apply (its own check raises :class:`SpecError` or :class:`InputError`: no numeric
attribute, no sensitive column, a parameter with no default that is not tuned) is listed as not applicable with that
one line; a method whose gates, floor or utility gates fail, or for which the tuner finds no value that passes, is
listed as refused with its one line. The series (earlier releases under the publish root) is not judged: nothing is
published, and the ledger is never read.

The recommendation (:func:`rank`, :data:`RECOMMENDATION_RULE`): among the methods whose policy, safety floor and
utility gates all hold (what ``ppdp run`` publishes) and on whose release the classifier recalls rows of at least two
classes (a release it can only answer with one class carries nothing for it, however high its accuracy ratio on an
unbalanced table), the highest accuracy ratio (rounded to 2 decimals, as shown),
then the lowest re-identification risk (:func:`risk_of`: average risk for classes and groups, linkage risk for
record-by-record methods; rounded to 3 decimals), then the name. Time is shown but never decides: it varies from
run to run, and the same spec, data and seed must give the same recommendation.

A figure fixed by construction (:func:`fixed_by_construction`: a record release's linkage risk when no published
row stands for an input record, 0 whatever the data; a DP mechanism's epsilon and delta, its parameters) is not a
measure and never decides: it is left out of the row (the row says why in ``by_construction``), so it neither
ranks nor is plotted, and a method whose every judged gate rests on such a figure is not recommended (its policy
does not judge it).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import yaml
from pydantic import ValidationError

from ppdp.schemas.compare import CompareResult, CompareRow
from ppdp.schemas.methods import UNITS
from ppdp.schemas.privacy import FLOOR_GATES, GATE_SETTINGS, GATE_UNITS, floor_rules, gates_judged, gates_set
from ppdp.schemas.reports import Roles, TuningTrace
from ppdp.schemas.spec import ReleaseSpec
from ppdp.schemas.units import identity_by, unit_of
from ppdp.tasks import keys, series, tune
from ppdp.tasks import plan as release_plan
from ppdp.tasks.core.errors import InputError, PpdpError, SpecError
from ppdp.tasks.privacy.attacker import describe_floor_claim
from ppdp.tasks.privacy.measure import describe_failed
from ppdp.tasks.report import table_cell, write_atomic
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.registry import REGISTRY, method_class
from ppdp.tasks.shapes import PreparedRows
from ppdp.tasks.spec import format_validation_error, load_spec
from ppdp.tasks.steps import Runner, Step

_RANKED_BY = "the highest accuracy ratio (to 2 decimals)"
RECOMMENDATION_RULE = (
    "among the methods whose privacy policy, safety floor and utility gates all hold (what ppdp run would publish), "
    "whose policy judges at least one figure measured on the release, and on whose release the classifier tells at "
    f"least two classes apart: {_RANKED_BY}, then the lowest re-identification risk "
    "(average risk for classes and groups, linkage risk for record-by-record methods; to 3 decimals), then the name; "
    "a figure fixed by construction (linkage risk where no published row stands for an input record, a DP "
    "mechanism's epsilon) never decides; a method below the safety floor is never recommended; time is shown but "
    "does not decide (it varies between runs)")


def ranked_by_text(rank_by: str | None) -> str:
    """What ranks the methods, in words (``rank_by``: the spec's ``utility.ranking``; None: the accuracy ratio, or
    without a classifier 1 - the 2-way marginal distance)."""
    head, _, tail = (rank_by or "").partition(":")
    if head == "tstr":
        return (f"the highest accuracy of {tail} trained on the release and tested on held-out real rows (TSTR, "
                "utility.rank_by; to 2 decimals)")
    if head == "two_way":
        return "the lowest 2-way marginal distance to the input (utility.rank_by two_way; to 2 decimals)"
    if head == "regression":
        return (f"the highest R^2 of the regression of {tail} trained on the release, on held-out real rows "
                "(utility.rank_by; to 2 decimals)")
    if head == "accuracy_ratio":
        return "the highest accuracy ratio (utility.rank_by accuracy_ratio; to 2 decimals)"
    return _RANKED_BY


def recommendation_rule(rank_by: str | None = None) -> str:
    """:data:`RECOMMENDATION_RULE` with the utility ``rank_by`` names (:func:`ranked_by_text`)."""
    return RECOMMENDATION_RULE.replace(_RANKED_BY, ranked_by_text(rank_by), 1)


POLICY_RULE = (
    "each method is held to the spec's policy as given: the gates that apply to its privacy unit are judged, the "
    "others are kept in its spec as privacy.not_applicable (not judged; privacy.k still sets the rare-value rule); "
    "when no gate of the spec applies, the safety floor's limits are added as gates (max_average_risk for classes "
    "and groups, max_linkage_risk for records, max_disclosure_gain for attribute protection) with, for classes and "
    "groups hiding identities, k = the rare-value rule's k (privacy.k, else 2); privacy.accept_below_floor is not "
    "carried; differentially private methods are not run")

DATA_PARAMETERS = ("hierarchies", "bins", "categories")
"""Method parameters that describe the data (generalization hierarchies, public bins and categories), not a
method's tuning: carried from the spec's method section to any method that takes them."""

_NON_GATES = GATE_SETTINGS
"""Privacy settings that are not gates (they qualify one): kept in every method's policy."""


# -- one method's spec -------------------------------------------------------------------------------------------
def default_strategy(cls) -> str:
    """A method's default tuning strategy: ``fixed`` without a tunable parameter, ``lattice`` when its first
    tunable parameter is a lattice of levels (generalization), ``bisect`` (paper 000's search) otherwise."""
    tunable = list(cls.tunable)
    if not tunable:
        return "fixed"
    return "lattice" if tunable[0] in cls.lattice_parameters else "bisect"


def default_tuning(spec: ReleaseSpec, cls) -> dict[str, Any]:
    """The tuning section a method other than the spec's own runs with: its default strategy, the spec's objective,
    accuracy gap and repeats (and bisect resolution and the paper's choice rule when both bisect); no bounds (a bound
    is the spec's method's)."""
    strategy = default_strategy(cls)
    out: dict[str, Any] = {"strategy": strategy, "objective": spec.tuning.objective,
                           "accuracy_gap": spec.tuning.accuracy_gap, "repeats": spec.tuning.repeats}
    if strategy == "bisect" and spec.tuning.strategy == "bisect" and spec.tuning.resolution is not None:
        out["resolution"] = spec.tuning.resolution
    if strategy == "bisect" and spec.tuning.choice == "paper":  # the spec asks for Figure 6 as written
        out["choice"] = "paper"
    return out


def method_policy(spec: ReleaseSpec, cls) -> tuple[dict[str, Any], str]:
    """The ``privacy`` section ``cls`` is judged by (see :data:`POLICY_RULE`) and where its judged gates come from
    (``spec`` or ``floor``): the spec's policy as given, the gates that do not apply to ``cls``'s unit listed in
    ``not_applicable`` (the spec's own list is made again for this unit)."""
    unit = cls.unit
    policy = spec.privacy
    out: dict[str, Any] = {k: v for k, v in policy.model_dump(mode="json").items() if k in _NON_GATES}
    given = {g: getattr(policy, g) for g in gates_set(policy)}
    out.update(given)
    judged = [g for g in given if unit in GATE_UNITS[g]]
    source = "spec"
    if not judged:
        source = "floor"
        hidden = identity_by(cls.protects, unit)  # the floor's kinds, as check_floor takes them
        kinds = ([hidden] if hidden != "none" else []) + (["attribute"] if cls.protects == "attribute" else [])
        added: dict[str, Any] = {}
        for rule in (r for kind in kinds for r in floor_rules(kind)):
            gate = FLOOR_GATES.get(rule.key, "")
            if rule.comparison == "<=" and rule.limit > 0 and unit in GATE_UNITS.get(gate, ()):
                added[gate] = rule.limit
        if cls.protects == "identity" and unit_of(unit).counts_classes:
            added["k"] = spec.rare_k
        out.update(added)
    not_applicable = [g for g in GATE_UNITS if g in out and out[g] is not None and unit not in GATE_UNITS[g]]
    if not_applicable:
        out["not_applicable"] = not_applicable
    if policy.budget is not None and unit_of(unit).spends_budget:
        out["budget"] = policy.budget.model_dump(mode="json")
    return out, source


def not_applicable_line(method: str, unit: str, gates: Sequence[str]) -> str | None:
    """One line: the policy's gates that do not apply to ``method``'s unit, and why (None when every gate
    applies)."""
    if not gates:
        return None
    units = sorted({u for g in gates for u in GATE_UNITS[g]}, key=list(UNITS).index)
    verb = "applies" if len(gates) == 1 else "apply"
    return (f"privacy.{', privacy.'.join(gates)} {verb} to unit{'s' if len(units) > 1 else ''} {', '.join(units)}, "
            f"not to {method}'s unit {unit} ({unit_of(unit).scope}): kept as given, listed in "
            "privacy.not_applicable, not judged" + ("; privacy.k still sets the rare-value rule" if "k" in gates
                                                    else ""))


def not_run_reason(cls) -> str | None:
    """Why compare does not run ``cls`` (a differentially private method), in one line; None when it runs it."""
    if not unit_of(cls.unit).spends_budget:
        return None
    return (f"not run: {cls.name} is differentially private, and every run of its mechanism on the input's rows "
            "spends privacy budget; run here, it would spend budget on the same rows that the dataset's budget "
            "never counts (ppdp run charges the one run it publishes to the series ledger), so compare measures "
            "nothing of it")


def _validate(raw: dict[str, Any]) -> ReleaseSpec:
    """``raw`` as a release spec, validated as ``ppdp run`` validates a spec file (strict, through JSON)."""
    try:
        return ReleaseSpec.model_validate_json(json.dumps(raw, allow_nan=False), strict=True,
                                               context={"release_spec": True})
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, model=ReleaseSpec, one_line=True)) from None


def method_spec(spec: ReleaseSpec, name: str) -> tuple[ReleaseSpec, str]:
    """The spec ``name`` runs with in the comparison (see the module docstring) and its policy source; raises
    :class:`SpecError` (one line) when no valid spec exists for it (the method then cannot apply)."""
    cls = method_class(name)
    reason = not_run_reason(cls)
    if reason is not None:  # plan() never asks: such a method gets its not-run row
        raise SpecError(reason)
    raw = spec.model_dump(mode="json")
    raw["privacy"], source = method_policy(spec, cls)
    if name == spec.method.name:
        return _validate(raw), source
    method: dict[str, Any] = {"name": name}
    fields = cls.Params.model_fields
    own = spec.method.model_dump(mode="json")
    for key in DATA_PARAMETERS:
        if key in fields and own.get(key):
            try:  # carried only where the method reads it the same way
                cls.Params.model_validate_json(json.dumps({"name": name, key: own[key]}), strict=True)
            except ValidationError:
                continue
            method[key] = own[key]
    raw["tuning"] = default_tuning(spec, cls)
    raw["method"] = method
    return _validate(raw), source


def fixed_spec(spec: ReleaseSpec, parameter: str | None, value: Any, promoted: Roles | None = None
               ) -> dict[str, Any]:
    """``spec`` with the tuned ``parameter`` fixed at ``value`` and ``tuning.strategy: fixed``, as a plain mapping
    that validates to the same spec (defaults left out where that changes nothing).

    ``promoted``: the roles after a column published beside the quasi-identifiers was made one. A value naming
    columns (a lattice node: one level per quasi-identifier) names the promoted column too, which the release flow's
    first attempt does not know as a quasi-identifier yet: such a column is declared a quasi-identifier in the
    written spec. A number (k) needs nothing: ``ppdp run`` promotes the column again as compare did."""
    raw = spec.model_dump(mode="json")
    if parameter is not None and value is not None:
        raw["method"][parameter] = value
    if isinstance(value, dict) and promoted is not None:
        for name in value:
            tag = next((t for t in promoted.columns if t.name == name), None)
            if tag is not None and tag.promoted and name not in raw["columns"]:
                raw["columns"][name] = {"role": "quasi_identifier", "kind": tag.kind.value}
    raw["tuning"] = {"strategy": "fixed"} if spec.tuning.parameter is None else {
        "strategy": "fixed", "parameter": spec.tuning.parameter}
    full = _validate(raw)
    lean = full.model_dump(mode="json", exclude_defaults=True)
    # the union's tag has a default (left out above): keep it, first
    lean["method"] = {"name": full.method.name, **{k: v for k, v in lean.get("method", {}).items() if k != "name"}}
    lean["tuning"] = {"strategy": "fixed", **lean.get("tuning", {})}  # the default, written for the reader
    try:
        if _validate(lean).model_dump(mode="json") == full.model_dump(mode="json"):
            return lean
    except SpecError:
        pass
    return full.model_dump(mode="json")


# -- one method's row --------------------------------------------------------------------------------------------
class _MethodFailure(Exception):
    """The method's own check refused the data or its parameters (raised inside a tuner callback)."""

    def __init__(self, error: PpdpError) -> None:
        super().__init__(str(error))
        self.error = error


def _own(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with the method's refusals marked as the method's (so that the tuner's own refusals stay apart)."""

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except PpdpError as exc:
            raise _MethodFailure(exc) from None

    return call


class _OwnRunner(Runner):
    """The plan's steps one after another, the method's refusals marked as the method's (:func:`_own`)."""

    def call(self, step: Step[Any], *args: Any, **kwargs: Any) -> Any:
        return _own(step.fn)(*args, **kwargs)


OWN = _OwnRunner()


def tune_plain(spec: ReleaseSpec, roles: Roles, prepared: PreparedRows) -> tuple[Sanitizer, TuningTrace]:
    """The plan's tuning step (:func:`ppdp.tasks.plan.tune_method`) without Prefect: the evaluations run one after
    another (this runs inside one task per method, the methods side by side); the parameters' domains are read only
    for a strategy that evaluates values. Returns (the sanitizer with the chosen value, the trace)."""
    return release_plan.tune_method(spec, roles, prepared, OWN, domains_first=False)


def _tuned_text(parameter: str | None, value: Any) -> str | None:
    if parameter is None or value is None:
        return None
    if isinstance(value, dict):
        return f"{parameter} " + ", ".join(f"{c}={v}" for c, v in value.items())
    if isinstance(value, float) and not value.is_integer():
        return f"{parameter}={value:.4g}"
    return f"{parameter}={int(value) if isinstance(value, float) else value}"


def _policy_lines(policy) -> list[str]:
    """The judged gates of ``policy``, each as ``key comparison threshold``."""
    out = []
    for g in gates_judged(policy):
        value = getattr(policy, g)
        comparison = ">=" if g in ("k", "l", "min_dcr", "min_vd") else "<="
        out.append(f"{g} {comparison} {value:g}")
    return out


def existing_order_key(spec: ReleaseSpec) -> bytes | None:
    """The key of the dataset's published row order (:func:`ppdp.tasks.series.order_key`) when the publisher's series
    key already exists (``$PPDP_SERIES_KEY`` or ``<config>/series-key``), else None: compare never creates it.

    The row order carries nothing, but a classifier that breaks ties by row order (1-NN on generalized rows, where
    many rows are equal) scores a release differently in another order: with the key, the utility compare measures
    is the one ``ppdp run`` measures."""

    if not os.environ.get(series.ENV_SERIES_KEY) and not (keys.config_dir() / series.KEY_NAME).is_file():
        return None
    return series.order_key(series.series_key(spec.publish.root), spec.dataset)


def compare_method(spec: ReleaseSpec, protected: pd.DataFrame, roles: Roles, policy_source: str = "spec",
                   order_key: bytes | None = None) -> CompareRow:
    """One method's row (``spec``: the method's spec from :func:`method_spec`; ``protected``: the input as read,
    tagged and with identifiers protected; ``roles``: the tagging; ``order_key``: :func:`existing_order_key`). Never
    raises: a refusal or a failure is the row's status and reason (an unexpected error by its type only: its message
    may quote data)."""
    started = time.perf_counter()
    cls = method_class(spec.method.name)
    not_run = not_run_reason(cls)
    if not_run is not None:  # before anything reads the rows: a DP mechanism never runs here
        return not_run_row(cls.name, not_run)
    listed = list(spec.privacy.not_applicable)
    row: dict[str, Any] = dict(method=cls.name, unit=cls.unit, protects=cls.protects,
                               policy=_policy_lines(spec.privacy), policy_source=policy_source,
                               not_applicable=listed, not_applicable_reason=not_applicable_line(cls.name, cls.unit,
                                                                                                listed),
                               reproducible=bool(getattr(cls, "reproducible", True)), strategy=spec.tuning.strategy)

    def done(status: str, reason: str | None = None, **extra) -> CompareRow:
        return CompareRow(**row, **extra, status=status, reason=reason, seconds=time.perf_counter() - started)

    try:  # the plan's steps a comparison needs: prepare -> tune -> sanitize -> measure
        prepared = release_plan.prepare_rows(spec, cls, protected, roles, runner=OWN)
        early = safest_attempt(spec, prepared, roles, order_key)  # a refusal decided before tuning
        ran = early.ran if early is not None else release_plan.sanitize_measured(spec, prepared, roles, OWN,
                                                                                  order_key=order_key,
                                                                                  domains_first=False)
        trace, release, report, promoted, roles = ran.trace, ran.release, ran.privacy, ran.promoted, ran.roles
        util = ran.utility.result()
    except _MethodFailure as failure:
        return done("not_applicable", _one_line(failure.error))
    except InputError as exc:  # the tuner's own: no value of the parameter passes the policy (or can be searched)
        return done("refused", _one_line(exc))
    except PpdpError as exc:  # the tuner's own spec errors (a strategy the method has no means for)
        return done("not_applicable", _one_line(exc))
    except Exception as exc:  # noqa: BLE001 - by type only: the message may quote data
        return done("error", f"internal error ({type(exc).__name__})")

    value = dict(trace.lattice.node) if trace.lattice is not None else trace.chosen
    floor = report.floor
    extra: dict[str, Any] = dict(
        parameter=trace.parameter, tuned=_tuned_text(trace.parameter, value),
        tuning_rule=early.rule if early is not None else trace.rule,
        evaluations=trace.lattice.checked if trace.lattice is not None else len(trace.evaluations),
        policy_holds=report.passed and bool(report.claims), floor_holds=floor is not None and floor.holds,
        utility_holds=util.passed, promoted=promoted, records=report.records,
        accuracy=util.accuracy, accuracy_original=util.accuracy_original, accuracy_ratio=util.ratio,
        two_way_distance=util.marginals.two_way if util.marginals is not None else None,
        tstr={t.classifier: t.accuracy for t in util.tstr},
        tstr_original={t.classifier: t.accuracy_original for t in util.tstr},
        regression={r.column: r.r2 for r in util.regression},
        mean_shift=util.mean_shift, correlation_loss=util.correlation_loss,
        loss_measures=dict(trace.lattice.measures) if trace.lattice is not None else {},
    )
    extra.update(_attacker_extra(report))
    fixed = fixed_by_construction(release, report)
    extra["by_construction"] = fixed
    if "max_linkage_risk" in fixed:  # not a measure: it neither ranks nor is plotted
        extra["linkage_risk"] = None
    judged = gates_judged(spec.privacy)
    extra["policy_measured"] = any(g not in fixed for g in judged)
    extra["accuracy_constant"] = constant_accuracy(prepared.train, prepared.test, roles.class_column)
    extra["signal"] = tune.recalls_two_classes([c.sanitized for c in util.per_class])
    reasons = refusal_reasons(report, util)
    if early is not None:
        reasons.insert(0, early.reason)
    try:
        extra["spec"] = fixed_spec(spec, trace.parameter, value, roles)
    except SpecError as exc:  # the tuned value cannot be written back (never seen): the method is not recommendable
        reasons.append(f"its tuned value cannot be written as a spec: {_one_line(exc)}")
    if reasons:
        return done("refused", "; ".join(reasons), **extra)
    notes = [] if extra["policy_measured"] else [unjudged_note(cls.unit, judged, fixed)]
    if not extra["signal"]:
        notes.append(NO_SIGNAL)
    return done("passes", "; ".join(notes) or None, **extra)


@dataclass(frozen=True)
class EarlyRefusal:
    """A method refused before it was tuned (:func:`safest_attempt`): its release at the most private value its
    tuning could choose, and why no tuned value is looked for."""

    ran: release_plan.Sanitized
    parameter: str
    value: int | float

    @property
    def rule(self) -> str:
        return (f"not tuned: {self.parameter}={self.value:g} is the most private value its tuning could choose, and "
                "its release there already fails a privacy gate or the safety floor")

    @property
    def reason(self) -> str:
        return (f"refused before tuning: at {self.parameter}={self.value:g}, the most private value its tuning could "
                "choose, the release fails (no tuned value is safer)")


def safest_attempt(spec: ReleaseSpec, prepared: PreparedRows, roles: Roles, order_key: bytes | None = None
                   ) -> EarlyRefusal | None:
    """The comparison's cheap refusal: the method sanitized once at the most private value its ``bisect`` or
    ``grid`` tuning could choose (:func:`ppdp.tasks.tune.most_private_value`) and its privacy measured, as the
    release plan measures any attempt (promotion included). When a privacy gate of its policy or the safety floor
    fails there, that attempt is the method's row: every value the tuner could choose is less private, so tuning
    would only spend its evaluations on a refusal. Otherwise (or when the method refuses that value: the probe
    decides nothing) None: the method is tuned as ``ppdp run`` tunes it, and its row is exactly what it was without
    the probe (the probe's work is thrown away; its utility is never measured)."""
    if unit_of(method_class(spec.method.name).unit).spends_budget:  # never reached (not run), and never probed
        return None
    try:
        base = OWN.call(release_plan.BUILD_SANITIZER, spec.method, seed=spec.seed)
        domains = OWN.call(release_plan.DOMAINS, base, prepared.train, roles) if spec.tuning.strategy in (
            "bisect", "grid") else {}
        found = tune.most_private_value(spec.tuning, base, domains, spec.privacy)
        if found is None:
            return None
        parameter, value = found
        fixed = _validate(fixed_spec(spec, parameter, value))
        ran = release_plan.sanitize_measured(fixed, prepared, roles, OWN, order_key=order_key, domains_first=False)
    except (_MethodFailure, PpdpError):
        return None
    report = ran.privacy
    if report.passed and report.claims and report.floor is not None and report.floor.holds:
        return None
    return EarlyRefusal(ran, parameter, value)


def _attacker_extra(report) -> dict[str, Any]:
    """A row's figures from the safety floor and the attacker's view of the release."""
    out: dict[str, Any] = {}
    floor, view = report.floor, report.attacker_view
    if floor is not None:
        out["floor_failed"] = [describe_floor_claim(c) for c in floor.failed]
    if view is not None:
        groups = view.identity_by == "groups" and view.group_average_risk is not None
        out.update(identity_by=view.identity_by, records_alone=view.records_alone, smallest_class=view.smallest_class,
                   average_risk=view.group_average_risk if groups else view.average_risk,
                   exact_copies=view.exact_copies, linkage_risk=view.linkage_risk,
                   disclosure_gain=view.disclosure_gain, epsilon=view.epsilon)
    return out


NO_SIGNAL = ("not recommended: the classifier trained on this release recalls held-out rows of one class only (the "
             "release carries nothing it can use to tell the classes apart)")


def fixed_by_construction(release, report) -> dict[str, str]:
    """The gates whose figure is fixed by the release's construction whatever the data, each with why: the claims
    marked ``construction`` (a DP mechanism's epsilon and delta: its parameters), and a record release's linkage risk
    when no published row stands for an input record (``row_source`` all -1: the nearest published row never
    stands for the record, so the share is 0)."""
    out: dict[str, str] = {}
    for claim in report.claims:
        if claim.recheck == "construction" and claim.name in GATE_UNITS:
            out[claim.name] = "holds by the mechanism's construction (its parameter, not a measure of the release)"
    rows = np.asarray(release.row_source)
    if unit_of(release.unit).compares_records and rows.size and bool((rows < 0).all()):
        out["max_linkage_risk"] = ("linkage risk is 0 by construction: no published row stands for an input record, "
                                   "so none is ever linked")
    return out


def unjudged_note(unit: str, judged: Sequence[str], fixed: dict[str, str]) -> str:
    """Why a release whose every judged gate is fixed by construction is not recommended, in one line."""
    why = "; ".join(f"{g}: {fixed[g]}" for g in judged if g in fixed)
    can = [g for g in ("min_dcr", "min_vd") if unit in GATE_UNITS[g]]
    hint = f" (a gate measured on its rows, such as {' or '.join(can)}, would)" if can else ""
    return (f"not recommended: every gate of its policy that applies is fixed by construction ({why}), so the policy "
            f"does not judge this release{hint}")


def constant_accuracy(train: pd.DataFrame, test: pd.DataFrame, class_column: str | None) -> float | None:
    """The share of held-out rows of the training rows' most common class: the accuracy of a classifier that
    always predicts it (the label itself is never kept)."""
    if class_column is None or not len(test):
        return None
    labels = train[class_column].astype(str)
    counts = labels.value_counts()
    most = counts[counts == counts.max()].index.sort_values()[0]  # ties: the first in sort order
    return float((test[class_column].astype(str) == most).mean())


def refusal_reasons(report, util) -> list[str]:
    """Each failed part of the verdict in one line, as ``ppdp run`` words its refusals."""
    out = []
    if not report.claims:
        out.append("privacy: no privacy gate applies to this release (fail closed)")
    elif report.failed:
        out.append(f"privacy gate failed: {describe_failed(report.failed)}")
    if report.floor is None:
        out.append("safety floor: not measured (fail closed)")
    elif not report.floor.holds:
        out.append(f"safety floor failed: {'; '.join(describe_floor_claim(c) for c in report.floor.failed)}")
    if util.failed:
        out.append(f"utility gate failed: {describe_failed(util.failed)}")
    return out


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def not_run_row(name: str, reason: str) -> CompareRow:
    """The row of a method compare does not run (:func:`not_run_reason`): its reason, no figure."""
    cls = method_class(name)
    return CompareRow(method=name, unit=cls.unit, protects=cls.protects, status="not_run", reason=reason,
                      reproducible=bool(getattr(cls, "reproducible", True)))


def not_applicable_row(spec: ReleaseSpec, name: str, reason: str) -> CompareRow:
    """The row of a method for which no valid spec exists (its spec's one-line error as the reason)."""
    cls = method_class(name)
    return CompareRow(method=name, unit=cls.unit, protects=cls.protects, status="not_applicable", reason=reason,
                      reproducible=bool(getattr(cls, "reproducible", True)))


def plan(spec: ReleaseSpec, methods: Sequence[str] | None = None
         ) -> list[tuple[str, ReleaseSpec | None, str, CompareRow | None]]:
    """Each method to compare (every registered one, or ``methods``, in name order): (name, its spec, its policy
    source, None), or (name, None, "", its ready row): not run (a differentially private method), or not applicable
    when no valid spec exists for it. Raises :class:`SpecError` for an unknown name."""
    names = sorted(REGISTRY) if not methods else sorted(dict.fromkeys(methods))
    for n in names:
        method_class(n)  # an unknown name: one line listing the known ones
    out: list[tuple[str, ReleaseSpec | None, str, CompareRow | None]] = []
    for name in names:
        reason = not_run_reason(method_class(name))
        if reason is not None:
            out.append((name, None, "", not_run_row(name, reason)))
            continue
        try:
            method, source = method_spec(spec, name)
        except SpecError as exc:
            out.append((name, None, "", not_applicable_row(spec, name, _one_line(exc))))
            continue
        out.append((name, method, source, None))
    return out


def compare_in_process(spec: ReleaseSpec, methods: Sequence[str] | None = None) -> CompareResult:
    """The whole comparison in this process, one method after another, without Prefect (the flow runs the same
    functions, the methods side by side): ingest and its suite, tagging, identifier protection, every method's row,
    the ranking."""
    started = time.perf_counter()
    read = release_plan.read_input(spec, check_root=False)  # the plan's first steps, once for every method
    report, roles, protected = read.ingest, read.roles, read.protected
    order_key = existing_order_key(spec)
    # plan gives a method's spec whenever it gives no ready row
    rows = [row if row is not None else compare_method(cast(ReleaseSpec, method), protected, roles, source, order_key)
            for _, method, source, row in plan(spec, methods)]
    return summarize(rows, spec, input_digest=report.input_digest, input_key_id=report.input_key_id,
                     input_rows=report.read_rows,
                     seconds=time.perf_counter() - started)


# -- the comparison ----------------------------------------------------------------------------------------------
def risk_of(row: CompareRow) -> tuple[str, float | None]:
    """The re-identification risk a row is ranked and plotted by: linkage risk for record-by-record methods (None
    when it is fixed by construction: the row leaves it out), average risk (mean 1 / class size as the attacker sees
    the table) otherwise."""
    if row.identity_by == "records":
        return "linkage risk", row.linkage_risk
    return "average risk", row.average_risk


def _utility_of(row: CompareRow, rank_by: str | None = None) -> float | None:
    """What ranks a row: ``rank_by`` (the spec's ``utility.ranking``: ``tstr:<classifier>``'s accuracy,
    ``accuracy_ratio``, 1 - the ``two_way`` marginal distance, ``regression:<column>``'s R^2); None: the accuracy
    ratio, or without a classifier 1 - the 2-way marginal distance."""
    head, _, tail = (rank_by or "").partition(":")
    two_way = None if row.two_way_distance is None else 1.0 - row.two_way_distance
    if head == "tstr":
        return row.tstr.get(tail)
    if head == "two_way":
        return two_way
    if head == "regression":
        return row.regression.get(tail)
    if head == "accuracy_ratio" or row.accuracy_ratio is not None:
        return row.accuracy_ratio
    return two_way


def _utility_text(row: CompareRow, rank_by: str | None = None) -> str:
    head, _, tail = (rank_by or "").partition(":")
    value = _utility_of(row, rank_by)
    shown = "n/a" if value is None else f"{value:.2f}"
    if head == "tstr":
        return f"TSTR {tail} accuracy {shown}"
    if head == "regression":
        return f"regression {tail} R^2 {shown}"
    if head == "two_way" or (not head and row.accuracy_ratio is None and row.two_way_distance is not None):
        return "2-way marginal distance " + ("n/a" if row.two_way_distance is None else f"{row.two_way_distance:.3f}")
    return f"accuracy ratio {value or 0.0:.2f}"


def _rank_key(row: CompareRow, rank_by: str | None = None) -> tuple:
    utility = _utility_of(row, rank_by)
    ratio = utility if utility is not None else -math.inf
    _, risk = risk_of(row)
    return (-round(ratio, 2), round(risk, 3) if risk is not None else math.inf, row.method)


def _group(row: CompareRow) -> int:
    if row.eligible:
        return 0
    return {"passes": 1, "refused": 2, "not_applicable": 3, "not_run": 3, "error": 4}[row.status]


def rank(rows: Sequence[CompareRow], rank_by: str | None = None) -> list[CompareRow]:
    """The rows in table order: the methods the recommendation chooses from by :data:`RECOMMENDATION_RULE` (the
    first is recommended; the utility ``rank_by`` names, see :func:`_utility_of`), then those that pass but are not
    recommended (nothing for the classifier, or a policy that judges no measured figure), then the refused ones (by
    the same rule), then the methods not run or that cannot apply, and the errors, by name."""
    return sorted(rows, key=lambda r: (_group(r), *(
        _rank_key(r, rank_by) if r.status in ("passes", "refused") else (0, 0, r.method))))


def recommendation_line(ranked: Sequence[CompareRow], rank_by: str | None = None) -> tuple[str | None, str]:
    """The recommended method and the recommendation in one line ("mdav: accuracy ratio 0.98 at k=12, average risk
    0.021; condensation keeps 0.95"; ranked by ``rank_by``: "mdav: TSTR hist_gradient_boosting accuracy 0.84 at
    k=12, ...; condensation: TSTR hist_gradient_boosting accuracy 0.82")."""
    passing = [r for r in ranked if r.eligible]
    if not passing:
        if any(r.status == "passes" for r in ranked):
            return None, ("no method to recommend: those that pass the privacy policy, the safety floor and the "
                          "utility gates are not recommended (each row says why)")
        return None, ("no method passes the privacy policy, the safety floor and the utility gates: nothing to "
                      "recommend (each row says why)")
    best = passing[0]
    risk_name, risk = risk_of(best)
    at = f" at {best.tuned}" if best.tuned else ""
    risk_text = f", {risk_name} {risk:.3g}" if risk is not None else ""
    line = f"{best.method}: {_utility_text(best, rank_by)}{at}{risk_text}"
    if len(passing) > 1:
        second = passing[1]
        line += (f"; {second.method} keeps {second.accuracy_ratio:.2f}"
                 if rank_by in (None, "accuracy_ratio") and second.accuracy_ratio is not None
                 else f"; {second.method}: {_utility_text(second, rank_by)}")
    if rank_by is not None:
        line += f" (ranked by {rank_by})"
    return best.method, line


def summarize(rows: Sequence[CompareRow], spec: ReleaseSpec, *, input_digest: str | None, input_rows: int,
              input_key_id: str | None = None,
              seconds: float = 0.0) -> CompareResult:
    """The comparison's result: rows ranked, the recommendation and the rules."""
    rank_by = spec.utility.ranking
    ranked = rank(rows, rank_by)
    recommended, line = recommendation_line(ranked, rank_by)
    gates = {g: float(getattr(spec.privacy, g)) for g in ("max_average_risk", "max_linkage_risk")
             if getattr(spec.privacy, g) is not None}
    notes = []
    weak = [r for r in ranked if r.accuracy_original is not None and r.accuracy_constant is not None
            and r.accuracy_original <= r.accuracy_constant]
    if weak:
        w = weak[0]
        notes.append(f"the classifier {spec.utility.classifier} trained on the original rows "
                     f"({w.accuracy_original:.3f}) is no more accurate than always predicting the most common class "
                     f"({w.accuracy_constant:.3f}): an accuracy ratio above 1 may mean the release lost what misled "
                     "it, not that it gained; another utility.classifier ranks the methods more usefully")
    unreproducible = [r.method for r in ranked if not r.reproducible and r.status in ("passes", "refused")]
    if unreproducible:
        notes.append(f"{', '.join(unreproducible)}: the noise takes no seed, so its figures change from run to run")
    return CompareResult(dataset=spec.dataset, input_digest=input_digest, input_key_id=input_key_id,
                         input_rows=input_rows, seed=spec.seed,
                         runner=spec.runner.kind, classifier=spec.utility.classifier,
                         min_accuracy_ratio=spec.utility.min_accuracy_ratio, risk_gates=gates, rows=ranked,
                         recommended=recommended, recommendation=line, rule=recommendation_rule(rank_by),
                         rank_by=rank_by,
                         policy_rule=POLICY_RULE, notes=notes, not_carried=not_carried(spec, recommended),
                         seconds=seconds)


def not_carried(spec: ReleaseSpec, recommended: str | None) -> list[str]:
    """The parts of the spec's policy the recommended method's spec does not carry, each with why in one line."""
    if recommended is None:
        return []
    out = []
    if spec.privacy.accept_below_floor is not None:
        out.append("privacy.accept_below_floor: an approval to publish below the safety floor was given for another "
                   "release; compare recommends none below the floor")
    if spec.privacy.budget is not None and not unit_of(method_class(recommended).unit).spends_budget:
        out.append(f"privacy.budget: it bounds differentially private releases, and {recommended} is not one")
    return out


def pareto_frontier(points: Sequence[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """The points (risk, accuracy ratio, name) no other point beats on both (lower or equal risk and higher or equal
    ratio, one of them strictly), by increasing risk."""
    out: list[tuple[float, float, str]] = []
    for p in sorted(points, key=lambda p: (p[0], -p[1], p[2])):
        if not out or p[1] > out[-1][1]:
            out.append(p)
    return out


def table_rows(result: CompareResult) -> list[dict[str, str | int | float | None]]:
    """The comparison table for a Prefect table artifact (aggregates only; text cells markdown-escaped, as the
    release's claims table: Prefect renders each text cell as markdown)."""
    out: list[dict[str, str | int | float | None]] = []
    tstr_names = list(dict.fromkeys(name for r in result.rows for name in r.tstr))  # the same columns in every row
    for r in result.rows:
        risk_name, risk = risk_of(r)
        out.append({"method": r.method, "status": r.status.replace("_", " "), "tuned": r.tuned or "",
                    "policy": _yes(r.policy_holds), "floor": _yes(r.floor_holds),
                    "utility gates": _yes(r.utility_holds),
                    "records alone": _round(r.records_alone), "smallest class": r.smallest_class,
                    "average risk": _round(r.average_risk), "exact copies": _round(r.exact_copies),
                    "linkage risk": _round(r.linkage_risk), "disclosure gain": _round(r.disclosure_gain),
                    "accuracy ratio": _round(r.accuracy_ratio),
                    **{f"TSTR {name}": _round(r.tstr.get(name)) for name in tstr_names},
                    "seconds": round(r.seconds, 2),
                    "reason": r.reason or ""})
    return [{key: table_cell(value) for key, value in row.items()} for row in out]


def _yes(value: bool | None) -> str:
    return "" if value is None else ("holds" if value else "fails")


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


# -- files -------------------------------------------------------------------------------------------------------
def comparable(result: CompareResult) -> dict[str, Any]:
    """The result without times and without the input's keyed digest, salted afresh by every run (what two runs of
    the same spec, data and seed must share)."""
    data = result.model_dump(mode="json", exclude={"seconds", "runner", "input_digest"})
    for r in data["rows"]:
        r.pop("seconds", None)
    return data


def check_outside_root(spec: ReleaseSpec, path: str | Path | None, what: str) -> None:
    """Raise :class:`SpecError` (one line) when ``path`` is the publish root or under it: compare writes nothing
    there."""
    if path is None:
        return
    root, target = Path(spec.publish.root).resolve(), Path(path).resolve()
    if target == root or root in target.parents:
        raise SpecError(f"{what} {path}: under the publish root {spec.publish.root}: compare writes nothing there")


def spec_yaml(result: CompareResult, spec_path: str | Path) -> str:
    """The recommended method's spec as YAML, with a header saying where it comes from; raises
    :class:`InputError` when nothing is recommended."""
    if result.recommended is None:
        raise InputError(f"{result.recommendation}; no spec written")
    row = result.row(result.recommended)
    assert row.spec is not None
    judged = "judged" if row.policy_source == "spec" else "judged, the safety floor's limits added as gates"
    lines = [f"Written by ppdp compare from {Path(spec_path).name}: {result.recommendation}",
             f"{row.method} with {row.tuned or 'its parameters'} fixed (tuning.strategy: fixed); the policy as given, "
             f"{judged}: {', '.join(row.policy)}",
             *([row.not_applicable_reason] if row.not_applicable_reason else []),
             *(f"not carried: {line}" for line in result.not_carried),
             "`ppdp run` on this file publishes the release compare measured (row order aside)."]
    header = "".join(f"# {' '.join(line.split())}\n" for line in lines)
    return header + yaml.safe_dump(row.spec, sort_keys=False, allow_unicode=True)


def write_spec(result: CompareResult, spec_path: str | Path, target: Path) -> Path:
    """Write :func:`spec_yaml` to ``target`` and check it loads as the same spec."""
    write_atomic(Path(target), spec_yaml(result, spec_path))
    load_spec(target)  # raises SpecError (one line) if the written spec does not load
    return Path(target)
