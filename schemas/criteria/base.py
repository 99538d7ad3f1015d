"""What a privacy criterion is: the small interface the measuring and deciding steps call (after ARX's
``org.deidentifier.arx.criteria.PrivacyCriterion``: one class per criterion).

A criterion declares its threshold field(s) of the privacy policy (:class:`Threshold`: name, type, pydantic field with
description, bounds and default, and the ``ppdp validate`` option's help text), the privacy units it applies to, the
settings it cannot run without, the thresholds no release can fail, what it must measure beyond the shared figures
(:meth:`Criterion.measure`, only when its threshold is set) and its gate: the measured report and the threshold in,
pass/fail claims out (:meth:`Criterion.claims`, through :class:`Judge`, which words every claim alike).

The schema layer holds it so that the policy model (:mod:`ppdp.schemas.privacy`) is generated from the registry
(:data:`ppdp.schemas.criteria.registry.CRITERIA`) while the spec stays readable without the algorithms: the shared
partition into classes and the models over it are computed by ``ppdp.tasks.privacy`` and reach a criterion as figures
of the report or through :class:`ClassTable`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ppdp.schemas.criteria.floor import FloorRule
from ppdp.schemas.methods import GROUP_COLUMN, Unit
from ppdp.schemas.reports import Claim, PrivacyReport
from ppdp.schemas.units import PrivacyUnit, unit_of

if TYPE_CHECKING:  # the policy is read without the numerical packages (ppdp --help loads this module)
    import numpy as np
    import pandas as pd

CLASS_UNITS: tuple[Unit, ...] = ("equivalence_class", "generating_group")
"""The units whose rows fall into classes (equivalence classes or generating groups)."""


@dataclass(frozen=True)
class MeasureDetail:
    """A model's value and where it is attained (computed by ``ppdp.tasks.privacy.models`` or a criterion's
    :meth:`Criterion.measure`; never a data value).

    Attributes
    ----------
    value
        The value, shaped as pyCANON returns it (``int``, ``float`` or a tuple).
    worst_class
        Id of the equivalence class attaining the value (in the numbering of
        ``tasks.core.groups.equivalence_class_ids``), or ``None`` when no single class does.
    worst_attribute
        Name of the sensitive attribute attaining the value, or ``None`` for k-anonymity.
    """

    value: Any
    worst_class: int | None
    worst_attribute: str | None


@dataclass(frozen=True)
class Threshold:
    """One field of the privacy policy a criterion owns: its name, type and pydantic field (description, bounds,
    default); ``option``: the ``ppdp validate`` option's help text (None: no option, the field needs a release or is
    given otherwise), ``metavar`` its metavar (None: typer's); ``after``: place the field after that one in the
    policy (a setting shared by several criteria, kept where the policy always had it; empty: in its criterion's
    place)."""

    name: str
    annotation: Any
    field: Any  # a pydantic FieldInfo (Field(...), which type checkers take for its default)
    option: str | None = None
    metavar: str | None = None
    after: str = ""


@dataclass(frozen=True)
class ClassTable:
    """What a criterion may measure beyond the shared figures: the measured table, its classes (the columns they
    are over, each row's class id and each class's size), the sensitive attributes, the policy's tables (a
    population, hierarchies) and ``count_in``: each class's number of rows in another table with the same columns
    (classes matched on their values as published, a missing value matching a missing one)."""

    frame: pd.DataFrame
    classes: list[str]
    sensitive: list[str]
    ids: np.ndarray
    sizes: np.ndarray
    population: pd.DataFrame | None
    count_in: Callable[[pd.DataFrame], np.ndarray]


@dataclass(frozen=True)
class Judge:
    """Turns a measured figure and a threshold into a :class:`Claim`, worded alike for every criterion: the unit's
    class label, where the figure is worst (``report.details``), and fail closed (a figure that could not be computed,
    or a gate that does not apply to the unit, fails). ``judged``: the gates the policy sets and judges; ``known``:
    the attacker's known columns in words (None: no attacker's view)."""

    report: PrivacyReport
    judged: frozenset[str]
    known: str | None = None

    @property
    def unit(self) -> str:
        return self.report.unit

    @property
    def kind(self) -> PrivacyUnit:
        """The report's unit as an object (what it counts, what its claims compare)."""
        return unit_of(self.report.unit)

    @property
    def label(self) -> str:
        return self.kind.claim_label

    @property
    def classes_over(self) -> str:
        return GROUP_COLUMN if self.kind.group_column else "the quasi-identifiers"

    @property
    def per_class(self) -> str:
        return f"per {self.label} (over {self.classes_over})"

    def where(self, name: str, extra: str = "") -> str | None:
        """Where measure ``name`` is worst, in words (class number, attribute name; never a value)."""
        d = self.report.details.get(name)
        if d is None:
            return extra or None
        parts = []
        if d.worst_class is not None:
            parts.append(f"{self.label} #{d.worst_class}")
        if d.worst_attribute is not None:
            parts.append(f"attribute '{d.worst_attribute}'")
        return ", ".join(parts) + extra if parts else (extra or None)

    def gate(self, criterion: Criterion, name: str, measure: str, threshold: float | None, value: float | None,
             at_least: bool, worst: str | None, tolerance: float = 0.0,
             recheck: Literal["published", "original", "construction"] = "published") -> list[Claim]:
        """The claim of ``criterion`` (none when its threshold is unset or not judged): ``value`` against
        ``threshold``, at least or at most, within ``tolerance``."""
        if threshold is None or criterion.key not in self.judged:
            return []
        applies = self.unit in criterion.units
        ok = applies and value is not None and (
            value >= threshold - tolerance if at_least else value <= threshold + tolerance)
        if not applies:
            worst = f"does not apply to unit {self.unit}"
        elif value is None:
            worst = "cannot be computed for this table"
        return [Claim(name=name, measure=measure, unit=self.unit, value=value, threshold=float(threshold),
                      comparison=">=" if at_least else "<=", passed=bool(ok), recheck=recheck, worst=worst)]


class Criterion:
    """One privacy criterion. Subclasses set the class attributes and override :meth:`claims`; the others have
    defaults that do nothing (no extra setting, nothing vacuous, nothing measured beyond the shared figures)."""

    key: ClassVar[str]
    """The gate: the policy key that sets it (the first of :attr:`thresholds`)."""
    thresholds: ClassVar[tuple[Threshold, ...]]
    """The policy fields the criterion owns: its gate first, then its settings."""
    units: ClassVar[tuple[Unit, ...]]
    """The privacy units the gate applies to."""
    sensitive: ClassVar[str | None] = None
    """Set when the gate needs a sensitive attribute: the model's name as the report words it (it bounds attribute
    disclosure)."""
    from_counts: ClassVar[bool] = True
    """Whether class counts over the published rows re-measure it (``ppdp validate --release`` on row files)."""
    counts_population: ClassVar[bool] = False
    """Whether its figure is counted against the population table when the policy names one
    (``privacy.population``): re-checking it (``ppdp validate --release``) needs that table."""
    floor: ClassVar[tuple[FloorRule, ...]] = ()
    """The safety floor's rows that bound this criterion's figure for every release, whatever the policy sets
    (:data:`ppdp.schemas.privacy.FLOOR`)."""
    never_above: ClassVar[str] = ""
    """What the figure is when it is never above 1 ("a share"): a threshold of 1 or more is then vacuous (empty: no
    such bound)."""
    least_over_rows: ClassVar[bool] = False
    """Whether its figure is at least 1 / rows whatever the method does (one class holding every row reaches it): a
    bound below that is refused before any work (:func:`ppdp.tasks.gates.check_feasible`)."""

    def settings_error(self, policy: Any) -> str | None:
        """Why the policy's settings cannot run this gate (a setting it needs is missing), or None."""
        return None

    def vacuous(self, policy: Any) -> list[str]:
        """The thresholds of this criterion no table can fail, each as ``key value: why``."""
        return never_above_one(self, policy, self.never_above) if self.never_above else []

    def measure(self, table: ClassTable, policy: Any) -> MeasureDetail | None:
        """What the gate needs beyond the shared figures, measured over ``table`` (called only when the gate is
        set; None: nothing to add). It lands in ``report.details[key]``."""
        return None

    def claims(self, judge: Judge, policy: Any) -> list[Claim]:
        """The gate's claims over the measured report (none when the gate is not set)."""
        raise NotImplementedError


def optional(key: str, annotation: Any, description: str, option: str | None = None, **bounds: float) -> Threshold:
    """An optional threshold (unset by default: the gate is off) of type ``annotation | None`` within ``bounds``
    (pydantic's ``gt``, ``ge``, ``lt``, ``le``)."""
    constraints: dict[str, Any] = dict(bounds)
    return Threshold(key, annotation | None, Field(None, **constraints, description=description), option=option)


def share(key: str, description: str, option: str | None = None, *, above_zero: bool = False) -> Threshold:
    """The threshold of a share, risk or distance between 0 and 1 (optional, unset by default; ``above_zero``: 0 is
    refused too)."""
    bound = {"gt": 0} if above_zero else {"ge": 0}
    return optional(key, float, description, option, **bound, le=1)


def never_above_one(criterion: Criterion, policy: Any, what: str) -> list[str]:
    """The vacuous message of a threshold of 1 or more on a figure that is never above 1 (``what`` it is)."""
    value = getattr(policy, criterion.key)
    if value is not None and value >= 1:
        return [f"{criterion.key} = {value:g} can never fail ({what} is never above 1)"]
    return []


def needs_population(criterion: Criterion, policy: Any) -> str | None:
    """The settings error of a gate measured against the policy's population table, when it names none."""
    if getattr(policy, criterion.key) is not None and policy.population is None:
        return f"privacy.{criterion.key} needs privacy.population (a population table)"
    return None


def variant(name: str, annotation: Any, default: str, description: str, option: str) -> Threshold:
    """The setting that picks which variant of a criterion its gate checks (a ``ppdp validate`` option too)."""
    return Threshold(name, annotation, Field(default, description=description), option=option, metavar="VARIANT")


def distance_floor(criterion: Criterion, policy: Any) -> list[str]:
    """The vacuous message of a distance bounded below at 0 or less."""
    value = getattr(policy, criterion.key)
    if value is not None and value <= 0:
        return [f"{criterion.key} = {value:g} can never fail (a distance is never below 0)"]
    return []
