"""Reports each step returns. They hold counts, sizes, rates and column names; never a data value."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.json_schema import SkipJsonSchema

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.fields import LEGACY_INPUT_SHA256, before_keyed_digests, private_only


class Report(BaseModel):
    """Base of every step report: unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid")


# -- ingest ------------------------------------------------------------------------------------------
class ExpectationOutcome(Report):
    """One Great Expectations result, reduced to counts (GX's own results may carry raw values)."""

    expectation: str = Field(..., description="the expectation's type (e.g. expect_column_values_to_not_be_null)")
    column: str | None = Field(None, description="the column it checks; null for a table-level expectation")
    success: bool = Field(..., description="whether the expectation held")
    unexpected_count: int | None = Field(None, description="cells that failed it; null when Great Expectations "
                                                           "reports no count")
    element_count: int | None = Field(None, description="cells (rows) it looked at; null when not reported")
    observed: float | None = Field(None, description="an aggregate (a size or count), only for ppdp's own "
                                                     "expectations and table row/column counts")


class IngestReport(Report):
    """What the ingest step read and checked: the input file, its shape and hash, and the input suite's outcomes
    (counts only)."""

    path: str = Field(..., description="the input file as read (the spec's source.path, resolved)")
    format: Literal["csv", "parquet"] = Field(..., description="the file format the input was read as")
    rows: int | None = Field(..., description="data rows read from the input (a CSV header excluded); null when "
                                              "withheld (a differential_privacy release: see the manifest's withheld)")
    columns: list[str] = Field(..., description="the input's column names, in file order")
    input_digest: str | None = Field(
        None, description="keyed digest of the input, salt:mac: a random salt made for this run (32 hex digits), a "
                          "colon, and HMAC-SHA256 (64 hex digits), under the publisher's digest key named by "
                          "input_key_id, of the salt, a colon and the input file's SHA-256 (a partitioned input: the "
                          "SHA-256 of its files' '<path> <sha256>' lines). Only the key holder can check it; without "
                          "the key it confirms no guessed input, and two runs' digests do not tell whether their "
                          "inputs are the same. Null in a manifest written before keyed digests")
    input_key_id: str | None = Field(None, description="id of the key input_digest was made under: hmac-sha256: and "
                                                       "32 hex digits (see ppdp.tasks.digests)")
    input_sha256: str | None = before_keyed_digests(LEGACY_INPUT_SHA256)
    private_sha256: SkipJsonSchema[str | None] = private_only("the input's SHA-256 (hex) as ingest computed it: for "
                                                              "the publisher's private record only, never serialized")
    suite: str = Field(..., description="name of the Great Expectations suite the input was validated against")
    expectation_count: int = Field(..., description="expectations in that suite (ppdp's base input suite and "
                                                    "those derived from the spec)")
    expectations: list[ExpectationOutcome] = Field(..., description="the outcome of every expectation, in suite "
                                                                     "order (counts only)")

    @property
    def failed(self) -> list[ExpectationOutcome]:
        return [e for e in self.expectations if not e.success]

    @property
    def read_rows(self) -> int:
        """The rows read: always known where ingest made the report (a published one may withhold them)."""
        if self.rows is None:
            raise ValueError("the input's row count is withheld in this report")
        return self.rows

    def digests(self) -> dict[str, str | None]:
        """What an audit entry of a run that read this input records (``input_digest``, ``input_key_id``) and what
        only its private record keeps (``private_sha256``)."""
        return {"input_digest": self.input_digest, "input_key_id": self.input_key_id,
                "private_sha256": self.private_sha256}


# -- tag ---------------------------------------------------------------------------------------------
class ColumnTag(Report):
    """One input column as tagging left it: its role, encoding kind, where the role came from and why."""

    name: str = Field(..., description="the column's name in the input header")
    role: Role = Field(..., description="the column's privacy role")
    kind: ColumnKind = Field(..., description="how the column is encoded for the numeric methods (declared, or "
                                              "inferred from the data)")
    source: Literal["declared", "auto"] = Field(..., description="declared: the role comes from the spec's "
                                                                 "columns; auto: automatic tagging gave it")
    reason: str = Field(..., description="why the column has this role: the declaration or the tagging rule that "
                                         "fired (one line, never a value)")
    order: list[str] | None = Field(None, description="category order of an ordinal column, lowest first, as "
                                                      "declared in the spec")
    position: int | None = Field(None, ge=0, description="0-based position of the column in the input (set by "
                                                         "tagging)")
    treatment: Literal["dropped", "pseudonymized"] | None = Field(
        None, description="dropped / pseudonymized before sanitizing; None: decided by the sanitizer")
    promoted: bool = Field(False, description="made a quasi-identifier after a first sanitizing, because published "
                                              "beside the quasi-identifiers it split the classes an attacker sees")


class Roles(Report):
    """The role of every input column, with the reason it was given."""

    columns: list[ColumnTag] = Field(..., description="every input column, in input order")

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

    @property
    def rare_rule_skip(self) -> list[str]:
        """The quasi-identifiers a generalizing method leaves out of the rare-value rule: those tagged before
        sanitizing (a promoted column went through the rule as the column it was)."""
        return [c.name for c in self.columns if c.role is Role.quasi_identifier and not c.promoted]

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
    name: str = Field(..., description="the column's name in the input header")
    action: Literal["merged", "merged_adjacent", "suppressed", "rows_removed"] = Field(
        ..., description="merged: into the token; merged_adjacent: into the nearest frequent category of the "
        "declared order; suppressed: set missing; rows_removed: class column, the rows were left out")
    values_merged: int = Field(..., ge=0, description="distinct values that occurred fewer than k times")
    cells_affected: int = Field(..., ge=0, description="cells changed (rows_removed: rows left out)")
    token: str | None = Field(None, description="the value rare categories were merged into (action merged)")
    counted_on: Literal["input", "published"] = Field(
        "input", description="input: counted on every input row; published: counted again on the rows that are "
                             "published (after the hold-out), the rule's second pass")


class RareCategoryReport(Report):
    """The rare-value rule: no published categorical cell holds a value seen fewer than k times in the input, nor
    fewer than k times among the rows that are published (a second pass after the hold-out). A column may appear
    once per pass."""

    k: int = Field(..., ge=1, description="a categorical value seen fewer than k times in the input is rare (the "
                                          "spec's privacy.k, or 2)")
    columns_checked: int = Field(..., ge=0, description="categorical columns the rule was applied to")
    columns: list[RareCategoryColumn] = Field(default_factory=list, description="columns that had rare values")
    rows_in: int = Field(..., ge=0, description="input rows before the rule")
    rows_out: int = Field(..., ge=0, description="rows after the rule (fewer only when rows with a rare class value "
                                                 "were left out)")

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
    accuracy: float = Field(..., description="accuracy (share of held-out rows classified correctly, 0 to 1) of the "
                                             "spec's classifier trained on the release made with this value, mean "
                                             "of runs; without a classifier, the label-free utility the trace's "
                                             "utility_measure names (0 to 1, larger is better)")
    per_class: dict[str, float] = Field(..., description="recall per class (0 to 1), mean of runs, keyed by class "
                                                         "number ('class #0', ... in sorted label order), never by "
                                                         "label")
    meets_policy: bool | None = Field(None, description="every privacy gate passed (objective "
                                                        "best_utility_meeting_policy only)")
    runs: int = Field(..., description="releases made and measured with this value (tuning.repeats, one seed each)")
    seconds: float = Field(..., description="wall-clock seconds spent on this value, all runs")

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
    suppressed_rows: int = Field(0, description="records suppressed at the chosen node (published with every "
                                                "quasi-identifier '*')")
    seconds: float = Field(0.0, description="wall-clock seconds of the search, preparation included")


class TuningTrace(Report):
    """The tuning step's trace: the strategy, the bounds searched, every value evaluated and the rule that chose
    the method's tunable parameter (paper 000's tuning)."""

    strategy: Literal["fixed", "grid", "bisect", "lattice", "suggested"] = Field(
        ..., description="the tuning strategy used (the spec's tuning.strategy)")
    parameter: str | None = Field(None, description="the tuned parameter (None: the method has none)")
    objective: str | None = Field(None, description="the tuning objective (the spec's "
                                  "tuning.objective); null when the strategy has none (fixed, suggested, lattice)")
    safer: Literal["larger", "smaller"] | None = Field(None, description="which direction of the parameter is safer")
    low: float | None = Field(None, description="lower bound searched")
    high: float | None = Field(None, description="upper bound searched")
    threshold: float | None = Field(None, description="the policy threshold on the parameter (privacy.k for k)")
    accuracy_gap: float | None = Field(None, description="the accuracy-gap threshold t_a, relative (the spec's "
                                       "tuning.accuracy_gap); null when the choice does not use it (strategies "
                                       "fixed, suggested, lattice; objective best_utility_meeting_policy)")
    choice: Literal["non_dominated", "paper"] | None = Field(
        None, description="the rule that settled the choice among the evaluated values (the spec's tuning.choice), "
                          "objective most_privacy_within_gap with bisect or grid: non_dominated (the strategy's value "
                          "unless an evaluated value is at least as safe and at least as accurate, better in one; "
                          "then the most private such value) or paper (Figure 6's last midpoint as it is); null "
                          "otherwise, and in traces written before the field existed (their bisect ran the paper's "
                          "rule)")
    figure6_value: int | float | None = Field(
        None, description="bisect with objective most_privacy_within_gap: the value Figure 6 itself ended on (its last "
                          "midpoint), before the choice rule; equal to chosen under choice paper")
    class_sizes: dict[str, int] = Field(default_factory=dict, description="training rows per class, keyed by class "
                                        "number ('class #0', ... in sorted label order; '(all)' without a class "
                                        "column), never by label")
    suggested: float | None = Field(None, description="the method's own suggestion (condensation: approximate GCD)")
    candidates: int = Field(0, description="values the strategy considered")
    evaluations: list[Evaluation] = Field(default_factory=list, description="every value evaluated on the "
                                          "held-out rows, by increasing value (empty when none was evaluated)")
    chosen: int | float | None = Field(..., description="the chosen value (an integer for an integer parameter); "
                                                        "null when the method has no tunable parameter or the "
                                                        "lattice strategy chose a node (lattice.node)")
    lattice: LatticeSearch | None = Field(None, description="the lattice strategy's search and chosen node")
    rule: str = Field(..., description="why this value was chosen, in one line")
    seconds: float = Field(0.0, description="wall-clock seconds of the tuning step")
    utility_measure: str | None = Field(None, description="what the evaluations' accuracy field measures when no "
                                        "classifier is trained (no class column): a label-free utility, larger is "
                                        "better; null: the classifier's accuracy")

    def tuned_text(self) -> str | None:
        """The tuned value in one phrase (``k=45``, or a lattice node ``levels age=2, zip=1``), None when nothing
        was tuned or chosen."""
        if self.parameter is None:
            return None
        if self.lattice is not None:  # a node: one level per column
            return f"{self.parameter} " + ", ".join(f"{c}={v}" for c, v in self.lattice.node.items())
        return None if self.chosen is None else f"{self.parameter}={self.chosen}"


# -- sanitize ----------------------------------------------------------------------------------------
class MethodRecord(Report):
    """The method as it actually ran: every parameter, the tuned one included."""

    name: str = Field(..., description="the method's name (the spec's method.name)")
    params: dict[str, JsonValue] = Field(..., description="every parameter as the method ran (JSON values: a "
                                                          "generalization's levels and hierarchies are mappings)")
    unit: Literal["equivalence_class", "generating_group", "record", "differential_privacy"] = Field(
        ..., description="the method's privacy unit: what its privacy is measured over")
    groups: int | None = Field(None, description="generating groups or equivalence classes formed (None: record)")
    suppressed_rows: int = Field(0, description="input rows the method left out of the release")
    suppressed_cells: dict[str, int] = Field(default_factory=dict, description="column -> cells the method "
                                             "suppressed in it (set missing or '*'); a column without any may be "
                                             "absent")
    seconds: float = Field(..., description="wall-clock seconds the method took to sanitize")
    kept_members: int | None = Field(None, description="series.keep_groups: records placed in the group they had in "
                                                       "the dataset's previous release (None: groups not kept)")


class ParetoPoint(Report):
    """One non-dominated trade-off of a feature-set partitioning search: no partition it evaluated reaches a
    higher anonymity level with at least this accuracy."""

    k: int = Field(..., description="anonymity level: the smallest equivalence class over every subset's "
                                    "quasi-identifiers (the largest k the partition satisfies)")
    accuracy: float = Field(..., description="inner cross-validated accuracy of the partition's combined "
                                             "classifier on the training rows (0 to 1)")
    subsets: list[list[str]] = Field(..., description="the partition reaching it: each subset's columns")


class FeaturePartition(Report):
    """What a feature-set partitioning method (DMPD, paper 001) chose: disjoint column subsets, each published as
    its own table; columns in no subset are dropped."""

    subsets: list[list[str]] = Field(..., description="each published subset's feature columns (the class column "
                                                      "is published with every subset)")
    dropped: list[str] = Field(..., description="feature columns in no subset: not published")
    quasi_identifiers: list[list[str]] = Field(..., description="each subset's quasi-identifier columns: its "
                                                                "equivalence classes are over these")
    inducer: str = Field(..., description="the inducer of each subset in the search's fitness (naive_bayes or "
                                          "tree)")
    fitness: float = Field(..., description="inner cross-validated accuracy of the chosen partition (0 to 1)")
    evaluations: int = Field(..., description="distinct partitions the genetic search evaluated")
    generations: int = Field(..., description="generations the genetic search ran")
    search_seconds: float = Field(..., description="wall-clock seconds of the genetic search")
    information_gain: dict[str, float] = Field(
        default_factory=dict, description="each feature's information gain about the class on the training rows "
                                          "(bits), from which quasi-identifiers are ranked")
    pareto: list[ParetoPoint] = Field(
        default_factory=list, description="accuracy against anonymity level over every partition the search "
                                          "evaluated, non-dominated points only (the paper's multi-objective view)")


# -- privacy -----------------------------------------------------------------------------------------
class Claim(Report):
    """One privacy claim of a release: a measure, its value, the policy threshold, and how to re-check it."""

    name: str = Field(..., description="the gate (a privacy key of the spec)")
    measure: str = Field("", description="what is measured, over what")
    unit: Literal["equivalence_class", "generating_group", "record", "differential_privacy"] | None = Field(
        None, description="the privacy unit the measure is taken over; null for a utility gate")
    value: float | None = Field(..., description="the measured value; null when it could not be computed (the "
                                                 "claim then fails: fail closed)")
    threshold: float = Field(..., description="the policy's threshold the value is compared with")
    comparison: Literal[">=", "<=", "<"] = Field(">=", description="the claim holds when value <comparison> "
                                                                   "threshold")
    passed: bool = Field(..., description="whether the claim holds")
    recheck: Literal["published", "original", "construction"] = Field(
        "published", description="published: from the published table alone; original: also needs the original "
                                 "input (ppdp validate --release DIR --original PATH); construction: holds by the "
                                 "mechanism's construction, re-checked from the manifest (the differentially private "
                                 "mechanism rebuilt from its recorded parameters and its privacy loss mapped again)")
    worst: str | None = Field(None, description="which group, class or attribute is worst (never a value)")


GateResult = Claim  # a gate's outcome is the claim it makes


class AnonymityMeasures(Report):
    """The models pyCANON computes, named and shaped as pyCANON's functions return them, over the equivalence
    classes (synthetic releases: the generating groups) and every sensitive attribute (the worst counts)."""

    k_anonymity: int = Field(..., description="k: records in the smallest class (0 for an empty table)")
    alpha_k_anonymity: tuple[float | None, int] | None = Field(
        None, description="(alpha, k): the largest share of one sensitive value in a class, and k; null without a "
                          "sensitive attribute")
    l_diversity: int | None = Field(None, description="distinct l-diversity: fewest distinct sensitive values in a "
                                                      "class; null without a sensitive attribute")
    entropy_l_diversity: int | None = Field(
        None, description="entropy l-diversity as pyCANON returns it: int(exp(least class entropy of the "
                          "sensitive values)); null without a sensitive attribute")
    recursive_c_l_diversity: tuple[float | None, int] | None = Field(
        None, description="(c, l); c is null where pyCANON returns NaN (l = 1)")
    t_closeness: float | None = Field(
        None, description="t: the largest Earth Mover's Distance between a class's sensitive-value distribution and "
                          "the table's (0 to 1); null without a sensitive attribute")
    delta_disclosure: float | None = Field(
        None, description="delta: the largest |ln(p_class / p_table)| over classes and the sensitive values present "
                          "in them; null without a sensitive attribute")
    basic_beta_likeness: float | None = Field(
        None, description="basic beta: the largest relative gain (p_class - p_table) / p_table of a sensitive value "
                          "in a class; null without a sensitive attribute")
    enhanced_beta_likeness: float | None = Field(
        None, description="enhanced beta: basic beta capped at the largest -ln(p_table) of a sensitive value "
                          "(pyCANON's reading); null without a sensitive attribute")
    entropy_l_value: float | None = Field(None, description="exp(min entropy) before pyCANON's int truncation")
    hierarchical_t_closeness: float | None = Field(None, description="t with hierarchical-distance EMD, "
                                                                     "when a hierarchy is given")


class RiskMeasures(Report):
    """Re-identification risk (ARX's attacker models) over the equivalence classes."""

    prosecutor_max: float = Field(..., description="highest record risk under the prosecutor model: 1 / records "
                                                   "in the smallest class (0 to 1)")
    prosecutor_average: float = Field(..., description="average prosecutor risk (ARX's success rate): classes / "
                                                       "records")
    records_at_risk: float = Field(..., description="share of records whose prosecutor risk 1/|class| exceeds "
                                                    "risk_threshold")
    risk_threshold: float = Field(..., description="record risk above which a record counts as at risk (the spec's "
                                                   "privacy.risk_threshold)")
    journalist_max: float | None = Field(None, description="highest journalist risk: 1 / the smallest population "
                                                           "class of a published record; null without a population "
                                                           "table")
    journalist_average: float | None = Field(
        None, description="average journalist risk: max(classes / population records in those classes, marketer); "
                          "null without a population table")
    marketer: float = Field(..., description="marketer risk: mean over records of 1/|class| (the population class "
                                             "with a population table), the expected share re-identified")
    sample_uniques: float = Field(..., description="share of records alone in their class")


class SyntheticMeasures(Report):
    """For releases whose records are synthetic or perturbed (not generalized copies)."""

    linkage_risk: float | None = Field(None, description="share of original records whose nearest released "
                                                         "record (standardized known columns) stands for them "
                                                         "(record) or came from their own group (generating_group)")
    dcr_quantiles: dict[str, float] = Field(
        default_factory=dict, description="quantiles (keys q01, q05, q25, q50: the percent) of the Euclidean "
        "distance from each original record to its closest published record over the standardized known columns "
        "(the attacker's view's known_columns)")
    dcr_exact_matches: float | None = Field(None, description="share of original records released unchanged")
    confidence_interval_privacy: float | None = Field(None, description="paper 000: 95% interval width / range")


class PerturbationMeasures(Report):
    """Paper 004, section 3.2: original vs released values, rows aligned (larger VD/RP/CP, smaller RK/CK =
    more privacy)."""

    vd: float = Field(..., description="VD, value difference ||A - A'||_F / ||A||_F over the numeric attributes "
                                       "(A original, A' published)")
    rp: float = Field(..., description="RP, mean over cells of |rank in A - rank in A'| within the cell's attribute "
                                       "(in rank positions)")
    rk: float = Field(..., description="RK, share of cells whose rank within their attribute is unchanged (0 to 1)")
    cp: float = Field(..., description="CP, mean over attributes of the change of the rank of the attribute's mean "
                                       "among all attributes' means (in rank positions)")
    ck: float = Field(..., description="CK, share of attributes whose mean keeps its rank among the attributes' "
                                       "means (0 to 1)")


class QueryAnswersSummary(Report):
    """What paper 002's random queries achieve on one table. Statistics are over all queries; a query matching no
    record counts as probability 0 (the attacker finds nobody)."""

    matched_queries: int = Field(..., description="queries matching at least one record")
    identifying_share: float = Field(..., description="share of queries matching exactly one record")
    matches_median: float = Field(..., description="median number of records a query matches")
    reidentification_mean: float = Field(..., description="S1: 1 / records matching the query")
    reidentification_q1: float = Field(..., description="S1, first quartile over queries")
    reidentification_median: float = Field(..., description="S1, median over queries")
    reidentification_q3: float = Field(..., description="S1, third quartile over queries")
    reidentification_max: float = Field(..., description="S1, largest over queries")
    sensitive_association_mean: float | None = Field(
        None, description="S2: per query the largest P(S2|a) = matching records with value a / matching records")
    sensitive_association_q1: float | None = Field(None, description="S2, first quartile over queries; null "
                                                                     "without a sensitive attribute")
    sensitive_association_median: float | None = Field(None, description="S2, median over queries; null without a "
                                                                         "sensitive attribute")
    sensitive_association_q3: float | None = Field(None, description="S2, third quartile over queries; null "
                                                                     "without a sensitive attribute")
    sensitive_association_max: float | None = Field(None, description="S2, largest over queries; null without a "
                                                                      "sensitive attribute")


class QueryAttack(Report):
    """Paper 002, section 4.2 and Figure 4.3: random queries drawn from the original table's records (some of a
    record's quasi-identifier values), asked of the original and of the release."""

    queries: int = Field(..., description="distinct queries kept")
    draws: int = Field(..., description="random draws made")
    stop_after: int = Field(..., description="the stopping rule's n: stop after n draws that add no query")
    seed: int = Field(..., description="seed of the random draws")
    sensitive_attributes: list[str] = Field(default_factory=list, description="the sensitive columns S2 is "
                                                                              "measured for")
    release_is_original: bool = Field(..., description="a standalone table: the original is the release")
    original: QueryAnswersSummary = Field(..., description="what the queries achieve on the original table")
    release: QueryAnswersSummary = Field(..., description="what the same queries achieve on the release")


class AttributeDisclosure(Report):
    """What an attacker holding a record's quasi-identifiers learns about one protected value of it, beside what
    the best constant guess (without the release) gets right."""

    column: str = Field(..., description="the protected column (a declared sensitive column; SAP: the class)")
    kind: Literal["number", "category"] = Field(..., description="number: learned within the tolerance; "
                                                                 "category: learned exactly")
    tolerance: float | None = Field(None, description="numbers: a guess within this distance of the true value "
                                                      "counts as learned (0.1 standard deviation)")
    records: int = Field(..., description="published records measured (rows that stand for an input record)")
    disclosure: float = Field(..., description="share of those records whose value the attacker learns: their guess "
                                               "is the most common published value (categories) or the centre of the "
                                               "densest tolerance window of published values (numbers) among the "
                                               "rows sharing the record's known columns (0 to 1)")
    baseline: float = Field(..., description="share the best constant guess gets right (0 to 1)")
    gain: float = Field(..., description="disclosure - baseline")
    recheck: Literal["published", "original"] = Field(
        "original", description="original: the true values come from the original input (needs --original to "
                                "re-check); published: the published values are the true ones (kept as they are)")


class DifferentialPrivacy(Report):
    """A differentially private release's guarantee, as the mechanism was built from public information only (the
    input's columns, public categories and bin edges, epsilon and delta): what is claimed, what the library's
    privacy map says is spent, and where the categories and bins came from. Column names and counts only."""

    library: str = Field(..., description="the DP library and version that built the mechanism (e.g. opendp 0.16.0)")
    mechanism: str = Field(..., description="the synthesizer that ran (mst: OpenDP's MST over a contingency table; "
                                            "aim: OpenDP's AIM)")
    mechanism_choice: str | None = Field(None, description="why this synthesizer: asked for (method.mechanism), or "
                                                           "the rule of method.mechanism auto with the public figures "
                                                           "it compared (AIM's workload size)")
    definition: Literal["approximate", "pure"] = Field(
        ..., description="approximate: (epsilon, delta)-DP with delta spent on discovering categories privately; "
                         "pure: epsilon-DP (every column's categories public, delta spent 0)")
    neighbours: str = Field("one row of the method's input added or removed",
                            description="what two neighbouring inputs differ by (the privacy unit of the guarantee)")
    epsilon: float = Field(..., description="the epsilon the method was asked to spend (method.epsilon)")
    delta: float = Field(..., description="the delta the method was allowed (method.delta)")
    epsilon_spent: float = Field(..., description="epsilon of the built mechanism for one row, from the library's "
                                                  "privacy map (at most epsilon; with bin edges found under DP, the "
                                                  "quantiles' and the synthesizer's maps added: basic composition)")
    delta_spent: float = Field(..., description="delta of the built mechanism for one row, from the library's privacy "
                                                "map (at most delta; 0 for pure DP)")
    binned: list[str] = Field(default_factory=list, description="numeric columns cut at bin edges (the spec's "
                                                                "method.bins); values drawn uniformly inside each bin")
    found_edges: dict[str, list[float]] = Field(
        default_factory=dict, description="numeric columns whose inner bin edges were found under DP (method.bins with "
        "lower, upper and count) -> the edges used: lower bound, DP quantiles (equal ones merged), upper bound (DP "
        "output)")
    bins_epsilon: float | None = Field(None, description="the part of epsilon given to the DP quantiles that found "
                                                         "bin edges (method.bin_share of epsilon); null without them")
    bins_epsilon_spent: float | None = Field(None, description="epsilon the DP quantiles spend for one row, from the "
                                                               "library's privacy map (included in epsilon_spent)")
    public_categories: list[str] = Field(default_factory=list, description="columns whose categories were public "
                                                                           "(method.categories or a declared order)")
    discovered: list[str] = Field(default_factory=list, description="columns whose categories were discovered "
                                                                    "privately (a noisy count above the threshold)")
    discovery_threshold: int | None = Field(None, description="noisy count a category needed to be discovered "
                                                              "(null when nothing was discovered)")
    rows: str = Field(..., description="where the published row count comes from (the model's noisy estimate of "
                                       "the input's size, or the publisher's choice)")


class AttackerView(Report):
    """The release as an attacker holding this table (and, where stated, knowing each record's quasi-identifiers)
    sees it, measured the same way for every method: these figures head the report and decide the safety floor;
    the privacy unit's own figures come after them."""

    protects: Literal["identity", "attribute"] = Field(..., description="what the method protects (identity: who "
                                                                         "is in which row; attribute: the protected "
                                                                         "value, identities left visible)")
    identity_by: Literal["classes", "groups", "records", "differential_privacy", "none"] = Field(
        ..., description="how identities are hidden: equivalence classes, generating groups, record by record, by a "
                         "differentially private mechanism, or not at all (the quasi-identifiers are published as "
                         "they are)")
    records: int = Field(..., description="published records measured")
    quasi_identifiers: list[str] = Field(..., description="the published quasi-identifier columns, as published "
                                                          "(labels, intervals, numbers)")
    counted_columns: list[str] = Field(
        default_factory=list, description="published columns beside the quasi-identifiers that raise uniqueness "
                                          "(an attacker may know them too), counted in every figure below")
    known_columns: list[str] = Field(
        default_factory=list, description="every published column the attacker is taken to know: the "
        "quasi-identifiers as published and every column published beside them (role other; neither pseudonyms nor "
        "the group column). Linkage, nearest-record distances and exact copies are measured over them; the class "
        "figures over the quasi-identifiers and counted columns, which split the rows into the same classes (empty "
        "in a manifest written before this field: those measured linkage on the quasi-identifiers only)")
    classes: int = Field(..., description="distinct combinations of the known columns (quasi-identifiers and counted "
                                          "columns) among the published rows")
    smallest_class: int = Field(..., description="rows sharing the rarest combination")
    records_alone: float = Field(..., description="share of published records alone on the known columns (0 to 1)")
    average_risk: float = Field(..., description="mean over published records of 1 / |class| on the known columns")
    highest_risk: float = Field(..., description="largest 1 / |class| on the known columns")
    groups: int | None = Field(None, description="generating groups in the published group column (generating_group "
                                                 "releases; a group publishes one row per record it stands for)")
    smallest_group: int | None = Field(None, description="published rows of the smallest generating group")
    group_alone: float | None = Field(None, description="share of published rows alone in their generating group")
    group_average_risk: float | None = Field(None, description="mean over published rows of 1 / |group|")
    exact_copies: float | None = Field(
        None, description="share of published rows equal to an input record on every known column (pseudonyms "
                          "aside); null where not measured (re-checking needs the original input)")
    linkage_risk: float | None = Field(None, description="record releases: share of input records whose nearest "
                                                         "published record over the known columns (standardized) "
                                                         "stands for them")
    nearest_distance: dict[str, float] = Field(
        default_factory=dict, description="quantiles (q01, q05, q25, q50) of the distance from each input record to "
                                          "its nearest published record (standardized known columns)")
    disclosure: list[AttributeDisclosure] = Field(default_factory=list, description="attribute disclosure per "
                                                                                    "protected column")
    epsilon: float | None = Field(None, description="differential_privacy releases: the epsilon of the mechanism's "
                                                    "(epsilon, delta)-DP, by construction (whether any one record was "
                                                    "in the input changes the odds of any published table by at most "
                                                    "e^epsilon)")
    delta: float | None = Field(None, description="differential_privacy releases: the delta of the mechanism's "
                                                  "(epsilon, delta)-DP (the probability allowed beyond that bound)")
    uninformative_columns: list[str] = Field(
        default_factory=list, description="published columns that carry no information: '*' (or missing) in every "
                                          "row")

    @property
    def disclosure_gain(self) -> float | None:
        """The largest gain over the protected columns (None when none was measured)."""
        return max((d.gain for d in self.disclosure), default=None)


class AcceptedBelowFloor(Report):
    """Publishing below the safety floor on purpose: the reason, who approved it, and the figures that fail."""

    reason: str = Field(..., description="why (the spec's privacy.accept_below_floor.reason)")
    approved_by: str = Field(..., description="who approved it")
    failed: list[str] = Field(..., description="each failed floor row: figure and limit, in one line each")


class FloorReport(Report):
    """The safety floor as this release meets it: each applicable row as a claim, and whether the owner accepted
    publishing below it."""

    holds: bool = Field(..., description="every applicable floor row holds")
    applies: list[str] = Field(..., description="the kinds of floor rows that apply (classes, groups, records, "
                                                "attribute)")
    claims: list[Claim] = Field(default_factory=list, description="each applicable floor row: figure, limit, "
                                                                  "verdict and how to re-check it")
    accepted: AcceptedBelowFloor | None = Field(
        None, description="the owner's decision to publish below the floor (the spec's privacy.accept_below_floor), "
                          "recorded only when the floor fails")

    @property
    def failed(self) -> list[Claim]:
        return [c for c in self.claims if not c.passed]

    @property
    def publishable(self) -> bool:
        """The floor holds, or the owner accepted publishing below it."""
        return self.holds or self.accepted is not None


class PrivacyReport(Report):
    """Privacy of the published table, measured over its unit: the class models, re-identification risk,
    synthetic and perturbation measures, paper 002's query attacker, and the claims the release makes."""

    unit: Literal["equivalence_class", "generating_group", "record", "differential_privacy"] = Field(
        "equivalence_class",
        description="equivalence_class: classes are published rows sharing all QI values; generating_group: "
        "classes are the groups records were generated from (the published group column); record: no classes",
    )
    k: int | None = Field(None, description="smallest class (None for record releases)")
    quasi_identifiers: list[str] = Field(..., description="the published quasi-identifier columns measured")
    sensitive_attributes: list[str] = Field(default_factory=list, description="the published sensitive columns "
                                            "measured (with several, each is measured and the worst counts)")
    records: int = Field(..., description="published records measured")
    groups: int | None = Field(None, description="classes in the published table (equivalence classes or "
                                                 "generating groups); null for record releases")
    mean_group_size: float | None = Field(None, description="mean records per class; null for record releases")
    linkage_risk: float | None = Field(
        None, description="share of original records whose nearest published record stands for them (record) or "
                          "came from their own group (generating_group)"
    )
    dcr_quantile: float | None = Field(None, description="the policy's quantile of distance to closest record")
    measures: AnonymityMeasures | None = Field(None, description="pyCANON's anonymity models over the classes; "
                                                                "null for record releases")
    risk: RiskMeasures | None = Field(None, description="re-identification risk over the classes; null for record "
                                                        "releases and empty tables")
    synthetic: SyntheticMeasures | None = Field(None, description="linkage risk, DCR and interval privacy "
                                                                  "(generating_group and record units)")
    perturbation: PerturbationMeasures | None = Field(
        None, description="paper 004's distortion of the numeric attributes, rows aligned; null when no published "
                          "row stands for an input row or no numeric attribute is published as a number")
    attacker: QueryAttack | None = Field(None, description="paper 002's random-query attacker; null when it did not "
                                                           "run (no quasi-identifier, or switched off)")
    claims: list[Claim] = Field(default_factory=list, description="every privacy claim (gate) of the release: its "
                                                                  "value, threshold and how to re-check it")
    attacker_view: AttackerView | None = Field(
        None, description="the release as an attacker sees it (identity and attribute figures over the published "
                          "table); null outside a release")
    floor: FloorReport | None = Field(None, description="the safety floor every release must pass (or accept "
                                                        "failing on purpose); null outside a release")
    dp: DifferentialPrivacy | None = Field(None, description="differential_privacy releases: the mechanism's "
                                                             "guarantee as it was built; null otherwise")
    # carried from the measuring step to the gates and the manifest, never serialized (nor in the JSON schema)
    details: SkipJsonSchema[dict[str, Any]] = Field(
        default_factory=dict, exclude=True, repr=False,
        description="where each measure is worst, for the gates' messages (class numbers and attribute names)")
    recursive: SkipJsonSchema[tuple[Any, ...] | None] = Field(
        None, exclude=True, repr=False, description="recursive (c, l)-diversity's worst class, for its gate")
    part_reports: SkipJsonSchema[list[PrivacyReport]] = Field(
        default_factory=list, exclude=True, repr=False,
        description="a partitioned release: each part's report, in part order (the manifest's part entries)")

    @property
    def gates(self) -> list[Claim]:
        return self.claims

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.claims)

    @property
    def failed(self) -> list[Claim]:
        return [g for g in self.claims if not g.passed]
