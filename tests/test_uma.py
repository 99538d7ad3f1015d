"""Univariate microaggregation (tasks/sanitize/uma.py): every published value of an aggregated column is the
mean of at least k input values of that column (re-checked by grouping the published table, not from the
method's labels), column means are kept, the optimal partition matches brute force, missing values stay
missing, and bad inputs fail with one clear line."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.sanitize.uma import Uma, uma_aggregate, uma_groups
from tests.helpers import declared_roles, seeded_runs
from tests.helpers import declared_tag as tag

ROLES = declared_roles(
    ("id", Role.identifier, ColumnKind.nominal), ("age", Role.quasi_identifier, ColumnKind.numeric),
    ("height", Role.quasi_identifier, ColumnKind.numeric), ("wage", Role.sensitive, ColumnKind.numeric),
    ("city", Role.quasi_identifier, ColumnKind.nominal), ("label", Role.class_, ColumnKind.nominal))


def make_frame(n: int, seed: int, missing: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "id": [f"p{i}" for i in range(n)],
        "age": rng.integers(18, 70, n),  # integer column: published rounded
        "height": rng.normal(170, 10, n).round(1),
        "wage": rng.lognormal(2, 0.5, n),
        "city": rng.choice(["a", "b"], n),
        "label": rng.choice(["x", "y"], n),
    })
    if missing:
        frame.loc[rng.random(n) < missing, "wage"] = np.nan
    frame.index = rng.permutation(n) * 5 + 3  # shuffled, non-default index
    return frame


def aligned(frame: pd.DataFrame, out) -> pd.DataFrame:
    """The input rows in the order of the released rows."""
    return frame.reset_index(drop=True).iloc[out.row_source].reset_index(drop=True)


def recheck_column(original: np.ndarray, published: np.ndarray, k: int, tolerance: float) -> None:
    """Group the input values by their published value: every group has >= k values, its mean is the published
    value (within ``tolerance``), and the groups are runs of the sorted column (no interleaving)."""
    present = ~np.isnan(original)
    assert np.array_equal(present, ~np.isnan(published))  # missing stays missing, present stays present
    if not present.any():
        return
    table = pd.DataFrame({"x": original[present], "y": published[present]})
    groups = table.groupby("y")["x"].agg(["size", "mean", "min", "max"]).sort_index()
    assert groups["size"].min() >= k
    assert np.allclose(groups["mean"].to_numpy(), groups.index.to_numpy(), rtol=1e-9, atol=tolerance + 1e-9)
    assert (groups["min"].to_numpy()[1:] >= groups["max"].to_numpy()[:-1]).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 150), seed=st.integers(0, 10_000), k=st.integers(2, 12),
       partition=st.sampled_from(["fixed", "optimal"]), missing=st.sampled_from([0.0, 0.2]))
def test_every_published_value_is_the_mean_of_at_least_k_input_values(n, seed, k, partition, missing):
    frame = make_frame(n, seed, missing)
    present = int(frame["wage"].notna().sum())
    if n < k or 0 < present < k:
        with pytest.raises(InputError):
            Uma(k=k, partition=partition, seed=seed).sanitize(frame, ROLES)
        return
    out = Uma(k=k, partition=partition, seed=seed).sanitize(frame, ROLES)
    src = aligned(frame, out)
    for col in ("age", "height", "wage"):
        original = src[col].to_numpy(dtype=float)
        present = original[~np.isnan(original)]
        whole = present.size > 0 and bool(np.all(present == np.round(present)))
        tol = 0.5 if whole else 0.0  # columns of whole numbers are published rounded
        recheck_column(original, out.frame[col].to_numpy(dtype=float), k, tol)
        assert out.treatments[col] == "aggregated"
    for col in ("id", "city", "label"):
        assert out.treatments[col] == "kept"
        assert (out.frame[col].to_numpy() == src[col].to_numpy()).all()
    assert sorted(out.row_source.tolist()) == list(range(n))
    assert out.unit == "record" and out.group is None


@settings(max_examples=40, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(1, 80), elements=st.floats(-1e6, 1e6, allow_nan=False)),
       k=st.integers(1, 9), partition=st.sampled_from(["fixed", "optimal"]))
def test_groups_are_sorted_runs_of_k_to_2k_minus_1_and_means_are_kept(x, k, partition):
    if len(x) < k:
        with pytest.raises(ValueError):
            uma_groups(x, k, partition)
        return
    labels = uma_groups(x, k, partition)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    if partition == "fixed":
        assert len(sizes) == len(x) // k
    order = np.argsort(x, kind="stable")
    assert (np.diff(labels[order]) >= 0).all()  # group ids ascend with value: runs of the sorted column
    y = uma_aggregate(x, k, partition)
    assert np.isclose(y.mean(), x.mean(), rtol=1e-9, atol=1e-6)
    assert y.var() <= x.var() * (1 + 1e-9) + 1e-6  # aggregation never adds spread


def brute_force_sse(v: np.ndarray, k: int) -> float:
    """The least within-group SSE over every cut of sorted v into runs of k to 2k - 1 values."""
    v = np.sort(v)
    m = len(v)
    best = np.inf
    for cuts in itertools.product([0, 1], repeat=m - 1):
        bounds = [0, *[i + 1 for i, c in enumerate(cuts) if c], m]
        runs = [v[a:b] for a, b in zip(bounds, bounds[1:])]
        if all(k <= len(r) <= 2 * k - 1 for r in runs):
            best = min(best, sum(float(((r - r.mean()) ** 2).sum()) for r in runs))
    return best


def sse(x: np.ndarray, labels: np.ndarray) -> float:
    return float(sum(((x[labels == g] - x[labels == g].mean()) ** 2).sum() for g in np.unique(labels)))


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(2, 13), elements=st.integers(-50, 50).map(float)),
       k=st.integers(1, 4))
def test_optimal_partition_matches_brute_force_and_beats_fixed(x, k):
    if len(x) < k:
        return
    optimal = sse(x, uma_groups(x, k, "optimal"))
    assert optimal == pytest.approx(brute_force_sse(x, k), abs=1e-6)
    assert optimal <= sse(x, uma_groups(x, k, "fixed")) + 1e-6


def test_hand_example():
    # k = 2: sorted 1, 2, 3, 10, 11 -> fixed {1, 2} {3, 10, 11}; optimal {1, 2, 3} {10, 11}
    x = np.array([10.0, 1.0, 11.0, 3.0, 2.0])
    assert uma_aggregate(x, 2, "fixed").tolist() == [8.0, 1.5, 8.0, 8.0, 1.5]
    assert uma_aggregate(x, 2, "optimal").tolist() == [10.5, 2.0, 10.5, 2.0, 2.0]
    # NaN takes part in no group: 3 present values, k = 2 -> one group of 3
    y = uma_aggregate(np.array([5.0, np.nan, 5.0, 2.0]), 2)
    assert np.isnan(y[1]) and y[[0, 2, 3]].tolist() == [4.0, 4.0, 4.0]


def test_column_means_are_preserved_on_float_columns():
    frame = make_frame(137, 3, missing=0.1)
    out = Uma(k=7, seed=1).sanitize(frame, ROLES)
    for col in ("height", "wage"):
        assert out.frame[col].mean() == pytest.approx(frame[col].mean(), rel=1e-12)
    assert abs(out.frame["age"].mean() - frame["age"].mean()) <= 0.5


def test_same_seed_same_output_other_seed_only_reorders():
    frame = make_frame(90, 8)
    a, b, c = seeded_runs(lambda seed: Uma(k=4, seed=seed), frame, ROLES, 5)
    assert np.array_equal(a.row_source, b.row_source)
    key = list(frame.columns)
    pd.testing.assert_frame_equal(a.frame.sort_values(key).reset_index(drop=True),
                                  c.frame.sort_values(key).reset_index(drop=True))


def test_sensitive_only_keeps_the_quasi_identifiers():
    frame = make_frame(60, 2)
    out = Uma(k=5, columns="sensitive").sanitize(frame, ROLES)
    src = aligned(frame, out)
    assert out.treatments["wage"] == "aggregated"
    assert out.treatments["age"] == "kept" and out.treatments["height"] == "kept"
    assert (out.frame["age"].to_numpy() == src["age"].to_numpy()).all()
    recheck_column(src["wage"].to_numpy(), out.frame["wage"].to_numpy(), 5, 0.0)


def test_k_larger_than_rows_is_one_clear_line():
    frame = make_frame(6, 1)
    with pytest.raises(InputError) as err:
        Uma(k=7).sanitize(frame, ROLES)
    assert "\n" not in str(err.value) and "k=7" in str(err.value) and "6 records" in str(err.value)


def test_too_few_present_values_names_the_column_not_a_value():
    frame = make_frame(20, 1)
    frame.loc[frame.index[2:], "wage"] = np.nan  # 2 present values, k = 3
    with pytest.raises(InputError) as err:
        Uma(k=3).sanitize(frame, ROLES)
    text = str(err.value)
    assert "column 3 ('wage')" in text and "\n" not in text
    assert not any(f"{v:.3}" in text for v in frame["wage"].dropna())


def test_all_missing_column_stays_missing_and_missing_k_is_a_spec_error():
    frame = make_frame(20, 1)
    frame["wage"] = np.nan
    out = Uma(k=3).sanitize(frame, ROLES)
    assert out.frame["wage"].isna().all()
    with pytest.raises(SpecError):
        Uma().sanitize(frame, ROLES)
    no_numeric = Roles(columns=[tag("city", Role.quasi_identifier, ColumnKind.nominal),
                                tag("label", Role.class_, ColumnKind.nominal)])
    with pytest.raises(InputError):
        Uma(k=2).sanitize(frame[["city", "label"]], no_numeric)


def test_dates_are_aggregated_to_whole_days():
    rng = np.random.default_rng(0)
    days = pd.to_datetime("2000-01-01") + pd.to_timedelta(rng.integers(0, 5000, 40), unit="D")
    frame = pd.DataFrame({"born": days, "label": rng.choice(["x", "y"], 40)})
    roles = Roles(columns=[tag("born", Role.quasi_identifier, ColumnKind.numeric),
                           tag("label", Role.class_, ColumnKind.nominal)])
    out = Uma(k=4).sanitize(frame, roles)
    published = out.frame["born"]
    assert pd.api.types.is_datetime64_any_dtype(published)
    assert (published == published.dt.normalize()).all()
    src = aligned(frame, out)["born"]
    to_days = 86_400e9

    def days(s: pd.Series) -> np.ndarray:
        return s.to_numpy(dtype="datetime64[ns]").astype(np.int64) / to_days

    recheck_column(days(src), days(published), 4, 0.5)


# -- hostile inputs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("values", [
    [1e308] * 4,  # review F3: the sum of squares overflowed to NaN and the backtrack never ended
    [1e308, -1e308, 1e308, -1e308, 5.0, -1.7e308, 1.7e308],
    [np.finfo(np.float64).max] * 5 + [-np.finfo(np.float64).max] * 3,
    [5e-324, 1e-320, 0.0, 5e-324, 1e-310],  # subnormal
])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_optimal_partition_returns_valid_groups_on_extreme_magnitudes(values, k):
    x = np.array(values)
    labels = uma_groups(x, k, "optimal")
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1 and sizes.sum() == len(x)
    assert (np.diff(labels[np.argsort(x, kind="stable")]) >= 0).all()
    y = uma_aggregate(x, k, "optimal")  # group means without overflow, within the input range
    assert np.isfinite(y).all() and x.min() <= y.min() and y.max() <= x.max()


@settings(max_examples=40, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(1, 40), elements=st.integers(-50, 50).map(float)),
       k=st.integers(1, 5), power=st.sampled_from([-1060, -1000, -300, 0, 300, 1015]))
def test_optimal_partition_is_the_same_at_every_scale(x, k, power):
    # scaling by a power of two is exact, so the partition must not change, up to values near 1e308
    if len(x) < k:
        return
    scale = 2.0 ** power
    if power <= -1000:  # subnormal values lose digits: only check validity
        labels = uma_groups(x * scale, k, "optimal")
        assert np.bincount(labels).min() >= k
        return
    assert np.array_equal(uma_groups(x * scale, k, "optimal"), uma_groups(x, k, "optimal"))
    assert np.array_equal(uma_aggregate(x * scale, k, "optimal"), uma_aggregate(x, k, "optimal") * scale)


def test_integer_columns_near_the_int64_limits_are_not_sign_flipped():
    # review F5: the group mean of 2**63 - 1 twice is 2**63 in float, which the int64 cast wrapped to -2**63
    top, bottom = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    frame = pd.DataFrame({"big": np.array([top, top, 0, 0], dtype=np.int64),
                          "low": np.array([bottom, bottom, 0, 0], dtype=np.int64),
                          "unsigned": np.array([2**64 - 1, 2**64 - 1, 0, 0], dtype=np.uint64),
                          "nullable": pd.array([top, top, 0, 0], dtype="Int64")})
    roles = Roles(columns=[tag(c, Role.quasi_identifier, ColumnKind.numeric) for c in frame.columns])
    out = Uma(k=2).sanitize(frame, roles)
    src = aligned(frame, out)
    for column in frame.columns:
        assert out.frame[column].dtype == frame[column].dtype
        assert out.frame[column].tolist() == src[column].tolist()  # every group here holds equal values
    with_missing = pd.DataFrame({"big": pd.array([top, top, None, 0, 0], dtype="Int64")})
    out = Uma(k=2).sanitize(with_missing, Roles(columns=[tag("big", Role.quasi_identifier, ColumnKind.numeric)]))
    assert sorted(out.frame["big"].dropna().tolist()) == [0, 0, top, top] and out.frame["big"].isna().sum() == 1


@pytest.mark.parametrize("value", [np.inf, -np.inf, 8e307, -1e101])
def test_infinite_or_huge_values_are_an_input_error_naming_the_column(value):
    # review F11: a ValueError from uma_groups, or 4e307 published
    frame = make_frame(20, 1)
    frame.loc[frame.index[3], "height"] = value
    with pytest.raises(InputError) as err:
        Uma(k=3).sanitize(frame, ROLES)
    assert str(err.value) == "uma: column 'height' holds infinite or too large values (beyond ±1e+100)"
