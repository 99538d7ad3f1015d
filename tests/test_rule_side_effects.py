"""No import has a side effect on the process (issue 31): importing every ppdp module leaves ``os.environ``,
Prefect's global settings and ``sys.meta_path`` (ppdp's import hooks) as they were; ppdp's Prefect settings (no
cached or persisted result: raw data on disk otherwise) are applied by the entry points themselves
(:func:`ppdp.flows.settings.apply_settings`): the CLI, the flows, the Python API, the deployments.

Each check runs in a fresh interpreter whose environment holds none of those settings, with Prefect imported
first (as a Prefect worker or a user's script has it), so that a setting applied at import would show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ppdp.flows.settings import DEFAULTS, FORCED
from ppdp.tasks.core.threads import THREAD_VARIABLES

REPO = Path(__file__).resolve().parents[1]


def every_module() -> list[str]:
    """Every module of the ``ppdp`` package, from the folders pyproject maps into it."""
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    names = []
    for package, folder in mapping.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            names.append(".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)]))
    return names


def clean_environment() -> dict[str, str]:
    """This process's environment without any setting that ppdp applies."""
    drop = {*FORCED, *DEFAULTS, *THREAD_VARIABLES}
    return {key: value for key, value in os.environ.items() if key not in drop}


def run_fresh(script: str, *args: str) -> dict:
    """Run ``script`` in a new interpreter with :func:`clean_environment`; its last stdout line is JSON."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300,
                          env=clean_environment(), cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


SNAPSHOT = """
import importlib, json, os, sys
import prefect.context

def snapshot():
    settings = prefect.context.GLOBAL_SETTINGS_CONTEXT.settings
    hooks = [f"{type(f).__module__}.{type(f).__name__}" for f in sys.meta_path if type(f).__module__.startswith("ppdp")]
    return {"environ": dict(os.environ), "meta_path": hooks,
            "prefect": settings.model_dump(mode="json"), "context": id(prefect.context.GLOBAL_SETTINGS_CONTEXT)}
"""

IMPORT_ALL = SNAPSHOT + """
before = snapshot()
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = type(exc).__name__ + ": " + str(exc)[:200]
after = snapshot()
print(json.dumps({"before": before, "after": after, "failed": failed}))
"""


def changes(before: dict, after: dict) -> dict:
    """What differs between two snapshots: environment keys, meta path finders, Prefect settings."""
    found: dict = {}
    env = {k for k in before["environ"].keys() | after["environ"].keys()
           if before["environ"].get(k) != after["environ"].get(k)}
    if env:
        found["environ"] = sorted(env)
    if before["meta_path"] != after["meta_path"]:
        found["meta_path"] = after["meta_path"]
    if before["prefect"] != after["prefect"] or before["context"] != after["context"]:
        found["prefect"] = sorted(k for k in before["prefect"] if before["prefect"][k] != after["prefect"].get(k)) \
            or ["the global settings context was replaced"]
    return found


@pytest.mark.slow
def test_importing_every_module_changes_no_setting():
    modules = every_module()
    assert "ppdp.flows.release" in modules and "ppdp.flows.cli" in modules and len(modules) > 100
    out = run_fresh(IMPORT_ALL, *modules)
    assert not out["failed"], out["failed"]
    assert changes(out["before"], out["after"]) == {}
    # the comparison means something: none of the settings was there before
    assert not set(FORCED) & set(out["before"]["environ"])


ENTRY = SNAPSHOT + """
from ppdp.flows.settings import FORCED, prefect_persists
before = snapshot()
assert prefect_persists() is True  # Prefect's own defaults: the settings are not applied yet
which = sys.argv[1]
if which == "cli":
    from ppdp.flows import cli
    sys.argv = ["ppdp", "run", "no-such-spec.yaml"]
    try:
        cli.main()
    except SystemExit as exc:
        assert exc.code == 2, exc.code  # refused: no such spec (no flow started)
elif which == "flow":
    from ppdp.flows.release import release_flow
    assert prefect_persists() is True  # importing the flow applied nothing
    try:
        release_flow.fn(spec_path="no-such-spec.yaml")  # the flow's body, without Prefect's engine
    except Exception:
        pass  # no flow run context here: only its first line (the settings) matters
elif which == "api":
    import ppdp
    try:
        ppdp.compare("no-such-spec.yaml")
    except Exception as exc:
        assert type(exc).__name__ == "SpecError", exc
elif which == "deployment":
    from ppdp.deployments.release import DEFAULT_SPEC, build_deployment
    assert prefect_persists() is True
    build_deployment(DEFAULT_SPEC)
after = snapshot()
print(json.dumps({"persists": prefect_persists(), "forced": {k: os.environ.get(k) for k in FORCED},
                  "changed": before != after}))
"""


# each entry point in a fresh interpreter that imports Prefect (7 to 10 s each): the CLI's in the fast suite, the
# others in the slow one (.ci/run runs both)
@pytest.mark.parametrize("entry", ["cli", *(pytest.param(e, marks=pytest.mark.slow)
                                           for e in ("flow", "api", "deployment"))])
def test_entry_points_apply_the_settings(entry):
    out = run_fresh(ENTRY, entry)
    assert out["forced"] == FORCED
    assert out["persists"] is False  # Prefect itself, imported before, now caches and persists nothing
    assert out["changed"]
