"""DMPD's inducers (Procedure 3 of Matatov, Rokach & Maimon 2010, section 4.3): naive Bayes and a C4.5-like tree
over coded features, and :class:`PartitionClassifier`, one inducer per subset of a feature set partition.

The module docstring of :mod:`ppdp.tasks.core.dmpd` describes both inducers and the combination rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "INDUCERS",
    "Inducer",
    "NaiveBayes",
    "PartitionClassifier",
    "Tree",
    "canonical",
    "check_codes",
    "check_partition",
    "fit_inducer",
    "log_normalise",
    "pessimistic_errors",
    "xlogx",
]

Inducer = Literal["naive_bayes", "tree"]
INDUCERS = ("naive_bayes", "tree")
_EPS = 1e-10
# C4.5 / J4.8 pruning confidence 0.25 and its one-sided normal quantile z(0.75)
_CF = 0.25
_Z = 0.6744897501960817


def xlogx(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    out = np.zeros_like(a)
    pos = a > 0
    out[pos] = a[pos] * np.log2(a[pos])
    return out



@dataclass
class NaiveBayes:
    logprior: np.ndarray  # (C,)
    tables: list[np.ndarray]  # per column (card, C): log P(v | c)

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, cards: Sequence[int], n_classes: int) -> NaiveBayes:
        c = int(n_classes)
        ny = np.bincount(y, minlength=c).astype(np.float64)
        logprior = np.log((ny + 1.0) / (len(y) + c))
        tables = []
        for j, card in enumerate(cards):
            cnt = np.bincount(x[:, j].astype(np.int64) * c + y, minlength=int(card) * c).reshape(int(card), c)
            tables.append(np.log((cnt + 1.0) / (ny + int(card))))
        return cls(logprior, tables)

    def joint(self, x: np.ndarray) -> np.ndarray:
        s = np.broadcast_to(self.logprior, (len(x), len(self.logprior))).copy()
        for j, t in enumerate(self.tables):
            s += t[x[:, j]]
        return s

    def log_proba(self, x: np.ndarray) -> np.ndarray:
        return log_normalise(self.joint(x))


def log_normalise(s: np.ndarray) -> np.ndarray:
    m = s.max(axis=1, keepdims=True)
    return s - (m + np.log(np.exp(s - m).sum(axis=1, keepdims=True)))


def pessimistic_errors(n: np.ndarray, e: np.ndarray) -> np.ndarray:
    """C4.5's estimated errors ``e + addErrs(n, e)`` at confidence 0.25 (WEKA ``Stats.addErrs``), vectorised."""
    n = np.asarray(n, dtype=np.float64)
    e = np.asarray(e, dtype=np.float64)
    z2 = _Z * _Z
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        base = n * (1.0 - _CF ** (1.0 / n))

        def normal(err: np.ndarray | float) -> np.ndarray:
            f = (err + 0.5) / n
            r = (f + z2 / (2 * n) + _Z * np.sqrt(np.maximum(f / n - f * f / n + z2 / (4 * n * n), 0.0))) / (1 + z2 / n)
            return r * n - err

        one = np.where(1.5 >= n, np.maximum(n - 1.0, 0.0), normal(1.0))
        add = np.where(e < 1, base + e * (one - base), np.where(e + 0.5 >= n, np.maximum(n - e, 0.0), normal(e)))
    return np.where(n > 0, e + add, 0.0)


@dataclass
class Tree:
    attr: np.ndarray  # per node: column split on, -1 for a leaf
    child_base: np.ndarray  # per node: index of the child for code 0 (children are contiguous)
    logp: np.ndarray  # per node (C,): Laplace-corrected log P(c | node)

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, cards: Sequence[int], n_classes: int, min_leaf: int = 2,
            prune: bool = True) -> Tree:
        c = int(n_classes)
        levels = _grow_levels(x, y, cards, c, min_leaf)
        if prune:
            _prune_levels(levels)
        return cls(*_flatten_levels(levels, c))

    def leaves(self, x: np.ndarray) -> np.ndarray:
        n = len(x)
        node = np.zeros(n, dtype=np.int64)
        idx = np.arange(n)
        while len(idx):
            a = self.attr[node[idx]]
            inner = a >= 0
            if not inner.any():
                break
            idx = idx[inner]
            a = a[inner]
            node[idx] = self.child_base[node[idx]] + x[idx, a]
        return node

    def log_proba(self, x: np.ndarray) -> np.ndarray:
        return self.logp[self.leaves(x)]


# A tree level: (counts, pcounts, attr, child_base, parent_of_next); the last level has no next
_Level = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


def _grow_levels(x: np.ndarray, y: np.ndarray, cards: Sequence[int], c: int, min_leaf: int) -> list[_Level]:
    """Grow the tree level-wise, every splittable node of a level at once; the levels, root first."""
    n, m = x.shape
    cards_a = np.asarray(cards, dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(cards_a)[:-1]]).astype(np.int64)  # attribute blocks of codes
    width = int(cards_a.sum())
    xo = np.asarray(x, dtype=np.int64) + off  # code of attribute a -> off[a] + code
    xlx = xlogx(np.arange(n + 1))  # counts are integers: x log2 x by table look-up
    counts = np.bincount(y, minlength=c)[None, :].astype(np.int64)
    pcounts = counts.copy()
    rows = np.arange(n)
    node = np.zeros(n, dtype=np.int64)
    levels: list[_Level] = []
    while True:
        nodes_here = len(counts)
        attr = np.full(nodes_here, -1, dtype=np.int64)
        child_base = np.zeros(nodes_here, dtype=np.int64)
        split_nodes = _choose_splits(attr, counts, node, rows, xo, y, off, width, c, xlx, min_leaf, m)
        if len(split_nodes) == 0:
            levels.append((counts, pcounts, attr, child_base, None))
            break
        sizes = cards_a[attr[split_nodes]]
        child_base[split_nodes] = np.cumsum(sizes) - sizes
        total = int(sizes.sum())
        go = attr[node] >= 0
        r2 = rows[go]
        nd2 = node[go]
        a2 = attr[nd2]
        xa = x[r2, a2].astype(np.int64)
        new_node = child_base[nd2] + xa
        new_counts = np.bincount(new_node * c + y[r2], minlength=total * c).reshape(total, c)
        parent = np.repeat(split_nodes, sizes)
        empty = new_counts.sum(axis=1) == 0
        new_p = np.where(empty[:, None], pcounts[parent], new_counts)
        levels.append((counts, pcounts, attr, child_base, parent))
        counts, pcounts, rows, node = new_counts, new_p, r2, new_node
    return levels


def _choose_splits(attr: np.ndarray, counts: np.ndarray, node: np.ndarray, rows: np.ndarray, xo: np.ndarray,
                   y: np.ndarray, off: np.ndarray, width: int, c: int, xlx: np.ndarray, min_leaf: int,
                   m: int) -> np.ndarray:
    """Each splittable node's attribute by gain ratio among those of at least average gain, written into
    ``attr`` (-1: a leaf); the nodes that split, in order."""
    tot = counts.sum(axis=1)
    can = (tot >= 2 * min_leaf) & (counts.max(axis=1) < tot)
    split_nodes = np.empty(0, dtype=np.int64)
    if m and can.any():
        # one bincount over (node, attribute, code, class) for every splittable node and attribute
        cand = np.flatnonzero(can)
        remap = np.full(len(counts), -1, dtype=np.int64)
        remap[cand] = np.arange(len(cand))
        sel = can[node]
        r = rows[sel]
        nd = remap[node[sel]]
        idx = ((nd * width)[:, None] + xo[r]) * c + y[r][:, None]
        cnt = np.bincount(idx.ravel(), minlength=len(cand) * width * c).reshape(len(cand), width, c)
        nb = cnt.sum(axis=2)
        xl_nb = xlx[nb]
        cond = np.add.reduceat(xl_nb - xlx[cnt].sum(axis=2), off, axis=1)  # (cand, m)
        xl_split = np.add.reduceat(xl_nb, off, axis=1)
        big = np.add.reduceat((nb >= min_leaf).astype(np.int64), off, axis=1)
        t = tot[cand]
        totf = t.astype(np.float64)[:, None]
        h_node = (xlx[t] - xlx[counts[cand]].sum(axis=1))[:, None]
        gain = (h_node - cond) / totf
        split = (xlx[t][:, None] - xl_split) / totf
        ok = (big >= 2) & (gain > _EPS) & (split > _EPS)
        gains = np.where(ok, gain, 0.0)
        avg = gains.sum(axis=1, keepdims=True) / np.maximum(ok.sum(axis=1, keepdims=True), 1)
        elig = ok & (gains >= avg - 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(elig, gain / split, -np.inf)
        best = np.argmax(score, axis=1)
        has = elig.any(axis=1)
        attr[cand[has]] = best[has]
        split_nodes = cand[has]
    return split_nodes


def _prune_levels(levels: list[_Level]) -> None:
    """Error-based pruning, bottom-up (subtree replacement): turns pruned nodes' ``attr`` into leaves in place."""
    below = None
    for lv in range(len(levels) - 1, -1, -1):
        cnt, _, attr, _, parent_of_next = levels[lv]
        tot = cnt.sum(axis=1)
        leaf_err = pessimistic_errors(tot, tot - cnt.max(axis=1))
        if below is None:
            err = leaf_err
        else:
            assert parent_of_next is not None  # only the last level, pruned first, has no next level
            sub = np.bincount(parent_of_next, weights=below, minlength=len(cnt))
            cut = (attr >= 0) & (leaf_err <= sub + 0.1)
            attr[cut] = -1
            err = np.where(attr >= 0, sub, leaf_err)
        below = err


def _flatten_levels(levels: list[_Level], c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The levels as one node array: each node's attribute, its first child's index and its log P(c | node)."""
    offsets = np.cumsum([0] + [len(lv[0]) for lv in levels])
    attr_all = np.concatenate([lv[2] for lv in levels])
    base_all = np.concatenate([lv[3] + (offsets[i + 1] if i + 1 < len(levels) else 0)
                               for i, lv in enumerate(levels)])
    pc = np.concatenate([lv[1] for lv in levels]).astype(np.float64)
    logp = np.log((pc + 1.0) / (pc.sum(axis=1, keepdims=True) + c))
    return attr_all, base_all, logp


def fit_inducer(inducer: str, x: np.ndarray, y: np.ndarray, cards: Sequence[int], n_classes: int):
    if inducer == "naive_bayes":
        return NaiveBayes.fit(x, y, cards, n_classes)
    if inducer == "tree":
        return Tree.fit(x, y, cards, n_classes)
    raise ValueError(f"unknown inducer (expected one of {INDUCERS})")


def canonical(partition: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
    groups = [tuple(sorted(int(f) for f in g)) for g in partition]
    return tuple(sorted(g for g in groups if g))


def check_partition(partition: tuple[tuple[int, ...], ...], d: int) -> None:
    seen: set[int] = set()
    for g in partition:
        for f in g:
            if not 0 <= f < d:
                raise ValueError(f"partition names feature {f}, outside 0..{d - 1}")
            if f in seen:
                raise ValueError(f"feature {f} is in two subsets of the partition")
            seen.add(f)


def check_codes(codes: np.ndarray, cards: Sequence[int]) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] != len(cards):
        raise ValueError(f"codes must be (n, {len(cards)}), got shape {codes.shape}")
    if not np.issubdtype(codes.dtype, np.integer):
        raise ValueError("codes must be integers")
    if len(codes) and ((codes.min(axis=0) < 0) | (codes.max(axis=0) >= np.asarray(cards))).any():
        bad = int(np.flatnonzero((codes.min(axis=0) < 0) | (codes.max(axis=0) >= np.asarray(cards)))[0])
        raise ValueError(f"codes of feature {bad} lie outside 0..card-1")
    return codes


class PartitionClassifier:
    """Procedure 3 (paper section 4.3): one inducer per subset, combined as
    ``argmax_c prod_k P_k(c | x_Gk) / P(c)^(w-1)`` with Laplace-corrected P_k and P(c).

    The empty partition predicts the (Laplace-corrected) class prior.
    """

    def __init__(self, partition: Iterable[Iterable[int]], cards: Sequence[int], n_classes: int,
                 inducer: Inducer) -> None:
        if inducer not in INDUCERS:
            raise ValueError(f"unknown inducer (expected one of {INDUCERS})")
        self.partition = canonical(partition)
        self.cards = tuple(int(c) for c in cards)
        check_partition(self.partition, len(self.cards))
        self.n_classes = int(n_classes)
        self.inducer = inducer
        self.models: list = []
        self.logprior: np.ndarray | None = None

    def fit(self, codes: np.ndarray, y: np.ndarray) -> PartitionClassifier:
        codes = check_codes(codes, self.cards)
        y = np.asarray(y, dtype=np.int64)
        if len(y) != len(codes):
            raise ValueError(f"{len(codes)} rows of codes but {len(y)} class codes")
        c = self.n_classes
        self.logprior = np.log((np.bincount(y, minlength=c) + 1.0) / (len(y) + c))
        self.models = [fit_inducer(self.inducer, codes[:, list(g)], y, [self.cards[f] for f in g], c)
                       for g in self.partition]
        return self

    def joint_log(self, codes: np.ndarray) -> np.ndarray:
        """Unnormalised log of the combination's score, (n, n_classes)."""
        if self.logprior is None:
            raise ValueError("PartitionClassifier is not fitted")
        codes = check_codes(codes, self.cards)
        w = len(self.partition)
        s = np.broadcast_to(-(w - 1) * self.logprior, (len(codes), self.n_classes)).copy()
        for g, model in zip(self.partition, self.models):
            s += model.log_proba(codes[:, list(g)])
        return s

    def predict_proba(self, codes: np.ndarray) -> np.ndarray:
        return np.exp(log_normalise(self.joint_log(codes)))

    def predict(self, codes: np.ndarray) -> np.ndarray:
        return np.argmax(self.joint_log(codes), axis=1)
