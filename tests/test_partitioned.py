"""`ppdp validate FOLDER`: a partitioned Parquet table measured from per-partition counts
(ppdp.tasks.privacy.partitioned) gives the single-file report of the files' concatenation."""

from __future__ import annotations

import datetime
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.privacy.partitioned import Layout, partition_files, validate_folder
from ppdp.tasks.privacy.validate import report_json, validate_file

runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


# -- random tables of mixed types with missing values ----------------------------------------------------------
_DAY = datetime.date(2020, 1, 1)
COLUMNS = {  # name -> (Arrow type, values drawn; None is missing)
    "num": (pa.int64(), st.one_of(st.none(), st.integers(0, 3))),
    "real": (pa.float64(), st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, 2.5, float("nan")]))),
    "text": (pa.string(), st.one_of(st.none(), st.sampled_from(["a", "b", "c", "NA", "7"]))),
    "flag": (pa.bool_(), st.one_of(st.none(), st.booleans())),
    "day": (pa.date32(), st.one_of(st.none(), st.integers(0, 2).map(lambda d: _DAY + datetime.timedelta(d)))),
    "code": (pa.string(), st.sampled_from(["x1", "x2", "y"])),
    "score": (pa.int32(), st.integers(0, 4)),
}
THRESHOLDS = [
    PrivacyThresholds(k=2, l=2),
    PrivacyThresholds(k=3, l=2, l_variant="entropy", alpha=0.8, max_prosecutor_risk=0.5, max_sample_uniques=0.2),
    PrivacyThresholds(l=2, l_variant="recursive", c=3, t=0.6, delta=2, beta=1.5, beta_variant="basic"),
    PrivacyThresholds(k=2, beta=3, max_average_risk=0.5, max_records_at_risk=0.3, max_marketer_risk=0.4),
]


@st.composite
def tables(draw):
    n = draw(st.integers(1, 40))
    data = {name: draw(st.lists(values, min_size=n, max_size=n)) for name, (_, values) in COLUMNS.items()}
    table = pa.table({name: pa.array(data[name], kind, from_pandas=False) for name, (kind, _) in COLUMNS.items()})
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))  # empty partitions allowed
    names = list(COLUMNS)
    qi = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    sa = draw(st.lists(st.sampled_from([c for c in names if c not in qi]), max_size=2, unique=True))
    return table, [0, *cuts, n], qi, sa


def _write_parts(table: pa.Table, cuts: list[int], folder: Path, hive: bool) -> None:
    folder.mkdir()
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        target = folder / f"g={i:03d}" if hive and i % 2 else folder
        target.mkdir(exist_ok=True)
        pq.write_table(table.slice(a, b - a), target / f"part-{i:03d}.parquet", row_group_size=7)


def _concatenation(folder: Path, into: Path) -> Path:
    pq.write_table(pa.concat_tables([pq.read_table(p) for p in partition_files(folder)]), into)
    return into


def _outcome(call, where: str):
    """The report as JSON, or the one-line error with the input's path replaced by WHERE."""
    try:
        return report_json(call())
    except InputError as exc:
        return "error: " + str(exc).replace(where, "WHERE")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tables(), which=st.integers(0, len(THRESHOLDS) - 1), hive=st.booleans(), na=st.booleans(),
       small_batches=st.booleans())
def test_partitioned_report_equals_single_file_on_the_concatenation(case, which, hive, na, small_batches):
    table, cuts, qi, sa = case
    sizes = {"batch_rows": 3, "reduce_rows": 5} if small_batches else {}  # several batches and counts per file
    thresholds = THRESHOLDS[which]
    if thresholds.sensitive_gates() and not sa:
        thresholds = PrivacyThresholds(k=2, max_prosecutor_risk=0.5)
    na_values = ["NA"] if na else []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "parts"
        _write_parts(table, cuts, folder, hive)
        whole = _concatenation(folder, Path(tmp) / "whole.parquet")
        single = _outcome(lambda: validate_file(whole, qi, sa, thresholds, na_values=na_values), str(whole))
        parted = _outcome(lambda: validate_folder(folder, qi, sa, thresholds, na_values=na_values, **sizes).report,
                          str(folder))
    # every measure, the risk figures, and every gate (value, pass/fail, worst class number) are the same
    assert parted == single


def test_known_table_split_in_three(tmp_path):
    """Classes that only meet across partitions: k and l come from the sums, not from any one file."""
    frame = pd.DataFrame({
        "zip": ["111", "222", "111", "222", None, "111", "222", None, "111"],
        "age": [30, 40, 30, 40, 50, 30, 40, 50, 30],
        "disease": ["flu", "cold", "hiv", "cold", "flu", "flu", "cold", "cold", None],
    })
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, (a, b) in enumerate([(0, 3), (3, 6), (6, 9)]):
        frame.iloc[a:b].to_parquet(folder / f"p{i}.parquet")  # pandas metadata, a non-range index
    result = validate_folder(folder, ["zip", "age"], ["disease"], PrivacyThresholds(k=2, l=2))
    report = result.report
    # classes: (111,30) x4 {flu, hiv, flu, missing}; (222,40) x3 {cold}; (missing,50) x2 {flu, cold}
    assert (report.records, report.groups, report.k, result.partitions) == (9, 3, 2, 3)
    assert report.measures.l_diversity == 1
    assert [(g.name, g.passed) for g in report.gates] == [("k", True), ("l", False)]
    frame.to_parquet(tmp_path / "whole.parquet")
    single = validate_file(tmp_path / "whole.parquet", ["zip", "age"], ["disease"], PrivacyThresholds(k=2, l=2))
    assert report_json(report) == report_json(single)


def test_pandas_dtypes_and_text_dictionaries(tmp_path):
    """Files written by pandas (categorical, nullable Int64, text read dictionary-encoded) and large text."""
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame({
        "cat": pd.Categorical(rng.choice(["p", "q", "r"], n)),
        "count": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 5, n)), dtype="Int64"),
        "town": rng.choice(["north", "south", "-"], n),
        "pay": rng.integers(0, 3, n).astype(float),
    })
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        frame.iloc[i * 100:(i + 1) * 100].to_parquet(folder / f"p{i}.parquet", row_group_size=30)
    frame.to_parquet(tmp_path / "whole.parquet")
    thresholds = PrivacyThresholds(k=2, l=2, t=0.5)
    for qi, sa in ((["cat", "count"], ["town", "pay"]), (["town"], ["cat"])):
        single = validate_file(tmp_path / "whole.parquet", qi, sa, thresholds, na_values=["-"])
        parted = validate_folder(folder, qi, sa, thresholds, na_values=["-"]).report
        assert report_json(parted) == report_json(single)


def test_hierarchical_t_closeness_and_recursive_l_from_counts(tmp_path):
    hierarchy = tmp_path / "disease.csv"  # ARX format: value;level1;...;*
    hierarchy.write_text("flu;respiratory;*\ncold;respiratory;*\nhiv;immune;*\n", encoding="utf-8")
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"zip": rng.choice(["111", "222", "333"], 90), "age": rng.integers(3, 6, 90) * 10,
                          "disease": rng.choice(["flu", "cold", "hiv"], 90, p=[0.5, 0.3, 0.2])})
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        frame.iloc[i * 30:(i + 1) * 30].to_parquet(folder / f"p{i}.parquet")
    frame.to_parquet(tmp_path / "whole.parquet")
    thresholds = PrivacyThresholds(t=0.4, l=2, l_variant="recursive", c=2)
    hierarchies = {"disease": hierarchy}
    single = validate_file(tmp_path / "whole.parquet", ["zip", "age"], ["disease"], thresholds,
                           hierarchies=hierarchies)
    parted = validate_folder(folder, ["zip", "age"], ["disease"], thresholds, hierarchies=hierarchies).report
    assert parted.measures.hierarchical_t_closeness is not None
    assert [g.name for g in parted.gates] == ["(c,l) recursive l=2", "t"]
    assert report_json(parted) == report_json(single)


def test_key_layout_splits_wide_keys_into_words():
    radices = [2**40, 2**30, 5, 3]  # 2**70 > 2**62: two words; the sensitive attribute stays decodable
    layout = Layout.of(radices, n_qi=3)
    assert layout.words == ((0,), (1, 2, 3))
    rng = np.random.default_rng(0)
    codes = [rng.integers(0, r, 50, dtype=np.int64) for r in radices]
    words = layout.encode(codes)
    for i in range(4):
        assert np.array_equal(layout.decode(words, i), codes[i])
    parts = layout.class_parts(words)  # equal parts <=> equal quasi-identifier codes
    assert np.array_equal(parts[1], codes[1] * 5 + codes[2])


def test_wide_keys_give_the_single_file_result(tmp_path):
    """Seven quasi-identifiers of ~600 distinct values each: 600**7 > 2**62, so keys take two int64 words."""
    rng = np.random.default_rng(11)
    n = 1200
    frame = pd.DataFrame({f"q{i}": rng.integers(0, 10**6, n) for i in range(7)})
    frame.iloc[: n // 2, :] = frame.iloc[n // 2:, :].to_numpy()  # every row twice: k = 2
    frame["s"] = rng.choice(["a", "b"], n)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(4):
        frame.iloc[i * 300:(i + 1) * 300].to_parquet(folder / f"p{i}.parquet")
    frame.to_parquet(tmp_path / "whole.parquet")
    qi, thresholds = list(frame.columns[:7]), PrivacyThresholds(k=2, l=2)
    assert len(Layout.of([frame[q].nunique() for q in qi] + [2], n_qi=7).words) == 2
    single = validate_file(tmp_path / "whole.parquet", qi, ["s"], thresholds)
    result = validate_folder(folder, qi, ["s"], thresholds)
    assert result.report.k == 2 and result.report.groups == n // 2
    assert report_json(result.report) == report_json(single)


@pytest.mark.slow  # a LocalCluster start (about 3 s); the serial path's equality tests stay in make test
def test_dask_cluster_gives_the_serial_result(tmp_path):
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(5)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(4):
        n = 200
        pq.write_table(pa.table({
            "a": pa.array(np.where(rng.random(n) < 0.05, None, rng.integers(0, 4, n)).tolist(), pa.int64()),
            "b": rng.choice(["x", "y", "z"], n), "s": rng.choice(["p", "q", "r", "t"], n)}), folder / f"{i}.parquet")
    thresholds = PrivacyThresholds(k=3, l=3, t=0.4)
    serial = validate_folder(folder, ["a", "b"], ["s"], thresholds)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        parallel = validate_folder(folder, ["a", "b"], ["s"], thresholds, cluster=cluster.scheduler_address)
        cli = ppdp("validate", folder, "--qi", "a,b", "--sa", "s", "--k", "3", "--l", "3", "--t", "0.4",
                   "--cluster", cluster.scheduler_address, "--json")
    assert report_json(parallel.report) == report_json(serial.report)
    assert (parallel.partitions, parallel.cells) == (serial.partitions, serial.cells) == (4, serial.cells)
    doc = json.loads(cli.stdout)
    assert cli.exit_code == (0 if serial.report.passed else 3)
    assert doc["partitions"] == 4 and doc["k_anonymity"] == serial.report.k
    assert doc["gates"] == report_json(serial.report)["gates"]


# -- the command ------------------------------------------------------------------------------------------------
@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "parts"
    path.mkdir()
    for i in range(2):
        pd.DataFrame({"zip": ["111", "222", "111", "222"], "age": [30, 40, 30, 40],
                      "disease": ["flu", "cold", "hiv", "cold"]}).to_parquet(path / f"p{i}.parquet")
    return path


def test_cli_prints_the_report_and_the_partitions(folder):
    ok = ppdp("validate", folder, "--qi", "zip,age", "--sa", "disease", "--k", "4", "--l", "1")
    assert ok.exit_code == 2  # l must be >= 2: the same option checks as for a file
    ok = ppdp("validate", folder, "--qi", "zip,age", "--sa", "disease", "--k", "4")
    assert ok.exit_code == 0, ok.output
    assert "2 partitions" in ok.output and "8 rows, 2 equivalence classes" in ok.output and "gate k" in ok.output
    bad = ppdp("validate", folder, "--qi", "zip,age", "--sa", "disease", "--k", "4", "--l", "2")
    assert bad.exit_code == 3 and "FAIL" in bad.output and "equivalence class #1" in bad.output
    for value in ("flu", "cold", "hiv", "111"):  # no data value is printed
        assert value not in bad.output


def _one_line_error(result, needle: str) -> None:
    assert result.exit_code == 2, result.output
    assert needle in result.output and result.output.strip().count("\n") == 0, result.output


def test_cli_bad_folders(tmp_path, folder):
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "_SUCCESS").write_text("")
    _one_line_error(ppdp("validate", empty, "--qi", "zip"), "no Parquet files")
    other = tmp_path / "other"
    other.mkdir()
    pd.DataFrame({"zip": ["111"]}).to_parquet(other / "a.parquet")
    (other / "b.csv").write_text("zip\n111\n")
    _one_line_error(ppdp("validate", other, "--qi", "zip"), "b.csv: not a Parquet file")
    (other / "b.csv").unlink()
    (other / "c.parquet").write_text("zip\n111\n")
    _one_line_error(ppdp("validate", other, "--qi", "zip"), "c.parquet: not a readable Parquet file")


PLANTED_ZIP = "Zq9-zip-417"


def test_cli_schema_mismatch_names_file_and_column(folder):
    # a planted cell value that no temporary path can contain (pytest numbers its folders: pytest-333)
    pd.DataFrame({"zip": [PLANTED_ZIP], "age": [30.5], "disease": ["SECRET"]}).to_parquet(folder / "p2.parquet")
    result = ppdp("validate", folder, "--qi", "zip", "--sa", "disease")
    _one_line_error(result, "p2.parquet: column 2 ('age') has type double, int64 in the first file")
    assert PLANTED_ZIP not in result.output and "SECRET" not in result.output
    pd.DataFrame({"zip": [PLANTED_ZIP], "years": [30], "disease": ["SECRET"]}).to_parquet(folder / "p2.parquet")
    _one_line_error(ppdp("validate", folder, "--qi", "zip"), "p2.parquet: column 2 ('years') is column 2 ('age')")
    pd.DataFrame({"zip": [PLANTED_ZIP], "age": [30]}).to_parquet(folder / "p2.parquet")
    _one_line_error(ppdp("validate", folder, "--qi", "zip"), "p2.parquet: lacks column 3 ('disease')")


@pytest.mark.parametrize("args,needle", [
    (["--qi", "zip,town"], "column 'town' is not in the table"),
    (["--qi", "zip", "--sa", "salary"], "column 'salary' is not in the table"),
    (["--qi", "zip", "--l", "2"], "--l: this gate needs a sensitive attribute"),
    (["--qi", "zip", "--attack", "10"], "--attack: the random-query attacker draws whole records"),
    (["--qi", "zip", "--max-journalist-risk", "0.5", "--population", "pop.csv"], "--population: journalist risk"),
])
def test_cli_bad_arguments_on_a_folder(folder, args, needle):
    _one_line_error(ppdp("validate", folder, *args), needle)


def test_cli_cluster_is_only_for_a_folder(folder):
    _one_line_error(ppdp("validate", folder / "p0.parquet", "--qi", "zip", "--cluster", "local"),
                    "--cluster: only for a folder")


def test_all_missing_and_mixed_columns_are_refused_as_for_a_file(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"q": pa.array([None, None], pa.string()), "s": ["1", "2"]}), folder / "a.parquet")
    pq.write_table(pa.table({"q": pa.array([None], pa.string()), "s": ["x"]}), folder / "b.parquet")
    with pytest.raises(InputError, match="quasi-identifier 'q' is entirely missing"):
        validate_folder(folder, ["q"], [], PrivacyThresholds(k=2))
    numbers = [str(i) for i in range(40)]  # 40 numbers in one file, one stray text in the other: 97.6% parse
    pq.write_table(pa.table({"q": numbers, "s": ["1"] * 40}), folder / "a.parquet")
    pq.write_table(pa.table({"q": ["SECRET"], "s": ["x"]}), folder / "b.parquet")
    with pytest.raises(InputError, match="column 'q' mixes numbers and text") as err:
        validate_folder(folder, ["q"], [], PrivacyThresholds(k=2))
    assert "SECRET" not in str(err.value)
