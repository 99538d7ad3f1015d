"""What a release leaves behind: the manifest beside the data, one entry in the audit trail, and the result."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ppdp.schemas.reports import (
    ExpectationOutcome,
    IngestReport,
    MethodRecord,
    PrivacyReport,
    Roles,
    TuningTrace,
    UtilityReport,
)
from ppdp.schemas.spec import ReleaseSpec

Status = Literal["published", "rejected", "error"]


class Versions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ppdp: str
    python: str
    prefect: str
    pandas: str
    numpy: str
    scikit_learn: str
    pyarrow: str
    great_expectations: str


class Manifest(BaseModel):
    """``manifest.json`` of a published release.

    ``output_sha256`` is the SHA-256 of ``data.parquet``. The Parquet file's key-value metadata carries
    ``ppdp.release_id`` and ``ppdp.manifest_sha256``: the SHA-256 of this manifest's canonical JSON with
    ``output_sha256`` left empty (the Parquet hash cannot be inside the file it hashes).
    """

    model_config = ConfigDict(extra="forbid")

    release_id: str
    dataset: str
    created_at: datetime
    status: Literal["published"] = "published"
    input_sha256: str
    output_sha256: str | None = None
    rows: int
    columns: list[str]
    spec: ReleaseSpec
    spec_sha256: str
    roles: Roles
    ingest: IngestReport
    method: MethodRecord
    seed: int
    privacy: PrivacyReport
    utility: UtilityReport
    tuning: TuningTrace
    output_checks: list[ExpectationOutcome] = Field(
        default_factory=list, description="the output suite (Great Expectations) run on the frame before writing"
    )
    versions: Versions
    flow_run_id: str | None


class AuditEntry(BaseModel):
    """One row of the tamper-evident audit trail (``<root>/audit.db``): no data values, only hashes and ids."""

    model_config = ConfigDict(extra="forbid")

    seq: int
    release_id: str
    dataset: str
    status: Status
    reason: str
    spec_sha256: str | None
    input_sha256: str | None
    output_sha256: str | None
    manifest_sha256: str | None
    started_at: datetime
    finished_at: datetime
    user: str
    host: str
    flow_run_id: str | None
    prev_hash: str
    entry_hash: str


class ReleaseResult(BaseModel):
    """What the release flow returns (and the CLI prints)."""

    model_config = ConfigDict(extra="forbid")

    release_id: str
    status: Status
    reason: str
    folder: str | None = None
    k: int | None = None
    linkage_risk: float | None = None
    accuracy: float | None = None
    accuracy_original: float | None = None
    per_class: dict[str, float] = Field(default_factory=dict)
    exit_code: int = 0
