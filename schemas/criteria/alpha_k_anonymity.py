"""(alpha,k)-anonymity: no sensitive value holds more than a share alpha of a class."""

from __future__ import annotations

from typing import Any

from ppdp.schemas.criteria.base import CLASS_UNITS, Criterion, Judge, share
from ppdp.schemas.reports import Claim


class AlphaKAnonymity(Criterion):
    key = "alpha"
    thresholds = (share("alpha", "(alpha,k)-anonymity: max share of one sensitive value in a class",
                        "Gate: (alpha,k)-anonymity, the largest share of one sensitive value in a class.",
                        above_zero=True),)
    units = CLASS_UNITS
    sensitive = "alpha-k-anonymity"
    never_above = "a share"


    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        m = judge.report.measures
        value = m.alpha_k_anonymity[0] if m is not None and m.alpha_k_anonymity else None
        return judge.gate(self, "alpha", f"largest share of one sensitive value {judge.per_class}", policy.alpha,
                          value, False, judge.where("alpha_k_anonymity"))
