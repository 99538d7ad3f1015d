"""Judge a release: its unit's measures and the policy's claims, the attacker's view, and the safety floor, in one
report. The release step, the tuner's policy check and ``ppdp validate --release`` all come through here, so a
figure is computed the same way wherever it is shown or re-checked.

Imports neither Prefect nor Great Expectations.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.methods import Protection
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.release import DpRelease
from ppdp.schemas.reports import AttackerView, PrivacyReport, Roles
from ppdp.tasks.privacy.attacker import accept_of, attacker_view, check_floor
from ppdp.tasks.privacy.measure import check_gates, measure_release


def release_view(source: pd.DataFrame, release, roles: Roles, report: PrivacyReport, *, protects: Protection,
                 protected: Sequence[str], everything: pd.DataFrame | None = None) -> AttackerView:
    """The attacker's view of a single-table ``release`` made from ``source`` (the method's input rows), reusing
    the unit's linkage and nearest-record figures from ``report``."""
    synthetic = report.synthetic
    return attacker_view(
        release.frame, roles, protects=protects, unit=release.unit, protected=protected,
        source=source.reset_index(drop=True), row_source=release.row_source, everything=everything,
        linkage_risk=report.linkage_risk, nearest=synthetic.dcr_quantiles if synthetic is not None else None,
        dp=release.dp if isinstance(release, DpRelease) else None)


def judge_release(source: pd.DataFrame, release, roles: Roles, policy: PrivacyThresholds, *, protects: Protection,
                  protected: Sequence[str], seed: int = 0, everything: pd.DataFrame | None = None,
                  population: pd.DataFrame | None = None, hierarchies: dict[str, pd.DataFrame] | None = None,
                  attack_queries: int | None = None) -> PrivacyReport:
    """Measure a single-table release over its unit, as the attacker sees it, gate it on ``policy`` and hold it to
    the safety floor (``report.floor``; a failed floor is the caller's to enforce)."""
    kwargs = {} if attack_queries is None else {"attack_queries": attack_queries}
    report = measure_release(source, release, roles, thresholds=policy, population=population,
                             hierarchies=hierarchies, seed=seed, **kwargs)
    view = release_view(source, release, roles, report, protects=protects, protected=protected,
                        everything=everything)
    report = check_gates(report.model_copy(update={"attacker_view": view}), policy)
    return report.model_copy(update={"floor": check_floor(view, protected, release.unit, accept_of(policy))})


def columns_to_promote(report: PrivacyReport, policy: PrivacyThresholds) -> list[str]:
    """Columns published beside the quasi-identifiers that break the floor or the policy's k as the attacker sees
    the table: they should be quasi-identifiers (and protected by the method). Empty when nothing breaks or no
    such column was counted in."""
    reports = report.part_reports or [report]
    out: list[str] = []
    for r in reports:
        view = r.attacker_view
        if view is None or not view.counted_columns or view.identity_by != "classes":
            continue
        floor_fails = r.floor is not None and any(
            not c.passed for c in r.floor.claims if c.name in ("floor: records alone", "floor: average risk"))
        k_breaks = policy.k is not None and view.smallest_class < policy.k
        if floor_fails or k_breaks:
            out += [c for c in view.counted_columns if c not in out]
    return out


def promote_counted_columns(roles: Roles, report: PrivacyReport, policy: PrivacyThresholds) -> Roles | None:
    """Roles with the columns of :func:`columns_to_promote` made quasi-identifiers (each with the figures that made
    it one in its reason), for the method to protect them; None when there is nothing to promote."""
    columns = columns_to_promote(report, policy)
    if not columns:
        return None
    views = [r.attacker_view for r in (report.part_reports or [report]) if r.attacker_view is not None]
    alone = max(v.records_alone for v in views)
    smallest = min(v.smallest_class for v in views)
    why = (f"published beside the quasi-identifiers, it split the classes an attacker sees (records alone "
           f"{alone:.1%}, smallest class {smallest}): made a quasi-identifier")
    tags = [t.model_copy(update={"role": Role.quasi_identifier, "reason": f"{t.reason}; {why}", "promoted": True})
            if t.name in columns else t for t in roles.columns]
    return Roles(columns=tags)
