"""The release flow: spec -> ingest -> tag -> protect -> rare values -> hold out -> tune -> sanitize -> validate
privacy -> check utility -> publish -> audit. The steps and their order are the release plan's
(:mod:`ppdp.tasks.plan`); this file runs each as a Prefect task (:data:`ppdp.flows.steps.TASKS`), audits a refusal and
makes the Prefect artifacts: it only wires.

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
from typing import Any

from prefect import State, flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.runtime import flow_run
from prefect.states import Failed

from ppdp.flows.rerun import Unchanged, stop_if_unchanged
from ppdp.flows.runners import SpecTaskRunner
from ppdp.flows.settings import apply_settings
from ppdp.flows.steps import STEPS, TASKS
from ppdp.schemas.manifest import Manifest, ReleaseResult
from ppdp.schemas.reports import IngestReport, Roles, TuningTrace
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks import audit, interrupt, plan, publish, series, shapes
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.core.threads import one_native_thread_from_now_on
from ppdp.tasks.private_record import withholds
from ppdp.tasks.report import report_markdown, report_table
from ppdp.tasks.sanitize.base import Sanitizer


def prepare(spec: ReleaseSpec, logger, check_root: bool = True, after_ingest=None
            ) -> tuple[IngestReport, Roles, shapes.PreparedRows, series.Identity]:
    """The plan's preparation (:func:`ppdp.tasks.plan.prepare`) as the flow's tasks: (ingest report, roles, the
    prepared rows, what the fingerprints cover)."""
    read, prepared, identity = plan.prepare(spec, TASKS, logger, check_root, after_ingest)
    return read.ingest, read.roles, prepared, identity


def tune_method(spec: ReleaseSpec, roles: Roles, prepared: shapes.PreparedRows, logger=None
                ) -> tuple[Sanitizer, TuningTrace]:
    """The plan's tuning step (:func:`ppdp.tasks.plan.tune_method`) as the flow's tasks: evaluations run as parallel
    Prefect tasks (named ``evaluate k=45``), each logged with an ``i/N`` count when it ends."""
    return plan.tune_method(spec, roles, prepared, TASKS, logger if logger is not None else plan.QUIET)


def artifact_key(dataset: str, kind: str) -> str:
    """A Prefect artifact key per dataset (lowercase letters, digits and dashes only), so that the UI keeps one
    history per dataset and kind: ``ppdp-census-demo-release``."""
    slug = re.sub(r"[^a-z0-9]+", "-", dataset.lower()).strip("-") or "dataset"
    return f"ppdp-{slug}-{kind}"


def publish_artifacts(manifest) -> None:
    """The release's summary as a markdown and a table artifact (aggregates only, as in ``report.html``)."""

    create_markdown_artifact(markdown=report_markdown(manifest), key=artifact_key(manifest.dataset, "release"),
                             description=f"ppdp release {manifest.release_id}: what was published and how safe it is")
    create_table_artifact(table=report_table(manifest), key=artifact_key(manifest.dataset, "claims"),
                          description=f"ppdp release {manifest.release_id}: privacy claims and key figures")


def refusal_artifact(dataset: str | None, release_id: str, exc: Exception) -> None:
    """A refused release leaves a markdown artifact too (the kind of refusal only: its message is in the audit
    trail), so the dataset's history in the UI shows it."""
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


def announce(result: ReleaseResult, manifest: Manifest, logger) -> None:
    """A published release: noted for the command (whatever Prefect does next), then its Prefect artifacts (the
    release is published and audited by now: a failed artifact is a warning, not a refusal)."""
    artifacts = (f"the artifacts {artifact_key(manifest.dataset, 'release')} and "
                 f"{artifact_key(manifest.dataset, 'claims')}")
    interrupt.note_not_recorded(artifacts)  # until Prefect has them
    interrupt.note_result(result)  # published: whatever Prefect does next, the command can report it
    try:
        publish_artifacts(manifest)
        interrupt.note_recorded(artifacts)
    except Exception as exc:  # noqa: BLE001
        logger.warning("release artifacts not created (%s)", type(exc).__name__)


def refused(spec: ReleaseSpec | None, spec_path: str, overrides: list[str], ids: plan.RunIds, exc: Exception
            ) -> State:
    """A refusal (or an unexpected failure, recorded by type only: messages may hold data) audited, its artifact
    made, and the ``Failed`` state the flow returns (its message, stored by Prefect, names the kind only)."""
    dataset = spec.dataset if spec else None
    if isinstance(exc, PpdpError):
        root = spec.publish.root if spec is not None else spec_io.guess_publish_root(spec_path, overrides)
        audit.record_refusal(root, release_id=ids.release_id, dataset=dataset, error=exc, started_at=ids.started,
                             flow_run_id=ids.flow_run_id, **ids.known)
        refusal_artifact(dataset, ids.release_id, exc)
        return Failed(message=f"release refused ({type(exc).__name__}; see the audit trail)", data=exc)
    audit.record_refusal(spec.publish.root if spec is not None else None, release_id=ids.release_id, dataset=dataset,
                         error=PpdpError(f"internal error ({type(exc).__name__})"), started_at=ids.started,
                         flow_run_id=ids.flow_run_id, **ids.known)
    refusal_artifact(dataset, ids.release_id, exc)
    return Failed(message=f"internal error ({type(exc).__name__})", data=exc)


# -- the flows ---------------------------------------------------------------------------------------------
@flow(name="ppdp-release", persist_result=False, log_prints=False,
      task_runner=SpecTaskRunner())  # type: ignore[arg-type]  # prefect#16938: refuses every concrete runner
def release_flow(spec_path: str, overrides: list[str] | None = None,
                 force: bool = False) -> ReleaseResult | State:  # State: Failed
    """Run one release from a spec file; raise :class:`ppdp.tasks.core.errors.PpdpError` when refused (nothing
    published). A run whose input, spec and code are those of the dataset's latest release publishes nothing and
    returns status ``unchanged`` (:mod:`ppdp.tasks.rerun`) unless ``force``."""
    apply_settings()  # called from Python or by a Prefect worker: ppdp's Prefect settings (idempotent)
    logger = get_run_logger()
    one_native_thread_from_now_on()  # parallel evaluations: one native thread each (see ppdp.tasks.core.threads)
    overrides = list(overrides or [])
    started = datetime.now(UTC)
    # what a refusal's audit entry records: the spec's hash, the input's keyed digest (its unkeyed SHA-256 only in the
    # publisher's private record) and whether its reason is withheld (a differential_privacy run)
    known: dict[str, Any] = {"spec_sha256": None, "input_digest": None, "input_key_id": None, "private_sha256": None,
                             "withhold": False}
    ids = plan.RunIds(release_id=publish.new_release_id(started), started=started,
                      flow_run_id=str(flow_run.get_id()) if flow_run.get_id() else None, known=known)
    spec: ReleaseSpec | None = None
    try:
        spec = TASKS.call(plan.LOAD_SPEC, spec_path, overrides)
        known["spec_sha256"] = spec_hash = spec_io.spec_sha256(spec)
        known["withhold"] = withholds(spec.method.unit)
        # an interruption (SIGINT, a Prefect cancellation) of this run is audited under its root (ppdp.tasks.interrupt)
        interrupt.begin_run(root=spec.publish.root, release_id=ids.release_id, dataset=spec.dataset, started=started,
                            flow_run_id=ids.flow_run_id, known=known)
        logger.info("[1/%d] spec %s: dataset %s, method %s", STEPS, spec_path, spec.dataset, spec.method.name)
        checked = spec  # the plan over the spec's source: one table, or a folder of partitions
        result, manifest = plan.run(spec, ids, TASKS, logger, after_ingest=None if force else (
            lambda report: stop_if_unchanged(checked, spec_hash, report, logger)))
        if manifest is not None:
            announce(result, manifest, logger)
        elif result.status == "published":  # partitioned: whatever Prefect does next, the command can report it
            interrupt.note_result(result)
        return result
    except Unchanged as same:  # nothing to publish: no refusal, no audit entry
        return same.result
    except Exception as exc:  # noqa: BLE001 - audited (an unexpected one by its type only)
        return refused(spec, spec_path, overrides, ids, exc)


@flow(name="ppdp-tune", persist_result=False, log_prints=False,
      task_runner=SpecTaskRunner())  # type: ignore[arg-type]  # prefect#16938: refuses every concrete runner
def tune_flow(spec_path: str, overrides: list[str] | None = None) -> TuningTrace | State:  # State: Failed
    """Only the tuning: ingest, tag, hold out, evaluate values; returns the trace (nothing is published)."""
    apply_settings()  # called from Python or by a Prefect worker: ppdp's Prefect settings (idempotent)
    logger = get_run_logger()
    one_native_thread_from_now_on()
    try:
        spec = TASKS.call(plan.LOAD_SPEC, spec_path, list(overrides or []))
        _, roles, prepared, _ = prepare(spec, logger, check_root=False)
        _, trace = tune_method(spec, roles, prepared, logger)
        logger.info("tune (%s): %s", trace.strategy, trace.rule)
        return trace
    except PpdpError as exc:
        return Failed(message=f"tuning refused ({type(exc).__name__})", data=exc)
    except Exception as exc:  # noqa: BLE001 - by type only: the message may quote data
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)
