"""Issue 22, tuning: the privacy-first choice is never dominated by a value the search evaluated (the census demo's
k=62 beside k=200), the paper's Figure 6 rule kept as ``tuning.choice: paper``; one name and value for the tuned
parameter in the CLI summary, the report's tuning box and the manifest; a fixed run shows no objective and no gap;
``ppdp tune`` writes under the publish root (or ``--out``), aggregates only."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.methods import FloatRange, IntRange
from ppdp.schemas.reports import Evaluation, TuningTrace
from ppdp.schemas.spec import PrivacyThresholds, TuningSpec
from ppdp.tasks.sanitize.condensation import Condensation
from ppdp.tasks.sanitize.noise import Noise
from ppdp.tasks.sanitize.svd import Svd
from ppdp.tasks.tune import dominates, pick_within_gap, tune, undominated


def ev(value, privacy, accuracy, per_class=None) -> Evaluation:
    return Evaluation(value=float(value), privacy=privacy, accuracy=accuracy, per_class=per_class or {}, runs=1,
                      seconds=0.0)


def reference_informative(e: Evaluation) -> bool:
    """The classifier recalls rows of two classes or more (or there are fewer than two classes)."""
    return len(e.per_class) < 2 or len([r for r in e.per_class.values() if r > 0]) >= 2


def reference_dominates(a: Evaluation, b: Evaluation, safer: str) -> bool:
    """The definition, written out independently of the module: ``a`` is at least as safe as ``b`` (its value on
    the tunable's safer side or equal; its privacy figure, larger = more private for every unit, at least as
    high, a missing figure counting as the lowest) and at least as accurate, and strictly better in one."""
    low = float("-inf")
    pa = low if a.privacy is None else a.privacy
    pb = low if b.privacy is None else b.privacy
    if safer == "larger":
        value_ge, value_gt = a.value >= b.value, a.value > b.value
    else:
        value_ge, value_gt = a.value <= b.value, a.value < b.value
    return (value_ge and pa >= pb and a.accuracy >= b.accuracy) and (value_gt or pa > pb or a.accuracy > b.accuracy)


# the census demo's own trace (examples/census_demo.yaml, bisect over [20, 200], t_a = 0.05): k -> (privacy,
# accuracy on 300 held-out rows); Figure 6 visits exactly these values and ends at k = 62
CENSUS = {20: (0.4426, 204 / 300), 35: (0.4857, 215 / 300), 47: (0.5046, 212 / 300), 54: (0.5095, 216 / 300),
          58: (0.5186, 220 / 300), 60: (0.5137, 215 / 300), 61: (0.5137, 214 / 300), 62: (0.5095, 211 / 300),
          63: (0.5095, 212 / 300), 200: (0.7393, 220 / 300)}


def census_evaluator(values):
    return [ev(v, *CENSUS[int(v)]) for v in values]  # a KeyError if the search asked for another value


def census_bisect(choice: str) -> TuningTrace:
    return tune(TuningSpec(strategy="bisect", max=200, accuracy_gap=0.05, choice=choice), sanitizer=Condensation(),
                domains={"k": IntRange(low=2, high=579)}, policy=PrivacyThresholds(k=20),
                sizes={"class #0": 2121, "class #1": 579}, evaluate_many=census_evaluator)


def test_census_demo_no_longer_chooses_a_dominated_k():
    ours, paper = census_bisect("non_dominated"), census_bisect("paper")
    assert sorted(e.k for e in ours.evaluations) == sorted(CENSUS) == sorted(e.k for e in paper.evaluations)
    # the paper's rule, kept as a named variant, reproduces the bug: k=62 (0.703) beside k=200 (0.733, safer)
    assert paper.chosen == 62 and paper.choice == "paper" and paper.figure6_value == 62
    at = {e.k: e for e in paper.evaluations}
    assert dominates(at[200], at[62], "larger")
    # the default rule: k=200, and the trace says where Figure 6 ended and what dominated it
    assert ours.chosen == 200 and ours.choice == "non_dominated" and ours.figure6_value == 62
    assert "Figure 6 ended at k=62, which k=200 dominates" in ours.rule
    assert not any(dominates(e, at[200], "larger") for e in ours.evaluations)


def test_dominance_is_oriented_by_the_tunables_direction_and_the_figure_by_larger_is_more_private():
    # rank (SVD): smaller is safer; the privacy figure (DCR quantile) is still larger = more private
    assert Svd.tunable["rank"] == "smaller" and Condensation.tunable["k"] == "larger"
    small, large = ev(2, 2.8, 0.89), ev(5, 2.2, 0.86)
    assert dominates(small, large, "smaller") and not dominates(large, small, "smaller")
    assert not dominates(small, large, "larger")  # in the other direction neither is at least as safe
    # equal value in every criterion: not dominated (strictness)
    assert not dominates(ev(3, 0.5, 0.9), ev(3, 0.5, 0.9), "larger")
    # a figure not measured is the lowest: it never makes a value as safe as one with a figure
    assert not dominates(ev(9, None, 0.9), ev(3, 0.1, 0.8), "larger")
    assert dominates(ev(9, 0.1, 0.9), ev(3, None, 0.8), "larger")
    # the within-gap pick on a smaller-is-safer parameter: rank 2 (highest figure within 5% of the best)
    svd = [ev(1, 2.827, 0.781), ev(2, 2.804, 0.895), ev(3, 2.795, 0.886), ev(4, 2.602, 0.43), ev(5, 2.241, 0.86)]
    assert pick_within_gap(svd, 0.05, "smaller").value == 2


evaluations_strategy = st.lists(
    st.tuples(st.integers(1, 60), st.one_of(st.none(), st.sampled_from([0.1, 0.2, 0.3, 0.5]), st.floats(0, 5)),
              st.sampled_from([0.5, 0.6, 0.7, 0.71, 0.72, 0.8, 0.9]) | st.floats(0, 1),
              st.sampled_from([{}, {"class #0": 0.9, "class #1": 0.4}, {"class #0": 1.0, "class #1": 0.0},
                               {"class #0": 0.0, "class #1": 1.0, "class #2": 0.0}])),
    min_size=1, max_size=25, unique_by=lambda t: t[0])


@settings(max_examples=400, deadline=None)
@given(rows=evaluations_strategy, gap=st.floats(0.001, 0.5), safer=st.sampled_from(["larger", "smaller"]))
def test_the_choice_is_never_dominated_by_an_evaluated_value(rows, gap, safer):
    """The pure choice function: whatever the evaluations (ties, missing figures, either direction), no
    evaluated value is at least as safe and at least as accurate as the choice and better in one; the choice is
    within the gap of the best accuracy and no value within the gap has a higher privacy figure."""
    evs = [ev(v, p, a, c) for v, p, a, c in rows]
    chosen = pick_within_gap(evs, gap, safer)
    assert chosen in evs
    assert not any(reference_dominates(e, chosen, safer) for e in evs)
    best = max(e.accuracy for e in evs)
    assert chosen.accuracy >= best * (1 - gap)
    within = [e for e in evs if e.accuracy >= best * (1 - gap)]
    figure = (lambda e: -math.inf if e.privacy is None else e.privacy)  # noqa: E731
    assert figure(chosen) == max(figure(e) for e in within)
    # the module's dominance is the definition
    assert all(dominates(a, b, safer) == reference_dominates(a, b, safer) for a in evs for b in evs)


@settings(max_examples=400, deadline=None)
@given(rows=evaluations_strategy, start=st.integers(0, 24), safer=st.sampled_from(["larger", "smaller"]))
def test_the_non_dominated_rule_leaves_an_undominated_pick_and_replaces_a_dominated_one(rows, start, safer):
    """The choice rule applied to any pick (Figure 6's value, whatever it was): the result is never dominated by
    an evaluated value whose classifier recalls two classes or more; a pick no such value dominates stands; a
    dominated pick moves to a value that dominates it, the most private of those (highest figure, then the safer
    value). A value whose classifier answers with one class is never moved to."""
    evs = [ev(v, p, a, c) for v, p, a, c in rows]
    pick = evs[start % len(evs)]
    chosen = undominated(pick, evs, safer)
    assert chosen in evs
    assert not any(reference_dominates(e, chosen, safer) for e in evs if reference_informative(e))
    assert chosen is pick or reference_informative(chosen)
    over = [e for e in evs if reference_dominates(e, pick, safer) and reference_informative(e)]
    if not over:
        assert chosen is pick
    else:
        assert chosen in over
        figure = (lambda e: -math.inf if e.privacy is None else e.privacy)  # noqa: E731
        assert figure(chosen) == max(figure(e) for e in over)


@settings(max_examples=120, deadline=None)
@given(low=st.integers(1, 200), span=st.integers(0, 3000), seed=st.integers(0, 2**32 - 1),
       gap=st.floats(0.001, 0.3), larger_safer=st.booleans(), resolution=st.one_of(st.none(), st.floats(0.01, 0.5)),
       strategy=st.sampled_from(["bisect", "grid"]))
def test_tune_never_returns_a_dominated_value_for_any_method_direction(low, span, seed, gap, larger_safer, resolution,
                                                                       strategy):
    """``tune`` end to end (bisect and grid, an integer parameter whose larger or smaller values are safer, random
    accuracies and figures): the chosen value is one it evaluated and none it evaluated dominates it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    table: dict[float, tuple[float | None, float]] = {}

    def many(values):
        out = []
        for v in values:
            p, a = table.setdefault(float(v), (None if rng.random() < 0.1 else float(rng.random()),
                                               float(rng.choice([0.5, 0.7, 0.8, 0.81, 0.9]))))
            out.append(ev(v, p, a))
        return out

    sanitizer, parameter = (Condensation(), "k") if larger_safer else (Svd(), "rank")
    spec = TuningSpec(strategy=strategy, min=low, max=low + span,
                      **({"resolution": resolution} if strategy == "bisect" else {"buckets": 12}))
    trace = tune(spec, sanitizer=sanitizer, domains={parameter: IntRange(low=1, high=10_000)},
                 policy=PrivacyThresholds(), sizes={}, evaluate_many=many)
    safer = sanitizer.tunable[parameter]
    [chosen] = [e for e in trace.evaluations if e.value == trace.chosen]
    assert not any(reference_dominates(e, chosen, safer) for e in trace.evaluations)
    assert trace.choice == "non_dominated" and trace.accuracy_gap == spec.accuracy_gap


def test_a_release_the_classifier_answers_with_one_class_never_replaces_the_pick():
    """On a skewed table the majority class's share can beat a weak classifier: a one-group release (k=540) is
    then "more accurate" and more private than k=10, but carries nothing; an informative k=27 that dominates k=10
    is taken, the one-class k=540 is not."""
    both, one = {"class #0": 0.9, "class #1": 0.3}, {"class #0": 1.0, "class #1": 0.0}
    k10, k27, k540 = ev(10, 10, 0.70, both), ev(27, 27, 0.75, both), ev(540, 540, 0.79, one)
    assert dominates(k540, k10, "larger") and dominates(k540, k27, "larger")
    assert undominated(k10, [k10, k540], "larger") is k10
    assert undominated(k10, [k10, k27, k540], "larger") is k27


def test_real_parameter_bisect_choice_is_not_dominated():
    """Noise's scale (a real, log range, larger is safer): accuracy rising with the scale, as the census demo's
    accuracy rises with k. Figure 6 walks away from the safe end; the choice does not."""
    def many(values):
        return [ev(v, v / 10, 0.6 + 0.05 * math.log10(v / 0.01) / math.log10(200)) for v in values]

    spec = TuningSpec(strategy="bisect", accuracy_gap=0.02)
    common = dict(sanitizer=Noise(), domains={"scale": FloatRange(low=0.01, high=2.0, log=True)},
                  policy=PrivacyThresholds(), sizes={}, evaluate_many=many)
    ours, paper = tune(spec, **common), tune(spec.model_copy(update={"choice": "paper"}), **common)
    assert ours.chosen == pytest.approx(2.0) and paper.chosen < 1.0
    assert any(dominates(e, next(x for x in paper.evaluations if x.value == paper.chosen), "larger")
               for e in paper.evaluations)


def test_choice_paper_only_with_bisect_and_the_privacy_first_objective():
    assert TuningSpec().choice == "non_dominated"
    with pytest.raises(ValueError, match="choice paper"):
        TuningSpec(strategy="grid", choice="paper")
    with pytest.raises(ValueError, match="choice paper"):
        TuningSpec(strategy="bisect", choice="paper", objective="best_utility_meeting_policy")
    assert TuningSpec(strategy="bisect", choice="paper").choice == "paper"


def test_fixed_trace_records_no_objective_gap_or_choice():
    trace = tune(TuningSpec(strategy="fixed", accuracy_gap=0.1), sanitizer=Condensation(k=25),
                 domains={"k": IntRange(low=2, high=500)}, policy=PrivacyThresholds(k=20), sizes={},
                 evaluate_many=None)
    assert trace.chosen == 25 and trace.parameter == "k"
    assert trace.objective is None and trace.accuracy_gap is None and trace.choice is None
    assert "not tuned" in trace.rule


def _tuning_box(trace: TuningTrace, unit: str = "generating_group") -> str:
    from ppdp.tasks.report.sections import tuning

    return tuning(SimpleNamespace(m=SimpleNamespace(tuning=trace, unit=unit, withheld=None)))


def test_report_tuning_box_of_a_fixed_run_shows_no_objective_and_no_gap():
    # as a manifest written before this change has it: a fixed trace still carrying the spec's objective and gap
    old = TuningTrace(strategy="fixed", parameter="k", objective="most_privacy_within_gap", accuracy_gap=0.05,
                      safer="larger", chosen=25, candidates=1, rule="method.k = 25 from the spec")
    box = _tuning_box(old, "equivalence_class")
    assert "objective" not in box and "accuracy gap" not in box and "most privacy" not in box
    assert "value from the spec" in box and "<code>k</code> = <b>25</b>" in box
    searched = census_bisect("non_dominated")
    box = _tuning_box(searched)
    assert "objective" in box and "accuracy gap t_a" in box and "non-dominated" in box
    assert "chosen value" in box and "<code>k</code> = <b>200</b>" in box
    assert "where Figure 6 itself ended" in box and "<code>k</code> = 62" in box
    assert "chosen k = 200" in box  # the plot's legend, same name and value


def test_tuning_folder_is_under_the_dataset_and_never_reused(tmp_path):
    from ppdp.tasks.layout import tuning_folder

    when = datetime(2026, 11, 27, 3, 4, 5, tzinfo=UTC)
    first = tuning_folder(tmp_path, "census", when)
    assert first == tmp_path / "census" / "tuning" / "20261127T030405Z"
    first.mkdir(parents=True)
    second = tuning_folder(tmp_path, "census", when)
    assert second == tmp_path / "census" / "tuning" / "20261127T030405Z-2"


def test_audit_scan_accepts_tuning_runs_and_flags_anything_else(tmp_path):
    from ppdp.tasks.audit import scan_root as _scan_root

    run = tmp_path / "census" / "tuning" / "20261127T030405Z"
    run.mkdir(parents=True)
    (run / "trace.json").write_text("{}")
    (run / "tuning.png").write_bytes(b"png")
    assert _scan_root(tmp_path, set()) == []
    (run / "data.parquet").write_bytes(b"x")
    (tmp_path / "census" / "tuning" / "stray.txt").write_text("x")
    findings = _scan_root(tmp_path, set())
    assert len(findings) == 2
    assert any("data.parquet: unexpected in a tuning run's folder" in f for f in findings)
    assert any("stray.txt: unexpected file in the tuning folder" in f for f in findings)


# -- end to end (Prefect's test harness) ---------------------------------------------------------------------
def _ppdp(*args: object):
    from typer.testing import CliRunner

    from ppdp.flows.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_tune_writes_under_the_publish_root_aggregates_only(workspace, tmp_path, monkeypatch):
    import pandas as pd

    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    result = _ppdp("tune", workspace.spec(), "--strategy", "grid", "--buckets", "3")
    assert result.exit_code == 0, result.output
    assert list(here.iterdir()) == []  # nothing in the current folder
    [run] = list((workspace.root / "census" / "tuning").iterdir())
    assert re.fullmatch(r"\d{8}T\d{6}Z", run.name)
    assert sorted(p.name for p in run.iterdir()) == ["trace.json", "tuning.png"]
    assert f"tuning folder {run} (under the publish root)" in " ".join(result.output.split())
    assert workspace.under_root() == ["census", "census/tuning", f"census/tuning/{run.name}",
                                      f"census/tuning/{run.name}/trace.json", f"census/tuning/{run.name}/tuning.png"]
    text = (run / "trace.json").read_text()
    trace = json.loads(text)
    assert trace["strategy"] == "grid" and len(trace["evaluations"]) == 3 and trace["choice"] == "non_dominated"
    data = pd.read_csv(workspace.data)
    strings = {str(v) for c in data.columns if data[c].dtype == object for v in data[c].dropna().unique()}
    assert not [s for s in strings if len(s) >= 4 and s in text]  # no input value (labels are class #i)
    out = tmp_path / "elsewhere"
    again = _ppdp("tune", workspace.spec(), "--strategy", "grid", "--buckets", "3", "--out", out)
    assert again.exit_code == 0 and (out / "trace.json").is_file()
    assert f"tuning folder {out} (--out)" in " ".join(again.output.split())
    assert len(list((workspace.root / "census" / "tuning").iterdir())) == 1


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_tuned_parameter_named_alike_in_cli_report_and_manifest(workspace):
    """The perturbation tree tunes leaf_size while its claim is the smallest leaf (k): the CLI labels both, and
    the CLI, the report's tuning box and the manifest give the tuned parameter the same name and value. A fixed
    run says fixed, not tuned."""
    from ppdp.tasks.publish import load_manifest

    columns = {"person_id": "identifier", "income": "class", "hours_per_week": "sensitive",
               "education": {"role": "quasi_identifier",
                             "order": ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc",
                                       "Bachelors", "Masters", "Doctorate"]}}
    spec = workspace.spec("tree.yaml", columns=columns, privacy={"k": 3},
                          method={"name": "perturbation_tree", "k": 3},
                          tuning={"strategy": "bisect", "max": 40, "accuracy_gap": 0.05})
    result = _ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = [p.parent for p in workspace.root.glob("*/*/manifest.json")]
    manifest = load_manifest(folder)
    t = manifest.tuning
    value = manifest.method.params["leaf_size"]
    assert t.parameter == "leaf_size" and t.chosen == value and t.choice == "non_dominated"
    out = " ".join(result.output.split())
    assert f"tuned leaf_size={value}:" in out
    assert f"measured k = {manifest.privacy.k} (smallest generating group of the release)" in out
    html = (folder / "report.html").read_text()
    box = html[html.index('id="tuning"'):]
    assert f"<code>leaf_size</code> = <b>{value}</b>" in box and f"chosen leaf_size = {value}" in box

    # the same records under another dataset name form a series with the release above: a root of its own
    fixed = _ppdp("run", workspace.spec("fixed.yaml", dataset="census_fixed", publish__root=str(workspace.dir / "r2")))
    assert fixed.exit_code == 0, fixed.output
    out = " ".join(fixed.output.split())
    assert "fixed k=20: method.k = 20 from the spec (not tuned)" in out and "tuned k=" not in out
