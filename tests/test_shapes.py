"""Release shapes own what differs between kinds of release: the flows and the tuner never branch on a method or a
shape (issue 20), and each shape's methods do what the flow relied on."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ppdp.schemas.release import DpRelease, PartsRelease, Release, ReleasePart
from ppdp.tasks import shapes
from ppdp.tasks.sanitize.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[1]

SHAPE_ATTRIBUTES = {
    # what the flow used to read to tell releases apart
    "covers_every_row", "generalizes", "parts", "recode", "partition", "dp", "lattice_parameters", "part_reports",
    # a shape's own description (calling a shape's methods is the point; testing what it is is a branch)
    "release_type",
}
SHAPE_NAMES = {"ReleaseShape", "PartsRelease", "DpRelease", "ROWS", "EVERY_ROW", "PARTS", "SHAPES"}


def wiring_files(root: Path) -> list[Path]:
    return sorted((root / "flows").glob("*.py")) + [root / "tasks" / "tune.py"]


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def shape_branches(path: Path, methods: set[str]) -> list[str]:
    """Every place in ``path`` that names a method, reads a shape attribute (a method call named like one, such as
    ``str.partition``, excepted) or names a shape or a release kind."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and node.value in methods:
            found.append(f"{where}: names the method {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr in SHAPE_ATTRIBUTES and id(node) not in called:
            found.append(f"{where}: reads .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in SHAPE_NAMES:
            found.append(f"{where}: names {node.id}")
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] in SHAPE_NAMES:
            found.append(f"{where}: imports {node.name}")
    return found


def test_the_flows_and_the_tuner_never_branch_on_a_method_or_a_shape():
    found = [f for path in wiring_files(ROOT) for f in shape_branches(path, set(REGISTRY))]
    assert not found, "the flows and the tuner must call the shape's steps (ppdp.tasks.shapes):\n" + "\n".join(found)


def test_the_rule_catches_a_branch(tmp_path):
    """The checker finds what the flow held before release shapes (an every-row test, a parts test, a method name,
    an isinstance on a release kind), and lets a str.partition call through."""
    (tmp_path / "flows").mkdir()
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "tune.py").write_text('"""generalization is named in a docstring only."""\n')
    (tmp_path / "flows" / "release.py").write_text(
        "def run(cls, release, spec, item):\n"
        "    every_row = cls.covers_every_row\n"
        "    tables = release.parts if release.parts else release.frame\n"
        "    if spec.method.name == 'dmpd':\n"
        "        pass\n"
        "    if isinstance(release, PartsRelease):\n"
        "        pass\n"
        "    key, _, value = item.partition('=')\n")
    found = [f for path in wiring_files(tmp_path) for f in shape_branches(path, set(REGISTRY))]
    assert sorted(f.split(": ", 1)[1] for f in found if f.startswith("release.py")) == sorted([
        "reads .covers_every_row", "reads .parts", "reads .parts", "names the method 'dmpd'", "names PartsRelease"])
    assert not [f for f in found if f.startswith("tune.py")]


def test_every_method_declares_a_shape_and_the_shapes_cover_the_registry():
    for name, cls in REGISTRY.items():
        assert shapes.shape_of(cls) in shapes.SHAPES, name
    assert {cls.shape for cls in REGISTRY.values()} == set(shapes.BY_NAME)  # no shape left without a method
    with pytest.raises(TypeError, match="not one of rows, every_row, parts"):
        shapes.shape_of(type("Odd", (), {"shape": "cube"}))


def _frame(n: int = 12) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(n), "b": ["x", "y"] * (n // 2)})


def test_a_single_table_is_published_as_it_is():
    release = Release(frame=_frame(), unit="record", treatments={}, row_source=np.arange(12))
    for shape in (shapes.ROWS, shapes.EVERY_ROW):
        assert shape.tables(release) is release.frame
        assert shape.records(release) == 12 and shape.summary(release) == "12 records"
        assert shape.extra_files(release, None) == {}  # type: ignore[arg-type]


def test_a_partitioned_release_publishes_its_tables_and_counts_records_once():
    parts = (ReleasePart("part-1", _frame(), ("a",)), ReleasePart("part-2", _frame()[["b"]], ()))
    release = PartsRelease(frame=pd.DataFrame(), unit="equivalence_class", treatments={},
                           row_source=np.zeros(0, dtype=np.int64), parts=parts)
    assert list(shapes.PARTS.tables(release)) == ["part-1", "part-2"]
    assert [len(f) for f in shapes.PARTS.frames(release)] == [12, 12]
    assert shapes.PARTS.records(release) == 12  # each table holds one row per record: 12 records, not 24 rows
    assert shapes.PARTS.summary(release) == "12 records in 2 tables"
    with pytest.raises(TypeError, match="not a PartsRelease"):  # fail closed on a method returning the wrong kind
        shapes.PARTS.tables(Release(frame=_frame(), unit="record", treatments={}, row_source=np.arange(12)))


def test_the_rare_value_rule_leaves_quasi_identifiers_only_to_a_recoding():
    from ppdp.api import roles_for

    roles = roles_for(_frame(), quasi_identifiers=["a"], class_column="b")
    assert shapes.ROWS.rare_rule_skip(roles) == () and shapes.PARTS.rare_rule_skip(roles) == ()
    assert shapes.EVERY_ROW.rare_rule_skip(roles) == tuple(roles.rare_rule_skip) and roles.rare_rule_skip


def test_release_kinds_declare_only_their_own_fields():
    """The shared record holds what every method has; the partitioned and DP fields live on their kinds."""
    common = set(Release.__dataclass_fields__)
    assert not common & {"parts", "recode", "partition", "dp"}
    assert set(PartsRelease.__dataclass_fields__) - common == {"parts", "recode", "partition"}
    assert set(DpRelease.__dataclass_fields__) - common == {"dp"}
