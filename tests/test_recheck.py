"""`ppdp validate --release DIR [--original PATH]` re-checks every claim of a published release, agrees with the
release flow, and catches a tampered table or a claim that no longer holds; units, claims and treatments in the
manifest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks.publish import load_manifest
from ppdp.tasks.sanitize.base import GROUP_COLUMN

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def publish(workspace, name: str, **overrides) -> Path:
    result = ppdp("run", workspace.spec(f"{name}.yaml", dataset=name, **overrides))
    assert result.exit_code == 0, result.output
    [folder] = sorted(p.parent for p in (workspace.root / name).glob("*/manifest.json"))
    return folder


def tampered_copy(folder: Path, tmp: Path, change) -> Path:
    copy = tmp / f"tampered-{folder.name}"
    shutil.copytree(folder, copy)
    frame = pd.read_parquet(copy / "data.parquet")
    change(frame)
    frame.to_parquet(copy / "data.parquet", index=False)
    return copy


def test_condensation_claims_rechecked_and_a_tampered_group_breaks_k(workspace, tmp_path):
    folder = publish(workspace, "cond", privacy={"k": 10, "max_linkage_risk": 0.99})
    manifest = load_manifest(folder)
    assert manifest.unit == "generating_group" and manifest.group_column == GROUP_COLUMN
    assert [c.name for c in manifest.privacy.claims] == ["k", "max_linkage_risk"]
    assert [c.recheck for c in manifest.privacy.claims] == ["published", "original"]
    data = pd.read_parquet(folder / "data.parquet")
    assert data[GROUP_COLUMN].value_counts().min() == manifest.privacy.k  # k re-checkable from the data alone

    alone = ppdp("validate", "--release", folder)
    assert alone.exit_code == 4 and "HOLDS" in alone.output and "NOT RE-CHECKED" in alone.output
    full = ppdp("validate", "--release", folder, "--original", workspace.data)
    assert full.exit_code == 0, full.output
    # the original's keyed digest (this machine holds the key), the two claims and the three floor rows of
    # generating groups (average risk, group alone, exact copies)
    assert full.output.count("HOLDS") == 6 and "DOES NOT HOLD" not in full.output
    assert "input digest" in full.output and "keyed digest" in full.output

    def split_a_group(frame):
        smallest = frame[GROUP_COLUMN].value_counts().idxmin()
        frame.loc[frame.index[frame[GROUP_COLUMN] == smallest][0], GROUP_COLUMN] = frame[GROUP_COLUMN].max() + 1

    broken = tampered_copy(folder, tmp_path, split_a_group)
    result = ppdp("validate", "--release", broken)
    assert result.exit_code == 3 and "DOES NOT HOLD" in result.output and "integrity" in result.output
    assert "k " in result.output


def test_noise_release_needs_the_original_and_detects_another_input(workspace, tmp_path):
    folder = publish(workspace, "noisy", privacy={"max_linkage_risk": 0.9, "min_vd": 0.01},
                     method={"name": "noise", "kind": "additive", "scale": 5.0})  # under the floor's linkage limit
    manifest = load_manifest(folder)
    assert manifest.unit == "record" and manifest.privacy.k is None and manifest.group_column is None
    treatments = {t.name: t.treatment for t in manifest.treatments}
    assert treatments["age"] == "perturbed" and treatments["person_id"] == "dropped"
    assert treatments["income"] == "kept"
    assert [t.position for t in manifest.treatments] == list(range(len(manifest.treatments)))
    assert ppdp("validate", "--release", folder).exit_code == 4
    ok = ppdp("validate", "--release", folder, "--original", workspace.data)
    assert ok.exit_code == 0, ok.output
    other = pd.read_csv(workspace.data, dtype=str)
    other.loc[0, "age"] = str(int(other.loc[0, "age"]) + 3)
    changed = tmp_path / "other.csv"
    other.to_csv(changed, index=False)
    differs = ppdp("validate", "--release", folder, "--original", changed)
    assert differs.exit_code == 3 and "not the input the release was made from" in differs.output


def test_a_gate_that_does_not_apply_to_the_unit_is_a_spec_error(workspace):
    result = ppdp("run", workspace.spec(method={"name": "noise", "scale": 0.5}, privacy={"k": 5}))
    assert result.exit_code == 2 and "privacy.k does not apply to method noise" in result.output
    none = ppdp("run", workspace.spec(method={"name": "noise", "scale": 0.5}, privacy={}))
    assert none.exit_code == 2 and "no gate is set" in none.output


def test_bad_release_folder_is_one_line(tmp_path):
    result = ppdp("validate", "--release", tmp_path)
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "manifest.json is missing" in result.output


def test_mdav_release_holds_and_one_changed_quasi_identifier_cell_breaks_k(workspace, tmp_path):
    folder = publish(workspace, "micro", privacy={"k": 12, "max_prosecutor_risk": 0.1},
                     method={"name": "mdav", "k": 12})
    manifest = load_manifest(folder)
    assert manifest.unit == "equivalence_class" and manifest.group_column is None
    assert {t.name: t.treatment for t in manifest.treatments}["age"] == "aggregated"
    ok = ppdp("validate", "--release", folder)
    assert ok.exit_code == 0, ok.output
    assert ok.output.count("HOLDS") == 4  # k, prosecutor risk and the floor's records alone and average risk

    def change_one_cell(frame):
        frame.loc[0, "age"] = int(frame["age"].max()) + 1  # a value no other row has

    broken = tampered_copy(folder, tmp_path, change_one_cell)
    result = ppdp("validate", "--release", broken)
    assert result.exit_code == 3, result.output
    k_line = next(line for line in result.output.splitlines() if line.strip().startswith("k "))
    assert "DOES NOT HOLD" in k_line and "1 fails >= 12" in k_line
    alone = next(line for line in result.output.splitlines() if "floor: records alone" in line)
    assert "DOES NOT HOLD" in alone  # the floor re-checked from the published table too


def test_reproduction_compares_missing_cells_as_equal_and_values_exactly():
    from ppdp.tasks.reproduce import _equal_column

    a = pd.Series(["x", None, "y"], dtype=object)
    assert _equal_column(a, pd.Series(["x", None, "y"], dtype="str"))  # a missing cell equals a missing cell
    assert not _equal_column(a, pd.Series(["x", "z", "y"]))
    assert not _equal_column(a, pd.Series(["x", None, "w"]))
    assert _equal_column(pd.Series([1.0, float("nan")]), pd.Series([1.0, float("nan")]))
    assert not _equal_column(pd.Series([1.0, 2.0]), pd.Series([1.0, 2.0000001]))
