"""Utility as the field measures synthetic and anonymized data (issue 35): train on the release, test on held-out
real rows (TSTR) with a strong classifier (HistGradientBoosting), regression targets scored by R^2, both beside the
same model trained on the original rows; withheld for differentially private releases; one-line spec errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.metrics import r2_score
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.schemas.spec import UtilitySpec
from ppdp.tasks import private_record
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.core.io import read_table
from ppdp.tasks.ingest import coerce_types
from ppdp.tasks.plan import prepare_rows
from ppdp.tasks.publish import load_manifest
from ppdp.tasks.sanitize.registry import method_class
from ppdp.tasks.spec import load_spec
from ppdp.tasks.tag import tag_columns
from ppdp.tasks.utility import evaluate_utility
from tests.conftest import base_spec, census

runner = CliRunner()
HGB = "hist_gradient_boosting"


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def write_spec(tmp_path, rows: int = 600, name: str = "spec.yaml", **overrides):
    data = tmp_path / "census.csv"
    if not data.exists():
        census(rows).to_csv(data, index=False)
    body = base_spec(data, tmp_path / "releases", **overrides)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def one_line_refusal(result, *needles: str) -> None:
    assert result.exit_code not in (0, None), result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for n in needles:
        assert n in lines[0], lines[0]


def roles_of(numeric: list[str], nominal: list[str], class_column: str | None) -> Roles:
    tags = [ColumnTag(name=c, role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared",
                      reason="declared in spec") for c in numeric]
    tags += [ColumnTag(name=c, role=Role.other, kind=ColumnKind.nominal, source="declared", reason="declared in spec")
             for c in nominal]
    if class_column is not None:
        tags.append(ColumnTag(name=class_column, role=Role.class_, kind=ColumnKind.nominal, source="declared",
                              reason="declared in spec"))
    return Roles(columns=tags)


# -- a release through the flow: the manifest's figures recomputed from the published Parquet -----------------------
@pytest.mark.usefixtures("prefect_harness")
def test_tstr_and_regression_figures_are_recomputed_from_the_published_table_and_the_held_out_rows(tmp_path):
    spec_path = write_spec(tmp_path, method={"name": "mdav", "k": 12}, privacy={"k": 12},
                           utility={"classifier": "knn1", "min_accuracy_ratio": None,
                                    "tstr": [HGB, "naive_bayes"], "regression": ["hours_per_week"]})
    result = ppdp("run", spec_path)
    assert result.exit_code == 0, result.output
    [folder] = sorted(p.parent for p in (tmp_path / "releases").glob("*/*/manifest.json"))
    manifest = load_manifest(folder)
    u = manifest.utility
    assert [t.classifier for t in u.tstr] == [HGB, "naive_bayes"] and [r.column for r in u.regression] == [
        "hours_per_week"]
    published = pd.read_parquet(folder / "data.parquet")
    # the held-out rows, as the flow drew them, from the input and the published spec
    spec = load_spec(spec_path)
    roles = manifest.roles
    original = coerce_types(read_table(spec.source), spec)
    prepared = prepare_rows(spec, method_class(spec.method.name), original.drop(columns=roles.dropped), roles)
    assert len(prepared.test) == u.test_rows == 60
    cls = roles.class_column
    encoder = TableEncoder(columns=roles.attributes, kinds=roles.kinds(), orders=roles.orders()).fit(prepared.train)
    y_test = prepared.test[cls].astype(str).to_numpy()

    def hgb_accuracy(train: pd.DataFrame) -> float:
        model = HistGradientBoostingClassifier(early_stopping=True, random_state=spec.seed)
        model.fit(encoder.transform(train), train[cls].astype(str).to_numpy())
        return float(np.mean(model.predict(encoder.transform(prepared.test)) == y_test))

    [hgb] = [t for t in u.tstr if t.classifier == HGB]
    assert hgb.accuracy == pytest.approx(hgb_accuracy(published), abs=1e-12)
    assert hgb.accuracy_original == pytest.approx(hgb_accuracy(prepared.train), abs=1e-12)

    target = "hours_per_week"
    features = [c for c in [*roles.attributes, cls] if c != target]
    kinds = {**roles.kinds(), cls: ColumnKind.nominal}

    def r2(train: pd.DataFrame) -> float:
        enc = TableEncoder(columns=features, kinds={c: kinds[c] for c in features}, orders=roles.orders()).fit(train)
        model = HistGradientBoostingRegressor(early_stopping=True, random_state=spec.seed)
        model.fit(enc.transform(train), train[target].to_numpy(dtype=float))
        return float(r2_score(prepared.test[target].to_numpy(dtype=float), model.predict(enc.transform(prepared.test))))

    [reg] = u.regression
    assert reg.r2 == pytest.approx(r2(published), abs=1e-12)
    assert reg.r2_original == pytest.approx(r2(prepared.train), abs=1e-12)
    assert reg.test_rows == 60
    # shown everywhere the existing figures are: CLI summary, report (beside the marginal distances)
    assert f"TSTR {HGB} {hgb.accuracy:.4f}" in result.output and "regression hours_per_week R^2" in result.output
    assert "2-way" in result.output
    report = (folder / "report.html").read_text(encoding="utf-8")
    assert "(TSTR)" in report and "Regression targets" in report and "2-way marginal distance" in report


# -- the strong classifier and the regression targets on tables with known structure ---------------------------------
def xor_table(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(size=rows), rng.uniform(size=rows)
    label = np.where((x1 > 0.5) ^ (x2 > 0.5), "yes", "no")
    return pd.DataFrame({"x1": x1, "x2": x2, "colour": rng.choice(["red", "blue"], size=rows), "label": label})


def test_the_strong_classifier_beats_a_constant_predictor_where_the_weak_one_does_not():
    roles = roles_of(["x1", "x2"], ["colour"], "label")
    train, test = xor_table(1500, 1), xor_table(400, 2)
    spec = UtilitySpec(classifier="naive_bayes", min_accuracy_ratio=None, tstr=[HGB, "naive_bayes"])
    u = evaluate_utility(train, train, test, roles, spec, seed=3)  # a faithful release: the training rows
    constant = float((test["label"] == train["label"].mode()[0]).mean())
    tstr = {t.classifier: t for t in u.tstr}
    assert tstr[HGB].accuracy > constant + 0.3  # the class is an XOR of two thresholds: trees find it
    assert tstr["naive_bayes"].accuracy < constant + 0.15  # a Gaussian naive Bayes cannot (a weak utility measure)
    assert tstr["naive_bayes"].accuracy == u.accuracy  # the spec's classifier is measured once, the same figure
    # a release that lost the relation (labels shuffled) scores near the constant predictor
    rng = np.random.default_rng(4)
    lost = train.assign(label=rng.permutation(train["label"].to_numpy()))
    v = evaluate_utility(train, lost, test, roles, spec, seed=3)
    assert next(t.accuracy for t in v.tstr if t.classifier == HGB) < constant + 0.15
    assert next(t.accuracy_original for t in v.tstr if t.classifier == HGB) == tstr[HGB].accuracy_original


def test_the_strong_classifier_trains_on_a_tiny_release_with_a_class_of_one_row():
    roles = roles_of(["x1", "x2"], ["colour"], "label")
    train, test = xor_table(200, 5), xor_table(50, 6)
    tiny = pd.concat([train[train["label"] == "yes"].head(11), train[train["label"] == "no"].head(1)])
    u = evaluate_utility(train, tiny, test, roles, UtilitySpec(classifier="knn1", min_accuracy_ratio=None), seed=0)
    assert [t.classifier for t in u.tstr] == [HGB] and 0 <= u.tstr[0].accuracy <= 1


def linear_table(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, size=rows)
    group = rng.choice(["a", "b", "c"], size=rows)
    y = 3.0 * x + np.where(group == "a", 5.0, 0.0) + rng.normal(0, 0.5, size=rows)
    return pd.DataFrame({"x": x, "y": y, "group": group, "label": np.where(x > 5, "hi", "lo")})


def test_regression_r2_is_high_on_a_faithful_release_of_a_linear_relation_and_low_once_it_is_lost():
    roles = roles_of(["x", "y"], ["group"], "label")
    train, test = linear_table(1200, 1), linear_table(300, 2)
    spec = UtilitySpec(classifier="knn1", min_accuracy_ratio=None, tstr=[], regression=["y"])
    [faithful] = evaluate_utility(train, train, test, roles, spec, seed=0).regression
    assert faithful.column == "y" and faithful.test_rows == 300
    assert faithful.r2 > 0.95 and faithful.r2 == faithful.r2_original
    rng = np.random.default_rng(3)
    lost = train.assign(y=rng.permutation(train["y"].to_numpy()))
    [broken] = evaluate_utility(train, lost, test, roles, spec, seed=0).regression
    assert broken.r2 < 0.1 and broken.r2_original == faithful.r2_original


# -- differential privacy: withheld like every figure measured on real rows --------------------------------------------
def test_a_dp_release_withholds_its_tstr_and_regression_figures(tmp_path):
    from ppdp.flows.cli.release_summary import summary_json as _summary_json
    from ppdp.schemas.manifest import ReleaseResult
    from ppdp.schemas.utility import RegressionScore, TstrScore
    from tests.test_dp_published import computed_manifest

    computed = computed_manifest(tmp_path)
    tstr = [TstrScore(classifier=HGB, accuracy=0.812345, accuracy_original=0.854321)]
    regression = [RegressionScore(column="hours_per_week", r2=0.434343, r2_original=0.565656, test_rows=482)]
    computed = computed.model_copy(update={"utility": computed.utility.model_copy(update={
        "tstr": tstr, "regression": regression})})
    public, record = private_record.split(computed)
    text = public.model_dump_json()
    assert public.utility is None and "utility" in public.withheld.fields
    for figure in ("0.812345", "0.854321", "0.434343", "0.565656"):  # the spec's utility.tstr key stays
        assert figure not in text, figure
    assert record.manifest["utility"]["tstr"][0]["accuracy"] == 0.812345  # kept in the private record
    result = ReleaseResult(release_id=public.release_id, status="published", reason="published",
                           unit="differential_privacy", tstr=tstr, regression=regression)
    doc = json.dumps(_summary_json(result, None))
    assert "0.812345" not in doc and "0.434343" not in doc and '"withheld": true' in doc


# -- spec errors: one line naming the key and the column ---------------------------------------------------------------
@pytest.mark.parametrize("utility, needles", [
    ({"regression": ["income"]}, ("utility.regression", "'income'", "class")),
    ({"regression": ["person_id"]}, ("utility.regression", "'person_id'", "identifier")),
    ({"regression": ["age", "age"]}, ("utility.regression", "'age'", "twice")),
    ({"rank_by": "regression:age"}, ("utility.rank_by", "'age'", "utility.regression")),
    ({"rank_by": "tstr:knn5"}, ("utility.rank_by", "'knn5'", "utility.tstr")),
    ({"rank_by": "best"}, ("utility.rank_by", "'best'")),
    ({"classifier": "none", "tstr": [HGB]}, ("utility.tstr", "held-out")),
    ({"classifier": "none", "regression": ["age"]}, ("utility.regression", "held-out")),
    ({"classifier": "none", "rank_by": "tstr"}, ("utility.rank_by", "two_way")),
])
def test_a_bad_utility_key_is_a_one_line_spec_error(tmp_path, utility, needles):
    spec_path = write_spec(tmp_path, rows=60, utility={"classifier": "knn1", **utility})
    one_line_refusal(ppdp("run", spec_path), *needles)


def test_regression_without_a_class_column_is_refused_in_one_line(tmp_path):
    data = tmp_path / "census.csv"
    census(60).drop(columns=["income"]).to_csv(data, index=False)
    body = base_spec(data, tmp_path / "releases", utility={"regression": ["age"]})
    body["columns"].pop("income")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    one_line_refusal(ppdp("run", path), "utility.regression", "class column")


@pytest.mark.parametrize("column, needles", [
    ("sex", ("utility.regression", "'sex'", "not numeric")),
    ("name", ("utility.regression", "'name'", "not a published attribute")),  # tagged an identifier by its name
    ("height", ("utility.regression", "'height'", "not an input column")),
])
def test_a_regression_target_that_is_not_a_numeric_attribute_is_named_once_tagged(tmp_path, column, needles):
    frame = census(60)
    spec = load_spec(write_spec(tmp_path, rows=60, utility={"regression": [column]}))
    with pytest.raises(SpecError) as caught:
        tag_columns(frame, spec)
    message = str(caught.value)
    assert "\n" not in message and all(n in message for n in needles), message


@pytest.mark.usefixtures("prefect_harness")
def test_a_regression_target_refused_after_tagging_stops_the_run_in_one_line(tmp_path):
    spec_path = write_spec(tmp_path, rows=200, utility={"classifier": "knn1", "regression": ["sex"]})
    one_line_refusal(ppdp("run", spec_path), "utility.regression", "'sex'")
    assert not list((tmp_path / "releases").glob("*/*/manifest.json"))


def test_a_recodings_published_held_out_rows_are_aligned_with_the_real_ones_for_the_regression(tmp_path):
    from ppdp.tasks.compare import tune_plain
    from ppdp.tasks.sanitize.registry import run_method
    from ppdp.tasks.shapes import check_utility
    from ppdp.tasks.utility import split_release

    spec = load_spec(write_spec(tmp_path, rows=300, privacy={"k": 10}, method={"name": "mondrian", "k": 10},
                                utility={"classifier": "knn1", "min_accuracy_ratio": None,
                                         "regression": ["hours_per_week", "age"]}))
    frame = coerce_types(read_table(spec.source), spec)
    roles = tag_columns(frame, spec)
    cls = method_class(spec.method.name)
    prepared = prepare_rows(spec, cls, frame.drop(columns=roles.dropped), roles)
    sanitizer, _ = tune_plain(spec, roles, prepared)
    release, _ = run_method(sanitizer, prepared.source, roles, None)
    _, published_test = split_release(release, prepared.everything, "income", spec.utility.test_fraction, spec.seed)
    # each published held-out row stands for the held-out row at the same position (hours_per_week is published
    # as it is, age as an interval that holds the real value)
    assert len(published_test) == len(prepared.test) == 30
    assert (published_test["hours_per_week"].to_numpy() == prepared.test["hours_per_week"].to_numpy()).all()
    for label, real in zip(published_test["age"].astype(str), prepared.test["age"], strict=True):
        low, high = (float(v) for v in label.strip("[]()").split("-"))
        assert low <= real <= high, (label, real)
    u = check_utility(cls, spec, release, roles, prepared)
    by_column = {r.column: r for r in u.regression}
    assert by_column["age"].r2 is not None and by_column["age"].test_rows == 30  # learned from interval midpoints
    assert by_column["hours_per_week"].r2 is not None


@pytest.mark.slow  # a DP synthesis through ppdp run (about half a minute)
@pytest.mark.usefixtures("prefect_harness")
def test_a_dp_release_through_the_flow_publishes_no_tstr_or_regression_figure(tmp_path):
    from ppdp.tasks import audit
    from tests.test_dp_published import COLUMNS, dp_spec, everything_published

    root, data = tmp_path / "releases", tmp_path / "input.csv"
    people = census(800, seed=11)[COLUMNS]
    people["hours_per_week"] = people["hours_per_week"].clip(0, 99)
    people.to_csv(data, index=False)
    spec = dp_spec(tmp_path, data, root, utility={"classifier": "naive_bayes", "min_accuracy_ratio": None,
                                                  "tstr": [HGB], "regression": ["hours_per_week"]})
    result = ppdp("run", spec, "--json")
    assert result.exit_code == 0, result.output
    [folder] = [p.parent for p in root.glob("*/*/manifest.json")]
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["utility"] is None and "utility" in manifest["withheld"]["fields"]
    record = private_record.read_record(audit.trail_id(root) or "", manifest["release_id"])
    assert record is not None and record.manifest is not None
    kept = record.manifest["utility"]  # measured, kept in the publisher's private record
    [tstr], [reg] = kept["tstr"], kept["regression"]
    assert tstr["classifier"] == HGB and 0 < tstr["accuracy"] <= 1 and reg["r2"] is not None
    figures = {repr(float(tstr["accuracy"])), f"{tstr['accuracy']:.4f}", repr(float(tstr["accuracy_original"])),
               f"{tstr['accuracy_original']:.4f}", repr(float(reg["r2"])), f"{reg['r2']:.4f}"}
    texts = {**everything_published(root), "run --json": result.output}
    for name, text in texts.items():
        if name.endswith((".parquet", ".png", ".db")):
            continue
        for figure in figures:
            assert figure not in text, f"{name}: {figure}"
    assert json.loads(result.stdout)["utility"]["withheld"] is True
