"""One contract for every sanitizer in the registry: a new method is covered by registering it.

Same seed -> same output (differentially private methods, whose noise takes no seed: the same seed gives fresh noise,
so two runs differ); another seed -> different output (randomized methods); the input frame is unchanged;
an empty input is an InputError; no message quotes a cell value (planted canary); parameters follow
scikit-learn's contract (get_params(deep=True), set_params, clone) and equal the method's parameter model; every
claim of the release is re-checked independently of the method's own numbers (k re-measured on the published
table, rows standing for input rows, generating groups of at least k records); the privacy property of the
unit holds on frames with shuffled, non-default indexes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import UNITS
from ppdp.schemas.release import DpRelease, PartsRelease
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.schemas.spec import GATE_UNITS
from ppdp.tasks.core.errors import InputError, PpdpError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.sanitize.base import GROUP_COLUMN, Release, Sanitizer
from ppdp.tasks.sanitize.registry import REGISTRY
from ppdp.tasks.shapes import shape_of

DP_BINS = {"age": [18, 30, 40, 50, 60, 80], "score": [-4.0, -1.0, 0.0, 1.0, 2.0, 6.0]}  # public edges, not data's
# per method: the parameter sets the contract runs with (its variants); a registered method without cases fails
CASES = {
    "condensation": [dict(variant=v, k=5) for v in ("class_wise", "modified", "original")],
    "dp_synthesizer": [dict(epsilon=1.0, bins=DP_BINS),
                       dict(epsilon=2.0, delta=0.0, bins=DP_BINS, categories={"city": ["a", "b", "c"],
                                                                              "label": ["p", "q"]}, samples=80)],
    "dmpd": [dict(k=5, population=10, generations=5, inducer="naive_bayes"),
             dict(k=3, population=8, generations=4, inducer="tree", inner_folds=2)],
    "generalization": [dict(k=5, suppression_limit=0.1), dict(k=3, l=2, suppression_limit=0.2, measure="entropy")],
    "mdav": [dict(k=5)],
    "mondrian": [dict(k=5), dict(k=3, mode="relaxed", hierarchies={"city": {"type": "flat"}})],
    "noise": [dict(kind="additive", scale=0.3), dict(kind="multiplicative", scale=0.2, distribution="laplace")],
    "perturbation_tree": [dict(leaf_size=5, k=3),
                          dict(leaf_size=6, k=2, aggregation="microaggregation", split="median")],
    "pram": [dict(pd=0.5, columns="categorical"), dict(pd=0.2, alpha=1.0, columns="categorical")],
    "rank_swap": [dict(p=15.0), dict(p=40.0)],
    "sample_generation": [dict(), dict(samples=50, max_draws_factor=500, tree_min_samples_leaf=5)],
    "sap": [dict(scenario="S1", rate=0.3), dict(scenario="S1", rate=0.2, variant="appendix"),
            dict(scenario="S2", rate=0.1)],
    "svd": [dict(rank=1), dict(rank=2, sparsity=0.3)],
    "top_bottom_coding": [dict(quantile=0.9), dict(quantile=0.75, kind="top", replacement="mean",
                                                   limits={"score": {"top": 1.5}})],
    "uma": [dict(k=5), dict(k=3, columns="sensitive", partition="optimal")],
}
CANARY = "Zq9-canary-417"
# methods whose every run takes seconds: the tests that run them are slow (.ci/run runs them; make test does not)
SLOW_TO_RUN = {"dp_synthesizer": "OpenDP builds the measurement (a numeric search of noise scales) and Private-PGM "
                                 "fits a graphical model with JAX: 5 to 10 s a run"}


def all_cases(runs: bool = True):
    """Every (method, parameters) case; ``runs``: the test runs the method (a method of :data:`SLOW_TO_RUN` is then
    marked slow)."""
    missing = set(REGISTRY) - set(CASES)
    assert not missing, f"register contract cases for {missing}"
    return [pytest.param(name, params, id=f"{name}-{i}",
                         marks=[pytest.mark.slow] if runs and name in SLOW_TO_RUN else [])
            for name in REGISTRY for i, params in enumerate(CASES[name])]


def make_frame(n: int, seed: int, canary: bool = False) -> tuple[pd.DataFrame, Roles]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "score": rng.normal(0, 1, n),
        "city": rng.choice(["a", "b", "c"], n),
        "label": rng.choice(["p", "q"], n, p=[0.6, 0.4]),
    })
    frame.loc[frame["label"].value_counts().idxmin() == frame["label"], "score"] += 2.0
    if canary:
        frame["city"] = frame["city"].astype(object)
        frame.loc[frame.index[:3], "city"] = CANARY
    frame.index = rng.permutation(n) * 3 + 7
    roles = Roles(columns=[
        ColumnTag(name="age", role=Role.quasi_identifier, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="score", role=Role.sensitive, kind=ColumnKind.numeric, source="declared", reason="t"),
        ColumnTag(name="city", role=Role.quasi_identifier, kind=ColumnKind.nominal, source="declared", reason="t"),
        ColumnTag(name="label", role=Role.class_, kind=ColumnKind.nominal, source="declared", reason="t"),
    ])
    return frame, roles


def recheck(frame: pd.DataFrame, out: Release, roles: Roles, k: int | None) -> None:
    """The release's claims re-checked from its published table and its own bookkeeping, not the method's
    numbers."""
    n = len(frame)
    assert out.unit in UNITS
    assert isinstance(out.frame.index, pd.RangeIndex)
    if isinstance(out, PartsRelease):  # a partitioned release (DMPD): each part re-checked over the QIs it publishes
        recheck_parts(frame, out, roles, k)
        return
    assert len(out.row_source) == len(out.frame)
    assert set(out.treatments) >= set(frame.columns)
    if out.unit == "generating_group":
        assert GROUP_COLUMN in out.frame.columns
        sizes = out.frame[GROUP_COLUMN].value_counts()
        assert sizes.min() >= k  # re-checked on the published column
        assert np.array_equal(out.frame[GROUP_COLUMN].to_numpy(), out.group)
        assert len(out.input_group) == n and np.bincount(out.input_group[out.input_group >= 0]).min() >= k
        first = pd.unique(out.frame[GROUP_COLUMN])
        assert list(first) == list(range(len(first)))  # ids numbered in order of appearance: no input order
    elif out.unit == "equivalence_class":
        ids = equivalence_class_ids(out.frame, [q for q in roles.quasi_identifiers])
        assert k is None or np.bincount(ids).min() >= k  # None: no k claim (SAP); k is then what is measured
        kept = out.row_source[out.row_source >= 0]
        assert len(set(kept.tolist())) == len(kept)
    elif out.unit == "differential_privacy":  # every row generated; the guarantee as the mechanism was built
        assert bool(np.all(out.row_source == -1)) and out.group is None
        assert isinstance(out, DpRelease)
        assert out.dp is not None and out.dp.epsilon_spent <= out.dp.epsilon * (1 + 1e-9)
        assert out.dp.delta_spent <= out.dp.delta * (1 + 1e-9) or out.dp.delta_spent == 0.0
    else:
        generated = bool(np.all(out.row_source == -1))  # sample generation: no row stands for an input row
        assert generated or sorted(out.row_source.tolist()) == list(range(n))  # else one row per input row
        assert out.group is None


def recheck_parts(frame: pd.DataFrame, out: Release, roles: Roles, k: int | None) -> None:
    """Disjoint feature subsets of the input's columns, the class in each, every input row in each part once, each
    part k-anonymous over every quasi-identifier of the input it publishes (not the method's own list)."""
    cls = roles.class_column
    seen: list[str] = []
    for part in out.parts:
        features = [c for c in part.frame.columns if c != cls]
        assert cls in part.frame.columns and set(features) <= set(frame.columns) - set(roles.identifiers)
        seen += features
        assert len(part.frame) == len(frame)
        assert sorted(part.frame[cls].astype(str)) == sorted(frame[cls].astype(str))
        qis = [q for q in roles.quasi_identifiers if q in part.frame.columns]
        assert set(part.quasi_identifiers) == set(qis)
        if qis and k is not None:
            assert np.bincount(equivalence_class_ids(part.frame, qis)).min() >= k
    assert len(seen) == len(set(seen)) and seen  # disjoint, not empty
    assert len(out.frame) == 0 and len(out.row_source) == 0
    assert set(out.treatments) >= set(frame.columns)
    assert {c for c, t in out.treatments.items() if t != "dropped"} == set(seen) | {cls}


def published_tables(cls, out: Release) -> list[pd.DataFrame]:
    return shape_of(cls).frames(out)


@pytest.mark.parametrize(("name", "params"), all_cases())
def test_contract(name, params):
    frame, roles = make_frame(120, 1)
    before = frame.copy(deep=True)
    cls = REGISTRY[name]
    sanitizer = cls(**params, seed=11)
    kept = sanitizer.get_params(deep=True)
    out = sanitizer.sanitize(frame, roles)
    assert sanitizer.get_params(deep=True) == kept  # no hidden state written into parameters
    pd.testing.assert_frame_equal(frame, before)  # input not mutated
    again = cls(**params, seed=11).sanitize(frame, roles)
    if cls.reproducible:
        for a, b in zip(published_tables(cls, out), published_tables(cls, again), strict=True):
            pd.testing.assert_frame_equal(a, b)  # same seed, same release
    else:  # DP noise takes no seed (a published seed would let anyone recompute it): the same seed, fresh noise
        assert not out.frame.equals(again.frame)
    other = cls(**params, seed=12).sanitize(frame, roles)
    # a partition search may reach the same partition from any seed on 3 features
    if cls.randomized and not isinstance(out, PartsRelease):
        assert not out.frame.equals(other.frame)
    if not isinstance(out, PartsRelease):
        published = [c for c in out.frame.columns if c != GROUP_COLUMN]
        assert published == list(frame.columns)
    assert out.unit == cls.unit
    assert isinstance(out, shape_of(cls).release_type)  # the kind of release its shape measures and publishes
    recheck(frame, out, roles, params.get("k"))


@pytest.mark.parametrize(("name", "params"), all_cases(runs=False))
def test_estimator_contract_and_parameter_model(name, params):
    cls = REGISTRY[name]
    sanitizer = cls(**params, seed=3)
    copy = clone(sanitizer)
    assert copy is not sanitizer and copy.get_params() == sanitizer.get_params()
    assert set(cls.param_names()) == set(cls.Params.model_fields) - {"name"} | {"seed"}
    assert cls.Params.model_fields["name"].default == name
    assert set(cls.tunable) <= set(cls.param_names()) and all(v in ("larger", "smaller") for v in cls.tunable.values())
    assert any(cls.unit in units for units in GATE_UNITS.values())
    # what it protects decides the safety floor's rows: every method is held to at least one
    from ppdp.schemas.privacy import floor_rules
    from ppdp.schemas.units import identity_by

    assert cls.protects in ("identity", "attribute")
    assert floor_rules(identity_by(cls.protects, cls.unit)) or cls.protects == "attribute"
    first = next(iter(cls.tunable), cls.param_names()[0])  # no tunable parameter: the first parameter
    value = sanitizer.get_params()[first]
    assert sanitizer.set_params(**{first: value}) is sanitizer
    changed = sanitizer.with_params(seed=99)
    assert changed.seed == 99 and sanitizer.seed == 3
    with pytest.raises(TypeError):
        sanitizer.with_params(no_such_parameter=1)
    frame, roles = make_frame(60, 4)
    for domain in sanitizer.domains(frame, roles).values():
        assert type(domain).__name__ in ("IntRange", "FloatRange", "Lattice")


@pytest.mark.parametrize(("name", "params"), all_cases(runs=False))
def test_empty_input_and_bad_parameters(name, params):
    frame, roles = make_frame(50, 2)
    with pytest.raises(InputError):
        REGISTRY[name](**params, seed=0).sanitize(frame.iloc[:0], roles)
    first = next(iter(REGISTRY[name].tunable), REGISTRY[name].param_names()[0])
    with pytest.raises(PpdpError):  # a parameter outside its model fails before the data are touched
        REGISTRY[name](**{**params, first: -1}, seed=0).sanitize(frame, roles)


@pytest.mark.parametrize(("name", "params"), all_cases())
def test_no_message_quotes_a_cell_value(name, params):
    frame, roles = make_frame(30, 5, canary=True)
    cls = REGISTRY[name]
    for bad in ({**params, **{next(iter(cls.tunable), cls.param_names()[0]): 10**6 if "k" in cls.tunable else -1}},):
        try:
            cls(**bad, seed=0).sanitize(frame, roles)
        except PpdpError as exc:
            assert CANARY not in str(exc)
    broken = frame.assign(label=np.nan) if cls.needs_class or name == "condensation" else frame.iloc[:1]
    try:
        cls(**params, seed=0).sanitize(broken, roles)
    except PpdpError as exc:
        assert CANARY not in str(exc)


def _property_holds(name, params, n, seed, k):
    frame, roles = make_frame(n, seed)
    k = min(k, int(frame["label"].value_counts().min()))
    cls = REGISTRY[name]
    run = {**params, "k": k} if "k" in cls.tunable else params
    out = cls(**run, seed=seed).sanitize(frame, roles)
    recheck(frame, out, roles, k if "k" in cls.tunable else None)


_TABLES = dict(n=st.integers(min_value=40, max_value=200), seed=st.integers(0, 10_000), k=st.integers(2, 15))


@pytest.mark.parametrize(("name", "params"), [c for c in all_cases() if c.values[0] not in SLOW_TO_RUN])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_TABLES)
def test_privacy_property_holds(name, params, n, seed, k):
    _property_holds(name, params, n, seed, k)


@pytest.mark.parametrize(("name", "params"), [c for c in all_cases() if c.values[0] in SLOW_TO_RUN])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_TABLES)
def test_privacy_property_holds_for_the_slow_methods(name, params, n, seed, k):
    """The same property on fewer random tables (each run takes seconds; its claim holds by construction)."""
    _property_holds(name, params, n, seed, k)


def test_the_registry_and_the_schema_name_the_same_methods():
    """The spec's method union (:data:`ppdp.schemas.params.PARAMS`) and the registry name the same methods in the
    same order, each sanitizer's ``Params`` is the schema's model (from its module in ``ppdp.schemas.params``), and
    the traits the spec checks on its own are the model's."""
    from ppdp.schemas.params import PARAMS

    assert list(PARAMS) == list(REGISTRY)
    for name, cls in REGISTRY.items():
        assert cls.Params is PARAMS[name], name
        assert PARAMS[name].__module__ == f"ppdp.schemas.params.{name}", name
        for trait in ("unit", "tunable", "lattice_parameters", "keeps_groups"):
            assert getattr(cls, trait) == getattr(PARAMS[name], trait), (name, trait)


def test_a_new_method_needs_only_its_module_and_a_registry_line():
    """The spec's method union, the JSON Schema and the gate table name every registered method."""
    from ppdp.schemas.export import release_schema_json
    from ppdp.schemas.spec import ReleaseSpec

    schema = release_schema_json()
    for cls in REGISTRY.values():
        assert issubclass(cls, Sanitizer)
        assert cls.Params.__name__ in schema
    union = ReleaseSpec.model_fields["method"].annotation
    assert {m.model_fields["name"].default for m in union.__args__} == set(REGISTRY)
