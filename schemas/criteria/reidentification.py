"""Re-identification risk over the classes (ARX's risk-based criteria: ``AverageReidentificationRisk``,
``SampleUniqueness``, ``PopulationUniqueness``...): prosecutor (highest, average, records at risk), marketer, sample
uniques, and the journalist risk against a population table."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from ppdp.schemas.criteria.base import (
    CLASS_UNITS,
    Criterion,
    Judge,
    Threshold,
    needs_population,
    never_above_one,
    share,
)
from ppdp.schemas.criteria.floor import REIDENTIFICATION_THRESHOLD, REIDENTIFICATION_THRESHOLD_SOURCE, FloorRule
from ppdp.schemas.reports import Claim


class RiskBound(Criterion):
    """A bound on one figure of the report's re-identification risk (:class:`ppdp.schemas.reports.RiskMeasures`):
    ``figure`` names it, ``wording`` words its claim (``{label}``: what one class of the unit is called)."""

    figure: ClassVar[str]
    wording: ClassVar[str]
    units = CLASS_UNITS
    never_above = "a share or risk"

    def worst(self, judge: Judge, policy: Any) -> str | None:
        """Where the figure is worst, in words (None: nowhere in particular)."""
        return None

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        r = judge.report.risk
        return judge.gate(self, self.key, self.wording.format(label=judge.label, policy=policy),
                          getattr(policy, self.key), getattr(r, self.figure) if r else None, False,
                          self.worst(judge, policy))


class MaxProsecutorRisk(RiskBound):
    key = "max_prosecutor_risk"
    thresholds = (share(key, "highest 1/|class| over records",
                        "Gate: the highest prosecutor risk of a record (1 / its class size).", above_zero=True),)
    figure, wording = "prosecutor_max", "highest 1/|{label}|"
    least_over_rows = True

    def worst(self, judge: Judge, policy: Any) -> str | None:
        return judge.where("k_anonymity")


class MaxAverageRisk(RiskBound):
    key = "max_average_risk"
    thresholds = (share(key, "average 1/|class| over records", "Gate: the average prosecutor risk over the records.",
                        above_zero=True),)
    figure, wording = "prosecutor_average", "average 1/|{label}| over records"
    least_over_rows = True
    floor = (FloorRule(
        key="average_risk",
        figure=("average re-identification risk: mean over published records of 1 / |class| (equivalence classes "
                "over the published quasi-identifiers as the attacker sees them; generating groups)"),
        applies=("classes", "groups"), limit=REIDENTIFICATION_THRESHOLD,
        source=(f"{REIDENTIFICATION_THRESHOLD_SOURCE}; ppdp applies it to the average risk (a mean class "
                "size of about 11)"),
    ),)


class MaxRecordsAtRisk(RiskBound):
    key = "max_records_at_risk"
    thresholds = (
        share(key, "share of records whose risk exceeds risk_threshold",
              "Gate: the share of records whose risk exceeds --risk-threshold."),
        Threshold("risk_threshold", float, Field(0.2, gt=0, le=1, description="record risk (1/|class|) above which a "
                                                 "record counts as at risk, for max_records_at_risk"),
                  option="The record risk (1 / class size) above which a record counts as at risk, for "
                         "--max-records-at-risk."),
    )
    figure, wording = "records_at_risk", "share of records whose 1/|{label}| exceeds {policy.risk_threshold:g}"

    def vacuous(self, policy: Any) -> list[str]:
        out = never_above_one(self, policy, self.never_above)
        if policy.max_records_at_risk is not None and policy.risk_threshold >= 1:
            out.append(f"max_records_at_risk with risk_threshold = {policy.risk_threshold:g} can never fail (no "
                       "record's risk is above 1)")
        return out

    def worst(self, judge: Judge, policy: Any) -> str | None:
        return f"risk above {policy.risk_threshold:g}"


class MaxMarketerRisk(RiskBound):
    key = "max_marketer_risk"
    thresholds = (share(key, "classes / records", "Gate: the marketer risk (classes / records)."),)
    figure, wording = "marketer", "{label}s / records"
    least_over_rows = True
    counts_population = True  # with a population: the mean over records of 1 / |population class|


class MaxSampleUniques(RiskBound):
    key = "max_sample_uniques"
    thresholds = (share(key, "share of records alone in a class", "Gate: the share of records alone in their class."),)
    figure, wording = "sample_uniques", "share of records alone in their {label}"


class MaxJournalistRisk(RiskBound):
    key = "max_journalist_risk"
    thresholds = (
        share(key, "highest 1/|population class| (needs population)", "Gate: the highest journalist risk of a "
              "record (1 / its class size in the population); needs --population.", above_zero=True),
        Threshold("population", Path | None, Field(None, description="population table (CSV/Parquet) for journalist "
                                                   "risk")),
    )
    figure, wording = "journalist_max", "highest 1/|population class|"
    units = ("equivalence_class",)
    from_counts = False
    counts_population = True

    settings_error = needs_population
