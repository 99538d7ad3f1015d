"""l-diversity, in its three variants: distinct, entropy and recursive (c,l) (ARX ``DistinctLDiversity``,
``EntropyLDiversity``, ``RecursiveCLDiversity``)."""

from __future__ import annotations

import math
from typing import Any, Literal

from ppdp.schemas.criteria.base import CLASS_UNITS, Criterion, Judge, optional, variant
from ppdp.schemas.reports import Claim


class LDiversity(Criterion):
    key = "l"
    thresholds = (
        optional("l", int, "l-diversity: minimum diversity of sensitive values per class",
                 "Gate: l-diversity, the least diversity of sensitive values in a class (see --l-variant).", ge=2),
        variant("l_variant", Literal["distinct", "entropy", "recursive"], "distinct", "the l-diversity the gate l "
                "checks: distinct (distinct sensitive values per class), entropy (exp of the class entropy of the "
                "sensitive values) or recursive ((c,l)-diversity, needs c)",
                "The l-diversity the gate --l checks: distinct, entropy or recursive."),
        optional("c", float, "recursive (c,l)-diversity: the constant c", "Recursive (c,l)-diversity: the constant c.",
                 gt=0),
    )
    units = CLASS_UNITS  # an l of 1 is refused by its field (at least 2)
    sensitive = "l-diversity"

    def settings_error(self, policy: Any) -> str | None:
        if policy.l is not None and policy.l_variant == "recursive" and policy.c is None:
            return "privacy.c is required for l_variant: recursive"
        return None

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        if "l" not in judge.judged:
            return []
        m = judge.report.measures
        if policy.l_variant == "distinct":
            return judge.gate(self, "l", f"fewest distinct sensitive values {judge.per_class}", policy.l,
                              m.l_diversity if m is not None else None, True, judge.where("l_diversity"))
        if policy.l_variant == "entropy":  # exp(entropy) of a balanced class of l values is l - 2e-16
            return judge.gate(self, "l (entropy)", f"smallest exp(entropy) of sensitive values {judge.per_class}",
                              policy.l, m.entropy_l_value if m is not None else None, True,
                              judge.where("entropy_l_diversity_value"), tolerance=1e-9)
        return [self._recursive(judge, policy)]

    def _recursive(self, judge: Judge, policy: Any) -> Claim:
        assert policy.c is not None  # the policy requires c for l_variant recursive (settings_error)
        rec = judge.report.recursive
        ratio = None if rec is None or not math.isfinite(rec[0]) else rec[0]
        applies = judge.unit in self.units
        ok = applies and ratio is not None and ratio < float(policy.c)
        worst = None if rec is None or rec[1] is None else f"{judge.label} #{rec[1]}, attribute '{rec[2]}'"
        if ratio is None and applies:
            worst = (worst or "") + " has fewer than l distinct values"
        return Claim(name=f"(c,l) recursive l={policy.l}", measure=f"largest r1 / (r_l + ... + r_m) {judge.per_class}",
                     unit=judge.unit, value=ratio, threshold=float(policy.c), comparison="<", passed=bool(ok),
                     worst=worst)
