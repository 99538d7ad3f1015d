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
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.release import PartsRelease
from ppdp.schemas.reports import AttackerView, Roles
from ppdp.schemas.series import BudgetSpent, SeriesFigure, SeriesReport
from ppdp.schemas.units import unit_of
from ppdp.tasks import series as ledger
from ppdp.tasks.distributed.series import class_values
from ppdp.tasks.privacy.attacker import known_columns
from ppdp.tasks.privacy.series_figures import (
    View,
    averaged_linkage,
    combine_parts,
    disclosure_bound,
    figure,
    joiners_and_leavers,
    linkage_bound,
    pair_intersection,
    release_members,
    series_intersection,
    value_intersection,
)


# -- the whole judgement ------------------------------------------------------------------------------------------
def load_view(root, earlier, protected: Sequence[str], columns: Sequence[str]) -> list[View]:
    """An earlier release (:class:`ppdp.tasks.series.Earlier`: its members in this input's fingerprints) as views,
    with its published table when a figure needs it."""
    rel, m = earlier.release, earlier.members
    partitioned = bool(len(m)) and not (m["part"] == "").all()
    frame = None
    values = None
    folder = ledger.published_folder(root, rel)
    path = folder / "data.parquet"
    if not partitioned and path.exists():
        names = pq.read_schema(path).names
        want = [c for c in dict.fromkeys((*protected, *columns, GROUP_COLUMN)) if c in names]
        frame = pq.read_table(path, columns=want).to_pandas()
    elif not partitioned and (folder / "data").is_dir() and protected:  # row files: classes recomputed from them

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
                        period=None if budget is None or budget.period is None else ledger.duration_text(budget.period))
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
    shared = ledger.read_sharing(spec.publish.root, spec.dataset, identity, prints)
    sharing = shared.earlier
    dp = unit_of(spec.method.unit).spends_budget
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
    if unit_of(release.unit).spends_budget:
        epsilon = float(method.params.get("epsilon") or 0.0)
        delta = float(method.params.get("delta") or 0.0)

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


def has_class_values(view: View, column: str) -> bool:
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
