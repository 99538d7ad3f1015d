"""(epsilon, delta)-differential privacy as the mechanism was built (ARX ``EDDifferentialPrivacy``): the policy
bounds the epsilon and delta it may spend."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from ppdp.schemas.criteria.base import Criterion, Judge, Threshold
from ppdp.schemas.criteria.floor import FloorRule
from ppdp.schemas.reports import Claim


class MechanismBound(Criterion):
    """A bound on what the release's mechanism spends, as it was built (:class:`ppdp.schemas.reports.
    DifferentialPrivacy`): ``figure`` names it, ``wording`` words its claim."""

    figure: ClassVar[str]
    wording: ClassVar[str]
    units = ("differential_privacy",)
    from_counts = False

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        dp = judge.report.dp
        return judge.gate(self, self.key, self.wording, getattr(policy, self.key),
                          getattr(dp, self.figure) if dp is not None else None, False, None, recheck="construction")


class MaxEpsilon(MechanismBound):
    key = "max_epsilon"
    thresholds = (Threshold(key, float | None, Field(
        None, gt=0, description="differential_privacy unit: the largest epsilon the release's mechanism may spend "
                                "((epsilon, delta)-differential privacy for one row added or removed, by "
                                "construction)")),)
    floor = (FloorRule(
        key="epsilon",
        figure=("epsilon of the mechanism's (epsilon, delta)-differential privacy, for one row added or removed (by "
                "construction)"),
        applies=("differential_privacy",), limit=10.0, recheck="construction",
        source=("ppdp's choice: at epsilon 10 whether one person's row was in the input may change the odds of any "
                "published table by a factor up to e^10 (about 22,000); beyond it the bound hardly constrains (the "
                "dataset's DP releases together are bounded by privacy.budget)"),
    ),)
    figure = "epsilon"
    wording = ("epsilon of the mechanism's (epsilon, delta)-differential privacy, for one row added or removed (by "
               "construction)")


class MaxDelta(MechanismBound):
    key = "max_delta"
    thresholds = (Threshold(key, float | None, Field(
        None, ge=0, lt=1, description="differential_privacy unit: the largest delta the release's mechanism may "
                                      "spend")),)
    floor = (FloorRule(
        key="delta",
        figure=("delta of the mechanism's (epsilon, delta)-differential privacy (by construction)"),
        applies=("differential_privacy",), limit=1e-06, recheck="construction",
        source=("ppdp's choice, after Dwork and Roth, The Algorithmic Foundations of Differential Privacy (2014), "
                "section 2.3: delta must be well below 1/n, since publishing each record whole with probability "
                "delta is (0, delta)-DP; 1e-6 keeps n x delta, the records such a mechanism would publish, at 0.03 "
                "on the 30,000-row Adult and 1 at a million rows"),
    ),)
    figure = "delta"
    wording = "delta of the mechanism's (epsilon, delta)-differential privacy (by construction)"
