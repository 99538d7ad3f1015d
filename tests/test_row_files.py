"""A distributed release's layout: the published table in row files ``data/part-<n>.parquet`` (no
``data.parquet``), published crash-safely by :func:`ppdp.tasks.publish.publish_row_files`, and read back by
``ppdp audit verify``, ``ppdp validate --release`` (integrity, and the class claims re-counted over ``data/``),
``ppdp report`` and ``ppdp audit recover``.

The distributed flow is not needed: a real Mondrian release (equivalence classes, k, l and the floor's class
figures) is published once through ``ppdp run``; each test publishes its rows again as a row-file release, split
into 3 files, through the row-file API alone (no Prefect)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks import audit, recovery, staging
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.layout import data_file_name, parts_digest, read_parquet_metadata
from ppdp.tasks.publish import (
    discard_staging,
    load_manifest,
    new_release_id,
    publish_row_files,
    row_staging,
    write_data_file,
)
from ppdp.tasks.reproduce import recheck_release

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()
PIECES = 3
EDUCATION = ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors", "Masters",
             "Doctorate"]


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def template(tmp_path_factory, prefect_harness) -> Path:
    """A published Mondrian release (unit equivalence_class: k, l, max_prosecutor_risk and the floor's records
    alone and average risk, all re-checked from the published table)."""
    from tests.conftest import base_spec, census

    base = tmp_path_factory.mktemp("row-files")
    census(600).to_csv(base / "census.csv", index=False)
    columns = {"person_id": "identifier", "income": "class", "hours_per_week": "other", "occupation": "sensitive",
               "education": {"role": "quasi_identifier", "order": EDUCATION},
               "age": "quasi_identifier", "sex": "quasi_identifier", "zip": "quasi_identifier"}
    spec = base_spec(base / "census.csv", base / "template-root", columns=columns,
                     privacy={"k": 10, "l": 2, "max_prosecutor_risk": 0.1},
                     method={"name": "mondrian", "mode": "relaxed", "k": 10})
    (base / "spec.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    result = ppdp("run", base / "spec.yaml")
    assert result.exit_code == 0, result.output
    [folder] = [p.parent for p in (base / "template-root").glob("*/*/manifest.json")]
    manifest = load_manifest(folder)
    assert manifest.unit == "equivalence_class" and manifest.privacy.floor is not None
    assert {c.name for c in manifest.privacy.claims} >= {"k", "l", "max_prosecutor_risk"}
    return folder


def row_manifest(template: Path, root: Path):
    """The template's manifest as a new release (new id) under ``root``."""
    manifest = load_manifest(template)
    spec = manifest.spec.model_copy(update={"publish": manifest.spec.publish.model_copy(update={"root": root})})
    return manifest.model_copy(update={"release_id": new_release_id(), "spec": spec, "output_sha256": None})


def stage_rows(template: Path, root: Path, pieces: int = PIECES):
    """A staging folder holding the template's rows in ``pieces`` row files; (staging, manifest)."""
    manifest = row_manifest(template, root)
    frame = pd.read_parquet(template / "data.parquet")
    folder = row_staging(root, manifest.dataset, manifest.release_id)
    bounds = np.linspace(0, len(frame), pieces + 1).astype(int)
    for i in range(pieces):
        rows, sha = write_data_file(frame.iloc[bounds[i]:bounds[i + 1]], folder / data_file_name(i),
                                    manifest.release_id)
        assert rows == bounds[i + 1] - bounds[i] and len(sha) == 64
    return folder, manifest


def publish_rows(template: Path, root: Path) -> Path:
    folder, manifest = stage_rows(template, root)
    final, published, m_hash = publish_row_files(folder, manifest, None, datetime.now(UTC))
    assert final == root / manifest.dataset / manifest.release_id and len(m_hash) == 64
    assert not folder.exists()
    return final


def flip_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def verify_lines(root: Path) -> str:
    result = ppdp("audit", "verify", "--root", root)
    assert result.exit_code == 1, result.output
    return result.output


# -- publishing ---------------------------------------------------------------------------------------------------
def test_row_files_are_published_signed_and_verify(template, tmp_path):
    root = tmp_path / "root"
    folder = publish_rows(template, root)
    manifest = load_manifest(folder)
    names = [data_file_name(i) for i in range(PIECES)]
    assert data_file_name(0) == "data/part-00000.parquet" and data_file_name(123456) == "data/part-123456.parquet"
    assert sorted(p.name for p in folder.iterdir()) == ["data", "manifest.json", "report.html"]
    assert [f.file for f in manifest.data_files] == names
    assert sum(f.rows for f in manifest.data_files) == manifest.rows == len(pd.read_parquet(template / "data.parquet"))
    assert manifest.output_sha256 == parts_digest([(f.file, f.sha256) for f in manifest.data_files])
    for f in manifest.data_files:  # the release id in each file, not the manifest hash (written after the files)
        meta = read_parquet_metadata(folder / f.file)
        assert meta["ppdp.release_id"] == manifest.release_id and "ppdp.manifest_sha256" not in meta
        assert pq.ParquetFile(folder / f.file).metadata.num_rows == f.rows
    pending, done = audit.find_entries(root, manifest.release_id)
    assert (pending.status, done.status) == ("pending", "published") and done.completes == pending.seq
    assert set(done.files) == {*names, "manifest.json", "report.html"}
    assert all(done.files[f.file] == f.sha256 for f in manifest.data_files)
    assert done.output_sha256 == manifest.output_sha256
    result = ppdp("audit", "verify", "--root", root)
    assert result.exit_code == 0 and "1 published releases verified" in result.output, result.output
    assert not list(root.glob(".staging-*"))


def test_a_tampered_row_file_is_found_by_verify_and_validate(template, tmp_path):
    root = tmp_path / "root"
    folder = publish_rows(template, root)
    flip_byte(folder / "data/part-00001.parquet")
    out = verify_lines(root)
    assert "data/part-00001.parquet" in out and "altered" in out
    result = ppdp("validate", "--release", folder)
    assert result.exit_code == 3, result.output
    [line] = [x for x in result.output.splitlines() if x.strip().startswith("integrity")]
    assert "DOES NOT HOLD" in line and "data/part-00001.parquet" in line
    check = recheck_release(folder)
    assert check.checks[0].claim.name == "integrity" and check.checks[0].verdict == "does not hold"


def test_a_missing_a_stray_row_file_and_a_stray_folder_are_found(template, tmp_path):
    root = tmp_path / "root"
    gone, stray = publish_rows(template, root), publish_rows(template, root)
    (gone / "data/part-00002.parquet").unlink()
    (stray / "data/part-00003.parquet").write_bytes((stray / "data/part-00000.parquet").read_bytes())
    (stray / "other").mkdir()
    out = verify_lines(root)
    assert f"{gone.name}/data/part-00002.parquet" in out and "file is missing" in out
    assert f"{stray.name}/data/part-00003.parquet" in out and "not in the signed file list" in out
    assert f"{stray.name}/other: entry {len(audit.list_entries(root))} (release {stray.name}): not in the signed " \
        "file list" in out
    for folder, needle in ((gone, "data/part-00002.parquet is missing"),
                           (stray, "data/part-00003.parquet is not listed in the manifest")):
        result = ppdp("validate", "--release", folder)
        assert result.exit_code == 3 and needle in result.output, result.output


def test_validate_release_recounts_the_class_claims_from_the_row_files(template, tmp_path, monkeypatch):
    folder = publish_rows(template, tmp_path / "root")
    manifest = load_manifest(folder)

    def whole_table(*args, **kwargs):
        raise AssertionError("a row file was read whole into pandas")

    monkeypatch.setattr(pd, "read_parquet", whole_table)  # counts only, file by file in batches
    check = recheck_release(folder)
    verdicts = {c.claim.name: c for c in check.checks}
    published = [c for c in [*manifest.privacy.claims, *manifest.privacy.floor.claims] if c.recheck == "published"]
    assert {c.name for c in published} >= {"k", "l", "max_prosecutor_risk", "floor: records alone",
                                           "floor: average risk"}
    for claim in published:
        got = verdicts[claim.name]
        assert got.verdict == "holds" and "row files" in got.note, (claim.name, got)
        assert got.value == pytest.approx(claim.value, rel=1e-9)
    assert "integrity" not in verdicts
    others = [c for c in check.checks if c.claim.recheck != "published"]
    assert all(c.verdict == "not re-checked" for c in others)
    assert check.exit_code == (0 if not others else 4)
    monkeypatch.undo()
    result = ppdp("validate", "--release", folder)
    assert result.exit_code == check.exit_code and "one table in 3 files (data/part-*.parquet)" in result.output
    assert "HOLDS" in result.output and "DOES NOT HOLD" not in result.output, result.output


@pytest.mark.slow  # a LocalCluster start (about 3 s); .ci/run runs it
def test_validate_release_counts_the_row_files_on_a_dask_cluster(template, tmp_path):
    folder = publish_rows(template, tmp_path / "root")
    serial = ppdp("validate", "--release", folder, "--json")
    parallel = ppdp("validate", "--release", folder, "--json", "--cluster", "local")
    assert parallel.exit_code == serial.exit_code == 0, parallel.output
    assert json.loads(parallel.output)["claims"] == json.loads(serial.output)["claims"]


def test_report_renders_from_the_folder_without_reading_the_whole_table(template, tmp_path, monkeypatch):
    folder = publish_rows(template, tmp_path / "root")
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "published in 3 files (data/part-*.parquet)" in html and "the row files match" in html
    assert "data/part-00002.parquet" in html and "data.parquet matches" not in html
    k = load_manifest(folder).privacy.k
    assert f"the smallest holds <b>{k}</b> records" in html and "the manifest's figures" in html
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: pytest.fail("a row file was read whole"))
    result = ppdp("report", folder)
    assert result.exit_code == 0 and "up to date" in result.output, result.output  # deterministic
    monkeypatch.undo()
    flip_byte(folder / "data/part-00000.parquet")
    out = tmp_path / "copy.html"
    result = ppdp("report", folder, "--out", out)
    assert result.exit_code == 0 and "differs from" in result.output, result.output
    text = out.read_text(encoding="utf-8")
    assert "a row file differs or is missing" in text and "2 of them match" in text


# -- refusals -----------------------------------------------------------------------------------------------------
def test_a_refused_release_leaves_nothing_but_its_audit_entry(template, tmp_path):
    root = tmp_path / "root"
    folder, manifest = stage_rows(template, root)
    assert sorted(p.name for p in folder.iterdir()) == ["data"]
    with pytest.raises(PublishError, match="already exists"):
        row_staging(root, manifest.dataset, manifest.release_id)
    audit.record_refusal(root, release_id=manifest.release_id, dataset=manifest.dataset,
                         error=PublishError("a gate failed"), started_at=datetime.now(UTC))
    discard_staging(folder)
    discard_staging(folder)  # nothing when absent
    assert sorted(p.name for p in root.iterdir()) == ["audit.db"]
    assert audit.verify(root) == []
    with pytest.raises(PublishError, match="not a staging folder"):
        discard_staging(tmp_path)


@pytest.mark.parametrize("damage, needle", [("rows", "its manifest says"), ("stray", "not a row file"),
                                           ("release", "ppdp.release_id differs"), ("columns", "row files disagree")])
def test_publish_refuses_row_files_that_do_not_match_and_removes_them(template, tmp_path, damage, needle):
    root = tmp_path / "root"
    folder, manifest = stage_rows(template, root)
    frame = pd.read_parquet(template / "data.parquet")
    if damage == "rows":
        manifest = manifest.model_copy(update={"rows": manifest.rows + 1})
    elif damage == "stray":
        (folder / "data" / "notes.txt").write_text("x", encoding="utf-8")
    elif damage == "release":
        write_data_file(frame.head(3), folder / data_file_name(3), "another-release")
    else:
        write_data_file(frame.head(3).iloc[:, ::-1], folder / data_file_name(3), manifest.release_id)
    with pytest.raises(PublishError, match=needle) as info:
        publish_row_files(folder, manifest, None, datetime.now(UTC))
    assert "\n" not in str(info.value)
    assert not root.exists() or sorted(p.name for p in root.iterdir()) in ([], ["audit.db"])
    assert not (root / manifest.dataset).exists()


# -- crash recovery -----------------------------------------------------------------------------------------------
DRIVER = """
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ppdp.tasks.layout import data_file_name
from ppdp.tasks.publish import load_manifest, new_release_id, publish_row_files, row_staging, write_data_file

template, root = Path(sys.argv[1]), Path(sys.argv[2])
manifest = load_manifest(template)
spec = manifest.spec.model_copy(update={"publish": manifest.spec.publish.model_copy(update={"root": root})})
manifest = manifest.model_copy(update={"release_id": new_release_id(), "spec": spec, "output_sha256": None})
frame = pd.read_parquet(template / "data.parquet")
staging = row_staging(root, manifest.dataset, manifest.release_id)
half = len(frame) // 2
write_data_file(frame.iloc[:half], staging / data_file_name(0), manifest.release_id)
write_data_file(frame.iloc[half:], staging / data_file_name(1), manifest.release_id)
print(publish_row_files(staging, manifest, None, datetime.now(UTC))[0])
"""


@pytest.mark.parametrize("point, outcome", [
    ("staging-created", "staging leftover removed"),
    ("parquet-unfinished", "staging leftover removed"),
    ("staged", "staging leftover removed"),
    ("pending-appended", "rolled back"),
    ("renamed", "completed"),
])
def test_an_interrupted_row_file_publish_is_recovered(template, tmp_path, point, outcome):
    root = tmp_path / "root"
    first = publish_rows(template, root)
    env = {**os.environ, staging.FAULT_ENV: point}
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(template), str(root)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert audit.verify(root)  # an unresolved pending entry, or a staging folder: findings until recovered
    if outcome != "completed":
        [left] = root.glob(".staging-*")
        assert (left / "data").is_dir()
    done = recovery.recover(root)
    assert any(outcome in line for line in done.actions) and done.left == 0, done.actions
    assert audit.verify(root) == [] and not list(root.glob(".staging-*"))
    releases = sorted(p for p in (root / first.parent.name).iterdir() if p.is_dir())  # not LATEST
    assert first in releases and len(releases) == (2 if outcome == "completed" else 1)
    if outcome == "completed":
        [new] = [p for p in releases if p != first]
        assert sorted(f.file for f in load_manifest(new).data_files) == [data_file_name(0), data_file_name(1)]
        assert json.loads((new / "manifest.json").read_text(encoding="utf-8"))["rows"] == load_manifest(first).rows
    assert recovery.recover(root).actions == []
