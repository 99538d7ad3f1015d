"""The differentially private synthesizer (OpenDP's MST): its public configuration, the max_epsilon / max_delta gates
and the floor's DP rows (fast: no synthesis), and, behind the slow marker (each synthesis takes seconds), the same
rows from the same seed and measurements, the API, and a release through ``ppdp run`` re-validated by ``ppdp validate
--release``. The contract suite (tests/test_sanitizers_common.py) covers the rest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import ValidationError
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.params.dp_synthesizer import DpSynthesizerParams
from ppdp.schemas.privacy import FLOOR, PrivacyPolicy, PrivacyThresholds
from ppdp.schemas.reports import AttackerView, ColumnTag, DifferentialPrivacy, PrivacyReport, Roles
from ppdp.tasks.core.errors import ReleaseRejected, SpecError
from ppdp.tasks.gates import enforce_privacy
from ppdp.tasks.privacy.attacker import check_floor
from ppdp.tasks.privacy.measure import DP_CLAIM, check_gates
from ppdp.tasks.sanitize.dp_synthesizer import DpSynthesizer
from tests.conftest import base_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CENSUS = EXAMPLES / "data" / "census_demo.csv"
runner = CliRunner()

BINS = {"age": [17, 30, 45, 60, 90], "hours_per_week": [0, 30, 40, 50, 99]}
CATEGORIES = {"sex": ["Female", "Male"], "income": ["<=50K", ">50K"]}
EDUCATION = ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors", "Masters",
             "Doctorate"]


def roles(frame: pd.DataFrame) -> Roles:
    kinds = {"age": ColumnKind.numeric, "hours_per_week": ColumnKind.numeric, "education": ColumnKind.ordinal}
    tags = []
    for name in frame.columns:
        role = Role.class_ if name == "income" else Role.quasi_identifier
        tags.append(ColumnTag(name=name, role=role, kind=kinds.get(name, ColumnKind.nominal), source="declared",
                              reason="test", order=EDUCATION if name == "education" else None))
    return Roles(columns=tags)


def dp_release_spec(workspace, max_epsilon: float, **method) -> Path:
    """The workspace's census spec for a dp_synthesizer release under privacy.max_epsilon ``max_epsilon``: epsilon
    1, delta 1e-7, the declared CATEGORIES, then ``method`` (more parameters); naive Bayes utility, no accuracy gate."""
    return workspace.spec(
        columns={**base_spec(workspace.data, workspace.root)["columns"], "name": "identifier", "ssn": "identifier",
                 "hours_per_week": "other"},
        privacy={"max_epsilon": max_epsilon},
        method={"name": "dp_synthesizer", "epsilon": 1.0, "delta": 1e-7, "categories": CATEGORIES, **method},
        utility={"classifier": "naive_bayes", "test_fraction": 0.1, "min_accuracy_ratio": None})


def run_and_read(spec: Path, root: Path) -> tuple[Path, dict, dict]:
    """``ppdp run SPEC`` (must publish), then (the release's folder, its manifest, the manifest's DP record)."""
    result = runner.invoke(app, ["run", str(spec)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [folder] = sorted(p.parent for p in root.glob("*/*/manifest.json"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return folder, manifest, manifest["privacy"]["dp"]


def small_census(rows: int = 3000) -> pd.DataFrame:
    frame = pd.read_csv(CENSUS, dtype={"zip": str})
    return frame[["age", "sex", "education", "hours_per_week", "income"]].head(rows)


def guarantee(epsilon: float = 1.0, delta: float = 1e-7, spent: float | None = None) -> DifferentialPrivacy:
    return DifferentialPrivacy(library="opendp test", mechanism="mst", definition="approximate", epsilon=epsilon,
                               delta=delta, epsilon_spent=epsilon if spent is None else spent, delta_spent=delta,
                               rows="test")


# -- public configuration (no synthesis) ---------------------------------------------------------------------------
def test_the_plan_reads_public_information_only_and_names_what_is_missing():
    frame = small_census(50)
    r = roles(frame)
    plan = DpSynthesizer(epsilon=1.0, bins=BINS, categories=CATEGORIES).plan(frame, r)
    by = {c.name: c for c in plan.columns}
    assert by["age"].binned and by["age"].edges == (17.0, 30.0, 45.0, 60.0, 90.0)
    assert by["sex"].keys == ("Female", "Male")
    assert by["education"].keys == tuple(EDUCATION)  # the declared order is public
    assert plan.pure  # every category public: nothing to discover, delta is not spent
    plan_frame = frame.assign(sex=frame["sex"].where(frame.index > 0, "Zq9-canary"))  # a value nobody declared
    assert DpSynthesizer(epsilon=1.0, bins=BINS, categories=CATEGORIES).plan(plan_frame, r) == plan  # data-blind
    with pytest.raises(SpecError, match=r"numeric column 'hours_per_week' needs public bin edges"):
        DpSynthesizer(epsilon=1.0, bins={"age": BINS["age"]}, categories=CATEGORIES).plan(frame, r)
    with pytest.raises(SpecError, match=r"column 'income' has no public categories") as caught:
        DpSynthesizer(epsilon=1.0, delta=0.0, bins=BINS, categories={"sex": ["Female", "Male"]}).plan(frame, r)
    assert "<=50K" not in str(caught.value)
    with pytest.raises(SpecError, match=r"method.bins.sex: 'sex' is not numeric"):
        DpSynthesizer(epsilon=1.0, bins={**BINS, "sex": [0, 1]}).plan(frame, r)
    with pytest.raises(SpecError, match="not published"):
        DpSynthesizer(epsilon=1.0, bins={**BINS, "salary": [0, 1]}).plan(frame, r)


def test_a_column_without_public_categories_is_discovered_with_delta():
    frame = small_census(50)
    plan = DpSynthesizer(epsilon=1.0, bins=BINS, categories={"income": ["<=50K", ">50K"]}).plan(frame, roles(frame))
    assert not plan.pure and "sex" not in plan.keys()  # discovered privately: no keys given to OpenDP
    assert plan.keys()["age"] == [0, 1, 2, 3] and plan.keys()["income"] == ["<=50K", ">50K"]


def test_bad_parameters_fail_before_any_data_is_read():
    with pytest.raises(ValidationError, match="strictly increasing"):
        DpSynthesizerParams(epsilon=1.0, bins={"age": [10, 10, 20]})
    with pytest.raises(ValidationError, match="listed twice"):
        DpSynthesizerParams(epsilon=1.0, categories={"sex": ["F", "F"]})
    with pytest.raises(ValidationError):
        DpSynthesizerParams(epsilon=0.0)
    with pytest.raises(SpecError, match="parameter epsilon"):
        DpSynthesizer(epsilon=-1.0).sanitize(small_census(20), roles(small_census(20)))


def test_epsilon_is_never_tuned_on_the_data():
    frame = small_census(50)
    with pytest.raises(SpecError, match="epsilon is not tuned on the data"):
        DpSynthesizer(bins=BINS).domains(frame, roles(frame))
    assert DpSynthesizer(epsilon=1.0, bins=BINS).domains(frame, roles(frame))["epsilon"].log
    assert DpSynthesizer.tunable == {"epsilon": "smaller"} and DpSynthesizer.unit == "differential_privacy"


# -- gates and floor (no synthesis) --------------------------------------------------------------------------------
def dp_report(epsilon: float, delta: float = 1e-7, spent: float | None = None) -> PrivacyReport:
    return PrivacyReport(unit="differential_privacy", quasi_identifiers=[], records=100,
                         dp=guarantee(epsilon, delta, spent))


def test_max_epsilon_refuses_an_epsilon_above_it():
    passing = check_gates(dp_report(1.0), PrivacyThresholds(max_epsilon=1.0))
    assert [c.name for c in passing.claims] == [DP_CLAIM, "max_epsilon"] and passing.passed
    assert all(c.recheck == "construction" for c in passing.claims)
    refused = check_gates(dp_report(2.0), PrivacyThresholds(max_epsilon=1.0))
    assert [c.name for c in refused.failed] == ["max_epsilon"]
    with pytest.raises(ReleaseRejected, match=r"max_epsilon: 2 vs threshold 1"):
        enforce_privacy(refused)
    delta = check_gates(dp_report(1.0, delta=1e-5), PrivacyThresholds(max_delta=1e-6))
    assert [c.name for c in delta.failed] == ["max_delta"]


def test_the_dp_claim_fails_when_the_mechanism_spends_more_than_asked_or_is_not_recorded():
    over = check_gates(dp_report(1.0, spent=1.5), PrivacyThresholds(max_epsilon=2.0))
    assert [c.name for c in over.failed] == [DP_CLAIM]
    missing = check_gates(PrivacyReport(unit="differential_privacy", quasi_identifiers=[], records=1),
                          PrivacyThresholds(max_epsilon=2.0))
    assert {c.name for c in missing.failed} == {DP_CLAIM, "max_epsilon"}  # fail closed
    other = check_gates(PrivacyReport(unit="record", quasi_identifiers=[], records=1), PrivacyThresholds(max_epsilon=1))
    assert not other.claims[0].passed and "does not apply" in other.claims[0].worst


def view(epsilon: float, delta: float, exact: float) -> AttackerView:
    return AttackerView(protects="identity", identity_by="differential_privacy", records=100, quasi_identifiers=["a"],
                        classes=100, smallest_class=1, records_alone=1.0, average_risk=1.0, highest_risk=1.0,
                        exact_copies=exact, epsilon=epsilon, delta=delta)


def test_the_floor_holds_a_dp_release_to_epsilon_and_delta_not_to_its_generated_rows():
    rows = {r.key: r for r in FLOOR if "differential_privacy" in r.applies}
    assert set(rows) == {"epsilon", "delta"} and rows["epsilon"].limit == 10 and rows["delta"].limit == 1e-6
    ok = check_floor(view(1.0, 0.0, exact=1.0), [], "differential_privacy")  # every row alone, every row a copy
    assert ok.holds and ok.applies == ["differential_privacy"] and [c.name for c in ok.claims] == [
        "floor: epsilon", "floor: delta"]
    high = check_floor(view(12.0, 1e-5, exact=0.0), [], "differential_privacy")
    assert not high.holds and {c.name for c in high.failed} == {"floor: epsilon", "floor: delta"}


def test_a_dp_spec_needs_a_dp_gate_and_refuses_the_others(tmp_path):
    from ppdp.tasks.spec import load_spec

    method = {"name": "dp_synthesizer", "epsilon": 1.0, "bins": BINS}
    for privacy, message in (({}, "no gate is set"), ({"k": 5}, "privacy.k does not apply"),
                             ({"max_linkage_risk": 0.5}, "does not apply")):
        spec = base_spec(CENSUS, tmp_path / "releases", method=method, privacy=privacy)
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        with pytest.raises(SpecError, match=message):
            load_spec(path)
    spec = base_spec(CENSUS, tmp_path / "releases", method={"name": "mdav", "k": 5}, privacy={"k": 5,
                                                                                             "max_epsilon": 1})
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    with pytest.raises(SpecError, match="max_epsilon does not apply"):
        load_spec(path)
    with pytest.raises(ValidationError):
        PrivacyPolicy(max_delta=1.0)  # a delta is below 1: no vacuous delta gate can be written


# -- synthesis (slow) -------------------------------------------------------------------------------------------
@pytest.mark.slow  # one OpenDP measurement and one model fit: about 10 s
def test_same_seed_same_rows_from_the_same_measurements_and_fresh_noise_each_run():
    from ppdp.tasks.core.pgm import sample_model
    from ppdp.tasks.sanitize.dp_synthesizer import build, to_mechanism_input

    frame = small_census(1500)
    r = roles(frame)
    plan = DpSynthesizer(epsilon=1.0, bins=BINS, categories=CATEGORIES).plan(frame, r)
    built = build(plan)
    assert built.epsilon_spent <= 1.0 and built.delta_spent <= 1e-7 and built.library.startswith("opendp ")
    table = built.measurement(to_mechanism_input(frame, plan))
    one = sample_model(table.model, 500, np.random.default_rng(5))
    two = sample_model(table.model, 500, np.random.default_rng(5))
    other = sample_model(table.model, 500, np.random.default_rng(6))
    assert all(np.array_equal(one[c], two[c]) for c in one)
    assert any(not np.array_equal(one[c], other[c]) for c in one)
    again = built.measurement(to_mechanism_input(frame, plan))  # same data, same mechanism: fresh noise

    def oneway(t) -> dict:
        return {m.clique: np.asarray(m.noisy_measurement) for m in t.marginals.flatten() if len(m.clique) == 1}

    first, second = oneway(table), oneway(again)
    assert set(first) == {(c.name,) for c in plan.columns}
    assert any(not np.allclose(first[c], second[c]) for c in first)


@pytest.mark.slow  # one synthesis: about 10 s
def test_the_api_sanitizes_with_the_dp_synthesizer_and_records_epsilon():
    import ppdp

    frame = small_census(1500)
    release = ppdp.sanitize(frame, method="dp_synthesizer", quasi_identifiers=["age", "sex", "education"],
                            class_column="income", orders={"education": EDUCATION}, kinds={"hours_per_week": "numeric"},
                            epsilon=2.0, delta=0.0, bins=BINS, categories=CATEGORIES, seed=3)
    assert release.unit == "differential_privacy" and set(release.treatments.values()) == {"synthesized"}
    assert list(release.frame.columns) == list(frame.columns)
    assert bool(np.all(release.row_source == -1))
    assert release.dp.epsilon == 2.0 and release.dp.definition == "pure" and release.dp.delta_spent == 0.0
    assert release.privacy.floor.holds and release.privacy.claims[0].name == DP_CLAIM
    sex = release.frame["sex"]
    assert sex.dropna().isin(["Female", "Male"]).all() and sex.isna().mean() < 0.05  # the null cell: noise only
    assert release.frame["income"].notna().all()  # a class is never generated missing
    ages = release.frame["age"].dropna()
    assert ages.between(17, 90).all() and (ages == ages.round()).all()  # inside the public bounds, integers
    assert abs(len(release.frame) - len(frame)) < 100  # the noisy row count
    share = (release.frame["income"] == ">50K").mean()
    assert abs(share - (frame["income"] == ">50K").mean()) < 0.1  # the one-way marginal survives epsilon 2


@pytest.mark.slow  # a flow run with one synthesis, then three re-checks: about 40 s
@pytest.mark.usefixtures("prefect_harness")
def test_a_dp_release_publishes_and_revalidates_and_a_tampered_epsilon_does_not_hold(workspace):
    spec = dp_release_spec(workspace, 2.0, bins=BINS)
    result = runner.invoke(app, ["run", str(spec)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "(epsilon, delta)-DP" in result.output and "safety floor holds" in result.output
    [folder] = sorted(p.parent for p in workspace.root.glob("*/*/manifest.json"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["unit"] == "differential_privacy"
    assert manifest["method"]["params"]["epsilon"] == 1.0 and manifest["method"]["params"]["delta"] == 1e-7
    dp = manifest["privacy"]["dp"]
    assert dp["epsilon_spent"] <= 1.0 and dp["discovered"] and dp["discovery_threshold"] > 0  # zip, race, ...
    published = pd.read_parquet(folder / "data.parquet")
    assert "ssn" not in published.columns and "person_id" not in published.columns
    for args in (["validate", "--release", str(folder)],
                 ["validate", "--release", str(folder), "--original", str(workspace.data)]):
        check = runner.invoke(app, args, catch_exceptions=False)
        assert check.exit_code == 0, check.output
        assert "holds by construction" in check.output and "DOES NOT HOLD" not in check.output
    manifest["method"]["params"]["epsilon"] = 0.5  # the mechanism rebuilt from it spends less than the claim says
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    tampered = runner.invoke(app, ["validate", "--release", str(folder)], catch_exceptions=False)
    assert tampered.exit_code == 3 and "DOES NOT HOLD" in tampered.output
