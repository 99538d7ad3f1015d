"""Privacy criteria as objects (issue 31): one class per criterion, one registry that drives the policy's fields, the
``ppdp validate`` options, the gates and the report's wording; and k-map, the measure added through that path alone
(its module, its registry line, these tests)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.criteria.base import Criterion, Judge, Threshold
from ppdp.schemas.criteria.registry import CRITERIA, policy_thresholds
from ppdp.schemas.privacy import GATE_UNITS, TABLE_GATES, PrivacyThresholds, thresholds_model
from ppdp.schemas.reports import Claim
from ppdp.tasks.privacy.measure import check_gates, class_counts_in, measure_table
from ppdp.tasks.report.wording import _SENSITIVE_GATES

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
runner = CliRunner()


def census() -> pd.DataFrame:
    """The census demo's table (examples/data, 3,000 rows)."""
    return pd.read_csv(EXAMPLES / "data" / "census_demo.csv", dtype={"zip": str})


# -- the registry drives every place -----------------------------------------------------------------------------
def test_every_policy_field_belongs_to_exactly_one_criterion_in_the_registry_s_order():
    owners: dict[str, list[str]] = {}
    for criterion in CRITERIA:
        assert criterion.thresholds[0].name == criterion.key  # the gate first, then its settings
        for t in criterion.thresholds:
            owners.setdefault(t.name, []).append(criterion.key)
    assert {name: keys for name, keys in owners.items() if len(keys) != 1} == {}
    assert list(PrivacyThresholds.model_fields) == [t.name for t in policy_thresholds()]
    assert set(PrivacyThresholds.model_fields) == set(owners)
    for t in policy_thresholds():  # description, bounds and default as the criterion declares them
        field = PrivacyThresholds.model_fields[t.name]
        assert field.description == t.field.description and field.description
        assert field.metadata == t.field.metadata and field.default == t.field.default


def test_every_criterion_is_a_gate_with_units_a_validate_option_or_none_and_its_own_key():
    keys = [c.key for c in CRITERIA]
    assert len(set(keys)) == len(keys) and list(GATE_UNITS) == keys
    assert all(type(c).claims is not Criterion.claims for c in CRITERIA)  # every criterion judges itself
    for t in policy_thresholds():
        assert (t.name in TABLE_GATES) == (t.option is not None)
    assert set(_SENSITIVE_GATES) == {c.key for c in CRITERIA if c.sensitive}
    assert set(PrivacyThresholds().sensitive_gates()) == set()
    assert PrivacyThresholds(l=2, t=0.3).sensitive_gates() == ["l", "t"]


def test_the_floor_is_the_attacker_view_s_rows_and_the_criteria_s_in_the_order_of_what_they_apply_to():
    from ppdp.schemas.criteria.floor import FLOOR_KINDS
    from ppdp.schemas.privacy import ATTACKER_FLOOR, FLOOR, FLOOR_GATES

    assert sorted(r.key for r in FLOOR) == sorted([r.key for r in ATTACKER_FLOOR] + list(FLOOR_GATES))
    firsts = [FLOOR_KINDS.index(r.applies[0]) for r in FLOOR]
    assert firsts == sorted(firsts)
    for criterion in CRITERIA:
        for row in criterion.floor:  # a criterion's row bounds its own figure the same way its gate does
            assert FLOOR_GATES[row.key] == criterion.key and row.comparison == "<="
            assert criterion.key.startswith("max_")


def test_the_measure_names_are_written_once():
    """No module outside the criteria package spells a list of gate keys again (the old threshold model, option
    table, unit table, sensitive-gate table and recount exclusions each did)."""
    gates = {c.key for c in CRITERIA if len(c.key) > 5}  # long keys only: short ones (k, t, l) are common words
    for path in [*(REPO / "schemas").glob("*.py"), *(REPO / "tasks").rglob("*.py"), *(REPO / "flows").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Dict, ast.Set, ast.Tuple, ast.List)):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in gates}
                assert len(named) < 3, (path.relative_to(REPO), sorted(named))


class _MaxRows(Criterion):
    """A fake criterion: the table holds at most this many records."""

    key = "max_rows_fake"
    thresholds = (Threshold(key, int | None, Field(None, ge=1, description="at most this many records (a test)"),
                            option="Gate: at most this many records (a test)."),)
    units = ("equivalence_class",)

    def claims(self, judge: Judge, policy) -> list[Claim]:
        return judge.gate(self, self.key, "records", policy.max_rows_fake, float(judge.report.records), False, None)


def test_a_criterion_added_to_the_registry_gets_a_field_an_option_and_a_gate(monkeypatch):
    extended = (*CRITERIA, _MaxRows())
    model = thresholds_model(extended)
    field = model.model_json_schema()["properties"]["max_rows_fake"]
    assert field["anyOf"][0]["minimum"] == 1 and field["description"] == "at most this many records (a test)"
    with pytest.raises(ValidationError):
        model(max_rows_fake=0)
    monkeypatch.setattr("ppdp.tasks.privacy.measure.CRITERIA", extended)
    monkeypatch.setattr("ppdp.schemas.privacy.CRITERIA", extended)
    frame = census().head(200)
    policy = model(max_rows_fake=100)
    report = measure_table(frame, ["sex"], [], thresholds=policy, attack_queries=0)  # type: ignore[arg-type]
    [claim] = check_gates(report, policy).claims  # type: ignore[arg-type]
    assert claim.name == "max_rows_fake" and claim.value == 200 and not claim.passed


# -- k-map: the figure ---------------------------------------------------------------------------------------------
def _brute_k_map(published: pd.DataFrame, population: pd.DataFrame, qis: list[str]) -> int:
    """The smallest number of population rows equal to a published class, by a loop over the classes."""
    counts = []
    for values in published[qis].drop_duplicates().itertuples(index=False):
        same = np.ones(len(population), dtype=bool)
        for q, v in zip(qis, values):
            column = population[q]
            same &= column.isna().to_numpy() if pd.isna(v) else (column == v).to_numpy()
        counts.append(int(same.sum()))
    return min(counts)


def _k_map_figure(published: pd.DataFrame, population: pd.DataFrame, qis: list[str], k_map: int = 2):
    policy = PrivacyThresholds(k_map=k_map, population=Path("population.csv"))
    report = measure_table(published, qis, [], thresholds=policy, population=population, attack_queries=0)
    return check_gates(report, policy)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_k_map_is_the_fewest_population_rows_matching_a_published_class(data):
    values = st.one_of(st.sampled_from(["a", "b", "c"]), st.none())
    rows = st.lists(st.tuples(values, st.integers(0, 2)), min_size=1, max_size=25)
    published = pd.DataFrame(data.draw(rows), columns=["x", "y"])
    others = pd.DataFrame(data.draw(rows), columns=["x", "y"])  # the population holds the sample (ARX's subset)
    population = pd.concat([others, published], ignore_index=True).sample(frac=1.0, random_state=0)
    population["other"] = 1  # a column the classes are not over
    [claim] = _k_map_figure(published, population, ["x", "y"]).claims
    truth = _brute_k_map(published, population, ["x", "y"])
    assert claim.value == truth and claim.passed == (truth >= 2) and claim.comparison == ">="


def test_k_map_on_the_census_against_itself_and_its_worst_class():
    frame = census()
    qis = ["sex", "race"]
    gated = _k_map_figure(frame.sample(500, random_state=1), frame, qis, k_map=23)
    [claim] = gated.claims
    assert claim.value == _brute_k_map(frame, frame, qis) == 22 and not claim.passed
    assert claim.worst is not None and claim.worst.startswith("equivalence class #")
    assert gated.details["k_map"].value == 22


def test_k_map_costs_nothing_when_unset_and_needs_a_population():
    report = measure_table(census().head(100), ["sex"], [], attack_queries=0)
    assert "k_map" not in report.details and check_gates(report, PrivacyThresholds()).claims == []
    with pytest.raises(ValidationError, match="k_map needs privacy.population"):
        PrivacyThresholds(k_map=5)
    with pytest.raises(ValidationError):
        PrivacyThresholds(k_map=1, population=Path("p.csv"))  # a k-map of 1 is refused like a k of 1


def test_class_counts_in_matches_missing_values_and_ignores_other_columns():
    frame = pd.DataFrame({"x": ["a", None, "a", "b"]})
    ids = np.array([0, 1, 0, 2])
    other = pd.DataFrame({"x": [None, None, "a", "c"], "z": [1, 2, 3, 4]})
    assert class_counts_in(frame, ids, other).tolist() == [1, 2, 0]


def test_validate_has_a_k_map_option_from_the_registry(tmp_path):
    data = tmp_path / "t.csv"
    census().to_csv(data, index=False)
    result = runner.invoke(app, ["validate", str(data), "--qi", "sex,race", "--k-map", "23", "--population",
                                 str(data)])
    assert result.exit_code == 3, result.output
    assert "k_map" in result.output
    result = runner.invoke(app, ["validate", str(data), "--qi", "sex,race", "--k-map", "22", "--population",
                                 str(data)])
    assert result.exit_code == 0, result.output


# -- k-map: a real gate of a release --------------------------------------------------------------------------------
def _k_map_spec(tmp_path: Path, k_map: int) -> tuple[Path, Path, Path]:
    """The census demo cut to sex and race (quasi-identifiers by name) and income, generalized by the lattice (the
    classes are large enough to publish unchanged), against the whole census demo table as population."""
    tmp_path.mkdir(parents=True)
    frame = census()
    data = tmp_path / "census_sex_race.csv"
    frame[["person_id", "sex", "race", "income"]].to_csv(data, index=False)
    population = tmp_path / "population.csv"
    frame.to_csv(population, index=False)
    spec = yaml.safe_load((EXAMPLES / "census_generalized.yaml").read_text(encoding="utf-8"))
    spec["source"]["path"] = str(data)
    spec["columns"] = {"person_id": "identifier", "income": "class"}
    spec["privacy"] = {"k": 10, "k_map": k_map, "population": str(population)}
    spec["method"] = {"name": "generalization", "suppression_limit": 0.0, "measure": "loss"}
    spec["publish"]["root"] = str(tmp_path / "releases")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path, tmp_path / "releases", population


@pytest.mark.slow  # two flow runs
@pytest.mark.usefixtures("prefect_harness")
def test_a_release_under_k_map_is_refused_below_it_and_publishes_the_figure_above_it(tmp_path):
    from ppdp.tasks.publish import load_manifest

    spec, root, population = _k_map_spec(tmp_path / "refused", k_map=23)
    result = runner.invoke(app, ["run", str(spec)])
    assert result.exit_code == 3, result.output
    assert "k_map" in result.output and "Traceback" not in result.output
    assert not list(root.glob("**/data.parquet")) and not list(root.glob("**/manifest.json"))  # nothing published

    spec, root, population = _k_map_spec(tmp_path / "published", k_map=20)
    result = runner.invoke(app, ["run", str(spec)])
    assert result.exit_code == 0, result.output
    [folder] = [p.parent for p in root.glob("*/*/manifest.json")]
    published = pd.read_parquet(folder / "data.parquet")
    [claim] = [c for c in load_manifest(folder).privacy.claims if c.name == "k_map"]
    truth = _brute_k_map(published, pd.read_csv(population), ["sex", "race"])
    assert claim.passed and claim.threshold == 20 and claim.value == truth >= 20
