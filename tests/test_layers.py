"""The package's layering: one import package, no import cycles (lazy imports inside functions included), the
core imports no step module, sanitizers import only the core and the schemas, the schemas import nothing of ppdp but
themselves, algorithms never import Prefect, and the flow module only wires (no pandas, no numpy)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"schemas": "ppdp.schemas", "tasks": "ppdp.tasks", "flows": "ppdp.flows",
           "expectations": "ppdp.expectations", "deployments": "ppdp.deployments", "ppdp": "ppdp"}


def modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in (REPO / folder).rglob("*.py"):
            rel = path.relative_to(REPO / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Every ppdp module ``path`` imports, at module level or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for n in names:
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n and n != name and not name.startswith(n + "."):
                found.add(n)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, name, known) for name, path in mods.items()}


def test_no_import_cycles():
    g = graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(g.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node)


def test_layers():
    g = graph()
    for name, deps in g.items():
        if name.startswith("ppdp.tasks.core"):
            assert all(d.startswith(("ppdp.tasks.core", "ppdp.schemas")) for d in deps), (name, deps)
        if name.startswith("ppdp.tasks.sanitize.") and name != "ppdp.tasks.sanitize.registry":
            bad = [d for d in deps if not d.startswith(("ppdp.tasks.core", "ppdp.schemas", "ppdp.tasks.sanitize"))]
            assert not bad, (name, bad)


def test_measures_know_no_methods():
    """The privacy measures (tasks/privacy/) import no method, no registry and no release shape: a method's facts
    reach them as arguments (the release record is a schema, ppdp.schemas.release), and reproducing a release is a
    step of its own (ppdp.tasks.reproduce). The shapes themselves import no method either."""
    g = graph()
    for name, deps in g.items():
        if name.startswith("ppdp.tasks.privacy"):
            bad = [d for d in deps if d.startswith(("ppdp.tasks.sanitize", "ppdp.tasks.shapes", "ppdp.tasks.reproduce",
                                                     "ppdp.tasks.compare", "ppdp.tasks.tune"))]
            assert not bad, (name, bad)
    assert not [d for d in g["ppdp.tasks.shapes"] if d.startswith("ppdp.tasks.sanitize")]


def test_the_schema_layer_stands_alone():
    """No module under schemas/ imports anything of ppdp but the schemas (never ppdp.tasks, ppdp.flows), at module
    level, inside a function or by name through importlib: the spec, its method union included, is read without the
    algorithms."""
    for name, deps in graph().items():
        if name.startswith("ppdp.schemas"):
            assert not [d for d in deps if not d.startswith("ppdp.schemas")], (name, deps)
    for name, path in modules().items():
        if not name.startswith("ppdp.schemas"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                target = node.args[0].value
                if func in ("import_module", "__import__") and isinstance(target, str):
                    assert target.startswith("ppdp.schemas") or not target.startswith("ppdp"), (name, target)


def test_algorithms_never_import_prefect_and_the_flow_only_wires():
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        if name.startswith(("ppdp.tasks", "ppdp.schemas")):
            assert "import prefect" not in text and "from prefect" not in text.replace(
                "from prefect.blocks.system import Secret", ""), name
    flow = (REPO / "flows" / "release.py").read_text(encoding="utf-8")
    assert "import pandas" not in flow and "import numpy" not in flow


def test_installing_puts_one_top_level_package(tmp_path):
    """A wheel of the project holds one top-level import package, ppdp (no tasks, schemas, flows...)."""
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                             "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and "No module named" in result.stderr:
        pytest.skip("pip wheel needs setuptools and wheel in the environment")
    assert result.returncode == 0, result.stderr[-2000:]
    import zipfile

    [wheel] = list(tmp_path.glob("ppdp-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"ppdp"}, tops
    for sub in ("ppdp/schemas/spec.py", "ppdp/tasks/sanitize/registry.py", "ppdp/flows/cli.py",
                "ppdp/expectations/input_base.json", "ppdp/schemas/release.schema.json", "ppdp/api.py"):
        assert sub in names, sub
    # every module of the mapped folders (pyproject lists the subpackages by hand: a new one must be listed)
    mapped = {"ppdp": "ppdp", "schemas": "ppdp/schemas", "tasks": "ppdp/tasks", "flows": "ppdp/flows",
              "expectations": "ppdp/expectations", "deployments": "ppdp/deployments"}
    modules = {f"{into}/{p.relative_to(REPO / folder).as_posix()}" for folder, into in mapped.items()
               for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - set(names) == set()
