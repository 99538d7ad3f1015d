"""The moment between a command's checks and its flow: the run's temporary Prefect server answering."""

from __future__ import annotations

from ppdp.flows import local_server
from ppdp.flows.cli import lazy


def server_ready() -> None:
    """Just before the flow runs: while the temporary server this command started is starting, import what the
    ingest step imports (Great Expectations: 2-3 s, otherwise spent inside the step), then wait until the server
    answers. Nothing to do with a server that runs already."""
    if local_server.temporary() is None:
        return
    lazy.expectations.preload()  # heavy: Great Expectations, while the server starts
    local_server.wait_temporary()
