"""Privacy measures and gates for synthetic releases; equivalence classes; fail-closed gates."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.spec import PrivacyPolicy
from ppdp.tasks.core.groups import class_sizes_per_row, equivalence_class_ids, unique_share
from ppdp.tasks.privacy import check_gates, confidence_interval_privacy, linkage_risk, measure_release
from ppdp.tasks.sanitize.base import Release
from ppdp.tasks.sanitize.condensation import Condensation
from tests.test_sanitizers_common import make_frame


def test_k_is_the_smallest_generating_group_and_gates_decide():
    frame, roles = make_frame(200, 3)
    release = Condensation(k=12, seed=1).sanitize(frame, roles)
    report = measure_release(frame, release, roles)
    assert report.unit == "generating_group"
    assert report.k == np.bincount(release.input_group).min() >= 12
    assert report.quasi_identifiers == ["age", "city"]
    assert 0.0 <= report.linkage_risk <= 1.0
    ok = check_gates(report, PrivacyPolicy(k=12, max_linkage_risk=1.0))
    assert ok.passed and [g.name for g in ok.gates] == ["k", "max_linkage_risk"]
    bad = check_gates(report, PrivacyPolicy(k=report.k + 1))
    assert not bad.passed and bad.failed[0].name == "k" and "group #" in bad.failed[0].worst
    strict = check_gates(report, PrivacyPolicy(k=2, max_linkage_risk=0.0))
    assert [g.name for g in strict.failed] == ["max_linkage_risk"] or report.linkage_risk == 0.0


def test_uncomputable_linkage_gate_fails_closed():
    frame, roles = make_frame(60, 0)
    release = Condensation(k=5, seed=0).sanitize(frame, roles)
    report = measure_release(frame, release, roles).model_copy(update={"linkage_risk": None})
    gated = check_gates(report, PrivacyPolicy(k=2, max_linkage_risk=0.5))
    assert not gated.passed


def test_linkage_risk_extremes():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 2))
    groups = np.arange(100) // 10
    assert linkage_risk(x, x.copy(), groups, groups) == 1.0  # publishing the originals links every record
    shuffled = rng.permutation(10)[groups]
    far = linkage_risk(x, x + 100.0, groups, shuffled)
    assert 0.0 <= far <= 1.0


def test_confidence_interval_privacy_grows_with_group_size():
    frame, roles = make_frame(400, 5)
    values = []
    for k in (5, 40, 150):
        release = Condensation(k=k, seed=2).sanitize(frame, roles)
        from ppdp.tasks.privacy import interval_privacy

        values.append(interval_privacy(frame, release, roles, seed=0))
    assert values[0] < values[1] < values[2]


def test_confidence_interval_privacy_by_hand():
    original = np.array([[0.0], [10.0], [20.0], [30.0]])
    released = np.array([[5.0], [5.0], [25.0], [25.0]])
    groups = np.array([0, 0, 1, 1])
    # differences within groups: -5, 5, -5, 5 (each record vs both synthetic records of its group)
    value = confidence_interval_privacy(original, released, groups, groups, confidence=0.95)
    lo, hi = np.quantile([-5, -5, 5, 5, -5, -5, 5, 5], [0.025, 0.975])
    assert value == (hi - lo) / 30.0


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.integers(0, 3), st.sampled_from([1.5, 2.5])),
                     min_size=1, max_size=60), seed=st.integers(0, 1000))
def test_equivalence_classes_match_pandas_groupby(data, seed):
    frame = pd.DataFrame(data, columns=["s", "i", "f"])
    frame.index = np.random.default_rng(seed).permutation(len(frame)) + 100
    ids = equivalence_class_ids(frame, ["s", "i", "f"])
    expected = frame.groupby(["s", "i", "f"], dropna=False).ngroup().to_numpy()
    # same partition (ids may be numbered differently)
    pairs = set(zip(ids.tolist(), expected.tolist()))
    assert len(pairs) == len(set(ids.tolist())) == len(set(expected.tolist()))
    sizes = frame.groupby(["s", "i", "f"], dropna=False)["s"].transform("size").to_numpy()
    assert np.array_equal(class_sizes_per_row(ids), sizes)
    assert unique_share(frame, ["s", "i", "f"]) == float(np.mean(sizes == 1))


def test_generalized_release_k_is_the_smallest_equivalence_class():
    frame = pd.DataFrame({"age": ["20-29"] * 4 + ["30-39"] * 3, "label": list("aabbaab")})
    release = Release(frame=frame, unit="equivalence_class", treatments={"age": "generalized", "label": "kept"},
                      row_source=np.arange(7), group=np.zeros(7, dtype=int), input_group=np.zeros(7, dtype=int))
    from tests.test_condensation import numeric_roles

    roles = numeric_roles(["age"])
    report = measure_release(frame, release, roles)
    assert report.unit == "equivalence_class" and report.k == 3 and report.groups == 2
