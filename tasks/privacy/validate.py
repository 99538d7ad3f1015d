"""Privacy validation as a release step, and of any CSV or Parquet table outside a release (``ppdp validate``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from ppdp.schemas.reports import PrivacyReport, Roles
from ppdp.schemas.spec import PrivacyThresholds, ReleaseSpec, SourceSpec
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.ingest import numeric_intent, read_header, read_table
from ppdp.tasks.privacy.measure import check_gates, measure_release, measure_table, read_hierarchy
from ppdp.tasks.sanitize.base import SanitizedTable

PYCANON_NAMES = (
    "k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity", "recursive_c_l_diversity",
    "t_closeness", "delta_disclosure", "basic_beta_likeness", "enhanced_beta_likeness",
)


def privacy_checks(train: pd.DataFrame, release: SanitizedTable, roles: Roles, spec: ReleaseSpec) -> PrivacyReport:
    """The release step: measure everything, then gate on the spec's ``privacy`` section."""
    policy = spec.privacy
    population = read_table_file(policy.population) if policy.population else None
    hierarchies = load_hierarchies(policy.hierarchies)
    report = measure_release(train, release, roles, thresholds=policy, population=population,
                             hierarchies=hierarchies, seed=spec.seed)
    return check_gates(report, policy)


def load_hierarchies(paths: dict[str, Path]) -> dict[str, pd.DataFrame]:
    out = {}
    for column, path in paths.items():
        try:
            out[column] = read_hierarchy(path)
        except (OSError, ValueError, pd.errors.ParserError):
            raise SpecError(f"spec privacy.hierarchies.{column}: cannot read hierarchy {path}") from None
    return out


def read_table_file(path: Path, sep: str = ",", na_values: list[str] | None = None) -> pd.DataFrame:
    """A CSV or Parquet table (format from the suffix), read as the ingest step reads its input."""
    path = Path(path)
    fmt = "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"
    source = SourceSpec(path=path, format=fmt, sep=sep, na_values=list(na_values or []))
    read_header(source)
    return read_table(source)


def check_table_columns(frame: pd.DataFrame, qi: list[str], sa: list[str], where: str) -> None:
    """One-line errors for unusable input: unknown column, SA equal to a QI, empty table, all-null QI,
    mixed types."""
    if not qi:
        raise InputError(f"{where}: give at least one quasi-identifier (--qi)")
    for name in [*qi, *sa]:
        if name not in frame.columns:
            raise InputError(f"{where}: column '{name}' is not in the table")
    for name in sa:
        if name in qi:
            raise InputError(f"{where}: column '{name}' is both a quasi-identifier and a sensitive attribute")
    if len(set(qi)) != len(qi) or len(set(sa)) != len(sa):
        raise InputError(f"{where}: a column is listed twice")
    if len(frame) == 0:
        raise InputError(f"{where}: the table has no rows")
    for name in qi:
        if frame[name].isna().all():
            raise InputError(f"{where}: quasi-identifier '{name}' is entirely missing")
    for name in [*qi, *sa]:
        series = frame[name]
        if series.dtype == object:
            kinds = {type(v).__name__ for v in series.dropna()}
            if len(kinds) > 1:
                raise InputError(f"{where}: column '{name}' mixes value types ({', '.join(sorted(kinds))})")
        if numeric_intent(series):
            raise InputError(f"{where}: column '{name}' mixes numbers and text (declare missing-value markers "
                             "with --na-values)")


def validate_file(path: Path, qi: list[str], sa: list[str], thresholds: PrivacyThresholds, *, sep: str = ",",
                  na_values: list[str] | None = None, population: Path | None = None,
                  hierarchies: dict[str, Path] | None = None, seed: int = 0) -> PrivacyReport:
    """Measure and gate any table (its equivalence classes over ``qi``)."""
    frame = read_table_file(path, sep, na_values)
    check_table_columns(frame, qi, sa, str(path))
    needs_sa = thresholds.sensitive_gates()
    if needs_sa and not sa:
        raise InputError(f"--{needs_sa[0]}: this gate needs a sensitive attribute (--sa)")
    pop = None
    if population is not None:
        pop = read_table_file(population, sep, na_values)
        missing = [q for q in qi if q not in pop.columns]
        if missing:
            raise InputError(f"population {population}: column '{missing[0]}' is not in the table")
    hier = load_hierarchies(hierarchies or {}) if hierarchies else None
    try:
        report = measure_table(frame, qi, sa, thresholds=thresholds, population=pop, hierarchies=hier, seed=seed)
    except ValidationError:
        raise
    except ValueError as exc:  # the measures name the column or parameter, never a value
        raise InputError(f"{path}: {str(exc).splitlines()[0]}") from None
    return check_gates(report, thresholds)


def report_json(report: PrivacyReport, path: str | None = None) -> dict[str, Any]:
    """The report as JSON: pyCANON's measures at the top level under pyCANON's names and shapes, ours beside."""
    m = report.measures
    out: dict[str, Any] = {"file": path} if path else {}
    out.update(rows=report.records, quasi_identifiers=report.quasi_identifiers,
               sensitive_attributes=report.sensitive_attributes, equivalence_classes=report.groups)
    for name in PYCANON_NAMES:
        value = getattr(m, name) if m is not None else None
        out[name] = list(value) if isinstance(value, tuple) else value
    out["entropy_l_diversity_value"] = m.entropy_l_value if m else None
    out["hierarchical_t_closeness"] = m.hierarchical_t_closeness if m else None
    out["risk"] = report.risk.model_dump(mode="json") if report.risk else None
    out["attacker"] = report.attacker.model_dump(mode="json") if report.attacker else None
    if report.synthetic:
        out["synthetic"] = report.synthetic.model_dump(mode="json")
    out["gates"] = [g.model_dump(mode="json") for g in report.gates]
    out["passed"] = report.passed
    return out
