"""Messages in plain words and cheap checks first (issue 34, items 6 and 7).

* an input that fails an expectation is refused with one sentence per problem: the column by position and name,
  how many rows fail and the first failing data row (1 = the first row after the header), never a value (a
  planted canary is absent from stdout, stderr and the audit trail);
* the cheap expectations are decided before Great Expectations is imported, and a bad input, a gate no release
  can meet, is refused before any tuning or sanitizing step runs;
* a safety-floor refusal names the fix (the smallest k) before the override;
* a mistyped method name gets a did-you-mean;
* a missing input of an example that needs outside data prints where to get it (``source.obtain``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.expectations import validate_frame
from ppdp.flows.cli import app
from ppdp.flows.steps import STEP_TIMES
from ppdp.schemas.reports import Claim
from ppdp.tasks import audit
from ppdp.tasks.expectation_text import describe, quick_failures
from ppdp.tasks.gates import floor_fixes, smallest_k
from ppdp.tasks.spec import load_spec
from tests.conftest import REPO

runner = CliRunner()
CANARY = "zq7CANARYv3x"  # planted in bad cells: never in any message or the audit trail
# steps that only run after every cheap check has passed (tuning, sanitizing and what follows them)
LATE_STEPS = {"evaluate", "search-lattice", "sanitize", "validate-privacy", "check-utility", "check-output",
              "publish"}


def ppdp(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def steps_since(started: float) -> set[str]:
    return {name for name, a, _ in STEP_TIMES if a >= started}


def refusal(workspace, table: pd.DataFrame | None = None, text: str | None = None, **overrides) -> tuple[str, str]:
    """Run a release of ``table`` (or the CSV ``text``) and return (every ``ppdp:`` line and what follows, all
    output): exit 2, no traceback, nothing published, the canary nowhere (output, audit trail)."""
    data = workspace.dir / "input.csv"
    if table is not None:
        table.to_csv(data, index=False)
    else:
        data.write_text(text or "", encoding="utf-8")
    started = time.perf_counter()
    result = ppdp("run", workspace.spec(data=data, **overrides))
    out = result.stdout + result.stderr
    assert result.exit_code == 2, out
    assert "Traceback" not in out
    assert not LATE_STEPS & steps_since(started), steps_since(started)  # refused before any tuning or sanitizing
    assert not list(workspace.root.glob("*/*/manifest.json"))
    assert CANARY not in out
    db = workspace.root / "audit.db"
    assert db.is_file() and CANARY.encode() not in db.read_bytes()
    entries = audit.list_entries(workspace.root)
    assert entries[-1].status == "error" and CANARY not in entries[-1].reason
    line = out[out.index("ppdp: error:"):]
    return line, out


def census(workspace) -> pd.DataFrame:
    return pd.read_csv(workspace.data, dtype={"zip": str})


def position(frame: pd.DataFrame, name: str) -> int:
    return list(frame.columns).index(name) + 1


# -- each kind of input problem, through ppdp run -------------------------------------------------------------
@pytest.mark.usefixtures("prefect_harness")
def test_text_in_a_number_column_is_counted_with_its_first_data_row(workspace):
    frame = census(workspace)
    frame["age"] = frame["age"].astype(object)
    frame.loc[16, "age"] = CANARY  # data row 17
    frame.loc[40, "age"] = CANARY + "2"
    line, _ = refusal(workspace, frame)
    assert (f"column {position(frame, 'age')} ('age'): 2 of 600 rows are not a number (first at data row 17): "
            "make them numbers or missing (a missing-value marker goes in source.na_values)" in line), line
    assert "expect_" not in line  # no Great Expectations names


@pytest.mark.usefixtures("prefect_harness")
def test_a_missing_class_value_is_named_with_its_row(workspace):
    frame = census(workspace)
    frame.loc[[4, 9], "income"] = None
    line, _ = refusal(workspace, frame)
    assert (f"column {position(frame, 'income')} ('income'): 2 of 600 rows are missing a value (first at data "
            "row 5): the class column needs a value in every row") in line, line


@pytest.mark.usefixtures("prefect_harness")
def test_an_entirely_missing_quasi_identifier_and_a_header_only_file(workspace):
    frame = census(workspace)
    frame["sex"] = None
    line, _ = refusal(workspace, frame)
    assert f"column {position(frame, 'sex')} ('sex'): every row is missing a value (600 rows)" in line, line
    line, _ = refusal(workspace, text=",".join(frame.columns) + "\n")
    assert "the table has no data rows (a header only)" in line, line


@pytest.mark.usefixtures("prefect_harness")
def test_a_value_outside_the_declared_order_is_named_by_row_not_quoted(workspace):
    frame = census(workspace)
    frame.loc[20, "education"] = CANARY
    order = ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors", "Masters",
             "Doctorate"]
    line, _ = refusal(workspace, frame, columns={"person_id": "identifier", "income": "class",
                                                 "education": {"role": "quasi_identifier", "order": order}})
    assert f"column {position(frame, 'education')} ('education'): 1 row holds a value not in its declared order" \
        in line and "first at data row 21" in line, line


@pytest.mark.usefixtures("prefect_harness")
def test_several_problems_one_line_each(workspace):
    frame = census(workspace)
    frame["age"] = frame["age"].astype(object)
    frame.loc[2, "age"] = CANARY
    frame.loc[7, "income"] = None
    _, out = refusal(workspace, frame)
    lines = [ln for ln in out.splitlines() if "input.csv: column" in ln]
    assert len(lines) == 2, out
    assert any("('age'): 1 of 600 rows is not a number (first at data row 3)" in ln for ln in lines)
    assert any("('income'): 1 of 600 rows is missing a value (first at data row 8)" in ln for ln in lines)


def bad_census_demo(tmp_path: Path) -> Path:
    """The census demo's spec and table in ``tmp_path`` (``bad.yaml``, ``census_bad.csv``), one age cell (data row
    17) made text."""
    data = pd.read_csv(REPO / "examples" / "data" / "census_demo.csv", dtype=str)
    data.loc[16, "age"] = CANARY
    data.to_csv(tmp_path / "census_bad.csv", index=False)
    spec = yaml.safe_load((REPO / "examples" / "census_demo.yaml").read_text(encoding="utf-8"))
    spec["source"]["path"] = str(tmp_path / "census_bad.csv")
    spec["publish"]["root"] = str(tmp_path / "releases")
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    return tmp_path / "bad.yaml"


def test_the_cheap_checks_refuse_before_great_expectations_is_imported(tmp_path):
    """In a fresh process: ingest of a bad census demo refuses without ever importing Great Expectations."""
    bad_census_demo(tmp_path)
    code = ("import sys\nfrom ppdp.tasks import ingest, spec\nfrom ppdp.tasks.core.errors import InputError\n"
            f"s = spec.load_spec({str(tmp_path / 'bad.yaml')!r})\n"
            "try:\n    ingest.ingest(s)\nexcept InputError as e:\n    print(e)\n"
            "print('gx imported:', 'great_expectations' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert "column 3 ('age'): 1 of 3,000 rows is not a number (first at data row 17)" in done.stdout, done
    assert "gx imported: False" in done.stdout and CANARY not in done.stdout + done.stderr


@pytest.mark.usefixtures("prefect_harness")
def test_the_census_demo_with_a_bad_cell_is_refused_before_any_tuning(tmp_path):
    bad_census_demo(tmp_path)
    started = time.perf_counter()
    result = ppdp("run", tmp_path / "bad.yaml")
    out = result.stdout + result.stderr
    assert result.exit_code == 2, out
    assert "census_bad.csv: column 3 ('age'): 1 of 3,000 rows is not a number (first at data row 17)" in out
    ran = steps_since(started)
    assert "ingest" in ran and not ran & (LATE_STEPS | {"tag", "hold-out", "settle-rows"}), ran
    assert CANARY not in out and CANARY.encode() not in (tmp_path / "releases" / "audit.db").read_bytes()


def test_a_good_input_still_runs_the_whole_suite_in_great_expectations(workspace):
    from ppdp.tasks.ingest import ingest

    _, report = ingest(load_spec(workspace.spec()))
    kinds = {e.expectation for e in report.expectations}
    assert report.expectation_count == len(report.expectations)
    assert "expect_column_values_to_be_in_type_list" in kinds  # decided by Great Expectations alone
    assert not report.failed


def test_every_kind_great_expectations_reports_gets_a_sentence_without_values():
    """Real Great Expectations results (kinds beyond the input suite too: a set, lengths, uniqueness, the
    output suite's), told with position, name, count and first row, no value."""
    frame = pd.DataFrame({"id": ["a1", "b2", "b2", "c3"], "code": ["XY", "XY", CANARY, "XY"],
                          "zone": ["n", "s", "n", CANARY], "ssn": ["1", "2", "3", "4"]})
    suite = {"name": "words", "expectations": [
        {"type": "expect_column_value_lengths_to_be_between", "kwargs": {"column": "code", "max_value": 2}},
        {"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "zone", "value_set": ["n", "s"]}},
        {"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}},
        {"type": "expect_columns_to_be_absent", "kwargs": {"column_list": ["ssn"]}},
        {"type": "expect_quasi_identifiers_to_be_k_anonymous", "kwargs": {"column_list": ["zone"], "k": 3}},
        {"type": "expect_column_values_to_match_regex", "kwargs": {"column": "id", "regex": r"^[0-9a-f]{64}$"}},
    ]}
    outcomes = validate_frame(frame, suite)
    failed = [o for o in outcomes if not o.success]
    assert len(failed) == 6
    text = "\n".join(describe(failed, suite, frame))
    assert CANARY not in text and "expect_" not in text
    assert "column 2 ('code'): 1 of 4 rows is longer than 2 characters (first at data row 3)" in text, text
    assert "column 3 ('zone'): 1 of 4 rows is not one of the allowed values (first at data row 4)" in text, text
    assert "column 1 ('id'): 2 of 4 rows are not unique" in text and "(first at data row 2)" in text, text
    assert "'ssn' must not be published" in text, text
    assert "the smallest class over 'zone' holds 1 row(s), fewer than k = 3" in text, text
    assert "column 1 ('id'): 4 of 4 rows are not a pseudonym (64 hexadecimal digits) (first at data row 1)" \
        in text, text


def test_the_quick_checks_agree_with_great_expectations_on_what_fails(workspace):
    """The pandas pre-check fails exactly the expectations Great Expectations fails (for the kinds it decides)."""
    from ppdp.expectations import base_suite_path, load_suite_json
    from ppdp.tasks.core.io import read_table
    from ppdp.tasks.ingest import derived_expectations

    frame = census(workspace)
    frame["age"] = frame["age"].astype(object)
    frame.loc[3, "age"] = CANARY
    frame.loc[5, "income"] = None
    frame["sex"] = None
    path = workspace.dir / "mixed.csv"
    frame.to_csv(path, index=False)
    spec = load_spec(workspace.spec(data=path))
    table = read_table(spec.source)
    suite = load_suite_json(base_suite_path("input"))
    suite["expectations"] = list(suite["expectations"]) + derived_expectations(spec, table)
    quick = quick_failures(table, suite)
    gx = describe([o for o in validate_frame(table, suite) if not o.success], suite, table)
    assert sorted(quick) == sorted(gx) and len(quick) == 3, (quick, gx)


# -- policy feasibility: a gate no release can meet, refused before tuning ----------------------------------
@pytest.mark.usefixtures("prefect_harness")
def test_a_gate_no_release_can_meet_is_refused_before_tuning(workspace):
    frame = census(workspace)
    line, _ = refusal(workspace, frame, privacy={"k": 10, "max_prosecutor_risk": 0.0001})
    assert "spec privacy.max_prosecutor_risk: 0.0001 is below 1/540" in line and "raise privacy." in line, line
    columns = {"person_id": "identifier", "income": "class", "sex": "sensitive"}
    line, _ = refusal(workspace, frame, columns=columns, privacy={"k": 10, "l": 3})
    assert (f"spec privacy.l: 3 is more than the 2 distinct values of the sensitive column {position(frame, 'sex')} "
            "('sex')") in line and "lower privacy.l to 2 or less" in line, line


# -- the safety floor: the fix first, the override last -----------------------------------------------------
def _claim(name: str, value: float, limit: float, unit: str = "equivalence_class") -> Claim:
    return Claim(name=f"floor: {name}", value=value, threshold=limit, comparison="<=", passed=False, unit=unit)


def test_the_floor_fix_is_the_smallest_k_or_says_none_is_known():
    assert [smallest_k(x) for x in (0.09, 0.1, 0.2, 0.5)] == [12, 10, 5, 2]
    fixes = floor_fixes([_claim("average risk", 0.1, 0.09), _claim("exact copies", 0.2, 0.01, "record"),
                         _claim("epsilon", 20, 10, "differential_privacy")])
    assert fixes[0].startswith("raise k to 12 ")
    assert fixes[1].startswith("no fix is known for the exact copies")
    assert fixes[2] == "lower method.epsilon to 10 or less"


@pytest.mark.usefixtures("prefect_harness")
def test_an_mdav_floor_refusal_names_raise_k_before_the_override(workspace):
    result = ppdp("run", workspace.spec(privacy={"k": 10}, method={"name": "mdav", "k": 10}))
    out = result.stdout + result.stderr
    assert result.exit_code == 3, out
    line = next(ln for ln in out.splitlines() if ln.startswith("ppdp: rejected:"))
    assert "safety floor failed: average risk" in line and "raise k to 12" in line, line
    assert line.index("raise k to 12") < line.index("privacy.accept_below_floor"), line


# -- did you mean, for a method's name ---------------------------------------------------------------------
def test_a_mistyped_method_name_gets_a_did_you_mean(workspace):
    result = ppdp("run", workspace.spec(), "--set", "method.name=mdv")
    assert result.exit_code == 2
    assert "method.name (given by --set): unknown method 'mdv'; did you mean 'mdav'?" in result.output, result.output
    result = ppdp("run", workspace.spec(method={"name": "mondrain"}))
    assert result.exit_code == 2
    assert "method.name: unknown method 'mondrain'; did you mean 'mondrian'?" in result.output, result.output


# -- an example whose data is not shipped says where to get it -----------------------------------------------
@pytest.mark.usefixtures("prefect_harness")
def test_a_missing_adult_file_refuses_with_where_to_get_it(tmp_path):
    spec_path = tmp_path / "examples" / "adult.yaml"  # ../../shared/data is not there from here
    spec_path.parent.mkdir()
    shutil.copy(REPO / "examples" / "adult.yaml", spec_path)
    obtain = load_spec(spec_path).source.obtain
    assert obtain and "https://archive.ics.uci.edu/dataset/2/adult" in obtain
    result = ppdp("run", spec_path)
    out = result.stdout + result.stderr
    assert result.exit_code == 2, out
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("ppdp: error:"))
    assert lines[at].endswith("adult.csv: file not found"), lines[at]
    assert "where to get it (source.obtain): UCI Machine Learning Repository, Adult: " \
           "https://archive.ics.uci.edu/dataset/2/adult" in lines[at + 1], lines[at + 1]


def test_every_example_that_needs_outside_data_says_where_to_get_it():
    outside = [p for p in sorted((REPO / "examples").glob("*.yaml")) if "shared" in load_spec(p).source.path.parts]
    assert {p.name for p in outside} >= {"adult.yaml", "adult_dmpd.yaml", "adult_generalized.yaml"}
    for path in outside:
        obtain = load_spec(path).source.obtain
        assert obtain and "https://archive.ics.uci.edu/dataset/2/adult" in obtain, path.name
    assert "https://github.com/arx-deidentifier/arx" in load_spec(
        REPO / "examples" / "adult_generalized.yaml").source.obtain


def test_source_obtain_is_text_and_optional(workspace):
    result = ppdp("run", workspace.spec(source={"path": str(workspace.data), "obtain": 5}))
    assert result.exit_code == 2 and "source.obtain" in result.output, result.output
    assert load_spec(workspace.spec()).source.obtain is None
    spec = load_spec(workspace.spec(source={"path": str(workspace.dir / "gone.csv")}))
    from ppdp.tasks.core.errors import InputError
    from ppdp.tasks.core.io import read_header

    with pytest.raises(InputError) as info:
        read_header(spec.source)
    assert str(info.value).endswith("gone.csv: file not found")  # no hint line without source.obtain


def test_obtain_does_not_change_the_spec_hash(workspace):
    from ppdp.tasks.spec import spec_sha256

    plain = load_spec(workspace.spec("a.yaml"))
    told = load_spec(workspace.spec("b.yaml", source={"path": str(workspace.data), "obtain": "from the census"}))
    assert spec_sha256(plain) == spec_sha256(told)


def test_the_run_help_says_how_data_rows_are_counted():
    text = " ".join(ppdp("run", "--help").output.split())
    assert "1 = the first row after the header" in text



def test_a_failure_only_great_expectations_decides_is_told_in_words_too(workspace):
    """A boolean quasi-identifier fails the number-type expectation, which only Great Expectations decides."""
    from ppdp.tasks.core.errors import InputError
    from ppdp.tasks.ingest import ingest

    frame = census(workspace)
    frame.insert(3, "smoker", [i % 3 == 0 for i in range(len(frame))])
    path = workspace.dir / "flags.parquet"
    frame.to_parquet(path, index=False)
    spec = load_spec(workspace.spec(data=path, columns={"person_id": "identifier", "income": "class",
                                                        "smoker": "quasi_identifier"}))
    with pytest.raises(InputError) as info:
        ingest(spec)
    message = str(info.value)
    assert message.endswith("flags.parquet: column 4 ('smoker'): is not a column of numbers (read as bool)"), message
    assert "expect_" not in message
