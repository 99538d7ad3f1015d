"""`ppdp validate`, the privacy gates of a release, and the custom Great Expectations expectations."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdp.expectations import validate_frame
from ppdp.flows.cli import app
from ppdp.schemas.spec import PrivacyThresholds
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.privacy.measure import check_gates, measure_table, recursive_cl
from ppdp.tasks.spec import load_spec, preflight

runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def table(tmp_path):
    """Two QIs, two sensitive attributes; classes of 4 rows with known diversity."""
    frame = pd.DataFrame({
        "zip": ["111"] * 4 + ["222"] * 4 + ["333"] * 4,
        "age": [30] * 4 + [40] * 4 + [50] * 4,
        "disease": ["flu", "flu", "cold", "hiv", "flu", "cold", "cold", "cold", "flu", "hiv", "cold", "flu"],
        "salary": [10, 20, 30, 40, 10, 10, 20, 20, 50, 60, 70, 80],
    })
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_validate_gates_exit_codes_and_table_output(table):
    path, _ = table
    ok = ppdp("validate", path, "--qi", "zip,age", "--sa", "disease", "--k", "4", "--l", "2")
    assert ok.exit_code == 0, ok.output
    assert "k_anonymity" in ok.output and "gate k" in ok.output and "PASS" in ok.output
    bad = ppdp("validate", path, "--qi", "zip,age", "--sa", "disease", "--k", "5", "--l", "3")
    assert bad.exit_code == 3
    assert "FAIL" in bad.output and "equivalence class #" in bad.output
    for value in ("flu", "cold", "hiv", "111"):  # no data value is printed
        assert value not in bad.output


def test_validate_json_uses_pycanon_names_and_shapes(table):
    path, frame = table
    result = ppdp("validate", path, "--qi", "zip,age", "--sa", "disease,salary", "--json", "--t", "0.9")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["k_anonymity"] == 4 and isinstance(doc["k_anonymity"], int)
    assert isinstance(doc["alpha_k_anonymity"], list) and len(doc["alpha_k_anonymity"]) == 2
    assert doc["l_diversity"] == 2  # class 222 has {flu, cold} for disease
    assert isinstance(doc["recursive_c_l_diversity"], list)
    for name in ("t_closeness", "delta_disclosure", "basic_beta_likeness", "enhanced_beta_likeness"):
        assert isinstance(doc[name], float), name
    assert doc["risk"]["prosecutor_max"] == 0.25 and doc["risk"]["sample_uniques"] == 0.0
    assert doc["passed"] is True and doc["gates"][0]["name"] == "t"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--qi", "zip,nope"], "column 'nope' is not in the table"),
        (["--qi", "zip", "--sa", "zip"], "both a quasi-identifier and a sensitive attribute"),
        (["--qi", "zip", "--t", "0.2"], "needs a sensitive attribute"),
        (["--qi", "zip", "--k", "1"], "--k"),
        (["--qi", "zip", "--l-variant", "fancy", "--l", "2", "--sa", "disease"], "l-variant"),
    ],
)
def test_validate_bad_arguments(table, args, needle):
    path, _ = table
    result = ppdp("validate", path, *args)
    assert result.exit_code == 2, result.output
    assert needle in result.output and result.output.strip().count("\n") == 0


def test_validate_bad_tables(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("zip,disease\n", encoding="utf-8")
    assert "no rows" in ppdp("validate", empty, "--qi", "zip").output
    nulls = tmp_path / "nulls.csv"
    nulls.write_text("zip,disease\n,flu\n,cold\n", encoding="utf-8")
    result = ppdp("validate", nulls, "--qi", "zip", "--sa", "disease")
    assert result.exit_code == 2 and "entirely missing" in result.output
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("age,disease\n" + "".join(f"{20 + i},flu\n" for i in range(40)) + "SECRET,cold\n",
                     encoding="utf-8")
    result = ppdp("validate", mixed, "--qi", "age", "--sa", "disease")
    assert result.exit_code == 2 and "mixes numbers and text" in result.output and "SECRET" not in result.output
    parquet = tmp_path / "obj.parquet"
    pd.DataFrame({"q": ["a", "b"], "s": ["x", "y"]}).to_parquet(parquet)
    assert ppdp("validate", parquet, "--qi", "q", "--sa", "s", "--k", "1").exit_code == 2  # k must be >= 2
    assert ppdp("validate", tmp_path / "none.csv", "--qi", "q").exit_code == 2


def test_validate_reading_options(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("zip;disease\n1;?\n1;flu\n2;cold\n2;flu\n", encoding="utf-8")
    result = ppdp("validate", path, "--qi", "zip", "--sa", "disease", "--sep", ";", "--na-values", "?", "--json")
    doc = json.loads(result.output)
    assert doc["k_anonymity"] == 2 and doc["rows"] == 4


def test_recursive_cl_by_hand():
    frame = pd.DataFrame({"q": [1] * 6 + [2] * 4, "s": list("aaabbc") + list("xyzz")})
    # class 1: counts 3,2,1 -> l=2: r1 / (r2 + r3) = 3/3 = 1; class 2: counts 2,1,1 -> 2/2 = 1
    ratio, worst, attr = recursive_cl(frame, ["q"], ["s"], c=2.0, l=2)
    assert ratio == 1.0 and attr == "s"
    # l = 3: class 1: 3/1 = 3; class 2: 2/1 = 2 -> worst is class 1 with 3
    ratio, worst, _ = recursive_cl(frame, ["q"], ["s"], c=2.0, l=3)
    assert ratio == 3.0 and worst == equivalence_class_ids(frame, ["q"])[0]
    report = check_gates(measure_table(frame, ["q"], ["s"], thresholds=PrivacyThresholds(l=3, l_variant="recursive",
                                                                                            c=2.5), attack_queries=0),
                         PrivacyThresholds(l=3, l_variant="recursive", c=2.5))
    assert not report.passed  # 3 is not below 2.5


def test_sensitive_gate_without_sensitive_attribute_is_a_spec_error(workspace):
    spec = load_spec(workspace.spec(**{"privacy__t": 0.3}))
    with pytest.raises(SpecError, match="privacy.t: this gate needs a sensitive attribute"):
        preflight(spec)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", None]), st.sampled_from("xyz")),
                     min_size=1, max_size=50),
       k=st.integers(1, 6), l=st.integers(1, 3))
def test_custom_expectations_agree_with_pandas(rows, k, l):
    frame = pd.DataFrame(rows, columns=["q1", "q2", "s"])
    suite = {"name": "t", "expectations": [
        {"type": "expect_quasi_identifiers_to_be_k_anonymous", "kwargs": {"column_list": ["q1", "q2"], "k": k}},
        {"type": "expect_equivalence_classes_to_be_l_diverse",
         "kwargs": {"column_list": ["q1", "q2"], "sensitive_column": "s", "l": l}},
        {"type": "expect_columns_to_be_absent", "kwargs": {"column_list": ["ssn", "s"]}},
    ]}
    by_type = {o.expectation: o for o in validate_frame(frame, suite)}  # GX may reorder results
    kk = by_type["expect_quasi_identifiers_to_be_k_anonymous"]
    ll = by_type["expect_equivalence_classes_to_be_l_diverse"]
    absent = by_type["expect_columns_to_be_absent"]
    groups = frame.groupby(["q1", "q2"], dropna=False)
    assert kk.observed == groups.size().min() and kk.success == (groups.size().min() >= k)
    assert ll.observed == groups["s"].nunique().min() and ll.success == (groups["s"].nunique().min() >= l)
    assert absent.observed == 1 and not absent.success


def test_a_suite_with_an_unknown_expectation_fails_closed():
    with pytest.raises(RuntimeError, match="1 expectations declared, 0 loaded"):  # GX itself only logs
        validate_frame(pd.DataFrame({"a": [1]}), {"name": "t", "expectations": [
            {"type": "expect_something_nobody_registered", "kwargs": {"column": "a"}}]})


def test_gx_hashes_no_checked_frame(monkeypatch):
    """GX would MD5 a checked frame whole (raw rows, unkeyed) into the batch markers of its results: not computed."""
    from great_expectations.execution_engine import pandas_execution_engine as engine  # heavy: GX

    hashed: list[int] = []
    real = engine.hash_pandas_dataframe
    monkeypatch.setattr(engine, "hash_pandas_dataframe", lambda df: hashed.append(len(df)) or real(df))
    outcomes = validate_frame(pd.DataFrame({"a": [1, 2, 3]}), {"name": "t", "expectations": [
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "a"}}]})
    assert [o.success for o in outcomes] == [True] and hashed == []


def test_entropy_gate_accepts_a_perfectly_balanced_class():
    frame = pd.DataFrame({"q": [1] * 4 + [2] * 4, "s": list("abab") + list("cdcd")})
    thresholds = PrivacyThresholds(l=2, l_variant="entropy")
    report = check_gates(measure_table(frame, ["q"], ["s"], attack_queries=0), thresholds)
    assert report.measures.entropy_l_diversity == 1  # pyCANON truncates exp(ln 2) = 1.9999999999999998
    assert report.passed and report.gates[0].threshold == 2


def test_hierarchical_t_closeness_through_the_cli(table, tmp_path):
    path, _ = table
    hierarchy = tmp_path / "disease.csv"  # ARX format: value;level1;...;*
    hierarchy.write_text("flu;respiratory;*\ncold;respiratory;*\nhiv;immune;*\n", encoding="utf-8")
    flat = json.loads(ppdp("validate", path, "--qi", "zip,age", "--sa", "disease", "--json").output)
    result = ppdp("validate", path, "--qi", "zip,age", "--sa", "disease", "--hierarchy", f"disease={hierarchy}",
                  "--t", "0.5", "--json")
    doc = json.loads(result.output)
    # distances within 'respiratory' are half the distance across the root: never more than equal-distance EMD
    assert 0 < doc["hierarchical_t_closeness"] <= flat["t_closeness"]
    assert doc["gates"][0]["name"] == "t" and doc["gates"][0]["value"] == doc["hierarchical_t_closeness"]
    assert ppdp("validate", path, "--qi", "zip", "--hierarchy", "nope=x.csv").exit_code == 2


def test_attacker_runs_only_when_asked(table):
    path, _ = table
    plain = json.loads(ppdp("validate", path, "--qi", "zip,age", "--sa", "disease", "--json").output)
    assert plain["attacker"] is None
    result = ppdp("validate", path, "--qi", "zip,age", "--sa", "disease", "--json", "--attack", "30")
    doc = json.loads(result.output)["attacker"]
    assert doc["release_is_original"] and doc["original"] == doc["release"] and doc["queries"] <= 30
    assert doc["sensitive_attributes"] == ["disease"]
    # every query comes from a record of this table: all match, none identifies (classes of 4 rows)
    assert doc["original"]["matched_queries"] == doc["queries"] and doc["original"]["identifying_share"] == 0
    assert 0.25 <= doc["original"]["reidentification_median"] <= doc["original"]["reidentification_max"] <= 1 / 3
    text = ppdp("validate", path, "--qi", "zip,age", "--sa", "disease", "--attack", "30").output
    assert "random queries" in text and "sensitive association" in text
    assert ppdp("validate", path, "--qi", "zip", "--attack", "-1").exit_code == 2


def test_validate_imports_neither_prefect_nor_great_expectations(table):
    import subprocess
    import sys

    path, _ = table
    code = (
        "import sys\n"
        "from ppdp.flows.cli import main\n"
        f"sys.argv = ['ppdp', 'validate', {str(path)!r}, '--qi', 'zip,age', '--sa', 'disease', '--k', '2', "
        "'--attack', '5']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'great_expectations'})\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "gate k" in out.stdout and "LOADED []" in out.stdout, out.stdout


def _mixed_frame(seed: int, rows: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    text = np.array(["north", "south", "east", "?", None], dtype=object)
    return pd.DataFrame({
        "region": text[rng.integers(0, 5, rows)],
        "age": rng.integers(20, 30, rows),
        "score": np.where(rng.random(rows) < 0.1, np.nan, rng.integers(0, 4, rows).astype(float)),
        "job": np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, rows)],
        "disease": np.array(["flu", "cold", "hiv", None], dtype=object)[rng.integers(0, 4, rows)],
        "extra": rng.random(rows),  # not read
    })


@pytest.mark.parametrize("seed", range(4))
def test_coded_reading_gives_the_report_of_the_raw_values(tmp_path, seed):
    """validate_file reads Parquet text quasi-identifiers as dictionary codes, and measures codes instead of the
    values: the report (values and worst classes) is the one measure_table gives on the table as read."""
    from ppdp.tasks.privacy.validate import read_table_file, report_json, validate_file

    frame = _mixed_frame(seed)
    qi, sa = ["region", "age", "score", "job"], ["disease"]
    thresholds = PrivacyThresholds(k=2, l=2, t=0.5, max_prosecutor_risk=0.5)
    for suffix in ("parquet", "csv"):
        path = tmp_path / f"t{seed}.{suffix}"
        frame.to_parquet(path) if suffix == "parquet" else frame.to_csv(path, index=False)
        raw = read_table_file(path, na_values=["?"])
        expected = check_gates(measure_table(raw, qi, sa, thresholds=thresholds, attack_queries=40, seed=seed),
                               thresholds)
        got = validate_file(path, qi, sa, thresholds, na_values=["?"], attack=40, seed=seed)
        assert json.dumps(report_json(got)) == json.dumps(report_json(expected)), suffix
        assert got.details.keys() == expected.details.keys()
        assert all(repr(got.details[k]) == repr(expected.details[k]) for k in got.details)


def test_parquet_checks(tmp_path):
    good = pd.DataFrame({"q": ["a", "b", "a", "b"], "n": [1, 2, 1, 2], "s": ["x", "y", "y", "x"]})
    cases = {
        "missing.parquet": (good.assign(q=pd.Series([None] * 4, dtype="str")), "entirely missing"),
        "stray.parquet": (pd.DataFrame({"q": [str(i) for i in range(40)] + ["SECRET"], "s": ["x"] * 41}),
                          "mixes numbers and text"),
        "empty.parquet": (good.iloc[:0], "no rows"),
    }
    for name, (frame, needle) in cases.items():
        path = tmp_path / name
        frame.to_parquet(path)
        result = ppdp("validate", path, "--qi", "q", "--sa", "s")
        assert result.exit_code == 2 and needle in result.output and "SECRET" not in result.output, name
    path = tmp_path / "good.parquet"
    good.to_parquet(path)
    assert "column 'zz' is not in the table" in ppdp("validate", path, "--qi", "q,zz").output
    marked = tmp_path / "marked.parquet"
    good.assign(q=["?", "?", "?", "?"]).to_parquet(marked)  # every value a missing-value marker
    assert "entirely missing" in ppdp("validate", marked, "--qi", "q", "--na-values", "?").output
