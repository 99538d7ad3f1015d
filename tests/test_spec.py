"""The release spec: structure, cross-field rules, overrides, path resolution, header checks, JSON Schema."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from ppdp.schemas.export import SCHEMA_PATH, release_schema_json
from ppdp.schemas.spec import ReleaseSpec
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
        (lambda s: (s["method"].update(k=None), s["privacy"].update(k=None, max_linkage_risk=0.9)),
         "method.k is required"),
        (lambda s: s["method"].update(variant="clever"), "method.variant"),
        (lambda s: s["method"].update(name="magic"), "method"),
        (lambda s: s["columns"].update(age="quasi"), "columns.age"),
        (lambda s: s.pop("privacy"), "privacy: required key is missing"),
        (lambda s: s["tuning"].update(strategy="bisect"), "set one or the other"),
        (lambda s: s["tuning"].update(min=5), "tuning.min"),
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
    spec = load_spec(path, ["privacy.k=12", "method.k=30", "utility.classifier=knn5", "seed=99"])
    assert (spec.privacy.k, spec.method.k, spec.utility.classifier, spec.seed) == (12, 30, "knn5", 99)
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
    # no class column (issue 34): an accuracy gate the spec writes needs one (a table without a class publishes)
    with pytest.raises(SpecError, match="utility.min_accuracy_ratio is an accuracy gate and needs a class column"):
        load_spec(workspace.spec(columns={"age": "quasi_identifier"}))


def test_committed_json_schema_is_current():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == release_schema_json(), (
        "schemas/release.schema.json is stale: run `python -m ppdp.schemas.export`"
    )


def test_method_k_defaults_to_privacy_k_unless_it_is_tuned(tmp_path):
    raw = base_spec(tmp_path / "in.csv", tmp_path / "out")
    raw["method"]["k"] = None
    assert ReleaseSpec.model_validate(raw).method.k == 10  # fixed: the policy's k
    tree = {**raw, "columns": {**raw["columns"], "hours_per_week": "sensitive"},
            "method": {"name": "perturbation_tree"}, "tuning": {"strategy": "bisect"}}
    spec = ReleaseSpec.model_validate(tree)
    assert spec.method.k == 10 and spec.method.leaf_size is None  # leaf_size tuned, k from the policy
    tuned_k = ReleaseSpec.model_validate({**tree, "method": {"name": "perturbation_tree", "leaf_size": 8},
                                          "tuning": {"strategy": "bisect", "parameter": "k"}})
    assert tuned_k.method.k is None
    with pytest.raises(ValidationError, match="method.leaf_size is required when tuning.parameter is k"):
        ReleaseSpec.model_validate({**tree, "tuning": {"strategy": "bisect", "parameter": "k"}})


# -- hostile specs (issue 8): refused in one line naming the line or the key, fast, nothing expanded ----------
def spec_text(tmp_path: Path) -> str:
    return yaml.safe_dump(base_spec(tmp_path / "in.csv", tmp_path / "out"), sort_keys=False)


def refuse(tmp_path: Path, text: str | bytes, *needles: str, overrides: list[str] | None = None) -> str:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(SpecError) as info:
        load_spec(path, overrides)
    message = str(info.value)
    first, *more = message.splitlines()  # one line per problem: the first complete on its own, the others indented
    assert all(line.startswith("  ") for line in more), message
    for needle in needles:
        assert needle in first, (needle, message)
    return message


def test_alias_bomb_is_refused_before_any_expansion(tmp_path):
    """1.4 kB that PyYAML's safe_load expands into 9**9 list items (75 s and 5.4 GiB, issue 8)."""
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
    text = spec_text(tmp_path)
    lines = text.count("\n")
    refuse(tmp_path, text + bomb, f"line {lines + 1}: YAML anchors and aliases")
    refuse(tmp_path, text.replace("privacy:", "privacy: &p", 1), "anchors and aliases")  # an anchor alone


@pytest.mark.parametrize("nesting", ["[" * 5000 + "]" * 5000, "".join(f"\n{'  ' * (i + 1)}k{i}:" for i in range(40))
                                     + " v"])
def test_nesting_depth_is_bounded(tmp_path, nesting):
    refuse(tmp_path, spec_text(tmp_path) + "deep: " + nesting + "\n", "nested deeper than 16 levels", "line ")


def test_too_many_values_or_bytes_are_refused(tmp_path):
    many = "".join(f"k{i}: v\n" for i in range(15_000))
    refuse(tmp_path, spec_text(tmp_path) + many, "more than 20000 values")
    refuse(tmp_path, spec_text(tmp_path) + "# " + "x" * 300_000 + "\n", "bytes, more than a spec can be")


def test_duplicate_keys_are_refused_naming_key_and_lines(tmp_path):
    text = spec_text(tmp_path)
    first = text.splitlines().index("privacy:") + 1
    last = text.count("\n") + 1
    refuse(tmp_path, text + "privacy:\n  k: 2\n", f"line {last}: duplicate key 'privacy' (first at line {first})")
    nested = text.replace("  k: 10\n", "  k: 10\n  k: 50\n", 1)
    refuse(tmp_path, nested, "duplicate key 'privacy.k'")
    masked = refuse(tmp_path, text.replace("  income: class\n", "  987-65-4329: class\n  987-65-4329: other\n"),
                    "duplicate key 'columns.<data-like key>'")
    assert "987-65-4329" not in masked


@pytest.mark.parametrize(
    ("line", "overrides", "needle"),
    [
        ("seed: true", [], "seed: Input should be a valid integer, got a boolean"),
        ("seed: 7.0", [], "seed: Input should be a valid integer, got a decimal number"),
        ("seed: '7'", [], "seed: Input should be a valid integer, got text"),
        ("seed: 7", ["seed=true"], "seed (given by --set): Input should be a valid integer, got a boolean"),
        ("seed: 7", ["privacy.k=yes"], "privacy.k (given by --set): Input should be a valid integer, got a boolean"),
        ("seed: 7", ["utility.test_fraction=on"], "utility.test_fraction (given by --set)"),
        ("seed: 7", ["privacy.kk=3"], "privacy.kk (given by --set): unknown key"),
    ],
)
def test_types_are_strict_in_the_file_and_in_set(tmp_path, line, overrides, needle):
    text = spec_text(tmp_path).replace("seed: 7", line)
    refuse(tmp_path, text, needle, overrides=overrides)


def test_strict_types_still_take_ordinary_yaml(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(spec_text(tmp_path), encoding="utf-8")
    spec = load_spec(path, ["utility.test_fraction=1e-1", "privacy.k=12", "tagging.auto=false"])
    assert (spec.utility.test_fraction, spec.privacy.k, spec.tagging.auto) == (0.1, 12, False)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("x: !!python/object/apply:os.system [echo]\n", "no YAML tags"),
        ("x: !!binary aGVsbG8=\n", "no YAML tags"),
        ("x: {<<: {a: 1}}\n", "merge keys"),
        ("x: .inf\n", "infinite and NaN numbers"),
        ("x: .nan\n", "infinite and NaN numbers"),
        ("x: " + "9" * 5000 + "\n", "not a valid number"),
        ("? [a, b]\n: c\n", "a key must be plain text"),
        ("---\nx: 1\n", "not valid YAML at line"),
        ("x: \x07\n", "not valid YAML at line"),
    ],
)
def test_yaml_beyond_plain_data_is_refused_with_its_line(tmp_path, extra, needle):
    text = spec_text(tmp_path)
    refuse(tmp_path, text + extra, needle, "line ")


def test_set_values_follow_the_same_rules(tmp_path):
    text = spec_text(tmp_path)
    refuse(tmp_path, text, "--set seed: YAML anchors and aliases", overrides=["seed=&a 1"])
    refuse(tmp_path, text, "--set seed: nested deeper", overrides=["seed=" + "[" * 40 + "]" * 40])
    refuse(tmp_path, text, "--set seed: infinite", overrides=["seed=.inf"])
    refuse(tmp_path, text, "--set: a key path deeper", overrides=[".".join(["a"] * 40) + "=1"])
    message = refuse(tmp_path, text, "columns.<data-like key>.role: required key is missing",
                     overrides=["columns.987-65-4329.x=1"])
    assert message.splitlines()[1:] == ["  columns.<data-like key>.x (given by --set): unknown key"]
    assert "987-65-4329" not in message


def test_encodings_of_the_spec_file(tmp_path):
    text = spec_text(tmp_path)
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert load_spec(path).dataset == "census"  # a UTF-8 byte-order mark is dropped
    refuse(tmp_path, text.encode("utf-16"), "UTF-16 or UTF-32 text", "save it as UTF-8")
    latin = text.replace("dataset: census", "dataset: census\nnote: caf\u00e9").encode("latin-1")
    refuse(tmp_path, latin, "not UTF-8 text (line 2)")


def test_plain_data_rules_keys_as_text_dates_as_text_yaml12_floats():
    from ppdp.tasks.spec import parse_yaml

    assert parse_yaml("no: 1\n10: x\nd: 2024-01-02\nf: 1e-3\ng: -2E+5\nb: yes\n") == {
        "no": 1, "10": "x", "d": "2024-01-02", "f": 0.001, "g": -200000.0, "b": True}


def test_data_like_column_names_are_not_echoed_by_header_checks(workspace):
    spec = load_spec(workspace.spec(**{"columns__987-65-4329": "identifier"}))
    with pytest.raises(SpecError) as info:
        preflight(spec)
    assert "987-65-4329" not in str(info.value) and "looks like a data value" in str(info.value)


def test_declared_column_missing_with_another_separator_gets_a_hint(workspace):
    data = workspace.dir / "semi.csv"
    data.write_text("person_id;age,x;education;income\n1;2;3;4\n", encoding="utf-8")
    spec = load_spec(workspace.spec(data=data))
    with pytest.raises(SpecError, match=r"is the separator ';'\? source.sep is ','"):
        preflight(spec)


def test_tuning_bounds_and_lattice_are_checked_in_the_spec(tmp_path):
    from ppdp.tasks.core.errors import SpecError

    data = tmp_path / "in.csv"
    data.write_text("age,income\n30,a\n", encoding="utf-8")
    for tuning, message in [
        ({"strategy": "bisect", "max": 3}, "tuning.max (3) is below privacy.k (10)"),
        ({"strategy": "lattice"}, "tuning.strategy lattice needs a parameter of generalization levels"),
        ({"strategy": "bisect", "parameter": "scale"}, "tuning.parameter 'scale' is not tunable"),
    ]:
        spec = base_spec(Path("in.csv"), Path("out"), method={"name": "mdav"}, tuning=tuning)
        with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_spec(write(tmp_path, spec))


def test_spec_hash_ignores_where_tasks_run_but_not_what_is_released(tmp_path):
    from ppdp.tasks.spec import spec_sha256

    path = tmp_path / "spec.yaml"
    data = tmp_path / "in.csv"
    data.write_text("age,income\n30,a\n")
    path.write_text(yaml.safe_dump(base_spec(data, tmp_path / "out")))
    thread = load_spec(path, [])
    dask = load_spec(path, ["runner.kind=dask", "runner.workers=3"])
    assert dask.runner.kind == "dask" and spec_sha256(thread) == spec_sha256(dask)
    assert spec_sha256(load_spec(path, ["seed=99"])) != spec_sha256(thread)
