"""``ppdp compare`` (issue 23): every applicable method run on the spec's data, judged like a release, one
recommended by the documented rule; nothing published, nothing but aggregates written, and the written spec publishes
what compare measured."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.compare import CompareRow
from ppdp.tasks import compare
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.sanitize.registry import REGISTRY, method_class
from ppdp.tasks.spec import load_spec
from tests.conftest import RESULT_STORAGE, SENTINEL_SSN, base_spec, census

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
runner = CliRunner()


def ppdp_cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def documented(rows: list[CompareRow]) -> str | None:
    """The README's rule, written again here: policy, floor and utility gates hold, the policy judges a measured
    figure and the classifier tells two classes apart; then the highest accuracy ratio to 2 decimals, the lowest
    risk to 3 decimals (linkage risk for record-by-record methods, unknown when fixed by construction; average risk
    otherwise), the name."""
    ok = [r for r in rows if r.policy_holds and r.floor_holds and r.utility_holds and r.signal
          and r.status == "passes" and r.policy_measured is not False]
    if not ok:
        return None

    def risk(r: CompareRow) -> float:
        value = r.linkage_risk if r.identity_by == "records" else r.average_risk
        return math.inf if value is None else round(value, 3)

    return min(ok, key=lambda r: (-round(r.accuracy_ratio, 2), risk(r), r.method)).method


def spec_file(workspace, name: str = "spec.yaml", **overrides) -> Path:
    return workspace.spec(name, **overrides)


# -- the policy each method is held to -------------------------------------------------------------------------
def test_each_method_keeps_the_specs_whole_policy_judging_only_its_units_gates(workspace):
    spec = load_spec(spec_file(workspace, privacy={"k": 10, "max_linkage_risk": 0.9,
                                                   "accept_below_floor": {"reason": "a comparison study only",
                                                                          "approved_by": "the data owner"}}))
    # MDAV (classes): k judged; max_linkage_risk kept as given, listed as not applying
    assert compare.method_policy(spec, method_class("mdav")) == (
        {"k": 10, "max_linkage_risk": 0.9, "not_applicable": ["max_linkage_risk"], **_non_gates(spec)}, "spec")
    gates, source = compare.method_policy(spec, method_class("noise"))  # records: k kept, not judged
    assert source == "spec" and gates["max_linkage_risk"] == 0.9 and gates["k"] == 10
    assert gates["not_applicable"] == ["k"]
    noise, _ = compare.method_spec(spec, "noise")
    assert noise.privacy.k == 10 and noise.rare_k == 10  # the user's rare-value rule, not 2
    for name in REGISTRY:  # the acceptance to publish below the floor is never carried
        assert "accept_below_floor" not in compare.method_policy(spec, method_class(name))[0]

    only_records = load_spec(spec_file(workspace, "records.yaml", privacy={"max_linkage_risk": 0.9},
                                       method={"name": "noise", "scale": 0.5}))
    gates, source = compare.method_policy(only_records, method_class("mdav"))  # no gate of the spec applies
    assert source == "floor" and gates["k"] == only_records.rare_k == 2 and gates["max_average_risk"] == 0.09
    assert gates["max_linkage_risk"] == 0.9 and gates["not_applicable"] == ["max_linkage_risk"]
    gates, source = compare.method_policy(only_records, method_class("sap"))  # attribute: the floor's gain
    assert source == "floor" and gates["max_disclosure_gain"] == 0.05 and "k" not in gates
    only_classes = load_spec(spec_file(workspace, "classes.yaml", privacy={"k": 10}))
    gates, source = compare.method_policy(only_classes, method_class("noise"))
    assert source == "floor" and gates["k"] == 10 and gates["not_applicable"] == ["k"]
    assert 0 < gates["max_linkage_risk"] < 1  # the floor's limit, as a gate


def _non_gates(spec) -> dict:
    return {k: v for k, v in spec.privacy.model_dump(mode="json").items() if k in compare._NON_GATES}


def test_the_specs_own_method_keeps_its_section_and_the_others_run_with_their_defaults(workspace):
    spec = load_spec(spec_file(workspace, privacy={"k": 10}, tuning={"strategy": "fixed", "repeats": 2}))
    own, _ = compare.method_spec(spec, "condensation")
    assert own.method == spec.method and own.tuning == spec.tuning  # k=20 fixed, as the spec says
    other, _ = compare.method_spec(spec, "mdav")
    assert other.method.k is None and other.tuning.strategy == "bisect" and other.tuning.repeats == 2
    generalization, _ = compare.method_spec(spec, "generalization")
    assert generalization.tuning.strategy == "lattice"
    sampled, _ = compare.method_spec(spec, "sample_generation")
    assert sampled.tuning.strategy == "fixed"  # nothing to tune
    with pytest.raises(SpecError, match="not run: dp_synthesizer is differentially private"):
        compare.method_spec(spec, "dp_synthesizer")  # no spec to run it with: compare never runs it
    [(name, method, _, row)] = compare.plan(spec, ["dp_synthesizer"])
    assert method is None and row.status == "not_run" and "budget" in row.reason and "\n" not in row.reason


# -- the recommendation rule -----------------------------------------------------------------------------------
def _row(name: str, status: str = "passes", ratio: float = 0.9, risk: float = 0.05, floor: bool = True,
         policy: bool = True, signal: bool = True, records: bool = False) -> CompareRow:
    return CompareRow(method=name, status=status, accuracy_ratio=ratio, policy_holds=policy, floor_holds=floor,
                      utility_holds=True, signal=signal, records=100, identity_by="records" if records else "classes",
                      average_risk=None if records else risk, linkage_risk=risk if records else None, tuned="k=12")


def test_the_rule_ranks_by_accuracy_ratio_then_risk_then_name():
    rows = [_row("b", ratio=0.951, risk=0.02), _row("a", ratio=0.949, risk=0.01), _row("c", ratio=0.99, signal=False),
            _row("d", status="refused", ratio=0.99, risk=0.001, floor=False), _row("e", ratio=0.93, records=True,
                                                                                  risk=0.2)]
    ranked = compare.rank(rows)
    best, line = compare.recommendation_line(ranked)
    assert best == "a" == documented(rows)  # 0.949 and 0.951 are both 0.95: the lower average risk decides
    assert line == "a: accuracy ratio 0.95 at k=12, average risk 0.01; b keeps 0.95"
    assert [r.method for r in ranked] == ["a", "b", "e", "c", "d"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["passes", "refused"]), st.floats(0.5, 1.2), st.floats(0, 1),
                          st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=8))
def test_a_method_below_the_floor_is_never_recommended(cases):
    rows = []
    for i, (status, ratio, risk, floor, records, signal) in enumerate(cases):
        if not floor:
            status = "refused"  # compare_method refuses every release below the floor
        rows.append(_row(f"m{i}", status, ratio, risk, floor=floor, records=records, signal=signal,
                         policy=status == "passes" or not floor))
    result = compare.rank(rows)
    best, _ = compare.recommendation_line(result)
    assert best == documented(rows)
    if best is not None:
        assert next(r for r in rows if r.method == best).floor_holds


# -- cheap refusals (issue 33) ----------------------------------------------------------------------------------
def test_a_method_failing_at_its_most_private_value_is_refused_before_tuning_as_tuning_would(workspace, monkeypatch):
    spec = load_spec(spec_file(workspace))
    early = compare.compare_in_process(spec, ["noise"]).row("noise")
    assert early.status == "refused" and early.evaluations == 0
    assert early.reason.startswith("refused before tuning: at scale=") and "\n" not in early.reason
    assert early.tuning_rule.startswith("not tuned: scale=")
    assert early.policy_holds is False or early.floor_holds is False  # its release really fails, measured
    # tuned as before (no probe): refused too, after its evaluations, at a less private value
    monkeypatch.setattr(compare, "safest_attempt", lambda *args, **kwargs: None)
    tuned = compare.compare_in_process(spec, ["noise"]).row("noise")
    assert tuned.status == "refused" and tuned.evaluations > 0
    assert tuned.spec["method"]["scale"] <= early.spec["method"]["scale"]


def test_a_method_passing_at_its_most_private_value_is_tuned_and_its_row_is_unchanged(workspace, monkeypatch):
    spec = load_spec(spec_file(workspace))
    probed: list[object] = []
    real = compare.safest_attempt

    def spy(*args, **kwargs):
        probed.append(real(*args, **kwargs))
        return probed[-1]

    monkeypatch.setattr(compare, "safest_attempt", spy)
    with_probe = compare.compare_in_process(spec, ["mdav"]).row("mdav")
    assert probed == [None] and with_probe.evaluations > 1  # probed, passed, then tuned
    monkeypatch.setattr(compare, "safest_attempt", lambda *args, **kwargs: None)
    without = compare.compare_in_process(spec, ["mdav"]).row("mdav")
    assert with_probe.model_dump(exclude={"seconds"}) == without.model_dump(exclude={"seconds"})


# -- on real data ----------------------------------------------------------------------------------------------
@pytest.mark.slow  # about 7 s: make test stays under 4 minutes (.ci/run runs it)
def test_the_most_accurate_method_is_not_recommended_when_it_is_below_the_floor(workspace):
    # the spec's own MDAV, tuned by paper 000's rule as written (tuning.choice paper; the default non_dominated rule
    # moves to k = 27, which k = 10 is dominated by), keeps k = 10: average risk 0.1, above the floor's 0.09
    spec = load_spec(spec_file(workspace, privacy={"k": 10}, method={"name": "mdav"},
                               tuning={"strategy": "bisect", "choice": "paper"},
                               utility__rank_by="accuracy_ratio"))  # the rule documented() writes (issue 35)
    # Two candidates that can pass: which of them does depends on 1-NN accuracies on 60 held-out rows, whose ties
    # fall differently with another machine's floating point (condensation passed on one machine, stopped at k = 10
    # below the floor on another, where Mondrian passed)
    result = compare.compare_in_process(spec, ["condensation", "mdav", "mondrian"])
    mdav = result.row("mdav")
    assert mdav.floor_holds is False and mdav.status == "refused"
    assert mdav.reason.startswith("safety floor failed: average risk") and "\n" not in mdav.reason
    assert result.recommended in ("condensation", "mondrian") and result.recommended == documented(result.rows)
    chosen = result.row(result.recommended)
    assert chosen.status == "passes" and chosen.floor_holds
    assert mdav.accuracy_ratio > chosen.accuracy_ratio  # the more accurate method is not the one recommended
    assert result.recommendation.startswith(f"{chosen.method}: accuracy ratio {chosen.accuracy_ratio:.2f} at k=")


def test_a_table_without_numeric_attributes_lists_the_numeric_methods_as_not_applicable(tmp_path):
    frame = census().drop(columns=["age", "hours_per_week"])
    frame["zip"] = "Z" + frame["zip"].astype(str)
    frame.to_csv(tmp_path / "categories.csv", index=False)
    raw = base_spec(tmp_path / "categories.csv", tmp_path / "releases", privacy={"k": 10})
    raw["columns"] = {"person_id": "identifier", "income": "class", "education": "quasi_identifier"}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = compare.compare_in_process(load_spec(tmp_path / "spec.yaml"), ["mdav", "noise", "svd", "uma"])
    for name in ("noise", "svd", "uma"):
        row = result.row(name)
        assert row.status == "not_applicable", name
        assert "numeric" in row.reason and row.reason.startswith(f"{name}: ") and "\n" not in row.reason
        assert row.accuracy_ratio is None and name != result.recommended
    assert result.row("mdav").status in ("passes", "refused") and result.row("mdav").records is not None


@pytest.mark.slow  # a whole release (seconds): .ci/run runs it; make test stays under 4 minutes
def test_the_recommendation_moves_as_documented_when_the_policy_tightens(workspace):
    # min_dcr applies to record-by-record releases, not to classes: tightening it refuses sample generation (whose
    # nearest-record distance is about 1.3) and leaves MDAV's row as it was. (Both reach the same accuracy ratio here:
    # before issue 30, sample generation's linkage risk, 0 by construction, broke that tie in its favour.)
    def run(name, privacy):
        spec = load_spec(spec_file(workspace, name, privacy=privacy, tuning={"strategy": "bisect"},
                                   method={"name": "condensation", "variant": "class_wise"},
                                   utility={"classifier": "logistic_regression", "test_fraction": 0.1,
                                            "min_accuracy_ratio": 0.5, "rank_by": "accuracy_ratio"}))
        return compare.compare_in_process(spec, ["mdav", "sample_generation"])

    loose, tight = run("loose.yaml", {"k": 10, "min_dcr": 0.3}), run("tight.yaml", {"k": 10, "min_dcr": 1.5})
    assert loose.row("sample_generation").eligible and loose.recommended == documented(loose.rows)
    refused = tight.row("sample_generation")
    assert refused.status == "refused" and refused.reason.startswith("privacy gate failed: min_dcr")
    assert "min_dcr >= 1.5" in refused.policy and refused.policy_holds is False
    assert tight.recommended == "mdav" == documented(tight.rows)
    assert tight.row("mdav").model_dump(exclude={"seconds"}) == loose.row("mdav").model_dump(exclude={"seconds"})
    assert tight.row("mdav").not_applicable == ["min_dcr"]  # kept, not judged: MDAV publishes classes

    again = run("loose.yaml", {"k": 10, "min_dcr": 0.3})  # deterministic: the same spec, data and seed, the same table
    assert compare.comparable(again) == compare.comparable(loose)


def test_a_generalization_node_is_written_back_with_the_column_it_promoted(workspace):
    # generalization publishes hours_per_week beside its quasi-identifiers, which splits the classes: compare, as
    # ppdp run does, makes it a quasi-identifier and searches again; the node then names it, so the written spec
    # must declare it (ppdp run's first attempt would not know it yet)
    spec = load_spec(spec_file(workspace, privacy={"k": 10}))
    row = compare.compare_in_process(spec, ["generalization"]).row("generalization")
    assert row.status == "passes" and row.promoted == ["hours_per_week"]
    written = compare._validate(row.spec)
    assert written.tuning.strategy == "fixed" and "hours_per_week" in written.method.levels
    assert written.declared()["hours_per_week"].role.value == "quasi_identifier"
    assert row.tuned == "levels " + ", ".join(f"{c}={v}" for c, v in written.method.levels.items())


# -- the command -------------------------------------------------------------------------------------------------
@pytest.mark.slow  # a whole release (seconds): .ci/run runs it; make test stays under 4 minutes
def test_compare_publishes_nothing_writes_aggregates_and_its_spec_publishes_what_it_measured(
        prefect_harness, workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("PPDP_SERIES_KEY", "s" * 40)  # ppdp run's row order is compare's: the same utility
    spec = spec_file(workspace, privacy={"k": 10}, method={"name": "mdav"}, tuning={"strategy": "bisect", "max": 40},
                     utility={"classifier": "naive_bayes", "test_fraction": 0.1, "min_accuracy_ratio": 0.5})
    out, written = tmp_path / "comparison", tmp_path / "recommended.yaml"
    result = ppdp_cli("compare", spec, "--methods", "mdav,noise", "--out", out, "--write-spec", written)
    assert result.exit_code == 0, result.output
    assert workspace.under_root() == []  # nothing published, no audit entry
    assert sorted(p.name for p in out.iterdir()) == ["compare.html", "compare.json"]
    assert not RESULT_STORAGE.exists() or not any(RESULT_STORAGE.rglob("*"))
    table = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    rows = {r["method"]: r for r in table["rows"]}
    assert table["recommended"] == "mdav" and rows["noise"]["status"] == "refused" and "spec" not in rows["mdav"]
    assert f"recommended   {table['recommendation']}" in result.output
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "default-src 'none'" in page and "<script" not in page
    assert "://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing to load
    assert "safety floor: average risk" in page and "Pareto frontier" in page
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:  # the table as a Prefect artifact keyed by the dataset
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
            any_=["ppdp-census-compare"])))
    artifact = max(artifacts, key=lambda a: a.created)
    assert artifact.type == "table" and table["recommendation"] in artifact.description
    raw = census()
    values = [SENTINEL_SSN, *raw["name"].head(20), *raw["person_id"].head(20)]
    for text in (page, (out / "compare.json").read_text(encoding="utf-8"), written.read_text(encoding="utf-8"),
                 json.dumps(artifact.data)):
        assert not any(v in text for v in values)
    cells = {r["method"]: r for r in json.loads(artifact.data)}
    assert set(cells) == {"mdav", "noise"}
    reason = cells["noise"]["reason"]  # markdown-escaped: Prefect renders each text cell as markdown
    assert "max\\_linkage\\_risk" in reason and "<" not in reason and "(floor &lt;= " in reason

    recommended = load_spec(written)
    assert recommended.tuning.strategy == "fixed" and f"k={recommended.method.k}" == rows["mdav"]["tuned"]
    published = ppdp_cli("run", written)
    assert published.exit_code == 0, published.output
    assert f"utility       accuracy {rows['mdav']['accuracy']:.4f}" in published.output
    folder = next(p for p in (workspace.root / "census").iterdir() if p.is_dir())
    checked = ppdp_cli("validate", "--release", folder, "--original", workspace.data)
    assert checked.exit_code == 0, checked.output


def test_compare_refuses_a_bad_spec_or_an_unknown_method_in_one_line(workspace, tmp_path):
    spec = spec_file(workspace)
    result = ppdp_cli("compare", spec, "--methods", "mdav,no_such_method", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "unknown method 'no_such_method'" in result.output
    result = ppdp_cli("compare", spec, "--out", workspace.root / "inside")
    assert result.exit_code == 2 and "under the publish root" in result.output
    assert not (tmp_path / "x").exists() and workspace.under_root() == []


# -- slower: every method, the Dask runner ----------------------------------------------------------------------
@pytest.mark.slow
def test_a_dask_run_gives_the_thread_runs_table(prefect_harness, workspace):
    import ppdp

    spec = spec_file(workspace, privacy={"k": 10}, method={"name": "mdav"}, tuning={"strategy": "bisect", "max": 40})
    threads = ppdp.compare(spec, methods=["mdav", "noise", "sample_generation"])
    dask = ppdp.compare(spec, methods=["mdav", "noise", "sample_generation"], runner="dask")
    a, b = compare.comparable(threads), compare.comparable(dask)
    differing = [(ra["method"], key, ra[key], rb.get(key)) for ra, rb in zip(a["rows"], b["rows"])
                 for key in ra if ra[key] != rb.get(key)]
    assert a == b, differing


@pytest.mark.slow
def test_a_written_generalization_node_publishes_what_compare_measured(prefect_harness, workspace, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("PPDP_SERIES_KEY", "s" * 40)
    spec = spec_file(workspace, privacy={"k": 10})
    written = tmp_path / "generalization.yaml"
    result = ppdp_cli("compare", spec, "--methods", "generalization", "--out", tmp_path / "out", "--write-spec",
                      written)
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "out" / "compare.json").read_text(encoding="utf-8"))["rows"][0]
    published = ppdp_cli("run", written)
    assert published.exit_code == 0, published.output
    assert f"utility       accuracy {row['accuracy']:.4f}" in published.output
    folder = next(p for p in (workspace.root / "census").iterdir() if p.is_dir())
    assert ppdp_cli("validate", "--release", folder, "--original", workspace.data).exit_code == 0


@pytest.mark.slow
def test_the_census_demo_lists_every_method_and_its_recommendation_publishes(prefect_harness, tmp_path,
                                                                             monkeypatch):
    import ppdp

    monkeypatch.setenv("PPDP_SERIES_KEY", "s" * 40)
    root = tmp_path / "releases"
    written = tmp_path / "recommended.yaml"
    result = ppdp.compare(EXAMPLES / "census_demo.yaml", overrides=[f"publish.root={root}",
                                                                    "utility.rank_by=accuracy_ratio"],
                          out=tmp_path / "out", write_spec=written)  # the rule documented() writes (issue 35)
    assert sorted(r.method for r in result.rows) == sorted(REGISTRY)
    assert all(r.reason for r in result.rows if r.status != "passes")
    assert result.recommended == documented(result.rows) is not None
    assert not root.exists()
    dp = result.row("dp_synthesizer")
    assert dp.status == "not_run" and dp.accuracy_ratio is None  # never run: a run would spend budget uncounted
    kept = yaml.safe_load(written.read_text(encoding="utf-8"))["privacy"]
    assert kept["k"] == 20 and kept["max_linkage_risk"] == 0.95  # the demo's policy, as given
    published = ppdp_cli("run", written)
    assert published.exit_code == 0, published.output
    folder = next(p for p in (root / "census_demo").iterdir() if p.is_dir())
    frame = pd.read_parquet(folder / "data.parquet")
    assert len(frame) == result.row(result.recommended).records
    checked = ppdp_cli("validate", "--release", folder, "--original", EXAMPLES / "data" / "census_demo.csv")
    assert checked.exit_code == 0, checked.output


@pytest.mark.slow  # a release and a comparison (about 10 s); .ci/run runs it
def test_the_default_folder_is_beside_the_releases_and_audit_verify_accepts_only_its_two_files(
        prefect_harness, workspace, tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # nothing may land in the folder the command runs from
    spec = spec_file(workspace, privacy={"k": 10}, method={"name": "mdav", "k": 12})
    assert ppdp_cli("run", spec).exit_code == 0  # a release and its audit trail beside the comparison
    result = ppdp_cli("compare", spec, "--methods", "mdav")
    assert result.exit_code == 0, result.output
    assert list(cwd.iterdir()) == []
    [run] = list((workspace.root / "census" / "compare").iterdir())
    assert sorted(p.name for p in run.iterdir()) == ["compare.html", "compare.json"]
    assert f"report        {run / 'compare.html'}" in result.output
    assert ppdp_cli("audit", "verify", "--root", workspace.root).exit_code == 0
    (run / "data.csv").write_text("x\n", encoding="utf-8")  # anything else there is a finding
    verify = ppdp_cli("audit", "verify", "--root", workspace.root)
    assert verify.exit_code == 1 and "census/compare/" in verify.output and "data.csv" in verify.output
