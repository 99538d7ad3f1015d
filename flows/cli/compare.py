"""``ppdp compare``: every applicable method tuned and judged on the spec's data, one recommended; nothing
published. The checks and the printing (:mod:`ppdp.flows.cli.comparison`, numpy and pandas) are imported when
the command runs, the flow (Prefect) once the local server is chosen."""

from __future__ import annotations

from pathlib import Path

import typer

from ppdp.flows import settings
from ppdp.flows.cli import lazy
from ppdp.flows.cli.output import (
    DEBUG_HELP,
    RUNNER_HELP,
    SET_HELP,
    console_err,
    fail,
    internal_error,
    use_local_server,
)
from ppdp.flows.cli.startup import server_ready
from ppdp.tasks.core.errors import PpdpError


def compare(
    spec: Path = typer.Argument(..., metavar="SPEC", help="The release spec (YAML): its data, roles, privacy policy "
                                "and utility settings."),
    methods: str | None = typer.Option(None, "--methods", metavar="NAMES", help="Compare only these methods "
                                       "(comma-separated names). Default: every registered method."),
    out: Path | None = typer.Option(None, "--out", metavar="DIR", help="Folder for compare.html and compare.json "
                                    "(aggregates only). Default: <publish root>/<dataset>/compare/<time>/ (audit "
                                    "verify accepts it); an --out under the publish root is refused."),
    write_spec: Path | None = typer.Option(None, "--write-spec", metavar="FILE", help="Write the recommended "
                                           "method's spec, its tuned value fixed, to this file (for ppdp run)."),
    set_: list[str] = typer.Option([], "--set", metavar="KEY.PATH=VALUE", help=SET_HELP),
    runner: str | None = typer.Option(None, "--runner", metavar="RUNNER", help=RUNNER_HELP),
    debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP),
) -> None:
    """Compare every applicable method on the spec's data and recommend one; publish nothing.

    Each method is tuned with its default strategy and judged like a release (policy, safety floor, attacker's
    view, utility); the methods are ranked and one is recommended.

    \b
    Exit codes:
      0  a method is recommended
      3  no method passes
      2  bad spec or input
      1  internal error (--debug prints its traceback)
    """
    settings.apply_settings()
    resolved, overrides, chosen = lazy.comparison.check_compare_spec(spec, set_, methods, runner, out, write_spec)

    use_local_server()
    from ppdp.flows.compare import run_compare  # heavy: Prefect, after the settings and the server's choice

    with console_err.status("comparing methods (progress in the log lines)"):
        try:
            server_ready()
            result = run_compare(spec, overrides, chosen or None)
        except PpdpError as exc:
            fail(f"error: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
            internal_error(exc, debug)
    lazy.comparison.print_comparison(result)
    lazy.comparison.write_comparison(result, resolved, spec, out, write_spec)
    if result.recommended is None:
        raise typer.Exit(3)
