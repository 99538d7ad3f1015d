"""Local and record suppression (tasks/core/suppression.py): after the mask every equivalence class of the
published table (``*`` a value like any other, recounted with equivalence_class_ids) holds k rows, the all-``*``
class included; local suppression never takes more cells than record suppression and takes far fewer on typical
data; the budget, the ``*`` codes already present and bad inputs behave as documented."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.tasks.core import suppression
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.core.suppression import local_suppression, record_suppression

STAR = -999  # how a suppressed cell is written in these tests (no input code is -999)


def publish(codes: np.ndarray, mask: np.ndarray, star: list[int | None] | None = None) -> np.ndarray:
    out = codes.copy()
    for j in range(codes.shape[1]):
        code = star[j] if star is not None and star[j] is not None else STAR
        out[mask[:, j], j] = code
    return out


def class_sizes(table: np.ndarray) -> np.ndarray:
    frame = pd.DataFrame(table)
    return np.bincount(equivalence_class_ids(frame, list(frame.columns)))


def all_star(table: np.ndarray, star: list[int | None] | None) -> np.ndarray:
    marks = [STAR if star is None or star[j] is None else star[j] for j in range(table.shape[1])]
    return (table == np.array(marks)).all(axis=1) if table.shape[1] else np.zeros(len(table), dtype=bool)


def table(seed: int, n: int, q: int, skew: float = 1.0) -> np.ndarray:
    """Codes with skewed columns (a few frequent values, a tail of rare ones) and some -1 (missing)."""
    rng = np.random.default_rng(seed)
    cols = []
    for _ in range(q):
        card = int(rng.integers(1, 7))
        p = rng.dirichlet(np.full(card, skew))
        cols.append(rng.choice(card, n, p=p) - (rng.random(n) < 0.05))
    return np.stack(cols, axis=1).astype(np.int64)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 120), q=st.integers(1, 5), k=st.integers(1, 8), seed=st.integers(0, 10_000),
       with_star=st.booleans(), skew=st.sampled_from([0.3, 1.0]))
def test_every_class_has_k_rows_and_local_never_costs_more_than_record(n, q, k, seed, with_star, skew):
    codes = table(seed, n, q, skew)
    star = [int(codes[0, j]) if (j + seed) % 2 else None for j in range(q)] if with_star else None
    if n < k:
        with pytest.raises(InputError):
            local_suppression(codes, k, star=star)
        return
    local = local_suppression(codes, k, star=star)
    record = record_suppression(codes, k, star=star)
    before = class_sizes(codes)
    ids = equivalence_class_ids(pd.DataFrame(codes), list(range(q)))
    violating = np.flatnonzero(before[ids] < k)
    for result in (local, record):
        assert result.mask.shape == codes.shape and result.mask.dtype == bool
        published = publish(codes, result.mask, star)
        assert class_sizes(published).min() >= k  # the recount of the published table
        assert result.cells == int(result.mask.sum())
        assert np.array_equal(result.violating, violating)
        assert result.rows_fully_suppressed == int(all_star(published, star).sum())
        assert not result.mask[~np.isin(np.arange(n), np.r_[violating, result.filled])].any()  # only these rows
        assert all_star(published, star)[result.filled].all()
        if star is not None:  # a cell already '*' is never counted as suppressed
            native = codes == np.array([s if s is not None else STAR for s in star])
            assert not (result.mask & native).any()
    assert not np.isin(record.filled, violating).any()  # (local may fill with violating rows it had settled)
    # a budget: the same answer when it fits, None (given up) when it does not
    assert np.array_equal(local_suppression(codes, k, star=star, max_cells=local.cells).mask, local.mask)
    if local.cells:
        assert local_suppression(codes, k, star=star, max_cells=local.cells - 1) is None
    assert local.cells <= record.cells
    if violating.size == 0:
        assert local.cells == 0 and record.cells == 0
    else:
        assert local.cells >= suppression._lower_bound(*suppression._prepare(codes, k, star), violating)
    if violating.size and star is None:
        assert local.cells >= violating.size  # a violating row without '*' must change


def test_far_fewer_cells_than_record_suppression_on_a_synthetic_table():
    codes = table(7, 3000, 6, skew=0.5)
    local = local_suppression(codes, 5)
    record = record_suppression(codes, 5)
    assert class_sizes(publish(codes, local.mask)).min() >= 5
    assert record.cells > 1000  # a table where suppression matters
    assert local.cells < 0.5 * record.cells
    assert local.method == "local"
    assert local.rows_touched <= len(record.violating) + len(local.filled)


def test_many_quasi_identifiers_use_the_beam():
    codes = table(3, 400, 12)
    assert any(suppression.math.comb(12, s) > suppression.MAX_PATTERNS for s in range(1, 12))
    local = local_suppression(codes, 3)
    assert class_sizes(publish(codes, local.mask)).min() >= 3
    assert local.cells <= record_suppression(codes, 3).cells


def test_hand_examples():
    # k = 2: (a, x) (a, y) (b, z) (b, z): suppressing the second column of the first two rows is enough
    codes = np.array([[0, 0], [0, 1], [1, 2], [1, 2]])
    local = local_suppression(codes, 2)
    assert local.mask.tolist() == [[False, True], [False, True], [False, False], [False, False]]
    assert (local.cells, local.rows_fully_suppressed) == (2, 0)
    assert record_suppression(codes, 2).cells == 4
    assert local_suppression(codes, 2, max_cells=1) is None  # a budget too small: given up
    assert local_suppression(codes, 2, max_cells=2).cells == 2
    assert local_suppression(codes, 2, max_cells=0) is None
    # a '*' already published (code 9 in column 1): the lone (a, x) joins the two (a, *) for one cell
    codes = np.array([[0, 9], [0, 9], [0, 1], [1, 2], [1, 2], [1, 2]])
    local = local_suppression(codes, 3, star=[None, 9])
    assert local.cells == 1 and local.mask[2].tolist() == [False, True]
    # the all-'*' class must hold k rows too: two lone rows, k = 3 -> a third row is taken from the class of 4
    codes = np.array([[0, 0], [1, 1], [2, 2], [2, 2], [2, 2], [2, 2]])
    local = local_suppression(codes, 3)
    assert local.filled.tolist() == [5] and local.rows_fully_suppressed == 3 and local.cells == 6
    assert class_sizes(publish(codes, local.mask)).min() >= 3
    # nothing to do
    codes = np.array([[1, 1], [1, 1]])
    assert local_suppression(codes, 2).cells == 0 and local_suppression(codes, 2).mask.shape == (2, 2)


def test_bad_inputs_fail_with_one_clear_line():
    codes = np.zeros((4, 2), dtype=np.int64)
    with pytest.raises(InputError) as err:
        local_suppression(codes, 5)
    assert str(err.value) == "suppression: 4 rows cannot form a class of k=5"
    with pytest.raises(InputError):
        record_suppression(codes, 5)
    with pytest.raises(SpecError):
        local_suppression(codes, 0)
    with pytest.raises(ValueError):
        local_suppression(np.zeros(4, dtype=np.int64), 2)
    with pytest.raises(ValueError):
        local_suppression(np.zeros((4, 2)), 2)  # floats are not codes
    with pytest.raises(ValueError):
        local_suppression(codes, 2, star=[None])
