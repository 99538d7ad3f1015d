"""The release folders under a publish root checked against the trail: each published release's exact files and
hashes, its manifest, the auxiliary folders, ``LATEST`` pointers, and no folder without its entry."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TypeGuard

from pydantic import ValidationError

from ppdp.schemas.federate import FederatedManifest
from ppdp.schemas.manifest import Manifest
from ppdp.tasks.audit.trail import DB_NAME, ROOT_FILES, db_path, is_legacy, read_trail, row_label, safe
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.latest import LATEST_NAME, latest_of, read_latest
from ppdp.tasks.latest import is_leftover as is_latest_leftover
from ppdp.tasks.layout import (
    AUX_FOLDERS,
    folder_listing,
    is_data_file,
    is_part_file,
    parts_digest,
    read_parquet_metadata,
    release_folder,
)
from ppdp.tasks.staging import STAGING_PREFIX


# -- release folders ----------------------------------------------------------------------------------------
def valid_name(name: object) -> TypeGuard[str]:
    return (isinstance(name, str) and name not in ("", ".", "..") and not name.startswith(".")
            and not any(c in name for c in "/\\\0"))


def _valid_key(key: tuple[object, object]) -> TypeGuard[tuple[str, str]]:
    """A (dataset, release id) pair read from the trail that names a folder: two plain folder names."""
    return valid_name(key[0]) and valid_name(key[1])


def check_releases(root: Path, rows: list[dict], good: set[int], problems: list[str]) -> set[tuple[str, str]]:
    """Check every published entry's folder; return the (dataset, release) folders entries account for."""
    expected: set[tuple[str, str]] = set()
    published: dict[tuple[str, str], int | None] = {}  # release -> the seq of its published entry, as read
    resolved = {r.get("completes") for r in rows if r.get("completes") is not None}
    for row in rows:
        status, key = row.get("status"), (row.get("dataset"), row.get("release_id"))
        if status not in ("published", "pending", "rolled_back"):
            continue
        label = row_label(row)
        if not _valid_key(key):
            problems.append(f"{DB_NAME}: {label}: dataset or release id is not a plain folder name")
            continue
        rel = f"{key[0]}/{key[1]}"
        folder = release_folder(root, *key)
        if status == "pending":
            if row.get("seq") not in resolved:
                expected.add(key)  # reported as pending already; its folder may or may not exist
            continue
        if status == "rolled_back":
            if os.path.lexists(folder):
                problems.append(f"{rel}: {label}: rolled back, but its release folder exists")
            continue
        expected.add(key)
        if key in published:
            problems.append(f"{DB_NAME}: {label}: release published twice (also entry {published[key]})")
            continue
        published[key] = row.get("seq")
        if row.get("seq") not in good:
            # the entry itself is not trustworthy (reported above): still say whether its folder is there
            if not os.path.lexists(folder):
                problems.append(f"{rel}: {label}: release folder is missing")
            continue
        problems.extend(_check_release_folder(root, row, rel, folder))
    return expected


def _check_release_folder(root: Path, row: dict, rel: str, folder: Path) -> list[str]:
    label = row_label(row)
    out: list[str] = []
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return [f"{rel}: {label}: release folder is missing"]
    except OSError as exc:
        return [f"{rel}: {label}: release folder is unreadable ({exc.strerror or type(exc).__name__})"]
    if not stat.S_ISDIR(st.st_mode):
        return [f"{rel}: {label}: is not a folder"]
    try:
        signed = json.loads(row["files"]) if row.get("files") else None
    except ValueError:
        signed = None
    if not isinstance(signed, dict) or not signed:
        return [f"{DB_NAME}: {label}: published entry has no signed file list"]
    try:
        present = folder_listing(folder, signed)
    except OSError as exc:
        return [f"{rel}: {label}: release folder is unreadable ({exc.strerror or type(exc).__name__})"]
    for name in sorted(present - set(signed)):  # a folder too (only a distributed release's data/ is walked)
        out.append(f"{rel}/{safe(name)}: {label}: not in the signed file list (added after publishing)")
    for name in sorted(set(signed) - present):
        out.append(f"{rel}/{safe(name)}: {label}: file is missing (in the signed file list)")
    intact: set[str] = set()
    for name in sorted(present & set(signed)):
        path = folder / name
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                out.append(f"{rel}/{name}: {label}: not a regular file (in the signed file list)")
            elif file_sha256(path) != signed[name]:
                out.append(f"{rel}/{name}: {label}: altered (SHA-256 differs from the signed file list)")
            else:
                intact.add(name)
        except OSError as exc:
            out.append(f"{rel}/{name}: {label}: unreadable ({exc.strerror or type(exc).__name__})")
    part_files = sorted(name for name in signed if is_part_file(name))
    row_files = sorted(name for name in signed if is_data_file(name))
    expected: str | None
    if row_files and "data.parquet" not in signed:
        # a distributed release: output_sha256 is a digest of its row files; they carry the release id only (they
        # are written before the manifest)
        data_files, expected = row_files, parts_digest([(name, signed[name]) for name in row_files])
    elif "data.parquet" in signed or not part_files:
        data_files, expected = ["data.parquet"], signed.get("data.parquet")
    else:  # a partitioned release (DMPD): output_sha256 is a digest of its parts
        data_files, expected = part_files, parts_digest([(name, signed[name]) for name in part_files])
    if expected != row.get("output_sha256"):
        out.append(f"{DB_NAME}: {label}: the signed file list and output_sha256 disagree")
    out.extend(_check_manifest(folder, row, rel, label, intact="manifest.json" in intact,
                               signed_rows={name: signed[name] for name in row_files}))
    for name in data_files:
        if name not in present:
            continue
        try:
            meta = read_parquet_metadata(folder / name)
            if meta.get("ppdp.release_id") != row.get("release_id") or (
                    name not in row_files and meta.get("ppdp.manifest_sha256") != row.get("manifest_sha256")):
                out.append(f"{rel}/{name}: {label}: its metadata names another manifest or release")
        except Exception:  # noqa: BLE001 - any unreadable Parquet is a finding, not a crash
            out.append(f"{rel}/{name}: {label}: not a readable Parquet file")
    return out


def _check_manifest(folder: Path, row: dict, rel: str, label: str, intact: bool,
                    signed_rows: dict[str, str] | None = None) -> list[str]:
    """The manifest names this release and its data. An intact manifest (its bytes match the signed list) is not
    validated against today's schema: one written by an earlier ppdp may lack a field added since, which is
    no damage. A manifest that was altered is also described (not JSON, not the schema). ``signed_rows``: a
    distributed release's row files as signed (name to SHA-256), which the manifest's ``data_files`` must list
    with the same hashes."""
    where = f"{rel}/manifest.json: {label}"
    path = folder / "manifest.json"
    if not os.path.lexists(path) or not stat.S_ISREG(os.lstat(path).st_mode):
        return []  # reported as a missing file or not a regular file
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [f"{where}: unreadable ({exc.strerror or type(exc).__name__})"]
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return [f"{where}: not valid JSON"]
    if not isinstance(data, dict):
        return [f"{where}: not a JSON object"]
    out = []
    if not intact:
        # a federated naive Bayes model (ppdp federate) has its own manifest schema
        schema = FederatedManifest if data.get("kind") == "federated_naive_bayes" else Manifest
        try:
            schema.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]["loc"] if exc.errors() else ()
            out.append(f"{where}: does not match the manifest schema"
                       + (f" (at {'.'.join(str(p) for p in first)})" if first else ""))
    if (data.get("release_id"), data.get("dataset")) != (row.get("release_id"), row.get("dataset")):
        out.append(f"{where}: names another release")
    if data.get("output_sha256") != row.get("output_sha256"):
        out.append(f"{where}: names another data.parquet hash than the audit entry")
    name = "input_sha256" if is_legacy(row) else "input_digest"
    if data.get(name) != row.get(name) or (not is_legacy(row) and data.get("input_key_id") != row.get("input_key_id")):
        out.append(f"{where}: names another input digest than the audit entry")
    listed = data.get("data_files") or []
    if signed_rows or listed:
        try:
            named = {str(f["file"]): f["sha256"] for f in listed}
            well_formed = len(named) == len(listed)
        except (TypeError, KeyError):
            named, well_formed = {}, False
        if not well_formed or named != (signed_rows or {}):
            out.append(f"{where}: its data_files differ from the row files of the signed file list")
    return out


def _scan_aux(folder: Path, label: str, allowed: frozenset[str], what: str) -> list[str]:
    """A dataset's folder of command runs (:data:`ppdp.tasks.layout.AUX_FOLDERS`: ``ppdp tune``'s trace and plot,
    ``ppdp compare``'s table and page): one folder per run, each holding only ``allowed`` (aggregates, unsigned: not
    a release); anything else is a finding."""
    out: list[str] = []
    try:
        runs = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        return [f"{label}: tuning folder is unreadable ({exc.strerror or type(exc).__name__})"]
    for run in runs:
        if not run.is_dir(follow_symlinks=False):
            out.append(f"{label}/{safe(run.name)}: unexpected {'link' if run.is_symlink() else 'file'} in the "
                       f"{what} folder")
            continue
        try:
            files = sorted(os.scandir(run.path), key=lambda e: e.name)
        except OSError as exc:
            out.append(f"{label}/{safe(run.name)}: unreadable ({exc.strerror or type(exc).__name__})")
            continue
        for f in files:
            if f.name not in allowed or not f.is_file(follow_symlinks=False):
                out.append(f"{label}/{safe(run.name)}/{safe(f.name)}: unexpected in a {what} run's folder (only "
                           f"{', '.join(sorted(allowed))})")
    return out


def scan_root(root: Path, expected: set[tuple[str, str]], staged: dict[str, dict] | None = None,
              latest: list[dict] | None = None) -> list[str]:
    """Everything under the root that no entry accounts for (``staged``: staging folder name to the unresolved
    pending entry of its release). A dataset's ``LATEST`` pointer (:mod:`ppdp.tasks.latest`) must name the release
    of its last published entry in ``latest`` (the trail's rows; None: not checked); a temporary file of an
    interrupted update of it is a finding."""
    out: list[str] = []
    try:
        top = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        return [f"{root}: publish root is unreadable ({exc.strerror or type(exc).__name__})"]
    for item in top:
        name = item.name
        if name in ROOT_FILES or name.startswith(".ppdp-write-probe-"):
            continue
        if name.startswith(STAGING_PREFIX):
            pending = (staged or {}).get(name)
            out.append(f"{safe(name)}: staging folder of an interrupted or running publish "
                       + (f"(pending {row_label(pending)})" if pending else "(no audit entry covers it)"))
            continue
        if not item.is_dir(follow_symlinks=False):
            out.append(f"{safe(name)}: unexpected {'link' if item.is_symlink() else 'file'} in the publish root")
            continue
        try:
            subs = sorted(os.scandir(item.path), key=lambda e: e.name)
        except OSError as exc:
            out.append(f"{safe(name)}: dataset folder is unreadable ({exc.strerror or type(exc).__name__})")
            continue
        for sub in subs:
            if (name, sub.name) in expected:
                continue
            if sub.name == LATEST_NAME or is_latest_leftover(sub.name):
                out += _check_latest(root, name, sub, latest)
                continue
            if sub.name in AUX_FOLDERS and sub.is_dir(follow_symlinks=False):
                out += _scan_aux(Path(sub.path), f"{safe(name)}/{sub.name}", AUX_FOLDERS[sub.name], sub.name)
                continue
            if sub.is_dir(follow_symlinks=False):
                out.append(f"{safe(name)}/{safe(sub.name)}: release {safe(sub.name)} ({safe(name)}) is on disk "
                           "but has no published audit entry")
            else:
                out.append(f"{safe(name)}/{safe(sub.name)}: unexpected file in a dataset folder (no audit entry)")
    return out


def _check_latest(root: Path, dataset: str, item: os.DirEntry[str], rows: list[dict] | None) -> list[str]:
    """A dataset's ``LATEST`` pointer (or a temporary file of an interrupted update of it), checked against the
    trail's ``rows`` (None: only its form)."""
    where = f"{safe(dataset)}/{safe(item.name)}"
    if item.name != LATEST_NAME:
        return [f"{where}: temporary file of an interrupted update of LATEST (ppdp audit recover removes it)"]
    if not item.is_file(follow_symlinks=False):
        return [f"{where}: is not a regular file (the dataset's pointer to its latest release)"]
    named = read_latest(root, dataset)
    if named is None:
        return [f"{where}: does not hold one release id (ppdp audit recover rewrites it)"]
    if rows is None:
        return []
    last = latest_of(rows, dataset)
    if named != last:
        return [f"{where}: names release {named}, the dataset's latest published release is {last or 'none'} "
                "(ppdp audit recover rewrites it)"]
    return []


def latest_release(root: Path, dataset: str) -> str | None:
    """The release of ``dataset``'s last ``published`` entry (its latest complete release), None when it has none
    or the root has no trail; what ``LATEST`` names (:mod:`ppdp.tasks.latest`). Entries read as stored."""
    if not db_path(Path(root)).is_file():
        return None
    return latest_of(read_trail(Path(root)).rows, dataset)
