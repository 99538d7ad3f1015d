"""What ``ppdp run`` prints once the release flow has ended: the text summary and its ``--json`` object (figures,
shares and names only; the utility figures of a differential_privacy release withheld, as in the manifest).

Imported by the command after the flow ran (it loads pandas and Prefect's step timings)."""

from __future__ import annotations

import time

from ppdp.flows.cli.output import console
from ppdp.flows.steps import step_breakdown, steps_seconds
from ppdp.schemas.units import find_unit
from ppdp.tasks.privacy.attacker import describe_floor_claim, protection_sentence, view_lines
from ppdp.tasks.privacy.series import series_line
from ppdp.tasks.private_record import withholds
from ppdp.tasks.utility import marginals_line, tstr_lines


def print_summary(result, entered: float, timings: bool) -> None:
    """The text summary of a run: published (or unchanged since the latest release), the verdict, the unit and
    its measured k, the tuned parameter, the claims, the series, the utility, the timings, the report."""
    if result.status == "unchanged":  # nothing published: the latest release stands
        console.print(f"unchanged since {result.release_id}", markup=False)
        console.print(f"  folder        {result.folder}", markup=False)
        return
    console.print(f"published release {result.release_id}")
    console.print(f"  folder        {result.folder}")
    print_verdict(result.floor, result.attacker_view)
    unit = find_unit(result.unit)
    smallest = f"smallest {unit.class_name}" if unit is not None and unit.counts_classes else "smallest group"
    console.print(f"  unit          {result.unit}" + (
        f", measured k = {result.k} ({smallest} of the release)"
        if result.k is not None else ""), markup=False)
    if result.tuned:  # the method's parameter, tuned or fixed in the spec: its name and value as the manifest has them
        label = "fixed" if result.tuning_strategy == "fixed" else "tuned"
        console.print(f"  {label:<13} {result.tuned}: {result.tuning_rule}", markup=False)
    for c in result.claims:
        value = "n/a" if c.value is None else f"{c.value:.6g}"
        console.print(f"  claim {c.name:<20} {value} {c.comparison} {c.threshold:g}  holds", markup=False)
    if result.series is not None:
        console.print(f"  series        {series_line(result.series)}", markup=False)
    print_utility(result)
    if timings:
        print_timings(entered)
    if result.report:
        console.print(f"  report        {result.report}", markup=False)


def print_utility(result) -> None:
    """The summary's utility lines (withheld for a release measured on real held-out rows)."""
    if withholds(result.unit):  # measured on real held-out rows: kept in the private record
        console.print("  utility       the gates hold (the figures, measured on real rows, are withheld: see the "
                      "publisher's private record)", markup=False)
    elif result.accuracy is None:  # no classifier (no class column): nothing held out, label-free figures
        console.print(f"  utility       {marginals_line(result.marginals)}", markup=False)
    else:
        console.print(f"  utility       accuracy {result.accuracy:.4f} (original rows "
                      f"{result.accuracy_original or 0.0:.4f})")
        for label, acc in result.per_class.items():
            console.print(f"    class {label:<12} {acc:.4f}", markup=False)
        for name, value in result.delta_r.items():
            console.print(f"    delta R {name:<10} {value:+.4f}  (>= 0 keeps utility)", markup=False)
        for line in tstr_lines(result.tstr, result.regression):
            console.print(f"    {line}", markup=False)
        if result.marginals is not None:
            console.print(f"    {marginals_line(result.marginals)}", markup=False)


def print_timings(entered: float) -> None:
    """``--timings``: the command's wall time, the steps' own work, and each step's share."""
    wall = time.perf_counter() - entered
    work = steps_seconds(entered)
    console.print(f"  timings       {wall:.2f} s in the command, {work:.2f} s in the steps' own work, "
                  f"{wall - work:.2f} s beyond them (Python start-up not included)", markup=False)
    for name, runs, seconds in step_breakdown(entered):
        console.print(f"    {name:<24} {seconds:8.2f} s" + (f"  ({runs} runs, summed)" if runs > 1 else ""),
                      markup=False)


def summary_json(result, entered: float | None) -> dict:
    """``run --json``: the text summary's content as a JSON object (the same figures, and the same ones withheld
    for a differential_privacy release: the utility figures measured on real rows are not in it)."""
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
        doc["timings"] = {"command_seconds": round(time.perf_counter() - entered, 3),
                          "steps_seconds": round(steps_seconds(entered), 3),
                          "steps": [{"step": n, "runs": r, "seconds": round(sec, 3)}
                                    for n, r, sec in step_breakdown(entered)]}
    doc["report"] = result.report
    return doc


def print_verdict(floor, view) -> None:
    """The two-part verdict and the attacker's view, first in the summary (shares and counts only)."""
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
