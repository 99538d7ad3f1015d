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
from ppdp.schemas.methods import Protection
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.release import PartsRelease
from ppdp.schemas.reports import Claim, FloorReport, PrivacyReport, Roles
from ppdp.tasks.privacy.attacker import accept_of, accepted_below, attacker_view, check_floor
from ppdp.tasks.privacy.measure import check_gates, class_measures


def part_measures(frame: pd.DataFrame, qis: Sequence[str], roles: Roles, policy: PrivacyThresholds,
                  hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None
                  ) -> PrivacyReport:
    """One part's privacy over its equivalence classes (rows sharing the part's quasi-identifier values; a part
    without quasi-identifiers is one class), not yet gated."""
    qis = [q for q in qis if q in frame.columns]
    sas = [s for s in roles.names(Role.sensitive) if s in frame.columns]
    pop = population[[q for q in qis if q in population.columns]] if population is not None and qis else None
    return class_measures(frame, qis, qis, sas, policy, pop if pop is not None and pop.shape[1] else None,
                           hierarchies)


def part_report(frame: pd.DataFrame, qis: Sequence[str], roles: Roles, policy: PrivacyThresholds,
                hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None
                ) -> PrivacyReport:
    """:func:`part_measures` gated by the policy."""
    return check_gates(part_measures(frame, qis, roles, policy, hierarchies, population), policy)


def worse(claim: Claim, than: Claim) -> bool:
    """Is ``claim`` worse than ``than`` (further on the failing side of its comparison; unmeasured is worst)?"""
    if claim.value is None or than.value is None:
        return claim.value is None and than.value is not None
    return claim.value < than.value if claim.comparison == ">=" else claim.value > than.value


def worst_claims(named: Sequence[tuple[str, Sequence[Claim]]], measure_suffix: str = "") -> list[Claim]:
    """Each claim (by name) at its worst part (named in ``worst``; ``measure_suffix`` added to its measure),
    holding only if it holds on every part."""
    claims: dict[str, Claim] = {}
    failed: dict[str, bool] = {}
    for name, part_claims in named:
        for c in part_claims:
            tagged = c.model_copy(update={"worst": f"{name}" + (f": {c.worst}" if c.worst else ""),
                                          "measure": f"{c.measure}{measure_suffix}"})
            failed[c.name] = failed.get(c.name, False) or not c.passed
            if c.name not in claims or worse(c, claims[c.name]):
                claims[c.name] = tagged
    return [c.model_copy(update={"passed": not failed[c.name]}) for c in claims.values()]


def combine(reports: Sequence[tuple[str, PrivacyReport]]) -> PrivacyReport:
    """The release's report from its parts' reports: every claim at its worst part (named in ``worst``), holding
    only if it holds on every part; counts summed; the class measures and risks of the part with the smallest k
    (the part a linking attacker would pick)."""
    if not reports:
        raise ValueError("a partitioned release has at least one part")
    _, weakest = min(reports, key=lambda r: (r[1].k if r[1].k is not None else -1))
    records = sum(r.records for _, r in reports)
    groups = sum(r.groups or 0 for _, r in reports)
    merged = worst_claims([(name, report.claims) for name, report in reports], ", worst over the parts")
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


def part_thresholds(parts: Sequence[tuple[str, pd.DataFrame, Sequence[str]]], roles: Roles,
                    policy: PrivacyThresholds) -> list[PrivacyThresholds]:
    """The thresholds each part is gated on: the policy, less the gates on a sensitive attribute for a part that
    publishes none (as long as some part does)."""
    sensitive = set(roles.names(Role.sensitive))
    holds = [bool(sensitive & set(frame.columns)) for _, frame, _ in parts]
    without = policy.model_copy(update=dict.fromkeys(SENSITIVE_GATES))
    return [policy if has or not any(holds) else without for has in holds]


def measure_parts(parts: Sequence[tuple[str, pd.DataFrame, Sequence[str]]], roles: Roles, policy: PrivacyThresholds,
                  hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None,
                  protected: Sequence[str] | None = None) -> tuple[PrivacyReport, list[PrivacyReport]]:
    """(the release's combined report, each part's report) for parts given as (name, table, quasi-identifiers):
    claims, the attacker's view and the safety floor of each part, and of the release at its worst part
    (:func:`judge_parts`). A partitioned release protects identities by classes;
    ``protected``: the columns whose values the attacker must not learn (default: the sensitive ones)."""
    return judge_parts(parts, roles, policy, protects="identity",
                       protected=roles.names(Role.sensitive) if protected is None else protected,
                       hierarchies=hierarchies, population=population)


def measure_release_parts(release: PartsRelease, roles: Roles, policy: PrivacyThresholds,
                          hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None,
                          protected: Sequence[str] | None = None) -> tuple[PrivacyReport, list[PrivacyReport]]:
    """:func:`measure_parts` of a :class:`~ppdp.schemas.release.PartsRelease`'s parts."""
    return measure_parts([(p.name, p.frame, p.quasi_identifiers) for p in release.parts], roles, policy,
                         hierarchies, population, protected)


def judge_parts(parts: Sequence[tuple[str, pd.DataFrame, Sequence[str]]], roles: Roles, policy: PrivacyThresholds,
                *, protects: Protection, protected: Sequence[str],
                hierarchies: dict[str, pd.DataFrame] | None = None, population: pd.DataFrame | None = None
                ) -> tuple[PrivacyReport, list[PrivacyReport]]:
    """A partitioned release (DMPD): every part measured over its own quasi-identifiers, seen by the attacker on its
    own and held to the floor; the release's report takes every claim and floor figure at its worst part."""
    each = []
    for (_, frame, qis), thresholds in zip(parts, part_thresholds(parts, roles, policy)):
        base = part_measures(frame, qis, roles, thresholds, hierarchies, population)
        view = attacker_view(frame, roles, protects=protects, unit="equivalence_class", quasi_identifiers=qis,
                             protected=protected, published_truth=True)
        report = check_gates(base.model_copy(update={"attacker_view": view}), thresholds)
        each.append(report.model_copy(update={"floor": check_floor(view, protected, "equivalence_class",
                                                                   accept_of(policy))}))
    combined = combine([(name, r) for (name, _, _), r in zip(parts, each)])
    return combined.model_copy(update={"floor": combine_floors([(n, r.floor) for (n, _, _), r in zip(parts, each)],
                                                               accept_of(policy))}), each


def combine_floors(floors: Sequence[tuple[str, FloorReport | None]], accept=None) -> FloorReport:
    """The release's floor from its parts': each claim at its worst part (named in ``worst``), holding only if it
    holds on every part."""
    present = [(name, floor) for name, floor in floors if floor is not None]
    applies = list(dict.fromkeys(a for _, floor in present for a in floor.applies))
    merged = worst_claims([(name, floor.claims) for name, floor in present])
    holds = bool(merged) and all(c.passed for c in merged)
    return FloorReport(holds=holds, applies=applies, claims=merged, accepted=accepted_below(merged, holds, accept))
