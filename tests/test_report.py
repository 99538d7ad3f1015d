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
from html import escape, unescape
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.manifest import Manifest
from ppdp.schemas.privacy import FLOOR
from ppdp.schemas.reports import AcceptedBelowFloor, LatticeSearch, SyntheticMeasures, TuningTrace
from ppdp.tasks.privacy.attacker import describe_floor_claim
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
    """{"mdav": folder, "condensation": folder, "tree": folder}: three releases of the canary table."""
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
        # k = 12: classes of 12 to 23 records keep the average re-identification risk under the safety floor's 0.09
        "mdav": base_spec(data, root, dataset="census_mdav", method={"name": "mdav", "k": 12},
                          privacy={"k": 5, "max_prosecutor_risk": 0.2}),
        "condensation": base_spec(data, root, dataset="census_cond", method__k=None,
                                  tuning={"strategy": "grid", "min": 10, "max": 30, "buckets": 3}),
        # protects an attribute: the quasi-identifiers are published unchanged (identity_by "none")
        "tree": base_spec(data, root, dataset="census_tree", privacy={"k": 10},
                          method={"name": "perturbation_tree", "leaf_size": 20}),
    }
    specs["tree"]["columns"]["hours_per_week"] = "sensitive"
    out = {}
    for name, spec in specs.items():
        spec["columns"]["hobby"] = "other"
        # a root each: three releases of the same records under one root form a series, which would refuse them
        spec["publish"]["root"] = str(root / name)
        path = base / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        result = ppdp("run", path)
        assert result.exit_code == 0, result.output
        [folder] = [p.parent for p in (root / name / spec["dataset"]).glob("*/manifest.json")]
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
@pytest.mark.parametrize("name", ["mdav", "condensation", "tree"])
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
    assert manifest.release_id in first and manifest.input_digest in first and manifest.spec_sha256 in first
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


def test_a_lattice_search_states_its_objective_and_counts_the_suppressed_class(releases, tmp_path):
    """Generalization's report said "64 equivalence classes" (the published table, the suppressed records' class
    included) and "63" (the lattice search: the records kept), and "objective: most privacy within gap"."""
    folder = copy_release(releases["mdav"], tmp_path)
    published = int(pd.read_parquet(folder / "data.parquet")[load(folder).roles.quasi_identifiers]
                    .astype(str).value_counts().size)
    lattice = TuningTrace(strategy="lattice", parameter="levels", chosen=None, rule="lattice search",
                          lattice=LatticeSearch(node={"age": 2}, measure="discernibility", measures={}, checked=7,
                                                visited=12, total=40, classes=published - 1, suppressed_rows=9))
    manifest = edit_manifest(folder, tuning=lattice)
    html = render_report(folder)
    tuning = section(html, "tuning")
    assert "most privacy within gap" not in tuning
    assert re.search(r"<dt>objective</dt>\s*<dd>least discernibility among the nodes meeting every gate</dd>", tuning)
    assert f"forms {published - 1} equivalence classes of the records it keeps and suppresses 9 records" in tuning
    assert f"<b>{published} equivalence classes</b> in the published table" in tuning
    assert f"fall into <b>{published} equivalence classes</b>" in section(html, "risk")  # the same count
    assert "least discernibility among the nodes meeting every gate" in report_markdown(manifest)


def test_markdown_and_table_summarize_claims_and_key_figures(releases):
    manifest = Manifest.model_validate_json((releases["mdav"] / "manifest.json").read_bytes())
    md = report_markdown(manifest)
    assert manifest.release_id in md and "Privacy claims: 2 of 2 hold" in md
    rows = report_table(manifest)
    assert len({tuple(sorted(r)) for r in rows}) == 1  # one shape for every row
    claims = [r for r in rows if r["kind"] == "privacy claim"]
    assert [r["name"].replace("\\", "") for r in claims] == [c.name for c in manifest.privacy.claims]  # escaped
    assert all(r["verdict"] == "holds" for r in claims)
    figures = {r["name"]: r["value"] for r in rows if r["kind"] == "figure"}
    assert figures["rows"] == manifest.rows
    assert figures["accuracy"] == pytest.approx(manifest.utility.accuracy, rel=1e-3)  # 4 significant digits
    assert all(isinstance(v, str | int | float | type(None)) for r in rows for v in r.values())


def test_table_artifact_cells_render_as_text_verdict_first_and_figures_rounded(releases):
    """Prefect renders each text cell of a table artifact as markdown on its own (a '>=' at a cell's start was a
    blockquote); the verdict and value were off-screen at the right; figures were printed at full precision."""
    markdown_it = pytest.importorskip("markdown_it")
    render = markdown_it.MarkdownIt("commonmark").render
    manifest = load(releases["mdav"])
    floor = manifest.privacy.floor
    hostile = "> *star* _under_ `tick` | pipe"  # markdown in a name: rendered as the same text, never formatted
    failing = [c.model_copy(update={"value": 0.0900004, "passed": False}) if c.name == "floor: average risk"
               else c for c in floor.claims]  # fails by a hair: 4 digits would print 0.09 <= 0.09 "fails"
    claims = [*manifest.privacy.claims, manifest.privacy.claims[0].model_copy(update={"name": hostile})]
    manifest = manifest.model_copy(update={"privacy": manifest.privacy.model_copy(update={
        "claims": claims, "floor": floor.model_copy(update={"claims": failing, "holds": False})})})
    rows = report_table(manifest)
    assert list(rows[0]) == ["verdict", "value", "comparison", "threshold", "name", "kind", "measure", "unit"]
    assert all(list(r) == list(rows[0]) for r in rows)
    for r in rows:
        for key, value in r.items():
            if isinstance(value, str):  # one paragraph of plain text: no blockquote, list, emphasis, code, table
                rendered = render(value)
                assert re.fullmatch(r"<p>[^<]*</p>\n", rendered), (key, value, rendered)
            elif isinstance(value, float):
                assert float(f"{value:.6g}") == value, (key, value)  # at most 6 significant digits
    by_name = {unescape(re.sub(r"\\(.)", r"\1", str(r["name"]))): r for r in rows}
    assert render(by_name[hostile]["name"]) == f"<p>{escape(hostile, quote=False)}</p>\n"
    k, risk = by_name["k"], by_name["max_prosecutor_risk"]
    assert (k["verdict"], k["comparison"], risk["comparison"]) == ("holds", "≥", "≤")
    assert re.fullmatch(r"<p>≥</p>\n", render(k["comparison"]))  # was ">=": a blockquote holding "="
    hair = by_name["floor: average risk"]
    assert hair["verdict"] == "fails" and hair["value"] != hair["threshold"] == 0.09
    figures = {r["name"]: r["value"] for r in rows if r["kind"] == "figure"}
    for name in ("accuracy", "accuracy ratio", "attacker: average risk", "mean class size"):
        assert float(f"{figures[name]:.4g}") == figures[name], name  # 4 significant digits
    md = report_markdown(manifest).splitlines()
    assert "| verdict | value | rule | claim | measured |" in md and "| verdict | value | limit | safety floor |" in md
    assert "| FAILS | 0.0900004 | ≤ 0.09 | floor: average risk |" in md  # not "0.09 | ≤ 0.09"


def test_report_module_imports_neither_prefect_nor_great_expectations(releases):
    code = ("import sys; from pathlib import Path; from ppdp.tasks.report import render_report; "
            f"render_report(Path({str(releases['mdav'])!r})); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('prefect', 'great_expectations')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]


# -- green means safe: the attacker's view and the safety floor first ----------------------------------------------
def load(folder: Path) -> Manifest:
    return Manifest.model_validate_json((folder / "manifest.json").read_bytes())


def section(html: str, sid: str) -> str:
    start = html.index(f'<section id="{sid}">')
    return html[start:html.index("</section>", start)]


def header(html: str) -> str:
    return html[html.index('<header class="top'):html.index("</header>")]


def opening(html: str) -> str:
    """The first paragraph of the first section."""
    summary = section(html, "summary")
    start = summary.index("<p")
    return summary[start:summary.index("</p>", start)]


def test_opening_paragraph_says_what_is_and_is_not_protected(releases):
    tree, mdav, cond = (load(releases[n]) for n in ("tree", "mdav", "condensation"))
    assert tree.privacy.attacker_view.identity_by == "none" and mdav.privacy.attacker_view.identity_by == "classes"
    first = opening(render_report(releases["tree"]))
    assert "It does not protect against identity disclosure: who is in which row is not hidden" in first
    assert "quasi-identifiers (age, sex, zip, race, marital_status, education, occupation) are published " \
           "unchanged" in first
    alone = tree.privacy.attacker_view.records_alone
    assert f"and {100 * alone:.1f}% of the published records are alone on them" in first
    [d] = tree.privacy.attacker_view.disclosure  # what it protects: hours_per_week, against the baseline
    assert "protects against attribute disclosure of hours_per_week" in first
    assert f"for {100 * d.disclosure:.1f}% of the records, against {100 * d.baseline:.1f}% by the best constant " \
           "guess" in first
    first = opening(render_report(releases["mdav"]))
    assert "protects against identity disclosure" in first and "equivalence classes hide identities" in first
    assert f"the smallest class holds {mdav.privacy.attacker_view.smallest_class} records" in first
    assert "published unchanged" not in first
    first = opening(render_report(releases["condensation"]))
    assert "generating groups hide identities" in first and f"({cond.privacy.attacker_view.groups} groups" in first


def test_the_badge_shows_the_policy_and_the_safety_floor(releases):
    assert load(releases["mdav"]).privacy.floor.holds
    top = header(render_report(releases["mdav"]))
    assert top.startswith('<header class="top">')  # not red
    assert re.search(r'<p class="verdicts"><span class="badge ok">policy holds</span>'
                     r'<span class="badge ok">safety floor holds</span></p>', top), top


def test_a_release_below_the_floor_has_a_red_header_with_its_reason(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path)
    manifest = load(folder)
    floor = manifest.privacy.floor
    failing = [c.model_copy(update={"value": 0.125, "passed": False}) if c.name == "floor: average risk" else c
               for c in floor.claims]
    failed = [describe_floor_claim(c) for c in failing if not c.passed]
    reason = "paper 003 baseline <for comparison>"
    below = floor.model_copy(update={"holds": False, "claims": failing, "accepted": AcceptedBelowFloor(
        reason=reason, approved_by="data owner & DPO", failed=failed)})
    manifest = edit_manifest(folder, privacy=manifest.privacy.model_copy(update={"floor": below}))
    html = render_report(folder)
    top = header(html)
    assert top.startswith('<header class="top below">')
    assert '<span class="badge ok">policy holds</span><span class="badge bad">below the safety floor</span>' in top
    assert "Published below the safety floor: paper 003 baseline &lt;for comparison&gt;" in top
    assert "Approved by <b>data owner &amp; DPO</b>" in top
    assert len(failed) == 1 and failed[0].startswith("average risk 0.125 (floor <= 0.09)")
    assert f"<li>{failed[0].replace('<', '&lt;')}</li>" in top  # each failed floor row, escaped
    assert "It is below the safety floor (average risk): published on purpose" in opening(html)
    assert 'class="verdict bad">Published below the safety floor on purpose' in section(html, "risk")
    md = report_markdown(manifest)
    assert md.startswith("**Verdict: policy holds · below the safety floor**\n")
    assert "**Published below the safety floor: paper 003 baseline &lt;for comparison&gt;** (approved by data " \
           "owner &amp; DPO)" in md
    figures = {r["name"]: r["value"] for r in report_table(manifest)}
    assert figures["safety floor"] == "below the safety floor"
    assert [r["verdict"] for r in report_table(manifest) if r["name"] == "floor: average risk"] == ["fails"]


def test_a_manifest_made_before_the_floor_still_renders(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path)
    manifest = load(folder)
    manifest = edit_manifest(folder, privacy=manifest.privacy.model_copy(update={"attacker_view": None,
                                                                                   "floor": None}))
    html = render_report(folder)
    assert html == render_report(folder)
    top = header(html)
    assert top.startswith('<header class="top">')
    assert '<span class="badge muted">made before the safety floor (not measured)</span>' in top
    assert "made before the safety floor" in opening(html)
    risk = section(html, "risk")
    assert risk.count("made before the safety floor") == 2  # no attacker's view, no floor table
    assert "Distribution of" in risk and "Re-identification risk" in risk  # the unit's own figures still there
    md = report_markdown(manifest)
    assert md.startswith("**Verdict: policy holds · made before the safety floor (not measured)**")
    rows = report_table(manifest)
    assert not [r for r in rows if r["kind"] == "floor" or str(r["name"]).startswith("attacker")]


def test_a_column_starred_in_every_row_is_called_out(releases, tmp_path):
    folder = copy_release(releases["mdav"], tmp_path)
    data = pd.read_parquet(folder / "data.parquet")
    data["occupation"] = "*"
    data.to_parquet(folder / "data.parquet")
    manifest = load(folder)
    assert "occupation" not in manifest.privacy.attacker_view.uninformative_columns
    assert "no information" not in render_report(folder)
    view = manifest.privacy.attacker_view.model_copy(update={"uninformative_columns": ["occupation"]})
    manifest = edit_manifest(folder, privacy=manifest.privacy.model_copy(update={"attacker_view": view}))
    summary = section(render_report(folder), "summary")
    [row] = re.findall(r"<tr><td class=\"num\">\d+</td><td><code>occupation</code></td>.*?</tr>", summary)
    assert '<span class="badge t-none">no information</span>' in row  # in the columns table
    assert "<code>occupation</code> is '*' (or missing) in every published row: it carries no information." \
           in summary
    assert "carry no information ('\\*' or missing in every row): occupation" in report_markdown(manifest)
    assert {r["name"]: r["value"] for r in report_table(manifest)}["attacker: uninformative columns"] == "occupation"


def test_the_risk_section_leads_with_the_attacker_then_the_floor_then_the_unit(releases):
    for name in ("mdav", "condensation", "tree"):
        manifest = load(releases[name])
        risk = section(render_report(releases[name]), "risk")
        order = [risk.index(h) for h in ('<h3 class="block">What an attacker sees</h3>',
                                         '<h3 class="block">The safety floor</h3>',
                                         '<h3 class="block">The privacy unit\'s own figures', "Distribution of")]
        assert order == sorted(order) and order[0] < risk.index("<p"), name
        floor_table = risk[order[1]:order[2]]
        claims = manifest.privacy.floor.claims
        assert claims and floor_table.count("<tr>") == len(claims) + 1, name  # one row per floor claim
        for c in claims:
            [rule] = [r for r in FLOOR if c.name.removeprefix("floor: ").startswith(r.key.replace("_", " "))]
            text = rule.source.removeprefix("ppdp's choice: ")
            kind = "ppdp&#x27;s choice" if rule.source.startswith("ppdp's choice") else "cited standard"
            assert f"{kind}</span> {escape(text)}" in floor_table, (name, c.name)
        view = manifest.privacy.attacker_view
        attacker = risk[order[0]:order[1]]
        assert f"records alone</td><td class=\"num\">{100 * view.records_alone:.1f}%" in attacker, name
    tree = load(releases["tree"]).privacy.attacker_view
    [d] = tree.disclosure
    risk = section(render_report(releases["tree"]), "risk")
    assert "<h4>Attribute disclosure</h4>" in risk and ">baseline</th>" in risk
    assert (f"<td class=\"num\">{100 * d.disclosure:.1f}%</td><td class=\"num\">{100 * d.baseline:.1f}%</td>"
            f"<td class=\"num\">{100 * d.gain:+.1f} points</td>") in risk
    assert tree.counted_columns == ["hobby"] and "<dt>counted in beside them</dt><dd><code>hobby</code>" in risk
    assert "European Medicines Agency" in section(render_report(releases["mdav"]), "risk")  # a cited standard


def test_markdown_starts_with_the_verdict_and_the_attacker_and_the_table_has_floor_rows(releases):
    for name in ("mdav", "tree"):
        manifest = load(releases[name])
        md = report_markdown(manifest)
        lines = md.splitlines()
        assert lines[0] == "**Verdict: policy holds · safety floor holds**", name
        attacker = lines.index("**What an attacker sees:**")
        assert attacker < lines.index(next(x for x in lines if x.startswith("# Release")))
        assert lines[attacker + 1].startswith("- records alone "), name
        assert "| floor: " in md
        rows = report_table(manifest)
        assert len({tuple(sorted(r)) for r in rows}) == 1  # the floor rows have the same keys
        floor = [r for r in rows if r["kind"] == "floor"]
        names = [r["name"].replace("\\", "") for r in floor]  # markdown-escaped: hours\_per\_week
        assert names == [c.name for c in manifest.privacy.floor.claims] and floor
        assert all(r["verdict"] == "holds" and r["threshold"] is not None for r in floor)
        names = [r["name"] for r in rows]
        assert names[:2] == ["policy", "safety floor"]
        assert rows[1]["value"] == "safety floor holds"
        assert names.index("attacker: records alone") < names.index("linkage risk" if name == "tree" else "classes")
    assert "- attribute 'hours\\_per\\_week': learned within" in report_markdown(load(releases["tree"]))


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


def test_every_method_describes_itself():
    """The report holds no table of methods: each sanitizer states its own description, read through the registry
    (a method no longer registered is named only)."""
    from ppdp.tasks.report.wording import method_text
    from ppdp.tasks.sanitize.registry import REGISTRY

    for name, method in REGISTRY.items():
        assert method.description and method_text(name) == method.description, name
    assert method_text("retired_method") == "retired_method"
