"""The safety floor's rows: what every release must pass whatever its spec says. A row that bounds a criterion's
figure is declared by that criterion (:attr:`ppdp.schemas.criteria.base.Criterion.floor`); the rows of the attacker's
view alone are :mod:`ppdp.schemas.privacy`'s; :func:`floor_in_order` puts them together."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ppdp.schemas.base import StrictModel
from ppdp.schemas.methods import IdentityBy

FLOOR_KINDS = ("classes", "groups", "records", "attribute", "differential_privacy")
"""The kinds of release a floor row applies to, in the floor's order."""


class FloorRule(StrictModel):
    """One row of the safety floor: a figure of the attacker's view, the releases it applies to and its limit."""

    key: str = Field(..., description="the figure's key in the attacker's view")
    figure: str = Field(..., description="what is measured, in words")
    applies: tuple[IdentityBy | Literal["attribute"], ...] = Field(
        ..., description="the releases it applies to: how they hide identities (classes, groups, records), or "
                         "attribute for methods that protect a sensitive value")
    limit: float = Field(..., description="the floor's limit")
    comparison: Literal["<=", ">="] = Field("<=", description="the figure must be <comparison> limit")
    recheck: Literal["published", "original", "construction"] = Field(
        "published", description="re-checked from the published table alone, also needs the original input, or holds "
                                 "by the mechanism's construction (re-checked from the manifest)")
    source: str = Field(..., description="where the number comes from: a cited standard, or ppdp's own choice")


REIDENTIFICATION_THRESHOLD = 0.09
"""The floor's limit on an average re-identification probability (see :data:`REIDENTIFICATION_THRESHOLD_SOURCE`):
the average risk over classes or groups, and the share of records a nearest-row linkage attack links correctly."""

REIDENTIFICATION_THRESHOLD_SOURCE = (
    "0.09: the re-identification probability threshold of the European Medicines Agency's Policy 0070 guidance on "
    "clinical reports and of Health Canada's public release of clinical information")


def floor_in_order(rows: tuple[FloorRule, ...]) -> tuple[FloorRule, ...]:
    """``rows`` in the floor's order: by the first kind of release each applies to (:data:`FLOOR_KINDS`), as given
    within a kind."""
    return tuple(sorted(rows, key=lambda r: FLOOR_KINDS.index(r.applies[0])))
