"""The one interface every sanitizer shares, so the tuner, the validator and the flow treat them alike.

Modelled on scikit-learn's estimator contract: the constructor only stores its keyword arguments (a seed among
them); checks run when the work starts; the input frame is never modified; the same parameters, input and
seed give the same output.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.reports import Roles

ReleaseKind = Literal["synthetic", "generalized"]


@dataclass(frozen=True)
class SanitizedTable:
    """A sanitizer's output.

    Attributes
    ----------
    frame : DataFrame
        The released rows, in a seeded random order (row order must not reveal the input's order).
    groups : ndarray
        For each released row, the id of the group it came from.
    source_groups : ndarray
        For each input row (input order), the id of the group it was placed in; -1 if it was suppressed.
    release_kind : {"synthetic", "generalized"}
        "synthetic": rows are generated from groups (k = smallest group); "generalized": rows show equal
        quasi-identifier values per group (k = smallest equivalence class of the table).
    source_index : ndarray or None
        For each released row, the input row (input order) it stands in for, when rows correspond one to one
        (used to align original and released values, e.g. for paper 004's VD/RP/RK/CP/CK); else None.
    """

    frame: pd.DataFrame
    groups: np.ndarray
    source_groups: np.ndarray
    release_kind: ReleaseKind
    source_index: np.ndarray | None = None

    @property
    def group_sizes(self) -> np.ndarray:
        ids = self.source_groups[self.source_groups >= 0]
        return np.bincount(ids)[np.unique(ids)] if ids.size else np.zeros(0, dtype=np.int64)


class Sanitizer(ABC):
    """Base class: subclasses declare ``name``, ``release_kind`` and implement :meth:`_sanitize`."""

    name: ClassVar[str]
    release_kind: ClassVar[ReleaseKind]
    privacy_parameter: ClassVar[str] = "k"  # the integer the tuner searches
    needs_class: ClassVar[bool] = False
    rows_correspond: ClassVar[bool] = True  # released row i (before shuffling) stands in for input row i

    seed: int

    @classmethod
    def param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind is p.KEYWORD_ONLY]

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.param_names()}

    def with_params(self, **updates: Any) -> Sanitizer:
        """A new sanitizer with some parameters changed (this one is left as it is)."""
        unknown = set(updates) - set(self.param_names())
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter {', '.join(sorted(unknown))}")
        return type(self)(**{**self.get_params(), **updates})

    def sanitize(self, frame: pd.DataFrame, roles: Roles) -> SanitizedTable:
        """Sanitize ``frame`` (columns described by ``roles``); the released rows come out shuffled."""
        self._check_params()
        source = frame.reset_index(drop=True)
        released, groups, source_groups = self._sanitize(source, roles)
        order = np.random.default_rng([self.seed, 0x5EED]).permutation(len(released))
        out = released.take(order).reset_index(drop=True)
        del released
        return SanitizedTable(
            frame=out,
            groups=np.asarray(groups)[order],
            source_groups=np.asarray(source_groups),
            release_kind=self.release_kind,
            source_index=order if self.rows_correspond else None,
        )

    def _check_params(self) -> None:
        """Validate parameters (called at the start of :meth:`sanitize`)."""

    @abstractmethod
    def _sanitize(self, frame: pd.DataFrame, roles: Roles) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """Return (released rows, group of each released row, group of each input row)."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
