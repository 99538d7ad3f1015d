"""The composed class figures of a release series, from counts of records by their combination of classes.

A record of the current release is in some of the earlier class (or group) releases; its *combination* is its class
here and its class in each earlier release it is in (the *mask* says which). Records of one combination are
indistinguishable to every figure here, so the figures are computed from :func:`count_combos`' table (one row per
combination with its number of records), never from a per-record join:

* candidate sets (Ganta, Kasiviswanathan and Smith, KDD 2008): a record present in the releases of mask M has as
  candidates every record present in at least those releases and sharing its classes there
  (:func:`series_stats`); with one earlier release alone, the records sharing its class in both (:func:`pair_stats`);
* intersected values (:func:`value_stats`): the attacker keeps the values published in the record's class here
  that are also published in its class in every earlier release it is in, and guesses the most frequent.

Tables add up over disjoint sets of records (:func:`merge_counts`), so a release too large for one process is
counted a range of fingerprints at a time with bounded memory (:func:`ppdp.tasks.privacy.series.judge_partitioned`).
Plain NumPy and pandas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdp.tasks.core.siphash import keyed_hashes
from ppdp.tasks.fingerprints import record_hashes

__all__ = ["aligned", "count_combos", "exposed_counts", "merge_counts", "merge_signatures", "pair_stats", "runs",
           "series_stats", "signatures", "value_stats"]


def aligned(fp: np.ndarray, other_fp: np.ndarray, other_grp: np.ndarray) -> np.ndarray:
    """For each of ``fp``: its class among (``other_fp`` sorted and unique, ``other_grp``), -1 when absent."""
    if not other_fp.size:
        return np.full(fp.size, -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(other_fp, fp), other_fp.size - 1)
    return np.where(other_fp[at] == fp, other_grp[at], -1)


def runs(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by equal values on every column: (each row's group number, each group's size)."""
    n = columns[0].size if columns else 0
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.lexsort(list(columns)[::-1])
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for c in columns:
        s = c[order]
        change[1:] |= s[1:] != s[:-1]
    group_sorted = np.cumsum(change) - 1
    ids = np.empty(n, dtype=np.int64)
    ids[order] = group_sorted
    return ids, np.bincount(group_sorted).astype(np.int64)


def count_combos(fp: np.ndarray, grp: np.ndarray, earlier: Sequence[tuple[np.ndarray, np.ndarray]],
                 values: np.ndarray | None = None) -> pd.DataFrame:
    """The current records (``fp`` unique, ``grp`` their classes) counted by combination: columns ``mask``, ``c``,
    ``e0``..``e{m-1}`` (each earlier release's class, -1 absent; ``earlier``: (fingerprints sorted and unique,
    classes) per release), ``v`` (each record's value, when ``values`` is given) and ``n``. Records in no earlier
    release are counted too (mask 0): they make up the current classes' sizes."""
    classes = [aligned(fp, efp, egrp) for efp, egrp in earlier]
    mask = np.zeros(fp.size, dtype=np.int64)
    for j, e in enumerate(classes):
        mask |= (e >= 0).astype(np.int64) << j
    keys: list[np.ndarray] = [mask, np.asarray(grp, dtype=np.int64), *classes]
    codes = uniques = None
    if values is not None:
        codes, uniques = pd.factorize(pd.Series(values, dtype="string"), use_na_sentinel=True)
        keys.append(np.asarray(codes, dtype=np.int64))
    ids, sizes = runs(keys)
    first = np.zeros(sizes.size, dtype=np.int64)
    first[ids[::-1]] = np.arange(ids.size - 1, -1, -1)  # the first row of each combination
    table = pd.DataFrame({"mask": mask[first], "c": keys[1][first],
                          **{f"e{j}": e[first] for j, e in enumerate(classes)}})
    if codes is not None and uniques is not None:
        picked = np.asarray(codes)[first]
        labels = np.empty(len(uniques) + 1, dtype=object)  # the last: a missing value (code -1)
        labels[:-1] = np.asarray(uniques, dtype=object)
        labels[-1] = None
        table["v"] = pd.Series(labels[picked], dtype="string")
    table["n"] = sizes
    return table


def merge_counts(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Count tables of disjoint sets of records as one (``n`` summed over equal combinations)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame()
    if len(parts) == 1:
        return parts[0]
    table = pd.concat(parts, ignore_index=True)
    keys = [c for c in table.columns if c != "n"]
    return table.groupby(keys, dropna=False, sort=False)["n"].sum().reset_index()


def _own(table: pd.DataFrame) -> pd.Series:
    """Records per current class (every combination)."""
    return table.groupby("c")["n"].sum()


@dataclass(frozen=True)
class PairStats:
    common: int
    smallest: int | None
    below: float | None  # share of the common records whose intersection is below min(k, own class size)


def pair_stats(table: pd.DataFrame, j: int, k: int) -> PairStats:
    """The current release with earlier release ``j`` alone."""
    if not len(table):
        return PairStats(0, None, None)
    both = table[(table["mask"].to_numpy() >> j) & 1 == 1]
    common = int(both["n"].sum())
    if not common:
        return PairStats(0, None, None)
    sizes = both.groupby(["c", f"e{j}"])["n"].sum()
    own = _own(table).reindex(sizes.index.get_level_values(0)).to_numpy()
    below = sizes.to_numpy() < np.minimum(k, own)
    return PairStats(common, int(sizes.min()), float(sizes.to_numpy()[below].sum() / common))


@dataclass(frozen=True)
class SeriesStats:
    involved: int  # records in at least one earlier release
    below: int  # of them, whose candidate set is below min(k, own class size)
    smallest: int | None
    sizes: np.ndarray  # per combination of an involved record: (candidate set size, own class size, records)


def series_stats(table: pd.DataFrame, earlier: int, k: int) -> SeriesStats:
    """Every earlier release at once (``earlier``: how many ``e`` columns the table has)."""
    empty = SeriesStats(0, 0, None, np.zeros((0, 3), dtype=np.int64))
    if not len(table):
        return empty
    masks = table["mask"].to_numpy()
    own = _own(table)
    rows = []
    for mask in sorted(set(masks.tolist()) - {0}):
        cols = ["c", *(f"e{j}" for j in range(earlier) if mask >> j & 1)]
        holders = table[(masks & mask) == mask]  # candidates: in every release the record is in
        held = holders.groupby(cols)["n"].sum()
        mine = table[masks == mask]
        size = held.reindex(pd.MultiIndex.from_frame(mine[cols]) if len(cols) > 1 else mine[cols[0]]).to_numpy()
        rows.append(np.stack([size, own.reindex(mine["c"]).to_numpy(), mine["n"].to_numpy()], axis=1))
    if not rows:
        return empty
    sizes = np.concatenate(rows).astype(np.int64)
    below = sizes[:, 0] < np.minimum(k, sizes[:, 1])
    return SeriesStats(int(sizes[:, 2].sum()), int(sizes[below, 2].sum()), int(sizes[:, 0].min()), sizes)


def value_stats(table: pd.DataFrame, current_values: pd.DataFrame, earlier_values: Sequence[pd.DataFrame],
                numeric: bool, tol: float) -> tuple[float, float, int] | None:
    """The intersected-values attack on one protected column: (share of involved records guessed right from the
    series, from this release's class alone, involved records). ``table``: :func:`count_combos` with each record's
    true value, over the earlier releases publishing the column per class; ``current_values`` and
    ``earlier_values``: each release's published (grp, v, n) per class. Every value ruled out (inconsistent
    releases) falls back to the class's guess; a tie splits the guess."""
    involved = table[table["mask"].to_numpy() > 0]
    if not len(involved):
        return None
    ecols = [f"e{j}" for j in range(len(earlier_values))]
    combos = involved[["mask", "c", *ecols]].drop_duplicates().reset_index(drop=True)
    combos["combo"] = np.arange(len(combos))
    cand = combos.merge(current_values.rename(columns={"grp": "c"}), on="c")  # combo, c, e*, v, n
    ok = np.ones(len(cand), dtype=bool)
    for j, values in enumerate(earlier_values):
        there = cand[f"e{j}"].to_numpy() >= 0
        allowed = values[["grp", "v"]].drop_duplicates().rename(columns={"grp": f"e{j}"}).assign(hit=True)
        hit = cand[[f"e{j}", "v"]].merge(allowed, on=[f"e{j}", "v"], how="left")["hit"].notna().to_numpy()
        ok &= ~there | hit  # a value absent from the record's class in a release it is in: ruled out
    any_left = pd.Series(ok).groupby(cand["combo"].to_numpy()).transform("any").to_numpy()
    kept = cand[ok | ~any_left][["combo", "v", "n"]]
    records = involved.merge(combos, on=["mask", "c", *ecols])[["combo", "c", "v", "n"]]

    def rate(candidates: pd.DataFrame, key: str, truth: pd.DataFrame) -> float:
        """Right guesses (weighted by records) over ``truth``'s records (``key``, ``v``, ``n``)."""
        top = candidates.groupby(key)["n"].transform("max")
        modes = candidates[candidates["n"].to_numpy() == top.to_numpy()][[key, "v"]]
        modes = modes.assign(ties=modes.groupby(key)[key].transform("size"))
        pairs = truth.merge(modes, on=key, suffixes=("", "_guess"))
        if numeric:
            right = np.abs(pd.to_numeric(pairs["v"], errors="coerce").to_numpy(dtype=float)
                           - pd.to_numeric(pairs["v_guess"], errors="coerce").to_numpy(dtype=float)) <= tol + 1e-12
        else:
            right = (pairs["v"].astype("string") == pairs["v_guess"].astype("string")).fillna(False).to_numpy()
        return float((right / pairs["ties"].to_numpy() * pairs["n"].to_numpy()).sum())

    total = int(records["n"].sum())
    composed = rate(kept, "combo", records)
    alone = rate(current_values.rename(columns={"grp": "c"}), "c", records[["c", "v", "n"]])
    return composed / total, alone / total, total


def signatures(frame: pd.DataFrame, classes: np.ndarray, columns: Sequence[str],
               hashed: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Per class: its published rows as a multiset over ``columns`` (rows, and two wrapping sums of keyed 64-bit row
    hashes: equal multisets give equal signatures, different ones collide with probability about 2**-128; ``hashed``: as
    :func:`ppdp.tasks.series.record_hashes` takes it). A row
    hashes its values in one form whatever the column's type (:func:`ppdp.tasks.series.record_hashes`), so a
    column read back as floats, or a release's row files, hash as the frame that was written. Signatures of
    disjoint sets of rows add up (:func:`merge_signatures`)."""
    keep = np.asarray(classes) >= 0
    codes, uniques = pd.factorize(np.asarray(classes)[keep])
    rows = record_hashes(frame, list(columns), hashed)[keep] if len(columns) else \
        np.zeros(int(keep.sum()), dtype=np.uint64)  # a row's hash is its own: hashing every row, then keeping, agrees
    sums = []
    for salt in ("ppdp-joiners-one", "ppdp-joiners-two"):
        h = keyed_hashes(rows, salt)  # pandas' keyed hash of rows.view("S8"), vectorized
        total = np.zeros(uniques.size, dtype=np.uint64)
        np.add.at(total, codes, h.astype(np.uint64))
        sums.append(total.view(np.int64))
    return pd.DataFrame({"n": np.bincount(codes, minlength=uniques.size).astype(np.int64), "s1": sums[0],
                         "s2": sums[1]}, index=pd.Index(np.asarray(uniques, dtype=np.int64)))


def merge_signatures(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Signatures of disjoint sets of rows as one (counts added, hash sums added modulo 2**64)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame({"n": pd.Series(dtype=np.int64), "s1": pd.Series(dtype=np.int64),
                             "s2": pd.Series(dtype=np.int64)})
    table = pd.concat(parts)
    codes, uniques = pd.factorize(table.index.to_numpy(dtype=np.int64))
    out = {}
    for col in ("n", "s1", "s2"):
        total = np.zeros(uniques.size, dtype=np.uint64)
        np.add.at(total, codes, table[col].to_numpy(dtype=np.int64).view(np.uint64))
        out[col] = total.view(np.int64)
    return pd.DataFrame(out, index=pd.Index(np.asarray(uniques, dtype=np.int64)))


def exposed_counts(table: pd.DataFrame, j: int, earlier_sizes: pd.Series, current: pd.DataFrame,
                   earlier: pd.DataFrame | None, k: int) -> tuple[int, int]:
    """Joiners and leavers between the current release and earlier release ``j`` from counts (the rule of
    :func:`ppdp.tasks.privacy.series.exposed_by_difference`): (records that joined or left, those exposed).
    ``table``: :func:`count_combos` over every current record; ``earlier_sizes``: the earlier release's records per
    class; ``current`` and ``earlier``: each release's :func:`signatures` (None: not comparable, every pair differs)."""
    own = _own(table)
    both = table[(table["mask"].to_numpy() >> j) & 1 == 1]
    shared = both.groupby(["c", f"e{j}"])["n"].sum().rename("n").reset_index().rename(columns={f"e{j}": "d"})
    joiners = (own - shared.groupby("c")["n"].sum().reindex(own.index, fill_value=0))
    joiners = joiners[joiners > 0]
    leavers = earlier_sizes - shared.groupby("d")["n"].sum().reindex(earlier_sizes.index, fill_value=0)
    leavers = leavers[leavers > 0]
    moved = int(joiners.sum() + leavers.sum())
    if not moved or not len(shared):
        return moved, 0

    def counterpart(by: str, other: str) -> pd.DataFrame:  # ties: the smallest id
        return shared.sort_values([by, "n", other], ascending=[True, False, True]).drop_duplicates(by)

    pairs = pd.concat([
        pd.DataFrame({"c": joiners.index.to_numpy(dtype=np.int64)}).merge(counterpart("c", "d"), on="c"),
        pd.DataFrame({"d": leavers.index.to_numpy(dtype=np.int64)}).merge(counterpart("d", "c"), on="d"),
    ], ignore_index=True).drop_duplicates(["c", "d"])
    if not len(pairs):
        return moved, 0
    apart = (own.reindex(pairs["c"]).to_numpy() + earlier_sizes.reindex(pairs["d"]).to_numpy()
             - 2 * pairs["n"].to_numpy())
    if earlier is None:
        differ = np.ones(len(pairs), dtype=bool)
    else:
        sig_c = current.reindex(pairs["c"], fill_value=-1)
        sig_d = earlier.reindex(pairs["d"], fill_value=-1)
        differ = (sig_c.to_numpy() != sig_d.to_numpy()).any(axis=1) | (sig_c["n"].to_numpy() < 0)
    bad = pairs[differ & (apart < k)]
    exposed = int(joiners.reindex(bad["c"].unique()).fillna(0).sum() + leavers.reindex(bad["d"].unique()).fillna(0)
                  .sum())
    return moved, exposed
