"""Quiet runs, JSON runs, progress and the local Prefect server (issue 34 item 5).

``ppdp run --quiet`` prints only the summary and ``--json`` only one JSON object on standard output (a refusal
too); long steps report progress; ``ppdp server start`` keeps a Prefect server that later runs use instead of
starting a temporary one, ``ppdp server stop`` leaves no process, and a stale state file changes nothing. The CLI
runs as a real ``ppdp`` process; the tests that start a Prefect server stop it in a fixture whatever happens.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ppdp.flows import local_server
from ppdp.flows.cli.release_summary import summary_json as _summary_json
from ppdp.schemas.manifest import ReleaseResult
from ppdp.schemas.reports import Claim

PPDP = Path(sys.executable).with_name("ppdp")
PREFECT_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} \| [A-Z]+\s* \| ", re.MULTILINE)  # Prefect's console format


def run_ppdp(env: dict[str, str], *args: object, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(PPDP), *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout)


def environment(config: Path, **extra: str) -> dict[str, str]:
    """The test's environment for a ``ppdp`` process: its own config folder (so its own local-server state file),
    no Prefect API chosen, Prefect's log lines at INFO (conftest quietens them to WARNING: here they must be there
    to be silenced)."""
    env = {**os.environ, "PPDP_CONFIG_DIR": str(config), "PREFECT_LOGGING_LEVEL": "INFO", **extra}
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", None)
    return env


def api_get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 - the test's own loopback server
        return json.loads(r.read())


def gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        try:
            if not stat.exists() or stat.read_text().split(") ", 1)[1][:1] == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def server_env(tmp_path):
    """A config folder of its own for ``ppdp server start``; whatever the test does, the server is stopped."""
    config = tmp_path / "config"
    env = environment(config)
    yield env
    run_ppdp(env, "server", "stop", timeout=60)
    state = config / local_server.FOLDER / local_server.STATE
    if state.exists():  # stop failed: do not leave the process behind
        try:
            os.killpg(json.loads(state.read_text())["pid"], signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass


def summary_only(stdout: str) -> None:
    lines = stdout.splitlines()
    assert lines and lines[0].startswith("published release "), stdout
    assert all(line.startswith("  ") for line in lines[1:]), stdout  # the summary's indented key lines only


# -- fast: no flow runs ------------------------------------------------------------------------------------
def test_a_refusal_with_json_is_one_json_object_and_the_same_line_on_stderr(tmp_path, workspace):
    env = environment(tmp_path / "config")
    spec = workspace.spec()
    done = run_ppdp(env, "run", tmp_path / "missing.yaml", "--json")
    assert done.returncode == 2
    doc = json.loads(done.stdout)  # the whole of standard output is one JSON object
    assert doc == {"status": "refused", "exit_code": 2, "message": doc["message"]}
    assert "missing.yaml" in doc["message"]
    assert done.stderr.strip().splitlines()[-1] == f"ppdp: {doc['message']}"  # after any key-created line
    done = run_ppdp(env, "run", spec, "--json", "--set", "tuning.strategy=nope")
    assert done.returncode == 2, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "refused" and doc["exit_code"] == 2 and "tuning.strategy" in doc["message"]
    assert done.stderr.strip().splitlines()[-1] == f"ppdp: {doc['message']}"  # after any key-created line
    assert not [p for p in workspace.under_root() if p.endswith(".parquet")]  # nothing published


def test_server_status_and_stop_without_a_server(tmp_path):
    env = environment(tmp_path / "config")
    done = run_ppdp(env, "server", "status")
    assert done.returncode == 1 and done.stdout.startswith("not running;"), done.stdout
    done = run_ppdp(env, "server", "stop")
    assert done.returncode == 0 and "no local Prefect server was running" in done.stdout


def test_a_stale_state_file_is_reported_and_ignored_and_stop_removes_it(tmp_path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(config))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))  # no profile choosing an API
    state = config / local_server.FOLDER / local_server.STATE
    state.parent.mkdir(parents=True)
    probe = subprocess.Popen([sys.executable, "-c", "pass"])
    probe.wait()  # a pid that existed and is gone
    state.write_text(json.dumps({"url": "http://127.0.0.1:9/api", "pid": probe.pid, "home": str(state.parent),
                                 "started_at": "2026-01-01T00:00:00+00:00"}))
    assert local_server.read_state() is not None and local_server.running() is None
    assert local_server.use_local_server() is None and "PREFECT_API_URL" not in os.environ
    done = run_ppdp(environment(config), "server", "status")
    assert done.returncode == 1 and "stale state file" in done.stdout
    stale, was_running = local_server.stop()
    assert stale is not None and stale.pid == probe.pid and not was_running
    assert not state.exists()


def test_an_explicit_prefect_api_url_wins_over_the_local_server(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
    assert local_server.user_api_url() == "http://127.0.0.1:1/api"
    assert local_server.use_local_server() is None  # not even the state file is read
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:1/api"
    monkeypatch.delenv("PREFECT_API_URL")
    home = tmp_path / "prefect-home"
    home.mkdir()
    (home / "profiles.toml").write_text('active = "mine"\n[profiles.mine]\nPREFECT_API_URL = '
                                        '"http://127.0.0.1:2/api"\n', encoding="utf-8")
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.delenv("PREFECT_PROFILES_PATH", raising=False)
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    assert local_server.user_api_url() == "http://127.0.0.1:2/api"  # a profile's URL is the user's choice too


def test_a_long_step_reports_progress_by_name_and_seconds_only(monkeypatch):
    from ppdp.flows.steps import _guarded

    class Lines(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.INFO)
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(record.getMessage())

    seen = Lines()
    logger = logging.getLogger("ppdp.progress")  # a step outside a flow run reports here
    logger.addHandler(seen)
    monkeypatch.setattr(logger, "level", logging.INFO)
    secret = "987-65-4329"

    def slow(value):
        time.sleep(1.2)
        return len(value)

    try:
        monkeypatch.setenv("PPDP_PROGRESS_SECONDS", "0.2")
        assert _guarded(slow, "sanitize")(secret) == len(secret)
        time.sleep(0.3)  # a line being written as the step ended
        count = len(seen.lines)
        time.sleep(0.6)
        assert len(seen.lines) == count  # nothing once the step has ended
        assert count >= 2, seen.lines
        assert all(re.fullmatch(r"sanitize: still running after \d+ s", line) for line in seen.lines), seen.lines
        assert not any(secret in line for line in seen.lines)
        monkeypatch.setenv("PPDP_PROGRESS_SECONDS", "0")  # off
        _guarded(slow, "sanitize")(secret)
        assert len(seen.lines) == count
    finally:
        logger.removeHandler(seen)


def test_json_of_a_dp_release_withholds_the_utility_figures_as_the_text_does():
    claim = Claim(name="epsilon", value=1.0, threshold=1.0, comparison="<=", passed=True)
    kept = dict(release_id="r1", status="published", reason="published", folder="/x/r1", report="/x/r1/report.html",
                k=None, claims=[claim], accuracy=0.8123, accuracy_original=0.8456, per_class={"a": 0.7},
                delta_r={"knn1": 0.01})
    dp = _summary_json(ReleaseResult(unit="differential_privacy", **kept), None)
    assert dp["utility"]["withheld"] is True
    text = json.dumps(dp)
    assert "0.8123" not in text and "0.8456" not in text and "knn1" not in text and '"a"' not in text
    assert dp["claims"] == [{"name": "epsilon", "value": 1.0, "comparison": "<=", "threshold": 1.0, "holds": True}]
    plain = _summary_json(ReleaseResult(unit="equivalence_class", **kept), None)
    assert plain["utility"] == {"withheld": False, "accuracy": 0.8123, "accuracy_original": 0.8456,
                                "per_class": {"a": 0.7}, "delta_r": {"knn1": 0.01}, "tstr": [],
                                "regression": []}  # issue 35: TSTR and regression figures (none here)
    assert [plain[k] for k in ("release_id", "folder", "report")] == ["r1", "/x/r1", "/x/r1/report.html"]


# -- real runs ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_runs_use_the_local_server_quietly_and_as_json_and_stop_leaves_no_process(server_env, workspace):
    started = run_ppdp(server_env, "server", "start", timeout=150)
    assert started.returncode == 0, started.stderr
    state = local_server.ServerState(**json.loads(
        (Path(server_env["PPDP_CONFIG_DIR"]) / local_server.FOLDER / local_server.STATE).read_text()))
    assert state.url.startswith("http://127.0.0.1:") and local_server.healthy(state.url)
    again = run_ppdp(server_env, "server", "start")
    assert again.returncode == 0 and "already running" in again.stdout

    spec = workspace.spec()
    done = run_ppdp(server_env, "run", spec, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # nothing but one JSON object on standard output
    folder = Path(doc["folder"])
    assert doc["status"] == "published" and folder.name == doc["release_id"]
    assert (folder / "manifest.json").is_file() and doc["report"] == str(folder / "report.html")
    assert doc["unit"] == "generating_group" and doc["claims"] and doc["utility"]["withheld"] is False
    assert not PREFECT_LINE.search(done.stderr), done.stderr
    # the run used the local server: its flow run (named in the manifest) is in that server's database, with logs
    run_id = json.loads((folder / "manifest.json").read_text())["flow_run_id"]
    assert api_get(f"{state.url}/flow_runs/{run_id}")["state_type"] == "COMPLETED"
    request = urllib.request.Request(f"{state.url}/logs/filter", method="POST", headers={"content-type":
                                     "application/json"}, data=json.dumps({"logs": {"flow_run_id": {"any_": [run_id]}},
                                                                           "limit": 200}).encode())
    with urllib.request.urlopen(request, timeout=10) as r:  # noqa: S310 - loopback
        messages = [log["message"] for log in json.loads(r.read())]
    assert any(m.startswith("[8/8] published") for m in messages), messages  # silenced on screen, kept there

    # a gate rejects inside the flow (standard output then points at standard error): still one JSON object
    strict = workspace.spec("strict.yaml", privacy__max_linkage_risk=0.0)
    rejected = run_ppdp(server_env, "run", strict, "--json", "--set", f"publish.root={workspace.dir / 'strict'}")
    assert rejected.returncode == 3, rejected.stderr
    doc = json.loads(rejected.stdout)
    assert doc["status"] == "refused" and doc["exit_code"] == 3 and "max_linkage_risk" in doc["message"]
    assert rejected.stderr.strip().splitlines()[-1] == f"ppdp: {doc['message']}"

    quiet = run_ppdp(server_env, "run", spec, "--quiet", "--set", f"publish.root={workspace.dir / 'quiet'}")
    assert quiet.returncode == 0, quiet.stderr
    summary_only(quiet.stdout)
    assert not PREFECT_LINE.search(quiet.stderr), quiet.stderr
    loud = run_ppdp(server_env, "run", spec, "--set", f"publish.root={workspace.dir / 'loud'}")
    assert loud.returncode == 0 and PREFECT_LINE.search(loud.stderr)  # without --quiet: Prefect's lines
    assert "Starting temporary server" not in loud.stderr  # the local server, not a temporary one

    stopped = run_ppdp(server_env, "server", "stop", timeout=60)
    assert stopped.returncode == 0 and f"pid {state.pid}" in stopped.stdout
    assert gone(state.pid), f"the Prefect server (pid {state.pid}) is still running"
    assert not local_server.healthy(state.url)
    status = run_ppdp(server_env, "server", "status")
    assert status.returncode == 1 and status.stdout.startswith("not running;")


@pytest.mark.slow
def test_with_a_stale_state_file_a_quiet_run_starts_its_temporary_server_and_publishes(tmp_path, workspace):
    config = tmp_path / "config"
    state = config / local_server.FOLDER / local_server.STATE
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"url": "http://127.0.0.1:9/api", "pid": 2**22 + 1, "home": str(state.parent),
                                 "started_at": "2026-01-01T00:00:00+00:00"}))
    done = run_ppdp(environment(config), "run", workspace.spec(), "--quiet")
    assert done.returncode == 0, done.stderr
    summary_only(done.stdout)
    assert not PREFECT_LINE.search(done.stderr), done.stderr
    assert "census/" + done.stdout.split()[2] in workspace.under_root()
