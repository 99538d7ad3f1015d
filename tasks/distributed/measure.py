"""A partitioned release measured: privacy from merged counts over the published row files, as an attacker holding
them sees it; utility on the seeded, stratified sample.

Privacy reuses ``ppdp validate FOLDER``'s path (:func:`ppdp.tasks.privacy.partitioned.validate_folder`) on the
staged ``data/`` folder: every model over equivalence classes and ARX's risks from the merged class and sensitive
counts, gated on the spec's policy. The classes are over what an attacker may know: the quasi-identifiers as
published and every column published beside them that is neither sensitive nor the class nor a pseudonym (a column
that splits no class changes no count; one that does is counted in, as the single-table attacker's view counts
it). The attacker's view and the safety floor are computed from the same class sizes (records alone, average and
highest risk).

A release of the ``record`` unit (noise) is measured as one table of that unit is: no classes to gate, and the
record-level figures (linkage, nearest-record distances, exact copies) computed exactly over every pair of input
partition and published row file (:func:`ppdp.tasks.distributed.nearest.measure_records`; ``originals``: the input
partitions and how their published rows are made again). Figures that need whole records in one place (paper 004's
value distortion, the random-query attacker, attribute disclosure) are not measured here: a gate or floor row that
needs one fails closed (not computable).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ppdp.schemas.base import Role
from ppdp.schemas.methods import Unit
from ppdp.schemas.reports import AttackerView, PrivacyReport, Roles, SyntheticMeasures
from ppdp.schemas.spec import ReleaseSpec
from ppdp.schemas.units import identity_by, unit_of
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks.core.errors import InternalError, PpdpError
from ppdp.tasks.distributed.nearest import Originals, RecordFigures, measure_records
from ppdp.tasks.privacy import partitioned
from ppdp.tasks.privacy.attacker import accept_of, beside_columns, check_floor
from ppdp.tasks.privacy.measure import check_gates
from ppdp.tasks.utility import evaluate_utility, holdout_positions


def known_columns(roles: Roles, columns: list[str]) -> tuple[list[str], list[str]]:
    """(the published quasi-identifiers, the columns published beside them that an attacker may know)."""
    qis = [q for q in roles.quasi_identifiers if q in columns]
    return qis, beside_columns(pd.DataFrame(columns=columns), roles, qis)  # its rule reads the column names only


def measure_published(data: Path, roles: Roles, spec: ReleaseSpec, columns: list[str], protects: str,
                      protected: list[str], schema: pa.Schema, cluster: str | None = None,
                      unit: Unit = "equivalence_class", originals: Originals | None = None) -> PrivacyReport:
    """The release's privacy report from the row files in ``data`` (see the module docstring), read by the
    release's own ``schema`` (:func:`ppdp.tasks.distributed.output.release_schema`), never by the checks for
    hostile input; ``cluster``: a Dask scheduler's address to count on (None: in this process); ``unit``: the
    method's privacy unit (``record``: the record-level figures against ``originals``; without them they are not
    measured and fail closed). A failure to measure them is ppdp's own (:class:`InternalError`), never blamed on the
    input."""
    qis, beside = known_columns(roles, columns)
    sa = [s for s in roles.names(Role.sensitive) if s in columns]
    policy = spec.privacy
    hierarchies = {s: p for s, p in policy.hierarchies.items() if s in sa} or None
    records: RecordFigures | None = None
    try:
        checked = partitioned.validate_folder(data, [*qis, *beside], sa, policy, na_values=[], hierarchies=hierarchies,
                                  cluster=cluster, schema=schema)
        if unit_of(unit).compares_records and originals is not None:
            records = measure_records(data, roles, columns, originals, schema, cluster)
    except PpdpError as exc:
        raise InternalError(f"measuring the release's own row files in {data} failed ({exc}); nothing was "
                            "published") from None
    report = checked.report
    risk = report.risk
    assert risk is not None
    if unit_of(unit).compares_records:
        report = record_report(report, qis, sa, records, policy.dcr_quantile)
    view = AttackerView(
        protects=protects, identity_by=identity_by(protects, unit),  # type: ignore[arg-type]
        records=report.records, quasi_identifiers=qis, counted_columns=beside, classes=checked.report.groups or 0,
        smallest_class=int(checked.report.k or 0), records_alone=float(risk.sample_uniques),
        average_risk=float(risk.prosecutor_average), highest_risk=float(risk.prosecutor_max),
        **(record_view(qis, beside, records) if unit_of(unit).compares_records else {}))
    report = check_gates(report.model_copy(update={"attacker_view": view}), policy)
    return report.model_copy(update={"floor": check_floor(view, protected, unit, accept_of(policy))})


def record_report(counted: PrivacyReport, qis: list[str], sa: list[str], records: RecordFigures | None,
                  quantile: float) -> PrivacyReport:
    """A ``record`` release's report, as the one-table measure makes it: no classes; linkage, the nearest-record
    distances and their ``quantile`` (None, failing closed, when they were not measured)."""
    synthetic = SyntheticMeasures()
    at_q = None
    if records is not None and records.records:
        dcr = records.dcr()
        synthetic = SyntheticMeasures(linkage_risk=records.linkage_risk, dcr_quantiles=records.dcr_quantiles(),
                                      dcr_exact_matches=float(dcr.exact_match_share))
        at_q = float(np.quantile(records.distances, quantile))
    return PrivacyReport(unit="record", quasi_identifiers=qis, sensitive_attributes=sa, records=counted.records,
                         synthetic=synthetic, linkage_risk=synthetic.linkage_risk, dcr_quantile=at_q)


def record_view(qis: list[str], beside: list[str], records: RecordFigures | None) -> dict:
    """The attacker's view's record-level figures (None: not measured, the floor's rows fail closed)."""
    return dict(known_columns=[*qis, *beside],
                linkage_risk=records.linkage_risk if records is not None else None,
                nearest_distance=records.dcr_quantiles() if records is not None and records.records else {},
                exact_copies=records.exact_copies if records is not None else None)


def measure_utility(spec: ReleaseSpec, roles: Roles, original: pd.DataFrame, published: pd.DataFrame
                    ) -> UtilityReport:
    """Utility on the sample, as a recoding of every row measures it: the sample split into training and held-out
    rows (stratified, seeded); classifiers trained on the published training rows are tested on the published
    held-out rows, the baseline on the original ones."""
    cls = roles.class_column
    assert cls is not None  # the spec check requires a class column
    train, test = holdout_positions(original, cls, spec.utility.test_fraction, spec.seed)
    return evaluate_utility(original.iloc[train].reset_index(drop=True), published.iloc[train].reset_index(drop=True),
                            original.iloc[test].reset_index(drop=True), roles, spec.utility, spec.seed,
                            published.iloc[test].reset_index(drop=True))
