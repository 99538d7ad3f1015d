"""The work of ``ppdp run``, ``federate`` and ``tune`` before and after their flow, which needs numpy and pandas:
the spec checks (a refusal audited, one line, exit 2), the tuning folder and the trace's lines."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ppdp.flows.cli.output import console, fail, runner_overrides
from ppdp.tasks import audit, federated
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import PpdpError, SpecError
from ppdp.tasks.layout import tuning_folder
from ppdp.tasks.plots import tuning_plot_png
from ppdp.tasks.publish import new_release_id
from ppdp.tasks.sanitize.registry import method_class


def check_release_spec(spec: Path, overrides: list[str], runner: str | None, started: datetime) -> list[str]:
    """``ppdp run``'s checks before any Prefect start-up or data read: the spec, its header checks, no interrupted
    publish; a refusal is audited and ends the command. Returns the overrides with ``--runner``'s."""
    try:  # spec and header checks first: a bad spec costs no Prefect start-up and reads no data
        overrides = [*overrides, *runner_overrides(runner)]  # so the spec (and the manifest) records where it ran
        resolved = spec_io.load_spec(spec, overrides)
        spec_io.preflight(resolved)
        audit.require_no_interrupted_publish(resolved.publish.root)  # a crashed publish: ppdp audit recover
    except PpdpError as exc:
        root = spec_io.guess_publish_root(spec, overrides)
        audit.record_refusal(root, release_id=new_release_id(started), dataset=dataset_of(spec, overrides),
                             error=exc, started_at=started)
        fail(f"error: {exc}", exc.exit_code)
    return overrides


def check_federation_spec(spec: Path, overrides: list[str], started: datetime):
    """``ppdp federate``'s checks: the spec, the parties' files and the root; a refusal is audited and ends the
    command. Returns the resolved federation spec."""
    try:  # the spec, the parties' files and the root first: a bad spec costs no Prefect start-up
        resolved = federated.load_spec(spec, overrides)
        federated.preflight(resolved)
    except PpdpError as exc:
        audit.record_refusal(spec_io.guess_publish_root(spec, overrides), release_id=new_release_id(started),
                             dataset=dataset_of(spec, overrides), error=exc, started_at=started)
        fail(f"error: {exc}", exc.exit_code)
    return resolved


def check_tuning_spec(spec: Path, set_: list[str], strategy: str | None, buckets: int | None,
                      runner: str | None):
    """``ppdp tune``'s options as spec overrides, and the spec checked; (resolved spec, overrides)."""
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
            overrides.append(f"method.{tuned_parameter(spec)}=null")
        overrides += runner_overrides(runner)
        resolved = spec_io.load_spec(spec, overrides)
        spec_io.preflight(resolved, check_root=False)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if resolved.tuning.strategy == "fixed":
        fail("error: tuning.strategy is fixed in the spec: give --strategy", 2)
    return resolved, overrides


def write_tuning(trace, resolved, out: Path | None) -> None:
    """The tuning folder (trace.json and tuning.png: aggregates only) and the trace's lines."""
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


def tuned_parameter(spec: Path) -> str:
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


def dataset_of(spec: Path, overrides: list[str]) -> str | None:
    try:
        raw = spec_io.read_spec_mapping(Path(spec))
        for item in overrides:
            spec_io.apply_override(raw, item)
    except SpecError:
        return None
    value = raw.get("dataset")
    return value if isinstance(value, str) else None
