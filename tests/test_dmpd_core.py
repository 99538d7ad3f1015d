"""Properties of the DMPD core (ppdp.tasks.core.dmpd): discretisation, inducers, combination, validity of the
genetic search, determinism, Pareto front. Small inputs only; the Table 1 reproduction is a benchmark."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.tasks.core import dmpd
from ppdp.tasks.core import dmpd_inducers as inducers

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _table(seed: int, n: int, d: int, max_card: int, n_classes: int = 2):
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in rng.integers(2, max_card + 1, size=d)]
    codes = np.column_stack([rng.integers(0, c - 1, size=n) for c in cards]).astype(np.int32)  # last code unused
    y = rng.integers(0, n_classes, size=n)
    return codes, cards, y


def _nb_direct(codes_tr, y_tr, codes_te, features, cards, c):
    """Textbook naive Bayes with Laplace correction over ``features``."""
    ny = np.bincount(y_tr, minlength=c)
    s = np.tile(np.log((ny + 1.0) / (len(y_tr) + c)), (len(codes_te), 1))
    for j in features:
        for cls in range(c):
            cnt = np.bincount(codes_tr[y_tr == cls, j], minlength=cards[j])
            s[:, cls] += np.log((cnt[codes_te[:, j]] + 1.0) / (ny[cls] + cards[j]))
    return s


# ---------------------------------------------------------------------------------------------------------------
# discretisation


def test_mdlp_separable_toy_gives_the_midpoint_cut():
    x = np.arange(20, dtype=float)
    y = (x >= 12).astype(int)
    assert np.array_equal(dmpd.mdlp_cuts(x, y, 2), [11.5])


def test_mdlp_three_bands_and_no_cut_on_noise():
    x = np.repeat(np.arange(30, dtype=float), 4)
    y = np.where(x < 10, 0, np.where(x < 20, 1, 0))
    assert np.array_equal(dmpd.mdlp_cuts(x, y, 2), [9.5, 19.5])
    rng = np.random.default_rng(1)
    assert len(dmpd.mdlp_cuts(rng.normal(size=200), rng.integers(0, 2, size=200), 2)) == 0
    assert len(dmpd.mdlp_cuts(np.full(10, 3.0), np.arange(10) % 2, 2)) == 0  # one distinct value


@FAST
@given(seed=st.integers(0, 10_000), min_count=st.integers(1, 60), n=st.integers(5, 300))
def test_intervals_respect_min_count(seed, min_count, n):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=n) * 5)
    y = (x + rng.normal(size=n) * 2 > 0).astype(int)
    x[rng.random(n) < 0.1] = np.nan
    frame = pd.DataFrame({"a": x})
    rec = dmpd.Recoding.fit(frame, y, ["a"], [True], min_count=min_count)
    full = dmpd.mdlp_cuts(x, y, 2)
    assert set(rec.cuts["a"]).issubset(set(full))
    codes = rec.codes(frame)[:, 0]
    counts = np.bincount(codes[~np.isnan(x)], minlength=rec.cards[0] - 1)
    if (~np.isnan(x)).sum() >= min_count:
        assert counts.min() >= min_count
    assert np.all(codes[np.isnan(x)] == rec.cards[0] - 1)


def test_recoding_codes_missing_and_unseen_to_the_last_code():
    frame = pd.DataFrame({"num": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0] * 5, "cat": ["b", "a", "b", "c", "c", "a"] * 5})
    y = np.array([0, 0, 0, 1, 1, 1] * 5)
    rec = dmpd.Recoding.fit(frame, y, ["num", "cat"], [True, False])
    assert rec.categories["cat"] == ("a", "b", "c")
    assert rec.cards == (len(rec.cuts["num"]) + 2, 4)
    new = pd.DataFrame({"num": [np.nan, 0.0, 100.0, None], "cat": ["zz", None, "a", "c"]})
    codes = rec.codes(new)
    assert codes.dtype == np.int32
    assert codes[0, 0] == rec.cards[0] - 1 and codes[3, 0] == rec.cards[0] - 1
    assert codes[1, 0] == 0 and codes[2, 0] == len(rec.cuts["num"])
    assert list(codes[:, 1]) == [3, 3, 0, 2]


def test_information_gain_of_a_copy_of_the_class_is_its_entropy():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=600)
    codes = np.column_stack([y, rng.integers(0, 4, size=600)]).astype(np.int32)
    ig = dmpd.information_gain(codes, [4, 5], y, 3)
    p = np.bincount(y) / len(y)
    assert ig[0] == pytest.approx(-(p * np.log2(p)).sum())
    assert 0 <= ig[1] < 0.02


# ---------------------------------------------------------------------------------------------------------------
# anonymity and Pareto front


@FAST
@given(seed=st.integers(0, 10_000), n=st.integers(1, 80), d=st.integers(1, 5))
def test_anonymity_level_matches_groupby(seed, n, d):
    codes, cards, _ = _table(seed, n, d, 4)
    for r in range(d + 1):
        for cols in itertools.combinations(range(d), r):
            expected = n if not cols else int(pd.DataFrame(codes[:, list(cols)]).value_counts().min())
            assert dmpd.anonymity_level(codes, cols, cards) == expected


@FAST
@given(points=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 50)), max_size=30))
def test_pareto_front_is_non_dominated_and_covers(points):
    front = dmpd.pareto_front(points)
    assert [lv for _, lv in front] == sorted(lv for _, lv in front)
    for a, lv in front:
        assert (a, lv) in points
        assert not any(b >= a and m >= lv and (b > a or m > lv) for b, m in points)
    for b, m in points:  # every point is dominated by or equal to a front point
        assert any(a >= b and lv >= m for a, lv in front)


# ---------------------------------------------------------------------------------------------------------------
# inducers and combination


@FAST
@given(seed=st.integers(0, 10_000), n_classes=st.integers(2, 4))
def test_partition_nb_equals_nb_over_the_union(seed, n_classes):
    codes, cards, y = _table(seed, 120, 6, 5, n_classes)
    rng = np.random.default_rng(seed)
    labels = rng.integers(-1, 3, size=6)
    partition = [np.flatnonzero(labels == g).tolist() for g in range(3)]
    union = sorted(np.flatnonzero(labels >= 0).tolist())
    clf = dmpd.PartitionClassifier(partition, cards, n_classes, "naive_bayes").fit(codes[:80], y[:80])
    direct = _nb_direct(codes[:80], y[:80], codes[80:], union, cards, n_classes)
    proba = clf.predict_proba(codes[80:])
    expected = np.exp(direct - direct.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(proba, expected)
    top2 = np.sort(direct, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-9  # exact ties may round either way
    assert np.array_equal(clf.predict(codes[80:])[clear], np.argmax(direct, axis=1)[clear])
    assert np.allclose(proba.sum(axis=1), 1.0)


def test_tree_learns_a_deterministic_function_and_uses_laplace_leaves():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, size=(600, 3)).astype(np.int32)
    y = ((codes[:, 0] == 2) | ((codes[:, 0] == 1) & (codes[:, 1] == 0))).astype(int)  # x2 is noise
    cards = [4, 4, 4]
    clf = dmpd.PartitionClassifier([[0, 1, 2]], cards, 2, "tree").fit(codes, y)
    assert np.array_equal(clf.predict(codes), y)
    tree = clf.models[0]
    assert not np.any(tree.attr == 2)  # the noise column is never used (pruned or never chosen)
    proba = clf.predict_proba(codes)
    leaf = tree.leaves(codes)
    for node in np.unique(leaf):  # Laplace: (n_c + 1) / (n + 2) on the leaf's training rows
        rows = leaf == node
        n1 = y[rows].sum()
        assert proba[rows][0, 1] == pytest.approx((n1 + 1) / (rows.sum() + 2))


def test_tree_pessimistic_errors_match_c45():
    # N = 6, E = 0: N (1 - CF^(1/N)); N = 6, E = 2: continuity-corrected normal upper bound (WEKA Stats.addErrs)
    assert inducers.pessimistic_errors(np.array([6.0]), np.array([0.0]))[0] == pytest.approx(6 * (1 - 0.25 ** (1 / 6)))
    z, n, e = 0.6744897501960817, 6.0, 2.0
    f = (e + 0.5) / n
    r = (f + z * z / (2 * n) + z * math.sqrt(f / n - f * f / n + z * z / (4 * n * n))) / (1 + z * z / n)
    assert inducers.pessimistic_errors(np.array([n]), np.array([e]))[0] == pytest.approx(r * n)


def test_pruning_shrinks_a_tree_grown_on_noise():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 5, size=(400, 4)).astype(np.int32)
    y = rng.integers(0, 2, size=400)
    pruned = inducers.Tree.fit(codes, y, [6] * 4, 2)
    grown = inducers.Tree.fit(codes, y, [6] * 4, 2, prune=False)
    n_pruned, n_grown = len(np.unique(pruned.leaves(codes))), len(np.unique(grown.leaves(codes)))
    assert n_pruned < n_grown / 3


@pytest.mark.parametrize("inducer", ["naive_bayes", "tree"])
def test_laplace_no_zero_probability_on_unseen_codes(inducer):
    codes, cards, y = _table(7, 200, 4, 4, 3)
    clf = dmpd.PartitionClassifier([[0, 1], [2], [3]], cards, 3, inducer).fit(codes, y)
    unseen = np.array([[c - 1 for c in cards]] * 3, dtype=np.int32)  # the reserved code, absent in training
    proba = clf.predict_proba(unseen)
    assert np.all(proba > 0) and np.allclose(proba.sum(axis=1), 1.0)


def test_empty_partition_predicts_the_prior():
    codes, cards, y = _table(2, 90, 3, 3, 3)
    clf = dmpd.PartitionClassifier([], cards, 3, "tree").fit(codes, y)
    prior = (np.bincount(y, minlength=3) + 1) / (len(y) + 3)
    assert np.allclose(clf.predict_proba(codes[:5]), prior)


def test_partition_classifier_rejects_overlapping_subsets_and_bad_codes():
    with pytest.raises(ValueError):
        dmpd.PartitionClassifier([[0, 1], [1]], [3, 3], 2, "tree")
    clf = dmpd.PartitionClassifier([[0]], [3, 3], 2, "naive_bayes")
    with pytest.raises(ValueError):
        clf.fit(np.array([[0, 3]], dtype=np.int32), np.array([0]))


# ---------------------------------------------------------------------------------------------------------------
# genetic search


def _search(codes, cards, y, **kw):
    args = dict(quasi_identifiers=[0, 1, 2], k=1, inducer="naive_bayes", population=10, generations=6, seed=0)
    args.update(kw)
    return dmpd.search_partition(codes, cards, y, int(y.max()) + 1, **args)


@FAST
@given(seed=st.integers(0, 10_000), k=st.integers(1, 25), inducer=st.sampled_from(["naive_bayes", "tree"]))
def test_search_returns_only_valid_partitions(seed, k, inducer):
    codes, cards, y = _table(seed, 60, 5, 4)
    rng = np.random.default_rng(seed)
    qi = sorted(rng.choice(5, size=int(rng.integers(1, 6)), replace=False).tolist())
    try:
        res = _search(codes, cards, y, quasi_identifiers=qi, k=k, inducer=inducer, seed=seed)
    except dmpd.NoValidPartition:
        # raised exactly when no feature is valid on its own (then no partition keeping one is valid)
        assert all(dmpd.anonymity_level(codes, [j] if j in qi else [], cards) < k for j in range(5))
        return
    assert res.partition
    for g in res.partition:
        assert dmpd.anonymity_level(codes, [j for j in g if j in qi], cards) >= k
    assert res.level >= k
    valid = [a for p, a, lv in res.evaluated if p and lv >= k]
    assert res.fitness == max(valid)
    # among equally fit valid partitions the most anonymous one is chosen (more privacy at no cost in accuracy)
    assert res.level == max(lv for p, a, lv in res.evaluated if p and lv >= k and a == res.fitness)
    for p, a, lv in res.evaluated:  # the recorded level is the partition's level
        assert lv == min((dmpd.anonymity_level(codes, [j for j in g if j in qi], cards) for g in p), default=60)
        assert (lv >= k) or math.isnan(a)
    used = [f for g in res.partition for f in g]
    assert len(used) == len(set(used)) and all(0 <= f < 5 for f in used)


@pytest.mark.parametrize("inducer", ["naive_bayes", "tree"])
def test_search_is_deterministic_per_seed(inducer):
    codes, cards, y = _table(11, 150, 6, 4)
    a = _search(codes, cards, y, inducer=inducer, k=3, seed=5)
    b = _search(codes, cards, y, inducer=inducer, k=3, seed=5)
    assert (a.partition, a.fitness, a.evaluated, a.evaluations) == (b.partition, b.fitness, b.evaluated,
                                                                     b.evaluations)
    c = _search(codes, cards, y, inducer=inducer, k=3, seed=5, cache=dmpd.Cache())
    assert (c.partition, c.evaluated) == (a.partition, a.evaluated)


@pytest.mark.parametrize("inducer", ["naive_bayes", "tree"])
def test_cached_fitness_equals_direct_inner_cv_accuracy(inducer):
    codes, cards, y = _table(4, 150, 5, 4, 3)
    cache = dmpd.Cache()
    res = _search(codes, cards, y, inducer=inducer, cache=cache, score_invalid=True)
    for part, acc, _ in res.evaluated[:15]:
        accs = []
        for fold in cache._folds:
            clf = dmpd.PartitionClassifier(part, cards, 3, inducer).fit(codes[fold.train], y[fold.train])
            accs.append(np.mean(clf.predict(codes[fold.val]) == y[fold.val]))
        assert acc == pytest.approx(np.mean(accs))


def _general_rule_accuracy(cache: dmpd.Cache, partition) -> float:
    """The tree inducer's inner-CV accuracy by the general rule: a (rows, classes) score table, argmax."""
    accs = []
    for f, fold in enumerate(cache._folds):
        s = np.broadcast_to(-(len(partition) - 1) * fold.logprior, (len(fold.val), cache.n_classes)).copy()
        for g in partition:
            s += cache._tree_lp(f, g)
        accs.append(float(np.mean(np.argmax(s, axis=1) == fold.y_val)))
    return float(np.mean(accs))


@FAST
@given(seed=st.integers(0, 10_000), n=st.integers(8, 120), d=st.integers(1, 5), max_card=st.integers(2, 4),
       parts=st.integers(0, 10_000))
def test_two_class_accuracy_is_the_general_rule_bit_for_bit(seed, n, d, max_card, parts):
    """Two classes take a shorter path (one score column per class): equal to the general rule's figure exactly, on
    small tables whose leaves often tie (equal scores: the first class, as argmax)."""
    codes, cards, y = _table(seed, n, d, max_card)
    cache = dmpd.Cache()
    cache.bind(codes, cards, y, 2, "tree", 3, seed)
    rng = np.random.default_rng(parts)
    for _ in range(6):
        partition = dmpd._labels_to_partition(rng.integers(-1, d, size=d))
        assert cache.partition_accuracy(partition) == _general_rule_accuracy(cache, partition)


def test_two_class_accuracy_breaks_ties_as_argmax():
    """Scores tied on every row: argmax predicts the first class, and so must the two-class path. Seven rows of
    class 0 and six of class 1, one constant column (the tree is its root: the prior's counts), two stratified
    folds: fold 0 trains on 3 + 3 rows (tied scores: class 0 predicted) and validates 4 + 3; fold 1 trains on 4 + 3
    (class 0) and validates 3 + 3. Accuracy (4/7 + 3/6) / 2; class 1 predicted on the ties would give (3/7 + 3/6) / 2.
    """
    codes = np.zeros((13, 1), dtype=np.int32)
    y = np.array([0] * 7 + [1] * 6)
    cache = dmpd.Cache()
    cache.bind(codes, [2], y, 2, "tree", 2, 3)
    assert sorted(np.bincount(fold.y_val, minlength=2).tolist() for fold in cache._folds) == [[3, 3], [4, 3]]
    for partition in [(), ((0,),)]:
        got = cache.partition_accuracy(partition)
        assert got == _general_rule_accuracy(cache, partition)
        assert got == pytest.approx((4 / 7 + 3 / 6) / 2)


def test_cache_is_shared_across_k_and_refuses_other_data():
    codes, cards, y = _table(8, 120, 5, 4)
    cache = dmpd.Cache()
    first = _search(codes, cards, y, inducer="tree", cache=cache)
    again = _search(codes, cards, y, inducer="tree", cache=cache)
    assert first.model_fits > 0 and again.model_fits == 0
    assert again.partition == first.partition
    with pytest.raises(ValueError):
        _search(codes[:-1], cards, y[:-1], inducer="tree", cache=cache)


def test_unreachable_k_raises_no_valid_partition():
    codes, cards, y = _table(9, 40, 3, 4)
    with pytest.raises(dmpd.NoValidPartition):
        _search(codes, cards, y, quasi_identifiers=[0, 1, 2], k=41)


def test_gwc_and_mutation_follow_the_paper():
    rng = np.random.default_rng(0)
    p1 = np.array([0, 0, 1, -1, 1, 2])
    p2 = np.array([0, 1, 1, 0, -1, -1])
    for _ in range(50):
        child = dmpd._gwc(p1, p2, rng)
        # some ancestor set of p1 is copied as a whole (a subset, or the left-out set) and the rest follows p2
        def copied(g, child=child):
            members = p1 == g
            if g < 0:
                return bool(np.all(child[members] == -1))
            first = child[members][0]
            return bool(first >= 0 and np.array_equal(child == first, members))

        anc = [g for g in np.unique(p1) if copied(g)]
        assert anc
        rest = np.flatnonzero(p1 != anc[0])
        same = lambda lab, i, j: lab[i] == lab[j] and lab[i] >= 0  # noqa: E731
        for i, j in itertools.combinations(rest, 2):
            assert same(child, i, j) == same(p2, i, j)
            assert (child[i] < 0) == (p2[i] < 0)
    one = np.zeros(4, dtype=np.int64)
    mutated = dmpd._mutate(one, 1.0, rng)  # one subset only: the first moved feature forms its own subset
    assert len(set(mutated[mutated >= 0])) >= 2
