"""The record-level criteria of generated and perturbed releases: linkage risk (nearest published row), distance to
closest record (DCR) and paper 004's value difference."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ppdp.schemas.criteria.base import Criterion, Judge, Threshold, distance_floor, share
from ppdp.schemas.criteria.floor import REIDENTIFICATION_THRESHOLD, REIDENTIFICATION_THRESHOLD_SOURCE, FloorRule
from ppdp.schemas.reports import Claim


class MaxLinkageRisk(Criterion):
    key = "max_linkage_risk"
    thresholds = (share(key, "generating_group and record units: max share of original records whose nearest "
                        "published record (over the columns the attacker's view counts as known: quasi-identifiers "
                        "and every column published beside them, standardized) stands for them (record) or came from "
                        "their own group (generating_group)"),)
    units = ("generating_group", "record")
    from_counts = False
    floor = (FloorRule(
        key="linkage_risk",
        figure=("linkage risk: share of input records an attacker links to the published row that stands for them by "
                "taking, for each record, the published row nearest to it over every column the attacker's view "
                "counts as known (the quasi-identifiers as published and every column published beside them, "
                "standardized), an average re-identification probability"),
        applies=("records",), limit=REIDENTIFICATION_THRESHOLD, recheck="original",
        source=(f"{REIDENTIFICATION_THRESHOLD_SOURCE}; ppdp applies it to the share of records this "
                "nearest-row attack links correctly, the same "
                "average re-identification probability the "
                "average-risk row bounds for classes and groups"),
    ),)
    never_above = "a share or risk"

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        if judge.kind.compares_records:
            link = ("share of original records whose nearest published record (standardized known columns: "
                    "quasi-identifiers and every column published beside them) stands for them")
        else:
            link = ("share of original records whose nearest published record (standardized known columns) came "
                    "from their own group")
        over = f"nearest published row over {judge.known}, standardized" if judge.known is not None else None
        return judge.gate(self, self.key, link, policy.max_linkage_risk, judge.report.linkage_risk, False, over,
                          recheck="original")


class MinDcr(Criterion):
    key = "min_dcr"
    thresholds = (
        Threshold(key, float | None, Field(
            None, ge=0, description="generating_group and record units: the dcr_quantile of the distance from each "
                                    "original record to its closest published record (over the standardized known "
                                    "columns: quasi-identifiers and every column published beside them) "
                                    "must reach this")),
        Threshold("dcr_quantile", float, Field(0.05, gt=0, lt=1, description="the quantile min_dcr applies to")),
    )
    units = ("generating_group", "record")
    from_counts = False
    vacuous = distance_floor

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        return judge.gate(self, self.key, f"{policy.dcr_quantile:g} quantile of the distance from each original record "
                          "to its closest published record (standardized known columns)", policy.min_dcr,
                          judge.report.dcr_quantile, True, None, recheck="original")


class MinVd(Criterion):
    key = "min_vd"
    thresholds = (Threshold(key, float | None, Field(
        None, ge=0, description="record unit: paper 004's value difference ||A - A'||_F / ||A||_F over the numeric "
                                "attributes must reach this")),)
    units = ("record",)
    from_counts = False
    vacuous = distance_floor

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        p = judge.report.perturbation
        return judge.gate(self, self.key, "paper 004's value difference ||A - A'||_F / ||A||_F over the numeric "
                          "attributes", policy.min_vd, p.vd if p else None, True, None, recheck="original")
