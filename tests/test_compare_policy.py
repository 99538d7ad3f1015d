"""``ppdp compare`` and the privacy policy (issue 30, items 4 and 6): a differentially private method is never run
outside ``ppdp run`` (nothing derived from its mechanism on the input's rows is written or printed), the written
spec carries the user's policy as given (the gates that do not apply to the method's unit kept, listed and said
why), and a figure fixed by construction never decides the recommendation."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.privacy import GATE_UNITS, gates_set
from ppdp.tasks import compare
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.sanitize.dp_synthesizer import DpSynthesizer
from ppdp.tasks.sanitize.registry import method_class
from ppdp.tasks.spec import load_spec
from tests.conftest import census

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
runner = CliRunner()


def ppdp_cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def mechanism_calls(monkeypatch) -> list[str]:
    """Every run of the DP synthesizer's mechanism on rows (its ``_sanitize``: the only place the measurement meets
    data) is recorded and fails."""
    calls: list[str] = []

    def no_mechanism(self, frame, roles, rng):
        calls.append(f"{len(frame)} rows")
        raise AssertionError("the DP mechanism ran on the input's rows")

    monkeypatch.setattr(DpSynthesizer, "_sanitize", no_mechanism)
    return calls


def dp_spec(workspace, name: str = "dp.yaml", **over) -> Path:
    """The DP demo's method on the census test table, epsilon 0.5 a release against a budget of 1."""
    demo = yaml.safe_load((EXAMPLES / "dp_demo.yaml").read_text(encoding="utf-8"))
    method = {**demo["method"], "epsilon": 0.5}
    columns = {**demo["columns"], "ssn": "identifier"}
    privacy = {"max_epsilon": 1.0, "budget": {"epsilon": 1.0}}
    return workspace.spec(name, method=method, columns=columns, privacy=privacy, utility={
        "classifier": "naive_bayes", "test_fraction": 0.1, "min_accuracy_ratio": 0.3}, **over)


FIGURES = ("records", "records_alone", "smallest_class", "average_risk", "exact_copies", "linkage_risk",
           "disclosure_gain", "epsilon", "accuracy", "accuracy_original", "accuracy_ratio", "accuracy_constant",
           "mean_shift", "correlation_loss")


def numbers_in(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", text)


# -- item 4: no DP mechanism runs outside ppdp run ---------------------------------------------------------------
def test_compare_never_runs_a_dp_method_and_its_row_says_why(workspace, mechanism_calls):
    spec = load_spec(dp_spec(workspace))
    result = compare.compare_in_process(spec, ["dp_synthesizer"])
    row = result.row("dp_synthesizer")
    assert mechanism_calls == []
    assert row.status == "not_run" and result.recommended is None
    assert "privacy budget" in row.reason and "never counts" in row.reason and "ppdp run charges" in row.reason
    assert not numbers_in(row.reason) and "\n" not in row.reason
    assert all(getattr(row, f) is None for f in FIGURES) and row.evaluations == 0 and row.spec is None
    # called directly with the spec's own DP method, the row function touches no row either
    direct = compare.compare_method(spec, census(), None)  # roles never read: it returns before any row is
    assert direct.status == "not_run" and mechanism_calls == []


def test_no_tuning_path_runs_a_dp_mechanism(workspace, mechanism_calls):
    from ppdp.api import roles_for
    from ppdp.schemas.spec import TuningSpec
    from ppdp.tasks import tune

    frame = census().drop(columns=["ssn", "name", "person_id"])
    roles = roles_for(frame, quasi_identifiers=["age", "sex", "zip"], class_column="income")
    synth = DpSynthesizer(epsilon=1.0, bins={"age": [17, 40, 90], "hours_per_week": [0, 40, 99]})
    with pytest.raises(SpecError, match="never tuned on the data"):
        tune.evaluate_value(synth, "epsilon", 0.5, frame.iloc[:500], frame.iloc[500:], roles, "naive_bayes")
    with pytest.raises(SpecError, match="never tuned on the data"):
        tune.tune(TuningSpec(strategy="grid", buckets=3), sanitizer=synth, domains=synth.domains(frame, roles),
                  policy=load_spec(dp_spec(workspace)).privacy, sizes={}, evaluate_many=lambda v: [])
    with pytest.raises(SpecError, match="never tuned on the data"):
        tune.search_lattice(synth, "epsilon", frame, roles)
    assert mechanism_calls == []


@pytest.mark.slow  # two DP releases, a refused third, a comparison and a re-check (about 20 s); .ci/run runs it
@pytest.mark.usefixtures("prefect_harness")
def test_after_the_budget_is_spent_compare_runs_no_mechanism_and_shows_no_figure_of_one(workspace, monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from ppdp.tasks.publish import load_manifest
    from ppdp.tasks.reproduce import reproduce

    spec = dp_spec(workspace)
    for _ in (1, 2):  # 0.5 + 0.5: the budget of 1 is spent
        assert ppdp_cli("run", spec, "--force").exit_code == 0  # the same input again: else unchanged
    third = ppdp_cli("run", spec, "--force")
    assert third.exit_code == 3 and "privacy budget exceeded" in third.output
    before = set(workspace.under_root())

    calls: list[str] = []

    def no_mechanism(self, frame, roles, rng):
        calls.append(f"{len(frame)} rows")
        raise AssertionError("the DP mechanism ran on the input's rows")

    monkeypatch.setattr(DpSynthesizer, "_sanitize", no_mechanism)
    # the attack: compare on the same spec and rows, its outputs under the publish root (the default folder)
    result = ppdp_cli("compare", spec, "--methods", "dp_synthesizer,mdav")
    assert result.exit_code in (0, 3), result.output
    assert calls == []  # no mechanism ran

    new = sorted(set(workspace.under_root()) - before)
    files = [workspace.root / p for p in new if (workspace.root / p).is_file()]
    assert sorted(p.name for p in files) == ["compare.html", "compare.json"]  # nothing else under the root
    table = json.loads(next(p for p in files if p.name == "compare.json").read_text(encoding="utf-8"))
    dp = next(r for r in table["rows"] if r["method"] == "dp_synthesizer")
    assert dp["status"] == "not_run" and "privacy budget" in dp["reason"] and not numbers_in(dp["reason"])
    numbers = {k: v for k, v in dp.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    assert set(numbers) <= {"seconds", "evaluations"} and dp["evaluations"] == 0, numbers
    assert all(dp[f] is None for f in FIGURES)
    assert not any(v for v in dp.values() if isinstance(v, list | dict))  # no policy, floor line or measure
    mdav = next(r for r in table["rows"] if r["method"] == "mdav")
    assert mdav["status"] in ("passes", "refused") and mdav["records"]  # the other method did run

    page = next(p for p in files if p.name == "compare.html").read_text(encoding="utf-8")
    cells = [html.unescape(re.sub(r"<[^>]+>", " ", tr)) for tr in re.findall(r"<tr[^>]*>.*?</tr>", page, flags=re.S)
             if "<b>dp_synthesizer</b>" in tr]
    assert len(cells) == 3  # the verdict half, the figures half, the reason
    for text in cells:  # no figure: at most the row's seconds (0.0)
        assert set(numbers_in(text)) <= {"0.0"}, text
    printed = [line for line in result.output.splitlines() if "dp_synthesizer" in line]
    assert printed and all(set(numbers_in(line)) <= {"0.0"} for line in printed), printed

    with get_client(sync_client=True) as client:  # the Prefect table artifact
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
            any_=["ppdp-census-compare"])))
    artifact = max(artifacts, key=lambda a: a.created)
    row = next(r for r in json.loads(artifact.data) if r["method"] == "dp\\_synthesizer")  # markdown-escaped
    assert all(v is None or isinstance(v, str) for k, v in row.items() if k != "seconds"), row
    assert not numbers_in(" ".join(v for v in row.values() if isinstance(v, str)))

    # ppdp tune refuses to tune epsilon before any evaluation
    tuned = ppdp_cli("tune", spec, "--strategy", "bisect", "--out", workspace.dir / "tuning")
    assert tuned.exit_code == 2 and "not tuned on the data" in tuned.output
    assert not (workspace.dir / "tuning").exists()
    # validate --release --original never re-runs the mechanism either
    folder = next(p for p in (workspace.root / "census").iterdir() if p.is_dir() and p.name != "compare")
    checked = ppdp_cli("validate", "--release", folder, "--original", workspace.data)
    assert checked.exit_code == 0, checked.output
    manifest = load_manifest(folder)
    import pandas as pd

    with pytest.raises(InputError, match="never re-run from its original"):
        reproduce(manifest, workspace.data, pd.read_parquet(folder / "data.parquet"))
    assert calls == []


# -- item 6: the written spec carries the user's policy ----------------------------------------------------------
@pytest.mark.slow  # two comparisons of the 3,000-row demo, a release and its re-check (about 25 s); .ci/run runs it
@pytest.mark.usefixtures("prefect_harness")
def test_write_spec_on_the_census_demo_keeps_every_gate_and_says_which_do_not_apply(tmp_path, monkeypatch):
    monkeypatch.setenv("PPDP_SERIES_KEY", "s" * 40)
    demo = EXAMPLES / "census_demo.yaml"
    given = yaml.safe_load(demo.read_text(encoding="utf-8"))["privacy"]
    assert given == {"k": 20, "max_linkage_risk": 0.95}  # the demo's policy, as the issue read it
    root = tmp_path / "releases"
    for extra, recommended, unit in (([], "mdav", "equivalence_class"),
                                     (["privacy.min_dcr=0.3"], "sample_generation", "record")):
        written = tmp_path / f"{recommended}.yaml"
        result = ppdp_cli("compare", demo, "--methods", "mdav,sample_generation", "--set", f"publish.root={root}",
                          "--set", "utility.rank_by=accuracy_ratio",  # the ranking these cases were read under
                          *(a for s in extra for a in ("--set", s)), "--out", tmp_path / recommended,
                          "--write-spec", written)
        assert result.exit_code == 0, result.output
        text = written.read_text(encoding="utf-8")
        raw = yaml.safe_load(text)
        assert raw["method"]["name"] == recommended == method_class(recommended).name
        policy = {**given, **{s.split("=")[0].removeprefix("privacy."): float(s.split("=")[1]) for s in extra}}
        not_applying = [g for g in GATE_UNITS if g in policy and unit not in GATE_UNITS[g]]
        assert not_applying  # each case has a gate of the user's that does not apply
        # every gate of the user's policy, as given, and the ones that do not apply listed
        assert {k: v for k, v in raw["privacy"].items() if k in GATE_UNITS} == policy
        assert raw["privacy"]["not_applicable"] == not_applying
        spec = load_spec(written)
        assert {g: getattr(spec.privacy, g) for g in gates_set(spec.privacy)} == policy
        assert spec.rare_k == 20  # privacy.k still sets the rare-value rule
        # ...and one line of the header says which, and why
        [line] = [c for c in text.splitlines() if c.startswith("#") and "not judged" in c]
        assert all(f"privacy.{g}" in line for g in not_applying) and f"not to {recommended}'s unit {unit}" in line
        assert " ".join(f"not judged {line[2:]}".split()) in " ".join(result.output.split())  # and prints it
    published = ppdp_cli("run", written)  # the record method's spec, k kept and not judged, publishes
    assert published.exit_code == 0, published.output
    folder = next(p for p in (root / "census_demo").iterdir() if p.is_dir() and p.name != "compare")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["spec"]["privacy"]["k"] == 20 and manifest["spec"]["privacy"]["not_applicable"] == ["k"]
    assert "k" not in {c["name"] for c in manifest["privacy"]["claims"]}
    assert manifest["rare_categories"]["k"] == 20
    checked = ppdp_cli("validate", "--release", folder, "--original", EXAMPLES / "data" / "census_demo.csv")
    assert checked.exit_code == 0, checked.output


def test_a_gate_that_does_not_apply_must_be_listed_and_a_listed_gate_must_not_apply(workspace):
    noise = {"name": "noise", "scale": 0.5}
    with pytest.raises(SpecError, match="privacy.k does not apply to method noise"):
        load_spec(workspace.spec("a.yaml", privacy={"k": 10, "max_linkage_risk": 0.9}, method=noise))
    spec = load_spec(workspace.spec("b.yaml", privacy={"k": 10, "max_linkage_risk": 0.9, "not_applicable": ["k"]},
                                    method=noise))
    assert spec.privacy.k == 10 and spec.rare_k == 10
    with pytest.raises(SpecError, match="not_applicable: k applies to method mdav"):
        load_spec(workspace.spec("c.yaml", privacy={"k": 10, "not_applicable": ["k"]}, method={"name": "mdav"}))
    with pytest.raises(SpecError, match="no gate is set"):  # every gate listed: nothing judged (fail closed)
        load_spec(workspace.spec("d.yaml", privacy={"k": 10, "not_applicable": ["k"]}, method=noise))
    with pytest.raises(SpecError, match="not_applicable: l is not set"):
        load_spec(workspace.spec("e.yaml", privacy={"max_linkage_risk": 0.9, "not_applicable": ["l"]}, method=noise))
    # a k that does not apply bounds no method parameter (UMA's k is its own)
    uma = load_spec(workspace.spec("f.yaml", privacy={"k": 50, "max_linkage_risk": 0.9, "not_applicable": ["k"]},
                                   method={"name": "uma", "k": 5}, tuning={"strategy": "fixed"}))
    assert uma.method.k == 5


# -- a figure fixed by construction never decides ----------------------------------------------------------------
def test_a_figure_fixed_by_construction_never_decides_the_recommendation(workspace):
    from ppdp.tasks.sanitize.sample_generation import SampleGeneration

    def run(name, privacy):
        spec = load_spec(workspace.spec(name, privacy=privacy, tuning={"strategy": "fixed"},
                                        method={"name": "mdav", "k": 12},
                                        utility={"classifier": "logistic_regression", "test_fraction": 0.1,
                                                 "min_accuracy_ratio": 0.5}))
        return compare.compare_in_process(spec, ["mdav", "sample_generation"])

    # sample generation publishes generated rows: none stands for an input record, so its linkage risk is 0 whatever
    # the data (checked here on the method itself, not taken from compare)
    frame = census().drop(columns=["ssn", "name", "person_id"])
    from ppdp.api import roles_for

    made = SampleGeneration(seed=3).sanitize(frame, roles_for(frame, quasi_identifiers=["age", "zip"],
                                                               class_column="income"))
    assert made.unit == "record" and (np.asarray(made.row_source) < 0).all()

    # its only judged gate is that figure: the policy does not judge it, so it is not recommended
    # (the spec's own MDAV lists the linkage gate as not applying to it: compare makes the list again per method)
    only = run("only.yaml", {"k": 10, "max_linkage_risk": 0.95, "not_applicable": ["max_linkage_risk"]})
    sampled = only.row("sample_generation")
    assert sampled.status == "passes" and sampled.policy_holds and sampled.policy_measured is False
    assert set(sampled.by_construction) == {"max_linkage_risk"} and sampled.linkage_risk is None
    assert sampled.reason.startswith("not recommended: every gate of its policy that applies is fixed by "
                                     "construction") and not sampled.eligible
    assert only.recommended == "mdav" and "linkage risk" not in only.recommendation
    assert compare.risk_of(sampled) == ("linkage risk", None)

    # with a gate measured on its rows it may be recommended, but its fixed linkage never ranks it: on a tie of
    # accuracy ratios the method with a measured risk goes first; had the 0 counted, it would have won
    measured = run("measured.yaml", {"k": 10, "max_linkage_risk": 0.95, "min_dcr": 0.3,
                                     "not_applicable": ["max_linkage_risk", "min_dcr"]})
    assert measured.row("sample_generation").not_applicable == ["k"]
    sampled, mdav = measured.row("sample_generation"), measured.row("mdav")
    assert sampled.eligible and sampled.policy_measured and sampled.linkage_risk is None
    tie = sampled.model_copy(update={"accuracy_ratio": mdav.accuracy_ratio})
    assert compare.recommendation_line(compare.rank([tie, mdav]))[0] == "mdav"
    counted = tie.model_copy(update={"linkage_risk": 0.0, "by_construction": {}})
    assert compare.recommendation_line(compare.rank([counted, mdav]))[0] == "sample_generation"
    best = measured.row(measured.recommended)
    assert "linkage risk 0" not in measured.recommendation and best.eligible
