"""Deciding: a failed privacy or utility gate stops the release (nothing is published)."""

from __future__ import annotations

from ppdp.schemas.reports import PrivacyReport, UtilityReport
from ppdp.schemas.series import SeriesReport
from ppdp.tasks.core.errors import ReleaseRejected
from ppdp.tasks.privacy.attacker import describe_floor_claim
from ppdp.tasks.privacy.measure import describe_failed


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
    if not floor.publishable:
        raise ReleaseRejected(f"safety floor failed: {'; '.join(describe_floor_claim(c) for c in floor.failed)} "
                              "(privacy.accept_below_floor publishes below it on purpose)",
                              [c.name for c in floor.failed])
    return report


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
    from ppdp.tasks.privacy.series import series_refusal
    from ppdp.tasks.series import SeriesError

    line = series_refusal(report)
    if line is not None:
        raise SeriesError(line, ["series"])
    return report
