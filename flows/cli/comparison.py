"""The work of ``ppdp compare`` around its flow, which needs numpy and pandas: the spec checks, the comparison
table and recommendation (figures, names and one-line reasons only), the outputs and the recommended spec."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ppdp.flows.cli.output import console, fail, names, runner_overrides
from ppdp.tasks import compare as comparing
from ppdp.tasks import spec as spec_io
from ppdp.tasks.compare import risk_of
from ppdp.tasks.compare_report import write_outputs
from ppdp.tasks.core.errors import PpdpError, SpecError
from ppdp.tasks.layout import COMPARE_FOLDER, run_folder
from ppdp.tasks.sanitize.registry import method_class


def check_compare_spec(spec: Path, set_: list[str], methods: str | None, runner: str | None, out: Path | None,
                       write_spec: Path | None):
    """The spec, the methods named and the output paths checked before any Prefect start-up; (resolved spec,
    overrides, method names)."""
    overrides = list(set_)
    chosen = names(methods)
    try:
        overrides += runner_overrides(runner)
        resolved = spec_io.load_spec(spec, overrides)
        spec_io.preflight(resolved, check_root=False)
        for name in chosen:
            method_class(name)
        if methods is not None and not chosen:
            raise SpecError("--methods: give at least one method name")
        if resolved.series.keep_groups:
            raise SpecError("series.keep_groups: compare judges a first release of each method (it reads no earlier "
                            "release): remove it to compare")
        comparing.check_outside_root(resolved, out, "--out")
        comparing.check_outside_root(resolved, write_spec, "--write-spec")
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    return resolved, overrides, chosen


def write_comparison(result, resolved, spec: Path, out: Path | None, write_spec: Path | None) -> None:
    """compare.html and compare.json (aggregates only), and the recommended method's spec if asked for."""
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


def print_comparison(result) -> None:
    """The comparison table (figures, names and one-line reasons only) and the recommendation."""
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
