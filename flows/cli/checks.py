"""The work of ``ppdp validate``, which needs numpy and pandas: a table measured against the gates given (a CSV
or Parquet file, or a folder of Parquet files), a published release's claims re-checked, a federated model's
claims re-checked; the results printed (figures only) or as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from pydantic import ValidationError

from ppdp.flows.cli.output import console, fail, names
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.federated import recheck_model
from ppdp.tasks.federated.release import is_model_folder
from ppdp.tasks.privacy.partitioned import validate_folder
from ppdp.tasks.privacy.validate import report_json, validate_file
from ppdp.tasks.reproduce import recheck_release
from ppdp.tasks.spec import format_problems, validation_problems


def table_thresholds(gates: dict, population: Path | None) -> PrivacyThresholds:
    """The gates given as thresholds; a bad or vacuous gate ends the command (exit 2)."""
    try:
        thresholds = PrivacyThresholds(**gates, population=population)
    except ValidationError as exc:
        fail("error: " + format_problems([f"--{p.replace('_', '-')}" for p in validation_problems(exc)]), 2)
    vacuous = thresholds.vacuous_gates()
    if vacuous:
        fail(f"error: --{vacuous[0].replace('_', '-')}: a gate no table can fail checks nothing", 2)
    return thresholds


def hierarchy_paths(hierarchy: list[str], sas: list[str]) -> dict[str, Path]:
    """``--hierarchy SA=PATH`` items by sensitive attribute; each must name one given with --sa."""
    hierarchies = {}
    for item in hierarchy:
        name, eq, path = item.partition("=")
        if not eq or not name.strip() or not path.strip():
            fail(f"error: --hierarchy {item!r}: expected SA=path", 2)
        hierarchies[name.strip()] = Path(path.strip())
    for name in hierarchies:
        if name not in sas:
            fail(f"error: --hierarchy {name}: not a sensitive attribute given with --sa", 2)
    return hierarchies


def validate_table(file: Path, qi: str, sa: str | None, *, gates: dict, population: Path | None,
                   hierarchy: list[str], as_json: bool, sep: str, na_values: str | None, attack: int, seed: int,
                   cluster: str | None) -> None:
    """``ppdp validate TABLE``: measure, check the gates, print; exit 0 when every gate holds, else 3."""
    thresholds = table_thresholds(gates, population)
    sas = names(sa)
    hierarchies = hierarchy_paths(hierarchy, sas)
    partitions = None
    try:
        if file.is_dir():  # a partitioned table: counts per file, combined (ppdp.tasks.privacy.partitioned)
            folder = validate_folder(file, names(qi), sas, thresholds, na_values=names(na_values),
                                     population=population, hierarchies=hierarchies, attack=attack, cluster=cluster)
            report, partitions = folder.report, folder.partitions
        elif cluster is not None:
            fail("error: --cluster: only for a folder of Parquet files (a partitioned table)", 2)
        else:
            report = validate_file(file, names(qi), sas, thresholds, sep=sep, na_values=names(na_values),
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
        print_report(report, file)
    raise typer.Exit(0 if report.passed else 3)


def validate_federated(folder: Path, as_json: bool) -> None:
    """``validate --release`` on a federated naive Bayes model: its claims re-checked from the folder alone."""
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


def validate_release(folder: Path, original: Path | None, as_json: bool, cluster: str | None = None,
                     population: Path | None = None) -> None:
    if is_model_folder(folder):  # a federated model (ppdp federate) has its own manifest and claims
        validate_federated(folder, as_json)

    try:
        result = recheck_release(folder, original, cluster, population)
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


def print_report(report, file: Path) -> None:
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
