"""Release series: the spec's ``series`` section, the privacy budget, and what a release records about its series.

A dataset published again and again (a growing table, every night) is judged as an attacker holding every earlier
release would judge it. The publisher's series ledger (:mod:`ppdp.tasks.series`, never under the publish root)
keeps, for every release, a keyed fingerprint of each input record and where the record went (its class or group,
or its published row). Before a release is published, its records are intersected with their places in the
earlier releases that count (:class:`SeriesSpec`); a release that shrinks a record's candidate set below k, pins a
sensitive value, or lets averaged copies of a record link back to it, is refused (exit 3).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field

from ppdp.schemas.base import StrictModel
from ppdp.schemas.reports import Report


class SeriesSpec(StrictModel):
    """Which earlier releases of the dataset a release is judged with, and how it keeps memberships.

    By default every earlier release of the dataset under the same publish root counts (an attacker may hold them
    all). A window (``last`` releases, or those of the last ``within``) counts fewer: use it only when the older
    releases are withdrawn and could not have been kept by anyone; the manifest records the window used."""

    last: int | None = Field(None, ge=1, description="count only the latest N earlier releases of the dataset "
                                                      "(default: all of them)")
    within: timedelta | None = Field(None, description="count only the earlier releases made within this long "
                                                       "before this one (ISO 8601 duration, e.g. P90D; default: "
                                                       "all of them)")
    keep_groups: bool = Field(False, description="keep the classes or groups of the latest earlier release frozen "
                                                 "(methods that can: MDAV, condensation), after m-invariance: a kept "
                                                 "group publishes exactly its earlier rows (a member who left stays "
                                                 "as a counterfeit row), a group with fewer than k present members "
                                                 "is retired, new records are grouped among themselves or held until "
                                                 "k can form a group; the counts are in the manifest")


class Budget(StrictModel):
    """A privacy-loss budget for the dataset's differentially private releases (sequential composition: the
    epsilons and deltas of every counted DP release add up)."""

    epsilon: float = Field(..., gt=0, description="the total epsilon the dataset's DP releases may spend")
    delta: float | None = Field(None, ge=0, lt=1, description="the total delta they may spend (default: no limit "
                                                               "on delta beyond each release's own)")
    period: timedelta | None = Field(None, description="count only the DP releases made within this long before "
                                                       "this one (ISO 8601 duration, e.g. P365D; default: every DP "
                                                       "release of the dataset ever)")


class SeriesPair(Report):
    """This release composed with one earlier release of the dataset (records in both)."""

    release_id: str = Field(..., description="the earlier release")
    method: str = Field(..., description="its method")
    unit: str = Field(..., description="its privacy unit")
    common_records: int = Field(..., description="input records present in both releases (by fingerprint)")
    smallest_intersection: int | None = Field(
        None, description="classes and groups: the smallest number of records sharing a record's class (or group) in "
                          "both releases")
    records_below_k: float | None = Field(None, description="share of the common records whose intersection is "
                                                            "below k (0 to 1)")


class SeriesFigure(Report):
    """One composed figure of the series and whether it holds."""

    name: str = Field(..., description="what is measured")
    value: float = Field(..., description="the figure")
    limit: float = Field(..., description="its bound")
    comparison: Literal["<=", ">="] = Field(..., description="value must be <comparison> limit")
    holds: bool = Field(..., description="whether it holds")
    against: str | None = Field(None, description="the earlier release that breaks it first, if one does alone")
    detail: str = Field("", description="how it was measured")


class BudgetSpent(Report):
    """The dataset's differential-privacy budget: what earlier releases spent and what this one spends."""

    rule: str = Field("basic sequential composition: epsilons and deltas add up",
                      description="the composition rule")
    releases: int = Field(..., description="earlier DP releases counted")
    epsilon_before: float = Field(..., description="epsilon they spent")
    delta_before: float = Field(0.0, description="delta they spent")
    epsilon: float = Field(0.0, description="epsilon this release spends")
    delta: float = Field(0.0, description="delta this release spends")
    epsilon_limit: float | None = Field(None, description="the budget's epsilon (privacy.budget)")
    delta_limit: float | None = Field(None, description="the budget's delta")
    period: str | None = Field(None, description="the budget's period (ISO 8601), none: ever")
    holds: bool = Field(True, description="whether this release stays within the budget")


class SeriesReport(Report):
    """This release in its series: the earlier releases it was judged with and the composed figures.

    Re-checked by the publisher only (``ppdp series``): it needs the series ledger, which is never published."""

    ledger: Literal["recorded", "first"] = Field(
        ..., description="recorded: earlier releases were found in the ledger; first: this is the dataset's first "
                         "release under the root")
    window: str = Field("all earlier releases of the dataset", description="which earlier releases counted")
    earlier: list[str] = Field(default_factory=list, description="the earlier releases counted (ids)")
    fingerprinted_by: str = Field(..., description="what identifies a record across releases: the declared "
                                                   "identifiers, or the whole input record")
    k: int | None = Field(None, description="the k a record's candidate set must keep (the policy's k, else 2)")
    pairs: list[SeriesPair] = Field(default_factory=list, description="this release with each earlier one")
    figures: list[SeriesFigure] = Field(default_factory=list, description="the composed figures and their bounds")
    budget: BudgetSpent | None = Field(None, description="the DP budget (when a DP release is in the series or a "
                                                         "budget is set)")
    kept_members: int | None = Field(None, description="series.keep_groups: records placed in their previous group")
    held_records: int | None = Field(None, description="series.keep_groups: records held back, not published (new "
                                                       "records until k can form a group; members of retired groups)")
    counterfeit_rows: int | None = Field(None, description="series.keep_groups: published rows of frozen groups that "
                                                           "stand for no present record (members who left or were "
                                                           "erased)")
    retired_groups: int | None = Field(None, description="series.keep_groups: groups of the previous release not "
                                                         "published again (fewer than k present members)")
    holds: bool = Field(True, description="whether every composed figure and the budget hold")

    @property
    def failed(self) -> list[SeriesFigure]:
        return [f for f in self.figures if not f.holds]


class SeriesEntry(Report):
    """One release of a dataset as ``ppdp series`` lists it."""

    release_id: str
    created_at: str
    method: str
    unit: str
    records: int
    k: int | None = None
    epsilon: float | None = None
    delta: float | None = None
    state: str = Field(..., description="published, or rolled back / never published (not counted)")
