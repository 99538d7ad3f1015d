"""BSVD / SSVD (tasks/sanitize/svd.py): the reconstruction is numpy's truncated SVD, full rank gives the matrix
back, sparsity zeroes the stated share of U_k and V_k, the release stays in the input's ranges and types."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import IntRange
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.sanitize.registry import REGISTRY
from ppdp.tasks.sanitize.svd import Svd, svd_distort, svd_factors
from tests.helpers import declared_roles


def frame_and_roles(n: int = 60, seed: int = 0) -> tuple[pd.DataFrame, Roles]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "id": np.arange(n),
        "age": rng.integers(18, 90, n),
        "income": rng.lognormal(10, 0.5, n),
        "weight": rng.normal(70, 10, n),
        "grade": rng.choice(["low", "mid", "high"], n),
        "city": rng.choice(["a", "b"], n),
        "label": rng.choice(["p", "q"], n),
    })

    roles = declared_roles(
        ("id", Role.identifier, ColumnKind.numeric), ("age", Role.quasi_identifier, ColumnKind.numeric),
        ("income", Role.sensitive, ColumnKind.numeric), ("weight", Role.other, ColumnKind.numeric),
        ("grade", Role.quasi_identifier, ColumnKind.ordinal), ("city", Role.quasi_identifier, ColumnKind.nominal),
        ("label", Role.class_, ColumnKind.nominal))
    return frame, roles


def unshuffled(out, frame):
    """The release in input order (row_source maps each released row to its input row)."""
    order = np.argsort(out.row_source)
    return out.frame.take(order).reset_index(drop=True)


def test_full_rank_reproduces_the_matrix():
    a = np.random.default_rng(1).normal(5, 2, (40, 5))
    np.testing.assert_allclose(svd_distort(a, 5), a, rtol=0, atol=1e-10)


def test_full_rank_release_reproduces_float_columns():
    frame, roles = frame_and_roles()
    out = unshuffled(Svd(rank=3, seed=4).sanitize(frame, roles), frame)
    np.testing.assert_allclose(out["income"], frame["income"], rtol=1e-10)
    np.testing.assert_allclose(out["weight"], frame["weight"], rtol=1e-10)
    assert (out["age"] == frame["age"]).all()  # integers rounded back exactly


def test_rank_k_equals_numpys_truncated_svd_and_eckart_young():
    a = np.random.default_rng(2).normal(0, 1, (30, 6)) + 3
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    for k in range(1, 6):
        expected = u[:, :k] @ np.diag(s[:k]) @ vt[:k]
        got = svd_distort(a, k)
        np.testing.assert_allclose(got, expected, atol=1e-10)
        assert np.linalg.norm(a - got) == pytest.approx(np.sqrt(np.sum(s[k:] ** 2)), rel=1e-9)


def test_release_uses_only_the_numeric_attributes():
    frame, roles = frame_and_roles()
    assert Svd.numeric_columns(frame, roles) == ["age", "income", "weight"]
    sanitizer = Svd(rank=2, seed=0)
    out = sanitizer.sanitize(frame, roles)
    assert out.treatments == {"id": "kept", "age": "perturbed", "income": "perturbed", "weight": "perturbed",
                              "grade": "kept", "city": "kept", "label": "kept"}
    back = unshuffled(out, frame)
    for kept in ("id", "grade", "city", "label"):
        assert (back[kept] == frame[kept]).all()
    a = frame[["age", "income", "weight"]].to_numpy(float)
    raw = svd_distort(a, 2)
    np.testing.assert_allclose(back["income"], np.clip(raw[:, 1], a[:, 1].min(), a[:, 1].max()), rtol=1e-10)
    assert sanitizer.domains(frame, roles) == {"rank": IntRange(low=1, high=3)}


@pytest.mark.parametrize("scope", ["matrix", "joint", "column"])
@pytest.mark.parametrize("share", [0.1, 0.25, 0.45, 0.8])
def test_sparsity_zeroes_the_stated_share(scope, share):
    a = np.random.default_rng(3).normal(2, 1, (50, 6))
    u0, _, v0 = svd_factors(a, 4)
    u, s, v = svd_factors(a, 4, share, scope=scope)
    assert not np.any(u0 == 0) and not np.any(v0 == 0)
    if scope == "matrix":
        assert np.sum(u == 0) == int(np.floor(share * u.size + 0.5))
        assert np.sum(v == 0) == int(np.floor(share * v.size + 0.5))
    elif scope == "joint":
        assert np.sum(u == 0) + np.sum(v == 0) == int(np.floor(share * (u.size + v.size) + 0.5))
    else:
        assert (np.sum(u == 0, axis=0) == int(np.floor(share * u.shape[0] + 0.5))).all()
        assert (np.sum(v == 0, axis=0) == int(np.floor(share * v.shape[0] + 0.5))).all()
    # the zeroed entries are the smallest: every kept entry is at least as large as every zeroed one
    if scope != "column":
        before = np.concatenate([u0.ravel(), v0.ravel()]) if scope == "joint" else u0.ravel()
        after = np.concatenate([u.ravel(), v.ravel()]) if scope == "joint" else u.ravel()
        assert np.abs(before[after == 0]).max() <= np.abs(before[after != 0]).min()
    # kept entries are untouched
    np.testing.assert_array_equal(u[u != 0], u0[u != 0])
    np.testing.assert_array_equal(v[v != 0], v0[v != 0])


def test_count_readings_and_the_default_is_pooled_and_rounded():
    a = np.random.default_rng(5).normal(2, 1, (10, 4))
    _, _, v = svd_factors(a, 2, 0.45, scope="matrix", count="floor")  # 0.45 * 8 = 3.6
    assert np.sum(v == 0) == 3
    _, _, v = svd_factors(a, 2, 0.45, scope="matrix")
    assert np.sum(v == 0) == 4
    u, _, v = svd_factors(a, 2, 0.45)  # pooled: 0.45 * (20 + 8) = 12.6 -> 13 zeros in U_k and V_k together
    assert np.sum(u == 0) + np.sum(v == 0) == 13
    np.testing.assert_array_equal(svd_distort(a, 2, 0.45), svd_distort(a, 2, 0.45, scope="joint", count="round"))


def test_sparsified_release_differs_from_basic():
    frame, roles = frame_and_roles()
    basic = unshuffled(Svd(rank=2, seed=0).sanitize(frame, roles), frame)
    sparse = unshuffled(Svd(rank=2, sparsity=0.3, seed=0).sanitize(frame, roles), frame)
    assert not np.allclose(basic["income"], sparse["income"])


def test_rank_above_the_numeric_columns_is_one_clear_line():
    frame, roles = frame_and_roles()
    with pytest.raises(SpecError) as err:
        Svd(rank=4, seed=0).sanitize(frame, roles)
    assert str(err.value) == "svd: method.rank (4) is above the number of numeric attributes (3)"
    with pytest.raises(SpecError, match="method.rank is required"):
        Svd(seed=0).sanitize(frame, roles)
    with pytest.raises(SpecError, match="sparsity"):
        Svd(rank=1, sparsity=1.0, seed=0).sanitize(frame, roles)


def test_no_numeric_attribute_is_an_input_error():
    frame, roles = frame_and_roles()
    with pytest.raises(InputError, match="no numeric attribute"):
        Svd(rank=1, seed=0).sanitize(frame[["id", "grade", "city", "label"]], roles)


def test_missing_values_stay_missing_and_integer_dtypes_stay():
    frame, roles = frame_and_roles(40, 1)
    frame["age"] = frame["age"].astype("Int64")
    frame.loc[[3, 7], "age"] = pd.NA
    frame.loc[[5], "income"] = np.nan
    out = unshuffled(Svd(rank=2, seed=1).sanitize(frame, roles), frame)
    assert out["age"].isna().tolist() == frame["age"].isna().tolist()
    assert out["income"].isna().tolist() == frame["income"].isna().tolist()
    assert str(out["age"].dtype) == "Int64"


def test_registered_and_deterministic_apart_from_row_order():
    assert REGISTRY["svd"] is Svd and not Svd.randomized and Svd.tunable == {"rank": "smaller"}
    frame, roles = frame_and_roles()
    one = unshuffled(Svd(rank=2, seed=1).sanitize(frame, roles), frame)
    two = unshuffled(Svd(rank=2, seed=2).sanitize(frame, roles), frame)
    pd.testing.assert_frame_equal(one, two)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 60), m=st.integers(1, 6), seed=st.integers(0, 10_000), share=st.floats(0, 0.95),
       data=st.data())
def test_property_release_in_range_and_reconstruction_error_is_optimal(n, m, seed, share, data):
    rank = data.draw(st.integers(1, min(n, m)))
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, (n, m)) * rng.uniform(0.1, 100, m) + rng.uniform(-5, 5, m)
    frame = pd.DataFrame(a, columns=[f"x{j}" for j in range(m)])
    frame["x0"] = np.rint(frame["x0"]).astype(np.int64)
    roles = Roles(columns=[ColumnTag(name=c, role=Role.quasi_identifier, kind=ColumnKind.numeric,
                                     source="declared", reason="t") for c in frame.columns])
    out = Svd(rank=rank, sparsity=share, seed=seed).sanitize(frame, roles)
    assert sorted(out.row_source.tolist()) == list(range(n))
    back = unshuffled(out, frame)
    for c in frame.columns:
        assert back[c].min() >= frame[c].min() and back[c].max() <= frame[c].max()
    assert back["x0"].dtype == np.int64
    # no rank-k matrix is closer to A than the basic reconstruction; sparsifying can only move away
    x = frame.to_numpy(float)
    s = np.linalg.svd(x, compute_uv=False)
    best = np.sqrt(np.sum(s[rank:] ** 2))
    assert np.linalg.norm(x - svd_distort(x, rank)) == pytest.approx(best, rel=1e-7, abs=1e-7)
    assert np.linalg.norm(x - svd_distort(x, rank, share)) >= best - 1e-7 * (1 + best)


# -- hostile inputs ----------------------------------------------------------------------------------------
def _tag(name: str, kind: ColumnKind = ColumnKind.numeric) -> ColumnTag:
    return ColumnTag(name=name, role=Role.quasi_identifier, kind=kind, source="declared", reason="t")


def test_integer_columns_near_the_int64_limits_are_not_sign_flipped():
    # review F5: 2**63 - 1 is 2**63 in float; the clip to it and the int64 cast published -2**63
    top, bottom = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    frame = pd.DataFrame({"big": np.array([top, top, 0, 0], dtype=np.int64),
                          "low": np.array([bottom, bottom, 0, 0], dtype=np.int64),
                          "unsigned": np.array([2**64 - 1, 2**64 - 1, 0, 0], dtype=np.uint64),
                          "nullable": pd.array([top, top, None, 0], dtype="Int64")})
    roles = Roles(columns=[_tag(c) for c in frame.columns])
    for column in frame.columns:  # one column at a time: rank 1 gives the column back up to rounding
        out = unshuffled(Svd(rank=1).sanitize(frame[[column]], roles), frame)
        published, original = out[column], frame[column]
        assert published.dtype == original.dtype
        present = original.notna().to_numpy()
        assert published.isna().to_numpy().tolist() == (~present).tolist()
        got = [int(v) for v in published[present]]
        want = [int(v) for v in original[present]]
        lo, hi = min(want), max(want)
        assert all(lo <= g <= hi for g in got)  # within the input range: no sign flip
        assert all(abs(g - w) <= 2**-40 * (hi - lo) for g, w in zip(got, want))


@pytest.mark.parametrize("value", [np.inf, -np.inf, 8e307, -1e101])
def test_infinite_or_huge_values_are_an_input_error_naming_the_column(value):
    # review F11: a LinAlgError from the decomposition, or NaN / 8e307 published
    frame, roles = frame_and_roles(20)
    frame["weight"] = frame["weight"].astype(float)
    frame.loc[3, "weight"] = value
    with pytest.raises(InputError) as info:
        Svd(rank=2).sanitize(frame, roles)
    assert str(info.value) == "svd: column 'weight' holds infinite or too large values (beyond ±1e+100)"
