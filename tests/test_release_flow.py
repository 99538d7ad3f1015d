"""The release flow end to end on real parts: Prefect (test harness), Great Expectations, pyarrow, SQLite."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks import audit
from ppdp.tasks.publish import load_manifest, manifest_sha256
from tests.conftest import PREFECT_HOME, RESULT_STORAGE, SENTINEL_SSN

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()


def ppdp(*args: str):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def published_folders(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/*/manifest.json"))


def test_run_publishes_a_validated_audited_release(workspace):
    spec = workspace.spec()
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = published_folders(workspace.root)
    assert folder.name in result.output and "k = " in result.output and "class >50K" in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["data.parquet", "manifest.json", "report.html"]

    manifest = load_manifest(folder)
    raw = json.loads((folder / "manifest.json").read_text())
    for key in ["release_id", "dataset", "created_at", "status", "input_digest", "output_sha256", "spec", "roles",
                "method", "seed", "privacy", "utility", "tuning", "versions", "flow_run_id"]:
        assert raw[key] is not None, key
    assert manifest.status == "published" and manifest.seed == 7 and manifest.flow_run_id
    assert manifest.method.params["k"] == 20 and manifest.tuning.chosen == 20
    assert manifest.privacy.k >= 10 and manifest.privacy.linkage_risk is not None
    assert set(manifest.privacy.quasi_identifiers) >= {"age", "sex", "zip", "education"}
    assert {c.label for c in manifest.utility.per_class} == {"<=50K", ">50K"}
    assert set(raw["versions"]) == {"ppdp", "python", "prefect", "pandas", "numpy", "scikit_learn", "pyarrow", "code",
                                    "great_expectations"}

    table = pq.read_table(folder / "data.parquet")
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items() if k.startswith(b"ppdp.")}
    assert meta == {"ppdp.release_id": manifest.release_id, "ppdp.manifest_sha256": manifest_sha256(manifest)}
    data = table.to_pandas()
    assert not {"person_id", "ssn", "name"} & set(data.columns)  # direct identifiers never published
    assert len(data) == manifest.rows == 540  # 10% held out, never published
    assert SENTINEL_SSN.encode() not in (folder / "data.parquet").read_bytes()

    pending, entry = audit.list_entries(workspace.root)  # written before the rename, completed after it
    assert pending.status == "pending" and pending.files == entry.files and entry.completes == pending.seq
    assert entry.status == "published" and entry.output_sha256 == manifest.output_sha256
    assert entry.flow_run_id == manifest.flow_run_id and entry.user and entry.host
    assert ppdp("audit", "verify", "--root", workspace.root).exit_code == 0
    shown = ppdp("audit", "show", manifest.release_id, "--root", workspace.root)
    assert shown.exit_code == 0 and "k=" in shown.output
    assert manifest.release_id in ppdp("audit", "list", "--root", workspace.root).output


@pytest.mark.slow  # a whole release (seconds): .ci/run runs it; make test stays under 4 minutes
def test_audit_verify_fails_after_one_byte_changes_or_a_row_is_deleted(workspace):
    spec = workspace.spec()
    assert ppdp("run", spec).exit_code == 0
    # the same records again, under another name: the same groups, so the series publishes it
    assert ppdp("run", spec, "--set", "dataset=census_b").exit_code == 0
    first, second = published_folders(workspace.root)
    data = first / "data.parquet"
    blob = bytearray(data.read_bytes())
    blob[len(blob) // 2] ^= 0x01
    data.write_bytes(bytes(blob))
    result = ppdp("audit", "verify", "--root", workspace.root)
    assert result.exit_code == 1 and f"release {first.name}" in result.output and "altered" in result.output
    blob[len(blob) // 2] ^= 0x01
    data.write_bytes(bytes(blob))
    assert ppdp("audit", "verify", "--root", workspace.root).exit_code == 0
    with sqlite3.connect(workspace.root / "audit.db") as conn:
        conn.execute("DELETE FROM entries WHERE release_id = ?", (second.name,))
    result = ppdp("audit", "verify", "--root", workspace.root)
    assert result.exit_code == 1 and second.name in result.output


def test_same_spec_input_and_seed_give_the_same_release(workspace):
    spec = workspace.spec()
    assert ppdp("run", spec).exit_code == 0
    assert ppdp("run", spec, "--force").exit_code == 0  # without --force: unchanged, nothing published
    a, b = published_folders(workspace.root)
    pd.testing.assert_frame_equal(pd.read_parquet(a / "data.parquet"), pd.read_parquet(b / "data.parquet"))
    assert load_manifest(a).seed == load_manifest(b).seed


def test_rejected_release_writes_nothing_but_its_audit_entry(workspace):
    result = ppdp("run", workspace.spec(**{"privacy__max_linkage_risk": 0.0}))
    assert result.exit_code == 3, result.output
    assert "rejected" in result.output and "max_linkage_risk" in result.output
    assert workspace.under_root() == ["audit.db"]
    [entry] = audit.list_entries(workspace.root)
    assert entry.status == "rejected" and "max_linkage_risk" in entry.reason and entry.output_sha256 is None


def test_utility_gate_rejects(workspace):
    """An XOR-shaped label and one group (modified condensation, k = n): a group's mean and covariance cannot
    carry an XOR, so the released labels lose their link to the features."""
    import numpy as np

    rng = np.random.default_rng(0)
    hours, age = rng.integers(20, 70, 400), rng.integers(20, 60, 400)
    frame = pd.DataFrame({"age": age, "hours": hours, "label": np.where((hours > 45) ^ (age > 40), "x", "y")})
    data = workspace.dir / "signal.csv"
    frame.to_csv(data, index=False)
    # two small integer columns: generated rows often land on a real record (exact copies), so the floor would
    # refuse first; this test is about the utility gate
    spec = workspace.spec(data=data, columns={"age": "quasi_identifier", "label": "class"},
                          method={"name": "condensation", "variant": "modified", "k": 360},
                          privacy={"k": 10, "accept_below_floor": {"reason": "a test of the utility gate",
                                                                   "approved_by": "the test suite"}},
                          utility={"min_accuracy_ratio": 0.9})
    result = ppdp("run", spec)
    assert result.exit_code == 3 and "min_accuracy_ratio" in result.output, result.output
    assert workspace.under_root() == ["audit.db"]


HEADER = "person_id,age,sex,education,income\n"
ROWS = "".join(f"P{i},{20 + i % 50},{'Male' if i % 2 else 'Female'},HS-grad,{'>50K' if i % 3 == 0 else '<=50K'}\n"
               for i in range(300))


@pytest.mark.parametrize(
    ("case", "text", "overrides", "code", "needle"),
    [
        ("empty file", "", {}, 2, "empty"),
        ("header only", HEADER, {}, 2, "the table has no data rows"),
        ("ragged rows", HEADER + ROWS + "P9,33,Male\n", {}, 2, "ragged row"),
        ("declared column missing", HEADER + ROWS, {"columns__zip": "quasi_identifier"}, 2, "columns.zip"),
        ("numeric QI holding text", HEADER + ROWS + "P7,old,Male,HS-grad,<=50K\n", {}, 2,
         "column 2 ('age'): 1 of 301 rows is not a number (first at data row 301)"),
        ("all-null class", HEADER + ROWS.replace(">50K", "").replace("<=50K", ""), {}, 2,
         "column 5 ('income'): 300 of 300 rows are missing a value (first at data row 1)"),
        ("class smaller than k", HEADER + ROWS, {"method__k": 95}, 2, "fewer than k=95"),
        ("k larger than the rows", HEADER + ROWS, {"method__k": 5000, "privacy__k": 5000}, 2, "k=5000"),
        ("unknown spec key", HEADER + ROWS, {"privacy__kay": 3}, 2, "privacy.kay: unknown key"),
    ],
)
def test_bad_input_one_line_exit_code_nothing_published(workspace, case, text, overrides, code, needle):
    data = workspace.dir / "input.csv"
    data.write_text(text, encoding="utf-8")
    columns = {"person_id": "identifier", "age": "quasi_identifier", "income": "class"}
    overrides = {"columns": columns, **overrides}
    result = ppdp("run", workspace.spec(data=data, **overrides))
    assert result.exit_code == code, (case, result.output)
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("ppdp: ") and needle in last, (case, last)
    assert workspace.under_root() == ["audit.db"], case
    [entry] = audit.list_entries(workspace.root)
    assert entry.status == "error"


def test_publish_root_not_writable(workspace):
    blocker = workspace.dir / "afile"
    blocker.write_text("x", encoding="utf-8")
    result = ppdp("run", workspace.spec(**{"publish__root": str(blocker / "releases")}))
    assert result.exit_code == 2 and "not writable" in result.output and "afile" in result.output


@pytest.mark.slow  # a whole release (seconds): .ci/run runs it; make test stays under 4 minutes
def test_existing_release_folder_is_not_overwritten(workspace, monkeypatch):
    from ppdp.tasks import publish as publish_module

    monkeypatch.setattr(publish_module, "new_release_id", lambda now=None: "20260101T000000Z-fixed000")
    assert ppdp("run", workspace.spec()).exit_code == 0
    before = (workspace.root / "census" / "20260101T000000Z-fixed000" / "data.parquet").read_bytes()
    result = ppdp("run", workspace.spec(), "--force")  # the same release again (without --force: unchanged)
    assert result.exit_code == 2 and "already exists" in result.output
    assert (workspace.root / "census" / "20260101T000000Z-fixed000" / "data.parquet").read_bytes() == before
    assert not list(workspace.root.glob(".staging-*"))
    assert [e.status for e in audit.list_entries(workspace.root)] == ["pending", "published", "error"]


def test_flow_called_directly_returns_a_result(workspace):
    from ppdp.flows.release import release_flow
    from ppdp.tasks.core.errors import ReleaseRejected

    result = release_flow(spec_path=str(workspace.spec()))
    assert result.status == "published" and Path(result.folder).is_dir() and result.k >= 10
    with pytest.raises(ReleaseRejected):
        release_flow(spec_path=str(workspace.spec()), overrides=["privacy.max_linkage_risk=0"])


def test_prefect_never_stores_raw_or_sanitized_data(workspace):
    """Runs a release (and a rejection), then searches every file Prefect wrote for a planted SSN."""
    assert ppdp("run", workspace.spec()).exit_code == 0
    ppdp("run", workspace.spec(**{"privacy__max_linkage_risk": 0.0}))
    stored = [p for p in RESULT_STORAGE.rglob("*") if p.is_file()] if RESULT_STORAGE.exists() else []
    storage = PREFECT_HOME / "storage"
    stored += [p for p in storage.rglob("*") if p.is_file()] if storage.exists() else []
    assert stored == [], f"Prefect persisted results: {stored}"
    db_dir = Path(PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split("///", 1)[1]).parent
    scanned = 0
    for base in (PREFECT_HOME, db_dir):
        for path in base.rglob("*"):
            if path.is_file():
                scanned += 1
                assert SENTINEL_SSN.encode() not in path.read_bytes(), f"raw data found in {path}"
    assert scanned > 0


def test_rule_based_tuning_runs_as_a_flow_step_and_goes_into_the_release(workspace):
    spec = workspace.spec(**{"method__k": None, "tuning": {"strategy": "bisect", "min": 10}})
    result = ppdp("run", spec, "--timings")
    assert result.exit_code == 0, result.output
    [timings] = [line.split() for line in result.output.splitlines() if line.strip().startswith("timings")]
    command, work, beyond = float(timings[1]), float(timings[6]), float(timings[13])
    assert 0 < work < command and abs(command - work - beyond) < 0.02
    lines = result.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("timings"))
    steps: dict[str, tuple[float, int]] = {}  # each step's seconds and runs, as --timings lists them
    for line in lines[at + 1:]:
        parts = line.split()
        if len(parts) < 3 or parts[2] != "s":
            break
        steps[parts[0]] = (float(parts[1]), int(parts[3].lstrip("(")) if len(parts) > 3 else 1)
    [folder] = published_folders(workspace.root)
    manifest = load_manifest(folder)
    trace = manifest.tuning
    assert trace.strategy == "bisect" and len(trace.evaluations) >= 2
    assert manifest.method.params["k"] == trace.chosen and manifest.privacy.k >= trace.chosen
    assert all(e.privacy is not None and 0 <= e.accuracy <= 1 and e.per_class for e in trace.evaluations)
    assert {"ingest", "tag", "hold-out", "evaluate", "sanitize", "validate-privacy", "check-utility",
            "publish"} <= set(steps)
    assert steps["evaluate"][1] == len(trace.evaluations) and steps["sanitize"][1] == 1
    assert all(seconds <= work + 0.02 for name, (seconds, _) in steps.items() if name != "evaluate")
    assert (folder / "tuning.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ppdp("audit", "verify", "--root", workspace.root).exit_code == 0
    # the last line of the summary is the report's path
    assert result.output.strip().splitlines()[-1].split() == ["report", str(folder / "report.html")]
    # Prefect: task runs named with their parameters; a markdown and a table artifact keyed by the dataset
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
    )

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[manifest.flow_run_id])))
        names = {r.name for r in runs}
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
            any_=["ppdp-census-release", "ppdp-census-claims"])))
    assert {f"evaluate k={e.value:,.0f}" for e in trace.evaluations} <= names, names
    assert any(n.startswith(f"sanitize condensation k={trace.chosen}") for n in names), names
    mine = {a.key: a for a in artifacts if str(a.flow_run_id) == manifest.flow_run_id}
    assert set(mine) == {"ppdp-census-release", "ppdp-census-claims"}
    assert mine["ppdp-census-release"].type == "markdown" and mine["ppdp-census-claims"].type == "table"
    assert manifest.release_id in mine["ppdp-census-release"].data


def test_tune_command_writes_trace_and_plot_and_publishes_nothing(workspace):
    out = workspace.dir / "tuning"
    result = ppdp("tune", workspace.spec(), "--strategy", "grid", "--buckets", "4", "--out", out)
    assert result.exit_code == 0, result.output
    trace = json.loads((out / "trace.json").read_text())
    assert trace["strategy"] == "grid" and len(trace["evaluations"]) == 4 and trace["candidates"] == 4
    assert (out / "tuning.png").is_file()
    assert workspace.under_root() == []
    bad = ppdp("tune", workspace.spec(), "--strategy", "guess")
    assert bad.exit_code == 2 and "--strategy" in bad.output


def test_every_privacy_gate_is_measured_and_a_failed_one_rejects(workspace):
    columns = {"person_id": "identifier", "income": "class", "occupation": "sensitive",
               "education": {"role": "quasi_identifier", "order": ["Preschool", "Primary", "Some-HS", "HS-grad",
                                                                    "Some-college", "Assoc", "Bachelors", "Masters",
                                                                    "Doctorate"]}}
    ok = workspace.spec("ok.yaml", columns=columns, privacy={"k": 10, "l": 2, "t": 0.99, "max_prosecutor_risk": 0.1,
                                                             "max_records_at_risk": 0.0})
    assert ppdp("run", ok).exit_code == 0
    [folder] = published_folders(workspace.root)
    manifest = load_manifest(folder)
    p = manifest.privacy
    assert p.sensitive_attributes == ["occupation"] and p.unit == "generating_group"
    assert p.measures.k_anonymity == p.k >= 10 and p.measures.l_diversity >= 2
    assert p.risk.prosecutor_max == 1 / p.k and p.synthetic.linkage_risk == p.linkage_risk
    assert p.synthetic.dcr_quantiles and p.attacker is not None
    assert p.perturbation is None  # synthetic rows stand for no input row: nothing to align
    assert [g.name for g in p.gates] == ["k", "l", "t", "max_prosecutor_risk", "max_records_at_risk"]
    checks = {c.expectation: c for c in manifest.output_checks}
    assert checks["expect_quasi_identifiers_to_be_k_anonymous"].success
    assert checks["expect_quasi_identifiers_to_be_k_anonymous"].observed == p.k
    assert checks["expect_columns_to_be_absent"].success  # direct identifiers dropped
    assert checks["expect_equivalence_classes_to_be_l_diverse"].success

    # l = every occupation in each group: possible (the table holds 11), not met (l above 11 is refused before
    # tuning, exit 2: tests/test_messages.py)
    strict = workspace.spec("strict.yaml", columns=columns, privacy={"k": 10, "l": 11, "delta": 0.001})
    result = ppdp("run", strict)
    assert result.exit_code == 3 and "l:" in result.output and "delta" in result.output
    assert len(published_folders(workspace.root)) == 1
    entry = audit.list_entries(workspace.root)[-1]
    assert entry.status == "rejected" and "l:" in entry.reason and "group #" in entry.reason


def test_unexpected_error_is_one_line_and_debug_shows_the_traceback(workspace, monkeypatch):
    from ppdp.tasks import publish

    def boom(*args, **kwargs):
        raise RuntimeError("Zq9-secret-cell-value")

    monkeypatch.setattr(publish, "collect_versions", boom)
    result = ppdp("run", workspace.spec())
    assert result.exit_code == 1 and "internal error (RuntimeError)" in result.output and "--debug" in result.output
    assert "Zq9-secret-cell-value" not in result.output and "Traceback" not in result.output
    assert [e.status for e in audit.list_entries(workspace.root)] == ["error"]
    # --debug prints the traceback; the suite-wide check of CLI refusals (conftest) flags exactly that
    with pytest.raises(AssertionError, match="printed a traceback"):
        ppdp("run", workspace.spec("again.yaml"), "--debug")


def test_tuning_logs_i_of_n_progress(workspace):
    """Each tuning evaluation is logged when it ends, counted against the most the search can take."""
    from prefect import flow

    from ppdp.flows.release import prepare, tune_method
    from ppdp.tasks import spec as spec_io

    class Lines:
        def __init__(self):
            self.lines = []

        def info(self, fmt, *args):
            self.lines.append(fmt % args)

    logger = Lines()
    spec_path = workspace.spec(**{"method__k": None, "tuning": {"strategy": "bisect", "min": 10, "max": 60}})

    @flow(persist_result=False)
    def tune_only():
        spec = spec_io.load_spec(spec_path, [])
        _, roles, prepared, _ = prepare(spec, logger, check_root=False)
        return tune_method(spec, roles, prepared, logger)[1]

    trace = tune_only()
    progress = [line for line in logger.lines if "tune: evaluation" in line]
    assert len(progress) == len(trace.evaluations) >= 3
    most = int(progress[0].split("/")[2].split(":")[0])  # "[4/8] tune: evaluation 1/N: k=..."
    assert all(f"evaluation {i}/{most}:" in line for i, line in enumerate(progress, 1))
    assert len(trace.evaluations) <= most


def test_steps_seconds_counts_parallel_steps_once():
    from ppdp.flows.steps import STEP_TIMES, steps_seconds

    saved = list(STEP_TIMES)
    try:
        STEP_TIMES.clear()
        STEP_TIMES.extend([("a", 10.0, 12.0), ("b", 11.0, 13.0), ("c", 15.0, 16.0), ("d", 15.2, 15.5)])
        assert steps_seconds() == pytest.approx(4.0)  # [10, 13] and [15, 16]
        assert steps_seconds(since=14.0) == pytest.approx(1.0)
    finally:
        STEP_TIMES.clear()
        STEP_TIMES.extend(saved)


@pytest.mark.slow  # a release (seconds): .ci/run runs it; make test stays under 4 minutes
def test_the_utility_baselines_are_fitted_beside_the_sanitizing_once_and_the_report_is_unchanged(workspace,
                                                                                                 monkeypatch):
    # issue 33: on threads, a fit-baselines task fits the original rows' models while the method sanitizes; the
    # utility check then reads them (one fit per classifier) and reports what it measured alone
    import sys

    from ppdp.tasks import utility
    from ppdp.tasks.publish import load_manifest

    fits: list[tuple[str, int]] = []
    real = utility.accuracy

    def counted(train_rows, *args, **kwargs):  # a baseline: called by original_accuracy; ahead: by prefit_utility
        frame, names = sys._getframe(1), []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        fits.append((names[0], "prefit_utility" in names))
        return real(train_rows, *args, **kwargs)

    monkeypatch.setattr(utility, "accuracy", counted)
    monkeypatch.setattr(utility, "_BASELINES", type(utility._BASELINES)())
    spec = workspace.spec(utility__tstr=["j48"])
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    manifest = load_manifest(published_folders(workspace.root)[0])
    report = manifest.utility
    assert [ahead for caller, ahead in fits if caller == "original_accuracy"] == [True, True]  # knn1, j48: once
    monkeypatch.setattr(utility, "_BASELINES", type(utility._BASELINES)())
    from ppdp.flows.steps import TaskRunner

    monkeypatch.setattr(TaskRunner, "cluster", lambda self: "elsewhere")  # no fit ahead: the check fits them
    fits.clear()
    assert ppdp("run", spec, "--force").exit_code == 0
    assert [ahead for caller, ahead in fits if caller == "original_accuracy"] == [False, False]
    again = load_manifest(published_folders(workspace.root)[-1]).utility
    assert again.model_dump() == report.model_dump()
