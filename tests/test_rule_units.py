"""Rule: a privacy unit is a type (:mod:`ppdp.schemas.units`), never a string compared outside it.

Every comparison (``==``, ``!=``, ``in``, ``not in``, ``is``, ``is not``, a ``match`` case) with a unit's name as a
string literal (or a tuple, list or set of them), and every dict written with unit names as its keys (a switch on the
unit), outside the units module is a violation: the behaviour belongs to the unit object (:func:`unit_of`). The
unit's name is still what releases, manifests and JSON keep, so passing it (``Release(unit="record")``) or declaring
it (``unit: ClassVar[Unit] = "record"``, the ``Unit`` Literal) is fine. Cheap: the sources are parsed with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ppdp.schemas.methods import UNITS
from ppdp.schemas.units import (
    BY_NAME,
    DIFFERENTIAL_PRIVACY,
    EQUIVALENCE_CLASS,
    GENERATING_GROUP,
    PRIVACY_UNITS,
    RECORD,
    find_unit,
    identity_by,
    unit_of,
)

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("ppdp", "schemas", "tasks", "flows")
UNITS_MODULES = {Path("schemas/units.py")}
NAMES = frozenset(UNITS)
_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)


def _names_in(node: ast.AST) -> list[str]:
    """The unit names ``node`` writes: a string literal, or a tuple/list/set/frozenset(...) of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [n for e in node.elts for n in _names_in(e)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set",
                                                                                          "tuple") and node.args:
        return _names_in(node.args[0])
    return []


def _pattern_names(pattern: ast.pattern) -> list[str]:
    if isinstance(pattern, ast.MatchValue):
        return _names_in(pattern.value)
    if isinstance(pattern, ast.MatchOr):
        return [n for p in pattern.patterns for n in _pattern_names(p)]
    if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        return _pattern_names(pattern.pattern)
    return []


def violations(source: str, where: str = "<string>") -> list[str]:
    """Each comparison or dict switch on a unit name in ``source``, as ``where:line: what``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        found: list[str] = []
        kind = ""
        if isinstance(node, ast.Compare) and any(isinstance(op, _COMPARE_OPS) for op in node.ops):
            found = [n for operand in (node.left, *node.comparators) for n in _names_in(operand)]
            kind = "comparison with"
        elif isinstance(node, ast.match_case):
            found, kind = _pattern_names(node.pattern), "match case on"
        elif isinstance(node, ast.Dict):
            keys = [n for k in node.keys if k is not None for n in _names_in(k)]
            found, kind = (keys, "dict keyed by") if len(keys) >= 2 else ([], "")
        if found:
            line = node.pattern.lineno if isinstance(node, ast.match_case) else getattr(node, "lineno", 0)
            out.append(f"{where}:{line}: {kind} {', '.join(sorted(set(found)))}")
    return out


def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
                  if p.relative_to(ROOT) not in UNITS_MODULES)


def test_no_unit_name_compared_outside_the_units_module() -> None:
    sources = _sources()
    assert len(sources) > 100  # the walk found the package
    found = [v for p in sources for v in violations(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not found, ("a privacy unit's name is compared outside ppdp.schemas.units (use unit_of(name) and the "
                       "unit's attribute):\n" + "\n".join(found))


@pytest.mark.parametrize("source, expected", [
    ('if release.unit == "generating_group": pass', 1),
    ('x = unit != "differential_privacy"', 1),
    ('x = "record" == unit', 1),
    ('x = unit in ("equivalence_class", "generating_group")', 1),
    ('x = unit not in ["record"]', 1),
    ('x = unit in {"differential_privacy"}', 1),
    ('x = unit in frozenset(("record", "equivalence_class"))', 1),
    ('x = unit is "record"', 1),
    ('match unit:\n    case "record":\n        pass\n'
     '    case "equivalence_class" | "generating_group":\n        pass', 2),
    ('LABEL = {"equivalence_class": "class", "generating_group": "group"}', 1),
    ('x = {"equivalence_class": 1, "generating_group": 2}[unit]', 1),
    # not violations: passing or declaring the name, other words, another kind's switch, one key
    ('r = Release(frame=f, unit="record")', 0),
    ('unit: ClassVar[Unit] = "record"', 0),
    ('Unit = Literal["equivalence_class", "generating_group", "record", "differential_privacy"]', 0),
    ('x = method == "local" or kind == "identifiers"', 0),
    ('x = unit_of(unit).spends_budget', 0),
    ('x = {"classes": 1, "differential_privacy": 2}', 0),
])
def test_the_rule_finds_comparisons(source: str, expected: int) -> None:
    assert len(violations(source)) == expected, violations(source)


# -- the unit objects: what the switches they replace did ------------------------------------------------------
def test_units_by_name() -> None:
    assert tuple(u.name for u in PRIVACY_UNITS) == UNITS
    for name in UNITS:
        assert unit_of(name) is BY_NAME[name]
        assert str(unit_of(name)) == name
    with pytest.raises(ValueError, match="not a privacy unit"):
        unit_of("classes")


def test_identity_by() -> None:
    # schemas/methods.identity_by's table, and "none" for attribute protection
    old = {"equivalence_class": "classes", "generating_group": "groups", "record": "records",
           "differential_privacy": "differential_privacy"}
    for name, how in old.items():
        assert identity_by("identity", name) == how
        assert identity_by("attribute", name) == "none"


def test_classes_and_groups() -> None:
    # gates.CLASS_UNITS, compare's k for the floor, the series' class releases
    assert [u.name for u in PRIVACY_UNITS if u.counts_classes] == ["equivalence_class", "generating_group"]
    # the published group column: generating groups only; classes over the quasi-identifiers: equivalence classes
    assert [u.name for u in PRIVACY_UNITS if u.group_column] == ["generating_group"]
    assert [u.name for u in PRIVACY_UNITS if u.shares_quasi_identifiers] == ["equivalence_class"]
    # record by record: linkage through row_source, the record wording
    assert [u.name for u in PRIVACY_UNITS if u.compares_records] == ["record"]
    # the output suite's k-anonymity: every unit but record (publish's `unit != "record"`)
    assert [u.name for u in PRIVACY_UNITS if not u.suite_checks_classes] == ["record"]


def test_differential_privacy_alone_spends_budget() -> None:
    for unit in PRIVACY_UNITS:
        dp = unit is DIFFERENTIAL_PRIVACY
        assert unit.spends_budget is dp and unit.reproducible is not dp
        assert unit.withholds_input_figures is dp and unit.claims_by_construction is dp


OLD_UNIT_TEXT = {  # tasks/report/wording.py's table before the units were types
    "equivalence_class": (
        "equivalence classes",
        "published rows that share all their quasi-identifier values form a class; someone who knows a person's "
        "quasi-identifiers can narrow them down to their class, never further"),
    "generating_group": (
        "generating groups",
        "every published row was synthesized from a group of input records, and the published group column "
        "names each row's group, so anyone can re-count the group sizes"),
    "record": (
        "records",
        "rows are perturbed or generated one by one; there are no classes, so the claims compare every original "
        "record with the published ones (distances, linkage, value distortion)"),
    "differential_privacy": (
        "differential privacy",
        "every row is generated by a differentially private mechanism: whether any one record was in the input "
        "changes the odds of any published table by at most a factor e^epsilon (up to a probability delta); the "
        "claim holds by the mechanism's construction and is re-checked from the manifest, not measured on the rows"),
}

OLD_UNIT_SCOPE = {  # tasks/compare.py's table
    "equivalence_class": "its rows are records recoded into classes, judged over the classes they share",
    "generating_group": "its rows are synthesized from groups of records, judged over the groups",
    "record": "each published row is perturbed or generated on its own, with no class or group to count",
    "differential_privacy": "its privacy is its mechanism's (epsilon, delta), which holds by construction",
}


def test_wording() -> None:
    # the reports' and compare's dicts the units replace, as they were
    assert {u.name: (u.plural, u.description) for u in PRIVACY_UNITS} == OLD_UNIT_TEXT
    assert {u.name: u.scope for u in PRIVACY_UNITS} == OLD_UNIT_SCOPE
    assert {u.name: u.short for u in PRIVACY_UNITS} == {
        "equivalence_class": "classes", "generating_group": "groups", "record": "records",
        "differential_privacy": "DP"}
    assert {u.name: u.claim_label for u in PRIVACY_UNITS} == {
        "equivalence_class": "equivalence class", "generating_group": "group", "record": "record",
        "differential_privacy": "generated row"}
    assert {u.name: u.tuning_figure for u in PRIVACY_UNITS} == {
        "equivalence_class": "k (smallest class)", "generating_group": "confidence-interval privacy",
        "record": "DCR quantile", "differential_privacy": "DCR quantile"}
    assert {u.name: u.series_kind for u in PRIVACY_UNITS} == {
        "equivalence_class": "classes", "generating_group": "groups", "record": "records",
        "differential_privacy": "none"}
    # the reports' class names (risk page, gates' fixes, the CLI's "smallest ... of the release")
    assert EQUIVALENCE_CLASS.class_name == "equivalence class" and GENERATING_GROUP.class_name == "generating group"


def test_find_unit_tolerates_other_names() -> None:
    # a ledger also lists releases of unit "model" (a released model), which count no class
    assert find_unit("model") is None and find_unit(None) is None and find_unit("") is None
    assert find_unit("record") is RECORD
