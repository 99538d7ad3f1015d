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

from ppdp.schemas.reports import (
    AnonymityMeasures,
    GateResult,
    PerturbationMeasures,
    PrivacyReport,
    QueryAttack,
    RiskMeasures,
    Roles,
    SyntheticMeasures,
)
from ppdp.schemas.spec import ColumnKind, PrivacyThresholds, Role
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.core.hierarchy import read_hierarchy  # noqa: F401  (re-exported)
from ppdp.tasks.privacy import models, risk
from ppdp.tasks.privacy.synthetic import confidence_interval_privacy, linkage_risk
from ppdp.tasks.sanitize.base import SanitizedTable

GROUP = "__ppdp_group__"  # the generating group of synthetic records, as a pseudo quasi-identifier
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
    attacker = _attack(frame, qi, sa, seed, attack_queries) if attack_queries else None
    return report.model_copy(update={"attacker": attacker})


def measure_release(
    original: pd.DataFrame,
    release: SanitizedTable,
    roles: Roles,
    *,
    thresholds: PrivacyThresholds | None = None,
    population: pd.DataFrame | None = None,
    hierarchies: dict[str, pd.DataFrame] | None = None,
    seed: int = 0,
    attack_queries: int = ATTACK_QUERIES,
) -> PrivacyReport:
    """The privacy of ``release`` made from ``original`` (the sanitizer's input, same row order)."""
    thresholds = thresholds or PrivacyThresholds()
    original = original.reset_index(drop=True)
    frame = release.frame
    qis = [q for q in roles.quasi_identifiers if q in frame.columns]
    sas = [s for s in roles.names(Role.sensitive) if s in frame.columns]
    if release.release_kind == "synthetic":
        classed = frame.assign(**{GROUP: release.groups})
        report = _class_measures(classed, [GROUP], qis, sas, thresholds, None, hierarchies)
        report = report.model_copy(update={
            "model": "synthetic_groups",
            "synthetic": _synthetic(original, release, roles, qis, seed),
        })
        report = report.model_copy(update={"linkage_risk": report.synthetic.linkage_risk})
    else:
        report = _class_measures(frame, qis, qis, sas, thresholds, population, hierarchies)
    return report.model_copy(update={
        "perturbation": _perturbation(original, release, roles),
        "attacker": _attack(frame, qis, sas, seed, attack_queries) if attack_queries and qis else None,
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
        details = models.all_measure_details(frame, classes, sas, hierarchies=hier or None, measures=wanted)
    elif sizes.size:  # same class numbering as tasks.privacy.models: ids from equivalence_class_ids
        details["k_anonymity"] = models.MeasureDetail(int(sizes.min()), int(np.argmin(sizes)), None)

    def value(name: str):
        d = details.get(name)
        if d is None:
            return None
        v = d.value
        if isinstance(v, tuple):
            return tuple(_finite(x) for x in v)
        return _finite(v)

    measures = AnonymityMeasures(
        k_anonymity=int(sizes.min()) if sizes.size else 0,
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
    risk_measures = None
    if len(frame):
        r = risk.reidentification_risk(frame, classes, population=population, threshold=thresholds.risk_threshold)
        risk_measures = RiskMeasures(
            prosecutor_max=r.prosecutor_highest, prosecutor_average=r.prosecutor_average,
            records_at_risk=r.prosecutor_records_at_risk, risk_threshold=r.threshold,
            journalist_max=r.journalist_highest if r.journalist_uses_population else None,
            journalist_average=r.journalist_average if r.journalist_uses_population else None,
            marketer=r.marketer, sample_uniques=r.sample_uniques,
        )
    report = PrivacyReport(
        model="equivalence_classes",
        k=measures.k_anonymity,
        quasi_identifiers=qis,
        sensitive_attributes=sas,
        records=len(frame),
        groups=int(sizes.size),
        mean_group_size=float(sizes.mean()) if sizes.size else 0.0,
        measures=measures,
        risk=risk_measures,
    )
    # where each measure is worst (class index in the stable numbering of tasks.privacy.models, never a value)
    report._details = details
    report._recursive = (
        recursive_cl(frame, classes, sas, thresholds.c, thresholds.l)
        if thresholds.l is not None and thresholds.l_variant == "recursive" and thresholds.c is not None and sas
        and len(frame) else None
    )
    return report


def _finite(v):
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


def recursive_cl(frame: pd.DataFrame, classes: list[str], sas: list[str], c: float, l: int  # noqa: E741
                 ) -> tuple[float, int | None, str | None]:
    """Recursive (c,l)-diversity for the given c and l: (max over classes and attributes of
    r1 / (r_l + ... + r_m), worst class, worst attribute); satisfied when that maximum is below c
    (Machanavajjhala et al. 2007; a class with fewer than l distinct values has ratio infinity)."""
    ids = equivalence_class_ids(frame, classes)
    worst = (-1.0, None, None)
    for sa in sas:
        pair = equivalence_class_ids(pd.DataFrame({"c": ids, "v": frame[sa].to_numpy()}), ["c", "v"])
        counts = np.bincount(pair)
        cls_of = np.zeros(len(counts), dtype=np.int64)
        cls_of[pair] = ids
        order = np.lexsort((-counts, cls_of))  # by class, counts descending
        sc, cc = cls_of[order], counts[order]
        starts = np.r_[0, np.flatnonzero(sc[1:] != sc[:-1]) + 1]
        rank = np.arange(len(sc)) - np.repeat(starts, np.diff(np.r_[starts, len(sc)]))
        n_classes = int(ids.max()) + 1
        r1 = np.zeros(n_classes)
        r1[sc[rank == 0]] = cc[rank == 0]
        tail = np.bincount(sc, weights=np.where(rank >= l - 1, cc, 0), minlength=n_classes)
        with np.errstate(divide="ignore"):
            ratio = np.where(tail > 0, r1 / np.maximum(tail, 1e-300), np.inf)
        j = int(np.argmax(ratio))
        if ratio[j] > worst[0]:
            worst = (float(ratio[j]), j, sa)
    return worst


def _synthetic(original: pd.DataFrame, release: SanitizedTable, roles: Roles, qis: list[str], seed: int
               ) -> SyntheticMeasures:
    """Linkage risk and DCR (one nearest-neighbour search over the standardized quasi-identifiers) and the
    confidence-interval privacy of paper 000."""
    risk_value, dcr_q, exact = None, {}, None
    if qis:
        enc = TableEncoder(columns=qis, kinds=roles.kinds(), orders=roles.orders()).fit(original)
        x_orig, x_rel = enc.transform(original), enc.transform(release.frame)
        dist, nearest = risk.closest_records(x_orig, x_rel)
        risk_value = linkage_risk(x_orig, x_rel, release.source_groups, release.groups, nearest=nearest)
        dcr = risk.dcr_summary(dist)
        dcr_q = {f"q{int(round(level * 100)):02d}": float(v) for level, v in zip(dcr.levels, dcr.values)}
        exact = float(dcr.exact_match_share)
    return SyntheticMeasures(linkage_risk=risk_value, dcr_quantiles=dcr_q, dcr_exact_matches=exact,
                             confidence_interval_privacy=interval_privacy(original, release, roles, seed))


def _perturbation(original: pd.DataFrame, release: SanitizedTable, roles: Roles) -> PerturbationMeasures | None:
    """Paper 004's VD, RP, RK, CP, CK over the numeric attributes, rows aligned by ``source_index``."""
    if release.source_index is None or len(release.frame) == 0:
        return None
    cols = [c for c in roles.attributes if c in release.frame.columns and roles.get(c).kind is ColumnKind.numeric]
    if not cols:
        return None
    a = original[cols].to_numpy(dtype=float)[release.source_index]
    ma = release.frame[cols].to_numpy(dtype=float)
    if not (np.isfinite(a).all() and np.isfinite(ma).all()) or not np.any(a):
        return None
    d = risk.matrix_distortion(a, ma)
    return PerturbationMeasures(vd=d.vd, rp=d.rp, rk=d.rk, cp=d.cp, ck=d.ck)


def _attack(frame: pd.DataFrame, qis: list[str], sas: list[str], seed: int, max_queries: int) -> QueryAttack | None:
    """Paper 002's random-query attacker on the published table (queries drawn from its own values)."""
    if not qis or len(frame) == 0:
        return None
    a = risk.random_query_attack(frame, qis, sas[0] if sas else None, n=ATTACK_STOP, seed=seed,
                                 max_queries=max_queries)
    if a.matched_queries == 0:
        return None
    return QueryAttack(
        queries=a.queries, stop_after=ATTACK_STOP, reidentification_mean=a.reid_mean,
        reidentification_median=a.reid_median, reidentification_q1=a.reid_q1, reidentification_q3=a.reid_q3,
        reidentification_max=a.reid_max, sensitive_association_mean=a.association_mean,
        sensitive_association_max=a.association_max,
    )


# -- deciding -----------------------------------------------------------------------------------------------
def check_gates(report: PrivacyReport, thresholds: PrivacyThresholds) -> PrivacyReport:
    """Compare ``report`` with every threshold that is set. A measure that could not be computed fails."""
    m = report.measures
    details: dict = report._details
    label = "group" if report.model == "synthetic_groups" else "equivalence class"

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

    gates: list[GateResult] = []

    def gate(name: str, threshold: float | None, value: float | None, at_least: bool, worst: str | None,
             tolerance: float = 0.0) -> None:
        if threshold is None:
            return
        ok = value is not None and (value >= threshold - tolerance if at_least else value <= threshold + tolerance)
        gates.append(GateResult(name=name, threshold=float(threshold), value=value, passed=bool(ok),
                                worst=worst if value is not None else "cannot be computed for this table"))

    k_worst = where("k_anonymity", f" ({report.k} records)")
    gate("k", thresholds.k, float(report.k) if report.records else None, True, k_worst)
    if m is not None:
        gate("alpha", thresholds.alpha, m.alpha_k_anonymity[0] if m.alpha_k_anonymity else None, False,
             where("alpha_k_anonymity"))
        if thresholds.l is not None:
            if thresholds.l_variant == "distinct":
                gate("l", thresholds.l, m.l_diversity, True, where("l_diversity"))
            elif thresholds.l_variant == "entropy":  # exp(entropy) of a balanced class of l values is l - 2e-16
                gate("l (entropy)", thresholds.l, m.entropy_l_value, True, where("entropy_l_diversity_value"),
                     tolerance=1e-9)
            else:
                rec = report._recursive
                ratio = None if rec is None else rec[0]
                ok = ratio is not None and math.isfinite(ratio) and ratio < float(thresholds.c)
                worst = None if rec is None or rec[1] is None else f"{label} #{rec[1]}, attribute '{rec[2]}'"
                gates.append(GateResult(name=f"(c,l) recursive l={thresholds.l}", threshold=float(thresholds.c),
                                        value=ratio if ratio is not None and math.isfinite(ratio) else None,
                                        passed=ok, worst=worst if ratio is not None and math.isfinite(ratio) else
                                        (worst or "") + " has fewer than l distinct values"))
        t_value = m.hierarchical_t_closeness if m.hierarchical_t_closeness is not None else m.t_closeness
        t_name = "hierarchical_t_closeness" if m.hierarchical_t_closeness is not None else "t_closeness"
        gate("t", thresholds.t, t_value, False, where(t_name))
        gate("delta", thresholds.delta, m.delta_disclosure, False, where("delta_disclosure"))
        beta = m.basic_beta_likeness if thresholds.beta_variant == "basic" else m.enhanced_beta_likeness
        gate(f"beta ({thresholds.beta_variant})", thresholds.beta, beta, False,
             where(f"{thresholds.beta_variant}_beta_likeness"))
    r = report.risk
    gate("max_prosecutor_risk", thresholds.max_prosecutor_risk, r.prosecutor_max if r else None, False,
         where("k_anonymity"))
    gate("max_average_risk", thresholds.max_average_risk, r.prosecutor_average if r else None, False, None)
    gate("max_records_at_risk", thresholds.max_records_at_risk, r.records_at_risk if r else None, False,
         f"risk above {thresholds.risk_threshold:g}")
    gate("max_marketer_risk", thresholds.max_marketer_risk, r.marketer if r else None, False, None)
    gate("max_sample_uniques", thresholds.max_sample_uniques, r.sample_uniques if r else None, False, None)
    gate("max_journalist_risk", thresholds.max_journalist_risk, r.journalist_max if r else None, False, None)
    gate("max_linkage_risk", thresholds.max_linkage_risk, report.linkage_risk, False, None)
    return report.model_copy(update={"gates": gates})


def describe_failed(failed: list[GateResult]) -> str:
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


def interval_privacy(original: pd.DataFrame, release: SanitizedTable, roles: Roles, seed: int = 0) -> float | None:
    """Paper 000's confidence-interval privacy of a synthetic release (see
    :func:`tasks.privacy.synthetic.confidence_interval_privacy`)."""
    x, enc = numeric_attribute_matrix(original.reset_index(drop=True), roles)
    if x.shape[1] == 0:
        return None
    y, _ = numeric_attribute_matrix(release.frame, roles, enc)
    return confidence_interval_privacy(x, y, release.source_groups, release.groups, seed=seed)
