"""Full-domain generalization on a partitioned input: the capability :class:`GeneralizationOnPartitions` that
:attr:`ppdp.tasks.sanitize.generalization.Generalization.on_partitions` names (the interface:
:class:`ppdp.tasks.sanitize.partitions.OnPartitions`).

It is exact: the lattice search runs on the table of distinct (quasi-identifier hierarchy rows, sensitive values)
with their counts, in the rows' order of first appearance over the partitions in order, which is the problem
:func:`ppdp.tasks.sanitize.generalization_nodes.prepare` builds from the concatenated rows (same distinct records,
same order, same counts): the chosen node, the suppressed classes and every published value equal the
single-machine run on the same rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from ppdp.schemas.base import Role
from ppdp.schemas.methods import Domain, Lattice, Treatment
from ppdp.schemas.params.generalization import GeneralizationParams
from ppdp.schemas.reports import LatticeSearch, Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts, row_counts, summed_counts
from ppdp.tasks.core.errors import ReleaseRejected, SpecError
from ppdp.tasks.core.hierarchy import Hierarchy, build_hierarchy, validate_hierarchy
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.generalization_nodes import Problem, evaluate_node, prepare, publish_labels
from ppdp.tasks.sanitize.generalization_search import lattice_size, search_lattice
from ppdp.tasks.sanitize.partitions import TEXT, Fitted, OnPartitions, partition_quasi_identifiers

GenJob = tuple[list[str], list[int], list[Hierarchy], list[str], dict[str, pd.Index]]
"""Pass 2's job: the quasi-identifiers, their positions and hierarchies, the sensitive columns and their values."""


@dataclass
class GenState:
    params: GeneralizationParams
    qis: list[str]
    positions: list[int]
    hierarchies: list[Hierarchy]
    sensitive: list[str]
    sensitive_values: dict[str, pd.Index]
    merged: pd.DataFrame | None = None
    problem: Problem | None = None  # the search's problem, prepared once from ``merged`` (search and fit share it)


@dataclass
class GenModel:
    """What recoding one partition needs: the node, the hierarchies, each quasi-identifier's label id per hierarchy
    row at the node (the missing value last), the suppressed classes and the classes that give records to the
    suppressed class."""

    qis: list[str]
    positions: list[int]
    hierarchies: list[Hierarchy]
    node: tuple[int, ...]
    ids: list[np.ndarray]
    radices: list[int]
    suppressed: np.ndarray  # class keys (packed label ids) suppressed whole
    donors: dict[int, int] = field(default_factory=dict)  # class key -> records taken (the class's last records)


def packed_keys(columns: Sequence[np.ndarray], radices: Sequence[int]) -> np.ndarray:
    """Mixed-radix keys of the columns (a ValueError when they do not fit an int64)."""
    size = 1
    for r in radices:
        size *= max(int(r), 1)
    if size >= 2**62:
        raise ValueError("too many classes to key in 64 bits")
    key = np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
    for c, r in zip(columns, radices, strict=True):
        key = key * max(int(r), 1) + np.asarray(c, dtype=np.int64)
    return key


class GeneralizationOnPartitions(OnPartitions):
    """Full-domain generalization on a partitioned input (exact: see the module docstring)."""

    name: ClassVar[str] = "generalization"

    def start(self, spec: ReleaseSpec, sanitizer: Sanitizer, roles: Roles, counts: Counts) -> GenState:
        params = sanitizer.params()
        assert isinstance(params, GeneralizationParams)
        if params.k is None and params.l is None and params.t is None:
            raise SpecError("generalization: no privacy gate: set k (or l, t) in the method or the privacy section")
        if params.suppression == "cells":
            raise SpecError("generalization: suppression: cells is not run on a partitioned input (its greedy needs "
                            "every row): use suppression: records")
        qis, specs = partition_quasi_identifiers(self.name, "generalize", roles, counts, params.hierarchies)
        hierarchies: list[Hierarchy] = []
        positions: list[int] = []
        for q in qis:
            tag = roles.get(q)
            position = int(tag.position) + 1 if tag.position is not None else 0
            values = counts.columns[q].series()
            h = build_hierarchy(values, specs.get(q), kind=tag.kind, column=q, position=position,
                                order=tag.order)
            validate_hierarchy(h, values, position)
            hierarchies.append(h)
            positions.append(position)
        sensitive = [s for s in roles.names(Role.sensitive) if s in counts.columns] if (
            params.l is not None or params.t is not None) else []
        if (params.l is not None or params.t is not None) and not sensitive:
            gate = "l" if params.l is not None else "t"
            raise SpecError(f"generalization: {gate} needs a sensitive column (declare one with role sensitive)")
        dictionaries = {s: pd.Index(counts.columns[s].values) for s in sensitive}
        if params.levels is None:
            lattice_size([h.height for h in hierarchies])
        return GenState(params, qis, positions, hierarchies, sensitive, dictionaries)

    # pass 2: distinct (hierarchy rows, sensitive values) with their counts
    def next_pass(self, state: GenState) -> GenJob | None:
        if state.merged is not None:
            return None
        return state.qis, state.positions, state.hierarchies, state.sensitive, state.sensitive_values

    def count(self, job: GenJob, frame: pd.DataFrame) -> pd.DataFrame:
        qis, positions, hierarchies, sensitive, sensitive_values = job
        data = {f"q{i}": h.codes(frame[q], p).astype(np.int32)
                for i, (q, p, h) in enumerate(zip(qis, positions, hierarchies, strict=True))}
        for j, s in enumerate(sensitive):
            # missing: its own entry
            data[f"s{j}"] = sensitive_values[s].get_indexer(pd.Index(frame[s])).astype(np.int32)
        return row_counts(pd.DataFrame(data))

    def merge(self, parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
        return summed_counts(list(parts))

    def absorb(self, state: GenState, merged: pd.DataFrame) -> GenState:
        state.merged, state.problem = merged, None
        return state

    def _problem(self, state: GenState) -> Problem:
        if state.problem is None:
            state.problem = self._prepare(state)
        return state.problem

    def _prepare(self, state: GenState) -> Problem:
        merged = state.merged
        assert merged is not None
        codes = [merged[f"q{i}"].to_numpy(dtype=np.int64) for i in range(len(state.qis))]
        sensitive = {s: pd.Series(state.sensitive_values[s].take(merged[f"s{j}"].to_numpy(dtype=np.int64)))
                     for j, s in enumerate(state.sensitive)}
        p = state.params
        return prepare(codes, state.hierarchies, sensitive=sensitive, k=p.k, l=p.l, t=p.t,
                       suppression_limit=p.suppression_limit, weights=merged["n"].to_numpy(dtype=np.int64))

    def domains(self, state: GenState) -> dict[str, Domain]:
        return {"levels": Lattice(max_level={q: int(h.height) for q, h in zip(state.qis, state.hierarchies,
                                                                              strict=True)})}

    def _gates(self, p: GeneralizationParams) -> tuple[str, list[str]]:
        gates = ", ".join(f"{n} = {v:g}" for n, v in (("k", p.k), ("l", p.l), ("t", p.t)) if v is not None)
        return gates, [g for g in ("k", "l", "t") if getattr(p, g) is not None]

    def search(self, state: GenState) -> LatticeSearch:
        started = time.perf_counter()
        p = state.params
        problem = self._problem(state)
        found, measures, counted = search_lattice(problem, p.measure)
        if found is None:
            gates, failed = self._gates(p)
            raise ReleaseRejected(f"generalization: no node of the lattice meets {gates} with at most "
                                  f"{p.suppression_limit * 100:.4g}% of the records suppressed", failed_gates=failed)
        return LatticeSearch(node={q: int(v) for q, v in zip(state.qis, found.node, strict=True)},
                             measure=str(p.measure), measures={str(m): float(v) for m, v in measures.items()},
                             checked=int(counted["checked"]), visited=int(counted["visited"]),
                             total=int(counted["total"]), classes=int(found.classes),
                             suppressed_rows=int(found.suppressed_rows),
                             seconds=float(time.perf_counter() - started))

    def fit(self, state: GenState, sanitizer: Sanitizer) -> Fitted[GenModel]:
        p = sanitizer.params()
        assert isinstance(p, GeneralizationParams)
        levels = dict(p.levels or {})
        unknown = [c for c in levels if c not in state.qis]
        missing = [q for q in state.qis if q not in levels]
        if unknown or missing:
            raise SpecError(f"generalization: levels names column '{(unknown or missing)[0]}', which is "
                            f"{'not a quasi-identifier of the input' if unknown else 'given no level'}")
        node = tuple(int(levels[q]) for q in state.qis)
        for q, h, level in zip(state.qis, state.hierarchies, node, strict=True):
            if level > h.height:
                raise SpecError(f"generalization: level {level} of '{q}' is above its hierarchy's top level "
                                f"{h.height}")
        problem = self._problem(state)
        ev = evaluate_node(problem, node, strict=True)
        if not ev.feasible or not ev.passes:
            gates, failed = self._gates(p)
            raise ReleaseRejected(f"generalization: the node does not meet {gates} with at most "
                                  f"{p.suppression_limit:.0%} of the records suppressed", failed_gates=failed)
        ids = [d.ids[level] for d, level in zip(problem.dims, node, strict=True)]
        radices = [d.n_labels[level] for d, level in zip(problem.dims, node, strict=True)]
        class_labels = [d.labels[level][ev.crep] for d, level in zip(problem.dims, node, strict=True)]
        keys = packed_keys(class_labels, radices)
        model = GenModel(qis=state.qis, positions=state.positions, hierarchies=state.hierarchies, node=node,
                          ids=ids, radices=radices, suppressed=np.sort(keys[ev.suppressed]),
                          donors={int(keys[g]): int(c) for g, c in ev.partial})
        treatments: dict[str, Treatment] = {q: "generalized" for q in state.qis}
        return Fitted(model=model, treatments=treatments, groups=int(ev.classes) + int(ev.suppressed_rows > 0),
                      suppressed_rows=0, suppressed_cells={q: int(ev.suppressed_rows) for q in state.qis}
                      if ev.suppressed_rows else {})

    def allot_pass(self, fitted: Fitted[GenModel]) -> GenModel | None:
        model = fitted.model
        return model if model.donors else None

    def _class_keys(self, model: GenModel, frame: pd.DataFrame) -> tuple[list[np.ndarray], np.ndarray]:
        codes = [h.codes(frame[q], p) for q, p, h in zip(model.qis, model.positions, model.hierarchies, strict=True)]
        labels = [ids[np.where(c < 0, len(h.table), c)] for ids, c, h in zip(model.ids, codes, model.hierarchies,
                                                                            strict=True)]
        return codes, packed_keys(labels, model.radices)

    def allot_count(self, job: GenModel, frame: pd.DataFrame) -> dict[int, int]:
        """Rows of each donor class in one partition (for :meth:`allot`)."""
        model = job
        _, keys = self._class_keys(model, frame)
        return {key: int(np.count_nonzero(keys == key)) for key in model.donors}

    def allot(self, fitted: Fitted[GenModel], per_partition: list[Any]) -> list[dict[int, int]]:
        """Each donor class gives its last records in input order: taken from the last partition backwards."""
        model = fitted.model
        out: list[dict[int, int]] = [{} for _ in per_partition]
        for key, need in model.donors.items():
            for i in range(len(per_partition) - 1, -1, -1):
                if need <= 0:
                    break
                have = int((per_partition[i] or {}).get(key, 0))
                take = min(have, need)
                if take:
                    out[i][key] = take
                    need -= take
        return out

    def recode(self, fitted: Fitted[GenModel], frame: pd.DataFrame, allotted: dict[int, int] | None
               ) -> pd.DataFrame:
        model = fitted.model
        codes, keys = self._class_keys(model, frame)
        pool = np.isin(keys, model.suppressed)
        for key, take in (allotted or {}).items():
            rows = np.flatnonzero(keys == key)
            pool[rows[len(rows) - take:]] = True
        out = frame.copy()
        for q, h, c, level in zip(model.qis, model.hierarchies, codes, model.node, strict=True):
            out[q] = publish_labels(h, c, level, pool)
        return out

    def published_types(self, fitted: Fitted[GenModel]) -> dict[str, pa.DataType]:
        """Every quasi-identifier as text: labels at the node, ``*`` for suppressed records (an integer column at
        level 0 holds its numbers as text beside ``*``)."""
        return {q: TEXT for q in fitted.model.qis}


