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


def clean_copy(into: Path) -> Path:
    """The repository's sources copied without build/, .venv/ or .git/: a wheel built in the working tree packs
    whatever a former build left in build/lib (a deleted module; or a package the package list misses, which would
    hide the miss)."""
    import shutil

    skip = {".venv", ".git", "build", "site", "examples", "benchmarks", ".pytest_cache", ".hypothesis", "__pycache__"}
    shutil.copytree(REPO, into, ignore=lambda _d, names: [n for n in names if n in skip or n.endswith(".egg-info")])
    return into


def build_wheel(tmp_path: Path, source: Path | None = None) -> Path:
    """A wheel of ``source`` (by default a clean copy of the repository) in ``tmp_path/dist``."""
    source = source or clean_copy(tmp_path / "source")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                             "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and "No module named" in result.stderr:
        pytest.skip("pip wheel needs setuptools and wheel in the environment")
    assert result.returncode == 0, result.stderr[-2000:]
    [wheel] = list((tmp_path / "dist").glob("ppdp-*.whl"))
    return wheel


def test_installing_puts_one_top_level_package(tmp_path):
    """A wheel of the project holds one top-level import package, ppdp (no tasks, schemas, flows...), and every
    module and data file of the mapped folders (setup.py finds the packages: none is listed by hand)."""
    import zipfile

    names = zipfile.ZipFile(build_wheel(tmp_path)).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"ppdp"}, tops
    for sub in ("ppdp/expectations/input_base.json", "ppdp/schemas/release.schema.json",
                "ppdp/schemas/manifest.schema.json", "ppdp/tasks/report/style.css"):
        assert sub in names, sub
    mapped = {"ppdp": "ppdp", "schemas": "ppdp/schemas", "tasks": "ppdp/tasks", "flows": "ppdp/flows",
              "expectations": "ppdp/expectations", "deployments": "ppdp/deployments"}
    modules = {f"{into}/{p.relative_to(REPO / folder).as_posix()}" for folder, into in mapped.items()
               for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - set(names) == set()
    assert {n for n in names if n.endswith(".py")} - modules == set()  # nothing stale, nothing from elsewhere


def test_a_new_subpackage_is_found_without_a_listing(tmp_path):
    """setup.py finds a subpackage added to a mapped folder (the package list of pyproject.toml once missed
    ppdp.tasks.privacy.risk and a wheel install failed with ImportError)."""
    import zipfile

    source = clean_copy(tmp_path / "source")
    added = source / "tasks" / "privacy" / "brand_new"
    added.mkdir()
    (added / "__init__.py").write_text('"""added by the test"""\n', encoding="utf-8")
    (added / "measure.py").write_text("VALUE = 1\n", encoding="utf-8")
    wheel = build_wheel(tmp_path, source)
    assert "ppdp/tasks/privacy/brand_new/measure.py" in zipfile.ZipFile(wheel).namelist()


@pytest.mark.slow
def test_a_release_runs_from_the_installed_wheel(tmp_path):
    """Install the wheel (not editable) into a fresh virtual environment and run the demo release from it, in a
    folder outside the repository, so that nothing resolves to the working tree. The third-party dependencies come
    from this environment's site-packages (a path entry: no network), not the project itself."""
    import shutil
    import site
    import venv

    wheel = build_wheel(tmp_path)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # this environment's packages, after the fresh one's own (a plain path entry: its .pth files, among them the
    # editable install of the working tree, are not processed)
    (Path(purelib) / "zz_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                           "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "census_demo.yaml", work / "census_demo.yaml")
    shutil.copy(REPO / "examples" / "data" / "census_demo.csv", work / "data" / "census_demo.csv")
    where = subprocess.run([str(python), "-c", "import ppdp, ppdp.tasks.privacy.risk; print(ppdp.__file__)"],
                           cwd=work, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr[-2000:]
    assert Path(where.stdout.strip()).is_relative_to(purelib), where.stdout  # the wheel's copy, not the tree
    done = subprocess.run([str(env_dir / "bin" / "ppdp"), "run", "census_demo.yaml", "--set", "tuning.strategy=fixed"],
                          cwd=work, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "published release" in done.stdout
    [manifest] = list((work / "releases").glob("census_demo/*/manifest.json"))
    assert manifest.is_file()
