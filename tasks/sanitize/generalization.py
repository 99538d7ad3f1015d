"""Full-domain generalization with record suppression: the node of a generalization lattice that meets every
privacy gate and is best under one of ARX's utility measures.

Each quasi-identifier has a generalization hierarchy (:class:`ppdp.tasks.core.hierarchy.Hierarchy`: a value, its
ever coarser labels, ``*``); a *node* of the lattice is one level per quasi-identifier, and publishing a node
replaces every value by its label at that level (full-domain generalization: Samarati, "Protecting respondents'
identities in microdata release", IEEE TKDE 13(6), 2001, sections 3-4; Sweeney, "Achieving k-anonymity privacy
protection using generalization and suppression", IJUFKS 10(5), 2002). Records whose class fails a gate are
suppressed, up to ``suppression_limit`` of the records (ARX's record suppression; Prasser, Kohlmayer, Kuhn,
"The ARX data anonymization tool", Handbook of Big Data Privacy, 2020, section 3).

The utility measures are ARX's (arx-deidentifier/arx, ``src/main/org/deidentifier/arx/metric/v2``, read at
commit aacd487; ARX's defaults: generalization and suppression weighted equally, gs-factor 0.5, attribute
weights equal). ``n`` is the number of records, ``s`` the records suppressed, a class's ``c`` its records:

* ``loss`` (``MetricMDNMLoss``, ARX's "Loss": Iyengar's generalized information loss, "Transforming data to
  satisfy privacy constraints", KDD 2002, with suppression): per quasi-identifier, every record not suppressed costs
  the *share* of its label (``DomainShareMaterialized``: hierarchy rows with that label at that level / all
  hierarchy rows, so ``1/size`` at level 0 and 1 at ``*``), every suppressed record costs 1; the sum ``a`` is
  normalized to ``(a - n/size) / (n - n/size)``, clipped at 0 and cut to 10 decimals (``Metric.round``); the
  attributes are aggregated by ARX's default *geometric mean* ``prod(v_i + 1)^(1/d) - 1``
  (``ILMultiDimensionalGeometricMean``). ``size`` counts every row of the hierarchy, values absent from the
  data included.
* ``discernibility`` (``MetricSDNMDiscernability``, non-monotonic): ``sum c^2`` over classes kept plus ``n``
  per suppressed record.
* ``aecs`` (``MetricSDAECS``): ``n / (classes kept + 1 if any record is suppressed)``.
* ``precision`` (``MetricMDNMPrecision``, non-monotonic): per quasi-identifier ``((n - s) * level / height +
  s) / n``, arithmetic mean.
* ``entropy`` (``MetricMDNUNMEntropyPrecomputed``, non-uniform entropy, non-monotonic, ARX's default *sum*
  aggregate): per quasi-identifier ``-sum_v a_v log2(a_v / b_v) - sum_u c_u log2(c_u / s)``: ``a_v`` records
  holding value ``v``, ``b_v`` records sharing ``v``'s label at the node's level, ``c_u`` suppressed records
  whose label at that level is ``u``; cut to 10 decimals.

Every measure is smaller = better. The search (:func:`search_lattice`) visits nodes in order of a lower bound
of the measure and stops when the bound exceeds the best node found; see its Notes for the pruning and for how
it relates to ARX's Flash (Kohlmayer, Prasser, Eckert, Kemper, Kuhn, "Flash: efficient, stable and optimal
k-anonymity", PASSAT/SocialCom 2012). Ties go to the node with the fewest levels in total (as
``AbstractAlgorithm.trackOptimum``), then to the first in lattice order.

Suppressed records are published, with every quasi-identifier ``*`` (as ARX writes them); they form one
equivalence class of the published table, which must meet the gates too: see :func:`evaluate_node`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal, cast

import numpy as np
import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.hierarchy import ROOT
from ppdp.schemas.methods import Domain, Lattice, MethodParams, Treatment
from ppdp.schemas.params.generalization import GeneralizationParams
from ppdp.schemas.reports import LatticeSearch, Roles
from ppdp.tasks.core.errors import InputError, ReleaseRejected, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.core.hierarchy import Hierarchy, hierarchies_for
from ppdp.tasks.core.labels import key_text
from ppdp.tasks.core.suppression import local_suppression
from ppdp.tasks.sanitize.base import Release, Sanitizer

__all__ = [
    "MAX_NODES",
    "MEASURES",
    "Generalization",
    "NodeEvaluation",
    "Problem",
    "evaluate_node",
    "lattice_grid",
    "lattice_size",
    "node_measures",
    "prepare",
    "search_lattice",
]

MEASURES: tuple[str, ...] = ("loss", "discernibility", "aecs", "precision", "entropy")
MAX_NODES = 1 << 17
"""Largest lattice searched (131,072 nodes); a larger one is refused before any work (:func:`lattice_size`).

Measured (2 shared cores, k = 5, 5% suppression, random binary quasi-identifiers, loss): 16 quasi-identifiers
(65,536 nodes) took 5-9 s on 500 records and 20 s on 5,000; 17 (131,072 nodes) 7-8 s on 500 and 26 s on 5,000.
The search groups up to half of the nodes, a fraction of a millisecond each, so its time grows with the lattice
(ARX's Flash, in Java, goes to 2^31 - 1 nodes)."""

_FACTOR = 1e10  # ARX's Metric.round: floor(value * 10^10) / 10^10
_TOL = 1e-12  # relative: measure values this close are a tie
_MARGIN = 1e-9  # relative: a bound prunes only when it exceeds the best value by more than this
_T_EPS = 1e-12  # a class meets t when its EMD is at most t - _T_EPS (float noise never tips a published class)
_CACHE_ROWS = 40  # roll-up tables kept, in multiples of the distinct-record count


# -- the problem: quasi-identifiers coded once -------------------------------------------------------------------
@dataclass
class _Dimension:
    """One quasi-identifier: each distinct record's hierarchy row and, per level, each row's label id and share."""

    name: str
    height: int
    rows: np.ndarray  # (F,) int64: hierarchy row of each distinct record (missing: the extra last row)
    ids: list[np.ndarray]  # per level: (rows,) int64 dense label id
    n_labels: list[int]  # per level: number of label ids
    shares: list[np.ndarray]  # per level: (rows,) float share of the row's label (ARX's DomainShare)
    size: int  # hierarchy rows (+1 for missing): ARX's domain size
    labels: list[np.ndarray] = field(default_factory=list)  # per level: (F,) label id of each distinct record
    entropy: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per level: sum_v a_v log2(a_v / b_v) (<= 0)
    share_sum: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per level: sum of shares over records


@dataclass
class _Sensitive:
    name: str
    codes: np.ndarray  # (S,) column code of each sensitive tuple (ascending values, missing last)
    m: int
    counts: np.ndarray  # (m,) records per value
    ordered: bool  # numeric: ordered-distance EMD; otherwise equal distance


@dataclass
class Problem:
    """A table prepared for the search: distinct records (quasi-identifier hierarchy rows and, when l or t is set,
    the sensitive values) with their counts. Built by :func:`prepare`."""

    n: int
    dims: list[_Dimension]
    weight: np.ndarray  # (F,) int64 records per distinct record
    inverse: np.ndarray  # (n,) int64 distinct record of each record
    scode: np.ndarray  # (F,) int64 sensitive tuple of each distinct record (zeros when none is needed)
    n_scodes: int
    sensitive: list[_Sensitive]
    k: int | None
    l: int | None  # noqa: E741
    t: float | None
    limit: float  # share of records that may be suppressed
    max_suppressed: int  # floor(limit * n), as ARXConfiguration.absMaxOutliers

    @property
    def heights(self) -> tuple[int, ...]:
        return tuple(d.height for d in self.dims)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.dims]

    @property
    def distinct(self) -> int:
        return len(self.weight)


def prepare(codes: list[np.ndarray], hierarchies: list[Hierarchy], *, sensitive: Mapping[str, pd.Series] | None
            = None, k: int | None = None, l: int | None = None, t: float | None = None,  # noqa: E741
            suppression_limit: float = 0.0, weights: np.ndarray | None = None) -> Problem:
    """Code a table once for the lattice search.

    Parameters
    ----------
    codes : list of ndarray
        Per quasi-identifier, each record's row in its hierarchy's table (``Hierarchy.codes``; -1: missing).
    hierarchies : list of Hierarchy
        The quasi-identifiers' hierarchies, in the same order.
    sensitive : mapping, optional
        Sensitive column name -> its cells (needed when ``l`` or ``t`` is set).
    k, l, t : optional
        The gates: classes of at least k records, at least l distinct values of every sensitive column, an EMD
        of at most t between each class's distribution of every sensitive column and the table's.
    suppression_limit : float
        Share of the records that may be suppressed, in [0, 1).
    weights : ndarray of int, optional
        Records each row stands for (a count table of distinct records, as a distributed release builds it from
        its partitions); every row one record by default. A count table in the rows' order of first appearance
        gives the problem of the rows it counts (same distinct records, in the same order, same weights).

    Raises
    ------
    ValueError
        l or t without a sensitive column.

    Notes
    -----
    A missing quasi-identifier cell is a value of its own: an extra hierarchy row that keeps its own label
    (published missing) below the root and is ``*`` at the root; it counts in the domain size.
    """
    if (l is not None or t is not None) and not sensitive:
        raise ValueError("l-diversity and t-closeness need a sensitive column")
    rows_in = len(codes[0]) if codes else 0
    w_in = None if weights is None else np.asarray(weights, dtype=np.int64)
    if w_in is not None and w_in.shape != (rows_in,):
        raise ValueError(f"weights has {w_in.size} entries for {rows_in} rows")
    n = rows_in if w_in is None else int(w_in.sum())
    dims: list[_Dimension] = []
    columns: list[tuple[np.ndarray, int]] = []
    for h, c in zip(hierarchies, codes, strict=True):
        c = np.asarray(c, dtype=np.int64)
        rows = len(h.table)
        missing = bool((c < 0).any())
        if missing:
            c = np.where(c < 0, rows, c)
        size = rows + int(missing)
        ids, n_labels, shares = [], [], []
        for level in range(h.height + 1):
            lid = np.asarray(h.level_codes(level), dtype=np.int64)
            leaves = np.asarray(h.leaves(level), dtype=np.float64)
            count = int(lid.max()) + 1 if rows else 0
            if missing:
                at_root = level == h.height
                lid = np.append(lid, 0 if at_root else count)
                count += 0 if at_root else 1
                leaves = np.append(leaves + (1.0 if at_root else 0.0), size if at_root else 1.0)
            ids.append(lid)
            n_labels.append(max(count, 1))
            shares.append(leaves / size)
        dims.append(_Dimension(h.column, h.height, c, ids, n_labels, shares, size))
        columns.append((c, size))
    sens: list[_Sensitive] = []
    sens_codes: list[tuple[np.ndarray, int]] = []
    if (l is not None or t is not None) and sensitive:
        for name, series in sensitive.items():
            values = np.asarray(series, dtype=object) if isinstance(series.dtype, pd.CategoricalDtype) else series
            sc, uniques = pd.factorize(values, sort=True)
            sc = np.asarray(sc, dtype=np.int64)
            m = len(uniques)
            if (sc < 0).any():
                sc = np.where(sc < 0, m, sc)
                m += 1
            ordered = bool(pd.api.types.is_numeric_dtype(series))  # as ppdp.tasks.privacy.models measures t
            sens.append(_Sensitive(str(name), sc, m, np.rint(np.bincount(sc, weights=w_in, minlength=m)
                                                              ).astype(np.int64), ordered))
            sens_codes.append((sc, m))
    inverse, distinct = _combine(columns + sens_codes, rows_in)
    first = _first_positions(inverse)
    weight = np.rint(np.bincount(inverse, weights=w_in, minlength=distinct)).astype(np.int64)
    for d in dims:
        d.rows = d.rows[first]
        d.labels = [d.ids[level][d.rows] for level in range(d.height + 1)]
        a = np.bincount(d.rows, weights=weight, minlength=d.size)
        d.entropy = np.array([_entropy_part(a, d.ids[level]) for level in range(d.height + 1)])
        d.share_sum = np.array([float(np.dot(a, d.shares[level])) for level in range(d.height + 1)])
    scode = np.zeros(distinct, dtype=np.int64)
    n_scodes = 1
    if sens:
        tuple_code, n_scodes = _combine([(sc[first], m) for sc, m in sens_codes], distinct)
        scode = tuple_code
        tfirst = _first_positions(tuple_code)
        for s, (sc, _) in zip(sens, sens_codes, strict=True):
            s.codes = sc[first][tfirst]
    return Problem(n=n, dims=dims, weight=weight, inverse=inverse, scode=scode, n_scodes=n_scodes, sensitive=sens,
                   k=k, l=l, t=t, limit=float(suppression_limit),
                   max_suppressed=int(math.floor(float(suppression_limit) * n)))


def _entropy_part(a: np.ndarray, ids: np.ndarray) -> float:
    """``sum_v a_v log2(a_v / b_v)`` over hierarchy rows ``v`` held by records (ARX's precomputed part)."""
    b = np.bincount(ids, weights=a, minlength=int(ids.max()) + 1 if len(ids) else 0)[ids]
    held = a > 0
    return float(np.sum(a[held] * (np.log(a[held] / b[held]) / math.log(2.0))))


def _combine(columns: list[tuple[np.ndarray, int]], n: int) -> tuple[np.ndarray, int]:
    """Dense ids (in order of first appearance) of the tuples of ``columns`` (codes, cardinality)."""
    if not columns:
        return np.zeros(n, dtype=np.int64), 1 if n else 0
    key = np.zeros(n, dtype=np.int64)
    size = 1
    for codes, card in columns:
        card = max(int(card), 1)
        if size * card >= 2**62:
            key, size = _factorize(key)
        key = key * card + codes
        size *= card
    return _factorize(key)


def _factorize(key: np.ndarray) -> tuple[np.ndarray, int]:
    ids, uniques = pd.factorize(key, sort=False)
    return np.asarray(ids, dtype=np.int64), len(uniques)


def _first_positions(ids: np.ndarray) -> np.ndarray:
    """Where each id first occurs, for ids numbered in order of first appearance (0, 1, ... as they come)."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.empty(ids.size, dtype=bool)
    new[0] = True
    np.greater(ids[1:], np.maximum.accumulate(ids)[:-1], out=new[1:])
    return np.flatnonzero(new)


# -- one node ------------------------------------------------------------------------------------------------------
@dataclass
class _Table:
    """Distinct (labels at a node, sensitive tuple) rows: a distinct record standing for each, and counts."""

    rep: np.ndarray  # (T,) int64 distinct record
    w: np.ndarray  # (T,) int64 records
    bottom: bool = False  # rep is 0..F-1


@dataclass
class NodeEvaluation:
    """One node grouped and checked (:func:`evaluate_node`).

    Attributes
    ----------
    node : tuple of int
        The levels.
    table : _Table
        The node's distinct (labels, sensitive tuple) rows with counts (what nodes above roll up from).
    tcls : ndarray
        Class of each row of ``table``.
    sizes : ndarray
        Records of each class (before suppression).
    crep : ndarray
        A distinct record of each class (its labels are the class's).
    failing : ndarray of bool
        Classes that fail a gate on their own (``failing_rows``: their records).
    suppressed : ndarray of bool
        Classes suppressed whole (the failing ones and any added to make the suppressed records' class pass).
    partial : list of (int, int)
        (class, records) taken from classes that meet the gates, so that the suppressed records reach k (only
        with k alone).
    suppressed_rows : int
        Records suppressed.
    passes : bool
        Every published class (the suppressed records' class included) meets the gates, with at most the
        allowed number of records suppressed.
    feasible : bool
        The suppressed records' class could be made to meet the gates (suppressing every record if need be).
    row_class : ndarray
        Class of each row of the base table the node was grouped from (the distinct records when the base is
        the bottom table).
    """

    node: tuple[int, ...]
    table: _Table
    tcls: np.ndarray
    sizes: np.ndarray
    crep: np.ndarray
    failing: np.ndarray
    suppressed: np.ndarray
    partial: list[tuple[int, int]]
    suppressed_rows: int
    passes: bool
    feasible: bool
    row_class: np.ndarray
    failing_rows: int = 0

    @property
    def classes(self) -> int:
        """Classes published apart from the suppressed records."""
        return int(np.count_nonzero(self.sizes - self.removed))

    @property
    def removed(self) -> np.ndarray:
        """Records of each class that are suppressed."""
        removed = np.where(self.suppressed, self.sizes, 0)
        for g, count in self.partial:
            removed[g] += count
        return removed


def _bottom(problem: Problem) -> _Table:
    return _Table(np.arange(problem.distinct, dtype=np.int64), problem.weight, bottom=True)


def evaluate_node(problem: Problem, node: tuple[int, ...], base: _Table | None = None, *,
                  strict: bool = True) -> NodeEvaluation:
    """Group the records at ``node`` and decide which records to suppress.

    Parameters
    ----------
    problem : Problem
    node : tuple of int
        One level per quasi-identifier.
    base : _Table, optional
        A table of a node below ``node`` (every level at most ``node``'s) to roll up from; the distinct
        records by default. Valid because every hierarchy level is a coarsening of the one below
        (``validate_hierarchy`` checks it).
    strict : bool
        Stop adding records to the suppressed class once more than the limit would be suppressed (the search and
        the sanitizer, with a node searched or given in ``levels``: a node that needs more fails closed). False
        suppresses whatever the gates need, ignoring the limit (for analysis only: ``passes`` then still says
        whether the limit holds).

    Notes
    -----
    Records of the classes that fail a gate are suppressed (ARX's ``HashGroupify.analyzeAll``). Published with
    every quasi-identifier ``*``, they form one class of their own, which must meet the gates too. When it does
    not:

    * k alone, short of k records: ``k - s`` records are taken from the classes' records beyond k, largest
      class first (each class's last records in input order); when the classes hold fewer than ``k - s``
      records beyond k between them, the smallest class is added whole;
    * with l or t: the smallest classes that meet the gates are added whole, one by one (each adds its
      distinct values; for t the mix moves towards the table's distribution) until the class meets the gates.

    With k alone the node then passes exactly when ``s = 0`` or ``max(s, k) <=`` the limit (save that last
    case), which is monotone (generalizing never suppresses more records), as ARX's record suppression is.
    With l or t the class of suppressed records can, rarely, need more records at a node above one that passes;
    the search does not rely on that monotonicity (see :func:`search_lattice`).
    """
    base = base or _bottom(problem)
    cols = []
    for d, level in zip(problem.dims, node, strict=True):
        labels = d.labels[level]
        cols.append((labels if base.bottom else labels[base.rep], d.n_labels[level]))
    if problem.sensitive:  # the (labels, sensitive tuple) rows first, then their classes among fewer rows
        scode = problem.scode if base.bottom else problem.scode[base.rep]
        tab, n_tab = _combine([*cols, (scode, problem.n_scodes)], len(base.rep))
        tfirst = _first_positions(tab)
        table = _Table(base.rep[tfirst], np.bincount(tab, weights=base.w, minlength=n_tab).astype(np.int64))
        tcls, n_classes = _combine([(c[tfirst], card) for c, card in cols], n_tab)
        crep = table.rep[_first_positions(tcls)]
        cls = tcls[tab]
    else:
        cls, n_classes = _combine(cols, len(base.rep))
        first = _first_positions(cls)
        table = _Table(base.rep[first], np.bincount(cls, weights=base.w, minlength=n_classes).astype(np.int64))
        tcls = np.arange(n_classes, dtype=np.int64)
        crep = table.rep
    sizes = np.bincount(tcls, weights=table.w, minlength=n_classes).astype(np.int64)
    failing = _failing(problem, table, tcls, sizes)
    s = failing_rows = int(sizes[failing].sum())
    limit = problem.max_suppressed
    suppressed = failing.copy()
    partial: list[tuple[int, int]] = []
    feasible = True
    if s > 0 and (not strict or s <= limit):
        suppressed, partial, feasible = _fill(problem, table, tcls, sizes, failing, strict)
        s = int(sizes[suppressed].sum()) + sum(count for _, count in partial)
    passes = feasible and s <= limit
    return NodeEvaluation(node=tuple(int(v) for v in node), table=table, tcls=tcls, sizes=sizes, crep=crep,
                          failing=failing, suppressed=suppressed, partial=partial, suppressed_rows=s, passes=passes,
                          feasible=feasible, row_class=cls, failing_rows=failing_rows)


def _failing(problem: Problem, table: _Table, tcls: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Classes that fail a gate on their own."""
    fail = np.zeros(len(sizes), dtype=bool)
    if problem.k is not None:
        fail |= sizes < problem.k
    for s in problem.sensitive:
        vals = s.codes[problem.scode[table.rep]]
        if len(problem.sensitive) == 1:  # the table's rows are the distinct (class, value) pairs already
            pcls, pval, pcnt = tcls, vals, table.w
        else:
            pairs, n_pairs = _combine([(tcls, len(sizes)), (vals, s.m)], len(tcls))
            pfirst = _first_positions(pairs)
            pcls, pval = tcls[pfirst], vals[pfirst]
            pcnt = np.bincount(pairs, weights=table.w, minlength=n_pairs)
        if problem.l is not None:
            fail |= np.bincount(pcls, minlength=len(sizes)) < problem.l
        if problem.t is not None:
            fail |= _emd(s, pcls, pval, pcnt, sizes, problem.n) > problem.t - _T_EPS
    return fail


def _emd(s: _Sensitive, pcls: np.ndarray, pval: np.ndarray, pcnt: np.ndarray, sizes: np.ndarray,
         n: int) -> np.ndarray:
    """Each class's earth mover's distance to the table's distribution of ``s`` (as ``ppdp.tasks.privacy.models``:
    equal distance ``0.5 sum |q - p|`` for text; ordered distance ``sum_i |Q(i) - P(i)| / (m - 1)`` over the
    table's distinct values in ascending order for numbers)."""
    g = len(sizes)
    p_all = s.counts / n
    q = pcnt / sizes[pcls]
    if not s.ordered:
        part = np.abs(q - p_all[pval]) - p_all[pval]
        return 0.5 * (1.0 + np.bincount(pcls, weights=part, minlength=g))
    m = s.m
    if m <= 1:
        return np.zeros(g)
    order = np.lexsort((pval, pcls))
    pcls, pval, q = pcls[order], pval[order], q[order]
    big_p = np.cumsum(s.counts) / n
    prefix = np.concatenate(([0.0], np.cumsum(big_p)))
    starts = np.flatnonzero(np.r_[True, pcls[1:] != pcls[:-1]])
    within = np.cumsum(q)
    base = np.concatenate(([0.0], within[starts[1:] - 1]))
    cum = within - np.repeat(base, np.diff(np.r_[starts, len(pcls)]))
    nxt = np.empty_like(pval)
    nxt[:-1] = pval[1:]
    ends = np.r_[starts[1:], len(pcls)] - 1
    nxt[ends] = m
    owners = pcls[starts]
    a = np.concatenate((np.zeros(len(starts), dtype=np.int64), pval))
    b = np.concatenate((pval[starts], nxt))
    c = np.concatenate((np.zeros(len(starts)), cum))
    owner = np.concatenate((owners, pcls))
    split = np.clip(np.searchsorted(big_p, c, side="left"), a, b)
    run = c * (split - a) - (prefix[split] - prefix[a]) + (prefix[b] - prefix[split]) - c * (b - split)
    return np.bincount(owner, weights=run, minlength=g) / (m - 1)


def _fill(problem: Problem, table: _Table, tcls: np.ndarray, sizes: np.ndarray, failing: np.ndarray,
          strict: bool) -> tuple[np.ndarray, list[tuple[int, int]], bool]:
    """Make the suppressed records' class meet the gates (see :func:`evaluate_node`)."""
    suppressed = failing.copy()
    limit = problem.max_suppressed
    if _pool_passes(problem, table, tcls, sizes, suppressed):
        return suppressed, [], True
    s = int(sizes[suppressed].sum())
    kept = np.flatnonzero(~suppressed)
    if not problem.sensitive and problem.k is not None:  # k alone: short of k records
        need = problem.k - s
        if strict and s + need > limit:
            return suppressed, [], False
        donors = kept[np.argsort(-sizes[kept], kind="stable")]  # largest first, class order on ties
        spare = sizes[donors] - problem.k
        if int(spare[spare > 0].sum()) >= need:
            partial = []
            for g, extra in zip(donors.tolist(), spare.tolist(), strict=True):
                if need <= 0 or extra <= 0:
                    break
                take = min(int(extra), need)
                partial.append((int(g), take))
                need -= take
            return suppressed, partial, True
    # add whole classes that meet the gates, smallest first (the first in class order on ties)
    for g in kept[np.argsort(sizes[kept], kind="stable")]:
        suppressed[g] = True
        s += int(sizes[g])
        if strict and s > limit:
            return suppressed, [], False
        if _pool_passes(problem, table, tcls, sizes, suppressed):
            return suppressed, [], True
    return suppressed, [], False


def _pool_passes(problem: Problem, table: _Table, tcls: np.ndarray, sizes: np.ndarray,
                 suppressed: np.ndarray) -> bool:
    """Whether the suppressed classes, merged into one, meet the gates."""
    s = int(sizes[suppressed].sum())
    if problem.k is not None and s < problem.k:
        return False
    rows = suppressed[tcls]
    for sens in problem.sensitive:
        vals = sens.codes[problem.scode[table.rep[rows]]]
        counts = np.bincount(vals, weights=table.w[rows], minlength=sens.m)
        if problem.l is not None and np.count_nonzero(counts) < problem.l:
            return False
        if problem.t is not None:
            present = np.flatnonzero(counts)
            one = np.zeros(len(present), dtype=np.int64)
            emd = _emd(sens, one, present, counts[present], np.array([s]), problem.n)[0]
            if emd > problem.t - _T_EPS:
                return False
    return True


# -- the measures (ARX's definitions; see the module docstring) ---------------------------------------------------
def _floor10(v: float) -> float:
    return math.floor(v * _FACTOR) / _FACTOR


def _normalized_loss(a: float, n: int, size: int) -> float:
    """``MetricMDNMLoss.normalizeGeneralized``: ``(a - n/size) / (n - n/size)``, clipped at 0, 10 decimals."""
    low = n / size
    if n - low <= 0:
        return 0.0
    v = (a - low) / (n - low)
    return _floor10(v if v >= 0 else 0.0)


def _geometric(values: list[float]) -> float:
    """``ILMultiDimensionalGeometricMean.getAggregate`` with weights 1."""
    result = 1.0
    for v in values:
        result *= math.pow(v + 1.0, 1.0 / len(values))
    return result - 1.0


def node_measures(problem: Problem, ev: NodeEvaluation, which: tuple[str, ...] = MEASURES) -> dict[str, float]:
    """The measures ``which`` (all of :data:`MEASURES` by default) of an evaluated node (see the module docstring
    for the definitions)."""
    n = problem.n
    removed = ev.removed
    kept = (ev.sizes - removed).astype(np.float64)
    s = float(ev.suppressed_rows)
    out: dict[str, float] = {}
    if "loss" in which:
        losses = []
        for d, level in zip(problem.dims, ev.node, strict=True):
            share = d.shares[level][d.rows[ev.crep]]
            losses.append(_normalized_loss(float(np.dot(kept, share)) + s, n, d.size))
        out["loss"] = _geometric(losses)
    if "discernibility" in which:
        out["discernibility"] = float(np.dot(kept, kept)) + n * s
    if "aecs" in which:
        out["aecs"] = n / (int(np.count_nonzero(kept)) + (1 if s > 0 else 0))
    if "precision" in which:
        precisions = [((n - s) * (level / d.height if d.height else 0.0) + s) / n
                      for d, level in zip(problem.dims, ev.node, strict=True)]
        out["precision"] = float(sum(p / len(precisions) for p in precisions))
    if "entropy" in which:
        entropies = []
        for d, level in zip(problem.dims, ev.node, strict=True):
            e = d.entropy[level]
            if s > 0:
                c = np.bincount(d.labels[level][ev.crep], weights=removed.astype(np.float64),
                                minlength=d.n_labels[level])
                c = c[c > 0]
                e += float(np.sum(c * (np.log(c / s) / math.log(2.0))))
            entropies.append(_floor10(-e) if e != 0.0 else 0.0)
        out["entropy"] = float(sum(entropies))
    return {m: out[m] for m in which}


def _closed_bounds(problem: Problem, grid: np.ndarray, measure: str) -> np.ndarray:
    """A lower bound of ``measure`` at every node that needs no grouping: the measure with nothing suppressed
    (loss, precision), or its part that suppression cannot lower (entropy); -inf otherwise.

    Suppressing a record raises each of these: it costs 1 instead of its share in the loss, 1 instead of
    level / height in precision, and adds ``-c log2(c / s) >= 0`` to the entropy.
    """
    total = len(grid)
    dims = problem.dims
    if measure == "loss":
        per = [np.array([_normalized_loss(float(d.share_sum[lv]), problem.n, d.size) for lv in range(d.height + 1)])
               for d in dims]
        out = np.ones(total)
        for j, v in enumerate(per):
            out *= np.power(v[grid[:, j]] + 1.0, 1.0 / len(dims))
        return out - 1.0
    if measure == "precision":
        out = np.zeros(total)
        for j, d in enumerate(dims):
            out += (grid[:, j] / d.height if d.height else 0.0) / len(dims)
        return out
    if measure == "entropy":
        out = np.zeros(total)
        for j, d in enumerate(dims):
            floors = np.array([_floor10(-e) if e != 0.0 else 0.0 for e in d.entropy])
            out += floors[grid[:, j]]
        return out
    return np.full(total, -np.inf)


def _star(problem: Problem, ev: NodeEvaluation, measure: str) -> float:
    """A lower bound of ``measure`` at ``ev`` and at every node above it (for discernibility and AECS).

    ARX's own bounds (``getLowerBoundInternal``): ``sum c^2`` over every class (it only grows as classes merge)
    and ``n / classes`` (classes only merge). Each suppressed record costs ``n >= c``, but the records added to
    the suppressed class to reach k (at most k - 1 of them, taken from classes that keep at least k) can lower
    ``sum c^2`` by at most n each, so the discernibility bound is lowered by ``(k - 1) n``.
    """
    if measure == "discernibility":
        sq = float(np.dot(ev.sizes.astype(np.float64), ev.sizes.astype(np.float64)))
        slack = (problem.k - 1) * problem.n if problem.k is not None and not problem.sensitive else 0
        return sq - slack
    if measure == "aecs":
        return problem.n / len(ev.sizes)
    return -np.inf


# -- the search ------------------------------------------------------------------------------------------------------
def lattice_grid(heights: tuple[int, ...]) -> np.ndarray:
    """Every node, one row of levels each, in lattice order (the last quasi-identifier varies fastest)."""
    shape = tuple(h + 1 for h in heights)
    return np.indices(shape).reshape(len(shape), -1).T.astype(np.int64)


@dataclass
class _Best:
    value: float
    level: int
    index: int
    ev: NodeEvaluation
    measures: dict[str, float]

    def tie(self, value: float) -> float:
        """Values this close to the best are equal (float noise)."""
        return _TOL * max(1.0, abs(self.value), abs(value) if math.isfinite(value) else 0.0)

    def margin(self) -> float:
        """A bound must exceed the best by this much to prune: bounds and values are rounded to 10 decimals
        per attribute from sums taken in different orders."""
        return _MARGIN * max(1.0, abs(self.value))

    def beats(self, value: float, level: int, index: int) -> bool:
        """Whether a node of this value and total level would be chosen over the best."""
        if value < self.value - self.tie(value):
            return True
        return value <= self.value + self.tie(value) and (level, index) < (self.level, self.index)


def search_lattice(problem: Problem, measure: str = "loss") -> tuple[NodeEvaluation | None, dict[str, float],
                                                                     dict[str, int]]:
    """The node of least ``measure`` among those that pass (:func:`evaluate_node`).

    Returns
    -------
    (evaluation of the chosen node or None when no node passes, its measures, counts) with counts
    ``checked``, ``visited`` and ``total``.

    Raises
    ------
    InputError
        The lattice has more than :data:`MAX_NODES` nodes.

    Notes
    -----
    ARX's Flash (``FLASHAlgorithmImpl``: Kohlmayer et al. 2012) walks greedy paths from the bottom towards
    the top, binary-searches each path for its lowest node that meets the gates, tags the generalizations of a
    passing node as passing and the specializations of a failing node as failing (predictive tagging: the
    gates are monotone under record suppression), and prunes nodes whose lower bound of the measure is no
    better than the best node found (``prune`` / ``skip``). With a measure that suppression makes
    non-monotone (ARX's "NM" measures, all those used here), every passing node it cannot prune has to be
    grouped to know its value.

    This search does the same in another order:

    1. Nodes are taken in increasing order of a lower bound of the measure that needs no grouping
       (:func:`_closed_bounds`: loss, precision and entropy with nothing suppressed, which never exceed the
       node's value and never decrease from a node to its generalizations), the fewest levels first among
       equal bounds, so that a node's specializations come before it. The search stops at the first node whose
       bound exceeds the best value found: every node left has a bound, hence a value, at least that large.
       Discernibility and AECS have no such bound: their nodes are taken bottom-up (by total level) and each
       inherits from its direct specializations the largest of ARX's bounds known below it (:func:`_star`); a
       node whose inherited bound cannot beat the best is skipped and passes the bound on.
    2. A node not yet decided starts a Flash path: from it, the successor of least loss bound (least entropy
       bound for entropy; ARX's ``FLASHStrategy`` prefers fewest levels relative to the heights, then most
       distinct values kept, which checked more nodes on ARX's Adult), up to the top or to a node known to meet
       the certificate below; the path is binary-searched for its lowest node whose *failing classes* hold at
       most the allowed records.
       A node above that bound (more records in failing classes than allowed) certifies that every node below
       it fails: a record in a class that fails k or distinct l is in a class that fails at every
       specialization. This certificate is monotone even where the full gate is not (the class of suppressed
       records, see :func:`evaluate_node`), so tagging with it never loses the optimum. It is not used with t:
       a class failing t can split into classes that pass, so t gives no certificate and every node under
       the bound is grouped.
    3. Every node grouped (on a path or in order) that passes is scored, and the best is kept (ties: the
       fewest levels, then the first in lattice order).

    Grouping rolls up from the smallest table of a node already grouped below the node (ARX keeps such
    snapshots too), so nodes high in the lattice group a few hundred rows instead of every distinct record.
    """
    return _Search(problem, measure, lattice_size(problem.heights)).run()


def lattice_size(heights: tuple[int, ...] | list[int]) -> int:
    """The number of nodes of the lattice of ``heights`` (one per quasi-identifier).

    Raises
    ------
    InputError
        More than :data:`MAX_NODES` nodes: the search could not finish in reasonable time. One line with the
        node count, suggesting fewer quasi-identifiers or coarser hierarchies (or a node given in ``levels``).
    """
    total = math.prod(int(h) + 1 for h in heights)
    if total > MAX_NODES:
        raise InputError(f"generalization: the lattice has {total:,} nodes, more than the {MAX_NODES:,} the search "
                         "takes: use fewer quasi-identifiers or coarser hierarchies (fewer levels), or give the "
                         "node in levels")
    return total


class _Search:
    """State of one :func:`search_lattice` run."""

    def __init__(self, problem: Problem, measure: str, total: int) -> None:
        self.problem = problem
        self.measure = measure
        self.total = total
        heights = problem.heights
        self.heights = np.array(heights, dtype=np.int64)
        self.grid = lattice_grid(heights)
        self.level_sum = self.grid.sum(axis=1)
        self.strides = np.array([int(np.prod([h + 1 for h in heights[j + 1:]], dtype=np.float64))
                                 for j in range(len(heights))], dtype=np.int64)
        self.bounds = _closed_bounds(problem, self.grid, measure)
        self.inherits = measure in ("discernibility", "aecs")
        self.certify = problem.t is None  # k and distinct l: failing-class records never decrease downwards
        # Flash paths climb through the successor of least loss bound (the entropy bound for entropy): on ARX's
        # Adult this checks fewer nodes than ARX's FLASHStrategy order (fewest levels relative to the heights,
        # then most distinct values kept) for every measure but discernibility and AECS at k=5, 5%
        self.path_cost = self.bounds if measure == "entropy" else _closed_bounds(problem, self.grid, "loss")
        self.evaluated = np.zeros(total, dtype=bool)
        self.certified = np.zeros(total, dtype=bool)  # grouped, and failing classes hold at most the limit
        self.popped = np.zeros(total, dtype=bool)
        self.star = np.full(total, -np.inf)
        self.floor = np.full(total, -np.inf)
        self.failed_mask = np.zeros(total, dtype=bool)  # grouped, and failing classes hold more than the limit
        # the specializations of those nodes (each node below one, itself included): known to fail the certificate.
        # A bytearray, read and written one node at a time from Python; known_failing is a NumPy view of it
        self._known = bytearray(total)
        self.known_failing = np.frombuffer(self._known, dtype=np.bool_)
        self._steps = [(int(s), int(h) + 1) for s, h in zip(self.strides.tolist(), heights, strict=True)]
        self.cache_nodes = np.zeros((0, len(heights)), dtype=np.int64)  # rows 0..len(cache_tables)-1 in use
        self.cache_tables: list[_Table] = []
        self.cache_sizes = np.zeros(0, dtype=np.int64)
        self.cache_rows = 0
        self.bottom = _bottom(problem)
        self.best: _Best | None = None
        self.checked = 0

    def run(self) -> tuple[NodeEvaluation | None, dict[str, float], dict[str, int]]:
        order = np.lexsort((np.arange(self.total), self.level_sum, self.bounds))
        for idx in order.tolist():
            best = self.best
            if best is not None and self.bounds[idx] > best.value + best.margin():
                break  # every node left has a bound at least this large
            self.popped[idx] = True
            node = self.grid[idx]
            if self.inherits:
                preds = [self.floor[idx - int(self.strides[j])] for j in range(len(node)) if node[j] > 0]
                self.floor[idx] = max(max(preds, default=-np.inf), self.star[idx])
                if not self.evaluated[idx] and best is not None and self.floor[idx] > -np.inf and \
                        not best.beats(float(self.floor[idx]), int(self.level_sum[idx]), idx):
                    continue  # ARX's bounds are exact sums: this node cannot do better than the best
            if self.evaluated[idx] or self._known[idx]:
                continue
            if self.certify:
                self._probe(idx)
            if not self.evaluated[idx] and not self._known[idx]:
                self._check(idx)
        counts = {"checked": self.checked, "visited": int(np.count_nonzero(self.popped | self.evaluated)),
                  "total": self.total}
        if self.best is None:
            return None, {}, counts
        return self.best.ev, node_measures(self.problem, self.best.ev), counts

    def _tag_failing(self, idx: int) -> None:
        """Tag ``idx`` and every node below it as failing the certificate (Flash's predictive tagging).

        The tagged set is kept closed downwards, so the walk down stops at tagged nodes: each node is tagged once
        and looks at its direct specializations once, whatever the number of failing nodes (the work is linear in
        the lattice, where testing each node against a list of the failed nodes was quadratic).
        """
        known = self._known
        if known[idx]:
            return
        known[idx] = 1
        stack = [idx]
        steps = self._steps
        while stack:
            i = stack.pop()
            for stride, span in steps:
                if (i // stride) % span:  # this quasi-identifier's level is above 0
                    below = i - stride
                    if not known[below]:
                        known[below] = 1
                        stack.append(below)

    def _probe(self, idx: int) -> None:
        """Flash's binary phase on the greedy path up from ``idx``."""
        path = [idx]
        current = idx
        while not self.certified[current]:
            node = self.grid[current]
            succ = [current + int(self.strides[j]) for j in range(len(node)) if node[j] < self.heights[j]]
            if not succ:
                break
            current = min(succ, key=lambda i: (self.path_cost[i], i))
            path.append(current)
        low, high = 0, len(path) - 1
        if self.certified[path[-1]]:
            high -= 1
        while low <= high:
            mid = (low + high) // 2
            target = path[mid]
            if not self.evaluated[target]:
                self._check(target)
            if self.certified[target]:
                high = mid - 1
            else:
                low = mid + 1

    def _remember(self, node: np.ndarray, table: _Table) -> None:
        """Keep a grouped table to roll up from; the oldest go once they hold too many rows together."""
        count = len(self.cache_tables)
        if count == len(self.cache_sizes):
            grow = max(16, 2 * count)
            self.cache_nodes = np.vstack([self.cache_nodes, np.zeros((grow - count, len(node)), dtype=np.int64)]) \
                if count else np.zeros((grow, len(node)), dtype=np.int64)
            self.cache_sizes = np.concatenate([self.cache_sizes, np.zeros(grow - count, dtype=np.int64)])
        self.cache_nodes[count] = node
        self.cache_sizes[count] = len(table.rep)
        self.cache_tables.append(table)
        self.cache_rows += len(table.rep)
        if self.cache_rows > _CACHE_ROWS * max(self.problem.distinct, 1) and len(self.cache_tables) > 1:
            drop = len(self.cache_tables) // 2  # the older half
            self.cache_rows -= int(self.cache_sizes[:drop].sum())
            del self.cache_tables[:drop]
            keep = len(self.cache_tables)
            self.cache_nodes[:keep] = self.cache_nodes[drop:drop + keep].copy()
            self.cache_sizes[:keep] = self.cache_sizes[drop:drop + keep].copy()

    def _check(self, idx: int) -> None:
        """Group one node, record its certificate and, if it passes, its value."""
        problem = self.problem
        node = self.grid[idx]
        base = self.bottom
        if self.cache_tables:
            count = len(self.cache_tables)
            below = np.all(self.cache_nodes[:count] <= node, axis=1)
            if below.any():
                sizes = np.where(below, self.cache_sizes[:count], np.iinfo(np.int64).max)
                base = self.cache_tables[int(np.argmin(sizes))]
        ev = evaluate_node(problem, tuple(node.tolist()), base)
        self.checked += 1
        self.evaluated[idx] = True
        if len(ev.table.rep) < problem.distinct:
            self._remember(node, ev.table)
        if self.inherits:
            self.star[idx] = _star(problem, ev, self.measure)
            self.floor[idx] = max(self.floor[idx], self.star[idx])
        if ev.failing_rows <= problem.max_suppressed:
            self.certified[idx] = True
        elif self.certify:
            self.failed_mask[idx] = True
            self._tag_failing(idx)
        if not ev.passes:
            return
        value = node_measures(problem, ev, (self.measure,))[self.measure]
        level = int(self.level_sum[idx])
        if self.best is None or self.best.beats(value, level, idx):
            self.best = _Best(value, level, idx, ev, {})


# -- the sanitizer -----------------------------------------------------------------------------------------------
class Generalization(Sanitizer):
    """Full-domain generalization with record suppression (privacy unit ``equivalence_class``).

    Every quasi-identifier is replaced by its hierarchy label at the node's level (readable strings:
    ``[40-50)``, ``130**``, ``*``); records of classes that fail a gate are suppressed, published with every
    quasi-identifier ``*`` (one class of their own, which meets the gates too: see :func:`evaluate_node`).
    Sensitive attributes, the class and other attributes are published unchanged, as ARX publishes
    insensitive attributes: a column tagged ``other`` is taken not to identify anyone (tag it a
    quasi-identifier to generalize it); direct identifiers never reach a sanitizer (the flow drops or
    pseudonymizes them first).

    With ``levels`` null the node is searched (:meth:`search`, :func:`search_lattice`): the one of least
    ``measure`` among those that meet every gate with at most ``suppression_limit`` of the records suppressed
    (a lattice of more than :data:`MAX_NODES` nodes is refused up front). With ``levels`` given, that node is
    published under the same rule: its failing classes are suppressed only while that takes at most
    ``suppression_limit`` of the records, and a node that needs more is refused (:class:`ReleaseRejected`, fail
    closed), never published with more suppressed. The records suppressed are counted in ``suppressed_cells``.

    Parameters
    ----------
    k, l, t : optional
        Gates: smallest class; distinct sensitive values per class (every sensitive column); largest EMD between
        a class and the table (every sensitive column; equal distance for text, ordered distance for numbers).
        At least one is needed; l and t need a sensitive column.
    suppression_limit : float
        Share of records that may be suppressed, in [0, 1).
    measure : {"loss", "discernibility", "aecs", "precision", "entropy"}
        ARX's utility measures (module docstring).
    hierarchies : dict, optional
        Column -> :data:`ppdp.schemas.hierarchy.HierarchySpec`; other quasi-identifiers get automatic ones.
    levels : dict, optional
        Quasi-identifier -> level.
    suppression : {"records", "cells"}
        How the records of failing classes are treated at the chosen node: ``records`` publishes them with every
        quasi-identifier ``*``; ``cells`` runs :func:`ppdp.tasks.core.suppression.local_suppression` instead,
        which suppresses single cells (fewer than record suppression takes: never more) until every class,
        ``*`` cells being a value, holds at least k records. The node is chosen as with record suppression (the
        limit bounds the records suppressed there), and its measures describe that node; only k is supported.
    seed : int
        Seed of the published row order (the method itself is deterministic).
    """

    name: ClassVar[str] = "generalization"
    description: ClassVar[str] = ("full-domain generalization: quasi-identifiers coarsened along hierarchies, the "
                                  "level of each chosen by a lattice search")
    Params: ClassVar[type[MethodParams]] = GeneralizationParams
    randomized: ClassVar[bool] = False
    shape: ClassVar[str] = "every_row"  # a recoding of every input row

    def __init__(self, *, k: int | None = None, l: int | None = None, t: float | None = None,  # noqa: E741
                 suppression_limit: float = 0.0, measure: str = "loss", hierarchies: dict | None = None,
                 levels: dict[str, int] | None = None, suppression: Literal["records", "cells"] = "records",
                 seed: int = 0) -> None:
        self.k = k
        self.l = l
        self.t = t
        self.suppression_limit = suppression_limit
        self.measure = measure
        self.hierarchies = hierarchies
        self.levels = levels
        self.suppression = suppression
        self.seed = seed

    # -- setup ------------------------------------------------------------------------------------------------
    def _setup(self, frame: pd.DataFrame, roles: Roles) -> tuple[GeneralizationParams, list[str], list[Hierarchy],
                                                                 list[np.ndarray]]:
        """The parameters, the quasi-identifiers, their validated hierarchies and each cell's hierarchy row."""
        params = self.params()
        assert isinstance(params, GeneralizationParams)
        qis = [q for q in roles.quasi_identifiers if q in frame.columns and q not in roles.identifiers]
        if not qis:
            raise InputError("generalization: no quasi-identifier to generalize")
        present = roles.model_copy(update={"columns": [c for c in roles.columns if c.name in qis
                                                       or c.role is not Role.quasi_identifier]})
        made = hierarchies_for(frame, present, dict(params.hierarchies or {}))
        hierarchies = [made[q] for q in qis]
        codes = [h.codes(frame[q], self._position(frame, roles, q)) for q, h in zip(qis, hierarchies, strict=True)]
        return params, qis, hierarchies, codes

    @staticmethod
    def _position(frame: pd.DataFrame, roles: Roles, name: str) -> int:
        tag = roles.get(name)
        # column names are unique: get_loc gives an int
        return int(tag.position) + 1 if tag.position is not None else int(cast(int, frame.columns.get_loc(name))) + 1

    @staticmethod
    def _sensitive(frame: pd.DataFrame, roles: Roles) -> list[str]:
        return [s for s in roles.names(Role.sensitive) if s in frame.columns]

    def _problem(self, frame: pd.DataFrame, roles: Roles, *, search: bool) -> tuple[
            GeneralizationParams, list[str], list[Hierarchy], list[np.ndarray], Problem]:
        """The parameters, quasi-identifiers, hierarchies, codes and the prepared problem; with ``search`` a
        lattice too large to search is refused (:func:`lattice_size`) before the table is prepared."""
        params = self.params()
        assert isinstance(params, GeneralizationParams)
        if params.k is None and params.l is None and params.t is None:
            raise SpecError("generalization: no privacy gate: set k (or l, t) in the method or the privacy section")
        if (params.l is not None or params.t is not None) and not self._sensitive(frame, roles):
            gate = "l" if params.l is not None else "t"
            raise SpecError(f"generalization: {gate} needs a sensitive column (declare one with role sensitive)")
        params, qis, hierarchies, codes = self._setup(frame, roles)
        if search:
            lattice_size([h.height for h in hierarchies])
        sensitive = {s: frame[s] for s in self._sensitive(frame, roles)} if (
            params.l is not None or params.t is not None) else {}
        problem = prepare(codes, hierarchies, sensitive=sensitive, k=params.k, l=params.l, t=params.t,
                          suppression_limit=params.suppression_limit)
        return params, qis, hierarchies, codes, problem

    def _gates(self, params: GeneralizationParams) -> str:
        parts = [f"{name} = {value:g}" for name, value in (("k", params.k), ("l", params.l), ("t", params.t))
                 if value is not None]
        return ", ".join(parts)

    def _no_node(self, params: GeneralizationParams) -> ReleaseRejected:
        share = f"{params.suppression_limit * 100:.4g}%"
        gates = [name for name in ("k", "l", "t") if getattr(params, name) is not None]
        return ReleaseRejected(f"generalization: no node of the lattice meets {self._gates(params)} with at most "
                               f"{share} of the records suppressed", failed_gates=gates)

    # -- tuning -----------------------------------------------------------------------------------------------
    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        _, qis, hierarchies, _ = self._setup(frame, roles)
        return {"levels": Lattice(max_level={q: h.height for q, h in zip(qis, hierarchies, strict=True)})}

    def search(self, frame: pd.DataFrame, roles: Roles) -> LatticeSearch:
        """Search the lattice on ``frame`` for the node of least ``measure`` that meets every gate with at most
        ``suppression_limit`` of the records suppressed (:func:`search_lattice`). ``levels`` is ignored.

        Raises
        ------
        ReleaseRejected
            No node meets the gates (names the gates and the limit).
        InputError
            The lattice has more than :data:`MAX_NODES` nodes (refused before any work, :func:`lattice_size`).
        """
        started = time.perf_counter()
        if len(frame) == 0:
            raise InputError(f"{self.name}: the input has no rows")
        params, qis, _, _, problem = self._problem(frame.reset_index(drop=True), roles, search=True)
        ev, measures, counts = search_lattice(problem, params.measure)
        if ev is None:
            raise self._no_node(params)
        return LatticeSearch(node={str(q): int(v) for q, v in zip(qis, ev.node, strict=True)},
                             measure=str(params.measure), measures={str(m): float(v) for m, v in measures.items()},
                             checked=int(counts["checked"]), visited=int(counts["visited"]),
                             total=int(counts["total"]), classes=int(ev.classes),
                             suppressed_rows=int(ev.suppressed_rows), seconds=float(time.perf_counter() - started))

    # -- the work ---------------------------------------------------------------------------------------------
    def _node(self, params: GeneralizationParams, qis: list[str], hierarchies: list[Hierarchy]) -> tuple[int, ...]:
        levels = dict(params.levels or {})
        unknown = [c for c in levels if c not in qis]
        if unknown:
            raise SpecError(f"generalization: levels names column {key_text(unknown[0])}, which is not a "
                            "quasi-identifier of the input")
        node = []
        for q, h in zip(qis, hierarchies, strict=True):
            if q not in levels:
                raise SpecError(f"generalization: levels gives no level for quasi-identifier {key_text(q)}")
            if levels[q] > h.height:
                raise SpecError(f"generalization: level {levels[q]} of {key_text(q)} is above its hierarchy's "
                                f"top level {h.height}")
            node.append(int(levels[q]))
        return tuple(node)

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        params, qis, hierarchies, codes, problem = self._problem(frame, roles, search=self.levels is None)
        if params.levels is None:
            found, _, _ = search_lattice(problem, params.measure)
            if found is None:
                raise self._no_node(params)
            node = found.node
        else:
            node = self._node(params, qis, hierarchies)
        ev = evaluate_node(problem, node, strict=True)
        if not ev.feasible or not ev.passes:  # fail closed: never more suppression than the limit allows
            if params.levels is None:
                raise self._no_node(params)
            raise ReleaseRejected(f"generalization: the node given in levels does not meet {self._gates(params)} "
                                  f"with at most {params.suppression_limit:.0%} of the records suppressed",
                                  failed_gates=[g for g in ("k", "l", "t") if getattr(params, g) is not None])
        if params.suppression == "cells":
            return self._local(frame, params, qis, hierarchies, codes, node)
        record_class = ev.row_class[problem.inverse]
        pool = ev.suppressed[record_class]
        for donor, count in ev.partial:
            pool[np.flatnonzero(record_class == donor)[-count:]] = True
        out = frame.copy()
        treatments: dict[str, Treatment] = {c: "kept" for c in frame.columns}
        for q, h, c, level in zip(qis, hierarchies, codes, node, strict=True):
            out[q] = _publish(h, c, level, pool)
            treatments[q] = "generalized"
        group = np.where(pool, len(ev.sizes), record_class)
        s = int(pool.sum())
        return Release(frame=out, unit="equivalence_class", treatments=treatments,
                       row_source=np.arange(len(frame), dtype=np.int64), group=group, input_group=group.copy(),
                       suppressed_cells={q: s for q in qis} if s else {}, suppressed_rows=0)

    def _local(self, frame: pd.DataFrame, params: GeneralizationParams, qis: list[str], hierarchies: list[Hierarchy],
               codes: list[np.ndarray], node: tuple[int, ...]) -> Release:
        """The node's labels with local (cell) suppression instead of record suppression (k only)."""
        if params.k is None or params.l is not None or params.t is not None:
            raise SpecError("generalization: suppression: cells supports k alone (set suppression: records for l "
                            "or t)")
        columns: list[np.ndarray] = []
        star: list[int | None] = []
        for h, c, level in zip(hierarchies, codes, node, strict=True):
            if level == h.height:  # every cell, missing ones too (even with no value at all), is published '*'
                columns.append(np.zeros(len(c), dtype=np.int64))
                star.append(0)
                continue
            present = c >= 0  # missing cells (-1) are a value of their own below the top
            ids = np.full(len(c), -1, dtype=np.int64)
            ids[present] = h.level_codes(level)[c[present]]
            columns.append(ids)
            star.append(None)
        found = local_suppression(np.column_stack(columns), int(params.k), star=star)
        assert found is not None  # no cell budget given
        out = frame.copy()
        treatments: dict[str, Treatment] = {c: "kept" for c in frame.columns}
        cells: dict[str, int] = {}
        for j, (q, h, c, level) in enumerate(zip(qis, hierarchies, codes, node, strict=True)):
            out[q] = _publish(h, c, level, found.mask[:, j])
            treatments[q] = "generalized"
            if int(found.mask[:, j].sum()):
                cells[q] = int(found.mask[:, j].sum())
        group = equivalence_class_ids(out, qis)
        return Release(frame=out, unit="equivalence_class", treatments=treatments,
                       row_source=np.arange(len(frame), dtype=np.int64), group=group, input_group=group.copy(),
                       suppressed_cells=cells, suppressed_rows=0)


def _publish(h: Hierarchy, codes: np.ndarray, level: int, pool: np.ndarray) -> np.ndarray:
    """Each cell's label at ``level`` (object array of str): ``*`` for suppressed records, and at the top level
    for missing cells, which stay missing below it."""
    labels = h.labels(codes, level)
    if level == h.height:
        labels = np.where(codes < 0, ROOT, labels)
    labels = np.where(pool, ROOT, labels)
    return labels.astype(object)
