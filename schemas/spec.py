"""The release spec: one YAML file that says what to publish, how, and how safe it must be.

Every model forbids unknown keys, so a typo is an error that names the key rather than a setting silently
ignored. Cross-field rules that need only the spec live here; rules that need the input's header (a declared
column exists, there is a quasi-identifier) live in :mod:`tasks.spec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from ppdp.schemas.base import ColumnKind, Role, StrictModel
from ppdp.schemas.params import MethodSpec
from ppdp.schemas.privacy import GATE_UNITS, PrivacyPolicy, PrivacyThresholds, gates_set  # noqa: F401
from ppdp.schemas.series import SeriesSpec
from ppdp.schemas.source import SourceSpec  # noqa: F401
from ppdp.schemas.units import unit_of


class ColumnSpec(StrictModel):
    """A declared column: its role and, optionally, how to encode it."""

    role: Role = Field(..., description="the column's privacy role")
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


class IdentifierPolicy(StrictModel):
    """What happens to direct identifiers: they are never published as they are."""

    action: Literal["drop", "pseudonymize"] = Field(
        "drop", description="drop: identifier columns are left out of the release; pseudonymize: each cell is "
        "replaced by its keyed HMAC-SHA256 pseudonym (the key from key_secret_block or key_env)")
    key_env: str = Field("PPDP_PSEUDONYM_KEY", description="environment variable holding the HMAC key")
    key_secret_block: str | None = Field(
        None, description="name of a Prefect Secret block holding the HMAC key (tried before key_env)"
    )


class TaggingSpec(StrictModel):
    """Automatic tagging of undeclared columns."""

    auto: bool = Field(True, description="tag undeclared columns by their names and values; false: they are other "
                                         "(the undeclared-text rule still applies)")
    near_unique_ratio: float = Field(
        0.9, gt=0, le=1, description="a text or integer column this unique (distinct/non-null) is an identifier"
    )
    reid_contribution: float = Field(
        0.05,
        gt=0,
        le=1,
        description="a column that raises the share of sample-unique records by this much is a quasi-identifier",
    )
    undeclared: Literal["drop", "refuse", "keep"] = Field(
        "drop",
        description="an undeclared text column that could identify someone or carry free text (identifier-shaped "
        "values in >= 1% of cells, >= 50% distinct values, or prose): drop it (recorded with the reason), refuse "
        "the release (a spec error naming the column), or keep it (your responsibility; rare values are still "
        "merged or suppressed)",
    )


class TuningSpec(StrictModel):
    """How the method's tunable parameter is chosen (paper 000's tuning, for any parameter of any method).

    Strategies: ``fixed`` (the value in the method section), ``grid`` (brute force over the domain, or
    ``buckets`` evenly spaced values), ``bisect`` (paper 000's Figure 6 rule-based search on any ordered
    parameter), ``lattice`` (hierarchy levels, bottom-up with monotone pruning), ``suggested`` (the method's own
    rule, e.g. condensation's approximate GCD).
    """

    strategy: Literal["fixed", "grid", "bisect", "lattice", "suggested"] = Field(
        "fixed", description="how the value is chosen: fixed, grid, bisect, lattice or suggested (each described "
        "with TuningSpec)")
    parameter: str | None = Field(None, description="the parameter to tune (default: the method's first tunable)")
    min: float | None = Field(None, description="lower bound of the search (default: the method's; for k, "
                                                "privacy.k)")
    max: float | None = Field(None, description="upper bound of the search (default: the method's for the data)")
    objective: Literal["most_privacy_within_gap", "best_utility_meeting_policy"] = Field(
        "most_privacy_within_gap",
        description="most_privacy_within_gap: the most private value whose accuracy stays within accuracy_gap (the "
                    "choice rule says how, see choice); best_utility_meeting_policy: the most accurate value whose "
                    "release passes every privacy gate")
    accuracy_gap: float = Field(0.05, gt=0, lt=1, description="the accuracy-gap threshold t_a (relative)")
    choice: Literal["non_dominated", "paper"] = Field(
        "non_dominated",
        description="objective most_privacy_within_gap: the rule that settles the choice among the evaluated "
                    "values. non_dominated: the strategy's value (bisect: Figure 6's last midpoint; grid: the highest "
                    "privacy figure within accuracy_gap of the best evaluated accuracy) unless an evaluated value "
                    "dominates it (at least as safe: its value equal or on the safer side and its privacy figure at "
                    "least as high; at least as accurate; strictly better in one); then, of the values dominating "
                    "it, the one with the highest privacy figure, the safer value on ties (never a value whose "
                    "release the classifier answers with one class). paper (bisect only): paper 000's Figure 6 as "
                    "written, its last midpoint, which an evaluated value may dominate")
    buckets: int | None = Field(None, ge=2, description="grid: evaluate this many evenly spaced values")
    resolution: float | None = Field(
        None, gt=0, lt=1, description="bisect: stop once the search range is narrower than this share of its larger "
        "end (e.g. 0.05: k within 5%); the safer end of the last range is then evaluated only if it was already. "
        "Default none: narrow down to a single value, as paper 000's Figure 6 does")
    repeats: int = Field(1, ge=1, le=20, description="runs averaged per evaluated value (the paper uses 3)")

    @model_validator(mode="after")
    def _bounds(self) -> TuningSpec:
        if self.min is not None and self.max is not None and self.max < self.min:
            raise ValueError(f"tuning.max ({self.max:g}) is below tuning.min ({self.min:g})")
        if self.buckets is not None and self.strategy != "grid":
            raise ValueError("tuning.buckets applies only to tuning.strategy: grid")
        if self.resolution is not None and self.strategy != "bisect":
            raise ValueError("tuning.resolution applies only to tuning.strategy: bisect")
        if self.choice == "paper" and (self.strategy != "bisect" or self.objective != "most_privacy_within_gap"):
            raise ValueError("tuning.choice paper (Figure 6's last midpoint) applies only to tuning.strategy: bisect "
                             "with objective most_privacy_within_gap")
        return self


Classifier = Literal["knn1", "knn5", "naive_bayes", "decision_tree", "j48", "svm", "logistic_regression",
                     "hist_gradient_boosting"]
"""Classifiers of the utility step: 1-NN and 5-NN (brute force, standardized features), Gaussian naive Bayes, a
CART tree, ``j48`` (an entropy tree with at least two records per leaf, the reading of WEKA's J48 used for
paper 004), ``svm`` (a linear SVM, WEKA SMO's default kernel, by liblinear), logistic regression and
``hist_gradient_boosting`` (scikit-learn's HistGradientBoostingClassifier, seeded, with early stopping: the strong
classifier of the field's train-on-synthetic, test-on-real measure)."""

STRONG_CLASSIFIER: Classifier = "hist_gradient_boosting"
"""The strong classifier: ``utility.tstr``'s default, and what ``utility.rank_by: tstr`` ranks by."""

RANK_BY_HELP = ("tstr (the first classifier of utility.tstr: its accuracy trained on the release, tested on held-out "
                "real rows), tstr:<classifier> (one of utility.tstr), accuracy_ratio (utility.classifier's accuracy "
                "ratio), two_way (1 - the 2-way marginal distance) or regression:<column> (one of utility.regression: "
                "its R^2)")

_PAPER_CLASSIFIERS: tuple[Classifier, ...] = ("j48", "knn1", "svm")


class DeltaRSpec(StrictModel):
    """Paper 004's utility criterion (Li & Xi, section 3.1): the release keeps utility when
    ΔR = R_p - (1 - epsilon) R_o >= 0 for every listed classifier, R_p its accuracy when trained on the release
    and R_o when trained on the original training rows, both tested on the held-out original rows."""

    epsilon: float = Field(0.02, ge=0, lt=1, description="the tolerated relative accuracy loss (the paper: 0.02)")
    classifiers: list[Classifier] = Field(
        default_factory=lambda: list(_PAPER_CLASSIFIERS), min_length=1,
        description="every classifier must meet the criterion (the paper: J48, 1-NN and an SVM)")


class UtilitySpec(StrictModel):
    """The utility step: the classifier, the held-out share and the utility gates."""

    classifier: Classifier | Literal["none"] = Field(
        "knn1", description="the classifier trained on the release (and by tuning) to measure utility; none: no "
        "classifier, no row held out, utility measured without a label (1- and 2-way marginal distance, correlation "
        "difference), as for a table without a class column")
    test_fraction: float = Field(0.1, gt=0, le=0.5, description="share of the input rows held out (stratified by "
                                                                "class, seeded) to test the classifiers (only when a "
                                                                "classifier is trained)")
    sample_rows: int = Field(100_000, ge=100, description="a partitioned input (a folder): utility is measured on a "
                             "seeded sample of this many records, stratified by class, split as test_fraction says")
    min_accuracy_ratio: float | None = Field(
        0.9, ge=0, le=1, description="sanitized accuracy / original accuracy must reach this"
    )
    delta_r: DeltaRSpec | None = Field(
        None, description="paper 004's gate: R_p - (1 - epsilon) R_o >= 0 for each listed classifier")
    tstr: list[Classifier] = Field(
        default_factory=lambda: [STRONG_CLASSIFIER],
        description="train on the release, test on real rows (TSTR): each listed classifier is trained on the release "
                    "and, for the baseline, on the original training rows, and both are tested on the held-out real "
                    "rows (only when a classifier is trained: utility.classifier not none); [] for none. "
                    "utility.classifier stays the method's and the tuning's classifier and the accuracy ratio gate's")
    regression: list[str] = Field(
        default_factory=list,
        description="numeric columns predicted from the other published attributes by a HistGradientBoostingRegressor "
                    "trained on the release (and, for the baseline, on the original training rows), scored by R^2 on "
                    "the held-out real rows (needs a class column and a classifier: the held-out rows are the "
                    "classifier's)")
    rank_by: str | None = Field(
        None, description=f"what ppdp compare ranks the methods by: {RANK_BY_HELP}; default tstr when a classifier is "
                          "trained (accuracy_ratio when utility.tstr is empty), two_way otherwise")

    @field_validator("regression")
    @classmethod
    def _regression_once(cls, value: list[str]) -> list[str]:
        twice = [c for i, c in enumerate(value) if c in value[:i]]
        if twice:
            raise ValueError(f"column '{twice[0]}' is listed twice")
        return value

    @field_validator("rank_by")
    @classmethod
    def _rank_by_known(cls, value: str | None) -> str | None:
        if value is None:
            return value
        head, _, tail = value.partition(":")
        if value in ("tstr", "accuracy_ratio", "two_way") or (head in ("tstr", "regression") and tail):
            return value
        raise ValueError(f"{value!r} is not one of {RANK_BY_HELP}")

    @property
    def ranking(self) -> str:
        """What ``ppdp compare`` ranks by, resolved: ``tstr:<classifier>``, ``accuracy_ratio``, ``two_way`` or
        ``regression:<column>``."""
        rank_by = self.rank_by
        if rank_by is None:
            if self.classifier == "none":
                return "two_way"
            return f"tstr:{self.tstr[0]}" if self.tstr else "accuracy_ratio"
        if rank_by == "tstr":
            return f"tstr:{self.tstr[0]}" if self.tstr else rank_by
        return rank_by

    def accuracy_gates(self) -> list[str]:
        """The accuracy gates the spec sets itself (``min_accuracy_ratio`` written in the spec, ``delta_r``), as
        ``utility.<key>``: each needs a classifier and a class column (the default ratio applies only with one)."""
        out = []
        if "min_accuracy_ratio" in self.model_fields_set and self.min_accuracy_ratio is not None:
            out.append("utility.min_accuracy_ratio")
        if self.delta_r is not None:
            out.append("utility.delta_r")
        return out

    @model_validator(mode="after")
    def _gates_need_a_classifier(self) -> UtilitySpec:
        gates = self.accuracy_gates()
        if self.classifier == "none" and gates:
            raise ValueError(f"{gates[0]} is an accuracy gate, and utility.classifier is none: remove the gate or "
                             "name a classifier")
        if self.classifier == "none":  # the default ratio applies only with a classifier
            self.__dict__["min_accuracy_ratio"] = None
        held = [f"utility.{key}" for key in ("tstr", "regression") if key in self.model_fields_set
                and getattr(self, key)]
        if self.classifier == "none" and "tstr" not in self.model_fields_set:  # the default TSTR needs held-out rows
            self.__dict__["tstr"] = []
        if self.classifier == "none" and held:
            raise ValueError(f"{held[0]} is tested on held-out real rows, and utility.classifier is none (nothing is "
                             "held out): remove it or name a classifier")
        self._check_rank_by()
        return self

    def _check_rank_by(self) -> None:
        rank_by = self.rank_by
        if rank_by is None:
            return
        head, _, tail = rank_by.partition(":")
        if head in ("tstr", "accuracy_ratio", "regression") and self.classifier == "none":
            raise ValueError(f"utility.rank_by {rank_by} needs a classifier (held-out real rows), and "
                             "utility.classifier is none: rank by two_way")
        if head == "tstr" and not self.tstr:
            raise ValueError(f"utility.rank_by {rank_by}: utility.tstr lists no classifier")
        if head == "tstr" and tail and tail not in self.tstr:
            raise ValueError(f"utility.rank_by {rank_by}: {tail!r} is not one of utility.tstr "
                             f"({', '.join(self.tstr)})")
        if head == "regression" and tail not in self.regression:
            raise ValueError(f"utility.rank_by {rank_by}: column {tail!r} is not one of utility.regression"
                             + (f" ({', '.join(self.regression)})" if self.regression else " (none listed)"))


class PublishSpec(StrictModel):
    """Where releases are published."""

    root: Path = Field(..., description="the publish root: a release goes to <root>/<dataset>/<release_id>, the "
                                        "audit trail is <root>/audit.db; a relative path resolves against the spec "
                                        "file's folder")


class RunnerSpec(StrictModel):
    """Where the flow's tasks run: Prefect's thread pool on this machine, or Dask through prefect-dask's
    ``DaskTaskRunner`` (independent steps, the tuning evaluations among them, become Dask tasks)."""

    kind: Literal["thread", "dask"] = Field("thread", description="thread: this process's thread pool; dask: a Dask "
                                                                  "cluster")
    address: str | None = Field(
        None, description="dask: the scheduler address of an existing cluster (e.g. tcp://host:8786); without it a "
                          "local cluster (Dask's LocalCluster) is started for the run and stopped after it")
    workers: int = Field(2, ge=1, le=256, description="dask without an address: worker processes of the local cluster")
    max_workers: int = Field(2, ge=1, le=256, description="thread: threads of the pool")

    @model_validator(mode="after")
    def _address_needs_dask(self) -> RunnerSpec:
        if self.address is not None and self.kind != "dask":
            raise ValueError("runner.address applies only to runner.kind: dask")
        return self


class ReleaseSpec(StrictModel):
    """A release: what to read, how to tag, sanitize, check and publish it."""

    dataset: str = Field(..., pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
                         description="name of the data set, used in paths: 1 to 64 letters, digits, '_', '.' or "
                                     "'-', starting with a letter or digit")
    source: SourceSpec = Field(..., description="the input table and how to read it")
    columns: dict[str, Role | ColumnSpec] = Field(
        default_factory=dict, description="declared columns: input column name -> its role, or a mapping with its "
        "role, kind and order; undeclared columns are tagged automatically")
    identifiers: IdentifierPolicy = Field(default_factory=IdentifierPolicy,
                                          description="what happens to direct identifiers")
    tagging: TaggingSpec = Field(default_factory=TaggingSpec, description="automatic tagging of undeclared columns")
    privacy: PrivacyPolicy = Field(..., description="the privacy policy: the gates the release must pass")
    method: MethodSpec = Field(..., description="the sanitization method and its parameters, chosen by name")
    tuning: TuningSpec = Field(default_factory=TuningSpec, description="how the method's tunable parameter is "
                                                                       "chosen")
    utility: UtilitySpec = Field(default_factory=UtilitySpec, description="the utility step: classifier, held-out "
                                                                          "share and utility gates")
    publish: PublishSpec = Field(..., description="where the release is published")
    runner: RunnerSpec = Field(default_factory=RunnerSpec, description="where the flow's tasks run")
    series: SeriesSpec = Field(default_factory=SeriesSpec, description="the release series: which earlier releases "
                               "of the dataset under the root this one is judged with (all by default), and whether "
                               "it keeps their group memberships")
    seed: int = Field(0, ge=0, lt=2**32, description="seed of every random choice of the run (hold-out split, "
                                                     "method, tuning, query attacker); 0 <= seed < 2^32")
    # the method parameters (k, l, t) that took the policy's value because the spec left them unset
    _inherited: tuple[str, ...] = PrivateAttr(default=())

    @field_validator("columns")
    @classmethod
    def _normalise_columns(cls, value: dict[str, Role | ColumnSpec]) -> dict[str, Role | ColumnSpec]:
        classes = [name for name, c in value.items() if _role_of(c) is Role.class_]
        if len(classes) > 1:
            raise ValueError(f"at most one class column may be declared, got {', '.join(classes)}")
        return value

    @model_validator(mode="after")
    def _without_a_class(self) -> ReleaseSpec:
        """No class column declared: no classifier (utility needs no label, nothing is held out); a gate or a
        classifier the spec writes that needs one is an error naming its key."""
        if self.declared_class() is not None or self.utility.classifier == "none":
            return self
        gates = self.utility.accuracy_gates()
        if gates:
            raise ValueError(f"{gates[0]} is an accuracy gate and needs a class column: declare one (role: class) "
                             "or remove the gate")
        if "classifier" in self.utility.model_fields_set:
            raise ValueError(f"utility.classifier {self.utility.classifier} needs a class column: declare one (role: "
                             "class) or set utility.classifier: none")
        held = [f"utility.{key}" for key in ("tstr", "regression") if key in self.utility.model_fields_set
                and getattr(self.utility, key)]
        if held:
            raise ValueError(f"{held[0]} is tested on held-out real rows, which only a class column's hold-out gives: "
                             "declare one (role: class) or remove the key")
        utility = self.utility.model_copy(update={"classifier": "none", "min_accuracy_ratio": None, "tstr": []})
        utility._check_rank_by()
        self.__dict__["utility"] = utility
        return self

    @model_validator(mode="after")
    def _regression_targets(self) -> ReleaseSpec:
        """A regression target declared in columns must be a numeric attribute (not an identifier, not the class,
        not declared nominal or ordinal); an undeclared one is checked once the input is tagged."""
        declared = self.declared()
        for name in self.utility.regression:
            column = declared.get(name)
            if column is None:
                continue
            if column.role in (Role.identifier, Role.class_):
                raise ValueError(f"utility.regression: column '{name}' is declared {column.role.value}: a regression "
                                 "target is a numeric attribute")
            if column.kind is not None and column.kind is not ColumnKind.numeric:
                raise ValueError(f"utility.regression: column '{name}' is declared {column.kind.value}: a regression "
                                 "target is a numeric attribute")
        return self

    @model_validator(mode="after")
    def _cross_checks(self) -> ReleaseSpec:
        cls, name = type(self.method), self.method.name  # the method's traits are its parameter model's
        unit = cls.unit
        listed = set(self.privacy.not_applicable)  # set, kept as written, not judged (see PrivacyPolicy)
        judged = [g for g in gates_set(self.privacy) if g not in listed]
        wrong = [g for g in judged if unit not in GATE_UNITS[g]]
        if wrong:
            raise ValueError(
                f"privacy.{wrong[0]} does not apply to method {name}, whose privacy unit is {unit} "
                f"(gates for {unit}: {', '.join(g for g, units in GATE_UNITS.items() if unit in units)})")
        applying = [g for g in self.privacy.not_applicable if unit in GATE_UNITS[g]]
        if applying:
            raise ValueError(f"privacy.not_applicable: {applying[0]} applies to method {name} (unit {unit}): a gate "
                             "that applies is judged (remove it from not_applicable)")
        if not judged:
            raise ValueError(f"privacy: no gate is set for method {name} (unit {unit}); set at least one of "
                             f"{', '.join(g for g, units in GATE_UNITS.items() if unit in units)}")
        tunable = list(cls.tunable)
        parameter = self.tuning.parameter or (tunable[0] if tunable else None)
        if self.tuning.parameter is not None and self.tuning.parameter not in tunable:
            raise ValueError(f"tuning.parameter {self.tuning.parameter!r} is not tunable for method {name} "
                             f"(tunable: {', '.join(tunable) or 'none'})")
        value = getattr(self.method, parameter) if parameter else None
        k = self.privacy.k if "k" not in listed else None  # a k that does not apply bounds no method parameter
        inherit: dict[str, object] = {name: getattr(self.privacy, name) for name in ("k", "l", "t")
                   if name in type(self.method).model_fields and getattr(self.method, name) is None
                   and getattr(self.privacy, name) is not None and name not in listed
                   and (name != parameter or self.tuning.strategy == "fixed")}
        if inherit:  # a method's k (l, t) defaults to the policy's when it is not tuned
            self.__dict__["method"] = self.method.model_copy(update=inherit)
            self._inherited = tuple(inherit)
            value = getattr(self.method, parameter) if parameter else None
        fixed = [name for name in tunable if name != parameter and name != "k"]
        if self.tuning.strategy == "fixed" and parameter is not None:
            fixed.insert(0, parameter)
        missing = [name for name in fixed if getattr(self.method, name) is None]
        if missing:
            how = "when tuning.strategy is fixed" if self.tuning.strategy == "fixed" else \
                f"when tuning.parameter is {parameter}"
            raise ValueError(f"method.{missing[0]} is required {how}")
        if self.tuning.strategy != "fixed" and value is not None:
            raise ValueError(f"method.{parameter} is set but tuning.strategy is {self.tuning.strategy}: "
                             "set one or the other")
        if self.tuning.strategy == "lattice" and parameter not in cls.lattice_parameters:
            raise ValueError(f"tuning.strategy lattice needs a parameter of generalization levels; method {name} "
                             f"has none (use grid, bisect or suggested)")
        if self.series.keep_groups and not cls.keeps_groups:
            raise ValueError(f"series.keep_groups: method {name} cannot keep earlier group memberships")
        if self.series.keep_groups and self.tuning.strategy != "fixed":
            raise ValueError("series.keep_groups needs tuning.strategy fixed: kept groups keep the size they had, "
                             "and a k tuned anew each release would suppress them")
        if self.privacy.budget is not None and not unit_of(unit).spends_budget:
            raise ValueError(f"privacy.budget applies to differentially private methods; method {name} has unit "
                             f"{unit} (its series is judged by the composition gates)")
        if parameter == "k" and k is not None and self.tuning.max is not None and self.tuning.max < k:
            raise ValueError(f"tuning.max ({self.tuning.max:g}) is below privacy.k ({k})")
        if parameter == "k" and k is not None:
            if value is not None and value < k:
                raise ValueError(f"method.k ({value}) is below privacy.k ({k})")
            if self.tuning.min is not None and self.tuning.min < k:
                raise ValueError(f"tuning.min ({self.tuning.min:g}) is below privacy.k ({k}): "
                                 "the tuner could choose a group size the privacy gate rejects")
        return self

    # -- convenient views -------------------------------------------------------------------------
    @property
    def inherited(self) -> tuple[str, ...]:
        """The method parameters (``k``, ``l``, ``t``) the spec left unset and that took the policy's value."""
        return self._inherited

    def declared(self) -> dict[str, ColumnSpec]:
        """Declared columns, every entry as a ColumnSpec."""
        return {n: c if isinstance(c, ColumnSpec) else ColumnSpec(role=c) for n, c in self.columns.items()}

    def declared_class(self) -> str | None:
        return next((n for n, c in self.declared().items() if c.role is Role.class_), None)

    @property
    def classifies(self) -> bool:
        """Whether the utility step trains a classifier (a class column is declared and ``utility.classifier`` is
        not none); otherwise no row is held out and utility is measured without a label."""
        return self.utility.classifier != "none"

    @property
    def rare_k(self) -> int:
        """No published categorical value may occur fewer times than this in the input: privacy.k, or 2."""
        return self.privacy.k or 2

    @property
    def label_k(self) -> int:
        """A class label is named (manifest, report, CLI, artifacts) only when the published data holds it at least
        this many times: the rare-value rule's k, and the method's own k where it has one."""
        return max(self.rare_k, int(getattr(self.method, "k", None) or 0))


def _role_of(entry: Role | ColumnSpec) -> Role:
    return entry.role if isinstance(entry, ColumnSpec) else entry
