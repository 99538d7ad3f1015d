"""PRAM (tasks/sanitize/pram.py): sdcMicro's invariant transition matrix checked against a hand computation, its
invariance, the release's draws converging to the matrix, and what is randomized and what is kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.sanitize.pram import Pram, invariant_matrix, pram_codes, pram_matrix
from ppdp.tasks.sanitize.registry import REGISTRY


def tag(name, role, kind=ColumnKind.nominal):
    return ColumnTag(name=name, role=role, kind=kind, source="declared", reason="t")


ROLES = Roles(columns=[tag("age", Role.quasi_identifier, ColumnKind.numeric), tag("city", Role.quasi_identifier),
                       tag("status", Role.sensitive), tag("label", Role.class_)])
SIX = pd.DataFrame({"age": [30, 41, 52, 33, 64, 25], "city": ["x", "y", "x", "y", "x", "y"],
                    "status": ["a", "a", "a", "a", "b", "b"], "label": ["p", "q", "p", "q", "p", "q"]})


def unshuffled(out):
    return out.frame.take(np.argsort(out.row_source)).reset_index(drop=True)


def test_the_invariant_matrix_by_hand():
    """The 6-row column (a a a a b b): p = (2/3, 1/3); keep probabilities 0.8 and 0.8 give P = [[.8 .2] [.2 .8]];
    s = p P = (0.6, 0.4); Q[k, j] = P[j, k] p_j / s_k = [[8/9 1/9] [1/3 2/3]]; R = P Q = [[7/9 2/9] [4/9 5/9]];
    alpha 0.5: Rs = (R + I) / 2 = [[8/9 1/9] [2/9 7/9]]."""
    counts = np.array([4, 2])
    np.testing.assert_allclose(invariant_matrix(counts, np.array([0.8, 0.8]), 1.0),
                               [[7 / 9, 2 / 9], [4 / 9, 5 / 9]], atol=1e-12)
    np.testing.assert_allclose(invariant_matrix(counts, np.array([0.8, 0.8]), 0.5),
                               [[8 / 9, 1 / 9], [2 / 9, 7 / 9]], atol=1e-12)
    np.testing.assert_allclose(invariant_matrix(counts, np.array([0.8, 0.8]), 0.0), np.eye(2))
    # keep probabilities 0.5 and 1 (L = 3 spreads 1 - d evenly over the 2 others): P's first row (.5 .25 .25)
    p3 = np.array([3, 2, 1])
    forward = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    s = np.array([0.25, 1 / 8 + 1 / 3, 1 / 8 + 1 / 6])  # p P with p = (1/2, 1/3, 1/6)
    share = np.array([1 / 2, 1 / 3, 1 / 6])
    backward = np.array([[forward[j, k] * share[j] / s[k] for j in range(3)] for k in range(3)])
    np.testing.assert_allclose(invariant_matrix(p3, np.array([0.5, 1.0, 1.0]), 1.0), forward @ backward, atol=1e-12)
    assert backward[0].tolist() == pytest.approx([1.0, 0.0, 0.0])  # only a's can have become a


def test_pram_matrix_draws_the_keep_probabilities_in_pd_to_1():
    counts = np.array([5, 3, 2])
    drawn = np.random.default_rng(4).uniform(0.3, 1.0, 3)
    np.testing.assert_allclose(pram_matrix(counts, 0.3, 0.5, np.random.default_rng(4)),
                               invariant_matrix(counts, drawn, 0.5))
    np.testing.assert_allclose(pram_matrix(counts, 1.0, 0.5, np.random.default_rng(4)), np.eye(3))


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(1, 500), min_size=1, max_size=8), alpha=st.floats(0, 1), seed=st.integers(0, 999),
       pd_=st.floats(0, 1))
def test_property_the_matrix_is_stochastic_and_invariant(counts, alpha, seed, pd_):
    counts = np.array(counts)
    m = pram_matrix(counts, pd_, alpha, np.random.default_rng(seed))
    p = counts / counts.sum()
    assert np.all(m >= -1e-12)
    np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(p @ m, p, atol=1e-9)  # sdcMicro's invariance: expected frequencies kept


def test_property_empirical_transitions_converge_to_the_matrix():
    rng = np.random.default_rng(0)
    matrix = invariant_matrix(np.array([6, 3, 1]), np.array([0.6, 0.9, 0.7]), 0.8)
    codes = np.repeat(np.arange(3), 20_000)
    drawn = pram_codes(codes, matrix, rng)
    empirical = np.array([np.bincount(drawn[codes == i], minlength=3) / 20_000 for i in range(3)])
    np.testing.assert_allclose(empirical, matrix, atol=0.015)
    assert np.array_equal(pram_codes(np.array([-1, 0, -1]), matrix, rng)[[0, 2]], [-1, -1])  # missing kept


def test_six_rows_pd_1_is_the_identity_and_only_the_sensitive_column_moves():
    out = Pram(pd=1.0, seed=3).sanitize(SIX, ROLES)
    pd.testing.assert_frame_equal(unshuffled(out), SIX, check_dtype=False)
    assert out.treatments == {"age": "kept", "city": "kept", "status": "perturbed", "label": "kept"}
    big = pd.concat([SIX] * 50, ignore_index=True)
    moved = unshuffled(Pram(pd=0.0, alpha=1.0, seed=3).sanitize(big, ROLES))
    for kept in ("age", "city", "label"):
        assert moved[kept].tolist() == big[kept].tolist()
    assert (moved["status"] != big["status"]).any() and set(moved["status"]) <= {"a", "b"}
    every = unshuffled(Pram(pd=0.0, alpha=1.0, columns="categorical", seed=3).sanitize(big, ROLES))
    assert (every["city"] != big["city"]).any() and every["label"].tolist() == big["label"].tolist()


def test_release_frequencies_follow_the_matrix_on_a_large_table():
    rng = np.random.default_rng(1)
    n = 30_000
    frame = pd.DataFrame({"age": rng.integers(18, 80, n), "city": rng.choice(["x", "y"], n),
                          "status": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
                          "label": rng.choice(["p", "q"], n)})
    back = unshuffled(Pram(pd=0.5, alpha=1.0, seed=9).sanitize(frame, ROLES))
    counts = frame["status"].value_counts().reindex(["a", "b", "c"]).to_numpy()
    matrix = pram_matrix(counts, 0.5, 1.0, np.random.default_rng(9))  # the same first draws of the seed
    for i, level in enumerate(["a", "b", "c"]):
        rows = frame["status"] == level
        seen = back.loc[rows, "status"].value_counts(normalize=True).reindex(["a", "b", "c"], fill_value=0)
        np.testing.assert_allclose(seen.to_numpy(), matrix[i], atol=0.03)


def test_missing_values_stay_missing_and_declared_order_is_used():
    frame = SIX.assign(status=["a", None, "a", "b", "b", None])
    roles = Roles(columns=[*ROLES.columns[:2], ColumnTag(name="status", role=Role.sensitive, kind=ColumnKind.ordinal,
                                                         order=["b", "a"], source="declared", reason="t"),
                           ROLES.columns[3]])
    back = unshuffled(Pram(pd=0.0, seed=1).sanitize(frame, roles))
    assert back["status"].isna().tolist() == frame["status"].isna().tolist()


def test_no_categorical_sensitive_column_is_an_input_error_and_pd_smaller_is_safer():
    roles = Roles(columns=[tag("age", Role.sensitive, ColumnKind.numeric), tag("city", Role.quasi_identifier),
                           tag("status", Role.other), tag("label", Role.class_)])
    with pytest.raises(InputError, match="no categorical sensitive attribute"):
        Pram(pd=0.5).sanitize(SIX, roles)
    assert REGISTRY["pram"] is Pram and Pram.tunable == {"pd": "smaller"} and Pram.protects == "attribute"
    assert Pram.protected_columns(ROLES) == ["status"]
