"""What a release leaves behind: the manifest beside the data, one entry in the audit trail, and the result."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ppdp.schemas.base import Role
from ppdp.schemas.methods import Treatment, Unit
from ppdp.schemas.reports import (
    Claim,
    ExpectationOutcome,
    IngestReport,
    MethodRecord,
    PrivacyReport,
    RareCategoryReport,
    Roles,
    TuningTrace,
    UtilityReport,
)
from ppdp.schemas.spec import ReleaseSpec

Status = Literal["published", "rejected", "error"]
# An audit entry may also be ``pending`` (written before a release folder is renamed into place) and later be
# resolved by a new entry whose ``completes`` names it, with status ``published`` or ``rolled_back``.
AuditStatus = Literal["published", "rejected", "error", "pending", "rolled_back"]


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


class ColumnTreatment(BaseModel):
    """What happened to one input column: exactly one treatment, with the reason (never a value)."""

    model_config = ConfigDict(extra="forbid")

    position: int = Field(..., description="0-based position in the input")
    name: str
    role: Role
    treatment: Treatment
    reason: str
    rare_cells: int = Field(0, description="cells whose value occurred fewer than k times in the input, merged "
                                           "into a token or suppressed before sanitizing")


class Manifest(BaseModel):
    """``manifest.json`` of a published release.

    ``privacy.claims`` lists every privacy claim (value, threshold, unit, how to re-check);
    ``ppdp validate --release DIR`` re-checks them from the published data (and the original input for claims
    marked ``original``). A generating-group release carries ``group_column`` in its data.

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
    unit: Unit = Field(..., description="what the privacy claims are measured over")
    group_column: str | None = Field(None, description="the published column holding each row's generating "
                                                       "group (generating_group releases)")
    treatments: list[ColumnTreatment] = Field(..., description="every input column, in input order")
    spec: ReleaseSpec
    spec_sha256: str
    roles: Roles
    rare_categories: RareCategoryReport | None = Field(
        None, description="the rare-value rule: categorical values seen fewer than k times merged or suppressed")
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
    """One row of the tamper-evident audit trail (``<root>/audit.db``): no data values, only hashes and ids.

    ``entry_hash`` is the SHA-256 of every other field but ``signature`` (``prev_hash`` and ``seq`` included);
    ``signature`` signs it with the key named by ``key_id`` (see :mod:`ppdp.tasks.keys`). ``files`` maps each
    file of a published (or pending) release folder to its SHA-256: the folder's exact contents.
    """

    model_config = ConfigDict(extra="forbid")

    seq: int
    trail_id: str
    release_id: str
    dataset: str
    status: AuditStatus
    completes: int | None = None
    reason: str
    spec_sha256: str | None
    input_sha256: str | None
    output_sha256: str | None
    manifest_sha256: str | None
    files: dict[str, str] | None = None
    started_at: datetime
    finished_at: datetime
    user: str
    host: str
    flow_run_id: str | None
    key_id: str
    prev_hash: str
    entry_hash: str
    signature: str


class ReleaseResult(BaseModel):
    """What the release flow returns (and the CLI prints)."""

    model_config = ConfigDict(extra="forbid")

    release_id: str
    status: Status
    reason: str
    folder: str | None = None
    unit: str | None = None
    k: int | None = None
    claims: list[Claim] = Field(default_factory=list, description="the privacy claims of the release")
    tuned: str | None = Field(None, description="parameter=value chosen by the tuning step")
    tuning_rule: str | None = Field(None, description="why the tuning step chose that value, in one line")
    linkage_risk: float | None = None
    accuracy: float | None = None
    accuracy_original: float | None = None
    per_class: dict[str, float] = Field(default_factory=dict)
    delta_r: dict[str, float] = Field(default_factory=dict, description="paper 004's ΔR per classifier, if gated")
    exit_code: int = 0
