"""A partitioned release measured: privacy from merged counts over the published row files, as an attacker holding
them sees it; utility on the seeded, stratified sample.

Privacy reuses ``ppdp validate FOLDER``'s path (:func:`ppdp.tasks.privacy.partitioned.validate_folder`) on the
staged ``data/`` folder: every model over equivalence classes and ARX's risks from the merged class and sensitive
counts, gated on the spec's policy. The classes are over what an attacker may know: the quasi-identifiers as
published and every column published beside them that is neither sensitive nor the class nor a pseudonym (a column
that splits no class changes no count; one that does is counted in, as the single-table attacker's view counts
it). The attacker's view and the safety floor are computed from the same class sizes (records alone, average and
highest risk); figures that need whole records (exact copies, attribute disclosure) are not measured here, and a
floor row that needs them fails closed.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from ppdp.schemas.base import Role
from ppdp.schemas.reports import AttackerView, PrivacyReport, Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.schemas.units import identity_by
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks.core.errors import InternalError, PpdpError
from ppdp.tasks.privacy import partitioned
from ppdp.tasks.privacy.attacker import accept_of, beside_columns, check_floor
from ppdp.tasks.privacy.measure import check_gates
from ppdp.tasks.utility import evaluate_utility, holdout_positions


def known_columns(roles: Roles, columns: list[str]) -> tuple[list[str], list[str]]:
    """(the published quasi-identifiers, the columns published beside them that an attacker may know)."""
    qis = [q for q in roles.quasi_identifiers if q in columns]
    return qis, beside_columns(pd.DataFrame(columns=columns), roles, qis)  # its rule reads the column names only


def measure_published(data: Path, roles: Roles, spec: ReleaseSpec, columns: list[str], protects: str,
                      protected: list[str], schema: pa.Schema, cluster: str | None = None) -> PrivacyReport:
    """The release's privacy report from the row files in ``data`` (see the module docstring), read by the
    release's own ``schema`` (:func:`ppdp.tasks.distributed.output.release_schema`), never by the checks for
    hostile input; ``cluster``: a Dask scheduler's address to count on (None: in this process). A failure to
    measure them is ppdp's own (:class:`InternalError`), never blamed on the input."""
    qis, beside = known_columns(roles, columns)
    sa = [s for s in roles.names(Role.sensitive) if s in columns]
    policy = spec.privacy
    hierarchies = {s: p for s, p in policy.hierarchies.items() if s in sa} or None
    try:
        checked = partitioned.validate_folder(data, [*qis, *beside], sa, policy, na_values=[], hierarchies=hierarchies,
                                  cluster=cluster, schema=schema)
    except PpdpError as exc:
        raise InternalError(f"measuring the release's own row files in {data} failed ({exc}); nothing was "
                            "published") from None
    report = checked.report
    risk = report.risk
    assert risk is not None
    view = AttackerView(
        protects=protects, identity_by=identity_by(protects, "equivalence_class"),  # type: ignore[arg-type]
        records=report.records, quasi_identifiers=qis, counted_columns=beside, classes=report.groups or 0,
        smallest_class=int(report.k or 0), records_alone=float(risk.sample_uniques),
        average_risk=float(risk.prosecutor_average), highest_risk=float(risk.prosecutor_max))
    report = check_gates(report.model_copy(update={"attacker_view": view}), policy)
    return report.model_copy(update={"floor": check_floor(view, protected, "equivalence_class", accept_of(policy))})


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
