"""One contract for every sanitizer in the registry: a new method is covered by registering it.

Parameters are kept unchanged, the input frame is not modified, the same seed gives the same output, rows come
out shuffled with group ids aligned, and the privacy property of the method's release kind holds on frames with
shuffled, non-default indexes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.schemas.spec import ColumnKind, Role
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.sanitize import REGISTRY

# per sanitizer: the parameter sets the contract runs with (its variants)
CASES = {
    "condensation": [dict(variant=v, k=5) for v in ("class_wise", "modified", "original")],
}


def all_cases():
    missing = set(REGISTRY) - set(CASES)
    assert not missing, f"register contract cases for {missing}"
    return [(name, params) for name in REGISTRY for params in CASES[name]]


def make_frame(n: int, seed: int) -> tuple[pd.DataFrame, Roles]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "score": rng.normal(0, 1, n),
        "city": rng.choice(["a", "b", "c"], n),
        "label": rng.choice(["p", "q"], n, p=[0.6, 0.4]),
    })
    frame.loc[frame["label"].value_counts().idxmin() == frame["label"], "score"] += 2.0
    frame.index = rng.permutation(n) * 3 + 7
    roles = Roles(columns=[
        ColumnTag(name="age", role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="score", role=Role.sensitive, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="city", role=Role.quasi_identifier, kind=ColumnKind.nominal, source="declared", reason="t"),
        ColumnTag(name="label", role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"),
    ])
    return frame, roles


@pytest.mark.parametrize(("name", "params"), all_cases())
def test_contract(name, params):
    frame, roles = make_frame(120, 1)
    before = frame.copy(deep=True)
    sanitizer = REGISTRY[name](**params, seed=11)
    kept = sanitizer.get_params()
    out = sanitizer.sanitize(frame, roles)
    assert sanitizer.get_params() == kept  # no hidden state written into parameters
    pd.testing.assert_frame_equal(frame, before)  # input not mutated
    again = REGISTRY[name](**params, seed=11).sanitize(frame, roles)
    pd.testing.assert_frame_equal(out.frame, again.frame)  # same seed, same release
    assert list(out.frame.columns) == list(frame.columns)
    assert len(out.groups) == len(out.frame) and len(out.source_groups) == len(frame)
    assert isinstance(out.frame.index, pd.RangeIndex)
    assert out.release_kind in ("synthetic", "generalized")
    if out.source_index is not None:  # each released row stands in for one input row of its own group
        assert sorted(out.source_index.tolist()) == list(range(len(frame)))
        assert np.array_equal(out.groups, out.source_groups[out.source_index])
    clone = sanitizer.with_params(k=7)
    assert clone.get_params()["k"] == 7 and sanitizer.get_params()["k"] == params["k"]
    with pytest.raises(TypeError):
        sanitizer.with_params(no_such_parameter=1)


@pytest.mark.parametrize(("name", "params"), all_cases())
def test_bad_parameters_fail_before_data_is_touched(name, params):
    frame, roles = make_frame(50, 2)
    with pytest.raises(ValueError):
        REGISTRY[name](**{**params, "k": 0}, seed=0).sanitize(frame, roles)


@pytest.mark.parametrize(("name", "params"), all_cases())
@settings(max_examples=15, deadline=None)
@given(n=st.integers(min_value=40, max_value=200), seed=st.integers(0, 10_000), k=st.integers(2, 15))
def test_privacy_property_holds(name, params, n, seed, k):
    frame, roles = make_frame(n, seed)
    k = min(k, int(frame["label"].value_counts().min()))
    out = REGISTRY[name](**{**params, "k": k}, seed=seed).sanitize(frame, roles)
    if out.release_kind == "synthetic":
        assert np.bincount(out.source_groups).min() >= k
    else:
        ids = equivalence_class_ids(out.frame, roles.quasi_identifiers)
        assert np.bincount(ids).min() >= k
