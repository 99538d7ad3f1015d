"""The contract between steps: pydantic models of the release spec, step reports, manifest and audit entry."""

from ppdp.schemas.manifest import AuditEntry, Manifest, ReleaseResult, Versions
from ppdp.schemas.reports import (
    ClassAccuracy,
    ColumnTag,
    Evaluation,
    ExpectationOutcome,
    GateResult,
    IngestReport,
    MethodRecord,
    PrivacyReport,
    Roles,
    TuningTrace,
    UtilityReport,
)
from ppdp.schemas.spec import ColumnKind, ColumnSpec, ReleaseSpec, Role

__all__ = [
    "AuditEntry",
    "ClassAccuracy",
    "ColumnKind",
    "ColumnSpec",
    "ColumnTag",
    "Evaluation",
    "ExpectationOutcome",
    "GateResult",
    "IngestReport",
    "Manifest",
    "MethodRecord",
    "PrivacyReport",
    "ReleaseResult",
    "ReleaseSpec",
    "Role",
    "Roles",
    "TuningTrace",
    "UtilityReport",
    "Versions",
]
