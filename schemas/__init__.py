"""The contract between steps: pydantic models of the release spec, step reports, manifest and audit entry."""

from schemas.manifest import AuditEntry, Manifest, ReleaseResult, Versions
from schemas.reports import (
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
from schemas.spec import ColumnKind, ColumnSpec, ReleaseSpec, Role

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
