"""`ppdp validate --release` re-checks the claims counted against a population table (k-map, journalist risk) with
the table the release's policy names: they hold when it is there, are "not re-checked" (one line, exit 4) when it is
not, and a tampered published table (a class smaller than k-map in the population) does not hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.reports import Claim
from ppdp.tasks.privacy.recheck import POPULATION_CLAIMS, Population
from ppdp.tasks.publish import load_manifest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RARE = {"sex": "Female", "race": "Not-In-The-Release"}
"""A class of the population only (5 rows): the release publishes none of it."""
runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def line_of(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if line.strip().startswith(f"{name} "))


@pytest.fixture(scope="module")
def released(tmp_path_factory, prefect_harness) -> tuple[Path, Path]:
    """One release of the census demo cut to sex and race (quasi-identifiers by name) and income, generalized by the
    lattice (its classes publish unchanged), under k-map 20 and journalist risk 0.1 against the census demo table
    plus 5 rows of a class the release does not publish; (release folder, population file)."""
    work = tmp_path_factory.mktemp("population")
    frame = pd.read_csv(EXAMPLES / "data" / "census_demo.csv", dtype={"zip": str})
    data = work / "census_sex_race.csv"
    frame[["person_id", "sex", "race", "income"]].to_csv(data, index=False)
    extra = pd.DataFrame([frame.iloc[0]] * 5).assign(**RARE)
    population = work / "population.csv"
    pd.concat([frame, extra], ignore_index=True).to_csv(population, index=False)
    spec = yaml.safe_load((EXAMPLES / "census_generalized.yaml").read_text(encoding="utf-8"))
    spec["source"]["path"] = str(data)
    spec["columns"] = {"person_id": "identifier", "income": "class"}
    spec["privacy"] = {"k": 10, "k_map": 20, "max_journalist_risk": 0.1, "population": str(population)}
    spec["method"] = {"name": "generalization", "suppression_limit": 0.0, "measure": "loss"}
    spec["publish"]["root"] = str(work / "releases")
    path = work / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    result = ppdp("run", path)
    assert result.exit_code == 0, result.output
    [folder] = [p.parent for p in (work / "releases").glob("*/*/manifest.json")]
    return folder, population


def test_the_claims_counted_against_a_population_are_the_policy_s_population_criteria():
    assert POPULATION_CLAIMS == {"k_map", "max_journalist_risk", "max_marketer_risk"}
    claim = Claim(name="part-2: k_map", value=22.0, threshold=20.0, passed=True)
    moved = Population(missing="needs the population table (--population): p.csv cannot be read").check(claim)
    assert moved is not None and moved.verdict == "not re-checked" and "p.csv" in moved.note
    refused = Population(refused="the population table does not match the published table").check(claim)
    assert refused is not None and refused.verdict == "does not hold"
    assert Population(pd.DataFrame({"sex": ["F"]})).check(claim) is None  # the table is there: re-measured
    assert Population(missing="x").check(claim.model_copy(update={"name": "k"})) is None  # not a population claim


@pytest.mark.slow  # one flow run (module fixture), then the re-checks
def test_k_map_and_journalist_risk_hold_with_the_population_and_are_not_rechecked_without(released, tmp_path):
    folder, population = released
    claims = {c.name: c for c in load_manifest(folder).privacy.claims}
    assert claims["k_map"].value == 22 and claims["max_journalist_risk"].value == pytest.approx(1 / 22)

    ok = ppdp("validate", "--release", folder)
    assert ok.exit_code == 0, ok.output
    for name in ("k_map", "max_journalist_risk"):
        line = line_of(ok.output, name)
        assert "HOLDS" in line and "re-measured on the published table" in line, line

    moved = tmp_path / "moved.csv"
    shutil.copy(population, moved)
    population.unlink()
    try:
        missing = ppdp("validate", "--release", folder)
        assert missing.exit_code == 4, missing.output  # a claim could not be re-checked; none fails
        assert "DOES NOT HOLD" not in missing.output and "Traceback" not in missing.output
        for name in ("k_map", "max_journalist_risk"):
            line = line_of(missing.output, name)
            assert "NOT RE-CHECKED" in line and f"needs the population table (--population): {population} cannot " \
                "be read" in line, line
        assert "HOLDS" in line_of(missing.output, "k")  # the other claims are re-checked as before
        given = ppdp("validate", "--release", folder, "--population", moved)  # the table where it is now
        assert given.exit_code == 0, given.output
        assert "HOLDS" in line_of(given.output, "k_map")
    finally:
        shutil.copy(moved, population)


@pytest.mark.slow  # the module's flow run
@pytest.mark.parametrize("values, why", [
    (RARE, "5 fails >= 20"),  # one record moved to the class the population holds 5 times: 1/5 above 0.1 too
    ({"race": "In-No-Population"}, "the population table does not match the published table"),
], ids=["smaller-than-k-map", "not-in-the-population"])
def test_a_published_class_rare_or_absent_in_the_population_does_not_hold(released, tmp_path, values, why):
    folder, _ = released
    copy = tmp_path / "tampered"
    shutil.copytree(folder, copy)
    frame = pd.read_parquet(copy / "data.parquet")
    for column, value in values.items():
        frame[column] = frame[column].astype(object)
        frame.loc[0, column] = value
    frame.to_parquet(copy / "data.parquet", index=False)
    result = ppdp("validate", "--release", copy)
    assert result.exit_code == 3, result.output
    assert why in line_of(result.output, "k_map")
    for name in ("k_map", "max_journalist_risk"):
        assert "DOES NOT HOLD" in line_of(result.output, name), result.output
