"""Measure a release's privacy honestly for its kind, then decide against the spec's gates (kept separate)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from schemas.reports import GateResult, PrivacyReport, Roles
from schemas.spec import ColumnKind, PrivacyPolicy
from tasks.encoding import TableEncoder
from tasks.groups import class_sizes_per_row, equivalence_class_ids
from tasks.privacy.synthetic import confidence_interval_privacy, linkage_risk
from tasks.sanitize.base import SanitizedTable


def measure_privacy(original: pd.DataFrame, release: SanitizedTable, roles: Roles) -> PrivacyReport:
    """k and linkage risk of ``release`` made from ``original`` (the sanitizer's input, same row order).

    * synthetic releases (condensation): k is the smallest group the records were generated from; the report
      adds the linkage risk: the share of original records whose nearest published record (standardized
      Euclidean distance over the quasi-identifiers) came from their own group.
    * generalized releases: k is the smallest equivalence class (rows sharing all quasi-identifier values) of
      the published table.
    """
    qis = [q for q in roles.quasi_identifiers if q in release.frame.columns]
    original = original.reset_index(drop=True)
    if release.release_kind == "synthetic":
        sizes = release.group_sizes
        k = int(sizes.min()) if sizes.size else 0
        groups = int(sizes.size)
        risk = None
        if qis:
            enc = TableEncoder(columns=qis, kinds=roles.kinds(), orders=roles.orders()).fit(original)
            risk = linkage_risk(
                enc.transform(original), enc.transform(release.frame), release.source_groups, release.groups
            )
        return PrivacyReport(
            model="synthetic_groups",
            k=k,
            quasi_identifiers=qis,
            records=len(release.frame),
            groups=groups,
            mean_group_size=float(sizes.mean()) if sizes.size else 0.0,
            linkage_risk=risk,
        )
    ids = equivalence_class_ids(release.frame, qis)
    per_row = class_sizes_per_row(ids)
    n_classes = int(ids.max()) + 1 if ids.size else 0
    return PrivacyReport(
        model="equivalence_classes",
        k=int(per_row.min()) if per_row.size else 0,
        quasi_identifiers=qis,
        records=len(release.frame),
        groups=n_classes,
        mean_group_size=float(len(ids) / n_classes) if n_classes else 0.0,
        linkage_risk=None,
    )


def check_gates(report: PrivacyReport, policy: PrivacyPolicy, release: SanitizedTable | None = None) -> PrivacyReport:
    """Compare ``report`` with the spec's thresholds; a gate that cannot be computed fails (fail closed)."""
    gates: list[GateResult] = []
    worst = None
    if release is not None and report.model == "synthetic_groups":
        ids = release.source_groups[release.source_groups >= 0]
        if ids.size:
            counts = np.bincount(ids)
            present = np.flatnonzero(counts)
            smallest = present[np.argmin(counts[present])]
            worst = f"group {int(smallest)} ({int(counts[smallest])} records)"
    elif report.model == "equivalence_classes":
        worst = f"smallest equivalence class has {report.k} rows"
    gates.append(
        GateResult(name="k", threshold=policy.k, value=report.k, passed=report.k >= policy.k and report.records > 0,
                   worst=worst)
    )
    if policy.max_linkage_risk is not None:
        value = report.linkage_risk
        gates.append(
            GateResult(
                name="max_linkage_risk",
                threshold=policy.max_linkage_risk,
                value=value,
                passed=value is not None and value <= policy.max_linkage_risk,
                worst=None if value is not None else "linkage risk cannot be computed for this release",
            )
        )
    return report.model_copy(update={"gates": gates})


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
