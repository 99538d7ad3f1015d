"""Privacy of a partitioned release (DMPD, paper 001): each part is a table of its own, measured over its own
quasi-identifiers by the functions every ``equivalence_class`` release uses; the release's claims are the worst
over the parts.

The release flow and ``ppdp validate --release`` both call :func:`measure_parts`, so a claim re-checked from the
published parts is computed exactly as it was made. Imports neither Prefect nor Great Expectations.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.reports import Claim, PrivacyReport, Roles
from ppdp.tasks.privacy.measure import _class_measures, check_gates


def part_report(frame: pd.DataFrame, qis: Sequence[str], roles: Roles, policy: PrivacyThresholds,
                hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None
                ) -> PrivacyReport:
    """One part's privacy over its equivalence classes (rows sharing the part's quasi-identifier values; a part
    without quasi-identifiers is one class), gated by the policy."""
    qis = [q for q in qis if q in frame.columns]
    sas = [s for s in roles.names(Role.sensitive) if s in frame.columns]
    pop = population[[q for q in qis if q in population.columns]] if population is not None and qis else None
    report = _class_measures(frame, qis, qis, sas, policy, pop if pop is not None and pop.shape[1] else None,
                             hierarchies)
    return check_gates(report, policy)


def _worse(claim: Claim, than: Claim) -> bool:
    if claim.value is None or than.value is None:
        return claim.value is None and than.value is not None
    return claim.value < than.value if claim.comparison == ">=" else claim.value > than.value


def combine(reports: Sequence[tuple[str, PrivacyReport]]) -> PrivacyReport:
    """The release's report from its parts' reports: every claim at its worst part (named in ``worst``), holding
    only if it holds on every part; counts summed; the class measures and risks of the part with the smallest k
    (the part a linking attacker would pick)."""
    if not reports:
        raise ValueError("a partitioned release has at least one part")
    _, weakest = min(reports, key=lambda r: (r[1].k if r[1].k is not None else -1))
    records = sum(r.records for _, r in reports)
    groups = sum(r.groups or 0 for _, r in reports)
    claims: dict[str, Claim] = {}
    failed: dict[str, bool] = {}
    for name, report in reports:
        for c in report.claims:
            tagged = c.model_copy(update={"worst": f"{name}" + (f": {c.worst}" if c.worst else ""),
                                          "measure": f"{c.measure}, worst over the parts"})
            failed[c.name] = failed.get(c.name, False) or not c.passed
            if c.name not in claims or _worse(c, claims[c.name]):
                claims[c.name] = tagged
    merged = [c.model_copy(update={"passed": not failed[c.name]}) for c in claims.values()]
    qis = list(dict.fromkeys(q for _, r in reports for q in r.quasi_identifiers))
    sas = list(dict.fromkeys(s for _, r in reports for s in r.sensitive_attributes))
    return weakest.model_copy(update={
        "quasi_identifiers": qis, "sensitive_attributes": sas, "records": records, "groups": groups,
        "mean_group_size": records / groups if groups else 0.0, "claims": merged,
        "unit": "equivalence_class"}, deep=True)


SENSITIVE_GATES = ("alpha", "l", "c", "t", "delta", "beta")
"""Thresholds on a sensitive attribute's distribution in each class: a part that publishes no sensitive column
discloses none, so they do not apply to it (as long as some part publishes one; otherwise they are measured on
every part and fail closed)."""


def measure_parts(parts: Sequence[tuple[str, pd.DataFrame, Sequence[str]]], roles: Roles, policy: PrivacyThresholds,
                  hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None
                  ) -> tuple[PrivacyReport, list[PrivacyReport]]:
    """(the release's combined report, each part's report) for parts given as (name, table, quasi-identifiers)."""
    sensitive = set(roles.names(Role.sensitive))
    holds = [bool(sensitive & set(frame.columns)) for _, frame, _ in parts]
    without = policy.model_copy(update=dict.fromkeys(SENSITIVE_GATES))
    each = [part_report(frame, qis, roles, policy if has or not any(holds) else without, hierarchies, population)
            for (_, frame, qis), has in zip(parts, holds)]
    return combine([(name, r) for (name, _, _), r in zip(parts, each)]), each


def measure_release_parts(release, roles: Roles, policy: PrivacyThresholds,
                          hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None
                          ) -> tuple[PrivacyReport, list[PrivacyReport]]:
    """:func:`measure_parts` of a partitioned :class:`~ppdp.tasks.sanitize.base.Release`'s parts."""
    return measure_parts([(p.name, p.frame, p.quasi_identifiers) for p in release.parts], roles, policy,
                         hierarchies, population)
