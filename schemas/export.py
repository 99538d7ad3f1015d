"""Write the release spec's JSON Schema: ``python -m schemas.export`` (a test checks the committed copy)."""

from __future__ import annotations

import json
from pathlib import Path

from ppdp.schemas.spec import ReleaseSpec

SCHEMA_PATH = Path(__file__).with_name("release.schema.json")


def release_schema_json() -> str:
    schema = ReleaseSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "ppdp release spec"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> None:
    SCHEMA_PATH.write_text(release_schema_json(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
