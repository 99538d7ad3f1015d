"""The problem of full-domain generalization, coded once, and the evaluation of one node of its lattice: each
class's records, whether it meets the gates (k, l, t), and which classes are suppressed within the limit
(:func:`evaluate_node`). The search over the lattice is :mod:`ppdp.tasks.sanitize.generalization_search`; the
method, and the measures' definitions, :mod:`ppdp.tasks.sanitize.generalization`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ppdp.schemas.hierarchy import ROOT
from ppdp.tasks.core.hierarchy import Hierarchy

_T_EPS = 1e-12  # a class meets t when its EMD is at most t - _T_EPS (float noise never tips a published class)


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
    dims = [_dimension(h, c) for h, c in zip(hierarchies, codes, strict=True)]
    columns = [(d.rows, d.size) for d in dims]
    sens = [_sensitive(name, series, w_in) for name, series in sensitive.items()] if (
        (l is not None or t is not None) and sensitive) else []
    sens_codes = [(x.codes, x.m) for x in sens]
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


def _dimension(h: Hierarchy, codes: np.ndarray) -> _Dimension:
    """One quasi-identifier coded for the search: each record's hierarchy row (missing: an extra row) and, per
    level, each row's label id and share (:func:`prepare`)."""
    c = np.asarray(codes, dtype=np.int64)
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
    return _Dimension(h.column, h.height, c, ids, n_labels, shares, size)


def _sensitive(name: str, series: pd.Series, weights: np.ndarray | None) -> _Sensitive:
    """One sensitive column coded for the search (missing: a value of its own; :func:`prepare`)."""
    values = np.asarray(series, dtype=object) if isinstance(series.dtype, pd.CategoricalDtype) else series
    sc, uniques = pd.factorize(values, sort=True)
    sc = np.asarray(sc, dtype=np.int64)
    m = len(uniques)
    if (sc < 0).any():
        sc = np.where(sc < 0, m, sc)
        m += 1
    ordered = bool(pd.api.types.is_numeric_dtype(series))  # as ppdp.tasks.privacy.models measures t
    return _Sensitive(str(name), sc, m, np.rint(np.bincount(sc, weights=weights, minlength=m)).astype(np.int64),
                      ordered)


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
class ClassTable:
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
    table : ClassTable
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
    table: ClassTable
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


def bottom_table(problem: Problem) -> ClassTable:
    return ClassTable(np.arange(problem.distinct, dtype=np.int64), problem.weight, bottom=True)


def evaluate_node(problem: Problem, node: tuple[int, ...], base: ClassTable | None = None, *,
                  strict: bool = True) -> NodeEvaluation:
    """Group the records at ``node`` and decide which records to suppress.

    Parameters
    ----------
    problem : Problem
    node : tuple of int
        One level per quasi-identifier.
    base : ClassTable, optional
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
    base = base or bottom_table(problem)
    cols = []
    for d, level in zip(problem.dims, node, strict=True):
        labels = d.labels[level]
        cols.append((labels if base.bottom else labels[base.rep], d.n_labels[level]))
    if problem.sensitive:  # the (labels, sensitive tuple) rows first, then their classes among fewer rows
        scode = problem.scode if base.bottom else problem.scode[base.rep]
        tab, n_tab = _combine([*cols, (scode, problem.n_scodes)], len(base.rep))
        tfirst = _first_positions(tab)
        table = ClassTable(base.rep[tfirst], np.bincount(tab, weights=base.w, minlength=n_tab).astype(np.int64))
        tcls, n_classes = _combine([(c[tfirst], card) for c, card in cols], n_tab)
        crep = table.rep[_first_positions(tcls)]
        cls = tcls[tab]
    else:
        cls, n_classes = _combine(cols, len(base.rep))
        first = _first_positions(cls)
        table = ClassTable(base.rep[first], np.bincount(cls, weights=base.w, minlength=n_classes).astype(np.int64))
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


def _failing(problem: Problem, table: ClassTable, tcls: np.ndarray, sizes: np.ndarray) -> np.ndarray:
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


def _fill(problem: Problem, table: ClassTable, tcls: np.ndarray, sizes: np.ndarray, failing: np.ndarray,
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


def _pool_passes(problem: Problem, table: ClassTable, tcls: np.ndarray, sizes: np.ndarray,
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


def publish_labels(h: Hierarchy, codes: np.ndarray, level: int, pool: np.ndarray) -> np.ndarray:
    """Each cell's label at ``level`` (object array of str): ``*`` for suppressed records, and at the top level
    for missing cells, which stay missing below it."""
    labels = h.labels(codes, level)
    if level == h.height:
        labels = np.where(codes < 0, ROOT, labels)
    labels = np.where(pool, ROOT, labels)
    return labels.astype(object)
