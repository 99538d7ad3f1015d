"""Paper 004's sample generation (Li & Xi): uniform draws on each attribute's range, kept when an entropy tree and
1-NN agree, labelled with their class; as many rows as the input; refused in one line when agreement is rare."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors
from sklearn.tree import DecisionTreeClassifier

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.privacy import risk
from ppdp.tasks.privacy.measure import check_gates, measure_release
from ppdp.tasks.sanitize.sample_generation import SampleGeneration, _NearestRow

NUM, NOM, ORD = ColumnKind.numeric, ColumnKind.nominal, ColumnKind.ordinal
QI, CLS = Role.quasi_identifier, Role.class_
CANARY = "Zq9-canary-417"


def roles_of(**columns: tuple) -> Roles:
    tags = []
    for name, spec in columns.items():
        role, kind, *rest = spec
        tags.append(ColumnTag(name=name, role=role, kind=kind, source="declared", reason="test",
                              order=rest[0] if rest else None))
    return Roles(columns=tags)


def separable(n: int, seed: int) -> tuple[pd.DataFrame, Roles]:
    """Class a below x1 = 0.4, class b above 0.6, x2 noise: the best entropy split is unique (the gap)."""
    rng = np.random.default_rng(seed)
    x1 = np.concatenate([rng.uniform(0.0, 0.4, n // 2), rng.uniform(0.6, 1.0, n - n // 2)])
    frame = pd.DataFrame({"x1": x1, "x2": rng.uniform(0.0, 1.0, n), "label": np.where(x1 < 0.5, "a", "b")})
    return frame, roles_of(x1=(QI, NUM), x2=(QI, NUM), label=(CLS, NOM))


def mixed(n: int, seed: int) -> tuple[pd.DataFrame, Roles]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 81, n),
        "small": rng.choice([0, 3], n),  # whole numbers: drawn over 0..3, not only the two values present
        "score": rng.normal(50.0, 10.0, n),
        "hours": rng.integers(1, 61, n).astype(float),  # whole numbers held as floats
        "when": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D"),
        "city": rng.choice(["north", "south", "east"], n),
        "edu": rng.choice(["low", "high"], n),  # ordinal whose declared order holds a category the data lack
        "band": pd.Categorical(rng.choice(["x", "y"], n), categories=["x", "y", "unused"]),
        "label": rng.choice(["p", "q"], n),
    })
    roles = roles_of(age=(QI, NUM), small=(QI, NUM), score=(Role.sensitive, NUM), hours=(QI, NUM), when=(QI, NUM),
                     city=(QI, NOM),
                     edu=(QI, ORD, ["low", "mid", "high"]), band=(Role.other, NOM), label=(CLS, NOM))
    return frame, roles


def test_generated_labels_agree_with_both_classifiers():
    frame, roles = separable(200, 0)
    out = SampleGeneration(samples=3000, seed=3).sanitize(frame, roles)
    enc = TableEncoder(columns=["x1", "x2"], kinds=roles.kinds()).fit(frame)
    x, labels = enc.transform(frame), frame["label"].to_numpy()
    tree = DecisionTreeClassifier(criterion="entropy", min_samples_leaf=2, random_state=0).fit(x, labels)
    knn = KNeighborsClassifier(n_neighbors=1, algorithm="brute").fit(x, labels)
    generated = enc.transform(out.frame)
    published = out.frame["label"].to_numpy()
    assert (tree.predict(generated) == published).all()
    assert (knn.predict(generated) == published).all()  # an independent 1-NN (scikit-learn brute force)
    assert set(published) == {"a", "b"}
    # candidates where the two disagree exist (the 1-NN border is not the tree's straight cut) and were left out
    rng = np.random.default_rng(1)
    box = enc.transform(pd.DataFrame({"x1": rng.uniform(frame.x1.min(), frame.x1.max(), 200_000),
                                      "x2": rng.uniform(frame.x2.min(), frame.x2.max(), 200_000)}))
    assert (tree.predict(box) != knn.predict(box)).any()


def test_every_value_lies_in_its_column_range_or_category_set():
    frame, roles = mixed(400, 2)
    out = SampleGeneration(seed=5).sanitize(frame, roles)
    data = out.frame
    assert len(data) == len(frame) and list(data.columns) == list(frame.columns)
    assert data.dtypes.to_dict() == frame.dtypes.to_dict()
    assert out.unit == "record" and (out.row_source == -1).all() and out.group is None
    assert out.treatments == {c: "synthesized" for c in frame.columns}
    for col in ("age", "small", "score", "hours", "when"):
        assert data[col].between(frame[col].min(), frame[col].max()).all()
    assert set(data["small"]) == {0, 1, 2, 3}  # every integer of the interval, the ends included
    assert (data["hours"] == np.round(data["hours"])).all() and data["hours"].max() == frame["hours"].max()
    assert data["score"].nunique() == len(data)  # real-valued: drawn continuously
    assert data["age"].nunique() > 40  # integers of the range, not only those present
    assert (data["when"] == data["when"].dt.normalize()).all()  # whole days
    assert set(data["city"]) == set(frame["city"])
    assert set(data["edu"]) <= {"low", "high"}  # never the declared category the data lack
    assert set(data["band"]) <= {"x", "y"} and list(data["band"].cat.categories) == ["x", "y", "unused"]
    assert set(data["label"]) <= {"p", "q"}
    assert not data.isna().any().any()  # no missing value in, none out
    merged = data.merge(frame, how="inner")
    assert len(merged) == 0  # generated, not copied


def test_missing_share_is_reproduced_column_by_column():
    frame, roles = mixed(1000, 4)
    rng = np.random.default_rng(0)
    frame.loc[rng.random(1000) < 0.3, "score"] = np.nan
    frame["city"] = frame["city"].where(rng.random(1000) >= 0.2)
    out = SampleGeneration(samples=4000, seed=1).sanitize(frame, roles)
    for col, share in (("score", frame["score"].isna().mean()), ("city", frame["city"].isna().mean())):
        observed = out.frame[col].isna().mean()
        assert abs(observed - share) < 5 * np.sqrt(share * (1 - share) / 4000), col
    assert not out.frame.drop(columns=["score", "city"]).isna().any().any()


def test_row_count_and_seeds():
    frame, roles = mixed(150, 7)
    first = SampleGeneration(seed=9).sanitize(frame, roles)
    again = SampleGeneration(seed=9).sanitize(frame, roles)
    other = SampleGeneration(seed=10).sanitize(frame, roles)
    assert len(first.frame) == 150
    pd.testing.assert_frame_equal(first.frame, again.frame)
    assert not first.frame.equals(other.frame)
    assert len(SampleGeneration(samples=37, seed=9).sanitize(frame, roles).frame) == 37
    pd.testing.assert_frame_equal(frame, mixed(150, 7)[0])  # input untouched


def test_classifiers_that_rarely_agree_are_refused_in_one_line():
    """A majority class packed in a tiny disc, ringed by minority points, with far minority points stretching
    the box. A tree limited to one leaf (J48's -M at the table size) predicts the majority everywhere; 1-NN
    predicts it only inside a disc of radius about 0.005 in a box of side 2: the two agree on about 0.002% of the
    draws, and two draws per sample are allowed."""
    rng = np.random.default_rng(0)
    core = rng.uniform(-1e-3, 1e-3, (60, 2))
    angles = np.linspace(0.0, 2 * np.pi, 24, endpoint=False)
    ring = 0.01 * np.column_stack([np.cos(angles), np.sin(angles)])
    corners = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    points = np.vstack([core, ring, corners])
    frame = pd.DataFrame({"u": points[:, 0], "v": points[:, 1], "tag": [CANARY] * len(points),
                          "label": ["major"] * 60 + ["minor"] * 28})
    roles = roles_of(u=(QI, NUM), v=(QI, NUM), tag=(Role.other, NOM), label=(CLS, NOM))
    n = len(frame)
    with pytest.raises(InputError) as caught:
        SampleGeneration(max_draws_factor=2, tree_min_samples_leaf=n, seed=4).sanitize(frame, roles)
    message = str(caught.value)
    assert re.fullmatch(rf"sample_generation: the classifiers agreed on \d+ of {2 * n} draws, fewer than the {n} "
                        r"samples needed .*", message)
    assert "\n" not in message and CANARY not in message and "major" not in message
    # the same table with the default leaf size: the tree carves the disc out and the two agree
    assert len(SampleGeneration(seed=4).sanitize(frame, roles).frame) == n


def test_a_class_column_is_required_and_complete():
    frame, roles = separable(40, 1)
    no_class = roles_of(x1=(QI, NUM), x2=(QI, NUM), label=(Role.other, NOM))
    with pytest.raises(InputError, match="needs a class column"):
        SampleGeneration().sanitize(frame, no_class)
    holed = frame.assign(label=frame["label"].where(frame.index != 3))
    with pytest.raises(InputError, match=r"class column 'label' has 1 missing value"):
        SampleGeneration().sanitize(holed, roles)


def test_remaining_identifiers_are_not_published():
    frame, _ = separable(60, 2)
    frame.insert(0, "pid", [f"P{i:04d}" for i in range(60)])
    roles = roles_of(pid=(Role.identifier, NOM), x1=(QI, NUM), x2=(QI, NUM), label=(CLS, NOM))
    out = SampleGeneration(seed=1).sanitize(frame, roles)
    assert "pid" not in out.frame.columns and out.treatments["pid"] == "dropped"


def test_perturbation_measures_pair_the_ith_published_row_with_the_ith_input_row():
    frame, roles = mixed(200, 3)
    out = SampleGeneration(seed=2).sanitize(frame, roles)
    policy = PrivacyThresholds(min_vd=0.1)
    report = measure_release(frame, out, roles, thresholds=policy, attack_queries=0)
    cols = ["age", "small", "score", "hours"]  # numeric attributes of numeric type (dates are not)
    expected = risk.matrix_distortion(frame[cols].to_numpy(dtype=float), out.frame[cols].to_numpy(dtype=float))
    assert report.perturbation is not None and report.perturbation.vd == pytest.approx(expected.vd)
    assert report.perturbation.rp == pytest.approx(expected.rp) and report.perturbation.ck == expected.ck
    assert report.linkage_risk == 0.0  # no published row stands for an input row
    [claim] = [c for c in check_gates(report, policy).claims if c.name == "min_vd"]
    assert claim.value == pytest.approx(expected.vd) and claim.passed == (expected.vd >= 0.1)
    fewer = SampleGeneration(samples=150, seed=2).sanitize(frame, roles)
    assert measure_release(frame, fewer, roles, attack_queries=0).perturbation is None  # no pairing


def test_nearest_row_search_is_exact_on_mixed_features():
    frame, roles = mixed(3000, 8)
    cols = [c for c in frame.columns if c != "label"]
    enc = TableEncoder(columns=cols, kinds=roles.kinds(), orders=roles.orders()).fit(frame)
    x = enc.transform(frame)
    search = _NearestRow(x, list(enc.blocks().values()))
    assert search.structured and search.low is not None  # the structured search, both steps, is the one exercised
    rng = np.random.default_rng(0)
    queries = enc.transform(pd.DataFrame({c: frame[c].to_numpy()[rng.integers(0, 3000, 4000)] for c in cols}))
    queries[:, 0] += rng.normal(0, 3.0, 4000)  # far from the data in one column, as uniform draws often are
    found = search.query(queries)
    d_found = np.linalg.norm(queries - x[found], axis=1)
    best = np.array([np.min(np.linalg.norm(x - q, axis=1)) for q in queries[:400]])
    np.testing.assert_allclose(d_found[:400], best, rtol=0, atol=1e-9)
    d_brute = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(x).kneighbors(queries)[0][:, 0]
    np.testing.assert_allclose(d_found, d_brute, rtol=0, atol=1e-7)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(6, 60), seed=st.integers(0, 10_000), numeric=st.integers(1, 3), cats=st.integers(1, 4),
       classes=st.integers(1, 3), integer=st.booleans())
def test_random_small_frames_publish_valid_rows_or_refuse(n, seed, numeric, cats, classes, integer):
    rng = np.random.default_rng(seed)
    data = {f"n{j}": (rng.integers(-5, 6, n) if integer else rng.normal(0, 1, n)) for j in range(numeric)}
    data["c"] = rng.choice([f"k{i}" for i in range(cats)], n)
    data["y"] = rng.choice([f"y{i}" for i in range(classes)], n)
    frame = pd.DataFrame(data)
    roles = roles_of(**{f"n{j}": (QI, NUM) for j in range(numeric)}, c=(QI, NOM), y=(CLS, NOM))
    try:
        out = SampleGeneration(max_draws_factor=20, seed=seed).sanitize(frame, roles)
    except InputError as exc:
        assert str(exc).startswith("sample_generation: the classifiers agreed on ")
        return
    assert len(out.frame) == n and (out.row_source == -1).all()
    assert out.frame.dtypes.to_dict() == frame.dtypes.to_dict()
    for j in range(numeric):
        col = out.frame[f"n{j}"]
        assert col.between(frame[f"n{j}"].min(), frame[f"n{j}"].max()).all()
        if integer:
            assert (col == np.round(col)).all()
    assert set(out.frame["c"]) <= set(frame["c"]) and set(out.frame["y"]) <= set(frame["y"])


# -- hostile inputs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("values", [
    np.array([0, 2**63 - 1, 5, 7], dtype=np.int64),  # review F8: "high is out of bounds for int64"
    np.array([-(2**63), 2**63 - 1, 5, 7], dtype=np.int64),
    np.array([0, 2**64 - 1, 5, 7], dtype=np.uint64),
    np.array([0.0, 1e19, 5.0, 7.0]),  # whole numbers held as floats
    np.array([-1e30, 1e30, 5.0, 7.0]),
])
def test_whole_number_columns_with_a_range_beyond_int64_are_drawn(values):
    frame = pd.DataFrame({"x": values, "label": list("pqpq")})
    out = SampleGeneration(samples=200, seed=3).sanitize(frame, roles_of(x=(QI, NUM), label=(CLS, NOM)))
    drawn = out.frame["x"]
    assert len(drawn) == 200 and drawn.dtype == frame["x"].dtype and drawn.notna().all()
    exact = [int(v) for v in drawn]  # whole numbers, within the input range (compared exactly, as integers)
    assert all(int(values.min()) <= v <= int(values.max()) for v in exact)
    assert all(float(v) == np.round(float(v)) for v in drawn)
    assert len(set(exact)) > 50  # spread over the range, not stuck at an end


def test_an_ordinal_value_outside_its_declared_order_is_an_input_error_naming_the_column():
    # review F10: was a ValueError from the encoder
    frame = pd.DataFrame({"edu": ["lo", "hi", CANARY, "lo"], "w": [1.0, 2, 3, 4], "label": list("pqpq")})
    roles = roles_of(edu=(QI, ORD, ["lo", "hi"]), w=(Role.sensitive, NUM), label=(CLS, NOM))
    with pytest.raises(InputError) as info:
        SampleGeneration().sanitize(frame, roles)
    assert str(info.value) == "column 'edu': 1 value(s) not in its declared order"


@pytest.mark.parametrize("value", [np.inf, -np.inf, 8e307, -1e101])
def test_infinite_or_huge_values_are_an_input_error_naming_the_column(value):
    # review F11: cKDTree / scikit-learn errors, or an int64 bound error
    frame, roles = separable(40, 0)
    frame.loc[5, "x2"] = value
    with pytest.raises(InputError) as info:
        SampleGeneration().sanitize(frame, roles)
    assert str(info.value) == ("sample_generation: column 'x2' holds infinite or too large values "
                               "(beyond ±1e+100)")
