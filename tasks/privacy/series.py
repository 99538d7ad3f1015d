"""A release judged with the dataset's earlier releases, as an attacker holding all of them would judge it.

Where each input record went in a release (its *membership*: class or group, or published row) is recorded in the
publisher's series ledger (:mod:`ppdp.tasks.series`) under a keyed fingerprint. Three composed figures, each over
the records the new release shares with the earlier ones that count:

* **candidate sets** (classes and generating groups): a record's candidate set is the records that share its
  class (or group) in every release it is in (Ganta, Kasiviswanathan and Smith, KDD 2008, intersect them); the
  smallest must keep ``k`` records (the policy's k, else 2). Reported against each earlier release alone and over
  the whole series.
* **sensitive values** (classes and groups publishing a protected column): the attacker intersects the values
  published in a record's class in each release and guesses the most frequent of the values left in this
  release's class; the share of records guessed right (exactly for categories, within 0.1 standard deviation for
  numbers) may exceed the same guess from this release alone by at most the floor's attribute-disclosure bound
  (or the policy's ``max_disclosure_gain`` if lower).
* **averaged copies** (record releases: noise, SVD, UMA, sample generation): the attacker is assumed to know which
  published rows are copies of one record (worst case) and averages them, which shrinks independent noise by the
  square root of the number of copies; the share of input records whose nearest averaged row stands for them
  (linkage, in the encoded quasi-identifier space of the release's own measure) must stay within the policy's
  ``max_linkage_risk`` (else the floor's 0.5).

Releases of another kind (a DP synthesizer; a partitioned release's tables against row releases) are listed with
their common records but add no figure: a DP release's loss is counted by the budget instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.privacy import DISCLOSURE_TOLERANCE_SD, FLOOR, PrivacyThresholds
from ppdp.schemas.release import PartsRelease
from ppdp.schemas.reports import AttackerView, Roles
from ppdp.schemas.series import SeriesFigure, SeriesPair

KIND_OF_UNIT = {"equivalence_class": "classes", "generating_group": "groups", "record": "records"}


@dataclass
class View:
    """One release (or one table of a partitioned release) as the series sees it.

    ``members``: columns fp (record fingerprint), grp (class or group id, -1 none), row (published row, -1 none).
    ``frame``: the published table (loaded for the value and copy figures; None when not needed or absent)."""

    release_id: str
    method: str
    unit: str
    members: pd.DataFrame
    part: str = ""
    frame: pd.DataFrame | None = None
    protected: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return KIND_OF_UNIT.get(self.unit, "none")


def empty_members() -> pd.DataFrame:
    return pd.DataFrame({"part": pd.Series(dtype=str), "fp": pd.Series(dtype=np.int64),
                         "grp": pd.Series(dtype=np.int64), "row": pd.Series(dtype=np.int64)})


def class_ids(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Class id of every row over ``columns`` as published (one class when there is none)."""
    cols = [c for c in columns if c in frame.columns]
    if not cols or not len(frame):
        return np.zeros(len(frame), dtype=np.int64)
    keys = frame[cols].astype("string").fillna("\x00<NA>")
    return keys.groupby(cols, sort=True, dropna=False).ngroup().to_numpy(dtype=np.int64)


def release_members(release, fp_source: np.ndarray, view: AttackerView | None, source: pd.DataFrame | None = None
                    ) -> pd.DataFrame:
    """Where each record of the sanitizer's input went in ``release``: columns part, fp, grp, row.

    Classes are taken as the attacker sees them (the attacker's view: published quasi-identifiers and the columns
    counted beside them); a partitioned release records each table's classes of every record (by recoding the
    input as the table publishes it); generating groups from the method's own grouping; record releases the
    published row standing for each record."""
    fp_source = np.asarray(fp_source, dtype=np.int64)
    if isinstance(release, PartsRelease):
        if release.recode is None or source is None:
            return empty_members()
        tables = release.recode(source.reset_index(drop=True))
        out = []
        for part in release.parts:
            recoded = tables[part.name]
            grp = class_ids(recoded, list(part.quasi_identifiers))
            out.append(pd.DataFrame({"part": part.name, "fp": fp_source[:len(grp)], "grp": grp,
                                     "row": np.full(len(grp), -1, dtype=np.int64)}))
        return pd.concat(out, ignore_index=True) if out else empty_members()
    kind = KIND_OF_UNIT.get(release.unit, "none")
    row_source = np.asarray(release.row_source, dtype=np.int64)
    if kind == "groups" and release.input_group is not None:
        ig = np.asarray(release.input_group, dtype=np.int64)
        rows = np.full(len(ig), -1, dtype=np.int64)
        has_source = row_source >= 0
        rows[row_source[has_source]] = np.flatnonzero(has_source)
        keep = ig >= 0
        return pd.DataFrame({"part": "", "fp": fp_source[keep], "grp": ig[keep], "row": rows[keep]})
    linked = np.flatnonzero(row_source >= 0)
    if kind == "classes":
        known = [] if view is None else [*view.quasi_identifiers, *view.counted_columns]
        grp = class_ids(release.frame, known)[linked]
    elif kind == "records":
        grp = np.full(linked.size, -1, dtype=np.int64)
    else:
        return empty_members()
    return pd.DataFrame({"part": "", "fp": fp_source[row_source[linked]], "grp": grp, "row": linked})


# -- candidate sets -----------------------------------------------------------------------------------------------
def _grouped(view: View) -> pd.Series:
    m = view.members
    m = m[m["grp"] >= 0]
    return pd.Series(m["grp"].to_numpy(), index=m["fp"].to_numpy())


def pair_intersection(current: View, earlier: View, k: int) -> SeriesPair:
    """The current release with one earlier release: for each common record, how many records share its class (or
    group) in both."""
    a, b = _grouped(current), _grouped(earlier)
    common = a.index.intersection(b.index)
    pair = SeriesPair(release_id=earlier.release_id + (f" ({earlier.part})" if earlier.part else ""),
                      method=earlier.method, unit=earlier.unit, common_records=int(common.size))
    if not common.size or current.kind not in ("classes", "groups") or earlier.kind not in ("classes", "groups"):
        return pair
    both = pd.DataFrame({"a": a.loc[common].to_numpy(), "b": b.loc[common].to_numpy()})
    sizes = both.groupby(["a", "b"])["a"].transform("size").to_numpy()
    own = a.groupby(a.to_numpy()).transform("size").loc[common].to_numpy()
    pair.smallest_intersection = int(sizes.min())
    pair.records_below_k = float(np.mean(sizes < np.minimum(k, own)))
    return pair


def series_intersection(current: View, earlier: Sequence[View]) -> tuple[int | None, np.ndarray, np.ndarray]:
    """Over every counted release at once: for each record of the current release present in at least one earlier
    class or group release, the size of the intersection of its candidate sets (records in every release it is in,
    sharing its class or group in each). Returns (smallest, sizes, own): ``own`` is each of those records' class
    (or group) size in the current release alone."""
    cur = _grouped(current)
    others = [v for v in earlier if v.kind in ("classes", "groups")]
    if current.kind not in ("classes", "groups") or not others or not len(cur):
        return None, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    table = pd.DataFrame({"c": cur.to_numpy()}, index=cur.index)
    names = []
    for i, v in enumerate(others):
        g = _grouped(v)
        g = g[~g.index.duplicated()]
        table[f"e{i}"] = g.reindex(table.index).to_numpy(dtype=float)
        names.append(f"e{i}")
    present = table[names].notna().to_numpy()
    masks = present @ (1 << np.arange(len(names), dtype=np.int64))
    sizes = np.zeros(len(table), dtype=np.int64)
    for mask in np.unique(masks):
        if mask == 0:
            continue
        cols = [n for j, n in enumerate(names) if mask >> j & 1]
        holders = (masks & mask) == mask  # candidates: in every release the record is in
        sub = table.loc[holders, ["c", *cols]]
        counts = sub.groupby(["c", *cols]).size()
        mine = table.loc[masks == mask, ["c", *cols]]
        sizes[masks == mask] = counts.reindex(pd.MultiIndex.from_frame(mine)).to_numpy()
    involved = masks > 0
    own = table.groupby("c")["c"].transform("size").to_numpy()
    return (int(sizes[involved].min()) if involved.any() else None), sizes[involved], own[involved]


def combine_parts(members: pd.DataFrame) -> pd.DataFrame:
    """A partitioned release's records as one view: a record's class is the combination of its classes in every
    table (the most an attacker can narrow one release to, were the tables' rows linkable)."""
    if not len(members) or (members["part"] == "").all():
        return members
    wide = members.pivot_table(index="fp", columns="part", values="grp", aggfunc="first")
    grp = wide.fillna(-1).groupby(list(wide.columns), sort=True).ngroup().to_numpy(dtype=np.int64)
    return pd.DataFrame({"part": "", "fp": wide.index.to_numpy(dtype=np.int64), "grp": grp,
                         "row": np.full(len(wide), -1, dtype=np.int64)})


# -- sensitive values ---------------------------------------------------------------------------------------------
def _class_values(view: View, column: str) -> pd.DataFrame | None:
    """Distinct (grp, value) pairs of ``column`` published per class or group of ``view``, with counts."""
    frame = view.frame
    if frame is None or column not in frame.columns:
        return None
    if view.kind == "groups" and GROUP_COLUMN in frame.columns:
        grp = frame[GROUP_COLUMN].to_numpy(dtype=np.int64)
    elif view.kind == "classes":
        m = view.members[view.members["row"] >= 0]
        grp = np.full(len(frame), -1, dtype=np.int64)
        grp[m["row"].to_numpy()] = m["grp"].to_numpy()
    else:
        return None
    values = _text(frame[column])
    pairs = pd.DataFrame({"grp": grp, "v": values})
    pairs = pairs[(pairs["grp"] >= 0) & pairs["v"].notna()]
    return pairs.value_counts(["grp", "v"]).rename("n").reset_index()


def _text(series: pd.Series) -> pd.Series:
    return series.astype("string").reset_index(drop=True)


def value_intersection(current: View, earlier: Sequence[View], column: str, truth: pd.Series
                       ) -> tuple[float, float, int] | None:
    """The composed attack on one protected column: (share of records guessed right from the intersection of
    their classes' values, share guessed right from the current class alone, records measured); None when no
    record of the current release is in an earlier release publishing the column per class.

    ``truth``: each current record's true value, indexed by fingerprint."""
    cur = _class_values(current, column)
    if cur is None:
        return None
    cur_m = current.members[current.members["grp"] >= 0][["fp", "grp"]].drop_duplicates("fp")
    pairs = cur_m.merge(cur, on="grp")  # fp, grp, v, n: every value of the record's class
    constrained = np.zeros(len(pairs), dtype=bool)
    involved: set[int] = set()
    for v in earlier:
        ev = _class_values(v, column)
        if ev is None:
            continue
        em = v.members[v.members["grp"] >= 0][["fp", "grp"]].drop_duplicates("fp")
        em = em[em["fp"].isin(cur_m["fp"])]
        if not len(em):
            continue
        involved.update(em["fp"].tolist())
        allowed = em.merge(ev[["grp", "v"]], on="grp")[["fp", "v"]].assign(ok=True)
        joined = pairs[["fp", "v"]].merge(allowed, on=["fp", "v"], how="left")
        in_earlier = pairs["fp"].isin(em["fp"]).to_numpy()
        ok = joined["ok"].fillna(False).to_numpy(dtype=bool)
        constrained |= in_earlier & ~ok  # a value absent from the record's class in a release it is in: ruled out
    if not involved:
        return None
    pairs = pairs[pairs["fp"].isin(involved)]
    kept = pairs[~constrained[pairs.index.to_numpy()]]
    numbers = pd.to_numeric(truth, errors="coerce")
    numeric = bool(numbers.notna().all()) and len(numbers) > 0
    tol = DISCLOSURE_TOLERANCE_SD * float(np.std(numbers.to_numpy(dtype=float))) if numeric else 0.0

    def success(candidates: pd.DataFrame) -> pd.Series:
        top = candidates.groupby("fp")["n"].transform("max")
        modes = candidates[candidates["n"] == top]
        ties = modes.groupby("fp")["v"].transform("size")
        true = truth.reindex(modes["fp"].to_numpy()).to_numpy()
        if numeric:
            guess = pd.to_numeric(modes["v"], errors="coerce").to_numpy(dtype=float)
            right = np.abs(guess - np.asarray(true, dtype=float)) <= tol + 1e-12
        else:
            right = modes["v"].to_numpy(dtype=object) == pd.Series(true).astype("string").to_numpy(dtype=object)
        return pd.Series(right / ties.to_numpy(), index=modes.index).groupby(modes["fp"].to_numpy()).sum()

    fps = pd.Index(sorted(involved))
    alone = success(pairs).reindex(fps, fill_value=0.0)
    composed = success(kept).reindex(fps)
    composed = composed.fillna(alone)  # every value ruled out (inconsistent releases): the class's guess
    return float(composed.mean()), float(alone.mean()), int(fps.size)


# -- averaged copies ----------------------------------------------------------------------------------------------
def averaged_linkage(current: View, earlier: Sequence[View], original: pd.DataFrame, fp_original: np.ndarray,
                     roles: Roles, columns: Sequence[str]) -> tuple[float, int] | None:
    """Linkage after averaging every published copy of each record (record releases): the share of ``original``
    records (the current input, fingerprints ``fp_original``) whose nearest row of the current release, with each
    row replaced by the mean of its record's copies across releases, stands for them; and how many records had
    more than one copy. None when no record has an earlier copy."""
    from ppdp.tasks.core.encoding import TableEncoder
    from ppdp.tasks.privacy import risk

    frame = current.frame
    if frame is None or current.kind != "records" or not len(original):
        return None
    cols = [c for c in columns if c in frame.columns and c in original.columns]
    if not cols:
        return None
    enc = TableEncoder(columns=cols, kinds=roles.kinds(), orders=roles.orders()).fit(original)
    x_rel = enc.transform(frame[cols])
    total = x_rel.copy()
    copies = np.ones(len(frame))
    row_fp = np.full(len(frame), 0, dtype=np.int64)
    has_fp = np.zeros(len(frame), dtype=bool)
    m = current.members[current.members["row"] >= 0]
    row_fp[m["row"].to_numpy()] = m["fp"].to_numpy()
    has_fp[m["row"].to_numpy()] = True
    position = pd.Series(np.flatnonzero(has_fp), index=row_fp[has_fp])
    position = position[~position.index.duplicated()]
    for v in earlier:
        if v.kind != "records" or v.frame is None or not all(c in v.frame.columns for c in cols):
            continue
        em = v.members[(v.members["row"] >= 0) & v.members["fp"].isin(position.index)]
        if not len(em):
            continue
        x_e = enc.transform(v.frame[cols].iloc[em["row"].to_numpy()])
        at = position.loc[em["fp"].to_numpy()].to_numpy()
        np.add.at(total, at, x_e)
        np.add.at(copies, at, 1)
    if not (copies > 1).any():
        return None
    averaged = total / copies[:, None]
    x_orig = enc.transform(original[cols])
    _, nearest = risk.closest_records(x_orig, averaged)
    fp_of_row = np.where(has_fp, row_fp, np.iinfo(np.int64).min)
    linked = fp_of_row[nearest] == np.asarray(fp_original, dtype=np.int64)
    return float(np.mean(linked)), int((copies > 1).sum())


# -- the bounds ---------------------------------------------------------------------------------------------------
def floor_limit(key: str) -> float:
    return next(r.limit for r in FLOOR if r.key == key)


def disclosure_bound(policy: PrivacyThresholds) -> float:
    bound = floor_limit("disclosure_gain")
    return min(bound, policy.max_disclosure_gain) if policy.max_disclosure_gain is not None else bound


def linkage_bound(policy: PrivacyThresholds) -> float:
    bound = floor_limit("linkage_risk")
    return min(bound, policy.max_linkage_risk) if policy.max_linkage_risk is not None else bound


def figure(name: str, value: float, limit: float, comparison: Literal["<=", ">="] = "<=", against: str | None = None,
           detail: str = "") -> SeriesFigure:
    holds = value <= limit + 1e-12 if comparison == "<=" else value >= limit - 1e-12
    return SeriesFigure(name=name, value=float(value), limit=float(limit), comparison=comparison,
                        holds=bool(holds), against=None if holds else against, detail=detail)


# -- the whole judgement ------------------------------------------------------------------------------------------
def load_view(root, dataset: str, rel, protected: Sequence[str], columns: Sequence[str]) -> list[View]:
    """An earlier release as views (one per table), with its published table when a figure needs it."""
    from ppdp.tasks import series as ledger
    from ppdp.tasks.layout import release_folder

    m = ledger.members(root, rel.release_id)
    partitioned = bool(len(m)) and not (m["part"] == "").all()
    frame = None
    path = release_folder(root, dataset, rel.release_id) / "data.parquet"
    if not partitioned and path.exists():
        import pyarrow.parquet as pq

        names = pq.read_schema(path).names
        want = [c for c in dict.fromkeys((*protected, *columns, GROUP_COLUMN)) if c in names]
        frame = pq.read_table(path, columns=want).to_pandas()
    return [View(release_id=rel.release_id, method=rel.method, unit=rel.unit, members=combine_parts(m),
                 frame=frame)]


def judge_series(*, spec, release, method, roles: Roles, prints: np.ndarray, fingerprinted_by: str,
                 view: AttackerView | None, source: pd.DataFrame, protected_columns: Sequence[str], now):
    """This release with the dataset's earlier releases that count: (SeriesReport, this release's ledger records).
    ``method`` is the method as it ran (:class:`MethodRecord`: a DP method's epsilon and delta, the kept members);
    ``prints`` the fingerprints of the sanitizer's input rows. Reads the ledger and the earlier published tables;
    writes nothing."""
    method_name, fp_source = method.name, prints
    kept_members = getattr(method, "kept_members", None)
    epsilon = delta = None
    if release.unit == "differential_privacy":
        epsilon = float(method.params.get("epsilon") or 0.0)
        delta = float(method.params.get("delta") or 0.0)
    from ppdp.schemas.series import BudgetSpent, SeriesReport
    from ppdp.tasks import series as ledger

    root = spec.publish.root
    members = release_members(release, fp_source, view, source)  # per table: what the ledger keeps
    earlier = ledger.earlier_releases(root, spec.dataset, spec.series, now)
    k = spec.privacy.k or 2
    report = SeriesReport(ledger="recorded" if earlier else "first", window=ledger.window_text(spec.series),
                          earlier=[r.release_id for r in earlier], fingerprinted_by=fingerprinted_by, k=k,
                          kept_members=kept_members)
    current_views = [View(release_id="this release", method=method_name, unit=release.unit,
                          members=combine_parts(members),
                          frame=None if isinstance(release, PartsRelease) else release.frame,
                          protected=list(protected_columns))]
    qis = [c for c in roles.quasi_identifiers]
    earlier_views: list[View] = []
    for rel in earlier:
        earlier_views.extend(load_view(root, spec.dataset, rel, protected_columns, qis))
    figures = []
    # candidate sets: each earlier release alone, then the series
    for cur in current_views:
        for ev in earlier_views:
            pair = pair_intersection(cur, ev, k)
            report.pairs.append(pair)
        smallest, sizes, own = series_intersection(cur, earlier_views)
        if smallest is not None:
            worst = next((p.release_id for p in report.pairs if p.records_below_k), None)
            against = worst or f"the series of {len(earlier)} earlier release(s)"
            below = sizes < np.minimum(k, own)
            figures.append(figure(
                "records whose candidate set the series shrinks below k", float(np.mean(below)), 0.0, "<=", against,
                f"{int(below.sum()):,} of {sizes.size:,} records in earlier releases share their class or group in "
                f"every release with fewer than k={k} records (smallest: {smallest})"
                + ("; a partitioned release's class combines its tables' classes, and is not held to k below its "
                   "size in this release alone" if isinstance(release, PartsRelease) else "")))
    # sensitive values
    cur = current_views[0]
    if not isinstance(release, PartsRelease) and cur.kind in ("classes", "groups") and len(cur.members):
        truth_rows = source.reset_index(drop=True)
        fp_index = pd.Index(np.asarray(fp_source, dtype=np.int64))
        for column in protected_columns:
            if column not in truth_rows.columns or release.frame is None or column not in release.frame.columns:
                continue
            truth = pd.Series(truth_rows[column].to_numpy(), index=fp_index)
            truth = truth[~truth.index.duplicated()].astype("string")
            got = value_intersection(cur, earlier_views, column, truth)
            if got is None:
                continue
            composed, alone, n = got
            figures.append(figure(f"{column}: disclosure gained by intersecting class values", composed - alone,
                                  disclosure_bound(spec.privacy), "<=", _first_breaking_values(
                                      cur, earlier_views, column, truth, alone, disclosure_bound(spec.privacy)),
                                  f"{composed:.1%} of {n:,} records guessed right from the series against "
                                  f"{alone:.1%} from this release alone"))
    # averaged copies
    if not isinstance(release, PartsRelease) and cur.kind == "records" and len(cur.members):
        fp_src = np.asarray(fp_source, dtype=np.int64)
        averaged = averaged_linkage(cur, earlier_views, source.reset_index(drop=True), fp_src, roles, qis)
        if averaged is not None:
            share, n = averaged
            figures.append(figure("linkage of averaged copies", share, linkage_bound(spec.privacy), "<=",
                                  _latest_record_release(earlier_views),
                                  f"each record's published copies averaged ({n:,} records with several copies)"))
    report.figures = figures
    # the DP budget
    dp_earlier = [r for r in earlier if r.epsilon is not None]
    budget = spec.privacy.budget
    if budget is not None or epsilon is not None or dp_earlier:
        pool = earlier
        if budget is not None:  # the budget counts every DP release of the dataset (within its period), whatever
            # the series window
            pool = [r for r, state in ledger.dataset_releases(root, spec.dataset) if state in ("published", "pending")
                    and (budget.period is None or r.created_at >= now - budget.period)]
        counted = [r for r in pool if r.epsilon is not None]
        eps_before = float(sum(r.epsilon or 0.0 for r in counted))
        delta_before = float(sum(r.delta or 0.0 for r in counted))
        spent = BudgetSpent(releases=len(counted), epsilon_before=eps_before, delta_before=delta_before,
                            epsilon=float(epsilon or 0.0), delta=float(delta or 0.0),
                            epsilon_limit=None if budget is None else budget.epsilon,
                            delta_limit=None if budget is None else budget.delta,
                            period=None if budget is None or budget.period is None else
                            ledger._duration(budget.period))
        if budget is not None:
            spent.holds = bool(eps_before + spent.epsilon <= budget.epsilon * (1 + 1e-9) and (
                budget.delta is None or delta_before + spent.delta <= budget.delta * (1 + 1e-9)))
        report.budget = spent
    report.holds = all(f.holds for f in figures) and (report.budget is None or report.budget.holds)
    return report, members


def _first_breaking_values(cur: View, earlier: Sequence[View], column: str, truth: pd.Series, alone: float,
                           bound: float) -> str | None:
    for ev in earlier:
        got = value_intersection(cur, [ev], column, truth)
        if got is not None and got[0] - got[1] > bound + 1e-12:
            return ev.release_id
    return None


def _latest_record_release(earlier: Sequence[View]) -> str | None:
    ids = [v.release_id for v in earlier if v.kind == "records"]
    return ids[-1] if ids else None


def series_refusal(report) -> str | None:
    """The one line a refused release prints (None when the series holds)."""
    if report.holds:
        return None
    for f in report.failed:
        against = f" with earlier release {f.against}" if f.against and not f.against.startswith("the series") else \
            (f" with {f.against}" if f.against else "")
        return (f"series: {f.name}{against} is {f.value:.4g}, must be {f.comparison} {f.limit:.4g} ({f.detail}): "
                "nothing published")
    b = report.budget
    return (f"series: privacy budget exceeded: earlier DP releases spent epsilon {b.epsilon_before:.4g} "
            f"(delta {b.delta_before:.3g}) in {b.releases} release(s), this one would spend {b.epsilon:.4g} "
            f"(delta {b.delta:.3g}); privacy.budget allows epsilon {b.epsilon_limit:.4g}"
            + (f", delta {b.delta_limit:.3g}" if b.delta_limit is not None else "")
            + (f" per {b.period}" if b.period else "") + ": nothing published")


def series_line(report) -> str:
    """This release in its series, in one line (CLI, logs)."""
    if not report.earlier:
        text = "first release of the dataset under this root (nothing to compose with)"
    else:
        shown = [f"{f.name} {f.value:.4g} ({f.comparison} {f.limit:.4g})" for f in report.figures]
        text = (f"judged with {len(report.earlier)} earlier release(s): " + ("; ".join(shown) if shown else
                                                                             "no common records"))
    if report.budget is not None:
        b = report.budget
        limit = f" of {b.epsilon_limit:.4g}" if b.epsilon_limit is not None else ""
        text += f"; DP budget: epsilon {b.epsilon_before + b.epsilon:.4g} spent{limit}"
    if report.kept_members is not None:
        text += f"; {report.kept_members:,} records kept their group"
    return text
