"""What the command line says (issue 22): spec errors list every problem and name a misspelt key's closest known
key; every command's ``--help`` reads as sentences with real types (no ``<bool>`` on a flag); ``audit list``
aligns its columns; ``audit show`` prints key: value lines, or JSON with ``--json``.

Fast: no flow runs here except in the one test marked slow.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
import yaml
from typer.main import get_command
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.flows.cli.audit_entries import readable as _readable
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks import audit
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.spec import MAX_PROBLEMS_LISTED, format_problems, load_spec
from tests.conftest import base_spec

runner = CliRunner()


def ppdp(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def write(tmp_path: Path, spec: dict, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def spec_error(tmp_path: Path, mutate) -> str:
    spec = base_spec(tmp_path / "in.csv", tmp_path / "out")
    mutate(spec)
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, spec))
    return str(info.value)


# -- spec errors ---------------------------------------------------------------------------------------------
def test_a_top_level_typo_is_named_with_its_suggestion_and_every_problem_is_listed(tmp_path):
    message = spec_error(tmp_path, lambda s: s.update(privcy=s.pop("privacy")))
    first, *rest = message.splitlines()
    # the first line is complete on its own: the typo, its suggestion, how many more problems
    assert first.endswith("privcy: unknown key (did you mean 'privacy'?) (and 1 more problem)"), first
    assert first.startswith("spec ") and "spec.yaml" in first
    assert rest == ["  privacy: required key is missing"]


@pytest.mark.parametrize(("mutate", "line"), [
    (lambda s: s["privacy"].update(kk=3), "privacy.kk: unknown key (did you mean 'k'?)"),
    (lambda s: s["method"].update(kk=3), "method.kk: unknown key (did you mean 'k'?)"),
    (lambda s: s["method"].update(varient="class_wise"), "method.varient: unknown key (did you mean 'variant'?)"),
    (lambda s: s["utility"].update(test_fracton=0.3), "utility.test_fracton: unknown key (did you mean "
                                                      "'test_fraction'?)"),
    (lambda s: s["columns"]["education"].update(rle="x"), "columns.education.rle: unknown key (did you mean "
                                                          "'role'?)"),
    (lambda s: s.update(runner={"knd": "dask"}), "runner.knd: unknown key (did you mean 'kind'?)"),
    (lambda s: s.update(zzzz=1), "zzzz: unknown key"),
])
def test_nested_unknown_keys_name_the_closest_key_there(tmp_path, mutate, line):
    message = spec_error(tmp_path, mutate)
    assert message.endswith(line), message
    assert "\n" not in message  # a single problem stays one line


def test_several_problems_one_line_each_capped(tmp_path):
    def mutate(s):
        s.pop("publish")
        s["privacy"].update(kk=3)
        s["method"].update(kk=3)
        s.update(colour="red", a1=1, a2=2, a3=3)
    lines = spec_error(tmp_path, mutate).splitlines()
    # 7 problems: the first line counts the 6 others, 4 more are listed, then how many are not; misspelt keys
    # first, then the other problems, then the unknown keys that resemble none
    assert lines[0].endswith(": privacy.kk: unknown key (did you mean 'k'?) (and 6 more problems)"), lines[0]
    assert len(lines) == MAX_PROBLEMS_LISTED + 1
    assert lines[1:] == ["  method.kk: unknown key (did you mean 'k'?)", "  colour: unknown key (did you mean "
                         "'columns'?)", "  publish: required key is missing", "  a1: unknown key",
                         "  and 2 more problems"]


def test_format_problems_one_line_for_callers_that_print_one():
    assert format_problems(["a: x", "b: y", "c: z"], one_line=True) == "a: x (and 2 more problems)"
    assert format_problems(["a: x"]) == "a: x"


def test_compare_reasons_stay_one_line():
    from ppdp.tasks.compare import _validate

    raw = base_spec(Path("/nonexistent/in.csv"), Path("/nonexistent/out"))
    raw["privcy"] = raw.pop("privacy")
    with pytest.raises(SpecError) as info:
        _validate(raw)
    assert str(info.value) == "privcy: unknown key (did you mean 'privacy'?) (and 1 more problem)"


def test_run_prints_one_line_per_problem_exit_2_no_traceback(tmp_path):
    spec = base_spec(tmp_path / "in.csv", tmp_path / "out")
    spec["privcy"] = spec.pop("privacy")
    spec["method"]["kk"] = 3
    result = ppdp("run", write(tmp_path, spec), "--debug")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith(("ppdp: error:", "  "))]
    assert lines[0].startswith("ppdp: error: spec ")
    assert lines[0].endswith("spec.yaml: method.kk: unknown key (did you mean 'k'?) (and 2 more problems)")
    assert lines[1:] == ["  privcy: unknown key (did you mean 'privacy'?)", "  privacy: required key is missing"]
    assert "Traceback" not in result.output


def test_validate_lists_every_bad_threshold(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    result = ppdp("validate", table, "--qi", "a", "--k", "0", "--t", "4")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["ppdp: error: --k: Input should be greater than or equal to 2 (and 1 more "
                                          "problem)", "  --t: Input should be less than or equal to 1"]


# -- help ----------------------------------------------------------------------------------------------------
def commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    out = [(path, group)]
    for name, command in getattr(group, "commands", {}).items():
        out += commands(command, (*path, name)) if isinstance(command, click.Group) else [((*path, name), command)]
    return out


ALL = commands(get_command(app))


@pytest.mark.parametrize("path", [p for p, _ in ALL], ids=lambda p: " ".join(p) or "ppdp")
def test_help_shows_no_bool_type_and_every_parameter_is_described(path):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output, result.output
    command = dict(ALL)[path]
    for param in command.params:
        assert (getattr(param, "help", None) or "").strip(), (path, param.name)


def test_run_help_names_the_exit_codes_and_points_to_examples():
    text = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "120"}).output
    assert "Exit codes:" in text and "examples/" in text
    for code, meaning in (("0", "published"), ("2", "bad spec or input"), ("3", "rejected"), ("1", "internal")):
        assert any(line.strip().startswith(code) and meaning in line for line in text.splitlines()), (code, text)


def test_command_list_has_no_sentence_broken_mid_line():
    """A docstring's line breaks used to reach the list of commands ("... and\\n publish it")."""
    for path, command in ALL:
        if not isinstance(command, click.Group):
            assert "\n" not in (command.help or "").split("\n\n")[0], path


def test_validate_cluster_help_has_no_stray_word():
    validate = dict(ALL)[("validate",)]
    cluster = next(p for p in validate.params if p.name == "cluster")
    assert cluster.help.startswith("For a folder of Parquet files")


# -- audit list / show ---------------------------------------------------------------------------------------
@pytest.fixture
def trail(tmp_path) -> Path:
    root = tmp_path / "root"
    for release_id, dataset in (("r1", "d"), ("r2", "a_dataset_name_well_beyond_sixteen_characters"), ("r3", "e")):
        audit.append_entry(root, release_id=release_id, dataset=dataset, status="rejected", reason="a gate failed",
                           started_at=datetime.now(UTC))
    return root


def test_audit_list_aligns_columns_with_a_long_dataset_name(trail):
    result = ppdp("audit", "list", "--root", trail)
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()
    assert len(rows) == 3
    for column, needle in (("status", "rejected"), ("finished (UTC)", datetime.now(UTC).strftime("%Y-")),
                           ("reason", "a gate failed")):
        assert {row.index(needle) for row in rows} == {header.index(column)}, (column, result.output)


def test_audit_show_prints_key_value_lines_and_json(trail):
    shown = ppdp("audit", "show", "r2", "--root", trail)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "{" not in shown.output and "None" not in shown.output
    assert "dataset:" in shown.output and "completes:" in shown.output
    assert len({line.index(":") + len(line.split(":", 1)[1]) - len(line.split(":", 1)[1].lstrip())
                for line in lines}) == 1  # the values start in one column
    as_json = ppdp("audit", "show", "r2", "--root", trail, "--json")
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.output)
    assert doc["release_id"] == "r2" and [e["entry"]["status"] for e in doc["entries"]] == ["rejected"]
    assert doc["entries"][0]["manifest"] is None and doc["entries"][0]["entry"]["completes"] is None


def test_readable_values_are_plain_text():
    assert _readable({"k": 62, "variant": "class_wise", "weight": 2.0}) == "k 62, variant class_wise, weight 2"
    assert _readable({"zip": {"type": "prefix", "step": 1}, "bins": [18, 60]}) == (
        "zip: type prefix, step 1; bins: 18, 60")
    assert _readable(None) == "none" and _readable(True) == "true"


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_audit_show_of_a_published_release(workspace):
    assert ppdp("run", workspace.spec()).exit_code == 0
    [entry] = [e for e in audit.list_entries(workspace.root) if e.status == "published"]
    shown = ppdp("audit", "show", entry.release_id, "--root", workspace.root)
    assert shown.exit_code == 0 and "{" not in shown.output, shown.output
    assert "method:" in shown.output and "\n  k:" in shown.output and "k=" in shown.output
    doc = json.loads(ppdp("audit", "show", entry.release_id, "--root", workspace.root, "--json").output)
    published = [e for e in doc["entries"] if e["entry"]["status"] == "published"]
    assert published[0]["manifest"]["release_id"] == entry.release_id


def test_spec_model_suggestions_come_from_the_model():
    from pydantic import ValidationError

    from ppdp.tasks.spec import validation_problems

    raw = base_spec(Path("/x/in.csv"), Path("/x/out"))
    raw["tuning"]["stratgy"] = "grid"
    with pytest.raises(ValidationError) as info:
        ReleaseSpec.model_validate(raw, context={"release_spec": True})
    assert validation_problems(info.value, model=ReleaseSpec) == ["tuning.stratgy: unknown key (did you mean "
                                                                  "'strategy'?)"]
    assert validation_problems(info.value) == ["tuning.stratgy: unknown key"]  # no model: no guess
