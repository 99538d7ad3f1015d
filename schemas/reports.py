"""Reports each step returns. They hold counts, sizes, rates and column names; never a data value."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ppdp.schemas.spec import ColumnKind, Role


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- ingest ------------------------------------------------------------------------------------------
class ExpectationOutcome(Report):
    """One Great Expectations result, reduced to counts (GX's own results may carry raw values)."""

    expectation: str
    column: str | None = None
    success: bool
    unexpected_count: int | None = None
    element_count: int | None = None
    observed: float | None = Field(None, description="an aggregate (a size or count), only for ppdp's own "
                                                     "expectations and table row/column counts")


class IngestReport(Report):
    path: str
    format: Literal["csv", "parquet"]
    rows: int
    columns: list[str]
    input_sha256: str
    suite: str
    expectation_count: int
    expectations: list[ExpectationOutcome]

    @property
    def failed(self) -> list[ExpectationOutcome]:
        return [e for e in self.expectations if not e.success]


# -- tag ---------------------------------------------------------------------------------------------
class ColumnTag(Report):
    name: str
    role: Role
    kind: ColumnKind
    source: Literal["declared", "auto"]
    reason: str
    order: list[str] | None = Field(None, description="declared category order of an ordinal column")


class Roles(Report):
    """The role of every input column, with the reason it was given."""

    columns: list[ColumnTag]

    def names(self, role: Role) -> list[str]:
        return [c.name for c in self.columns if c.role is role]

    def get(self, name: str) -> ColumnTag:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def quasi_identifiers(self) -> list[str]:
        return self.names(Role.quasi_identifier)

    @property
    def class_column(self) -> str | None:
        names = self.names(Role.class_)
        return names[0] if names else None

    @property
    def identifiers(self) -> list[str]:
        return self.names(Role.identifier)

    def kinds(self) -> dict[str, ColumnKind]:
        return {c.name: c.kind for c in self.columns}

    def orders(self) -> dict[str, list[str]]:
        return {c.name: c.order for c in self.columns if c.order}

    @property
    def attributes(self) -> list[str]:
        """Published columns other than identifiers and the class: what sanitizers transform."""
        return [c.name for c in self.columns if c.role not in (Role.identifier, Role.class_)]


# -- tune --------------------------------------------------------------------------------------------
class Evaluation(Report):
    """One group size tried by the tuner: privacy and utility measured on the held-out part."""

    k: int
    privacy: float | None = Field(None, description="confidence-interval privacy (paper 000), mean of runs")
    accuracy: float
    per_class: dict[str, float]
    runs: int
    seconds: float


class TuningTrace(Report):
    strategy: Literal["none", "approximate_gcd", "rule_based", "brute_force"]
    parameter: str = "k"
    threshold: int | None = None
    accuracy_gap: float | None = None
    class_sizes: dict[str, int] = Field(default_factory=dict)
    approximate_gcd: int | None = None
    candidates: int = Field(0, description="group sizes the strategy considered")
    evaluations: list[Evaluation] = Field(default_factory=list)
    chosen: int
    rule: str = Field(..., description="why this value was chosen")
    seconds: float = 0.0


# -- sanitize ----------------------------------------------------------------------------------------
class MethodRecord(Report):
    """The method as it actually ran: every parameter, the tuned one included."""

    name: str
    variant: str | None
    params: dict[str, int | float | str | bool | None]
    release_kind: Literal["synthetic", "generalized"]
    groups: int
    seconds: float


# -- privacy -----------------------------------------------------------------------------------------
class GateResult(Report):
    name: str
    threshold: float
    value: float | None
    passed: bool
    worst: str | None = Field(None, description="which group, class or attribute is worst (never a value)")


class AnonymityMeasures(Report):
    """The models pyCANON computes, named and shaped as pyCANON's functions return them, over the equivalence
    classes (synthetic releases: the generating groups) and every sensitive attribute (the worst counts)."""

    k_anonymity: int
    alpha_k_anonymity: tuple[float | None, int] | None = None
    l_diversity: int | None = None
    entropy_l_diversity: int | None = None
    recursive_c_l_diversity: tuple[float | None, int] | None = Field(
        None, description="(c, l); c is null where pyCANON returns NaN (l = 1)")
    t_closeness: float | None = None
    delta_disclosure: float | None = None
    basic_beta_likeness: float | None = None
    enhanced_beta_likeness: float | None = None
    entropy_l_value: float | None = Field(None, description="exp(min entropy) before pyCANON's int truncation")
    hierarchical_t_closeness: float | None = Field(None, description="t with hierarchical-distance EMD, "
                                                                     "when a hierarchy is given")


class RiskMeasures(Report):
    """Re-identification risk (ARX's attacker models) over the equivalence classes."""

    prosecutor_max: float
    prosecutor_average: float
    records_at_risk: float
    risk_threshold: float
    journalist_max: float | None = None
    journalist_average: float | None = None
    marketer: float
    sample_uniques: float


class SyntheticMeasures(Report):
    """For releases whose records are synthetic or perturbed (not generalized copies)."""

    linkage_risk: float | None = Field(None, description="share of original records whose nearest released "
                                                         "record came from their own group")
    dcr_quantiles: dict[str, float] = Field(default_factory=dict, description="distance to closest record")
    dcr_exact_matches: float | None = Field(None, description="share of original records released unchanged")
    confidence_interval_privacy: float | None = Field(None, description="paper 000: 95% interval width / range")


class PerturbationMeasures(Report):
    """Paper 004, section 3.2: original vs released values, rows aligned (larger VD/RP/CP, smaller RK/CK =
    more privacy)."""

    vd: float
    rp: float
    rk: float
    cp: float
    ck: float


class QueryAttack(Report):
    """Paper 002, section 4.2: random queries over quasi-identifier values an attacker may know."""

    queries: int
    stop_after: int
    reidentification_mean: float
    reidentification_median: float
    reidentification_q1: float
    reidentification_q3: float
    reidentification_max: float
    sensitive_association_mean: float | None = None
    sensitive_association_max: float | None = None


class PrivacyReport(Report):
    model: Literal["synthetic_groups", "equivalence_classes"] = Field(
        ...,
        description="synthetic_groups: k is the smallest group records were generated from; "
        "equivalence_classes: k is the smallest set of published rows sharing all QI values",
    )
    k: int
    quasi_identifiers: list[str]
    sensitive_attributes: list[str] = Field(default_factory=list)
    records: int
    groups: int
    mean_group_size: float
    linkage_risk: float | None = Field(
        None, description="share of training records whose nearest published record came from their own group"
    )
    measures: AnonymityMeasures | None = None
    risk: RiskMeasures | None = None
    synthetic: SyntheticMeasures | None = None
    perturbation: PerturbationMeasures | None = None
    attacker: QueryAttack | None = None
    gates: list[GateResult] = Field(default_factory=list)
    # where each measure is worst, for the gates (class numbers and attribute names; never serialized)
    _details: dict = PrivateAttr(default_factory=dict)
    _recursive: tuple | None = PrivateAttr(default=None)

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> list[GateResult]:
        return [g for g in self.gates if not g.passed]


# -- utility -----------------------------------------------------------------------------------------
class ClassAccuracy(Report):
    label: str
    support: int
    sanitized: float
    original: float


class UtilityReport(Report):
    classifier: str
    train_rows: int
    test_rows: int
    accuracy: float = Field(..., description="trained on the release, tested on held-out original rows")
    accuracy_original: float = Field(..., description="the same classifier trained on the original training rows")
    ratio: float | None
    per_class: list[ClassAccuracy]
    mean_shift: float = Field(
        ..., description="information loss: mean over encoded attributes of |mean(release) - mean(original)| / sd"
    )
    correlation_loss: float = Field(
        ..., description="information loss: mean absolute difference of pairwise attribute correlations"
    )
    gates: list[GateResult] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> list[GateResult]:
        return [g for g in self.gates if not g.passed]
