"""Strict Mondrian on a partitioned input: the capability :class:`MondrianOnPartitions` that
:attr:`ppdp.tasks.sanitize.mondrian.Mondrian.on_partitions` names (the interface:
:class:`ppdp.tasks.sanitize.partitions.OnPartitions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.params.mondrian import MondrianParams
from ppdp.schemas.reports import Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts, row_counts, summed_counts
from ppdp.tasks.core.encoding import as_numbers
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.hierarchy import Hierarchy, build_hierarchy
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.mondrian_cuts import (
    Cut,
    Dimension,
    apply_cuts,
    cut_round,
    dimension,
    mondrian_partition,
    partition_labels,
)
from ppdp.tasks.sanitize.partitions import TEXT, Fitted, OnPartitions, partition_quasi_identifiers

MONDRIAN_PART_ROWS = 2_000_000
"""A Mondrian part is finished on one worker once it holds at most this many records (its distinct
quasi-identifier tuples are counted, and Mondrian runs on them with their counts)."""


@dataclass
class MondrianDim:
    """One quasi-identifier as Mondrian sees it over the whole input: the dimension's global metadata (``code``
    empty) and how a partition's cells become codes."""

    name: str
    position: int
    dim: Dimension  # code emptied
    hierarchy: Hierarchy | None  # for hierarchy and ordinal-rank dimensions
    rank: bool  # an ordinal column without a hierarchy: ranks of its declared order

    def codes(self, series: pd.Series) -> np.ndarray:
        d = self.dim
        if self.hierarchy is None or self.rank:
            if self.rank:
                assert self.hierarchy is not None and self.hierarchy.bounds is not None
                c = self.hierarchy.codes(series, self.position)
                x = np.full(len(c), np.nan)
                x[c >= 0] = self.hierarchy.bounds[c[c >= 0], 0, 0]
            else:
                x = as_numbers(series)
            present = ~np.isnan(x)
            out = np.full(len(x), len(d.values), dtype=np.int64)
            out[present] = np.searchsorted(d.values, x[present])
            return out
        c = self.hierarchy.codes(series, self.position)
        return np.where(c < 0, len(self.hierarchy.table), c).astype(np.int64)


MondrianJob = tuple[list["MondrianDim"], list[list[Cut | None]], bool]
"""A pass's job: the dimensions, the top cuts so far, and whether the pass counts marginals (else tuples)."""
PartJob = tuple[list["MondrianDim"], pd.DataFrame, int]
"""A part finished on one worker: the dimensions, the part's distinct tuples with their counts, and k."""


@dataclass
class MondrianState:
    k: int
    dims: list[MondrianDim]
    rounds: list[list[Cut | None]] = field(default_factory=list)  # the top cuts, round by round
    cutting: bool = True  # still choosing top cuts
    tuples: pd.DataFrame | None = None  # per final part: distinct code tuples with counts


def _parts_of(dims: list[MondrianDim], rounds: list[list[Cut | None]], frame: pd.DataFrame
              ) -> tuple[np.ndarray, list[np.ndarray]]:
    codes = [d.codes(frame[d.name]) for d in dims]
    part = np.zeros(len(frame), dtype=np.int64)
    for cuts in rounds:
        part = apply_cuts(cuts, part, codes, [d.dim for d in dims])
    return part, codes


class MondrianOnPartitions(OnPartitions):
    """Strict Mondrian on a partitioned input, exact: the top cuts are Mondrian's own rounds decided from the
    partitions' merged marginal counts (:func:`ppdp.tasks.sanitize.mondrian.cut_round`), one pass each, until
    every part holds at most :data:`MONDRIAN_PART_ROWS` records; then one pass counts each part's distinct
    quasi-identifier tuples and each part is finished on them with their counts (weighted Mondrian, a task per
    part), which is the partition one Mondrian run on the whole table makes. Relaxed Mondrian splits equal
    records and needs the rows: refused."""

    name: ClassVar[str] = "mondrian"

    def start(self, spec: ReleaseSpec, sanitizer: Sanitizer, roles: Roles, counts: Counts) -> MondrianState:
        params = sanitizer.params()
        assert isinstance(params, MondrianParams)
        if params.mode != "strict":
            raise SpecError("mondrian: mode relaxed splits records with equal values and needs every row in one "
                            "place: use mode strict on a partitioned input")
        k = params.k
        if k is None:
            raise SpecError("mondrian: k is required (set method.k)")
        qis, specs = partition_quasi_identifiers(self.name, "recode", roles, counts, params.hierarchies)
        if int(k) > counts.total:
            raise InputError(f"mondrian: {counts.total} records cannot form a class of k={int(k)}")
        dims = []
        for q in qis:
            tag = roles.get(q)
            position = int(tag.position) + 1 if tag.position is not None else 0
            distinct = pd.DataFrame({q: counts.columns[q].series()})
            d = dimension(distinct, roles, q, specs.get(q))
            hierarchy, rank = None, False
            if d.kind == "hierarchy" or (specs.get(q) is None and tag.kind is ColumnKind.ordinal):
                hierarchy = build_hierarchy(distinct[q], specs.get(q), kind=tag.kind, column=q, position=position,
                                            order=tag.order)
                rank = d.kind == "range"
            dims.append(MondrianDim(q, position, replace(d, code=np.zeros(0, dtype=np.int64)), hierarchy, rank))
        return MondrianState(k=int(k), dims=dims)

    def next_pass(self, state: MondrianState) -> MondrianJob | None:
        if state.tuples is not None:
            return None
        return state.dims, state.rounds, state.cutting

    def count(self, job: MondrianJob, frame: pd.DataFrame) -> Any:
        dims, rounds, cutting = job
        part, codes = _parts_of(dims, rounds, frame)
        if cutting:  # the marginals of every part, per dimension
            marginals = []
            for c in codes:
                key = pd.DataFrame({"part": part, "code": c}).groupby(["part", "code"], sort=False).size()
                marginals.append((key.index.get_level_values(0).to_numpy(dtype=np.int64),
                                  key.index.get_level_values(1).to_numpy(dtype=np.int64),
                                  key.to_numpy(dtype=np.int64)))
            return ("marginals", marginals, np.bincount(part))
        table = pd.DataFrame({"part": part.astype(np.int64), **{f"c{j}": c.astype(np.int32)
                                                                for j, c in enumerate(codes)}})
        return ("tuples", row_counts(table))

    def merge(self, parts: Sequence[Any]) -> Any:
        kind = parts[0][0]
        if kind == "marginals":
            width = max(len(p[2]) for p in parts)
            sizes = np.zeros(width, dtype=np.int64)
            for p in parts:
                sizes[:len(p[2])] += p[2]
            marginals = [tuple(np.concatenate([p[1][j][i] for p in parts]) for i in range(3))
                         for j in range(len(parts[0][1]))]
            return ("marginals", marginals, sizes)
        return ("tuples", summed_counts([p[1] for p in parts]))

    def absorb(self, state: MondrianState, merged: Any) -> MondrianState:
        if merged[0] == "tuples":
            state.tuples = merged[1]
            return state
        _, marginals, sizes = merged
        cuts = cut_round([d.dim for d in state.dims], marginals, sizes, state.k)
        big = sizes > MONDRIAN_PART_ROWS
        cuts = [c if big[i] else None for i, c in enumerate(cuts)]  # small parts are finished on one worker
        if any(c is not None for c in cuts):
            state.rounds.append(cuts)
        else:
            state.cutting = False
        return state

    def fit(self, state: MondrianState, sanitizer: Sanitizer) -> Fitted[Any]:
        assert state.tuples is not None
        return Fitted(model=(state.dims, state.rounds, state.tuples, state.k),
                      treatments={d.name: "generalized" for d in state.dims})

    def local_jobs(self, fitted: Fitted[Any]) -> list[PartJob]:
        """One job per part: its distinct tuples with their counts (handed over: the fit keeps none of them)."""
        dims, rounds, tuples, k = fitted.model
        fitted.model = (dims, rounds, None, k)
        return [(dims, table.reset_index(drop=True), k) for _, table in tuples.groupby("part", sort=True)]

    def finish_local(self, fitted: Fitted[Any], published: list[tuple[pd.DataFrame, list[np.ndarray]]]
                     ) -> Fitted[Any]:
        """Every part's tuples as one lookup table (sent to every recode task): each distinct tuple's codes and its
        leaf (numbered over every part), and per quasi-identifier each leaf's published value as a code into that
        column's distinct published values."""
        dims, rounds, _, k = fitted.model
        tables: list[pd.DataFrame] = []
        per_leaf: list[list[np.ndarray]] = [[] for _ in dims]
        offset = 0
        for table, leaf_values in published:
            table["leaf"] += offset
            tables.append(table)
            for j, values in enumerate(leaf_values):
                per_leaf[j].append(values)
            offset += len(leaf_values[0]) if leaf_values else 0
        labels = []
        leaf_codes = []
        for j in range(len(dims)):
            values = np.concatenate(per_leaf[j]) if per_leaf[j] else np.zeros(0, dtype=object)
            codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)  # None: -1
            leaf_codes.append(codes.astype(np.int32))
            labels.append(np.append(np.asarray(uniques, dtype=object), np.array([None], dtype=object)))
        table = pd.concat(tables, ignore_index=True)
        return Fitted(model=(dims, rounds, table, (leaf_codes, labels)), treatments=fitted.treatments, groups=offset)

    def finish_part(self, job: PartJob) -> tuple[pd.DataFrame, list[np.ndarray]]:
        """One Mondrian part finished on its distinct tuples (weighted strict Mondrian): (each tuple's codes and leaf,
        numbered within the part; per quasi-identifier, each leaf's published value)."""
        dims, table, k = job
        local = [replace(d.dim, code=table[f"c{j}"].to_numpy(dtype=np.int64)) for j, d in enumerate(dims)]
        labels = mondrian_partition(local, k, "strict", weights=table["n"].to_numpy(dtype=np.int64))
        out = table.drop(columns=["n"])
        out["leaf"] = labels.astype(np.int32)
        return out, [partition_labels(dim, labels) for dim in local]

    def recode(self, fitted: Fitted[Any], frame: pd.DataFrame, allotted: Any) -> pd.DataFrame:
        dims, rounds, table, (leaf_codes, labels) = fitted.model
        part, codes = _parts_of(dims, rounds, frame)
        keys = pd.DataFrame({"part": part.astype(np.int64), **{f"c{j}": c.astype(np.int32)
                                                               for j, c in enumerate(codes)}})
        found = keys.merge(table, how="left", on=list(keys.columns), sort=False)["leaf"]
        if found.isna().any():  # every tuple was counted: a row without one is not of this input
            raise InputError("mondrian: a partition changed since it was counted (a row has no part)")
        leaf = found.to_numpy(dtype=np.int64)
        out = frame.copy()
        for j, d in enumerate(dims):
            out[d.name] = labels[j][leaf_codes[j][leaf]]  # code -1 (all missing) picks the appended None
        return out

    def published_types(self, fitted: Fitted[Any]) -> dict[str, pa.DataType]:
        """Every quasi-identifier as text: a part's value, interval or hierarchy label (``*`` at the root)."""
        return {d.name: TEXT for d in fitted.model[0]}
