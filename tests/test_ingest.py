"""Ingest: pyarrow reading, GX validation reported as names and counts, hashing, bad inputs."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest

from ppdp.tasks.core.errors import InputError
from ppdp.tasks.ingest import ingest, read_header
from ppdp.tasks.spec import load_spec, preflight
from tests.conftest import SENTINEL_SSN


def test_ingest_csv_reports_hash_rows_and_passing_expectations(workspace):
    spec = load_spec(workspace.spec())
    frame, report = ingest(spec)
    assert report.rows == len(frame) == 600
    assert report.input_sha256 == hashlib.sha256(workspace.data.read_bytes()).hexdigest()
    assert report.expectation_count == len(report.expectations) >= 6
    assert not report.failed
    assert frame["zip"].dtype != "int64"  # zip codes with leading zeros stay text
    assert frame["zip"].str.startswith("0").all()
    assert pd.api.types.is_integer_dtype(frame["age"])


def test_ingest_parquet_and_na_values(workspace):
    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    frame.loc[:9, "occupation"] = "?"
    pq_path = workspace.dir / "census.parquet"
    frame.to_parquet(pq_path, index=False)
    spec = load_spec(workspace.spec(data=pq_path, source={"path": str(pq_path), "na_values": ["?"]}))
    out, report = ingest(spec)
    assert report.format == "parquet"
    assert out["occupation"].isna().sum() == 10


def expect_input_error(workspace, text: str, match: str, **overrides):
    bad = workspace.dir / "bad.csv"
    bad.write_text(text, encoding="utf-8")
    spec = load_spec(workspace.spec(data=bad, **overrides))
    with pytest.raises(InputError) as info:
        preflight(spec)
        ingest(spec)
    message = str(info.value)
    assert "\n" not in message
    assert "bad.csv" in message
    assert match in message
    return message


HEADER = "person_id,age,sex,education,income\n"


def test_empty_file(workspace):
    expect_input_error(workspace, "", "empty", columns={"income": "class", "age": "quasi_identifier"})


def test_header_only(workspace):
    expect_input_error(workspace, HEADER, "expect_table_row_count_to_be_between",
                       columns={"income": "class", "age": "quasi_identifier"})


def test_ragged_rows_name_the_line_without_its_content(workspace):
    text = HEADER + "P1,30,Male,HS-grad,<=50K\nP2,41,SECRETVALUE\nP3,50,Female,Masters,>50K\n"
    message = expect_input_error(workspace, text, "line 3", columns={"income": "class", "age": "quasi_identifier"})
    assert "SECRETVALUE" not in message and "ragged" in message


def test_numeric_quasi_identifier_holding_text_is_counted_not_quoted(workspace):
    rows = "".join(f"P{i},{20 + i % 50},Male,HS-grad,{'>50K' if i % 3 else '<=50K'}\n" for i in range(60))
    rows += "P99,SECRETAGE,Female,HS-grad,<=50K\n"
    message = expect_input_error(workspace, HEADER + rows, "expect_column_values_to_match_regex(age) 1 of 61",
                                 columns={"income": "class", "age": "quasi_identifier"})
    assert "SECRETAGE" not in message


def test_all_null_class_column(workspace):
    rows = "".join(f"P{i},{20 + i},Male,HS-grad,\n" for i in range(30))
    expect_input_error(workspace, HEADER + rows, "expect_column_values_to_not_be_null(income) 30 of 30",
                       columns={"income": "class", "age": "quasi_identifier"})


def test_all_null_quasi_identifier(workspace):
    rows = "".join(f"P{i},{20 + i},,HS-grad,{'a' if i % 2 else 'b'}\n" for i in range(30))
    expect_input_error(workspace, HEADER + rows, "expect_column_values_to_not_be_null(sex)",
                       columns={"income": "class", "age": "quasi_identifier", "sex": "quasi_identifier"})


def test_duplicate_header_names(workspace):
    with pytest.raises(InputError, match="duplicate column names: age"):
        bad = workspace.dir / "dup.csv"
        bad.write_text("age,age,income\n1,2,a\n", encoding="utf-8")
        read_header(load_spec(workspace.spec(data=bad, columns={"income": "class"})).source)


def test_missing_input_file(workspace):
    spec = load_spec(workspace.spec(data=workspace.dir / "nothere.csv"))
    with pytest.raises(InputError, match="file not found"):
        preflight(spec)


def test_expectation_results_never_carry_values(workspace):
    """GX is asked for counts only: no partial lists of unexpected values survive into the report."""
    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    frame["age"] = frame["age"].astype(str)
    frame.loc[3, "age"] = SENTINEL_SSN + "x"
    path = workspace.dir / "leak.csv"
    frame.to_csv(path, index=False)
    spec = load_spec(workspace.spec(data=path))
    with pytest.raises(InputError) as info:
        ingest(spec)
    assert SENTINEL_SSN not in str(info.value)
