"""k-anonymity (ARX ``KAnonymity``): every class holds at least k records."""

from __future__ import annotations

from typing import Any

from ppdp.schemas.criteria.base import CLASS_UNITS, Criterion, Judge, optional
from ppdp.schemas.reports import Claim


class KAnonymity(Criterion):
    key = "k"
    thresholds = (optional("k", int, "k-anonymity: minimum equivalence class (or generating group) size",
                           "Gate: k-anonymity, the smallest class size.", ge=2),)
    units = CLASS_UNITS  # a k of 1 is refused by its field (at least 2): nothing vacuous to add

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        report = judge.report
        value = float(report.k) if report.k is not None and report.records else None
        return judge.gate(self, "k", f"smallest {judge.label} size (over {judge.classes_over})", policy.k, value,
                          True, judge.where("k_anonymity", f" ({report.k} records)"))
