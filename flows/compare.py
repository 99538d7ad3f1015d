"""The comparison flow (``ppdp compare``): spec -> ingest -> tag -> protect identifiers, once; then one task per
method (:func:`ppdp.tasks.compare.compare_method`), side by side on the spec's runner; the ranked table and the
recommendation. Nothing is published, nothing is written: the CLI writes ``compare.html`` and ``compare.json``
(aggregates) where it is told to.

Every task is a :class:`ppdp.flows.steps.step` (``cache_policy=NO_CACHE, persist_result=False``): its results
are DataFrames or rows, never pickled to disk. Like the release flow, the flow never raises: it returns a
``Failed`` state carrying the refusal in memory.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import cast

from prefect import State, flow, get_run_logger
from prefect.artifacts import create_table_artifact
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.states import Failed

from ppdp.flows.release import artifact_key
from ppdp.flows.runners import SpecTaskRunner, checked_task_runner, runner_overrides
from ppdp.flows.settings import apply_settings
from ppdp.flows.steps import TASKS, step
from ppdp.schemas.compare import CompareResult
from ppdp.schemas.spec import RunnerSpec
from ppdp.tasks import compare, plan
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.core.threads import one_native_thread_from_now_on

compare_one = step(compare.compare_method, "compare", lambda p: p["spec"].method.name)


def _figures(row) -> str:
    """A row's log line: status, tuned value and shares (no data value)."""
    if row.status not in ("passes", "refused") or row.records is None:
        return f"{row.status.replace('_', ' ')}: {row.reason}"
    name, risk = compare.risk_of(row)
    ratio = "n/a" if row.accuracy_ratio is None else f"{row.accuracy_ratio:.3f}"
    risk_text = "n/a" if risk is None else f"{risk:.4f}"
    tstr = "".join(f", TSTR {c} {a:.3f}" for c, a in row.tstr.items())  # train on the release, test on real rows
    return (f"{row.status}{' (' + row.tuned + ')' if row.tuned else ''}: accuracy ratio {ratio}{tstr}, {name} "
            f"{risk_text}, "
            f"policy {'holds' if row.policy_holds else 'fails'}, floor {'holds' if row.floor_holds else 'fails'} "
            f"({row.seconds:.1f}s)")


def compare_artifact(result: CompareResult) -> None:
    """The comparison table as a Prefect table artifact (aggregates only)."""
    create_table_artifact(table=compare.table_rows(result), key=artifact_key(result.dataset, "compare"),
                          description=f"ppdp compare: {result.recommendation}")


@flow(name="ppdp-compare", persist_result=False, log_prints=False,
      task_runner=SpecTaskRunner())  # type: ignore[arg-type]  # prefect#16938: refuses every concrete runner
def compare_flow(spec_path: str, overrides: list[str] | None = None,
                 methods: list[str] | None = None) -> CompareResult | State:  # State: Failed
    """Run every applicable registered method (or ``methods``) on the spec's data and rank them; publish nothing."""
    apply_settings()  # called from Python or by a Prefect worker: ppdp's Prefect settings (idempotent)
    logger = get_run_logger()
    one_native_thread_from_now_on()
    started = time.perf_counter()
    try:
        spec = TASKS.call(plan.LOAD_SPEC, spec_path, list(overrides or []))
        read = plan.read_input(spec, TASKS, check_root=False)  # the plan's first steps, once for every method
        ingest_report, roles, protected = read.ingest, read.roles, read.protected
        del read
        order_key = compare.existing_order_key(spec)
        planned = compare.plan(spec, methods)
        logger.info("compare: %d rows, %d methods (%d not run or without a valid spec)", ingest_report.rows,
                    len(planned), sum(1 for p in planned if p[3] is not None))
        futures = [(name, compare_one.submit(method, protected, roles, source, order_key))
                   for name, method, source, row in planned if row is None]
        rows = [row for _, _, _, row in planned if row is not None]
        for name, future in futures:
            row = future.result()
            rows.append(row)
            logger.info("compare: %s %s", name, _figures(row))
        result = compare.summarize(rows, spec, input_digest=ingest_report.input_digest,
                                   input_key_id=ingest_report.input_key_id, input_rows=cast(int, ingest_report.rows),
                                   seconds=time.perf_counter() - started)
        logger.info("compare: recommended %s", result.recommendation)
        try:  # a courtesy: the result stands without it
            compare_artifact(result)
        except Exception as exc:  # noqa: BLE001
            logger.warning("compare artifact not created (%s)", type(exc).__name__)
        return result
    except PpdpError as exc:
        return Failed(message=f"comparison refused ({type(exc).__name__})", data=exc)
    except Exception as exc:  # noqa: BLE001 - by type only: the message may quote data
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)


def run_compare(spec_path: str | os.PathLike[str], overrides: list[str] | tuple[str, ...] = (),
                methods: list[str] | None = None, runner: str | None = None) -> CompareResult:
    """Call :func:`compare_flow` on the runner its spec names (``runner``, a ``--runner`` value, applied), chosen
    before the flow starts as :func:`ppdp.flows.runners.call_flow` does; raise the refusal."""

    overrides = [*overrides, *runner_overrides(runner)]
    try:
        chosen = spec_io.load_spec(spec_path, overrides).runner
    except PpdpError:
        chosen = RunnerSpec()
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        # a flow that returns a Failed state raises it: the call gives the result
        run = compare_flow.with_options(task_runner=checked_task_runner(chosen))  # type: ignore[arg-type]  # prefect#16938
        return cast(CompareResult, run(spec_path=str(Path(spec_path).resolve()), overrides=overrides,
                                       methods=list(methods) if methods else None))
