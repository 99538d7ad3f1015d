"""Mondrian's top cuts on a partitioned input from fewer counting passes (tasks/sanitize/mondrian_partitions.py):
a pass counts each part's marginals and pairwise counts, which decide two rounds (the children's marginals are
slices of the pairs: ``cut_marginals``), and cutting stops once a part's distinct tuples (bounded by its records
and the product of its distinct codes) fit one worker. The capability is driven through its methods over
in-memory partitions, as the partitioned plan drives it (``fitted``: count per partition, merge, absorb); its
cuts must be those of the one-round-per-pass procedure (a reference written here from ``cut_round`` on the whole
frame's marginals), its release that of one machine's Mondrian, and its passes fewer."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.api import roles_for
from ppdp.schemas.base import ColumnKind
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.core.hierarchy import build_hierarchy
from ppdp.tasks.sanitize import mondrian_cuts, mondrian_partitions
from ppdp.tasks.sanitize.mondrian import Mondrian
from ppdp.tasks.sanitize.mondrian_cuts import (
    apply_cuts,
    cut_marginals,
    cut_round,
    hierarchy_dimension,
    numeric_dimension,
)

from .conftest import census
from .test_distributed_release import ORDER, counted, split

QIS = ["age", "sex", "zip", "education", "hours_per_week"]
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def table(rows: int, seed: int):
    frame = census(rows, seed)[[*QIS, "income"]]
    roles = roles_for(frame, quasi_identifiers=QIS, class_column="income", orders={"education": ORDER})
    return frame, roles


@contextmanager
def bounds(part_rows: int, pair_cells: int = 1 << 20):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mondrian_partitions, "MONDRIAN_PART_ROWS", part_rows)
        mp.setattr(mondrian_partitions, "MONDRIAN_PAIR_CELLS", pair_cells)
        yield


def run(frames: list[pd.DataFrame], roles, sanitizer):
    """The capability as the partitioned plan drives it: (its last state, the published rows in input order)."""
    method = Mondrian.on_partitions
    state = method.start(None, sanitizer, roles, counted(frames, roles))
    while (job := method.next_pass(state)) is not None:
        halves = [method.merge([method.count(job, f) for f in frames[:1]]),
                  method.merge([method.count(job, f) for f in frames[1:]] or [method.count(job, frames[0][:0])])]
        state = method.absorb(state, method.merge(halves))  # a merge of merges: as a tree of merges
    fitted = method.fit(state, sanitizer)
    jobs = method.local_jobs(fitted)
    state.largest = max(len(j[1]) for j in jobs)  # the distinct tuples of the largest part a task finishes
    fitted = method.finish_local(fitted, [method.finish_part(j) for j in jobs])
    out = pd.concat([method.recode(fitted, f, None) for f in frames], ignore_index=True)
    return state, out


def paths(state, frame: pd.DataFrame) -> list[tuple]:
    """Each record's top cuts (the cut of each part it passed through, and its side), in order."""
    dims = [d.dim for d in state.dims]
    codes = [d.codes(frame[d.name]) for d in state.dims]
    return rounds_paths(state.rounds, dims, codes, len(frame))


def rounds_paths(rounds, dims, codes, n: int) -> list[tuple]:
    part = np.zeros(n, dtype=np.int64)
    out: list[list] = [[] for _ in range(n)]
    for cuts in rounds:
        new = apply_cuts(cuts, part, codes, dims)
        per = np.array([1 if c is None else c.parts for c in cuts])
        side = new - (np.cumsum(per) - per)[part]  # which child of its part
        for i in range(n):
            if cuts[part[i]] is not None:
                out[i].append((cuts[part[i]], int(side[i])))
        part = new
    return [tuple(p) for p in out]


def one_round_per_pass(state, frame: pd.DataFrame, part_rows: int) -> tuple[list, int]:
    """The procedure before (a reference): each pass counts every part's marginals and decides one round, cutting
    the parts of more than ``part_rows`` records, until no cut is left; then a pass counts the tuples. (its rounds,
    its passes)."""
    dims = [d.dim for d in state.dims]
    codes = [d.codes(frame[d.name]) for d in state.dims]
    part = np.zeros(len(frame), dtype=np.int64)
    rounds, passes = [], 0
    while True:
        passes += 1
        sizes = np.bincount(part)
        marginals = []
        for c in codes:
            key, count = np.unique(np.stack([part, c], axis=1), axis=0, return_counts=True)
            marginals.append((key[:, 0], key[:, 1], count))
        cuts = [c if sizes[i] > part_rows else None for i, c in enumerate(cut_round(dims, marginals, sizes,
                                                                                      state.k))]
        if all(c is None for c in cuts):
            return rounds, passes + 1
        rounds.append(cuts)
        part = apply_cuts(cuts, part, codes, dims)


def grouped(part: np.ndarray, *codes: np.ndarray, count: np.ndarray | None = None) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    for i, key in enumerate(zip(part.tolist(), *(c.tolist() for c in codes), strict=True)):
        out[key] = out.get(key, 0) + (1 if count is None else int(count[i]))
    return out


def as_arrays(table: dict[tuple, int]) -> tuple[np.ndarray, ...]:
    keys = np.array(list(table), dtype=np.int64).reshape(len(table), -1)
    return (*keys.T, np.array(list(table.values()), dtype=np.int64))


@settings(max_examples=15, **SETTINGS)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6), parts=st.integers(1, 4))
def test_cut_marginals_are_the_marginals_counted_after_the_cuts(seed, k, parts):
    rng = np.random.default_rng(seed)
    n = 90
    age = rng.integers(0, int(rng.integers(2, 9)), n).astype(float)
    age[rng.random(n) < 0.1] = np.nan
    series = pd.Series(rng.choice(["A1", "A2", "B1", "B7", "C3"], n), dtype=object)
    h = build_hierarchy(series, None, kind=ColumnKind.nominal, column="code")
    dims = [numeric_dimension(age), hierarchy_dimension(h, h.codes(series)),
            numeric_dimension(rng.integers(0, 4, n).astype(float))]
    part = np.unique(rng.integers(0, parts, n), return_inverse=True)[1].reshape(-1)
    codes = [d.code for d in dims]
    marginals = [as_arrays(grouped(part, c)) for c in codes]
    pairs = {(a, b): as_arrays(grouped(part, codes[a], codes[b])) for a in range(3) for b in range(a + 1, 3)}
    cuts = cut_round(dims, marginals, np.bincount(part), k)
    new = apply_cuts(cuts, part, codes, dims)
    got = cut_marginals(dims, cuts, marginals, pairs)
    for j, (p, c, count) in enumerate(got):
        assert grouped(p, c, count=count) == grouped(new, codes[j])
    without = cut_marginals(dims, cuts, marginals, {})  # no pairs: a cut part's children lack the other dimensions
    cut_dims = {x.dim for x in cuts if x is not None}
    assert all((grouped(*without[j][:2], count=without[j][2]) == grouped(new, codes[j])) == (cut_dims <= {j})
               for j in range(3))


def one_machine(frame: pd.DataFrame, roles, sanitizer) -> pd.DataFrame:
    release = sanitizer.sanitize(frame, roles)
    return release.frame.iloc[np.argsort(release.row_source)].reset_index(drop=True)


@settings(max_examples=8, **SETTINGS)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 8), part_rows=st.sampled_from([12, 25, 50]),
       pair_cells=st.sampled_from([0, 40, 1 << 20]), parts=st.lists(st.integers(0, 120), min_size=1, max_size=3))
def test_fewer_passes_make_the_same_cuts_and_release_as_one_round_per_pass(seed, k, part_rows, pair_cells, parts):
    frame, roles = table(200, seed)
    sanitizer = Mondrian(k=k, mode="strict", hierarchies={"zip": {"type": "prefix", "step": 1}})
    with bounds(part_rows, pair_cells):
        state, got = run(split(frame, parts), roles, sanitizer)
    want = one_machine(frame, roles, sanitizer)
    assert got[want.columns].astype(object).equals(want.astype(object))  # every row, in input order
    before, old_passes = one_round_per_pass(state, frame, part_rows)
    dims, codes = [d.dim for d in state.dims], [d.codes(frame[d.name]) for d in state.dims]
    old, new = rounds_paths(before, dims, codes, len(frame)), paths(state, frame)
    # the same cuts, as far as they go: cutting may stop earlier (a part's distinct tuples fit), never elsewhere
    assert all(o[:len(n)] == n for o, n in zip(old, new, strict=True))
    assert state.passes <= old_passes


def test_the_passes_drop_and_the_release_stays_one_machines():
    frame, roles = table(400, 5)
    sanitizer = Mondrian(k=3, mode="strict", hierarchies={"zip": {"type": "prefix", "step": 1}})
    frames = split(frame, [150, 250])
    want = one_machine(frame, roles, sanitizer)
    seen = {}
    for label, cells in (("pairs", 1 << 20), ("no pairs", 0)):
        with bounds(12, cells):
            state, got = run(frames, roles, sanitizer)
        assert got[want.columns].astype(object).equals(want.astype(object))
        seen[label] = state.passes
    _, old_passes = one_round_per_pass(state, frame, 12)
    print(f"passes: one round per pass {old_passes}, marginals only {seen['no pairs']}, with pairs {seen['pairs']}")
    assert seen["pairs"] < seen["no pairs"] < old_passes
    assert seen["pairs"] <= (old_passes - 2) // 2 + 2  # two rounds a pass, and no pass that cuts nothing


def test_few_distinct_tuples_end_the_cuts_before_the_records_do():
    """Many records over few distinct tuples: the tuples are counted at once (one pass), and the parts of more
    than the bound's tuples cut on them."""
    frame, roles = table(400, 9)
    frame = frame.assign(age=frame["age"] % 3 + 30, hours_per_week=40, zip=frame["zip"].str[:1] + "0000")
    sanitizer = Mondrian(k=4, mode="strict")
    with bounds(60):
        state, got = run(split(frame, [150, 250]), roles, sanitizer)
    want = one_machine(frame, roles, sanitizer)
    assert got[want.columns].astype(object).equals(want.astype(object))
    assert state.passes == 1 and state.largest <= 60 < len(frame)


def test_broken_pairs_are_caught_not_published(monkeypatch):
    """Children's marginals that lose an entry are refused: by ``cut_round`` (they do not add up to the records),
    or by the next pass (the parts' records counted differ from those the marginals gave)."""
    frame, roles = table(300, 2)
    sanitizer = Mondrian(k=3, mode="strict", hierarchies={"zip": {"type": "prefix", "step": 1}})
    real = mondrian_cuts.cut_marginals

    def dropped(dimensions, cuts, marginals, pairs):
        out = real(dimensions, cuts, marginals, pairs)
        return [(p[1:], c[1:], n[1:]) for p, c, n in out]  # one entry lost

    monkeypatch.setattr(mondrian_partitions, "cut_marginals", dropped)
    with bounds(8), pytest.raises((ValueError, InputError), match="do not add up|changed since it was counted"):
        run(split(frame, [100, 200]), roles, sanitizer)
