"""What the federation flow (:mod:`ppdp.flows.federate`) calls around the protocol: the spec (read, resolve,
hash, pre-flight checks), the manifest, the crash-safe publish of the model, and its re-check from the published
folder alone (``ppdp validate --release``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from ppdp.schemas.federate import AttributeRecord, FederatedManifest, FederateSpec, MinCountOutcome, PartyRecord
from ppdp.tasks import audit, series
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import InputError, PublishError, SpecError
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.digests import input_digest, keyed, publisher_key
from ppdp.tasks.federated.model import COLUMNS, Suppressed, counts_from_table
from ppdp.tasks.federated.protocol import PROTOCOL, layout_of
from ppdp.tasks.federated.suppression import audit_suppression
from ppdp.tasks.layout import ensure_root
from ppdp.tasks.private_record import Record
from ppdp.tasks.publish import (
    META_MANIFEST_SHA,
    META_RELEASE_ID,
    canonical_manifest_bytes,
    collect_versions,
    new_staging,
    publish_staged,
    seal,
)
from ppdp.tasks.report.model import render_model_report
from ppdp.tasks.report.page import REPORT_NAME
from ppdp.tasks.staging import fault_point

KIND = "federated_naive_bayes"
MODEL_SCHEMA = pa.schema([("class", pa.string()), ("attribute", pa.string()), ("value", pa.string()),
                          ("count", pa.int64()), ("suppressed", pa.bool_())])


# -- the spec ----------------------------------------------------------------------------------------------
def load_spec(path: str | os.PathLike[str], overrides: list[str] | None = None) -> FederateSpec:
    """Read (with the release spec's safe YAML loader), override, validate strictly and resolve a federation
    spec; raise :class:`SpecError` naming the line or the key (one line per problem, the first complete on its
    own)."""
    spec_path = Path(path)
    raw = spec_io.read_spec_mapping(spec_path)
    overridden = [spec_io.apply_override(raw, item) for item in overrides or []]
    try:
        spec = FederateSpec.model_validate_json(json.dumps(raw, allow_nan=False), strict=True)
    except ValidationError as exc:
        problems = spec_io.format_validation_error(exc, overridden, FederateSpec)
        raise SpecError(f"spec {spec_path}: {problems}") from None
    return resolve_paths(spec, spec_path.resolve().parent)


def resolve_paths(spec: FederateSpec, base: Path) -> FederateSpec:
    """Relative party paths and the publish root resolve against the spec file's folder."""

    def absolute(p: Path) -> Path:
        return p if p.is_absolute() else (base / p).resolve()

    parties = [p.model_copy(update={"path": absolute(p.path)}) for p in spec.parties]
    publish = spec.publish.model_copy(update={"root": absolute(spec.publish.root)})
    return spec.model_copy(update={"parties": parties, "publish": publish})


def spec_sha256(spec: FederateSpec) -> str:
    """SHA-256 of the resolved spec's canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def preflight(spec: FederateSpec) -> None:
    """Checks that read no party's data: every party's file exists, the publish root is writable, the audit key
    is in place and the root holds no interrupted publish. (Each party checks its own header itself.)"""
    for party in spec.parties:
        if not party.path.is_file():
            raise InputError(f"party {party.name}: its file {party.path} does not exist")
    ensure_root(spec.publish.root)
    audit.check_signing_key(spec.publish.root)
    audit.require_no_interrupted_publish(spec.publish.root)


# -- the release -------------------------------------------------------------------------------------------
def manifest_sha256(manifest: FederatedManifest) -> str:
    """SHA-256 of the manifest's canonical JSON with ``output_sha256`` empty (``data.parquet``'s metadata
    carries it; the Parquet hash cannot be inside the file it hashes)."""
    return hashlib.sha256(canonical_manifest_bytes(manifest.model_copy(update={"output_sha256": None}))).hexdigest()


def inputs_sha256(parties: list[PartyRecord]) -> str:
    """SHA-256 of the canonical JSON of the parties' names and file SHA-256s (``private_sha256``): never published,
    its keyed digest is (:func:`party_records`)."""
    text = json.dumps([{"file_sha256": p.private_sha256, "name": p.name} for p in parties], sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def party_records(spec: FederateSpec, hashes: list[tuple[str, str]]) -> list[PartyRecord]:
    """The parties as the manifest names them: each party's file by its keyed digest under the publisher's key
    (:mod:`ppdp.tasks.digests`), the file's SHA-256 kept for the publisher's private record only. ``hashes``: each
    party's name and its file's SHA-256, in spec order."""
    key = publisher_key(spec.publish.root)
    return [PartyRecord(name=name, file_digest=keyed(sha, key).digest, private_sha256=sha) for name, sha in hashes]


def build_manifest(*, release_id: str, started: datetime, spec: FederateSpec, spec_sha256: str,
                   parties: list[PartyRecord], result: Suppressed, rows: int, flow_run_id: str | None
                   ) -> FederatedManifest:
    """The manifest of a model about to be published (``output_sha256`` is filled in when written)."""
    attributes = [AttributeRecord(name=name, kind="binned" if a.bins is not None else "categorical",
                                  values=a.labels(), bins=a.bins) for name, a in spec.attributes.items()]
    digest = input_digest(inputs_sha256(parties), spec.publish.root)
    return FederatedManifest(
        kind=KIND, release_id=release_id, dataset=spec.dataset, created_at=started,
        input_digest=digest.digest, input_key_id=digest.key_id, rows=rows, columns=list(COLUMNS), parties=parties,
        protocol=PROTOCOL,
        class_column=spec.class_column, class_domain=spec.classes(), attributes=attributes,
        min_count=MinCountOutcome(k=spec.min_count.k, action=spec.min_count.action,
                                  suppressed_cells=result.primary, complementary_cells=result.complementary,
                                  suppression_audit=result.audited),
        seed=spec.seed, spec=spec, spec_sha256=spec_sha256, versions=collect_versions(), flow_run_id=flow_run_id)


def stage_model(frame: pd.DataFrame, manifest: FederatedManifest, root: Path
                ) -> tuple[Path, FederatedManifest, str, dict[str, str]]:
    """Write ``data.parquet`` and ``manifest.json`` into ``<root>/.staging-<release_id>`` and fsync them, as
    :func:`ppdp.tasks.publish.stage_release` does for a release, and ``report.html`` (the model's claims
    re-checked from the staged files: :func:`ppdp.tasks.report.model.render_model_report`); return (staging folder,
    manifest with ``output_sha256``, manifest hash, the exact file list)."""
    with new_staging(root, manifest.dataset, manifest.release_id) as staging:
        m_hash = manifest_sha256(manifest)
        table = pa.Table.from_pandas(frame, schema=MODEL_SCHEMA, preserve_index=False)
        table = table.replace_schema_metadata({META_RELEASE_ID: manifest.release_id.encode(),
                                               META_MANIFEST_SHA: m_hash.encode()})
        with pq.ParquetWriter(staging / "data.parquet", table.schema) as writer:
            writer.write_table(table)
            fault_point("parquet-unfinished")
        manifest = manifest.model_copy(update={"output_sha256": file_sha256(staging / "data.parquet")})
        (staging / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        _check_reads_back(staging / "manifest.json", manifest)
        holds, report = model_report(staging)
        if not holds:
            raise PublishError(f"release {manifest.release_id}: the staged model fails its own re-check; nothing "
                               "published")
        (staging / REPORT_NAME).write_text(report, encoding="utf-8")
        files = seal(staging)
    fault_point("staged")
    return staging, manifest, m_hash, files


def _check_reads_back(path: Path, manifest: FederatedManifest) -> None:
    try:
        back = FederatedManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError, OSError):
        raise PublishError(f"release {manifest.release_id}: its manifest does not read back; nothing published") \
            from None
    if canonical_manifest_bytes(back) != canonical_manifest_bytes(manifest):
        raise PublishError(f"release {manifest.release_id}: its manifest reads back changed; nothing published")


def publish_model(frame: pd.DataFrame, manifest: FederatedManifest, started: datetime
                  ) -> tuple[Path, FederatedManifest]:
    """Publish crash-safely, as every release is (:func:`ppdp.tasks.publish.publish_staged`): under the root's
    publish lock, stage, append the ``pending`` audit entry, rename into place, append the completing
    ``published`` entry; on an error after the pending entry, remove the folder and roll the entry back."""
    known = [p for p in manifest.parties if p.private_sha256 is not None]
    private = Record(release_id=manifest.release_id, dataset=manifest.dataset,
                     input_sha256=inputs_sha256(manifest.parties) if len(known) == len(manifest.parties) else None,
                     input_digest=manifest.input_digest, input_key_id=manifest.input_key_id)
    record = series.model_record(Path(manifest.spec.publish.root), manifest.release_id, manifest.dataset, started,
                                 "federated_naive_bayes", len(frame))
    final, manifest, _ = publish_staged(manifest, lambda root: stage_model(frame, manifest, root), started,
                                        " (federated naive Bayes model)", after_pending=record.write, private=private)
    return final, manifest


def model_report(folder: str | os.PathLike[str]) -> tuple[bool, str]:
    """(whether every claim holds, the HTML of ``report.html``) of a federated model's folder, from its
    ``manifest.json`` and ``data.parquet`` alone: the page :func:`stage_model` writes and ``ppdp report``
    regenerates."""
    folder = Path(folder)
    manifest, checks = recheck_model(folder)
    files = {name: file_sha256(folder / name) for name in ("data.parquet", "manifest.json")}
    return all(c.holds for c in checks), render_model_report(manifest, checks, files)


def is_model_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a federated model's manifest (its ``kind``), not a release's."""
    try:
        return json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8")).get("kind") == \
            "federated_naive_bayes"
    except (OSError, ValueError, AttributeError):
        return False


# -- re-checking a published model (ppdp validate --release) -----------------------------------------------------
@dataclass(frozen=True)
class ModelCheck:
    """One claim of a published federated model, re-checked from its folder alone."""

    name: str
    holds: bool
    value: float | None
    note: str


def recheck_model(folder: str | os.PathLike[str]) -> tuple[FederatedManifest, list[ModelCheck]]:
    """Re-check a published federated model from its folder alone (``ppdp validate --release``): the table is the
    file the manifest hashes; every published count is 0 or at least ``min_count.k``; the flagged cells are
    published as 0 and as many as the manifest says; and the suppression audit (:func:`audit_suppression`, run
    on the published table alone): every suppressed cell's feasible range reaches from 0 to at least k - 1, for
    the standard LP audit and for an attacker who knows which suppressed counts are below k."""
    folder = Path(folder)
    try:
        manifest = FederatedManifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(f"{folder / 'manifest.json'} cannot be read as a federated model's manifest") from None
    path = folder / "data.parquet"
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, ValueError, pa.ArrowException):
        raise InputError(f"{path} cannot be read as Parquet") from None
    layout = layout_of(manifest.spec)
    counts = counts_from_table(frame, layout)
    flagged = frame["suppressed"].to_numpy(dtype=bool)
    k = manifest.min_count.k
    checks = [ModelCheck("integrity", file_sha256(path) == manifest.output_sha256, None,
                         "SHA-256 of data.parquet equals the manifest's output_sha256")]
    nonzero = counts[counts > 0]
    smallest = int(nonzero.min()) if nonzero.size else None
    checks.append(ModelCheck("min_count", smallest is None or smallest >= k, smallest,
                             f"smallest published non-zero count, at least k = {k}"))
    expected = manifest.min_count.suppressed_cells + manifest.min_count.complementary_cells
    checks.append(ModelCheck("suppressed cells", int(flagged.sum()) == expected and not counts[flagged].any(),
                             int(flagged.sum()), f"flagged cells published as 0, {expected} in the manifest"))
    findings = audit_suppression(frame, layout, k)
    narrow = len({f.cell for f in findings})
    checks.append(ModelCheck("suppression audit", not findings, narrow,
                             f"suppressed cells whose LP range misses 0 or k - 1 = {k - 1} (standard audit; knowing "
                             f"which are below k): none of {int(flagged.sum())}"))
    return manifest, checks
