"""Mondrian: multidimensional local recoding to k-anonymity by recursive median cuts (strict and relaxed).

Follows LeFevre, DeWitt & Ramakrishnan, "Mondrian Multidimensional k-Anonymity" (ICDE 2006): strict and relaxed
multidimensional partitioning (strict: the regions of the partitions do not overlap; relaxed: they may), and the
greedy top-down algorithm ``Anonymize(partition)``: choose the dimension with the widest normalized range, cut the
partition at the median of that dimension, recurse while an allowable cut exists ("allowable" = each side holds
at least k records). Categorical attributes with a generalization hierarchy are cut into the children of the
current hierarchy node ("hierarchical" Mondrian), so that a partition publishes a label of the hierarchy. The
paper's text was not on this machine: the section-level details (which side ties go to, how relaxed cuts treat
hierarchies) are this module's reading, written out in :func:`mondrian_partition`.

The algorithm part (:func:`mondrian_partition` over :class:`Dimension` objects) is pure NumPy and knows nothing
of frames or roles; the sanitizer (:class:`Mondrian`, at the end) builds the dimensions from the
quasi-identifiers and publishes each partition's values.

For a table too big for one machine, strict Mondrian runs on weighted records (``weights`` of
:func:`mondrian_partition`: each distinct quasi-identifier tuple once, with its count) and its first rounds run
from per-partition marginal counts (:func:`cut_round` and :func:`apply_cuts`), each resulting partition being
finished on its own; both give exactly the partition of the one-machine run on the rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ppdp.schemas.methods import Domain, IntRange, MethodParams, Treatment
from ppdp.schemas.params.mondrian import MondrianParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.core.labels import key_text
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.mondrian_cuts import (
    Cut,
    Dimension,
    Mode,
    apply_cuts,
    cut_round,
    dimension,
    hierarchy_dimension,
    mondrian_partition,
    numeric_dimension,
    partition_labels,
)
from ppdp.tasks.sanitize.mondrian_partitions import MondrianOnPartitions
from ppdp.tasks.sanitize.partitions import OnPartitions

__all__ = [
    "Cut",
    "Dimension",
    "Mondrian",
    "apply_cuts",
    "cut_round",
    "hierarchy_dimension",
    "mondrian_partition",
    "numeric_dimension",
    "partition_labels",
]
# -- the sanitizer ---------------------------------------------------------------------------------
class Mondrian(Sanitizer):
    """Mondrian multidimensional k-anonymity (LeFevre, DeWitt & Ramakrishnan, ICDE 2006); privacy unit
    ``equivalence_class``.

    The records are partitioned by :func:`mondrian_partition` over the quasi-identifiers, then every record's
    quasi-identifiers are replaced by its partition's (:func:`partition_labels`), so that the records of a
    partition share every published quasi-identifier value and each class holds at least k records:

    * numeric (and date) columns without a hierarchy: cut at the median; published as the text ``[min-max]`` of
      the partition's values, or the value alone when they are all equal (``"[23-31]"``, ``"45"``); the column
      is text in every row, a uniform type (pandas' string dtype; dates written ``yyyy-mm-dd``);
    * ordinal columns without a hierarchy: cut at the median rank of the declared order (or of the sorted
      values); published ``[first-last]`` category, or the category alone;
    * columns with a hierarchy in ``hierarchies``, and nominal columns (the automatic hierarchy of
      :func:`ppdp.tasks.core.hierarchy.build_hierarchy`: ``prefix`` for codes, else ``flat``): cut into the
      children of the current node; published as the label of the lowest common ancestor of the partition's
      values (``*`` at the root).

    A missing quasi-identifier value is a value of its own: a partition of missing values only publishes it
    missing, a partition mixing missing and present values publishes ``*`` (such a partition has the widest
    normalized range, 1, in that column, so Mondrian tends to cut the missing values off early). Sensitive
    attributes, the class and other attributes are kept as they are (Mondrian recodes the quasi-identifiers
    only; an "other" attribute that can link records should be declared a quasi-identifier). No cell or record
    is suppressed.

    Parameters
    ----------
    k : int
        Smallest class (at least 2).
    mode : {"strict", "relaxed"}
        See :func:`mondrian_partition`.
    hierarchies : dict, optional
        Column -> :data:`ppdp.schemas.hierarchy.HierarchySpec`.
    seed : int
        Seed of the published row order (Mondrian itself is deterministic).
    """

    name: ClassVar[str] = "mondrian"
    description: ClassVar[str] = ("Mondrian multidimensional partitioning: the quasi-identifier space cut into "
                                  "regions of at least k records, values generalized to their region")
    Params: ClassVar[type[MethodParams]] = MondrianParams
    randomized: ClassVar[bool] = False
    shape: ClassVar[str] = "every_row"  # a recoding of every input row
    on_partitions: ClassVar[OnPartitions | None] = MondrianOnPartitions()

    k: int | None
    mode: Mode
    hierarchies: Mapping[str, Any] | None

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"k": IntRange(low=2, high=max(2, len(frame)))}

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        params = self.params()
        if self.k is None:
            raise SpecError("mondrian: k is required (set method.k or a tuning strategy)")
        k = int(self.k)
        n = len(frame)
        if n < k:
            raise InputError(f"mondrian: {n} records cannot form a class of k={k}")
        qis = [q for q in roles.quasi_identifiers if q in frame.columns and q not in roles.identifiers]
        if not qis:
            raise InputError("mondrian: no quasi-identifier to recode")
        specs: dict[str, Any] = dict(params.hierarchies)  # type: ignore[attr-defined]
        for name in specs:
            if name not in frame.columns:
                raise SpecError(f"mondrian: a hierarchy is given for column {key_text(name)}, which is not in "
                                "the input")
        dims = [dimension(frame, roles, name, specs.get(name)) for name in qis]
        labels = mondrian_partition(dims, k, params.mode)  # type: ignore[attr-defined]
        data: dict[str, object] = {}
        treatments: dict[str, Treatment] = {}
        published = dict(zip(qis, dims, strict=True))
        for name in frame.columns:
            if name in published:
                data[name] = partition_labels(published[name], labels)[labels]
                treatments[name] = "generalized"
            else:
                data[name] = frame[name].to_numpy()
                treatments[name] = "kept"
        out = pd.DataFrame(data, index=pd.RangeIndex(n))
        classes = equivalence_class_ids(out, qis)  # what a recount of the published table finds
        return Release(frame=out, unit="equivalence_class", treatments=treatments,
                       row_source=np.arange(n, dtype=np.int64), group=classes, input_group=classes)
