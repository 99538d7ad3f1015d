"""What every ``ppdp`` command shares: the consoles, refusals and internal errors (one line, never a data value),
``--json`` output, the quiet and spinner modes, the option help texts used by several commands."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import traceback
from typing import Any, NoReturn

import typer
from rich.console import Console

from ppdp.flows import local_server

console = Console(highlight=False, soft_wrap=True)


console_err = Console(stderr=True, highlight=False, soft_wrap=True)


RUNNER_HELP = ("Where the parallel steps (tuning evaluations, privacy and utility checks) run: thread, dask (a local "
               "Dask cluster of runner.workers processes) or dask=tcp://host:port (an existing Dask scheduler). "
               "Default: the spec's runner (the manifest's spec records it).")


SET_HELP = "Override a spec key, as key.path=value (the value is read as YAML; repeatable)."


DEBUG_HELP = "On an unexpected error, also print its traceback."


class OUTPUT:  # noqa: N801 - a namespace of module state
    """How the running command reports: ``json`` set by ``run --json`` (a refusal is then also a JSON object on
    standard output, see :func:`fail`)."""

    json = False
    stdout: Any = None  # standard output (a file descriptor or a stream) while the flow's is sent to standard error


def internal_error(exc: BaseException, debug: bool) -> None:
    """An unexpected error: one line with its type (its message may quote data), the traceback only on
    request (--debug)."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    fail(f"internal error ({type(exc).__name__}); run again with --debug to see the traceback", 1)


def fail(message: str, code: int) -> NoReturn:
    console_err.print(f"ppdp: {message}", markup=False)
    if OUTPUT.json:  # the same line for programs: the message never holds a data value (see the module docstring)
        print_json({"status": "refused", "exit_code": code, "message": message})
    raise typer.Exit(code)


def print_json(doc: dict) -> None:
    """One JSON object on standard output, on one line."""
    text = json.dumps(doc) + "\n"  # not through rich: no markup, emoji codes or wrapping
    target = OUTPUT.stdout  # set while the flow runs (a refusal then): standard output itself, not its stand-in
    if isinstance(target, int):
        sys.stderr.flush()
        os.write(target, text.encode("utf-8"))
    else:
        stream = target if target is not None else sys.stdout
        stream.write(text)
        stream.flush()


def quiet_prefect(quiet: bool) -> None:
    """``--quiet`` / ``--json``: Prefect's log lines are not printed (its console handler shows only CRITICAL),
    while its API handler still sends them to the Prefect server's database. Set in the environment before Prefect
    is imported (Prefect reads ``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL`` when it configures logging at import;
    Dask workers inherit it), and on the handlers of a Prefect already imported in this process."""
    if not quiet:
        return
    os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "CRITICAL"
    if "prefect.logging.handlers" in sys.modules:
        from prefect.logging.handlers import PrefectConsoleHandler  # heavy: Prefect, imported already here

        for logger in [logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))]:
            for handler in getattr(logger, "handlers", []):
                if isinstance(handler, PrefectConsoleHandler):
                    handler.setLevel(logging.CRITICAL)


def busy(text: str, quiet: bool):
    """The spinner on standard error while a flow runs; none with --quiet or --json."""
    return contextlib.nullcontext() if quiet else console_err.status(text)


def stdout_kept_for_json(as_json: bool):
    """With --json, nothing but the JSON object reaches standard output: while the flow runs, file descriptor 1
    (this process, its temporary Prefect server, Dask workers) points at standard error."""
    @contextlib.contextmanager
    def redirected():
        sys.stdout.flush()
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):  # not a real file (a test's captured stream)
            OUTPUT.stdout = sys.stdout
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    yield
            finally:
                OUTPUT.stdout = None
            return
        saved = os.dup(fd)
        try:
            os.dup2(sys.stderr.fileno(), fd)
            OUTPUT.stdout = saved
            yield
        finally:
            OUTPUT.stdout = None
            sys.stdout.flush()
            os.dup2(saved, fd)
            os.close(saved)

    return redirected() if as_json else contextlib.nullcontext()


def use_local_server() -> None:
    """Use the local Prefect server of ``ppdp server start`` when it runs (and no PREFECT_API_URL was chosen), else
    start the run's temporary server now (:func:`ppdp.flows.local_server.start_temporary`); before Prefect is
    imported. :func:`ppdp.flows.cli.startup.server_ready` before the flow runs."""
    if local_server.use_local_server() is None:
        local_server.start_temporary()


def names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def runner_overrides(runner: str | None) -> list[str]:
    """``--runner`` as spec overrides (:func:`ppdp.flows.runners.runner_overrides`, imported only when given: it
    imports Prefect)."""
    if runner is None:
        return []
    from ppdp.flows.runners import runner_overrides as overrides_of  # heavy: Prefect, only for --runner

    return overrides_of(runner)
