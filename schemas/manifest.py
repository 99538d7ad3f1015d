"""What a release leaves behind: the manifest beside the data, one entry in the audit trail, and the result."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ppdp.schemas.base import Role
from ppdp.schemas.fields import LEGACY_INPUT_SHA256, before_keyed_digests
from ppdp.schemas.methods import Treatment, Unit
from ppdp.schemas.reports import (
    AttackerView,
    Claim,
    ExpectationOutcome,
    FeaturePartition,
    FloorReport,
    IngestReport,
    MethodRecord,
    PrivacyReport,
    RareCategoryReport,
    Roles,
    TuningTrace,
)
from ppdp.schemas.series import SeriesReport
from ppdp.schemas.spec import ReleaseSpec
from ppdp.schemas.utility import MarginalDistances, RegressionScore, TstrScore, UtilityReport

Status = Literal["published", "unchanged", "rejected", "error"]
# ``unchanged``: a run whose input, spec and code are those of the dataset's latest release publishes nothing
# An audit entry may also be ``pending`` (written before a release folder is renamed into place) and later be
# resolved by a new entry whose ``completes`` names it, with status ``published`` or ``rolled_back``.
AuditStatus = Literal["published", "rejected", "error", "pending", "rolled_back"]


class Versions(BaseModel):
    """Versions of the software that shaped the release, read from the installed distributions (``not installed``
    for one that is absent)."""

    model_config = ConfigDict(extra="forbid")

    ppdp: str = Field(..., description="version of the ppdp package that ran the release")
    python: str = Field(..., description="version of the Python interpreter (e.g. 3.11.9)")
    prefect: str = Field(..., description="version of Prefect, the flow engine that ran the steps")
    pandas: str = Field(..., description="version of pandas")
    numpy: str = Field(..., description="version of NumPy")
    scikit_learn: str = Field(..., description="version of scikit-learn (utility classifiers, k-means)")
    pyarrow: str = Field(..., description="version of pyarrow (reads the input, writes data.parquet)")
    great_expectations: str = Field(..., description="version of Great Expectations (the input and output "
                                                     "suites)")
    code: str | None = Field(None, description="SHA-256 of ppdp's installed code (its modules, suites and "
                                               "schemas), so a rerun of the same version from changed code is told "
                                               "apart; null in releases made before it was recorded")


# -- fields every release manifest declares alike (the release's and the federated one's) ----------------------
ReleaseId = Annotated[str, Field(description="the release's id and folder name: the run's UTC start time "
                                             "(YYYYMMDDTHHMMSSZ), a dash and 8 random hex digits")]
PublishedStatus = Annotated[Literal["published"], Field(description="always published: only a published release "
                                                                    "has a manifest")]
SoftwareVersions = Annotated[Versions, Field(description="versions of the software that shaped the release")]
ReleaseFlowRunId = Annotated[str | None, Field(description="id of the Prefect flow run that made the release (a "
                                                           "UUID); null outside a flow run")]


class ColumnTreatment(BaseModel):
    """What happened to one input column: exactly one treatment, with the reason (never a value)."""

    model_config = ConfigDict(extra="forbid")

    position: int = Field(..., description="0-based position in the input")
    name: str = Field(..., description="the column's name in the input header")
    role: Role = Field(..., description="the column's privacy role (declared in the spec or given by tagging)")
    treatment: Treatment = Field(
        ..., description="what happened to the column: dropped (not published), pseudonymized (each cell replaced "
        "by a keyed HMAC-SHA256 pseudonym), generalized, aggregated, synthesized, perturbed, or kept as it was")
    reason: str = Field(..., description="why: the declaration or tagging rule, then what the method did (one "
                                         "line naming rules and columns, never a value)")
    rare_cells: int | None = Field(0, description="cells whose value occurred fewer than k times in the input, "
                                                  "merged into a token or suppressed before sanitizing; null when "
                                                  "withheld (a differential_privacy release: see withheld)")


class PartRecord(BaseModel):
    """One published table of a partitioned release (DMPD, paper 001): a subset of the features with the class,
    in its own Parquet file, k-anonymous over its own quasi-identifiers. Rows of different parts share no key
    and no order (each part is sorted by its own values), so the parts cannot be joined back into records."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="the part's name (part-1, part-2, ...)")
    file: str = Field(..., description="the part's Parquet file in the release folder")
    sha256: str | None = Field(None, description="SHA-256 of the part's file; null only in the copy hashed into "
                                                 "the files' ppdp.manifest_sha256")
    rows: int = Field(..., description="rows published in the part")
    columns: list[str] = Field(..., description="the part's columns, in file order (its features, then the class)")
    quasi_identifiers: list[str] = Field(..., description="the part's quasi-identifier columns: its equivalence "
                                                          "classes are over these (none: one class of every row)")
    sensitive_attributes: list[str] = Field(default_factory=list, description="the part's sensitive columns")
    privacy: PrivacyReport = Field(..., description="privacy measured on this part alone, with its claims")


class UtilitySample(BaseModel):
    """The records a distributed release's utility is measured on: drawn per input file and class with a seed
    derived from the release seed, the same share of every class (stratified), then split into training and
    held-out rows as a single-machine release splits its input."""

    model_config = ConfigDict(extra="forbid")

    rows: int = Field(..., description="records in the sample")
    population: int = Field(..., description="records it was drawn from (the whole input)")
    seed: int = Field(..., description="the seed the draw derives from (the release seed)")
    per_class: dict[str, int] = Field(default_factory=dict, description="records drawn per class (empty without "
                                                                        "a class)")


class DataFile(BaseModel):
    """One file of a release published in row files (a distributed release, ``data/part-<n>.parquet``): the
    published table is every file's rows; which file a row is in carries nothing (rows are spread over the files
    at random, keyed by the seed and the publisher's series key)."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(..., description="the file, relative to the release folder (data/part-00000.parquet, ...)")
    rows: int = Field(..., description="rows in the file")
    sha256: str = Field(..., description="SHA-256 of the file's bytes (also signed in the audit entry's files)")


class Withheld(BaseModel):
    """What a release computed on its input but does not publish, and where it is kept instead.

    A ``differential_privacy`` release publishes only what its spec declares (schema, bins, categories, epsilon and
    delta, parameters), figures computed under differential privacy (its rows: the model's noisy total unless the
    spec sets ``samples``) and figures computed on the published table alone. Every exact figure of the input (row
    counts, suite counts, rare-value counts, class counts, utility measured on real held-out rows, the attacker's
    figures measured against the input, the series' composed figures) is set to null (or left empty) in this
    manifest, and kept in the publisher's private record, outside the publish root."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(..., description="why these fields are withheld, in one line")
    fields: list[str] = Field(..., description="each withheld field as a dotted path in this manifest ([*]: in every "
                                               "item of a list); it is null, empty, or (a reason) cut to its "
                                               "declared part here")
    kept_in: str = Field(..., description="where the withheld values are kept: the publisher's private record, a file "
                                          "in the publisher's ppdp configuration folder (never under the publish "
                                          "root)")


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

    release_id: ReleaseId
    dataset: str = Field(..., description="the spec's dataset name (the release folder is "
                                          "<publish root>/<dataset>/<release_id>)")
    created_at: datetime = Field(..., description="when the release run started (ISO 8601, UTC)")
    status: PublishedStatus = "published"
    input_digest: str | None = Field(
        None, description="keyed digest of the input (salt:mac, see ingest.input_digest): HMAC-SHA256, under the "
                          "publisher's digest key (input_key_id), of a per-run salt and the input file's SHA-256; the "
                          "audit entries record the same. Null in a manifest written before keyed digests")
    input_key_id: str | None = Field(None, description="id of the key input_digest was made under: hmac-sha256: and 32 "
                                                       "hex digits")
    input_sha256: str | None = before_keyed_digests(LEGACY_INPUT_SHA256)
    output_sha256: str | None = Field(None, description="SHA-256 (64 hex digits) of data.parquet (a partitioned "
                                                        "release: of its parts' 'file sha256' lines, see parts); "
                                                        "null only in the copy hashed into the data files' "
                                                        "ppdp.manifest_sha256")
    rows: int = Field(..., description="rows published in data.parquet (a partitioned release: records in each "
                                       "part; every part holds one row per published record)")
    columns: list[str] = Field(..., description="names of the columns published in data.parquet, in file order "
                                                "(a partitioned release: every part's columns, class once)")
    unit: Unit = Field(..., description="what the privacy claims are measured over")
    group_column: str | None = Field(None, description="the published column holding each row's generating "
                                                       "group (generating_group releases)")
    treatments: list[ColumnTreatment] = Field(..., description="every input column, in input order")
    spec: ReleaseSpec = Field(..., description="the release spec as the run used it: --set overrides applied, "
                                               "paths made absolute, method parameters inherited from the policy "
                                               "filled in")
    spec_sha256: str = Field(..., description="SHA-256 (64 hex digits) of the resolved spec's canonical JSON "
                                              "(sorted keys, no whitespace)")
    roles: Roles = Field(..., description="every input column's role, encoding kind and the reason (tagging step)")
    rare_categories: RareCategoryReport | None = Field(
        None, description="the rare-value rule: categorical values seen fewer than k times merged or suppressed")
    ingest: IngestReport = Field(..., description="what the ingest step read and checked (counts and hashes)")
    method: MethodRecord = Field(..., description="the sanitization method as it actually ran, every parameter "
                                                  "included")
    seed: int = Field(..., description="the spec's seed, from which every random choice of the run derives")
    privacy: PrivacyReport = Field(..., description="privacy measured on the published table over its unit, and "
                                                    "the claims the release makes")
    series: SeriesReport | None = Field(
        None, description="this release in its series: the earlier releases of the dataset it was judged with, the "
                          "composed figures and the DP budget (re-checked by the publisher, from the series ledger)")
    utility: UtilityReport | None = Field(..., description="classifier accuracy of the release against the original, "
                                                           "information loss and the utility gates; null when "
                                                           "withheld (see withheld)")
    tuning: TuningTrace = Field(..., description="how the method's tunable parameter was chosen")
    output_checks: list[ExpectationOutcome] = Field(
        default_factory=list, description="the output suite (Great Expectations) run on the frame before writing"
    )
    versions: SoftwareVersions
    flow_run_id: ReleaseFlowRunId
    parts: list[PartRecord] = Field(
        default_factory=list, description="a partitioned release (DMPD): its tables, each in its own Parquet file "
        "instead of data.parquet; empty for every other release")
    partition: FeaturePartition | None = Field(None, description="a partitioned release: the feature partition "
                                                                 "chosen, its search and the accuracy-against-k "
                                                                 "Pareto front; null otherwise")

    data_files: list[DataFile] = Field(
        default_factory=list, description="a distributed release (an input folder of Parquet files): the published "
        "table in row files under data/ instead of data.parquet (output_sha256 hashes their 'file sha256' lines, "
        "as for parts; each file's metadata carries ppdp.release_id, not the manifest hash, which is computed after "
        "the files are measured); empty for every other release")
    column_types: dict[str, str] = Field(
        default_factory=dict, description="a distributed release: each published column's type, the same in every "
        "row file (pyarrow's name: large_string for text, which every generalized column is, int64, double, ...); "
        "empty for every other release")
    sample: UtilitySample | None = Field(None, description="a distributed release: the seeded, stratified sample "
                                                           "of records its utility was measured on; null otherwise")
    withheld: Withheld | None = Field(
        None, description="a differential_privacy release: the fields computed on the input that this manifest does "
                          "not publish, and where they are kept; null when nothing is withheld (every other unit "
                          "publishes its aggregates of the input, as it always has)")

    def tables_text(self) -> str:
        """A partitioned release's tables and their files in a phrase (``3 tables (part-1.parquet, ...)``); empty
        for a release of one table (``data.parquet``)."""
        if self.parts:
            return f"{len(self.parts)} tables ({', '.join(p.file for p in self.parts)})"
        if self.data_files:
            return f"one table in {len(self.data_files)} files (data/part-*.parquet)"
        return ""


def is_withheld(manifest: Manifest, name: str) -> bool:
    """Whether ``manifest`` withholds the field ``name`` (a path of ``withheld.fields``)."""
    return manifest.withheld is not None and name in manifest.withheld.fields


class AuditEntry(BaseModel):
    """One row of the tamper-evident audit trail (``<root>/audit.db``): no data values, only hashes and ids.

    ``entry_hash`` is the SHA-256 of every other field but ``signature`` (``prev_hash`` and ``seq`` included);
    ``signature`` signs it with the key named by ``key_id`` (see :mod:`ppdp.tasks.keys`). ``files`` maps each
    file of a published (or pending) release folder to its SHA-256: the folder's exact contents.
    """

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(..., description="the entry's sequence number in the trail: 1 for the first, then consecutive")
    trail_id: str = Field(..., description="random id of the trail (32 hex digits), fixed by its first entry and "
                                           "shared by every entry")
    release_id: str = Field(..., description="the id of the release (or refused run) the entry records")
    dataset: str = Field(..., description="the spec's dataset name (unknown when the spec could not be read)")
    status: AuditStatus = Field(
        ..., description="published, rejected (a gate failed), error (the run failed), pending (written before the "
        "release folder is renamed into place) or rolled_back (a pending publish undone)")
    completes: int | None = Field(None, description="seq of the pending entry this published or rolled_back entry "
                                                    "resolves; null otherwise")
    reason: str = Field(..., description="why, in one line (whitespace collapsed, at most 2,000 characters); never "
                                         "a data value")
    spec_sha256: str | None = Field(..., description="SHA-256 of the resolved spec's canonical JSON; null when the "
                                                     "spec could not be loaded")
    input_digest: str | None = Field(None, description="keyed digest of the input (HMAC-SHA256 under the publisher's "
                                                       "digest key of the input's SHA-256, as in the manifest); null "
                                                       "when the input was not read")
    input_key_id: str | None = Field(None, description="id of the key input_digest was made under (hmac-sha256: and "
                                                       "32 hex digits); null when the input was not read")
    input_sha256: str | None = before_keyed_digests("trails written before keyed digests only: the unkeyed SHA-256 "
                                                    "of the input file (no longer written)")
    output_sha256: str | None = Field(..., description="SHA-256 of data.parquet; null when nothing was published")
    manifest_sha256: str | None = Field(..., description="SHA-256 of the manifest's canonical JSON with "
                                                         "output_sha256 null (as in the Parquet metadata); null when "
                                                         "nothing was published")
    files: dict[str, str] | None = Field(None, description="published and pending entries: each file of the release "
                                                           "folder (its name) -> its SHA-256; null otherwise")
    started_at: datetime = Field(..., description="when the run started (ISO 8601, UTC)")
    finished_at: datetime = Field(..., description="when the entry was written (ISO 8601, UTC)")
    user: str = Field(..., description="the operating-system user who ran it (unknown when it cannot be told)")
    host: str = Field(..., description="the host name of the machine that ran it")
    flow_run_id: str | None = Field(..., description="id of the Prefect flow run; null outside a flow run")
    key_id: str = Field(..., description="id of the signing key: ed25519: or hmac-sha256: and 32 hex digits of "
                                         "its fingerprint")
    prev_hash: str = Field(..., description="entry_hash of the previous entry (64 zeros for the first entry)")
    entry_hash: str = Field(..., description="SHA-256 (64 hex digits) of the canonical JSON of every other field "
                                             "but signature")
    signature: str = Field(..., description="signature of entry_hash by the key key_id, in hex (Ed25519: 128 "
                                            "digits; HMAC-SHA256: 64)")


class PrivateRecord(BaseModel):
    """The publisher's private record of a run (``<config>/records/<trail id>/<release id>.json``, never under the
    publish root, never published): the input's unkeyed SHA-256 behind the published keyed digest, and what the
    published manifest and audit entries withhold (a differential_privacy release: its manifest as computed, every
    figure of the input included; a refused run: its full reason)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["ppdp private record"] = Field("ppdp private record", description="what this file is")
    release_id: str = Field(..., description="the release (or refused run) it belongs to")
    dataset: str = Field(..., description="the spec's dataset name")
    trail_id: str = Field(..., description="the audit trail of the publish root that records the run")
    written_at: datetime = Field(..., description="when the record was written (ISO 8601, UTC)")
    input_sha256: str | None = Field(None, description="SHA-256 of the input file (a partitioned input: of its "
                                                       "files' '<path> <sha256>' lines); null when it was not read")
    input_digest: str | None = Field(None, description="the keyed digest published for it")
    input_key_id: str | None = Field(None, description="the id of the key of input_digest")
    withheld: list[str] = Field(default_factory=list, description="the manifest fields the published manifest "
                                                                  "withholds (its withheld.fields)")
    manifest: dict | None = Field(None, description="the manifest as computed, nothing withheld (only when the "
                                                    "published one withholds something)")
    reason: str | None = Field(None, description="a refused run whose audit entry withholds its reason: the reason")


class ReleaseResult(BaseModel):
    """What the release flow returns (and the CLI prints)."""

    model_config = ConfigDict(extra="forbid")

    release_id: str
    status: Status
    reason: str
    folder: str | None = None
    report: str | None = Field(None, description="path of the release's report.html")
    unit: str | None = None
    k: int | None = None
    claims: list[Claim] = Field(default_factory=list, description="the privacy claims of the release")
    attacker_view: AttackerView | None = Field(None, description="the release as an attacker sees it")
    floor: FloorReport | None = Field(None, description="the safety floor and whether the release meets it")
    series: SeriesReport | None = Field(None, description="this release in its series (composed figures, budget)")
    tuned: str | None = Field(None, description="parameter=value chosen by the tuning step (or fixed in the spec)")
    tuning_strategy: str | None = Field(None, description="the tuning strategy that set it (fixed: the spec's value)")
    tuning_rule: str | None = Field(None, description="why the tuning step chose that value, in one line")
    linkage_risk: float | None = None
    accuracy: float | None = None
    accuracy_original: float | None = None
    per_class: dict[str, float] = Field(default_factory=dict)
    delta_r: dict[str, float] = Field(default_factory=dict, description="paper 004's ΔR per classifier, if gated")
    marginals: MarginalDistances | None = Field(None, description="the label-free utility measures (null for a "
                                                "differentially private release: measured on the input)")
    tstr: list[TstrScore] = Field(default_factory=list, description="train on the release, test on held-out real "
                                  "rows, per classifier of utility.tstr (empty for a differentially private release: "
                                  "measured on the input)")
    regression: list[RegressionScore] = Field(default_factory=list, description="R^2 per regression target (empty "
                                              "for a differentially private release)")
    exit_code: int = 0
