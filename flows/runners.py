"""Where a flow's submitted tasks run: Prefect's thread pool, or Dask through prefect-dask's ``DaskTaskRunner``.

The spec's ``runner:`` section (or ``--runner``, which the CLI turns into spec overrides so that the manifest
records it) chooses. A flow's task runner is fixed when the flow object is made, so every caller that holds the
spec picks the runner *before* the flow starts and calls
``release_flow.with_options(task_runner=task_runner_for(spec.runner))(...)`` (the CLI, :mod:`ppdp.api`). A run
started by Prefect itself (a deployment, a schedule) calls the flow as decorated: its default,
:class:`SpecTaskRunner`, reads the same spec (the flow run's parameters) at the first submitted task and
delegates to :func:`task_runner_for`. Only submitted tasks use the runner (the tuning evaluations, and the
privacy and utility checks, which run in parallel); a task called directly runs in the flow's own thread.

On Dask, every submitted task, its arguments (sanitizer, DataFrames, pydantic schemas) and its result travel
between processes as cloudpickles in memory, over the loopback interface for a local cluster. Nothing is written
to disk: a local cluster's workers have no memory limit (``memory_limit=0``), so they never spill to their local
directory (Dask's default spills to ``dask-scratch-space/`` past 70 % of a memory limit, data in clear). Workers
inherit this process's environment, hence the data-safety settings of :mod:`ppdp.flows.settings`, and receive
the flow's Prefect settings with each task. The workers of an existing cluster (``address``) are its operator's:
ppdp never stops them. :func:`checked_task_runner` checks the cluster (:func:`ppdp.flows.dask_runner.check_cluster`: a
scheduler answers within ``$PPDP_CLUSTER_CONNECT_SECONDS``, no worker can spill task data to its disk, the workers
can reach the flow's Prefect API), refusing it in one line: before the flow starts for ``ppdp run``, ``ppdp
compare`` and the Python API, at the first submitted task for a deployment's run (which then fails, publishing
nothing);
for the run, every worker gets ppdp's data-safety settings and the flow's API
(:class:`ppdp.flows.dask_runner.WorkerSettings`). Start them with spilling off (``--memory-limit 0``, or
``distributed.worker.memory.target/spill: false``) and no data leaves memory.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from prefect.context import FlowRunContext
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from ppdp.flows.settings import FORCED
from ppdp.schemas.spec import RunnerSpec
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import PpdpError, SpecError

RUNNER_CHOICES = "thread, dask or dask=tcp://host:port"


def runner_overrides(override: str | None) -> list[str]:
    """``--runner`` (``thread``, ``dask`` or ``dask=tcp://host:port``) as spec overrides (``--set`` items);
    raise :class:`SpecError` (one line) for anything else. ``dask`` alone drops the spec's address: a local
    cluster of ``runner.workers`` processes."""
    if override is None:
        return []
    kind, eq, address = override.strip().partition("=")
    kind, address = kind.strip(), address.strip()
    if kind in ("thread", "dask") and not eq:
        return [f"runner.kind={kind}", "runner.address=null"]
    if kind == "dask" and address and not any(c.isspace() for c in address):
        return ["runner.kind=dask", f"runner.address={address}"]
    raise SpecError(f"--runner {override!r}: expected {RUNNER_CHOICES}")


def resolve(runner: RunnerSpec, override: str | None = None) -> RunnerSpec:
    """``runner`` with ``--runner`` applied (see :func:`runner_overrides`)."""
    if override is None:
        return runner
    changes: dict[str, Any] = {}
    for item in runner_overrides(override):
        key, _, value = item.partition("=")
        changes[key.removeprefix("runner.")] = None if value == "null" else value
    try:
        return RunnerSpec.model_validate({**runner.model_dump(), **changes})
    except ValueError as exc:  # pydantic's ValidationError: its messages name keys, never data
        raise SpecError(f"--runner {override!r}: {exc.errors()[0]['msg'] if hasattr(exc, 'errors') else exc}") \
            from None


def local_cluster_kwargs(workers: int) -> dict[str, Any]:
    """``distributed.LocalCluster`` arguments: ``workers`` processes of one thread each, bound to the loopback
    interface; no dashboard (``dashboard_address=None``: the scheduler keeps only Dask's small HTTP endpoint, on a
    free loopback port rather than 8787, so that two runs do not collide); no memory limit, so that a worker never
    spills data to disk."""
    return {"n_workers": workers, "threads_per_worker": 1, "processes": True, "host": "127.0.0.1",
            "dashboard_address": None, "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}, "memory_limit": 0}


def task_runner_for(runner: RunnerSpec, override: str | None = None) -> TaskRunner:
    """The Prefect task runner for ``runner`` (with ``--runner`` applied).

    * ``thread``: :class:`prefect.task_runners.ThreadPoolTaskRunner` of ``runner.max_workers`` threads;
    * ``dask`` with an address: a :class:`prefect_dask.DaskTaskRunner` on that scheduler;
    * ``dask`` without one: a ``DaskTaskRunner`` that starts a ``distributed.LocalCluster`` for the flow run
      (:func:`local_cluster_kwargs`, ``runner.workers`` processes) and stops it after the run.

    The ``DaskTaskRunner`` is :class:`ppdp.flows.dask_runner.SharedApiDaskTaskRunner`: its workers report to the
    flow's Prefect API (also Prefect's temporary server), and it starts the cluster and imports the release's
    modules on the workers as soon as the flow run starts, while the flow ingests and tags.
    """
    runner = resolve(runner, override)
    if runner.kind == "thread":
        return ThreadPoolTaskRunner(max_workers=runner.max_workers)
    from ppdp.flows.dask_runner import cluster_runner, local_cluster_runner  # heavy: dask, distributed

    if runner.address is not None:
        return cluster_runner(runner.address)
    return local_cluster_runner(local_cluster_kwargs(runner.workers))


def checked_task_runner(chosen: RunnerSpec) -> TaskRunner:
    """:func:`task_runner_for` ``chosen``, an existing cluster checked first
    (:func:`ppdp.flows.dask_runner.check_cluster`: a one-line :class:`SpecError`). Every run goes through it: the
    CLI's and the Python API's releases and tunings, ``ppdp compare``, and a deployment's run (its
    :class:`SpecTaskRunner`, at the first submitted task: the flow then fails and publishes nothing)."""
    if chosen.kind == "dask" and chosen.address is not None:
        from ppdp.flows.dask_runner import check_cluster  # heavy: dask, distributed

        check_cluster(chosen.address)
    return task_runner_for(chosen)


def call_flow(flow, spec_path: str | os.PathLike[str], overrides: list[str] | tuple[str, ...] = (),
              runner: str | None = None, **params):
    """Call ``flow`` (:func:`~ppdp.flows.release.release_flow` or ``tune_flow``) on the runner its spec names,
    ``runner`` (a ``--runner`` value) applied; chosen before the flow starts; ``params``: the flow's other
    parameters (``force=True``). A spec that does not load runs the
    flow on the default runner: the flow refuses it (and a release audits the refusal), raising the error."""
    overrides = [*overrides, *runner_overrides(runner)]
    try:
        chosen = spec_io.load_spec(spec_path, overrides).runner
    except PpdpError:
        chosen = RunnerSpec()
    # an existing cluster is checked here, before the flow (and its temporary Prefect server) starts
    task_runner = checked_task_runner(chosen)
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):  # about 1 s per run otherwise
        return flow.with_options(task_runner=task_runner)(
            spec_path=str(Path(spec_path).resolve()), overrides=overrides, **params)


def flow_run_runner() -> RunnerSpec:
    """The ``runner`` of the spec named by the current flow run's parameters (``spec_path``, ``overrides``); the
    default runner when there is none or it cannot be read (the flow itself then refuses the spec)."""
    ctx = FlowRunContext.get()
    params = dict(ctx.parameters or {}) if ctx is not None else {}
    if not params.get("spec_path"):
        return RunnerSpec()
    try:
        return spec_io.load_spec(params["spec_path"], list(params.get("overrides") or [])).runner
    except PpdpError:
        return RunnerSpec()


class SpecTaskRunner(TaskRunner):
    """The release flows' default task runner: the one their spec's ``runner`` names (:func:`task_runner_for`),
    chosen when the flow run submits its first task (the flow has loaded and checked its spec by then).

    For runs that Prefect starts from the flow as decorated (deployments, schedules, ``prefect deployment run``);
    the CLI and the Python API choose before the flow starts instead (``with_options``). The chosen runner is
    entered on first use and left when this one is (a local Dask cluster stops with the flow run)."""

    def __init__(self) -> None:
        super().__init__()
        self._inner: TaskRunner | None = None
        self._stack: contextlib.ExitStack | None = None
        self._lock: threading.Lock | None = None

    def duplicate(self) -> SpecTaskRunner:
        return type(self)()

    def __enter__(self) -> SpecTaskRunner:
        super().__enter__()
        self._stack, self._lock = contextlib.ExitStack(), threading.Lock()
        return self

    def __exit__(self, *exc: Any) -> None:
        stack, self._stack, self._inner = self._stack, None, None
        try:
            if stack is not None:
                stack.__exit__(*exc)
        finally:
            super().__exit__(*exc)

    def __getstate__(self) -> dict[str, Any]:  # sent to Dask workers with the flow: configuration only
        return {"logger": self.logger, "_started": False, "_inner": None, "_stack": None, "_lock": None}

    def chosen(self) -> TaskRunner:
        if not self._started or self._stack is None or self._lock is None:
            raise RuntimeError("The task runner must be started before submitting work.")
        with self._lock:
            if self._inner is None:
                self._inner = self._stack.enter_context(checked_task_runner(flow_run_runner()))
            return self._inner

    def submit(self, task, parameters, wait_for=None, dependencies=None):
        return self.chosen().submit(task, parameters, wait_for=wait_for, dependencies=dependencies)

    def cancel_all(self) -> None:
        inner = self._inner
        if inner is not None and hasattr(inner, "cancel_all"):
            inner.cancel_all()


def environment_check() -> dict[str, str | None]:
    """The data-safety settings (:data:`ppdp.flows.settings.FORCED`) as this process sees them: run on a Dask
    worker, it shows what the worker inherited."""
    return {key: os.environ.get(key) for key in FORCED}
