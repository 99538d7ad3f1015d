"""AIM beside MST in the differentially private synthesizer (``method.mechanism: aim | auto``): the rule ``auto``
follows (public figures only), the guarantee recorded for AIM is OpenDP's own privacy map of AIM and within the
budget, the faster marginals AIM's scoring reads are the model's own, and (slow) a release with ``auto`` publishes
the expected columns, records the choice, and is re-validated by ``ppdp validate --release``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.sanitize.dp_synthesizer import (
    AUTO_MAX_CANDIDATES,
    DpSynthesizer,
    Plan,
    _Column,
    _workload,
    build,
    choose_mechanism,
)
from tests.test_dp_synthesizer import run_and_read

runner = CliRunner()


def _plan(mechanism: str, columns: int, categories: int = 4, delta: float = 0.0) -> Plan:
    """A plan of ``columns`` categorical columns of ``categories`` public categories each (the last one discovered
    privately when ``delta`` > 0)."""
    cols = [_Column(f"c{i}", False, keys=tuple(f"v{j}" for j in range(categories))) for i in range(columns)]
    if delta:
        cols[-1] = _Column(cols[-1].name, False, keys=None)
    return Plan(columns=tuple(cols), epsilon=1.0, delta=delta, mechanism=mechanism)


def test_auto_follows_its_documented_rule_on_two_workloads():
    # 9 columns (the census demo's width): 9 + 36 + 84 = 129 candidate marginals of 5 cells per column: AIM
    small = _plan("auto", 9)
    assert choose_mechanism(small)[0] == "aim"
    why = choose_mechanism(small)[1]
    assert why.startswith("auto:") and "129 candidate marginals" in why and f"limit {AUTO_MAX_CANDIDATES}" in why
    assert f"{9 * 5 + 36 * 25 + 84 * 125} cells" in why  # the cells of every candidate, missing category included
    # 12 columns: 12 + 66 + 220 = 298 candidates, over the limit: MST
    wide = _plan("auto", 12)
    assert choose_mechanism(wide)[0] == "mst" and "298 candidate marginals" in choose_mechanism(wide)[1]
    # few columns but large domains: 3 columns of 99 categories (100 cells with the missing one): 1,000,000 cells
    assert choose_mechanism(_plan("auto", 3, categories=99))[0] == "mst"
    # asked for: taken as asked, whatever the workload
    assert choose_mechanism(_plan("aim", 12)) == ("aim", "asked for (method.mechanism)")
    assert choose_mechanism(_plan("mst", 3)) == ("mst", "asked for (method.mechanism)")
    # a column whose edges are found under DP counts the bins asked for, before and after they are found
    found = _Column("n", True, bounds=(0.0, 100.0), count=10, candidates=tuple(float(v) for v in range(1, 100)))
    filled = _Column("n", True, edges=(0.0, 20.0, 50.0, 100.0), bounds=(0.0, 100.0), count=10,
                     candidates=found.candidates)  # equal quantiles merged: 3 bins
    for column in (found, filled):
        plan = Plan(columns=(column, *small.columns[:2]), epsilon=1.0, delta=0.0, mechanism="auto")
        assert (11,) in _workload(plan) and (11, 5, 5) in _workload(plan)
    # public information only: the same plan, the same answer
    assert choose_mechanism(_plan("auto", 9)) == choose_mechanism(small)


@pytest.mark.slow  # two OpenDP constructions (about 3.5 s each) and the imports: 11 to 17 s on the loaded machine
def test_aims_recorded_guarantee_is_opendps_own_map_and_within_the_budget():
    """(epsilon, delta) with a column discovered privately (the pure case: the slow release test below)."""
    import opendp.prelude as dp

    from ppdp.tasks.core.pgm import aim_estimator
    from ppdp.tasks.sanitize.dp_synthesizer import _algorithm, _empty_frame

    delta = 1e-7
    plan = _plan("aim", 3, delta=delta)
    assert _algorithm(plan).estimator is aim_estimator and _algorithm(_plan("mst", 3)).estimator is not aim_estimator
    built = build(plan)
    assert built.epsilon_spent <= plan.epsilon and built.delta_spent <= plan.delta
    assert built.epsilon_spent > 0.99 * plan.epsilon  # AIM's privacy filter spends up to the budget, not a part
    # the same query written as OpenDP's documentation writes it, with OpenDP's AIM as shipped (its own estimator)
    context = dp.Context.compositor(data=_empty_frame(plan), privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(epsilon=1.0, delta=delta))
    query = context.query(epsilon=1.0, delta=delta)
    shipped = query.contingency_table(keys=plan.keys(), algorithm=dp.mbi.AIM()).resolve()  # type: ignore[attr-defined]
    spent = shipped.map(context.d_in)
    assert (built.epsilon_spent, built.delta_spent) == (float(spent[0]), float(spent[1]))


def test_aims_marginals_in_numpy_are_the_models_own():
    """AIM scores every candidate against the fitted model; ppdp computes those marginals in NumPy (see
    ``aim_estimator``): they equal the model's marginals computed the long way (the full joint table, 720 cells),
    for marginals inside and outside the model's cliques, in any column order."""
    import jax.numpy as jnp
    from mbi import CliqueVector, Domain, Factor

    from ppdp.tasks.core.pgm import projecting_model_class

    rng = np.random.default_rng(0)
    domain = Domain.fromdict({"a": 3, "b": 4, "c": 5, "d": 2, "e": 6})
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "e"), ("d",), ("e", "c")]
    arrays = {cl: Factor(domain.project(cl), jnp.asarray(rng.normal(0.0, 2.0, size=domain.project(cl).shape)))
              for cl in cliques}
    potentials = CliqueVector(domain, cliques, arrays)  # log-potentials of a model with a cycle (b, c, e, a)
    model = projecting_model_class()(potentials=potentials, marginals=potentials, total=1000.0)
    names = list(domain.attrs)
    log_joint = np.zeros(domain.shape)
    for cl in cliques:  # each log-potential, its axes in the domain's order, broadcast over the full table
        values = np.transpose(np.asarray(arrays[cl].values), sorted(range(len(cl)), key=lambda i: names.index(cl[i])))
        log_joint = log_joint + values.reshape([domain[a] if a in cl else 1 for a in names])
    joint = np.exp(log_joint) / np.exp(log_joint).sum() * 1000.0
    for attrs in [("a", "c"), ("b", "d", "e"), ("a",), ("b", "a"), ("e", "a", "d"), ("c", "e")]:
        ours = np.asarray(model.project(attrs).values)
        kept = [names.index(a) for a in attrs]
        summed = joint.sum(axis=tuple(i for i in range(len(names)) if i not in kept))  # axes in the domain's order
        theirs = np.transpose(summed, [sorted(kept).index(k) for k in kept])
        assert ours.shape == theirs.shape == tuple(domain[a] for a in attrs)
        assert np.allclose(ours, theirs, rtol=1e-9, atol=1e-9) and abs(ours.sum() - 1000.0) < 1e-6


@pytest.mark.slow  # a flow run with one AIM synthesis on 300 rows of 4 columns, then a re-check: about 60 s loaded
@pytest.mark.usefixtures("prefect_harness")
def test_an_auto_release_runs_aim_records_why_and_revalidates(workspace):
    census = pd.read_csv(workspace.data)
    published = ["age", "sex", "education", "income"]
    census[["person_id", *published]].head(300).to_csv(workspace.data, index=False)
    spec = workspace.spec(
        privacy={"max_epsilon": 2.0},
        method={"name": "dp_synthesizer", "epsilon": 1.0, "delta": 0.0, "mechanism": "auto",
                "bins": {"age": [17, 30, 45, 60, 90]},
                "categories": {"sex": ["Female", "Male"], "income": ["<=50K", ">50K"]}},
        utility={"classifier": "naive_bayes", "test_fraction": 0.1, "min_accuracy_ratio": None})
    folder, manifest, dp = run_and_read(spec, workspace.root)
    assert manifest["method"]["params"]["mechanism"] == "auto"
    assert dp["mechanism"] == "aim" and dp["mechanism_choice"].startswith("auto: AIM's workload")
    assert dp["definition"] == "pure" and 0.99 < dp["epsilon_spent"] <= 1.0 and dp["delta_spent"] == 0.0
    frame = pd.read_parquet(folder / "data.parquet")
    assert list(frame.columns) == published and len(frame) > 200  # the noisy row count of 300 rows
    assert frame["sex"].dropna().isin(["Female", "Male"]).all() and frame["age"].dropna().between(17, 90).all()
    check = runner.invoke(app, ["validate", "--release", str(folder)], catch_exceptions=False)
    assert check.exit_code == 0, check.output
    assert "holds by construction" in check.output and "DOES NOT HOLD" not in check.output


def test_the_api_takes_the_mechanism_and_refuses_an_unknown_one():
    from pydantic import ValidationError

    from ppdp.schemas.params.dp_synthesizer import DpSynthesizerParams

    assert DpSynthesizerParams(epsilon=1.0, mechanism="auto").mechanism == "auto"
    with pytest.raises(ValidationError, match="mechanism"):
        DpSynthesizerParams(epsilon=1.0, mechanism="mwem")  # type: ignore[arg-type]
    frame = pd.DataFrame({"a": ["x", "y"] * 5, "b": ["u", "v", "v", "u", "u"] * 2})
    r = Roles(columns=[ColumnTag(name=c, role=Role.quasi_identifier, kind=ColumnKind.nominal, source="declared",
                                 reason="test") for c in frame.columns])
    plan = DpSynthesizer(epsilon=1.0, delta=0.0, mechanism="auto",
                         categories={"a": ["x", "y"], "b": ["u", "v"]}).plan(frame, r)
    assert plan.mechanism == "auto" and choose_mechanism(plan)[0] == "aim"
