"""Strict Mondrian on a partitioned input: the capability :class:`MondrianOnPartitions` that
:attr:`ppdp.tasks.sanitize.mondrian.Mondrian.on_partitions` names (the interface:
:class:`ppdp.tasks.sanitize.partitions.OnPartitions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, cast

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
    Marginal,
    Pairwise,
    apply_cuts,
    cut_marginals,
    cut_round,
    dimension,
    mondrian_partition,
    partition_labels,
)
from ppdp.tasks.sanitize.partitions import TEXT, Fitted, OnPartitions, partition_quasi_identifiers

MONDRIAN_PART_ROWS = 2_000_000
"""A Mondrian part is finished on one worker once it holds at most this many distinct quasi-identifier tuples, as
far as the counts show (at most its records, and at most the product of its distinct codes per quasi-identifier):
its distinct tuples are counted, and Mondrian runs on them with their counts."""
MONDRIAN_PAIR_CELLS = 1 << 20
"""A counting pass counts a part's pairwise table of two quasi-identifiers (which decides a second round in the same
pass) only when the table can hold at most this many entries (its records, or the product of its distinct codes
in the two); else that part's children are decided in the next pass."""
MONDRIAN_PASS_PAIR_CELLS = 1 << 22
"""At most this many pairwise entries in a pass, over every part (the largest parts first): the merged tables'
bound on the driver."""
MONDRIAN_SPLIT_FACTOR = 4
"""The passes count every part's distinct tuples once no part holds more than this many times
:data:`MONDRIAN_PART_ROWS` of them (as far as the counts show); the parts still above :data:`MONDRIAN_PART_ROWS`
are then cut on their counted tuples (the same rounds, from the tuples' marginals), without a pass of their own.
The tuples counted are those the last pass counts anyway (each tuple in one part)."""


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


@dataclass
class MondrianJob:
    """What a counting pass needs (sent with each task): the dimensions, the top cuts so far, how many parts they
    make, and either ``tuples`` (count each part's distinct tuples) or which parts to count marginals of
    (``active``) and, per pair of dimensions (a, b), a < b, which parts to count pairwise counts of."""

    dims: list[MondrianDim]
    rounds: list[list[Cut | None]]
    parts: int
    tuples: bool
    active: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    pairs: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)


PartJob = tuple[list["MondrianDim"], pd.DataFrame, int]
"""A part finished on one worker: the dimensions, the part's distinct tuples with their counts, and k."""


@dataclass
class MondrianState:
    """The top cuts so far and, per part they make, what the counts say of it: its records (``sizes``: exact once
    counted, before that a bound), a bound on its distinct codes per dimension, and whether it is final (no
    allowable cut)."""

    k: int
    dims: list[MondrianDim]
    rounds: list[list[Cut | None]] = field(default_factory=list)  # the top cuts, round by round
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    counted: bool = False  # sizes are the counted records (else: a bound from pass 1)
    distinct: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    final: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    cutting: bool = True  # still choosing top cuts
    tuples: pd.DataFrame | None = None  # per final part: distinct code tuples with counts
    passes: int = 0  # counting passes absorbed


def _parts_of(dims: list[MondrianDim], rounds: list[list[Cut | None]], frame: pd.DataFrame
              ) -> tuple[np.ndarray, list[np.ndarray]]:
    codes = [d.codes(frame[d.name]) for d in dims]
    part = np.zeros(len(frame), dtype=np.int64)
    for cuts in rounds:
        part = apply_cuts(cuts, part, codes, [d.dim for d in dims])
    return part, codes


def _grouped(columns: list[np.ndarray], weights: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """The distinct rows of aligned non-negative int columns with their counts (or summed ``weights``): the
    columns, then the counts."""
    n = len(columns[0])
    if not n:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(len(columns) + 1))
    spaces = [int(c.max()) + 1 for c in columns]
    if float(np.prod([float(s) for s in spaces])) >= 2.0 ** 62:  # no single int64 key: pandas groups the columns
        frame = pd.DataFrame({f"c{i}": c for i, c in enumerate(columns)})
        frame["n"] = 1 if weights is None else weights
        table = frame.groupby(list(frame.columns[:-1]), sort=False)["n"].sum()
        return (*(table.index.get_level_values(i).to_numpy(dtype=np.int64) for i in range(len(columns))),
                table.to_numpy(dtype=np.int64))
    key = np.zeros(n, dtype=np.int64)
    for c, s in zip(columns, spaces, strict=True):
        key = key * s + c
    space = int(np.prod([float(s) for s in spaces]))
    keys: np.ndarray
    counts: np.ndarray
    if space <= max(1 << 20, 2 * n):  # a dense count
        total = np.bincount(key, weights=weights, minlength=space)
        keys = np.flatnonzero(total).astype(np.int64)
        counts = total[keys]
    else:
        counted = pd.Series(key).value_counts(sort=False) if weights is None else \
            pd.Series(weights).groupby(key, sort=False).sum()
        keys, counts = counted.index.to_numpy(dtype=np.int64), counted.to_numpy()
    out = []
    for s in reversed(spaces):
        out.append(keys % s)
        keys = keys // s
    return (*reversed(out), np.rint(counts).astype(np.int64))


def _bound(state: MondrianState) -> np.ndarray:
    """Per part: a bound on its distinct tuples (its records, and the product of its distinct codes)."""
    return np.minimum(state.sizes.astype(np.float64), np.prod(state.distinct, axis=1))


def _active(state: MondrianState, factor: int = 1) -> np.ndarray:
    """The parts still to cut: more than ``factor`` workers' distinct tuples, and an allowable cut not ruled
    out."""
    return (_bound(state) > factor * MONDRIAN_PART_ROWS) & ~state.final


def _split(state: MondrianState, tuples: pd.DataFrame) -> pd.DataFrame:
    """The rounds that cut the parts of more than :data:`MONDRIAN_PART_ROWS` distinct tuples, decided on their
    counted tuples (each round's marginals summed from them) and appended to the state; the tuples with their new
    parts."""
    dims = [d.dim for d in state.dims]
    part = tuples["part"].to_numpy(dtype=np.int64)
    codes = [tuples[f"c{j}"].to_numpy() for j in range(len(dims))]  # int32, not copied
    weight = tuples["n"].to_numpy(dtype=np.int64)
    while True:
        p = len(state.sizes)
        state.sizes = np.bincount(part, weights=weight, minlength=p).astype(np.int64)
        which = (np.bincount(part, minlength=p) > MONDRIAN_PART_ROWS) & ~state.final  # its tuples, counted
        if not which.any():
            break
        mine = which[part]
        marginals = [cast(Marginal, _grouped([part[mine], c[mine]], weight[mine].astype(np.float64)))
                     for c in codes]
        cuts = _decide(dims, marginals, state.sizes, state.k, which)
        state.final |= which & np.array([c is None for c in cuts], dtype=bool)
        if all(c is None for c in cuts):
            break
        per = np.array([1 if c is None else c.parts for c in cuts], dtype=np.int64)
        state.final = np.repeat(state.final, per) & np.repeat(per == 1, per)
        state.rounds.append(cuts)
        part = apply_cuts(cuts, part, codes, dims)
    tuples["part"] = part  # the merged table, the state's own: not copied
    return tuples


def _pair_plan(state: MondrianState) -> dict[tuple[int, int], np.ndarray]:
    """Per pair of dimensions (a, b), a < b: which active parts a pass counts pairwise counts of (each table at
    most :data:`MONDRIAN_PAIR_CELLS` entries, at most :data:`MONDRIAN_PASS_PAIR_CELLS` in all, largest parts
    first)."""
    d = len(state.dims)
    pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
    parts = np.flatnonzero(_active(state))
    plan = {pair: np.zeros(len(state.sizes), dtype=bool) for pair in pairs}
    if not pairs or not parts.size:
        return plan
    parts = parts[np.argsort(-state.sizes[parts], kind="stable")]
    cells = np.stack([np.minimum(state.sizes[parts].astype(np.float64),
                                 state.distinct[parts, a] * state.distinct[parts, b]) for a, b in pairs], axis=1)
    cells = np.where(cells <= MONDRIAN_PAIR_CELLS, cells, 0.0)
    wanted = cells > 0
    fits = (np.cumsum(cells.ravel()) <= MONDRIAN_PASS_PAIR_CELLS).reshape(cells.shape) & wanted
    for j, pair in enumerate(pairs):
        plan[pair][parts[fits[:, j]]] = True
    return plan


def _decide(dims: list[Dimension], marginals: list[Marginal], sizes: np.ndarray, k: int, which: np.ndarray
            ) -> list[Cut | None]:
    """:func:`cut_round` of the parts ``which`` (their marginals whole), None for the others."""
    idx = np.flatnonzero(which)
    out: list[Cut | None] = [None] * len(sizes)
    if not idx.size:
        return out
    new = np.full(len(sizes), -1, dtype=np.int64)
    new[idx] = np.arange(len(idx))
    subset = []
    for part, code, count in marginals:
        keep = which[part]
        subset.append((new[part[keep]], code[keep], count[keep]))
    for i, cut in zip(idx.tolist(), cut_round(dims, subset, sizes[idx], k), strict=True):
        out[i] = cut
    return out


def _after_round(state: MondrianState, cuts: list[Cut | None], marginals: list[Marginal], whole: np.ndarray,
                 pairs: dict[tuple[int, int], Pairwise], covered: dict[tuple[int, int], np.ndarray]
                 ) -> tuple[list[Marginal], np.ndarray]:
    """The state after a round decided on parts with ``whole`` marginals: the round appended, each new part's
    records and distinct-code bounds; (the new parts' marginals, which of them are whole: a part not cut keeps
    its own, a cut part's children are whole when its pairs with the cut dimension were all counted)."""
    dims = [d.dim for d in state.dims]
    n_dims = len(dims)
    per = np.array([1 if c is None else c.parts for c in cuts], dtype=np.int64)
    parent = np.repeat(np.arange(len(cuts)), per)
    cut_dim = np.array([-1 if c is None else c.dim for c in cuts], dtype=np.int64)
    new_marginals = cut_marginals(dims, cuts, marginals, pairs)
    p = int(per.sum())
    cut = cut_dim[parent] >= 0
    sizes = state.sizes[parent].copy()
    distinct = state.distinct[parent].copy()
    complete = np.ones(len(cuts), dtype=bool)  # every pair with the cut dimension counted
    for a in range(n_dims):
        for b in range(n_dims):
            if b != a:
                mask = covered.get((min(a, b), max(a, b)), np.zeros(len(cuts), dtype=bool))
                complete &= (cut_dim != a) | mask
    whole_new = whole[parent] & complete[parent]
    for j, (part, code, count) in enumerate(new_marginals):
        on_j = cut & (cut_dim[parent] == j)  # children of a cut on j: records and codes from the parent's own
        keep = (whole_new | on_j)[part] & (count > 0)
        mine, codes, weight = part[keep], code[keep], count[keep]
        if on_j.any():
            sizes[on_j] = np.bincount(mine, weights=weight, minlength=p)[on_j].astype(np.int64)
        which, _, _ = _grouped([mine, codes])
        exact = whole_new | on_j
        distinct[exact, j] = np.bincount(which, minlength=p)[exact]
    state.rounds.append(cuts)
    state.sizes, state.distinct = sizes, distinct
    state.final = state.final[parent] & ~cut
    return new_marginals, whole_new


class MondrianOnPartitions(OnPartitions):
    """Strict Mondrian on a partitioned input, exact: the top cuts are Mondrian's own rounds decided from the
    partitions' merged counts (:func:`ppdp.tasks.sanitize.mondrian_cuts.cut_round`) until every part holds at most
    :data:`MONDRIAN_PART_ROWS` distinct tuples (as far as the counts show); then one pass counts each part's
    distinct quasi-identifier tuples and each part is finished on them with their counts (weighted Mondrian, a task
    per part), which is the partition one Mondrian run on the whole table makes. A counting pass counts each part's
    marginals and, within bounds (:data:`MONDRIAN_PAIR_CELLS`), its pairwise counts of every two dimensions: the
    marginals decide a round, and the pairs give the children of each cut their own marginals
    (:func:`~ppdp.tasks.sanitize.mondrian_cuts.cut_marginals`), which decide the next round in the same pass: two
    rounds per pass. Once no part holds more than :data:`MONDRIAN_SPLIT_FACTOR` times the bound, the tuples are
    counted at once and the last rounds are decided on them. Where cutting stops changes nothing published: each
    part is finished by the same algorithm. Relaxed Mondrian splits equal records and needs the rows: refused."""

    name: ClassVar[str] = "mondrian"
    counts_after_rule: ClassVar[bool] = True  # a range's span and a hierarchy's leaves normalize every cut's choice

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
        # bounds from pass 1 (the rare-value rule only removes rows and maps values: never more of either)
        state = MondrianState(k=int(k), dims=dims, sizes=np.array([counts.total], dtype=np.int64),
                              distinct=np.array([[float(len(counts.columns[q].values)) for q in qis]]),
                              final=np.zeros(1, dtype=bool))
        state.cutting = bool(_active(state, MONDRIAN_SPLIT_FACTOR).any())
        return state

    def next_pass(self, state: MondrianState) -> MondrianJob | None:
        if state.tuples is not None:
            return None
        if not state.cutting:
            return MondrianJob(state.dims, state.rounds, len(state.sizes), True)
        return MondrianJob(state.dims, state.rounds, len(state.sizes), False, _active(state), _pair_plan(state))

    def count(self, job: MondrianJob, frame: pd.DataFrame) -> Any:
        part, codes = _parts_of(job.dims, job.rounds, frame)
        if job.tuples:
            table = pd.DataFrame({"part": part.astype(np.int64), **{f"c{j}": c.astype(np.int32)
                                                                    for j, c in enumerate(codes)}})
            return ("tuples", row_counts(table))
        sizes = np.bincount(part, minlength=job.parts).astype(np.int64)
        counted = job.active[part]
        marginals = [_grouped([part[counted], c[counted]]) for c in codes]
        pairs = {}
        for (a, b), mask in job.pairs.items():
            if mask.any():
                sel = mask[part]
                pairs[(a, b)] = _grouped([part[sel], codes[a][sel], codes[b][sel]])
        return ("marginals", marginals, pairs, sizes)

    def merge(self, parts: Sequence[Any]) -> Any:
        """Counts of consecutive partitions as one (each table's equal keys summed: the merge of merges is
        the same)."""
        if parts[0][0] == "tuples":
            return ("tuples", summed_counts([p[1] for p in parts]))

        def summed(tables: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
            width = len(tables[0])
            columns = [np.concatenate([t[i] for t in tables]) for i in range(width)]
            return _grouped(columns[:-1], columns[-1].astype(np.float64))

        marginals = [summed([p[1][j] for p in parts]) for j in range(len(parts[0][1]))]
        keys = sorted({key for p in parts for key in p[2]})
        pairs = {key: summed([p[2][key] for p in parts if key in p[2]]) for key in keys}
        sizes = np.sum([p[3] for p in parts], axis=0).astype(np.int64)
        return ("marginals", marginals, pairs, sizes)

    def absorb(self, state: MondrianState, merged: Any) -> MondrianState:
        """The top cuts after a pass: a round decided on every part counted, then, for the children whose
        marginals the pairs give whole, the next round; the passes end when no part is left to cut."""
        state.passes += 1
        if merged[0] == "tuples":
            state.tuples = _split(state, merged[1])
            return state
        _, marginals, pairs, sizes = merged
        if state.counted and not np.array_equal(sizes, state.sizes):
            raise InputError("mondrian: a partition changed since it was counted (its parts' records differ)")
        covered = _pair_plan(state)
        whole = _active(state)
        state.sizes, state.counted = np.asarray(sizes, dtype=np.int64), True
        dims = [d.dim for d in state.dims]
        while True:
            which = whole & _active(state)
            cuts = _decide(dims, marginals, state.sizes, state.k, which)
            state.final |= which & np.array([c is None for c in cuts], dtype=bool)
            if all(c is None for c in cuts):
                break
            marginals, whole = _after_round(state, cuts, marginals, whole, pairs, covered)
            pairs, covered = {}, {}
        state.cutting = bool(_active(state, MONDRIAN_SPLIT_FACTOR).any())
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
