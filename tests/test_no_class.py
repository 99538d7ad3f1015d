"""Tables without a class column publish (issue 34, item 4): utility by measures that need no label (1- and 2-way
marginal distance, correlation difference), nothing held out unless a classifier is asked for; a gate or a method
that needs a label is refused in one line. Real flows (Prefect harness), real Parquet."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks.core.io import read_table
from ppdp.tasks.ingest import coerce_types
from ppdp.tasks.marginals import marginal_distances, total_variation
from ppdp.tasks.publish import load_manifest
from tests.conftest import census

runner = CliRunner()
ROWS = 600
QIS = ["age", "sex", "zip", "education", "race", "marital_status", "occupation"]


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def no_class(tmp_path):
    """The census table without its class column, and a writer of specs for it (no class declared)."""
    data = tmp_path / "census_no_class.csv"
    census(ROWS).drop(columns=["income"]).to_csv(data, index=False)
    root = tmp_path / "releases"

    def spec(method: dict, privacy: dict, name: str = "spec.yaml", **sections) -> object:
        body = {
            "dataset": "census_no_class",
            "source": {"path": str(data)},
            "columns": {"person_id": "identifier",
                        "education": {"role": "quasi_identifier",
                                      "order": ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college",
                                                "Assoc", "Bachelors", "Masters", "Doctorate"]}},
            "privacy": privacy, "method": method, "tuning": {"strategy": "fixed"},
            "publish": {"root": str(root)}, "seed": 7, **sections}
        path = tmp_path / name
        path.write_text(yaml.safe_dump(body), encoding="utf-8")
        return path

    spec.data = data  # type: ignore[attr-defined]
    spec.root = root  # type: ignore[attr-defined]
    return spec


def published(root) -> list:
    return sorted(p.parent for p in root.glob("*/*/manifest.json"))


def check_recomputed(folder, data) -> None:
    """The manifest's label-free figures equal those recomputed from the published table and the input."""
    manifest = load_manifest(folder)
    table = pd.read_parquet(folder / "data.parquet")
    source = manifest.spec.source.model_copy(update={"path": data})
    original = coerce_types(read_table(source), manifest.spec)  # the input as ppdp reads it (zip codes as text)
    again = marginal_distances(original, table, manifest.roles)
    got = manifest.utility.marginals
    assert got is not None and got.columns >= 8 and got.pairs == got.columns * (got.columns - 1) // 2
    for field in ("one_way", "two_way", "correlation_difference", "one_way_worst"):
        assert getattr(got, field) == pytest.approx(getattr(again, field), abs=1e-12), field
    assert (got.columns, got.pairs, got.numeric_columns) == (again.columns, again.pairs, again.numeric_columns)


def one_line_refusal(result, *needles: str) -> None:
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("method, privacy, qi_k", [
    ({"name": "generalization", "suppression_limit": 0.05, "measure": "loss"}, {"k": 5}, 5),
    ({"name": "mdav", "k": 12}, {"k": 12}, 12),  # k 12: the safety floor's average risk 0.09
])
def test_k_anonymous_methods_publish_every_row_without_a_class(no_class, method, privacy, qi_k):
    tuning = {"strategy": "lattice"} if method["name"] == "generalization" else {"strategy": "fixed"}
    spec = no_class(method, privacy, tuning=tuning)
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = published(no_class.root)
    manifest = load_manifest(folder)
    table = pd.read_parquet(folder / "data.parquet")
    assert len(table) == manifest.rows == ROWS  # nothing held out: every record published
    assert "income" not in table.columns and manifest.roles.class_column is None
    sizes = table.groupby([q for q in QIS if q in table.columns], dropna=False).size()
    assert sizes.min() >= qi_k  # k holds on the output
    u = manifest.utility
    assert u.classifier is None and u.accuracy is None and u.test_rows == 0 and u.gates == []
    assert 0 < u.marginals.one_way < 1 and 0 < u.marginals.two_way < 1
    check_recomputed(folder, no_class.data)
    assert "1-way marginal distance" in result.output  # the CLI summary shows the label-free figures
    assert "label-free" in (folder / "report.html").read_text(encoding="utf-8")
    if method["name"] == "generalization":  # ARX's loss of the chosen node, beside the marginals
        assert manifest.tuning.lattice is not None and "loss" in manifest.tuning.lattice.measures


@pytest.mark.slow  # make test keeps the core case; .ci/run runs this one
@pytest.mark.usefixtures("prefect_harness")
def test_noise_publishes_every_row_without_a_class(no_class):
    spec = no_class({"name": "noise", "kind": "additive", "scale": 3.0}, {"max_linkage_risk": 0.09, "min_vd": 0.05})
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = published(no_class.root)
    manifest = load_manifest(folder)
    assert manifest.rows == ROWS and len(pd.read_parquet(folder / "data.parquet")) == ROWS
    assert manifest.utility.accuracy is None
    check_recomputed(folder, no_class.data)
    # the noise moves the numbers: their correlations and marginals differ from the input's
    assert manifest.utility.marginals.correlation_difference > 0


@pytest.mark.slow  # make test keeps the core case; .ci/run runs this one
@pytest.mark.usefixtures("prefect_harness")
def test_tuning_without_a_class_uses_the_label_free_similarity(no_class):
    spec = no_class({"name": "mdav"}, {"k": 12}, tuning={"strategy": "grid", "max": 40, "buckets": 3})
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = published(no_class.root)
    trace = load_manifest(folder).tuning
    assert trace.utility_measure is not None and "marginal" in trace.utility_measure
    assert len(trace.evaluations) == 3 and all(0 < e.accuracy <= 1 and e.per_class == {} for e in trace.evaluations)
    # coarser groups lose more of the joint distribution: the similarity falls as k grows
    scores = [e.accuracy for e in sorted(trace.evaluations, key=lambda e: e.value)]
    assert scores[0] > scores[-1]


def test_an_accuracy_gate_without_a_class_is_a_one_line_spec_error(no_class):
    spec = no_class({"name": "mdav", "k": 5}, {"k": 5}, utility={"min_accuracy_ratio": 0.8})
    one_line_refusal(ppdp("run", spec), "utility.min_accuracy_ratio", "class column")
    spec = no_class({"name": "mdav", "k": 5}, {"k": 5}, utility={"delta_r": {"epsilon": 0.02}})
    one_line_refusal(ppdp("run", spec), "utility.delta_r", "class column")
    spec = no_class({"name": "mdav", "k": 5}, {"k": 5}, utility={"classifier": "knn1"})
    one_line_refusal(ppdp("run", spec), "utility.classifier", "class column")
    assert not no_class.root.exists() or not published(no_class.root)


def test_a_method_that_needs_a_label_is_refused_in_one_line(no_class):
    spec = no_class({"name": "condensation", "variant": "class_wise", "k": 20}, {"k": 10})
    one_line_refusal(ppdp("run", spec), "condensation", "needs a class column", "role: class")
    spec = no_class({"name": "dmpd"}, {"k": 10})
    one_line_refusal(ppdp("run", spec), "dmpd", "needs a class column")


@pytest.mark.usefixtures("prefect_harness")
def test_classifier_none_with_a_class_column_holds_nothing_out(workspace):
    spec = workspace.spec(utility={"classifier": "none"})
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = published(workspace.root)
    manifest = load_manifest(folder)
    assert manifest.rows == ROWS and manifest.utility.accuracy is None  # condensation publishes every record
    assert manifest.spec.utility.min_accuracy_ratio is None and manifest.utility.marginals is not None


def test_classifier_none_with_an_accuracy_gate_is_a_spec_error(workspace):
    spec = workspace.spec(utility={"classifier": "none", "min_accuracy_ratio": 0.5})
    one_line_refusal(ppdp("run", spec), "utility.min_accuracy_ratio", "classifier is none")


# -- the measure itself ------------------------------------------------------------------------------------------
_cell = st.sampled_from(["a", "b", "c", None])
_tables = st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.tuples(st.lists(_cell, min_size=n, max_size=n), st.lists(_cell, min_size=n, max_size=n),
                        st.lists(st.integers(0, 3), min_size=n, max_size=n)))


def _frame(t) -> pd.DataFrame:
    return pd.DataFrame({"x": pd.Series(t[0], dtype=object), "y": pd.Series(t[1], dtype=object),
                         "z": pd.Series([str(v) for v in t[2]], dtype=object)})


@settings(max_examples=150, deadline=None)
@given(_tables, _tables)
def test_marginal_distance_is_zero_on_itself_symmetric_and_in_the_unit_interval(a, b):
    fa, fb = _frame(a), _frame(b)
    same = marginal_distances(fa, fa.sample(frac=1.0, random_state=1))  # row order does not matter
    assert same.one_way == 0 and same.two_way == 0
    ab, ba = marginal_distances(fa, fb), marginal_distances(fb, fa)
    for field in ("one_way", "two_way", "one_way_worst"):
        assert 0 <= getattr(ab, field) <= 1
        assert getattr(ab, field) == pytest.approx(getattr(ba, field), abs=1e-12)
    assert ab.one_way <= ab.one_way_worst + 1e-12 and ab.one_way_worst <= 1
    assert ab.two_way >= ab.one_way - 1e-12  # a pair's joint never differs less than either of its columns


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=40))
def test_numeric_columns_are_binned_on_the_input_bins(values):
    frame = pd.DataFrame({"n": values, "m": values[::-1]})
    d = marginal_distances(frame, frame)
    assert d.one_way == 0 and d.two_way == 0 and d.numeric_columns == 2
    assert d.correlation_difference == pytest.approx(0.0, abs=1e-9)


def test_total_variation_known_values():
    assert total_variation(np.array([0, 0, 1, 1]), np.array([0, 0, 0, 0])) == pytest.approx(0.5)
    assert total_variation(np.array([0, 1]), np.array([2, 3])) == 1.0
    assert total_variation(np.array([], dtype=int), np.array([], dtype=int)) == 0.0
    original = pd.DataFrame({"age": list(range(20, 60))})  # 10 bins of 4 ages each, fixed from the input
    released = pd.DataFrame({"age": ["[20-40)"] * 20 + ["[40-60)"] * 20})  # read as 30 and 50: two bins of ten
    d = marginal_distances(original, released)
    assert d.numeric_columns == 1 and d.one_way == pytest.approx(0.8)  # 0.5 * (2 * 0.4 + 8 * 0.1)
    d = marginal_distances(original, pd.DataFrame({"age": ["*"] * 40}))  # '*' is missing: shares no bin
    assert d.one_way == 1.0
    json.dumps(d.model_dump())  # a report: plain figures only


@pytest.mark.usefixtures("prefect_harness")
def test_compare_ranks_a_table_without_a_class_by_the_marginal_distance(no_class, tmp_path):
    spec = no_class({"name": "mdav"}, {"k": 12}, tuning={"strategy": "bisect", "max": 40})
    out = tmp_path / "comparison"
    result = ppdp("compare", spec, "--methods", "mdav,generalization", "--out", out)
    assert result.exit_code == 0, result.output
    table = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    rows = {r["method"]: r for r in table["rows"]}
    assert all(r["accuracy"] is None for r in rows.values())
    passing = [r for r in table["rows"] if r["status"] == "passes"]
    assert passing and all(0 < r["two_way_distance"] < 1 for r in passing)
    assert "2-way marginal distance" in table["recommendation"]


@pytest.mark.slow  # a DP synthesizer fit: about 25 s
@pytest.mark.usefixtures("prefect_harness")
def test_a_dp_release_without_a_class_withholds_its_label_free_figures(tmp_path):
    data = tmp_path / "input.csv"
    census(400)[["person_id", "age", "sex", "education", "hours_per_week"]].to_csv(data, index=False)
    body = {"dataset": "dp_no_class", "source": {"path": str(data)},
            "columns": {"person_id": "identifier", "age": "quasi_identifier", "sex": "quasi_identifier",
                        "education": "quasi_identifier", "hours_per_week": "other"},
            "privacy": {"max_epsilon": 1.0, "max_delta": 1e-6},
            "method": {"name": "dp_synthesizer", "epsilon": 1.0, "delta": 0.0,
                       "bins": {"age": [17, 30, 45, 60, 90], "hours_per_week": [0, 30, 40, 50, 99]},
                       "categories": {"sex": ["Female", "Male"],
                                      "education": ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college",
                                                    "Assoc", "Bachelors", "Masters", "Doctorate"]}},
            "publish": {"root": str(tmp_path / "root")}, "seed": 5}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(body), encoding="utf-8")
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = published(tmp_path / "root")
    manifest = load_manifest(folder)
    assert manifest.utility is None and "utility" in manifest.withheld.fields  # measured on the input
    text = (folder / "manifest.json").read_text(encoding="utf-8") + result.output
    assert "one_way" not in text and "two_way" not in text and "marginal distance" not in result.output


def test_a_partitioned_input_without_a_class_is_refused_in_one_line(no_class, tmp_path):
    from ppdp.tasks.core.errors import SpecError
    from ppdp.tasks.spec import load_spec, preflight

    folder = tmp_path / "parts"
    folder.mkdir()
    pd.read_csv(no_class.data, dtype={"zip": str}).to_parquet(folder / "part-0.parquet")
    spec = load_spec(no_class({"name": "mdav", "k": 12}, {"k": 12}, source={"path": str(folder)}))
    with pytest.raises(SpecError, match=r"^spec utility.classifier: a partitioned input \(a folder\)") as caught:
        preflight(spec, check_root=False)
    assert "\n" not in str(caught.value)
