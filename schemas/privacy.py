"""The privacy policy: every gate a release can be held to, and the privacy units each gate applies to.

Kept apart from :mod:`ppdp.schemas.spec` (whose method union imports every sanitizer) so that measuring and
validating import no method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from ppdp.schemas.base import StrictModel
from ppdp.schemas.methods import Unit


class PrivacyThresholds(StrictModel):
    """Privacy thresholds, every one optional (``ppdp validate`` checks only those given).

    Models over equivalence classes (rows sharing all quasi-identifier values; for synthetic releases, the
    groups records were generated from) and the sensitive attributes (every column declared ``sensitive``; with
    several, each is checked and the worst counts). A gate that needs a sensitive attribute when none is
    declared is a spec error, not a pass.
    """

    k: int | None = Field(None, ge=2, description="k-anonymity: minimum equivalence class (or generating group) size")
    alpha: float | None = Field(None, gt=0, le=1, description="(alpha,k)-anonymity: max share of one sensitive "
                                                             "value in a class")
    l: int | None = Field(None, ge=2, description="l-diversity: minimum diversity of sensitive values per class")
    l_variant: Literal["distinct", "entropy", "recursive"] = Field(
        "distinct", description="the l-diversity the gate l checks: distinct (distinct sensitive values per class), "
        "entropy (exp of the class entropy of the sensitive values) or recursive ((c,l)-diversity, needs c)")
    c: float | None = Field(None, gt=0, description="recursive (c,l)-diversity: the constant c")
    t: float | None = Field(None, ge=0, le=1, description="t-closeness: max EMD between a class and the table")
    delta: float | None = Field(None, gt=0, description="delta-disclosure privacy: max |log(p_class / p_table)|")
    beta: float | None = Field(None, gt=0, description="beta-likeness: max relative gain of a sensitive value")
    beta_variant: Literal["basic", "enhanced"] = Field(
        "enhanced", description="the beta-likeness the gate beta checks: basic (relative gain (p_class - p_table) / "
        "p_table) or enhanced (that gain capped at -ln p_table)")
    hierarchies: dict[str, Path] = Field(
        default_factory=dict,
        description="sensitive column -> generalization hierarchy CSV (ARX format, ';'), for hierarchical "
                    "t-closeness",
    )
    max_prosecutor_risk: float | None = Field(None, gt=0, le=1, description="highest 1/|class| over records")
    max_average_risk: float | None = Field(None, gt=0, le=1, description="average 1/|class| over records")
    max_records_at_risk: float | None = Field(None, ge=0, le=1,
                                              description="share of records whose risk exceeds risk_threshold")
    risk_threshold: float = Field(0.2, gt=0, le=1, description="record risk (1/|class|) above which a record counts "
                                                               "as at risk, for max_records_at_risk")
    max_marketer_risk: float | None = Field(None, ge=0, le=1, description="classes / records")
    max_sample_uniques: float | None = Field(None, ge=0, le=1, description="share of records alone in a class")
    max_journalist_risk: float | None = Field(None, gt=0, le=1,
                                              description="highest 1/|population class| (needs population)")
    population: Path | None = Field(None, description="population table (CSV/Parquet) for journalist risk")
    max_linkage_risk: float | None = Field(
        None, ge=0, le=1,
        description="generating_group and record units: max share of original records whose nearest published "
                    "record stands for them (record) or came from their own group (generating_group)",
    )
    min_dcr: float | None = Field(
        None, ge=0, description="generating_group and record units: the dcr_quantile of the distance from each "
                                "original record to its closest published record (standardized quasi-identifiers) "
                                "must reach this")
    dcr_quantile: float = Field(0.05, gt=0, lt=1, description="the quantile min_dcr applies to")
    min_vd: float | None = Field(
        None, ge=0, description="record unit: paper 004's value difference ||A - A'||_F / ||A||_F over the numeric "
                                "attributes must reach this")

    @model_validator(mode="after")
    def _variants(self) -> PrivacyThresholds:
        if self.l is not None and self.l_variant == "recursive" and self.c is None:
            raise ValueError("privacy.c is required for l_variant: recursive")
        if self.max_journalist_risk is not None and self.population is None:
            raise ValueError("privacy.max_journalist_risk needs privacy.population (a population table)")
        return self

    def sensitive_gates(self) -> list[str]:
        """The gates that need a sensitive attribute."""
        return [name for name in ("alpha", "l", "t", "delta", "beta") if getattr(self, name) is not None]


class PrivacyPolicy(PrivacyThresholds):
    """Gates every release must pass. Which gates apply depends on the method's privacy unit (see
    :data:`ppdp.schemas.spec.GATE_UNITS`): a gate that does not apply is a spec error, and at least one that
    applies must be set (fail closed). A failed gate stops the release; nothing is published."""


GATE_UNITS: dict[str, tuple[Unit, ...]] = {
    "k": ("equivalence_class", "generating_group"),
    "alpha": ("equivalence_class", "generating_group"),
    "l": ("equivalence_class", "generating_group"),
    "t": ("equivalence_class", "generating_group"),
    "delta": ("equivalence_class", "generating_group"),
    "beta": ("equivalence_class", "generating_group"),
    "max_prosecutor_risk": ("equivalence_class", "generating_group"),
    "max_average_risk": ("equivalence_class", "generating_group"),
    "max_records_at_risk": ("equivalence_class", "generating_group"),
    "max_marketer_risk": ("equivalence_class", "generating_group"),
    "max_sample_uniques": ("equivalence_class", "generating_group"),
    "max_journalist_risk": ("equivalence_class",),
    "max_linkage_risk": ("generating_group", "record"),
    "min_dcr": ("generating_group", "record"),
    "min_vd": ("record",),
}
"""Each privacy gate (a ``privacy`` key) and the privacy units it applies to."""


def gates_set(policy: PrivacyThresholds) -> list[str]:
    """The gates a policy sets, in table order."""
    return [name for name in GATE_UNITS if getattr(policy, name) is not None]
