"""Planted values: a release of a table with undeclared risky columns publishes none of them, anywhere.

Issue 7, section 1: undeclared free text, dirty SSNs, names, e-mail addresses and rare categories once went
through the rank encoder and came back word for word. Here every planted value is searched for in the published
data (every cell as text), the manifest, the audit trail (raw bytes), everything else under the publish root,
the CLI output, and every file Prefect's home, result storage and database folder hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks.publish import load_manifest
from tests.conftest import PREFECT_HOME, RESULT_STORAGE, SENTINEL_SSN, base_spec, census

pytestmark = pytest.mark.usefixtures("prefect_harness")

# method spec fragments (top-level spec keys) every planted release runs with; the lead adds MDAV and noise
METHODS = [
    pytest.param({"method": {"name": "condensation", "variant": "class_wise", "k": 20},
                  "tuning": {"strategy": "fixed"}}, id="condensation"),
    pytest.param({"method": {"name": "mdav", "k": 12}, "tuning": {"strategy": "fixed"},
                  "privacy": {"k": 12}}, id="mdav"),
    pytest.param({"method": {"name": "noise", "scale": 1.0}, "tuning": {"strategy": "fixed"},
                  "privacy": {"max_linkage_risk": 0.9,  # this small table stays linkable: below the floor on purpose
                              "accept_below_floor": {"reason": "a test of planted values, not of the floor",
                                                     "approved_by": "the test suite"}}}, id="noise"),
]

ROWS = 400
PLANTED = {
    "notes": "Qorvath mentioned the zephyrine lawsuit privately",  # a unique note in a free-text column
    "remarks": "Vellimar disclosed an undiagnosed condition",  # a unique note in a mostly-"none" column
    "tax_ref": "919-55-7731",  # dirty SSNs: a quarter of the cells say "unknown"
    "ref_b": "918-44-1234",  # clean SSNs
    "holder": "Zebulon Quixote",  # names, clean
    "cosigner": "Xanthippe Vorhees",  # names, dirty (mostly "none")
    "contact": "plant.person@example.org",  # e-mail addresses, dirty (mostly "n/a")
    "city": "Ulaanbaatar",  # a city seen once
    "city2": "Timbuktu",  # a city seen twice (< k)
}
NEEDLES = sorted({*PLANTED.values(), "Qorvath", "zephyrine", "Vellimar", "Zebulon", "Quixote", "Xanthippe",
                  "Vorhees", "plant.person", SENTINEL_SSN})  # no short fragments: they could occur in a UUID
FIRST = ["Ada", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu", "Mo", "Ned", "Oz", "Pia",
         "Quin", "Roy", "Sue", "Ty", "Uma", "Val", "Wes", "Xia", "Yul", "Zoe"]
LAST = ["Abbot", "Baker", "Clark", "Dunn", "Ellis", "Ford", "Grant", "Hayes", "Irwin", "Judd", "Kerr", "Lamb",
        "Marsh", "Nash", "Oakes", "Pratt", "Quill", "Reed", "Shaw", "Tate", "Upton", "Vance", "Wolfe", "Yates"]
WORDS = ["called", "about", "billing", "follow", "up", "on", "the", "results", "asked", "for", "a", "copy", "of",
         "letter", "left", "voicemail", "again", "needs", "review", "next", "week"]


def planted_table() -> pd.DataFrame:
    rng = np.random.default_rng(2026)
    frame = census(ROWS, seed=11)
    n = len(frame)

    def ssn() -> str:
        return f"{rng.integers(100, 899)}-{rng.integers(10, 99)}-{rng.integers(1000, 9999)}"

    def name() -> str:
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"

    templates = [" ".join(rng.choice(WORDS, 6)) for _ in range(6)]
    frame["notes"] = [" ".join(rng.choice(WORDS, int(rng.integers(4, 12)))) for _ in range(n)]
    frame["remarks"] = [str(rng.choice(templates)) if rng.random() < 0.3 else "none" for _ in range(n)]
    frame["tax_ref"] = ["unknown" if i % 4 == 0 else ssn() for i in range(n)]
    frame["ref_b"] = [ssn() for _ in range(n)]
    frame["holder"] = [name() for _ in range(n)]
    frame["cosigner"] = [name() if rng.random() < 0.3 else "none" for _ in range(n)]
    frame["contact"] = [f"p{i}@mail.example.com" if rng.random() < 0.2 else "n/a" for i in range(n)]
    frame["city"] = rng.choice(["Springfield", "Riverton", "Lakeside", "Hillcrest", "Fairview"], n)
    rows = rng.choice(n, 12, replace=False)
    for column in ["notes", "remarks", "tax_ref", "ref_b", "holder", "cosigner", "contact", "city"]:
        frame.loc[rows[0 if column != "remarks" else 1], column] = PLANTED[column]
    frame.loc[rows[2:4], "city"] = PLANTED["city2"]
    return frame


def ppdp(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def files_under(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in folder.rglob("*") if p.is_file()]


@pytest.mark.parametrize("method", METHODS)
def test_no_planted_value_is_published_or_stored(tmp_path, method):
    frame = planted_table()
    data = tmp_path / "planted.csv"
    frame.to_csv(data, index=False)
    root = tmp_path / "releases"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(base_spec(data, root, **method)), encoding="utf-8")
    for column, value in PLANTED.items():  # the planted values are really in the input
        assert (frame[column if column != "city2" else "city"] == value).sum() == (2 if column == "city2" else 1)

    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = sorted(p.parent for p in root.glob("*/*/manifest.json"))

    # what was done, and why (never a value)
    manifest = load_manifest(folder)
    roles = {c.name: c for c in manifest.roles.columns}
    for column in ["notes", "remarks", "tax_ref", "holder", "contact"]:
        assert roles[column].treatment == "dropped" and roles[column].source == "auto", column
    assert roles["ref_b"].role.value == "identifier" and roles["ref_b"].treatment == "dropped"
    assert "%" in roles["tax_ref"].reason and "social security" in roles["tax_ref"].reason
    assert "prose" in roles["remarks"].reason and "many distinct values" in roles["holder"].reason
    assert [c.position for c in manifest.roles.columns] == list(range(frame.shape[1]))
    rare = {c.name: c for c in manifest.rare_categories.columns if c.counted_on == "input"}  # the first pass
    k = manifest.spec.privacy.k or 2  # record methods have no k: the rule uses 2
    city_counts = frame["city"].value_counts()
    rare_cities = city_counts[city_counts < k]
    assert rare["city"].values_merged == len(rare_cities) and rare["city"].cells_affected == int(rare_cities.sum())
    assert rare["cosigner"].values_merged > 50  # every name seen fewer than k times
    published = pd.read_parquet(folder / "data.parquet")
    assert not {"person_id", "name", "ssn", "notes", "remarks", "tax_ref", "ref_b", "holder", "contact"} & set(
        published.columns)
    assert {"city", "cosigner"} <= set(published.columns)

    # every published categorical cell holds a value seen at least k times in the input (or the token / missing)
    for column in ["city", "cosigner", "sex", "race", "zip", "occupation", "marital_status"]:
        counts = frame[column].astype(str).value_counts()
        tokens = {c.token for c in manifest.rare_categories.columns if c.name == column}  # either pass's
        for value in published[column].dropna().astype(str).unique():
            assert value in tokens or counts.get(value, 0) >= k, (column, "a rare input value is published")

    # search everywhere for every planted value
    cells = "\n".join(str(v) for v in published.to_numpy(dtype=object).ravel())
    texts = {"data.parquet cells": cells, "CLI output": result.output,
             "manifest.json": (folder / "manifest.json").read_text(encoding="utf-8")}
    db_dir = Path(PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split("///", 1)[1]).parent
    stored = files_under(root, PREFECT_HOME, RESULT_STORAGE, db_dir)
    assert any(p.name == "audit.db" for p in stored) and any(p.suffix == ".db" and p.parent == db_dir for p in stored)
    blobs = {str(p): p.read_bytes() for p in stored}
    for needle in NEEDLES:
        if needle == PLANTED["city2"] and k <= 2:
            continue  # seen twice: not rarer than k = 2, so it may be published
        for where, text in texts.items():
            assert needle not in text, f"planted value found in {where}"
        raw = needle.encode("utf-8")
        for where, blob in blobs.items():
            assert raw not in blob, f"planted value found in {where}"
    assert json.loads(texts["manifest.json"])["rare_categories"]["k"] == k
