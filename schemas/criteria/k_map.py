"""k-map (Sweeney; ARX ``KMap`` with a research subset): every published class matches at least k records of the
population table, so whoever knows a person is in the population (not whether they are in the release) still faces
k candidates. The population is the table ``privacy.population`` names (the one journalist risk reads), holding the
quasi-identifiers as the release publishes them; like ARX's research subset, the published records are among its
records (a population that does not hold them is refused as input, as for journalist risk)."""

from __future__ import annotations

from typing import Any

from ppdp.schemas.criteria.base import (
    ClassTable,
    Criterion,
    Judge,
    MeasureDetail,
    needs_population,
    optional,
)
from ppdp.schemas.reports import Claim


class KMap(Criterion):
    key = "k_map"
    thresholds = (optional(key, int, "k-map: every published class must match at least this many records of the "
                           "population table (needs population; classes as published)", "Gate: k-map, the fewest "
                           "population records matching a published class; needs --population.", ge=2),)
    units = ("equivalence_class",)
    from_counts = False
    counts_population = True

    settings_error = needs_population

    def measure(self, table: ClassTable, policy: Any) -> MeasureDetail | None:
        if table.population is None or table.sizes.size == 0:
            return None
        missing = [c for c in table.classes if c not in table.population.columns]
        if missing:
            return None  # the population cannot be matched on these classes: not computable, the gate fails
        matches = table.count_in(table.population[table.classes])
        worst = int(matches.argmin())
        return MeasureDetail(int(matches[worst]), worst, None)

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        d = judge.report.details.get(self.key)
        value = float(d.value) if d is not None else None
        return judge.gate(self, self.key, f"fewest population records matching a published {judge.label} (over "
                          f"{judge.classes_over})", policy.k_map, value, True, judge.where(self.key))
