"""Federated naive Bayes through two mixers (paper 001, section 3.2; ``ppdp federate``).

What is checked, and how each check can fail:

* the federated model equals the centralized one on the union of the parties' rows, exactly (same counts, the
  same predictions and probabilities), on the demo clinics (always) and on Nursery split across 3 parties (when
  /work/shared/data is there); scikit-learn's ``CategoricalNB(alpha=1)`` with the same category layout is the
  independent oracle (same predictions, probabilities within 1e-12), and a model of one party alone differs;
* every share a mixer receives is uniform on [0, 2**64): chi-square over the top 4 bits and the low 8 bits of
  many shares, which fails for the raw counts and for two plausible wrong splits;
* the minimum-count rule: suppress (counts 0 or >= k, the flags, complementary cells) or refuse; the suppression
  is judged by an independent audit written here (SciPy's linprog over the whole table; brute force over whole
  numbers for an attacker who replays the rule): every suppressed cell ranges from 0 to k - 1, also for an attacker
  who knows which suppressed counts are the small ones, on the issue's three-party case (where the old rule, built
  here by hand, pins a count) and on random tables (hypothesis); ppdp's own audit catches the old rule's output
  and tampered tables, a row no suppression protects is refused in one line without a count, and
  ``validate --release`` fails a weakly suppressed model;
* the flow: party subflows and mixer tasks as separate runs, a mixer retried after a failure, no party's counts
  nor shares in Prefect's files or logs, result storage empty; refusals (another schema, a party smaller than
  k, the min-count rule, a mixer that never answers) publish nothing, exit 2, 3 or 1 with one line and are
  audited; ``ppdp audit verify`` passes on a root holding a normal and a federated release, and the audit's
  manifest check uses the federated schema.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.federate import FederatedManifest
from ppdp.tasks import audit, digests
from ppdp.tasks import federated as F
from ppdp.tasks.core.errors import InputError, ReleaseRejected, SpecError
from tests.conftest import PREFECT_HOME, REPO, RESULT_STORAGE, SHARED_DATA

DEMO = REPO / "examples" / "federated"
DEMO_SPEC = DEMO / "federated_demo.yaml"
NURSERY = SHARED_DATA / "nursery" / "nursery.csv"
runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def generator():
    sys.path.insert(0, str(DEMO))
    try:
        import generate_federated
    finally:
        sys.path.pop(0)
    return generate_federated


def demo_spec(root: Path, **changes) -> dict:
    spec = yaml.safe_load(DEMO_SPEC.read_text(encoding="utf-8"))
    spec["publish"]["root"] = str(root)
    for party in spec["parties"]:
        party["path"] = str(DEMO / party["path"])
    spec.update(changes)
    return spec


def write_spec(folder: Path, spec: dict) -> Path:
    path = folder / "federation.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def union_of(spec) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p.path) for p in spec.parties], ignore_index=True)


def federated_counts(spec) -> np.ndarray:
    """The protocol without Prefect: every party's shares, both mixers, the combination."""
    shares = [F.party_shares(spec, p.name) for p in spec.parties]
    sum_a = F.mixer_sum([s.share_a for s in shares])
    sum_b = F.mixer_sum([s.share_b for s in shares])
    return F.combine(sum_a, sum_b, F.layout_of(spec))


def oracle(spec, train: pd.DataFrame, test: pd.DataFrame):
    """scikit-learn's CategoricalNB(alpha=1) on the declared category layout, encoded independently of ppdp
    (OrdinalEncoder for domains, np.digitize for bins); returns (predictions, probabilities in spec class order)."""
    from sklearn.naive_bayes import CategoricalNB
    from sklearn.preprocessing import OrdinalEncoder

    def encode(frame):
        columns = []
        for name, a in spec.attributes.items():
            if a.bins is not None:
                columns.append(np.digitize(frame[name].to_numpy(float), a.bins[1:-1], right=False))
            else:
                enc = OrdinalEncoder(categories=[[str(v) for v in a.domain]], dtype=np.int64)
                columns.append(enc.fit_transform(frame[[name]].astype(str))[:, 0])
        return np.column_stack(columns)

    sizes = [len(a.domain) if a.domain is not None else len(a.bins) - 1 for a in spec.attributes.values()]
    nb = CategoricalNB(alpha=1, min_categories=sizes).fit(encode(train), train[spec.class_column].astype(str))
    order = [list(nb.classes_).index(c) for c in spec.classes()]
    return nb.predict(encode(test)), nb.predict_proba(encode(test))[:, order]


def grid(spec) -> pd.DataFrame:
    """Every combination of attribute values (a value inside each bin for a binned attribute)."""
    values = [[str(v) for v in a.domain] if a.domain is not None else
              [(lo + hi) / 2 for lo, hi in zip(a.bins[:-1], a.bins[1:])] for a in spec.attributes.values()]
    return pd.DataFrame(list(itertools.product(*values)), columns=list(spec.attributes))


def top_bits_p(values: np.ndarray, bits: int = 4) -> float:
    counts = np.bincount((np.asarray(values, np.uint64) >> np.uint64(64 - bits)).astype(np.int64),
                         minlength=2**bits)
    return float(chisquare(counts).pvalue)


def low_bits_p(values: np.ndarray, bits: int = 8) -> float:
    counts = np.bincount((np.asarray(values, np.uint64) & np.uint64(2**bits - 1)).astype(np.int64),
                         minlength=2**bits)
    return float(chisquare(counts).pvalue)


def under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


# -- exactness: federated == centralized == scikit-learn -------------------------------------------------------
def check_exact(spec, test: pd.DataFrame) -> None:
    counts = federated_counts(spec)
    union = union_of(spec)
    central = F.count_frame(union, spec).astype(np.int64)
    assert np.array_equal(counts, central)  # the shares summed back to exactly the union's counts
    model, reference = F.FederatedModel.from_counts(spec, counts), F.FederatedModel.from_counts(spec, central)
    assert np.array_equal(model.predict(test), reference.predict(test))
    assert np.array_equal(model.predict_proba(test), reference.predict_proba(test))  # bit for bit
    predicted, proba = oracle(spec, union, test)
    assert np.array_equal(model.predict(test).astype(str), predicted)
    np.testing.assert_allclose(model.predict_proba(test), proba, rtol=1e-12, atol=1e-12)
    # the test can tell models apart: one party's model alone differs from the union's
    alone = F.FederatedModel.from_counts(spec, F.count_frame(pd.read_csv(spec.parties[0].path), spec))
    assert not np.allclose(alone.predict_proba(test), model.predict_proba(test))


def test_federated_model_equals_centralized_and_sklearn_on_the_demo_clinics(tmp_path):
    spec = F.load_spec(write_spec(tmp_path, demo_spec(tmp_path / "root")))
    check_exact(spec, pd.concat([union_of(spec), grid(spec)], ignore_index=True))


def test_federated_model_equals_centralized_and_sklearn_on_nursery_in_three_parties(tmp_path):
    if not NURSERY.is_file():
        pytest.skip(f"Nursery is not at {NURSERY} (shared data sets absent)")
    frame = pd.read_csv(NURSERY, dtype=str)
    attributes = [c for c in frame.columns if c != "class"]
    part = np.random.default_rng(11).integers(0, 3, len(frame))
    parties = []
    for i in range(3):
        frame[part == i].to_csv(tmp_path / f"party{i}.csv", index=False)
        parties.append({"name": f"party{i}", "path": f"party{i}.csv"})
    spec = F.load_spec(write_spec(tmp_path, {
        "dataset": "nursery", "parties": parties, "class_column": "class",
        "class_domain": sorted(frame["class"].unique()),  # sklearn's order: the same tie-break
        "attributes": {a: {"domain": list(dict.fromkeys(frame[a]))} for a in attributes},
        "min_count": {"k": 1, "action": "suppress"}, "publish": {"root": "root"}}))
    check_exact(spec, frame)  # Nursery is the whole grid of its attributes: every cell is predicted


def test_a_party_may_hold_parquet_and_its_columns_in_any_order(tmp_path):
    spec = demo_spec(tmp_path / "root")
    csv_counts = F.count_frame(pd.read_csv(spec["parties"][1]["path"]), F.load_spec(write_spec(tmp_path, spec)))
    frame = pd.read_csv(spec["parties"][1]["path"])
    frame[list(reversed(frame.columns))].to_parquet(tmp_path / "south.parquet", index=False)
    spec["parties"][1]["path"] = "south.parquet"
    loaded = F.load_spec(write_spec(tmp_path, spec))
    assert loaded.parties[1].format == "parquet"
    shares = F.party_shares(loaded, "south_clinic")
    assert np.array_equal(shares.share_a + shares.share_b, csv_counts)


def test_demo_party_files_are_what_the_generator_makes():
    for name, frame in generator().generate().items():
        shipped = pd.read_csv(DEMO / f"{name}.csv")
        pd.testing.assert_frame_equal(shipped, frame.reset_index(drop=True), check_dtype=False)


# -- the shares ----------------------------------------------------------------------------------------------
def demo_counts() -> np.ndarray:
    spec = F.load_spec(DEMO_SPEC)
    return F.count_frame(pd.read_csv(spec.parties[0].path), spec)


def test_each_share_alone_is_uniform_and_the_two_add_up_to_the_counts():
    counts = demo_counts()
    a, b = map(np.concatenate, zip(*[F.split_shares(counts) for _ in range(600)]))
    assert np.array_equal(a + b, np.tile(counts, 600))  # modulo 2**64
    for share in (a, b):
        assert top_bits_p(share) > 1e-6 and low_bits_p(share) > 1e-6
    raw = np.tile(counts, 600)
    assert top_bits_p(raw) < 1e-100 and low_bits_p(raw) < 1e-100  # the raw counts would fail
    # plausible wrong splits fail too: a 32-bit "random" share, and counts plus small noise
    rng = np.random.default_rng(0)
    short = rng.integers(0, 2**32, raw.size, dtype=np.uint64)
    assert top_bits_p(short) < 1e-100 and top_bits_p(raw - short) < 1e-100
    assert top_bits_p(raw + rng.integers(0, 2**16, raw.size, dtype=np.uint64)) < 1e-100


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40), st.integers(2, 5))
def test_shares_of_any_vectors_sum_back_modulo_2_64(values, parties):
    counts = [np.array(values, np.uint64) for _ in range(parties)]
    shares = [F.split_shares(c) for c in counts]
    total = F.mixer_sum([a for a, _ in shares]) + F.mixer_sum([b for _, b in shares])
    expected = np.array([(v * parties) % 2**64 for v in values], np.uint64)
    assert np.array_equal(total, expected)


def test_combine_refuses_sums_that_are_no_counts():
    spec = F.load_spec(DEMO_SPEC)
    layout = F.layout_of(spec)
    counts = demo_counts()
    a, b = F.split_shares(counts)
    assert np.array_equal(F.combine(a, b, layout), counts.astype(np.int64))
    tampered = a.copy()
    tampered[layout.offsets[0]] += np.uint64(1)  # one cell off by one: its row no longer adds up
    with pytest.raises(F.InconsistentSums):
        F.combine(tampered, b, layout)
    with pytest.raises(F.InconsistentSums):
        F.combine(F.split_shares(counts)[0], b, layout)  # a share from another split: garbage
    assert "PartyShares(p, 32 cells)" == repr(F.PartyShares("p", "0" * 64, a, b))  # a repr shows no share


# -- the minimum-count rule ----------------------------------------------------------------------------------
def tiny_spec(tmp_path: Path, k: int, action: str = "suppress"):
    return F.load_spec(write_spec(tmp_path, {
        "dataset": "tiny", "parties": [{"name": "p1", "path": "p1.csv"}, {"name": "p2", "path": "p2.csv"}],
        "class_column": "c", "class_domain": ["c1", "c2"], "attributes": {"a": {"domain": ["x", "y", "z"]}},
        "min_count": {"k": k, "action": action}, "publish": {"root": "root"}}))


def test_suppression_hides_small_counts_and_their_differences(tmp_path):
    spec = tiny_spec(tmp_path, k=5)
    layout = F.layout_of(spec)
    counts = np.array([30, 3, 2, 12, 16, 0, 0, 3])  # c1: 30 = 2 + 12 + 16; c2: 3 = 0 + 0 + 3
    out = F.apply_min_count(counts, layout, spec.min_count)
    # c2's count (3) and its cell (3) are below k: c2's row is hidden whole (its zeros too: they would tell which
    # values the small class holds); c1's x (2) too, and then 30 - 12 - 16 would give it back: the row's first
    # other non-zero cell (12) is suppressed as well (2 + 12 >= 2 x k)
    assert out.counts.tolist() == [30, 0, 0, 0, 16, 0, 0, 0]
    assert out.mask.tolist() == [False, True, True, True, False, True, True, True]
    assert (out.primary, out.complementary, out.audited) == (3, 3, True)
    primary_only = np.where((counts >= 1) & (counts < 5), 0, counts)
    assert primary_only[0] - primary_only[2:5].sum() == 2  # what the complementary cell prevents
    table = F.model_table(out, layout)
    assert table["suppressed"].sum() == 6 and (table.loc[table["suppressed"], "count"] == 0).all()
    with pytest.raises(ReleaseRejected, match=r"min_count: 3 cells .* \(in the class counts, 'a'\): refused"):
        F.apply_min_count(counts, layout, tiny_spec(tmp_path, k=5, action="refuse").min_count)
    with pytest.raises(ReleaseRejected, match="every class count is below k"):
        F.apply_min_count(counts, layout, tiny_spec(tmp_path, k=31).min_count)
    same = F.apply_min_count(counts, layout, tiny_spec(tmp_path, k=1).min_count)
    assert np.array_equal(same.counts, counts) and not same.mask.any()


def test_the_demo_as_shipped_suppresses_one_count_and_its_complement():
    spec = F.load_spec(DEMO_SPEC)  # min_count k = 10, suppress
    layout = F.layout_of(spec)
    out = F.apply_min_count(federated_counts(spec), layout, spec.min_count)
    table = F.model_table(out, layout)
    hidden = table[table["suppressed"]]
    assert (out.primary, out.complementary) == (1, 1) and len(hidden) == 2
    assert set(hidden["class"]) == {"high"} and set(hidden["attribute"]) == {"age"} and (hidden["count"] == 0).all()
    F.FederatedModel(layout, out.counts).predict(grid(spec))  # a suppressed model still predicts


# An independent audit, written here with SciPy's linprog on the whole table at once (not ppdp's closed forms or
# its per-class programs): the variables are the suppressed cells, the equalities every published total (a
# class count, published or a variable, equals each of its (class, attribute) rows).
def model_spec(n_classes: int, domains: list[int], k: int):
    from ppdp.schemas.federate import FederateSpec

    return FederateSpec.model_validate({
        "dataset": "m", "parties": [{"name": "p1", "path": "p1.csv"}, {"name": "p2", "path": "p2.csv"}],
        "class_column": "class", "class_domain": [f"k{c}" for c in range(n_classes)],
        "attributes": {f"a{j}": {"domain": [f"v{v}" for v in range(d)]} for j, d in enumerate(domains)},
        "min_count": {"k": k, "action": "suppress"}, "publish": {"root": "r"}})


def lp_ranges(published, mask, layout, bounds=None) -> dict[int, tuple[float, float]]:
    """{suppressed cell: (LP minimum, LP maximum)}; ``bounds`` maps a cell to its (low, high) bounds (default
    (0, None)); an infeasible program raises."""
    from scipy.optimize import linprog

    hidden = [int(i) for i in np.flatnonzero(mask)]
    var = {cell: i for i, cell in enumerate(hidden)}
    n = len(layout.classes)
    a_eq, b_eq = [], []
    for c in range(n):
        for j, values in enumerate(layout.values):
            row, rhs = np.zeros(len(hidden)), 0.0
            cells = [layout.offsets[j] + c * len(values) + v for v in range(len(values))]
            for cell, sign in [(c, -1.0)] + [(x, 1.0) for x in cells]:
                if mask[cell]:
                    row[var[cell]] += sign
                else:
                    rhs -= sign * published[cell]
            a_eq.append(row)
            b_eq.append(rhs)
    box = [(bounds or {}).get(cell, (0, None)) for cell in hidden]
    out = {}
    for cell, i in var.items():
        objective = np.eye(len(hidden))[i]
        low = linprog(objective, A_eq=a_eq, b_eq=b_eq, bounds=box, method="highs")
        assert low.status == 0, "the published table and totals admit no counts"
        high = linprog(-objective, A_eq=a_eq, b_eq=b_eq, bounds=box, method="highs")
        out[cell] = (low.fun, np.inf if high.status == 3 else -high.fun)
    return out


def role_bounds(counts, mask, k) -> dict[int, tuple[float, float | None]]:
    """What an attacker knows who can tell the small suppressed counts from the others: a primary cell is in
    [0, k - 1] (as the LP bound; really 1 to k - 1), another suppressed cell is at least k, or 0."""
    return {int(i): (0, k - 1) if 1 <= counts[i] < k else (k, None) if counts[i] >= k else (0, 0)
            for i in np.flatnonzero(mask)}


def wide(ranges: dict[int, tuple[float, float]], k: int, cells=None) -> bool:
    return all(ranges[c][0] <= 1e-7 and ranges[c][1] >= k - 1 - 1e-7 for c in (ranges if cells is None else cells))


def old_rule(counts, layout, k):
    """The rule before: counts in [1, k) suppressed and, in each row of a published class whose suppressed cells
    add up to between 1 and k - 1, the row's smallest other non-zero cell (built here by hand)."""
    mask = (counts >= 1) & (counts < k)
    for j in range(len(layout.attributes)):
        rows, block = layout.block(mask, j), layout.block(counts, j)
        for c in range(len(layout.classes)):
            if not mask[c] and 0 < block[c][rows[c]].sum() < k:
                others = np.flatnonzero(~rows[c] & (block[c] > 0))
                rows[c, others[np.argmin(block[c][others])]] = True
    return np.where(mask, 0, counts), mask


ISSUE = {  # class: (class count, a's row, b's row); k = 10
    "yes": (66, [1, 10, 25, 30], [4, 11, 12, 39]),
    "no": (80, [20, 20, 20, 20], [40, 40, 0, 0]),
}


def issue_counts(tmp_path: Path) -> tuple[object, np.ndarray]:
    """The issue's case: three parties whose union, summed through the mixers, has the counts of ISSUE, where the
    old rule pins one suppressed count (a: 1, with 10 beside it) and bounds another to [3, 5] (b: 4, with 11)."""
    records = []
    for label, (_, a_row, b_row) in ISSUE.items():
        a_values = [f"v{v}" for v, m in enumerate(a_row) for _ in range(m)]
        b_values = [f"v{v}" for v, m in enumerate(b_row) for _ in range(m)]
        records += [(a, b, label) for a, b in zip(a_values, np.random.default_rng(5).permutation(b_values))]
    frame = pd.DataFrame(records, columns=["a", "b", "class"]).sample(frac=1, random_state=3)
    for i in range(3):
        frame.iloc[i::3].to_csv(tmp_path / f"party{i}.csv", index=False)
    spec = F.load_spec(write_spec(tmp_path, {
        "dataset": "issue", "parties": [{"name": f"party{i}", "path": f"party{i}.csv"} for i in range(3)],
        "class_column": "class", "class_domain": list(ISSUE), "attributes": {
            "a": {"domain": ["v0", "v1", "v2", "v3"]}, "b": {"domain": ["v0", "v1", "v2", "v3"]}},
        "min_count": {"k": 10, "action": "suppress"}, "publish": {"root": "root"}}))
    counts = federated_counts(spec).astype(np.int64)
    expected = [ISSUE[c][0] for c in ISSUE] + [x for c in ISSUE for x in ISSUE[c][1]] + [
        x for c in ISSUE for x in ISSUE[c][2]]
    assert counts.tolist() == expected
    return spec, counts


def feasible_values(rule, counts, layout, cell: int, row: list[int], k: int) -> set[int]:
    """Brute force, for an attacker who knows the rule (``rule(counts) -> (published, mask)``) and which cells of
    ``row`` are below k: every value of ``cell`` some whole-number counts take that give the very same published
    table and flags (the same small cells, the same row totals)."""
    published, mask = rule(counts)
    hidden = [i for i in row if mask[i]]
    total = int(counts[hidden].sum())
    free = [i for i in hidden if i != hidden[-1]]
    found = set()
    for values in itertools.product(range(total + 1), repeat=len(free)):
        last = total - sum(values)
        if last < 0:
            continue
        trial = counts.copy()
        trial[free] = values
        trial[hidden[-1]] = last
        if any((1 <= trial[i] < k) != (1 <= counts[i] < k) or (trial[i] == 0) != (counts[i] == 0) for i in hidden):
            continue  # another set of small cells: the attacker knows which they are
        again, flags = rule(trial)
        if np.array_equal(again, published) and np.array_equal(flags, mask):
            found.add(int(trial[cell]))
    return found


def test_the_issue_case_every_suppressed_count_keeps_its_range(tmp_path):
    spec, counts = issue_counts(tmp_path)
    layout, k = F.layout_of(spec), 10
    a_yes, b_yes = layout.offsets[0], layout.offsets[1]  # the rows of class "yes": their first cells are small
    old_published, old_mask = old_rule(counts, layout, k)
    # the old rule: the standard audit alone sees nothing wrong, but an attacker who knows which suppressed count
    # is the small one pins it (a) and bounds the other (b), and knowing the rule too pins both (brute force)
    assert wide(lp_ranges(old_published, old_mask, layout), k)
    old_roles = lp_ranges(old_published, old_mask, layout, role_bounds(counts, old_mask, k))
    assert old_roles[a_yes] == pytest.approx((0, 1)) and old_roles[b_yes] == pytest.approx((0, 5))
    old = lambda x: old_rule(x, layout, k)  # noqa: E731
    assert feasible_values(old, counts, layout, a_yes, list(range(a_yes, a_yes + 4)), k) == {1}
    assert feasible_values(old, counts, layout, b_yes, list(range(b_yes, b_yes + 4)), k) == {3, 4, 5}
    # the new rule: every suppressed cell's range reaches from 0 to k - 1, for both attackers
    out = F.apply_min_count(counts, layout, spec.min_count)
    assert out.mask[[a_yes, b_yes]].all() and out.primary == 2
    assert wide(lp_ranges(out.counts, out.mask, layout), k)
    roles = lp_ranges(out.counts, out.mask, layout, role_bounds(counts, out.mask, k))
    assert wide(roles, k, [a_yes, b_yes])
    # and an attacker who knows the rule and which cells are small finds every value from 1 to k - 1 possible
    new = lambda x: (lambda r: (r.counts, r.mask))(F.apply_min_count(x, layout, spec.min_count))  # noqa: E731
    assert feasible_values(new, counts, layout, a_yes, list(range(a_yes, a_yes + 4)), k) == set(range(1, k))
    assert F.audit_suppression(F.model_table(out, layout), layout, k) == []


@st.composite
def count_tables(draw):
    """A count table that adds up: 2 or 3 classes, 1 or 2 attributes of 2 to 4 values, k from 2 to 12; each
    class count split at random over each attribute's values (many small cells, some zeros)."""
    k = draw(st.integers(2, 12))
    domains = draw(st.lists(st.integers(2, 4), min_size=1, max_size=2))
    classes = draw(st.lists(st.integers(0, 70), min_size=2, max_size=3))
    blocks = []
    for d in domains:
        for total in classes:
            cuts = sorted(draw(st.lists(st.integers(0, total), min_size=d - 1, max_size=d - 1)))
            blocks += np.diff([0, *cuts, total]).tolist()
    return k, domains, np.array(classes + blocks, dtype=np.int64)


@settings(max_examples=50, deadline=None)
@given(count_tables())
def test_min_count_suppression_passes_an_independent_audit(table):
    k, domains, counts = table
    n = len(counts) // (1 + sum(domains))
    spec = model_spec(n, domains, k)
    layout = F.layout_of(spec)
    small = (counts >= 1) & (counts < k)
    try:
        out = F.apply_min_count(counts, layout, spec.min_count)
    except ReleaseRejected as exc:
        text = str(exc)
        assert "\n" not in text
        if "every class count is below k" in text:
            assert not (counts[:n] >= k).any()
            return
        # refused only where a published class has a row with a small count whose non-zero counts, all hidden,
        # would still add up to less than k times their number
        assert any(counts[c] >= k and layout.block(small, j)[c].any()
                   and counts[c] < k * int((layout.block(counts, j)[c] > 0).sum())
                   for j in range(len(domains)) for c in range(n))
        return
    published, mask = out.counts, out.mask
    assert ((published == 0) | (published >= k)).all()
    assert np.array_equal(published, np.where(mask, 0, counts)) and (mask >= small).all()
    assert out.primary == int(small.sum()) and out.primary + out.complementary == int(mask.sum())
    for j in range(len(domains)):  # what the published cells leave of each row is what is hidden
        hidden = layout.block(counts, j) - layout.block(published, j)
        assert np.array_equal(hidden.sum(axis=1), counts[:n] - layout.block(published, j).sum(axis=1))
    if mask.any():
        assert wide(lp_ranges(published, mask, layout), k)
        primaries = [int(i) for i in np.flatnonzero(small)]
        assert wide(lp_ranges(published, mask, layout, role_bounds(counts, mask, k)), k, primaries)
    assert F.audit_suppression(F.model_table(out, layout), layout, k) == []


def test_the_audit_catches_the_old_rule_and_a_tampered_table(tmp_path):
    spec, counts = issue_counts(tmp_path)
    layout, k = F.layout_of(spec), 10
    published, mask = old_rule(counts, layout, k)
    findings = F.audit_suppression(published, layout, k, mask=mask)
    assert {(f.cell, f.attacker) for f in findings} == {
        (layout.offsets[0] + v, "role-aware") for v in (0, 1)} | {(layout.offsets[1] + v, "role-aware") for v in (0, 1)}
    assert all(str(f).startswith(("'a', class 1 ('yes')", "'b', class 1 ('yes')")) for f in findings)
    assert (findings[0].low, findings[0].high) == (0, 1)  # a's small count, if known to be the small one
    good = F.apply_min_count(counts, layout, spec.min_count)
    table = F.model_table(good, layout)
    assert F.audit_suppression(table, layout, k) == []
    # tampered: the complementary cells published again: the small count is the row's difference
    complements = [layout.offsets[0] + 1, layout.offsets[0] + 2]
    assert good.mask[complements].all()
    tampered = table.copy()
    tampered.loc[complements, "count"] = counts[complements]
    tampered.loc[complements, "suppressed"] = False
    assert {(f.cell, f.attacker) for f in F.audit_suppression(tampered, layout, k)} == {
        (layout.offsets[0], "standard"), (layout.offsets[0], "role-aware")}
    # a suppressed class count (class "no", of 3 rows) hides its rows whole; tampered, one of its rows published:
    # the coupled program (the class count is a variable every row adds up to) finds the class count to the unit
    # and bounds the other row's cells by it
    small = counts.copy()
    small[1], small[6:10], small[14:18] = 3, [3, 0, 0, 0], [1, 2, 0, 0]
    out = F.apply_min_count(small, layout, spec.min_count)
    assert out.mask[[1, *range(6, 10), *range(14, 18)]].all()  # the class count and its rows, zeros too
    assert F.audit_suppression(out.counts, layout, k, mask=out.mask) == []
    leaky = out.mask.copy()
    leaky[14:18] = False  # b's row of class "no" published
    findings = F.audit_suppression(np.where(leaky, 0, small), layout, k, mask=leaky)
    assert {f.cell for f in findings} == {1, 6, 7, 8, 9} and all(f.attacker == "standard" for f in findings)
    independent = lp_ranges(np.where(leaky, 0, small), leaky, layout)
    assert independent[1] == pytest.approx((3, 3)) and independent[6] == pytest.approx((0, 3))
    # a table that does not add up is a finding too
    broken = table.copy()
    broken.loc[0, "count"] = 1
    assert any(f.attacker == "inconsistent" for f in F.audit_suppression(broken, layout, k))


@pytest.mark.parametrize(("rows", "refused"), [
    ({"x": [5, 7, 0]}, True),       # every non-zero cell is small: an attacker who knows that learns each is >= 3
    ({"x": [3, 12, 0]}, True),      # one other cell: 15 - 12 would leave the small one at most 5 (known roles)
    ({"x": [3, 10, 12]}, True),     # all others hidden: 25 - 10 - 10 bounds it by 5
    ({"x": [3, 16, 0]}, False),     # 19 = 2 x 10 - 1: the small one can be anything from 1 to 9
    ({"x": [3, 10, 40]}, False),    # 10 is not enough, 10 and 40 are
])
def test_a_row_that_no_suppression_protects_is_refused_in_one_line(rows, refused):
    k = 10
    spec = model_spec(2, [3], k)
    layout = F.layout_of(spec)
    row = rows["x"]
    counts = np.array([sum(row), 50, *row, 20, 20, 10])
    if not refused:
        out = F.apply_min_count(counts, layout, spec.min_count)
        assert out.mask[2:5].tolist() == [v > 0 for v in row]
        assert wide(lp_ranges(out.counts, out.mask, layout, role_bounds(counts, out.mask, k)), k, [2])
        return
    with pytest.raises(ReleaseRejected) as caught:
        F.apply_min_count(counts, layout, spec.min_count)
    text = str(caught.value)
    assert "\n" not in text and text.startswith("min_count: no safe suppression in 'a0':")
    assert not any(ch.isdigit() for ch in text.replace("'a0'", "")), text  # no count, nor any number
    assert caught.value.exit_code == 3
    # and it is really impossible: with every non-zero cell of the row hidden, an attacker who knows which are
    # small narrows the small one
    hidden = np.zeros(layout.size, bool)
    hidden[2:5] = counts[2:5] > 0
    ranges = lp_ranges(np.where(hidden, 0, counts), hidden, layout, role_bounds(counts, hidden, k))
    assert not wide(ranges, k, [2])


# -- bad inputs, refused with one line naming the party, the file and the column -----------------------------
SECRET = "SENTINEL-VALUE-77"


PLANTED_AGE = 987_654


def party_case(tmp_path: Path, case: str):
    frames = generator().generate(seed=5, scale=0.1)
    frame = frames["north_clinic"].copy()
    if case == "other schema":
        frame = frame.rename(columns={"exercise": "sport"})
    elif case == "extra column":
        frame.insert(2, "notes", SECRET)
    elif case == "value outside the domain":
        frame.loc[3, "region"] = SECRET
    elif case == "missing cell":
        frame.loc[4, "sex"] = None
    elif case == "decimal numbers without bins":
        frame["age"] = frame["age"] + 0.5
    elif case == "age outside the bins":
        frame.loc[2, "age"] = PLANTED_AGE  # outside the bins; digits no temporary path holds (pytest-95...)
    elif case == "no rows":
        frame = frame.iloc[:0]
    elif case == "fewer rows than k":
        frame = frame.iloc[:6]
    frame.to_csv(tmp_path / "north_clinic.csv", index=False)
    for name in ("south_clinic", "city_hospital"):
        frames[name].to_csv(tmp_path / f"{name}.csv", index=False)
    spec = demo_spec(tmp_path / "root")
    for party in spec["parties"]:
        party["path"] = f"{party['name']}.csv"
    if case == "decimal numbers without bins":
        spec["attributes"]["age"] = {"domain": list(range(18, 90))}
    return write_spec(tmp_path, spec)


BAD = {  # case: (error, what the one line says)
    "other schema": (InputError, r"party north_clinic \(north_clinic\.csv\): column 4 \('sport'\) is not declared"),
    "extra column": (InputError, r"column 3 \('notes'\) is not declared"),
    "value outside the domain": (InputError, r"column 5 \('region'\), data row 4: a value outside the declared "
                                             r"domain \(attributes\.region\.domain\)"),
    "missing cell": (InputError, r"column 2 \('sex'\), data row 5: a missing value"),
    "decimal numbers without bins": (InputError, r"column 1 \('age'\) holds decimal numbers: a numeric attribute "
                                                 r"needs declared bin edges \(attributes\.age\.bins\)"),
    "age outside the bins": (InputError, r"column 1 \('age'\), data row 3: a value outside the declared bins"),
    "no rows": (InputError, r"north_clinic\.csv\): the table has no rows"),
    "fewer rows than k": (F.PartyTooSmall, r"fewer rows than min_count\.k = 10: the party does not take part"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_party_is_refused_with_one_line_and_no_value(tmp_path, case):
    spec = F.load_spec(party_case(tmp_path, case))
    error, pattern = BAD[case]
    with pytest.raises(error, match=pattern) as caught:
        F.party_shares(spec, "north_clinic")
    text = str(caught.value)
    assert "\n" not in text and SECRET not in text and str(PLANTED_AGE) not in text
    F.party_shares(spec, "south_clinic")  # the other parties are fine


@pytest.mark.parametrize(("change", "says"), [
    ({"attributes": {"age": {"bins": [18, 90], "domain": [1]}}}, "exactly one of domain"),
    ({"attributes": {"age": {"bins": [18, 60, 40]}}}, "strictly increasing"),
    ({"attributes": {"sex": {"domain": ["F", "M", "F"]}}}, "value 3 repeats"),
    ({"attributes": {"risk": {"domain": ["a", "b"]}}}, "the class column is not an attribute"),
    ({"class_domain": [1, "1"]}, "value 2 repeats"),
    ({"min_count": {"k": 0, "action": "suppress"}}, "min_count.k"),
    ({"min_count": {"k": 2, "action": "drop"}}, "min_count.action"),
    ({"parties": [{"name": "only", "path": "x.csv"}]}, "parties"),
    ({"unknown": 1}, "unknown: unknown key"),
])
def test_a_bad_spec_is_one_line_naming_the_key(tmp_path, change, says):
    spec = demo_spec(tmp_path / "root")
    for key, value in change.items():
        spec[key] = {**spec[key], **value} if isinstance(spec.get(key), dict) and key == "attributes" else value
    with pytest.raises(SpecError) as caught:
        F.load_spec(write_spec(tmp_path, spec))
    assert says in str(caught.value) and "\n" not in str(caught.value)


# -- the flow ------------------------------------------------------------------------------------------------
def prefect_files() -> list[Path]:
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    db_dir = Path(PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split("///", 1)[1]).parent
    return [p for base in {PREFECT_HOME, RESULT_STORAGE, db_dir} if base.exists() for p in base.rglob("*")
            if p.is_file()]


def run_logs(flow_run_id: str) -> list[str]:
    """The messages Prefect stored for a flow run and its subflow runs (read back through its client)."""
    from uuid import UUID

    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=5)
    with get_client(sync_client=True) as client:
        subflows = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[UUID(flow_run_id)])))
        ids = [UUID(flow_run_id), *(r.id for r in subflows)]
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)))
    return [log.message for log in logs]


def task_runs(flow_run_id: str):
    from uuid import UUID

    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)])))


@pytest.fixture(scope="module")
def federation(prefect_harness, tmp_path_factory):
    """One federation of the demo clinics through the CLI (k = 1: nothing suppressed), mixer A failing its first
    attempt; what each mixer received is recorded."""
    from ppdp.flows import federate as flows

    root = tmp_path_factory.mktemp("federation") / "root"
    received: dict[str, list[np.ndarray]] = {}
    original = flows.mixer.fn

    def recording(mixer, shares):
        received[mixer] = [np.array(s, copy=True) for s in shares]
        return original(mixer, shares)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(flows.mixer, "fn", recording)
        mp.setenv(flows.FAULT_ENV, "A:once")
        result = ppdp("federate", DEMO_SPEC, "--set", f"publish.root={root}", "--set", "min_count.k=1")
    assert result.exit_code == 0, result.output
    [folder] = [p.parent for p in root.glob("*/*/manifest.json")]
    spec = F.load_spec(DEMO_SPEC, [f"publish.root={root}", "min_count.k=1"])
    return {"root": root, "folder": folder, "output": result.output, "received": received, "spec": spec,
            "manifest": FederatedManifest.model_validate_json((folder / "manifest.json").read_text()),
            "counts": [F.count_frame(pd.read_csv(p.path), spec) for p in spec.parties]}


def test_the_published_model_is_the_centralized_one(federation):
    spec, folder, manifest = federation["spec"], federation["folder"], federation["manifest"]
    assert f"published federated naive Bayes model {manifest.release_id}" in federation["output"]
    assert "north_clinic, south_clinic, city_hospital" in federation["output"]
    assert sorted(p.name for p in folder.iterdir()) == ["data.parquet", "manifest.json", "report.html"]
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert "Every claim below holds" in page and manifest.release_id in page
    regenerated = ppdp("report", folder)  # the page is regenerated from the folder alone, byte for byte
    assert regenerated.exit_code == 0 and "is up to date" in regenerated.output, regenerated.output
    model = F.FederatedModel.from_release(folder)
    union = union_of(spec)
    central = F.FederatedModel.from_counts(spec, F.count_frame(union, spec))
    test = pd.concat([union, grid(spec)], ignore_index=True)
    assert np.array_equal(model.predict(test), central.predict(test))
    assert np.array_equal(model.predict_proba(test), central.predict_proba(test))
    table = pd.read_parquet(folder / "data.parquet")
    assert list(table.columns) == F.COLUMNS and len(table) == spec.cells() == manifest.rows
    assert set(table["value"].dropna()) <= {v for a in manifest.attributes for v in a.values}
    assert set(table.loc[table["attribute"] == "age", "value"]) == {"[18, 30)", "[30, 45)", "[45, 60)", "[60, 90]"}
    # the manifest names the parties and their files (by keyed digests: no hash confirms a guessed file), never a
    # party's rows or counts
    key = digests.local_key()
    assert [p.name for p in manifest.parties] == [p.name for p in spec.parties]
    for party, named in zip(spec.parties, manifest.parties, strict=True):
        sha = audit.file_sha256(party.path)
        assert set(named.model_dump()) == {"name", "file_digest"} and sha not in named.model_dump_json()
        assert digests.check(sha, named.file_digest, manifest.input_key_id, key).verdict == "holds"
    assert manifest.kind == "federated_naive_bayes" and manifest.min_count.suppressed_cells == 0
    text = (folder / "manifest.json").read_text()
    for p in spec.parties:
        assert f": {len(pd.read_csv(p.path))}," not in text and f": {len(pd.read_csv(p.path))}\n" not in text


def test_each_mixer_received_one_uniform_share_per_party_and_a_retry_happened(federation):
    received, counts = federation["received"], federation["counts"]
    assert sorted(received) == ["A", "B"] and all(len(v) == 3 for v in received.values())
    for mixer, shares in received.items():
        for share in shares:
            assert not any(np.array_equal(share, c) for c in counts), f"mixer {mixer} received raw counts"
        assert top_bits_p(np.concatenate(shares), bits=2) > 1e-6
    both = np.concatenate(received["A"] + received["B"])
    assert top_bits_p(both, bits=4) > 1e-6 and top_bits_p(np.concatenate(counts), bits=2) < 1e-20
    total = F.mixer_sum(received["A"]) + F.mixer_sum(received["B"])
    assert np.array_equal(total, sum(counts))
    runs = {r.name: r for r in task_runs(federation["manifest"].flow_run_id)}
    assert runs["mixer-A"].run_count == 2 and runs["mixer-B"].run_count == 1  # A failed once, then retried


def test_no_party_counts_or_shares_in_prefect_files_or_logs(federation):
    stored = [p for p in RESULT_STORAGE.rglob("*") if p.is_file()] if RESULT_STORAGE.exists() else []
    assert stored == [], f"Prefect persisted results: {stored}"
    needles = []
    for c in federation["counts"] + federation["received"]["A"] + federation["received"]["B"]:
        needles += [c.astype("<u8").tobytes(), c.astype("<i8").tobytes(), json.dumps(c.tolist()).encode(),
                    np.array2string(c, separator=", ").encode()]
    scanned = 0
    for path in prefect_files():
        blob = path.read_bytes()
        scanned += 1
        for needle in needles:
            assert needle not in blob, f"a party's counts or shares found in {path}"
    assert scanned > 0
    messages = run_logs(federation["manifest"].flow_run_id)
    for c in federation["counts"]:
        text = ", ".join(str(int(v)) for v in c[:8])
        assert not any(text in m for m in messages)
    assert not any("Traceback" in m for m in messages)


def test_audit_verify_passes_with_a_normal_and_a_federated_release(workspace, federation):
    root, release_id = federation["root"], federation["manifest"].release_id
    assert ppdp("run", workspace.spec(publish__root=str(root))).exit_code == 0  # a normal release beside it
    verified = ppdp("audit", "verify", "--root", root)
    assert verified.exit_code == 0 and "2 published releases verified" in verified.output, verified.output
    shown = ppdp("audit", "show", release_id, "--root", root)
    assert shown.exit_code == 0 and "federated naive Bayes, 32 cells" in shown.output, shown.output
    # an altered federated manifest is checked against the federated schema (not the release one)
    copy = workspace.dir / "copy"
    shutil.copytree(root, copy)
    path = copy / "clinics_risk_nb" / release_id / "manifest.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "seed": 8}))
    problems = audit.verify(copy)
    assert any("manifest.json" in p and "altered" in p for p in problems)
    assert not any("does not match the manifest schema" in p for p in problems)
    path.write_text(json.dumps({**data, "rows_per_party": [1, 2, 3]}))
    assert any("does not match the manifest schema (at rows_per_party)" in p for p in audit.verify(copy))
    assert audit.verify(root) == []


def refused(result, code: int, root: Path, status: str, says: str) -> None:
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("ppdp: ")]
    assert len(lines) == 1 and says in lines[0], result.output
    assert "Traceback" not in result.output
    assert under(root) == ["audit.db"]  # no release folder, no staging folder
    [entry] = audit.list_entries(root)
    assert entry.status == status and says.split(":")[0] in entry.reason


@pytest.mark.slow  # two CLI refusals through the flow (about 5 s); the same refusals are tested without Prefect above
def test_refusals_publish_nothing_exit_with_their_code_and_are_audited(prefect_harness, tmp_path):
    spec = party_case(tmp_path, "fewer rows than k")  # refused by the party's own subflow
    root = tmp_path / "root"
    refused(ppdp("federate", spec), 3, root, "rejected", "fewer rows than min_count.k = 10")
    shutil.rmtree(root)
    refused(ppdp("federate", DEMO_SPEC, "--set", f"publish.root={root}", "--set", "min_count.action=refuse"), 3,
            root, "rejected", "min_count: 1 cell of the model count between 1 and k - 1 = 9 (in 'age')")


@pytest.mark.slow  # the same path as the party refused above (its subflow fails), with exit code 2
def test_a_party_of_another_schema_is_refused_by_the_flow(prefect_harness, tmp_path):
    refused(ppdp("federate", party_case(tmp_path, "other schema")), 2, tmp_path / "root", "error",
            "column 4 ('sport') is not declared")


@pytest.mark.slow  # about 5 s; .ci/run runs it (make test stays under 4 minutes)
def test_a_mixer_that_never_answers_is_a_clean_refusal(prefect_harness, tmp_path, monkeypatch):
    from ppdp.flows.federate import FAULT_ENV

    root = tmp_path / "root"
    monkeypatch.setenv(FAULT_ENV, "B:always")
    result = ppdp("federate", DEMO_SPEC, "--set", f"publish.root={root}")
    refused(result, 1, root, "error", "mixer B did not answer")
    [entry] = audit.list_entries(root)
    messages = run_logs(entry.flow_run_id)
    assert any("mixer B did not answer" in m and "Retries are exhausted" in m for m in messages), messages
    assert not any("Traceback" in m for m in messages)  # Prefect's task-failure log line stays one line
    runs = {r.name: r for r in task_runs(entry.flow_run_id)}
    assert runs["mixer-B"].run_count == 3 and runs["mixer-B"].state.is_failed()  # two retries, then refused


def test_a_bad_spec_or_a_missing_party_file_costs_no_flow(tmp_path):
    spec = demo_spec(tmp_path / "root")
    spec["parties"][1]["path"] = str(tmp_path / "absent.csv")
    result = ppdp("federate", write_spec(tmp_path, spec))
    assert result.exit_code == 2 and "party south_clinic: its file" in result.output and "does not exist" in \
        result.output
    [entry] = audit.list_entries(tmp_path / "root")
    assert entry.status == "error" and entry.flow_run_id is None  # refused before any flow run


def test_validate_release_rechecks_a_federated_model_from_its_folder(federation, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(federation["folder"], folder)
    result = ppdp("validate", "--release", folder)
    assert result.exit_code == 0, result.output
    assert result.output.count("HOLDS") == 4 and "federated naive Bayes model" in result.output
    # hide one (class, attribute, value) count as if suppressed, and claim a k above it: its value is then the
    # class count minus the row's published cells, which the re-check must catch (as the data's changed hash)
    table = pd.read_parquet(folder / "data.parquet")
    cell = table.index[(table["attribute"].notna()) & (table["count"] > 0)][0]
    hidden = int(table.loc[cell, "count"])
    table.loc[cell, ["count", "suppressed"]] = [0, True]
    table.to_parquet(folder / "data.parquet", index=False)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["min_count"].update(k=hidden + 1, suppressed_cells=1, complementary_cells=0)
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = ppdp("validate", "--release", folder)
    assert result.exit_code == 3, result.output
    failed = {line.split()[0] for line in result.output.splitlines() if "DOES NOT HOLD" in line}
    assert {"integrity", "suppression"} <= failed, result.output
    [flagged] = [line for line in result.output.splitlines() if line.strip().startswith("suppressed cells")]
    assert "HOLDS" in flagged and "DOES NOT HOLD" not in flagged  # one flagged cell, published as 0, as claimed


def republish(folder: Path, published: np.ndarray, mask: np.ndarray, layout, k: int, primary: int) -> None:
    """Rewrite a model folder's table with these counts and flags, and its manifest to match (k, the cell
    counts, the table's hash): only the suppression itself is left to judge."""
    result = F.Suppressed(published, mask, primary, int(mask.sum()) - primary)
    F.model_table(result, layout).to_parquet(folder / "data.parquet", index=False)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["min_count"].update(k=k, suppressed_cells=primary, complementary_cells=int(mask.sum()) - primary)
    manifest["output_sha256"] = audit.file_sha256(folder / "data.parquet")
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_validate_release_runs_the_suppression_audit(federation, tmp_path):
    spec = federation["spec"]
    layout, counts, k = F.layout_of(spec), sum(federation["counts"]).astype(np.int64), 30
    folder = tmp_path / "model"
    shutil.copytree(federation["folder"], folder)
    out = F.apply_min_count(counts, layout, spec.min_count.model_copy(update={"k": k}))
    republish(folder, out.counts, out.mask, layout, k, out.primary)
    result = ppdp("validate", "--release", folder, "--json")
    assert result.exit_code == 0, result.output
    claims = {c["name"]: c for c in json.loads(result.output)["claims"]}
    assert claims["suppression audit"] == {**claims["suppression audit"], "holds": True, "value": 0}
    # the demo's counts suppressed with the old rule (the smallest other cell) at the same k: the standard audit
    # passes, but knowing which suppressed counts are the small ones narrows them: validate fails (exit 3)
    published, mask = old_rule(counts, layout, k)
    assert wide(lp_ranges(published, mask, layout), k)
    republish(folder, published, mask, layout, k, int(((counts >= 1) & (counts < k)).sum()))
    result = ppdp("validate", "--release", folder)
    assert result.exit_code == 3, result.output
    failed = {line.split()[0] for line in result.output.splitlines() if "DOES NOT HOLD" in line}
    assert failed == {"suppression"}, result.output
