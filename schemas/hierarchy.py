"""Generalization hierarchies in the release spec: how each quasi-identifier may be coarsened.

A hierarchy maps every value of a column to a chain of ever coarser labels, ending with ``*`` (the root, the
whole domain). Level 0 is the value itself; level ``height`` is ``*``. The builders live in
:mod:`ppdp.tasks.core.hierarchy`; this module only describes them (and imports nothing from ``ppdp.tasks``).

Each kind is chosen by its ``type`` key::

    hierarchies:
      age: {type: intervals, binning: equal_width, bins: 16, fanout: 2}
      zip: {type: prefix, step: 1}
      birth: {type: dates}
      sex: {type: flat}
      education: {type: tree, tree: {"*": {Higher: {Bachelors: null, Masters: null}, School: {HS-grad: null}}}}
      workclass: {type: file, file: hierarchies/workclass.csv}
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from ppdp.schemas.base import StrictModel

ROOT = "*"
"""The label of every hierarchy's last level: the whole domain."""

MAX_SETTING = 10_000
"""Upper bound of every numeric hierarchy setting (``bins``, ``fanout``, ``step``). Labels are read by people, and
an interval hierarchy's time and memory grow with ``bins`` (10^7 bins took 12 s and 3 GB); at 10,000 bins a column
of 100,000 distinct values builds in about the time it takes at 16 (3 s)."""


class FileHierarchy(StrictModel):
    """An ARX hierarchy CSV: ``;``-separated, no header, one row per value: ``value;level1;...;*``.

    A relative ``file`` is resolved against the spec's folder. Every row must have the same number of fields.
    """

    type: Literal["file"] = Field("file", description="selects this kind of hierarchy")
    file: Path = Field(..., description="the hierarchy CSV; a relative path resolves against the spec file's folder")


class IntervalHierarchy(StrictModel):
    """Nested intervals over a numeric column (or an ordinal column's ranks).

    Level 1 cuts the column's range into about ``bins`` intervals, of equal width (``equal_width``; the width
    is rounded up to a readable 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 x 10^k, or for integers below 10 to a
    whole number, so from about 0.75 x bins to bins + 1 intervals) or holding about the same number of rows
    (``quantile``; equal edges merge); each further level merges ``fanout`` neighbouring intervals, until one
    interval would remain: that level is ``*``. Labels are closed-open, like ARX: ``[40-50)``; the last
    interval is closed, ``[80-90]``; integer columns get integer bounds.
    """

    type: Literal["intervals"] = Field("intervals", description="selects this kind of hierarchy")
    binning: Literal["equal_width", "quantile"] = Field(
        "equal_width", description="how level 1 is cut: equal_width (intervals of equal, rounded width) or quantile "
        "(intervals holding about the same number of rows)")
    bins: int = Field(16, ge=2, le=MAX_SETTING, description="about how many intervals the finest level (level 1) "
                                                             "has")
    fanout: int = Field(2, ge=2, le=MAX_SETTING, description="intervals merged into one at each further level")


class DateHierarchy(StrictModel):
    """Dates: day (``2020-03-14``) -> month (``2020-03``) -> quarter (``2020-Q1``) -> year (``2020``) -> ``*``."""

    type: Literal["dates"] = Field("dates", description="selects this kind of hierarchy")


class PrefixHierarchy(StrictModel):
    """Codes (postcodes, ...) masked from the right, ``step`` characters per level: ``13053`` -> ``1305*`` ->
    ``130**`` -> ... -> ``*``. Values of unequal length are masked from the right keeping their length (the
    longest value sets the number of levels; a shorter value is fully masked earlier and stays so)."""

    type: Literal["prefix"] = Field("prefix", description="selects this kind of hierarchy")
    step: int = Field(1, ge=1, le=MAX_SETTING, description="characters masked at each level")


class FlatHierarchy(StrictModel):
    """One level: every value -> ``*`` (a category is either kept or fully suppressed)."""

    type: Literal["flat"] = Field("flat", description="selects this kind of hierarchy")


class TreeHierarchy(StrictModel):
    """A category tree written in the spec as a nested mapping, root first::

        tree: {"*": {Higher: {Bachelors: null, Masters: null}, School: {HS-grad: null, 11th: null}}}

    The leaves (keys mapped to null or an empty mapping; a list of names is a shortcut for leaves) are the
    column's values; each inner key is the label of the group of leaves below it. A single top key ``*`` is
    the root; otherwise the top keys are placed under ``*``. Leaves at different depths are padded: a shallow
    leaf repeats its own label on the missing levels just above it (``{"*": {"A": {"a1": null}, "b": null}}``
    gives the rows a1;A;* and b;b;*), so every value has the same number of levels.
    """

    type: Literal["tree"] = Field("tree", description="selects this kind of hierarchy")
    tree: dict[str, Any] = Field(..., description="the category tree as a nested mapping, root first: inner keys "
                                                  "label groups, leaves are the column's categories")

    @field_validator("tree")
    @classmethod
    def _not_empty(cls, tree: dict[str, Any]) -> dict[str, Any]:
        if not tree:
            raise ValueError("a tree hierarchy needs at least one value")
        return tree


HierarchySpec = Annotated[
    FileHierarchy | IntervalHierarchy | DateHierarchy | PrefixHierarchy | FlatHierarchy | TreeHierarchy,
    Field(discriminator="type"),
]
"""One column's hierarchy, chosen by its ``type`` key."""

__all__ = [
    "MAX_SETTING",
    "ROOT",
    "DateHierarchy",
    "FileHierarchy",
    "FlatHierarchy",
    "HierarchySpec",
    "IntervalHierarchy",
    "PrefixHierarchy",
    "TreeHierarchy",
]
