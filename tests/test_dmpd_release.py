"""DMPD as a release method (issue 11, paper 001): the release is a set of tables, one per feature subset, each
k-anonymous over its own quasi-identifiers (re-counted here, not by ppdp), with no key or row order that joins two
of them; the partition and the accuracy-against-k Pareto front are in the manifest; `ppdp validate --release`
re-checks every part; the audit trail signs every part; refusals publish nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdp.api import roles_for
from ppdp.flows.cli import app
from ppdp.tasks.core.errors import InputError, ReleaseRejected
from ppdp.tasks.publish import load_manifest
from ppdp.tasks.report import report_markdown
from ppdp.tasks.reproduce import recheck_release
from ppdp.tasks.sanitize.dmpd import Dmpd

runner = CliRunner()
QIS = ["age", "sex", "zip", "race", "marital_status", "education", "occupation"]
FAST = {"name": "dmpd", "inducer": "naive_bayes", "population": 12, "generations": 6}


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def columns() -> dict:
    return {"person_id": "identifier", "name": "identifier", "income": "class", "hours_per_week": "other",
            **{q: "quasi_identifier" for q in QIS}}


def publish(workspace, name: str = "dmpd", **overrides) -> Path:
    spec = workspace.spec(f"{name}.yaml", dataset=name, columns=columns(), method=FAST,
                          **{"privacy__k": 20, **overrides})
    result = ppdp("run", spec)
    assert result.exit_code == 0, result.output
    [folder] = sorted(p.parent for p in (workspace.root / name).glob("*/manifest.json"))
    return folder


def census_frame(n: int = 600, seed: int = 3) -> tuple[pd.DataFrame, object]:
    from tests.conftest import census

    frame = census().drop(columns=["person_id", "name"]).head(n).reset_index(drop=True)
    return frame, roles_for(frame, quasi_identifiers=QIS, class_column="income")


# -- the method on its own (no Prefect) -------------------------------------------------------------------------
def test_parts_are_k_anonymous_disjoint_sorted_and_intervals_never_rarer_than_k():
    frame, roles = census_frame()
    k = 15
    out = Dmpd(k=k, inducer="tree", population=12, generations=6, inner_folds=2, seed=5).sanitize(frame, roles)
    seen = []
    for part in out.parts:
        qis = [c for c in part.frame.columns if c in QIS]
        assert list(part.quasi_identifiers) == qis
        if qis:  # re-counted here, missing as a value
            assert part.frame[qis].astype(str).value_counts().min() >= k
        seen += [c for c in part.frame.columns if c != "income"]
        assert part.frame["income"].value_counts().sort_index().equals(frame["income"].value_counts().sort_index())
        for c in part.frame.columns:  # every published value of every column (intervals too) occurs >= k times
            if c != "income":
                assert part.frame[c].notna().any() and part.frame[c].value_counts().min() >= k, c
    assert len(seen) == len(set(seen)) and set(seen) <= set(frame.columns)
    assert out.partition is not None and [sorted(s) for s in out.partition.subsets] == \
        [sorted(c for c in p.frame.columns if c != "income") for p in out.parts]
    assert set(out.partition.dropped) == set(frame.columns) - set(seen) - {"income"}


def test_no_part_keeps_the_input_row_order():
    """Two parts sorted by their own values: a row's position in one part tells nothing about the other."""
    frame, roles = census_frame()
    out = Dmpd(k=10, population=10, generations=4, inducer="naive_bayes", seed=1).sanitize(frame, roles)
    for part in out.parts:
        features = [c for c in part.frame.columns if c != "income"]
        if not features:
            continue
        first = part.frame[features[0]]
        runs = (first != first.shift()).sum()  # a sorted column changes value once per distinct value
        assert runs == first.nunique(dropna=False)


def test_same_seed_same_release_and_no_feature_is_an_identifier():
    frame, roles = census_frame()
    frame = frame.assign(person_id=[f"P{i}" for i in range(len(frame))])
    roles = roles_for(frame, quasi_identifiers=QIS, class_column="income", identifiers=["person_id"])
    a = Dmpd(k=10, population=10, generations=4, seed=9).sanitize(frame, roles)
    b = Dmpd(k=10, population=10, generations=4, seed=9).sanitize(frame, roles)
    for x, y in zip(a.parts, b.parts, strict=True):
        pd.testing.assert_frame_equal(x.frame, y.frame)
    assert all("person_id" not in p.frame.columns for p in a.parts)
    assert a.treatments["person_id"] == "dropped"


def test_pareto_front_is_non_dominated_and_holds_the_chosen_accuracy():
    frame, roles = census_frame()
    out = Dmpd(k=10, population=12, generations=5, inducer="naive_bayes", seed=2).sanitize(frame, roles)
    front = [(p.k, p.accuracy) for p in out.partition.pareto]
    assert front == sorted(front)
    for i, (k, acc) in enumerate(front):
        assert not any(k2 >= k and a2 > acc or k2 > k and a2 >= acc for j, (k2, a2) in enumerate(front) if j != i)
    assert max(a for k, a in front if k >= 10) == pytest.approx(out.partition.fitness)


def test_recode_gives_held_out_rows_the_parts_columns():
    frame, roles = census_frame()
    out = Dmpd(k=10, population=8, generations=3, seed=4).sanitize(frame.iloc[:400], roles)
    recoded = out.recode(frame.iloc[400:])
    for part in out.parts:
        assert list(recoded[part.name].columns) == list(part.frame.columns)
        assert len(recoded[part.name]) == 200
        for c in part.frame.columns:  # interval labels: the held-out rows get the published intervals only
            if c != "income" and c in ("age", "hours_per_week"):
                assert set(recoded[part.name][c].dropna()) <= set(part.frame[c].dropna())


def test_impossible_k_is_refused_and_no_class_is_an_input_error():
    frame, roles = census_frame(60)
    with pytest.raises(InputError):
        Dmpd(k=100, population=6, generations=2).sanitize(frame, roles)  # fewer rows than k
    only_qis = frame[["zip", "income"]].assign(zip=[f"{i:05d}" for i in range(len(frame))])
    with pytest.raises(ReleaseRejected):  # every zip is unique: no subset holding it can be 5-anonymous
        Dmpd(k=5, population=6, generations=2).sanitize(only_qis, roles_for(only_qis, quasi_identifiers=["zip"],
                                                                           class_column="income"))
    no_class = roles_for(frame, quasi_identifiers=QIS)
    with pytest.raises(InputError):
        Dmpd(k=5, population=6, generations=2).sanitize(frame, no_class)


# -- through the release flow -----------------------------------------------------------------------------------
pytestmark_flow = pytest.mark.usefixtures("prefect_harness")


@pytest.mark.slow  # a whole release (seconds): .ci/run runs it; make test stays under 4 minutes
@pytestmark_flow
def test_release_publishes_parts_that_revalidate_and_verify_and_tampering_shows(workspace):
    folder = publish(workspace)
    files = sorted(p.name for p in folder.iterdir())
    parts = [f for f in files if f.startswith("part-")]
    assert "data.parquet" not in files and parts and {"manifest.json", "report.html", "pareto.png"} <= set(files)
    manifest = load_manifest(folder)
    assert [p.file for p in manifest.parts] == sorted(parts, key=lambda f: int(f[5:-8]))
    assert manifest.partition is not None and manifest.partition.pareto
    published = []
    for record in manifest.parts:
        table = pd.read_parquet(folder / record.file)
        assert list(table.columns) == record.columns and len(table) == record.rows == manifest.rows
        if record.quasi_identifiers:  # re-counted here, not by ppdp
            assert table[record.quasi_identifiers].astype(str).value_counts().min() >= 20
        published += [c for c in table.columns if c != "income"]
        assert "person_id" not in table.columns and "name" not in table.columns
    treatments = {t.name: t.treatment for t in manifest.treatments}
    assert {c for c, t in treatments.items() if t != "dropped"} == set(published) | {"income"}
    raw = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    ks = [p["privacy"]["k"] for p in raw["parts"] if p["quasi_identifiers"]]
    claim = next(c for c in raw["privacy"]["claims"] if c["name"] == "k")
    assert claim["value"] == min(ks) and claim["passed"] and np.all([p["sha256"] for p in raw["parts"]])
    check = recheck_release(folder)
    assert check.holds and any(c.claim.name.startswith("part-1: ") for c in check.checks)
    result = ppdp("validate", "--release", folder)
    assert result.exit_code == 0 and "HOLDS" in result.output and "tables" in result.output
    assert ppdp("audit", "verify", "--root", workspace.root).exit_code == 0
    assert ppdp("report", folder).exit_code == 0  # the signed report.html is what its folder renders
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "Accuracy against k" in html and "part-1.parquet" in html
    # the header counts records, tables and rows; no placeholder, no data.parquet, no search "in 0.0 s"
    header = html[html.index('<p class="sub">'):html.index("</p>", html.index('<p class="sub">'))]
    total = sum(p.rows for p in manifest.parts)
    assert f"· {manifest.rows:,} records in {len(manifest.parts)} tables, {total:,} rows ·" in header, header
    assert "each part's quasi-identifiers" not in html and "data.parquet" not in html
    assert f"The {total:,} published rows of the {len(manifest.parts)} tables fall into" in html
    assert "each table's own quasi-identifiers: part-1 by " in html
    assert re.search(r"generations in (under 1 ms|\d+ ms|\d+\.\d s|\d+ min \d+ s|\d+ h \d+ min);", html)
    assert " in 0.0 s" not in html
    md = report_markdown(manifest)  # the Prefect markdown artifact: the same counts; "sees:**Its" stayed unbolded
    assert f"{manifest.rows:,} records in {len(manifest.parts)} tables, {total:,} rows, " in md
    assert "**What an attacker sees:** Its " in md
    # tampering: one part cut to one row (its classes now of size 1)
    record = next(p for p in manifest.parts if p.quasi_identifiers)
    pd.read_parquet(folder / record.file).iloc[:1].to_parquet(folder / record.file)
    result = ppdp("validate", "--release", folder)
    assert result.exit_code == 3 and "DOES NOT HOLD" in result.output, result.output
    verify = ppdp("audit", "verify", "--root", workspace.root)
    assert verify.exit_code == 1 and record.file in verify.output


@pytestmark_flow
def test_refused_release_writes_nothing(workspace):
    spec = workspace.spec("big.yaml", dataset="big", columns=columns(), method=FAST, privacy__k=100_000)
    result = ppdp("run", spec)
    assert result.exit_code in (2, 3), result.output
    assert "Traceback" not in result.output and len([ln for ln in result.output.splitlines()
                                                     if ln.startswith("ppdp: ")]) == 1
    assert not list(workspace.root.glob("big/**/*.parquet")) and not list(workspace.root.glob("big/**/manifest.json"))


def test_a_tuning_evaluation_measures_the_parts():
    from ppdp.schemas.privacy import PrivacyThresholds
    from ppdp.tasks.tune import evaluate_value

    frame, roles = census_frame()
    train, test = frame.iloc[:450].reset_index(drop=True), frame.iloc[450:].reset_index(drop=True)
    ev = evaluate_value(Dmpd(population=8, generations=3, seed=1), "k", 12, train, test, roles, "j48",
                        policy=PrivacyThresholds(k=12), check_policy=True)
    assert ev.privacy is not None and ev.privacy >= 12 and ev.meets_policy is True
    assert 0.5 < ev.accuracy <= 1.0
    strict = evaluate_value(Dmpd(population=8, generations=3, seed=1), "k", 12, train, test, roles, "j48",
                            policy=PrivacyThresholds(k=int(ev.privacy) + 1), check_policy=True)
    assert strict.meets_policy is False  # the smallest part class is below this policy's k


def test_sensitive_gates_apply_to_the_parts_that_publish_a_sensitive_column():
    from ppdp.schemas.privacy import PrivacyThresholds
    from ppdp.tasks.privacy.parts import measure_parts

    rng = np.random.default_rng(0)
    n = 120
    frame = pd.DataFrame({"age": rng.choice(["a", "b"], n), "zip": rng.choice(["z1", "z2", "z3"], n),
                          "diagnosis": rng.choice(["x", "y", "w"], n), "income": rng.choice(["lo", "hi"], n)})
    roles = roles_for(frame, quasi_identifiers=["age", "zip"], sensitive=["diagnosis"], class_column="income")
    policy = PrivacyThresholds(k=5, l=2)
    with_sa = [("part-1", frame[["age", "diagnosis", "income"]], ["age"]),
               ("part-2", frame[["zip", "income"]], ["zip"])]
    combined, each = measure_parts(with_sa, roles, policy)
    assert [sorted(c.name for c in r.claims) for r in each] == [["k", "l"], ["k"]]  # part-2 discloses no diagnosis
    l_claim = next(c for c in combined.claims if c.name == "l")
    assert l_claim.passed and l_claim.worst.startswith("part-1")
    assert l_claim.value == frame.groupby("age")["diagnosis"].nunique().min()
    none = [("part-1", frame[["age", "income"]], ["age"]), ("part-2", frame[["zip", "income"]], ["zip"])]
    combined, _ = measure_parts(none, roles, policy)  # l set but no part publishes the sensitive column: fail closed
    assert not next(c for c in combined.claims if c.name == "l").passed
