"""``ppdp compare`` ranks by the utility the spec names (issue 35): ``utility.rank_by`` tstr (the strong classifier's
TSTR accuracy, the default with a class column), accuracy_ratio (the ranking before), two_way (the default without
one) or regression:<column>; the recommendation line and the rule say which ranked."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.compare import CompareRow
from ppdp.tasks import compare
from ppdp.tasks.spec import load_spec
from tests.conftest import base_spec, census

HGB = "hist_gradient_boosting"
runner = CliRunner()


def row(name: str, ratio: float, tstr: float, two_way: float, r2: float | None, risk: float = 0.05) -> CompareRow:
    return CompareRow(method=name, status="passes", accuracy_ratio=ratio, tstr={HGB: tstr}, two_way_distance=two_way,
                      regression={"age": r2}, policy_holds=True, floor_holds=True, utility_holds=True, signal=True,
                      records=100, identity_by="classes", average_risk=risk, tuned="k=12")


# A keeps the weak classifier's accuracy best; B keeps what the strong classifier finds; C keeps the marginals best and
# the regression of age
ROWS = [row("a", ratio=0.99, tstr=0.70, two_way=0.20, r2=0.10), row("b", ratio=0.90, tstr=0.81, two_way=0.15, r2=0.30),
        row("c", ratio=0.80, tstr=0.75, two_way=0.05, r2=0.60)]


@pytest.mark.parametrize("rank_by, best, shown", [
    (f"tstr:{HGB}", "b", f"b: TSTR {HGB} accuracy 0.81 at k=12, average risk 0.05; c: TSTR {HGB} accuracy 0.75 "
                         f"(ranked by tstr:{HGB})"),
    ("accuracy_ratio", "a", "a: accuracy ratio 0.99 at k=12, average risk 0.05; b keeps 0.90 (ranked by "
                            "accuracy_ratio)"),
    ("two_way", "c", "c: 2-way marginal distance 0.050 at k=12, average risk 0.05; b: 2-way marginal distance 0.150 "
                     "(ranked by two_way)"),
    ("regression:age", "c", "c: regression age R^2 0.60 at k=12, average risk 0.05; b: regression age R^2 0.30 "
                            "(ranked by regression:age)"),
])
def test_the_named_utility_ranks_and_the_line_says_which(rank_by, best, shown):
    ranked = compare.rank(ROWS, rank_by)
    assert compare.recommendation_line(ranked, rank_by) == (best, shown)
    assert [r.method for r in ranked][0] == best
    rule = compare.recommendation_rule(rank_by)
    assert rule != compare.RECOMMENDATION_RULE and compare.ranked_by_text(rank_by) in rule
    # without a rank_by: the ranking before issue 35 (the accuracy ratio)
    assert compare.recommendation_line(compare.rank(ROWS))[0] == "a"


def test_a_row_without_the_named_figure_ranks_last_among_those_that_pass():
    missing = row("z", ratio=1.0, tstr=0.99, two_way=0.0, r2=None)
    ranked = compare.rank([*ROWS, missing], "regression:age")
    assert [r.method for r in ranked] == ["c", "b", "a", "z"]


def write_spec(tmp_path, rows: int = 60, columns: dict | None = None, **overrides):
    data = tmp_path / "census.csv"
    frame = census(rows)
    if columns is not None:
        frame = frame.drop(columns=["income"])
    frame.to_csv(data, index=False)
    body = base_spec(data, tmp_path / "releases", **overrides)
    if columns is not None:
        body["columns"] = columns
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


@pytest.mark.parametrize("utility, ranking", [
    ({}, f"tstr:{HGB}"),  # the default with a class column: the strong classifier's TSTR accuracy
    ({"tstr": ["knn5", HGB]}, "tstr:knn5"),  # tstr: the first classifier listed
    ({"tstr": []}, "accuracy_ratio"),  # no TSTR classifier: the ranking before
    ({"rank_by": "accuracy_ratio"}, "accuracy_ratio"),
    ({"rank_by": "two_way"}, "two_way"),
    ({"regression": ["age"], "rank_by": "regression:age"}, "regression:age"),
])
def test_the_spec_resolves_what_ranks(tmp_path, utility, ranking):
    spec = load_spec(write_spec(tmp_path, utility={"classifier": "knn1", **utility}))
    assert spec.utility.ranking == ranking
    result = compare.summarize([row("a", 0.9, 0.8, 0.1, 0.5)], spec, input_digest=None, input_rows=60)
    assert result.rank_by == ranking and result.rule == compare.recommendation_rule(ranking)


def test_without_a_class_column_the_default_is_two_way(tmp_path):
    spec = load_spec(write_spec(tmp_path, columns={"person_id": "identifier", "education": "quasi_identifier"},
                                utility={}))
    assert spec.utility.classifier == "none" and spec.utility.ranking == "two_way"


@pytest.mark.slow  # two methods compared (about 20 s on a loaded machine): .ci/run runs it
@pytest.mark.usefixtures("prefect_harness")
def test_compare_ranks_real_releases_by_the_strong_classifiers_tstr_accuracy(tmp_path):
    spec = write_spec(tmp_path, rows=600, privacy={"k": 12}, method={"name": "mdav"},
                      tuning={"strategy": "fixed"}, utility={"classifier": "knn1", "min_accuracy_ratio": 0.5})
    out = tmp_path / "comparison"
    result = runner.invoke(app, ["compare", str(spec), "--methods", "mdav,condensation",
                                 "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    table = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert table["rank_by"] == f"tstr:{HGB}" and "TSTR" in table["rule"]
    measured = [r for r in table["rows"] if r["status"] in ("passes", "refused")]
    assert measured and all(0 < r["tstr"][HGB] <= 1 and 0 < r["tstr_original"][HGB] <= 1 for r in measured)
    eligible = [r for r in table["rows"] if r["status"] == "passes" and r["signal"] is not False
                and r["policy_measured"] is not False]
    assert eligible  # the recommended method has the highest TSTR accuracy (2 decimals) of those it is chosen from
    best = max(round(r["tstr"][HGB], 2) for r in eligible)
    assert round(table["rows"][0]["tstr"][HGB], 2) == best and table["recommended"] == table["rows"][0]["method"]
    assert f"TSTR {HGB} accuracy" in table["recommendation"] and "(ranked by tstr:" in table["recommendation"]
    assert f"ranked by tstr:{HGB}" in result.output
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert f"TSTR {HGB}" in page and "TSTR, utility.rank_by" in page  # the column, and the rule that ranked
