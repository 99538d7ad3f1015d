"""The ``ppdp`` command line: parse arguments, call a flow or a plain function, print a summary.

Exit codes: 0 published / intact, 2 bad spec or input, 3 rejected by a gate, 1 audit trail altered or an
internal error. Nothing printed here contains a data value.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console

from ppdp.flows import settings

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
    from ppdp.tasks import audit
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.publish import new_release_id

    settings.apply()
    started = datetime.now(UTC)
    try:  # spec and header checks first: a bad spec costs no Prefect start-up and reads no data
        resolved = spec_io.load_spec(spec, set_)
        spec_io.preflight(resolved)
    except PpdpError as exc:
        root = spec_io.guess_publish_root(spec, set_)
        audit.record_refusal(root, release_id=new_release_id(started), dataset=_dataset_of(spec, set_), error=exc,
                             started_at=started)
        fail(f"error: {exc}", exc.exit_code)

    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from ppdp.flows.release import release_flow

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
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.plots import tuning_plot_png

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

    from ppdp.flows.release import tune_flow

    with console_err.status("tuning (progress in the log lines)"):
        try:
            with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                trace = tune_flow(spec_path=str(spec.resolve()), overrides=overrides)
        except PpdpError as exc:
            fail(f"error: {exc}", exc.exit_code)
        except Exception as exc:  # noqa: BLE001
            fail(f"internal error ({type(exc).__name__}); see the Prefect run log", 1)
    folder = out or Path("tuning") / f"{resolved.dataset}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
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


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


@app.command()
def validate(
    file: Path = typer.Argument(..., help="a CSV or Parquet table"),
    qi: str = typer.Option(..., "--qi", help="quasi-identifiers, comma-separated"),
    sa: str | None = typer.Option(None, "--sa", help="sensitive attributes, comma-separated"),
    k: int | None = typer.Option(None, "--k", help="gate: k-anonymity"),
    alpha: float | None = typer.Option(None, "--alpha", help="gate: (alpha,k)-anonymity"),
    l: int | None = typer.Option(None, "--l", help="gate: l-diversity"),  # noqa: E741
    l_variant: str = typer.Option("distinct", "--l-variant", help="distinct | entropy | recursive"),
    c: float | None = typer.Option(None, "--c", help="recursive (c,l)-diversity: c"),
    t: float | None = typer.Option(None, "--t", help="gate: t-closeness"),
    delta: float | None = typer.Option(None, "--delta", help="gate: delta-disclosure privacy"),
    beta: float | None = typer.Option(None, "--beta", help="gate: beta-likeness"),
    beta_variant: str = typer.Option("enhanced", "--beta-variant", help="basic | enhanced"),
    max_prosecutor_risk: float | None = typer.Option(None, "--max-prosecutor-risk"),
    max_average_risk: float | None = typer.Option(None, "--max-average-risk"),
    max_records_at_risk: float | None = typer.Option(None, "--max-records-at-risk"),
    risk_threshold: float = typer.Option(0.2, "--risk-threshold"),
    max_marketer_risk: float | None = typer.Option(None, "--max-marketer-risk"),
    max_sample_uniques: float | None = typer.Option(None, "--max-sample-uniques"),
    max_journalist_risk: float | None = typer.Option(None, "--max-journalist-risk"),
    population: Path | None = typer.Option(None, "--population", help="population table for journalist risk"),
    hierarchy: list[str] = typer.Option([], "--hierarchy", help="SA=path of an ARX hierarchy (repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON (pyCANON's names for its measures)"),
    sep: str = typer.Option(",", "--sep", help="CSV separator"),
    na_values: str | None = typer.Option(None, "--na-values", help="CSV cells read as missing, comma-separated"),
    seed: int = typer.Option(0, "--seed", help="seed of the random-query attacker"),
) -> None:
    """Check any table outside a release: exit 0 if every given gate holds, 3 if not, 2 on bad input."""
    import json

    from pydantic import ValidationError

    from ppdp.schemas.spec import PrivacyThresholds
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.privacy.validate import report_json, validate_file
    from ppdp.tasks.spec import format_validation_error

    try:
        thresholds = PrivacyThresholds(
            k=k, alpha=alpha, l=l, l_variant=l_variant, c=c, t=t, delta=delta, beta=beta, beta_variant=beta_variant,
            max_prosecutor_risk=max_prosecutor_risk, max_average_risk=max_average_risk,
            max_records_at_risk=max_records_at_risk, risk_threshold=risk_threshold,
            max_marketer_risk=max_marketer_risk, max_sample_uniques=max_sample_uniques,
            max_journalist_risk=max_journalist_risk, population=population,
        )
    except ValidationError as exc:
        fail(f"error: --{format_validation_error(exc).replace('_', '-')}", 2)
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
    try:
        report = validate_file(file, _names(qi), sas, thresholds, sep=sep, na_values=_names(na_values),
                               population=population, hierarchies=hierarchies, seed=seed)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    if as_json:
        console.print_json(json.dumps(report_json(report, str(file))))
    else:
        _print_report(report, file)
    raise typer.Exit(0 if report.passed else 3)


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
        rows.append((f"random queries ({a.queries}): re-identification mean / max",
                     f"{a.reidentification_mean:.4f} / {a.reidentification_max:.4f}"))
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
RootOption = typer.Option(..., "--root", help="publish root holding audit.db")


@audit_app.command("list")
def audit_list(root: Path = RootOption) -> None:
    """Every run recorded under ROOT, oldest first."""
    from ppdp.tasks import audit
    from ppdp.tasks.core.errors import PpdpError

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
    from ppdp.tasks import audit
    from ppdp.tasks.core.errors import PpdpError
    from ppdp.tasks.publish import load_manifest, release_folder

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
            console.print(f"{'utility':<16} accuracy={m.utility.accuracy:.4f} "
                          f"original={m.utility.accuracy_original:.4f}", markup=False)


@audit_app.command("verify")
def audit_verify(root: Path = RootOption) -> None:
    """Recompute the hash chain and every published file's hash; exit 1 naming what was altered or removed."""
    from ppdp.tasks import audit
    from ppdp.tasks.core.errors import PpdpError

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
