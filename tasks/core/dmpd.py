"""Data mining privacy by decomposition (DMPD): the algorithm core, without Prefect and without pandas in loops.

Follows Matatov, Rokach & Maimon, "Privacy-preserving data mining: A feature set partitioning approach",
Information Sciences 180 (2010) 2696-2720 (``/work/shared/papers/001_*.txt``): k-anonymity is reached by
publishing disjoint *projections* of the (supervisedly discretised) training table, one per subset of a feature
set partition, such that every projection restricted to its quasi-identifiers is k-anonymous. A classifier is
trained on each projection and the classifiers are combined (section 4.3).

Pieces and the paper's sections they follow
-------------------------------------------
* :class:`Recoding` - supervised discretisation (the paper's "supervised discretization, as a part of DMPD",
  section 5.3): numeric features are cut by Fayyad & Irani's (1993) recursive entropy split with the MDL stopping
  rule (:func:`mdlp_cuts`), fitted on training rows only; adjacent intervals are then merged until every
  interval holds at least ``min_count`` training rows (the release uses ``min_count = k`` so that no published
  interval is rarer than k; the Table 1 benchmark uses 1). Nominal features keep their categories. Every
  feature gets one extra code, the last, for "missing or unseen".
* :func:`information_gain` - ranks features; the paper's quasi-identifier sets are "the top nine features"
  (section 5.3), i.e. the features of highest information gain with the class.
* :func:`anonymity_level` - size of the smallest equivalence class of a projection (the missing code counts as
  a value; empty classes do not exist). A partition's level is the minimum over its subsets of the level of the
  subset's quasi-identifier columns (a subset without quasi-identifiers has level n): this is the validity test of
  section 4 ("every projection adheres to k-anonymity").
* :func:`search_partition` - Procedure 1 (section 4.1), the genetic search of Rokach's feature set partitioning
  GA (Pattern Recognition 41 (2008), ref. [43] of the paper), with Procedure 2 (section 4.2) as fitness.

  - Encoding: the paper's n x n matrix (1: same subset, -1: both left out, 0: otherwise) is stored as the
    equivalent label vector (feature -> subset id, -1 = left out); both operators below are defined on the
    matrix in the paper and act identically on the labels.
  - Group-wise crossover (GWC), with probability ``p_crossover`` per pair: from each parent one *ancestor set* is
    drawn uniformly among its subsets and (if non-empty) its left-out set. Offspring 1 copies the rows and
    columns of parent 1's ancestor set (those features form one subset, or are left out if the ancestor set
    is the left-out set) and every other cell from parent 2 (the other features keep parent 2's grouping); offspring 2
    is the mirror image. Without crossover the offspring are copies of the parents.
  - Mutation: each feature, with probability ``p_mutation``, passes from its source subset to a target drawn
    uniformly among the other subsets, a new subset of its own and the left-out set (a left-out feature goes
    to an existing or a new subset); when the partition has one subset only, the feature forms its own subset
    (the paper's rule, Fig. 4).
  - Selection: binary tournament (two individuals drawn with replacement, the better one wins; ties go to the
    first drawn) with elitism of 2 (the two best individuals survive unchanged). "Better" is the fitness, and
    between two invalid partitions (both fitness 0) the one of higher anonymity level (Deb's 2000 feasibility
    rule for constrained GAs): without it a large k leaves a population of zeros that drifts at random and, on
    Adult with k = 50, never met a valid partition in 4,850 evaluations. Fitness-proportional selection, the
    other option of the paper's section 2.2, exerts almost no pressure here because accuracies of valid
    partitions sit in a narrow band (for example 0.80-0.86 on Adult).
  - Rates (the paper says only "similar to those found in the GA literature [32,34]"): ``p_crossover = 0.7``
    (De Jong / Grefenstette range 0.6-0.95; Goldberg's text uses 0.6-0.8); ``p_mutation = 0.05`` per feature,
    about 1/d for the 14-20 features of Adult and German (the usual one-mutation-per-offspring rule),
    0.4 expected moves per offspring on the 8 features of Pima and Nursery.
  - Population 50 and 100 generations by default (the paper's section 5.5 defaults). The initial population
    holds the one-subset partition, the partition of singletons of every feature that is valid alone (a
    non-quasi-identifier, or a quasi-identifier whose own level is >= k; the others left out) and random
    partitions (a random number of subsets g in 1..d, each feature left out with a probability drawn from
    U(0, 0.5), otherwise put in a uniformly drawn subset). The singletons individual is valid whenever any valid
    partition keeping a feature exists (adding columns to a projection can only shrink its smallest class), so
    :class:`NoValidPartition` means that none exists, not that the GA missed it.
  - Fitness (Procedure 2): mean accuracy over ``inner_folds`` stratified folds of :class:`PartitionClassifier`
    trained on the other folds of the training codes (default 3 folds; the paper's n is unstated), and 0 for
    an invalid partition (one subset's quasi-identifier projection has a class smaller than k). Invalid
    partitions are never returned. The empty partition is valid but predicts the majority class; when the GA
    finds no valid partition with at least one feature, :class:`NoValidPartition` (a ``ValueError``) is raised;
    that happens exactly when every feature is a quasi-identifier whose own level is below k.

* :class:`PartitionClassifier` - Procedure 3 (section 4.3): one inducer per subset, combined as
  ``argmax_c prod_k P_k(c | x_Gk) / P(c)^(w-1)`` with Laplace-corrected estimates. Inducers:

  - ``"naive_bayes"``: naive Bayes over the codes, P(v | c) = (n_vc + 1) / (n_c + card) and the prior
    P(c) = (n_c + 1) / (n + C). With this inducer the combination equals naive Bayes over the union of the
    subsets (the per-subset normalisers do not depend on c), which the GA uses: an NB fitness is a sum of cached
    per-feature log-likelihood matrices.
  - ``"tree"``: a C4.5-like tree (Quinlan 1993, as WEKA J4.8 defaults): multiway split on a coded (nominal)
    attribute chosen by gain ratio among the attributes whose gain is at least the average gain; a split needs
    two branches with >= 2 rows (J4.8's minNumObj = 2); the missing code is an ordinary value; branches without
    rows predict with their parent's class counts; error-based pruning by subtree replacement with confidence
    0.25 (J4.8's default, pruned when the leaf's pessimistic errors are <= the subtree's + 0.1; no subtree
    raising). Leaf probabilities are Laplace-corrected: (n_leaf,c + 1) / (n_leaf + C).
    The tree is grown level-wise: one ``np.bincount`` per level counts (node, attribute, code, class) for all
    splittable nodes and attributes at once, and x log x comes from a table (counts are integers).

Speed: the GA shares a :class:`Cache` across its runs on one training set (the benchmark passes one cache to the
runs for k = 1, k2 ... k5 of an outer fold): the inner folds, the per-(fold, subset) validation predictions of
the subset models, the accuracy per partition and the anonymity level per quasi-identifier set do not depend on
k, only validity does.

Nothing here prints, logs or raises with data values; features are named by index.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ppdp.tasks.core.dmpd_inducers import (
    INDUCERS,
    Inducer,
    PartitionClassifier,
    Tree,
    check_codes,
    xlogx,
)

__all__ = [
    "INDUCERS",
    "Cache",
    "Inducer",
    "NoValidPartition",
    "PartitionClassifier",
    "Recoding",
    "SearchResult",
    "anonymity_level",
    "information_gain",
    "mdlp_cuts",
    "merge_small_intervals",
    "pareto_front",
    "search_partition",
]


class NoValidPartition(ValueError):
    """The search found no valid partition that keeps at least one feature (k too large for the data)."""


# ----------------------------------------------------------------------------------------------------------------
# entropy helpers


def _entropy_rows(counts: np.ndarray) -> np.ndarray:
    """Entropy (bits) of each row of a count matrix (last axis = classes); 0 for empty rows."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = (xlogx(n) - xlogx(counts).sum(axis=-1)) / n
    return np.where(n > 0, h, 0.0)


# ----------------------------------------------------------------------------------------------------------------
# supervised discretisation


def mdlp_cuts(x: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """Cut points of Fayyad & Irani's (1993) MDLP discretisation.

    Recursively split the sorted values at the cut (midpoint between consecutive distinct values) of minimum
    class-information entropy and accept it when ``Gain > (log2(N - 1) + Delta) / N`` with
    ``Delta = log2(3^k - 2) - (k Ent(S) - k1 Ent(S1) - k2 Ent(S2))`` (k, k1, k2: classes present). NaN values are
    ignored. Returns the sorted cut points (possibly empty).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    keep = ~np.isnan(x)
    x, y = x[keep], y[keep]
    if len(x) < 2:
        return np.empty(0)
    uniq, vid = np.unique(x, return_inverse=True)
    if len(uniq) < 2:
        return np.empty(0)
    c = int(n_classes)
    per_value = np.bincount(vid * c + y, minlength=len(uniq) * c).reshape(len(uniq), c).astype(np.float64)
    cum = np.vstack([np.zeros((1, c)), np.cumsum(per_value, axis=0)])  # cum[i] = counts of values < uniq[i]
    cuts: list[float] = []
    stack = [(0, len(uniq))]
    while stack:
        lo, hi = stack.pop()
        if hi - lo < 2:
            continue
        total = cum[hi] - cum[lo]
        n = total.sum()
        left = cum[lo + 1:hi] - cum[lo]  # candidate i: values lo..lo+i on the left
        right = total - left
        nl = left.sum(axis=1)
        ent_l = _entropy_rows(left)
        ent_r = _entropy_rows(right)
        weighted = (nl * ent_l + (n - nl) * ent_r) / n
        i = int(np.argmin(weighted))
        ent = float(_entropy_rows(total))
        gain = ent - weighted[i]
        k = int((total > 0).sum())
        k1 = int((left[i] > 0).sum())
        k2 = int((right[i] > 0).sum())
        delta = math.log2(3.0**k - 2) - (k * ent - k1 * ent_l[i] - k2 * ent_r[i])
        if gain > (math.log2(n - 1) + delta) / n:
            a, b = uniq[lo + i], uniq[lo + i + 1]
            cut = a + (b - a) / 2.0
            if not a < cut <= b:
                cut = b
            cuts.append(float(cut))
            stack.append((lo, lo + i + 1))
            stack.append((lo + i + 1, hi))
    return np.sort(np.asarray(cuts, dtype=np.float64))


def merge_small_intervals(cuts: np.ndarray, x: np.ndarray, min_count: int) -> np.ndarray:
    """Remove cut points until every interval holds >= ``min_count`` of the (non-NaN) values ``x``.

    Repeatedly the smallest interval (the first of equal ones) is merged with its smaller neighbour (the left one
    on a tie). If fewer than ``min_count`` values exist at all, no cut is left.
    """
    cuts = np.asarray(cuts, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    if min_count <= 1 or len(cuts) == 0:
        return cuts
    kept = list(cuts)
    while kept:
        counts = np.bincount(np.searchsorted(kept, x, side="right"), minlength=len(kept) + 1)
        if counts.min() >= min_count:
            break
        i = int(np.argmin(counts))
        if i == 0:
            del kept[0]
        elif i == len(counts) - 1:
            del kept[i - 1]
        elif counts[i - 1] <= counts[i + 1]:
            del kept[i - 1]
        else:
            del kept[i]
    return np.asarray(kept, dtype=np.float64)


@dataclass(frozen=True)
class Recoding:
    """A fitted supervised recoding of input features to small integer codes (see the module docstring).

    Numeric feature f -> ``np.searchsorted(cuts[f], x, side="right")`` (interval index); nominal feature ->
    index of its category in ``categories[f]`` (compared as ``str``). NaN, unparsable numbers and categories not
    seen in training -> the last code, ``cards[i] - 1``.
    """

    features: tuple[str, ...]
    numeric: tuple[bool, ...]
    cuts: dict[str, np.ndarray]
    categories: dict[str, tuple]

    @property
    def cards(self) -> tuple[int, ...]:
        """Number of codes per feature, the reserved missing/unseen code included."""
        out = []
        for f, num in zip(self.features, self.numeric):
            out.append(len(self.cuts[f]) + 2 if num else len(self.categories[f]) + 1)
        return tuple(out)

    @classmethod
    def fit(cls, frame: pd.DataFrame, y: np.ndarray, features: Sequence[str], numeric: Sequence[bool],
            min_count: int = 1) -> Recoding:
        features = tuple(str(f) for f in features)
        numeric = tuple(bool(b) for b in numeric)
        if len(features) != len(numeric):
            raise ValueError(f"{len(features)} features but {len(numeric)} numeric flags")
        y = np.asarray(y, dtype=np.int64)
        if len(y) != len(frame):
            raise ValueError(f"{len(frame)} rows but {len(y)} class codes")
        n_classes = int(y.max()) + 1 if len(y) else 1
        cuts: dict[str, np.ndarray] = {}
        categories: dict[str, tuple] = {}
        for i, (f, num) in enumerate(zip(features, numeric)):
            if f not in frame.columns:
                raise ValueError(f"feature {i} is not a column of the frame")
            if num:
                x = pd.to_numeric(frame[f], errors="coerce").to_numpy(dtype=np.float64)
                c = mdlp_cuts(x, y, n_classes)
                cuts[f] = merge_small_intervals(c, x, int(min_count))
            else:
                values = frame[f][frame[f].notna()].unique()
                seen: dict[str, object] = {}
                for v in values:
                    seen.setdefault(str(v), v)
                categories[f] = tuple(seen[s] for s in sorted(seen))
        return cls(features=features, numeric=numeric, cuts=cuts, categories=categories)

    def codes(self, frame: pd.DataFrame) -> np.ndarray:
        """(n, d) int32 codes of ``frame``'s feature columns."""
        n = len(frame)
        out = np.empty((n, len(self.features)), dtype=np.int32)
        for i, (f, num, card) in enumerate(zip(self.features, self.numeric, self.cards)):
            if f not in frame.columns:
                raise ValueError(f"feature {i} is not a column of the frame")
            col = frame[f]
            if num:
                x = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
                code = np.searchsorted(self.cuts[f], x, side="right").astype(np.int32)
                code[np.isnan(x)] = card - 1
            else:
                na = col.isna().to_numpy()
                strs = col.astype(str)
                cats = [str(v) for v in self.categories[f]]
                # pandas-stubs types get_indexer's target as Index; pandas takes any list-like (a Series here)
                code = pd.Index(cats).get_indexer(strs).astype(np.int32)  # type: ignore[arg-type]
                code[(code < 0) | na] = card - 1
            out[:, i] = code
        return out


# ----------------------------------------------------------------------------------------------------------------
# measures


def information_gain(codes: np.ndarray, cards: Sequence[int], y: np.ndarray, n_classes: int) -> np.ndarray:
    """Information gain (bits) of each coded feature about the class: H(Y) - H(Y | X_j)."""
    codes = np.asarray(codes)
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    c = int(n_classes)
    out = np.zeros(codes.shape[1])
    if n == 0:
        return out
    h = float(_entropy_rows(np.bincount(y, minlength=c)))
    for j, card in enumerate(cards):
        cnt = np.bincount(codes[:, j].astype(np.int64) * c + y, minlength=int(card) * c).reshape(int(card), c)
        cond = float((cnt.sum(axis=1) * _entropy_rows(cnt)).sum()) / n
        out[j] = h - cond
    return out


def _combined_key(codes: np.ndarray, columns: Sequence[int], cards: Sequence[int]) -> tuple[np.ndarray, int]:
    """One int64 per row identifying its values on ``columns`` (mixed radix); the key range, or -1 if the radix
    product overflows (then the keys come from np.unique over rows)."""
    size = 1
    for c in columns:
        size *= int(cards[c])
    if size < 2**62:
        key = np.zeros(len(codes), dtype=np.int64)
        for c in columns:
            key = key * int(cards[c]) + codes[:, c]
        return key, size
    _, inv = np.unique(codes[:, list(columns)], axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), -1


def anonymity_level(codes: np.ndarray, columns: Sequence[int], cards: Sequence[int]) -> int:
    """Size of the smallest equivalence class of the projection of ``codes`` on ``columns``
    (``len(codes)`` when ``columns`` is empty)."""
    codes = np.asarray(codes)
    n = len(codes)
    columns = list(columns)
    if not columns or n == 0:
        return n
    key, size = _combined_key(codes, columns, cards)
    if 0 < size <= 4 * n + 1024:
        counts = np.bincount(key, minlength=size)
        return int(counts[counts > 0].min())
    _, counts = np.unique(key, return_counts=True)
    return int(counts.min())


def pareto_front(points: Iterable[tuple[float, int]]) -> list[tuple[float, int]]:
    """Non-dominated (accuracy, anonymity level) pairs, both maximised, sorted by level (ascending).

    A point is dominated when another has accuracy >= and level >= and is better in one of them. Duplicates
    appear once; NaN accuracies are ignored.
    """
    pts = sorted({(float(a), int(lv)) for a, lv in points if not math.isnan(float(a))}, key=lambda p: (-p[1], -p[0]))
    front: list[tuple[float, int]] = []
    best = -math.inf
    for acc, lv in pts:  # level descending, then accuracy descending
        if acc > best:
            front.append((acc, lv))
            best = acc
    return sorted(front, key=lambda p: p[1])


# ----------------------------------------------------------------------------------------------------------------
# ----------------------------------------------------------------------------------------------------------------
# fitness cache


def _stratified_folds(y: np.ndarray, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    order = rng.permutation(len(y))
    order = order[np.argsort(y[order], kind="stable")]
    fold = np.empty(len(y), dtype=np.int64)
    fold[order] = np.arange(len(y)) % n_folds
    return fold


@dataclass
class _Fold:
    train: np.ndarray
    val: np.ndarray
    y_val: np.ndarray
    logprior: np.ndarray
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray


@dataclass
class Cache:
    """Memo shared by the GA runs on one training set (e.g. the runs for every k of one outer fold).

    Bound on first use to the codes, cards, class codes, inducer and number of inner folds; the inner folds are
    drawn then, from that first run's seed, and reused by every later run (which must pass the same data and
    settings, or ``ValueError``). Holds the per-(fold, subset) validation predictions of the subset models
    (bounded by ``max_bytes``, least recently used evicted), the accuracy per partition and the anonymity level
    per column set.
    """

    max_bytes: int = 1 << 30
    _key: tuple | None = None
    _folds: list[_Fold] = field(default_factory=list)
    _feature_ll: dict = field(default_factory=dict)  # (fold, feature) -> (n_val, C) NB log-likelihoods
    _subset: OrderedDict = field(default_factory=OrderedDict)  # (fold, subset) -> (leaf index, logp table)
    _bytes: int = 0
    accuracy: dict = field(default_factory=dict)  # partition -> inner-CV accuracy
    level: dict = field(default_factory=dict)  # column tuple -> anonymity level
    model_fits: int = 0

    def bind(self, codes: np.ndarray, cards: Sequence[int], y: np.ndarray, n_classes: int, inducer: str,
             inner_folds: int, seed: int) -> None:
        digest = hashlib.blake2b(np.ascontiguousarray(codes).tobytes(), digest_size=16)
        digest.update(np.ascontiguousarray(y).tobytes())
        key = (inducer, int(inner_folds), tuple(int(c) for c in cards), int(n_classes), codes.shape,
               digest.hexdigest())
        if self._key is not None:
            if key != self._key:
                raise ValueError("this Cache was built for other codes, classes, inducer or inner folds")
            return
        self._key = key
        self.codes, self.cards, self.y, self.n_classes, self.inducer = codes, tuple(cards), y, n_classes, inducer
        fold = _stratified_folds(y, int(inner_folds), np.random.default_rng(seed))
        c = int(n_classes)
        for f in range(int(inner_folds)):
            train, val = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
            lp = np.log((np.bincount(y[train], minlength=c) + 1.0) / (len(train) + c))
            self._folds.append(_Fold(train, val, y[val], lp, np.asarray(codes[train], dtype=np.int64), y[train],
                                     np.asarray(codes[val], dtype=np.int64)))

    def _nb_ll(self, f: int, j: int) -> np.ndarray:
        key = (f, j)
        hit = self._feature_ll.get(key)
        if hit is None:
            fold = self._folds[f]
            c = self.n_classes
            ytr = self.y[fold.train]
            ny = np.bincount(ytr, minlength=c).astype(np.float64)
            card = self.cards[j]
            cnt = np.bincount(self.codes[fold.train, j].astype(np.int64) * c + ytr, minlength=card * c)
            table = np.log((cnt.reshape(card, c) + 1.0) / (ny + card))
            hit = table[self.codes[fold.val, j]]
            self._feature_ll[key] = hit
            self.model_fits += 1
        return hit

    def _tree_lp(self, f: int, g: tuple[int, ...]) -> np.ndarray:
        leaf, table = self._tree_model(f, g)
        return np.take(table, leaf, axis=0)  # table[leaf], the same rows; about 10x faster on small tables

    def _tree_model(self, f: int, g: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Fold ``f``'s tree on the columns ``g``: each validation row's leaf and the leaves' log-probabilities."""
        key = (f, g)
        hit = self._subset.get(key)
        if hit is not None:
            self._subset.move_to_end(key)
            return hit
        fold = self._folds[f]
        cols = list(g)
        tree = Tree.fit(fold.x_train[:, cols], fold.y_train, [self.cards[j] for j in cols], self.n_classes)
        self.model_fits += 1
        table = tree.logp
        leaf = tree.leaves(fold.x_val[:, cols]).astype(np.uint16 if len(table) < 2**16 else np.int32)
        self._subset[key] = (leaf, table)
        self._bytes += leaf.nbytes + table.nbytes
        while self._bytes > self.max_bytes and len(self._subset) > 1:
            _, (old_leaf, old_table) = self._subset.popitem(last=False)
            self._bytes -= old_leaf.nbytes + old_table.nbytes
        return leaf, table

    def partition_accuracy(self, partition: tuple[tuple[int, ...], ...]) -> float:
        hit = self.accuracy.get(partition)
        if hit is not None:
            return hit
        accs = []
        w = len(partition)
        for f, fold in enumerate(self._folds):
            if self.inducer == "naive_bayes":
                s = np.broadcast_to(fold.logprior, (len(fold.val), self.n_classes)).copy()
                for g in partition:
                    for j in g:
                        s += self._nb_ll(f, j)
            elif self.n_classes == 2:
                accs.append(self._two_class_accuracy(f, fold, partition))
                continue
            else:
                s = np.broadcast_to(-(w - 1) * fold.logprior, (len(fold.val), self.n_classes)).copy()
                for g in partition:
                    s += self._tree_lp(f, g)
            accs.append(float(np.mean(np.argmax(s, axis=1) == fold.y_val)))
        acc = float(np.mean(accs))
        self.accuracy[partition] = acc
        return acc

    def _two_class_accuracy(self, f: int, fold: _Fold, partition: tuple[tuple[int, ...], ...]) -> float:
        """The tree inducer's accuracy on fold ``f`` for two classes, bit for bit the general rule's: each class's
        score summed in the same order (the prior's share, then each group's log-probability), one column at a time
        instead of a (rows, 2) table; the predicted class is 1 where its score is strictly larger (``argmax`` takes
        the first of equal scores). The scores are finite: Laplace-corrected log-probabilities."""
        prior = -(len(partition) - 1) * fold.logprior
        s0 = np.full(len(fold.val), prior[0])
        s1 = np.full(len(fold.val), prior[1])
        for g in partition:
            leaf, table = self._tree_model(f, g)
            s0 += np.take(table[:, 0], leaf)
            s1 += np.take(table[:, 1], leaf)
        return float(np.mean((s1 > s0) == fold.y_val))

    def columns_level(self, columns: tuple[int, ...]) -> int:
        hit = self.level.get(columns)
        if hit is None:
            hit = anonymity_level(self.codes, columns, self.cards)
            self.level[columns] = hit
        return hit


# ----------------------------------------------------------------------------------------------------------------
# genetic search


@dataclass(frozen=True)
class SearchResult:
    partition: tuple[tuple[int, ...], ...]
    fitness: float
    evaluated: tuple[tuple[tuple[tuple[int, ...], ...], float, int], ...]
    generations: int
    evaluations: int
    seconds: float
    level: int = 0  # anonymity level of the chosen partition (added)
    model_fits: int = 0  # subset models fitted by this run (cache misses; added)


def _labels_to_partition(labels: np.ndarray) -> tuple[tuple[int, ...], ...]:
    groups: dict[int, list[int]] = {}
    for f, g in enumerate(labels.tolist()):
        if g >= 0:
            groups.setdefault(g, []).append(f)
    return tuple(sorted(tuple(v) for v in groups.values()))


def _gwc(p1: np.ndarray, p2: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Offspring of group-wise crossover: an ancestor set of ``p1`` copied, the rest from ``p2``."""
    sets = np.unique(p1)  # subsets and (if any) the left-out set -1
    anc = sets[rng.integers(len(sets))]
    child = p2.copy()
    members = p1 == anc
    child[members] = -1 if anc < 0 else int(p2.max()) + 1
    return child


def _mutate(labels: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    lab = labels.copy()
    hits = np.flatnonzero(rng.random(len(lab)) < p)
    for j in hits:
        groups = sorted(set(lab[lab >= 0].tolist()))
        src = int(lab[j])
        new = (max(groups) + 1) if groups else 0
        if src >= 0 and len(groups) == 1:
            lab[j] = new
            continue
        targets = [g for g in groups if g != src] + [new] + ([-1] if src >= 0 else [])
        lab[j] = targets[int(rng.integers(len(targets)))]
    return lab


def _initial(d: int, size: int, rng: np.random.Generator, alone_ok: np.ndarray) -> list[np.ndarray]:
    singles = np.where(alone_ok, np.arange(d), -1).astype(np.int64)  # valid singletons; the rest left out
    pop = [np.zeros(d, dtype=np.int64), singles][:size]
    while len(pop) < size:
        g = int(rng.integers(1, d + 1))
        p_out = rng.uniform(0.0, 0.5)
        lab = np.where(rng.random(d) < p_out, -1, rng.integers(0, g, size=d)).astype(np.int64)
        pop.append(lab)
    return pop


def search_partition(codes: np.ndarray, cards: Sequence[int], y: np.ndarray, n_classes: int, *,
                     quasi_identifiers: Sequence[int], k: int, inducer: Inducer, population: int = 50,
                     generations: int = 100, p_crossover: float = 0.7, p_mutation: float = 0.05,
                     inner_folds: int = 3, seed: int = 0, cache: Cache | None = None,
                     score_invalid: bool = False) -> SearchResult:
    """Procedure 1 (paper section 4.1): genetic search for the most accurate valid feature set partition.

    Parameters
    ----------
    codes, cards, y, n_classes
        Training codes (n, d) with codes in ``0..cards[j]-1`` and class codes ``0..n_classes-1``.
    quasi_identifiers, k
        Feature indices forming the quasi-identifier and the anonymity level each subset's quasi-identifier
        projection must reach.
    inducer
        ``"naive_bayes"`` or ``"tree"`` (see :class:`PartitionClassifier`).
    population, generations, p_crossover, p_mutation, inner_folds, seed
        GA settings (module docstring); ``inner_folds`` stratified folds give the fitness (Procedure 2).
    cache
        A :class:`Cache` shared by runs on the same training set (its inner folds come from the first run).
    score_invalid
        Also compute the inner-CV accuracy of invalid partitions (for a Pareto front); otherwise their accuracy
        in ``evaluated`` is NaN (their fitness is 0 either way).

    Returns
    -------
    SearchResult
        The fittest valid partition with at least one feature (among equally fit ones the most anonymous, then
        the first evaluated).

    Raises
    ------
    NoValidPartition
        No valid partition with a feature was evaluated.
    """
    t0 = time.perf_counter()
    cards = tuple(int(c) for c in cards)
    codes = check_codes(codes, cards)
    y = np.asarray(y, dtype=np.int64)
    _check_search(codes, y, n_classes, inducer, inner_folds, population, generations)
    n, d = codes.shape
    qi = frozenset(int(q) for q in quasi_identifiers)
    if any(not 0 <= q < d for q in qi):
        raise ValueError(f"quasi-identifier indices must lie in 0..{d - 1}")
    cache = cache if cache is not None else Cache()
    cache.bind(codes, cards, y, n_classes, inducer, inner_folds, seed)
    fits_before = cache.model_fits
    rng = np.random.default_rng(seed)
    fitness = _Fitness(cache, qi, k, n, score_invalid)

    alone_ok = np.array([cache.columns_level((j,) if j in qi else ()) >= k for j in range(d)])
    pop = _initial(d, population, rng, alone_ok)
    scores = [fitness.evaluate(ind) for ind in pop]
    gen = 0
    for gen in range(1, generations + 1):  # noqa: B007
        pop, scores = _next_generation(pop, scores, population, p_crossover, p_mutation, rng, fitness)

    best = fitness.best()
    if best is None:
        raise NoValidPartition(f"no valid partition keeping a feature was found for k = {k}")
    evaluated = tuple((p, a, lv) for p, (a, lv, _) in fitness.seen.items())
    return SearchResult(partition=best[0], fitness=float(best[1]), evaluated=evaluated, generations=gen,
                        evaluations=fitness.evaluations, seconds=time.perf_counter() - t0, level=int(best[2]),
                        model_fits=cache.model_fits - fits_before)


def _check_search(codes: np.ndarray, y: np.ndarray, n_classes: int, inducer: str, inner_folds: int,
                  population: int, generations: int) -> None:
    """Refuse inputs and settings :func:`search_partition` cannot run on."""
    n, d = codes.shape
    if len(y) != n:
        raise ValueError(f"{n} rows of codes but {len(y)} class codes")
    if inducer not in INDUCERS:
        raise ValueError(f"unknown inducer (expected one of {INDUCERS})")
    if d == 0:
        raise NoValidPartition("there are no features to partition")
    if n < inner_folds or inner_folds < 2:
        raise ValueError(f"inner_folds must be in 2..{n} (the number of rows)")
    if len(y) and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError("class codes lie outside 0..n_classes-1")
    if population < 2 or generations < 0:
        raise ValueError("population must be >= 2 and generations >= 0")


class _Fitness:
    """Procedure 2 with memory: every partition evaluated, in first-seen order, with its accuracy, level and
    fitness (0 when invalid)."""

    def __init__(self, cache: Cache, qi: frozenset[int], k: int, n: int, score_invalid: bool) -> None:
        self.cache, self.qi, self.k, self.n, self.score_invalid = cache, qi, k, n, score_invalid
        self.seen: dict[tuple, tuple[float, int, float]] = {}  # partition -> (accuracy, level, fitness)
        self.evaluations = 0

    def evaluate(self, labels: np.ndarray) -> tuple[float, int]:
        """Selection score: (fitness, level if invalid else n) - Deb's feasibility rule on ties at 0."""
        k, n = self.k, self.n
        self.evaluations += 1
        part = _labels_to_partition(labels)
        hit = self.seen.get(part)
        if hit is not None:
            return hit[2], (hit[1] if hit[1] < k else n)
        level = min((self.cache.columns_level(tuple(f for f in g if f in self.qi)) for g in part), default=n)
        valid = level >= k
        acc = self.cache.partition_accuracy(part) if (valid or self.score_invalid) else math.nan
        fit = acc if valid else 0.0
        self.seen[part] = (acc, level, fit)
        return fit, (level if not valid else n)

    def best(self) -> tuple[tuple[tuple[int, ...], ...], float, int] | None:
        """The fittest valid partition keeping a feature; among equally fit ones the most anonymous, then the
        first seen. None if there is none."""
        best = None
        for part, (_acc, level, fitness) in self.seen.items():
            if part and level >= self.k and (best is None or (fitness, level) > (best[1], best[2])):
                best = (part, fitness, level)
        return best


def _next_generation(pop: list[np.ndarray], scores: list[tuple[float, int]], population: int, p_crossover: float,
                     p_mutation: float, rng: np.random.Generator,
                     fitness: _Fitness) -> tuple[list[np.ndarray], list[tuple[float, int]]]:
    """One generation: the two best survive, the rest are mutated offspring of binary-tournament parents."""
    order = sorted(range(len(pop)), key=lambda i: scores[i], reverse=True)  # stable: first among equals
    new = [pop[i] for i in order[:2]]
    new_scores = [scores[i] for i in order[:2]]
    while len(new) < population:
        a, b, c, e = rng.integers(len(pop), size=4)
        p1 = pop[a] if scores[a] >= scores[b] else pop[b]
        p2 = pop[c] if scores[c] >= scores[e] else pop[e]
        if rng.random() < p_crossover:
            c1, c2 = _gwc(p1, p2, rng), _gwc(p2, p1, rng)
        else:
            c1, c2 = p1.copy(), p2.copy()
        for child in (c1, c2):
            if len(new) < population:
                child = _mutate(child, p_mutation, rng)
                new.append(child)
                new_scores.append(fitness.evaluate(child))
    return new, new_scores
