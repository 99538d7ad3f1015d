"""The method contract's schema side: privacy units, column treatments, tunable domains, parameter models.

Every sanitizer declares a parameter model (a subclass of :class:`MethodParams`) in its own module; the spec's
``method`` section is the discriminated union of the registered models (see :mod:`ppdp.tasks.sanitize.registry`).
This module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ppdp.schemas.base import StrictModel

Unit = Literal["equivalence_class", "generating_group", "record"]
"""What a release's privacy is measured over.

* ``equivalence_class``: published rows share their quasi-identifier values per class (generalization,
  microaggregation); k is the smallest class of the published table over the quasi-identifiers.
* ``generating_group``: each published row was synthesized from a group of at least k input records
  (condensation); the published table carries each row's group id, and k is the smallest group.
* ``record``: rows are perturbed or generated one by one (noise, sample generation); there is no k, and the
  claims compare records (distance to the closest original record, linkage, value distortion).
"""

UNITS: tuple[Unit, ...] = ("equivalence_class", "generating_group", "record")

Protection = Literal["identity", "attribute"]
"""What a method protects, which decides the rows of the safety floor a release is held to
(:data:`ppdp.schemas.privacy.FLOOR`):

* ``identity``: who is in which published row is hidden, by classes or groups of records (``equivalence_class``,
  ``generating_group``) or record by record (``record``: perturbed or generated rows);
* ``attribute``: identities stay visible (the quasi-identifiers are published as they are, as the perturbation
  tree and SAP do); what is hidden is the sensitive value (the perturbation tree's confidential attributes; SAP's
  class, which its scenario S2 treats as the sensitive value).
"""

IdentityBy = Literal["classes", "groups", "records", "none"]
"""How a release hides identities: equivalence classes, generating groups, record by record, or not at all."""


def identity_by(protects: Protection, unit: Unit) -> IdentityBy:
    """How a method that protects ``protects`` with privacy unit ``unit`` hides identities."""
    if protects != "identity":
        return "none"
    return {"equivalence_class": "classes", "generating_group": "groups", "record": "records"}[unit]  # type: ignore[return-value]

GROUP_COLUMN = "ppdp_group"
"""The column a generating-group release publishes: each row's group id (numbered in order of appearance in
the published table), so that a third party can re-check k as the smallest group."""

Treatment = Literal["dropped", "pseudonymized", "generalized", "aggregated", "synthesized", "perturbed", "kept"]
"""What happened to an input column on its way to the release (exactly one per column)."""


class IntRange(StrictModel):
    """Integers in [low, high]; ``high`` None: the method's bound for the data (e.g. the smallest class)."""

    type: Literal["int"] = "int"
    low: int
    high: int | None = None

    @model_validator(mode="after")
    def _ordered(self) -> IntRange:
        if self.high is not None and self.high < self.low:
            raise ValueError(f"range high ({self.high}) is below low ({self.low})")
        return self


class FloatRange(StrictModel):
    """Reals in [low, high], searched on a log scale when ``log`` (both ends then > 0)."""

    type: Literal["float"] = "float"
    low: float
    high: float
    log: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> FloatRange:
        if self.high < self.low:
            raise ValueError(f"range high ({self.high}) is below low ({self.low})")
        if self.log and self.low <= 0:
            raise ValueError("a log-scale range needs low > 0")
        return self


class Lattice(StrictModel):
    """Generalization levels: for each column 0..max_level (a node is one level per column)."""

    type: Literal["lattice"] = "lattice"
    max_level: dict[str, int]


Domain = Annotated[IntRange | FloatRange | Lattice, Field(discriminator="type")]

Safer = Literal["larger", "smaller"]


class MethodParams(StrictModel):
    """Base of every method's parameter model: ``name`` is the discriminator of the spec's ``method`` union.

    A tunable parameter left as None is chosen by the tuning step; with ``tuning.strategy: fixed`` it must be set.
    """

    name: str
