"""The figures of a series of releases over their views: each release as the series judge sees it (:class:`View`: its
records' fingerprints and classes), the candidate sets an intersection attack narrows records to, the sensitive values
it narrows them to, averaged copies of a record linked across releases, the joiners and leavers a class's difference
exposes, and the bounds each figure is held to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.privacy import DISCLOSURE_TOLERANCE_SD, FLOOR, PrivacyThresholds
from ppdp.schemas.release import PartsRelease
from ppdp.schemas.reports import AttackerView, Roles
from ppdp.schemas.series import SeriesFigure, SeriesPair
from ppdp.schemas.units import find_unit
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.groups import text_class_ids
from ppdp.tasks.privacy import risk
from ppdp.tasks.privacy.attacker import known_columns
from ppdp.tasks.privacy.candidates import (
    PairStats,
    count_combos,
    pair_stats,
    series_stats,
    signatures,
    value_stats,
)
from ppdp.tasks.series import empty_members, published_folder


def kind_of_unit(name: str | None) -> str:
    """What the series counts a release of unit ``name`` by (:attr:`~ppdp.schemas.units.PrivacyUnit.series_kind`:
    classes, groups, records; "none" for a differentially private release or a name that is no unit)."""
    unit = find_unit(name)
    return unit.series_kind if unit is not None else "none"


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
        return kind_of_unit(self.unit)


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
    kind = kind_of_unit(release.unit)
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
    return sorted_unique(fp[keep], grp[keep])


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
def view_class_values(view: View, column: str) -> pd.DataFrame | None:
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
    cur_values = view_class_values(current, column)
    if cur_values is None:
        return None
    views, tables = [], []
    for v in earlier:
        ev = view_class_values(v, column)
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
    if current.frame is None:
        return None
    columns = [c for c in current.frame.columns if c != GROUP_COLUMN]
    moved: list[np.ndarray] = []
    exposed: list[np.ndarray] = []
    against = None
    for e in earlier:
        rel, m = e.release, e.members
        if kind_of_unit(rel.unit) not in ("classes", "groups") or (len(m) and not (m["part"] == "").all()):
            continue
        path = published_folder(root, rel) / "data.parquet"
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


def sorted_unique(fp: np.ndarray, grp: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(fp, kind="stable")
    fp = fp[order]
    grp = np.zeros(fp.size, dtype=np.int64) if grp is None else grp[order]
    first = np.ones(fp.size, dtype=bool)
    first[1:] = fp[1:] != fp[:-1]
    return fp[first], grp[first]
