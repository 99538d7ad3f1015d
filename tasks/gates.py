"""Deciding: a failed privacy or utility gate stops the release (nothing is published)."""

from __future__ import annotations

from ppdp.schemas.reports import PrivacyReport, UtilityReport
from ppdp.tasks.core.errors import ReleaseRejected
from ppdp.tasks.privacy.measure import describe_failed


def enforce_privacy(report: PrivacyReport) -> PrivacyReport:
    """Raise :class:`ReleaseRejected` naming every failed privacy claim; a report with no claim is refused
    too (fail closed: a release must make at least one privacy claim)."""
    if not report.claims:
        raise ReleaseRejected("privacy: no privacy gate applies to this release (fail closed)", [])
    if report.failed:
        raise ReleaseRejected(f"privacy gate failed: {describe_failed(report.failed)}",
                              [g.name for g in report.failed])
    return report


def enforce_utility(report: UtilityReport) -> UtilityReport:
    """Raise :class:`ReleaseRejected` naming every failed utility gate."""
    if report.failed:
        raise ReleaseRejected(f"utility gate failed: {describe_failed(report.failed)}",
                              [g.name for g in report.failed])
    return report
