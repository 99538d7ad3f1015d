"""Condensation: grouping guarantees, the approximate GCD, synthesis statistics, degenerate groups, seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.schemas.spec import ColumnKind, Role
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.sanitize.condensation import (
    Condensation,
    approximate_gcd,
    kmeans_labels,
    modified_groups,
    original_groups,
    synthesize,
)
from tests.helpers import seeded_runs


def numeric_roles(columns: list[str], cls: str | None = "label") -> Roles:
    tags = [ColumnTag(name=c, role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared", reason="t")
            for c in columns]
    if cls:
        tags.append(ColumnTag(name=cls, role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"))
    return Roles(columns=tags)


def table(sizes: list[int], dims: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for c, size in enumerate(sizes):
        block = rng.normal(loc=c, size=(size, dims))
        part = pd.DataFrame(block, columns=[f"x{j}" for j in range(dims)])
        part["label"] = f"class{c}"
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True).sample(frac=1.0, random_state=seed)
    frame.index = np.random.default_rng(seed).permutation(len(frame)) + 1000  # shuffled, non-default index
    return frame


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(min_value=5, max_value=120), min_size=1, max_size=4),
    dims=st.integers(min_value=1, max_value=20),
    k=st.integers(min_value=2, max_value=12),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_class_wise_never_mixes_classes_and_groups_reach_k(sizes, dims, k, seed):
    k = min(k, min(sizes))
    frame = table(sizes, dims, seed)
    roles = numeric_roles([f"x{j}" for j in range(dims)])
    out = Condensation(variant="class_wise", k=k, seed=seed).sanitize(frame, roles)
    labels = frame["label"].to_numpy()
    groups = out.input_group
    for g in np.unique(groups):
        members = groups == g
        assert members.sum() >= k
        assert len(set(labels[members])) == 1  # a group never mixes classes
    # released records keep their group's class
    for g in np.unique(out.group):
        assert set(out.frame["label"][out.group == g]) == set(labels[groups == g])
    assert len(out.frame) == len(frame)
    assert not out.frame.isna().any().any()


@settings(max_examples=30, deadline=None)
@given(n=st.integers(min_value=2, max_value=400), dims=st.integers(1, 24), k=st.integers(2, 30),
       seed=st.integers(0, 2**16), variant=st.sampled_from(["modified", "original"]))
def test_every_group_has_at_least_k(n, dims, k, seed, variant):
    k = min(k, n)
    x = np.random.default_rng(seed).normal(size=(n, dims))
    groups = modified_groups(x, k, seed) if variant == "modified" else original_groups(x, k, seed)
    counts = np.bincount(groups)
    assert counts.min() >= k
    assert len(counts) == (n // k if variant == "modified" else len(counts))
    assert groups.min() == 0 and len(np.unique(groups)) == len(counts)


def test_approximate_gcd_matches_the_papers_examples():
    assert approximate_gcd([15, 10], 5) == 5
    assert approximate_gcd([1001, 501], 20) == 500
    with pytest.raises(InputError):
        approximate_gcd([3, 100], 5)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=5), t=st.integers(1, 60))
def test_approximate_gcd_divides_every_class_into_groups_of_at_least_g(sizes, t):
    if min(sizes) < t:
        return
    g = approximate_gcd(sizes, t)
    assert g >= t and g % t == 0
    for s in sizes:
        groups = (s // t) // (g // t)
        assert groups >= 1 and s // groups >= g


@pytest.mark.parametrize("distribution", ["uniform", "gaussian"])
def test_synthetic_groups_keep_mean_exactly_and_covariance_within_sampling_error(distribution):
    rng = np.random.default_rng(5)
    size, d = 4000, 4
    a = rng.normal(size=(d, d))
    x = rng.normal(size=(size, d)) @ a + np.array([3.0, -1.0, 10.0, 0.5])
    groups = np.zeros(size, dtype=np.int64)
    y = synthesize(x, groups, np.random.default_rng(1), distribution)
    np.testing.assert_allclose(y.mean(axis=0), x.mean(axis=0), atol=1e-9)
    cov_x, cov_y = np.cov(x.T, bias=True), np.cov(y.T, bias=True)
    scale = np.sqrt(np.outer(np.diag(cov_x), np.diag(cov_x)))
    assert np.max(np.abs(cov_y - cov_x) / scale) < 0.1  # sampling error at n=4000 is ~0.02-0.05
    if distribution == "uniform":  # bounded draws: nothing beyond sqrt(3 lambda) along each axis
        w, v = np.linalg.eigh(cov_x)
        proj = (y - x.mean(axis=0)) @ v
        assert np.all(np.abs(proj) <= np.sqrt(3 * np.clip(w, 0, None)) * 1.05 + 1e-9)  # centring moves draws a little


def test_many_small_groups_keep_their_means():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1000, 3))
    groups = modified_groups(x, 7, 3)
    y = synthesize(x, groups, np.random.default_rng(0))
    for g in np.unique(groups):
        m = groups == g
        np.testing.assert_allclose(y[m].mean(axis=0), x[m].mean(axis=0), atol=1e-9)


def test_degenerate_groups_do_not_crash_or_emit_nan():
    frame = pd.DataFrame({"const": [5.0] * 40, "x": [1.0] * 20 + [2.0] * 20, "label": ["a"] * 20 + ["b"] * 20})
    roles = numeric_roles(["const", "x"])
    for variant in ["class_wise", "modified", "original"]:
        out = Condensation(variant=variant, k=10, seed=0).sanitize(frame, roles).frame
        assert not out.isna().any().any()
        assert (out["const"] == 5.0).all()
    # a group of exactly k identical rows comes out as k copies of that row
    same = pd.DataFrame({"x": [3.0] * 6, "y": [7.0] * 6, "label": ["a"] * 6})
    out = Condensation(variant="class_wise", k=6, seed=0).sanitize(same, numeric_roles(["x", "y"])).frame
    assert (out["x"] == 3.0).all() and (out["y"] == 7.0).all()


def test_mixed_types_decode_to_valid_values():
    rng = np.random.default_rng(4)
    n = 300
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "colour": rng.choice(["red", "green", "blue", None], n),
        "grade": rng.choice(["low", "mid", "high"], n),
        "label": rng.choice(["y", "n"], n),
    })
    roles = Roles(columns=[
        ColumnTag(name="age", role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="colour", role=Role.quasi_identifier, kind=ColumnKind.nominal, source="declared", reason="t"),
        ColumnTag(name="grade", role=Role.other, kind=ColumnKind.ordinal, source="declared", reason="t",
                  order=["low", "mid", "high"]),
        ColumnTag(name="label", role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"),
    ])
    for variant in ["class_wise", "modified", "original"]:
        out = Condensation(variant=variant, k=15, seed=1).sanitize(frame, roles).frame
        assert out["age"].between(18, 89).all() and pd.api.types.is_integer_dtype(out["age"])
        assert set(out["colour"].dropna()) <= {"red", "green", "blue"}
        assert set(out["grade"]) <= {"low", "mid", "high"}
        assert set(out["label"]) <= {"y", "n"}


def test_same_seed_same_output_other_seed_other_output():
    frame = table([60, 40], 3, 0)
    roles = numeric_roles(["x0", "x1", "x2"])
    a, b, _ = seeded_runs(lambda seed: Condensation(k=10, seed=seed), frame, roles, 3)
    assert np.array_equal(a.group, b.group)


def test_class_smaller_than_k_is_a_clear_error():
    frame = table([50, 8], 2, 0)
    with pytest.raises(InputError, match="fewer than k=10"):
        Condensation(k=10, seed=0).sanitize(frame, numeric_roles(["x0", "x1"]))


def test_class_wise_without_k_uses_the_approximate_gcd():
    frame = table([150, 100], 2, 0)
    sanitizer = Condensation(k=None, seed=0)
    roles = numeric_roles(["x0", "x1"])
    values, why = sanitizer.suggest(frame, roles, 25)
    assert values == {"k": 50} and "GCD" in why  # 25 * GCD(6, 4) = 50
    out = sanitizer.with_params(**values).sanitize(frame, roles)
    assert np.bincount(out.input_group).min() >= 50


def test_kmeans_uses_every_cluster():
    x = np.random.default_rng(0).normal(size=(500, 3))
    labels = kmeans_labels(x, 40, seed=1)
    assert len(np.unique(labels)) == 40


def test_dates_are_synthesized_as_numbers_and_stay_whole_days():
    rng = np.random.default_rng(3)
    n = 200
    frame = pd.DataFrame({
        "birth": pd.to_datetime("1950-01-01") + pd.to_timedelta(rng.integers(0, 20000, n), unit="D"),
        "label": rng.choice(["a", "b"], n),
    })
    roles = Roles(columns=[
        ColumnTag(name="birth", role=Role.quasi_identifier, kind=ColumnKind.numeric, source="auto", reason="t"),
        ColumnTag(name="label", role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"),
    ])
    out = Condensation(k=10, seed=0).sanitize(frame, roles).frame
    assert pd.api.types.is_datetime64_any_dtype(out["birth"])
    assert (out["birth"] == out["birth"].dt.normalize()).all()
    assert out["birth"].between(frame["birth"].min(), frame["birth"].max()).all()
    assert out["birth"].nunique() > 20  # synthesized, not copied from a few records
