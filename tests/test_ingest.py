"""Ingest: pyarrow reading, GX validation reported in plain words with counts, hashing, bad inputs."""

from __future__ import annotations

import hashlib

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdp.tasks import digests
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.io import read_header
from ppdp.tasks.ingest import ingest
from ppdp.tasks.spec import load_spec, preflight
from tests.conftest import SENTINEL_SSN


def test_ingest_csv_reports_hash_rows_and_passing_expectations(workspace):
    spec = load_spec(workspace.spec())
    frame, report = ingest(spec)
    assert report.rows == len(frame) == 600
    sha = hashlib.sha256(workspace.data.read_bytes()).hexdigest()
    assert report.private_sha256 == sha and sha not in report.model_dump_json()  # kept in memory, never written
    assert digests.check(sha, report.input_digest, report.input_key_id, digests.local_key()).verdict == "holds"
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
    expect_input_error(workspace, HEADER, "the table has no data rows",
                       columns={"income": "class", "age": "quasi_identifier"})


def test_ragged_rows_name_the_line_without_its_content(workspace):
    text = HEADER + "P1,30,Male,HS-grad,<=50K\nP2,41,SECRETVALUE\nP3,50,Female,Masters,>50K\n"
    message = expect_input_error(workspace, text, "line 3", columns={"income": "class", "age": "quasi_identifier"})
    assert "SECRETVALUE" not in message and "ragged" in message


def test_numeric_quasi_identifier_holding_text_is_counted_not_quoted(workspace):
    rows = "".join(f"P{i},{20 + i % 50},Male,HS-grad,{'>50K' if i % 3 else '<=50K'}\n" for i in range(60))
    rows += "P99,SECRETAGE,Female,HS-grad,<=50K\n"
    message = expect_input_error(workspace, HEADER + rows, "column 2 ('age'): 1 of 61 rows is not a number",
                                 columns={"income": "class", "age": "quasi_identifier"})
    assert "SECRETAGE" not in message


def test_all_null_class_column(workspace):
    rows = "".join(f"P{i},{20 + i},Male,HS-grad,\n" for i in range(30))
    expect_input_error(workspace, HEADER + rows, "column 5 ('income'): 30 of 30 rows are missing a value",
                       columns={"income": "class", "age": "quasi_identifier"})


def test_all_null_quasi_identifier(workspace):
    rows = "".join(f"P{i},{20 + i},,HS-grad,{'a' if i % 2 else 'b'}\n" for i in range(30))
    expect_input_error(workspace, HEADER + rows, "column 3 ('sex'): every row is missing a value",
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


# -- hostile input (issue 8): one line naming the column by position and name and the data row, never a value --
CANARY = "zq7CANARYv3x"


def ingest_refusal(workspace, path, *needles: str, error=InputError, where: str | None = None, **overrides) -> str:
    """The one-line refusal of ``path``: it names the file (or ``where``), the needles, and no canary."""
    spec = load_spec(workspace.spec(data=path, **overrides))
    with pytest.raises(error) as info:
        preflight(spec, check_root=False)
        ingest(spec)
    message = str(info.value)
    assert "\n" not in message and (where or path.name) in message and CANARY not in message
    for needle in needles:
        assert needle in message, (needle, message)
    return message


def census_frame(workspace) -> pd.DataFrame:
    return pd.read_csv(workspace.data, dtype={"zip": str})


def position(frame: pd.DataFrame, name: str) -> int:
    return list(frame.columns).index(name) + 1


def test_utf8_byte_order_mark_is_read_as_such(workspace):
    bom = workspace.dir / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + workspace.data.read_bytes())
    plain, plain_report = ingest(load_spec(workspace.spec()))
    frame, report = ingest(load_spec(workspace.spec(data=bom)))
    assert report.columns == plain_report.columns and report.columns[0] == "person_id"
    pd.testing.assert_frame_equal(frame, plain)


def test_utf16_is_named_or_read_when_declared(workspace):
    utf16 = workspace.dir / "utf16.csv"
    utf16.write_bytes(workspace.data.read_text(encoding="utf-8").encode("utf-16"))
    ingest_refusal(workspace, utf16, "UTF-16 byte-order mark", "source.encoding: utf-16")
    frame, _ = ingest(load_spec(workspace.spec(data=utf16, source={"path": str(utf16), "encoding": "utf-16"})))
    pd.testing.assert_frame_equal(frame, ingest(load_spec(workspace.spec()))[0])


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_wrong_separator_is_named(workspace, sep):
    other = workspace.dir / "other.csv"
    other.write_text(workspace.data.read_text(encoding="utf-8").replace(",", sep), encoding="utf-8")
    ingest_refusal(workspace, other, f"the header has one column: is the separator {sep!r}? (source.sep is ',')")


@pytest.mark.parametrize(("name", "what"), [
    ("987-65-4329", "a US social security number"), (f"{CANARY}@example.org", "an e-mail address"),
    ("42", "a number"), ("-1.5e3", "a number"), ("2021-03-04", "a date"), ("+1 (555) 123-4567", "a phone number"),
    ("4111 1111 1111 1111", "a long code"),
])
def test_header_that_looks_like_data_is_named_by_position_only(workspace, name, what):
    frame = census_frame(workspace)
    frame.columns = [*frame.columns[:3], name, *frame.columns[4:]]
    for suffix in ("csv", "parquet"):
        path = workspace.dir / f"hdr.{suffix}"
        frame.to_csv(path, index=False) if suffix == "csv" else frame.to_parquet(path, index=False)
        message = ingest_refusal(workspace, path, "the name of column 4 looks like a data value", what)
        # the file's path is named, and the test's temporary folder may hold the same digits (pytest-342 and "42")
        assert name not in message.replace(str(path), "<the file>")


def test_headerless_file_is_refused_without_echoing_its_first_row(workspace):
    lines = workspace.data.read_text(encoding="utf-8").splitlines(keepends=True)
    headerless = workspace.dir / "headerless.csv"
    headerless.write_text("".join(lines[1:]), encoding="utf-8")
    first_row = lines[1].strip().split(",")
    message = ingest_refusal(workspace, headerless, "looks like a data value", "more column")
    assert not [cell for cell in first_row if cell in message.split(": ", 1)[1]]


@pytest.mark.parametrize(("cell", "needle"), [
    ("inf", "1 infinite"), ("-inf", "1 infinite"), ("Infinity", "1 infinite"), ("NaN", "1 NaN"), ("nan", "1 NaN"),
    ("1e400", "1 infinite"), ("1.7e308", "1 beyond ±1e+100"), ("-1e200", "1 beyond ±1e+100"),
])
def test_non_finite_and_huge_numbers_are_named_by_column_and_row(workspace, cell, needle):
    frame = census_frame(workspace).astype({"hours_per_week": object})
    frame.loc[57, "hours_per_week"] = cell
    path = workspace.dir / "numbers.csv"
    frame.to_csv(path, index=False)
    message = ingest_refusal(workspace, path, f"column {position(frame, 'hours_per_week')} ('hours_per_week')",
                             f"({needle}; first at data row 58)")
    if cell[-1].isdigit():
        assert cell not in message


def test_huge_numbers_read_as_text_are_caught_after_typing(workspace):
    """Codes with leading zeros stay text when read; declared numeric they become numbers after validation."""
    frame = census_frame(workspace)
    path = workspace.dir / "zips.csv"
    frame.assign(zip=frame["zip"].where(frame.index != 12, "1e400")).to_csv(path, index=False)
    ingest_refusal(workspace, path, f"column {position(frame, 'zip')} ('zip')", "1 infinite; first at data row 13",
                   columns={"person_id": "identifier", "income": "class",
                            "zip": {"role": "quasi_identifier", "kind": "numeric"}})


def test_parquet_nan_and_inf_are_values_not_missing_cells(workspace):
    frame = census_frame(workspace)
    hours = frame["hours_per_week"].astype(float).to_numpy().copy()
    hours[[3, 4]] = [float("nan"), float("inf")]
    table = pa.Table.from_pandas(frame.drop(columns="hours_per_week"), preserve_index=False)
    table = table.append_column("hours_per_week", pa.array(hours, from_pandas=False))  # a NaN, not a null
    path = workspace.dir / "nan.parquet"
    pq.write_table(table, path)
    ingest_refusal(workspace, path, f"column {table.num_columns} ('hours_per_week') holds 2 numbers",
                   "1 NaN, 1 infinite; first at data row 4")
    hours[4] = float("nan")
    table = table.set_column(table.num_columns - 1, "hours_per_week", pa.array(hours, from_pandas=True))
    pq.write_table(table, path)  # nulls are missing cells: accepted
    assert ingest(load_spec(workspace.spec(data=path)))[0]["hours_per_week"].isna().sum() == 2


@pytest.mark.parametrize(("kind", "array"), [
    ("list", lambda n: pa.array([[1, 2]] * n)),
    ("list", lambda n: pa.array([["a"]] * n, type=pa.large_list(pa.string()))),
    ("struct", lambda n: pa.array([{"x": CANARY}] * n)),
    ("map", lambda n: pa.array([[(CANARY, 1)]] * n, type=pa.map_(pa.string(), pa.int64()))),
    ("binary", lambda n: pa.array([CANARY.encode()] * n)),
    ("binary", lambda n: pa.array([b"0123"] * n, type=pa.binary(4))),
    ("time-of-day", lambda n: pa.array([1] * n, type=pa.time32("s"))),
    ("duration", lambda n: pa.array([1] * n, type=pa.duration("s"))),
])
def test_nested_and_binary_parquet_columns_are_named(workspace, kind, array):
    frame = census_frame(workspace)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.add_column(2, "nested", array(len(frame)))
    path = workspace.dir / "nested.parquet"
    pq.write_table(table, path)
    ingest_refusal(workspace, path, f"column 3 ('nested') has a Parquet {kind} type")


def test_decimal_half_float_and_categorical_parquet_columns_are_read(workspace):
    import decimal

    frame = census_frame(workspace)
    table = pa.Table.from_pandas(frame.assign(occupation=frame["occupation"].astype("category")), preserve_index=False)
    n = len(frame)
    table = table.append_column("dec", pa.array([decimal.Decimal("1.25")] * n, type=pa.decimal128(6, 2)))
    table = table.append_column("half", pa.array([1.5] * n, type=pa.float64()).cast(pa.float16()))
    path = workspace.dir / "types.parquet"
    pq.write_table(table, path)
    out, _ = ingest(load_spec(workspace.spec(data=path)))
    assert out["dec"].dtype == "float64" and out["dec"].eq(1.25).all()
    assert out["half"].dtype == "float64" and out["half"].eq(1.5).all()


def test_values_outside_a_declared_order_name_column_and_row(workspace):
    frame = census_frame(workspace)
    frame.loc[[70, 90], "education"] = [CANARY, "hs-grad"]  # case matters, as in the encoder
    path = workspace.dir / "order.csv"
    frame.to_csv(path, index=False)
    message = ingest_refusal(workspace, path, f"column {position(frame, 'education')} ('education'): 2 rows hold a "
                             "value not in its declared order (columns.education.order; first at data row 71)")
    assert "hs-grad" not in message
    frame.loc[[70, 90], "education"] = None  # missing cells are not outside the order
    frame.to_csv(path, index=False)
    assert ingest(load_spec(workspace.spec(data=path)))[0]["education"].isna().sum() == 2


def write_hierarchy(path, leaves) -> None:
    path.write_text("".join(f"{v};group-{i % 2};*\n" for i, v in enumerate(leaves)), encoding="utf-8")


def test_sensitive_values_outside_their_hierarchy_are_named(workspace):
    frame = census_frame(workspace)
    occupations = sorted(frame["occupation"].dropna().unique())
    hierarchy = workspace.dir / "occupation_hierarchy.csv"
    columns = {"person_id": "identifier", "income": "class", "occupation": "sensitive"}

    def spec_with():
        return {"columns": columns, "privacy": {"k": 10, "t": 0.9, "hierarchies": {"occupation": str(hierarchy)}}}

    write_hierarchy(hierarchy, occupations)
    ingest(load_spec(workspace.spec(**spec_with())))  # every value placed: accepted
    write_hierarchy(hierarchy, [*occupations[1:], CANARY])
    first = int(frame.index[frame["occupation"] == occupations[0]][0]) + 1
    ingest_refusal(workspace, workspace.data, f"column {position(frame, 'occupation')} ('occupation')",
                   "not a leaf of its hierarchy", f"first at data row {first}", **spec_with())
    write_hierarchy(hierarchy, [*occupations, occupations[0]])
    ingest_refusal(workspace, workspace.data, "lists a value twice (row", error=SpecError, where=hierarchy.name,
                   **spec_with())
    hierarchy.write_bytes(b"\xff\xfe\x00garbage;\n")
    ingest_refusal(workspace, workspace.data, "cannot read hierarchy", error=SpecError, where=hierarchy.name,
                   **spec_with())
    write_hierarchy(hierarchy, occupations)
    gaps = workspace.dir / "gaps.csv"
    frame.assign(occupation=frame["occupation"].where(frame.index != 33)).to_csv(gaps, index=False)
    ingest_refusal(workspace, gaps, "1 missing value(s) (first at data row 34)", **spec_with())
