"""``ppdp run``, ``ppdp federate`` and ``ppdp tune``: the commands that run a flow.

Their options and help load nothing heavy (``ppdp run --help`` imports no numerical package): the spec checks
(:mod:`ppdp.flows.cli.release_work`, numpy and pandas) are imported once ppdp's Prefect settings are applied, and
the flows (Prefect) once the local server is chosen."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import typer

from ppdp.flows import settings
from ppdp.flows.cli import lazy
from ppdp.flows.cli.output import (
    DEBUG_HELP,
    OUTPUT,
    RUNNER_HELP,
    SET_HELP,
    busy,
    console,
    console_err,
    fail,
    internal_error,
    print_json,
    quiet_prefect,
    stdout_kept_for_json,
    use_local_server,
)
from ppdp.flows.cli.startup import server_ready
from ppdp.tasks.core.errors import PpdpError


def run(
    spec: Path = typer.Argument(..., metavar="SPEC", help="The release spec (YAML); examples/ holds one for each "
                                "method."),
    set_: list[str] = typer.Option([], "--set", metavar="KEY.PATH=VALUE", help=SET_HELP),
    runner: str | None = typer.Option(None, "--runner", metavar="RUNNER", help=RUNNER_HELP),
    force: bool = typer.Option(False, "--force", help="Publish a new release even when the input, the spec (with "
                               "--set) and ppdp's code are those of the dataset's latest release (without it such "
                               "a run publishes nothing and prints: unchanged since RELEASE)."),
    debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP),
    timings: bool = typer.Option(False, "--timings", help="Also print the run's wall time and the part of it spent "
                                                          "in the steps' own work."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the summary: no Prefect log lines (they "
                               "still reach the Prefect server's database), no progress, no spinner."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object on standard output "
                                 "and nothing else there (implies --quiet); a refusal is a JSON object too, "
                                 "{\"status\": \"refused\", \"exit_code\", \"message\"}, its line also on "
                                 "standard error."),
) -> None:
    """Run a release: ingest, tag, tune, sanitize, validate, check utility, publish, audit.

    SPEC is a release spec (YAML). examples/ holds one for each method (ppdp run examples/census_demo.yaml is the
    quickest start); schemas/release.schema.json describes every key.

    Each run starts a temporary Prefect server (about 1 s of the run) unless a Prefect server is running: ppdp
    server start keeps a local one for later runs (it is never started on its own: see ppdp server --help).

    Ctrl-C stops a run safely: before the release is renamed into place nothing is published (the audit trail
    records the interruption); after, the release is complete. A Prefect server that stops answering after the
    publish does not fail the run: one line names what Prefect did not record.

    A run whose input (its SHA-256), resolved spec and installed code are those of the dataset's latest release
    publishes nothing (no folder, no audit entry, no budget spent) and prints "unchanged since RELEASE" and that
    release's folder; --force publishes a new release anyway.

    The spec, the input's cheap checks, the policy's feasibility and the series (and DP budget) are decided before
    any tuning or sanitizing. An input problem names the column by position (1 = the first column) and name, and
    the first failing data row (1 = the first row after the header; the header is not counted), never a value.

    \b
    Exit codes:
      0  published, or unchanged since the dataset's latest release (nothing published)
      2  bad spec or input: one line per problem, nothing published
      3  rejected by a privacy or utility gate or by the safety floor: nothing published
      1  audit trail damaged, or an internal error (--debug prints its traceback)
      130  stopped by Ctrl-C (SIGINT) or a Prefect cancellation (143: SIGTERM): nothing published, or, once
           the release was renamed into place, the release complete (one line says which)
    """
    entered = time.perf_counter()
    settings.apply_settings()
    OUTPUT.json = as_json
    quiet_prefect(quiet or as_json)  # before Prefect is imported (--runner imports it)
    set_ = lazy.release_work.check_release_spec(spec, set_, runner, datetime.now(UTC))

    use_local_server()
    from ppdp.flows.release import release_flow  # heavy: Prefect, after the settings and the server's choice
    from ppdp.flows.runners import call_flow  # heavy: Prefect

    with busy("running release flow (progress in the log lines)", quiet or as_json), stdout_kept_for_json(as_json):
        try:
            # on the spec's runner (--runner applied), in a thread of its own: SIGINT and a Prefect cancellation stop
            # it safely (exit 130), a Prefect API gone after the publish does not fail it (ppdp.flows.interrupts)
            server_ready()
            result = lazy.interrupts.run_guarded(call_flow, release_flow, spec, set_, force=force)
        except PpdpError as exc:
            fail(f"{exc.prefix}: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
            internal_error(exc, debug)
    if as_json:
        print_json(lazy.release_summary.summary_json(result, entered if timings else None))
        return
    lazy.release_summary.print_summary(result, entered, timings)


def federate(
    spec: Path = typer.Argument(..., metavar="SPEC", help="The federation spec (YAML): parties, declared domains, "
                                "min_count, publish root."),
    set_: list[str] = typer.Option([], "--set", metavar="KEY.PATH=VALUE", help=SET_HELP),
    debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP),
) -> None:
    """Learn a naive Bayes model over several parties' rows and publish it.

    The parties' counts are summed through two mixers (secret shares). examples/federated/federated_demo.yaml is a
    federation spec.

    \b
    Exit codes:
      0  published
      2  bad spec or input
      3  refused by the min-count rule
      1  internal error
    """
    settings.apply_settings()
    resolved = lazy.release_work.check_federation_spec(spec, set_, datetime.now(UTC))

    use_local_server()
    from ppdp.flows.federate import run_federation  # heavy: Prefect, after the settings and the server's choice

    with console_err.status("running federation flow (progress in the log lines)"):
        try:
            server_ready()
            result = run_federation(spec, set_)
        except PpdpError as exc:
            fail(f"{exc.prefix}: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
            internal_error(exc, debug)
    console.print(f"published federated naive Bayes model {result.release_id}")
    console.print(f"  folder        {result.folder}", markup=False)
    console.print(f"  parties       {', '.join(result.parties)}", markup=False)
    console.print(f"  cells         {result.cells} ({result.suppressed_cells} suppressed below "
                  f"min_count.k = {resolved.min_count.k}, {result.complementary_cells} complementary)", markup=False)
    console.print(f"  report        {Path(result.folder) / 'report.html'}", markup=False)


def tune(
    spec: Path = typer.Argument(..., help="release spec (YAML)"),
    strategy: str | None = typer.Option(None, "--strategy",
                                        help="bisect | grid | suggested | lattice (default: the spec's)"),
    buckets: int | None = typer.Option(None, "--buckets", help="grid: evaluate N evenly spaced values"),
    out: Path | None = typer.Option(None, "--out", help="folder for trace.json and tuning.png (default: "
                                    "<publish root>/<dataset>/tuning/<UTC time>/)"),
    set_: list[str] = typer.Option([], "--set", help="override a spec key: key.path=value (repeatable)"),
    runner: str | None = typer.Option(None, "--runner", help=RUNNER_HELP),
    debug: bool = typer.Option(False, "--debug", help="on an unexpected error, also print its traceback"),
) -> None:
    """Only tune the method's parameter: write the trace (JSON) and a plot of accuracy and privacy (aggregates
    only) under the spec's publish root (<root>/<dataset>/tuning/<UTC time>/) or to --out; publish nothing."""
    settings.apply_settings()
    resolved, overrides = lazy.release_work.check_tuning_spec(spec, set_, strategy, buckets, runner)

    use_local_server()
    from ppdp.flows.release import tune_flow  # heavy: Prefect, after the settings and the server's choice
    from ppdp.flows.runners import call_flow  # heavy: Prefect

    with console_err.status("tuning (progress in the log lines)"):
        try:
            server_ready()
            trace = call_flow(tune_flow, spec, overrides)
        except PpdpError as exc:
            fail(f"error: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001
            internal_error(exc, debug)
    lazy.release_work.write_tuning(trace, resolved, out)
