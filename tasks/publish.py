"""Publish: write ``data.parquet`` and ``manifest.json`` into a staging folder, then rename it into place.

A reader never sees half a release: the staging folder is a sibling under the publish root (same file
system) and ``os.rename`` moves it to ``<root>/<dataset>/<release_id>`` in one step. On any failure the staging
folder is removed and nothing is left under the root.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.schemas.manifest import Manifest, Versions
from ppdp.schemas.reports import ExpectationOutcome, Roles
from ppdp.schemas.spec import ReleaseSpec, Role
from ppdp.tasks.core.errors import PublishError, ReleaseRejected
from ppdp.tasks.ingest import file_sha256

META_RELEASE_ID = b"ppdp.release_id"
META_MANIFEST_SHA = b"ppdp.manifest_sha256"


def new_release_id(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def ensure_root(root: Path) -> None:
    """Create the publish root if needed and prove it is writable (fails with one line naming it)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".ppdp-write-probe-{secrets.token_hex(4)}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise PublishError(f"publish root {root} is not writable ({exc.strerror or type(exc).__name__})") from None


def release_folder(root: Path, dataset: str, release_id: str) -> Path:
    return root / dataset / release_id


def canonical_manifest_bytes(manifest: Manifest) -> bytes:
    return json.dumps(manifest.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode("utf-8")


def manifest_sha256(manifest: Manifest) -> str:
    """Hash of the manifest's canonical JSON with ``output_sha256`` empty (it hashes the Parquet file, which
    carries this hash in its metadata)."""
    return hashlib.sha256(canonical_manifest_bytes(manifest.model_copy(update={"output_sha256": None}))).hexdigest()


def write_release(frame: pd.DataFrame, manifest: Manifest, root: Path, extras: dict[str, bytes] | None = None
                  ) -> tuple[Path, Manifest, str]:
    """Write the release atomically; return (folder, manifest with ``output_sha256``, manifest hash)."""
    final = release_folder(root, manifest.dataset, manifest.release_id)
    if final.exists():
        raise PublishError(f"release folder {final} already exists")
    staging = root / f".staging-{manifest.release_id}"
    parent_created = False
    try:
        staging.mkdir(parents=True)
        m_hash = manifest_sha256(manifest)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[META_RELEASE_ID] = manifest.release_id.encode()
        meta[META_MANIFEST_SHA] = m_hash.encode()
        pq.write_table(table.replace_schema_metadata(meta), staging / "data.parquet")
        out_sha = file_sha256(staging / "data.parquet")
        manifest = manifest.model_copy(update={"output_sha256": out_sha})
        (staging / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        for name, payload in (extras or {}).items():
            (staging / name).write_bytes(payload)
        for name in os.listdir(staging):
            with open(staging / name, "rb") as fh:
                os.fsync(fh.fileno())
        if not final.parent.exists():
            final.parent.mkdir(parents=True)
            parent_created = True
        os.rename(staging, final)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if parent_created:
            _rmdir_quiet(final.parent)
        if final.exists():
            raise PublishError(f"release folder {final} already exists") from None
        raise PublishError(f"cannot write release under {root} ({exc.strerror or type(exc).__name__})") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if parent_created:
            _rmdir_quiet(final.parent)
        raise
    return final, manifest, m_hash


def _rmdir_quiet(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def read_parquet_metadata(path: Path) -> dict[str, str]:
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"ppdp.")}


def load_manifest(folder: Path) -> Manifest:
    return Manifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))


GROUP_COLUMN = "__ppdp_group__"  # validation only: the generating group of each synthetic record, never written
PSEUDONYM_REGEX = r"^[0-9a-f]{64}$"


def output_suite(frame_columns: list[str], roles: Roles, spec: ReleaseSpec, synthetic: bool) -> dict:
    """The output suite (GX JSON) for a frame about to be published."""
    from ppdp.expectations import base_suite_path, load_suite_json

    suite = load_suite_json(base_suite_path("output"))
    ids = roles.identifiers
    extra: list[dict] = []
    if spec.identifiers.action == "drop":
        if ids:
            extra.append({"type": "expect_columns_to_be_absent", "kwargs": {"column_list": ids}})
    else:
        extra += [{"type": "expect_column_values_to_match_regex", "kwargs": {"column": c, "regex": PSEUDONYM_REGEX}}
                  for c in ids if c in frame_columns]
    classes = [GROUP_COLUMN] if synthetic else [q for q in roles.quasi_identifiers if q in frame_columns]
    extra.append({"type": "expect_quasi_identifiers_to_be_k_anonymous",
                  "kwargs": {"column_list": classes, "k": spec.privacy.k}})
    if spec.privacy.l is not None:
        extra += [{"type": "expect_equivalence_classes_to_be_l_diverse",
                   "kwargs": {"column_list": classes, "sensitive_column": sa, "l": spec.privacy.l}}
                  for sa in roles.names(Role.sensitive) if sa in frame_columns]
    suite["expectations"] = list(suite["expectations"]) + extra
    return suite


def check_output(frame: pd.DataFrame, groups, roles: Roles, spec: ReleaseSpec, synthetic: bool
                 ) -> list[ExpectationOutcome]:
    """Run the output suite on the frame about to be written (plus, for synthetic releases, its group ids);
    raise :class:`ReleaseRejected` naming the failed expectations."""
    from ppdp.expectations import validate_frame

    checked = frame.assign(**{GROUP_COLUMN: groups}) if synthetic else frame
    outcomes = validate_frame(checked, output_suite(list(frame.columns), roles, spec, synthetic))
    failed = [o for o in outcomes if not o.success]
    if failed:
        names = "; ".join(o.expectation + (f"({o.column})" if o.column else "")
                          + (f" observed {o.observed:g}" if o.observed is not None else "") for o in failed)
        raise ReleaseRejected(f"output suite failed: {names}", [o.expectation for o in failed])
    return outcomes


def collect_versions() -> Versions:
    """Versions of everything that shaped the release."""
    import platform
    from importlib.metadata import PackageNotFoundError, version


    def v(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    return Versions(
        ppdp=v("ppdp"),
        python=platform.python_version(),
        prefect=v("prefect"),
        pandas=v("pandas"),
        numpy=v("numpy"),
        scikit_learn=v("scikit-learn"),
        pyarrow=v("pyarrow"),
        great_expectations=v("great-expectations"),
    )


def publish_release(frame: pd.DataFrame, manifest: Manifest, extras: dict[str, bytes] | None, started: datetime
                    ) -> tuple[Path, Manifest, str]:
    """Write the release and append its audit entry; if the entry cannot be written, the release is removed
    again (a published release always has its audit entry)."""
    from ppdp.tasks import audit

    root = manifest.spec.publish.root
    folder, manifest, m_hash = write_release(frame, manifest, root, extras)
    try:
        audit.append_entry(root, release_id=manifest.release_id, dataset=manifest.dataset, status="published",
                           reason="published", started_at=started, spec_sha256=manifest.spec_sha256,
                           input_sha256=manifest.input_sha256, output_sha256=manifest.output_sha256,
                           manifest_sha256=m_hash, flow_run_id=manifest.flow_run_id)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        _rmdir_quiet(folder.parent)
        raise
    return folder, manifest, m_hash
