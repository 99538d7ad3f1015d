"""Attribute disclosure above the baseline: what an attacker holding the quasi-identifiers learns of a protected
value, beyond the best constant guess."""

from __future__ import annotations

from typing import Any

from ppdp.schemas.criteria.base import Criterion, Judge, share
from ppdp.schemas.criteria.floor import FloorRule
from ppdp.schemas.reports import Claim


class MaxDisclosureGain(Criterion):
    key = "max_disclosure_gain"
    thresholds = (share(key, "every unit: the attacker's attribute disclosure (share of published records whose "
                        "sensitive value an attacker holding their quasi-identifiers learns: exactly for categories, "
                        "within the stated tolerance for numbers) may exceed the best constant guess by at most this "
                        "(0 to 1); measured where a published row stands for an input record"),)
    units = ("equivalence_class", "generating_group", "record")
    from_counts = False
    floor = (FloorRule(
        key="disclosure_gain",
        figure=("attribute disclosure above the baseline: share of published records whose protected value an "
                "attacker holding their quasi-identifiers learns (exactly for categories, within the tolerance for "
                "numbers), minus the share the best constant guess gets right"),
        applies=("attribute",), limit=0.05, recheck="original",
        source=("ppdp's choice: at most 5 points above guessing without the release"),
    ),)
    never_above = "a share or risk"

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        view = judge.report.attacker_view
        gain = view.disclosure_gain if view is not None else None
        worst = max(view.disclosure, key=lambda d: d.gain) if view is not None and view.disclosure else None
        published = worst is not None and view is not None and all(d.recheck == "published" for d in view.disclosure)
        return judge.gate(self, self.key, "attribute disclosure above the best constant guess (share of published "
                          "records whose protected value an attacker holding their quasi-identifiers learns, minus the "
                          "baseline), largest over the protected columns", policy.max_disclosure_gain, gain, False,
                          None if worst is None else f"attribute '{worst.column}'",
                          recheck="published" if published else "original")
