"""The release flow: spec -> ingest -> tag -> tune -> sanitize -> validate privacy -> check utility -> publish
-> audit. Each step is a thin Prefect task around a plain function of :mod:`tasks`; this file only wires.

Every task is declared with ``cache_policy=NO_CACHE, persist_result=False``: a cached or persisted task result
is a pickle on disk, and these results are DataFrames of raw or sanitized data. Flow parameters are paths and
overrides only (Prefect stores them in its database); exception messages carry no data values.

A flow that *raises* has its exception pickled into result storage by Prefect whatever the persistence settings
(measured with Prefect 3.9: ``handle_exception`` writes with ``write_result=True``). So the flow never raises: it
audits the refusal and returns a ``Failed`` state carrying the exception in memory; calling the flow still
raises that exception, and the run is still marked failed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from prefect.states import Failed
from prefect.task_runners import ThreadPoolTaskRunner

import ppdp.flows  # noqa: F401  (applies Prefect's data-safety settings first)
from ppdp.schemas.manifest import Manifest, ReleaseResult
from ppdp.schemas.reports import (
    Evaluation,
    ExpectationOutcome,
    IngestReport,
    MethodRecord,
    PrivacyReport,
    Roles,
    TuningTrace,
    UtilityReport,
)
from ppdp.schemas.spec import IdentifierPolicy, ReleaseSpec
from ppdp.tasks import audit, ingest, publish, tag, tune, utility
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import PpdpError, ReleaseRejected
from ppdp.tasks.plots import tuning_plot_png
from ppdp.tasks.privacy.measure import describe_failed
from ppdp.tasks.privacy.validate import privacy_checks
from ppdp.tasks.sanitize import SanitizedTable, Sanitizer, build_sanitizer, run_with_record

STEPS = 8


@task(name="load-spec", cache_policy=NO_CACHE, persist_result=False)
def load_spec_step(spec_path: str, overrides: list[str]) -> ReleaseSpec:
    return spec_io.load_spec(spec_path, overrides)


@task(name="preflight", cache_policy=NO_CACHE, persist_result=False)
def preflight_step(spec: ReleaseSpec, check_root: bool = True) -> list[str]:
    return spec_io.preflight(spec, check_root=check_root)


@task(name="ingest", cache_policy=NO_CACHE, persist_result=False)
def ingest_step(spec: ReleaseSpec) -> tuple[pd.DataFrame, IngestReport]:
    return ingest.ingest(spec)


@task(name="tag", cache_policy=NO_CACHE, persist_result=False)
def tag_step(frame: pd.DataFrame, spec: ReleaseSpec) -> Roles:
    return tag.tag_columns(frame, spec)


@task(name="protect-identifiers", cache_policy=NO_CACHE, persist_result=False)
def protect_step(frame: pd.DataFrame, roles: Roles, policy: IdentifierPolicy, key: bytes | None) -> pd.DataFrame:
    return tag.protect_identifiers(frame, roles, policy, key)


@task(name="hold-out", cache_policy=NO_CACHE, persist_result=False)
def split_step(frame: pd.DataFrame, roles: Roles, spec: ReleaseSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    return utility.split_holdout(frame, roles.class_column, spec.utility.test_fraction, spec.seed)


@task(name="evaluate-group-size", cache_policy=NO_CACHE, persist_result=False)
def evaluate_step(sanitizer: Sanitizer, k: int, train: pd.DataFrame, test: pd.DataFrame, roles: Roles,
                  classifier: str, repeats: int) -> Evaluation:
    return tune.evaluate_size(sanitizer, k, train, test, roles, classifier, repeats)


@task(name="sanitize", cache_policy=NO_CACHE, persist_result=False)
def sanitize_step(sanitizer: Sanitizer, train: pd.DataFrame, roles: Roles) -> tuple[SanitizedTable, MethodRecord]:
    return run_with_record(sanitizer, train, roles)


@task(name="validate-privacy", cache_policy=NO_CACHE, persist_result=False)
def privacy_step(train: pd.DataFrame, release: SanitizedTable, roles: Roles, spec: ReleaseSpec) -> PrivacyReport:
    return privacy_checks(train, release, roles, spec)


@task(name="check-utility", cache_policy=NO_CACHE, persist_result=False)
def utility_step(train: pd.DataFrame, release: SanitizedTable, test: pd.DataFrame, roles: Roles,
                 spec: ReleaseSpec) -> UtilityReport:
    return utility.evaluate_utility(train, release.frame, test, roles, spec.utility, spec.seed)


@task(name="check-output", cache_policy=NO_CACHE, persist_result=False)
def output_step(release: SanitizedTable, roles: Roles, spec: ReleaseSpec) -> list[ExpectationOutcome]:
    return publish.check_output(release.frame, release.groups, roles, spec, release.release_kind == "synthetic")


@task(name="publish", cache_policy=NO_CACHE, persist_result=False)
def publish_step(frame: pd.DataFrame, manifest: Manifest, extras: dict[str, bytes], started: datetime
                 ) -> tuple[Path, Manifest, str]:
    return publish.publish_release(frame, manifest, extras, started)


# -- plain helpers the steps call (no Prefect inside) ------------------------------------------------------
def pseudonym_key(policy: IdentifierPolicy) -> bytes | None:
    """The HMAC key for pseudonyms: a Prefect Secret block if named, else the environment variable."""
    if policy.action != "pseudonymize":
        return None
    if policy.key_secret_block:
        from prefect.blocks.system import Secret

        try:
            value = Secret.load(policy.key_secret_block).get()
            if value:
                return str(value).encode("utf-8")
        except (ValueError, RuntimeError):
            pass
    value = os.environ.get(policy.key_env)
    return value.encode("utf-8") if value else None


@dataclass(frozen=True)
class Prepared:
    """What every flow needs before tuning: validated input, roles, and the training / held-out split."""

    ingest: IngestReport
    roles: Roles
    train: pd.DataFrame
    test: pd.DataFrame


def prepare(spec: ReleaseSpec, logger, check_root: bool = True) -> Prepared:
    """Preflight, ingest, tag, protect identifiers, hold out (each a task)."""
    preflight_step(spec, check_root)
    frame, ingest_report = ingest_step(spec)
    logger.info("[2/%d] ingest: %d rows, %d columns, %d expectations passed", STEPS, ingest_report.rows,
                len(ingest_report.columns), ingest_report.expectation_count)
    roles = tag_step(frame, spec)
    logger.info("[3/%d] tag: %d quasi-identifiers, %d direct identifiers (%s), class %s", STEPS,
                len(roles.quasi_identifiers), len(roles.identifiers), spec.identifiers.action, roles.class_column)
    protected = protect_step(frame, roles, spec.identifiers, pseudonym_key(spec.identifiers))
    train, test = split_step(protected, roles, spec)
    return Prepared(ingest=ingest_report, roles=roles, train=train, test=test)


def tune_group_size(spec: ReleaseSpec, prep: Prepared) -> tuple[Sanitizer, TuningTrace]:
    """The tuning step: evaluations run as parallel Prefect tasks."""
    base = build_sanitizer(spec.method, k=spec.method.params.k, seed=spec.seed, threshold=spec.threshold)

    def evaluate_many(sizes: list[int]) -> list[Evaluation]:
        futures = [evaluate_step.submit(base, k, prep.train, prep.test, prep.roles, spec.utility.classifier,
                                        spec.tuning.repeats) for k in sizes]
        return [f.result() for f in futures]

    trace = tune.tune(spec.tuning, threshold=spec.threshold, sizes=tune.class_sizes(prep.train, prep.roles),
                      fixed_k=spec.method.params.k, evaluate_many=evaluate_many)
    return base, trace


# -- the flows ---------------------------------------------------------------------------------------------
@flow(name="ppdp-release", persist_result=False, log_prints=False,
      task_runner=ThreadPoolTaskRunner(max_workers=2))
def release_flow(spec_path: str, overrides: list[str] | None = None) -> ReleaseResult:  # or a Failed state
    """Run one release from a spec file; raise :class:`tasks.core.errors.PpdpError` when refused (nothing published)."""
    logger = get_run_logger()
    overrides = list(overrides or [])
    started = datetime.now(UTC)
    release_id = publish.new_release_id(started)
    run_id = str(flow_run.get_id()) if flow_run.get_id() else None
    known: dict[str, str | None] = {"spec_sha256": None, "input_sha256": None}
    spec: ReleaseSpec | None = None
    try:
        spec = load_spec_step(spec_path, overrides)
        known["spec_sha256"] = spec_io.spec_sha256(spec)
        logger.info("[1/%d] spec %s: dataset %s, method %s/%s", STEPS, spec_path, spec.dataset, spec.method.name,
                    spec.method.variant)
        prep = prepare(spec, logger)
        known["input_sha256"] = prep.ingest.input_sha256
        ingest_report, roles, train, test = prep.ingest, prep.roles, prep.train, prep.test
        base, trace = tune_group_size(spec, prep)
        logger.info("[4/%d] tune (%s): k=%d after %d evaluations", STEPS, trace.strategy, trace.chosen,
                    len(trace.evaluations))
        release, method = sanitize_step(base.with_params(k=trace.chosen), train, roles)
        logger.info("[5/%d] sanitize: %d records in %d groups (%.2fs)", STEPS, len(release.frame), method.groups,
                    method.seconds)
        privacy = privacy_step(train, release, roles, spec)
        logger.info("[6/%d] privacy: k=%d, linkage risk %s", STEPS, privacy.k,
                    "n/a" if privacy.linkage_risk is None else f"{privacy.linkage_risk:.3f}")
        if privacy.failed:
            raise ReleaseRejected(f"privacy gate failed: {describe_failed(privacy.failed)}",
                                  [g.name for g in privacy.failed])
        util = utility_step(train, release, test, roles, spec)
        logger.info("[7/%d] utility: accuracy %.4f (original %.4f)", STEPS, util.accuracy, util.accuracy_original)
        if util.failed:
            raise ReleaseRejected(f"utility gate failed: {describe_failed(util.failed)}", [g.name for g in util.failed])

        output_checks = output_step(release, roles, spec)
        manifest = Manifest(
            release_id=release_id, dataset=spec.dataset, created_at=started, input_sha256=ingest_report.input_sha256,
            rows=len(release.frame), columns=list(release.frame.columns), spec=spec,
            spec_sha256=known["spec_sha256"], roles=roles, ingest=ingest_report, method=method, seed=spec.seed,
            privacy=privacy, utility=util, tuning=trace, output_checks=output_checks,
            versions=publish.collect_versions(), flow_run_id=run_id,
        )
        plot = tuning_plot_png(trace)
        folder, manifest, _ = publish_step(release.frame, manifest, {"tuning.png": plot} if plot else {}, started)
        logger.info("[8/%d] published %s", STEPS, folder)
        return ReleaseResult(
            release_id=release_id, status="published", reason="published", folder=str(folder), k=privacy.k,
            linkage_risk=privacy.linkage_risk, accuracy=util.accuracy, accuracy_original=util.accuracy_original,
            per_class={c.label: c.sanitized for c in util.per_class},
        )
    except PpdpError as exc:
        root = spec.publish.root if spec is not None else spec_io.guess_publish_root(spec_path, overrides)
        audit.record_refusal(root, release_id=release_id, dataset=spec.dataset if spec else None, error=exc,
                             started_at=started, flow_run_id=run_id, **known)
        return Failed(message=str(exc), data=exc)  # raised to the caller; see the note at the top
    except Exception as exc:  # an unexpected failure is recorded too, by type only (messages may hold data)
        audit.record_refusal(spec.publish.root if spec is not None else None, release_id=release_id,
                             dataset=spec.dataset if spec else None,
                             error=PpdpError(f"internal error ({type(exc).__name__})"), started_at=started,
                             flow_run_id=run_id, **known)
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)



@flow(name="ppdp-tune", persist_result=False, log_prints=False, task_runner=ThreadPoolTaskRunner(max_workers=2))
def tune_flow(spec_path: str, overrides: list[str] | None = None) -> TuningTrace:  # or a Failed state
    """Only the tuning: ingest, tag, hold out, evaluate group sizes; returns the trace (nothing is published)."""
    logger = get_run_logger()
    try:
        spec = load_spec_step(spec_path, list(overrides or []))
        prep = prepare(spec, logger, check_root=False)
        _, trace = tune_group_size(spec, prep)
        logger.info("tune (%s): k=%d after %d evaluations", trace.strategy, trace.chosen, len(trace.evaluations))
        return trace
    except PpdpError as exc:
        return Failed(message=str(exc), data=exc)
    except Exception as exc:  # noqa: BLE001 - by type only: the message may quote data
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)
