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
from ppdp.schemas.criteria.base import ClassTable, Judge
from ppdp.schemas.criteria.registry import CRITERIA
from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.privacy import PrivacyThresholds, gates_judged
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
from ppdp.schemas.units import unit_of
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
    report = class_measures(frame, qi, qi, sa, thresholds, population, hierarchies)
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
    unit = unit_of(release.unit)
    if unit.group_column:
        report = class_measures(frame, [GROUP_COLUMN], qis, sas, thresholds, None, hierarchies)
        synthetic = _synthetic(original, release, roles, qis, seed, thresholds.dcr_quantile)
        report = report.model_copy(update={"unit": "generating_group", "synthetic": synthetic[0],
                                           "linkage_risk": synthetic[0].linkage_risk, "dcr_quantile": synthetic[1]})
    elif unit.counts_classes:
        report = class_measures(frame, qis, qis, sas, thresholds, population, hierarchies)
    elif unit.claims_by_construction:  # no distance to the input's records: not a DP figure, not claimed
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


def class_measures(frame: pd.DataFrame, classes: list[str], qis: list[str], sas: list[str],
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
    details.update(_criteria_measures(frame, classes, sas, ids, sizes, thresholds, population))
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


def _criteria_measures(frame: pd.DataFrame, classes: list[str], sas: list[str], ids: np.ndarray,
                       sizes: np.ndarray, thresholds: PrivacyThresholds,
                       population: pd.DataFrame | None) -> dict[str, models.MeasureDetail]:
    """What the criteria whose gate is set measure beyond the shared figures (:meth:`Criterion.measure`), by gate
    key; nothing is computed for a gate that is not set."""
    wanted = [c for c in CRITERIA if getattr(thresholds, c.key) is not None]
    if not wanted or not len(frame):
        return {}
    table = ClassTable(frame=frame, classes=classes, sensitive=sas, ids=ids, sizes=sizes, population=population,
                       count_in=lambda other: class_counts_in(frame[classes], ids, other))
    out = {}
    for criterion in wanted:
        detail = criterion.measure(table, thresholds)
        if detail is not None:
            out[criterion.key] = detail
    return out


def class_counts_in(frame: pd.DataFrame, ids: np.ndarray, other: pd.DataFrame) -> np.ndarray:
    """Each class of ``frame`` (``ids``: its rows' class ids, 0 to n - 1) counted in ``other``, a table with the same
    columns: the rows of ``other`` equal to the class on every column (a missing value equal to a missing one)."""
    both = pd.concat([frame.reset_index(drop=True), other[list(frame.columns)].reset_index(drop=True)],
                     ignore_index=True)
    joint = equivalence_class_ids(both, list(frame.columns))
    mine, theirs = joint[: len(frame)], joint[len(frame):]
    counts = np.bincount(theirs, minlength=int(joint.max()) + 1 if joint.size else 0)
    first = np.zeros(int(ids.max()) + 1 if ids.size else 0, dtype=np.int64)
    first[ids] = mine  # every row of a class has the same joint id
    return counts[first]


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
        if unit_of(release.unit).compares_records:
            risk_value = float(np.mean(release.row_source[nearest] == np.arange(len(original))))
        elif release.input_group is not None and release.group is not None:
            risk_value = linkage_risk(x_orig, x_rel, release.input_group, release.group, nearest=nearest)
        dcr = risk.dcr_summary(dist)
        dcr_q = {f"q{int(round(level * 100)):02d}": float(v) for level, v in zip(dcr.levels, dcr.values)}
        exact = float(dcr.exact_match_share)
        at_q = float(np.quantile(dist, quantile))
    ci = interval_privacy(original, release, roles, seed) if unit_of(release.unit).group_column else None
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
    if unit_of(release.unit).compares_records and len(source) == len(original) and bool(np.all(source == -1)):
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
def check_gates(report: PrivacyReport, thresholds: PrivacyThresholds) -> PrivacyReport:
    """Compare ``report`` with every threshold that is set and applies to the report's unit: each criterion of the
    registry (:data:`ppdp.schemas.criteria.registry.CRITERIA`) in turn turns its threshold into
    :class:`~ppdp.schemas.reports.Claim` s (value, threshold, unit, how to re-check). A measure that could not be
    computed fails (fail closed); a threshold that does not apply to the unit fails too, unless the policy lists it in
    ``not_applicable`` (kept as written, not judged: no claim). A differentially private release's own claim (the
    mechanism's guarantee) comes first."""
    view = report.attacker_view
    judge = Judge(report=report, judged=frozenset(gates_judged(thresholds)),
                  known=known_text(view) if view is not None else None)
    claims = [claim for criterion in CRITERIA for claim in criterion.claims(judge, thresholds)]
    if unit_of(report.unit).claims_by_construction:  # the release's own claim: the mechanism's guarantee
        claims.insert(0, dp_claim(report.dp))
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
