"""The rerun check of the release flows (:mod:`ppdp.tasks.rerun`): right after the input is read and hashed, a run
whose input, spec and code are those of the dataset's latest release stops, publishing nothing, and the flow
returns a :class:`~ppdp.schemas.manifest.ReleaseResult` of status ``unchanged`` (no audit entry, no series
judgement, no budget). Used by :func:`ppdp.flows.release.release_flow` and its partitioned path; this file only
wires.
"""

from __future__ import annotations

from ppdp.flows.steps import STEPS, step
from ppdp.schemas.manifest import ReleaseResult
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks import rerun
from ppdp.tasks.private_record import withholds

check_rerun = step(rerun.check_rerun, "check-unchanged", lambda p: p["spec"].dataset)


class Unchanged(Exception):
    """Raised in the flow (never by a task) when the run repeats the dataset's latest release; carries the
    flow's result."""

    def __init__(self, result: ReleaseResult):
        super().__init__(result.reason)
        self.result = result


def unchanged_result(check: rerun.RerunCheck) -> ReleaseResult:
    """The flow's result for a run that repeats the latest release ``check.since``: nothing published."""
    folder = check.folder
    report = folder / "report.html" if folder is not None else None
    return ReleaseResult(release_id=check.since or "", status="unchanged", reason=check.why,
                         folder=None if folder is None else str(folder), unit=check.unit,
                         report=str(report) if report is not None and report.is_file() else None)


def stop_if_unchanged(spec: ReleaseSpec, spec_hash: str, report, logger) -> None:
    """The rerun check (a task) on the input just read; raise :class:`Unchanged` when there is nothing to
    publish, else log why the run goes on."""
    check = check_rerun(spec, spec_hash, report.private_sha256)
    if check.unchanged:
        logger.info("[2/%d] %s: nothing published (ppdp run --force publishes anyway)", STEPS, check.why)
        raise Unchanged(unchanged_result(check))
    # a differential_privacy input: that the input changed is not logged (Prefect's database keeps the logs)
    logger.info("[2/%d] rerun check: %s; publishing", STEPS, "not a rerun of the latest release"
                if withholds(spec.method.unit) and "input" in check.why else check.why)


