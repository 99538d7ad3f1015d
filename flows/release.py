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

import re
from datetime import UTC, datetime
from typing import Any, TypedDict

import ppdp.flows  # noqa: F401  (applies Prefect's data-safety settings first)

from prefect import State, flow, get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed

from ppdp.flows.rerun import Unchanged, stop_if_unchanged
from ppdp.flows.runners import SpecTaskRunner
from ppdp.schemas.manifest import ReleaseResult
from ppdp.schemas.reports import TuningTrace
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks import audit, gates, ingest, interrupt, publish, rare, secrets, series, shapes, tag, tune
from ppdp.tasks import utility
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.threads import one_native_thread_from_now_on
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.plots import tuning_plot_png
from ppdp.tasks.private_record import withholds
from ppdp.tasks.privacy import judge
from ppdp.tasks.privacy import series as series_judge
from ppdp.tasks.privacy.series import series_line
from ppdp.tasks.sanitize.registry import build_sanitizer, method_class, run_method

from ppdp.flows.steps import STEPS, _sanitizer_settings, _value, log_privacy, log_promoted, step


load_spec = step(spec_io.load_spec, "load-spec")
preflight = step(spec_io.preflight, "preflight", lambda p: p["spec"].dataset)
read_input = step(ingest.ingest, "ingest", lambda p: f"{p['spec'].dataset} ({p['spec'].source.format})")
tag_columns = step(tag.tag_columns, "tag", lambda p: f"{len(p['frame'].columns)} columns")
protect_identifiers = step(tag.protect_identifiers, "protect-identifiers",
                           lambda p: f"{len(p['roles'].identifiers)} identifiers, {p['policy'].action}")
merge_rare = step(rare.merge_rare_categories, "merge-rare-categories", lambda p: f"k={_value(p['k'])}")
hold_out = step(utility.split_holdout_keyed, "hold-out",
                lambda p: f"{p['fraction']:.0%} held out" if p["class_column"] else "none held out (no classifier)")
settle_rows = step(shapes.settle, "settle-rows", lambda p: f"k={_value(p['k'])}")  # no count: Prefect keeps names
check_feasible = step(gates.check_feasible, "check-feasible")
evaluate = step(tune.evaluate_value, "evaluate", lambda p: f"{p['parameter']}={_value(p['value'])}")
search_lattice = step(tune.search_lattice, "search-lattice",
                      lambda p: f"{len(p['roles'].quasi_identifiers)} quasi-identifiers")
sanitize = step(run_method, "sanitize", lambda p: _sanitizer_settings(p["sanitizer"]))
measure_privacy = step(shapes.check_privacy, "validate-privacy", lambda p: f"unit {p['release'].unit}")
enforce_privacy = step(gates.enforce_privacy, "enforce-privacy-gates")
promote_columns = step(judge.promote_counted_columns, "promote-columns")
judge_series = step(series_judge.judge_series, "judge-series", lambda p: p["spec"].dataset)
enforce_series = step(gates.enforce_series, "enforce-series-gates")
previous_groups = step(series.previous_groups, "previous-groups", lambda p: p["dataset"])
kept_groups = step(series.kept_input, "kept-groups", lambda p: p["method"])
check_utility = step(shapes.check_utility, "check-utility", lambda p: p["spec"].utility.classifier)
enforce_utility = step(gates.enforce_utility, "enforce-utility-gates")
name_classes = step(utility.name_classes, "name-classes")
check_output = step(publish.check_output, "check-output", lambda p: f"unit {p['release'].unit}")
build_manifest = step(publish.build_manifest, "build-manifest", lambda p: p["release_id"])
write_release = step(publish.publish_release, "publish", lambda p: p["manifest"].release_id)
plot_tuning = step(tuning_plot_png, "plot-tuning", lambda p: f"{len(p['trace'].evaluations)} evaluations")
plot_extras = step(shapes.extra_files, "plot-extras")


def prepare(spec: ReleaseSpec, logger, check_root: bool = True, after_ingest=None):
    """Preflight, ingest, tag, protect identifiers, merge rare values, hold out, settle the rows the method's
    shape publishes (each a task): (ingest report, roles, the prepared rows, what the fingerprints cover).
    ``after_ingest(ingest report)``, when given, runs right after the input is read (the rerun check)."""
    preflight(spec, check_root)
    frame, ingest_report = read_input(spec)
    if after_ingest is not None:
        after_ingest(ingest_report)
    if withholds(spec.method.unit):  # Prefect's database keeps the logs: no count of the input
        logger.info("[2/%d] ingest: %d columns, %d expectations passed", STEPS, len(ingest_report.columns),
                    ingest_report.expectation_count)
    else:
        logger.info("[2/%d] ingest: %d rows, %d columns, %d expectations passed", STEPS, ingest_report.rows,
                    len(ingest_report.columns), ingest_report.expectation_count)
    roles = tag_columns(frame, spec)
    logger.info("[3/%d] tag: %d quasi-identifiers, %d direct identifiers (%s), class %s", STEPS,
                len(roles.quasi_identifiers), len(roles.identifiers), spec.identifiers.action,
                "declared" if roles.class_column else "none")
    protected = protect_identifiers(frame, roles, spec.identifiers, secrets.pseudonym_key(spec.identifiers))
    method = method_class(spec.method.name)
    unmerged = protected  # the label-free utility's baseline: the input before the rare-value rule
    protected, rare_report = merge_rare(protected, roles, spec.rare_k, shapes.rare_rule_skip(method, roles))
    identity = fingerprint(frame, roles, spec.publish.root)
    # held out only when a classifier is trained (a class column declared, utility.classifier not none)
    train, test, joined_prints = hold_out(protected, roles.class_column if spec.classifies else None,
                                          spec.utility.test_fraction, spec.seed, identity.prints,
                                          spec.series.keep_groups)
    prepared = settle_rows(method, protected, train, test, roles, spec.rare_k, rare_report, identity.prints,
                           joined_prints, unmerged)
    check_feasible(spec.privacy, method.unit, prepared.source, roles)  # a gate no release can meet: before tuning
    return ingest_report, roles, prepared, identity


class _Progress(TypedDict):
    """The tuning's evaluations so far and the most it can make (None: not known)."""

    done: int
    most: int | None


fingerprint = step(series.identify, "fingerprint-records")
check_series = step(series_judge.preflight_series, "check-series", lambda p: p["spec"].dataset)


def tune_method(spec: ReleaseSpec, roles, prepared: shapes.PreparedRows, logger=None):
    """The tuning step: the tuned sanitizer and the trace; evaluations run as parallel Prefect tasks (named
    ``evaluate k=45``), each logged with an ``i/N`` count when it ends. A lattice search runs on the rows the method
    publishes."""
    base = build_sanitizer(spec.method, seed=spec.seed)
    train, test = prepared.train, prepared.test
    check = spec.tuning.objective == "best_utility_meeting_policy"
    parameter = spec.tuning.parameter or next(iter(base.tunable), None)
    progress: _Progress = {"done": 0, "most": None}

    def plan(most: int | None) -> None:
        progress["most"] = most

    def evaluate_many(values: list[float]):
        futures = []
        for v in values:
            value = int(v) if float(v).is_integer() else v
            futures.append(evaluate.submit(base, parameter, value, train, test, roles, spec.utility.classifier,
                                           spec.tuning.repeats, spec.privacy, check))
        results = []
        for f in futures:
            ev = f.result()
            results.append(ev)
            progress["done"] += 1
            if logger is not None:
                of = f"/{progress['most']}" if progress["most"] else ""
                privacy = "n/a" if ev.privacy is None else f"{ev.privacy:.4f}"
                logger.info("[4/%d] tune: evaluation %d%s: %s=%s accuracy %.4f privacy %s (%.1fs)", STEPS,
                            progress["done"], of, parameter, _value(ev.value), ev.accuracy, privacy, ev.seconds)
        return results

    # the search itself runs here, in the flow, so that its evaluations can be submitted as parallel tasks
    trace: TuningTrace = tune.tune(spec.tuning, sanitizer=base, domains=base.domains(train, roles), policy=spec.privacy,
                                sizes=tune.class_sizes(train, roles), evaluate_many=evaluate_many,
                                suggest=lambda t: base.suggest(train, roles, t),
                                search=lambda name: search_lattice(base, name, prepared.source, roles), plan=plan,
                                inherited=spec.inherited)
    if not spec.classifies and trace.evaluations:  # the evaluations' "accuracy" is the label-free similarity
        from ppdp.tasks.marginals import SIMILARITY_MEASURE

        trace = trace.model_copy(update={"utility_measure": SIMILARITY_MEASURE})
    return tune.tuned(base, trace), trace


def artifact_key(dataset: str, kind: str) -> str:
    """A Prefect artifact key per dataset (lowercase letters, digits and dashes only), so that the UI keeps one
    history per dataset and kind: ``ppdp-census-demo-release``."""
    slug = re.sub(r"[^a-z0-9]+", "-", dataset.lower()).strip("-") or "dataset"
    return f"ppdp-{slug}-{kind}"


def publish_artifacts(manifest) -> None:
    """The release's summary as a markdown and a table artifact (aggregates only, as in ``report.html``)."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    from ppdp.tasks.report import report_markdown, report_table

    create_markdown_artifact(markdown=report_markdown(manifest), key=artifact_key(manifest.dataset, "release"),
                             description=f"ppdp release {manifest.release_id}: what was published and how safe it is")
    create_table_artifact(table=report_table(manifest), key=artifact_key(manifest.dataset, "claims"),
                          description=f"ppdp release {manifest.release_id}: privacy claims and key figures")


def refusal_artifact(dataset: str | None, release_id: str, exc: Exception) -> None:
    """A refused release leaves a markdown artifact too (the kind of refusal only: its message is in the audit
    trail), so the dataset's history in the UI shows it."""
    from prefect.artifacts import create_markdown_artifact

    if not dataset:
        return
    kind = type(exc).__name__ if isinstance(exc, PpdpError) else "internal error"
    try:
        create_markdown_artifact(
            markdown=f"# Release {release_id} of `{dataset}` was refused\n\nRefusal: **{kind}**. Nothing was "
                     "published. The reason is in the publish root's audit trail (`ppdp audit show`).\n",
            key=artifact_key(dataset, "release"), description=f"ppdp release {release_id}: refused")
    except Exception:  # noqa: BLE001 - the refusal is audited; its artifact is a courtesy
        pass


# -- the flows ---------------------------------------------------------------------------------------------
@flow(name="ppdp-release", persist_result=False, log_prints=False,
      task_runner=SpecTaskRunner())  # type: ignore[arg-type]  # prefect#16938: refuses every concrete runner
def release_flow(spec_path: str, overrides: list[str] | None = None,
                 force: bool = False) -> ReleaseResult | State:  # State: Failed
    """Run one release from a spec file; raise :class:`ppdp.tasks.core.errors.PpdpError` when refused (nothing
    published). A run whose input, spec and code are those of the dataset's latest release publishes nothing and
    returns status ``unchanged`` (:mod:`ppdp.tasks.rerun`) unless ``force``."""
    logger = get_run_logger()
    one_native_thread_from_now_on()  # parallel evaluations: one native thread each (see ppdp.tasks.core.threads)
    overrides = list(overrides or [])
    started = datetime.now(UTC)
    release_id = publish.new_release_id(started)
    run_id = str(flow_run.get_id()) if flow_run.get_id() else None
    # what a refusal's audit entry records: the spec's hash, the input's keyed digest (its unkeyed SHA-256 only in the
    # publisher's private record) and whether its reason is withheld (a differential_privacy run)
    known: dict[str, Any] = {"spec_sha256": None, "input_digest": None, "input_key_id": None, "private_sha256": None,
                             "withhold": False}
    spec: ReleaseSpec | None = None
    try:
        spec = load_spec(spec_path, overrides)
        known["spec_sha256"] = spec_hash = spec_io.spec_sha256(spec)
        known["withhold"] = withholds(spec.method.unit)
        # an interruption (SIGINT, a Prefect cancellation) of this run is audited under its root (ppdp.tasks.interrupt)
        interrupt.begin_run(root=spec.publish.root, release_id=release_id, dataset=spec.dataset, started=started,
                            flow_run_id=run_id, known=known)
        logger.info("[1/%d] spec %s: dataset %s, method %s", STEPS, spec_path, spec.dataset, spec.method.name)
        if spec.source.partitioned:  # a folder of Parquet files: released partition by partition
            from ppdp.flows.partitioned import release_partitioned

            result = release_partitioned(spec, release_id=release_id, started=started, run_id=run_id,
                                         spec_sha256=spec_hash, known=known, logger=logger, force=force)
            if result.status == "published":  # whatever Prefect does next, the command can report it
                interrupt.note_result(result)
            return result
        ingest_report, roles, prepared, identity = prepare(
            spec, logger, after_ingest=None if force else lambda report: stop_if_unchanged(spec, spec_hash, report,
                                                                                           logger))
        known.update(ingest_report.digests())
        method_cls = method_class(spec.method.name)
        # what needs no sanitizing is decided first: the ledger is readable and complete, and the DP budget holds
        shared = check_series(spec, identity, prepared.source_prints, started)  # the ledger, read once for the run
        # the rows the method's shape publishes: the training rows (the held-out rows are never sanitized nor
        # published), or every input row (a recoding)
        source = prepared.source
        order_key = series.order_key(series.series_key(spec.publish.root), spec.dataset)
        previous = None
        if spec.series.keep_groups:
            found = previous_groups(spec.publish.root, spec.dataset, spec.series, started, identity,
                                    prepared.source_prints, sharing=shared.earlier)
            previous = kept_groups(spec.publish.root, found, spec.method.name)
            logger.info("[5/%d] series: keeping the groups of %s frozen for %d of %d records", STEPS,
                        found.release_id or "no earlier release", int((found.groups >= 0).sum()), len(found.groups))
        for attempt in (1, 2):  # once more when a column published beside the quasi-identifiers must become one
            sanitizer, trace = tune_method(spec, roles, prepared, logger)
            logger.info("[4/%d] tune (%s): %s", STEPS, trace.strategy, trace.rule)
            release, method = sanitize(sanitizer, source, roles, order_key, previous)
            logger.info("[5/%d] sanitize: %s, unit %s (%.2fs)", STEPS, shapes.summary(method_cls, release),
                        release.unit, method.seconds)
            # privacy and utility are measured in parallel (submitted tasks: Dask tasks on a Dask runner); the
            # privacy gates are enforced first
            measured = measure_privacy.submit(method_cls, source, release, roles, spec, prepared.everything)
            checked = check_utility.submit(method_cls, spec, release, roles, prepared)
            report = measured.result()
            promoted = promote_columns(roles, report, spec.privacy) if attempt == 1 else None
            if promoted is None:
                break
            log_promoted(logger, roles, promoted, "tuning and sanitizing again")
            roles = promoted
        privacy = enforce_privacy(report)
        log_privacy(logger, privacy)
        judged = judge_series(
            spec=spec, release=release, method=method, roles=roles, identity=identity, prints=prepared.source_prints,
            view=privacy.attacker_view, source=source, protected_columns=method_cls.protected_columns(roles),
            now=started, shared=shared)
        series_report = judged.report
        enforce_series(series_report)
        logger.info("[6/%d] series: %s", STEPS, series_line(series_report))
        util = name_classes(enforce_utility(checked.result()), release, roles.class_column, spec.label_k)
        if withholds(release.unit):  # measured on real held-out rows: in the private record only
            logger.info("[7/%d] utility: the gates hold (the figures, measured on real rows, are withheld)", STEPS)
        elif util.accuracy is None:  # no classifier: the label-free measures only
            logger.info("[7/%d] utility: %s", STEPS, utility.marginals_line(util.marginals))
        else:
            logger.info("[7/%d] utility: accuracy %.4f (original %.4f)", STEPS, util.accuracy,
                        util.accuracy_original)
            for d in util.delta_r:
                logger.info("[7/%d] utility: delta R %s %+.4f", STEPS, d.classifier, d.value)
            for line in utility.tstr_lines(util.tstr, util.regression):
                logger.info("[7/%d] utility: %s", STEPS, line)
        output_checks = check_output(release, roles, spec)
        manifest = build_manifest(
            release_id=release_id, started=started, spec=spec, spec_sha256=known["spec_sha256"], roles=roles,
            ingest=ingest_report, release=release, method=method, privacy=privacy, utility=util, tuning=trace,
            output_checks=output_checks, rare=prepared.rare, flow_run_id=run_id, series=series_report)
        extras = {"tuning.png": plot_tuning(trace), **plot_extras(method_cls, release, privacy)}
        record = series.record_of(spec, release_id, started, method, manifest.rows, privacy.k, identity,
                                  series_report, judged.members, judged.seen)
        folder, manifest, _ = write_release(shapes.tables(method_cls, release), manifest,
                                            {n: b for n, b in extras.items() if b}, started, record)
        logger.info("[8/%d] published %s", STEPS, folder)
        result = ReleaseResult(
            release_id=release_id, status="published", reason="published", folder=str(folder), unit=release.unit,
            report=str(folder / "report.html"),  # publish writes it (or refuses)
            k=privacy.k, linkage_risk=privacy.linkage_risk, accuracy=util.accuracy,
            accuracy_original=util.accuracy_original, claims=privacy.claims, attacker_view=privacy.attacker_view,
            floor=privacy.floor, series=series_report,
            tuning_rule=trace.rule, tuning_strategy=trace.strategy,
            tuned=trace.tuned_text(),
            per_class={c.label: c.sanitized for c in util.per_class},
            delta_r={d.classifier: d.value for d in util.delta_r},
            marginals=None if withholds(release.unit) else util.marginals,
            tstr=[] if withholds(release.unit) else util.tstr,
            regression=[] if withholds(release.unit) else util.regression,
        )
        artifacts = (f"the artifacts {artifact_key(manifest.dataset, 'release')} and "
                     f"{artifact_key(manifest.dataset, 'claims')}")
        interrupt.note_not_recorded(artifacts)  # until Prefect has them
        interrupt.note_result(result)  # published: whatever Prefect does next, the command can report it
        try:  # the release is published and audited by now: a failed artifact is a warning, not a refusal
            publish_artifacts(manifest)
            interrupt.note_recorded(artifacts)
        except Exception as exc:  # noqa: BLE001
            logger.warning("release artifacts not created (%s)", type(exc).__name__)
        return result
    except Unchanged as same:  # nothing to publish: no refusal, no audit entry
        return same.result
    except PpdpError as exc:
        root = spec.publish.root if spec is not None else spec_io.guess_publish_root(spec_path, overrides)
        audit.record_refusal(root, release_id=release_id, dataset=spec.dataset if spec else None, error=exc,
                             started_at=started, flow_run_id=run_id, **known)
        refusal_artifact(spec.dataset if spec else None, release_id, exc)
        # raised to the caller; the state's message (stored by Prefect) names the kind of refusal only
        return Failed(message=f"release refused ({type(exc).__name__}; see the audit trail)", data=exc)
    except Exception as exc:  # an unexpected failure is recorded too, by type only (messages may hold data)
        audit.record_refusal(spec.publish.root if spec is not None else None, release_id=release_id,
                             dataset=spec.dataset if spec else None,
                             error=PpdpError(f"internal error ({type(exc).__name__})"), started_at=started,
                             flow_run_id=run_id, **known)
        refusal_artifact(spec.dataset if spec else None, release_id, exc)
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)


@flow(name="ppdp-tune", persist_result=False, log_prints=False,
      task_runner=SpecTaskRunner())  # type: ignore[arg-type]  # prefect#16938: refuses every concrete runner
def tune_flow(spec_path: str, overrides: list[str] | None = None) -> TuningTrace | State:  # State: Failed
    """Only the tuning: ingest, tag, hold out, evaluate values; returns the trace (nothing is published)."""
    logger = get_run_logger()
    one_native_thread_from_now_on()
    try:
        spec = load_spec(spec_path, list(overrides or []))
        _, roles, prepared, _ = prepare(spec, logger, check_root=False)
        _, trace = tune_method(spec, roles, prepared, logger)
        logger.info("tune (%s): %s", trace.strategy, trace.rule)
        return trace
    except PpdpError as exc:
        return Failed(message=f"tuning refused ({type(exc).__name__})", data=exc)
    except Exception as exc:  # noqa: BLE001 - by type only: the message may quote data
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)
