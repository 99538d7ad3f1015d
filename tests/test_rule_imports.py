"""Dependencies are visible at the top of each module (issue 31).

Read with ``ast`` over ppdp/, schemas/, tasks/ and flows/ (the folders mapped into ``ppdp`` by pyproject's
``[tool.setuptools.package-dir]``):

(a) no private name (``_x``) is imported from another ppdp module: a name another module needs is public, or lives
    where it is used;
(b) no ppdp import inside a function body, unless the imported module is heavy: it imports, at its top, directly or
    through other ppdp modules, a heavy third-party library (Prefect, scikit-learn, SciPy, Dask, Matplotlib, OpenDP,
    ...); or it is a package's lazy attribute (a package ``__init__``'s module ``__getattr__``, PEP 562: ``ppdp``'s
    API, so that ``import ppdp.x`` does not load every layer). Such an import says why in a comment, as (c) asks.
    ``if TYPE_CHECKING:`` imports are fine;
(c) any other import inside a function (a heavy or optional third-party library) carries a comment on its line, or
    on the line above it or above the run of imports it belongs to, saying why it is deferred.

Each whole-tree test lists every violation at once; each rule is also run on a small source that breaks it.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("ppdp", "schemas", "tasks", "flows")
# third-party libraries that cost from a few tenths of a second to seconds to import
HEAVY = frozenset({"prefect", "prefect_dask", "great_expectations", "sklearn", "scipy", "dask", "distributed",
                   "matplotlib", "opendp", "mbi", "jax", "polars"})


def folders() -> dict[str, str]:
    """Repository folder -> package, from pyproject's package-dir (only the folders these rules read)."""
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    return {folder: package for package, folder in mapping.items() if folder in ROOTS}


def modules() -> dict[str, Path]:
    out = {}
    for folder, package in folders().items():
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO / folder).with_suffix("")
            out[".".join([package, *(p for p in rel.parts if p != "__init__")])] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@dataclass(frozen=True)
class Found:
    node: ast.Import | ast.ImportFrom
    in_function: bool
    block_start: int  # first line of the run of import statements this one belongs to
    function: str | None = None  # the innermost function it sits in


def imports(tree: ast.Module) -> list[Found]:
    """Every import statement outside ``if TYPE_CHECKING:`` blocks, whether it sits in a function body, and where
    its run of consecutive import statements starts."""
    out: list[Found] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for field in ("body", "orelse", "finalbody", "handlers"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            start = None
            for stmt in stmts:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    start = stmt.lineno if start is None else start
                    out.append(Found(stmt, function is not None, start, function))
                    continue
                start = None
                if _is_type_checking(stmt):
                    visit(ast.If(test=stmt.test, body=[], orelse=stmt.orelse), function)
                    continue
                visit(stmt, stmt.name if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else function)

    visit(tree, None)
    return out


def resolve(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    """The absolute module names an import names (``from a import b``: both ``a.b`` and ``a``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        anchor = name.split(".") if is_package else name.split(".")[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return [f"{base}.{a.name}" for a in node.names] + [base]


def first_party(target: str) -> bool:
    return target.split(".")[0] == "ppdp"


def known_module(target: str, known: set[str] | dict[str, Path]) -> str | None:
    """The ppdp module ``target`` names (``a.b.name``: the module ``a.b``)."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def heavy_modules(mods: dict[str, Path]) -> dict[str, str]:
    """ppdp modules whose import loads a heavy library at module level (directly or through other ppdp modules,
    parent packages included): module -> the library."""
    direct: dict[str, set[str]] = {}
    third: dict[str, set[str]] = {}
    for name, path in mods.items():
        found = [f for f in imports(ast.parse(path.read_text(encoding="utf-8"))) if not f.in_function]
        targets = [t for f in found for t in resolve(f.node, name, path.name == "__init__.py")]
        direct[name] = {m for t in targets if first_party(t) and (m := known_module(t, mods)) and m != name}
        parts = name.split(".")
        direct[name] |= {".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in mods}
        third[name] = {t.split(".")[0] for t in targets if not first_party(t)} & HEAVY
    out: dict[str, str] = {}
    for name in mods:
        seen, stack = {name}, [name]
        while stack:
            mod = stack.pop()
            if third[mod]:
                out[name] = sorted(third[mod])[0]
                break
            for nxt in direct[mod] - seen:
                seen.add(nxt)
                stack.append(nxt)
    return out


def has_comment(lines: list[str], found: Found) -> bool:
    """A comment on the import's lines or on the first line of its run of imports, or on the line above either."""
    node = found.node
    own = [*lines[node.lineno - 1 : (node.end_lineno or node.lineno)], lines[found.block_start - 1]]
    above = {node.lineno - 2, found.block_start - 2}
    return any("#" in line for line in own) or any(i >= 0 and lines[i].strip().startswith("#") for i in above)


def violations(source: str, name: str, heavy: dict[str, str], known: set[str], is_package: bool = False
               ) -> dict[str, list[str]]:
    """The violations of rules a, b and c in one module's source (``name``: its module name; ``known``: every ppdp
    module; ``heavy``: those that load a heavy library)."""
    lines = source.splitlines()
    out: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    for found in imports(ast.parse(source)):
        node = found.node
        targets = resolve(node, name, is_package)
        where = f"{name}:{node.lineno}"
        base = targets[-1] if isinstance(node, ast.ImportFrom) else None
        if base is not None and first_party(base):
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if private:
                out["a"].append(f"{where} imports {', '.join(private)} from {base}")
        if not found.in_function:
            continue
        ours = [t for t in targets if first_party(t)]
        if ours:
            weight = next((heavy[m] for t in ours if (m := known_module(t, known)) in heavy), None)
            if weight is None and is_package and found.function == "__getattr__":
                weight = "a package's lazy attribute (PEP 562)"
            if weight is None:
                out["b"].append(f"{where} imports {ours[-1] if base else ours[0]} inside a function")
            elif not has_comment(lines, found):
                out["c"].append(f"{where} imports {ours[0]} (heavy: loads {weight}) inside a function without a "
                                "comment")
        elif not has_comment(lines, found):
            out["c"].append(f"{where} imports {targets[-1]} inside a function without a comment saying why")
    return out


@functools.cache
def tree_violations() -> dict[str, list[str]]:
    """Every violation of the tree, by rule (read once per test session)."""
    mods = modules()
    heavy = heavy_modules(mods)
    out: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    for name, path in mods.items():
        found = violations(path.read_text(encoding="utf-8"), name, heavy, set(mods), path.name == "__init__.py")
        rel = path.relative_to(REPO)
        for rule, items in found.items():
            out[rule] += [f"{rel}: {item}" for item in items]
    return out


# --- the rules over the tree -------------------------------------------------------------------------------------


def test_no_private_name_is_imported_from_another_module():
    found = tree_violations()["a"]
    assert not found, f"{len(found)} private names imported:\n  " + "\n  ".join(found)


def test_no_first_party_import_inside_a_function():
    found = tree_violations()["b"]
    assert not found, f"{len(found)} ppdp imports inside functions:\n  " + "\n  ".join(found)


def test_a_deferred_import_says_why():
    found = tree_violations()["c"]
    assert not found, f"{len(found)} deferred imports without a comment:\n  " + "\n  ".join(found)


# --- each rule can fail ----------------------------------------------------------------------------------------------

HEAVY_FOR_TEST = {"ppdp.flows.release": "prefect"}


def check(source: str, name: str = "ppdp.tasks.sample") -> dict[str, list[str]]:
    return violations(source, name, HEAVY_FOR_TEST, set(modules()))


def test_rule_a_flags_a_private_name_from_another_module():
    found = check("from ppdp.tasks.report.fmt import _fmt, esc\n")
    assert found["a"] == ["ppdp.tasks.sample:1 imports _fmt from ppdp.tasks.report.fmt"]
    assert check("from .fmt import _e\n", "ppdp.tasks.report.page")["a"] == [
        "ppdp.tasks.report.page:1 imports _e from ppdp.tasks.report.fmt"]
    assert check("def f():\n    from ppdp.schemas.params import _text  # heavy: no\n")["a"]
    assert not check("from ppdp.tasks.report.fmt import esc\nfrom os import _exit\nfrom ppdp import __version__\n")["a"]


def test_rule_b_flags_a_first_party_import_inside_a_function():
    source = ("from typing import TYPE_CHECKING\n"
              "from ppdp.tasks import audit\n"
              "if TYPE_CHECKING:\n    from ppdp.schemas.spec import ReleaseSpec\n"
              "def f():\n    from ppdp.tasks.ingest import read_table  # said why, still not allowed\n"
              "    def g():\n        import ppdp.tasks.publish\n"
              "class C:\n    def m(self):\n        from . import tag\n")
    assert check(source)["b"] == ["ppdp.tasks.sample:6 imports ppdp.tasks.ingest inside a function",
                                  "ppdp.tasks.sample:8 imports ppdp.tasks.publish inside a function",
                                  "ppdp.tasks.sample:11 imports ppdp.tasks inside a function"]
    assert not check("def f():\n    if TYPE_CHECKING:\n        from ppdp.tasks import audit\n")["b"]


def test_rule_b_lets_a_heavy_module_be_deferred_with_a_reason():
    said = "def run():\n    from ppdp.flows.release import release_flow  # heavy: Prefect, only for a run\n"
    assert check(said) == {"a": [], "b": [], "c": []}
    silent = "def run():\n    from ppdp.flows.release import release_flow\n"
    assert check(silent)["c"] == ["ppdp.tasks.sample:2 imports ppdp.flows.release.release_flow (heavy: loads prefect) "
                                  "inside a function without a comment"]
    assert not check(silent)["b"]


def test_rule_c_flags_a_deferred_import_without_a_comment():
    source = ("import numpy as np\n"
              "def f():\n    import json\n"
              "def g():\n    # heavy: SciPy, only for a search\n    from scipy.spatial import cKDTree\n"
              "    from scipy.optimize import linprog\n"
              "def h():\n    import sklearn  # heavy: scikit-learn\n"
              "def k():\n    x = 1\n    from dask import delayed\n")
    assert check(source)["c"] == [
        "ppdp.tasks.sample:3 imports json inside a function without a comment saying why",
        "ppdp.tasks.sample:12 imports dask inside a function without a comment saying why"]


def test_heavy_modules_follow_module_level_imports_only():
    mods = modules()
    heavy = heavy_modules(mods)
    assert heavy.get("ppdp.flows.dask_runner") in {"dask", "distributed", "prefect", "prefect_dask"}
    assert "ppdp.tasks.core.io" not in heavy  # reads tables with pyarrow: cheap
    assert "ppdp.tasks.plots" not in heavy  # Matplotlib is loaded inside its functions


def test_rule_b_lets_a_package_defer_its_lazy_attributes_only():
    lazy = "def __getattr__(name):\n    # deferred: loads every layer\n    from ppdp import api\n    return api\n"
    assert violations(lazy, "ppdp", HEAVY_FOR_TEST, set(modules()), is_package=True) == {"a": [], "b": [], "c": []}
    assert violations(lazy, "ppdp.tasks.sample", HEAVY_FOR_TEST, set(modules()))["b"]
    other = "def load(name):\n    # deferred\n    from ppdp import api\n"
    assert violations(other, "ppdp", HEAVY_FOR_TEST, set(modules()), is_package=True)["b"]
