"""The ``ppdp`` application: its command groups, each command registered from the module of its group, the
help made readable, and the entry points (:func:`main`; :func:`entry`, the console script).

Exit codes: 0 published / intact, 2 bad spec or input, 3 rejected by a gate, 1 audit trail altered or an
internal error. Nothing printed contains a data value. ppdp's Prefect settings are applied here (:func:`main`)
and by each command that runs a flow, never by an import."""

from __future__ import annotations

import atexit
import faulthandler
import inspect
import signal
import sys
import threading

import typer
from typer.core import TyperOption

from ppdp import __version__
from ppdp.flows import settings
from ppdp.flows.cli import audit, compare, release, series, server, validate
from ppdp.flows.cli.output import OUTPUT, console

app = typer.Typer(
    name="ppdp", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="Privacy-preserving data publishing: sanitize, validate, publish and audit releases of sensitive tables."
         "\n\nStart with ppdp run examples/census_demo.yaml (examples/ holds a release spec for each method); ppdp "
         "COMMAND --help describes a command, its options and its exit codes.",
)
audit_app = typer.Typer(no_args_is_help=True, help="Read and verify the audit trail of a publish root.")
server_app = typer.Typer(
    no_args_is_help=True,
    help="A local Prefect server kept running between runs, so that ppdp run, tune, compare and federate do not "
         "each start a temporary one (about 1 s per run), and their runs stay in the Prefect UI. Never started on "
         "its own: ppdp server start starts it, ppdp server stop stops it. An explicit PREFECT_API_URL (environment "
         "or Prefect profile) always wins.")


def _flags_show_no_type() -> None:
    """typer 0.29's rich help gives a flag a type, ``--debug <bool>`` (even ``--help <bool>``), though a flag takes
    no value (its plain help shows none): show none. Typer versions without ``display_type_rich`` are left as
    they are."""
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "ppdp_flags", False):
        return

    def display_type_rich(self, ctx):
        return None if self.is_flag and not self.count else shown(self, ctx)

    vars(display_type_rich)["ppdp_flags"] = True  # marks the patch as applied (a function attribute)
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]  # the patch of typer's method


def _print_version(value: bool) -> None:
    if value:
        console.print(f"ppdp {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Privacy-preserving data publishing: sanitize, validate, publish and audit releases of sensitive tables.

    Start with ppdp run examples/census_demo.yaml (examples/ holds a release spec for each method); ppdp COMMAND
    --help describes a command, its options and its exit codes."""
    OUTPUT.json = False  # each command sets its own (a test may call several commands in one process)


def register_commands() -> None:
    """Every command group and command, in the order ``ppdp --help`` lists them."""
    app.add_typer(audit_app, name="audit")
    app.add_typer(server_app, name="server")
    for command in (release.run, release.federate, release.tune, compare.compare, validate.validate,
                    validate.report, series.series):
        app.command()(command)
    app.command("series-rekey")(series.series_rekey)
    for name, command in (("list", audit.audit_list), ("show", audit.audit_show), ("verify", audit.audit_verify),
                          ("recover", audit.audit_recover), ("head", audit.audit_head)):
        audit_app.command(name)(command)
    for name, command in (("start", server.server_start), ("stop", server.server_stop),
                          ("status", server.server_status)):
        server_app.command(name)(command)


def _reflow_help(*apps: typer.Typer) -> None:
    """Give each command its docstring with every paragraph on one line: typer's rich help keeps a docstring's
    line breaks (in the list of commands and in a command's later paragraphs), so a sentence broke where its
    source line ended. A paragraph that starts with ``\\b`` keeps its lines (a table, such as the exit codes)."""
    def paragraph(text: str) -> str:
        return text.removeprefix("\b\n") if text.startswith("\b\n") else " ".join(text.split())

    for each in apps:
        for info in each.registered_commands:
            doc = info.callback.__doc__ if info.callback is not None else None
            if info.help is None and doc:
                info.help = "\n\n".join(paragraph(p) for p in inspect.cleandoc(doc).split("\n\n"))


_flags_show_no_type()
register_commands()
_reflow_help(app, audit_app, server_app)


def main() -> None:
    settings.apply_settings()
    app(prog_name="ppdp")


def entry() -> None:
    """The ``ppdp`` console script: :func:`main`, then a quick exit (see :func:`_exit`). ``kill -USR1`` on a
    running ``ppdp`` prints every thread's stack to standard error (file, line and function names only: no
    values), for a run that seems stuck."""
    if hasattr(signal, "SIGUSR1"):  # POSIX
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    _exit(code)


def _exit(code: int) -> None:
    """Leave without tearing the interpreter down module by module: after a release, Python's own finalization
    of the imported libraries (Prefect, Great Expectations, pandas, scikit-learn) took 1.3 s of a 9 s run. Every
    non-daemon thread is joined and every ``atexit`` hook runs first (Prefect's log and event workers drain
    there, and a temporary Prefect server is stopped), then the standard streams are flushed. A run whose Prefect
    API went away after its release was published leaves at once (:func:`ppdp.flows.interrupts.leave`): those
    handlers would wait minutes on the dead API."""
    if "ppdp.flows.interrupts" in sys.modules and sys.modules["ppdp.flows.interrupts"].api_gone():
        sys.modules["ppdp.flows.interrupts"].leave(code)
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    settings.exit_now(code)
