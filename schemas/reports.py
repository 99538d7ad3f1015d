"""Reports each step returns. They hold counts, sizes, rates and column names; never a data value."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PrivateAttr

from ppdp.schemas.base import ColumnKind, Role


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
    position: int | None = Field(None, ge=0, description="0-based position of the column in the input (set by "
                                                         "tagging)")
    treatment: Literal["dropped", "pseudonymized"] | None = Field(
        None, description="dropped / pseudonymized before sanitizing; None: decided by the sanitizer")


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
        return [c.name for c in self.columns
                if c.role not in (Role.identifier, Role.class_) and c.treatment != "dropped"]

    @property
    def dropped(self) -> list[str]:
        """Columns dropped before sanitizing (identifiers under ``identifiers.action: drop``, and undeclared
        columns that could identify or carry free text): never published."""
        return [c.name for c in self.columns if c.treatment == "dropped"]


# -- rare categories ---------------------------------------------------------------------------------
class RareCategoryColumn(Report):
    """What the rare-value rule did to one categorical column (counts only, never a value)."""

    position: int | None = Field(None, description="0-based position of the column in the input")
    name: str
    action: Literal["merged", "merged_adjacent", "suppressed", "rows_removed"] = Field(
        ..., description="merged: into the token; merged_adjacent: into the nearest frequent category of the "
        "declared order; suppressed: set missing; rows_removed: class column, the rows were left out")
    values_merged: int = Field(..., ge=0, description="distinct values that occurred fewer than k times")
    cells_affected: int = Field(..., ge=0, description="cells changed (rows_removed: rows left out)")
    token: str | None = Field(None, description="the value rare categories were merged into (action merged)")


class RareCategoryReport(Report):
    """The rare-value rule: no published categorical cell holds a value seen fewer than k times in the input."""

    k: int = Field(..., ge=1)
    columns_checked: int = Field(..., ge=0, description="categorical columns the rule was applied to")
    columns: list[RareCategoryColumn] = Field(default_factory=list, description="columns that had rare values")
    rows_in: int = Field(..., ge=0)
    rows_out: int = Field(..., ge=0)

    @property
    def rows_removed(self) -> int:
        return self.rows_in - self.rows_out

    @property
    def cells_affected(self) -> int:
        return sum(c.cells_affected for c in self.columns if c.action != "rows_removed")


# -- tune --------------------------------------------------------------------------------------------
class Evaluation(Report):
    """One value of the tuned parameter: privacy and utility measured on the held-out part."""

    value: float = Field(..., description="the tuned parameter's value")
    privacy: float | None = Field(None, description="the unit's privacy figure (generating_group: paper 000's "
                                                    "confidence-interval privacy; record: DCR quantile; "
                                                    "equivalence_class: k), mean of runs")
    accuracy: float
    per_class: dict[str, float]
    meets_policy: bool | None = Field(None, description="every privacy gate passed (objective "
                                                        "best_utility_meeting_policy only)")
    runs: int
    seconds: float

    @property
    def k(self) -> int:
        """The value as an integer (for integer parameters such as a group size)."""
        return int(round(self.value))


class LatticeSearch(Report):
    """The ``lattice`` strategy's search (full-domain generalization): the chosen node and what it cost."""

    node: dict[str, int] = Field(..., description="the chosen generalization level of each quasi-identifier")
    measure: str = Field(..., description="the utility measure the node is best under (ARX's definitions)")
    measures: dict[str, float] = Field(default_factory=dict, description="every ARX measure of the chosen node")
    checked: int = Field(..., description="nodes whose privacy gates were evaluated on the data")
    visited: int = Field(..., description="nodes the search touched (checked or tagged by monotonicity)")
    total: int = Field(..., description="nodes in the lattice")
    classes: int = Field(..., description="equivalence classes of the chosen node (suppressed records aside)")
    suppressed_rows: int = 0
    seconds: float = 0.0


class TuningTrace(Report):
    strategy: Literal["fixed", "grid", "bisect", "lattice", "suggested"]
    parameter: str | None = Field(None, description="the tuned parameter (None: the method has none)")
    objective: str = "most_privacy_within_gap"
    safer: Literal["larger", "smaller"] | None = Field(None, description="which direction of the parameter is safer")
    low: float | None = Field(None, description="lower bound searched")
    high: float | None = Field(None, description="upper bound searched")
    threshold: float | None = Field(None, description="the policy threshold on the parameter (privacy.k for k)")
    accuracy_gap: float | None = None
    class_sizes: dict[str, int] = Field(default_factory=dict)
    suggested: float | None = Field(None, description="the method's own suggestion (condensation: approximate GCD)")
    candidates: int = Field(0, description="values the strategy considered")
    evaluations: list[Evaluation] = Field(default_factory=list)
    chosen: int | float | None
    lattice: LatticeSearch | None = Field(None, description="the lattice strategy's search and chosen node")
    rule: str = Field(..., description="why this value was chosen, in one line")
    seconds: float = 0.0


# -- sanitize ----------------------------------------------------------------------------------------
class MethodRecord(Report):
    """The method as it actually ran: every parameter, the tuned one included."""

    name: str
    params: dict[str, JsonValue] = Field(..., description="every parameter as the method ran (JSON values: a "
                                                          "generalization's levels and hierarchies are mappings)")
    unit: Literal["equivalence_class", "generating_group", "record"]
    groups: int | None = Field(None, description="generating groups or equivalence classes formed (None: record)")
    suppressed_rows: int = 0
    suppressed_cells: dict[str, int] = Field(default_factory=dict)
    seconds: float


# -- privacy -----------------------------------------------------------------------------------------
class Claim(Report):
    """One privacy claim of a release: a measure, its value, the policy threshold, and how to re-check it."""

    name: str = Field(..., description="the gate (a privacy key of the spec)")
    measure: str = Field("", description="what is measured, over what")
    unit: Literal["equivalence_class", "generating_group", "record"] | None = None
    value: float | None
    threshold: float
    comparison: Literal[">=", "<=", "<"] = ">="
    passed: bool
    recheck: Literal["published", "original"] = Field(
        "published", description="published: from the published table alone; original: also needs the original "
                                 "input (ppdp validate --release DIR --original PATH)")
    worst: str | None = Field(None, description="which group, class or attribute is worst (never a value)")


GateResult = Claim  # a gate's outcome is the claim it makes


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


class QueryAnswersSummary(Report):
    """What paper 002's random queries achieve on one table. Statistics are over all queries; a query matching no
    record counts as probability 0 (the attacker finds nobody)."""

    matched_queries: int = Field(..., description="queries matching at least one record")
    identifying_share: float = Field(..., description="share of queries matching exactly one record")
    matches_median: float = Field(..., description="median number of records a query matches")
    reidentification_mean: float = Field(..., description="S1: 1 / records matching the query")
    reidentification_q1: float
    reidentification_median: float
    reidentification_q3: float
    reidentification_max: float
    sensitive_association_mean: float | None = Field(
        None, description="S2: per query the largest P(S2|a) = matching records with value a / matching records")
    sensitive_association_q1: float | None = None
    sensitive_association_median: float | None = None
    sensitive_association_q3: float | None = None
    sensitive_association_max: float | None = None


class QueryAttack(Report):
    """Paper 002, section 4.2 and Figure 4.3: random queries drawn from the original table's records (some of a
    record's quasi-identifier values), asked of the original and of the release."""

    queries: int = Field(..., description="distinct queries kept")
    draws: int = Field(..., description="random draws made")
    stop_after: int = Field(..., description="the stopping rule's n: stop after n draws that add no query")
    seed: int
    sensitive_attributes: list[str] = Field(default_factory=list)
    release_is_original: bool = Field(..., description="a standalone table: the original is the release")
    original: QueryAnswersSummary
    release: QueryAnswersSummary


class PrivacyReport(Report):
    unit: Literal["equivalence_class", "generating_group", "record"] = Field(
        "equivalence_class",
        description="equivalence_class: classes are published rows sharing all QI values; generating_group: "
        "classes are the groups records were generated from (the published group column); record: no classes",
    )
    k: int | None = Field(None, description="smallest class (None for record releases)")
    quasi_identifiers: list[str]
    sensitive_attributes: list[str] = Field(default_factory=list)
    records: int
    groups: int | None = None
    mean_group_size: float | None = None
    linkage_risk: float | None = Field(
        None, description="share of original records whose nearest published record stands for them (record) or "
                          "came from their own group (generating_group)"
    )
    dcr_quantile: float | None = Field(None, description="the policy's quantile of distance to closest record")
    measures: AnonymityMeasures | None = None
    risk: RiskMeasures | None = None
    synthetic: SyntheticMeasures | None = None
    perturbation: PerturbationMeasures | None = None
    attacker: QueryAttack | None = None
    claims: list[Claim] = Field(default_factory=list)
    # where each measure is worst, for the gates (class numbers and attribute names; never serialized)
    _details: dict = PrivateAttr(default_factory=dict)
    _recursive: tuple | None = PrivateAttr(default=None)

    @property
    def gates(self) -> list[Claim]:
        return self.claims

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.claims)

    @property
    def failed(self) -> list[Claim]:
        return [g for g in self.claims if not g.passed]


# -- utility -----------------------------------------------------------------------------------------
class ClassAccuracy(Report):
    label: str
    support: int
    sanitized: float
    original: float


class DeltaR(Report):
    """Paper 004's utility criterion for one classifier: ΔR = R_p - (1 - epsilon) R_o."""

    classifier: str
    accuracy: float = Field(..., description="R_p: trained on the release, tested on held-out original rows")
    accuracy_original: float = Field(..., description="R_o: trained on the original training rows")
    value: float = Field(..., description="R_p - (1 - epsilon) R_o; the criterion holds when >= 0")


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
    delta_r: list[DeltaR] = Field(default_factory=list, description="paper 004's criterion per classifier")
    delta_r_epsilon: float | None = None
    gates: list[GateResult] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> list[GateResult]:
        return [g for g in self.gates if not g.passed]
