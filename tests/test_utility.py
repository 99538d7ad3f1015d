"""The utility step: paper 004's ΔR criterion and the classifiers it names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.schemas.spec import DeltaRSpec, UtilitySpec
from ppdp.tasks.core.errors import ReleaseRejected
from ppdp.tasks.gates import enforce_utility
from ppdp.tasks.utility import evaluate_utility, split_holdout


def _data(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, Roles]:
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, (n, 2))
    label = np.where(x[:, 0] + 0.5 * x[:, 1] > 0, "yes", "no")
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "label": label})
    roles = Roles(columns=[
        ColumnTag(name="a", role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="b", role=Role.other, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="label", role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"),
    ])
    return frame, roles


def test_delta_r_of_the_original_is_epsilon_times_its_accuracy():
    frame, roles = _data()
    train, test = split_holdout(frame, "label", 0.2, seed=1)
    spec = UtilitySpec(min_accuracy_ratio=None, delta_r=DeltaRSpec(epsilon=0.02))
    report = evaluate_utility(train, train, test, roles, spec, seed=1)
    assert [d.classifier for d in report.delta_r] == ["j48", "knn1", "svm"]
    for d in report.delta_r:
        assert d.accuracy == pytest.approx(d.accuracy_original)
        assert d.value == pytest.approx(0.02 * d.accuracy_original)
        assert d.accuracy_original > 0.8  # a linearly separable class: every classifier learns it
    gate = next(g for g in report.gates if g.name == "delta_r")
    assert gate.passed and gate.value == pytest.approx(min(d.value for d in report.delta_r))
    assert report.delta_r_epsilon == 0.02
    enforce_utility(report)


def test_delta_r_fails_a_release_whose_labels_carry_nothing():
    frame, roles = _data()
    train, test = split_holdout(frame, "label", 0.2, seed=2)
    noise = train.copy()
    noise["label"] = np.random.default_rng(3).permutation(noise["label"].to_numpy())
    spec = UtilitySpec(min_accuracy_ratio=None, delta_r=DeltaRSpec(classifiers=["knn1", "j48"]))
    report = evaluate_utility(train, noise, test, roles, spec, seed=2)
    gate = next(g for g in report.gates if g.name == "delta_r")
    assert not gate.passed and gate.value < 0
    assert gate.worst in {"knn1", "j48"}
    with pytest.raises(ReleaseRejected, match="delta_r"):
        enforce_utility(report)


def test_no_delta_r_section_means_no_delta_r_gate():
    frame, roles = _data()
    train, test = split_holdout(frame, "label", 0.2, seed=4)
    report = evaluate_utility(train, train, test, roles, UtilitySpec(), seed=4)
    assert report.delta_r == [] and [g.name for g in report.gates] == ["min_accuracy_ratio"]


@pytest.mark.parametrize("bad", [dict(epsilon=1.0), dict(epsilon=-0.1), dict(classifiers=[]),
                                 dict(classifiers=["c45"])])
def test_delta_r_settings_are_checked(bad):
    with pytest.raises(ValidationError):
        DeltaRSpec(**bad)


def test_generalized_values_are_read_by_midpoint_and_star_as_missing():
    from ppdp.tasks.utility import decode_generalized

    frame, roles = _data(6)
    frame["a"] = ["[40-50)", "[23-31]", "*", "7", None, "(0-10]"]
    frame["label"] = ["yes", "no", "yes", "no", "yes", "no"]
    decoded, view = decode_generalized(frame, roles)
    assert decoded["a"].tolist()[:2] == [45.0, 27.0] and decoded["a"].tolist()[3] == 7.0
    assert np.isnan(decoded["a"].tolist()[2]) and np.isnan(decoded["a"].tolist()[4])
    assert decoded["a"].tolist()[5] == 5.0
    assert view.get("a").kind is ColumnKind.numeric and decoded["b"].equals(frame["b"])


def test_utility_of_a_recoded_release_trains_and_tests_on_the_same_recoding():
    frame, roles = _data(600, seed=5)
    frame["label"] = np.where(frame["a"] > 0, "yes", "no")  # a alone decides the class
    train, test = split_holdout(frame, "label", 0.2, seed=5)

    def recode(f):  # intervals of width 0.5 on a, b dropped to '*'
        out = f.copy()
        lo = np.floor(out["a"] / 0.5) * 0.5
        out["a"] = [f"[{x:g}-{x + 0.5:g})" for x in lo]
        out["b"] = "*"
        return out

    spec = UtilitySpec(min_accuracy_ratio=0.8)
    report = evaluate_utility(train, recode(train), test, roles, spec, seed=5, test_released=recode(test))
    assert report.accuracy > 0.95 and report.passed  # intervals cut at 0 keep the whole class
    blind = evaluate_utility(train, recode(train).assign(a="*"), test, roles, spec, seed=5,
                             test_released=recode(test).assign(a="*"))
    assert blind.accuracy < report.accuracy and not blind.passed  # nothing left to learn from


def test_the_original_rows_baseline_is_fitted_once_per_rows_and_is_the_same_figure(monkeypatch):
    # ppdp compare checks the utility of every method on the same original rows (issue 33): their baseline models
    # are fitted once; other rows (one value changed) or another seed are fitted again; the figures are those a
    # fresh fit gives
    from ppdp.tasks import utility

    frame, roles = _data()
    train, test = split_holdout(frame, "label", 0.2, seed=1)
    spec = UtilitySpec(min_accuracy_ratio=None, tstr=["j48"])
    fits: list[int] = []
    real = utility.accuracy

    def counted(train_rows, *args, **kwargs):
        fits.append(len(train_rows))
        return real(train_rows, *args, **kwargs)

    monkeypatch.setattr(utility, "accuracy", counted)
    monkeypatch.setattr(utility, "_BASELINES", type(utility._BASELINES)())
    release = train.assign(b=train["b"] + 0.3)
    first = evaluate_utility(train, release, test, roles, spec, seed=1)
    assert len(fits) == 4  # knn1 and j48 on the release, then on the original rows
    second = evaluate_utility(train, release.iloc[::2], test, roles, spec, seed=1)
    assert len(fits) == 6  # the release's two only
    assert (second.accuracy_original, second.tstr[0].accuracy_original) == (
        first.accuracy_original, first.tstr[0].accuracy_original)
    assert [c.original for c in second.per_class] == [c.original for c in first.per_class]
    moved = train.copy()
    moved.iloc[0, 0] += 1.0
    evaluate_utility(moved, release, test, roles, spec, seed=1)
    evaluate_utility(train, release, test, roles, spec, seed=2)
    assert len(fits) == 14  # other rows, another seed: the baselines fitted again
    monkeypatch.setattr(utility, "_BASELINES", type(utility._BASELINES)())
    fresh = evaluate_utility(train, release, test, roles, spec, seed=1)
    assert fresh.model_dump() == first.model_dump()
