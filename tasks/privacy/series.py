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

A fourth figure is over the records that are *not* shared: **joiners and leavers** (classes and generating groups,
any method, kept or not; :func:`exposed_by_difference`). A class whose members change between two releases
publishes, as the difference of its two sets of rows, the rows of whoever joined or left it (a newcomer's values,
or an erased person's). The share of joiners and leavers so exposed must be 0.

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
from ppdp.tasks.core.groups import text_class_ids
from ppdp.tasks.privacy.candidates import (
    PairStats,
    count_combos,
    exposed_counts,
    merge_counts,
    pair_stats,
    series_stats,
    signatures,
    value_stats,
)

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
    class_values: dict[str, pd.DataFrame] | None = None  # a row-file release: per column, (grp, v, n)

    @property
    def kind(self) -> str:
        return KIND_OF_UNIT.get(self.unit, "none")


def class_ids(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Class id of every row over ``columns`` as published (one class when there is none)."""
    return text_class_ids(frame, list(columns))


def release_members(release, fp_source: np.ndarray, view: AttackerView | None, source: pd.DataFrame | None = None
                    ) -> pd.DataFrame:
    """Where each record of the sanitizer's input went in ``release``: columns part, fp, grp, row.

    Classes are taken as the attacker sees them (the attacker's view: published quasi-identifiers and the columns
    counted beside them); a partitioned release records each table's classes of every record (by recoding the
    input as the table publishes it); generating groups from the method's own grouping; record releases the
    published row standing for each record."""
    from ppdp.tasks.series import empty_members

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
    else:  # no published row stands for a record (a DP synthesizer): every record the mechanism read, so that the
        # budget of each is counted in every later release sharing it
        return pd.DataFrame({"part": "", "fp": fp_source, "grp": np.full(fp_source.size, -1, dtype=np.int64),
                             "row": np.full(fp_source.size, -1, dtype=np.int64)})
    return pd.DataFrame({"part": "", "fp": fp_source[row_source[linked]], "grp": grp, "row": linked})


# -- candidate sets -----------------------------------------------------------------------------------------------
# Counted by combination of classes (ppdp.tasks.privacy.candidates): the memory is a few arrays of the records and
# one row per combination, whatever the number of records.
def _grouped(view: View) -> tuple[np.ndarray, np.ndarray]:
    """The view's records that have a class or group: (fingerprints sorted, their class or group), one per
    fingerprint (the first)."""
    fp = view.members["fp"].to_numpy(dtype=np.int64)
    grp = view.members["grp"].to_numpy(dtype=np.int64)
    keep = grp >= 0
    return _sorted_unique(fp[keep], grp[keep])


def _class_views(earlier: Sequence[View]) -> list[View]:
    return [v for v in earlier if v.kind in ("classes", "groups")]


def pair_intersection(current: View, earlier: View, k: int) -> SeriesPair:
    """The current release with one earlier release: for each common record, how many records share its class (or
    group) in both."""
    fp, grp = _grouped(current)
    table = count_combos(fp, grp, [_grouped(earlier)])
    return _pair(earlier, pair_stats(table, 0, k), current.kind in ("classes", "groups")
                 and earlier.kind in ("classes", "groups"))


def _pair(earlier: View, stats: PairStats, classes: bool) -> SeriesPair:
    pair = SeriesPair(release_id=earlier.release_id + (f" ({earlier.part})" if earlier.part else ""),
                      method=earlier.method, unit=earlier.unit, common_records=stats.common)
    if classes and stats.common:
        pair.smallest_intersection, pair.records_below_k = stats.smallest, stats.below
    return pair


def series_intersection(current: View, earlier: Sequence[View]) -> tuple[int | None, np.ndarray, np.ndarray]:
    """Over every counted release at once: for each record of the current release present in at least one earlier
    class or group release, the size of the intersection of its candidate sets (records in every release it is in,
    sharing its class or group in each). Returns (smallest, sizes, own): ``own`` is each of those records' class
    (or group) size in the current release alone (one entry per record, in no particular order)."""
    others = _class_views(earlier)
    if current.kind not in ("classes", "groups") or not others:
        return None, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    fp, grp = _grouped(current)
    stats = series_stats(count_combos(fp, grp, [_grouped(v) for v in others]), len(others), 2)
    reps = stats.sizes[:, 2]
    return stats.smallest, np.repeat(stats.sizes[:, 0], reps), np.repeat(stats.sizes[:, 1], reps)


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
    if view.class_values is not None:
        return view.class_values.get(column)
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


def _value_table(current: View, earlier: Sequence[View], column: str, truth: pd.Series, fp: np.ndarray,
                 grp: np.ndarray):
    """The intersected-values inputs for the records (``fp``, ``grp``): (count table with each record's true value,
    this release's class values, the earlier releases' class values) over the earlier releases publishing the
    column per class; None when this release or none of them publishes it per class."""
    cur_values = _class_values(current, column)
    if cur_values is None:
        return None
    views, tables = [], []
    for v in earlier:
        ev = _class_values(v, column)
        if ev is not None:
            views.append(v)
            tables.append(ev)
    if not views:
        return None
    truth = truth[~truth.index.duplicated()]
    values = np.asarray(truth.reindex(fp).astype("string").astype(object).where(lambda x: x.notna(), None))
    return count_combos(fp, grp, [_grouped(v) for v in views], values), cur_values, tables


def _numeric(truth: pd.Series) -> tuple[bool, float]:
    """Whether the protected column is numbers (then a guess within the tolerance is right), and the tolerance."""
    truth = truth[~truth.index.duplicated()]
    numbers = pd.to_numeric(truth, errors="coerce")
    numeric = bool(numbers.notna().all()) and len(numbers) > 0
    return numeric, DISCLOSURE_TOLERANCE_SD * float(np.std(numbers.to_numpy(dtype=float))) if numeric else 0.0


def value_intersection(current: View, earlier: Sequence[View], column: str, truth: pd.Series
                       ) -> tuple[float, float, int] | None:
    """The composed attack on one protected column: (share of records guessed right from the intersection of
    their classes' values, share guessed right from the current class alone, records measured); None when no
    record of the current release is in an earlier release publishing the column per class
    (:func:`ppdp.tasks.privacy.candidates.value_stats`). ``truth``: each current record's true value, indexed by
    fingerprint."""
    fp, grp = _grouped(current)
    got = _value_table(current, earlier, column, truth, fp, grp)
    if got is None:
        return None
    table, cur_values, tables = got
    return value_stats(table, cur_values, tables, *_numeric(truth))


# -- averaged copies ----------------------------------------------------------------------------------------------
def averaged_linkage(current: View, earlier: Sequence[View], original: pd.DataFrame, fp_original: np.ndarray,
                     roles: Roles, columns: Sequence[str]) -> tuple[float, int] | None:
    """Linkage after averaging every published copy of each record (record releases): the share of ``original``
    records (the current input, fingerprints ``fp_original``) whose nearest row of the current release, with each
    row replaced by the mean of its record's copies across releases, stands for them; and how many records had
    more than one copy. None when no record has an earlier copy.

    Measured as the release's own linkage is: over every column the attacker is taken to know
    (:func:`ppdp.tasks.privacy.attacker.known_columns` of the current table, ``columns`` its quasi-identifiers),
    standardized on ``original``. Each column is averaged over the copies that publish it: a column an earlier
    table does not hold (or was not loaded) keeps the current release's value for that copy's record."""
    from ppdp.tasks.core.encoding import TableEncoder
    from ppdp.tasks.privacy import risk
    from ppdp.tasks.privacy.attacker import known_columns

    frame = current.frame
    if frame is None or current.kind != "records" or not len(original):
        return None
    cols = [c for c in known_columns(frame, roles, [c for c in columns if c in frame.columns])
            if c in original.columns]
    if not cols:
        return None
    enc = TableEncoder(columns=cols, kinds=roles.kinds(), orders=roles.orders()).fit(original)
    blocks = enc.blocks()
    x_rel = enc.transform(frame[cols])
    total = x_rel.copy()
    copies = np.ones_like(x_rel)  # per encoded cell: how many copies were summed into it
    several = np.zeros(len(frame), dtype=bool)
    row_fp = np.full(len(frame), 0, dtype=np.int64)
    has_fp = np.zeros(len(frame), dtype=bool)
    m = current.members[current.members["row"] >= 0]
    row_fp[m["row"].to_numpy()] = m["fp"].to_numpy()
    has_fp[m["row"].to_numpy()] = True
    position = pd.Series(np.flatnonzero(has_fp), index=row_fp[has_fp])
    position = position[~position.index.duplicated()]
    for v in earlier:
        held = [c for c in cols if v.frame is not None and c in v.frame.columns]
        if v.kind != "records" or v.frame is None or not held:
            continue
        em = v.members[(v.members["row"] >= 0) & v.members["fp"].isin(position.index)]
        if not len(em):
            continue
        at = position.loc[em["fp"].to_numpy()].to_numpy()
        rows = frame[cols].iloc[at].reset_index(drop=True)  # the current values where the copy holds none
        for c in held:
            rows[c] = v.frame[c].iloc[em["row"].to_numpy()].to_numpy()
        x_e = enc.transform(rows)
        mask = np.zeros(x_rel.shape[1], dtype=bool)
        for c in held:
            mask[blocks[c]] = True
        np.add.at(total, (at[:, None], np.flatnonzero(mask)[None, :]), x_e[:, mask])
        np.add.at(copies, (at[:, None], np.flatnonzero(mask)[None, :]), 1)
        several[at] = True
    if not several.any():
        return None
    averaged = total / copies
    x_orig = enc.transform(original[cols])
    _, nearest = risk.closest_records(x_orig, averaged)
    fp_of_row = np.where(has_fp, row_fp, np.iinfo(np.int64).min)
    linked = fp_of_row[nearest] == np.asarray(fp_original, dtype=np.int64)
    return float(np.mean(linked)), int(several.sum())


# -- joiners and leavers ------------------------------------------------------------------------------------------
JOINERS_LEAVERS = "joiners and leavers exposed by the difference of their class's rows"


def row_classes(view: View, columns: Sequence[str]) -> np.ndarray:
    """The class or group (the ledger's ids) of every published row of ``view.frame``, -1 where it cannot be told.

    A generating group's rows carry it (:data:`GROUP_COLUMN`, numbered as the ledger numbers groups). A class's
    rows that stand for a member are the member's class; a row standing for no member (a frozen group's
    counterfeit) takes the class of the member rows equal to it on ``columns`` (the attacker's class columns) when
    those rows are of one class."""
    frame = view.frame
    n = 0 if frame is None else len(frame)
    if frame is None or not n:
        return np.zeros(0, dtype=np.int64)
    if view.kind == "groups" and GROUP_COLUMN in frame.columns:
        return frame[GROUP_COLUMN].to_numpy(dtype=np.int64)
    out = np.full(n, -1, dtype=np.int64)
    m = view.members
    m = m[(m["row"] >= 0) & (m["row"] < n) & (m["grp"] >= 0)]
    rows, grp = m["row"].to_numpy(dtype=np.int64), m["grp"].to_numpy(dtype=np.int64)
    out[rows] = grp
    free = np.flatnonzero(out < 0)
    if free.size and rows.size:
        keys = class_ids(frame, columns)
        pairs = pd.DataFrame({"key": keys[rows], "grp": grp}).drop_duplicates()
        found = pairs.groupby("key")["grp"].agg(["nunique", "first"])
        one = found.loc[found["nunique"] == 1, "first"]
        out[free] = one.reindex(keys[free]).fillna(-1).to_numpy(dtype=np.int64)
    return out


def exposed_by_difference(current: View, earlier: View, k: int, columns: Sequence[str], known: Sequence[str]
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The records that joined or left between two releases, and those the difference of two published classes
    (or groups) exposes: (fingerprints of the joiners and leavers, fingerprints of those exposed).

    A joiner (in the current release's members, not the earlier one's) is in a class c; the earlier class d holding
    most of c's continuing members is its counterpart (likewise a leaver's class d and the current class holding
    most of d's continuing members). When c and d publish different multisets of rows (over ``columns``, which both
    publish) and their real memberships differ by fewer than k records, the difference of their rows is the rows of
    those few records: the joiners in c and the leavers in d are exposed. A class with no continuing member has no
    counterpart (it is new, or gone whole). Vectorized: one groupby per release, no loop over records."""
    def grouped(view: View, name: str) -> pd.DataFrame:
        m = view.members
        return m.loc[m["grp"] >= 0, ["fp", "grp"]].drop_duplicates("fp").rename(columns={"grp": name})

    a, b = grouped(current, "c"), grouped(earlier, "d")
    both = a.merge(b, on="fp", how="outer", indicator=True)
    joiners = both[both["_merge"] == "left_only"]
    leavers = both[both["_merge"] == "right_only"]
    moved = np.r_[joiners["fp"].to_numpy(dtype=np.int64), leavers["fp"].to_numpy(dtype=np.int64)]
    if not moved.size:
        return moved, moved
    cont = both[both["_merge"] == "both"].astype({"c": np.int64, "d": np.int64})
    shared = cont.groupby(["c", "d"]).size().rename("n").reset_index()

    def counterpart(by: str, other: str) -> pd.DataFrame:  # ties: the smallest id
        return shared.sort_values([by, "n", other], ascending=[True, False, True]).drop_duplicates(by)

    pairs = pd.concat([
        joiners[["c"]].drop_duplicates().astype(np.int64).merge(counterpart("c", "d"), on="c"),
        leavers[["d"]].drop_duplicates().astype(np.int64).merge(counterpart("d", "c"), on="d"),
    ], ignore_index=True).drop_duplicates(["c", "d"])
    if not len(pairs) or current.frame is None or earlier.frame is None:
        return moved, np.zeros(0, dtype=np.int64)
    size_c, size_d = a.groupby("c").size(), b.groupby("d").size()
    apart = (size_c.reindex(pairs["c"]).to_numpy() + size_d.reindex(pairs["d"]).to_numpy()
             - 2 * pairs["n"].to_numpy())
    sig_c = signatures(current.frame, row_classes(current, known), columns).reindex(pairs["c"], fill_value=-1)
    sig_d = signatures(earlier.frame, row_classes(earlier, known), columns).reindex(pairs["d"], fill_value=-1)
    differ = (sig_c.to_numpy() != sig_d.to_numpy()).any(axis=1) | (sig_c["n"].to_numpy() < 0)
    bad = pairs[differ & (apart < k)]
    exposed = np.r_[joiners.loc[joiners["c"].isin(bad["c"]), "fp"].to_numpy(dtype=np.int64),
                    leavers.loc[leavers["d"].isin(bad["d"]), "fp"].to_numpy(dtype=np.int64)]
    return moved, exposed


def joiners_and_leavers(root, current: View, earlier: Sequence, k: int, known: Sequence[str]) -> SeriesFigure | None:
    """The composed figure for joiners and leavers (class and group releases, any method, kept or not): the share of
    the records that joined or left between this release and an earlier class or group release sharing records
    (:class:`ppdp.tasks.series.Earlier`, its whole published table read) that :func:`exposed_by_difference`
    exposes; it must be 0. None when no record joined or left."""
    import pyarrow.parquet as pq

    from ppdp.tasks.layout import release_folder

    if current.frame is None:
        return None
    columns = [c for c in current.frame.columns if c != GROUP_COLUMN]
    moved: list[np.ndarray] = []
    exposed: list[np.ndarray] = []
    against = None
    for e in earlier:
        rel, m = e.release, e.members
        if KIND_OF_UNIT.get(rel.unit) not in ("classes", "groups") or (len(m) and not (m["part"] == "").all()):
            continue
        path = release_folder(root, rel.dataset, rel.release_id) / "data.parquet"
        if not path.exists():
            continue
        names = pq.read_schema(path).names
        both = [c for c in columns if c in names]
        frame = pq.read_table(path, columns=[*both, *([GROUP_COLUMN] if GROUP_COLUMN in names else [])]).to_pandas()
        view = View(release_id=rel.release_id, method=rel.method, unit=rel.unit, members=m, frame=frame)
        got, bad = exposed_by_difference(current, view, k, both, known)
        moved.append(got)
        exposed.append(bad)
        if bad.size and against is None:
            against = rel.release_id
    total = np.unique(np.concatenate(moved)) if moved else np.zeros(0, dtype=np.int64)
    if not total.size:
        return None
    hit = np.unique(np.concatenate(exposed))
    return figure(JOINERS_LEAVERS, hit.size / total.size, 0.0, "<=", against,
                  f"{hit.size:,} of {total.size:,} records that joined or left between this release and an earlier "
                  f"one are the only difference (fewer than k={k} records) between the published rows of their class "
                  "or group in the two releases")


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
def load_view(root, earlier, protected: Sequence[str], columns: Sequence[str]) -> list[View]:
    """An earlier release (:class:`ppdp.tasks.series.Earlier`: its members in this input's fingerprints) as views,
    with its published table when a figure needs it."""
    from ppdp.tasks.layout import release_folder

    rel, m = earlier.release, earlier.members
    partitioned = bool(len(m)) and not (m["part"] == "").all()
    frame = None
    values = None
    folder = release_folder(root, rel.dataset, rel.release_id)
    path = folder / "data.parquet"
    if not partitioned and path.exists():
        import pyarrow.parquet as pq

        names = pq.read_schema(path).names
        want = [c for c in dict.fromkeys((*protected, *columns, GROUP_COLUMN)) if c in names]
        frame = pq.read_table(path, columns=want).to_pandas()
    elif not partitioned and (folder / "data").is_dir() and protected:  # row files: classes recomputed from them
        from ppdp.schemas.manifest import Manifest
        from ppdp.tasks.distributed.series import class_values

        manifest = Manifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))
        values = class_values(folder, manifest, list(protected))
    return [View(release_id=rel.release_id, method=rel.method, unit=rel.unit, members=combine_parts(m),
                 frame=frame, class_values=values)]


@dataclass(frozen=True)
class SeriesJudgement:
    """A release judged with its series: the report, where its records went (what the ledger keeps), and the
    releases the ledger held when it was judged (a release counted later means another run published meanwhile)."""

    report: object  # ppdp.schemas.series.SeriesReport
    members: pd.DataFrame
    seen: tuple[str, ...]


def spent_before(earlier: Sequence, prints: np.ndarray, budget, now) -> tuple[int, float, float]:
    """The DP budget already spent on this input's records: (earlier DP releases holding any of them, the most
    epsilon spent on one record, the most delta). Composition is per person: a record's loss is the sum over the
    DP releases that read it (basic sequential composition), whatever their dataset; ``budget.period`` counts only
    releases made within it."""
    own = np.unique(np.asarray(prints, dtype=np.int64))
    eps = np.zeros(own.size)
    dlt = np.zeros(own.size)
    n = 0
    for e in earlier:
        rel = e.release
        if rel.epsilon is None:
            continue
        if budget is not None and budget.period is not None and rel.created_at < now - budget.period:
            continue
        holds = np.isin(own, e.members["fp"].to_numpy(dtype=np.int64))
        if not holds.any():
            continue
        n += 1
        eps[holds] += float(rel.epsilon)
        dlt[holds] += float(rel.delta or 0.0)
    return n, float(eps.max()) if eps.size else 0.0, float(dlt.max()) if dlt.size else 0.0


def budget_report(spec, earlier: Sequence, prints: np.ndarray, epsilon: float | None, delta: float | None, now):
    """The DP budget for a release spending (``epsilon``, ``delta``) on the records ``prints`` (None when no budget
    is set, this release is not DP and no earlier release that shares its records is)."""
    from ppdp.schemas.series import BudgetSpent
    from ppdp.tasks import series as ledger

    budget = spec.privacy.budget
    n, eps_before, delta_before = spent_before(earlier, prints, budget, now)
    if budget is None and epsilon is None and not n:
        return None
    spent = BudgetSpent(rule="basic sequential composition per record: the epsilons (and deltas) of the DP releases "
                        "that read a record add up, whatever their dataset; the most any record has spent counts",
                        releases=n, epsilon_before=eps_before, delta_before=delta_before,
                        epsilon=float(epsilon or 0.0), delta=float(delta or 0.0),
                        epsilon_limit=None if budget is None else budget.epsilon,
                        delta_limit=None if budget is None else budget.delta,
                        period=None if budget is None or budget.period is None else ledger._duration(budget.period))
    if budget is not None:
        spent.holds = bool(eps_before + spent.epsilon <= budget.epsilon * (1 + 1e-9) and (
            budget.delta is None or delta_before + spent.delta <= budget.delta * (1 + 1e-9)))
    return spent


def preflight_series(spec, identity, prints: np.ndarray, now):
    """What the series decides before anything is sanitized (so a refusal costs no mechanism run, and a DP
    mechanism never runs on rows whose budget is spent): the ledger opens with this machine's series key and holds
    every release of the audit trail, no earlier release of the dataset is unmatchable, and the DP budget holds for
    the epsilon and delta the spec asks (the spent figures can only be lower). Raises :class:`SeriesError`.
    Returns the ledger as read (:class:`ppdp.tasks.series.Sharing`), which the run's later series steps use."""
    from ppdp.schemas.series import SeriesReport
    from ppdp.tasks import series as ledger

    shared = ledger.read_sharing(spec.publish.root, spec.dataset, identity, prints)
    sharing = shared.earlier
    dp = spec.method.unit == "differential_privacy"
    epsilon = float(getattr(spec.method, "epsilon", None) or 0.0) if dp else None
    delta = float(getattr(spec.method, "delta", None) or 0.0) if dp else None
    spent = budget_report(spec, sharing, prints, epsilon, delta, now)
    if spent is not None and not spent.holds:
        report = SeriesReport(ledger="recorded", fingerprinted_by=identity.by, budget=spent, holds=False)
        raise ledger.SeriesError(series_refusal(report) or "series: privacy budget exceeded: nothing published",
                                 failed_gates=["budget"])
    return shared


def judge_series(*, spec, release, method, roles: Roles, identity, prints: np.ndarray, view: AttackerView | None,
                 source: pd.DataFrame, protected_columns: Sequence[str], now, shared=None) -> SeriesJudgement:
    """This release with the earlier releases that count (:func:`ppdp.tasks.series.earlier_releases`: of this
    dataset, and of any other sharing records with it). ``method`` is the method as it ran (:class:`MethodRecord`:
    a DP method's epsilon and delta, the kept members); ``identity`` the input's fingerprints; ``prints`` those of
    the sanitizer's input rows; ``shared`` the ledger as this run read it before sanitizing
    (:func:`preflight_series`), else read here. Reads the earlier published tables; writes nothing."""
    method_name, fp_source = method.name, np.asarray(prints, dtype=np.int64)
    kept_members = getattr(method, "kept_members", None)
    epsilon = delta = None
    if release.unit == "differential_privacy":
        epsilon = float(method.params.get("epsilon") or 0.0)
        delta = float(method.params.get("delta") or 0.0)
    from ppdp.schemas.series import SeriesReport
    from ppdp.tasks import series as ledger

    root = spec.publish.root
    members = release_members(release, fp_source, view, source)  # per table: what the ledger keeps
    if shared is None:
        shared = ledger.read_sharing(root, spec.dataset, identity, fp_source)
    seen, sharing = shared.seen, shared.earlier
    earlier = ledger.in_window(sharing, spec.series, now)
    k = spec.privacy.k or 2
    report = SeriesReport(ledger="recorded" if earlier else "first", window=ledger.window_text(spec.series),
                          earlier=[e.release.release_id for e in earlier], fingerprinted_by=identity.by, k=k,
                          kept_members=kept_members)
    current_views = [View(release_id="this release", method=method_name, unit=release.unit,
                          members=combine_parts(members),
                          frame=None if isinstance(release, PartsRelease) else release.frame,
                          protected=list(protected_columns))]
    qis = [c for c in roles.quasi_identifiers]
    known = qis  # the record-level figures measure over every column the attacker's view knows
    if not isinstance(release, PartsRelease) and release.frame is not None:
        from ppdp.tasks.privacy.attacker import known_columns

        known = known_columns(release.frame, roles, [q for q in qis if q in release.frame.columns]) or qis
    earlier_views: list[View] = []
    for e in earlier:
        earlier_views.extend(load_view(root, e, protected_columns, list(dict.fromkeys([*qis, *known]))))
    cur = current_views[0]
    truths: dict[str, pd.Series] = {}
    if not isinstance(release, PartsRelease) and cur.kind in ("classes", "groups") and len(cur.members):
        truth_rows = source.reset_index(drop=True)
        fp_index = pd.Index(np.asarray(fp_source, dtype=np.int64))
        for column in protected_columns:
            if column not in truth_rows.columns or release.frame is None or column not in release.frame.columns:
                continue
            truth = pd.Series(truth_rows[column].to_numpy(), index=fp_index)
            truths[column] = truth[~truth.index.duplicated()].astype("string")
    figures = class_figures(report, cur, earlier_views, k, spec, truths, len(earlier),
                            "; a partitioned release's class combines its tables' classes, and is not held to k below "
                            "its size in this release alone" if isinstance(release, PartsRelease) else "")
    # averaged copies
    if not isinstance(release, PartsRelease) and cur.kind == "records" and len(cur.members):
        fp_src = np.asarray(fp_source, dtype=np.int64)
        averaged = averaged_linkage(cur, earlier_views, source.reset_index(drop=True), fp_src, roles, known)
        if averaged is not None:
            share, n = averaged
            figures.append(figure("linkage of averaged copies", share, linkage_bound(spec.privacy), "<=",
                                  _latest_record_release(earlier_views),
                                  f"each record's published copies averaged ({n:,} records with several copies)"))
    # joiners and leavers: the difference of a class's rows in two releases
    if not isinstance(release, PartsRelease) and cur.kind in ("classes", "groups") and len(cur.members):
        class_columns = [] if view is None else [*view.quasi_identifiers, *view.counted_columns]
        joined = joiners_and_leavers(root, cur, earlier, k, class_columns)
        figures.extend([joined] if joined is not None else [])
    report.figures = figures
    if kept_members is not None:
        report.held_records, report.counterfeit_rows = release.held_rows, release.counterfeit_rows
        report.retired_groups = release.retired_groups
    # the DP budget: per record, over every earlier DP release that read it (whatever the series window)
    report.budget = budget_report(spec, sharing, fp_source, epsilon, delta, now)
    report.holds = all(f.holds for f in figures) and (report.budget is None or report.budget.holds)
    return SeriesJudgement(report, members, seen)


def class_figures(report, cur: View, earlier_views: Sequence[View], k: int, spec, truths: dict[str, pd.Series],
                  n_earlier: int, note: str = "") -> list[SeriesFigure]:
    """The figures of a release of classes or groups with the earlier ones: candidate sets (each earlier release
    alone, added to ``report.pairs``, then the series) and, for each protected column in ``truths`` (each record's
    true value by fingerprint), the disclosure gained by intersecting class values."""
    figures = []
    for ev in earlier_views:
        report.pairs.append(pair_intersection(cur, ev, k))
    smallest, sizes, own = series_intersection(cur, earlier_views)
    if smallest is not None:
        worst = next((p.release_id for p in report.pairs if p.records_below_k), None)
        against = worst or f"the series of {n_earlier} earlier release(s)"
        below = sizes < np.minimum(k, own)
        figures.append(figure(
            "records whose candidate set the series shrinks below k", float(np.mean(below)), 0.0, "<=", against,
            f"{int(below.sum()):,} of {sizes.size:,} records in earlier releases share their class or group in "
            f"every release with fewer than k={k} records (smallest: {smallest}){note}"))
    for column, truth in truths.items():
        got = value_intersection(cur, earlier_views, column, truth)
        if got is None:
            continue
        composed, alone, n = got
        figures.append(figure(f"{column}: disclosure gained by intersecting class values", composed - alone,
                              disclosure_bound(spec.privacy), "<=", _first_breaking_values(
                                  cur, earlier_views, column, truth, alone, disclosure_bound(spec.privacy)),
                              f"{composed:.1%} of {n:,} records guessed right from the series against "
                              f"{alone:.1%} from this release alone"))
    return figures


BUCKET_ROWS = 4_000_000
"""A partitioned release is judged a range of fingerprints at a time, about this many of its records each (memory:
the range's records of this release and of the earlier ones, and the count tables)."""


def _ranges(records: int) -> list[tuple[int, int]]:
    """Equal ranges of the 64-bit fingerprint space (fingerprints are uniform), about :data:`BUCKET_ROWS` records
    each."""
    b = max(1, -(-records // BUCKET_ROWS))
    edges = [-(2**63) + i * (2**64) // b for i in range(b + 1)]
    edges[-1] = 2**63  # exclusive upper bound: past the largest int64
    return list(zip(edges[:-1], edges[1:], strict=True))


def _sorted_unique(fp: np.ndarray, grp: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(fp, kind="stable")
    fp = fp[order]
    grp = np.zeros(fp.size, dtype=np.int64) if grp is None else grp[order]
    first = np.ones(fp.size, dtype=bool)
    first[1:] = fp[1:] != fp[:-1]
    return fp[first], grp[first]


def judge_partitioned(*, spec, roles: Roles, identity, staging, protected_columns: Sequence[str], now,
                      columns: Sequence[str] = ()) -> SeriesJudgement:
    """A partitioned release (row files) with the earlier releases that count, from the pieces its recode tasks
    wrote (:mod:`ppdp.tasks.distributed.series`): per basis, the current records (fingerprint, class id, published
    protected values) with the earlier releases fingerprinted on that basis, a range of fingerprints at a time
    (:data:`BUCKET_ROWS`): a first pass counts the records each earlier release shares, a second counts records by
    combination of classes (:mod:`ppdp.tasks.privacy.candidates`), from which every figure follows; joiners and
    leavers are judged from those counts and the classes' signatures over the release's published ``columns``.
    Reads the ledger, the pieces and the earlier published tables; writes nothing."""
    from ppdp.schemas.series import SeriesReport
    from ppdp.tasks import series as ledger
    from ppdp.tasks.distributed.series import piece_rows, read_pieces, read_signatures

    root = spec.publish.root
    k = spec.privacy.k or 2
    counted = ledger._counted(root, None, None)
    seen = tuple(r.release_id for r in counted)
    by_basis: dict[int, list] = {}
    keys = [b.key for b in identity.bases]
    for rel in counted:
        if ledger.refuse_unmatched(rel, spec.dataset, identity.unmatched):
            continue
        by_basis.setdefault(keys.index(rel.basis.key) if rel.basis.key in keys else 0, []).append(rel)
    report = SeriesReport(ledger="first", window=ledger.window_text(spec.series), fingerprinted_by=identity.by, k=k)
    qis = list(roles.quasi_identifiers)
    protected = list(protected_columns)
    figures: list[SeriesFigure] = []
    ranges = _ranges(piece_rows(staging))
    budget_sharing: list = []
    current_sig = None
    for j, rels in sorted(by_basis.items()):
        # pass 1: the records each earlier release shares with this one
        common = {r.release_id: 0 for r in rels}
        for lo, hi in ranges:
            cur_fp, _ = _sorted_unique(read_pieces(staging, j, ["fp"], (lo, hi))["fp"].to_numpy(dtype=np.int64))
            for rel in rels:
                efp = ledger.members(root, rel.release_id, (lo, hi))["fp"].to_numpy(dtype=np.int64)
                common[rel.release_id] += int(np.isin(cur_fp, efp).sum())
        sharing = [ledger.Earlier(rel, ledger.empty_members(), common[rel.release_id]) for rel in rels
                   if rel.dataset == spec.dataset or common[rel.release_id]]
        if j == 0:  # the DP budget is counted on the release's own fingerprints
            budget_sharing = sharing
        earlier = ledger.in_window(sharing, spec.series, now)
        if not earlier:
            continue
        report.earlier.extend(e.release.release_id for e in earlier)
        views = []  # the earlier releases as views (members read per range below), with their class values
        for e in earlier:
            from ppdp.tasks.layout import release_folder

            one_table = (release_folder(root, e.release.dataset, e.release.release_id) / "data.parquet").exists()
            full = ledger.members(root, e.release.release_id) if one_table and protected else e.members
            views.extend(load_view(root, ledger.Earlier(e.release, full, e.common), protected, qis))
        cls_at = [i for i, v in enumerate(views) if v.kind in ("classes", "groups")]
        value_views = {c: [i for i in cls_at if _has_class_values(views[i], c)] for c in protected}
        # pass 2: records counted by combination of classes (and true value, per protected column)
        combos: list[pd.DataFrame] = []
        value_parts: dict[str, list[pd.DataFrame]] = {c: [] for c in protected}
        cur_values: dict[str, list[pd.DataFrame]] = {c: [] for c in protected}
        moments: dict[str, list] = {c: [0.0, 0.0, 0, True] for c in protected}  # sum, squares, count, all numbers
        member_classes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        earlier_sizes: dict[int, list[pd.Series]] = {i: [] for i in cls_at}
        for lo, hi in ranges:
            piece = read_pieces(staging, j, None, (lo, hi))
            order = np.argsort(piece["fp"].to_numpy(dtype=np.int64), kind="stable")
            piece = piece.iloc[order].drop_duplicates("fp").reset_index(drop=True)
            fp = piece["fp"].to_numpy(dtype=np.int64)
            grp = piece["grp"].to_numpy(dtype=np.int64)
            for i in cls_at:
                m = ledger.members(root, earlier[i].release.release_id, (lo, hi))
                m = m[m["grp"] >= 0]
                member_classes[i] = _sorted_unique(m["fp"].to_numpy(dtype=np.int64), m["grp"].to_numpy(dtype=np.int64))
                earlier_sizes[i].append(pd.Series(member_classes[i][1]).value_counts())
            combos.append(count_combos(fp, grp, [member_classes[i] for i in cls_at]))
            for c in protected:
                if f"v:{c}" not in piece.columns:
                    continue
                values = piece[f"v:{c}"].astype("string")
                cur_values[c].append(pd.DataFrame({"grp": grp, "v": values}).dropna().value_counts(["grp", "v"])
                                     .rename("n").reset_index())
                numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                mo = moments[c]
                mo[0] += float(np.nansum(numbers))
                mo[1] += float(np.nansum(numbers ** 2))
                mo[2] += int(values.notna().sum())
                mo[3] = bool(mo[3] and not np.isnan(numbers[values.notna().to_numpy()]).any())
                if value_views[c]:
                    value_parts[c].append(count_combos(fp, grp, [member_classes[i] for i in value_views[c]],
                                                       np.asarray(values.astype(object).where(values.notna(), None))))
        table = merge_counts(combos)
        for i, v in enumerate(views):
            pstats = pair_stats(table, cls_at.index(i), k) if i in cls_at else None
            pair = SeriesPair(release_id=v.release_id, method=v.method, unit=v.unit,
                              common_records=earlier[i].common)
            if pstats is not None and pstats.common:
                pair.smallest_intersection, pair.records_below_k = pstats.smallest, pstats.below
            report.pairs.append(pair)
        sstats = series_stats(table, len(cls_at), k)
        if sstats.smallest is not None:
            worst = next((p.release_id for p in report.pairs if p.records_below_k), None)
            figures.append(figure(
                "records whose candidate set the series shrinks below k", sstats.below / sstats.involved, 0.0, "<=",
                worst or f"the series of {len(earlier)} earlier release(s)",
                f"{sstats.below:,} of {sstats.involved:,} records in earlier releases share their class or group in "
                f"every release with fewer than k={k} records (smallest: {sstats.smallest})"))
        # joiners and leavers, from the counts and each class's signature
        if current_sig is None:  # the same for every basis: read once
            current_sig = read_signatures(staging)
        moved = exposed = 0
        against = None
        for i in cls_at:
            rel = earlier[i].release
            sizes = pd.concat(earlier_sizes[i]).groupby(level=0).sum() if earlier_sizes[i] else pd.Series(dtype=int)
            earlier_sig = _earlier_signatures(root, rel, views[i], list(columns), qis)
            counts = exposed_counts(table, cls_at.index(i), sizes, current_sig, earlier_sig, k)
            moved, exposed = moved + counts[0], exposed + counts[1]
            if counts[1] and against is None:
                against = rel.release_id
        if moved:
            figures.append(figure(JOINERS_LEAVERS, exposed / moved, 0.0, "<=", against,
                                  f"{exposed:,} of {moved:,} records that joined or left between this release and "
                                  f"an earlier one are the only difference (fewer than k={k} records) between the "
                                  "published rows of their class in the two releases"))
        for c in protected:
            if not value_parts[c]:
                continue
            total, total2, count, numbers_only = moments[c]
            numeric = bool(numbers_only) and count > 0
            tol = DISCLOSURE_TOLERANCE_SD * float(np.sqrt(max(total2 / count - (total / count) ** 2, 0.0))) \
                if numeric else 0.0
            values_of = [_class_values(views[i], c) for i in value_views[c]]
            current = merge_counts(cur_values[c])[["grp", "v", "n"]]
            got = value_stats(merge_counts(value_parts[c]), current,
                              [t for t in values_of if t is not None], numeric, tol)
            if got is None:
                continue
            composed, alone, n = got
            figures.append(figure(f"{c}: disclosure gained by intersecting class values", composed - alone,
                                  disclosure_bound(spec.privacy), "<=", None,
                                  f"{composed:.1%} of {n:,} records guessed right from the series against "
                                  f"{alone:.1%} from this release alone"))
    report.ledger = "recorded" if report.earlier else "first"
    report.figures = figures
    own = read_pieces(staging, 0, ["fp"])["fp"].to_numpy(dtype=np.int64) if budget_sharing else np.zeros(0)
    if budget_sharing:
        budget_sharing = [ledger.Earlier(e.release, ledger.members(root, e.release.release_id), e.common)
                          for e in budget_sharing if e.release.epsilon is not None]
    report.budget = budget_report(spec, budget_sharing, own, None, None, now)
    report.holds = all(f.holds for f in figures) and (report.budget is None or report.budget.holds)
    return SeriesJudgement(report, pd.DataFrame(), seen)


def _earlier_signatures(root, rel, view: View, columns: list[str], qis: Sequence[str]) -> pd.DataFrame | None:
    """An earlier release's class signatures over ``columns`` (None when it does not publish them all): from its
    row files, or from its one table with the ledger's rows (:func:`row_classes`)."""
    import pyarrow.parquet as pq

    from ppdp.schemas.manifest import Manifest
    from ppdp.tasks import series as ledger
    from ppdp.tasks.distributed.series import row_file_signatures
    from ppdp.tasks.layout import release_folder

    folder = release_folder(root, rel.dataset, rel.release_id)
    manifest = Manifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))
    if manifest.data_files:
        return row_file_signatures(folder, manifest, columns)
    path = folder / "data.parquet"
    if not path.exists() or any(c not in manifest.columns for c in columns):
        return None
    names = pq.read_schema(path).names
    frame = pq.read_table(path, columns=[c for c in names if c in set(columns) | {GROUP_COLUMN}]).to_pandas()
    known = [] if manifest.privacy.attacker_view is None else [*manifest.privacy.attacker_view.quasi_identifiers,
                                                               *manifest.privacy.attacker_view.counted_columns]
    full = View(release_id=rel.release_id, method=rel.method, unit=rel.unit,
                members=ledger.members(root, rel.release_id), frame=frame)
    return signatures(frame, row_classes(full, known or list(qis)), columns)


def _has_class_values(view: View, column: str) -> bool:
    """Whether an earlier release publishes ``column`` per class (its class values can be read)."""
    if view.class_values is not None:
        return column in view.class_values
    return view.frame is not None and column in view.frame.columns


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
    return (f"series: privacy budget exceeded: earlier DP releases of these records spent epsilon "
            f"{b.epsilon_before:.4g} (delta {b.delta_before:.3g}) on a record, in {b.releases} release(s) (of any "
            f"dataset), this one would spend {b.epsilon:.4g} "
            f"(delta {b.delta:.3g}); privacy.budget allows epsilon {b.epsilon_limit:.4g}"
            + (f", delta {b.delta_limit:.3g}" if b.delta_limit is not None else "")
            + (f" per {b.period}" if b.period else "") + ": nothing published")


def series_line(report) -> str:
    """This release in its series, in one line (CLI, logs)."""
    if not report.earlier:
        text = "no earlier release under this root shares its records (nothing to compose with)"
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
        if report.held_records is not None:
            text += (f" ({report.counterfeit_rows or 0:,} counterfeit rows, {report.retired_groups or 0:,} groups "
                     f"retired, {report.held_records:,} records held)")
    return text
