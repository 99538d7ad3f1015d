"""Joiners and leavers (issue 30, item 2): a group whose members change between two releases publishes, as the
difference of its two sets of rows, the rows of whoever joined or left it.

The attack is run here with the test's own code, from the published tables and the input only: pair every class of
one release with the class of the other sharing most of its (hours_per_week, income) rows; where one holds exactly
the other's rows plus one, that row is read, and given to one of the people known to have joined or left, those
whose quasi-identifiers are nearest the classes read. It reads every newcomer and erased person when groups take
them in or let them go (the design ppdp had), and nothing once kept groups are frozen (m-invariance's
counterfeits). The gate's figure (tasks/privacy/series.py: exposed_by_difference) is checked against a brute-force
oracle, and through the flow: refused where a joiner's values would be read, with the older figures passing.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.tasks.privacy.series_figures import View, exposed_by_difference
from ppdp.tasks.sanitize.base import GROUP_COLUMN
from ppdp.tasks.sanitize.keeping import Kept, frozen_plan
from ppdp.tasks.sanitize.mdav import Mdav
from tests.conftest import census

QIS = ["age", "sex", "zip", "race", "marital_status", "education", "occupation"]
VALUES = ["hours_per_week", "income"]  # published as they are, row by row, beside the aggregated quasi-identifiers
K = 12


# -- the attack, from published tables and the input only ----------------------------------------------------------
def classes_of(frame: pd.DataFrame) -> dict[tuple, Counter]:
    """Each published class (rows sharing every quasi-identifier value) and the multiset of its (hours, income)."""
    out: dict[tuple, Counter] = {}
    for row in frame[[*QIS, *VALUES]].astype(str).itertuples(index=False):
        out.setdefault(tuple(row[:len(QIS)]), Counter())[tuple(row[len(QIS):])] += 1
    return out


def one_row_differences(before: pd.DataFrame, after: pd.DataFrame) -> list[tuple[str, tuple, tuple]]:
    """Every value the differencing attack reads off two releases: (joined or left, the class it was read in, the
    (hours, income) read). Each class is paired with the class of the other release sharing most of its rows."""
    a, b = classes_of(before), classes_of(after)
    reads = []
    for kind, mine, theirs in (("joined", b, a), ("left", a, b)):
        for key, rows in mine.items():
            other = max(theirs.values(), key=lambda o: sum((o & rows).values()))
            extra, missing = rows - other, other - rows
            if sum(extra.values()) == 1 and not missing:
                reads.append((kind, key, next(iter(extra))))
    return reads


def distance(person: pd.Series, key: tuple) -> float:
    age = abs(float(person["age"]) - float(key[0])) / 10
    return age + sum(str(person[q]) != key[i] for i, q in enumerate(QIS) if q != "age")


def read_people(people: pd.DataFrame, reads, kind: str) -> list[bool]:
    """For each person known to have joined (or left): whether the read the attacker gives them is their exact
    values. The attacker gives each read to one person, matching people to the classes read so that the total
    distance between their quasi-identifiers and the classes' is least."""
    from scipy.optimize import linear_sum_assignment

    mine = [(key, value) for k, key, value in reads if k == kind]
    out = [False] * len(people)
    if not mine:
        return out
    cost = np.array([[distance(person, key) for key, _ in mine] for _, person in people.iterrows()])
    for i, j in zip(*linear_sum_assignment(cost)):
        person = people.iloc[i]
        out[i] = mine[j][1] == (str(person["hours_per_week"]), str(person["income"]))
    return out


# -- releases as the sanitizer makes them, and their ledger members -----------------------------------------------
def roles_of(frame: pd.DataFrame):
    from tests.test_series import roles_of as series_roles

    return series_roles(frame, sensitive=("hours_per_week",))


def members_of(release, ids: np.ndarray) -> pd.DataFrame:
    """Where each record went (the ledger's ground truth): its published class (by quasi-identifier values) and
    row, from the release's own row_source."""
    rs = np.asarray(release.row_source)
    linked = np.flatnonzero(rs >= 0)
    key = release.frame[QIS].astype(str).agg("|".join, axis=1)
    grp = pd.factorize(key)[0][linked]
    return pd.DataFrame({"part": "", "fp": np.asarray(ids)[rs[linked]], "grp": grp, "row": linked})


def view_of(release, ids, name) -> View:
    return View(release_id=name, method="mdav", unit="equivalence_class", members=members_of(release, ids),
                frame=release.frame)


def kept_from(release, ids_before: np.ndarray, ids_now: np.ndarray) -> Kept:
    m = members_of(release, ids_before).set_index("fp")
    groups = m["grp"].reindex(ids_now).fillna(-1).to_numpy(dtype=np.int64)
    rows = m["row"].reindex(ids_now).fillna(-1).to_numpy(dtype=np.int64)
    return Kept(groups=groups, rows=rows, seen=groups >= 0, table=release.frame, release_id=name_of(release))


def name_of(release) -> str:
    return f"release of {len(release.frame)} rows"


def test_the_difference_attack_reads_joiners_and_leavers_unless_groups_are_frozen():
    """Six newcomers, each taken into its nearest group (the design ppdp had), then four persons erased (three from
    groups that took a newcomer, one from MDAV's last, larger group): the attack reads the exact hours and income of
    all ten from two releases, and the gate's figure exposes each of them. With the groups frozen, the newcomers
    are held (fewer than k), the groups left below k are retired and the erased row of the larger group stays as a
    counterfeit: the attack reads nothing and the figure exposes nobody."""
    full = census(320).drop(columns=["person_id", "name", "ssn"])
    roles = roles_of(full)
    old = np.arange(293)  # 23 groups of 12 and one of 17
    mdav = Mdav(k=K, seed=0)
    a = mdav.sanitize(full.iloc[old], roles)
    # the earlier design: each newcomer joins the kept group whose centroid is nearest (MDAV's distance)
    x = mdav._encode(full, roles)
    g_a = np.asarray(a.input_group)
    centres = np.stack([x[old][g_a == g].mean(axis=0) for g in range(g_a.max() + 1)])
    nearest = {int(i): int(np.argmin(((centres - x[i]) ** 2).sum(axis=1))) for i in range(293, 320)}
    joiners, taken = [], set()
    for i, g in nearest.items():  # six newcomers joining six different groups
        if g not in taken and len(joiners) < 6:
            joiners.append(i)
            taken.add(g)
    ids_b = np.r_[old, joiners]
    b = mdav._publish(full.iloc[ids_b].reset_index(drop=True), roles, np.r_[g_a, [nearest[j] for j in joiners]])
    # four persons erased: from three groups that took a newcomer (13 members, so 12 stay: the group is kept), and
    # from the group of 17
    large = int(np.argmax(np.bincount(g_a)))
    erased = [int(np.flatnonzero(g_a == g)[0]) for g in [nearest[j] for j in joiners if nearest[j] != large][:3]]
    erased.append(int(np.flatnonzero(g_a == large)[-1]))
    ids_c = np.array([i for i in ids_b if i not in erased])
    g_b = np.asarray(b.input_group)
    c = mdav._publish(full.iloc[ids_c].reset_index(drop=True), roles, g_b[np.isin(ids_b, ids_c)])
    # the attack, one person at a time (a person joins, or is erased, between two releases)
    labels_b = np.r_[g_a, [nearest[j] for j in joiners]]
    read_new = 0
    for j in joiners:
        one = mdav._publish(full.iloc[np.r_[old, j]].reset_index(drop=True), roles, np.r_[g_a, nearest[j]])
        read_new += sum(read_people(full.iloc[[j]], one_row_differences(a.frame, one.frame), "joined"))
    read_gone = 0
    for e in erased:
        stay = ids_b != e
        one = mdav._publish(full.iloc[ids_b[stay]].reset_index(drop=True), roles, labels_b[stay])
        read_gone += sum(read_people(full.iloc[[e]], one_row_differences(b.frame, one.frame), "left"))
    print(f"\ngroups taking newcomers in: {read_new} of 6 newcomers and {read_gone} of 4 erased persons read exactly "
          "(hours_per_week, income) from two releases")
    assert read_new == 6 and read_gone == 4
    columns = list(full.columns)
    moved, exposed = exposed_by_difference(view_of(b, ids_b, "b"), view_of(a, old, "a"), K, columns, QIS)
    assert sorted(moved.tolist()) == sorted(joiners) and sorted(exposed.tolist()) == sorted(joiners)
    moved, exposed = exposed_by_difference(view_of(c, ids_c, "c"), view_of(b, ids_b, "b"), K, columns, QIS)
    assert sorted(exposed.tolist()) == sorted(erased)

    # frozen: the same people, the same steps
    b2 = mdav.sanitize(full.iloc[ids_b], roles, previous=kept_from(a, old, ids_b))
    c2 = mdav.sanitize(full.iloc[ids_c], roles, previous=kept_from(b2, ids_b, ids_c))
    reads = one_row_differences(a.frame, b2.frame) + one_row_differences(b2.frame, c2.frame) + \
        one_row_differences(a.frame, c2.frame)
    print(f"frozen groups: {len(reads)} values read; {b2.held_rows} newcomers held; after the erasures "
          f"{c2.counterfeit_rows} counterfeit row, {c2.retired_groups} groups retired, {c2.held_rows} records held")
    assert reads == [] and b2.held_rows == 6 and c2.counterfeit_rows == 1
    assert c2.retired_groups == 3 and c2.held_rows == 6 + 3 * 11
    first, last = classes_of(a.frame), classes_of(c2.frame)
    assert classes_of(b2.frame) == first  # no group's rows changed; the three retired groups are gone whole
    assert all(first[key] == rows for key, rows in last.items()) and len(first) - len(last) == 3
    for later, ids, earlier, ids_e in ((b2, ids_b, a, old), (c2, ids_c, b2, ids_b), (c2, ids_c, a, old)):
        moved, exposed = exposed_by_difference(view_of(later, ids, "x"), view_of(earlier, ids_e, "y"), K,
                                               columns, QIS)
        assert exposed.size == 0
    # who left, as the series sees it (a, then c2): the erased persons and the held members of the retired groups
    # (three groups of 12 whole); the held newcomers never joined
    assert set(erased) <= set(moved.tolist()) and moved.size == 3 * 12 + 1


# -- the gate's figure against a brute-force oracle ---------------------------------------------------------------
def _oracle(cur: dict, old: dict, rows_cur: dict, rows_old: dict, k: int) -> tuple[set, set]:
    """Plain Python: cur/old map record -> class; rows_* map class -> sorted list of published rows."""
    moved = (set(cur) - set(old)) | (set(old) - set(cur))
    continuing = set(cur) & set(old)
    exposed = set()

    def counterpart(members, into):
        counts = Counter(into[r] for r in members if r in continuing)
        if not counts:
            return None
        best = max(counts.values())
        return min(c for c, n in counts.items() if n == best)

    def members(mapping, cls):
        return {r for r, c in mapping.items() if c == cls}

    pairs = set()
    for r in set(cur) - set(old):
        d = counterpart(members(cur, cur[r]), old)
        if d is not None:
            pairs.add((cur[r], d))
    for r in set(old) - set(cur):
        c = counterpart(members(old, old[r]), cur)
        if c is not None:
            pairs.add((c, old[r]))
    for c, d in pairs:
        mc, md = members(cur, c), members(old, d)
        if rows_cur.get(c, []) != rows_old.get(d, []) and len(mc ^ md) < k:
            exposed |= {r for r in mc - set(old)} | {r for r in md - set(cur)}
    return moved, exposed


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_exposed_by_difference_matches_brute_force(data):
    n = data.draw(st.integers(4, 30))
    k = data.draw(st.integers(2, 5))
    in_old = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    in_cur = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    cls_old = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    move = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    cls_new = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    values = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    changed = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    counterfeit = data.draw(st.lists(st.integers(0, 3), max_size=3))  # rows standing for no record

    def release(present, classes, vals, extra_cls):
        recs = [r for r in range(n) if present[r]]
        frame = pd.DataFrame({"v": [vals[r] for r in recs] + [9] * len(extra_cls),
                              GROUP_COLUMN: [classes[r] for r in recs] + list(extra_cls)})
        members = pd.DataFrame({"fp": np.array(recs, dtype=np.int64),
                                "grp": np.array([classes[r] for r in recs], dtype=np.int64),
                                "row": np.full(len(recs), -1, dtype=np.int64)})
        mapping = {r: classes[r] for r in recs}
        rows: dict[int, list] = {}
        for v, g in zip(frame["v"], frame[GROUP_COLUMN]):
            rows.setdefault(int(g), []).append(int(v))
        return View("x", "m", "generating_group", members, frame=frame), mapping, {g: sorted(r) for g, r in
                                                                                   rows.items()}

    now_cls = [cls_new[r] if move[r] else cls_old[r] for r in range(n)]
    now_vals = [values[r] + (5 if changed[r] else 0) for r in range(n)]
    old_view, old_map, old_rows = release(in_old, cls_old, values, [])
    cur_view, cur_map, cur_rows = release(in_cur, now_cls, now_vals, counterfeit)
    moved, exposed = exposed_by_difference(cur_view, old_view, k, ["v"], [])
    want_moved, want_exposed = _oracle(cur_map, old_map, cur_rows, old_rows, k)
    assert set(moved.tolist()) == want_moved and set(exposed.tolist()) == want_exposed


# -- the keeping plan on random memberships ----------------------------------------------------------------------
@settings(max_examples=120, deadline=None)
@given(st.data())
def test_frozen_plan_on_random_memberships(data):
    """Previous groups with their published rows (one per member, some members gone, some groups publishing the same
    key), new and held records: every kept group publishes exactly its previous rows, every published group has at
    least k rows and k present members, no held or retired record is published, counts add up."""
    k = data.draw(st.integers(1, 5))
    n_groups = data.draw(st.integers(0, 6))
    sizes = data.draw(st.lists(st.integers(1, 8), min_size=n_groups, max_size=n_groups))
    table_group = np.repeat(np.arange(n_groups), sizes).astype(np.int64)  # each previous row's group
    m = table_group.size
    merge = data.draw(st.lists(st.integers(0, max(n_groups - 1, 0)), min_size=n_groups, max_size=n_groups))
    table_keys = np.array([merge[g] if data.draw(st.booleans()) else g for g in range(n_groups)],
                          dtype=np.int64)[table_group] if m else np.zeros(0, dtype=np.int64)
    present = np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)), dtype=bool)
    n_new = data.draw(st.integers(0, 12))
    seen_new = np.array(data.draw(st.lists(st.booleans(), min_size=n_new, max_size=n_new)), dtype=bool)
    strata_new = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n_new, max_size=n_new)), dtype=np.int64)
    # input rows: the present previous members (each with its own old row), then the new records
    rows = np.r_[np.flatnonzero(present), np.full(n_new, -1)].astype(np.int64)
    groups = np.r_[table_group[present], np.full(n_new, -1)].astype(np.int64)
    member_keys = np.where(rows >= 0, table_keys[np.maximum(rows, 0)] if m else -1, -1)
    seen = np.r_[np.ones(int(present.sum()), dtype=bool), seen_new]
    strata = np.r_[np.zeros(int(present.sum()), dtype=np.int64), strata_new]
    perm = np.random.default_rng(data.draw(st.integers(0, 99))).permutation(groups.size)
    groups, rows, member_keys, seen, strata = groups[perm], rows[perm], member_keys[perm], seen[perm], strata[perm]
    plan = frozen_plan(groups, member_keys, seen, table_keys, k, strata)

    # recount: the rows of one key are one published class, so the groups sharing a key are kept or retired
    # together; kept iff one of them has present members and each that has keeps k (rows of a group whose members
    # all left are published again when their key's class is kept: counterfeits)
    present_count = pd.Series(groups[groups >= 0]).value_counts()
    key_of = {int(g): int(table_keys[table_group == g][0]) for g in range(n_groups)}
    for g in range(n_groups):
        same = [h for h in present_count.index if key_of[int(h)] == key_of[g]]
        kept = bool(same) and all(present_count[h] >= k for h in same)
        published = plan.table_unit[table_group == g] >= 0
        assert published.all() if kept else not published.any(), g  # a kept group: all its previous rows
        assert ((plan.unit[groups == g] >= 0) == kept).all()
    for u in np.unique(plan.table_unit[plan.table_unit >= 0]):  # one previous unit, one published group
        assert (plan.table_unit == u).sum() >= k and (plan.unit == u).sum() >= k
        assert set(table_keys[plan.table_unit == u].tolist()) == {key_of[int(g)] for g in groups[plan.unit == u]}
    fresh = ~seen & (groups < 0)
    for s in (0, 1):
        mine = fresh & (strata == s)
        assert (plan.new[mine] == (mine.sum() >= k)).all()
    assert not plan.new[~fresh].any() and not (plan.unit[groups < 0] >= 0).any()
    assert plan.kept_members + int(plan.new.sum()) + plan.held_rows == groups.size
    assert plan.kept_members + plan.counterfeits == plan.kept_rows == int((plan.table_unit >= 0).sum())
    assert plan.counterfeits == int(((plan.table_unit >= 0) & ~np.isin(np.arange(m), rows)).sum())


# -- through the flow -----------------------------------------------------------------------------------------------
def _ppdp(*args):
    from typer.testing import CliRunner

    from ppdp.flows.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


COLUMNS = {"person_id": "identifier", "income": "class", "hours_per_week": "sensitive",
           "education": {"role": "quasi_identifier", "order": [
               "Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors", "Masters",
               "Doctorate"]}}


def _published(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("census/*/manifest.json"))


@pytest.mark.slow  # three flow runs (about 20 s); .ci/run runs it
@pytest.mark.usefixtures("prefect_harness")
def test_newcomers_and_erased_persons_cannot_be_read_from_frozen_releases(workspace):
    """The issue's attack on a growing census table, MDAV k=12 with keep_groups: release 1 on 480 rows; release 2
    with 30 newcomers (grouped among themselves); release 3 with persons erased (five old ones, whose groups of 12
    retire; newcomers of release 2 from its larger new group, whose rows stay as counterfeits) and 6 newcomers
    (fewer than k: held). Read from the three published tables with the test's own attack: nothing; no kept class
    changed."""
    from ppdp.tasks.publish import load_manifest

    full = census(600)
    data = workspace.dir / "growing.csv"
    spec = workspace.spec("growing.yaml", data=data, method={"name": "mdav", "k": K}, privacy={"k": 10},
                          columns=COLUMNS, series={"keep_groups": True})
    for frame in (full.iloc[:480], full.iloc[:510]):
        frame.to_csv(data, index=False)
        result = _ppdp("run", spec)
        assert result.exit_code == 0, result.output
    # erased: five old records, and newcomers of release 2 that the published tables place in its larger new class
    # (their (hours, income) is in that class and no other newcomer has it), as many as leave it k members
    first, second = (pd.read_parquet(f / "data.parquet") for f in _published(workspace.root))
    fresh = {key: rows for key, rows in classes_of(second).items() if key not in classes_of(first)}
    big = max(fresh, key=lambda key: sum(fresh[key].values()))
    pairs = [(str(h), str(i)) for h, i in zip(full["hours_per_week"], full["income"])]
    alone = Counter(pairs[480:510])
    sure = [i for i in range(480, 510) if alone[pairs[i]] == 1 and pairs[i] in fresh[big]
            and not any(pairs[i] in rows for key, rows in fresh.items() if key != big)]
    erased = [3, 50, 100, 200, 300, *sure[:sum(fresh[big].values()) - K]]
    assert len(erased) > 5
    full.iloc[[i for i in range(516) if i not in erased]].to_csv(data, index=False)
    result = _ppdp("run", spec)
    assert result.exit_code == 0, result.output
    folders = _published(workspace.root)
    assert len(folders) == 3
    tables = [pd.read_parquet(f / "data.parquet") for f in folders]
    manifests = [load_manifest(f) for f in folders]
    newcomers = full.iloc[480:516]
    gone = full.iloc[erased]
    read = {"newcomers": 0, "erased": 0}
    reads = []
    for i, j in ((0, 1), (1, 2), (0, 2)):
        got = one_row_differences(tables[i], tables[j])
        reads += got
        read["newcomers"] += sum(read_people(newcomers, got, "joined"))
        read["erased"] += sum(read_people(gone, got, "left"))
    before, after = classes_of(tables[0]), classes_of(tables[2])
    changed = [key for key in before.keys() & after.keys() if before[key] != after[key]]
    s2, s3 = manifests[1].series, manifests[2].series
    print(f"\nfrozen releases of a growing table: {len(tables[0])}, {len(tables[1])}, {len(tables[2])} rows; values "
          f"read by differencing: {len(reads)} ({read}); release 2 held {s2.held_records}, release 3 held "
          f"{s3.held_records} with {s3.counterfeit_rows} counterfeit rows and {s3.retired_groups} retired groups")
    assert reads == [] and read == {"newcomers": 0, "erased": 0}
    # frozen: every class of release 1 still published has exactly its rows; new classes hold at least k rows
    for i, j in ((0, 1), (1, 2), (0, 2)):
        a, b = classes_of(tables[i]), classes_of(tables[j])
        assert all(a[key] == b[key] for key in a.keys() & b.keys())
        assert all(sum(b[key].values()) >= K for key in b.keys() - a.keys())
    assert not changed
    # the newcomers of release 2 form groups of their own; those of release 3 are held (fewer than k)
    assert len(tables[1]) > len(tables[0]) and s2.kept_members == len(tables[0])
    assert s3.held_records >= 5 and s3.counterfeit_rows == len(erased) - 5 and s3.retired_groups > 0
    for s in (s2, s3):
        [fig] = [f for f in s.figures if f.name.startswith("joiners and leavers")]
        assert fig.value == 0 and fig.holds
    # the publisher reproduces the frozen release from its input (the kept rows come from release 2's table)
    from ppdp.tasks.reproduce import reproduce

    again = reproduce(manifests[2], data, tables[2])
    assert again.same, again.note
    assert _ppdp("validate", "--release", folders[2], "--original", data).exit_code == 0


@pytest.mark.slow  # two flow runs (about 10 s); .ci/run runs it
@pytest.mark.usefixtures("prefect_harness")
def test_a_joiner_s_class_difference_is_refused_without_kept_groups(workspace):
    """Generalization at a fixed node, one record added: its class differs from the earlier release by its row
    alone. The earlier figures (candidate sets, intersected values) hold; the joiners and leavers figure refuses
    (exit 3, one line naming the earlier release), nothing published. The test reads the joiner's values off the
    two tables itself first, to show the refusal is for a real attack."""
    from ppdp.tasks.publish import load_manifest

    full = census(600)
    data = workspace.dir / "growing.csv"
    full.iloc[:500].to_csv(data, index=False)
    cols = {**COLUMNS, **{q: "quasi_identifier" for q in QIS if q != "education"}}
    method = {"name": "generalization", "suppression_limit": 0.05}
    first = _ppdp("run", workspace.spec("gen.yaml", data=data, columns=cols, privacy={"k": 10}, method=method,
                                        tuning={"strategy": "lattice"}))
    assert first.exit_code == 0, first.output
    [folder] = _published(workspace.root)
    levels = load_manifest(folder).method.params["levels"]
    before = workspace.under_root()
    full.iloc[:501].to_csv(data, index=False)
    fixed = workspace.spec("gen.yaml", data=data, columns=cols, privacy={"k": 10},
                           method={**method, "levels": levels})
    second = _ppdp("run", fixed)
    lines = second.stderr.strip().splitlines()
    print(f"\none joiner, generalization at a fixed node: exit {second.exit_code}: {lines[-1] if lines else ''}")
    assert second.exit_code == 3 and len(lines) == 1, second.output
    assert "joiners and leavers" in lines[0] and f"earlier release {folder.name}" in lines[0], lines[0]
    assert "1 of 1 records" in lines[0]
    assert workspace.under_root() == before
    # the same release without the gate: the joiner's values are the difference of its class's rows
    from ppdp.tasks.sanitize.generalization import Generalization

    frame = full.iloc[:501].drop(columns=["person_id", "name", "ssn"])
    manifest = load_manifest(folder)
    gen = Generalization(k=10, suppression_limit=0.05, levels=levels, seed=manifest.spec.seed)
    a = Generalization(k=10, suppression_limit=0.05, levels=levels, seed=manifest.spec.seed).sanitize(
        frame.iloc[:500], manifest.roles)
    b = gen.sanitize(frame, manifest.roles)
    got = one_row_differences(a.frame, b.frame)
    assert [value for kind, _, value in got if kind == "joined"] == [
        (str(full.iloc[500]["hours_per_week"]), str(full.iloc[500]["income"]))]
