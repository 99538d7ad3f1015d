"""The ``ppdp`` command line: parse arguments, call a flow or a plain function, print a summary.

Exit codes: 0 published / intact, 2 bad spec or input, 3 rejected by a gate, 1 audit trail altered or an
internal error. Nothing printed here contains a data value.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from ppdp.flows import settings

app = typer.Typer(
    name="ppdp", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="Privacy-preserving data publishing: sanitize, validate, publish and audit releases of sensitive tables."
         "\n\nStart with ppdp run examples/census_demo.yaml (examples/ holds a release spec for each method); ppdp "
         "COMMAND --help describes a command, its options and its exit codes.",
)
audit_app = typer.Typer(no_args_is_help=True, help="Read and verify the audit trail of a publish root.")
app.add_typer(audit_app, name="audit")
server_app = typer.Typer(
    no_args_is_help=True,
    help="A local Prefect server kept running between runs, so that ppdp run, tune, compare and federate do not "
         "each start "
         "Prefect's temporary server (12-17 s per run). Never started on its own: ppdp server start starts it, "
         "ppdp server stop stops it. An explicit PREFECT_API_URL (environment or Prefect profile) always wins.")
app.add_typer(server_app, name="server")

console = Console(highlight=False, soft_wrap=True)
console_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _flags_show_no_type() -> None:
    """typer 0.29's rich help gives a flag a type, ``--debug <bool>`` (even ``--help <bool>``), though a flag takes
    no value (its plain help shows none): show none. Typer versions without ``display_type_rich`` are left as
    they are."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "ppdp_flags", False):
        return

    def display_type_rich(self, ctx):
        return None if self.is_flag and not self.count else shown(self, ctx)

    vars(display_type_rich)["ppdp_flags"] = True  # marks the patch as applied (a function attribute)
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]  # the patch of typer's method


_flags_show_no_type()


def _print_version(value: bool) -> None:
    if value:
        from ppdp import __version__

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


def internal_error(exc: BaseException, debug: bool) -> None:
    """An unexpected error: one line with its type (its message may quote data), the traceback only on
    request (--debug)."""
    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    fail(f"internal error ({type(exc).__name__}); run again with --debug to see the traceback", 1)


class OUTPUT:  # noqa: N801 - a namespace of module state
    """How the running command reports: ``json`` set by ``run --json`` (a refusal is then also a JSON object on
    standard output, see :func:`fail`)."""

    json = False
    stdout: Any = None  # standard output (a file descriptor or a stream) while the flow's is sent to standard error


def fail(message: str, code: int) -> NoReturn:
    console_err.print(f"ppdp: {message}", markup=False)
    if OUTPUT.json:  # the same line for programs: the message never holds a data value (see the module docstring)
        _print_json({"status": "refused", "exit_code": code, "message": message})
    raise typer.Exit(code)


def _print_json(doc: dict) -> None:
    """One JSON object on standard output, on one line."""
    import json
    import os

    text = json.dumps(doc) + "\n"  # not through rich: no markup, emoji codes or wrapping
    target = OUTPUT.stdout  # set while the flow runs (a refusal then): standard output itself, not its stand-in
    if isinstance(target, int):
        sys.stderr.flush()
        os.write(target, text.encode("utf-8"))
    else:
        stream = target if target is not None else sys.stdout
        stream.write(text)
        stream.flush()


def _quiet_prefect(quiet: bool) -> None:
    """``--quiet`` / ``--json``: Prefect's log lines are not printed (its console handler shows only CRITICAL),
    while its API handler still sends them to the Prefect server's database. Set in the environment before Prefect
    is imported (Prefect reads ``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL`` when it configures logging at import;
    Dask workers inherit it), and on the handlers of a Prefect already imported in this process."""
    if not quiet:
        return
    import logging
    import os

    os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "CRITICAL"
    if "prefect.logging.handlers" in sys.modules:
        from prefect.logging.handlers import PrefectConsoleHandler

        for logger in [logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))]:
            for handler in getattr(logger, "handlers", []):
                if isinstance(handler, PrefectConsoleHandler):
                    handler.setLevel(logging.CRITICAL)


def _busy(text: str, quiet: bool):
    """The spinner on standard error while a flow runs; none with --quiet or --json."""
    import contextlib

    return contextlib.nullcontext() if quiet else console_err.status(text)


def _stdout_kept_for_json(as_json: bool):
    """With --json, nothing but the JSON object reaches standard output: while the flow runs, file descriptor 1
    (this process, its temporary Prefect server, Dask workers) points at standard error."""
    import contextlib
    import os

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


def _use_local_server() -> None:
    """Use the local Prefect server of ``ppdp server start`` when it runs (and no PREFECT_API_URL was chosen);
    before Prefect is imported."""
    from ppdp.flows.local_server import use_local_server

    use_local_server()


RUNNER_HELP = ("Where the parallel steps (tuning evaluations, privacy and utility checks) run: thread, dask (a local "
               "Dask cluster of runner.workers processes) or dask=tcp://host:port (an existing Dask scheduler). "
               "Default: the spec's runner (the manifest's spec records it).")
SET_HELP = "Override a spec key, as key.path=value (the value is read as YAML; repeatable)."
DEBUG_HELP = "On an unexpected error, also print its traceback."


@app.command()
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

    Each run starts Prefect's temporary server (12-17 s) unless a Prefect server is running: ppdp server start
    keeps a local one for later runs (it is never started on its own: see ppdp server --help).

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
    import time

    entered = time.perf_counter()
    from ppdp.tasks import audit
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.publish import new_release_id

    settings.apply()
    OUTPUT.json = as_json
    _quiet_prefect(quiet or as_json)  # before Prefect is imported (--runner imports it)
    started = datetime.now(UTC)
    try:  # spec and header checks first: a bad spec costs no Prefect start-up and reads no data
        set_ = [*set_, *_runner_overrides(runner)]  # so the spec (and the manifest) records where it ran
        resolved = spec_io.load_spec(spec, set_)
        spec_io.preflight(resolved)
        audit.require_no_interrupted_publish(resolved.publish.root)  # a crashed publish: ppdp audit recover
    except PpdpError as exc:
        root = spec_io.guess_publish_root(spec, set_)
        audit.record_refusal(root, release_id=new_release_id(started), dataset=_dataset_of(spec, set_), error=exc,
                             started_at=started)
        fail(f"error: {exc}", exc.exit_code)

    _use_local_server()
    from ppdp.flows.interrupts import run_guarded
    from ppdp.flows.release import release_flow
    from ppdp.flows.runners import call_flow

    with _busy("running release flow (progress in the log lines)", quiet or as_json), _stdout_kept_for_json(as_json):
        try:
            # on the spec's runner (--runner applied), in a thread of its own: SIGINT and a Prefect cancellation stop
            # it safely (exit 130), a Prefect API gone after the publish does not fail it (ppdp.flows.interrupts)
            result = run_guarded(call_flow, release_flow, spec, set_, force=force)
        except PpdpError as exc:
            fail(f"{exc.prefix}: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
            internal_error(exc, debug)
    if as_json:
        _print_json(_summary_json(result, entered if timings else None))
        return
    if result.status == "unchanged":  # nothing published: the latest release stands
        console.print(f"unchanged since {result.release_id}", markup=False)
        console.print(f"  folder        {result.folder}", markup=False)
        return
    console.print(f"published release {result.release_id}")
    console.print(f"  folder        {result.folder}")
    _print_verdict(result.floor, result.attacker_view)
    smallest = {"equivalence_class": "smallest equivalence class", "generating_group": "smallest generating group"}
    console.print(f"  unit          {result.unit}" + (
        f", measured k = {result.k} ({smallest.get(result.unit or '', 'smallest group')} of the release)"
        if result.k is not None else ""), markup=False)
    if result.tuned:  # the method's parameter, tuned or fixed in the spec: its name and value as the manifest has them
        label = "fixed" if result.tuning_strategy == "fixed" else "tuned"
        console.print(f"  {label:<13} {result.tuned}: {result.tuning_rule}", markup=False)
    for c in result.claims:
        value = "n/a" if c.value is None else f"{c.value:.6g}"
        console.print(f"  claim {c.name:<20} {value} {c.comparison} {c.threshold:g}  holds", markup=False)
    if result.series is not None:
        from ppdp.tasks.privacy.series import series_line

        console.print(f"  series        {series_line(result.series)}", markup=False)
    from ppdp.tasks.private_record import withholds

    if withholds(result.unit):  # measured on real held-out rows: kept in the private record
        console.print("  utility       the gates hold (the figures, measured on real rows, are withheld: see the "
                      "publisher's private record)", markup=False)
    elif result.accuracy is None:  # no classifier (no class column): nothing held out, label-free figures
        from ppdp.tasks.utility import marginals_line

        console.print(f"  utility       {marginals_line(result.marginals)}", markup=False)
    else:
        console.print(f"  utility       accuracy {result.accuracy:.4f} (original rows "
                      f"{result.accuracy_original or 0.0:.4f})")
        for label, acc in result.per_class.items():
            console.print(f"    class {label:<12} {acc:.4f}", markup=False)
        for name, value in result.delta_r.items():
            console.print(f"    delta R {name:<10} {value:+.4f}  (>= 0 keeps utility)", markup=False)
        from ppdp.tasks.utility import marginals_line, tstr_lines

        for line in tstr_lines(result.tstr, result.regression):
            console.print(f"    {line}", markup=False)
        if result.marginals is not None:
            console.print(f"    {marginals_line(result.marginals)}", markup=False)
    if timings:
        from ppdp.flows.steps import step_breakdown, steps_seconds

        wall = time.perf_counter() - entered
        work = steps_seconds(entered)
        console.print(f"  timings       {wall:.2f} s in the command, {work:.2f} s in the steps' own work, "
                      f"{wall - work:.2f} s beyond them (Python start-up not included)", markup=False)
        for name, runs, seconds in step_breakdown(entered):
            console.print(f"    {name:<24} {seconds:8.2f} s" + (f"  ({runs} runs, summed)" if runs > 1 else ""),
                          markup=False)
    if result.report:
        console.print(f"  report        {result.report}", markup=False)


def _summary_json(result, entered: float | None) -> dict:
    """``run --json``: the text summary's content as a JSON object (the same figures, and the same ones withheld
    for a differential_privacy release: the utility figures measured on real rows are not in it)."""
    import time

    from ppdp.tasks.privacy.attacker import describe_floor_claim, protection_sentence, view_lines
    from ppdp.tasks.privacy.series import series_line
    from ppdp.tasks.private_record import withholds

    floor, view = result.floor, result.attacker_view
    if floor is None:
        floor_state = None
    elif floor.accepted is not None:
        floor_state = "below the safety floor, published on purpose"
    else:
        floor_state = "holds"
    doc: dict = {
        "status": result.status, "reason": result.reason, "release_id": result.release_id, "folder": result.folder,
        "verdict": {
            "policy": "holds" if result.status == "published" else None, "floor": floor_state,
            "accepted": None if floor is None or floor.accepted is None else {
                "reason": floor.accepted.reason, "approved_by": floor.accepted.approved_by},
            "floor_claims": [{"claim": describe_floor_claim(c), "holds": bool(c.passed)}
                             for c in (floor.claims if floor is not None else ())],
            "protects": protection_sentence(view) if view is not None else None,
            "attacker": list(view_lines(view)) if view is not None else [],
        },
        "unit": result.unit, "k": result.k,
        "tuned": None if not result.tuned else {
            "strategy": result.tuning_strategy, "value": result.tuned, "rule": result.tuning_rule},
        "claims": [{"name": c.name, "value": c.value, "comparison": c.comparison, "threshold": c.threshold,
                    "holds": bool(c.passed)} for c in result.claims],
        "series": series_line(result.series) if result.series is not None else None,
    }
    if withholds(result.unit):  # measured on real held-out rows: kept in the private record (as the text says)
        doc["utility"] = {"withheld": True, "gates": "hold", "note": "the figures, measured on real rows, are "
                          "withheld: see the publisher's private record"}
    else:
        doc["utility"] = {"withheld": False, "accuracy": result.accuracy,
                          "accuracy_original": result.accuracy_original, "per_class": dict(result.per_class),
                          "delta_r": dict(result.delta_r),
                          "tstr": [t.model_dump(mode="json") for t in result.tstr],
                          "regression": [r.model_dump(mode="json") for r in result.regression]}
        marginals = getattr(result, "marginals", None)  # the label-free figures (a table without a class column)
        if marginals is not None:
            doc["utility"]["marginals"] = marginals.model_dump(mode="json")
    if entered is not None:  # --timings
        from ppdp.flows.steps import step_breakdown, steps_seconds

        doc["timings"] = {"command_seconds": round(time.perf_counter() - entered, 3),
                          "steps_seconds": round(steps_seconds(entered), 3),
                          "steps": [{"step": n, "runs": r, "seconds": round(sec, 3)}
                                    for n, r, sec in step_breakdown(entered)]}
    doc["report"] = result.report
    return doc


def _print_verdict(floor, view) -> None:
    """The two-part verdict and the attacker's view, first in the summary (shares and counts only)."""
    from ppdp.tasks.privacy.attacker import describe_floor_claim, protection_sentence, view_lines

    if floor is not None and floor.accepted is not None:
        a = floor.accepted
        console.print(f"  verdict       policy holds; BELOW THE SAFETY FLOOR, published on purpose: {a.reason} "
                      f"(approved by {a.approved_by})", markup=False)
    elif floor is not None:
        console.print("  verdict       policy holds; safety floor holds", markup=False)
    if view is not None:
        console.print(f"  protects      {protection_sentence(view)}", markup=False)
        for i, line in enumerate(view_lines(view)):
            console.print(f"  {'attacker' if i == 0 else '':<13} {line}", markup=False)
    for c in floor.claims if floor is not None else ():
        console.print(f"  floor         {describe_floor_claim(c)}  {'holds' if c.passed else 'FAILS'}", markup=False)


@app.command()
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
    from ppdp.tasks import audit, federated
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.publish import new_release_id

    settings.apply()
    started = datetime.now(UTC)
    try:  # the spec, the parties' files and the root first: a bad spec costs no Prefect start-up
        resolved = federated.load_spec(spec, set_)
        federated.preflight(resolved)
    except PpdpError as exc:
        audit.record_refusal(spec_io.guess_publish_root(spec, set_), release_id=new_release_id(started),
                             dataset=_dataset_of(spec, set_), error=exc, started_at=started)
        fail(f"error: {exc}", exc.exit_code)

    _use_local_server()
    from ppdp.flows.federate import run_federation

    with console_err.status("running federation flow (progress in the log lines)"):
        try:
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


@app.command()
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
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.plots import tuning_plot_png

    settings.apply()
    overrides = list(set_)
    if strategy is not None:
        if strategy not in ("bisect", "grid", "suggested", "lattice"):
            fail(f"error: --strategy {strategy}: expected bisect, grid, suggested or lattice", 2)
        overrides.append(f"tuning.strategy={strategy}")
        if strategy != "grid" and buckets is None:
            overrides.append("tuning.buckets=null")  # the spec's grid buckets do not apply to another strategy
        if strategy != "bisect":
            overrides.append("tuning.choice=non_dominated")  # the paper's rule is Figure 6's: bisect only
    if buckets is not None:
        overrides.append(f"tuning.buckets={buckets}")
    try:
        if strategy is not None:  # the tuned parameter must not also be fixed in the method section
            overrides.append(f"method.{_tuned_parameter(spec)}=null")
        overrides += _runner_overrides(runner)
        resolved = spec_io.load_spec(spec, overrides)
        spec_io.preflight(resolved, check_root=False)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if resolved.tuning.strategy == "fixed":
        fail("error: tuning.strategy is fixed in the spec: give --strategy", 2)

    _use_local_server()
    from ppdp.flows.release import tune_flow
    from ppdp.flows.runners import call_flow

    with console_err.status("tuning (progress in the log lines)"):
        try:
            trace = call_flow(tune_flow, spec, overrides)
        except PpdpError as exc:
            fail(f"error: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001
            internal_error(exc, debug)
    from ppdp.tasks.layout import tuning_folder

    # aggregates only (the trace and its plot: values, accuracies, privacy figures, class sizes by class number)
    folder = out or tuning_folder(resolved.publish.root, resolved.dataset, datetime.now(UTC))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "trace.json").write_text(trace.model_dump_json(indent=2) + "\n", encoding="utf-8")
        plot = tuning_plot_png(trace)
        if plot:
            (folder / "tuning.png").write_bytes(plot)
    except OSError as exc:
        fail(f"error: cannot write the tuning folder {folder} ({exc.strerror or type(exc).__name__})", 1)
    console_print_trace(trace)
    console.print(f"tuning folder {folder} (" + ("--out" if out else "under the publish root") + "): trace.json"
                  + (" and tuning.png" if plot else ""), markup=False)


def _runner_overrides(runner: str | None) -> list[str]:
    """``--runner`` as spec overrides (:func:`ppdp.flows.runners.runner_overrides`, imported only when given: it
    imports Prefect)."""
    if runner is None:
        return []
    from ppdp.flows.runners import runner_overrides

    return runner_overrides(runner)


def _tuned_parameter(spec: Path) -> str:
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import SpecError
    from ppdp.tasks.sanitize.registry import method_class

    raw = spec_io.read_spec_mapping(Path(spec))
    method = found if isinstance(found := raw.get("method"), dict) else {}
    tuning = given if isinstance(given := raw.get("tuning"), dict) else {}
    cls = method_class(str(method.get("name")))
    parameter = tuning.get("parameter") or next(iter(cls.tunable), None)
    if parameter is None:
        raise SpecError(f"method {cls.name} has no tunable parameter")
    return str(parameter)


def console_print_trace(trace) -> None:
    console.print(f"{trace.strategy}: chosen {trace.parameter} = {trace.chosen:g} because: {trace.rule}"
                  if trace.chosen is not None else f"{trace.strategy}: {trace.rule}", markup=False)
    if trace.suggested is not None:
        console.print(f"  method's suggestion = {trace.suggested:g}", markup=False)
    if trace.evaluations:
        console.print(f"  {trace.parameter:>10} {'privacy':>8} {'accuracy':>9} {'policy':>7} {'seconds':>8}",
                      markup=False)
        for e in trace.evaluations:
            p = "n/a" if e.privacy is None else f"{e.privacy:.4f}"
            ok = "" if e.meets_policy is None else ("pass" if e.meets_policy else "fail")
            console.print(f"  {e.value:>10g} {p:>8} {e.accuracy:>9.4f} {ok:>7} {e.seconds:>8.2f}", markup=False)
    if trace.lattice is not None:
        measures = ", ".join(f"{m} {v:.4g}" for m, v in trace.lattice.measures.items())
        console.print(f"  {trace.lattice.checked} of {trace.lattice.total} nodes checked in {trace.seconds:.1f} s; "
                      f"{trace.lattice.classes} classes, {trace.lattice.suppressed_rows} records suppressed; "
                      f"{measures}", markup=False)
    else:
        console.print(f"  {len(trace.evaluations)} of {trace.candidates} candidate values evaluated in "
                      f"{trace.seconds:.1f} s", markup=False)


@app.command()
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
    from ppdp.tasks import compare as comparing
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.compare_report import write_outputs
    from ppdp.tasks.core.errors import PpdpError, SpecError
    from ppdp.tasks.sanitize.registry import method_class

    settings.apply()
    overrides = list(set_)
    names = _names(methods)
    try:
        overrides += _runner_overrides(runner)
        resolved = spec_io.load_spec(spec, overrides)
        spec_io.preflight(resolved, check_root=False)
        for name in names:
            method_class(name)
        if methods is not None and not names:
            raise SpecError("--methods: give at least one method name")
        if resolved.series.keep_groups:
            raise SpecError("series.keep_groups: compare judges a first release of each method (it reads no earlier "
                            "release): remove it to compare")
        comparing.check_outside_root(resolved, out, "--out")
        comparing.check_outside_root(resolved, write_spec, "--write-spec")
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)

    _use_local_server()
    from ppdp.flows.compare import run_compare

    with console_err.status("comparing methods (progress in the log lines)"):
        try:
            result = run_compare(spec, overrides, names or None)
        except PpdpError as exc:
            fail(f"error: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
            internal_error(exc, debug)
    _print_comparison(result)
    from ppdp.tasks.layout import COMPARE_FOLDER, run_folder

    folder = out or run_folder(resolved.publish.root, resolved.dataset, COMPARE_FOLDER, datetime.now(UTC))
    written = write_outputs(result, folder)
    console.print(f"report        {written[0]}", markup=False)
    console.print(f"table         {written[1]}", markup=False)
    if write_spec is not None:
        if result.recommended is None:
            fail(f"rejected: {result.recommendation}; no spec written", 3)
        try:
            comparing.write_spec(result, spec, write_spec)
        except PpdpError as exc:
            fail(f"error: {exc}", exc.exit_code)
        console.print(f"spec          {write_spec} (ppdp run {write_spec} publishes it)", markup=False)
    if result.recommended is None:
        raise typer.Exit(3)


def _print_comparison(result) -> None:
    """The comparison table (figures, names and one-line reasons only) and the recommendation."""
    from ppdp.tasks.compare import risk_of

    def num(value, digits: int = 3) -> str:
        return "" if value is None else f"{value:.{digits}f}"

    def verdict(value) -> str:
        return "" if value is None else ("holds" if value else "FAILS")

    console.print(f"compared {len(result.rows)} methods on {result.dataset} ({result.input_rows:,} rows, seed "
                  f"{result.seed}, classifier {result.classifier}, ranked by {result.rank_by}, "
                  f"{result.seconds:.1f} s)", markup=False)
    first_tstr = next((name for r in result.rows for name in r.tstr), None)  # the table's TSTR column
    # the text columns as wide as their widest cell: a tuned value is never cut off (a lattice node is long)
    wm = max([len("method"), *(len(r.method) for r in result.rows)])
    ws = max([len("status"), *(len(r.status) for r in result.rows)])
    wt = max([len("tuned"), *(len(r.tuned or "") for r in result.rows)])
    console.print(f"  {'method':<{wm}} {'status':<{ws}} {'tuned':<{wt}} {'policy':<6} {'floor':<6} {'util':<6} "
                  f"{'alone':>6} {'avg risk':>8} {'copies':>6} {'linkage':>7} {'gain':>6} {'acc ratio':>9} "
                  f"{'tstr':>6} {'seconds':>7}", markup=False)
    for r in result.rows:
        tuned = r.tuned or ""
        console.print(f"  {r.method:<{wm}} {r.status.replace('_', ' '):<{ws}} {tuned:<{wt}} "
                      f"{verdict(r.policy_holds):<6} "
                      f"{verdict(r.floor_holds):<6} {verdict(r.utility_holds):<6} {num(r.records_alone):>6} "
                      f"{num(r.average_risk):>8} {num(r.exact_copies):>6} {num(r.linkage_risk):>7} "
                      f"{num(r.disclosure_gain):>6} {num(r.accuracy_ratio):>9} {num(r.tstr.get(first_tstr or '')):>6} "
                      f"{r.seconds:>7.1f}", markup=False)
    for r in result.rows:
        if r.reason:
            console.print(f"  {r.method}: {r.reason}", markup=False)
    if result.recommended is not None:
        best = result.row(result.recommended)
        name, risk = risk_of(best)
        console.print(f"recommended   {result.recommendation}", markup=False)
        source = "the spec" if best.policy_source == "spec" else "the safety floor"
        risk_text = f"{name} {num(risk, 4)}"
        if risk is None and best.by_construction:
            risk_text = f"{name}: not a measure (fixed by construction)"
        console.print(f"  policy      {', '.join(best.policy)} ({source}); {risk_text}", markup=False)
        if best.not_applicable_reason:
            console.print(f"  not judged  {best.not_applicable_reason}", markup=False)
        for line in result.not_carried:
            console.print(f"  not carried {line}", markup=False)
    else:
        console.print(f"no recommendation: {result.recommendation}", markup=False)
    for note in result.notes:
        console.print(f"note          {note}", markup=False)


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _gate_options(command):
    """Give ``command`` one option per table gate of the privacy schema (:data:`ppdp.schemas.privacy.TABLE_GATES`),
    after --sa, typed and defaulted as the :class:`~ppdp.schemas.privacy.PrivacyThresholds` field; the values reach
    it in ``**gates``."""
    import inspect
    import typing

    from ppdp.schemas.privacy import TABLE_GATES, PrivacyThresholds

    sig = inspect.signature(command)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    at = [p.name for p in params].index("sa") + 1
    made = []
    for name, (text, metavar) in TABLE_GATES.items():
        field = PrivacyThresholds.model_fields[name]
        kind = str if typing.get_origin(field.annotation) is typing.Literal else field.annotation
        option = typer.Option(field.default, "--" + name.replace("_", "-"), help=text, metavar=metavar or None)
        made.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=option, annotation=kind))
    command.__signature__ = sig.replace(parameters=params[:at] + made + params[at:])
    return command


@app.command()
@_gate_options
def validate(
    file: Path | None = typer.Argument(None, metavar="TABLE", help="A CSV or Parquet file, or a folder of Parquet "
                                       "files (a partitioned table); not with --release."),
    qi: str | None = typer.Option(None, "--qi", metavar="COLUMNS", help="The quasi-identifiers, comma-separated."),
    sa: str | None = typer.Option(None, "--sa", metavar="COLUMNS", help="The sensitive attributes, "
                                  "comma-separated."),
    population: Path | None = typer.Option(None, "--population", help="The population table (CSV or Parquet), "
                                           "for --max-journalist-risk."),
    hierarchy: list[str] = typer.Option([], "--hierarchy", metavar="SA=PATH", help="A generalization hierarchy "
                                        "(ARX's CSV format) of a sensitive attribute given with --sa, for "
                                        "hierarchical t-closeness (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (pyCANON's names for its measures)."),
    sep: str = typer.Option(",", "--sep", help="The CSV separator."),
    na_values: str | None = typer.Option(None, "--na-values", metavar="VALUES", help="CSV cells read as missing, "
                                         "comma-separated."),
    attack: int = typer.Option(0, "--attack", min=0, metavar="N", help="Run paper 002's random-query attacker with "
                               "up to N queries drawn from the table's records (0: no attack)."),
    seed: int = typer.Option(0, "--seed", help="The seed of the random-query attacker."),
    release: Path | None = typer.Option(None, "--release", metavar="DIR", help="A published release folder: "
                                        "re-check every claim of its manifest and its safety floor."),
    original: Path | None = typer.Option(None, "--original", metavar="PATH", help="With --release: the original "
                                         "input, for the claims that compare with it."),
    cluster: str | None = typer.Option(None, "--cluster", metavar="ADDRESS", help="For a folder of Parquet files, "
                                       "or with --release a distributed release's row files: count the partitions "
                                       "on this Dask scheduler (tcp://host:8786), or 'local' for a local Dask "
                                       "cluster."),
    **gates: object,  # the table gates (--k, --l, --t, ...): _gate_options
) -> None:
    """Check the privacy of any table, or re-check a published release.

    ppdp validate TABLE --qi COLUMNS with gates (--k, --l, --t, ...) measures a CSV or Parquet file, or a folder of
    Parquet files (a partitioned table), and checks the gates given. ppdp validate --release DIR re-checks a
    published release's claims and safety floor (--original PATH for the claims that compare with the input).

    \b
    Exit codes:
      0  every gate or claim holds
      3  a gate or claim does not hold
      5  every claim holds, but the release was published below the safety floor on purpose
      4  a release claim needs --original
      2  bad input
    """
    import json

    if release is not None:
        _validate_release(release, original, as_json, cluster)
        return
    if file is None or not qi:
        fail("error: give a table and --qi, or --release DIR", 2)

    from pydantic import ValidationError

    from ppdp.schemas.privacy import PrivacyThresholds
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.privacy.validate import report_json, validate_file
    from ppdp.tasks.spec import format_problems, validation_problems

    try:
        thresholds = PrivacyThresholds(**gates, population=population)
    except ValidationError as exc:
        fail("error: " + format_problems([f"--{p.replace('_', '-')}" for p in validation_problems(exc)]), 2)
    vacuous = thresholds.vacuous_gates()
    if vacuous:
        fail(f"error: --{vacuous[0].replace('_', '-')}: a gate no table can fail checks nothing", 2)
    hierarchies = {}
    for item in hierarchy:
        name, eq, path = item.partition("=")
        if not eq or not name.strip() or not path.strip():
            fail(f"error: --hierarchy {item!r}: expected SA=path", 2)
        hierarchies[name.strip()] = Path(path.strip())
    sas = _names(sa)
    for name in hierarchies:
        if name not in sas:
            fail(f"error: --hierarchy {name}: not a sensitive attribute given with --sa", 2)
    partitions = None
    try:
        if file.is_dir():  # a partitioned table: counts per file, combined (ppdp.tasks.privacy.partitioned)
            from ppdp.tasks.privacy.partitioned import validate_folder

            folder = validate_folder(file, _names(qi), sas, thresholds, na_values=_names(na_values),
                                     population=population, hierarchies=hierarchies, attack=attack, cluster=cluster)
            report, partitions = folder.report, folder.partitions
        elif cluster is not None:
            fail("error: --cluster: only for a folder of Parquet files (a partitioned table)", 2)
        else:
            report = validate_file(file, _names(qi), sas, thresholds, sep=sep, na_values=_names(na_values),
                                   population=population, hierarchies=hierarchies, seed=seed, attack=attack)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    if as_json:
        doc = report_json(report, str(file))
        if partitions is not None:
            doc["partitions"] = partitions
        console.print_json(json.dumps(doc))
    else:
        if partitions is not None:
            console.print(f"{file}: {partitions} partitions", markup=False)
        _print_report(report, file)
    raise typer.Exit(0 if report.passed else 3)


@app.command()
def report(
    release_dir: Path = typer.Argument(..., metavar="DIR", help="A published release folder."),
    out: Path | None = typer.Option(None, "--out", metavar="FILE", help="Write the regenerated report to this file "
                                    "(outside the release folder)."),
    debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP),
) -> None:
    """Regenerate a release's report.html from its folder.

    Says whether the folder's report is up to date, or writes the regenerated report to --out: the signed release
    folder is never written.

    \b
    Exit codes:
      0  up to date, or written to --out
      2  the folder's report differs or is absent (give --out), or bad input
      1  internal error (--debug prints its traceback)
    """
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.federated.release import is_model_folder, model_report
    from ppdp.tasks.report import REPORT_NAME, render_report, write_atomic

    current = release_dir / REPORT_NAME
    if out is not None and release_dir.resolve() in (out.resolve(), *out.resolve().parents):
        fail(f"error: --out {out} is inside the signed release folder {release_dir}: write it elsewhere", 2)
    try:  # a federated model's page (ppdp federate) re-checks its claims; a release's page is built from its folder
        text = model_report(release_dir)[1] if is_model_folder(release_dir) else render_report(release_dir)
        if out is not None:
            write_atomic(out, text)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    except OSError as exc:
        fail(f"error: cannot write {out} ({exc.strerror or type(exc).__name__})", 2)
    except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
        internal_error(exc, debug)
    same = current.is_file() and current.read_bytes() == text.encode("utf-8")
    if out is not None:
        state = (("identical to " if same else "differs from ") + str(current)) if current.is_file() else (
            f"{release_dir} has no {REPORT_NAME}")
        console.print(f"report written to {out} ({state})", markup=False)
    elif same:
        console.print(f"{current} is up to date", markup=False)
    else:
        why = "differs from the regenerated report" if current.is_file() else "is absent"
        fail(f"error: {current} {why}; the release folder is signed and is not changed: give --out FILE to write "
             "the regenerated report elsewhere", 2)


def _validate_federated(folder: Path, as_json: bool) -> None:
    """``validate --release`` on a federated naive Bayes model: its claims re-checked from the folder alone."""
    import json

    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.federated import recheck_model

    try:
        m, checks = recheck_model(folder)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    holds = all(c.holds for c in checks)
    if as_json:
        console.print_json(json.dumps({"release": str(folder), "release_id": m.release_id, "kind": m.kind,
                                       "holds": holds, "claims": [{"name": c.name, "holds": c.holds,
                                                                   "value": c.value, "note": c.note}
                                                                  for c in checks]}))
    else:
        console.print(f"{folder}: federated naive Bayes model {m.release_id}, {m.rows} cells, "
                      f"{len(m.parties)} parties", markup=False)
        for c in checks:
            value = "n/a" if c.value is None else f"{c.value:g}"
            console.print(f"  {c.name:<26} {value:>10}  {'HOLDS' if c.holds else 'DOES NOT HOLD':<15} {c.note}",
                          markup=False)
    raise typer.Exit(0 if holds else 3)


def _validate_release(folder: Path, original: Path | None, as_json: bool, cluster: str | None = None) -> None:
    import json

    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.federated.release import is_model_folder
    from ppdp.tasks.reproduce import recheck_release

    if is_model_folder(folder):  # a federated model (ppdp federate) has its own manifest and claims
        _validate_federated(folder, as_json)

    try:
        result = recheck_release(folder, original, cluster)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    m = result.manifest
    if as_json:
        console.print_json(json.dumps({
            "release": str(folder), "release_id": m.release_id, "unit": m.unit, "holds": result.holds,
            "below_floor": result.below_floor.model_dump(mode="json") if result.below_floor else None,
            "exit_code": result.exit_code, "input_note": result.input_note,
            "claims": [{**c.claim.model_dump(mode="json"), "verdict": c.verdict, "rechecked_value": c.value,
                        "note": c.note} for c in result.checks]}))
    else:
        console.print(f"{folder}: release {m.release_id}, {m.rows} rows, unit {m.unit}"
                      + (f", group column {m.group_column}" if m.group_column else "")
                      + (f", {m.tables_text()}" if m.tables_text() else ""),
                      markup=False)
        below = result.below_floor
        if below is not None:
            console.print(f"  PUBLISHED BELOW THE SAFETY FLOOR on purpose: {below.reason} (approved by "
                          f"{below.approved_by}); failed: {'; '.join(below.failed)}", markup=False)
        elif m.privacy.floor is None:
            console.print("  made before the safety floor: its figures are re-measured below as new claims",
                          markup=False)
        if result.input_note:
            console.print(f"  {result.input_note}", markup=False)
        for c in result.checks:
            value = "n/a" if c.claim.value is None else f"{c.claim.value:.6g}"
            console.print(f"  {c.claim.name:<22} {value:>10} {c.claim.comparison} {c.claim.threshold:<8g} "
                          f"{c.verdict.upper():<15} {c.note}", markup=False)
    raise typer.Exit(result.exit_code)


def _print_report(report, file: Path) -> None:
    m = report.measures
    console.print(f"{file}: {report.records} rows, {report.groups} equivalence classes over "
                  f"{', '.join(report.quasi_identifiers)}"
                  + (f"; sensitive: {', '.join(report.sensitive_attributes)}" if report.sensitive_attributes else ""),
                  markup=False)
    rows = [("k_anonymity", m.k_anonymity)]
    if report.sensitive_attributes:
        rows += [(name, getattr(m, name)) for name in (
            "alpha_k_anonymity", "l_diversity", "entropy_l_diversity", "entropy_l_value", "recursive_c_l_diversity",
            "t_closeness", "hierarchical_t_closeness", "delta_disclosure", "basic_beta_likeness",
            "enhanced_beta_likeness")]
    if report.risk:
        r = report.risk
        rows += [("prosecutor risk (max / average)", f"{r.prosecutor_max:.4f} / {r.prosecutor_average:.4f}"),
                 (f"records at risk (> {r.risk_threshold:g})", f"{r.records_at_risk:.4f}"),
                 ("marketer risk", f"{r.marketer:.4f}"), ("sample uniques", f"{r.sample_uniques:.4f}")]
        if r.journalist_max is not None:
            rows.append(("journalist risk (max / average)", f"{r.journalist_max:.4f} / {r.journalist_average:.4f}"))
    if report.attacker:
        a = report.attacker
        sides = [("", a.original)] if a.release_is_original else [("original: ", a.original), ("release: ", a.release)]
        for side, s in sides:
            rows.append((f"{side}random queries ({a.queries}): re-identification median / mean / max",
                         f"{s.reidentification_median:.4f} / {s.reidentification_mean:.4f} / "
                         f"{s.reidentification_max:.4f}"))
            rows.append((f"{side}queries matching exactly one record", f"{s.identifying_share:.4f}"))
            if s.sensitive_association_mean is not None:
                rows.append((f"{side}sensitive association median / mean / max",
                             f"{s.sensitive_association_median:.4f} / {s.sensitive_association_mean:.4f} / "
                             f"{s.sensitive_association_max:.4f}"))
    for name, value in rows:
        if value is not None:
            shown = f"{value:.6g}" if isinstance(value, float) else str(value)
            console.print(f"  {name:<52} {shown}", markup=False)
    for g in report.gates:
        value = "n/a" if g.value is None else f"{g.value:.6g}"
        console.print(f"  gate {g.name:<20} {'PASS' if g.passed else 'FAIL'}  value {value}  threshold "
                      f"{g.threshold:g}" + (f"  ({g.worst})" if g.worst else ""), markup=False)
    if not report.gates:
        console.print("  no gates given", markup=False)


def _dataset_of(spec: Path, overrides: list[str]) -> str | None:
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import SpecError

    try:
        raw = spec_io.read_spec_mapping(Path(spec))
        for item in overrides:
            spec_io.apply_override(raw, item)
    except SpecError:
        return None
    value = raw.get("dataset")
    return value if isinstance(value, str) else None


# -- audit ---------------------------------------------------------------------------------------------------
RootOption = typer.Option(..., "--root", metavar="DIR", help="The publish root (the folder holding audit.db).")


@app.command()
def series(
    dataset: str = typer.Argument(..., metavar="DATASET", help="The dataset's name (the spec's dataset)."),
    root: Path = typer.Option(..., "--root", metavar="DIR", help="The publish root."),
) -> None:
    """List a dataset's releases under a publish root, with their composed figures and the DP budget spent.

    The releases are those the publisher's series ledger holds (in this machine's ppdp config folder), oldest
    first; releases rolled back or never published are listed but not counted. Exit 2 when there is no ledger
    for the root on this machine, or it holds no release of the dataset."""
    from ppdp.tasks import series as ledger
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.privacy.series import series_line
    from ppdp.tasks.publish import load_manifest, release_folder

    try:
        path = ledger.ledger_path(root)
        entries = ledger.series_entries(root, dataset)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if path is None or not path.exists():
        fail(f"error: no series ledger for the publish root {root} on this machine (no release published there, or "
             "published with another ppdp config folder)", 2)
    if not entries:
        fail(f"error: the series ledger {path} holds no release of dataset {dataset}", 2)
    console.print(f"series of {dataset} under {root} (ledger {path})", markup=False)
    console.print(f"  {'release':<26} {'created (UTC)':<25} {'method':<18} {'unit':<19} {'records':>8} {'k':>5} "
                  f"{'epsilon':>8}  state", markup=False)
    spent = 0.0
    for e in entries:
        eps = "" if e.epsilon is None else f"{e.epsilon:.4g}"
        console.print(f"  {e.release_id:<26} {e.created_at:<25} {e.method:<18} {e.unit:<19} {e.records:>8,} "
                      f"{'' if e.k is None else e.k:>5} {eps:>8}  {e.state}", markup=False)
        if e.state in ("published", "pending") and e.epsilon is not None:
            spent += e.epsilon
        if e.state == "published":
            try:
                manifest = load_manifest(release_folder(root, dataset, e.release_id))
            except (PpdpError, OSError, ValueError):
                console.print("    (its manifest cannot be read)", markup=False)
                continue
            if manifest.series is not None:
                console.print(f"    {series_line(manifest.series)}", markup=False)
    console.print(f"  DP budget spent: epsilon {spent:.4g} (basic composition over the published DP releases)",
                  markup=False)


@app.command("series-rekey")
def series_rekey(
    root: Path = typer.Option(..., "--root", metavar="DIR", help="The publish root whose ledger to bind."),
    old_key_file: Path = typer.Option(..., "--old-key-file", metavar="FILE", help="A file holding the series key "
                                      "the ledger was written with (the old key, on one line)."),
) -> None:
    """Bind a publish root's series ledger to this machine's series key after the key was rotated.

    The ledger's own fingerprint key is unwrapped with the old series key and wrapped again with the current one
    ($PPDP_SERIES_KEY, else the config folder's series-key); fingerprints and history do not change, so releases
    stay judged with every earlier one.

    \b
    Exit codes:
      0  the ledger is bound to the current key
      2  no ledger for the root, or the old key does not open it"""
    from ppdp.tasks import series as ledger
    from ppdp.tasks.core.errors import PpdpError

    try:
        old = old_key_file.read_bytes().strip()
    except OSError as exc:
        fail(f"error: --old-key-file {old_key_file}: cannot read it ({exc.strerror})", 2)
    if len(old) < ledger.MIN_KEY_CHARS:
        fail(f"error: --old-key-file {old_key_file}: a series key has at least {ledger.MIN_KEY_CHARS} characters", 2)
    try:
        before, after = ledger.rekey(root, old)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    console.print(f"series ledger of {root} bound to the series key {after} (was {before})", markup=False)


@audit_app.command("list")
def audit_list(
    root: Path = RootOption,
    every: bool = typer.Option(False, "--all", help="Show every stored entry: a publish writes two (pending, then "
                                                     "published or rolled back)."),
) -> None:
    """List the runs recorded under the publish root, one row per run, oldest first.

    A publish is recorded twice (a pending entry before its folder is renamed into place, then the entry that
    completes it): the row shows how it ended, with both sequence numbers. A pending entry that nothing completes is
    an interrupted publish (ppdp audit recover). --all shows the entries as stored; ppdp audit verify checks their
    signatures."""
    from ppdp.tasks import audit
    from ppdp.tasks.core.errors import PpdpError

    try:
        entries = audit.list_entries(root)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    completed = {e.completes: e for e in entries if e.completes is not None}
    rows = [("seq", "release", "dataset", "status", "finished (UTC)", "reason")]
    for e in entries:
        seq = str(e.seq)
        if not every:
            if e.completes is not None and e.completes in {p.seq for p in entries}:
                continue  # shown on its pending entry's row
            if e.seq in completed:  # a pending entry and the entry that completes it: one run
                seq, e = f"{e.seq}-{completed[e.seq].seq}", completed[e.seq]
            elif e.status == "pending":
                e = e.model_copy(update={"reason": f"interrupted publish ({e.reason}): run ppdp audit recover"})
        reason = e.reason if len(e.reason) < 100 else e.reason[:97] + "..."
        rows.append((seq, e.release_id, e.dataset, e.status, f"{e.finished_at:%Y-%m-%d %H:%M:%S}", reason))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]  # every column as wide as its widest cell
    for row in rows:
        cells = [row[0].rjust(widths[0]), *(cell.ljust(w) for cell, w in zip(row[1:5], widths[1:], strict=True))]
        console.print("  ".join([*cells, row[5]]).rstrip(), markup=False)


@audit_app.command("show")
def audit_show(
    release_id: str = typer.Argument(..., metavar="RELEASE_ID", help="The release's id, as ppdp audit list "
                                     "shows it."),
    root: Path = RootOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for programs: the entries as stored and, if "
                                 "published, the release's folder and manifest."),
) -> None:
    """Show a release's audit entries and, if it was published, a summary of its manifest.

    One key: value line each; --json prints the same as JSON."""
    import json

    from ppdp.tasks import audit
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.publish import release_folder

    try:
        entries = audit.find_entries(root, release_id)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if not entries:
        fail(f"error: no audit entry for release {release_id} under {root}", 2)
    shown: list[dict] = []
    blocks: list[list[tuple[str, str]]] = []
    for e in entries:
        fields = e.model_dump(mode="json")
        folder = release_folder(root, e.dataset, e.release_id)
        summary: list[tuple[str, str]]
        manifest: dict | None
        summary, manifest = ([], None)
        if e.status == "published" and (folder / "manifest.json").is_file():
            summary, manifest = _manifest_summary(folder)
        shown.append({"entry": fields, "folder": str(folder) if manifest is not None else None, "manifest": manifest})
        files = ", ".join(f"{name} {digest[:12]}" for name, digest in (fields["files"] or {}).items()) or None
        blocks.append([(key, _readable(files if key == "files" else value)) for key, value in fields.items()]
                      + summary)
    if as_json:
        console.print(json.dumps({"release_id": release_id, "root": str(root), "entries": shown}, indent=2),
                      markup=False)
        return
    width = max(len(key) for rows in blocks for key, _ in rows) + 2  # the values in one column
    for i, rows in enumerate(blocks):
        if i:
            console.print("", markup=False)  # a blank line between entries
        for key, value in rows:
            console.print(f"{key + ':':<{width}} {value}", markup=False)


def _manifest_summary(folder: Path) -> tuple[list[tuple[str, str]], dict]:
    """``audit show``'s summary rows of a published release (method parameters on their own indented rows) and
    its manifest as JSON; a damaged manifest ends the command with one line (exit 1)."""
    import json

    from ppdp.tasks.publish import load_manifest

    try:
        summary = _federated_summary(folder)  # None: not a federated model's manifest
        if summary is None:
            m = load_manifest(folder)
            from ppdp.tasks.utility import marginals_line as _marginals_line

            claims = "; ".join(f"{c.name} {c.value if c.value is None else format(c.value, '.4g')} "
                               f"{c.comparison} {c.threshold:g}" for c in m.privacy.claims)
            summary = [("folder", str(folder)), ("method", m.method.name),
                       *((f"  {key}", _readable(value)) for key, value in (m.method.params or {}).items()),
                       ("privacy", f"unit {m.unit}, k={m.privacy.k}; claims: {claims}"),
                       ("utility", f"accuracy={m.utility.accuracy:.4f} original={m.utility.accuracy_original or 0:.4f}"
                        if m.utility is not None and m.utility.accuracy is not None else
                        _marginals_line(m.utility.marginals) if m.utility is not None
                        else "withheld (measured on the input: in the publisher's private record)")]
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 - a damaged manifest is one line, never a traceback
        fail(f"error: {folder / 'manifest.json'} cannot be read ({type(exc).__name__}); run ppdp audit verify", 1)
    return summary, manifest


def _readable(value: object) -> str:
    """A JSON value as plain text: ``none``, ``true``, ``a, b``; a mapping as ``key value, key value`` (``key:
    value; key: value`` when its values nest)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        if any(isinstance(v, (dict, list)) for v in value.values()):
            return "; ".join(f"{k}: {_readable(v)}" for k, v in value.items())
        return ", ".join(f"{k} {_readable(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_readable(v) for v in value)
    return str(value)


def _federated_summary(folder: Path) -> list[tuple[str, str]] | None:
    """``audit show``'s summary of a federated naive Bayes model (``ppdp federate``); None for another manifest."""
    import json

    from ppdp.schemas.federate import FederatedManifest

    data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("kind") != "federated_naive_bayes":
        return None
    m = FederatedManifest.model_validate(data)
    return [("folder", str(folder)), ("model", f"federated naive Bayes, {m.rows} cells, class {m.class_column}"),
            ("parties", ", ".join(p.name for p in m.parties)),
            ("min_count", f"k={m.min_count.k} ({m.min_count.action}): {m.min_count.suppressed_cells} cells "
                          f"suppressed, {m.min_count.complementary_cells} complementary")]


@audit_app.command("verify")
def audit_verify(
    root: Path = RootOption,
    expect_head: str | None = typer.Option(
        None, "--expect-head", metavar="HEAD", help="A head printed earlier by ppdp audit head (the JSON text, or a "
        "file holding it): detects a rewound, truncated or forked trail."),
) -> None:
    """Verify the audit trail and every release folder under the publish root.

    Checks every signature, the hash chain, the head, every release folder's exact files and hashes, and that no
    release exists without its entry.

    \b
    Exit codes:
      0  intact
      1  altered or damaged: one line per finding
      2  bad input (no such root, an unreadable --expect-head)
    """
    from ppdp.tasks import audit
    from ppdp.tasks.core.errors import PpdpError

    notes: list[str] = []
    try:
        head = audit.parse_head(expect_head) if expect_head is not None else None
        problems = audit.verify(root, expect_head=head, notes=notes)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    for note in notes:  # what was not checked and why (input digests need the publisher's key): no finding
        console.print(f"note: {note}", markup=False)
    if problems:
        for p in problems:
            console_err.print(f"ppdp: audit: {p}", markup=False)
        raise typer.Exit(1)
    entries = audit.list_entries(root)
    published = sum(1 for e in entries if e.status == "published")
    witnessed = " (expected head matched)" if head is not None else ""
    console.print(f"audit trail intact: {len(entries)} entries, {published} published releases verified{witnessed}")


@audit_app.command("recover")
def audit_recover(root: Path = RootOption) -> None:
    """Repair a publish root after a crash while publishing, then verify it.

    Completes each interrupted publish whose folder is in place with exactly its signed files, rolls back the
    others and removes .staging-* leftovers. Safe to run again (also after a crash of its own); waits for a
    running publish to end. Exit 1 when something is left to repair or verification finds a problem."""
    from ppdp.tasks import audit, recovery
    from ppdp.tasks.core.errors import PpdpError

    try:
        report = recovery.recover(root)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    for line in report.actions:
        console.print(f"recovered: {line}", markup=False)
    if not report.actions:
        console.print("nothing to recover", markup=False)
    problems = audit.verify(root) if audit.db_path(root).is_file() else []
    if report.left or problems:
        console_err.print(f"ppdp: audit: {report.left} item(s) left, {len(problems)} finding(s) remain: run "
                          f"ppdp audit verify --root {root}", markup=False)
        raise typer.Exit(1)
    console.print("audit trail intact after recovery" if audit.db_path(root).is_file() else
                  "no audit trail under the root (nothing was ever published there)", markup=False)


@audit_app.command("head")
def audit_head(root: Path = RootOption) -> None:
    """Print the signed head of the trail (one line of JSON) after checking its chain and signatures.

    Store it outside the root and give it back to ppdp audit verify --expect-head to detect a rewound trail."""
    import json

    from ppdp.tasks import audit
    from ppdp.tasks.core.errors import PpdpError

    try:
        head = audit.signed_head(root)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    console.print(json.dumps(head, sort_keys=True), markup=False)


# -- the local Prefect server ---------------------------------------------------------------------------------
@server_app.command("start")
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
    from ppdp.flows import local_server

    settings.apply()
    try:
        state, started = local_server.start()
    except local_server.ServerError as exc:
        fail(f"error: {exc}", exc.exit_code)
    verb = "started" if started else "already running:"
    console.print(f"Prefect server {verb} {state.url} (pid {state.pid}; ppdp server stop stops it)", markup=False)
    chosen = local_server.user_api_url()
    if chosen is not None:
        console.print(f"note: PREFECT_API_URL {chosen} is set: runs use it, not this server", markup=False)


@server_app.command("stop")
def server_stop() -> None:
    """Stop the local Prefect server started by ppdp server start and remove its state file.

    \b
    Exit codes:
      0  stopped, or none was running
      1  it did not stop
    """
    from ppdp.flows import local_server

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


@server_app.command("status")
def server_status() -> None:
    """Say whether the local Prefect server runs, and which API URL ppdp run would use.

    \b
    Exit codes:
      0  running
      1  not running
    """
    from ppdp.flows import local_server

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


def _reflow_help(*apps: typer.Typer) -> None:
    """Give each command its docstring with every paragraph on one line: typer's rich help keeps a docstring's
    line breaks (in the list of commands and in a command's later paragraphs), so a sentence broke where its
    source line ended. A paragraph that starts with ``\\b`` keeps its lines (a table, such as the exit codes)."""
    import inspect

    def paragraph(text: str) -> str:
        return text.removeprefix("\b\n") if text.startswith("\b\n") else " ".join(text.split())

    for each in apps:
        for info in each.registered_commands:
            doc = info.callback.__doc__ if info.callback is not None else None
            if info.help is None and doc:
                info.help = "\n\n".join(paragraph(p) for p in inspect.cleandoc(doc).split("\n\n"))


_reflow_help(app, audit_app, server_app)


def main() -> None:
    settings.apply()
    app(prog_name="ppdp")


def entry() -> None:
    """The ``ppdp`` console script: :func:`main`, then a quick exit (see :func:`_exit`). ``kill -USR1`` on a
    running ``ppdp`` prints every thread's stack to standard error (file, line and function names only: no
    values), for a run that seems stuck."""
    import faulthandler
    import signal

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
    import atexit
    import threading

    if "ppdp.flows.interrupts" in sys.modules and sys.modules["ppdp.flows.interrupts"].api_gone():
        sys.modules["ppdp.flows.interrupts"].leave(code)
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    settings.exit_now(code)


if __name__ == "__main__":
    main()
    sys.exit()
