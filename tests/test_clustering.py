"""The misclassification error M_E (tasks/core/clustering.py): 0 for identical data and for renamed labels, the
right share on hand examples, steps of 1/n, and the literal size-difference reading beside it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ppdp.tasks.core.clustering import (
    kmeans_pair,
    matched_disagreement,
    misclassification_error,
    size_difference_error,
)


def blobs(n_per: int, centres: list[tuple[float, float]], seed: int, spread: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, spread, (n_per, 2)) for c in centres])


def brute_force_disagreement(a: np.ndarray, b: np.ndarray) -> float:
    """Try every one-to-one renaming of b's labels onto a's."""
    la, lb = int(a.max()) + 1, int(b.max()) + 1
    size = max(la, lb)
    best = 0
    for perm in itertools.permutations(range(size)):
        best = max(best, sum(1 for x, y in zip(a, b) if perm[y] == x))
    return 1 - best / len(a)


def test_identical_data_gives_zero():
    x = blobs(30, [(0, 0), (4, 0), (0, 4)], 1)
    for k in (2, 3, 4, 5):
        assert misclassification_error(x, x.copy(), k, seed=7) == 0.0


def test_renamed_labels_give_zero():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 200)
    perm = np.array([2, 0, 3, 1])
    assert matched_disagreement(a, perm[a]) == 0.0
    assert size_difference_error(a, perm[a]) == 0.0


def test_hand_example_of_the_matching():
    a = np.array([0, 0, 0, 1, 1, 1])
    b = np.array([1, 1, 0, 0, 0, 0])  # pair 0->1, 1->0: row 2 disagrees
    assert matched_disagreement(a, b) == pytest.approx(1 / 6)
    # sizes: a has 3 / 3, b (paired) 2 / 4 -> |3 - 2| + |3 - 4| = 2 rows' worth, over 6
    assert size_difference_error(a, b) == pytest.approx(2 / 6)
    # two rows swapping clusters: two disagree, the sizes do not change
    assert matched_disagreement(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])) == pytest.approx(0.5)
    assert size_difference_error(np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 0, 1, 1])) == 0.0


def test_hand_example_of_kmeans():
    # two tight groups on a line; the perturbation moves one point of the left group next to the right group
    x = np.array([[0.0], [0.1], [0.2], [10.0], [10.1], [10.2]])
    y = x.copy()
    y[2, 0] = 9.9
    assert misclassification_error(x, y, 2, seed=0) == pytest.approx(1 / 6)
    a, b = kmeans_pair(x, y, 2, seed=0)
    assert (a[:3] == a[0]).all() and (a[3:] == a[3]).all() and a[0] != a[3]
    assert b[2] == b[3]


def test_a_small_perturbation_is_invisible_and_a_large_one_is_not():
    x = blobs(40, [(0, 0), (6, 0), (0, 6)], 3)
    rng = np.random.default_rng(4)
    assert misclassification_error(x, x + rng.normal(0, 0.01, x.shape), 3, seed=1) == 0.0
    noisy = misclassification_error(x, x + rng.normal(0, 5.0, x.shape), 3, seed=1)
    assert noisy > 0.2


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 9), ka=st.integers(1, 4), kb=st.integers(1, 4))
def test_matching_is_the_best_renaming(data, n, ka, kb):
    a = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, ka - 1)))
    b = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, kb - 1)))
    err = matched_disagreement(a, b)
    assert err == pytest.approx(brute_force_disagreement(a, b))
    assert round(err * n, 9) == round(err * n)  # steps of 1/n
    assert size_difference_error(a, b) <= 2 * err + 1e-12


def test_seeded_and_validated():
    x = blobs(25, [(0, 0), (3, 3)], 5)
    y = x + np.random.default_rng(6).normal(0, 0.8, x.shape)
    assert misclassification_error(x, y, 4, seed=3) == misclassification_error(x, y, 4, seed=3)
    with pytest.raises(ValueError):
        misclassification_error(x, y[:-1], 2, seed=0)
    with pytest.raises(ValueError):
        misclassification_error(x, y, 0, seed=0)
    with pytest.raises(ValueError):
        misclassification_error(x, y, len(x) + 1, seed=0)
    bad = y.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        misclassification_error(x, bad, 2, seed=0)
    with pytest.raises(ValueError):
        matched_disagreement(np.array([0, -1]), np.array([0, 1]))
