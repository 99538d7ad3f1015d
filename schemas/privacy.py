"""The privacy policy: every gate a release can be held to, and the privacy units each gate applies to.

Kept apart from :mod:`ppdp.schemas.spec` (whose method union imports every sanitizer) so that measuring and
validating import no method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationInfo, create_model, model_validator

from ppdp.schemas.base import StrictModel
from ppdp.schemas.criteria.base import Criterion
from ppdp.schemas.criteria.floor import (  # noqa: F401  (FloorRule and the thresholds re-exported)
    REIDENTIFICATION_THRESHOLD,
    REIDENTIFICATION_THRESHOLD_SOURCE,
    FloorRule,
    floor_in_order,
)
from ppdp.schemas.criteria.registry import CRITERIA, policy_thresholds
from ppdp.schemas.methods import Unit
from ppdp.schemas.series import Budget


class ThresholdsBase(StrictModel):
    """Privacy thresholds, every one optional (``ppdp validate`` checks only those given).

    Models over equivalence classes (rows sharing all quasi-identifier values; for synthetic releases, the
    groups records were generated from) and the sensitive attributes (every column declared ``sensitive``; with
    several, each is checked and the worst counts). A gate that needs a sensitive attribute when none is
    declared is a spec error, not a pass.
    """

    if TYPE_CHECKING:  # the fields come from the criteria (PrivacyThresholds below); typed loosely for mypy
        def __init__(self, **data: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

    @model_validator(mode="after")
    def _variants(self) -> ThresholdsBase:
        for criterion in CRITERIA:
            error = criterion.settings_error(self)
            if error:
                raise ValueError(error)
        return self

    def vacuous_gates(self) -> list[str]:
        """The gates set to a threshold that no table can fail, each as ``key value: why``."""
        return [text for criterion in CRITERIA for text in criterion.vacuous(self)]

    def sensitive_gates(self) -> list[str]:
        """The gates that need a sensitive attribute."""
        return [c.key for c in CRITERIA if c.sensitive and getattr(self, c.key) is not None]


def thresholds_model(criteria: tuple[Criterion, ...] = CRITERIA) -> type[ThresholdsBase]:
    """The privacy thresholds model of ``criteria``: one field per threshold of each, in the registry's order
    (:func:`ppdp.schemas.criteria.registry.policy_thresholds`)."""
    fields: dict[str, Any] = {t.name: (t.annotation, t.field) for t in policy_thresholds(criteria)}
    return create_model("PrivacyThresholds", __base__=ThresholdsBase, __module__=__name__,
                        __doc__=ThresholdsBase.__doc__, **fields)


if TYPE_CHECKING:
    PrivacyThresholds = ThresholdsBase
else:
    PrivacyThresholds = thresholds_model()
"""The privacy thresholds: one field per threshold of every criterion of the registry
(:data:`ppdp.schemas.criteria.registry.CRITERIA`), in its order."""


class AcceptBelowFloor(StrictModel):
    """An owner's decision to publish a release that fails the safety floor: why, and who approved it. Recorded in
    the manifest and the signed audit entry with the floor's figures; the report's header turns red and
    ``ppdp validate --release`` exits with its own code (5)."""

    reason: str = Field(..., min_length=10, max_length=500, pattern=r"\S",
                        description="why this release is published below the safety floor (10 to 500 characters)")
    approved_by: str = Field(..., min_length=2, max_length=120, pattern=r"\S",
                             description="who approved publishing below the floor (a name or role)")


class PrivacyPolicy(PrivacyThresholds):
    """Gates every release must pass. Which gates apply depends on the method's privacy unit (see
    :data:`ppdp.schemas.spec.GATE_UNITS`): a gate that does not apply is a spec error, and at least one that
    applies must be set (fail closed). A failed gate stops the release; nothing is published.

    Under every policy lies the safety floor (:data:`FLOOR`), which no spec can lower; ``accept_below_floor``
    publishes a release that fails it on purpose, with a recorded reason. A gate no release can fail (k or l of
    1, a risk bound of 1, min_dcr or min_vd of 0, t of 1) is refused when a spec is loaded: it is not a policy."""

    budget: Budget | None = Field(
        None, description="differentially private methods: the dataset's privacy-loss budget {epsilon, delta, "
                          "period}; a release that would spend beyond it (basic composition over the dataset's DP "
                          "releases in the series ledger) is refused")
    accept_below_floor: AcceptBelowFloor | None = Field(
        None, description="publish even if the release fails the safety floor: {reason, approved_by}; recorded in the "
                          "manifest, the audit trail and the report (red header)")
    not_applicable: list[str] = Field(
        default_factory=list, description="gates of this policy that do not apply to the method's privacy unit, kept "
        "as written and not judged (privacy.k still sets the rare-value rule); each must be set, and none may apply "
        "to the method's unit. ppdp compare --write-spec lists them when it carries a policy to a method of another "
        "unit; a gate that does not apply and is not listed is a spec error")

    @model_validator(mode="after")
    def _listed_gates(self) -> PrivacyPolicy:
        for name in self.not_applicable:
            if name not in GATE_UNITS:
                raise ValueError(f"privacy.not_applicable: {name!r} is not a gate (gates: {', '.join(GATE_UNITS)})")
            if getattr(self, name) is None:
                raise ValueError(f"privacy.not_applicable: {name} is not set in the policy")
        if len(set(self.not_applicable)) != len(self.not_applicable):
            raise ValueError("privacy.not_applicable: a gate is listed twice")
        return self

    @model_validator(mode="after")
    def _not_vacuous(self, info: ValidationInfo) -> PrivacyPolicy:
        # only when a spec is loaded (ppdp.tasks.spec.load_spec): a published manifest keeps reading as written
        if info.context and info.context.get("release_spec"):
            vacuous = self.vacuous_gates()
            if vacuous:
                raise ValueError(f"{vacuous[0]}: a gate no release can fail is not a policy (remove it, or set a "
                                 "threshold a release could fail)")
        return self


GATE_UNITS: dict[str, tuple[Unit, ...]] = {c.key: c.units for c in CRITERIA}
"""Each privacy gate (a ``privacy`` key) and the privacy units it applies to."""

GATE_SETTINGS: tuple[str, ...] = tuple(t.name for t in policy_thresholds() if t.name not in GATE_UNITS)
"""The policy's fields that set how a gate is measured (a variant, a constant, a table), not gates themselves."""

TABLE_GATES: dict[str, tuple[str, str | None]] = {
    t.name: (t.option, t.metavar) for t in policy_thresholds() if t.option is not None}
"""The thresholds of :class:`PrivacyThresholds` that ``ppdp validate`` measures on a table, in the order of its
options: each becomes an option ``--<name with dashes>`` whose type and default are the field's (a Literal as
text) and whose --help text and metavar (None: typer's) are its criterion's (:class:`ppdp.schemas.criteria.base.
Threshold`). Gates that need a release (linkage, DCR, disclosure gain, epsilon) have none."""


def gates_set(policy: PrivacyThresholds) -> list[str]:
    """The gates a policy sets, in table order."""
    return [c.key for c in CRITERIA if getattr(policy, c.key) is not None]


def gates_judged(policy: PrivacyThresholds) -> list[str]:
    """The gates a policy sets and judges (those it lists in ``not_applicable`` left out), in table order."""
    listed = set(getattr(policy, "not_applicable", ()))
    return [name for name in gates_set(policy) if name not in listed]


ATTACKER_FLOOR: tuple[FloorRule, ...] = (
    FloorRule(key="records_alone", figure="share of published records alone on the published quasi-identifiers "
              "(as published, with every published column beside them that raises uniqueness counted in)",
              applies=("classes",), limit=0.0,
              source="ppdp's choice: no record is unique in what an attacker can match on (k >= 2 at the least)"),
    FloorRule(key="group_alone", figure="share of published rows that are the only row of their generating group",
              applies=("groups",), limit=0.0, source="ppdp's choice: every generated row stands for 2 records or "
                                                      "more"),
    FloorRule(key="exact_copies", figure="share of published rows equal to an input record on every column the "
              "attacker's view counts as known (the quasi-identifiers as published and every column published beside "
              "them; bookkeeping and pseudonyms aside)", applies=("groups", "records"), limit=0.01,
              recheck="original", source="ppdp's choice: at most 1 in 100 published rows is a real record verbatim"),
)
"""The safety floor's rows over the attacker's view alone (no criterion bounds their figure)."""

FLOOR: tuple[FloorRule, ...] = floor_in_order(ATTACKER_FLOOR + tuple(row for c in CRITERIA for row in c.floor))
"""The safety floor: what every release must pass whatever its spec says (``privacy.accept_below_floor`` publishes
below it on purpose, recorded): the attacker's view's own rows and each criterion's (:attr:`ppdp.schemas.criteria.
base.Criterion.floor`), in the floor's order (:func:`ppdp.schemas.criteria.floor.floor_in_order`). Which rows apply
follows from what the method protects and how (:func:`ppdp.schemas.methods.identity_by`)."""

FLOOR_GATES: dict[str, str] = {row.key: c.key for c in CRITERIA for row in c.floor}
"""The gate (a ``privacy`` key) whose figure each criterion's floor row bounds, by floor row key."""

DISCLOSURE_TOLERANCE_SD = 0.1
"""A number counts as learned when the attacker's guess is within this many standard deviations of the true
value (of the value over the published records). sdcMicro's ``dRisk`` matches perturbed values by intervals of a
share of the standard deviation (0.05 by default); ppdp takes 0.1, wider (more conservative): 1.2 hours on a
12-hour spread of weekly hours."""


def floor_rules(applies: str) -> list[FloorRule]:
    """The floor's rows that apply to releases of kind ``applies`` (classes, groups, records, none or attribute)."""
    return [r for r in FLOOR if applies in r.applies]
