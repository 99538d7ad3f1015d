"""Commands that run no flow start quickly because they import only what they use (issue 10 section 2).

Not timed (figures are in benchmarks/results/startup.md): each command runs in a fresh Python process through
the real entry point (:func:`ppdp.flows.cli.main` with its arguments), and the test asserts which heavy
packages that process imported. Prefect, Great Expectations, scikit-learn, SciPy, Dask and Matplotlib cost
from 0.3 s to several seconds each to import; none of them is needed to check a table, re-check a release,
read the audit trail or print help. ``--help`` needs no numerical package at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ppdp.tasks import audit

# heavy packages that no command without a flow may import
NEVER = frozenset({"prefect", "great_expectations", "sklearn", "scipy", "dask", "distributed", "matplotlib"})
NUMERICAL = frozenset({"numpy", "pandas", "pyarrow"})

# runs one command in this fresh process as the `ppdp` script does, then writes its exit code and the top-level
# packages imported by then to the file named by the first argument
PROBE = """
import json, sys
out, args = sys.argv[1], sys.argv[2:]
from ppdp.flows import cli
sys.argv = ["ppdp", *args]
code = 0
try:
    cli.main()
except SystemExit as exc:
    code = exc.code or 0
with open(out, "w") as f:
    json.dump({"code": code, "packages": sorted({name.partition(".")[0] for name in sys.modules})}, f)
"""


def run_fresh(tmp_path: Path, *args: object) -> tuple[int, set[str], str]:
    """(exit code, top-level packages imported, stdout) of ``ppdp ARGS`` run in a new interpreter."""
    out = tmp_path / "probe.json"
    done = subprocess.run([sys.executable, "-c", PROBE, str(out), *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert out.is_file(), f"the probe did not finish:\n{done.stderr[-2000:]}"
    result = json.loads(out.read_text())
    return result["code"], set(result["packages"]), done.stdout


@pytest.fixture
def table(tmp_path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text("age,sex,disease\n30,M,flu\n30,M,cold\n40,F,flu\n40,F,cold\n50,M,flu\n50,M,cold\n",
                    encoding="utf-8")
    return path


@pytest.fixture
def trail(tmp_path) -> Path:
    """A publish root whose audit trail holds two signed entries (refused runs: no flow needed)."""
    root = tmp_path / "root"
    for i in range(2):
        audit.append_entry(root, release_id=f"r{i}", dataset="d", status="rejected", reason=f"gate {i}",
                           started_at=datetime.now(UTC))
    return root


@pytest.fixture
def release(workspace, prefect_harness) -> Path:
    """A release published by the real flow (census table of tests/conftest.py) in this test's folder."""
    from ppdp.flows.release import release_flow

    return Path(release_flow(spec_path=str(workspace.spec())).folder)


def test_help_imports_no_numerical_package(tmp_path):
    for args in (["--help"], ["run", "--help"], ["audit", "--help"], ["validate", "--help"]):
        code, packages, stdout = run_fresh(tmp_path, *args)
        assert code == 0 and "Usage" in stdout
        assert not packages & (NEVER | NUMERICAL), (args, sorted(packages & (NEVER | NUMERICAL)))


def test_validate_table_imports_no_flow_or_model_package(tmp_path, table):
    code, packages, stdout = run_fresh(tmp_path, "validate", table, "--qi", "age,sex", "--sa", "disease",
                                       "--k", "2", "--l", "2")
    assert code == 0 and "PASS" in stdout  # the measures and gates really ran
    assert "pandas" in packages  # the table was read (the probe sees the packages)
    assert not packages & NEVER, sorted(packages & NEVER)


def test_validate_release_imports_no_flow_or_model_package(tmp_path, release):
    code, packages, stdout = run_fresh(tmp_path, "validate", "--release", release)
    assert code in (0, 4), stdout  # 4: a claim needs --original; the others were re-checked
    assert "HOLDS" in stdout
    assert not packages & NEVER, sorted(packages & NEVER)


@pytest.mark.parametrize("command", ["list", "show", "verify", "head"])
def test_audit_commands_import_no_flow_or_model_package(tmp_path, trail, command):
    args = ["audit", command, "--root", trail] if command != "show" else ["audit", "show", "r1", "--root", trail]
    code, packages, stdout = run_fresh(tmp_path, *args)
    assert code == 0, stdout
    assert {"list": "r1", "show": "r1", "verify": "intact", "head": "entry_hash"}[command] in stdout
    assert not packages & NEVER, sorted(packages & NEVER)


def test_report_imports_no_flow_or_model_package(tmp_path, release):
    out = tmp_path / "report.html"
    code, packages, stdout = run_fresh(tmp_path, "report", release, "--out", out)
    assert code == 0 and out.is_file(), stdout  # the report was rendered from the manifest and the data
    assert not packages & NEVER, sorted(packages & NEVER)
