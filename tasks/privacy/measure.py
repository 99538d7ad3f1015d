"""Measure a table's or a release's privacy, honestly for its kind; decide against thresholds separately.

Classes: for a generalized release (or any table checked with ``ppdp validate``), the equivalence classes are
the rows sharing every quasi-identifier value. For a synthetic release (condensation), published quasi-
identifier values are all different, so the classes are the groups the records were generated from: k is the
smallest group, and the sensitive-attribute models are computed over each group's released values.

Measuring (:func:`measure_release`, :func:`measure_table`) never decides; :func:`check_gates` compares a report
with thresholds, and a gate whose measure could not be computed fails (fail closed).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.privacy import GATE_UNITS, PrivacyThresholds, gates_judged
from ppdp.schemas.release import DpRelease, Release
from ppdp.schemas.reports import (
    AnonymityMeasures,
    Claim,
    PerturbationMeasures,
    PrivacyReport,
    QueryAnswersSummary,
    QueryAttack,
    RiskMeasures,
    Roles,
    SyntheticMeasures,
)
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.core.hierarchy import read_hierarchy  # noqa: F401  (re-exported)
from ppdp.tasks.privacy import models, risk
from ppdp.tasks.privacy.attacker import known_columns, known_text
from ppdp.tasks.privacy.synthetic import confidence_interval_privacy, linkage_risk

ATTACK_QUERIES = 2000
ATTACK_STOP = 100


# -- measuring ----------------------------------------------------------------------------------------------
def measure_table(
    frame: pd.DataFrame,
    qi: list[str],
    sa: list[str],
    *,
    thresholds: PrivacyThresholds | None = None,
    population: pd.DataFrame | None = None,
    hierarchies: dict[str, pd.DataFrame] | None = None,
    seed: int = 0,
    attack_queries: int = ATTACK_QUERIES,
) -> PrivacyReport:
    """Every model over ``frame``'s equivalence classes (rows sharing all ``qi`` values); no gates."""
    thresholds = thresholds or PrivacyThresholds()
    report = _class_measures(frame, qi, qi, sa, thresholds, population, hierarchies)
    attacker = _attack(frame, None, qi, sa, seed, attack_queries) if attack_queries else None
    return report.model_copy(update={"attacker": attacker})


def measure_release(
    original: pd.DataFrame,
    release: Release,
    roles: Roles,
    *,
    thresholds: PrivacyThresholds | None = None,
    population: pd.DataFrame | None = None,
    hierarchies: dict[str, pd.DataFrame] | None = None,
    seed: int = 0,
    attack_queries: int = ATTACK_QUERIES,
) -> PrivacyReport:
    """The privacy of ``release`` made from ``original`` (the sanitizer's input, same row order), measured as
    its unit requires:

    * ``equivalence_class``: every model over the published rows sharing all quasi-identifier values;
    * ``generating_group``: every model over the published group column (:data:`GROUP_COLUMN`: the groups the
      records were generated from), plus linkage risk, DCR and paper 000's interval privacy;
    * ``record``: no classes; linkage risk (nearest published record, over every column the attacker is taken
      to know, is the one standing for the original record), DCR and paper 004's perturbation measures;
    * ``differential_privacy``: no classes; the mechanism's guarantee as it was built (``release.dp``: its claims
      hold by construction). No distance from the input's records to the generated rows is published beside it.
    """
    thresholds = thresholds or PrivacyThresholds()
    original = original.reset_index(drop=True)
    frame = release.frame
    qis = [q for q in roles.quasi_identifiers if q in frame.columns]
    sas = [s for s in roles.names(Role.sensitive) if s in frame.columns]
    if release.unit == "generating_group":
        report = _class_measures(frame, [GROUP_COLUMN], qis, sas, thresholds, None, hierarchies)
        synthetic = _synthetic(original, release, roles, qis, seed, thresholds.dcr_quantile)
        report = report.model_copy(update={"unit": "generating_group", "synthetic": synthetic[0],
                                           "linkage_risk": synthetic[0].linkage_risk, "dcr_quantile": synthetic[1]})
    elif release.unit == "equivalence_class":
        report = _class_measures(frame, qis, qis, sas, thresholds, population, hierarchies)
    elif release.unit == "differential_privacy":  # no distance to the input's records: not a DP figure, not claimed
        report = PrivacyReport(unit="differential_privacy", quasi_identifiers=qis, sensitive_attributes=sas,
                               records=len(frame),
                               dp=release.dp if isinstance(release, DpRelease) else None)
    else:
        synthetic = _synthetic(original, release, roles, qis, seed, thresholds.dcr_quantile)
        report = PrivacyReport(unit="record", quasi_identifiers=qis, sensitive_attributes=sas, records=len(frame),
                               synthetic=synthetic[0], linkage_risk=synthetic[0].linkage_risk,
                               dcr_quantile=synthetic[1])
    return report.model_copy(update={
        "perturbation": _perturbation(original, release, roles),
        "attacker": _attack(original, frame, qis, sas, seed, attack_queries) if attack_queries and qis else None,
    })


def _class_measures(frame: pd.DataFrame, classes: list[str], qis: list[str], sas: list[str],
                    thresholds: PrivacyThresholds, population: pd.DataFrame | None,
                    hierarchies: dict[str, pd.DataFrame] | None) -> PrivacyReport:
    ids = equivalence_class_ids(frame, classes)
    sizes = np.bincount(ids) if ids.size else np.zeros(0, dtype=np.int64)
    details: dict[str, models.MeasureDetail] = {}
    if len(frame) and sas:
        wanted = ["k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity",
                  "entropy_l_diversity_value", "recursive_c_l_diversity", "t_closeness", "delta_disclosure",
                  "basic_beta_likeness", "enhanced_beta_likeness"]
        hier = {s: h for s, h in (hierarchies or {}).items() if s in sas}
        if hier:
            wanted.append("hierarchical_t_closeness")
        details = models.all_measure_details(frame, classes, sas, hierarchies=hier or None, measures=wanted,
                                             class_ids=ids)
    elif sizes.size:  # same class numbering as tasks.privacy.models: ids from equivalence_class_ids
        details["k_anonymity"] = models.MeasureDetail(int(sizes.min()), int(np.argmin(sizes)), None)

    measures = anonymity_measures(details, int(sizes.min()) if sizes.size else 0)
    risk_measures = None
    if len(frame):
        r = risk.reidentification_risk(frame, classes, population=population, threshold=thresholds.risk_threshold,
                                       class_ids=ids)
        risk_measures = RiskMeasures(
            prosecutor_max=r.prosecutor_highest, prosecutor_average=r.prosecutor_average,
            records_at_risk=r.prosecutor_records_at_risk, risk_threshold=r.threshold,
            journalist_max=r.journalist_highest if r.journalist_uses_population else None,
            journalist_average=r.journalist_average if r.journalist_uses_population else None,
            marketer=r.marketer, sample_uniques=r.sample_uniques,
        )
    # where each measure is worst (class index in the stable numbering of tasks.privacy.models, never a value)
    recursive = (
        recursive_cl(frame, classes, sas, thresholds.c, thresholds.l, class_ids=ids)
        if thresholds.l is not None and thresholds.l_variant == "recursive" and thresholds.c is not None and sas
        and len(frame) else None
    )
    report = PrivacyReport(
        unit="equivalence_class",
        k=measures.k_anonymity,
        quasi_identifiers=qis,
        sensitive_attributes=sas,
        records=len(frame),
        groups=int(sizes.size),
        mean_group_size=float(sizes.mean()) if sizes.size else 0.0,
        measures=measures,
        risk=risk_measures,
        details=details,
        recursive=recursive,
    )
    return report


def anonymity_measures(details: dict, k: int) -> AnonymityMeasures:
    """The report's measures from :func:`ppdp.tasks.privacy.models.all_measure_details` (non-finite values as
    None); shared by the single-table path and the partitioned one (:mod:`ppdp.tasks.privacy.partitioned`)."""

    def value(name: str):
        d = details.get(name)
        return None if d is None else _finite(d.value)

    return AnonymityMeasures(
        k_anonymity=k,
        alpha_k_anonymity=value("alpha_k_anonymity"),
        l_diversity=value("l_diversity"),
        entropy_l_diversity=value("entropy_l_diversity"),
        recursive_c_l_diversity=value("recursive_c_l_diversity"),
        t_closeness=value("t_closeness"),
        delta_disclosure=value("delta_disclosure"),
        basic_beta_likeness=value("basic_beta_likeness"),
        enhanced_beta_likeness=value("enhanced_beta_likeness"),
        entropy_l_value=value("entropy_l_diversity_value"),
        hierarchical_t_closeness=value("hierarchical_t_closeness"),
    )


def _finite(v):
    if isinstance(v, tuple):
        return tuple(_finite(x) for x in v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


def recursive_cl(frame: pd.DataFrame, classes: list[str], sas: list[str], c: float, l: int,  # noqa: E741
                 class_ids: np.ndarray | None = None) -> tuple[float, int | None, str | None]:
    """Recursive (c,l)-diversity for the given l: (max over classes and attributes of r1 / (r_l + ... + r_m),
    worst class, worst attribute); satisfied when that maximum is below c (Machanavajjhala et al. 2007; a class
    with fewer than l distinct values has ratio infinity). Computed by
    :func:`ppdp.tasks.privacy.models.recursive_c_l_ratio_detail`, the one recursive (c,l) implementation."""
    d = models.recursive_c_l_ratio_detail(frame, classes, sas, l, class_ids=class_ids)
    return float(d.value), d.worst_class, d.worst_attribute


def _synthetic(original: pd.DataFrame, release: Release, roles: Roles, qis: list[str], seed: int,
               quantile: float = 0.05) -> tuple[SyntheticMeasures, float | None]:
    """Linkage risk and DCR (one nearest-neighbour search over the standardized columns the attacker is taken to
    know: :func:`ppdp.tasks.privacy.attacker.known_columns`, the quasi-identifiers and every column published
    beside them), paper 000's interval privacy (generating groups); returns the measures and the DCR at
    ``quantile``."""
    risk_value, dcr_q, exact, at_q = None, {}, None, None
    known = [c for c in known_columns(release.frame, roles, qis) if c in original.columns]
    if known and len(original) and len(release.frame):
        enc = TableEncoder(columns=known, kinds=roles.kinds(), orders=roles.orders()).fit(original)
        x_orig, x_rel = enc.transform(original), enc.transform(release.frame)
        dist, nearest = risk.closest_records(x_orig, x_rel)
        if release.unit == "record":
            risk_value = float(np.mean(release.row_source[nearest] == np.arange(len(original))))
        elif release.input_group is not None and release.group is not None:
            risk_value = linkage_risk(x_orig, x_rel, release.input_group, release.group, nearest=nearest)
        dcr = risk.dcr_summary(dist)
        dcr_q = {f"q{int(round(level * 100)):02d}": float(v) for level, v in zip(dcr.levels, dcr.values)}
        exact = float(dcr.exact_match_share)
        at_q = float(np.quantile(dist, quantile))
    ci = interval_privacy(original, release, roles, seed) if release.unit == "generating_group" else None
    return SyntheticMeasures(linkage_risk=risk_value, dcr_quantiles=dcr_q, dcr_exact_matches=exact,
                             confidence_interval_privacy=ci), at_q


def _perturbation(original: pd.DataFrame, release: Release, roles: Roles) -> PerturbationMeasures | None:
    """Paper 004's VD, RP, RK, CP, CK over the numeric attributes, rows aligned by ``row_source`` (only the
    published rows that stand for an input row). A record release of generated rows (``row_source`` all -1) with
    as many rows as the input is paired as paper 004 pairs A and MA, the i-th published row with the i-th input
    row: the published order is a seeded shuffle, so the pairing is arbitrary but reproducible from the manifest.
    Pairs with a missing cell on either side are left out (complete pairs only, as the paper's data had none).
    None for other generated releases, or when no complete pair remains."""
    source = release.row_source
    if release.unit == "record" and len(source) == len(original) and bool(np.all(source == -1)):
        source = np.arange(len(original))
    keep = np.flatnonzero(source >= 0)
    if keep.size == 0:
        return None
    cols = [c for c in roles.attributes if c in release.frame.columns and roles.get(c).kind is ColumnKind.numeric
            and pd.api.types.is_numeric_dtype(original[c])
            and pd.api.types.is_numeric_dtype(release.frame[c])]  # generalized columns publish labels: no VD
    if not cols:
        return None
    a = original[cols].to_numpy(dtype=float, na_value=np.nan)[source[keep]]
    ma = release.frame[cols].to_numpy(dtype=float, na_value=np.nan)[keep]
    complete = np.isfinite(a).all(axis=1) & np.isfinite(ma).all(axis=1)  # pairs with a missing cell are left out
    a, ma = a[complete], ma[complete]
    if len(a) == 0 or not np.any(a):
        return None
    d = risk.matrix_distortion(a, ma)
    return PerturbationMeasures(vd=d.vd, rp=d.rp, rk=d.rk, cp=d.cp, ck=d.ck)


def _attack(original: pd.DataFrame, release: pd.DataFrame | None, qis: list[str], sas: list[str], seed: int,
            max_queries: int) -> QueryAttack | None:
    """Paper 002's random-query attacker: queries drawn from ``original``'s records, asked of ``original`` and of
    ``release`` (None, or ``original`` itself, for a standalone table; see
    :func:`ppdp.tasks.privacy.risk.random_query_attack`)."""
    other = original if release is None else release
    qis = [q for q in qis if q in original.columns and q in other.columns]
    sas = [s for s in sas if s in original.columns and s in other.columns]
    if not qis or len(original) == 0 or len(other) == 0 or max_queries < 1:
        return None
    a = risk.random_query_attack(original, release, qis, sas or None, queries=max_queries, stop_after=ATTACK_STOP,
                                 seed=seed)

    def summary(answers: risk.QueryAnswers) -> QueryAnswersSummary:
        reid, assoc = answers.reidentification_summary(), answers.association_summary() or {}
        return QueryAnswersSummary(
            matched_queries=answers.matched_queries, identifying_share=answers.identifying_share,
            matches_median=answers.matches_median,
            **{f"reidentification_{k}": v for k, v in reid.items()},
            **{f"sensitive_association_{k}": v for k, v in assoc.items()},
        )

    return QueryAttack(queries=len(a.queries), draws=a.queries.draws, stop_after=a.stop_after, seed=seed,
                       sensitive_attributes=list(a.original.sensitive), release_is_original=a.same_table,
                       original=summary(a.original), release=summary(a.release))


# -- deciding -----------------------------------------------------------------------------------------------
CLASS_LABEL = {"equivalence_class": "equivalence class", "generating_group": "group", "record": "record",
               "differential_privacy": "generated row"}


def check_gates(report: PrivacyReport, thresholds: PrivacyThresholds) -> PrivacyReport:
    """Compare ``report`` with every threshold that is set and applies to the report's unit; each becomes a
    :class:`~ppdp.schemas.reports.Claim` (value, threshold, unit, how to re-check). A measure that could not be
    computed fails (fail closed); a threshold that does not apply to the unit fails too, unless the policy lists it in
    ``not_applicable`` (kept as written, not judged: no claim)."""
    m = report.measures
    details: dict = report.details
    unit = report.unit
    label = CLASS_LABEL[unit]
    classes_over = GROUP_COLUMN if unit == "generating_group" else "the quasi-identifiers"

    def where(name: str, extra: str = "") -> str | None:
        d = details.get(name)
        if d is None:
            return extra or None
        parts = []
        if d.worst_class is not None:
            parts.append(f"{label} #{d.worst_class}")
        if d.worst_attribute is not None:
            parts.append(f"attribute '{d.worst_attribute}'")
        return ", ".join(parts) + extra if parts else (extra or None)

    claims: list[Claim] = []
    judged = set(gates_judged(thresholds))  # a release spec's gates kept but not judged (not_applicable) left out

    def gate(key: str, name: str, measure: str, threshold: float | None, value: float | None, at_least: bool,
             worst: str | None, tolerance: float = 0.0, recheck: str = "published") -> None:
        if threshold is None or key not in judged:
            return
        applies = unit in GATE_UNITS[key]
        ok = applies and value is not None and (
            value >= threshold - tolerance if at_least else value <= threshold + tolerance)
        if not applies:
            worst = f"does not apply to unit {unit}"
        elif value is None:
            worst = "cannot be computed for this table"
        claims.append(Claim(name=name, measure=measure, unit=unit, value=value, threshold=float(threshold),
                            comparison=">=" if at_least else "<=", passed=bool(ok), recheck=recheck, worst=worst))

    per_class = f"per {label} (over {classes_over})"
    k_value = float(report.k) if report.k is not None and report.records else None
    gate("k", "k", f"smallest {label} size (over {classes_over})", thresholds.k, k_value, True,
         where("k_anonymity", f" ({report.k} records)"))
    gate("alpha", "alpha", f"largest share of one sensitive value {per_class}", thresholds.alpha,
         m.alpha_k_anonymity[0] if m is not None and m.alpha_k_anonymity else None, False,
         where("alpha_k_anonymity"))
    if "l" in judged:
        if thresholds.l_variant == "distinct":
            gate("l", "l", f"fewest distinct sensitive values {per_class}", thresholds.l,
                 m.l_diversity if m is not None else None, True, where("l_diversity"))
        elif thresholds.l_variant == "entropy":  # exp(entropy) of a balanced class of l values is l - 2e-16
            gate("l", "l (entropy)", f"smallest exp(entropy) of sensitive values {per_class}", thresholds.l,
                 m.entropy_l_value if m is not None else None, True, where("entropy_l_diversity_value"),
                 tolerance=1e-9)
        else:
            assert thresholds.c is not None  # the policy requires c for l_variant recursive (its validator)
            rec = report.recursive
            ratio = None if rec is None or not math.isfinite(rec[0]) else rec[0]
            applies = unit in GATE_UNITS["l"]
            ok = applies and ratio is not None and ratio < float(thresholds.c)
            worst = None if rec is None or rec[1] is None else f"{label} #{rec[1]}, attribute '{rec[2]}'"
            if ratio is None and applies:
                worst = (worst or "") + " has fewer than l distinct values"
            claims.append(Claim(name=f"(c,l) recursive l={thresholds.l}",
                                measure=f"largest r1 / (r_l + ... + r_m) {per_class}", unit=unit, value=ratio,
                                threshold=float(thresholds.c), comparison="<", passed=bool(ok), worst=worst))
    t_value, t_name = None, "t_closeness"
    if m is not None:
        t_value = m.hierarchical_t_closeness if m.hierarchical_t_closeness is not None else m.t_closeness
        t_name = "hierarchical_t_closeness" if m.hierarchical_t_closeness is not None else "t_closeness"
    gate("t", "t", f"largest EMD between a {label} and the table", thresholds.t, t_value, False, where(t_name))
    gate("delta", "delta", f"largest |log(p_class / p_table)| {per_class}", thresholds.delta,
         m.delta_disclosure if m is not None else None, False, where("delta_disclosure"))
    beta = None
    if m is not None:
        beta = m.basic_beta_likeness if thresholds.beta_variant == "basic" else m.enhanced_beta_likeness
    gate("beta", f"beta ({thresholds.beta_variant})", f"largest relative gain of a sensitive value {per_class}",
         thresholds.beta, beta, False, where(f"{thresholds.beta_variant}_beta_likeness"))
    r = report.risk
    gate("max_prosecutor_risk", "max_prosecutor_risk", f"highest 1/|{label}|", thresholds.max_prosecutor_risk,
         r.prosecutor_max if r else None, False, where("k_anonymity"))
    gate("max_average_risk", "max_average_risk", f"average 1/|{label}| over records", thresholds.max_average_risk,
         r.prosecutor_average if r else None, False, None)
    gate("max_records_at_risk", "max_records_at_risk", f"share of records whose 1/|{label}| exceeds "
         f"{thresholds.risk_threshold:g}", thresholds.max_records_at_risk, r.records_at_risk if r else None, False,
         f"risk above {thresholds.risk_threshold:g}")
    gate("max_marketer_risk", "max_marketer_risk", f"{label}s / records", thresholds.max_marketer_risk,
         r.marketer if r else None, False, None)
    gate("max_sample_uniques", "max_sample_uniques", f"share of records alone in their {label}",
         thresholds.max_sample_uniques, r.sample_uniques if r else None, False, None)
    gate("max_journalist_risk", "max_journalist_risk", "highest 1/|population class|", thresholds.max_journalist_risk,
         r.journalist_max if r else None, False, None)
    link = ("share of original records whose nearest published record (standardized known columns: "
            "quasi-identifiers and every column published beside them) stands for them" if unit == "record" else
            "share of original records whose nearest published record (standardized known columns) came from their "
            "own group")
    over = (f"nearest published row over {known_text(report.attacker_view)}, standardized"
            if report.attacker_view is not None else None)
    gate("max_linkage_risk", "max_linkage_risk", link, thresholds.max_linkage_risk, report.linkage_risk, False,
         over, recheck="original")
    gate("min_dcr", "min_dcr", f"{thresholds.dcr_quantile:g} quantile of the distance from each original record "
         "to its closest published record (standardized known columns)", thresholds.min_dcr,
         report.dcr_quantile, True, None, recheck="original")
    gate("min_vd", "min_vd", "paper 004's value difference ||A - A'||_F / ||A||_F over the numeric attributes",
         thresholds.min_vd, report.perturbation.vd if report.perturbation else None, True, None, recheck="original")
    view = report.attacker_view
    gain = view.disclosure_gain if view is not None else None
    worst_d = max(view.disclosure, key=lambda d: d.gain) if view is not None and view.disclosure else None
    gate("max_disclosure_gain", "max_disclosure_gain", "attribute disclosure above the best constant guess (share of "
         "published records whose protected value an attacker holding their quasi-identifiers learns, minus the "
         "baseline), largest over the protected columns", thresholds.max_disclosure_gain, gain, False,
         None if worst_d is None else f"attribute '{worst_d.column}'",
         recheck="published" if worst_d is not None and view is not None
         and all(d.recheck == "published" for d in view.disclosure)
         else "original")
    dp = report.dp
    if unit == "differential_privacy":  # the release's own claim: the mechanism's guarantee, by construction
        claims.insert(0, dp_claim(dp))
    gate("max_epsilon", "max_epsilon", "epsilon of the mechanism's (epsilon, delta)-differential privacy, for one row "
         "added or removed (by construction)", thresholds.max_epsilon, dp.epsilon if dp is not None else None, False,
         None, recheck="construction")
    gate("max_delta", "max_delta", "delta of the mechanism's (epsilon, delta)-differential privacy (by construction)",
         thresholds.max_delta, dp.delta if dp is not None else None, False, None, recheck="construction")
    return report.model_copy(update={"claims": claims})


DP_CLAIM = "(epsilon, delta)-DP"


def dp_claim(dp) -> Claim:
    """A differentially private release's main claim: the mechanism, as built, spends at most the epsilon and delta
    it was given (the library's privacy map for one row added or removed). Holds by construction; value: the epsilon
    spent, threshold: the epsilon asked for. Without a recorded guarantee it fails (fail closed)."""
    measure = ("the mechanism's privacy loss for one row added or removed, from the DP library's privacy map "
               "(holds by construction)")
    if dp is None:
        return Claim(name=DP_CLAIM, measure=measure, unit="differential_privacy", value=None, threshold=0.0,
                     comparison="<=", passed=False, recheck="construction", worst="no mechanism recorded")
    ok = dp.epsilon_spent <= dp.epsilon * (1 + 1e-9) and dp.delta_spent <= dp.delta * (1 + 1e-9)
    return Claim(name=DP_CLAIM, measure=measure, unit="differential_privacy", value=dp.epsilon_spent,
                 threshold=dp.epsilon, comparison="<=", passed=bool(ok), recheck="construction",
                 worst=f"{dp.library} {dp.mechanism}, {dp.definition} DP; delta spent {dp.delta_spent:.3g} of "
                       f"{dp.delta:.3g}")


def describe_failed(failed: list[Claim]) -> str:
    """One line naming each failed gate, its value, threshold and where it is worst (never a data value)."""
    return "; ".join(
        f"{g.name}: {'not computable' if g.value is None else format(g.value, '.4g')} vs threshold {g.threshold:g}"
        + (f" ({g.worst})" if g.worst else "")
        for g in failed
    )


# -- compatibility helpers used by the tuner ----------------------------------------------------------------
def numeric_attribute_matrix(frame: pd.DataFrame, roles: Roles, encoder: TableEncoder | None = None
                             ) -> tuple[np.ndarray, TableEncoder]:
    """Numeric and ordinal attributes, encoded in raw units (ranks for ordinal), for interval measures."""
    cols = [c for c in roles.attributes if roles.get(c).kind in (ColumnKind.numeric, ColumnKind.ordinal)]
    if encoder is None:
        encoder = TableEncoder(columns=cols, kinds=roles.kinds(), orders=roles.orders(), standardize=False).fit(frame)
    return encoder.transform(frame), encoder


def interval_privacy(original: pd.DataFrame, release: Release, roles: Roles, seed: int = 0) -> float | None:
    """Paper 000's confidence-interval privacy of a synthetic release (see
    :func:`tasks.privacy.synthetic.confidence_interval_privacy`)."""
    x, enc = numeric_attribute_matrix(original.reset_index(drop=True), roles)
    if x.shape[1] == 0:
        return None
    y, _ = numeric_attribute_matrix(release.frame, roles, enc)
    if release.input_group is None or release.group is None:
        return None
    return confidence_interval_privacy(x, y, release.input_group, release.group, seed=seed)
