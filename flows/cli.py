"""The ``ppdp`` command line: parse arguments, call a flow or a plain function, print a summary.

Exit codes: 0 published / intact, 2 bad spec or input, 3 rejected by a gate, 1 audit trail altered or an
internal error. Nothing printed here contains a data value.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import typer
from rich.console import Console

from flows import settings

app = typer.Typer(
    name="ppdp", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="Privacy-preserving data publishing: sanitize, validate, publish and audit releases of sensitive tables.",
)
audit_app = typer.Typer(no_args_is_help=True, help="Read and verify the audit trail of a publish root.")
app.add_typer(audit_app, name="audit")

console = Console(highlight=False, soft_wrap=True)
console_err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int) -> None:
    console_err.print(f"ppdp: {message}", markup=False)
    raise typer.Exit(code)


@app.command()
def run(
    spec: Path = typer.Argument(..., help="release spec (YAML)"),
    set_: list[str] = typer.Option([], "--set", help="override a spec key: key.path=value (repeatable)"),
) -> None:
    """Run a release: ingest, tag, tune, sanitize, validate, check utility, publish, audit."""
    from tasks import audit
    from tasks import spec as spec_io
    from tasks.errors import PpdpError
    from tasks.publish import new_release_id

    settings.apply()
    started = datetime.now(timezone.utc)
    try:  # spec and header checks first: a bad spec costs no Prefect start-up and reads no data
        resolved = spec_io.load_spec(spec, set_)
        spec_io.preflight(resolved)
    except PpdpError as exc:
        root = spec_io.guess_publish_root(spec, set_)
        audit.record_refusal(root, release_id=new_release_id(started), dataset=_dataset_of(spec, set_), error=exc,
                             started_at=started)
        fail(f"error: {exc}", exc.exit_code)

    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from flows.release import release_flow

    with console_err.status("running release flow (progress in the log lines)"):
        try:
            with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                result = release_flow(spec_path=str(spec.resolve()), overrides=list(set_))
        except PpdpError as exc:
            fail(("rejected: " if exc.exit_code == 3 else "error: ") + str(exc), exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
            fail(f"internal error ({type(exc).__name__}); see the Prefect run log", 1)
    console.print(f"published release {result.release_id}")
    console.print(f"  folder        {result.folder}")
    risk = "n/a" if result.linkage_risk is None else f"{result.linkage_risk:.3f}"
    console.print(f"  privacy       k = {result.k}, linkage risk = {risk}")
    console.print(f"  utility       accuracy {result.accuracy:.4f} (original rows {result.accuracy_original:.4f})")
    for label, acc in result.per_class.items():
        console.print(f"    class {label:<12} {acc:.4f}", markup=False)


@app.command()
def tune(
    spec: Path = typer.Argument(..., help="release spec (YAML)"),
    strategy: str | None = typer.Option(None, "--strategy",
                                        help="rule_based | brute_force | approximate_gcd (default: the spec's)"),
    buckets: int | None = typer.Option(None, "--buckets", help="brute force: check N equal-width group sizes"),
    out: Path | None = typer.Option(None, "--out", help="folder for trace.json and tuning.png"),
    set_: list[str] = typer.Option([], "--set", help="override a spec key: key.path=value (repeatable)"),
) -> None:
    """Only tune the group size: write the trace (JSON) and a plot of accuracy and privacy; publish nothing."""
    from tasks import spec as spec_io
    from tasks.errors import PpdpError
    from tasks.plots import tuning_plot_png

    settings.apply()
    overrides = list(set_)
    if strategy is not None:
        if strategy not in ("rule_based", "brute_force", "approximate_gcd"):
            fail(f"error: --strategy {strategy}: expected rule_based, brute_force or approximate_gcd", 2)
        overrides += [f"tuning.strategy={strategy}", "method.params.k=null"]
    if buckets is not None:
        overrides.append(f"tuning.buckets={buckets}")
    try:
        resolved = spec_io.load_spec(spec, overrides)
        spec_io.preflight(resolved, check_root=False)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if resolved.tuning.strategy == "none":
        fail("error: tuning.strategy is none in the spec: give --strategy", 2)

    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from flows.release import tune_flow

    with console_err.status("tuning (progress in the log lines)"):
        try:
            with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                trace = tune_flow(spec_path=str(spec.resolve()), overrides=overrides)
        except PpdpError as exc:
            fail(f"error: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001
            fail(f"internal error ({type(exc).__name__}); see the Prefect run log", 1)
    folder = out or Path("tuning") / f"{resolved.dataset}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trace.json").write_text(trace.model_dump_json(indent=2) + "\n", encoding="utf-8")
    plot = tuning_plot_png(trace)
    if plot:
        (folder / "tuning.png").write_bytes(plot)
    console_print_trace(trace)
    console.print(f"trace written to {folder / 'trace.json'}" + (f" and {folder / 'tuning.png'}" if plot else ""),
                      markup=False)


def console_print_trace(trace) -> None:
    console.print(f"{trace.strategy}: chosen {trace.parameter} = {trace.chosen} ({trace.rule})", markup=False)
    if trace.approximate_gcd is not None:
        console.print(f"  threshold t = {trace.threshold}, approximate GCD = {trace.approximate_gcd}", markup=False)
    if trace.evaluations:
        console.print(f"  {'k':>6} {'privacy':>8} {'accuracy':>9} {'seconds':>8}", markup=False)
        for e in trace.evaluations:
            p = "n/a" if e.privacy is None else f"{e.privacy:.4f}"
            console.print(f"  {e.k:>6} {p:>8} {e.accuracy:>9.4f} {e.seconds:>8.2f}", markup=False)
    console.print(f"  {len(trace.evaluations)} of {trace.candidates} candidate sizes evaluated in "
                      f"{trace.seconds:.1f} s", markup=False)


def _dataset_of(spec: Path, overrides: list[str]) -> str | None:
    from tasks import spec as spec_io
    from tasks.errors import SpecError

    try:
        raw = spec_io.read_spec_mapping(Path(spec))
        for item in overrides:
            spec_io.apply_override(raw, item)
    except SpecError:
        return None
    value = raw.get("dataset")
    return value if isinstance(value, str) else None


# -- audit ---------------------------------------------------------------------------------------------------
RootOption = typer.Option(..., "--root", help="publish root holding audit.db")


@audit_app.command("list")
def audit_list(root: Path = RootOption) -> None:
    """Every run recorded under ROOT, oldest first."""
    from tasks import audit
    from tasks.errors import PpdpError

    try:
        entries = audit.list_entries(root)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    console.print(f"{'seq':>4}  {'release':<26} {'dataset':<16} {'status':<9} {'finished (UTC)':<19}  reason",
              markup=False)
    for e in entries:
        reason = e.reason if len(e.reason) < 100 else e.reason[:97] + "..."
        console.print(f"{e.seq:>4}  {e.release_id:<26} {e.dataset:<16} {e.status:<9} "
                  f"{e.finished_at:%Y-%m-%d %H:%M:%S}  {reason}", markup=False)


@audit_app.command("show")
def audit_show(release_id: str = typer.Argument(...), root: Path = RootOption) -> None:
    """The audit entry of RELEASE_ID and, if published, its manifest summary."""
    from tasks import audit
    from tasks.errors import PpdpError
    from tasks.publish import load_manifest, release_folder

    try:
        entries = audit.find_entries(root, release_id)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    if not entries:
        fail(f"error: no audit entry for release {release_id} under {root}", 2)
    for e in entries:
        for key, value in e.model_dump(mode="json").items():
            console.print(f"{key:<16} {value}", markup=False)
        folder = release_folder(root, e.dataset, e.release_id)
        if e.status == "published" and (folder / "manifest.json").is_file():
            m = load_manifest(folder)
            console.print(f"{'folder':<16} {folder}", markup=False)
            console.print(f"{'method':<16} {m.method.name}/{m.method.variant} {m.method.params}", markup=False)
            console.print(f"{'privacy':<16} k={m.privacy.k} ({m.privacy.model}), linkage risk={m.privacy.linkage_risk}",
                      markup=False)
            console.print(f"{'utility':<16} accuracy={m.utility.accuracy:.4f} original={m.utility.accuracy_original:.4f}",
                      markup=False)


@audit_app.command("verify")
def audit_verify(root: Path = RootOption) -> None:
    """Recompute the hash chain and every published file's hash; exit 1 naming what was altered or removed."""
    from tasks import audit
    from tasks.errors import PpdpError

    try:
        entries = audit.list_entries(root)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    problems = audit.verify(root)
    if problems:
        for p in problems:
            console_err.print(f"ppdp: audit: {p}", markup=False)
        raise typer.Exit(1)
    published = sum(1 for e in entries if e.status == "published")
    console.print(f"audit trail intact: {len(entries)} entries, {published} published releases verified")


def main() -> None:
    settings.apply()
    app(prog_name="ppdp")


if __name__ == "__main__":
    sys.exit(main())
