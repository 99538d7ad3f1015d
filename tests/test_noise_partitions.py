"""Noise on a partitioned input (issue 32): the capability (tasks/sanitize/noise_partitions.py) and the exact
record-level figures across partitions (tasks/distributed/nearest.py).

Fast: the figures of in-memory blocks (input partitions against published blocks) equal the one-table measure's on
the concatenated frames (hypothesis over small random frames); the per-partition noise is reproducible by seed and
uses the whole input's scales. Slow: a folder of 3 Parquet files released with noise through the flow, its manifest's
record figures equal to measuring the concatenated tables in memory; the same spec refused by the floor writes
nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.release import Release
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.counts import column_counts, merged_column_counts
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.distributed import nearest
from ppdp.tasks.privacy.attacker import exact_copy_share
from ppdp.tasks.privacy.measure import measure_release
from ppdp.tasks.publish import load_manifest
from ppdp.tasks.sanitize.noise import Noise
from ppdp.tasks.sanitize.noise_partitions import NoiseOnPartitions

ORDER = ["lo", "mid", "hi"]


def tag(name: str, role: Role, kind: ColumnKind, order: list[str] | None = None) -> ColumnTag:
    return ColumnTag(name=name, role=role, kind=kind, source="declared", reason="test", order=order)


ROLES = Roles(columns=[tag("age", Role.quasi_identifier, ColumnKind.numeric),
                       tag("zip", Role.quasi_identifier, ColumnKind.nominal),
                       tag("edu", Role.quasi_identifier, ColumnKind.ordinal, ORDER),
                       tag("inc", Role.other, ColumnKind.numeric),
                       tag("y", Role.class_, ColumnKind.nominal)])


@st.composite
def frames(draw):
    """(original, published, cuts of the original into 3 partitions, cuts of the published rows into 3 blocks)."""
    n = draw(st.integers(2, 30))

    def column(values):
        return draw(st.lists(values, min_size=n, max_size=n))

    def table(close: bool) -> pd.DataFrame:
        real = st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 3 if close else 1))
        return pd.DataFrame({"age": column(st.integers(0, 6)), "zip": column(st.sampled_from(["a", "b", None])),
                             "edu": column(st.sampled_from([*ORDER, None])),
                             "inc": column(st.one_of(real, st.just(float("nan")))),
                             "y": column(st.sampled_from(["p", "q"]))})

    original = table(False)
    published = original.copy() if draw(st.booleans()) else table(True)
    for c in draw(st.lists(st.sampled_from(["age", "zip", "edu", "inc"]), max_size=3, unique=True)):
        published[c] = table(True)[c]  # some columns kept as they are, others changed
    a, b = sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2)))
    c, d = sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2)))
    return original, published, [0, a, b, n], [0, c, d, n]


def blocks(frame: pd.DataFrame, cuts: list[int]) -> list[pd.DataFrame]:
    return [frame.iloc[a:b].reset_index(drop=True) for a, b in zip(cuts, cuts[1:], strict=False)]


def one_table(original: pd.DataFrame, published: pd.DataFrame):
    """The one-table record figures: (linkage, DCR quantiles, exact matches, exact copies) and the encoder."""
    release = Release(frame=published, unit="record", treatments={}, row_source=np.arange(len(published)))
    report = measure_release(original, release, ROLES, attack_queries=0)
    known, copy_columns = nearest.record_columns(ROLES, list(published.columns))
    return report, exact_copy_share(published, original, copy_columns)


@given(frames())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_record_figures_of_three_blocks_equal_the_one_table_measure(drawn):
    original, published, cuts, pub_cuts = drawn
    report, copies = one_table(original, published)
    known, copy_columns = nearest.record_columns(ROLES, list(published.columns))
    parts = blocks(original, cuts)
    values = merged_column_counts([column_counts(p, known) for p in parts])
    encoder = nearest.fit_encoder(values, known, ROLES.kinds(), ROLES.orders())
    whole = TableEncoder(columns=known, kinds=ROLES.kinds(), orders=ROLES.orders()).fit(original)
    # the encoder from the partitions' counts is one machine's (the means up to a float's rounding)
    for mine, theirs in zip(encoder.codes_, whole.codes_, strict=True):
        assert (mine.start, mine.width, mine.categories, mine.fill) == (theirs.start, theirs.width, theirs.categories,
                                                                        theirs.fill)
        assert mine.center == pytest.approx(theirs.center, rel=1e-12, abs=1e-12)
        assert mine.scale == pytest.approx(theirs.scale, rel=1e-12)
    owns = blocks(published, cuts)  # published row i stands for original row i
    figures = nearest.figures_of_blocks(parts, owns, blocks(published, pub_cuts), nearest.Plan(encoder, copy_columns))
    exact = nearest.figures_of_blocks(parts, owns, blocks(published, pub_cuts), nearest.Plan(whole, []))  # no copies
    synthetic = report.synthetic
    assert figures.records == len(original) and figures.published == len(published)
    assert figures.exact_copies == copies
    # with one machine's encoder every distance is one machine's, bit for bit; from counts, up to rounding
    assert exact.dcr_quantiles() == synthetic.dcr_quantiles
    assert float(np.quantile(exact.distances, 0.05)) == report.dcr_quantile
    assert float(exact.dcr().exact_match_share) == synthetic.dcr_exact_matches
    assert figures.dcr_quantiles() == pytest.approx(synthetic.dcr_quantiles, rel=1e-9, abs=1e-12)
    # linkage: equal where each record's nearest published row is unique; where its own row ties with another,
    # the record counts as linked (one machine takes whichever its tree returns): never below one machine's
    x_o, x_p = whole.transform(original), whole.transform(published)
    dist = np.sqrt(((x_o[:, None, :] - x_p[None, :, :]) ** 2).sum(axis=2))
    nearest_d = dist.min(axis=1)
    ties = np.count_nonzero(dist <= nearest.tied(nearest_d)[:, None], axis=1) > 1
    for got in (exact, figures):
        if not ties.any():
            assert got.linkage_risk == report.linkage_risk
        assert got.linkage_risk >= report.linkage_risk - 1e-12
        own_nearest = np.diagonal(dist) <= nearest.tied(nearest_d)
        assert got.linked == int(np.count_nonzero(own_nearest))


def test_a_linked_record_is_one_whose_own_row_is_nearest_over_every_block():
    original = pd.DataFrame({"age": [0, 10, 20, 30], "zip": ["a"] * 4, "edu": ["lo"] * 4, "inc": [0.0] * 4,
                             "y": ["p"] * 4})
    published = original.assign(age=[1, 10, 29, 21])  # rows 2 and 3 are each nearer the other's record
    known, copy_columns = nearest.record_columns(ROLES, list(published.columns))
    encoder = TableEncoder(columns=known, kinds=ROLES.kinds(), orders=ROLES.orders()).fit(original)
    figures = nearest.figures_of_blocks([original.iloc[:2], original.iloc[2:]],
                                        [published.iloc[:2], published.iloc[2:]],
                                        [published.iloc[[3]], published.iloc[[0, 1, 2]]],
                                        nearest.Plan(encoder, copy_columns))
    assert figures.linked == 2 and figures.copies == 1  # row 1 is published unchanged
    assert figures.linkage_risk == measure_release(
        original, Release(frame=published, unit="record", treatments={}, row_source=np.arange(4)), ROLES,
        attack_queries=0).linkage_risk


def _noise_fit(parts: list[pd.DataFrame], scale: float = 0.5, seed: int = 11, kind: str = "additive"):
    cap = NoiseOnPartitions()
    sanitizer = Noise(scale=scale, seed=seed, kind=kind)
    counts = type("Counts", (), {"columns": {c: None for c in parts[0].columns}})()
    state = cap.start(None, sanitizer, ROLES, counts)  # type: ignore[arg-type]
    state = cap.absorb(state, cap.merge([cap.count(cap.next_pass(state), p) for p in parts]))
    assert cap.next_pass(state) is None
    fitted = cap.fit(state, sanitizer)
    return cap, fitted, cap.partition_jobs(fitted, [None] * len(parts))


def _census_like(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "zip": rng.choice(["a", "b", "c"], n),
                         "edu": rng.choice([*ORDER, None], n),
                         "inc": np.where(rng.random(n) < 0.1, np.nan, rng.normal(50, 10, n)),
                         "y": rng.choice(["p", "q"], n)})


def test_noise_on_a_partition_is_reproducible_by_seed_and_scaled_by_the_whole_column():
    frame = _census_like(300, 1)
    parts = [frame.iloc[:100], frame.iloc[100:250], frame.iloc[250:]]
    cap, fitted, jobs = _noise_fit(parts)
    assert jobs == [0, 1, 2]
    again = [cap.recode(fitted, p, j) for p, j in zip(parts, jobs, strict=True)]
    first = [cap.recode(fitted, p, j) for p, j in zip(parts, jobs, strict=True)]
    for a, b in zip(first, again, strict=True):
        pd.testing.assert_frame_equal(a, b)
    other = cap.recode(_noise_fit(parts, seed=12)[1], parts[1], 1)
    assert not other["age"].equals(first[1]["age"])  # another seed draws other noise
    # each partition draws its own noise: two partitions holding the same rows are published differently
    twins = [cap.recode(fitted, parts[0], j) for j in (0, 1)]
    assert not twins[0]["inc"].equals(twins[1]["inc"]) and not twins[0]["age"].equals(twins[1]["age"])
    # the scales are the whole column's, not a partition's
    moments = fitted.model.numeric["inc"]
    assert moments.sd == pytest.approx(float(np.nanstd(frame["inc"])), rel=1e-12)
    assert (moments.lo, moments.hi) == (float(np.nanmin(frame["inc"])), float(np.nanmax(frame["inc"])))
    assert fitted.model.numeric["age"].integral and fitted.model.ordinal["edu"][2] == pytest.approx(
        float(np.std(frame["edu"].dropna().map(ORDER.index))), rel=1e-12)
    published = pd.concat(first, ignore_index=True)
    # the treatments of one machine's noise: numbers within the input's range, integers kept integers, ordinal
    # categories the input holds, nominal columns and the class kept, missing values kept missing
    assert published["age"].between(frame["age"].min(), frame["age"].max()).all()
    assert published["age"].dtype == frame["age"].dtype and not published["age"].equals(frame["age"])
    assert set(published["edu"].dropna()) <= set(frame["edu"].dropna())
    for c in ("edu", "inc"):
        assert (published[c].isna() == frame[c].isna()).all()
    assert published["zip"].equals(frame["zip"]) and published["y"].equals(frame["y"])
    assert set(fitted.treatments) == {"age", "edu", "inc"}
    # one machine's noise makes the same kind of release (its draws differ: one generator over all rows)
    one = Noise(scale=0.5, seed=11).sanitize(frame, ROLES)
    assert set(one.treatments[c] for c in ("age", "edu", "inc")) == {"perturbed"}


# -- the flow ----------------------------------------------------------------------------------------------------
runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _spec(workspace, dataset: str, source: Path, accept: bool) -> Path:
    privacy: dict = {"max_linkage_risk": 0.999}  # passes; the floor (0.09) does not
    if accept:
        privacy["accept_below_floor"] = {"reason": "test of the record figures", "approved_by": "tests"}
    spec = {
        "dataset": dataset, "source": {"path": str(source)},
        "columns": {"person_id": "identifier", "ssn": "identifier", "income": "class", "hours_per_week": "other",
                    "age": "quasi_identifier", "sex": "quasi_identifier", "zip": "quasi_identifier"},
        "identifiers": {"action": "drop"}, "privacy": privacy,
        "method": {"name": "noise", "scale": 0.3}, "tuning": {"strategy": "fixed"},
        "utility": {"classifier": "knn1", "test_fraction": 0.1, "min_accuracy_ratio": 0.1, "sample_rows": 300},
        "publish": {"root": str(workspace.root)}, "seed": 7,
    }
    path = workspace.dir / f"{dataset}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_a_partitioned_noise_release_states_the_record_figures_of_its_tables(workspace):
    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    folder = workspace.dir / "parts"
    folder.mkdir()
    for i, (a, b) in enumerate([(0, 250), (250, 400), (400, len(frame))]):
        pq.write_table(pa.Table.from_pandas(frame.iloc[a:b], preserve_index=False), folder / f"part-{i}.parquet")
    # refused (the floor's linkage row fails, nothing accepted): nothing is written
    refused = ppdp("run", _spec(workspace, "refused", folder, accept=False))
    assert refused.exit_code == 3, refused.output
    assert "safety floor failed" in refused.output and "linkage risk" in refused.output, refused.output
    assert not list(workspace.root.glob("**/*.parquet")) and not list(workspace.root.glob(".staging-*"))
    result = ppdp("run", _spec(workspace, "noisy", folder, accept=True))
    assert result.exit_code == 0, result.output
    [release] = [p.parent for p in (workspace.root / "noisy").glob("*/manifest.json")]
    manifest = load_manifest(release)
    privacy = manifest.privacy
    assert privacy.unit == "record" and manifest.method.name == "noise"
    data = pd.concat([pq.read_table(f).to_pandas() for f in sorted((release / "data").glob("*.parquet"))],
                     ignore_index=True)
    # the input as the method received it (identifiers dropped) and each published row's input row, found again
    # by perturbing each partition with the manifest's seed (the row files are shuffled)
    spec = yaml.safe_load((workspace.dir / "noisy.yaml").read_text())
    original = frame.drop(columns=["person_id", "ssn"])
    roles = manifest.roles
    parts = [original.iloc[a:b].reset_index(drop=True) for a, b in [(0, 250), (250, 400), (400, len(frame))]]
    cap = NoiseOnPartitions()
    sanitizer = Noise(scale=spec["method"]["scale"], seed=spec["seed"])
    counts = type("Counts", (), {"columns": {c: None for c in original.columns}})()
    state = cap.start(None, sanitizer, roles, counts)  # type: ignore[arg-type]
    state = cap.absorb(state, cap.merge([cap.count(cap.next_pass(state), p) for p in parts]))
    fitted = cap.fit(state, sanitizer)
    mine = pd.concat([cap.recode(fitted, p, i) for i, p in enumerate(parts)], ignore_index=True)[data.columns]
    key = pd.util.hash_pandas_object(mine.astype(str), index=False).to_numpy()
    where = pd.Series(np.arange(len(mine)), index=key)
    published_key = pd.util.hash_pandas_object(data.astype(str), index=False).to_numpy()
    assert len(set(key)) == len(key) and set(published_key) == set(key)  # the published rows are these
    row_source = where.loc[published_key].to_numpy()
    report = measure_release(original, Release(frame=data, unit="record", treatments={}, row_source=row_source),
                             roles, attack_queries=0)
    view = privacy.attacker_view
    known = view.known_columns
    assert known and "hours_per_week" in known
    assert privacy.linkage_risk == pytest.approx(report.linkage_risk, abs=1e-12)
    assert privacy.synthetic.dcr_quantiles == pytest.approx(report.synthetic.dcr_quantiles, rel=1e-9)
    assert privacy.dcr_quantile == pytest.approx(report.dcr_quantile, rel=1e-9)
    assert view.exact_copies == exact_copy_share(data, original, known)
    assert view.linkage_risk == privacy.linkage_risk and view.nearest_distance == privacy.synthetic.dcr_quantiles
    floor = {c.name: c for c in privacy.floor.claims}
    assert floor["floor: linkage risk"].value == privacy.linkage_risk and not floor["floor: linkage risk"].passed
    assert floor["floor: exact copies"].value == view.exact_copies
    assert json.loads((release / "manifest.json").read_text())["privacy"]["unit"] == "record"
