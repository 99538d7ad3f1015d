"""Crash-safe publishing (issue 8, section 3): kill -9 at every step of a publish, then ``ppdp audit recover``
must bring the root back to a state that ``ppdp audit verify`` accepts, without losing a release that was
published (its completing entry written, or its folder complete in place before the kill), and leaving no
``.staging-*`` folder. Also: a killed ``ppdp run`` leaves no temporary Prefect server behind.

Kills are made deterministic by the test hook ``PPDP_FAULT_AT=<point>`` (:func:`ppdp.tasks.staging.fault_point`:
the process SIGKILLs itself at that point), plus a few kills at seeded random moments by wall time. Three
drivers: the real CLI (``.venv/bin/ppdp run``, its Prefect client pointed at the session's test server, so no
server start per run), a small script calling :func:`ppdp.tasks.publish.publish_release` alone (no Prefect: every
point in about 2 s each), and in-process calls for errors that are not kills.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks import audit, recovery, staging
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.publish import load_manifest, new_release_id, publish_release
from tests.conftest import base_spec
from tests.helpers import site_folder

# every test here needs the site's template release (about 17 s to build): behind the slow marker, which .ci/run
# runs; make test stays under 4 minutes (the audit trail's own tests and the release flow's publish checks stay in it)
pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]
runner = CliRunner()
BIN = Path(sys.executable).parent
PPDP = BIN / "ppdp"

# every point of publish_release where the hook can kill, in order; and what recover must find there
POINTS = {
    "staging-created": "staging",          # nothing but an empty staging folder
    "parquet-unfinished": "staging",       # data.parquet without its footer, in staging
    "staged": "staging",                   # the complete release, still in staging, no entry yet
    "pending-uncommitted": "staging",      # killed inside the pending entry's transaction: no entry
    "pending-appended": "rolled_back",     # just before the rename
    "renamed": "completed",                # just after the rename
    "latest-written": "completed",         # the dataset's LATEST names it, its completing entry not yet
    "published-uncommitted": "completed",  # inside the completing entry's transaction
    "completed": "intact",                 # after the completing entry
}

DRIVER = """
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ppdp.tasks import series
from ppdp.tasks.publish import load_manifest, new_release_id, publish_release

template, root = Path(sys.argv[1]), Path(sys.argv[2])
manifest = load_manifest(template)
# another dataset than the CLI runs', in the series ledger without members (a copy: it holds no record of theirs)
spec = manifest.spec.model_copy(update={"publish": manifest.spec.publish.model_copy(update={"root": root}),
                                        "dataset": "census-driver"})
manifest = manifest.model_copy(update={"release_id": new_release_id(), "spec": spec, "output_sha256": None,
                                       "dataset": "census-driver"})
record = series.model_record(root, manifest.release_id, "census-driver", datetime.now(UTC), "copy", manifest.rows)
folder, *_ = publish_release(pd.read_parquet(template / "data.parquet"), manifest,
                             {"tuning.png": (template / "tuning.png").read_bytes()}, datetime.now(UTC), record)
print(folder)
"""


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


# -- the site: data, spec, a template release, the subprocess environment ------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory, prefect_harness):
    from prefect.settings import PREFECT_API_URL

    base, config = site_folder(tmp_path_factory, "crash", 400)

    class Site:
        dir = base
        api_url = PREFECT_API_URL.value()

        @staticmethod
        def spec(root: Path, name: str) -> Path:
            path = base / f"{name}.yaml"
            path.write_text(yaml.safe_dump(base_spec(base / "census.csv", root)), encoding="utf-8")
            return path

        @staticmethod
        def env(fault: str | None = None, ephemeral: bool = False, home: str = "prefect-home") -> dict:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PPDP_", "PREFECT_"))}
            env.update(PPDP_CONFIG_DIR=str(config), PREFECT_HOME=str(base / home), PREFECT_LOGGING_LEVEL="WARNING")
            if not ephemeral:
                env["PREFECT_API_URL"] = Site.api_url
            if fault:
                env[staging.FAULT_ENV] = fault
            return env

    # the template: one release published in process, with a tuning plot (three files)
    root = base / "template-root"
    spec = Site.spec(root, "template")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PPDP_CONFIG_DIR", str(config))
        result = ppdp("run", spec, "--set", "method.k=null", "--set", "tuning.strategy=grid", "--set",
                      "tuning.buckets=2")
        assert result.exit_code == 0, result.output
    [Site.template] = [p.parent for p in root.glob("*/*/manifest.json")]
    assert (Site.template / "tuning.png").is_file()
    return Site


@pytest.fixture(autouse=True)
def _site_key(site, monkeypatch):
    """In-process calls (audit.verify, publish_release) sign and verify with the site's key, as the CLI does."""
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(site.dir / "config"))


def run(args: list, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True, timeout=timeout)


def drive(site, root: Path, fault: str | None) -> subprocess.CompletedProcess:
    return run([sys.executable, "-c", DRIVER, site.template, root], site.env(fault))


def releases_on_disk(root: Path) -> set[str]:
    return {f"{p.parent.name}/{p.name}" for p in root.glob("*/*") if p.is_dir()}


def published(root: Path) -> set[str]:
    if not audit.db_path(root).is_file():
        return set()
    return {f"{e.dataset}/{e.release_id}" for e in audit.list_entries(root) if e.status == "published"}


def recover_and_check(site, root: Path, before: set[str], cli: bool = True) -> str:
    """Recover then verify (as the CLI ``ppdp audit recover`` and ``ppdp audit verify``, or in process); every
    release in ``before`` is still there and published, nothing else is on disk, no staging folder is left.
    Returns what recovery printed."""
    if cli:
        rec = run([PPDP, "audit", "recover", "--root", root], site.env())
        assert rec.returncode == 0 and "Traceback" not in rec.stderr, rec.stdout + rec.stderr
        out = rec.stdout
    else:
        out = "\n".join(recovery.recover(root).actions) or "nothing to recover"
    if audit.db_path(root).is_file():
        if cli:
            ver = run([PPDP, "audit", "verify", "--root", root], site.env())
            assert ver.returncode == 0 and "audit trail intact" in ver.stdout, ver.stdout + ver.stderr
        else:
            assert audit.verify(root) == []
    else:  # killed before anything was ever written to this root
        assert releases_on_disk(root) == set() == before
    assert not list(root.glob(".staging-*"))
    assert before <= releases_on_disk(root) == published(root)
    return out


def check_kill(site, root: Path, point: str, proc: subprocess.CompletedProcess, cli: bool = True) -> None:
    """After a kill at ``point``: the expected leftovers before recovery, then recovery and its outcome."""
    assert proc.returncode == -signal.SIGKILL, (point, proc.returncode, proc.stderr[-2000:])
    kept = published(root)
    on_disk = releases_on_disk(root)
    pending = audit.interrupted_publishes(root)
    findings = audit.verify(root)
    expect = POINTS[point]
    if expect == "staging":
        assert not pending and on_disk == kept and list(root.glob(".staging-*")), point
        assert findings and all("staging folder" in f for f in findings), findings
    elif expect == "rolled_back":
        assert len(pending) == 1 and on_disk == kept and list(root.glob(".staging-*")), point
    elif expect == "completed":
        [row] = pending
        new = f"{row['dataset']}/{row['release_id']}"
        assert on_disk == kept | {new} and not list(root.glob(".staging-*")), point
        assert any("pending, never completed" in f for f in findings), findings
    else:
        assert not pending and findings == [] and on_disk == kept and len(kept) >= 1, (point, findings)
    out = recover_and_check(site, root, before=on_disk, cli=cli)
    if expect == "staging":
        assert "staging leftover removed" in out and releases_on_disk(root) == kept, out
    elif expect == "rolled_back":
        assert "rolled back" in out and releases_on_disk(root) == kept, out
    elif expect == "completed":
        assert "completed" in out and releases_on_disk(root) == kept | {new}, out
    else:
        assert "nothing to recover" in out and releases_on_disk(root) == kept, out


# -- every kill point, publish step alone (fast) -----------------------------------------------------------
@pytest.mark.slow  # about 5 s; .ci/run runs it (make test stays under 4 minutes)
def test_a_kill_at_every_publish_point_is_recovered(site, tmp_path):
    """One root through every point in turn: earlier releases must survive every later kill and recovery."""
    root = tmp_path / "root"
    assert drive(site, root, None).returncode == 0
    first = releases_on_disk(root)
    assert len(first) == 1 and audit.verify(root) == []
    for point in POINTS:
        check_kill(site, root, point, drive(site, root, point), cli=False)
        assert first <= releases_on_disk(root)
    statuses = [e.status for e in audit.list_entries(root)]
    assert statuses.count("published") == 1 + 4 and statuses.count("rolled_back") == 1, statuses


def test_recovery_killed_midway_is_finished_by_running_it_again(site, tmp_path):
    root = tmp_path / "root"
    # a rollback killed after removing the staging folder, before its rolled_back entry
    assert drive(site, root, "pending-appended").returncode == -signal.SIGKILL
    killed = run([PPDP, "audit", "recover", "--root", root], site.env("recover-removed"))
    assert killed.returncode == -signal.SIGKILL
    assert not list(root.glob(".staging-*")) and len(audit.interrupted_publishes(root)) == 1
    recover_and_check(site, root, before=set(), cli=False)
    assert [e.status for e in audit.list_entries(root)] == ["pending", "rolled_back"]
    # a completion killed inside its own transaction
    assert drive(site, root, "renamed").returncode == -signal.SIGKILL
    on_disk = releases_on_disk(root)
    killed = run([PPDP, "audit", "recover", "--root", root], site.env("published-uncommitted"))
    assert killed.returncode == -signal.SIGKILL and len(on_disk) == 1
    recover_and_check(site, root, before=on_disk, cli=False)
    assert recovery.recover(root).actions == []  # idempotent
    assert [e.status for e in audit.list_entries(root)] == ["pending", "rolled_back", "pending", "published"]


# -- the real CLI, killed around the rename (fast) and at every point (slow) -----------------------------------
def cli_kills(site, tmp_path, points: list[str]) -> Path:
    root = tmp_path / "root"
    assert drive(site, root, None).returncode == 0  # one published release already (a trail of its own)
    spec = site.spec(root, f"cli-{tmp_path.name}")
    for point in points:
        check_kill(site, root, point, run([PPDP, "run", spec, "--force"], site.env(point)))  # else unchanged
    return root


@pytest.mark.slow  # a real `ppdp run` process with its own Prefect server, killed (about 10 s); .ci/run runs it
def test_ppdp_run_killed_just_before_the_rename(site, tmp_path):
    """(Just after the rename: the orphan-server test below, with Prefect's own temporary server.)"""
    root = cli_kills(site, tmp_path, ["pending-appended"])
    assert len(releases_on_disk(root)) == 1


@pytest.mark.slow
def test_ppdp_run_killed_at_a_point_of_each_kind(site, tmp_path):
    """The real CLI killed at one point of each outcome (staging left, completed by recovery, intact), two of them
    inside a transaction; every point is killed in-process above, and just before and after the rename by the CLI
    in the tests around this one (a real ``ppdp run`` costs about 12 s a kill)."""
    points = ["pending-uncommitted", "published-uncommitted", "completed"]
    assert {POINTS[p] for p in points} | {"rolled_back"} == set(POINTS.values())  # rolled_back: the test above
    root = cli_kills(site, tmp_path, points)
    assert len(releases_on_disk(root)) == 1 + 2


@pytest.mark.slow
def test_ppdp_run_killed_at_random_moments(site, tmp_path):
    """Seeded wall-time kills, most of them late in the run (where publishing happens); a run that ends before
    its kill must have published."""
    rng = np.random.default_rng(8)
    root = tmp_path / "root"
    spec = site.spec(root, "random")
    started = time.monotonic()
    assert run([PPDP, "run", spec], site.env()).returncode == 0
    took = time.monotonic() - started
    outcomes: list[str] = []
    for delay in rng.uniform(0.6 * took, 1.1 * took, size=6):
        count = len(published(root))
        proc = subprocess.Popen([str(PPDP), "run", str(spec), "--force"], env=site.env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        before = releases_on_disk(root)  # complete folders in place: none may be lost
        out = recover_and_check(site, root, before)
        new = len(published(root)) - count
        assert proc.returncode in (0, -signal.SIGKILL), proc.returncode
        if proc.returncode == 0 or "completed" in out:
            assert new == 1
        elif "rolled back" in out or "staging" in out:
            assert new == 0
        outcome = ("finished" if proc.returncode == 0 else "completed by recovery" if "completed" in out else
                   "rolled back by recovery" if "rolled back" in out else "staging removed" if "staging" in out
                   else "killed after its completing entry" if new else "killed before publishing")
        outcomes.append(f"{delay:.1f}s: {outcome}")
    print(f"\nrandom kills (one run takes {took:.1f}s): " + "; ".join(outcomes))


# -- what ppdp run does with an interrupted publish ------------------------------------------------------------
def test_run_refuses_a_root_with_an_interrupted_publish_until_recovered(site, tmp_path, monkeypatch):
    root = tmp_path / "root"
    assert drive(site, root, "pending-appended").returncode == -signal.SIGKILL
    spec = site.spec(root, "refuse")
    result = ppdp("run", spec)
    lines = result.stderr.splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith("ppdp: error: publish root") and "interrupted publish" in lines[0]
    assert f"ppdp audit recover --root {root}" in lines[0] and "Traceback" not in result.output
    assert releases_on_disk(root) == set()
    # the same refusal at publish time, under the lock (a flow called without the CLI)
    manifest = load_manifest(site.template)
    with pytest.raises(PublishError, match="interrupted publish"):
        publish_release(pd.read_parquet(site.template / "data.parquet"), with_root(manifest, root), {},
                        datetime.now(UTC))
    assert len(list(root.glob(".staging-*"))) == 1  # the killed run's, untouched
    rec = ppdp("audit", "recover", "--root", root)
    assert rec.exit_code == 0 and "rolled back" in rec.output and "intact after recovery" in rec.output
    assert ppdp("run", spec).exit_code == 0
    assert audit.verify(root) == [] and len(releases_on_disk(root)) == 1


def test_a_running_publish_is_neither_refused_nor_recovered(site, tmp_path, monkeypatch):
    """While another process holds the publish lock, its pending entry is a running publish, not a crash."""
    root = tmp_path / "root"
    assert drive(site, root, "pending-appended").returncode == -signal.SIGKILL
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom ppdp.tasks import staging\n"
                               "with staging.publish_lock(sys.argv[1]):\n    print('held', flush=True)\n"
                               "    time.sleep(60)\n", str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        audit.require_no_interrupted_publish(root)  # no refusal: someone is publishing
        with pytest.raises(staging.RootBusy):
            recovery.recover(root, wait=0.3)
        assert len(audit.interrupted_publishes(root)) == 1 and list(root.glob(".staging-*"))
    finally:
        holder.kill()
        holder.wait()
    assert len(recovery.recover(root).actions) == 1 and audit.verify(root) == []


# -- errors that are not kills roll back at once -------------------------------------------------------------
def with_root(manifest, root: Path):
    spec = manifest.spec.model_copy(update={"publish": manifest.spec.publish.model_copy(update={"root": root})})
    return manifest.model_copy(update={"release_id": new_release_id(), "spec": spec, "output_sha256": None})


def test_a_failed_rename_or_completing_entry_rolls_back_at_once(site, tmp_path, monkeypatch):
    from ppdp.tasks import publish

    root = tmp_path / "root"
    frame = pd.read_parquet(site.template / "data.parquet")
    manifest = load_manifest(site.template)
    good, *_ = publish_release(frame, with_root(manifest, root), {}, datetime.now(UTC))

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as mp:
        mp.setattr(publish.os, "rename", no_rename)
        with pytest.raises(PublishError, match="cannot rename"):
            publish_release(frame, with_root(manifest, root), {}, datetime.now(UTC))
    real_append = audit.append_entry

    def append(root_, **kw):
        if kw["status"] == "published":
            raise PublishError("cannot write the audit trail (disk full)")
        return real_append(root_, **kw)

    with monkeypatch.context() as mp:
        mp.setattr(audit, "append_entry", append)
        with pytest.raises(PublishError, match="disk full"):
            publish_release(frame, with_root(manifest, root), {}, datetime.now(UTC))
    assert [e.status for e in audit.list_entries(root)] == [
        "pending", "published", "pending", "rolled_back", "pending", "rolled_back"]
    assert releases_on_disk(root) == {f"{good.parent.name}/{good.name}"}
    assert not list(root.glob(".staging-*")) and audit.verify(root) == []


def test_recover_leaves_a_forged_pending_entry_and_never_signs_it(site, tmp_path, monkeypatch):
    """A writer of the root who adds a pending entry (with their own key) and a matching folder must not get
    recovery to sign a published entry for it."""
    root = tmp_path / "root"
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    (attacker / "audit-key.pem").write_bytes(Ed25519PrivateKey.generate().private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    folder = root / "census" / "planted"
    folder.mkdir(parents=True)
    (folder / "data.parquet").write_bytes(b"planted")
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(attacker))
    audit.append_entry(root, release_id="planted", dataset="census", status="pending", reason="x",
                       started_at=datetime.now(UTC), files={"data.parquet": audit.file_sha256(folder / "data.parquet")})
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(site.dir / "config"))
    report = recovery.recover(root)
    assert report.left == 1 and "does not verify" in report.actions[0]
    assert [e.status for e in audit.list_entries(root)] == ["pending"] and folder.is_dir()


# -- no orphaned Prefect server --------------------------------------------------------------------------------
def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process (from /proc; the command may hold spaces and parentheses)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2:].split()
            table[int(entry)] = (int(fields[1]), fields[0])
    return table


def _descendants(pid: int) -> set[int]:
    table, found, todo = _proc_table(), set(), [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, _) in table.items():
            if ppid == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _living(pids: set[int]) -> set[int]:
    table = _proc_table()
    return {p for p in pids if p in table and table[p][1] not in ("Z", "X")}


def _with_prefect_home(home: Path) -> set[int]:
    """Living processes whose environment names this PREFECT_HOME (the temporary server inherits it)."""
    needle = f"PREFECT_HOME={home}".encode() + b"\0"
    found = set()
    for pid in _living(set(_proc_table())):
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes() + b"\0":
                found.add(pid)
        except OSError:
            continue
    return found


def _kill_mid_run(argv: list[str], env: dict, timeout: float = 180) -> tuple[set[int], int]:
    """Start ``argv`` and watch its descendants until it ends; once its temporary Prefect server (a uvicorn
    child) is up, SIGKILL it after 2 s unless it kills itself first (``PPDP_FAULT_AT``). Returns every
    descendant seen and the exit status."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: set[int] = set()
    server_at = None
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            seen |= _descendants(proc.pid)
            if server_at is None and any(b"uvicorn" in _cmdline(p) for p in seen):
                server_at = time.monotonic()
            if server_at is not None and time.monotonic() > server_at + 2 and staging.FAULT_ENV not in env:
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert server_at is not None, "no temporary Prefect server was seen while the run was going"
    return seen, proc.returncode


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def seed_prefect_database(home: Path) -> None:
    """Start ``home``'s temporary server from a copy of the session's Prefect database (schema migrated already:
    about 10 s less than a fresh one). SQLite's backup API copies it consistently while it is in use."""
    import sqlite3

    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    source = PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split("///", 1)[1]
    home.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(home / "prefect.db") as dst:
        src.backup(dst)


def _gone_within(pids: set[int], home: Path, seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = _living(pids) | _with_prefect_home(home)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.mark.slow  # a real `ppdp run` process with its own Prefect server, killed (about 17 s); .ci/run runs it
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_ppdp_run_killed_just_after_the_rename_leaves_no_prefect_server(site, tmp_path):
    """The real CLI with its own temporary Prefect server (no PREFECT_API_URL), killed just after the rename:
    no process of the run survives it, and recovery completes the release."""
    root = tmp_path / "root"
    assert drive(site, root, None).returncode == 0
    home = site.dir / "prefect-home-ephemeral"
    seed_prefect_database(home)
    seen, status = _kill_mid_run([str(PPDP), "run", str(site.spec(root, "orphan"))],
                                 site.env("renamed", ephemeral=True, home=home.name))
    left = _gone_within(seen, home, 10)
    for pid in left:  # never leave one behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of the killed run survive: {sorted(left)}"
    check_kill(site, root, "renamed", subprocess.CompletedProcess([], status, "", ""))


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_ppdp_run_killed_by_wall_time_leaves_no_prefect_server(site, tmp_path):
    root = tmp_path / "root"
    home = site.dir / "prefect-home-ephemeral-2"
    seed_prefect_database(home)
    seen, status = _kill_mid_run([str(PPDP), "run", str(site.spec(root, "orphan-2"))],
                                 site.env(ephemeral=True, home=home.name))
    left = _gone_within(seen, home, 10)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert status == -signal.SIGKILL and not left, f"processes of the killed run survive: {sorted(left)}"
    recover_and_check(site, root, before=set())


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_control_without_ppdp_a_killed_flow_orphans_its_prefect_server(site):
    """The same kill on a plain Prefect flow (ppdp not imported): its temporary server survives. This shows the
    test above can fail, and what ppdp's patch fixes."""
    home = site.dir / "prefect-home-control"
    seed_prefect_database(home)
    script = "import time\nfrom prefect import flow\n\n@flow\ndef f():\n    time.sleep(120)\n\nf()\n"
    seen, _ = _kill_mid_run([sys.executable, "-c", script], site.env(ephemeral=True, home=home.name))
    left = _gone_within(seen, home, 3)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left, "the control's temporary server died with its parent: the orphan test proves nothing here"


# -- the series ledger, killed with the publish ----------------------------------------------------------------
@pytest.mark.slow  # two real `ppdp run` processes killed (about 20 s); .ci/run runs it
@pytest.mark.parametrize("point", ["ledger-uncommitted", "ledger-written"])
def test_a_kill_around_the_ledger_write_leaves_no_counted_release(site, tmp_path, point):
    """Killed inside the ledger's transaction (nothing in the ledger) or just after it (the ledger holds a release
    whose publish recovery rolls back): either way the release is not counted, and the next run publishes, judged
    with the releases that were published only."""
    from ppdp.tasks import series

    root = tmp_path / "root"
    spec = site.spec(root, f"ledger-{point}")
    assert run([PPDP, "run", spec], site.env()).returncode == 0
    [first] = published(root)
    killed = run([PPDP, "run", spec, "--force"], site.env(point))  # the same input again: else unchanged
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    out = recover_and_check(site, root, before=releases_on_disk(root))
    assert "rolled back" in out
    states = {e.release_id: e.state for e in series.series_entries(root, "census")}
    assert states[first.split("/")[1]] == "published"
    assert list(states.values()).count("published") == 1
    if point == "ledger-written":  # held by the ledger, never published: listed, not counted
        assert sorted(states.values()) == ["published", "rolled_back"], states
    else:
        assert list(states.values()) == ["published"], states
    again = run([PPDP, "run", spec, "--force"], site.env())
    assert again.returncode == 0, again.stderr[-2000:]
    newest = max(p for p in published(root) if p != first)
    manifest = load_manifest(root / newest)
    assert manifest.series.earlier == [first.split("/")[1]]
