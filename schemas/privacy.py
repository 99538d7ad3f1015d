"""The privacy policy: every gate a release can be held to, and the privacy units each gate applies to.

Kept apart from :mod:`ppdp.schemas.spec` (whose method union imports every sanitizer) so that measuring and
validating import no method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, model_validator

from ppdp.schemas.base import StrictModel
from ppdp.schemas.methods import IdentityBy, Unit
from ppdp.schemas.series import Budget


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
                    "record (over the columns the attacker's view counts as known: quasi-identifiers and every "
                    "column published beside them, standardized) stands for them (record) or came from their own "
                    "group (generating_group)",
    )
    min_dcr: float | None = Field(
        None, ge=0, description="generating_group and record units: the dcr_quantile of the distance from each "
                                "original record to its closest published record (over the standardized known "
                                "columns: quasi-identifiers and every column published beside them) "
                                "must reach this")
    dcr_quantile: float = Field(0.05, gt=0, lt=1, description="the quantile min_dcr applies to")
    min_vd: float | None = Field(
        None, ge=0, description="record unit: paper 004's value difference ||A - A'||_F / ||A||_F over the numeric "
                                "attributes must reach this")
    max_disclosure_gain: float | None = Field(
        None, ge=0, le=1, description="every unit: the attacker's attribute disclosure (share of published records "
        "whose sensitive value an attacker holding their quasi-identifiers learns: exactly for categories, within "
        "the stated tolerance for numbers) may exceed the best constant guess by at most this (0 to 1); measured "
        "where a published row stands for an input record")
    max_epsilon: float | None = Field(
        None, gt=0, description="differential_privacy unit: the largest epsilon the release's mechanism may spend "
                                "((epsilon, delta)-differential privacy for one row added or removed, by "
                                "construction)")
    max_delta: float | None = Field(
        None, ge=0, lt=1, description="differential_privacy unit: the largest delta the release's mechanism may "
                                      "spend")

    @model_validator(mode="after")
    def _variants(self) -> PrivacyThresholds:
        if self.l is not None and self.l_variant == "recursive" and self.c is None:
            raise ValueError("privacy.c is required for l_variant: recursive")
        if self.max_journalist_risk is not None and self.population is None:
            raise ValueError("privacy.max_journalist_risk needs privacy.population (a population table)")
        return self

    def vacuous_gates(self) -> list[str]:
        """The gates set to a threshold that no table can fail, each as ``key value: why``."""
        out = []
        bounds = ("max_prosecutor_risk", "max_average_risk", "max_records_at_risk", "max_marketer_risk",
                  "max_sample_uniques", "max_journalist_risk", "max_linkage_risk", "max_disclosure_gain")
        for key in bounds:
            value = getattr(self, key)
            if value is not None and value >= 1:
                out.append(f"{key} = {value:g} can never fail (a share or risk is never above 1)")
        if self.max_records_at_risk is not None and self.risk_threshold >= 1:
            out.append(f"max_records_at_risk with risk_threshold = {self.risk_threshold:g} can never fail (no record's "
                       "risk is above 1)")
        if self.t is not None and self.t >= 1:
            out.append(f"t = {self.t:g} can never fail (an Earth Mover's Distance is never above 1)")
        if self.alpha is not None and self.alpha >= 1:
            out.append(f"alpha = {self.alpha:g} can never fail (a share is never above 1)")
        for key in ("min_dcr", "min_vd"):
            value = getattr(self, key)
            if value is not None and value <= 0:
                out.append(f"{key} = {value:g} can never fail (a distance is never below 0)")
        return out  # k and l of 1 are refused by their fields (at least 2)

    def sensitive_gates(self) -> list[str]:
        """The gates that need a sensitive attribute."""
        return [name for name in ("alpha", "l", "t", "delta", "beta") if getattr(self, name) is not None]


class AcceptBelowFloor(StrictModel):
    """An owner's decision to publish a release that fails the safety floor: why, and who approved it. Recorded in
    the manifest and the signed audit entry with the floor's figures; the report's header turns red and
    ``ppdp validate --release`` exits with its own code (5)."""

    reason: str = Field(..., min_length=10, max_length=500, pattern=r"\S",
                        description="why this release is published below the safety floor (10 to 500 characters)")
    approved_by: str = Field(..., min_length=2, max_length=120, pattern=r"\S",
                             description="who approved publishing below the floor (a name or role)")


class PrivacyPolicy(PrivacyThresholds):
    """Gates every release must pass. Which gates apply depends on the method's privacy unit (see
    :data:`ppdp.schemas.spec.GATE_UNITS`): a gate that does not apply is a spec error, and at least one that
    applies must be set (fail closed). A failed gate stops the release; nothing is published.

    Under every policy lies the safety floor (:data:`FLOOR`), which no spec can lower; ``accept_below_floor``
    publishes a release that fails it on purpose, with a recorded reason. A gate no release can fail (k or l of
    1, a risk bound of 1, min_dcr or min_vd of 0, t of 1) is refused when a spec is loaded: it is not a policy."""

    budget: Budget | None = Field(
        None, description="differentially private methods: the dataset's privacy-loss budget {epsilon, delta, "
                          "period}; a release that would spend beyond it (basic composition over the dataset's DP "
                          "releases in the series ledger) is refused")
    accept_below_floor: AcceptBelowFloor | None = Field(
        None, description="publish even if the release fails the safety floor: {reason, approved_by}; recorded in the "
                          "manifest, the audit trail and the report (red header)")
    not_applicable: list[str] = Field(
        default_factory=list, description="gates of this policy that do not apply to the method's privacy unit, kept "
        "as written and not judged (privacy.k still sets the rare-value rule); each must be set, and none may apply "
        "to the method's unit. ppdp compare --write-spec lists them when it carries a policy to a method of another "
        "unit; a gate that does not apply and is not listed is a spec error")

    @model_validator(mode="after")
    def _listed_gates(self) -> PrivacyPolicy:
        for name in self.not_applicable:
            if name not in GATE_UNITS:
                raise ValueError(f"privacy.not_applicable: {name!r} is not a gate (gates: {', '.join(GATE_UNITS)})")
            if getattr(self, name) is None:
                raise ValueError(f"privacy.not_applicable: {name} is not set in the policy")
        if len(set(self.not_applicable)) != len(self.not_applicable):
            raise ValueError("privacy.not_applicable: a gate is listed twice")
        return self

    @model_validator(mode="after")
    def _not_vacuous(self, info: ValidationInfo) -> PrivacyPolicy:
        # only when a spec is loaded (ppdp.tasks.spec.load_spec): a published manifest keeps reading as written
        if info.context and info.context.get("release_spec"):
            vacuous = self.vacuous_gates()
            if vacuous:
                raise ValueError(f"{vacuous[0]}: a gate no release can fail is not a policy (remove it, or set a "
                                 "threshold a release could fail)")
        return self


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
    "max_disclosure_gain": ("equivalence_class", "generating_group", "record"),
    "max_epsilon": ("differential_privacy",),
    "max_delta": ("differential_privacy",),
}
"""Each privacy gate (a ``privacy`` key) and the privacy units it applies to."""

TABLE_GATES: dict[str, tuple[str, str | None]] = {
    "k": ("Gate: k-anonymity, the smallest class size.", None),
    "alpha": ("Gate: (alpha,k)-anonymity, the largest share of one sensitive value in a class.", None),
    "l": ("Gate: l-diversity, the least diversity of sensitive values in a class (see --l-variant).", None),
    "l_variant": ("The l-diversity the gate --l checks: distinct, entropy or recursive.", "VARIANT"),
    "c": ("Recursive (c,l)-diversity: the constant c.", None),
    "t": ("Gate: t-closeness, the largest distance (EMD) between a class's sensitive values and the table's.", None),
    "delta": ("Gate: delta-disclosure privacy, the largest |log(p_class / p_table)|.", None),
    "beta": ("Gate: beta-likeness, the largest relative gain of a sensitive value (see --beta-variant).", None),
    "beta_variant": ("The beta-likeness the gate --beta checks: basic or enhanced.", "VARIANT"),
    "max_prosecutor_risk": ("Gate: the highest prosecutor risk of a record (1 / its class size).", None),
    "max_average_risk": ("Gate: the average prosecutor risk over the records.", None),
    "max_records_at_risk": ("Gate: the share of records whose risk exceeds --risk-threshold.", None),
    "risk_threshold": ("The record risk (1 / class size) above which a record counts as at risk, for "
                       "--max-records-at-risk.", None),
    "max_marketer_risk": ("Gate: the marketer risk (classes / records).", None),
    "max_sample_uniques": ("Gate: the share of records alone in their class.", None),
    "max_journalist_risk": ("Gate: the highest journalist risk of a record (1 / its class size in the population); "
                            "needs --population.", None),
}
"""The thresholds of :class:`PrivacyThresholds` that ``ppdp validate`` measures on a table, in the order of its
options: each becomes an option ``--<name with dashes>`` whose type and default are the field's (a Literal as
text) and whose --help text and metavar (None: typer's) are these. A new table gate needs only a field and an
entry here; gates that need a release (linkage, DCR, disclosure gain, epsilon) have none."""


def gates_set(policy: PrivacyThresholds) -> list[str]:
    """The gates a policy sets, in table order."""
    return [name for name in GATE_UNITS if getattr(policy, name) is not None]


def gates_judged(policy: PrivacyThresholds) -> list[str]:
    """The gates a policy sets and judges (those it lists in ``not_applicable`` left out), in table order."""
    listed = set(getattr(policy, "not_applicable", ()))
    return [name for name in gates_set(policy) if name not in listed]


class FloorRule(StrictModel):
    """One row of the safety floor: a figure of the attacker's view, the releases it applies to and its limit."""

    key: str = Field(..., description="the figure's key in the attacker's view")
    figure: str = Field(..., description="what is measured, in words")
    applies: tuple[IdentityBy | Literal["attribute"], ...] = Field(
        ..., description="the releases it applies to: how they hide identities (classes, groups, records), or "
                         "attribute for methods that protect a sensitive value")
    limit: float = Field(..., description="the floor's limit")
    comparison: Literal["<=", ">="] = Field("<=", description="the figure must be <comparison> limit")
    recheck: Literal["published", "original", "construction"] = Field(
        "published", description="re-checked from the published table alone, also needs the original input, or holds "
                                 "by the mechanism's construction (re-checked from the manifest)")
    source: str = Field(..., description="where the number comes from: a cited standard, or ppdp's own choice")


REIDENTIFICATION_THRESHOLD = 0.09
"""The floor's limit on an average re-identification probability (see :data:`REIDENTIFICATION_THRESHOLD_SOURCE`):
the average risk over classes or groups, and the share of records a nearest-row linkage attack links correctly."""

REIDENTIFICATION_THRESHOLD_SOURCE = (
    "0.09: the re-identification probability threshold of the European Medicines Agency's Policy 0070 guidance on "
    "clinical reports and of Health Canada's public release of clinical information")


FLOOR: tuple[FloorRule, ...] = (
    FloorRule(key="records_alone", figure="share of published records alone on the published quasi-identifiers "
              "(as published, with every published column beside them that raises uniqueness counted in)",
              applies=("classes",), limit=0.0,
              source="ppdp's choice: no record is unique in what an attacker can match on (k >= 2 at the least)"),
    FloorRule(key="average_risk", figure="average re-identification risk: mean over published records of "
              "1 / |class| (equivalence classes over the published quasi-identifiers as the attacker sees them; "
              "generating groups)", applies=("classes", "groups"), limit=REIDENTIFICATION_THRESHOLD,
              source=f"{REIDENTIFICATION_THRESHOLD_SOURCE}; ppdp applies it to the average risk (a mean class size "
                     "of about 11)"),
    FloorRule(key="group_alone", figure="share of published rows that are the only row of their generating group",
              applies=("groups",), limit=0.0, source="ppdp's choice: every generated row stands for 2 records or "
                                                      "more"),
    FloorRule(key="exact_copies", figure="share of published rows equal to an input record on every column the "
              "attacker's view counts as known (the quasi-identifiers as published and every column published beside "
              "them; bookkeeping and pseudonyms aside)", applies=("groups", "records"), limit=0.01,
              recheck="original", source="ppdp's choice: at most 1 in 100 published rows is a real record verbatim"),
    FloorRule(key="linkage_risk", figure="linkage risk: share of input records an attacker links to the published "
              "row that stands for them by taking, for each record, the published row nearest to it over every "
              "column the attacker's view counts as known (the quasi-identifiers as published and every column "
              "published beside them, standardized), an average re-identification probability",
              applies=("records",), limit=REIDENTIFICATION_THRESHOLD, recheck="original",
              source=f"{REIDENTIFICATION_THRESHOLD_SOURCE}; ppdp applies it to the share of records this nearest-row "
                     "attack links correctly, the same average re-identification probability the average-risk row "
                     "bounds for classes and groups"),
    FloorRule(key="disclosure_gain", figure="attribute disclosure above the baseline: share of published records "
              "whose protected value an attacker holding their quasi-identifiers learns (exactly for categories, "
              "within the tolerance for numbers), minus the share the best constant guess gets right",
              applies=("attribute",), limit=0.05, recheck="original",
              source="ppdp's choice: at most 5 points above guessing without the release"),
    FloorRule(key="epsilon", figure="epsilon of the mechanism's (epsilon, delta)-differential privacy, for one row "
              "added or removed (by construction)", applies=("differential_privacy",), limit=10.0,
              recheck="construction",
              source="ppdp's choice: at epsilon 10 whether one person's row was in the input may change the odds of "
                     "any published table by a factor up to e^10 (about 22,000); beyond it the bound hardly "
                     "constrains (the dataset's DP releases together are bounded by privacy.budget)"),
    FloorRule(key="delta", figure="delta of the mechanism's (epsilon, delta)-differential privacy (by construction)",
              applies=("differential_privacy",), limit=1e-6, recheck="construction",
              source="ppdp's choice, after Dwork and Roth, The Algorithmic Foundations of Differential Privacy (2014), "
                     "section 2.3: delta must be well below 1/n, since publishing each record whole with probability "
                     "delta is (0, delta)-DP; 1e-6 keeps n x delta, the records such a mechanism would publish, at "
                     "0.03 on the 30,000-row Adult and 1 at a million rows"),
)
"""The safety floor: what every release must pass whatever its spec says (``privacy.accept_below_floor`` publishes
below it on purpose, recorded). Which rows apply follows from what the method protects and how
(:func:`ppdp.schemas.methods.identity_by`)."""

DISCLOSURE_TOLERANCE_SD = 0.1
"""A number counts as learned when the attacker's guess is within this many standard deviations of the true
value (of the value over the published records). sdcMicro's ``dRisk`` matches perturbed values by intervals of a
share of the standard deviation (0.05 by default); ppdp takes 0.1, wider (more conservative): 1.2 hours on a
12-hour spread of weekly hours."""


def floor_rules(applies: str) -> list[FloorRule]:
    """The floor's rows that apply to releases of kind ``applies`` (classes, groups, records, none or attribute)."""
    return [r for r in FLOOR if applies in r.applies]
