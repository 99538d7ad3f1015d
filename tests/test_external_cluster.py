"""A release on a Dask cluster started outside ppdp (issue 32, "A real cluster"): ``runner: {kind: dask, address:
tcp://HOST:PORT}`` on a scheduler and two workers started as an operator would, as separate processes of the
project's environment (``dask scheduler``, ``dask worker ADDRESS --nworkers 1 --nthreads 1 --memory-limit 0``), in
an environment of their own (no ppdp or Prefect settings, a Prefect home of their own).

Checked: a partitioned release through ``ppdp run`` (a subprocess) publishes the rows the thread runner publishes;
its partition tasks ran on the external workers (their own task logs, read after the run); the workers outlive the
run (ppdp never closes an operator's cluster) and wrote nothing under their Prefect home (no result, no temporary
server of their own); a one-table release (CSV) runs there too; an address where no scheduler answers, or a cluster
whose workers could spill rows to disk, is refused in one line before anything is written.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks.publish import load_manifest
from tests.test_distributed_release import (
    assert_runners_agree,
    published,
    record_method_spec,
    release_folder,
    rows,
    spec_for,
    write_parts,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]
runner = CliRunner()
BIN = Path(sys.executable).parent  # the project's .venv/bin: dask and ppdp as installed there
PARTITION_STEPS = ("ingest_partition", "count_partition", "recode_partition", "write_row_file")


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def operator_environment(home: Path) -> dict[str, str]:
    """This environment without ppdp's, Prefect's and Dask's settings (an operator's shell), with its own home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PPDP_", "DASK_", "OMP_", "DO_NOT"))}
    return {**env, "HOME": str(home), "PREFECT_HOME": str(home / "prefect-home"),
            "DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH": "100000"}  # every task of the module in a worker's log


class Cluster:
    """A scheduler and two workers, each a process of its own, started from the command line."""

    def __init__(self, root: Path) -> None:
        self.root, self.procs = root, []
        scheduler_file = root / "scheduler.json"
        self.start("scheduler", root / "scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0",
                   "--dashboard-address", "127.0.0.1:0", "--scheduler-file", scheduler_file)
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() or not scheduler_file.read_text().strip().endswith("}"):
            assert time.monotonic() < deadline and self.procs[0].poll() is None, self.log()
            time.sleep(0.1)
        self.address = json.loads(scheduler_file.read_text())["address"]
        self.homes = [root / f"worker-{i}" for i in (1, 2)]
        for home in self.homes:
            self.start("worker", home, "worker", self.address, "--nworkers", "1", "--nthreads", "1", "--host",
                       "127.0.0.1", "--memory-limit", "0", "--dashboard-address", "127.0.0.1:0",
                       "--local-directory", home / "scratch")
        with self.client() as client:
            client.wait_for_workers(2, timeout=90)
            self.workers = sorted(client.scheduler_info()["workers"])

    def start(self, what: str, home: Path, *args) -> None:
        home.mkdir(parents=True)
        log = (home / f"{what}.log").open("w")
        self.procs.append(subprocess.Popen([str(BIN / "dask"), *map(str, args)], env=operator_environment(home),
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def log(self) -> str:
        """The processes' logs (the end), for a failure's message."""
        return "\n".join(p.read_text() for p in sorted(self.root.glob("*/*.log")))[-3000:]

    def client(self):
        import distributed

        return distributed.Client(self.address, timeout=30, set_as_default=False)

    def steps_ran(self) -> dict[str, collections.Counter]:
        """Per worker, how many tasks of each kind (the key's prefix: a step's task name) it has computed."""
        def computed_on_worker(dask_worker) -> collections.Counter:  # nested: sent by value (no tests on a worker)
            from dask.utils import key_split

            done = {entry[0] for entry in dask_worker.state.log if len(entry) > 2 and entry[2] == "memory"}
            return collections.Counter(key_split(key) for key in done)  # a task logs several transitions

        with self.client() as client:
            return client.run(computed_on_worker)

    def alive(self) -> bool:
        with self.client() as client:
            listed = sorted(client.scheduler_info()["workers"])
        return all(p.poll() is None for p in self.procs) and listed == self.workers

    def stop(self) -> None:
        for proc in reversed(self.procs):  # workers first, each by its own process id
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def since(before: dict, after: dict) -> collections.Counter:
    """The tasks computed between two :meth:`Cluster.steps_ran` readings, summed over the workers."""
    total: collections.Counter = collections.Counter()
    for worker, counts in after.items():
        total.update(counts - before.get(worker, collections.Counter()))
    return total


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = time.perf_counter()
    made = Cluster(tmp_path_factory.mktemp("external-cluster"))
    made.seconds = time.perf_counter() - started
    print(f"external cluster started in {made.seconds:.1f} s")
    try:
        yield made
    finally:
        made.stop()


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def ppdp_process(*args, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "ppdp"), *map(str, args)], env=env, capture_output=True, text=True, timeout=300)


def test_a_partitioned_release_on_an_external_cluster(workspace, cluster, tmp_path):
    """``ppdp run`` (a process of its own, reporting to the session's Prefect server) on the external cluster
    publishes the thread runner's rows; every partition task ran on the external workers, which are still
    running afterwards and wrote nothing under their Prefect home."""
    from prefect.settings import PREFECT_API_URL

    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    source = write_parts(frame, tmp_path / "parts", [200, 200, 200])
    external = spec_for(workspace, "external", source)
    body = yaml.safe_load(external.read_text(encoding="utf-8"))
    external.write_text(yaml.safe_dump({**body, "runner": {"kind": "dask", "address": cluster.address}}))
    before = cluster.steps_ran()
    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    started = time.perf_counter()
    ran = ppdp_process("run", external, env=env)
    seconds = time.perf_counter() - started
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    ran_there = since(before, cluster.steps_ran())
    # the partition tasks ran on the external workers (at least one per partition for each kind)
    assert all(ran_there[step] >= 3 for step in PARTITION_STEPS), (ran_there, cluster.log())
    assert cluster.alive()  # ppdp did not close the operator's cluster

    local = ppdp("run", spec_for(workspace, "local", source), "--runner", "thread")
    assert local.exit_code == 0, local.output
    a, b = release_folder(workspace, "local"), release_folder(workspace, "external")
    on_cluster = load_manifest(b)
    assert on_cluster.spec.runner.address == cluster.address
    assert load_manifest(a).tuning.lattice.node == on_cluster.tuning.lattice.node
    assert rows(published(a)) == rows(published(b))
    view = on_cluster.privacy.attacker_view
    assert published(b)[view.quasi_identifiers + view.counted_columns].astype(str).value_counts().min() >= 5
    # nothing under the workers' Prefect home: no result persisted, no temporary Prefect server of their own
    for home in cluster.homes:
        assert files_under(home / "prefect-home") == [], files_under(home / "prefect-home")
    print(f"cluster start {cluster.seconds:.1f} s, external run {seconds:.1f} s")


@pytest.mark.parametrize("method", ["mdav", "noise"])
def test_mdav_and_noise_on_partitions_on_an_external_cluster(workspace, cluster, tmp_path, method):
    """MDAV (its part finished by a task that reads the part's rows) and noise (its record figures measured across
    partitions) on the external workers publish the thread runner's rows and figures."""
    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    spec = record_method_spec(workspace, method, write_parts(frame, tmp_path / "parts", [250, 200, 150]))
    before = cluster.steps_ran()
    ran = ppdp("run", spec, "--runner", f"dask={cluster.address}")
    assert ran.exit_code == 0, ran.output
    ran_there = since(before, cluster.steps_ran())
    assert all(ran_there[step] >= 3 for step in PARTITION_STEPS), ran_there
    if method == "mdav":
        assert ran_there["nth_part"] >= 1, ran_there  # the part's MDAV ran on an external worker
    assert cluster.alive()
    threads = ppdp("run", spec, "--runner", "thread", "--force")
    assert threads.exit_code == 0, threads.output
    assert_runners_agree(workspace, method)


def test_a_one_table_release_on_an_external_cluster(workspace, cluster):
    """A CSV release with three tuning evaluations: they and the privacy and utility checks run on the external
    workers, and the published table equals the thread runner's."""
    tuned = {"method": {"name": "condensation", "variant": "class_wise"},
             "tuning": {"strategy": "grid", "buckets": 3, "max": 60}}
    spec = workspace.spec("one-table.yaml", **tuned)
    before = cluster.steps_ran()
    ran = ppdp("run", spec, "--runner", f"dask={cluster.address}")
    assert ran.exit_code == 0, ran.output
    ran_there = since(before, cluster.steps_ran())
    assert ran_there["evaluate_value"] == 3 and ran_there["check_privacy"] == 1, ran_there
    assert cluster.alive()
    thread = ppdp("run", spec, "--runner", "thread", "--force")
    assert thread.exit_code == 0, thread.output
    made = sorted(workspace.root.glob("*/*/data.parquet"))[-2:]
    on_dask, on_threads = (pq.read_table(p).replace_schema_metadata(None) for p in made)
    assert on_dask.num_rows == 540 and on_dask.equals(on_threads)
    for home in cluster.homes:
        assert files_under(home / "prefect-home") == [], files_under(home / "prefect-home")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused_in_one_line(workspace, address: str, *needles: str) -> float:
    spec = workspace.spec("refused.yaml")
    started = time.perf_counter()
    result = ppdp("run", spec, "--runner", f"dask={address}")
    seconds = time.perf_counter() - started
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith(f"ppdp: error: runner.address {address}: "), lines[0]
    assert all(needle in lines[0] for needle in needles), lines[0]
    assert workspace.under_root() == [], workspace.under_root()  # nothing written, not even an audit entry
    return seconds


def test_an_address_without_a_scheduler_is_refused_in_one_line(workspace, monkeypatch):
    """Nothing listening: refused at once. A port that accepts and never answers: refused after
    ``$PPDP_CLUSTER_CONNECT_SECONDS``. A scheduler whose worker may spill to disk: refused."""
    import distributed

    assert refused_in_one_line(workspace, f"tcp://127.0.0.1:{free_port()}", "no Dask scheduler answers",
                               "Connection refused") < 5
    monkeypatch.setenv("PPDP_CLUSTER_CONNECT_SECONDS", "1")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        accepted: list[socket.socket] = []
        threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True).start()
        seconds = refused_in_one_line(workspace, f"tcp://127.0.0.1:{silent.getsockname()[1]}",
                                      "no Dask scheduler answers", "tried for 1 s")
        assert 1 <= seconds < 5, seconds
        for conn in accepted:
            conn.close()
    monkeypatch.delenv("PPDP_CLUSTER_CONNECT_SECONDS")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None, memory_limit="1GiB",
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as spilling:
        refused_in_one_line(workspace, spilling.scheduler_address, "may spill task data (rows) to its disk",
                            "--memory-limit 0")


def test_compare_and_a_flow_run_as_deployed_check_the_cluster_too(workspace, monkeypatch):
    """``ppdp compare`` refuses an address where no scheduler answers in one line, before its flow starts, writing
    nothing; the release flow called as decorated (a deployment's or a schedule's run: its SpecTaskRunner chooses
    the runner at the first submitted task) checks it too, and publishes nothing."""
    from ppdp.flows import compare as compare_module
    from ppdp.flows.release import release_flow
    from ppdp.tasks.core.errors import PpdpError

    class NotStarted:  # the compare flow, which must not start on an unchecked cluster
        def with_options(self, **options):
            raise AssertionError("the compare flow started before the cluster was checked")

    monkeypatch.setattr(compare_module, "compare_flow", NotStarted())
    address = f"tcp://127.0.0.1:{free_port()}"
    spec = workspace.spec("refused.yaml")
    result = ppdp("compare", spec, "--runner", f"dask={address}")
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith(f"ppdp: error: runner.address {address}: no Dask scheduler answers"), lines[0]
    assert workspace.under_root() == [], workspace.under_root()
    with pytest.raises(PpdpError, match=f"runner.address {address}: no Dask scheduler answers"):
        release_flow(spec_path=str(spec), overrides=["runner.kind=dask", f"runner.address={address}"])
    assert not [p for p in workspace.root.rglob("*.parquet")], workspace.under_root()  # nothing published
