"""Idempotent runs (issue 34, item 3): a run on the input, spec and code of the dataset's latest release publishes
nothing ("unchanged since RELEASE", exit 0); a changed row, a changed --set, changed code or --force publishes; the
dataset's LATEST pointer names its latest complete release, through refusals, rollbacks, kills and recovery."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks import audit, recovery, staging
from ppdp.tasks.latest import LATEST_NAME, read_latest, write_latest
from ppdp.tasks.publish import load_manifest
from tests.conftest import PPDP_CONFIG

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def releases(root: Path, dataset: str = "census") -> list[str]:
    """The release folders of ``dataset`` on disk (LATEST is a file, not one of them)."""
    return sorted(p.name for p in (root / dataset).iterdir() if p.is_dir()) if (root / dataset).exists() else []


def published_ids(root: Path) -> list[str]:
    return [e.release_id for e in audit.list_entries(root) if e.status == "published"]


def released_id(output: str) -> str:
    [line] = [ln for ln in output.splitlines() if ln.startswith("published release ")]
    return line.split()[-1]


def test_a_rerun_publishes_only_what_changed(workspace, monkeypatch):
    spec = workspace.spec()
    first = ppdp("run", spec)
    assert first.exit_code == 0, first.output
    a = released_id(first.output)
    assert read_latest(workspace.root, "census") == a
    assert (workspace.root / "census" / LATEST_NAME).read_text() == a + "\n"

    # the same spec and input: nothing published, no audit entry, exit 0
    entries = len(audit.list_entries(workspace.root))
    again = ppdp("run", spec)
    assert again.exit_code == 0, again.output
    lines = again.stdout.strip().splitlines()
    assert lines[0] == f"unchanged since {a}", again.output
    assert lines[1].split() == ["folder", str(workspace.root / "census" / a)] and len(lines) == 2, again.output
    assert releases(workspace.root) == [a] and published_ids(workspace.root) == [a]
    assert len(audit.list_entries(workspace.root)) == entries  # no entry of any kind
    listed = ppdp("audit", "list", "--root", workspace.root)
    assert listed.exit_code == 0 and set(re.findall(r"\d{8}T\d{6}Z-[0-9a-f]{8}", listed.output)) == {a}, listed.output
    assert read_latest(workspace.root, "census") == a

    # a spec changed by --set publishes; the same --set again is unchanged since that release
    changed = ppdp("run", spec, "--set", "utility.min_accuracy_ratio=0.4")
    assert changed.exit_code == 0, changed.output
    b = released_id(changed.output)
    assert b != a and releases(workspace.root) == sorted([a, b]) and read_latest(workspace.root, "census") == b
    same = ppdp("run", spec, "--set", "utility.min_accuracy_ratio=0.4")
    assert same.exit_code == 0 and same.stdout.startswith(f"unchanged since {b}\n"), same.output
    # back to the first spec: the latest release (b) is another spec's, so it publishes
    back = ppdp("run", spec)
    assert back.exit_code == 0 and "unchanged" not in back.stdout, back.output
    c = released_id(back.output)

    # one row edited (a name, which the release drops: the same records, another input): publishes
    frame = pd.read_csv(workspace.data, dtype=str, keep_default_na=False)
    frame.loc[17, "name"] = frame.loc[17, "name"] + "x"
    frame.to_csv(workspace.data, index=False)
    edited = ppdp("run", spec)
    assert edited.exit_code == 0 and "unchanged" not in edited.stdout, edited.output
    d = released_id(edited.output)
    assert ppdp("run", spec).stdout.startswith(f"unchanged since {d}\n")

    # --force republishes the unchanged run
    forced = ppdp("run", spec, "--force")
    assert forced.exit_code == 0, forced.output
    e = released_id(forced.output)

    # other code (the installed code's hash differs): publishes
    from ppdp.tasks import publish

    monkeypatch.setattr(publish, "code_sha256", lambda: "0" * 64)
    recoded = ppdp("run", spec)
    assert recoded.exit_code == 0 and "unchanged" not in recoded.stdout, recoded.output
    f = released_id(recoded.output)
    assert load_manifest(workspace.root / "census" / f).versions.code == "0" * 64
    monkeypatch.undo()

    assert len({a, b, c, d, e, f}) == 6 and releases(workspace.root) == sorted([a, b, c, d, e, f])
    assert published_ids(workspace.root) == [a, b, c, d, e, f]
    assert read_latest(workspace.root, "census") == f
    assert audit.verify(workspace.root) == []


@pytest.mark.slow  # make test keeps the core case; .ci/run runs this one
def test_latest_survives_refusals_rollbacks_and_recovery(workspace, monkeypatch):
    spec = workspace.spec()
    first = ppdp("run", spec)
    assert first.exit_code == 0, first.output
    a = released_id(first.output)

    # a run refused by a gate leaves LATEST as it was
    refused = ppdp("run", spec, "--set", "privacy.k=5000")
    assert refused.exit_code in (2, 3), refused.output
    assert read_latest(workspace.root, "census") == a and releases(workspace.root) == [a]

    # a publish rolled back after its folder was in place and LATEST written: LATEST points back at a
    real = audit.append_entry

    def no_completing_entry(root, **fields):
        if fields.get("status") == "published":
            assert read_latest(root, "census") == fields["release_id"]  # written before the completing entry
            raise audit.PublishError("the disk is full (test)")
        return real(root, **fields)

    monkeypatch.setattr(audit, "append_entry", no_completing_entry)
    rolled = ppdp("run", spec, "--force")
    monkeypatch.undo()
    assert rolled.exit_code != 0 and "disk is full" in rolled.output, rolled.output
    assert read_latest(workspace.root, "census") == a and releases(workspace.root) == [a]
    assert audit.verify(workspace.root) == []

    # a stale or damaged pointer is a finding of verify, and recovery rewrites it
    write_latest(workspace.root, "census", "20000101T000000Z-deadbeef")
    (workspace.root / "census" / ".LATEST.0badc0de.tmp").write_text("x\n")
    findings = audit.verify(workspace.root)
    assert any("census/LATEST: names release 20000101T000000Z-deadbeef" in f for f in findings), findings
    assert any("census/.LATEST.0badc0de.tmp" in f for f in findings), findings
    done = recovery.recover(workspace.root)
    assert done.left == 0 and any(f"now names release {a}" in line for line in done.actions), done.actions
    assert read_latest(workspace.root, "census") == a and audit.verify(workspace.root) == []
    # an unchanged rerun still finds a
    again = ppdp("run", spec)
    assert again.stdout.startswith(f"unchanged since {a}\n"), again.output


KILLED = """
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ppdp.tasks.publish import load_manifest, new_release_id, publish_release

template = Path(sys.argv[1])
manifest = load_manifest(template)
manifest = manifest.model_copy(update={"release_id": new_release_id(), "output_sha256": None})
publish_release(pd.read_parquet(template / "data.parquet"), manifest, {}, datetime.now(UTC))
"""


@pytest.mark.slow  # make test keeps the core case; .ci/run runs this one
@pytest.mark.parametrize(("point", "outcome"), [("pending-appended", "rolled back"), ("renamed", "completed"),
                                                 ("latest-written", "completed"),
                                                 ("latest-written, folder altered", "rolled back")])
def test_a_killed_publish_leaves_latest_on_a_complete_release(workspace, point, outcome):
    first = ppdp("run", workspace.spec())
    assert first.exit_code == 0, first.output
    a = released_id(first.output)
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PPDP_CONFIG_DIR=str(PPDP_CONFIG), **{staging.FAULT_ENV: point.split(",")[0]})
    proc = subprocess.run([sys.executable, "-c", KILLED, str(workspace.root / "census" / a)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    [pending] = audit.interrupted_publishes(workspace.root)
    new = pending["release_id"]
    if point.startswith("latest-written"):
        assert read_latest(workspace.root, "census") == new  # written, its entry not yet
    else:
        assert read_latest(workspace.root, "census") == a
    if point.endswith("altered"):
        (workspace.root / "census" / new / "report.html").write_text("altered")
    done = recovery.recover(workspace.root)
    assert done.left == 0 and any(outcome in line for line in done.actions), done.actions
    expected = new if outcome == "completed" else a
    assert read_latest(workspace.root, "census") == expected
    assert audit.verify(workspace.root) == []
    assert releases(workspace.root) == sorted({a, expected})


@pytest.mark.slow  # make test keeps the core case; .ci/run runs this one
def test_a_rerun_after_the_series_key_is_rotated(workspace, monkeypatch, tmp_path):
    spec = workspace.spec()
    first = ppdp("run", spec)
    assert first.exit_code == 0, first.output
    a = released_id(first.output)
    old = tmp_path / "old-key"
    old.write_bytes((PPDP_CONFIG / "series-key").read_bytes())
    monkeypatch.setenv("PPDP_SERIES_KEY", "7a" * 32)
    rekeyed = ppdp("series-rekey", "--root", workspace.root, "--old-key-file", old)
    assert rekeyed.exit_code == 0, rekeyed.output
    # the publisher's private record keeps the input's SHA-256: still recognised under the new key
    again = ppdp("run", spec)
    assert again.exit_code == 0 and again.stdout.startswith(f"unchanged since {a}\n"), again.output
    # without that record, the digest made under the old key cannot be checked with the new one: it publishes
    record = PPDP_CONFIG / "records" / audit.trail_id(workspace.root) / f"{a}.json"
    moved = tmp_path / "record.json"
    record.rename(moved)
    try:
        third = ppdp("run", spec)
    finally:
        moved.rename(record)
    assert third.exit_code == 0 and "unchanged" not in third.stdout, third.output
    # no private record of the latest release, made under this key: its keyed digest is re-checked with its salt
    b = released_id(third.output)
    (PPDP_CONFIG / "records" / audit.trail_id(workspace.root) / f"{b}.json").unlink()
    fourth = ppdp("run", spec)
    assert fourth.exit_code == 0 and fourth.stdout.startswith(f"unchanged since {b}\n"), fourth.output


@pytest.mark.slow
def test_the_api_and_the_flow_take_force(workspace):
    import ppdp as api

    spec = workspace.spec()
    first = api.release(spec)
    assert first.status == "published"
    second = api.release(spec)
    assert second.status == "unchanged" and second.release_id == first.release_id
    assert second.reason == f"unchanged since {first.release_id}" and second.folder == first.folder
    third = api.release(spec, force=True)
    assert third.status == "published" and third.release_id != first.release_id
    assert read_latest(workspace.root, "census") == third.release_id
    assert releases(workspace.root) == sorted([first.release_id, third.release_id])


@pytest.mark.slow  # a partitioned release run three times
def test_a_partitioned_input_rerun_is_unchanged(workspace):
    from tests.test_distributed_release import spec_for, write_parts

    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    source = write_parts(frame, workspace.dir / "parts", [300, 300])
    spec = spec_for(workspace, "parts", source, name="mondrian", k=8, mode="strict",
                    hierarchies={"zip": {"type": "prefix", "step": 1}})
    first = ppdp("run", spec)
    assert first.exit_code == 0, first.output
    a = released_id(first.output)
    again = ppdp("run", spec)
    assert again.exit_code == 0 and again.stdout.startswith(f"unchanged since {a}\n"), again.output
    assert releases(workspace.root, "parts") == [a] and read_latest(workspace.root, "parts") == a
    frame.loc[400, "name"] = frame.loc[400, "name"] + "x"  # one row of the second partition edited
    write_parts(frame, workspace.dir / "parts", [300, 300])
    changed = ppdp("run", spec)
    assert changed.exit_code == 0 and "unchanged" not in changed.stdout, changed.output
    assert read_latest(workspace.root, "parts") == released_id(changed.output)


@pytest.mark.slow  # a deployment's flow run twice
def test_a_scheduled_unchanged_run_completes_without_publishing(workspace):
    from ppdp.deployments.release import build_deployment
    from tests.conftest import run_deployment_once

    spec = workspace.spec()
    first = ppdp("run", spec)
    assert first.exit_code == 0, first.output
    a = released_id(first.output)
    dep = build_deployment(spec, name="rerun-test")
    dep.apply()
    run = run_deployment_once(dep, "ppdp-release/rerun-test")
    assert run.state.is_completed(), run.state
    assert releases(workspace.root) == [a] and published_ids(workspace.root) == [a]


def test_latest_pointer_is_replaced_atomically(tmp_path):
    (tmp_path / "d").mkdir()
    assert read_latest(tmp_path, "d") is None
    write_latest(tmp_path, "d", "20260101T000000Z-0000aaaa")
    write_latest(tmp_path, "d", "20260102T000000Z-0000bbbb")
    assert read_latest(tmp_path, "d") == "20260102T000000Z-0000bbbb"
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [LATEST_NAME]  # no temporary file left
    with pytest.raises(audit.PublishError):
        write_latest(tmp_path, "d", "../escape")
    (tmp_path / "d" / LATEST_NAME).write_text("two\nlines\n")
    assert read_latest(tmp_path, "d") is None
    write_latest(tmp_path, "d", None)
    assert not (tmp_path / "d" / LATEST_NAME).exists()


@pytest.mark.slow  # two DP syntheses (minutes on a loaded machine); .ci/run runs it
def test_an_unchanged_dp_rerun_spends_no_budget(workspace):
    from tests.test_series import dp_spec, ledger_releases

    spec = dp_spec(workspace)
    first = ppdp("run", spec)
    assert first.exit_code == 0 and "epsilon 0.5 spent of 1" in first.output, first.output
    a = released_id(first.output)
    for _ in range(3):  # the budget would be spent after two
        again = ppdp("run", spec)
        assert again.exit_code == 0 and again.stdout.startswith(f"unchanged since {a}\n"), again.output
    assert ledger_releases(workspace.root) == [a] and releases(workspace.root) == [a]
    forced = ppdp("run", spec, "--force")
    assert forced.exit_code == 0 and "epsilon 1 spent of 1" in forced.output, forced.output
