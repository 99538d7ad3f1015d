"""Rule tests: one release plan (issue 31). The steps of a release are strung together once, by
:func:`ppdp.tasks.plan.run`, over a source (:class:`ppdp.tasks.plan.Source`: one table, or a folder of partitions,
:class:`ppdp.tasks.distributed.plan.FolderSource`, whose module holds steps, not a sequence); an attempt (tune ->
sanitize -> measure) is made in the plan modules only; the flows, ``ppdp compare`` and the reproduction call the
plan; what a method does on partitions is a capability its sanitizer declares
(:class:`ppdp.tasks.sanitize.partitions.OnPartitions`), with no second family of method classes.

The source is parsed with ``ast`` (cheap); each rule is a function of the parsed source, and a test feeds it a
second pipeline to show that it fails on one.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from ppdp.tasks import plan
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.distributed import methods as distributed_methods
from ppdp.tasks.distributed import plan as folder_plan
from ppdp.tasks.sanitize.partitions import OnPartitions
from ppdp.tasks.sanitize.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ("tasks", "flows", "ppdp", "deployments")
PLAN_MODULES = {"tasks/plan.py", "tasks/distributed/plan.py"}
"""Where an attempt (tune -> sanitize -> measure) is made: one table's, and the folder source's."""
SEQUENCE = ("tasks/plan.py", "run")
"""The one function that strings a release's steps together."""

SANITIZE = {"run_method", "sanitize", "recode_partition", "SANITIZE", "RECODE"}
"""A sanitize entry point: the method's run, a partition's recoding, or the plan's steps for them."""
MEASURE_OR_TUNE = {"check_privacy", "check_utility", "measure_published", "measure_utility", "measure_privacy", "tune",
                   "tune_method", "tune_plain", "MEASURE_PRIVACY", "CHECK_UTILITY", "MEASURE_UTILITY"}
"""The privacy or utility measurement of a release, or the tuning (functions, or the plan's steps)."""
STEP_FUNCTIONS = {"run_method", "check_privacy", "check_utility", "merge_rare_categories", "split_holdout_keyed",
                  "settle", "evaluate_value", "promote_counted_columns", "measure_published", "recode_partition"}
"""The plain functions behind the plan's steps: a caller of the plan runs them through it, never itself."""


def _name(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _names(node: ast.AST) -> set[str]:
    """The names a function calls (``f(...)``, ``x.f(...)``, ``step.submit(...)`` of a step ``step``), hands to a
    call (``wrapper(f)(...)``) or refers to as a plan's step (``STEP``)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            for part in (n.func, *n.args):
                name = _name(part)
                if name is not None:
                    out.add(name)
            if isinstance(n.func, ast.Attribute) and n.func.attr in ("submit", "result"):
                out.add(_name(n.func.value) or "")
        name = _name(n)
        if name is not None and name.isupper():
            out.add(name)
    return out


def _calling(source: str, *groups: set[str]) -> list[str]:
    """Functions of ``source`` that call a name of every group."""
    return [fn.name for fn in ast.walk(ast.parse(source)) if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            and all(_names(fn) & group for group in groups)]


def second_pipelines(source: str) -> list[str]:
    """Functions of ``source`` that make an attempt of a release (tune -> sanitize -> measure): each calls a
    sanitize entry point and a measurement or the tuning."""
    return _calling(source, SANITIZE, MEASURE_OR_TUNE)


GATES = {"ENFORCE_PRIVACY", "ENFORCE_SERIES", "ENFORCE_UTILITY", "enforce_privacy", "enforce_series",
         "enforce_utility", "gated"}
"""The gates of a release (the shared steps, their functions)."""
PUBLISHES = {"publish", "publish_release", "publish_row_files", "WRITE_RELEASE", "PUBLISH"}
"""The publish of a release (the source's step, the plan's steps, their functions)."""
SHARED_STEPS = {"TAG", "PROMOTE", "ENFORCE_PRIVACY", "ENFORCE_SERIES", "ENFORCE_UTILITY", "promoting", "tagged"}
"""The steps every release has, run by the sequence (a source never runs them itself)."""


def sequences(source: str) -> list[str]:
    """Functions of ``source`` that string a release together: each runs a gate and the publish."""
    return _calling(source, GATES, PUBLISHES)


def direct_step_calls(source: str) -> list[str]:
    """The plan's step functions called (or handed to a wrapper) by ``source`` itself: a caller of the plan runs them
    through the plan."""
    return sorted(_names(ast.parse(source)) & STEP_FUNCTIONS)


def method_classes(source: str) -> list[str]:
    """Classes that implement a method's work on partitions (two or more of its passes, recoding, allotting...):
    none may live outside the sanitizers."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            defined = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            if len(defined & {"next_pass", "absorb", "recode", "allot", "local_jobs", "finish_local"}) >= 2:
                out.append(node.name)
    return out


def _sources(*roots: str):
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


# -- the rules fail on a second pipeline ------------------------------------------------------------------------
SECOND_PIPELINE = '''
def compare_one(spec, frame, roles):
    sanitizer, trace = tune_plain(spec, roles, frame)
    release, _ = run_method(sanitizer, frame, roles)
    return check_privacy(type(sanitizer), frame, release, roles, spec, frame)
'''


SECOND_SEQUENCE = '''
def run_partitioned(source, ids, runner):
    done = source.attempt(source.roles)
    privacy = runner.call(ENFORCE_PRIVACY, done.privacy)
    return runner.call(PUBLISH, done.staging, privacy, ids.started)
'''


def test_the_rules_fail_on_a_second_pipeline():
    assert second_pipelines(SECOND_PIPELINE) == ["compare_one"]
    assert sequences(SECOND_SEQUENCE) == ["run_partitioned"]
    assert sorted(_names(ast.parse(SECOND_SEQUENCE)) & SHARED_STEPS) == ["ENFORCE_PRIVACY"]
    assert sequences(SECOND_PIPELINE) == []
    assert direct_step_calls(SECOND_PIPELINE) == ["check_privacy", "run_method"]
    assert method_classes("class Generalization:\n    def next_pass(self): ...\n    def recode(self): ...\n") == [
        "Generalization"]
    assert second_pipelines("def only_sanitizes(s, f, r):\n    return run_method(s, f, r)\n") == []


# -- the rules hold on the package ----------------------------------------------------------------------------
def test_only_the_plan_strings_the_steps_together():
    found = {(path, fn) for path, text in _sources(*PACKAGE) if path not in PLAN_MODULES
             for fn in second_pipelines(text)}
    assert not found, f"a second release pipeline outside the plan: {sorted(found)}"
    planned = {path for path, text in _sources("tasks") if second_pipelines(text)}
    assert planned == PLAN_MODULES  # the attempts themselves are found by the same rule
    strung = {(path, fn) for path, text in _sources(*PACKAGE) for fn in sequences(text)}
    assert strung == {SEQUENCE}, f"a release strung together outside tasks/plan.py run: {sorted(strung - {SEQUENCE})}"


def test_the_folder_source_holds_steps_not_a_sequence():
    """The folder source's module runs none of the steps every release has (the tagging, the promotion, the gates:
    the sequence runs them), and its source gives every step :class:`ppdp.tasks.plan.Source` names, with the same
    parameters as one table's."""
    text = (ROOT / "tasks/distributed/plan.py").read_text(encoding="utf-8")
    assert sequences(text) == [] and not _names(ast.parse(text)) & SHARED_STEPS
    members = [m for m, _ in inspect.getmembers(plan.Source, inspect.isfunction) if not m.startswith("_")]
    assert {"read", "prepare", "attempt", "judge_series", "manifest", "publish"} <= set(members)
    for member in members:
        want = list(inspect.signature(getattr(plan.Source, member)).parameters)
        for source in (plan.TableSource, folder_plan.FolderSource):
            assert list(inspect.signature(getattr(source, member)).parameters) == want, (source.__name__, member)


@pytest.mark.parametrize("path", ["tasks/compare.py", "tasks/reproduce.py", "flows/release.py", "flows/compare.py"])
def test_the_callers_run_the_steps_through_the_plan(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    assert direct_step_calls(text) == [], f"{path} runs a step of the plan itself"
    tree = ast.parse(text)
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
        f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
        for a in n.names}
    assert modules & {"ppdp.tasks.plan", "ppdp.tasks.distributed.plan"}, f"{path} does not call the plan"


def test_the_flows_declare_no_step_of_a_release():
    """The release's steps are the plan's (:class:`ppdp.tasks.plan.Step`): the flows make no Prefect step of them."""
    for path in ("flows/release.py",):
        calls = [n for n in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8")))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "step"]
        assert not calls, f"{path} declares steps of its own"


def test_no_method_class_family_outside_the_sanitizers():
    found = {(path, c) for path, text in _sources("tasks", "flows") if not path.startswith("tasks/sanitize/")
             for c in method_classes(text)}
    assert not found, f"method classes outside tasks/sanitize: {sorted(found)}"


# -- the partition capability ----------------------------------------------------------------------------------
CAPABLE = sorted(name for name, cls in REGISTRY.items() if cls.on_partitions is not None)


def test_the_capable_methods_are_the_ones_offered_on_partitions():
    assert CAPABLE == sorted(distributed_methods.partitioned_methods()) and CAPABLE
    for name in CAPABLE:
        assert distributed_methods.partitioned_method(name) is REGISTRY[name].on_partitions


@pytest.mark.parametrize("name", CAPABLE)
def test_each_capability_implements_the_protocol(name):
    """Every member of :class:`OnPartitions`, with the Protocol's parameters in the same order; declared in the
    method's own package (beside the sanitizer), named as the method."""
    capability = REGISTRY[name].on_partitions
    assert capability is not None and capability.name == name
    assert isinstance(capability, OnPartitions)
    assert type(capability).__module__.startswith("ppdp.tasks.sanitize.")
    for member, want in inspect.getmembers(OnPartitions, inspect.isfunction):
        if member.startswith("_"):
            continue
        got = getattr(type(capability), member)
        assert list(inspect.signature(got).parameters)[:2] == list(inspect.signature(want).parameters)[:2], member
        assert len(inspect.signature(got).parameters) == len(inspect.signature(want).parameters), member


def test_a_method_without_the_capability_is_refused_in_one_line():
    without = sorted(set(REGISTRY) - set(CAPABLE))
    assert without
    for name in without:
        with pytest.raises(SpecError) as refused:
            distributed_methods.partitioned_method(name)
        message = str(refused.value)
        assert "\n" not in message and message.endswith(f"methods that can: {', '.join(CAPABLE)}")
