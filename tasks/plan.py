"""The release plan: the ordered steps of a release as plain functions (no Prefect here), each run through a
:class:`Runner` that the caller gives.

The plan is written once; its callers only choose how the steps run:

* the release flow (:mod:`ppdp.flows.release`) runs each :class:`Step` as a Prefect task
  (:class:`ppdp.flows.steps.TaskRunner`: named, never cached, parallel where the plan submits);
* ``ppdp compare`` (:func:`ppdp.tasks.compare.compare_method`) runs the steps it needs (prepare -> tune ->
  sanitize -> measure) one after another, marking the method's own refusals as the method's;
* the reproduction of ``ppdp validate --release`` (:func:`ppdp.tasks.reproduce.reproduce`) prepares the rows and
  sanitizes with the recorded parameters;
* a release (:func:`run`) runs every step in order over its :class:`Source`: one table (:class:`TableSource`)
  or a folder of Parquet partitions (``source.path`` a folder: :class:`ppdp.tasks.distributed.plan.FolderSource`,
  per partition, on counts, into row files). The steps both sources share are run here, once (the tagging, the
  promotion of columns and the privacy, series and utility gates, :mod:`ppdp.tasks.steps`, and their log lines);
  the source gives the steps that differ (ingest, prepare, tune -> sanitize -> measure, the series judgement, the
  utility measure, the manifest and the publish).

A release, in order (:func:`run`): read the input (one table: preflight, ingest: :func:`read_table`) and tag it
(:func:`tagged`), prepare (one table: protect identifiers, rare values, fingerprints, hold-out, the rows the
method's shape publishes, the feasibility of the gates: :func:`prepare_read`, the series preflight and kept groups:
:func:`series_start`), then tune -> sanitize -> measure privacy and utility (:func:`attempt`), once more when a
published column must become a quasi-identifier (:func:`promoting`), and the gates, the series judgement, the
utility, the manifest and the publish.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

import numpy as np
import pandas as pd

from ppdp.schemas.manifest import Manifest, ReleaseResult
from ppdp.schemas.release import Release
from ppdp.schemas.reports import IngestReport, MethodRecord, PrivacyReport, RareCategoryReport, Roles, TuningTrace
from ppdp.schemas.spec import ReleaseSpec
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks import gates, ingest, publish, rare, secrets, series, shapes, tag, tune, utility
from ppdp.tasks import spec as spec_io
from ppdp.tasks.distributed import plan as partitioned
from ppdp.tasks.marginals import SIMILARITY_MEASURE
from ppdp.tasks.plots import tuning_plot_png
from ppdp.tasks.privacy import series as series_judge
from ppdp.tasks.privacy.series import series_line
from ppdp.tasks.private_record import withholds
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.registry import build_sanitizer, method_class, run_method
from ppdp.tasks.steps import (
    ENFORCE_PRIVACY,
    ENFORCE_SERIES,
    ENFORCE_UTILITY,
    PLAIN,
    PROMOTE,
    QUIET,
    STEPS,
    TAG,
    Log,
    Pending,
    RunIds,
    Runner,
    Step,
    Text,
    log_privacy,
    log_promoted,
    sanitizer_settings,
    value_text,
)

A = TypeVar("A")

# -- the steps -------------------------------------------------------------------------------------------------
LOAD_SPEC = Step("load-spec", spec_io.load_spec)
PREFLIGHT = Step("preflight", spec_io.preflight, lambda p: p["spec"].dataset)
INGEST = Step("ingest", ingest.ingest, lambda p: f"{p['spec'].dataset} ({p['spec'].source.format})")
PROTECT = Step("protect-identifiers", tag.protect_identifiers,
               lambda p: f"{len(p['roles'].identifiers)} identifiers, {p['policy'].action}")
MERGE_RARE = Step("merge-rare-categories", rare.merge_rare_categories, lambda p: f"k={value_text(p['k'])}")
FINGERPRINT = Step("fingerprint-records", series.identify)
HOLD_OUT = Step("hold-out", utility.split_holdout_keyed,
                lambda p: f"{p['fraction']:.0%} held out" if p["class_column"] else "none held out (no classifier)")
SETTLE = Step("settle-rows", shapes.settle, lambda p: f"k={value_text(p['k'])}")  # no count: Prefect keeps names
CHECK_FEASIBLE = Step("check-feasible", gates.check_feasible)
CHECK_SERIES = Step("check-series", series_judge.preflight_series, lambda p: p["spec"].dataset)
PREVIOUS_GROUPS = Step("previous-groups", series.previous_groups, lambda p: p["dataset"])
KEPT_GROUPS = Step("kept-groups", series.kept_input, lambda p: p["method"])
BUILD_SANITIZER = Step("build-sanitizer", build_sanitizer, task=False)
DOMAINS = Step("domains", lambda base, frame, roles: base.domains(frame, roles), task=False)
SUGGEST = Step("suggest", lambda base, frame, roles, t: base.suggest(frame, roles, t), task=False)
EVALUATE = Step("evaluate", tune.evaluate_value, lambda p: f"{p['parameter']}={value_text(p['value'])}")
SEARCH_LATTICE = Step("search-lattice", tune.search_lattice,
                      lambda p: f"{len(p['roles'].quasi_identifiers)} quasi-identifiers")
SANITIZE = Step("sanitize", run_method, lambda p: sanitizer_settings(p["sanitizer"]))
MEASURE_PRIVACY = Step("validate-privacy", shapes.check_privacy, lambda p: f"unit {p['release'].unit}")
CHECK_UTILITY = Step("check-utility", shapes.check_utility, lambda p: p["spec"].utility.classifier)
FIT_BASELINES = Step("fit-baselines", shapes.prefit_utility, lambda p: p["spec"].utility.classifier)
JUDGE_SERIES = Step("judge-series", series_judge.judge_series, lambda p: p["spec"].dataset)
NAME_CLASSES = Step("name-classes", utility.name_classes)
CHECK_OUTPUT = Step("check-output", publish.check_output, lambda p: f"unit {p['release'].unit}")
BUILD_MANIFEST = Step("build-manifest", publish.build_manifest, lambda p: p["release_id"])
WRITE_RELEASE = Step("publish", publish.publish_release, lambda p: p["manifest"].release_id)
PLOT_TUNING = Step("plot-tuning", tuning_plot_png, lambda p: f"{len(p['trace'].evaluations)} evaluations")
PLOT_EXTRAS = Step("plot-extras", shapes.extra_files)


# -- what the steps produce ------------------------------------------------------------------------------------
@dataclass
class Input:
    """The input read: the frame as read and typed, its ingest report, the roles, and the frame with the direct
    identifiers protected (dropped or pseudonymized)."""

    frame: pd.DataFrame
    ingest: IngestReport
    roles: Roles
    protected: pd.DataFrame


@dataclass
class Sanitized:
    """A tuned, sanitized and measured release: the roles it was measured with (quasi-identifiers promoted
    included), the tuned sanitizer and its trace, the release and its method record, the privacy report, the
    utility report (asked for after the privacy gates), and the columns promoted to quasi-identifiers."""

    roles: Roles
    sanitizer: Sanitizer
    trace: TuningTrace
    release: Release
    record: MethodRecord
    privacy: PrivacyReport
    utility: Pending[UtilityReport]
    promoted: list[str] = field(default_factory=list)


# -- the plan --------------------------------------------------------------------------------------------------
def read_table(spec: ReleaseSpec, runner: Runner = PLAIN, log: Log = QUIET, check_root: bool = True,
               after_ingest: Callable[[IngestReport], None] | None = None) -> tuple[pd.DataFrame, IngestReport]:
    """Preflight and ingest one table. ``after_ingest(ingest report)``, when given, runs right after the input is
    read (the rerun check)."""
    runner.call(PREFLIGHT, spec, check_root)
    frame, report = runner.call(INGEST, spec)
    if after_ingest is not None:
        after_ingest(report)
    if withholds(spec.method.unit):  # Prefect's database keeps the logs: no count of the input
        log.info("[2/%d] ingest: %d columns, %d expectations passed", STEPS, len(report.columns),
                 report.expectation_count)
    else:
        log.info("[2/%d] ingest: %d rows, %d columns, %d expectations passed", STEPS, report.rows,
                 len(report.columns), report.expectation_count)
    return frame, report


def tagged(spec: ReleaseSpec, frame: pd.DataFrame, runner: Runner = PLAIN, log: Log = QUIET, note: str = "") -> Roles:
    """The tagging (the roles of the columns of ``frame``) and its log line (``note``: what the source adds)."""
    roles = runner.call(TAG, frame, spec)
    log.info("[3/%d] tag: %d quasi-identifiers, %d direct identifiers (%s), class %s%s", STEPS,
             len(roles.quasi_identifiers), len(roles.identifiers), spec.identifiers.action,
             "declared" if roles.class_column else "none", note)
    return roles


def protect(spec: ReleaseSpec, frame: pd.DataFrame, report: IngestReport, roles: Roles, runner: Runner = PLAIN
            ) -> Input:
    """The direct identifiers protected (dropped or pseudonymized): the input read."""
    protected = runner.call(PROTECT, frame, roles, spec.identifiers, secrets.pseudonym_key(spec.identifiers))
    return Input(frame=frame, ingest=report, roles=roles, protected=protected)


def read_input(spec: ReleaseSpec, runner: Runner = PLAIN, log: Log = QUIET, check_root: bool = True,
               after_ingest: Callable[[IngestReport], None] | None = None) -> Input:
    """Preflight, ingest, tag and protect the identifiers. ``after_ingest(ingest report)``, when given, runs right
    after the input is read (the rerun check)."""
    frame, report = read_table(spec, runner, log, check_root, after_ingest)
    return protect(spec, frame, report, tagged(spec, frame, runner, log), runner)


def merge_rare(spec: ReleaseSpec, method: shapes.Method, protected: pd.DataFrame, roles: Roles,
               runner: Runner = PLAIN) -> tuple[pd.DataFrame, RareCategoryReport]:
    """The rare-value rule (the columns the method's shape leaves to the method skipped)."""
    return runner.call(MERGE_RARE, protected, roles, spec.rare_k, shapes.rare_rule_skip(method, roles))


def settle_rows(spec: ReleaseSpec, method: shapes.Method, protected: pd.DataFrame, merged: pd.DataFrame,
                rare_report: RareCategoryReport, roles: Roles, prints: np.ndarray,
                runner: Runner = PLAIN) -> shapes.PreparedRows:
    """The hold-out (keyed by ``prints``, stable under ``series.keep_groups``; only when a classifier is trained: a
    class column declared, utility.classifier not none) and the rows ``method``'s shape publishes."""
    if spec.classifies:
        rare.check_classes_left(merged, roles, rare_report)
    train, test, joined = runner.call(HOLD_OUT, merged, roles.class_column if spec.classifies else None,
                                      spec.utility.test_fraction, spec.seed, prints, spec.series.keep_groups)
    return runner.call(SETTLE, method, merged, train, test, roles, spec.rare_k, rare_report, prints, joined,
                       protected)


def prepare_rows(spec: ReleaseSpec, method: shapes.Method, protected: pd.DataFrame, roles: Roles,
                 prints: np.ndarray | None = None, runner: Runner = PLAIN) -> shapes.PreparedRows:
    """The preparation after the identifiers (``protected``): the rare-value rule, the hold-out and the rows
    ``method``'s shape publishes (``prints``: the records' fingerprints, which key the hold-out; none: zeros)."""
    prints = np.zeros(len(protected), dtype=np.int64) if prints is None else np.asarray(prints, dtype=np.int64)
    merged, rare_report = merge_rare(spec, method, protected, roles, runner)
    return settle_rows(spec, method, protected, merged, rare_report, roles, prints, runner)


def prepare_read(spec: ReleaseSpec, read: Input, runner: Runner = PLAIN) -> tuple[shapes.PreparedRows, series.Identity]:
    """The rare-value rule, the records' fingerprints, the hold-out, the rows the method's shape publishes, and the
    feasibility of the gates (a gate no release can meet: refused before tuning)."""
    method = method_class(spec.method.name)
    merged, rare_report = merge_rare(spec, method, read.protected, read.roles, runner)
    identity = runner.call(FINGERPRINT, read.frame, read.roles, spec.publish.root)
    prepared = settle_rows(spec, method, read.protected, merged, rare_report, read.roles, identity.prints, runner)
    runner.call(CHECK_FEASIBLE, spec.privacy, method.unit, prepared.source, read.roles)
    return prepared, identity


def prepare(spec: ReleaseSpec, runner: Runner = PLAIN, log: Log = QUIET, check_root: bool = True,
            after_ingest: Callable[[IngestReport], None] | None = None
            ) -> tuple[Input, shapes.PreparedRows, series.Identity]:
    """:func:`read_input` and :func:`prepare_read`."""
    read = read_input(spec, runner, log, check_root, after_ingest)
    prepared, identity = prepare_read(spec, read, runner)
    return read, prepared, identity


def tune_method(spec: ReleaseSpec, roles: Roles, prepared: shapes.PreparedRows, runner: Runner = PLAIN,
                log: Log = QUIET, domains_first: bool = True) -> tuple[Sanitizer, TuningTrace]:
    """The tuning step: the tuned sanitizer and the trace. Evaluations are submitted together (parallel tasks in
    the flow, named ``evaluate k=45``), each logged with an ``i/N`` count when it ends; a lattice search runs on the
    rows the method publishes. ``domains_first``: the parameters' domains are read whatever the strategy (else only
    for a strategy that evaluates values)."""
    base = runner.call(BUILD_SANITIZER, spec.method, seed=spec.seed)
    train, test = prepared.train, prepared.test
    check = spec.tuning.objective == "best_utility_meeting_policy"
    parameter = spec.tuning.parameter or next(iter(base.tunable), None)
    progress: dict[str, int | None] = {"done": 0, "most": None}

    def plan(most: int | None) -> None:
        progress["most"] = most

    def evaluate_many(values: list[float]) -> list[Any]:
        pending = [runner.submit(EVALUATE, base, parameter, int(v) if float(v).is_integer() else v, train, test,
                                 roles, spec.utility.classifier, spec.tuning.repeats, spec.privacy, check)
                   for v in values]
        results = []
        for f in pending:
            ev = f.result()
            results.append(ev)
            progress["done"] = int(progress["done"] or 0) + 1
            of = f"/{progress['most']}" if progress["most"] else ""
            privacy = "n/a" if ev.privacy is None else f"{ev.privacy:.4f}"
            log.info("[4/%d] tune: evaluation %d%s: %s=%s accuracy %.4f privacy %s (%.1fs)", STEPS,
                     progress["done"], of, parameter, value_text(ev.value), ev.accuracy, privacy, ev.seconds)
        return results

    needs_domains = domains_first or spec.tuning.strategy not in ("fixed", "lattice")
    domains = runner.call(DOMAINS, base, train, roles) if needs_domains else {}
    # the search itself runs here, in the caller, so that its evaluations can be submitted as parallel tasks
    trace = tune.tune(spec.tuning, sanitizer=base, domains=domains, policy=spec.privacy,
                      sizes=tune.class_sizes(train, roles), evaluate_many=evaluate_many,
                      suggest=lambda t: runner.call(SUGGEST, base, train, roles, t),
                      search=lambda name: runner.call(SEARCH_LATTICE, base, name, prepared.source, roles), plan=plan,
                      inherited=spec.inherited)
    if not spec.classifies and trace.evaluations:  # the evaluations' "accuracy" is the label-free similarity
        trace = trace.model_copy(update={"utility_measure": SIMILARITY_MEASURE})
    return tune.tuned(base, trace), trace


def sanitize(sanitizer: Sanitizer, prepared: shapes.PreparedRows, roles: Roles, order_key: bytes | None = None,
             previous: Any = None, runner: Runner = PLAIN) -> tuple[Release, MethodRecord]:
    """The sanitize step on the rows the method's shape publishes (a sanitizer with fixed parameters: a
    reproduction)."""
    return runner.call(SANITIZE, sanitizer, prepared.source, roles, order_key, previous)


def attempt(spec: ReleaseSpec, prepared: shapes.PreparedRows, roles: Roles, runner: Runner = PLAIN, log: Log = QUIET,
            order_key: bytes | None = None, previous: Any = None, domains_first: bool = True) -> Sanitized:
    """Tune, sanitize, and measure privacy and utility (submitted together: parallel tasks in the flow), once. The
    utility is asked for by the caller, after the privacy gates."""
    method = method_class(spec.method.name)
    source = prepared.source
    sanitizer, trace = tune_method(spec, roles, prepared, runner, log, domains_first)
    log.info("[4/%d] tune (%s): %s", STEPS, trace.strategy, trace.rule)
    if runner.cluster() is None:  # threads of this process: the utility check's baselines beside the sanitizing
        runner.submit(FIT_BASELINES, method, spec, roles, prepared)  # (a plain runner's is never asked: not run)
    release, record = runner.call(SANITIZE, sanitizer, source, roles, order_key, previous)
    log.info("[5/%d] sanitize: %s, unit %s (%.2fs)", STEPS, Text(shapes.summary, method, release), release.unit,
             record.seconds)
    measured = runner.submit(MEASURE_PRIVACY, method, source, release, roles, spec, prepared.everything)
    checked = runner.submit(CHECK_UTILITY, method, spec, release, roles, prepared)
    return Sanitized(roles=roles, sanitizer=sanitizer, trace=trace, release=release, record=record,
                     privacy=measured.result(), utility=checked)


class Measured(Protocol):
    """An attempt of a release: the roles it was made with and its privacy measured."""

    @property
    def roles(self) -> Roles: ...

    @property
    def privacy(self) -> PrivacyReport: ...


M = TypeVar("M", bound=Measured)


def promoting(attempt: Callable[[Roles], M], roles: Roles, spec: ReleaseSpec, runner: Runner = PLAIN,
              log: Log = QUIET, again: str = "") -> tuple[M, list[str]]:
    """``attempt(roles)``, once more when a column published beside the quasi-identifiers must become one (``again``:
    the log line's words for it): (the last attempt, the columns promoted)."""
    promoted: list[str] = []
    for n in (1, 2):
        done = attempt(roles)
        more = runner.call(PROMOTE, roles, done.privacy, spec.privacy) if n == 1 else None
        if more is None:
            break
        log_promoted(log, roles, more, again)
        promoted = [t.name for t in more.columns if t.role != roles.get(t.name).role]
        roles = more
    return done, promoted


def sanitize_measured(spec: ReleaseSpec, prepared: shapes.PreparedRows, roles: Roles, runner: Runner = PLAIN,
                      log: Log = QUIET, order_key: bytes | None = None, previous: Any = None,
                      domains_first: bool = True) -> Sanitized:
    """Tune, sanitize, and measure privacy and utility (:func:`attempt`); once more when a column published beside
    the quasi-identifiers must become one. The utility is asked for by the caller, after the privacy gates."""
    done, promoted = promoting(lambda r: attempt(spec, prepared, r, runner, log, order_key, previous, domains_first),
                               roles, spec, runner, log, TableSource.again)
    done.promoted = promoted
    return done


def series_start(spec: ReleaseSpec, identity: series.Identity, prepared: shapes.PreparedRows, started: datetime,
                 runner: Runner = PLAIN, log: Log = QUIET) -> tuple[Any, bytes, Any]:
    """What needs no sanitizing is decided first: the ledger is readable and complete, and the DP budget holds
    (the ledger, read once for the run); the key of the published row order; with ``series.keep_groups``, the
    groups of the previous release kept. Returns (the series preflight's sharing, the order key, the kept groups or
    None)."""
    shared = runner.call(CHECK_SERIES, spec, identity, prepared.source_prints, started)
    order_key = series.order_key(series.series_key(spec.publish.root), spec.dataset)
    previous = None
    if spec.series.keep_groups:
        found = runner.call(PREVIOUS_GROUPS, spec.publish.root, spec.dataset, spec.series, started, identity,
                            prepared.source_prints, sharing=shared.earlier)
        previous = runner.call(KEPT_GROUPS, spec.publish.root, found, spec.method.name)
        log.info("[5/%d] series: keeping the groups of %s frozen for %d of %d records", STEPS,
                 found.release_id or "no earlier release", int((found.groups >= 0).sum()), len(found.groups))
    return shared, order_key, previous


def log_utility(log: Log, util: UtilityReport, release: Release) -> None:
    """The log lines of a release's utility once its gates passed."""
    if withholds(release.unit):  # measured on real held-out rows: in the private record only
        log.info("[7/%d] utility: the gates hold (the figures, measured on real rows, are withheld)", STEPS)
    elif util.accuracy is None:  # no classifier: the label-free measures only
        log.info("[7/%d] utility: %s", STEPS, utility.marginals_line(util.marginals))
    else:
        log.info("[7/%d] utility: accuracy %.4f (original %.4f)", STEPS, util.accuracy, util.accuracy_original)
        for d in util.delta_r:
            log.info("[7/%d] utility: delta R %s %+.4f", STEPS, d.classifier, d.value)
        for line in utility.tstr_lines(util.tstr, util.regression):
            log.info("[7/%d] utility: %s", STEPS, line)



# -- the sources -----------------------------------------------------------------------------------------------
class TableSource:
    """One table as the source of a release: the steps that differ from a folder of partitions'
    (:class:`ppdp.tasks.distributed.plan.FolderSource`), in the order :func:`run` asks for them."""

    tag_note = ""
    again = "tuning and sanitizing again"
    frame: pd.DataFrame
    report: IngestReport
    input: Input
    prepared: shapes.PreparedRows
    identity: series.Identity
    method: shapes.Method

    def __init__(self, spec: ReleaseSpec, ids: RunIds, runner: Runner = PLAIN, log: Log = QUIET,
                 after_ingest: Callable[[IngestReport], None] | None = None) -> None:
        self.spec, self.ids, self.runner, self.log, self.after_ingest = spec, ids, runner, log, after_ingest

    def read(self) -> pd.DataFrame:
        """Preflight and ingest (:func:`read_table`): the frame the roles are detected on."""
        self.frame, self.report = read_table(self.spec, self.runner, self.log, True, self.after_ingest)
        return self.frame

    def prepare(self, roles: Roles) -> None:
        """The identifiers protected, the rows prepared (:func:`prepare_read`; ``ids.known`` gains the input's
        digests then) and the series preflight (:func:`series_start`)."""
        spec, runner = self.spec, self.runner
        self.input = protect(spec, self.frame, self.report, roles, runner)
        self.prepared, self.identity = prepare_read(spec, self.input, runner)
        self.method = method_class(spec.method.name)
        self.ids.known.update(self.report.digests())
        self.shared, self.order_key, self.previous = series_start(spec, self.identity, self.prepared,
                                                                  self.ids.started, runner, self.log)

    def attempt(self, roles: Roles) -> Sanitized:
        return attempt(self.spec, self.prepared, roles, self.runner, self.log, self.order_key, self.previous)

    def discard(self) -> None:
        """Nothing is staged before the publish."""

    def judge_series(self, done: Sanitized, privacy: PrivacyReport) -> Any:
        return self.runner.call(
            JUDGE_SERIES, spec=self.spec, release=done.release, method=done.record, roles=done.roles,
            identity=self.identity, prints=self.prepared.source_prints, view=privacy.attacker_view,
            source=self.prepared.source, protected_columns=self.method.protected_columns(done.roles),
            now=self.ids.started, shared=self.shared)

    def utility(self, done: Sanitized) -> UtilityReport:
        return done.utility.result()

    def named(self, util: UtilityReport, done: Sanitized) -> UtilityReport:
        """The utility's classes named, and its log lines."""
        util = self.runner.call(NAME_CLASSES, util, done.release, done.roles.class_column, self.spec.label_k)
        log_utility(self.log, util, done.release)
        return util

    def manifest(self, done: Sanitized, privacy: PrivacyReport, judged: Any, util: UtilityReport) -> Manifest:
        """The output suite and the manifest."""
        spec, ids = self.spec, self.ids
        output_checks = self.runner.call(CHECK_OUTPUT, done.release, done.roles, spec)
        return self.runner.call(
            BUILD_MANIFEST, release_id=ids.release_id, started=ids.started, spec=spec,
            spec_sha256=ids.known["spec_sha256"], roles=done.roles, ingest=self.report, release=done.release,
            method=done.record, privacy=privacy, utility=util, tuning=done.trace, output_checks=output_checks,
            rare=self.prepared.rare, flow_run_id=ids.flow_run_id, series=judged.report)

    def publish(self, done: Sanitized, manifest: Manifest, privacy: PrivacyReport, judged: Any
                ) -> tuple[Any, Manifest]:
        """The plots and the tables published with the series ledger's record: (the folder, the manifest)."""
        ids, runner = self.ids, self.runner
        tuning_png = runner.call(PLOT_TUNING, done.trace)
        plots: dict[str, bytes] = runner.call(PLOT_EXTRAS, self.method, done.release, privacy)
        extras = {"tuning.png": tuning_png, **plots}
        record = series.record_of(self.spec, ids.release_id, ids.started, done.record, manifest.rows, privacy.k,
                                  self.identity, judged.report, judged.members, judged.seen)
        folder, manifest, _ = runner.call(WRITE_RELEASE, shapes.tables(self.method, done.release), manifest,
                                          {n: b for n, b in extras.items() if b}, ids.started, record)
        return folder, manifest

    def result(self, folder: Any, manifest: Manifest, done: Sanitized, privacy: PrivacyReport, judged: Any,
               util: UtilityReport) -> tuple[ReleaseResult, Manifest | None]:
        """The run's result and the manifest published."""
        trace, unit = done.trace, done.release.unit
        hidden = withholds(unit)
        return ReleaseResult(
            release_id=self.ids.release_id, status="published", reason="published", folder=str(folder), unit=unit,
            report=str(folder / "report.html"),  # publish writes it (or refuses)
            k=privacy.k, linkage_risk=privacy.linkage_risk, accuracy=util.accuracy,
            accuracy_original=util.accuracy_original, claims=privacy.claims, attacker_view=privacy.attacker_view,
            floor=privacy.floor, series=judged.report, tuning_rule=trace.rule, tuning_strategy=trace.strategy,
            tuned=trace.tuned_text(), per_class={c.label: c.sanitized for c in util.per_class},
            delta_r={d.classifier: d.value for d in util.delta_r}, marginals=None if hidden else util.marginals,
            tstr=[] if hidden else util.tstr, regression=[] if hidden else util.regression), manifest


class Source(Protocol[A]):
    """Where a release reads from (one table: :class:`TableSource`; a folder of partitions:
    :class:`ppdp.tasks.distributed.plan.FolderSource`): the steps :func:`run` delegates, ``A`` an attempt (tuned,
    sanitized, measured). ``tag_note``: what the tagging's log line adds; ``again``: the promotion's."""

    tag_note: str
    again: str

    def read(self) -> Any: ...

    def prepare(self, roles: Roles) -> None: ...

    def attempt(self, roles: Roles) -> A: ...

    def discard(self) -> None: ...

    def judge_series(self, done: A, privacy: PrivacyReport) -> Any: ...

    def utility(self, done: A) -> UtilityReport: ...

    def named(self, util: UtilityReport, done: A) -> UtilityReport: ...

    def manifest(self, done: A, privacy: PrivacyReport, judged: Any, util: UtilityReport) -> Manifest: ...

    def publish(self, done: A, manifest: Manifest, privacy: PrivacyReport, judged: Any) -> tuple[Any, Manifest]: ...

    def result(self, folder: Any, manifest: Manifest, done: A, privacy: PrivacyReport, judged: Any,
               util: UtilityReport) -> tuple[ReleaseResult, Manifest | None]: ...


def source_of(spec: ReleaseSpec, ids: RunIds, runner: Runner = PLAIN, log: Log = QUIET,
              after_ingest: Callable[[IngestReport], None] | None = None) -> Source[Any]:
    """The source of ``spec``: a folder of Parquet files (released partition by partition; a method or strategy
    that cannot is refused here, before anything is read) or one table."""
    if spec.source.partitioned:
        return partitioned.FolderSource(spec, ids, runner, log, after_ingest)
    return TableSource(spec, ids, runner, log, after_ingest)


def run(spec: ReleaseSpec, ids: RunIds, runner: Runner = PLAIN, log: Log = QUIET,
        after_ingest: Callable[[IngestReport], None] | None = None) -> tuple[ReleaseResult, Manifest | None]:
    """A release, every step in order, over its source (:func:`source_of`): read the input and tag it, prepare,
    then tune -> sanitize -> measure (once more after promoting columns), the privacy gates, the series judgement
    and its gates, the utility gates, the manifest and the publish. Returns the result and the manifest published
    (None for a folder of partitions: its manifest is in the folder published); raises a
    :class:`ppdp.tasks.core.errors.PpdpError` when refused (nothing published, nothing left staged).
    ``ids.known`` gains the input's digests once it is read; ``after_ingest`` runs on the ingest report (the rerun
    check)."""
    source = source_of(spec, ids, runner, log, after_ingest)
    roles = tagged(spec, source.read(), runner, log, source.tag_note)
    source.prepare(roles)
    try:
        done, _ = promoting(source.attempt, roles, spec, runner, log, source.again)
        privacy = runner.call(ENFORCE_PRIVACY, done.privacy)
        log_privacy(log, privacy)
        judged = source.judge_series(done, privacy)
        runner.call(ENFORCE_SERIES, judged.report)
        log.info("[6/%d] series: %s", STEPS, series_line(judged.report))
        util = source.named(runner.call(ENFORCE_UTILITY, source.utility(done)), done)
        manifest = source.manifest(done, privacy, judged, util)
        folder, manifest = source.publish(done, manifest, privacy, judged)
        log.info("[8/%d] published %s", STEPS, folder)
        return source.result(folder, manifest, done, privacy, judged, util)
    except BaseException:
        source.discard()
        raise
