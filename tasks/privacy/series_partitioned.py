"""The series judgement of a partitioned release (:mod:`ppdp.tasks.distributed.series`): a range of fingerprints at
a time, with bounded memory, its count tables merged; the same figures as
:func:`ppdp.tasks.privacy.series.judge_series`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.privacy import DISCLOSURE_TOLERANCE_SD
from ppdp.schemas.reports import Roles
from ppdp.schemas.series import SeriesFigure, SeriesPair, SeriesReport
from ppdp.tasks import series as ledger
from ppdp.tasks.distributed.series import piece_rows, read_pieces, read_signatures, row_file_signatures
from ppdp.tasks.layout import release_folder
from ppdp.tasks.privacy.candidates import (
    count_combos,
    exposed_counts,
    merge_counts,
    pair_stats,
    series_stats,
    signatures,
    value_stats,
)
from ppdp.tasks.privacy.series import SeriesJudgement, budget_report, has_class_values, load_view
from ppdp.tasks.privacy.series_figures import (
    JOINERS_LEAVERS,
    View,
    disclosure_bound,
    figure,
    row_classes,
    sorted_unique,
    view_class_values,
)

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


def judge_partitioned(*, spec, roles: Roles, identity, staging, protected_columns: Sequence[str], now,
                      columns: Sequence[str] = ()) -> SeriesJudgement:
    """A partitioned release (row files) with the earlier releases that count, from the pieces its recode tasks
    wrote (:mod:`ppdp.tasks.distributed.series`): per basis, the current records (fingerprint, class id, published
    protected values) with the earlier releases fingerprinted on that basis, a range of fingerprints at a time
    (:data:`BUCKET_ROWS`): a first pass counts the records each earlier release shares, a second counts records by
    combination of classes (:mod:`ppdp.tasks.privacy.candidates`), from which every figure follows; joiners and
    leavers are judged from those counts and the classes' signatures over the release's published ``columns``.
    Reads the ledger, the pieces and the earlier published tables; writes nothing."""
    root = spec.publish.root
    k = spec.privacy.k or 2
    counted = ledger.counted_releases(root, None, None)
    seen = tuple(r.release_id for r in counted)
    by_basis: dict[int, list] = {}
    keys = [b.key for b in identity.bases]
    for rel in counted:
        if ledger.refuse_unmatched(rel, spec.dataset, identity.unmatched):
            continue
        by_basis.setdefault(keys.index(rel.basis.key) if rel.basis.key in keys else 0, []).append(rel)
    report = SeriesReport(ledger="first", window=ledger.window_text(spec.series), fingerprinted_by=identity.by, k=k)
    run = _Run(spec=spec, root=root, k=k, staging=staging, qis=list(roles.quasi_identifiers),
               protected=list(protected_columns), columns=list(columns), ranges=_ranges(piece_rows(staging)),
               report=report)
    budget_sharing: list = []
    for j, rels in sorted(by_basis.items()):
        common = _shared_records(run, j, rels)
        sharing = [ledger.Earlier(rel, ledger.empty_members(), common[rel.release_id]) for rel in rels
                   if rel.dataset == spec.dataset or common[rel.release_id]]
        if j == 0:  # the DP budget is counted on the release's own fingerprints
            budget_sharing = sharing
        earlier = ledger.in_window(sharing, spec.series, now)
        if earlier:
            _judge_basis(run, j, earlier)
    report.ledger = "recorded" if report.earlier else "first"
    report.figures = run.figures
    own = read_pieces(staging, 0, ["fp"])["fp"].to_numpy(dtype=np.int64) if budget_sharing else np.zeros(0)
    if budget_sharing:
        budget_sharing = [ledger.Earlier(e.release, ledger.members(root, e.release.release_id), e.common)
                          for e in budget_sharing if e.release.epsilon is not None]
    report.budget = budget_report(spec, budget_sharing, own, None, None, now)
    report.holds = all(f.holds for f in run.figures) and (report.budget is None or report.budget.holds)
    return SeriesJudgement(report, pd.DataFrame(), seen)


@dataclass
class _Run:
    """One partitioned judgement: what every basis's pass reads, and the figures found so far."""

    spec: Any
    root: Any
    k: int
    staging: Any
    qis: list[str]
    protected: list[str]
    columns: list[str]
    ranges: list[tuple[int, int]]
    report: SeriesReport
    figures: list[SeriesFigure] = field(default_factory=list)
    current_sig: pd.DataFrame | None = None  # the classes' signatures: the same for every basis, read once


@dataclass
class _Counts:
    """Pass 2 over one basis: records counted by combination of classes (and true value, per protected column)."""

    combos: list[pd.DataFrame] = field(default_factory=list)
    value_parts: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    cur_values: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    moments: dict[str, list] = field(default_factory=dict)  # sum, squares, count, all numbers
    earlier_sizes: dict[int, list[pd.Series]] = field(default_factory=dict)


def _shared_records(run: _Run, j: int, rels: list) -> dict[str, int]:
    """Pass 1: the records each earlier release shares with this one (basis ``j``)."""
    common = {r.release_id: 0 for r in rels}
    for lo, hi in run.ranges:
        cur_fp, _ = sorted_unique(read_pieces(run.staging, j, ["fp"], (lo, hi))["fp"].to_numpy(dtype=np.int64))
        for rel in rels:
            efp = ledger.members(run.root, rel.release_id, (lo, hi))["fp"].to_numpy(dtype=np.int64)
            common[rel.release_id] += int(np.isin(cur_fp, efp).sum())
    return common


def _judge_basis(run: _Run, j: int, earlier: list) -> None:
    """Every figure of basis ``j`` against its earlier releases in the window."""
    root, protected = run.root, run.protected
    run.report.earlier.extend(e.release.release_id for e in earlier)
    views = []  # the earlier releases as views (members read per range below), with their class values
    for e in earlier:
        one_table = (release_folder(root, e.release.dataset, e.release.release_id) / "data.parquet").exists()
        full = ledger.members(root, e.release.release_id) if one_table and protected else e.members
        views.extend(load_view(root, ledger.Earlier(e.release, full, e.common), protected, run.qis))
    cls_at = [i for i, v in enumerate(views) if v.kind in ("classes", "groups")]
    value_views = {c: [i for i in cls_at if has_class_values(views[i], c)] for c in protected}
    counts = _count_combinations(run, j, earlier, cls_at, value_views)
    table = merge_counts(counts.combos)
    _pair_figures(run, views, earlier, table, cls_at)
    _joiners_figure(run, views, earlier, table, cls_at, counts)
    _value_figures(run, views, value_views, counts)


def _count_combinations(run: _Run, j: int, earlier: list, cls_at: list[int], value_views: dict[str, list[int]]
                        ) -> _Counts:
    """Pass 2: records counted by combination of classes (and true value, per protected column), range by range."""
    protected = run.protected
    counts = _Counts(value_parts={c: [] for c in protected}, cur_values={c: [] for c in protected},
                     moments={c: [0.0, 0.0, 0, True] for c in protected}, earlier_sizes={i: [] for i in cls_at})
    member_classes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for lo, hi in run.ranges:
        piece = read_pieces(run.staging, j, None, (lo, hi))
        order = np.argsort(piece["fp"].to_numpy(dtype=np.int64), kind="stable")
        piece = piece.iloc[order].drop_duplicates("fp").reset_index(drop=True)
        fp = piece["fp"].to_numpy(dtype=np.int64)
        grp = piece["grp"].to_numpy(dtype=np.int64)
        for i in cls_at:
            m = ledger.members(run.root, earlier[i].release.release_id, (lo, hi))
            m = m[m["grp"] >= 0]
            member_classes[i] = sorted_unique(m["fp"].to_numpy(dtype=np.int64), m["grp"].to_numpy(dtype=np.int64))
            counts.earlier_sizes[i].append(pd.Series(member_classes[i][1]).value_counts())
        counts.combos.append(count_combos(fp, grp, [member_classes[i] for i in cls_at]))
        for c in protected:
            if f"v:{c}" not in piece.columns:
                continue
            values = piece[f"v:{c}"].astype("string")
            counts.cur_values[c].append(pd.DataFrame({"grp": grp, "v": values}).dropna().value_counts(["grp", "v"])
                                        .rename("n").reset_index())
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            mo = counts.moments[c]
            mo[0] += float(np.nansum(numbers))
            mo[1] += float(np.nansum(numbers ** 2))
            mo[2] += int(values.notna().sum())
            mo[3] = bool(mo[3] and not np.isnan(numbers[values.notna().to_numpy()]).any())
            if value_views[c]:
                counts.value_parts[c].append(count_combos(fp, grp, [member_classes[i] for i in value_views[c]],
                                                          np.asarray(values.astype(object).where(values.notna(),
                                                                                                 None))))
    return counts


def _pair_figures(run: _Run, views: list, earlier: list, table: pd.DataFrame, cls_at: list[int]) -> None:
    """Each earlier release's pair with this one, and the records whose candidate set the series shrinks."""
    report, k = run.report, run.k
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
        run.figures.append(figure(
            "records whose candidate set the series shrinks below k", sstats.below / sstats.involved, 0.0, "<=",
            worst or f"the series of {len(earlier)} earlier release(s)",
            f"{sstats.below:,} of {sstats.involved:,} records in earlier releases share their class or group in "
            f"every release with fewer than k={k} records (smallest: {sstats.smallest})"))


def _joiners_figure(run: _Run, views: list, earlier: list, table: pd.DataFrame, cls_at: list[int],
                    counts: _Counts) -> None:
    """Joiners and leavers, from the counts and each class's signature."""
    k = run.k
    if run.current_sig is None:  # the same for every basis: read once
        run.current_sig = read_signatures(run.staging)
    moved = exposed = 0
    against = None
    for i in cls_at:
        rel = earlier[i].release
        sizes = (pd.concat(counts.earlier_sizes[i]).groupby(level=0).sum() if counts.earlier_sizes[i]
                 else pd.Series(dtype=int))
        earlier_sig = _earlier_signatures(run.root, rel, views[i], run.columns, run.qis)
        found = exposed_counts(table, cls_at.index(i), sizes, run.current_sig, earlier_sig, k)
        moved, exposed = moved + found[0], exposed + found[1]
        if found[1] and against is None:
            against = rel.release_id
    if moved:
        run.figures.append(figure(JOINERS_LEAVERS, exposed / moved, 0.0, "<=", against,
                                  f"{exposed:,} of {moved:,} records that joined or left between this release and "
                                  f"an earlier one are the only difference (fewer than k={k} records) between the "
                                  "published rows of their class in the two releases"))


def _value_figures(run: _Run, views: list, value_views: dict[str, list[int]], counts: _Counts) -> None:
    """Per protected column: the disclosure gained by intersecting the classes' values."""
    for c in run.protected:
        if not counts.value_parts[c]:
            continue
        total, total2, count, numbers_only = counts.moments[c]
        numeric = bool(numbers_only) and count > 0
        tol = DISCLOSURE_TOLERANCE_SD * float(np.sqrt(max(total2 / count - (total / count) ** 2, 0.0))) \
            if numeric else 0.0
        values_of = [view_class_values(views[i], c) for i in value_views[c]]
        current = merge_counts(counts.cur_values[c])[["grp", "v", "n"]]
        got = value_stats(merge_counts(counts.value_parts[c]), current,
                          [t for t in values_of if t is not None], numeric, tol)
        if got is None:
            continue
        composed, alone, n = got
        run.figures.append(figure(f"{c}: disclosure gained by intersecting class values", composed - alone,
                                  disclosure_bound(run.spec.privacy), "<=", None,
                                  f"{composed:.1%} of {n:,} records guessed right from the series against "
                                  f"{alone:.1%} from this release alone"))


def _earlier_signatures(root, rel, view: View, columns: list[str], qis: Sequence[str]) -> pd.DataFrame | None:
    """An earlier release's class signatures over ``columns`` (None when it does not publish them all): from its
    row files, or from its one table with the ledger's rows (:func:`row_classes`)."""
    folder = ledger.published_folder(root, rel)
    if not (folder / "manifest.json").is_file():  # a pending release, its publish interrupted: nothing published
        return None
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
