"""Merges off the driver (issue 32): a partitioned release's count tables merged as a tree of tasks
(:func:`ppdp.tasks.distributed.tree.merge_tree`), and the steps that read the merged counts run beside them.

Fast (no Prefect, no cluster): the tree's result equals the flat merge of every partition in order, exactly (values,
first-appearance order, counts, dtypes), for pass 1's counts, generalization's pass table and Mondrian's marginals,
for any fan-in and partition count (hypothesis); the tree merges consecutive runs of at most ``fanin``. Slow: a
partitioned release on a 2-worker LocalCluster runs the merges and every step that reads the merged counts on the
workers (none in the flow's process), and the flow's process receives none of the count tables.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.api import roles_for
from ppdp.schemas.reports import IngestReport
from ppdp.tasks.core.counts import Counts, ValueCounts, row_counts, summed_counts
from ppdp.tasks.distributed import inputs, tree
from ppdp.tasks.distributed import plan as folder_plan
from ppdp.tasks.sanitize import mondrian_partitions
from ppdp.tasks.sanitize.generalization import Generalization
from ppdp.tasks.sanitize.mondrian import Mondrian
from ppdp.tasks.steps import PLAIN, Runner, Step

from .conftest import census
from .test_distributed_release import ORDER, counted, ppdp, release_folder, spec_for, split, write_parts

FANINS = st.integers(min_value=2, max_value=9)


def frames(draw, n: int) -> list[pd.DataFrame]:
    """``n`` partitions of a small table (few distinct values, so partitions share rows; empty ones allowed)."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rows = int(rng.choice([0, 1, 5, 30]))
        a = rng.integers(0, 4, size=rows)
        out.append(pd.DataFrame({
            "a": a.astype(np.int32), "b": rng.integers(0, 3, size=rows).astype(np.int32),
            "c": pd.Series(np.where(rng.random(rows) < 0.2, None, rng.choice(["x", "y", "z"], size=rows)),
                           dtype=object),
            "label": pd.Series(rng.choice(["lo", "hi"], size=rows), dtype=object)}))
    return out


def ingest_of(i: int, frame: pd.DataFrame) -> inputs.PartitionIngest:
    """Partition ``i``'s pass 1 as the ingest task returns it (counts of c and label; c by class label)."""
    counts = {c: ValueCounts.of(frame[c]) for c in ("c", "label")}
    by_class = {"c": row_counts(pd.DataFrame({"class": frame["label"].astype(object),
                                              "value": frame["c"].astype(object)}))}
    report = IngestReport(path=f"p{i}", format="parquet", rows=len(frame), columns=list(frame.columns),
                          suite="s", expectation_count=0, expectations=[])
    return inputs.PartitionIngest(index=i, file=f"p{i}", sha256="0" * 64, report=report, counts=counts,
                                  class_counts=by_class)


def merged(leaves: list[Any], step: Step[Any], *args: Any, fanin: int, runner: Runner = PLAIN) -> Any:
    """The tree's result over ``leaves`` (each given as a submitted step, as the plan gives them)."""
    return tree.merge_tree(runner, step, [runner.submit(Step("leaf", lambda v: v), leaf) for leaf in leaves],
                           *args, fanin=fanin).result()


def same_counts(a: Counts, b: Counts) -> None:
    assert list(a.columns) == list(b.columns) and a.rows == b.rows
    for c in a.columns:
        assert a.columns[c].values.equals(b.columns[c].values)  # first appearance, missing included (NaN equal)
        assert a.columns[c].values.dtype == b.columns[c].values.dtype
        np.testing.assert_array_equal(a.columns[c].counts, b.columns[c].counts)
    assert list(a.by_class) == list(b.by_class)
    for c in a.by_class:
        pd.testing.assert_frame_equal(a.by_class[c], b.by_class[c])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(1, 20), fanin=FANINS)
def test_pass_one_tree_equals_the_flat_merge(data, n, fanin):
    parts = [ingest_of(i, f) for i, f in enumerate(frames(data.draw, n))]
    same_counts(merged(parts, folder_plan.MERGE_COUNTS, fanin=fanin), inputs.merge_counts(parts))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(1, 20), fanin=FANINS)
def test_generalization_pass_tree_equals_the_flat_merge(data, n, fanin):
    method = Generalization.on_partitions
    tables = [row_counts(f[["a", "b", "c"]]) for f in frames(data.draw, n)]
    flat = method.merge(tables)
    pd.testing.assert_frame_equal(merged(tables, folder_plan.MERGE_PASS, method, fanin=fanin), flat)
    # and the flat merge is the count table of the concatenated rows (first appearance, counts summed)
    pd.testing.assert_frame_equal(flat.reset_index(drop=True), summed_counts(tables).reset_index(drop=True))


def assert_same(a: Any, b: Any) -> None:
    """Equal values, types, dtypes and order, nested (tuples, lists, dicts, arrays, frames)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    else:
        assert a == b


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), sizes=st.lists(st.integers(0, 40), min_size=1, max_size=10).filter(
    lambda s: sum(s) >= 3), fanin=FANINS)
def test_mondrian_passes_tree_equals_the_flat_merge(seed, sizes, fanin):
    """Every pass of Mondrian's (top cuts' marginals, then the parts' tuples): the tree's merge is the flat one."""
    frame = census(sum(sizes), seed)[["age", "sex", "zip", "education", "income"]]
    roles = roles_for(frame, quasi_identifiers=["age", "sex", "zip", "education"], class_column="income",
                      orders={"education": ORDER})
    parts = split(frame, sizes)
    method = Mondrian.on_partitions
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mondrian_partitions, "MONDRIAN_PART_ROWS", 20)  # top cuts until a part holds 20 records
        state = method.start(None, Mondrian(k=3, mode="strict"), roles, counted(parts, roles))
        passes = 0
        while (job := method.next_pass(state)) is not None and passes < 8:
            tables = [method.count(job, f) for f in parts]
            flat = method.merge(tables)
            assert_same(merged(tables, folder_plan.MERGE_PASS, method, fanin=fanin), flat)
            state, passes = method.absorb(state, flat), passes + 1
    assert passes >= 1


class Recording(Runner):
    """The plain runner, recording each submitted merge's inputs."""

    def __init__(self) -> None:
        self.groups: list[list[Any]] = []

    def submit(self, step, *args, **kwargs):
        if step.name == "merge-pass":
            self.groups.append(args[-1])
        return super().submit(step, *args, **kwargs)


@given(n=st.integers(1, 70), fanin=FANINS)
def test_the_tree_merges_consecutive_runs_of_at_most_fanin(n, fanin):
    runner = Recording()
    leaves = [runner.submit(Step("leaf", lambda v: v), [i]) for i in range(n)]
    concat = Step("merge-pass", lambda _m, parts: [v for p in parts for v in p])
    assert tree.merge_tree(runner, concat, leaves, None, fanin=fanin).result() == list(range(n))
    assert runner.groups and all(1 <= len(g) <= fanin for g in runner.groups)
    expected, width = 0, n
    while True:  # each level merges groups of fanin of the level below, down to one (at least one merge)
        width = -(-width // fanin)
        expected += width
        if width == 1:
            break
    assert len(runner.groups) == expected


def test_slim_ingests_keep_the_class_counts_only():
    parts = [ingest_of(i, f) for i, f in enumerate(frames(lambda s: 3, 3))]
    slim = tree.slim_ingests(list(reversed(parts)), "label")
    assert [p.index for p in slim] == [0, 1, 2]
    assert all(list(p.counts) == ["label"] and p.class_counts == {} for p in slim)
    assert all(s.report == p.report and s.sha256 == p.sha256 for s, p in zip(slim, parts, strict=True))


# -- on a 2-worker LocalCluster ------------------------------------------------------------------------------------
ON_COUNTS = {"merge-counts", "merge-pass", "start-method", "next-pass", "absorb-pass", "method-domains",
             "search-lattice", "fit", "local-jobs", "finish-part", "finish-local", "fit-summary", "allot-job",
             "merge-rare-categories"}
"""The steps that read the merged counts (or the fit made of them): each runs on a worker."""


def count_tables(value: Any, seen: set[int] | None = None) -> list[str]:
    """What in ``value`` is a count table or made of one: merged counts, a method's state, a fit's model, a table
    with a count column ``n``, or value counts beyond the class column's."""
    seen = seen if seen is not None else set()
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, Counts) or type(value).__name__ in ("GenState", "MondrianState", "GenModel"):
        return [type(value).__name__]
    if isinstance(value, pd.DataFrame):
        return ["count table"] if "n" in value.columns else []
    if type(value).__name__ == "Fitted" and value.model is not None:
        return ["fitted model"]
    if isinstance(value, inputs.PartitionIngest) and (len(value.counts) > 1 or value.class_counts):
        return ["pass 1 counts"]
    if isinstance(value, list | tuple):
        return [f for v in value for f in count_tables(v, seen)]
    if isinstance(value, dict):
        return [f for v in value.values() for f in count_tables(v, seen)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [f for fld in dataclasses.fields(value) for f in count_tables(getattr(value, fld.name), seen)]
    return []


@pytest.mark.slow  # a 2-worker LocalCluster and a Prefect flow (about 20-30 s each here)
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("method", ["generalization", "mondrian"])
def test_the_merges_run_on_the_workers_and_the_driver_gets_small_results(workspace, monkeypatch, method):
    from ppdp.flows import steps as flow_steps


    received: list[tuple[str, int]] = []
    original = flow_steps._Future.result

    def result(self):
        value = original(self)
        received.append((type(value).__name__, len(count_tables(value))))
        for found in count_tables(value):
            received.append((found, -1))
        return value

    monkeypatch.setattr(flow_steps._Future, "result", result)
    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    source = write_parts(frame, workspace.dir / "parts", [70] * 9)  # 9 partitions: two levels of fan-in 8
    spec = spec_for(workspace, "parts", source, **({} if method == "generalization" else {
        "name": "mondrian", "k": 8, "mode": "strict", "hierarchies": {"zip": {"type": "prefix", "step": 1}}}))
    since = time.perf_counter()
    done = ppdp("run", spec, "--runner", "dask")
    assert done.exit_code == 0, done.output
    assert release_folder(workspace, "parts").is_dir()
    in_driver = {name for name, _, _ in flow_steps.step_breakdown(since)}
    assert "ingest-report" in in_driver  # the driver's own steps are recorded here
    assert not in_driver & ON_COUNTS, sorted(in_driver & ON_COUNTS)
    assert received and not [r for r in received if r[1] < 0], [r for r in received if r[1] < 0]
    assert {"FitSummary", "LatticeSearch" if method == "generalization" else "int"} <= {r[0] for r in received}


def test_the_folder_steps_that_read_counts_are_named():
    """Every step named in :data:`ON_COUNTS` is one of the plan's (a renamed step would make the slow test pass
    without looking at it)."""
    names = {s.name for s in vars(folder_plan).values() if isinstance(s, Step)}
    assert ON_COUNTS <= names, sorted(ON_COUNTS - names)
    assert tree.merge_pass is folder_plan.MERGE_PASS.fn
