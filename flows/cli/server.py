"""``ppdp server start|stop|status``: the local Prefect server kept running between runs (never started on its
own)."""

from __future__ import annotations

import typer

from ppdp.flows import local_server, settings
from ppdp.flows.cli.output import console, fail


def server_start() -> None:
    """Start a local Prefect server in the background for later runs (nothing happens if it runs already).

    It listens on 127.0.0.1 (a free port), keeps its database under ppdp's config folder (prefect-server/) and
    has ppdp's data-safety settings; its URL and pid are in prefect-server/server.json. ppdp run, tune, compare and
    federate use it while it answers; if it is gone they start a temporary server as before. It keeps running after this
    command (in its own session: a terminal's Ctrl-C does not reach it) until ppdp server stop.

    \b
    Exit codes:
      0  running
      1  it did not start (its log is named)
    """
    settings.apply_settings()
    try:
        state, started = local_server.start()
    except local_server.ServerError as exc:
        fail(f"error: {exc}", exc.exit_code)
    verb = "started" if started else "already running:"
    console.print(f"Prefect server {verb} {state.url} (pid {state.pid}; ppdp server stop stops it)", markup=False)
    chosen = local_server.user_api_url()
    if chosen is not None:
        console.print(f"note: PREFECT_API_URL {chosen} is set: runs use it, not this server", markup=False)


def server_stop() -> None:
    """Stop the local Prefect server started by ppdp server start and remove its state file.

    \b
    Exit codes:
      0  stopped, or none was running
      1  it did not stop
    """
    try:
        state, was = local_server.stop()
    except local_server.ServerError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if state is None:
        console.print("no local Prefect server was running", markup=False)
    elif not was:
        console.print(f"no local Prefect server was running (removed the stale state file of pid {state.pid})",
                      markup=False)
    else:
        console.print(f"stopped the Prefect server {state.url} (pid {state.pid})", markup=False)


def server_status() -> None:
    """Say whether the local Prefect server runs, and which API URL ppdp run would use.

    \b
    Exit codes:
      0  running
      1  not running
    """
    state = local_server.read_state()
    running = local_server.running()
    chosen = local_server.user_api_url()
    if running is not None:
        console.print(f"running: {running.url} (pid {running.pid}, since {running.started_at}; home "
                      f"{running.home})", markup=False)
    elif state is not None:
        console.print(f"not running (stale state file {local_server.state_path()}: pid {state.pid} is gone or does "
                      "not answer); runs start a temporary server", markup=False)
    else:
        console.print("not running; runs start a temporary server (ppdp server start starts one)", markup=False)
    if chosen is not None:
        console.print(f"PREFECT_API_URL {chosen} is set: runs use it, not the local server", markup=False)
    raise typer.Exit(0 if running is not None else 1)
