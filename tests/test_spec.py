"""The release spec: structure, cross-field rules, overrides, path resolution, header checks, JSON Schema."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ppdp.schemas.export import SCHEMA_PATH, release_schema_json
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.spec import apply_override, load_spec, preflight
from tests.conftest import base_spec


def write(tmp_path: Path, spec: dict, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_valid_spec_loads_and_resolves_relative_paths(tmp_path):
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    spec = base_spec(Path("data/in.csv"), Path("out/releases"))
    path = write(spec_dir, spec)
    loaded = load_spec(path)
    assert loaded.source.path == (spec_dir / "data" / "in.csv").resolve()
    assert loaded.publish.root == (spec_dir / "out" / "releases").resolve()
    assert loaded.source.format == "csv"
    assert loaded.declared_class() == "income"


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda s: s["privacy"].update(kk=3), "privacy.kk: unknown key"),
        (lambda s: s.update(colour="red"), "colour: unknown key"),
        (lambda s: s["privacy"].update(k=1), "privacy.k"),
        (lambda s: s["privacy"].update(k="ten"), "privacy.k"),
        (lambda s: s["utility"].update(test_fraction=0.7), "utility.test_fraction"),
        (lambda s: s["utility"].update(test_fraction=0), "utility.test_fraction"),
        (lambda s: s["method"]["params"].update(k=None), "method.params.k is required"),
        (lambda s: s["method"].update(variant="clever"), "method.variant"),
        (lambda s: s["method"].update(name="magic"), "method"),
        (lambda s: s["columns"].update(age="quasi"), "columns.age"),
        (lambda s: s.pop("privacy"), "privacy: required key is missing"),
        (lambda s: s["tuning"].update(strategy="rule_based"), "set one or the other"),
        (lambda s: s["tuning"].update(min_group_size=5), "tuning.min_group_size"),
        (lambda s: s["columns"].update(sex="class"), "at most one class column"),
        (lambda s: s.update(dataset="../escape"), "dataset"),
    ],
)
def test_bad_specs_are_rejected_with_one_line_naming_the_key(tmp_path, mutate, key):
    spec = base_spec(tmp_path / "in.csv", tmp_path / "out")
    mutate(spec)
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, spec))
    message = str(info.value)
    assert key in message
    assert "\n" not in message


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("dataset: x\nsource: {path: [\n", encoding="utf-8")
    with pytest.raises(SpecError, match="line"):
        load_spec(path)


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError, match="file not found"):
        load_spec(tmp_path / "nope.yaml")


def test_overrides_apply_yaml_values(tmp_path):
    path = write(tmp_path, base_spec(tmp_path / "in.csv", tmp_path / "out"))
    spec = load_spec(path, ["privacy.k=12", "method.params.k=30", "utility.classifier=knn5", "seed=99"])
    assert (spec.privacy.k, spec.method.params.k, spec.utility.classifier, spec.seed) == (12, 30, "knn5", 99)
    with pytest.raises(SpecError, match="expected key.path=value"):
        apply_override({}, "novalue")
    with pytest.raises(SpecError, match="privacy.k"):
        load_spec(path, ["privacy.k=1"])


def test_header_checks(workspace):
    spec = load_spec(workspace.spec(**{"columns__ssn_missing": "identifier"}))
    with pytest.raises(SpecError, match="columns.ssn_missing: column 'ssn_missing' is not in census.csv"):
        preflight(spec)
    header_only = workspace.dir / "noqi.csv"
    header_only.write_text("weight,income\n1.0,a\n2.0,b\n", encoding="utf-8")
    spec = load_spec(workspace.spec(data=header_only, columns={"income": "class"}))
    with pytest.raises(SpecError, match="no quasi-identifier"):
        preflight(spec)
    spec = load_spec(workspace.spec(columns={"age": "quasi_identifier"}))
    with pytest.raises(SpecError, match="no class column"):
        preflight(spec)


def test_committed_json_schema_is_current():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == release_schema_json(), (
        "schemas/release.schema.json is stale: run `python -m ppdp.schemas.export`"
    )


def test_examples_are_valid_specs():
    examples = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))
    assert examples
    for path in examples:
        load_spec(path)
