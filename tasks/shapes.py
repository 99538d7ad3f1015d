"""Release shapes: what kind of release a method makes, and everything the flow, the tuner and the comparison do
differently for it.

A method names its shape (``Sanitizer.shape``: the methods import only the core and the schemas, so they name it
rather than import it; :func:`shape_of`). A shape owns:

* which rows the method is given (:meth:`ReleaseShape.settle`: the training rows, or every input row) and
  whether the rare-value rule leaves the quasi-identifiers to the method (:meth:`ReleaseShape.rare_rule_skip`);
* how one tuning evaluation is scored (:meth:`ReleaseShape.score`: the privacy figure, the policy check and the
  accuracy);
* how the release's privacy (:meth:`ReleaseShape.measure_privacy`) and utility
  (:meth:`ReleaseShape.measure_utility`) are measured;
* what is published (:meth:`ReleaseShape.tables`, :meth:`ReleaseShape.extra_files`) and how it is counted and
  described (:meth:`ReleaseShape.records`, :meth:`ReleaseShape.summary`).

The shapes:

* :data:`ROWS`: rows standing for the training rows (grouped, perturbed, generated: every method but those below);
  the held-out rows are never sanitized nor published, utility trains on the release and tests on them.
* :data:`EVERY_ROW`: a recoding of every input row (generalization, Mondrian): every published quasi-identifier
  value is shared by a class of at least k records by construction; utility trains on the published rows of the
  training split and tests on the published rows of the held-out split.
* :data:`PARTS`: several tables, each over a feature subset and the class, each k-anonymous over its own
  quasi-identifiers (DMPD, :class:`~ppdp.schemas.release.PartsRelease`); utility is paper 001's per-part classifier.

The flow and the tuner call these methods and never branch on a method or a shape (``tests/test_layering.py``
states the rule). What a release's privacy is measured over is the shapes' counterpart, its privacy unit
(:mod:`ppdp.schemas.units`): an object too, never a name compared (``tests/test_rule_units.py``). Plain
functions: nothing here imports Prefect; the heavier modules (scikit-learn through the utility step, matplotlib
through the plots) are imported when used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.release import PartsRelease, Release
from ppdp.schemas.reports import PrivacyReport, RareCategoryReport, Roles
from ppdp.schemas.units import unit_of
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.marginals import marginal_distances, similarity
from ppdp.tasks.plots import pareto_plot_png
from ppdp.tasks.privacy.judge import judge_release
from ppdp.tasks.privacy.measure import interval_privacy, measure_release
from ppdp.tasks.privacy.parts import measure_release_parts
from ppdp.tasks.privacy.validate import load_hierarchies, read_table_file
from ppdp.tasks.rare import merge_rare_on_published
from ppdp.tasks.utility import (
    accuracy,
    decode_generalized,
    evaluate_parts_utility,
    evaluate_utility,
    feature_encoder,
    fit_baselines,
    join_rows,
    parts_accuracy,
    release_information_loss,
    split_release,
)

if TYPE_CHECKING:
    from ppdp.schemas.methods import Protection
    from ppdp.schemas.spec import ReleaseSpec
    from ppdp.tasks.core.encoding import TableEncoder


class Judged(Protocol):
    """What a shape needs to know of a method to judge its release (a sanitizer class or instance)."""

    @property
    def protects(self) -> Protection: ...

    def protected_columns(self, roles: Roles) -> list[str]: ...


class Method(Judged, Protocol):
    """A method as the flow's steps receive it (a sanitizer class or instance): what it protects and its shape."""

    @property
    def shape(self) -> str: ...


@dataclass(frozen=True)
class PreparedRows:
    """The rows of a release after the rare-value rule and the hold-out, as its shape uses them.

    Attributes
    ----------
    source : DataFrame
        The rows the method sanitizes (a prefix of ``everything``).
    train, test : DataFrame
        The training rows and the held-out rows (utility's baseline and test rows).
    everything : DataFrame
        Every input record after the rare-value rule (the held-out ones too), ``source`` first.
    prints : ndarray
        Each record's keyed fingerprint, aligned with ``everything``.
    rare : RareCategoryReport
        What the rare-value rule merged.
    original : DataFrame, optional
        The input rows before the rare-value rule (identifiers protected): what the label-free utility measures
        compare the release with (:attr:`baseline`); None: ``everything``.

    Without a classifier (no class column, or ``utility.classifier: none``) nothing is held out: ``test`` is empty
    and ``train`` holds every record.
    """

    source: pd.DataFrame
    train: pd.DataFrame
    test: pd.DataFrame
    everything: pd.DataFrame
    prints: np.ndarray
    rare: RareCategoryReport
    original: pd.DataFrame | None = None

    @property
    def source_prints(self) -> np.ndarray:
        return self.prints[:len(self.source)]

    @property
    def baseline(self) -> pd.DataFrame:
        """The input table the label-free utility measures compare the published table with."""
        return self.everything if self.original is None else self.original


@dataclass(frozen=True)
class Score:
    """One run of a tuning evaluation: the privacy figure (larger is more private; None without one), whether the
    policy holds (None when not checked), the held-out accuracy and the accuracy per class (by label)."""

    privacy: float | None
    meets_policy: bool | None
    accuracy: float
    per_class: dict[str, float]


def meets_policy(report: PrivacyReport) -> bool:
    """Every gate passes and the release meets the safety floor (or the policy accepts publishing below it)."""
    return report.passed and report.floor is not None and report.floor.publishable


class ReleaseShape(ABC):
    """A kind of release (see the module docstring). Stateless: the shapes are the module's constants."""

    name: str
    release_type: type[Release] = Release
    """The kind of release the shape's methods return (a subclass may carry more)."""

    def __repr__(self) -> str:
        return f"<release shape {self.name}>"

    # -- preparing the rows ----------------------------------------------------------------------------------
    def rare_rule_skip(self, roles: Roles) -> tuple[str, ...]:
        """Columns the rare-value rule leaves to the method (none: every published value is counted)."""
        return ()

    def settle(self, protected: pd.DataFrame, train: pd.DataFrame, test: pd.DataFrame, roles: Roles, k: int,
               rare: RareCategoryReport, prints: np.ndarray, joined_prints: np.ndarray) -> PreparedRows:
        """The rows after the hold-out (``prints``: the fingerprints aligned with ``protected``; ``joined_prints``:
        aligned with the training rows then the held-out rows). Default: only the training rows are published, so
        the rare-value rule counts again on them."""
        train, test, rare = merge_rare_on_published(train, test, roles, k, rare, self.rare_rule_skip(roles))
        return PreparedRows(source=train, train=train, test=test, everything=join_rows(train, test).reset_index(
            drop=True), prints=joined_prints, rare=rare)

    def tuning_rows(self, train: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
        """The rows a tuning evaluation sanitizes."""
        return train

    # -- tuning ----------------------------------------------------------------------------------------------
    @abstractmethod
    def score(self, method: Judged, release: Release, train: pd.DataFrame, test: pd.DataFrame, roles: Roles,
              classifier: str, policy: PrivacyThresholds, check_policy: bool, seed: int, encoder: TableEncoder,
              standardize: bool) -> Score:
        """One tuning run: ``release`` made from :meth:`tuning_rows`; ``encoder`` fitted on ``train``."""

    # -- measuring the release -------------------------------------------------------------------------------
    @abstractmethod
    def measure_privacy(self, method: Judged, source: pd.DataFrame, release: Release, roles: Roles,
                        spec: ReleaseSpec, everything: pd.DataFrame) -> PrivacyReport:
        """The release's privacy report: the unit's measures, the attacker's view, the safety floor, the gates."""

    @abstractmethod
    def measure_utility(self, spec: ReleaseSpec, release: Release, roles: Roles, prepared: PreparedRows
                        ) -> UtilityReport:
        """The release's utility report (classifiers trained on it, tested on held-out rows)."""

    # -- publishing ------------------------------------------------------------------------------------------
    def tables(self, release: Release) -> pd.DataFrame | dict[str, pd.DataFrame]:
        """What is written: one table, or tables by name."""
        return release.frame

    def frames(self, release: Release) -> list[pd.DataFrame]:
        """Every published table (for the output suite)."""
        tables = self.tables(release)
        return list(tables.values()) if isinstance(tables, dict) else [tables]

    def extra_files(self, release: Release, privacy: PrivacyReport) -> dict[str, bytes]:
        """Files published beside the tables, by name (plots)."""
        return {}

    def records(self, release: Release) -> int:
        """Records the release publishes."""
        return len(release.frame)

    def summary(self, release: Release) -> str:
        """The release's size in words, for the run's log."""
        return f"{self.records(release):,} records"


def _policy_tables(spec: ReleaseSpec) -> tuple[pd.DataFrame | None, dict[str, pd.DataFrame]]:
    """The tables the privacy policy names: its population (None without one) and its hierarchies by column."""
    policy = spec.privacy
    return (read_table_file(policy.population) if policy.population else None,
            load_hierarchies(policy.hierarchies))


def _judge_single(method: Judged, source: pd.DataFrame, release: Release, roles: Roles, spec: ReleaseSpec,
                  everything: pd.DataFrame) -> PrivacyReport:
    population, hierarchies = _policy_tables(spec)
    return judge_release(source, release, roles, spec.privacy, protects=method.protects,
                         protected=method.protected_columns(roles), seed=spec.seed, everything=everything,
                         population=population, hierarchies=hierarchies)


def _tuning_privacy(method: Judged, source: pd.DataFrame, release: Release, roles: Roles,
                    policy: PrivacyThresholds, check_policy: bool, seed: int, everything: pd.DataFrame | None
                    ) -> tuple[float | None, bool | None]:
    """A single table's privacy figure (generating_group: paper 000's interval privacy; equivalence_class: the
    smallest class; otherwise the DCR quantile) and, when asked, whether the policy and the floor hold."""
    figure: float | None
    unit = unit_of(release.unit)
    if unit.group_column:
        figure = interval_privacy(source, release, roles, seed=seed)
    elif unit.shares_quasi_identifiers:
        qis = [q for q in roles.quasi_identifiers if q in release.frame.columns]
        ids = equivalence_class_ids(release.frame, qis)
        figure = float(np.bincount(ids).min()) if ids.size else None
    else:
        figure = measure_release(source, release, roles, thresholds=policy, attack_queries=0).dcr_quantile
    meets = None
    if check_policy:
        report = judge_release(source, release, roles, policy, protects=method.protects,
                               protected=method.protected_columns(roles), seed=seed, everything=everything,
                               attack_queries=0)
        meets = meets_policy(report)
    return figure, meets


NO_CLASSIFIER = "none"
"""``utility.classifier`` when no classifier is trained: a tuning evaluation then scores the release by
:func:`ppdp.tasks.marginals.similarity` against the rows it was made from."""


def _label_free_score(rows: pd.DataFrame, release: Release, roles: Roles) -> tuple[float, dict[str, float]]:
    """A tuning evaluation's utility without a classifier: (marginal similarity, no per-class recall)."""
    return similarity(marginal_distances(rows, release.frame, roles)), {}


def _label_free_utility(spec: ReleaseSpec, release: Release, roles: Roles, prepared: PreparedRows,
                        report: UtilityReport | None, generalized: bool) -> UtilityReport:
    """``report`` (the classifier's) with the label-free measures of the published table against the input table
    added, or, without a classifier (``report`` None), a report of those measures and of the information loss
    against the rows the method was given (``generalized``: a recoding, see
    :func:`~ppdp.tasks.utility.release_information_loss`); no utility gate applies."""
    marginals = marginal_distances(prepared.baseline, release.frame, roles)
    if report is not None:
        return report.model_copy(update={"marginals": marginals})
    shift, corr = release_information_loss(prepared.source, release.frame, roles, generalized)
    return UtilityReport(classifier=None, train_rows=len(release.frame), test_rows=0, accuracy=None,
                         accuracy_original=None, ratio=None, per_class=[], mean_shift=shift, correlation_loss=corr,
                         marginals=marginals)


class _Rows(ReleaseShape):
    name = "rows"

    def score(self, method, release, train, test, roles, classifier, policy, check_policy, seed, encoder,
              standardize):
        everything = join_rows(train, test) if check_policy else None
        figure, meets = _tuning_privacy(method, train, release, roles, policy, check_policy, seed, everything)
        if classifier == NO_CLASSIFIER:
            acc, per_class = _label_free_score(train, release, roles)
        else:
            acc, per_class, _ = accuracy(release.frame, test, roles, classifier, encoder, seed)
        return Score(figure, meets, acc, per_class)

    def measure_privacy(self, method, source, release, roles, spec, everything):
        return _judge_single(method, source, release, roles, spec, everything)

    def measure_utility(self, spec, release, roles, prepared):
        report = evaluate_utility(prepared.train, release.frame, prepared.test, roles, spec.utility, spec.seed) \
            if spec.classifies else None
        return _label_free_utility(spec, release, roles, prepared, report, generalized=False)


class _EveryRow(ReleaseShape):
    name = "every_row"

    def rare_rule_skip(self, roles):
        # every published quasi-identifier value is shared by a class of at least k records by design, and the
        # method's hierarchies must see the input's own values
        return tuple(roles.rare_rule_skip)

    def settle(self, protected, train, test, roles, k, rare, prints, joined_prints):
        everything = protected.reset_index(drop=True)
        return PreparedRows(source=everything, train=train, test=test, everything=everything, prints=prints,
                            rare=rare)

    def tuning_rows(self, train, test):
        return join_rows(train, test)

    def score(self, method, release, train, test, roles, classifier, policy, check_policy, seed, encoder,
              standardize):
        source = self.tuning_rows(train, test)
        figure, meets = _tuning_privacy(method, source, release, roles, policy, check_policy, seed, source)
        if classifier == NO_CLASSIFIER:
            acc, per_class = _label_free_score(source, release, roles)
            return Score(figure, meets, acc, per_class)
        held = np.asarray(release.row_source) >= len(train)
        rel_train, view = decode_generalized(release.frame.loc[~held], roles)
        rel_test, _ = decode_generalized(release.frame.loc[held], roles)
        acc, per_class, _ = accuracy(rel_train, rel_test, view, classifier,
                                     feature_encoder(rel_train, view, standardize), seed)
        return Score(figure, meets, acc, per_class)

    def measure_privacy(self, method, source, release, roles, spec, everything):
        return _judge_single(method, source, release, roles, spec, everything)

    def measure_utility(self, spec, release, roles, prepared):
        report = None
        if spec.classifies:
            assert roles.class_column is not None
            published_train, published_test = split_release(release, prepared.everything, roles.class_column,
                                                            spec.utility.test_fraction, spec.seed)
            report = evaluate_utility(prepared.train, published_train, prepared.test, roles, spec.utility, spec.seed,
                                      published_test)
        return _label_free_utility(spec, release, roles, prepared, report, generalized=True)


def _parts(release: Release) -> PartsRelease:
    if not isinstance(release, PartsRelease):
        raise TypeError(f"a partitioned method returned a {type(release).__name__}, not a PartsRelease")
    return release


class _Parts(ReleaseShape):
    name = "parts"
    release_type = PartsRelease

    def score(self, method, release, train, test, roles, classifier, policy, check_policy, seed, encoder,
              standardize):
        release = _parts(release)
        # one report over every part gives the figure (the smallest class of any part) and the gates
        report = measure_release_parts(release, roles, policy, protected=method.protected_columns(roles))[0]
        figure = None if report.k is None else float(report.k)
        cls = roles.class_column
        assert cls is not None and release.recode is not None
        acc, per_class, _ = parts_accuracy({p.name: p.frame for p in release.parts}, release.recode(test),
                                           test[cls].astype(str).to_numpy(), cls, classifier, seed)
        return Score(figure, meets_policy(report) if check_policy else None, acc, per_class)

    def measure_privacy(self, method, source, release, roles, spec, everything):
        population, hierarchies = _policy_tables(spec)
        # every part over its own quasi-identifiers, the worst part claimed; each part's report kept for its entry
        combined, each = measure_release_parts(_parts(release), roles, spec.privacy, hierarchies or None, population,
                                               method.protected_columns(roles))
        return combined.model_copy(update={"part_reports": list(each)})

    def measure_utility(self, spec, release, roles, prepared):
        return evaluate_parts_utility(prepared.train, _parts(release), prepared.test, roles, spec.utility, spec.seed)

    def tables(self, release):
        return {p.name: p.frame for p in _parts(release).parts}

    def extra_files(self, release, privacy):
        png = pareto_plot_png(_parts(release).partition, privacy.k)
        return {"pareto.png": png} if png else {}

    def records(self, release):
        return max((len(p.frame) for p in _parts(release).parts), default=0)  # each part: one row per record

    def summary(self, release):
        return f"{self.records(release):,} records in {len(_parts(release).parts)} tables"


ROWS: ReleaseShape = _Rows()
EVERY_ROW: ReleaseShape = _EveryRow()
PARTS: ReleaseShape = _Parts()
SHAPES: Sequence[ReleaseShape] = (ROWS, EVERY_ROW, PARTS)
BY_NAME: dict[str, ReleaseShape] = {s.name: s for s in SHAPES}


# -- the steps the flows call (a method class or instance in, its shape's work out) ---------------------------
def rare_rule_skip(method: Method, roles: Roles) -> tuple[str, ...]:
    """The columns the rare-value rule leaves to ``method`` (:meth:`ReleaseShape.rare_rule_skip`)."""
    return shape_of(method).rare_rule_skip(roles)


def settle(method: Method, protected: pd.DataFrame, train: pd.DataFrame, test: pd.DataFrame, roles: Roles,
           k: int, rare: RareCategoryReport, prints: np.ndarray, joined_prints: np.ndarray,
           original: pd.DataFrame | None = None) -> PreparedRows:
    """:meth:`ReleaseShape.settle` for ``method``'s shape; ``original``: the input rows before the rare-value
    rule (:attr:`PreparedRows.original`)."""
    prepared = shape_of(method).settle(protected, train, test, roles, k, rare, prints, joined_prints)
    return prepared if original is None else replace(prepared, original=original)


def check_privacy(method: Method, source: pd.DataFrame, release: Release, roles: Roles, spec: ReleaseSpec,
                  everything: pd.DataFrame) -> PrivacyReport:
    """The privacy step: :meth:`ReleaseShape.measure_privacy` for ``method``'s shape."""
    return shape_of(method).measure_privacy(method, source, release, roles, spec, everything)


def prefit_utility(method: Method, spec: ReleaseSpec, roles: Roles, prepared: PreparedRows) -> None:
    """The utility check's baselines on the original rows, fitted ahead of it (every shape's check trains them on
    ``prepared.train`` and tests on ``prepared.test``): :func:`ppdp.tasks.utility.fit_baselines`."""
    if spec.classifies:
        fit_baselines(prepared.train, prepared.test, roles, spec.utility, spec.seed)


def check_utility(method: Method, spec: ReleaseSpec, release: Release, roles: Roles,
                  prepared: PreparedRows) -> UtilityReport:
    """The utility step: :meth:`ReleaseShape.measure_utility` for ``method``'s shape."""
    return shape_of(method).measure_utility(spec, release, roles, prepared)


def tables(method: Method, release: Release) -> pd.DataFrame | dict[str, pd.DataFrame]:
    return shape_of(method).tables(release)


def extra_files(method: Method, release: Release, privacy: PrivacyReport) -> dict[str, bytes]:
    return shape_of(method).extra_files(release, privacy)


def records(method: Method, release: Release) -> int:
    return shape_of(method).records(release)


def summary(method: Method, release: Release) -> str:
    return shape_of(method).summary(release)


def shape_of(method: Method) -> ReleaseShape:
    """The shape ``method`` declares (by name, ``Sanitizer.shape``)."""
    try:
        return BY_NAME[method.shape]
    except KeyError:
        raise TypeError(f"{method!r} declares the release shape {method.shape!r}, which is not one of "
                        f"{', '.join(BY_NAME)}") from None

