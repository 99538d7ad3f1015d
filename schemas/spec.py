"""The release spec: one YAML file that says what to publish, how, and how safe it must be.

Every model forbids unknown keys, so a typo is an error that names the key rather than a setting silently
ignored. Cross-field rules that need only the spec live here; rules that need the input's header (a declared
column exists, there is a quasi-identifier) live in :mod:`tasks.spec`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class StrictModel(BaseModel):
    """Base of every spec model: unknown keys are rejected, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Role(str, Enum):
    """What a column is, for privacy purposes."""

    identifier = "identifier"  # direct identifier: never published as is
    quasi_identifier = "quasi_identifier"  # linkable to outside data: protected and measured
    sensitive = "sensitive"  # what an attacker wants to learn
    class_ = "class"  # the label a data miner predicts
    other = "other"


class ColumnKind(str, Enum):
    """How a column is encoded for the numeric methods (condensation, utility classifiers, distances)."""

    numeric = "numeric"
    ordinal = "ordinal"  # categories with an order: encoded as their rank
    nominal = "nominal"  # unordered categories: one-hot encoded


class ColumnSpec(StrictModel):
    """A declared column: its role and, optionally, how to encode it."""

    role: Role
    kind: ColumnKind | None = Field(
        None, description="numeric, ordinal or nominal; inferred from the data when absent"
    )
    order: list[str] | None = Field(
        None, description="category order, lowest first, for an ordinal column (implies kind: ordinal)"
    )

    @model_validator(mode="after")
    def _order_means_ordinal(self) -> ColumnSpec:
        if self.order is not None:
            if self.kind not in (None, ColumnKind.ordinal):
                raise ValueError("order is only allowed for kind: ordinal")
            if len(self.order) < 2 or len(set(self.order)) != len(self.order):
                raise ValueError("order must list at least two distinct categories")
            self.__dict__["kind"] = ColumnKind.ordinal
        return self


class SourceSpec(StrictModel):
    path: Path
    format: Literal["csv", "parquet"] | None = Field(None, description="inferred from the file suffix when absent")
    na_values: list[str] = Field(default_factory=list, description="CSV cells read as missing")
    sep: str = Field(",", min_length=1, max_length=1)
    encoding: str = "utf8"

    @model_validator(mode="after")
    def _infer_format(self) -> SourceSpec:
        if self.format is None:
            suffix = self.path.suffix.lower()
            if suffix in (".csv", ".txt", ".data"):
                self.__dict__["format"] = "csv"
            elif suffix in (".parquet", ".pq"):
                self.__dict__["format"] = "parquet"
            else:
                raise ValueError(f"cannot infer the format of '{self.path.name}': set source.format")
        return self


class IdentifierPolicy(StrictModel):
    """What happens to direct identifiers: they are never published as they are."""

    action: Literal["drop", "pseudonymize"] = "drop"
    key_env: str = Field("PPDP_PSEUDONYM_KEY", description="environment variable holding the HMAC key")
    key_secret_block: str | None = Field(
        None, description="name of a Prefect Secret block holding the HMAC key (tried before key_env)"
    )


class TaggingSpec(StrictModel):
    """Automatic tagging of undeclared columns."""

    auto: bool = True
    near_unique_ratio: float = Field(
        0.9, gt=0, le=1, description="a text or integer column this unique (distinct/non-null) is an identifier"
    )
    reid_contribution: float = Field(
        0.05,
        gt=0,
        le=1,
        description="a column that raises the share of sample-unique records by this much is a quasi-identifier",
    )


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
    l_variant: Literal["distinct", "entropy", "recursive"] = "distinct"
    c: float | None = Field(None, gt=0, description="recursive (c,l)-diversity: the constant c")
    t: float | None = Field(None, ge=0, le=1, description="t-closeness: max EMD between a class and the table")
    delta: float | None = Field(None, gt=0, description="delta-disclosure privacy: max |log(p_class / p_table)|")
    beta: float | None = Field(None, gt=0, description="beta-likeness: max relative gain of a sensitive value")
    beta_variant: Literal["basic", "enhanced"] = "enhanced"
    hierarchies: dict[str, Path] = Field(
        default_factory=dict,
        description="sensitive column -> generalization hierarchy CSV (ARX format, ';'), for hierarchical "
                    "t-closeness",
    )
    max_prosecutor_risk: float | None = Field(None, gt=0, le=1, description="highest 1/|class| over records")
    max_average_risk: float | None = Field(None, gt=0, le=1, description="average 1/|class| over records")
    max_records_at_risk: float | None = Field(None, ge=0, le=1,
                                              description="share of records whose risk exceeds risk_threshold")
    risk_threshold: float = Field(0.2, gt=0, le=1)
    max_marketer_risk: float | None = Field(None, ge=0, le=1, description="classes / records")
    max_sample_uniques: float | None = Field(None, ge=0, le=1, description="share of records alone in a class")
    max_journalist_risk: float | None = Field(None, gt=0, le=1,
                                              description="highest 1/|population class| (needs population)")
    population: Path | None = Field(None, description="population table (CSV/Parquet) for journalist risk")
    max_linkage_risk: float | None = Field(
        None, ge=0, le=1, description="synthetic releases: max share of training records linked to their own group"
    )

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
    """Gates every release must pass (k is required). A failed gate stops the release; nothing is published."""

    k: int = Field(..., ge=2, description="k-anonymity: minimum equivalence class (or generating group) size")


class CondensationParams(StrictModel):
    k: int | None = Field(None, ge=2, description="group size; set it with tuning.strategy: none")
    class_weight: float = Field(
        2.0, gt=0, description="weight of the class label in the k-means distance (modified and original)"
    )
    distribution: Literal["uniform", "gaussian"] = "uniform"
    kmeans_max_iter: int = Field(20, ge=1, le=1000, description="k-means iterations (modified and class_wise)")


class CondensationMethod(StrictModel):
    name: Literal["condensation"]
    variant: Literal["original", "modified", "class_wise"] = "class_wise"
    params: CondensationParams = Field(default_factory=CondensationParams)

    @property
    def needs_class(self) -> bool:
        return self.variant == "class_wise"


MethodSpec = Annotated[CondensationMethod, Field(discriminator="name")]


class TuningSpec(StrictModel):
    """How the method's privacy parameter (the group size k) is chosen."""

    strategy: Literal["none", "approximate_gcd", "rule_based", "brute_force"] = "none"
    min_group_size: int | None = Field(
        None, ge=2, description="the threshold t: the smallest group size considered (default privacy.k)"
    )
    accuracy_gap: float = Field(0.05, gt=0, lt=1, description="the accuracy-gap threshold t_a")
    buckets: int | None = Field(None, ge=2, description="brute force: check this many equal-width sizes")
    repeats: int = Field(1, ge=1, le=20, description="runs averaged per evaluated size (the paper uses 3)")


class UtilitySpec(StrictModel):
    classifier: Literal["knn1", "knn5", "naive_bayes", "decision_tree", "logistic_regression"] = "knn1"
    test_fraction: float = Field(0.1, gt=0, le=0.5)
    min_accuracy_ratio: float | None = Field(
        0.9, ge=0, le=1, description="sanitized accuracy / original accuracy must reach this"
    )


class PublishSpec(StrictModel):
    root: Path


class ReleaseSpec(StrictModel):
    """A release: what to read, how to tag, sanitize, check and publish it."""

    dataset: str = Field(..., pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    source: SourceSpec
    columns: dict[str, Role | ColumnSpec] = Field(default_factory=dict)
    identifiers: IdentifierPolicy = Field(default_factory=IdentifierPolicy)
    tagging: TaggingSpec = Field(default_factory=TaggingSpec)
    privacy: PrivacyPolicy
    method: MethodSpec
    tuning: TuningSpec = Field(default_factory=TuningSpec)
    utility: UtilitySpec = Field(default_factory=UtilitySpec)
    publish: PublishSpec
    seed: int = Field(0, ge=0, lt=2**32)

    @field_validator("columns")
    @classmethod
    def _normalise_columns(cls, value: dict[str, Role | ColumnSpec]) -> dict[str, Role | ColumnSpec]:
        classes = [name for name, c in value.items() if _role_of(c) is Role.class_]
        if len(classes) > 1:
            raise ValueError(f"at most one class column may be declared, got {', '.join(classes)}")
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> ReleaseSpec:
        params = self.method.params
        if self.tuning.strategy == "none" and params.k is None:
            raise ValueError("method.params.k is required when tuning.strategy is none")
        if self.tuning.strategy != "none" and params.k is not None:
            raise ValueError(
                f"method.params.k is set but tuning.strategy is {self.tuning.strategy}: set one or the other"
            )
        if params.k is not None and params.k < self.privacy.k:
            raise ValueError(f"method.params.k ({params.k}) is below privacy.k ({self.privacy.k})")
        t = self.tuning.min_group_size
        if t is not None and t < self.privacy.k:
            raise ValueError(
                f"tuning.min_group_size ({t}) is below privacy.k ({self.privacy.k}): "
                "the tuner could choose a group size the privacy gate rejects"
            )
        if self.tuning.buckets is not None and self.tuning.strategy != "brute_force":
            raise ValueError("tuning.buckets applies only to tuning.strategy: brute_force")
        return self

    # -- convenient views -------------------------------------------------------------------------
    def declared(self) -> dict[str, ColumnSpec]:
        """Declared columns, every entry as a ColumnSpec."""
        return {n: c if isinstance(c, ColumnSpec) else ColumnSpec(role=c) for n, c in self.columns.items()}

    def declared_class(self) -> str | None:
        return next((n for n, c in self.declared().items() if c.role is Role.class_), None)

    @property
    def threshold(self) -> int:
        """The tuner's smallest group size t."""
        return self.tuning.min_group_size or self.privacy.k


def _role_of(entry: Role | ColumnSpec) -> Role:
    return entry.role if isinstance(entry, ColumnSpec) else entry
