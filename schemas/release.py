"""A method's output, as the steps after sanitizing receive it: the :class:`Release` record and its kinds.

Every method returns a :class:`Release` (the rows it publishes and what each stands for); a method whose output
holds more than rows returns a subclass declaring it (:class:`PartsRelease`: several tables; :class:`DpRelease`:
the mechanism's guarantee). Which kind a method returns, and how the flow measures, judges and publishes it, is
its release shape (:mod:`ppdp.tasks.shapes`).

Plain data (frozen dataclasses of DataFrames and arrays): no step's logic lives here, and nothing here imports
``ppdp.tasks``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ppdp.schemas.methods import Treatment, Unit
from ppdp.schemas.reports import DifferentialPrivacy, FeaturePartition


@dataclass(frozen=True)
class Release:
    """A sanitizer's output.

    Attributes
    ----------
    frame : DataFrame
        The released rows (after :meth:`ppdp.tasks.sanitize.base.Sanitizer.sanitize`: in a seeded random order).
        A generating-group release carries :data:`ppdp.schemas.methods.GROUP_COLUMN`.
    unit : {"equivalence_class", "generating_group", "record", "differential_privacy"}
        What the release's privacy is measured over.
    treatments : dict
        Released column -> treatment ("generalized", "aggregated", "synthesized", "perturbed", "kept").
    row_source : ndarray
        For each released row, the input row (position in the sanitizer's input) it stands for, or -1 when it
        stands for none (generated rows).
    group : ndarray or None
        For each released row, its generating group or equivalence class id (None for record releases).
    input_group : ndarray or None
        For each input row, the id of the group it was placed in; -1 if it was suppressed (None for record
        releases).
    suppressed_cells : dict
        Column -> number of released cells suppressed (set missing) by the method.
    suppressed_rows : int
        Input rows left out of the release.
    kept_members : int
        A release that kept earlier memberships (``previous`` given to ``Sanitizer.sanitize``): the input rows
        placed in their group of the previous release again (0 otherwise).
    held_rows : int
        Kept memberships: input rows held back (not published: new records waiting until k can form a group, and
        members of retired groups); also counted in ``suppressed_rows``.
    counterfeit_rows : int
        Kept memberships: published rows of kept groups that stand for no present record (the frozen rows of
        members who left or were erased).
    retired_groups : int
        Kept memberships: groups of the previous release with present members that are not published again (fewer
        than k present members).
    """

    frame: pd.DataFrame
    unit: Unit
    treatments: dict[str, Treatment]
    row_source: np.ndarray
    group: np.ndarray | None = None
    input_group: np.ndarray | None = None
    suppressed_cells: dict[str, int] = field(default_factory=dict)
    suppressed_rows: int = 0
    kept_members: int = 0
    held_rows: int = 0
    counterfeit_rows: int = 0
    retired_groups: int = 0

    @property
    def group_sizes(self) -> np.ndarray:
        """Sizes of the input groups (records per generating group / class), empty for record releases."""
        if self.input_group is None:
            return np.zeros(0, dtype=np.int64)
        ids = self.input_group[self.input_group >= 0]
        return np.bincount(ids)[np.unique(ids)] if ids.size else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class ReleasePart:
    """One table of a partitioned release (a feature subset and the class, see :class:`PartsRelease`)."""

    name: str
    frame: pd.DataFrame
    quasi_identifiers: tuple[str, ...]


Recode = Callable[[pd.DataFrame], dict[str, pd.DataFrame]]
"""Maps original rows to each part's table as the part publishes it (part name -> frame)."""


@dataclass(frozen=True)
class PartsRelease(Release):
    """A partitioned release (feature-set partitioning, DMPD): several tables instead of ``frame`` (then empty),
    each k-anonymous over its own quasi-identifiers.

    Attributes
    ----------
    parts : tuple of ReleasePart
        The published tables, in part order; each holds one row per published record.
    recode : callable or None
        Maps original rows (the held-out rows, a series' records) to each part's table as the part publishes it.
    partition : FeaturePartition or None
        The partition chosen and its search.
    """

    parts: tuple[ReleasePart, ...] = ()
    recode: Recode | None = None
    partition: FeaturePartition | None = None


@dataclass(frozen=True)
class DpRelease(Release):
    """A differentially private release (unit ``differential_privacy``).

    Attributes
    ----------
    dp : DifferentialPrivacy or None
        The mechanism's (epsilon, delta) as it was built, what it was spent on and where the categories and bins
        came from.
    """

    dp: DifferentialPrivacy | None = None
