"""Top and bottom coding (tasks/sanitize/top_bottom_coding.py): sdcMicro's ``x[x > value] <- replacement`` checked by
hand on 6 rows, and its properties: nothing published beyond the bounds, values inside untouched, a lower quantile
codes at least as much, types kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.sanitize.registry import REGISTRY
from ppdp.tasks.sanitize.top_bottom_coding import TopBottomCoding, code_tails


def tag(name, role, kind=ColumnKind.numeric):
    return ColumnTag(name=name, role=role, kind=kind, source="declared", reason="t")


ROLES = Roles(columns=[tag("x", Role.quasi_identifier), tag("y", Role.sensitive),
                       tag("label", Role.class_, ColumnKind.nominal)])
SIX = pd.DataFrame({"x": [1, 2, 3, 4, 5, 100], "y": [1.0, 2.0, 3.0, 4.0, 5.5, 100.5], "label": list("pqpqpq")})


def unshuffled(out):
    return out.frame.take(np.argsort(out.row_source)).reset_index(drop=True)


def test_six_rows_by_hand():
    """x = 1 2 3 4 5 100, q = 0.8: the 0.8-quantile (R's type 7, position 0.8 * 5 = 4) is 5, the 0.2-quantile
    (position 1) is 2: 100 > 5 becomes 5, 1 < 2 becomes 2 -> 2 2 3 4 5 5. y (floats) with kind top, q = 0.6: the
    bound is at position 3, 4.0; the tail 5.5 and 100.5 has mean 53 -> with replacement mean 1 2 3 4 53 53."""
    back = unshuffled(TopBottomCoding(quantile=0.8, seed=1).sanitize(SIX, ROLES))
    assert back["x"].tolist() == [2, 2, 3, 4, 5, 5] and back["x"].dtype == SIX["x"].dtype
    assert back["y"].tolist() == [2.0, 2.0, 3.0, 4.0, 5.5, 5.5]  # y's bounds: positions 4 and 1 -> 5.5 and 2.0
    assert back["label"].tolist() == SIX["label"].tolist()
    back = unshuffled(TopBottomCoding(quantile=0.6, kind="top", replacement="mean").sanitize(SIX, ROLES))
    assert back["y"].tolist() == [1.0, 2.0, 3.0, 4.0, 53.0, 53.0]
    # sdcMicro's topBotCoding(x, value = 3, replacement = 3, kind = "top") as a per-column limit: 1 2 3 3 3 3
    back = unshuffled(TopBottomCoding(quantile=1.0, kind="top", limits={"x": {"top": 3}}).sanitize(SIX, ROLES))
    assert back["x"].tolist() == [1, 2, 3, 3, 3, 3] and back["y"].tolist() == SIX["y"].tolist()
    back = unshuffled(TopBottomCoding(quantile=1.0, kind="bottom", limits={"y": {"bottom": 4.0}}).sanitize(SIX, ROLES))
    assert back["y"].tolist() == [4.0, 4.0, 4.0, 4.0, 5.5, 100.5]


def test_integer_bounds_are_rounded_outwards():
    """x = 1 2 3 4, q = 0.9: the quantiles 3.7 and 1.3 become 4 and 1: nothing is coded, no fraction published."""
    frame = pd.DataFrame({"x": [1, 2, 3, 4]})
    roles = Roles(columns=[tag("x", Role.quasi_identifier)])
    assert unshuffled(TopBottomCoding(quantile=0.9).sanitize(frame, roles))["x"].tolist() == [1, 2, 3, 4]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.floats(-1e6, 1e6), st.none()), min_size=1, max_size=60),
       q=st.floats(0.5, 1.0), lower=st.floats(0.5, 1.0), kind=st.sampled_from(["top", "bottom", "both"]),
       replacement=st.sampled_from(["bound", "mean"]))
def test_property_nothing_beyond_the_bounds_and_inside_untouched(values, q, lower, kind, replacement):
    frame = pd.DataFrame({"x": pd.array(values, dtype="Float64").astype(float)})
    roles = Roles(columns=[tag("x", Role.quasi_identifier)])
    sanitizer = TopBottomCoding(quantile=q, kind=kind, replacement=replacement)
    top, bottom = sanitizer.bounds(frame["x"])
    back = unshuffled(sanitizer.sanitize(frame, roles))["x"].to_numpy()
    x = frame["x"].to_numpy()
    assert np.array_equal(np.isnan(back), np.isnan(x))  # missing stay missing
    hi, lo = (top if top is not None else np.inf), (bottom if bottom is not None else -np.inf)
    inside = ~np.isnan(x) & (x <= hi) & (x >= lo)
    assert np.array_equal(back[inside], x[inside])
    if replacement == "bound":
        assert top is None or np.nanmax(back, initial=-np.inf) <= top
        assert bottom is None or np.nanmin(back, initial=np.inf) >= bottom
    # a lower quantile codes at least as many values (smaller is safer)
    low = min(q, lower)

    def changed(quantile):
        return int(np.sum(code_tails(x, *TopBottomCoding(quantile=quantile, kind=kind).bounds(frame["x"])) != x))

    assert changed(low) >= changed(max(q, lower))


def test_nullable_integers_keep_their_dtype_and_missing_cells():
    frame = pd.DataFrame({"x": pd.array([1, None, 3, 4, 5, 100], dtype="Int64")})
    roles = Roles(columns=[tag("x", Role.quasi_identifier)])
    back = unshuffled(TopBottomCoding(quantile=0.75).sanitize(frame, roles))["x"]
    assert str(back.dtype) == "Int64" and back.isna().tolist() == frame["x"].isna().tolist()
    assert back.dropna().max() <= 5


def test_errors_name_no_value_and_traits():
    with pytest.raises(SpecError, match=r"method.limits.nope is not a numeric attribute"):
        TopBottomCoding(quantile=0.9, limits={"nope": {"top": 1}}).sanitize(SIX, ROLES)
    with pytest.raises(InputError, match="no numeric attribute"):
        TopBottomCoding(quantile=0.9).sanitize(SIX[["label"]], ROLES)
    with pytest.raises(SpecError, match="quantile"):
        TopBottomCoding(quantile=0.3).sanitize(SIX, ROLES)
    cls = REGISTRY["top_bottom_coding"]
    assert cls is TopBottomCoding and cls.tunable == {"quantile": "smaller"} and not cls.randomized
