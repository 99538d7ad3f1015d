"""t-closeness, with the equal/ordered ground distance or, given a hierarchy of the sensitive attribute, the
hierarchical one (ARX ``EqualDistanceTCloseness``, ``OrderedDistanceTCloseness``,
``HierarchicalDistanceTCloseness``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from ppdp.schemas.criteria.base import CLASS_UNITS, Criterion, Judge, Threshold, share
from ppdp.schemas.reports import Claim


class TCloseness(Criterion):
    key = "t"
    thresholds = (
        share("t", "t-closeness: max EMD between a class and the table", "Gate: t-closeness, the largest distance "
              "(EMD) between a class's sensitive values and the table's."),
        Threshold("hierarchies", dict[str, Path], Field(
            default_factory=dict, description="sensitive column -> generalization hierarchy CSV (ARX format, ';'), for "
                                              "hierarchical t-closeness"), after="beta_variant"),
    )
    units = CLASS_UNITS
    sensitive = "t-closeness"
    never_above = "an Earth Mover's Distance"


    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        m = judge.report.measures
        value, name = None, "t_closeness"
        if m is not None:
            value = m.hierarchical_t_closeness if m.hierarchical_t_closeness is not None else m.t_closeness
            name = "hierarchical_t_closeness" if m.hierarchical_t_closeness is not None else "t_closeness"
        return judge.gate(self, "t", f"largest EMD between a {judge.label} and the table", policy.t, value, False,
                          judge.where(name))
