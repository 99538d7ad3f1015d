"""ARX's utility measures of a node (:func:`node_measures`) and the search of the lattice for the best node that
meets every gate (:func:`search_lattice`); the definitions are in :mod:`ppdp.tasks.sanitize.generalization`'s
docstring, the node's evaluation in :mod:`ppdp.tasks.sanitize.generalization_nodes`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ppdp.tasks.core.errors import InputError
from ppdp.tasks.sanitize.generalization_nodes import ClassTable, NodeEvaluation, Problem, bottom_table, evaluate_node

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
_CACHE_ROWS = 40  # roll-up tables kept, in multiples of the distinct-record count


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
        self.cache_tables: list[ClassTable] = []
        self.cache_sizes = np.zeros(0, dtype=np.int64)
        self.cache_rows = 0
        self.bottom = bottom_table(problem)
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

    def _remember(self, node: np.ndarray, table: ClassTable) -> None:
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

