"""MDAV on a partitioned input (tasks/sanitize/mdav_partitions.py): parts from Mondrian's strict top cuts until
each holds at most MDAV_PART_ROWS records, each part grouped by MDAV on its own rows in the encoding fitted on the
whole input, each partition recoded from its share. The capability is driven through its methods over in-memory
partitions, as the partitioned plan drives it (count per partition, merge, absorb; the parts' jobs finished with a
loader of the partitions; each partition recoded from its share); the end-to-end run through `ppdp run` is in the
slow suite."""

from __future__ import annotations

import json
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.api import roles_for
from ppdp.tasks.core.counts import ValueCounts
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.encoding_counts import fit_encoder
from ppdp.tasks.sanitize import mdav_partitions
from ppdp.tasks.sanitize.mdav import Mdav, mdav_groups

from .test_mondrian_passes import counted, split

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow], "max_examples": 8}
QIS = ["age", "hours", "city"]


@contextmanager
def part_rows(bound: int):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mdav_partitions, "MDAV_PART_ROWS", bound)
        yield


def run(frames: list[pd.DataFrame], roles, sanitizer):
    """The capability as the partitioned plan drives it: (the fit, each input row's global group, the published
    rows in input order)."""
    method = Mdav.on_partitions
    state = method.start(None, sanitizer, roles, counted(frames, roles))
    while (job := method.next_pass(state)) is not None:
        state = method.absorb(state, method.merge([method.count(job, f) for f in frames]))
    fitted = method.fit(state, sanitizer)
    jobs = method.local_jobs(fitted)
    fitted = method.finish_local(fitted, [method.finish_rows(j, lambda i: frames[i]) for j in jobs])
    shares = method.partition_jobs(fitted, [None] * len(frames))
    out = pd.concat([method.recode(fitted, f, s) for f, s in zip(frames, shares, strict=True)], ignore_index=True)
    groups = []
    for i, f in enumerate(frames):
        share = fitted.model[i]
        g = np.full(len(f), -1, dtype=np.int64)
        g[share.positions] = share.group
        groups.append(g)
    return fitted, np.concatenate(groups), out


ANY_FLOAT = st.floats(0, 60, allow_nan=False)


@st.composite
def tables(draw, hours_of=ANY_FLOAT):
    n = draw(st.integers(8, 60))
    age = draw(st.lists(st.integers(18, 30), min_size=n, max_size=n))
    hours = draw(st.lists(st.one_of(st.none(), hours_of), min_size=n, max_size=n))
    city = draw(st.lists(st.sampled_from(["a", "b", "c", "d", None]), min_size=n, max_size=n))
    income = draw(st.lists(st.sampled_from(["<=50K", ">50K"]), min_size=n, max_size=n))
    frame = pd.DataFrame({"age": age, "hours": pd.array(hours, dtype="Float64").astype(float),
                          "city": pd.array(city, dtype="string"), "income": income})
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    sizes = np.diff([0, *cuts, n]).tolist()
    k = draw(st.integers(2, 4))
    return frame, sizes, k


def roles_of(frame: pd.DataFrame):
    return roles_for(frame, quasi_identifiers=QIS, class_column="income")


@settings(**SETTINGS)
@given(tables(), st.integers(8, 30))
def test_every_group_holds_k_and_shares_its_published_values(case, bound):
    frame, sizes, k = case
    roles = roles_of(frame)
    with part_rows(bound):
        fitted, groups, out = run(split(frame, sizes), roles, Mdav(k=k))
    assert (groups >= 0).all()
    per_group = np.bincount(groups)
    assert per_group.min() >= k and len(per_group) == fitted.groups
    for _, rows in out.groupby(groups, sort=False):  # a group's rows share every published quasi-identifier
        assert (rows[QIS].nunique(dropna=False) <= 1).all()
    assert out.groupby(QIS, dropna=False, sort=False).size().min() >= k  # so the release's classes hold k
    assert out["income"].tolist() == frame["income"].tolist()  # the class kept as it is


@settings(**SETTINGS)
@given(tables())
def test_the_encoding_is_one_machines_on_the_whole_table(case):
    frame, sizes, _ = case
    roles = roles_of(frame)
    frames = split(frame, sizes)
    values = {q: ValueCounts.merge([ValueCounts.of(f[q]) for f in frames]) for q in QIS}
    encoder = fit_encoder(values, QIS, roles.kinds(), roles.orders())
    one = TableEncoder(columns=QIS, kinds=roles.kinds(), orders=roles.orders()).fit(frame)
    assert encoder.width_ == one.width_
    for mine, theirs in zip(encoder.codes_, one.codes_, strict=True):
        assert (mine.name, mine.start, mine.width, mine.categories) == (theirs.name, theirs.start, theirs.width,
                                                                      theirs.categories)
    mine, theirs = encoder.transform(frame), one.transform(frame)
    # MDAV reads distances only: equal up to a constant per column. (One machine's standard deviation of a column
    # holding one value can be a rounding residue, about 1e-16, whose inverse scale turns the column into a constant
    # 1 rather than 0: the same distances.)
    np.testing.assert_allclose(mine - mine[:1], theirs - theirs[:1], rtol=1e-12, atol=1e-12)


@settings(**SETTINGS)
@given(tables())
def test_a_table_within_one_part_is_one_machines_release(case):
    """One machine's MDAV on the whole table: its groups (mdav_groups on the whole table, in the global encoding)
    and its aggregation (Mdav._publish). The global encoding's mean and standard deviation are sums over the counts
    rather than over the rows in table order: equal to one machine's up to the last bits (the test above), which on
    pathological numbers (a subnormal such as 1e-296 beside 60) can break a distance tie the other way, so the
    groups are compared in the global encoding."""
    frame, sizes, k = case
    roles = roles_of(frame)
    frames = split(frame, sizes)
    fitted, groups, out = run(frames, roles, Mdav(k=k))
    values = {q: ValueCounts.merge([ValueCounts.of(f[q]) for f in frames]) for q in QIS}
    labels = mdav_groups(fit_encoder(values, QIS, roles.kinds(), roles.orders()).transform(frame), k)
    np.testing.assert_array_equal(groups, labels)
    pd.testing.assert_frame_equal(out, Mdav(k=k)._publish(frame, roles, labels).frame)
    assert fitted.groups == int(labels.max()) + 1


# -- the release flow -------------------------------------------------------------------------------------------
@pytest.mark.slow  # a partitioned `ppdp run` on the thread runner (about 10 s)
@pytest.mark.usefixtures("prefect_harness")
def test_a_partitioned_mdav_release_holds_k_and_stages_no_raw_value(workspace, monkeypatch):
    from .conftest import SENTINEL_SSN
    from .test_distributed_release import ppdp, published, release_folder, spec_for, write_parts

    monkeypatch.setattr(mdav_partitions, "MDAV_PART_ROWS", 150)  # several parts of 600 records
    frame = pd.read_csv(workspace.data, dtype={"zip": str})
    source = write_parts(frame, workspace.dir / "parts", [250, 200, 150])
    result = ppdp("run", spec_for(workspace, "parts", source, name="mdav", k=12))  # k 12: the safety floor's
    assert result.exit_code == 0, result.output
    folder = release_folder(workspace, "parts")
    manifest = json.loads((folder / "manifest.json").read_text())
    data = published(folder)
    view = manifest["privacy"]["attacker_view"]
    known = view["quasi_identifiers"] + view["counted_columns"]
    assert len(data) == len(frame) and data[known].astype(str).value_counts().min() >= 12  # k on the row files
    assert manifest["method"]["name"] == "mdav" and manifest["unit"] == "equivalence_class"
    classes = data.groupby(known, dropna=False).ngroups
    assert classes <= manifest["method"]["groups"] <= len(frame) // 12  # groups may publish the same values
    assert data.groupby(known, dropna=False)["hours_per_week"].nunique().max() == 1  # other attributes aggregated
    assert data["income"].value_counts().to_dict() == frame["income"].value_counts().to_dict()  # the class kept
    # no raw value staged or published: no identifier anywhere under the root, and only the row files were written
    for path in workspace.root.rglob("*"):
        if path.is_file():
            assert SENTINEL_SSN.encode() not in path.read_bytes(), path
    assert sorted(p.name for p in (folder / "data").iterdir()) == [f"part-{i:05d}.parquet" for i in range(3)]
    assert not list(workspace.root.glob("**/.shuffle"))
    assert ppdp("validate", "--release", folder).exit_code == 0

