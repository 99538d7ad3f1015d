"""The base of every schema: the strict model, column roles and column kinds (imports nothing from ppdp)."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict


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


__all__ = ["ColumnKind", "Role", "StrictModel"]
