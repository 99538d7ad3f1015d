"""The attacker's view of a release, and the safety floor every release must pass.

Every release is measured the same way, whatever its method and privacy unit, as an attacker holding the published
table sees it (and, for the figures marked so, as one who also knows each person's quasi-identifiers):

* **identity**: the published rows grouped by the quasi-identifiers *as published* (labels, intervals, numbers),
  with every other published column that splits those groups counted in (an attacker may know it too; the tagger
  judged it against the raw quasi-identifiers, not against the published ones): classes, the smallest, the share
  of records alone, the average and highest re-identification risk (1 / class size); for generating groups, the
  groups' sizes; the share of published rows that are verbatim copies of an input record on every known column;
  linkage and nearest-record distances where the unit measures them. The record-level figures (copies, linkage,
  distances) are measured over every column the attacker is taken to know (:func:`known_columns`: the
  quasi-identifiers as published and every column published beside them), not the quasi-identifiers alone;
* **attribute**: for each protected column (declared sensitive columns; SAP: the class), the share of published
  records whose true value an attacker learns by reading the rows that share the record's known columns (the most
  common published value; for numbers, the centre of the densest window of +/- tolerance), beside the share the
  best constant guess gets right without the release.

:func:`check_floor` then holds the view to :data:`ppdp.schemas.privacy.FLOOR` (the rows that apply to what the
method protects).

A differentially private release (unit ``differential_privacy``) is measured the same way, and its figures are
shown (classes, records alone, exact copies of input records), but the floor holds it to its mechanism's epsilon and
delta only, the rows ``epsilon`` and ``delta``:

* its rows are drawn from a model fitted to noisy counts; none stands for an input record, so a row alone on the
  quasi-identifiers leads to no one (the records-alone and average-risk rows judge classes of real records);
* a generated row equal to an input record on every column is not a disclosure under DP: a combination common
  in the data is likely to be generated, whether or not any given person is in the input, and the mechanism's
  epsilon bounds how much one person's row changes that chance. The exact-copies row (which holds generating groups
  and record-by-record methods to at most 1%) would refuse good DP releases of tables with few columns, and pass
  bad ones with many, for reasons unrelated to the guarantee; the share is shown, not judged;
* linkage (the nearest published row standing for the record) and attribute disclosure need a published row that
  stands for an input record: there is none.

Measuring never decides and deciding never measures. Imports neither Prefect nor Great Expectations; no data value
leaves this module (only shares, counts and column names).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.methods import GROUP_COLUMN, Protection, Unit
from ppdp.schemas.privacy import (
    DISCLOSURE_TOLERANCE_SD,
    AcceptBelowFloor,
    PrivacyPolicy,
    PrivacyThresholds,
    floor_rules,
)
from ppdp.schemas.reports import (
    AcceptedBelowFloor,
    AttackerView,
    AttributeDisclosure,
    Claim,
    DifferentialPrivacy,
    FloorReport,
    Roles,
)
from ppdp.schemas.units import identity_by, unit_of
from ppdp.tasks.core.groups import equivalence_class_ids

STAR = "*"


# -- identity ----------------------------------------------------------------------------------------------------
def counted_columns(frame: pd.DataFrame, quasi_identifiers: Sequence[str], candidates: Sequence[str]) -> list[str]:
    """The ``candidates`` (published columns beside the quasi-identifiers) that split the classes an attacker sees:
    taken in order, a column is counted in when adding it to the quasi-identifiers and the columns counted so far
    makes more classes."""
    known = [q for q in quasi_identifiers if q in frame.columns]
    if len(frame) == 0:
        return []
    classes = int(equivalence_class_ids(frame, known).max()) + 1
    out = []
    for col in candidates:
        if col not in frame.columns or col in known:
            continue
        more = int(equivalence_class_ids(frame, [*known, col]).max()) + 1
        if more > classes:
            known.append(col)
            out.append(col)
            classes = more
    return out


def beside_columns(frame: pd.DataFrame, roles: Roles, quasi_identifiers: Sequence[str]) -> list[str]:
    """Published columns an attacker may know beside the quasi-identifiers: those of role ``other`` (neither
    pseudonyms, whose key the attacker lacks, nor the bookkeeping group column), in input order."""
    out = []
    for tag in roles.columns:
        if (tag.name in frame.columns and tag.name not in quasi_identifiers and tag.role is Role.other
                and tag.treatment is None and tag.name != GROUP_COLUMN):
            out.append(tag.name)
    return out


def known_columns(frame: pd.DataFrame, roles: Roles, quasi_identifiers: Sequence[str] | None = None) -> list[str]:
    """Every published column the attacker is taken to know: the quasi-identifiers as published (default: the
    roles' quasi-identifiers present in ``frame``), then every column published beside them
    (:func:`beside_columns`: role ``other``, neither pseudonyms nor the group column). Identifiers, the class and
    the sensitive columns are not known.

    The one definition every record-level figure uses: linkage, nearest-record distances (DCR), exact copies and
    the series' averaged copies. The class figures use the quasi-identifiers and :func:`counted_columns`, the
    subset of these that splits the classes: every other column beside them is a function of those, so both give
    the same classes. A distance uses every known column, whether it splits a class or not."""
    qis = [q for q in (quasi_identifiers if quasi_identifiers is not None else roles.quasi_identifiers)
           if q in frame.columns]
    return [*qis, *beside_columns(frame, roles, qis)]


def uninformative_columns(frame: pd.DataFrame) -> list[str]:
    """Published columns that carry no information: every cell ``*`` (generalized to the top) or missing."""
    out = []
    for col in frame.columns:
        if col == GROUP_COLUMN or len(frame) == 0:
            continue
        series = frame[col]
        present = series.dropna()
        if present.empty or (not pd.api.types.is_numeric_dtype(series) and bool((present.astype(str) == STAR).all())):
            out.append(str(col))
    return out


# -- exact copies ------------------------------------------------------------------------------------------------
def _canonical(series: pd.Series, numeric: bool) -> pd.Series:
    """A column in a form where equal published and input values compare equal: numbers as floats (9 decimals),
    everything else as text (integral numbers without a decimal point); missing stays missing."""
    if numeric:
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        return pd.Series(np.round(values, 9) + 0.0, copy=False)
    if pd.api.types.is_string_dtype(series) and series.dtype != object or isinstance(series.dtype,
                                                                                    pd.CategoricalDtype):
        text_values = series.astype("string")  # text throughout: no number to reformat (fast path)
        # pandas-stubs leaves None out of to_numpy's na_value; pandas takes it (missing cells become None)
        objects = text_values.to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
        return pd.Series(objects, dtype=object)

    def text(v: object) -> object:
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA or v is pd.NaT:
            return None
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
            f = float(v)
            return str(int(f)) if f.is_integer() else repr(round(f, 9))
        return str(v)

    return pd.Series([text(v) for v in series.astype(object).to_numpy()], dtype=object)


def exact_copy_share(published: pd.DataFrame, original: pd.DataFrame, columns: Sequence[str]) -> float:
    """Share of ``published`` rows equal to some ``original`` row on every one of ``columns``."""
    if len(published) == 0:
        return 0.0
    return float(copy_mask(published, original, columns).mean())


def copy_mask(published: pd.DataFrame, original: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """For each ``published`` row, whether some ``original`` row equals it on every one of ``columns`` (over parts
    of the input, the masks of one published table combine by ``or``)."""
    columns = [c for c in columns if c in published.columns and c in original.columns]
    if len(published) == 0:
        return np.zeros(0, dtype=bool)
    if not columns or len(original) == 0:
        return np.full(len(published), not columns and len(original) > 0)

    def hashes(frame: pd.DataFrame) -> np.ndarray:
        data = {}
        for c in columns:
            numeric = (pd.api.types.is_numeric_dtype(published[c]) and pd.api.types.is_numeric_dtype(original[c])
                       and not pd.api.types.is_bool_dtype(published[c]))
            data[c] = _canonical(frame[c].reset_index(drop=True), numeric)
        return pd.util.hash_pandas_object(pd.DataFrame(data), index=False).to_numpy()

    return np.isin(hashes(published), hashes(original))


# -- attribute disclosure ------------------------------------------------------------------------------------------
def _best_window(sorted_values: np.ndarray, tolerance: float) -> tuple[float, int]:
    """(start, count) of the window [start, start + 2 tolerance] holding the most of ``sorted_values`` (the first
    such window); (nan, 0) for no value."""
    if sorted_values.size == 0:
        return float("nan"), 0
    ends = np.searchsorted(sorted_values, sorted_values + 2 * tolerance, side="right")
    counts = ends - np.arange(sorted_values.size)
    i = int(np.argmax(counts))
    return float(sorted_values[i]), int(counts[i])


def _numbers(series: pd.Series) -> np.ndarray | None:
    if pd.api.types.is_bool_dtype(series) or not (pd.api.types.is_numeric_dtype(series)
                                                  or pd.api.types.is_datetime64_any_dtype(series)):
        return None
    if pd.api.types.is_datetime64_any_dtype(series):
        return series.astype("int64").to_numpy(dtype=float)  # nanoseconds; missing cells are masked by the caller
    return series.to_numpy(dtype=float, na_value=np.nan)


def attribute_disclosure(column: str, published: pd.Series, groups: np.ndarray, target_rows: np.ndarray,
                         truth: pd.Series, recheck: str) -> AttributeDisclosure | None:
    """What an attacker who knows which published rows share a record's known columns (``groups``: class id of
    every published row) learns about ``column`` for the records standing behind ``target_rows`` (published row
    positions), whose true values are ``truth`` (aligned with ``target_rows``).

    The attacker's guess for a class: the most common published value (categories; ties: each tied value is
    equally likely, so a record counts as the share of the ties it is) or the start of the densest window of
    published values of width 2 x tolerance, read as that window (numbers); a class with no published value left
    (suppressed) falls back to the same guess over the whole published column. The baseline is the best constant
    guess over the true values. None when nothing can be measured (no target with a true value, or numbers
    published as labels).
    """
    present = truth.notna().to_numpy()
    target_rows, truth = target_rows[present], truth[present].reset_index(drop=True)
    if target_rows.size == 0:
        return None
    true_numbers = _numbers(truth)
    if true_numbers is not None:
        pub = _numbers(published)
        if pub is None:  # numbers published as labels (intervals): not measured here (fails closed where gated)
            return None
        sd = float(np.std(true_numbers))
        tol = DISCLOSURE_TOLERANCE_SD * sd
        ok = ~np.isnan(pub)
        order = np.lexsort((pub, groups))
        order = order[ok[order]]
        g_sorted, v_sorted = groups[order], pub[order]
        fallback, _ = _best_window(np.sort(pub[ok]), tol)
        start = np.full(int(groups.max()) + 1 if groups.size else 0, np.nan)
        bounds = np.flatnonzero(np.diff(g_sorted)) + 1
        for chunk_g, chunk_v in zip(np.split(g_sorted, bounds), np.split(v_sorted, bounds)):
            if chunk_g.size:
                start[chunk_g[0]] = chunk_v[0] if chunk_v.size == 1 else _best_window(chunk_v, tol)[0]
        guess = start[groups[target_rows]]
        guess = np.where(np.isnan(guess), fallback, guess)
        learned = (true_numbers >= guess - 1e-12) & (true_numbers <= guess + 2 * tol + 1e-12)
        disclosure = float(np.mean(learned)) if not np.isnan(fallback) else 0.0
        baseline = _best_window(np.sort(true_numbers), tol)[1] / true_numbers.size
        return AttributeDisclosure(column=column, kind="number", tolerance=tol, records=int(target_rows.size),
                                   disclosure=disclosure, baseline=float(baseline), gain=disclosure - float(baseline),
                                   recheck=recheck)
    # categories: compared as text
    pub_text = published.astype(object).where(published.notna(), None)
    frame = pd.DataFrame({"g": groups, "v": [None if v is None else str(v) for v in pub_text.to_numpy()]})
    counts = frame.dropna().value_counts(["g", "v"]).rename("n").reset_index()
    top = counts.groupby("g")["n"].transform("max")
    modes = counts[counts["n"] == top]
    ties = modes.groupby("g")["v"].size()
    overall = frame["v"].dropna().value_counts()
    overall_modes = set(overall.index[overall.to_numpy() == overall.max()]) if len(overall) else set()
    true_text = [str(v) for v in truth.astype(object).to_numpy()]
    target_g = groups[target_rows]
    mode_set = set(zip(modes["g"].to_numpy().tolist(), modes["v"].to_list()))
    tie_of = ties.to_dict()
    score = np.empty(target_rows.size)
    for i, (g, t) in enumerate(zip(target_g.tolist(), true_text)):
        if g in tie_of:
            score[i] = ((g, t) in mode_set) / tie_of[g]
        else:
            score[i] = (t in overall_modes) / len(overall_modes) if overall_modes else 0.0
    disclosure = float(score.mean())
    baseline = float(pd.Series(true_text).value_counts().max() / len(true_text))
    return AttributeDisclosure(column=column, kind="category", records=int(target_rows.size), disclosure=disclosure,
                               baseline=baseline, gain=disclosure - baseline, recheck=recheck)


# -- the view ----------------------------------------------------------------------------------------------------
def attacker_view(frame: pd.DataFrame, roles: Roles, *, protects: Protection, unit: Unit,
                  quasi_identifiers: Sequence[str] | None = None, protected: Sequence[str] = (),
                  source: pd.DataFrame | None = None, row_source: np.ndarray | None = None,
                  everything: pd.DataFrame | None = None,
                  published_truth: bool = False, linkage_risk: float | None = None,
                  nearest: dict[str, float] | None = None, dp: DifferentialPrivacy | None = None) -> AttackerView:
    """Measure the release ``frame`` as an attacker sees it (see the module docstring).

    Parameters
    ----------
    frame : DataFrame
        The published table (one part of a partitioned release).
    roles : Roles
        Every input column's role.
    protects, unit : str
        What the method protects and its privacy unit (which decide how identities are hidden).
    quasi_identifiers : sequence of str, optional
        The published quasi-identifiers (default: the roles' quasi-identifiers present in ``frame``).
    protected : sequence of str
        The columns whose values the attacker should not learn (attribute disclosure is measured for those
        published).
    source : DataFrame, optional
        The method's input rows (position = ``row_source``): attribute disclosure compares guesses with their
        true values. Without it (or ``row_source``), disclosure is not measured, unless ``published_truth``.
    row_source : ndarray, optional
        For each published row, its input row in ``source`` (-1: stands for none).
    published_truth : bool
        The protected columns are published as they are (a part of a partitioned release): the published values
        are the true ones, and disclosure is measured from the published table alone.
    everything : DataFrame, optional
        Every input record (the held-out ones too), for exact copies; not measured without it.
    linkage_risk, nearest : optional
        The unit's linkage risk and nearest-record distance quantiles, when measured (over
        :func:`known_columns`, as :func:`ppdp.tasks.privacy.measure.measure_release` measures them).
    dp : DifferentialPrivacy, optional
        A differentially private release's guarantee: its (epsilon, delta) enter the view (as declared, by
        construction; the floor's rows ``epsilon`` and ``delta``).
    """
    qis = [q for q in (quasi_identifiers if quasi_identifiers is not None else roles.quasi_identifiers)
           if q in frame.columns]
    every_known = known_columns(frame, roles, qis)
    counted = counted_columns(frame, qis, every_known[len(qis):])
    known = [*qis, *counted]
    n = len(frame)
    ids = equivalence_class_ids(frame, known) if n else np.zeros(0, dtype=np.int64)
    view: dict = dict(
        protects=protects, identity_by=identity_by(protects, unit), records=n, quasi_identifiers=qis,
        counted_columns=counted, known_columns=every_known, **_class_figures(ids, n),
        linkage_risk=linkage_risk if unit_of(unit).compares_records else None, nearest_distance=dict(nearest or {}),
        uninformative_columns=uninformative_columns(frame),
        epsilon=dp.epsilon if dp is not None else None, delta=dp.delta if dp is not None else None,
    )
    if unit_of(unit).group_column and GROUP_COLUMN in frame.columns and n:
        view.update(_group_figures(frame))
    if everything is not None:  # a row equal to a record on every column the attacker knows leads back to it
        columns = [c for c in every_known if c in everything.columns and roles_treatment(roles, c) != "pseudonymized"]
        view["exact_copies"] = exact_copy_share(frame, everything, columns)
    view["disclosure"] = _disclosures(frame, protected, ids, source, row_source, published_truth)
    return AttackerView(**view)


def _class_figures(ids: np.ndarray, n: int) -> dict:
    """Classes on the known columns: how many, the smallest, the records alone, the average and highest risk."""
    sizes = np.bincount(ids) if n else np.zeros(0, dtype=np.int64)
    per_row = sizes[ids] if n else np.zeros(0)
    return dict(classes=int(sizes.size), smallest_class=int(sizes.min()) if sizes.size else 0,
                records_alone=float(np.mean(per_row == 1)) if n else 0.0,
                average_risk=float(np.mean(1.0 / per_row)) if n else 0.0,
                highest_risk=float(1.0 / sizes.min()) if sizes.size else 0.0)


def _group_figures(frame: pd.DataFrame) -> dict:
    """Generating groups in the published group column: how many, the smallest, rows alone, average risk."""
    g = equivalence_class_ids(frame, [GROUP_COLUMN])  # a group publishes one row per record it stands for
    gsizes = np.bincount(g)
    member = gsizes[g]
    return dict(groups=int(gsizes.size), smallest_group=int(gsizes.min()),
                group_alone=float(np.mean(member == 1)), group_average_risk=float(np.mean(1.0 / member)))


def _disclosures(frame: pd.DataFrame, protected: Sequence[str], ids: np.ndarray, source: pd.DataFrame | None,
                 row_source: np.ndarray | None, published_truth: bool) -> list[AttributeDisclosure]:
    """Attribute disclosure of each protected column published, against the published values (a part of a
    partitioned release) or the input rows the published ones stand for."""
    n = len(frame)
    disclosures = []
    rows = np.asarray(row_source) if row_source is not None else None
    for column in protected:
        if column not in frame.columns:
            continue
        published = frame[column].reset_index(drop=True)
        if published_truth:
            d = attribute_disclosure(column, published, ids, np.arange(n), published, "published")
        elif source is not None and rows is not None and column in source.columns:
            targets = np.flatnonzero(rows >= 0)
            if targets.size == 0:
                continue
            truth = source[column].reset_index(drop=True).iloc[rows[targets]].reset_index(drop=True)
            d = attribute_disclosure(column, published, ids, targets, truth, "original")
        else:
            continue
        if d is not None:
            disclosures.append(d)
    return disclosures


def roles_treatment(roles: Roles, column: str) -> str | None:
    try:
        return roles.get(column).treatment
    except KeyError:
        return None


def accept_of(policy: PrivacyThresholds) -> AcceptBelowFloor | None:
    """The policy's ``accept_below_floor`` (only a release spec's policy has one)."""
    return policy.accept_below_floor if isinstance(policy, PrivacyPolicy) else None



# -- the floor -----------------------------------------------------------------------------------------------------
def check_floor(view: AttackerView, protected: Sequence[str], unit: Unit,
                accept: AcceptBelowFloor | None = None) -> FloorReport:
    """Hold ``view`` to the floor's rows that apply to it (:data:`ppdp.schemas.privacy.FLOOR`). A figure that
    could not be measured fails (fail closed); so does an attribute-protecting release none of whose protected
    columns could be measured. ``accept``: the owner's decision to publish below the floor, recorded when it
    fails."""
    kinds: list[str] = [view.identity_by] if view.identity_by != "none" else []
    if view.protects == "attribute":
        kinds.append("attribute")
    claims: list[Claim] = []
    known = ", ".join(view.quasi_identifiers + view.counted_columns) or "no column"
    beside = f" ({', '.join(view.counted_columns)} published beside them, counted in)" if view.counted_columns else ""
    for kind in kinds:
        for rule in floor_rules(kind):
            worst = None
            if rule.key == "disclosure_gain":
                measured = {d.column: d for d in view.disclosure}
                wanted = [c for c in protected] or ["(no protected column)"]
                for column in wanted:
                    d = measured.get(column)
                    value = None if d is None else d.gain
                    note = (f"attribute '{column}': learned {d.disclosure:.1%} against {d.baseline:.1%} by the best "
                            "constant guess" if d is not None else f"attribute '{column}' cannot be measured")
                    claims.append(_floor_claim(rule.key, f"{rule.figure} ('{column}')", unit, value, rule.limit,
                                               rule.comparison, "published" if d is not None
                                               and d.recheck == "published" else rule.recheck, note,
                                               name=f"floor: disclosure gain ({column})"))
                continue
            value = {"records_alone": view.records_alone,
                     "average_risk": view.group_average_risk if kind == "groups" else view.average_risk,
                     "group_alone": view.group_alone, "exact_copies": view.exact_copies,
                     "linkage_risk": view.linkage_risk, "epsilon": view.epsilon, "delta": view.delta}[rule.key]
            if rule.key in ("records_alone", "average_risk") and kind == "classes":
                worst = f"over {known}{beside}; smallest class {view.smallest_class}"
            elif rule.key == "linkage_risk":
                worst = f"each input record's nearest published row over {known_text(view)}, standardized"
            elif rule.key == "exact_copies":
                worst = f"equal on {known_text(view)}"
            claims.append(_floor_claim(rule.key, rule.figure, unit, value, rule.limit, rule.comparison, rule.recheck,
                                       worst))
    holds = all(c.passed for c in claims)
    return FloorReport(holds=holds, applies=kinds, claims=claims, accepted=accepted_below(claims, holds, accept))


def accepted_below(claims: Sequence[Claim], holds: bool, accept: AcceptBelowFloor | None) -> AcceptedBelowFloor | None:
    """The owner's decision to publish below the floor, with each failed row, recorded only when the floor fails."""
    if holds or accept is None:
        return None
    return AcceptedBelowFloor(reason=accept.reason, approved_by=accept.approved_by,
                              failed=[describe_floor_claim(c) for c in claims if not c.passed])


def _floor_claim(key: str, measure: str, unit: Unit, value: float | None, limit: float, comparison: str,
                 recheck: str, worst: str | None, name: str | None = None) -> Claim:
    ok = value is not None and (value <= limit + 1e-12 if comparison == "<=" else value >= limit - 1e-12)
    return Claim(name=name or f"floor: {key.replace('_', ' ')}", measure=measure, unit=unit, value=value,
                 threshold=limit, comparison=comparison, passed=bool(ok), recheck=recheck, worst=worst)


def describe_floor_claim(c: Claim) -> str:
    """One line for a floor claim: its name, value and limit, and where (never a data value)."""
    value = "not measured" if c.value is None else f"{c.value:.4g}"
    return f"{c.name.removeprefix('floor: ')} {value} (floor {c.comparison} {c.threshold:g})" + (
        f": {c.worst}" if c.worst else "")


# -- words ---------------------------------------------------------------------------------------------------------
_HOW = {"classes": "by equivalence classes: every published record shares its quasi-identifiers as published with "
                   "other records",
        "groups": "by generating groups: each published row is synthesized from a group of records and stands for "
                  "none of them",
        "records": "record by record: each published row is perturbed or generated",
        "differential_privacy": "by a differentially private mechanism: every row is generated, and whether any one "
                                "record was in the input changes the odds of any published table by a bounded factor "
                                "(epsilon, delta)"}


def protection_sentence(view: AttackerView) -> str:
    """What the release protects against and what it does not, in one sentence (names and shares only)."""
    if view.identity_by == "none":
        kept = ", ".join(view.quasi_identifiers) or "no column"
        return (f"Protects the value of {', '.join(d.column for d in view.disclosure) or 'its protected columns'} "
                f"only. Who is in which row is not hidden: the quasi-identifiers ({kept}) are published unchanged, "
                f"and {view.records_alone:.1%} of the published records are alone on them.")
    text = f"Protects who is in which row, {_HOW[view.identity_by]}."
    if view.identity_by == "records" and view.linkage_risk is not None:
        text += " " + linkage_sentence(view)
    if view.disclosure:
        text += (" The values of " + ", ".join(d.column for d in view.disclosure) + " are published beside them "
                 "(attribute disclosure below).")
    return text


def known_text(view: AttackerView) -> str:
    """The columns the record-level figures were measured over, counted: "the 30 known columns (5 quasi-identifiers,
    25 published beside them)". A manifest written before the known columns were recorded measured them over the
    quasi-identifiers alone, and says so."""
    qis = len(view.quasi_identifiers)
    if not view.known_columns:
        return f"the {qis} quasi-identifier(s) alone"
    beside = len(view.known_columns) - qis
    return (f"the {len(view.known_columns)} known column(s) ({qis} quasi-identifier(s)"
            + (f", {beside} published beside them" if beside else "") + ")")


def linkage_sentence(view: AttackerView) -> str:
    """What the linkage risk measured, in one sentence: the attack, the columns, the share (no data value)."""
    return (f"An attacker who knows each input record's values on {known_text(view)} and takes the published row "
            f"nearest to it (standardized distance) finds that record's own row for {view.linkage_risk:.1%} of the "
            f"records (linkage risk {view.linkage_risk:.3f}).")


def view_lines(view: AttackerView) -> list[str]:
    """The attacker's view in a few short lines (CLI summary, Prefect artifact): shares and counts only."""
    known = len(view.quasi_identifiers) + len(view.counted_columns)
    beside = f", {', '.join(view.counted_columns)} counted in" if view.counted_columns else ""
    lines = [f"records alone {view.records_alone:.1%} on the {known} column(s) an attacker matches on{beside}; "
             f"smallest class {view.smallest_class:,}; average re-identification risk {view.average_risk:.3f}"]
    if view.epsilon is not None:
        lines.insert(0, f"differentially private by construction: epsilon {view.epsilon:.4g}, delta "
                        f"{view.delta or 0:.3g} for one row added or removed (every row generated; the figures below "
                        "describe generated rows)")
    if view.groups is not None and view.group_average_risk is not None:
        lines.append(f"{view.groups:,} generating groups, smallest {view.smallest_group:,}; average risk over groups "
                     f"{view.group_average_risk:.3f}")
    extra = []
    if view.exact_copies is not None:
        extra.append(f"exact copies of input records {view.exact_copies:.2%}")
    if view.linkage_risk is not None:
        extra.append(f"linkage risk {view.linkage_risk:.3f} (nearest published row over {known_text(view)})")
    if "q05" in view.nearest_distance:
        extra.append(f"nearest-record distance q05 {view.nearest_distance['q05']:.3g}")
    if extra:
        lines.append("; ".join(extra))
    for d in view.disclosure:
        within = f" within +/-{d.tolerance:.3g}" if d.tolerance is not None else ""
        lines.append(f"attribute '{d.column}': learned{within} for {d.disclosure:.1%} of records, against "
                     f"{d.baseline:.1%} by the best constant guess ({d.gain:+.1%})")
    if view.uninformative_columns:
        lines.append(f"carry no information ('*' or missing in every row): {', '.join(view.uninformative_columns)}")
    return lines
