"""beta-likeness, basic or enhanced (ARX ``BasicBLikeness``, ``EnhancedBLikeness``): no class raises the share of
a sensitive value by more than a relative gain beta."""

from __future__ import annotations

from typing import Any, Literal

from ppdp.schemas.criteria.base import CLASS_UNITS, Criterion, Judge, optional, variant
from ppdp.schemas.reports import Claim


class BetaLikeness(Criterion):
    key = "beta"
    thresholds = (
        optional("beta", float, "beta-likeness: max relative gain of a sensitive value",
                 "Gate: beta-likeness, the largest relative gain of a sensitive value (see --beta-variant).", gt=0),
        variant("beta_variant", Literal["basic", "enhanced"], "enhanced", "the beta-likeness the gate beta checks: "
                "basic (relative gain (p_class - p_table) / p_table) or enhanced (that gain capped at -ln p_table)",
                "The beta-likeness the gate --beta checks: basic or enhanced."),
    )
    units = CLASS_UNITS
    sensitive = "beta-likeness"

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        m = judge.report.measures
        value = None
        if m is not None:
            value = m.basic_beta_likeness if policy.beta_variant == "basic" else m.enhanced_beta_likeness
        return judge.gate(self, f"beta ({policy.beta_variant})", f"largest relative gain of a sensitive value "
                          f"{judge.per_class}", policy.beta, value, False,
                          judge.where(f"{policy.beta_variant}_beta_likeness"))
