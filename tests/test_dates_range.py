"""Dates a nanosecond timestamp cannot hold (a Parquet timestamp[ms] of 9999-12-31) are refused in one line,
never wrapped around into other dates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.encoding import as_numbers
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.sanitize.uma import Uma


def test_out_of_range_dates_are_refused_and_in_range_ones_kept():
    far = pd.Series(np.array(["9999-12-31", "2020-01-01", "NaT"], dtype="datetime64[s]"), name="when")
    with pytest.raises(InputError, match="column 'when': dates before 1677-09-22 or after 2262-04-11"):
        as_numbers(far)
    near = pd.Series(np.array(["1700-01-01", "2200-06-30", "NaT"], dtype="datetime64[ms]"), name="when")
    days = as_numbers(near)[:2] / 86_400e9
    assert np.allclose(days, [(pd.Timestamp(d) - pd.Timestamp("1970-01-01")).days for d in ("1700-01-01",
                                                                                           "2200-06-30")])


def test_a_method_refuses_them_instead_of_publishing_wrapped_dates():
    when = pd.Series(np.array(["9999-12-31"] * 3 + ["2020-01-01"] * 3, dtype="datetime64[s]"))
    frame = pd.DataFrame({"when": when, "x": [1.0, 2, 3, 4, 5, 6]})
    roles = Roles(columns=[
        ColumnTag(name="when", role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="x", role=Role.sensitive, kind=ColumnKind.numeric, source="declared", reason="t")])
    with pytest.raises(InputError, match="'when'"):
        Uma(k=3).sanitize(frame, roles)
