"""delta-disclosure privacy (ARX ``DDisclosurePrivacy``): no class's share of a sensitive value departs from the
table's by more than a factor e^delta."""

from __future__ import annotations

from typing import Any

from ppdp.schemas.criteria.base import CLASS_UNITS, Criterion, Judge, optional
from ppdp.schemas.reports import Claim


class DeltaDisclosure(Criterion):
    key = "delta"
    thresholds = (optional("delta", float, "delta-disclosure privacy: max |log(p_class / p_table)|",
                           "Gate: delta-disclosure privacy, the largest |log(p_class / p_table)|.", gt=0),)
    units = CLASS_UNITS
    sensitive = "delta-disclosure"

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        m = judge.report.measures
        return judge.gate(self, "delta", f"largest |log(p_class / p_table)| {judge.per_class}", policy.delta,
                          m.delta_disclosure if m is not None else None, False, judge.where("delta_disclosure"))
