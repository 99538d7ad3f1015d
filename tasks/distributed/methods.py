"""The methods that run on a partitioned input, one class each, and the one-line refusal of every other method.

A partitioned method works in passes over the partitions, each pass one task per partition returning counts
(never rows), merged in the flow; then a fit on the merged counts (the method's search: the tune step); then each
partition is recoded as its own task. The flow drives it (:mod:`ppdp.flows.partitioned`) through this interface
only:

* :meth:`PartitionedMethod.start`: what the method needs from pass 1's merged counts (hierarchies, dictionaries);
* :meth:`PartitionedMethod.next_pass` / :meth:`count` / :meth:`merge` / :meth:`absorb`: the passes (None: done);
* :meth:`PartitionedMethod.fit`: the search on the merged counts, its trace, and what recoding needs;
* :meth:`PartitionedMethod.recode`: one partition's published rows.

Full-domain generalization (:class:`Generalization`) is exact: the lattice search runs on the table of distinct
(quasi-identifier hierarchy rows, sensitive values) with their counts, in the rows' order of first appearance over
the partitions in order, which is the problem :func:`ppdp.tasks.sanitize.generalization.prepare` builds from the
concatenated rows (same distinct records, same order, same counts): the chosen node, the suppressed classes and
every published value equal the single-machine run on the same rows.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from ppdp.schemas.base import Role
from ppdp.schemas.methods import Treatment
from ppdp.schemas.reports import LatticeSearch, Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.errors import InputError, ReleaseRejected, SpecError
from ppdp.tasks.distributed.inputs import Counts, Inputs, row_counts, summed_counts
from ppdp.tasks.distributed.rare import RarePlan

# -- the interface ---------------------------------------------------------------------------------------------
TEXT = pa.large_string()
"""The type of a column a method publishes as labels (values, intervals, ``*``), whatever its input type: text, as
pandas writes a text column (the one-table release's type for the same column)."""


@dataclass
class Fitted:
    """A partitioned method after its fit: what each partition's recoding needs (small: sent with every recode
    task), the treatments of the columns it changes, and what the manifest's method record counts."""

    model: Any
    treatments: dict[str, Treatment]
    groups: int | None = None
    suppressed_rows: int = 0
    suppressed_cells: dict[str, int] = field(default_factory=dict)


class PartitionedMethod(ABC):
    """A method that runs on a partitioned input (see the module docstring). Stateless: state travels in the
    values its methods return."""

    name: ClassVar[str]
    unit: ClassVar[str] = "equivalence_class"

    def rare_rule_skip(self, roles: Roles) -> tuple[str, ...]:
        """Columns the rare-value rule leaves to the method: a recoding of every row publishes each
        quasi-identifier value only in classes of at least k records (as the single-table ``every_row`` shape)."""
        return tuple(roles.rare_rule_skip)

    @abstractmethod
    def start(self, spec: ReleaseSpec, sanitizer: Any, roles: Roles, counts: Counts) -> Any:
        """The method's state from pass 1's merged counts."""

    def next_pass(self, state: Any) -> Any | None:
        """What the next pass over the partitions needs (sent with each task), or None when the passes are done."""
        return None

    def count(self, job: Any, frame: pd.DataFrame) -> Any:
        """One partition's counts for the pass ``job``."""
        raise NotImplementedError

    def merge(self, parts: Sequence[Any]) -> Any:
        """Counts of consecutive partitions (in partition order) as one."""
        raise NotImplementedError

    def absorb(self, state: Any, merged: Any) -> Any:
        """The state after a pass."""
        return state

    def domains(self, state: Any) -> dict[str, Any]:
        """The tunable parameters' domains (as :meth:`ppdp.tasks.sanitize.base.Sanitizer.domains`)."""
        return {}

    def search(self, state: Any) -> LatticeSearch:
        """The lattice search on the merged counts (the ``lattice`` tuning strategy)."""
        raise SpecError(f"tuning.strategy lattice: method {self.name} has no lattice parameter")

    @abstractmethod
    def fit(self, state: Any, sanitizer: Any) -> Fitted:
        """The method with its (tuned) parameters on the merged counts."""

    def allot_pass(self, fitted: Fitted) -> Any | None:
        """A pass over the partitions that the recoding needs after the fit (sent with each task), or None."""
        return None

    def allot_count(self, job: Any, frame: pd.DataFrame) -> Any:
        """One partition's counts for the pass of :meth:`allot_pass`."""
        raise NotImplementedError

    def allot(self, fitted: Fitted, per_partition: list[Any]) -> list[Any]:
        """Per-partition recoding instructions from the pass of :meth:`allot_pass`."""
        return [None] * len(per_partition)

    def local_jobs(self, fitted: Fitted) -> list[Any]:
        """Work the fit leaves to one task each (a Mondrian part finished on one worker); none by default."""
        return []

    def finish_local(self, fitted: Fitted, results: list[Any]) -> Fitted:
        """The fit with the local jobs' results (:func:`finish_part`)."""
        return fitted

    @abstractmethod
    def recode(self, fitted: Fitted, frame: pd.DataFrame, allotted: Any) -> pd.DataFrame:
        """One partition's published rows (same row order as ``frame``)."""

    def published_types(self, fitted: Fitted) -> dict[str, pa.DataType]:
        """The type of each column the method recodes, in every row file (the other columns keep their
        partitions' types, unified: :func:`ppdp.tasks.distributed.output.release_schema`)."""
        return {}


def _quasi_identifiers(method: str, verb: str, roles: Roles, counts: Counts, hierarchies: Any
                       ) -> tuple[list[str], dict[str, Any]]:
    """The quasi-identifiers a method recodes (counted in pass 1) and its hierarchy specs, each of which must name
    one of the input's columns."""
    qis = [q for q in roles.quasi_identifiers if q in counts.columns and q not in roles.identifiers]
    if not qis:
        raise InputError(f"{method}: no quasi-identifier to {verb}")
    specs = dict(hierarchies or {})
    for name in specs:
        if name not in counts.columns:
            raise SpecError(f"{method}: a hierarchy is given for column '{name}', which is not a quasi-identifier of "
                            "the input")
    return qis, specs


# -- generalization --------------------------------------------------------------------------------------------
@dataclass
class _GenState:
    params: Any
    qis: list[str]
    positions: list[int]
    hierarchies: list[Any]
    sensitive: list[str]
    sensitive_values: dict[str, pd.Index]
    merged: pd.DataFrame | None = None
    problem: Any = None  # the search's problem, prepared once from ``merged`` (search and fit share it)


@dataclass
class _GenModel:
    """What recoding one partition needs: the node, the hierarchies, each quasi-identifier's label id per hierarchy
    row at the node (the missing value last), the suppressed classes and the classes that give records to the
    suppressed class."""

    qis: list[str]
    positions: list[int]
    hierarchies: list[Any]
    node: tuple[int, ...]
    ids: list[np.ndarray]
    radices: list[int]
    suppressed: np.ndarray  # class keys (packed label ids) suppressed whole
    donors: dict[int, int] = field(default_factory=dict)  # class key -> records taken (the class's last records)


def _packed(columns: Sequence[np.ndarray], radices: Sequence[int]) -> np.ndarray:
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


class Generalization(PartitionedMethod):
    """Full-domain generalization on a partitioned input (exact: see the module docstring)."""

    name = "generalization"

    def start(self, spec, sanitizer, roles, counts):
        from ppdp.tasks.core.hierarchy import build_hierarchy, validate_hierarchy

        params = sanitizer.params()
        if params.k is None and params.l is None and params.t is None:
            raise SpecError("generalization: no privacy gate: set k (or l, t) in the method or the privacy section")
        if params.suppression == "cells":
            raise SpecError("generalization: suppression: cells is not run on a partitioned input (its greedy needs "
                            "every row): use suppression: records")
        qis, specs = _quasi_identifiers(self.name, "generalize", roles, counts, params.hierarchies)
        hierarchies, positions = [], []
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
        values = {s: pd.Index(counts.columns[s].values) for s in sensitive}
        if params.levels is None:
            from ppdp.tasks.sanitize.generalization import lattice_size

            lattice_size([h.height for h in hierarchies])
        return _GenState(params, qis, positions, hierarchies, sensitive, values)

    # pass 2: distinct (hierarchy rows, sensitive values) with their counts
    def next_pass(self, state: _GenState):
        if state.merged is not None:
            return None
        return state.qis, state.positions, state.hierarchies, state.sensitive, state.sensitive_values

    def count(self, job, frame):
        qis, positions, hierarchies, sensitive, sensitive_values = job
        data = {f"q{i}": h.codes(frame[q], p).astype(np.int32)
                for i, (q, p, h) in enumerate(zip(qis, positions, hierarchies, strict=True))}
        for j, s in enumerate(sensitive):
            data[f"s{j}"] = sensitive_values[s].get_indexer(frame[s]).astype(np.int32)  # missing: its own entry
        return row_counts(pd.DataFrame(data))

    def merge(self, parts):
        return summed_counts(list(parts))

    def absorb(self, state, merged):
        state.merged, state.problem = merged, None
        return state

    def _problem(self, state: _GenState):
        if state.problem is None:
            state.problem = self._prepare(state)
        return state.problem

    def _prepare(self, state: _GenState):
        from ppdp.tasks.sanitize.generalization import prepare

        merged = state.merged
        assert merged is not None
        codes = [merged[f"q{i}"].to_numpy(dtype=np.int64) for i in range(len(state.qis))]
        sensitive = {s: pd.Series(state.sensitive_values[s].take(merged[f"s{j}"].to_numpy(dtype=np.int64)))
                     for j, s in enumerate(state.sensitive)}
        p = state.params
        return prepare(codes, state.hierarchies, sensitive=sensitive, k=p.k, l=p.l, t=p.t,
                       suppression_limit=p.suppression_limit, weights=merged["n"].to_numpy(dtype=np.int64))

    def domains(self, state):
        from ppdp.schemas.methods import Lattice

        return {"levels": Lattice(max_level={q: int(h.height) for q, h in zip(state.qis, state.hierarchies,
                                                                              strict=True)})}

    def _gates(self, p) -> tuple[str, list[str]]:
        gates = ", ".join(f"{n} = {v:g}" for n, v in (("k", p.k), ("l", p.l), ("t", p.t)) if v is not None)
        return gates, [g for g in ("k", "l", "t") if getattr(p, g) is not None]

    def search(self, state):
        from ppdp.tasks.sanitize.generalization import search_lattice

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

    def fit(self, state, sanitizer):
        from ppdp.tasks.sanitize.generalization import evaluate_node

        p = sanitizer.params()
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
        keys = _packed(class_labels, radices)
        model = _GenModel(qis=state.qis, positions=state.positions, hierarchies=state.hierarchies, node=node,
                          ids=ids, radices=radices, suppressed=np.sort(keys[ev.suppressed]),
                          donors={int(keys[g]): int(c) for g, c in ev.partial})
        treatments: dict[str, Treatment] = {q: "generalized" for q in state.qis}
        return Fitted(model=model, treatments=treatments, groups=int(ev.classes) + int(ev.suppressed_rows > 0),
                      suppressed_rows=0, suppressed_cells={q: int(ev.suppressed_rows) for q in state.qis}
                      if ev.suppressed_rows else {})

    def allot_pass(self, fitted):
        model: _GenModel = fitted.model
        return model if model.donors else None

    def _class_keys(self, model: _GenModel, frame: pd.DataFrame) -> tuple[list[np.ndarray], np.ndarray]:
        codes = [h.codes(frame[q], p) for q, p, h in zip(model.qis, model.positions, model.hierarchies, strict=True)]
        labels = [ids[np.where(c < 0, len(h.table), c)] for ids, c, h in zip(model.ids, codes, model.hierarchies,
                                                                            strict=True)]
        return codes, _packed(labels, model.radices)

    def allot_count(self, job, frame):
        """Rows of each donor class in one partition (for :meth:`allot`)."""
        model: _GenModel = job
        _, keys = self._class_keys(model, frame)
        return {key: int(np.count_nonzero(keys == key)) for key in model.donors}

    def allot(self, fitted, per_partition):
        """Each donor class gives its last records in input order: taken from the last partition backwards."""
        model: _GenModel = fitted.model
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

    def recode(self, fitted, frame, allotted):
        from ppdp.tasks.sanitize.generalization import _publish

        model: _GenModel = fitted.model
        codes, keys = self._class_keys(model, frame)
        pool = np.isin(keys, model.suppressed)
        for key, take in (allotted or {}).items():
            rows = np.flatnonzero(keys == key)
            pool[rows[len(rows) - take:]] = True
        out = frame.copy()
        for q, h, c, level in zip(model.qis, model.hierarchies, codes, model.node, strict=True):
            out[q] = _publish(h, c, level, pool)
        return out

    def published_types(self, fitted):
        """Every quasi-identifier as text: labels at the node, ``*`` for suppressed records (an integer column at
        level 0 holds its numbers as text beside ``*``)."""
        return {q: TEXT for q in fitted.model.qis}


# -- Mondrian ----------------------------------------------------------------------------------------------------
MONDRIAN_PART_ROWS = 2_000_000
"""A Mondrian part is finished on one worker once it holds at most this many records (its distinct
quasi-identifier tuples are counted, and Mondrian runs on them with their counts)."""


@dataclass
class _MondrianDim:
    """One quasi-identifier as Mondrian sees it over the whole input: the dimension's global metadata (``code``
    empty) and how a partition's cells become codes."""

    name: str
    position: int
    dim: Any  # ppdp.tasks.sanitize.mondrian.Dimension, code emptied
    hierarchy: Any | None  # for hierarchy and ordinal-rank dimensions
    rank: bool  # an ordinal column without a hierarchy: ranks of its declared order

    def codes(self, series: pd.Series) -> np.ndarray:
        from ppdp.tasks.core.encoding import as_numbers

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


@dataclass
class _MondrianState:
    k: int
    dims: list[_MondrianDim]
    rounds: list[list[Any]] = field(default_factory=list)  # the top cuts, round by round
    cutting: bool = True  # still choosing top cuts
    tuples: pd.DataFrame | None = None  # per final part: distinct code tuples with counts


def _parts_of(dims: list[_MondrianDim], rounds: list[list[Any]], frame: pd.DataFrame) -> tuple[np.ndarray,
                                                                                              list[np.ndarray]]:
    from ppdp.tasks.sanitize.mondrian import apply_cuts

    codes = [d.codes(frame[d.name]) for d in dims]
    part = np.zeros(len(frame), dtype=np.int64)
    for cuts in rounds:
        part = apply_cuts(cuts, part, codes, [d.dim for d in dims])
    return part, codes


class Mondrian(PartitionedMethod):
    """Strict Mondrian on a partitioned input, exact: the top cuts are Mondrian's own rounds decided from the
    partitions' merged marginal counts (:func:`ppdp.tasks.sanitize.mondrian.cut_round`), one pass each, until
    every part holds at most :data:`MONDRIAN_PART_ROWS` records; then one pass counts each part's distinct
    quasi-identifier tuples and each part is finished on them with their counts (weighted Mondrian, a task per
    part), which is the partition one Mondrian run on the whole table makes. Relaxed Mondrian splits equal
    records and needs the rows: refused."""

    name = "mondrian"

    def start(self, spec, sanitizer, roles, counts):
        from dataclasses import replace

        from ppdp.schemas.base import ColumnKind
        from ppdp.tasks.sanitize.mondrian import _dimension

        params = sanitizer.params()
        if params.mode != "strict":
            raise SpecError("mondrian: mode relaxed splits records with equal values and needs every row in one "
                            "place: use mode strict on a partitioned input")
        if sanitizer.k is None:
            raise SpecError("mondrian: k is required (set method.k)")
        qis, specs = _quasi_identifiers(self.name, "recode", roles, counts, params.hierarchies)
        if int(sanitizer.k) > counts.total:
            raise InputError(f"mondrian: {counts.total} records cannot form a class of k={int(sanitizer.k)}")
        dims = []
        for q in qis:
            tag = roles.get(q)
            position = int(tag.position) + 1 if tag.position is not None else 0
            distinct = pd.DataFrame({q: counts.columns[q].series()})
            d = _dimension(distinct, roles, q, specs.get(q))
            hierarchy, rank = None, False
            if d.kind == "hierarchy" or (specs.get(q) is None and tag.kind is ColumnKind.ordinal):
                from ppdp.tasks.core.hierarchy import build_hierarchy

                hierarchy = build_hierarchy(distinct[q], specs.get(q), kind=tag.kind, column=q, position=position,
                                            order=tag.order)
                rank = d.kind == "range"
            dims.append(_MondrianDim(q, position, replace(d, code=np.zeros(0, dtype=np.int64)), hierarchy, rank))
        return _MondrianState(k=int(sanitizer.k), dims=dims)

    def next_pass(self, state):
        if state.tuples is not None:
            return None
        return state.dims, state.rounds, state.cutting

    def count(self, job, frame):
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

    def merge(self, parts):
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

    def absorb(self, state, merged):
        from ppdp.tasks.sanitize.mondrian import cut_round

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

    def fit(self, state, sanitizer):
        assert state.tuples is not None
        return Fitted(model=(state.dims, state.rounds, state.tuples, state.k),
                      treatments={d.name: "generalized" for d in state.dims})

    def local_jobs(self, fitted: Fitted) -> list[Any]:
        """One job per part: its distinct tuples with their counts (handed over: the fit keeps none of them)."""
        dims, rounds, tuples, k = fitted.model
        fitted.model = (dims, rounds, None, k)
        return [(dims, table.reset_index(drop=True), k) for _, table in tuples.groupby("part", sort=True)]

    def finish_local(self, fitted: Fitted, published: list[tuple[pd.DataFrame, list[np.ndarray]]]) -> Fitted:
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

    def recode(self, fitted, frame, allotted):
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

    def published_types(self, fitted):
        """Every quasi-identifier as text: a part's value, interval or hierarchy label (``*`` at the root)."""
        return {d.name: TEXT for d in fitted.model[0]}


def finish_part(job: Any) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """One Mondrian part finished on its distinct tuples (weighted strict Mondrian): (each tuple's codes and leaf,
    numbered within the part; per quasi-identifier, each leaf's published value)."""
    from dataclasses import replace

    from ppdp.tasks.sanitize.mondrian import mondrian_partition, partition_labels

    dims, table, k = job
    local = [replace(d.dim, code=table[f"c{j}"].to_numpy(dtype=np.int64)) for j, d in enumerate(dims)]
    labels = mondrian_partition(local, k, "strict", weights=table["n"].to_numpy(dtype=np.int64))
    out = table.drop(columns=["n"])
    out["leaf"] = labels.astype(np.int32)
    return out, [partition_labels(dim, labels) for dim in local]


# -- the tasks' functions -------------------------------------------------------------------------------------
def count_partition(method: PartitionedMethod, job: Any, spec: ReleaseSpec, inputs: Inputs, index: int, roles: Roles,
                    pseudonym_key: bytes | None, rare: RarePlan) -> Any:
    """One pass of ``method`` over partition ``index`` (loaded as the method receives it)."""
    from ppdp.tasks.distributed.output import load_partition

    return method.count(job, load_partition(spec, inputs, index, roles, pseudonym_key, rare))


def allot_partition(method: PartitionedMethod, job: Any, spec: ReleaseSpec, inputs: Inputs, index: int,
                    roles: Roles, pseudonym_key: bytes | None, rare: RarePlan) -> Any:
    """The recoding's pass (:meth:`PartitionedMethod.allot_pass`) over partition ``index``."""
    from ppdp.tasks.distributed.output import load_partition

    return method.allot_count(job, load_partition(spec, inputs, index, roles, pseudonym_key, rare))


def merge_pass(method: PartitionedMethod, parts: Sequence[Any]) -> Any:
    return method.merge(parts)


def search(method: PartitionedMethod, state: Any) -> LatticeSearch:
    return method.search(state)


def fit(method: PartitionedMethod, state: Any, sanitizer: Any) -> Fitted:
    return method.fit(state, sanitizer)


def finish_local(method: PartitionedMethod, fitted: Fitted, results: list[Any]) -> Fitted:
    return method.finish_local(fitted, results)


PARTITIONED: dict[str, PartitionedMethod] = {m.name: m for m in (Generalization(), Mondrian())}
"""The methods that run on a partitioned input, by name."""


WHY_NOT: dict[str, str] = {
    "mdav": "it groups records, not distinct values, so a part needs its rows gathered from every partition",
    "noise": "its claims compare every published row with every input row, which counts cannot give",
}
"""Why a method asked for on partitioned inputs is not offered (said in its refusal)."""


def partitioned_method(name: str) -> PartitionedMethod:
    """The partitioned implementation of method ``name``; a one-line refusal for a method that has none."""
    try:
        return PARTITIONED[name]
    except KeyError:
        why = f" ({WHY_NOT[name]})" if name in WHY_NOT else ""
        raise SpecError(f"spec method.name: {name} cannot run on a partitioned input (a folder of Parquet files)"
                        f"{why}: methods that can: {', '.join(sorted(PARTITIONED))}") from None
