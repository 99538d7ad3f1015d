"""Write the JSON Schemas of the release spec and of a release's ``manifest.json``: ``python -m ppdp.schemas.export``
(tests check that the committed copies are current).

Each document is JSON Schema draft 2020-12 as pydantic emits it for validation (what ``ReleaseSpec`` and
``Manifest`` accept), headed by ``$schema``, ``$id``, ``title`` and ``description``; every other key is sorted, so
the output depends only on the models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.spec import ReleaseSpec

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_DIR = Path(__file__).parent
SCHEMA_PATH = SCHEMA_DIR / "release.schema.json"
MANIFEST_SCHEMA_PATH = SCHEMA_DIR / "manifest.schema.json"


def _sorted(node: Any) -> Any:
    """``node`` with the keys of every mapping in sorted order (list order is kept: it can mean something)."""
    if isinstance(node, dict):
        return {key: _sorted(node[key]) for key in sorted(node)}
    if isinstance(node, list):
        return [_sorted(item) for item in node]
    return node


def schema_document(model: type[BaseModel], *, schema_id: str, title: str, summary: str) -> str:
    """The JSON Schema of ``model`` as text: the header (``$schema``, ``$id``, ``title``, and a ``description``:
    ``summary`` then the model's docstring) first, every other key sorted, two-space indents, a final newline."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    doc = schema.pop("description", "")
    head = {"$schema": DRAFT, "$id": schema_id, "title": title,
            "description": f"{summary}\n\n{doc}" if doc else summary}
    return json.dumps({**head, **_sorted(schema)}, indent=2) + "\n"


def release_schema_json() -> str:
    """The release spec's JSON Schema (``schemas/release.schema.json``)."""
    return schema_document(
        ReleaseSpec, schema_id="urn:ppdp:schema:release-spec", title="ppdp release spec",
        summary="The YAML release spec of ppdp (validated by ppdp.schemas.spec.ReleaseSpec). Relative paths resolve "
                "against the spec file's folder.")


def manifest_schema_json() -> str:
    """The JSON Schema of a published release's ``manifest.json`` (``schemas/manifest.schema.json``)."""
    return schema_document(
        Manifest, schema_id="urn:ppdp:schema:manifest", title="ppdp release manifest (manifest.json)",
        summary="The manifest.json beside a published release's data.parquet (validated by "
                "ppdp.schemas.manifest.Manifest): what was published, from which input, by which method and spec, "
                "and every privacy claim with how to re-check it.")


SCHEMAS = {SCHEMA_PATH: release_schema_json, MANIFEST_SCHEMA_PATH: manifest_schema_json}
"""Every committed schema file and the function that produces its text."""


def main() -> None:
    for path, produce in SCHEMAS.items():
        path.write_text(produce(), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
