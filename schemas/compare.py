"""``ppdp compare``: one row per registered method run on the spec's data, and the comparison's result.

Aggregates only: figures, method and column names, one-line reasons. A row's ``spec`` (the spec that publishes
the method with its tuned value fixed, for ``--write-spec``) is kept in memory and never dumped with the row.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ppdp.schemas.reports import Report

Status = Literal["passes", "refused", "not_applicable", "not_run", "error"]
"""passes: policy, safety floor and utility gates hold; refused: one of them fails (or the tuner found no value that
passes the policy); not_applicable: the method cannot run on this table or spec (its own check says why); not_run: a
differentially private method, never run by compare (a run would spend privacy budget on the input's rows that no
ledger counts); error: an unexpected failure (its type only: a message may quote data)."""


class CompareRow(Report):
    """One method as ``ppdp compare`` ran it: tuned with its default strategy, judged like a release."""

    method: str = Field(..., description="the registered method's name")
    unit: str | None = Field(None, description="the method's privacy unit")
    protects: str | None = Field(None, description="what the method protects (identity or attribute)")
    status: Status = Field(..., description="passes, refused, not_applicable or error (see Status)")
    reason: str | None = Field(None, description="one line: why the method was refused or cannot apply")
    parameter: str | None = Field(None, description="the tuned parameter (None: the method has none)")
    tuned: str | None = Field(None, description="the tuned value as written in a spec (k=23; levels age=2, zip=1)")
    strategy: str | None = Field(None, description="the tuning strategy used (the method's default)")
    tuning_rule: str | None = Field(None, description="why the tuner chose the value, in one line")
    evaluations: int = Field(0, description="values the tuner evaluated (a lattice: nodes checked)")
    policy: list[str] = Field(default_factory=list, description="the gates the method was held to (key, comparison, "
                                                               "threshold)")
    policy_source: Literal["spec", "floor"] | None = Field(
        None, description="spec: the spec's gates that apply to the method's unit; floor: none applies, so the "
                          "safety floor's limits written as gates (and k = the rare-value rule's k for classes and "
                          "groups)")
    not_applicable: list[str] = Field(default_factory=list, description="the spec's gates that do not apply to the "
                                      "method's privacy unit: kept in its spec as privacy.not_applicable, not judged")
    not_applicable_reason: str | None = Field(None, description="one line: which gates of the spec do not apply to "
                                                                "the method's unit, and why")
    policy_holds: bool | None = Field(None, description="every gate of the method's policy holds")
    policy_measured: bool | None = Field(None, description="at least one judged gate of the method's policy rests on "
                                                           "a figure measured on the release (False: every one is "
                                                           "fixed by construction, so the policy does not judge it)")
    by_construction: dict[str, str] = Field(
        default_factory=dict, description="gates whose figure is fixed by the release's construction whatever the "
                                          "data, each with why; such a figure is left out of the row and never "
                                          "decides the recommendation")
    floor_holds: bool | None = Field(None, description="every applicable row of the safety floor holds")
    utility_holds: bool | None = Field(None, description="every utility gate of the spec holds")
    floor_failed: list[str] = Field(default_factory=list, description="each failed floor row, in one line")
    records: int | None = Field(None, description="published records measured")
    identity_by: str | None = Field(None, description="how identities are hidden (classes, groups, records, ...)")
    records_alone: float | None = Field(None, description="attacker's view: share of records alone on what they "
                                                          "know (0 to 1)")
    smallest_class: int | None = Field(None, description="attacker's view: rows sharing the rarest known combination")
    average_risk: float | None = Field(None, description="attacker's view: mean 1 / class size (generating groups: "
                                                         "mean 1 / group size, the figure the floor judges)")
    exact_copies: float | None = Field(None, description="attacker's view: share of published rows that are an input "
                                                         "record verbatim")
    linkage_risk: float | None = Field(None, description="attacker's view: share of input records whose nearest "
                                                         "published record stands for them")
    disclosure_gain: float | None = Field(None, description="attacker's view: largest attribute disclosure gain "
                                                            "over the best constant guess")
    epsilon: float | None = Field(None, description="differentially private methods: the mechanism's epsilon")
    accuracy: float | None = Field(None, description="the spec's classifier trained on the release, tested on the "
                                                     "held-out original rows")
    accuracy_original: float | None = Field(None, description="the same classifier trained on the original rows")
    accuracy_ratio: float | None = Field(None, description="accuracy / accuracy_original")
    two_way_distance: float | None = Field(None, description="label-free utility: the mean 2-way marginal distance "
                                                             "between the release and the input (0: the same); what "
                                                             "ranks the methods when no classifier is trained")
    tstr: dict[str, float] = Field(default_factory=dict, description="train on the release, test on the held-out "
                                                                     "real rows: accuracy per classifier of "
                                                                     "utility.tstr")
    tstr_original: dict[str, float] = Field(default_factory=dict, description="the same classifiers trained on the "
                                                                              "original training rows")
    regression: dict[str, float | None] = Field(default_factory=dict, description="R^2 on the held-out real rows per "
                                                                                  "column of utility.regression, "
                                                                                  "trained on the release")
    accuracy_constant: float | None = Field(None, description="accuracy of always predicting the training rows' most "
                                                              "common class on the same held-out rows")
    signal: bool | None = Field(None, description="the classifier trained on the release recalls rows of at least two "
                                                  "classes (False: it recalls rows of one class only)")
    mean_shift: float | None = Field(None, description="information loss: mean |mean shift| / sd over attributes")
    correlation_loss: float | None = Field(None, description="information loss: mean |correlation difference|")
    loss_measures: dict[str, float] = Field(default_factory=dict, description="a lattice search's ARX measures of "
                                                                              "the chosen node (loss, ...)")
    promoted: list[str] = Field(default_factory=list, description="columns published beside the quasi-identifiers "
                                                                  "that were made quasi-identifiers (as ppdp run "
                                                                  "does)")
    reproducible: bool = Field(True, description="the same spec, data and seed give the same figures (False for a "
                                                 "method whose noise takes no seed)")
    seconds: float = Field(0.0, description="wall-clock seconds of the method's row: hold-out, tuning, sanitizing, "
                                            "judging")
    spec: dict[str, Any] | None = Field(None, exclude=True, description="in memory only: the spec publishing this "
                                                                         "method with its tuned value fixed")

    @property
    def eligible(self) -> bool:
        """Policy, safety floor and utility gates all hold (``ppdp run`` would publish it), the policy judges a
        measured figure and the classifier tells classes apart on it: the rows the recommendation chooses from."""
        return self.status == "passes" and self.signal is not False and self.policy_measured is not False


class CompareResult(Report):
    """The comparison: every row, the recommended method and why, and the rules that decided."""

    dataset: str = Field(..., description="the spec's dataset")
    input_digest: str | None = Field(..., description="keyed digest of the input file compared on (HMAC-SHA256 of its "
                                                      "SHA-256 under the publisher's key, as a release's manifest "
                                                      "names its input)")
    input_key_id: str | None = Field(None, description="id of the key input_digest was made under")
    input_rows: int = Field(..., description="rows read from the input")
    seed: int = Field(..., description="the spec's seed (every random choice derives from it)")
    runner: str = Field(..., description="where the methods ran (thread or dask)")
    classifier: str = Field(..., description="the utility classifier (the spec's utility.classifier)")
    rank_by: str = Field("accuracy_ratio", description="the utility that ranked the methods (the spec's "
                         "utility.rank_by, resolved): tstr:<classifier>, accuracy_ratio, two_way or "
                         "regression:<column>")
    min_accuracy_ratio: float | None = Field(None, description="the spec's utility gate on the accuracy ratio")
    risk_gates: dict[str, float] = Field(default_factory=dict, description="the spec's gates on the plotted risks "
                                                                          "(max_average_risk, max_linkage_risk)")
    rows: list[CompareRow] = Field(..., description="one row per method, ranked: passing methods by the "
                                                    "recommendation rule, then refused, not applicable, errors")
    recommended: str | None = Field(None, description="the recommended method; None when no method passes")
    recommendation: str = Field(..., description="the recommendation in one line")
    rule: str = Field(..., description="the recommendation rule")
    policy_rule: str = Field(..., description="the rule that decides each method's policy")
    notes: list[str] = Field(default_factory=list, description="what to keep in mind reading the table (one line "
                                                               "each)")
    not_carried: list[str] = Field(default_factory=list, description="parts of the spec's policy the recommended "
                                                                     "method's spec does not carry, each with why")
    seconds: float = Field(0.0, description="wall-clock seconds of the whole comparison")

    def row(self, method: str) -> CompareRow:
        return next(r for r in self.rows if r.method == method)
