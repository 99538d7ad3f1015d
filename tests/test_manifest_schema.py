"""The committed JSON Schemas (issue 10): ``schemas/manifest.schema.json`` is current, every property of both
schemas is described, and a real ``manifest.json`` validates against it while a damaged one does not."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from ppdp.schemas.export import MANIFEST_SCHEMA_PATH, SCHEMA_PATH, manifest_schema_json
from tests.conftest import base_spec
from tests.helpers import site_folder

SCHEMA_FILES = {"manifest": MANIFEST_SCHEMA_PATH, "release": SCHEMA_PATH}

# keywords whose value is a schema, a list of schemas, or a mapping of names to schemas (draft 2020-12)
ONE = ("additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames",
       "unevaluatedItems", "unevaluatedProperties")
MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
NAMED = ("$defs", "properties", "patternProperties", "dependentSchemas")


def undescribed(schema: Any, where: str = "#") -> list[str]:
    """Every property (of every object schema, ``$defs`` and nested ones included) without a non-empty
    description, as a JSON pointer. A property whose schema is a ``$ref`` or an ``anyOf`` needs its own
    description beside it: the referenced model's description says what the model is, not what the field is."""
    if not isinstance(schema, dict):
        return []
    out = []
    for name, sub in (schema.get("properties") or {}).items():
        text = sub.get("description") if isinstance(sub, dict) else None
        if not (isinstance(text, str) and text.strip()):
            out.append(f"{where}/properties/{name}")
    for key in ONE:
        if key in schema:
            out += undescribed(schema[key], f"{where}/{key}")
    for key in MANY:
        for i, sub in enumerate(schema.get(key) or []):
            out += undescribed(sub, f"{where}/{key}/{i}")
    for key in NAMED:
        for name, sub in (schema.get(key) or {}).items():
            out += undescribed(sub, f"{where}/{key}/{name}")
    return out


def count_properties(schema: Any) -> int:
    if not isinstance(schema, dict):
        return 0
    n = len(schema.get("properties") or {})
    n += sum(count_properties(schema[k]) for k in ONE if k in schema)
    n += sum(count_properties(s) for k in MANY for s in schema.get(k) or [])
    n += sum(count_properties(s) for k in NAMED for s in (schema.get(k) or {}).values())
    return n


def committed(name: str) -> dict:
    return json.loads(SCHEMA_FILES[name].read_text(encoding="utf-8"))


# -- the committed files ------------------------------------------------------------------------------------------
def test_committed_manifest_schema_is_current():
    assert MANIFEST_SCHEMA_PATH.read_text(encoding="utf-8") == manifest_schema_json(), (
        "schemas/manifest.schema.json is stale: run `python -m ppdp.schemas.export`"
    )


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_committed_schema_is_a_draft_2020_12_document_with_a_header(name):
    schema = committed(name)
    Draft202012Validator.check_schema(schema)
    assert list(schema)[:4] == ["$schema", "$id", "title", "description"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].startswith("urn:ppdp:schema:") and schema["title"].startswith("ppdp ")
    assert schema["description"].strip() and schema["additionalProperties"] is False
    assert SCHEMA_FILES[name].read_text(encoding="utf-8").endswith("}\n")


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_every_property_and_every_model_is_described(name):
    schema = committed(name)
    missing = undescribed(schema)
    assert not missing, (f"{len(missing)} properties of schemas/{SCHEMA_FILES[name].name} have no description "
                         f"(add description= to the Field, then run `python -m ppdp.schemas.export`):\n  "
                         + "\n  ".join(missing))
    models = [k for k, d in schema["$defs"].items() if d.get("type") == "object" and not d.get("description")]
    assert not models, f"models without a docstring in schemas/{SCHEMA_FILES[name].name}: {', '.join(models)}"
    assert count_properties(schema) > 100  # the walk reaches the nested models


def test_the_description_check_finds_properties_behind_a_ref_or_an_any_of():
    schema = {
        "$defs": {"Inner": {"type": "object", "description": "a model", "properties": {
            "plain": {"type": "integer"},
            "nested": {"type": "object", "properties": {"deep": {"type": "string", "description": " "}}}}}},
        "type": "object",
        "properties": {
            "ref": {"$ref": "#/$defs/Inner"},
            "either": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
            "listed": {"type": "array", "description": "ok",
                       "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "fine": {"$ref": "#/$defs/Inner", "description": "described beside its $ref"},
        },
    }
    assert sorted(undescribed(schema)) == sorted([
        "#/$defs/Inner/properties/plain", "#/$defs/Inner/properties/nested",
        "#/$defs/Inner/properties/nested/properties/deep",
        "#/properties/ref", "#/properties/either", "#/properties/listed/items/properties/x"])


# -- a real manifest ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def manifest(tmp_path_factory, prefect_harness) -> dict:
    """The manifest.json of one release run by the flow on the census fixture (the module's only release)."""
    from ppdp.flows.release import release_flow

    base, config = site_folder(tmp_path_factory, "manifest-schema", 400)
    spec = base / "spec.yaml"
    spec.write_text(yaml.safe_dump(base_spec(base / "census.csv", base / "releases")), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PPDP_CONFIG_DIR", str(config))
        result = release_flow(spec_path=str(spec))
    assert result.status == "published", result.reason
    return json.loads((Path(result.folder) / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    return Draft202012Validator(committed("manifest"))


def errors(validator: Draft202012Validator, instance: dict) -> list[str]:
    return sorted(f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.validator}"
                  for e in validator.iter_errors(instance))


def test_a_published_manifest_validates_against_the_committed_schema(manifest, validator):
    assert errors(validator, manifest) == []
    # the release exercised the nested models the schema describes, not just the top level
    assert manifest["privacy"]["claims"] and manifest["roles"]["columns"] and manifest["treatments"]
    assert manifest["spec"]["method"]["name"] == "condensation" and manifest["ingest"]["expectations"]


@pytest.mark.parametrize("path, keyword", [
    ((), "additionalProperties"),
    (("privacy",), "additionalProperties"),
    (("versions",), "additionalProperties"),
    (("roles", "columns", 0), "additionalProperties"),
    (("spec", "method"), "oneOf"),  # the method union: the key fits no method's parameters
])
def test_an_unknown_key_is_rejected(manifest, validator, path, keyword):
    damaged = copy.deepcopy(manifest)
    node = damaged
    for part in path:
        node = node[part]
    node["unknown_key"] = 1
    assert errors(validator, damaged) == [f"{'/'.join(map(str, path)) or '(root)'}: {keyword}"]


@pytest.mark.parametrize("path, value, keyword", [
    (("rows",), "540", "type"),
    (("created_at",), 20260101, "type"),
    (("status",), "rejected", "const"),
    (("privacy", "records"), 1.5, "type"),
    (("treatments", 0, "treatment"), "shuffled", "enum"),
    (("columns",), "age", "type"),
    (("spec", "seed"), -1, "minimum"),
])
def test_a_wrong_type_or_value_is_rejected(manifest, validator, path, value, keyword):
    damaged = copy.deepcopy(manifest)
    node = damaged
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    found = errors(validator, damaged)
    assert f"{'/'.join(map(str, path))}: {keyword}" in found, found


def test_a_missing_required_field_is_rejected(manifest, validator):
    damaged = {k: v for k, v in manifest.items() if k != "output_sha256"}
    assert errors(validator, damaged) == []  # optional: null while the manifest is hashed
    for required in ("release_id", "privacy", "flow_run_id"):
        damaged = {k: v for k, v in manifest.items() if k != required}
        assert errors(validator, damaged) == ["(root): required"], required
