"""Deciding: a failed privacy or utility gate stops the release (nothing is published)."""

from __future__ import annotations

import math

import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.criteria.registry import CRITERIA
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.reports import Claim, PrivacyReport, Roles
from ppdp.schemas.series import SeriesReport
from ppdp.schemas.units import unit_of
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks.core.errors import ReleaseRejected, SpecError
from ppdp.tasks.core.labels import column_label
from ppdp.tasks.privacy.attacker import describe_floor_claim
from ppdp.tasks.privacy.measure import describe_failed
from ppdp.tasks.privacy.series import series_refusal
from ppdp.tasks.series import SeriesError


def enforce_privacy(report: PrivacyReport) -> PrivacyReport:
    """Raise :class:`ReleaseRejected` naming every failed privacy claim; a report with no claim is refused
    too (fail closed: a release must make at least one privacy claim). Then the safety floor: a release that fails
    it is refused naming each failed row and its figure, unless the spec accepts publishing below the floor (the
    report then carries that decision); a release measured without a floor is refused (fail closed)."""
    if not report.claims:
        raise ReleaseRejected("privacy: no privacy gate applies to this release (fail closed)", [])
    if report.failed:
        raise ReleaseRejected(f"privacy gate failed: {describe_failed(report.failed)}",
                              [g.name for g in report.failed])
    return enforce_floor(report)


def enforce_floor(report: PrivacyReport) -> PrivacyReport:
    """Raise :class:`ReleaseRejected` naming each failed row of the safety floor and its figure, unless the owner
    accepted publishing below it (the report then carries that decision); a report without a floor is refused
    (fail closed)."""
    floor = report.floor
    if floor is None:
        raise ReleaseRejected("safety floor: not measured (fail closed)", ["floor"])
    if not floor.publishable:  # the fix first, the override last
        raise ReleaseRejected(f"safety floor failed: {'; '.join(describe_floor_claim(c) for c in floor.failed)}. "
                              f"To meet it: {'; '.join(floor_fixes(floor.failed))}. Or, to publish below the floor "
                              "on purpose: privacy.accept_below_floor (a reason and who approved it, recorded)",
                              [c.name for c in floor.failed])
    return report


def smallest_k(limit: float) -> int:
    """The smallest class (or group) size k whose risk 1/k is at most ``limit``: every class of k records or more
    keeps the average risk (a mean of 1/|class|) at most ``limit``."""
    k = max(2, math.ceil(1.0 / limit))
    while k > 2 and 1.0 / (k - 1) <= limit:  # ceil of a rounded quotient may overshoot by one
        k -= 1
    while 1.0 / k > limit:
        k += 1
    return k


def floor_fixes(failed: list[Claim]) -> list[str]:
    """For each failed floor row, the setting that meets it where it can be computed (the smallest k for a
    class-size figure, the largest epsilon or delta), else that no fix is known (never a data value)."""
    out = []
    for c in failed:
        name = c.name.removeprefix("floor: ")
        if name == "average risk" and c.threshold > 0:
            k = smallest_k(c.threshold)
            groups = "generating group" if c.unit is not None and unit_of(c.unit).group_column else "class"
            out.append(f"raise k to {k} (privacy.k = {k}, and method.k if the spec sets it: every {groups} of {k} "
                       f"records or more keeps the average risk at most {c.threshold:g})")
        elif name == "records alone":
            out.append("raise k to 2 or more (privacy.k; a column published beside the quasi-identifiers counts "
                       "too: generalize or drop it if records stay alone)")
        elif name == "group alone":
            out.append("raise k to 2 or more (privacy.k: every generating group of 2 records or more)")
        elif name in ("epsilon", "delta"):
            out.append(f"lower method.{name} to {c.threshold:g} or less")
        else:
            out.append(f"no fix is known for the {name} (a coarser setting of the method, such as a larger k or more "
                       "noise, usually lowers it)")
    return out


def _rounded_up(x: float, digits: int = 3) -> float:
    """``x`` to ``digits`` significant digits, rounded up (a bound shown as a fix must itself meet the bound)."""
    places = digits - 1 - math.floor(math.log10(x))
    return math.ceil(x * 10**places - 1e-9) / 10**places


def check_feasible(policy: PrivacyThresholds, unit: str, source: pd.DataFrame, roles: Roles) -> None:
    """Refuse, before any tuning or sanitizing, a gate that no release of ``source`` (the rows the method
    publishes) can meet: a class or group can be no larger than the whole table, so k above its rows, or a
    prosecutor, average or marketer risk bound below 1 / rows, fails whatever the method does; a class can hold
    no more distinct sensitive values than the table, so l above that count fails too (rows can only be
    suppressed, never added). Raises :class:`SpecError` naming the gate, the bound and the fix (counts only)."""
    if not unit_of(unit).counts_classes:
        return
    rows = len(source)
    shown = f"{rows:,} row{'s' if rows != 1 else ''}"
    where = f"the {shown} the method publishes"
    if policy.k is not None and policy.k > rows:
        raise SpecError(f"spec privacy.k: {policy.k} is more than {where}: no release can meet it; lower privacy.k "
                        f"to {rows:,} or less")
    least = 1.0 / rows if rows else 1.0  # one class holding every row
    for gate in (c.key for c in CRITERIA if c.least_over_rows):
        bound = getattr(policy, gate)
        if bound is not None and bound < least - 1e-12:
            raise SpecError(f"spec privacy.{gate}: {bound:g} is below 1/{rows:,}, the least any release of {where} "
                            f"can reach (one class of every row): no release can meet it; raise privacy.{gate} to "
                            f"{_rounded_up(least):g} or more")
    if policy.l is not None:
        for name in roles.names(Role.sensitive):
            if name not in source.columns:
                continue
            distinct = int(source[name].nunique(dropna=False))
            if policy.l > distinct:
                position = [c.name for c in roles.columns].index(name) + 1  # in the input file
                raise SpecError(f"spec privacy.l: {policy.l} is more than the {distinct:,} distinct value"
                                f"{'s' if distinct != 1 else ''} of the sensitive {column_label(position, name)} "
                                f"in {where}: no class can hold {policy.l}; lower privacy.l to {distinct:,} or less")


def enforce_utility(report: UtilityReport) -> UtilityReport:
    """Raise :class:`ReleaseRejected` naming every failed utility gate."""
    if report.failed:
        raise ReleaseRejected(f"utility gate failed: {describe_failed(report.failed)}",
                              [g.name for g in report.failed])
    return report


def enforce_series(report: SeriesReport) -> SeriesReport:
    """Raise :class:`ppdp.tasks.series.SeriesError` (exit 3, nothing published) when the release, judged with the
    dataset's earlier releases, breaks a composed figure or the DP budget: one line naming the earlier release and
    the figure."""
    line = series_refusal(report)
    if line is not None:
        raise SeriesError(line, ["series"])
    return report
