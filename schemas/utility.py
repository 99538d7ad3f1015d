"""The utility report of a release: accuracy per class, delta R, TSTR and regression scores, marginal distances,
and the utility gates. Counts, rates and column names only; never a data value."""

from __future__ import annotations

from pydantic import Field

from ppdp.schemas.reports import GateResult, Report


class ClassAccuracy(Report):
    """Accuracy on one class of the held-out rows, for the release and for the original."""

    label: str = Field(..., description="the class: its label in the class column (a column the release "
                                        "publishes)")
    support: int = Field(..., description="held-out rows of this class")
    sanitized: float = Field(..., description="recall on this class (share of its held-out rows classified "
                                              "correctly, 0 to 1), trained on the release")
    original: float = Field(..., description="the same, trained on the original training rows")


class DeltaR(Report):
    """Paper 004's utility criterion for one classifier: ΔR = R_p - (1 - epsilon) R_o."""

    classifier: str = Field(..., description="the classifier (one of the spec's utility.delta_r.classifiers)")
    accuracy: float = Field(..., description="R_p: trained on the release, tested on held-out original rows")
    accuracy_original: float = Field(..., description="R_o: trained on the original training rows")
    value: float = Field(..., description="R_p - (1 - epsilon) R_o; the criterion holds when >= 0")


class MarginalDistances(Report):
    """Utility measures that need no label (:mod:`ppdp.tasks.marginals`): how far the release's 1-way and 2-way
    marginal distributions and its numeric columns' correlations are from its input's (0: the same)."""

    columns: int = Field(..., description="columns compared (published columns that are input columns, direct "
                                          "identifiers aside)")
    pairs: int = Field(..., description="column pairs compared (2-way)")
    numeric_columns: int = Field(..., description="compared columns read as numbers (binned on bins fixed from the "
                                                  "input; interval labels read as their midpoint)")
    bins: int = Field(..., description="most equal-frequency bins of a numeric column, fixed from the input")
    one_way: float | None = Field(..., description="1-way marginal distance: total variation distance (0 to 1) of "
                                                   "each column's distribution, mean over the columns")
    one_way_worst: float | None = Field(None, description="the largest 1-way distance of one column")
    two_way: float | None = Field(..., description="2-way marginal distance: total variation distance (0 to 1) of "
                                                   "each column pair's joint distribution, mean over the pairs; null "
                                                   "with fewer than two columns")
    correlation_difference: float | None = Field(
        ..., description="mean absolute difference of the pairwise Pearson correlations of the numeric columns "
                         "(0 to 2); null with fewer than two numeric columns")


class TstrScore(Report):
    """Train on the release, test on real rows (TSTR) for one classifier of the spec's ``utility.tstr``."""

    classifier: str = Field(..., description="the classifier (one of the spec's utility.tstr)")
    accuracy: float = Field(..., description="trained on the release, tested on the held-out real rows")
    accuracy_original: float = Field(..., description="baseline: the same classifier trained on the original "
                                                      "training rows, tested on the same held-out rows")


class RegressionScore(Report):
    """One regression target of the spec's ``utility.regression``: a HistGradientBoostingRegressor predicting the
    column from the other published attributes, scored by R^2 on the held-out real rows."""

    column: str = Field(..., description="the numeric column predicted (one of the spec's utility.regression)")
    r2: float | None = Field(..., description="R^2 on the held-out real rows, trained on the release (1: exact; 0: "
                                              "no better than the mean of the held-out rows; can be negative); null "
                                              "when the release does not publish the column as numbers")
    r2_original: float | None = Field(..., description="baseline: trained on the original training rows")
    test_rows: int = Field(..., description="held-out rows scored (those with a value in the column)")


class UtilityReport(Report):
    """The utility step: the spec's classifier trained on the release and on the original training rows, both
    tested on held-out rows; information loss; the label-free marginal distances; the utility gates. Without a
    classifier (no class column, or ``utility.classifier: none``) nothing is held out and only the label-free
    measures are reported (the classifier's fields are null)."""

    classifier: str | None = Field(..., description="the classifier (the spec's utility.classifier); null when no "
                                                    "classifier was trained (no class column, or classifier none)")
    train_rows: int = Field(..., description="published rows the classifier was trained on (without a classifier: "
                                             "the published rows measured)")
    test_rows: int = Field(..., description="held-out rows it was tested on (0 without a classifier)")
    accuracy: float | None = Field(..., description="trained on the release, tested on held-out original rows; null "
                                                    "without a classifier")
    accuracy_original: float | None = Field(..., description="the same classifier trained on the original training "
                                                             "rows; null without a classifier")
    ratio: float | None = Field(..., description="accuracy / accuracy_original; null when accuracy_original is 0 or "
                                                 "there is no classifier")
    per_class: list[ClassAccuracy] = Field(..., description="accuracy (recall) on each class of the held-out rows")
    marginals: MarginalDistances | None = Field(
        None, description="label-free utility: 1-way and 2-way marginal distance and correlation difference between "
                          "the published table and the input table (null for a partitioned release)")
    mean_shift: float = Field(
        ..., description="information loss: mean over encoded attributes of |mean(release) - mean(original)| / sd"
    )
    correlation_loss: float = Field(
        ..., description="information loss: mean absolute difference of pairwise attribute correlations"
    )
    delta_r: list[DeltaR] = Field(default_factory=list, description="paper 004's criterion per classifier")
    tstr: list[TstrScore] = Field(default_factory=list, description="train on the release, test on the held-out real "
                                                                    "rows, per classifier of utility.tstr (empty "
                                                                    "without a classifier)")
    regression: list[RegressionScore] = Field(default_factory=list, description="R^2 per regression target of "
                                                                                "utility.regression")
    delta_r_epsilon: float | None = Field(None, description="epsilon of paper 004's criterion (the spec's "
                                                            "utility.delta_r.epsilon); null when that gate is off")
    gates: list[GateResult] = Field(default_factory=list, description="the utility gates (min_accuracy_ratio, "
                                                                      "delta_r): value, threshold, passed")

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> list[GateResult]:
        return [g for g in self.gates if not g.passed]
