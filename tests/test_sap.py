"""SAP (Peters 2011): BORE's ranking, the S1 and S2 suppressions, the release's bookkeeping, and the overlap
distance 1-NN of the paper's evaluation (benchmarks/sap_evaluation.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.sanitize.sap import Sap, bore_ranks, bore_rules, share, suppress_s1, suppress_s2

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the evaluation code lives in benchmarks/, beside the package
    sys.path.insert(0, str(REPO))

from benchmarks.sap_evaluation import (  # noqa: E402
    class_measures,
    cross_validate,
    nn1_predict,
    overlap_distances,
    quartiles,
)


def roles_for(frame: pd.DataFrame, cls: str = "label", numeric: tuple[str, ...] = ()) -> Roles:
    cols = [ColumnTag(name=c, role=Role.quasi_identifier,
                      kind=ColumnKind.numeric if c in numeric else ColumnKind.nominal, source="declared", reason="t")
            for c in frame.columns if c != cls]
    cols.append(ColumnTag(name=cls, role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"))
    return Roles(columns=cols)


def weather() -> pd.DataFrame:
    """8 rows: 4 'yes', 4 'no'. outlook: sunny x3 / rain x1 in yes, sunny x1 / rain x3 in no. wind: 'calm' in 3
    yes and 3 no rows, 'gale' once in yes only, 'storm' once in no only."""
    return pd.DataFrame({
        "outlook": ["sunny", "sunny", "sunny", "rain", "sunny", "rain", "rain", "rain"],
        "wind": ["gale", "calm", "calm", "calm", "calm", "calm", "calm", "storm"],
        "label": ["yes"] * 4 + ["no"] * 4,
    })


def synthetic(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    return pd.DataFrame({
        "x": np.where(label == "a", rng.choice(["p", "q"], n, p=[0.8, 0.2]), rng.choice(["p", "q", "r"], n)),
        "y": rng.integers(0, 4, n),
        "z": rng.choice(["u", "v"], n),
        "label": label,
    })


# -- BORE ----------------------------------------------------------------------------------------------------------
def test_bore_ranks_match_the_hand_computation():
    """Figure 3.1 by hand, best = 'yes' (4 of 8 rows, so p_best = p_rest = 1/2):
    sunny: like(best) = 3/4 * 1/2 = 3/8, like(rest) = 1/4 * 1/2 = 1/8, rank = (3/8)^2 / (4/8) = 9/32;
    rain:  like(best) = 1/8, like(rest) = 3/8, rank = (1/8)^2 / (4/8) = 1/32."""
    frame = weather()
    ranks = bore_ranks(frame["outlook"], (frame["label"] == "yes").to_numpy())
    assert ranks["sunny"] == pytest.approx(9 / 32)
    assert ranks["rain"] == pytest.approx(1 / 32)


def test_bore_support_beats_a_rare_pure_value():
    """'gale' occurs once, only in best: P(best|gale) = 1 (equation 3.1) but rank = (1/8)^2 / (1/8) = 1/8;
    'calm' has P(best|calm) = 1/2 but rank = (3/8)^2 / (6/8) = 3/16 > 1/8: the support term (equation 3.2) makes
    the frequent value the rule, as the paper intends ("Bayes theorem ... is distracted by low frequency
    evidence")."""
    frame = weather()
    ranks = bore_ranks(frame["wind"], (frame["label"] == "yes").to_numpy())
    assert ranks["gale"] == pytest.approx(1 / 8)
    assert ranks["calm"] == pytest.approx(3 / 16)
    assert ranks["storm"] == 0.0
    rules = bore_rules(frame, ["outlook", "wind"], frame["label"])
    assert rules == {"no": {"outlook": "rain", "wind": "calm"}, "yes": {"outlook": "sunny", "wind": "calm"}}


def test_bore_ignores_missing_values():
    frame = weather()
    frame.loc[[1, 2, 4], "outlook"] = np.nan  # sunny is left once, in yes (row 0); |best| and |data| unchanged
    ranks = bore_ranks(frame["outlook"], (frame["label"] == "yes").to_numpy())
    assert set(ranks.index) == {"sunny", "rain"}
    # sunny: 1 in yes, 0 in no -> (1/8)^2 / (1/8) = 1/8; rain: 1 in yes, 3 in no -> (1/8)^2 / (4/8) = 1/32
    assert ranks["sunny"] == pytest.approx(1 / 8) and ranks["rain"] == pytest.approx(1 / 32)


# -- suppression ---------------------------------------------------------------------------------------------------
def test_share_is_the_ceiling_without_floating_point_overshoot():
    assert share(0.3, 10) == 3  # 0.3 * 10 is 3.0000000000000004 in floating point
    assert share(0.1, 11) == 2 and share(0.0, 50) == 0 and share(0.2, 0) == 0 and share(0.99, 3) == 3


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=4), rate=st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.55]),
       seed=st.integers(0, 1000))
def test_s2_suppresses_exactly_the_rate_share_of_each_class(sizes, rate, seed):
    labels = pd.Series(np.repeat([f"c{i}" for i in range(len(sizes))], sizes))
    labels = labels.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    mask = suppress_s2(labels, rate, np.random.default_rng(seed))
    for i, size in enumerate(sizes):
        assert int(mask[(labels == f"c{i}").to_numpy()].sum()) == math.ceil(round(rate * size, 9))


def test_s2_release_blanks_only_the_class_of_the_rows_handed_to_it():
    frame = synthetic(200, 3)
    train, test = frame.iloc[:150], frame.iloc[150:]
    out = Sap(scenario="S2", rate=0.2, seed=5).sanitize(train, roles_for(frame))
    assert len(out.frame) == len(train) and sorted(out.row_source.tolist()) == list(range(len(train)))
    source = train.reset_index(drop=True).iloc[out.row_source].reset_index(drop=True)
    blank = out.frame["label"].isna().to_numpy()
    for c, size in train["label"].value_counts().items():
        assert int(blank[(source["label"] == c).to_numpy()].sum()) == math.ceil(round(0.2 * size, 9))
    pd.testing.assert_frame_equal(out.frame.drop(columns="label"), source.drop(columns="label"), check_dtype=False)
    assert (out.frame["label"][~blank].to_numpy() == source["label"][~blank].to_numpy()).all()
    assert out.suppressed_cells == {"label": int(blank.sum())}
    assert set(out.treatments.values()) == {"kept"}
    assert test.equals(frame.iloc[150:])  # nothing outside the rows handed over is touched


def test_s1_prose_suppresses_rule_matching_values_and_appendix_random_positions():
    frame = synthetic(300, 7)
    labels, cols, rate = frame["label"], ["x", "y", "z"], 0.3
    rules = bore_rules(frame, cols, labels)
    prose = suppress_s1(frame, cols, labels, rate, np.random.default_rng(1), "prose")
    appendix = suppress_s1(frame, cols, labels, rate, np.random.default_rng(1), "appendix")
    for c in sorted(labels.unique()):
        in_c = (labels == c).to_numpy()
        for col in cols:
            matching = in_c & (frame[col] == rules[c][col]).to_numpy()
            # prose: only the class's rule value, in the class's rows, ceil(p x matching) of them
            assert not (prose[col] & in_c & ~matching).any()
            assert int(prose[col][matching].sum()) == math.ceil(round(rate * matching.sum(), 9))
            # appendix: ceil(p x class size) random positions of the class, whatever their value
            assert int(appendix[col][in_c].sum()) == math.ceil(round(rate * in_c.sum(), 9))
    hits_off_rule = sum(int((appendix[col] & ~(frame[col] == frame["label"].map(
        {c: rules[c][col] for c in rules})).to_numpy()).sum()) for col in cols)
    assert hits_off_rule > 0  # the appendix reading ignores the rule


def test_s1_release_counts_suppressed_cells_per_column():
    frame = synthetic(120, 2)
    frame.loc[[0, 5], "z"] = np.nan  # missing before SAP: not SAP's suppression
    for variant in ("prose", "appendix"):
        out = Sap(scenario="S1", rate=0.3, variant=variant, seed=4).sanitize(frame, roles_for(frame))
        source = frame.iloc[out.row_source].reset_index(drop=True)
        newly = {c: int((out.frame[c].isna() & source[c].notna()).sum()) for c in frame.columns}
        assert out.suppressed_cells == {c: n for c, n in newly.items() if n}
        assert out.frame["label"].equals(source["label"])  # S1 never touches the class
        kept = out.frame[["x", "y", "z"]].notna().to_numpy()
        assert (out.frame[["x", "y", "z"]].to_numpy()[kept] == source[["x", "y", "z"]].to_numpy()[kept]).all()
        assert str(out.frame["y"].dtype) == "Int64"  # an integer column with blanks stays integer
        ids = equivalence_class_ids(out.frame, ["x", "y", "z"])  # the same partition (ids may be renumbered)
        pairs = len(set(zip(out.group.tolist(), ids.tolist())))
        assert pairs == len(set(ids.tolist())) == len(set(out.group.tolist()))


def test_same_seed_same_release_and_rate_zero_changes_nothing():
    frame = synthetic(90, 1)
    roles = roles_for(frame)
    for scenario in ("S1", "S2"):
        a = Sap(scenario=scenario, rate=0.2, seed=9).sanitize(frame, roles)
        b = Sap(scenario=scenario, rate=0.2, seed=9).sanitize(frame, roles)
        pd.testing.assert_frame_equal(a.frame, b.frame)
        other = Sap(scenario=scenario, rate=0.2, seed=10).sanitize(frame, roles)
        a_sorted = a.frame.iloc[np.argsort(a.row_source)].reset_index(drop=True)
        o_sorted = other.frame.iloc[np.argsort(other.row_source)].reset_index(drop=True)
        assert not a_sorted.isna().equals(o_sorted.isna())  # another seed blanks other cells
        zero = Sap(scenario=scenario, rate=0.0, seed=9).sanitize(frame, roles)
        assert zero.suppressed_cells == {}
        pd.testing.assert_frame_equal(zero.frame.iloc[np.argsort(zero.row_source)].reset_index(drop=True), frame)


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5])
def test_a_rate_outside_zero_one_is_one_spec_error(rate):
    frame = synthetic(30, 0)
    with pytest.raises(SpecError) as err:
        Sap(scenario="S2", rate=rate).sanitize(frame, roles_for(frame))
    assert "rate" in str(err.value) and "\n" not in str(err.value)


def test_missing_rate_scenario_or_class_are_clear_errors():
    frame = synthetic(30, 0)
    with pytest.raises(SpecError, match="rate is required"):
        Sap(scenario="S2").sanitize(frame, roles_for(frame))
    with pytest.raises(SpecError, match="scenario"):
        Sap(scenario="S3", rate=0.1).sanitize(frame, roles_for(frame))
    with pytest.raises(InputError, match="missing value"):
        Sap(scenario="S2", rate=0.1).sanitize(frame.assign(label=np.where(frame.index < 3, None, frame["label"])),
                                              roles_for(frame))


# -- the evaluation ------------------------------------------------------------------------------------------------
def test_overlap_distance_and_1nn_on_a_hand_example():
    train = pd.DataFrame({"colour": ["red", "blue", None], "size": [0.0, 10.0, 5.0]})
    test = pd.DataFrame({"colour": ["red", "blue"], "size": [2.0, np.nan]})
    d = overlap_distances(train, test, ["colour", "size"], numeric=["size"])
    # range of size over the training rows: 10. test 0: red/2 -> train 0: 0 + 0.2; train 1: 1 + 0.8; train 2:
    # 1 (missing colour) + 0.3. test 1: blue/missing -> 1 + 1; 0 + 1; 1 + 1 (a missing value matches nothing)
    assert np.allclose(d, [[0.2, 1.8, 1.3], [2.0, 1.0, 2.0]])
    assert list(nn1_predict(train, np.array(["x", "y", "z"]), test, ["colour", "size"], ["size"])) == ["x", "y"]
    # ties go to the first training row
    tie = pd.DataFrame({"colour": ["green", "green"], "size": [1.0, 1.0]})
    assert list(nn1_predict(tie, np.array(["first", "second"]), tie.iloc[:1], ["colour", "size"], ["size"])) \
        == ["first"]
    # a missing value also fails to match another missing value
    both = pd.DataFrame({"colour": [None]})
    assert overlap_distances(both, both, ["colour"])[0, 0] == 1.0


def test_class_measures_and_quartiles():
    m = class_measures(["a", "a", "a", "b", "b"], ["a", "b", "a", "b", "a"], ["a", "b"])
    # class a: TP 2, FN 1, FP 1, TN 1
    assert m["a"] == pytest.approx({"acc": 3 / 5, "pd": 2 / 3, "prec": 2 / 3, "pf": 1 / 2})
    assert m["b"] == pytest.approx({"acc": 3 / 5, "pd": 1 / 2, "prec": 1 / 2, "pf": 1 / 3})
    assert quartiles(np.arange(50.0), "lower")[1] == 24.0 and quartiles(np.arange(50.0))[1] == 24.5


def test_cross_validation_sanitizes_training_rows_only():
    frame = synthetic(60, 4)
    roles = roles_for(frame)
    seen: list[pd.DataFrame] = []

    class Spy(Sap):
        def _sanitize(self, f, r, rng):
            seen.append(f.copy())
            return super()._sanitize(f, r, rng)

    table = cross_validate(frame, roles, lambda rate, s: Spy(scenario="S2", rate=rate, seed=s), [0.0, 0.3],
                           repeats=1, folds=3, seed=0, order="by_class")
    assert len(seen) == 6 and all(len(f) == 40 for f in seen)  # 3 folds x 2 rates, 2/3 of the rows each
    assert set(table["rate"]) == {0.0, 0.3} and len(table) == 3 * 2 * 3
    at = table.groupby("rate")["train_rows"].first()
    assert at[0.0] == 40 and at[0.3] < 40  # the rows whose class was blanked leave the model
