# ruff: noqa: I001  (ppdp.flows must be imported before prefect: it applies the data-safety settings)
"""The release flow: spec -> ingest -> tag -> protect -> rare values -> hold out -> tune -> sanitize -> validate
privacy -> check utility -> publish -> audit. Every step is a plain function of :mod:`ppdp.tasks` made a Prefect
task by :func:`step`; this file only wires.

Every task is declared with ``cache_policy=NO_CACHE, persist_result=False``: a cached or persisted task result
is a pickle on disk, and these results are DataFrames of raw or sanitized data. Flow parameters are paths and
overrides only (Prefect stores them in its database); exception messages carry no data values.

A flow that *raises* has its exception pickled into result storage by Prefect whatever the persistence settings
(measured with Prefect 3.9: ``handle_exception`` writes with ``write_result=True``). So the flow never raises: it
audits the refusal and returns a ``Failed`` state carrying the exception in memory; calling the flow still
raises that exception, and the run is still marked failed.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime

import ppdp.flows  # noqa: F401  (applies Prefect's data-safety settings first)

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from prefect.states import Failed
from prefect.task_runners import ThreadPoolTaskRunner

from ppdp.schemas.manifest import ReleaseResult
from ppdp.schemas.reports import TuningTrace
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks import audit, gates, ingest, publish, rare, secrets, tag, tune, utility
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.plots import tuning_plot_png
from ppdp.tasks.privacy.validate import privacy_checks
from ppdp.tasks.sanitize.registry import build_sanitizer, method_class, run_method

STEPS = 8


class _Refusal:
    """What a guarded step returns instead of raising: the exception, kept in memory (never persisted)."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def _guarded(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - handed to the flow, which audits and reports it
            return _Refusal(exc)

    return run


def _unwrap(value):
    if isinstance(value, _Refusal):
        raise value.error
    return value


class _Future:
    def __init__(self, future) -> None:
        self.future = future

    def result(self):
        return _unwrap(self.future.result())


class step:  # noqa: N801 - used like a decorator
    """A plain step function as a Prefect task that never caches or persists its result (see above).

    An expected refusal (a :class:`PpdpError`) or an unexpected error inside the task is returned to the flow
    rather than raised inside the task, so Prefect neither logs a traceback nor stores the exception text for
    the task run; calling the step (or a submitted step's ``result()``) in the flow raises it there, where the
    flow audits it and ends in a ``Failed`` state without exception text (see :func:`release_flow`).
    """

    def __init__(self, fn, name: str) -> None:
        self.task = task(_guarded(fn), name=name, cache_policy=NO_CACHE, persist_result=False)

    def __call__(self, *args, **kwargs):
        return _unwrap(self.task(*args, **kwargs))

    def submit(self, *args, **kwargs) -> _Future:
        return _Future(self.task.submit(*args, **kwargs))


load_spec = step(spec_io.load_spec, "load-spec")
preflight = step(spec_io.preflight, "preflight")
read_input = step(ingest.ingest, "ingest")
tag_columns = step(tag.tag_columns, "tag")
protect_identifiers = step(tag.protect_identifiers, "protect-identifiers")
merge_rare = step(rare.merge_rare_categories, "merge-rare-categories")
hold_out = step(utility.split_holdout, "hold-out")
evaluate = step(tune.evaluate_value, "evaluate")
search_lattice = step(tune.search_lattice, "search-lattice")
sanitize = step(run_method, "sanitize")
measure_privacy = step(privacy_checks, "validate-privacy")
enforce_privacy = step(gates.enforce_privacy, "enforce-privacy-gates")
split_release = step(utility.split_release, "split-release")
check_utility = step(utility.evaluate_utility, "check-utility")
enforce_utility = step(gates.enforce_utility, "enforce-utility-gates")
check_output = step(publish.check_output, "check-output")
build_manifest = step(publish.build_manifest, "build-manifest")
write_release = step(publish.publish_release, "publish")


def prepare(spec: ReleaseSpec, logger, check_root: bool = True):
    """Preflight, ingest, tag, protect identifiers, merge rare values, hold out (each a task)."""
    preflight(spec, check_root)
    frame, ingest_report = read_input(spec)
    logger.info("[2/%d] ingest: %d rows, %d columns, %d expectations passed", STEPS, ingest_report.rows,
                len(ingest_report.columns), ingest_report.expectation_count)
    roles = tag_columns(frame, spec)
    logger.info("[3/%d] tag: %d quasi-identifiers, %d direct identifiers (%s), class %s", STEPS,
                len(roles.quasi_identifiers), len(roles.identifiers), spec.identifiers.action,
                "declared" if roles.class_column else "none")
    protected = protect_identifiers(frame, roles, spec.identifiers, secrets.pseudonym_key(spec.identifiers))
    generalizes = method_class(spec.method.name).generalizes  # its quasi-identifiers: classes of >= k by design
    protected, rare_report = merge_rare(protected, roles, spec.rare_k, roles.quasi_identifiers if generalizes else ())
    train, test = hold_out(protected, roles.class_column, spec.utility.test_fraction, spec.seed)
    return ingest_report, roles, rare_report, protected.reset_index(drop=True), train, test


def tune_method(spec: ReleaseSpec, roles, train, test, everything=None):
    """The tuning step: the base sanitizer and the trace; evaluations run as parallel Prefect tasks. A lattice
    search runs on ``everything`` (every input row: the rows a recoding method publishes)."""
    base = build_sanitizer(spec.method, seed=spec.seed)
    rows = train if everything is None else everything
    check = spec.tuning.objective == "best_utility_meeting_policy"
    parameter = spec.tuning.parameter or next(iter(base.tunable), None)

    def evaluate_many(values: list[float]):
        futures = [evaluate.submit(base, parameter, int(v) if float(v).is_integer() else v, train, test, roles,
                                   spec.utility.classifier, spec.tuning.repeats, spec.privacy, check)
                   for v in values]
        return [f.result() for f in futures]

    # the search itself runs here, in the flow, so that its evaluations can be submitted as parallel tasks
    trace: TuningTrace = tune.tune(spec.tuning, sanitizer=base, domains=base.domains(train, roles), policy=spec.privacy,
                                sizes=tune.class_sizes(train, roles), evaluate_many=evaluate_many,
                                suggest=lambda t: base.suggest(train, roles, t),
                                search=lambda: search_lattice(base, rows, roles))
    if trace.lattice is not None:
        return base.with_params(**{trace.parameter: dict(trace.lattice.node)}), trace
    chosen = base if trace.parameter is None or trace.chosen is None else base.with_params(
        **{trace.parameter: trace.chosen})
    return chosen, trace



# -- the flows ---------------------------------------------------------------------------------------------
@flow(name="ppdp-release", persist_result=False, log_prints=False, task_runner=ThreadPoolTaskRunner(max_workers=2))
def release_flow(spec_path: str, overrides: list[str] | None = None) -> ReleaseResult:  # or a Failed state
    """Run one release from a spec file; raise :class:`ppdp.tasks.core.errors.PpdpError` when refused (nothing
    published)."""
    logger = get_run_logger()
    overrides = list(overrides or [])
    started = datetime.now(UTC)
    release_id = publish.new_release_id(started)
    run_id = str(flow_run.get_id()) if flow_run.get_id() else None
    known: dict[str, str | None] = {"spec_sha256": None, "input_sha256": None}
    spec: ReleaseSpec | None = None
    try:
        spec = load_spec(spec_path, overrides)
        known["spec_sha256"] = spec_io.spec_sha256(spec)
        logger.info("[1/%d] spec %s: dataset %s, method %s", STEPS, spec_path, spec.dataset, spec.method.name)
        ingest_report, roles, rare_report, protected, train, test = prepare(spec, logger)
        known["input_sha256"] = ingest_report.input_sha256
        every_row = method_class(spec.method.name).covers_every_row
        sanitizer, trace = tune_method(spec, roles, train, test, protected if every_row else None)
        logger.info("[4/%d] tune (%s): %s", STEPS, trace.strategy, trace.rule)
        # a recoding (generalization) publishes every input row; the other methods publish the training rows (the
        # held-out rows are never sanitized nor published)
        source = protected if every_row else train
        release, method = sanitize(sanitizer, source, roles)
        logger.info("[5/%d] sanitize: %d records, unit %s (%.2fs)", STEPS, len(release.frame), release.unit,
                    method.seconds)
        privacy = enforce_privacy(measure_privacy(source, release, roles, spec))
        logger.info("[6/%d] privacy: %d claims hold", STEPS, len(privacy.claims))
        if every_row:  # utility on the published table: its rows of the training split against its held-out rows
            published_train, published_test = split_release(release, protected, roles.class_column,
                                                            spec.utility.test_fraction, spec.seed)
            util = enforce_utility(check_utility(train, published_train, test, roles, spec.utility, spec.seed,
                                                 published_test))
        else:
            util = enforce_utility(check_utility(train, release.frame, test, roles, spec.utility, spec.seed))
        logger.info("[7/%d] utility: accuracy %.4f (original %.4f)", STEPS, util.accuracy, util.accuracy_original)
        for d in util.delta_r:
            logger.info("[7/%d] utility: delta R %s %+.4f", STEPS, d.classifier, d.value)
        output_checks = check_output(release, roles, spec)
        manifest = build_manifest(
            release_id=release_id, started=started, spec=spec, spec_sha256=known["spec_sha256"], roles=roles,
            ingest=ingest_report, release=release, method=method, privacy=privacy, utility=util, tuning=trace,
            output_checks=output_checks, rare=rare_report, flow_run_id=run_id)
        plot = tuning_plot_png(trace)
        folder, manifest, _ = write_release(release.frame, manifest, {"tuning.png": plot} if plot else {}, started)
        logger.info("[8/%d] published %s", STEPS, folder)
        return ReleaseResult(
            release_id=release_id, status="published", reason="published", folder=str(folder), unit=release.unit,
            k=privacy.k, linkage_risk=privacy.linkage_risk, accuracy=util.accuracy,
            accuracy_original=util.accuracy_original, claims=privacy.claims,
            tuning_rule=trace.rule, tuned=None if trace.parameter is None else
            f"{trace.parameter}={trace.chosen if trace.lattice is None else dict(trace.lattice.node)}",
            per_class={c.label: c.sanitized for c in util.per_class},
            delta_r={d.classifier: d.value for d in util.delta_r},
        )
    except PpdpError as exc:
        root = spec.publish.root if spec is not None else spec_io.guess_publish_root(spec_path, overrides)
        audit.record_refusal(root, release_id=release_id, dataset=spec.dataset if spec else None, error=exc,
                             started_at=started, flow_run_id=run_id, **known)
        # raised to the caller; the state's message (stored by Prefect) names the kind of refusal only
        return Failed(message=f"release refused ({type(exc).__name__}; see the audit trail)", data=exc)
    except Exception as exc:  # an unexpected failure is recorded too, by type only (messages may hold data)
        audit.record_refusal(spec.publish.root if spec is not None else None, release_id=release_id,
                             dataset=spec.dataset if spec else None,
                             error=PpdpError(f"internal error ({type(exc).__name__})"), started_at=started,
                             flow_run_id=run_id, **known)
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)


@flow(name="ppdp-tune", persist_result=False, log_prints=False, task_runner=ThreadPoolTaskRunner(max_workers=2))
def tune_flow(spec_path: str, overrides: list[str] | None = None) -> TuningTrace:  # or a Failed state
    """Only the tuning: ingest, tag, hold out, evaluate values; returns the trace (nothing is published)."""
    logger = get_run_logger()
    try:
        spec = load_spec(spec_path, list(overrides or []))
        _, roles, _, protected, train, test = prepare(spec, logger, check_root=False)
        every_row = method_class(spec.method.name).covers_every_row
        _, trace = tune_method(spec, roles, train, test, protected if every_row else None)
        logger.info("tune (%s): %s", trace.strategy, trace.rule)
        return trace
    except PpdpError as exc:
        return Failed(message=f"tuning refused ({type(exc).__name__})", data=exc)
    except Exception as exc:  # noqa: BLE001 - by type only: the message may quote data
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)
