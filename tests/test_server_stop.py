"""The temporary Prefect server (issue 33): stopped only after the run's queued log lines were sent to it; the CLI's own
started before Prefect is imported.

Prefect stops its temporary server in an exit handler that runs before ``logging.shutdown``; that shutdown then
flushed Prefect's API log handler, whose worker could no longer reach the stopped server, and waited its full 5 s
(5 of the 26 s of an Adult release from the CLI). :func:`ppdp.flows.settings.server_dies_with_parent` wraps the
server's ``stop`` so that the log worker is drained first, while the server still answers. The test starts a real
temporary server in a process of its own (the session's test server is never touched) and records, inside the real
``drain_all``, whether the server process was still running when the logs were sent.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = """
import json, sys
from ppdp.flows.settings import apply_settings
apply_settings()
from prefect.logging.handlers import APILogWorker
from prefect.server.api.server import SubprocessASGIServer

server = SubprocessASGIServer()
server.start(timeout=90)
seen = []
drain_all = APILogWorker.drain_all.__func__

def recording(cls, *args, **kwargs):
    process = server.server_process
    seen.append(process is not None and process.poll() is None)
    return drain_all(cls, *args, **kwargs)

APILogWorker.drain_all = classmethod(recording)
process = server.server_process
server.stop()
second = len(seen)
server.stop()  # stopped already: nothing to send, nothing drained
print(json.dumps({"seen": seen, "second": len(seen) - second, "exited": process.poll() is not None}))
"""


@pytest.mark.slow  # a real temporary server on a new database (about 10 s); .ci/run runs it
def test_logs_are_sent_before_the_temporary_server_stops():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"seen": [True], "second": 0, "exited": True}


# -- the CLI's own temporary server (flows/local_server.py), started before Prefect is imported -----------------
EARLY = """
import json, os, socket, sys
from ppdp.flows import local_server
from ppdp.flows.settings import apply_settings
apply_settings()
taken = socket.socket()
taken.bind(("127.0.0.1", 0))
taken.listen()
first = taken.getsockname()[1]
ports = iter([first])
free_port = local_server._free_port
local_server._free_port = lambda: next(ports, None) or free_port()  # the first port chosen is taken already
server = local_server.start_temporary()
started = {"url": os.environ["PREFECT_API_URL"], "prefect": "prefect" in sys.modules}
local_server.wait_temporary(timeout=90)
moved = server.port != first and os.environ["PREFECT_API_URL"] == server.api_url
healthy = local_server.healthy(server.api_url)
process = server.server_process
local_server.stop_temporary()
print(json.dumps({**started, "first": first, "moved": moved, "healthy": healthy, "exited": process.poll() is not None,
                  "left": local_server.temporary() is not None, "prefect_after": "prefect" in sys.modules}))
"""


@pytest.mark.slow  # a real temporary server, started twice (about 10 s); .ci/run runs it
def test_the_cli_starts_its_temporary_server_without_prefect_and_moves_off_a_taken_port(monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    done = subprocess.run([sys.executable, "-c", EARLY], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["url"] == f"http://127.0.0.1:{result['first']}/api"  # set at once, before the server answers
    assert result["prefect"] is False and result["prefect_after"] is False  # Prefect never imported for it
    assert result["moved"] and result["healthy"] and result["exited"] and not result["left"]


@pytest.fixture
def no_leak(monkeypatch):
    """A server the code under test wrongly starts is stopped, and its URL leaves this process's environment."""
    from ppdp.flows import local_server

    monkeypatch.setenv("PREFECT_API_URL", "")
    monkeypatch.setenv("PREFECT_UI_URL", "")
    yield local_server
    local_server.stop_temporary()


def test_a_chosen_api_starts_no_temporary_server(no_leak, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert no_leak.start_temporary() is None and no_leak.temporary() is None
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv("PREFECT_SERVER_ALLOW_EPHEMERAL_MODE", "false")
    assert no_leak.start_temporary() is None and no_leak.temporary() is None


def test_the_api_of_prefects_own_settings_starts_no_temporary_server(no_leak, prefect_harness, monkeypatch):
    """The CLI run in a process where Prefect is imported and its settings name an API (a test harness, a user's
    ``temporary_settings``): that API is used; none is started beside it."""
    from prefect.settings import PREFECT_API_URL

    monkeypatch.delenv("PREFECT_API_URL")
    assert PREFECT_API_URL.value()  # the harness's server
    assert no_leak.start_temporary() is None and no_leak.temporary() is None
