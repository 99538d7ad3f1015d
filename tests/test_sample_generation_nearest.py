"""The exact nearest-row search of sample generation (issue 33): :class:`_NearestRow` against brute force on random
mixed tables (numeric columns and one-hot nominal blocks, duplicates, missing values), in every code path."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ppdp.tasks.sanitize.sample_generation as sample_generation
from ppdp.schemas.base import ColumnKind
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.sanitize.sample_generation import _NearestRow

NUM, NOM = ColumnKind.numeric, ColumnKind.nominal


def brute(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Squared distance of every candidate to every training row, straight from the definition."""
    return ((q[:, None, :] - x[None, :, :]) ** 2).sum(axis=-1)


def check(x: np.ndarray, q: np.ndarray, blocks: list[slice], copies: np.ndarray) -> _NearestRow:
    """The search's row is at the brute-force nearest distance for every candidate (an exact copy of a training row
    at distance 0 exactly); among training rows identical to it, it is the lowest index (structured search)."""
    search = _NearestRow(x, blocks)
    found = search.query(q)
    assert found.shape == (len(q),) and found.dtype.kind == "i"
    assert ((found >= 0) & (found < len(x))).all()
    all_d = brute(x, q)
    got = all_d[np.arange(len(q)), found]
    np.testing.assert_allclose(got, all_d.min(axis=1), rtol=1e-12, atol=1e-12)
    assert (got[copies] == 0).all()
    if search.structured:
        same = (x[None, :, :] == x[found][:, None, :]).all(axis=-1)  # training rows equal to the found one
        assert (found == np.argmax(same, axis=1)).all()
    return search


def table(rng: np.random.Generator, n: int, numeric: int, cats: list[int], integer: bool, missing: bool,
          duplicates: int) -> tuple[pd.DataFrame, dict[str, ColumnKind]]:
    data: dict[str, object] = {}
    for j in range(numeric):
        data[f"n{j}"] = rng.integers(-3, 4, n).astype(float) if integer else rng.normal(0.0, 1.0, n)
    for j, c in enumerate(cats):
        data[f"c{j}"] = rng.choice([f"k{i}" for i in range(c)], n).astype(object)
    frame = pd.DataFrame(data)
    if missing and n > 2:
        for name in frame.columns:
            frame.loc[rng.random(n) < 0.15, name] = np.nan  # numeric: the median; nominal: a category of its own
    if duplicates:
        frame = pd.concat([frame, frame.iloc[rng.integers(0, n, duplicates)]], ignore_index=True)
        frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    kinds = {c: (NUM if c.startswith("n") else NOM) for c in frame.columns}
    return frame, kinds


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 70), seed=st.integers(0, 2**32 - 1), numeric=st.integers(0, 3),
       cats=st.lists(st.integers(1, 6), min_size=1, max_size=4), integer=st.booleans(), missing=st.booleans(),
       duplicates=st.integers(0, 30), cells=st.sampled_from([sample_generation.NEAREST_CELLS, 1, 5, 37]))
def test_nearest_row_equals_brute_force_on_random_mixed_tables(n, seed, numeric, cats, integer, missing, duplicates,
                                                               cells):
    rng = np.random.default_rng(seed)
    frame, kinds = table(rng, n, numeric, cats, integer, missing, duplicates)
    enc = TableEncoder(columns=list(frame.columns), kinds=kinds).fit(frame)
    x = enc.transform(frame)
    m = len(frame)
    # candidates: exact copies of rows, and uniform draws (numbers on a slightly wider box, categories of the data,
    # integer-valued numbers half the time, so that ties between rows are common)
    rows = frame.iloc[rng.integers(0, m, 25)].reset_index(drop=True)
    uniform = {}
    for name in frame.columns:
        if kinds[name] is NUM:
            values = frame[name].dropna().to_numpy()
            lo, hi = (values.min(), values.max()) if values.size else (0.0, 0.0)
            drawn = rng.uniform(lo - 1.0, hi + 1.0, 40)
            uniform[name] = np.round(drawn) if integer else drawn
        else:
            uniform[name] = frame[name].to_numpy()[rng.integers(0, m, 40)]
    q = np.vstack([enc.transform(rows), enc.transform(pd.DataFrame(uniform))])
    copies = np.arange(len(rows))
    with mock.patch.object(sample_generation, "NEAREST_CELLS", cells):  # small steps: every chunking path runs
        search = check(x, q, list(enc.blocks().values()), copies)
    if any(b.stop - b.start > 1 for b in enc.blocks().values()):  # a one-hot block: the structured search (an
        assert search.structured  # encoder's rows always qualify)


def test_every_path_of_the_structured_search_is_exact():
    """0, 1 and 3 single columns, with and without the k-d tree step (more or fewer rows than K), heavy ties."""
    rng = np.random.default_rng(7)
    for numeric in (0, 1, 3):
        for n in (10, 400):
            frame, kinds = table(rng, n, numeric, [2, 3, 5], integer=True, missing=False, duplicates=n // 2)
            enc = TableEncoder(columns=list(frame.columns), kinds=kinds).fit(frame)
            x = enc.transform(frame)
            q = np.vstack([x[rng.integers(0, len(x), 50)], enc.transform(frame.sample(200, replace=True,
                                                                                       random_state=1))])
            q[50:, :numeric] += rng.integers(-2, 3, (200, numeric)) * 0.25  # off the rows, often equidistant
            search = check(x, q, list(enc.blocks().values()), np.arange(50))
            assert search.structured and (search.low is not None) == (numeric > 0 and len(x) > _NearestRow.K)


def test_ties_between_rows_of_different_classes_go_to_the_lowest_row_index():
    # one numeric column of few values and two nominal columns: many rows share a candidate's distance
    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({"age": rng.integers(20, 30, n), "a": rng.choice(list("pqrs"), n),
                          "b": rng.choice(list("xyz"), n)})
    enc = TableEncoder(columns=["age", "a", "b"], kinds={"age": NUM, "a": NOM, "b": NOM}).fit(frame)
    x = enc.transform(frame)
    cand = pd.DataFrame({"age": rng.integers(15, 35, 300), "a": rng.choice(list("pqrs"), 300),
                         "b": rng.choice(list("xyz"), 300)})
    q = enc.transform(cand)
    found = _NearestRow(x, list(enc.blocks().values())).query(q)
    d = brute(x, q)
    least = d.min(axis=1)
    tied = np.abs(d - least[:, None]) <= 1e-12  # equally near (up to rounding): the lowest index is taken
    assert (tied.sum(axis=1) > 1).mean() > 0.5
    assert (found == np.argmax(tied, axis=1)).all()
    assert (_NearestRow(x, list(enc.blocks().values())).query(q) == found).all()  # the same again


def test_encodings_the_encoder_does_not_make_are_searched_exactly_in_the_full_tree():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"v": rng.normal(size=300), "c": rng.choice(list("abcd"), 300),
                          "d": rng.choice(list("xy"), 300)})
    enc = TableEncoder(columns=["v", "c", "d"], kinds={"v": NUM, "c": NOM, "d": NOM}).fit(frame)
    x = enc.transform(frame)
    blocks = list(enc.blocks().values())
    # candidates of an unseen category (block all zeros), two indicators in a block, or an odd indicator value
    unseen = enc.transform(pd.DataFrame({"v": rng.normal(size=40), "c": ["zz"] * 40, "d": ["x"] * 40}))
    q = enc.transform(frame.sample(60, random_state=2))
    q[:20, 1:5] = 0.0
    q[20:40, 1:3] = x.max()
    q[40:60, 5:7] *= 0.5
    check(x, np.vstack([unseen, q]), blocks, np.zeros(0, dtype=int))
    # a training row that is not one-hot: the search is the full tree for every candidate
    odd = x.copy()
    odd[0, 1:5] = 0.0
    rows = enc.transform(frame.iloc[1:61])
    search = check(odd, np.vstack([unseen, rows]), blocks, np.arange(40, 100))
    assert not search.structured


def test_rows_at_the_same_distance_on_either_side_go_to_the_lowest_row_index():
    """Hand-made encodings (one numeric column or two, one one-hot block) where a candidate lies exactly midway
    between two rows of its pattern; fewer rows than K, so the pattern search alone decides."""
    s = 1.0 / np.sqrt(2.0)
    a, b = [0.0, s], [s, 0.0]
    for numeric, below, above in (([0.0], 0, 1), ([0.0], 1, 0), ([0.0, 0.0], 0, 1), ([0.0, 0.0], 1, 0)):
        d = len(numeric)
        x = np.zeros((3, d + 2))
        x[below, :d], x[above, :d] = -1.0, 1.0
        x[below, d:] = x[above, d:] = a
        x[2, :d], x[2, d:] = 5.0, b
        blocks = [slice(j, j + 1) for j in range(d)] + [slice(d, d + 2)]
        q = np.array([[0.0] * d + a, [5.0] * d + b, [-1.0] * d + a, [0.0] * d + b])
        found = _NearestRow(x, blocks).query(q)
        assert found.tolist() == [0, 2, below, 0]
        np.testing.assert_allclose(brute(x, q)[np.arange(4), found], brute(x, q).min(axis=1), rtol=0, atol=1e-15)
