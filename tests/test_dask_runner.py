"""The Dask task runner (issue 10, section 3): a release on a two-worker ``LocalCluster`` publishes exactly the
data of the thread runner; the runner is chosen by the spec or ``--runner`` before the flow starts, or by the
flow's default runner from its spec (a deployment); a runner error is one line; nothing is persisted and no data
value is logged.

One local cluster of two worker processes is started, by the runner itself (``ppdp run --runner dask``); a
cluster given by address is an in-process one (cheap). Measured on the shared 2-core machine at load 3.4: about
22 s beyond the session's Prefect server (17 s the two releases, most of it the worker processes' start and
their first imports, about 3-5 s of CPU each; 4 s the address test).
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask.utils import key_split
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks.publish import load_manifest
from tests.conftest import PREFECT_HOME, RESULT_STORAGE, _rebind_prefect_console_handlers

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()

# condensation's k tuned over three values (a grid): three evaluations, submitted together
TUNED = {"method": {"name": "condensation", "variant": "class_wise"},
         "tuning": {"strategy": "grid", "buckets": 3, "max": 60}}


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


@pytest.fixture
def local_clusters(monkeypatch):
    """Every ``distributed.LocalCluster`` the runner starts, recorded: its arguments, where each task ran (a
    scheduler plugin: the scheduler of a local cluster lives in this process) and what its workers see."""
    import distributed
    from distributed.diagnostics.plugin import SchedulerPlugin

    from ppdp.flows.runners import environment_check

    class Placements(SchedulerPlugin):
        def __init__(self) -> None:
            self.ran: list[tuple[str, str]] = []

        def transition(self, key, start, finish, *args, **kwargs):
            if finish == "memory" and kwargs.get("worker"):
                self.ran.append((str(key), kwargs["worker"]))

    def worker_view(dask_worker):
        return {"settings": environment_check(), "store": type(dask_worker.data).__name__}

    made = []
    start = distributed.LocalCluster.__init__

    def recording(self, *args, **kwargs):  # patched in this process only: the runner (shipped to the workers with
        start(self, *args, **kwargs)  # every task) still names the real class
        self.arguments = kwargs
        self.placements = Placements()
        self.scheduler.add_plugin(self.placements)
        with distributed.Client(self) as client:
            self.workers_view = client.run(worker_view)
        made.append(self)

    monkeypatch.setattr(distributed.LocalCluster, "__init__", recording)
    return made


def data_without_metadata(folder: Path) -> tuple[pa.Table, bytes]:
    table = pq.read_table(folder / "data.parquet").replace_schema_metadata(None)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", use_dictionary=True, write_statistics=True)
    return table, sink.getvalue()


def evaluations(manifest) -> list[dict]:
    return [e.model_dump(mode="json", exclude={"seconds"}) for e in manifest.tuning.evaluations]


def utility_figures(manifest) -> dict:
    return manifest.utility.model_dump(mode="json", exclude={"seconds"})


@pytest.mark.slow  # about 5 s; .ci/run runs it (make test stays under 4 minutes)
def test_dask_release_publishes_the_thread_runners_data(workspace, local_clusters):
    """The same spec and seed on a two-worker ``LocalCluster`` (``ppdp run --runner dask``) and on the thread
    runner (the Python API) publish the same rows, privacy claims, tuning evaluations and utility figures.

    ``data.parquet`` is compared as a table and byte for byte once its schema metadata is removed: the Parquet
    key-value metadata carries the release id and the manifest's hash, which differ between two runs by design
    (each run is a new release); both tables are written without it, with the same pyarrow writer options.
    """
    spec = workspace.spec(**TUNED)
    ran = ppdp("run", spec, "--runner", "dask")
    assert ran.exit_code == 0, ran.output
    [cluster] = local_clusters
    _rebind_prefect_console_handlers()  # bound to the CLI runner's stream, closed now
    import ppdp as api

    thread = api.release(spec, runner="thread", force=True)  # the same spec (runner aside): else unchanged
    [dask_folder] = [p.parent for p in workspace.root.glob("*/*/manifest.json") if p.parent != Path(thread.folder)]
    assert dask_folder.name in ran.output

    # the cluster: two single-threaded worker processes on the loopback interface, no dashboard, no spilling
    assert {k: cluster.arguments[k] for k in ("n_workers", "threads_per_worker", "processes", "dashboard_address")} \
        == {"n_workers": 2, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
    workers = cluster.workers_view
    assert len(workers) == 2 and all(address.startswith("tcp://127.0.0.1:") for address in workers)
    from ppdp.flows.settings import FORCED

    assert all(view["settings"] == FORCED and view["store"] == "dict" for view in workers.values()), workers
    # every submitted step ran on the cluster's workers (which worker runs which evaluation is Dask's choice: it
    # follows its estimates of each worker's queue, so the three may all go to one of them)
    ran_where = [(key_split(key), worker) for key, worker in cluster.placements.ran]  # (function, worker)
    evaluations_at = [worker for name, worker in ran_where if name == "evaluate_value"]
    assert len(evaluations_at) == 3 and set(evaluations_at) <= set(workers), ran_where
    assert {worker for _, worker in ran_where} == set(workers), ran_where
    assert {name for name, _ in ran_where} == {"import_release_modules", "evaluate_value", "check_privacy",
                                             "check_utility"}

    dask_table, dask_bytes = data_without_metadata(dask_folder)
    thread_table, thread_bytes = data_without_metadata(Path(thread.folder))
    assert dask_table.num_rows == 540 and dask_table.equals(thread_table)
    assert dask_bytes == thread_bytes
    on_dask, on_threads = load_manifest(dask_folder), load_manifest(Path(thread.folder))
    assert on_dask.spec.runner.kind == "dask" and on_threads.spec.runner.kind == "thread"
    assert on_dask.privacy.claims == on_threads.privacy.claims and on_dask.privacy.k == on_threads.privacy.k
    assert len(on_dask.tuning.evaluations) == 3 and evaluations(on_dask) == evaluations(on_threads)
    assert on_dask.tuning.chosen == on_threads.tuning.chosen
    assert utility_figures(on_dask) == utility_figures(on_threads)

    # nothing persisted by Prefect, in this process or in the workers (same environment, same folders)
    stored = [p for p in RESULT_STORAGE.rglob("*") if p.is_file()] if RESULT_STORAGE.exists() else []
    storage = PREFECT_HOME / "storage"
    stored += [p for p in storage.rglob("*") if p.is_file()] if storage.exists() else []
    assert stored == [], f"Prefect persisted results: {stored}"


@pytest.mark.slow  # a second cluster (about 3 s); the thread-vs-Dask release test stays in make test
def test_a_cluster_given_by_address_and_a_refusal_inside_a_task_on_it(workspace):
    """``ppdp tune --runner dask=ADDRESS`` submits the evaluations to that cluster (an in-process one, with TCP
    between client, scheduler and worker, so every task and result is serialized); so does the flow as decorated
    (what a deployment runs) when the spec names it: its default runner reads the spec. A step that refuses on the
    cluster ends the run with the usual one line."""
    import distributed

    from ppdp.flows.release import tune_flow

    def evaluations_in(stream) -> int:
        return sum(1 for t in stream if key_split(t["key"]) == "evaluate_value")

    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None, memory_limit=0,  # no spilling: else refused
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster, \
            distributed.Client(cluster) as client:
        client.get_task_stream()  # starts recording
        out = workspace.dir / "tuning"
        spec = workspace.spec(**TUNED)
        ran = ppdp("tune", spec, "--runner", f"dask={cluster.scheduler_address}", "--out", out)
        assert ran.exit_code == 0, ran.output
        assert (out / "trace.json").is_file() and "3 of 3 candidate values evaluated" in ran.output
        assert evaluations_in(client.get_task_stream()) == 3
        trace = tune_flow(spec_path=str(spec), overrides=["runner.kind=dask", "tuning.buckets=2",
                                                          f"runner.address={cluster.scheduler_address}"])
        assert len(trace.evaluations) == 2 and evaluations_in(client.get_task_stream()) == 5

        # a refusal inside a task on the cluster (the privacy step cannot read the population table the spec names):
        # it comes back through Dask's serialization and ends the run with one line and an audit entry
        population = workspace.dir / "population.parquet"
        population.write_bytes(b"not a parquet file")
        broken = workspace.spec("broken.yaml", privacy__population=str(population))  # k fixed: no tuning
        refused = ppdp("run", broken, "--runner", f"dask={cluster.scheduler_address}")
        assert refused.exit_code == 2, refused.output
        # one line from ppdp (a log line of Great Expectations' at INFO may precede it: not ppdp's, not data)
        [line] = [line for line in refused.output.splitlines() if line.startswith("ppdp:")]
        assert line.startswith("ppdp: error: input ") and "not a readable Parquet file" in line, refused.output
        assert "check_privacy" in {key_split(t["key"]) for t in client.get_task_stream()}  # only this run has one
        assert workspace.under_root() == ["audit.db"]


def test_a_failed_dask_task_logs_no_argument_values(caplog):
    """A task that fails at Dask's level (outside a step's guard) is logged by its worker: by key, function and
    exception, never its arguments (they hold data). An in-process worker, so that its log is captured here."""
    import logging

    import distributed
    import pandas as pd

    from tests.conftest import SENTINEL_SSN

    def fails(frame, settings):
        raise RuntimeError("failed")

    frame = pd.DataFrame({"ssn": [SENTINEL_SSN] * 3, "age": [39, 40, 41]})
    with caplog.at_level(logging.INFO), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                     scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster, \
            distributed.Client(cluster) as client:
        with pytest.raises(RuntimeError):
            client.submit(fails, frame, settings={"frame": frame}).result()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Compute Failed" in logged and SENTINEL_SSN not in logged and "987-65" not in logged


@pytest.mark.parametrize(("args", "expected"), [
    (["--set", "runner.address=tcp://127.0.0.1:8786"], "runner.address applies only to runner.kind: dask"),
    (["--runner", "processes"], "--runner 'processes': expected thread, dask or dask=tcp://host:port"),
    (["--runner", "dask="], "expected thread, dask or dask=tcp://host:port"),
    (["--set", "runner.kind=spark"], "runner.kind"),
])
@pytest.mark.parametrize("command", ["run", "tune"])
def test_a_runner_error_is_one_line(workspace, command, args, expected):
    result = ppdp(command, workspace.spec(**TUNED), *args)
    assert result.exit_code == 2
    line = one_line(result.output)
    assert line.startswith("ppdp: error: ") and expected in line, line
    assert not list(workspace.root.glob("*/*/manifest.json"))


def test_a_refusal_inside_a_task_survives_pickling():
    """A step returns its refusal (:class:`ppdp.flows.steps._Refusal`) instead of raising; on Dask it comes back
    through cloudpickle and is raised in the flow as the same one-line error."""
    from distributed.protocol.pickle import dumps, loads

    from ppdp.flows.steps import _Refusal, _unwrap
    from ppdp.tasks.core.errors import InputError, ReleaseRejected

    for error in (InputError("input data.csv: column 3 ('age') has no values"),
                  ReleaseRejected("privacy gate k failed: 3 < 10", ["k"])):
        back = loads(dumps(_Refusal(error)))
        assert isinstance(back, _Refusal) and type(back.error) is type(error)
        with pytest.raises(type(error)) as raised:
            _unwrap(back)
        assert str(raised.value) == str(error) and getattr(raised.value, "failed_gates", None) == getattr(
            error, "failed_gates", None)


def test_runner_overrides_and_task_runners():
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    from ppdp.flows.runners import runner_overrides, task_runner_for
    from ppdp.schemas.spec import RunnerSpec
    from ppdp.tasks.core.errors import SpecError

    assert runner_overrides(None) == []
    assert runner_overrides("dask=tcp://10.0.0.5:8786") == ["runner.kind=dask", "runner.address=tcp://10.0.0.5:8786"]
    with pytest.raises(SpecError):
        runner_overrides("thread=tcp://10.0.0.5:8786")
    threads = task_runner_for(RunnerSpec(max_workers=3))
    assert isinstance(threads, ThreadPoolTaskRunner) and threads._max_workers == 3
    remote = task_runner_for(RunnerSpec(), "dask=tcp://10.0.0.5:8786")
    assert isinstance(remote, DaskTaskRunner) and remote.address == "tcp://10.0.0.5:8786"
    local = task_runner_for(RunnerSpec(kind="dask", workers=3))
    assert local.address is None and local.cluster_kwargs["n_workers"] == 3
    assert local.cluster_kwargs["host"] == "127.0.0.1" and local.cluster_kwargs["memory_limit"] == 0
    assert isinstance(task_runner_for(RunnerSpec(kind="dask", address="tcp://h:1"), "thread"), ThreadPoolTaskRunner)
