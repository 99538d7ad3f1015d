"""The temporary Prefect server is stopped only after the run's queued log lines were sent to it (issue 33).

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
