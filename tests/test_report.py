"""The release report (report.html, markdown, table): deterministic, self-contained, value-free; ``ppdp report``.

Two real releases (module-scoped, Prefect's test harness) of the census table with canary values planted in an
identifier, a rare quasi-identifier category, a rare category of an ``other`` column and a rare class: an
MDAV release (equivalence classes, fixed k) and a condensation release (generating groups, k tuned on a grid).
Other shapes (record unit, lattice, hostile names, rare labels) are copies of those folders with an edited
manifest or table.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.manifest import Manifest
from ppdp.schemas.reports import LatticeSearch, SyntheticMeasures, TuningTrace
from ppdp.tasks.report import (
    REPORT_NAME,
    SECTIONS,
    label_min_count,
    render_report,
    report_markdown,
    report_table,
    write_report,
)
from tests.conftest import base_spec, census

runner = CliRunner()
CANARIES = {
    "ssn": "CANARY-SSN-7741",  # identifier (dropped)
    "name": "CANARYNAME Quill",  # identifier (dropped)
    "occupation": "CANARYOCC",  # a category of a quasi-identifier seen once
    "hobby": "CANARYHOBBY",  # a category of an `other` column seen once
    "income": "CANARYCLASS",  # a class seen once
}
PUBLISHED_CANARIES = {  # values frequent enough to be published: the report still never shows them
    "hobby": ("CANARYHOBBYFREQ", range(100, 300)),  # the most common value: kept as many groups' mode
    "occupation": ("CANARYOCCFREQ", range(300, 450)),
    "income": ("CANARYCLASSMID", range(500, 507)),  # survives the rare-value rule (k=5), below the label rule's k
}
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def ppdp(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def releases(tmp_path_factory, prefect_harness) -> dict[str, Path]:
    """{"mdav": folder, "condensation": folder}: two releases of the canary table."""
    base = tmp_path_factory.mktemp("report")
    frame = census(600, seed=3)
    frame["hobby"] = [("chess", "golf", "music")[i % 3] for i in range(len(frame))]
    for row, (column, value) in enumerate(CANARIES.items(), start=3):
        frame.loc[row, column] = value
    for column, (value, rows) in PUBLISHED_CANARIES.items():
        frame.loc[list(rows), column] = value
    data = base / "census.csv"
    frame.to_csv(data, index=False)
    assert all(frame[c].eq(v).sum() == 1 for c, v in CANARIES.items())
    root = base / "releases"
    specs = {
        "mdav": base_spec(data, root, dataset="census_mdav", method={"name": "mdav", "k": 10},
                          privacy={"k": 5, "max_prosecutor_risk": 0.2}),
        "condensation": base_spec(data, root, dataset="census_cond", method__k=None,
                                  tuning={"strategy": "grid", "min": 10, "max": 30, "buckets": 3}),
    }
    out = {}
    for name, spec in specs.items():
        spec["columns"]["hobby"] = "other"
        path = base / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        result = ppdp("run", path)
        assert result.exit_code == 0, result.output
        [folder] = [p.parent for p in (root / spec["dataset"]).glob("*/manifest.json")]
        out[name] = folder
    return out


def copy_release(folder: Path, dest: Path) -> Path:
    target = dest / folder.name
    shutil.copytree(folder, target)
    (target / REPORT_NAME).unlink(missing_ok=True)
    return target


def edit_manifest(folder: Path, **update) -> Manifest:
    manifest = Manifest.model_validate_json((folder / "manifest.json").read_bytes())
    manifest = manifest.model_copy(update=update)
    (folder / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return manifest


def folder_state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# -- the page ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mdav", "condensation"])
def test_report_is_deterministic_self_contained_and_has_every_section(releases, name):
    folder = releases[name]
    first, second = render_report(folder), render_report(folder)
    assert first == second  # same folder -> byte-identical
    manifest = Manifest.model_validate_json((folder / "manifest.json").read_bytes())
    for sid, title in SECTIONS:
        assert re.search(rf'<section id="{sid}"><h2>.*?{re.escape(title)}</h2>', first), sid
    assert "<script" not in first.lower() and " on" + "error=" not in first  # no script, no handler
    assert "Content-Security-Policy" in first and "default-src 'none'" in first
    urls = set(re.findall(r"(?:src|href)\s*=\s*[\"']?([^\"' >]+)", first))
    assert urls and all(u.startswith("#") for u in urls), urls  # only in-page anchors
    assert set(re.findall(r"https?://[^\"' <]+", first)) == {"http://www.w3.org/2000/svg"}
    assert "<svg" in first and "Distribution of" in first  # the class-size histogram
    assert manifest.release_id in first and manifest.input_sha256 in first and manifest.spec_sha256 in first
    assert f"<code>{manifest.versions.pandas}</code>" in first  # the manifest's versions, not the installed ones
    if name == "condensation":  # a tuned release draws its curve and marks the chosen value
        assert manifest.tuning.evaluations and "Tuning of k" in first and "chosen k = " in first
        assert 'class="chosen"' in first


def test_no_data_value_reaches_the_report_markdown_or_table(releases):
    published = pd.read_parquet(releases["mdav"] / "data.parquet")  # the canaries are really there to leak
    for column, (value, _) in PUBLISHED_CANARIES.items():
        assert published[column].eq(value).any(), column
    mdav = Manifest.model_validate_json((releases["mdav"] / "manifest.json").read_bytes())
    assert 0 < published["income"].eq("CANARYCLASSMID").sum() < label_min_count(mdav)
    for folder in releases.values():
        manifest = Manifest.model_validate_json((folder / "manifest.json").read_bytes())
        assert manifest.ingest.rows == 600  # the canary rows were read
        assert any(c.name == "income" and c.action == "rows_removed" for c in manifest.rare_categories.columns)
        texts = {"report.html": render_report(folder), "markdown": report_markdown(manifest),
                 "table": json.dumps(report_table(manifest))}
        for where, text in texts.items():
            for column, canary in CANARIES.items():
                assert canary not in text and canary.split()[0] not in text, (where, column)
            assert "CANARY" not in text.upper(), where
            assert "987-65-4329" not in text, where  # conftest's planted SSN
        assert "class #1 (&gt;50K)" in texts["report.html"]  # a label seen >= k times may be named
        assert ">50K" not in texts["markdown"] + texts["table"]  # never in the artifacts


def test_a_class_label_is_named_only_when_seen_at_least_k_times(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path)
    manifest = Manifest.model_validate_json((folder / "manifest.json").read_bytes())
    k = label_min_count(manifest)
    assert k >= manifest.spec.privacy.k
    data = pd.read_parquet(folder / "data.parquet")
    data.loc[: k - 2, "income"] = "RARELABEL"  # k - 1 rows
    data.loc[k: 2 * k - 1, "income"] = "FREQLABEL"  # k rows
    data.to_parquet(folder / "data.parquet")
    per_class = list(manifest.utility.per_class)
    extra = [per_class[0].model_copy(update={"label": label}) for label in ("RARELABEL", "FREQLABEL")]
    edit_manifest(folder, utility=manifest.utility.model_copy(update={"per_class": per_class + extra}))
    html = render_report(folder)
    assert "RARELABEL" not in html and "(FREQLABEL)" in html


def test_hostile_column_names_are_escaped(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path)
    raw = json.loads((folder / "manifest.json").read_text())

    def rename(node):
        if isinstance(node, dict):
            return {(HOSTILE if k == "hours_per_week" else k): rename(v) for k, v in node.items()}
        if isinstance(node, list):
            return [rename(v) for v in node]
        return HOSTILE if node == "hours_per_week" else node

    (folder / "manifest.json").write_text(json.dumps(rename(raw)))
    data = pd.read_parquet(folder / "data.parquet").rename(columns={"hours_per_week": HOSTILE})
    data.to_parquet(folder / "data.parquet")
    html = render_report(folder)
    assert HOSTILE not in html and "<img" not in html and "<script" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html


def test_record_unit_and_lattice_shapes(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path)
    manifest = Manifest.model_validate_json((folder / "manifest.json").read_bytes())
    privacy = manifest.privacy.model_copy(update={
        "unit": "record", "k": None, "groups": None, "risk": None, "linkage_risk": 0.0, "dcr_quantile": 0.8,
        "synthetic": SyntheticMeasures(linkage_risk=0.0, dcr_quantiles={"q01": 0.5, "q05": 0.8})})
    lattice = TuningTrace(strategy="lattice", parameter="levels", chosen=None, rule="lattice search",
                          lattice=LatticeSearch(node={"age": 2, HOSTILE: 1}, measure="loss", measures={"loss": 0.25},
                                                checked=7, visited=12, total=40, classes=9))
    manifest = edit_manifest(folder, unit="record", privacy=privacy, tuning=lattice)
    html = render_report(folder)
    assert "no equivalence classes" in html and "Distribution of" not in html
    assert "DCR, 5% quantile" in html and "checked 7 of 40 nodes" in html
    assert HOSTILE not in html and "<script" not in report_markdown(manifest)
    fixed = TuningTrace(strategy="fixed", parameter=None, chosen=None, rule="method x has no tunable parameter")
    edit_manifest(folder, tuning=fixed)
    assert "nothing was tuned" in render_report(folder)


def test_markdown_and_table_summarize_claims_and_key_figures(releases):
    manifest = Manifest.model_validate_json((releases["mdav"] / "manifest.json").read_bytes())
    md = report_markdown(manifest)
    assert manifest.release_id in md and "Privacy claims: 2 of 2 hold" in md
    rows = report_table(manifest)
    assert len({tuple(sorted(r)) for r in rows}) == 1  # one shape for every row
    claims = [r for r in rows if r["kind"] == "privacy claim"]
    assert [r["name"] for r in claims] == [c.name for c in manifest.privacy.claims]
    assert all(r["verdict"] == "holds" for r in claims)
    figures = {r["name"]: r["value"] for r in rows if r["kind"] == "figure"}
    assert figures["rows"] == manifest.rows and figures["accuracy"] == manifest.utility.accuracy
    assert all(isinstance(v, str | int | float | type(None)) for r in rows for v in r.values())


def test_report_module_imports_neither_prefect_nor_great_expectations(releases):
    code = ("import sys; from pathlib import Path; from ppdp.tasks.report import render_report; "
            f"render_report(Path({str(releases['mdav'])!r})); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('prefect', 'great_expectations')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]


# -- ppdp report ---------------------------------------------------------------------------------------------------
def test_cli_report_never_writes_the_signed_folder(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path / "rel")
    before = folder_state(folder)
    result = ppdp("report", folder)  # no report.html, no --out
    assert result.exit_code == 2 and result.output.startswith("ppdp: error:") and "--out" in result.output
    assert len(result.output.strip().splitlines()) == 1 and folder_state(folder) == before

    out = tmp_path / "elsewhere" / "report.html"
    result = ppdp("report", folder, "--out", out)
    assert result.exit_code == 0 and str(out) in result.output
    assert out.read_bytes() == render_report(folder).encode("utf-8") and folder_state(folder) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.html"]  # no temporary file left

    assert ppdp("report", folder, "--out", folder / REPORT_NAME).exit_code == 2  # not inside the folder
    assert folder_state(folder) == before

    write_report(folder)  # as publish writes it
    result = ppdp("report", folder)
    assert result.exit_code == 0 and "up to date" in result.output and str(folder / REPORT_NAME) in result.output
    (folder / REPORT_NAME).write_bytes((folder / REPORT_NAME).read_bytes().replace(b"</footer>", b"!</footer>"))
    altered = folder_state(folder)
    result = ppdp("report", folder)
    assert result.exit_code == 2 and "differs" in result.output and folder_state(folder) == altered
    result = ppdp("report", folder, "--out", out)
    assert result.exit_code == 0 and "differs from" in result.output


def test_cli_report_bad_folder_is_one_line_naming_the_file(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path)
    manifest = folder / "manifest.json"
    manifest.write_text(manifest.read_text()[:-40])  # damaged
    result = ppdp("report", folder, "--out", tmp_path / "r.html")
    assert result.exit_code == 2 and str(manifest) in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    manifest.unlink()
    result = ppdp("report", folder)
    assert result.exit_code == 2 and "manifest.json is missing" in result.output
    assert not (tmp_path / "r.html").exists()


# -- a real browser ------------------------------------------------------------------------------------------------
CHROMIUM = next((p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None)


def dump_dom(page: Path, profile: Path) -> tuple[str, list[str]]:
    """(the DOM after loading ``page`` headless, the console messages Chromium logged)."""
    proc = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on the PATH (Debian: apt-get install chromium)")
def test_report_loads_in_a_headless_browser_without_console_errors(releases, tmp_path):
    broken = tmp_path / "broken.html"  # the check itself can fail: a page with a console error and a bad script
    broken.write_text('<!DOCTYPE html><html><body><h1>x</h1><script>console.error("planted"); nope();</script>'
                      "</body></html>")
    _, console = dump_dom(broken, tmp_path / "profile")
    assert any("planted" in line for line in console) and any("nope" in line for line in console)

    page = write_report(releases["condensation"], tmp_path / REPORT_NAME)
    dom, console = dump_dom(page, tmp_path / "profile")
    assert console == []
    for sid, title in SECTIONS:
        assert f'id="{sid}"' in dom and title in dom
    assert dom.count("<svg") >= 3  # histogram, per-class accuracy, tuning curve
