"""Bin edges found under DP for the differentially private synthesizer (``method.bins.<col>: {lower, upper, count}``,
``method.bin_share``): one-line spec errors, the plan's budget split, the DP quantiles (OpenDP's
``make_private_quantile``) giving strictly increasing edges inside the bounds, the composed (epsilon, delta) equal to
OpenDP's maps and within the budget, and, behind the slow marker, a release through ``ppdp run`` whose guarantee
``ppdp validate --release`` re-derives from the manifest's recorded edges."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.params.dp_synthesizer import DEFAULT_BIN_SHARE, DpBins
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.sanitize.dp_synthesizer import (
    DpSynthesizer,
    Quantiles,
    build,
    build_quantiles,
    composed,
    find_edges,
    guarantee_from_manifest,
    spend,
)
from tests.conftest import base_spec
from tests.test_dp_synthesizer import CATEGORIES, CENSUS, dp_release_spec, roles, run_and_read, small_census

runner = CliRunner()

DP_BINS = {"age": {"lower": 17, "upper": 90, "count": 5, "step": 1}, "hours_per_week": {"lower": 0, "upper": 99,
                                                                                        "count": 4}}


def synthesizer(**overrides) -> DpSynthesizer:
    return DpSynthesizer(**{"epsilon": 1.0, "delta": 0.0, "bins": DP_BINS, "categories": CATEGORIES, **overrides})


def strictly_increasing_inside(edges, lower: float, upper: float) -> bool:
    return edges[0] == lower and edges[-1] == upper and all(b > a for a, b in zip(edges, edges[1:]))


# -- the spec (no data) ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("bins", "extra", "message"), [
    ({"lower": 90, "upper": 17, "count": 4}, {}, "method.bins: bins.age: lower must be below upper"),
    ({"lower": 17, "upper": 90, "count": 0}, {}, "method.bins: bins.age.count: Input should be greater than or "
                                                 "equal to 1"),
    ({"lower": 17, "upper": 90, "count": 4, "step": 1e-6}, {}, "more than 10,000 candidate edges"),
    ({"lower": 17, "upper": 90, "count": 4}, {"bin_share": 0}, "method.bin_share: Input should be greater than 0"),
    ({"lower": 17, "upper": 90, "count": 4}, {"bin_share": 1}, "method.bin_share: Input should be less than 1"),
    ([17, 40, 90], {"bin_share": 0.2}, "bin_share: no column's bins are found under DP"),
])
def test_bad_dp_bins_are_refused_in_one_line_naming_the_setting(tmp_path, bins, extra, message):
    from ppdp.tasks.spec import load_spec

    spec = base_spec(CENSUS, tmp_path / "releases", privacy={"max_epsilon": 2},
                     method={"name": "dp_synthesizer", "epsilon": 1.0, "bins": {"age": bins}, **extra})
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_plan_splits_the_budget_and_keeps_the_grid_inside_the_bounds():
    frame = small_census(50)
    plan = synthesizer(bins={**DP_BINS, "hours_per_week": [0, 30, 40, 99]}).plan(frame, roles(frame))
    age = {c.name: c for c in plan.columns}["age"]
    assert age.found and age.count == 5 and age.edges == () and age.bounds == (17.0, 90.0)
    assert age.candidates == tuple(float(v) for v in range(18, 90))  # step 1, strictly inside the bounds
    assert plan.bins_epsilon == pytest.approx(DEFAULT_BIN_SHARE) and plan.pure
    assert plan.bins_epsilon + plan.mechanism_epsilon < plan.epsilon  # the rest, a hair less (rounding)
    assert plan.mechanism_epsilon == pytest.approx(1 - DEFAULT_BIN_SHARE)
    public = synthesizer(bins={"age": [17, 40, 90], "hours_per_week": [0, 40, 99]}).plan(frame, roles(frame))
    assert public.bins_epsilon == 0.0 and public.mechanism_epsilon == 1.0  # public edges: all of epsilon to MST
    assert len(DpBins(lower=0, upper=1, count=3).candidates()) == 999  # default step: a 1000th of the range
    for bad in ({"age": (17.0, 40.5, 90.0)},  # off the grid
                {"age": (17.0, 50.0, 40.0, 90.0)},  # not increasing
                {"age": (18.0, 40.0, 90.0)},  # not the bound
                {"age": (17.0, 20.0, 30.0, 40.0, 50.0, 60.0, 90.0)},  # more bins than asked for
                {}):  # missing
        with pytest.raises(SpecError, match="bin edges of 'age' found under DP"):
            plan.with_edges(bad)
    assert {c.name: c.edges for c in plan.with_edges({"age": (17.0, 40.0, 90.0)}).columns}["age"] == (17.0, 40.0,
                                                                                                        90.0)


def test_the_dp_quantiles_give_strictly_increasing_edges_inside_the_bounds_and_spend_their_share():
    frame = small_census(300)
    plan = synthesizer(epsilon=2.0, bin_share=0.25).plan(frame, roles(frame))
    quantiles = build_quantiles(plan)
    maps = [float(m.map(1)) for _, m in quantiles.measurements]
    assert [name for name, _ in quantiles.measurements] == ["age", "hours_per_week"]
    assert all(m <= 0.25 for m in maps) and maps[0] == pytest.approx(0.25)  # each column: half of 0.5 (OpenDP's map)
    assert quantiles.epsilon_spent == composed(maps) and quantiles.epsilon_spent <= plan.bins_epsilon
    for _ in range(3):  # fresh noise each time: the properties hold for every draw
        found = find_edges(frame, plan, quantiles)
        assert strictly_increasing_inside(found["age"], 17.0, 90.0) and len(found["age"]) <= 6
        assert strictly_increasing_inside(found["hours_per_week"], 0.0, 99.0) and len(found["hours_per_week"]) <= 5
        assert all(e == int(e) for e in found["age"])  # on the public grid (step 1)
        plan.with_edges(found)  # fits the plan (no SpecError)


def test_equal_or_unsorted_quantiles_are_merged_into_strictly_increasing_edges():
    frame = small_census(30)
    plan = synthesizer(bins={**DP_BINS, "hours_per_week": {"lower": 0, "upper": 99, "count": 1}}).plan(
        frame, roles(frame))
    noisy = Quantiles((("age", lambda values: [50.0, 30.0, 30.0, 50.0, 17.0]),), 0.1)  # as a noisy draw may come
    found = find_edges(frame, plan, noisy)  # post-processing of what the measurement returned
    assert found == {"age": (17.0, 30.0, 50.0, 90.0), "hours_per_week": (0.0, 99.0)}  # count 1: the bounds only
    real = build_quantiles(plan)
    assert [name for name, _ in real.measurements] == ["age"]  # nothing to find (or spend) for a single bin
    empty = find_edges(frame.assign(age=np.nan), plan, real)  # no value at all: the mechanism still answers
    assert strictly_increasing_inside(empty["age"], 17.0, 90.0)


def test_the_budget_split_added_up_and_rounded_up_stays_within_epsilon():
    frame = small_census(20)
    assert composed([0.1, 0.2]) > 0.1 + 0.2 and composed([0.7]) == 0.7  # inexact sums are rounded up
    for epsilon in (0.01, 0.1, 0.3, 1.0, 1 / 3, 2.5, 10.0, 100.0):
        for share in (0.01, 0.1, 1 / 3, 0.5, 0.9, 0.99):
            plan = synthesizer(epsilon=epsilon, bin_share=share).plan(frame, roles(frame))
            # each part's map is at most its budget (OpenDP's search): the worst case is both spent in full
            assert composed([plan.bins_epsilon, plan.mechanism_epsilon]) <= epsilon


@pytest.mark.slow  # two OpenDP MST constructions (noise scales searched) and the import of JAX: about 25 s
def test_the_composed_epsilon_is_opendps_maps_added_and_never_above_the_budget():
    frame = small_census(300)
    plan = synthesizer(epsilon=0.5, bin_share=0.3).plan(frame, roles(frame))
    quantiles = build_quantiles(plan)
    filled = plan.with_edges(find_edges(frame, plan, quantiles))
    spent = spend(filled, quantiles)
    mst = build(filled)  # the synthesizer alone, mapped by OpenDP, with the rest of the budget
    assert mst.epsilon_spent <= filled.mechanism_epsilon < 0.5 * 0.7
    assert spent.epsilon == composed([quantiles.epsilon_spent, mst.epsilon_spent]) <= 0.5
    assert spent.epsilon >= quantiles.epsilon_spent + mst.epsilon_spent  # rounded up, never down
    assert spent.epsilon == pytest.approx(0.5, rel=1e-6) and spent.delta == 0.0 == mst.delta_spent
    assert spent.bins_epsilon == quantiles.epsilon_spent == pytest.approx(0.15)
    params = synthesizer(epsilon=0.5, bin_share=0.3).params().model_dump(mode="json", exclude={"name"})
    numeric = {c: c in DP_BINS for c in frame.columns}
    found = {c.name: list(c.edges) for c in filled.columns if c.found}
    assert guarantee_from_manifest(params, list(frame.columns), roles(frame), numeric, found)[:2] == (spent.epsilon,
                                                                                                      0.0)
    with pytest.raises(SpecError, match="found under DP"):  # a manifest without its edges cannot be re-derived
        guarantee_from_manifest(params, list(frame.columns), roles(frame), numeric, None)
    approximate = DpSynthesizer(epsilon=0.5, delta=1e-7, bins=DP_BINS, categories={"income": ["<=50K", ">50K"]})
    plan = approximate.plan(frame, roles(frame))
    quantiles = build_quantiles(plan)
    spent = spend(plan.with_edges(find_edges(frame, plan, quantiles)), quantiles)
    assert spent.epsilon <= 0.5 and 0 < spent.delta <= 1e-7  # delta is all the synthesizer's (discovery)


# -- a release (slow: OpenDP, a model fit, a flow run) --------------------------------------------------------------
@pytest.mark.slow  # one flow run with one synthesis, then two re-checks: about 60 s on the shared machine
@pytest.mark.usefixtures("prefect_harness")
def test_a_release_with_dp_bins_publishes_inside_the_bounds_and_revalidates(workspace):
    spec = dp_release_spec(workspace, 1.0, bins=DP_BINS, bin_share=0.2)
    folder, manifest, dp = run_and_read(spec, workspace.root)
    assert manifest["method"]["params"]["bins"]["age"] == {"lower": 17.0, "upper": 90.0, "count": 5, "step": 1.0}
    assert dp["bins_epsilon"] == pytest.approx(0.2) and 0 < dp["bins_epsilon_spent"] <= dp["bins_epsilon"]
    assert dp["bins_epsilon_spent"] < dp["epsilon_spent"] <= 1.0 and dp["delta_spent"] <= 1e-7
    assert strictly_increasing_inside(dp["found_edges"]["age"], 17.0, 90.0)
    assert strictly_increasing_inside(dp["found_edges"]["hours_per_week"], 0.0, 99.0)
    published = pd.read_parquet(folder / "data.parquet")
    assert published["age"].dropna().between(17, 90).all() and published["hours_per_week"].dropna().between(0, 99).all()
    check = runner.invoke(app, ["validate", "--release", str(folder)], catch_exceptions=False)
    assert check.exit_code == 0, check.output
    assert "holds by construction" in check.output and "DOES NOT HOLD" not in check.output
    inner = dp["found_edges"]["age"]
    dp["found_edges"]["age"] = [inner[0], 17.5, *inner[1:]]  # an edge off the public grid: not what was composed
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    tampered = runner.invoke(app, ["validate", "--release", str(folder)], catch_exceptions=False)
    assert tampered.exit_code == 3 and "DOES NOT HOLD" in tampered.output
