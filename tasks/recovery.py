"""Crash recovery (``ppdp audit recover``): bring a publish root interrupted while publishing back to a state that
verifies, losing nothing published (see :func:`recover`).

Recovery resolves the audit trail's unresolved ``pending`` entries (:mod:`ppdp.tasks.audit`) and removes the
staging leftovers of :mod:`ppdp.tasks.staging`, under the root's publish lock.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ppdp.tasks import keys
from ppdp.tasks.audit import (
    AuditDamaged,
    append_entry,
    check_chain,
    db_path,
    interrupted_publishes,
    read_trail,
    row_label,
    safe,
    valid_name,
)
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.latest import LATEST_NAME, latest_of, latest_path, read_latest, write_latest
from ppdp.tasks.latest import is_leftover as is_latest_leftover
from ppdp.tasks.layout import folder_listing
from ppdp.tasks.staging import STAGING_PREFIX, fault_point, fsync_dir, publish_lock, remove_path, staging_folder

RECOVER_WAIT_SECONDS = 30.0


@dataclass
class Recovery:
    """What :func:`recover` did (one line each) and how many things it had to leave (0: nothing left)."""

    actions: list[str] = field(default_factory=list)
    left: int = 0


def recover(root: Path, wait: float = RECOVER_WAIT_SECONDS) -> Recovery:
    """Bring a root interrupted while publishing back to a state that verifies, losing nothing published.

    Under the publish lock (so never under a running publish), for each pending entry no entry completes:
    if ``<root>/<dataset>/<release_id>`` holds exactly the pending entry's signed files (names and SHA-256),
    the rename happened: append the completing ``published`` entry; otherwise remove the staging folder and any
    partial final folder, then append a ``rolled_back`` entry. A pending entry whose hash or signature does not
    verify is left alone (it could be forged). Then every ``.staging-*`` leftover is removed: a staging folder
    never holds a published release (the rename moves it out). Last, every dataset's ``LATEST`` is made to name
    its latest published release (:mod:`ppdp.tasks.latest`). Each step is idempotent and the completing
    entry is appended last, so a kill during recovery is repaired by running it again."""
    root = Path(root)
    if not root.is_dir():
        raise PublishError(f"no publish root at {root}")
    report = Recovery()
    with publish_lock(root, wait=wait):
        pending = interrupted_publishes(root)
        if pending:
            trail = read_trail(root)
            if trail.problems:
                raise AuditDamaged(f"audit trail {db_path(root)} is damaged ({trail.problems[0]}); recovery appends "
                                   "only to a trail that reads as one: run ppdp audit verify")
            if keys.configured_key() is None:
                raise PublishError("no audit key is configured and the default key is missing: recovery signs its "
                                   "entries with the publisher's key (restore it, or set it as when publishing)")
            keys.signing_key(root)  # a key under the root is refused
            trusted, _ = keys.trusted_keys()
            good = check_chain(trail.rows, trusted, [])
            published = {(r.get("dataset"), r.get("release_id")) for r in trail.rows if r.get("status") == "published"}
            for row in pending:
                if row.get("seq") not in good or not (valid_name(row.get("dataset"))
                                                      and valid_name(row.get("release_id"))):
                    report.actions.append(f"{row_label(row)}: pending, but its hash or signature does not verify: left "
                                          "as is (run ppdp audit verify)")
                    report.left += 1
                    continue
                report.actions.append(_recover_pending(root, row, published))
        for item in sorted(os.scandir(root), key=lambda e: e.name):
            if item.name.startswith(STAGING_PREFIX):
                remove_path(Path(item.path))
                if os.path.lexists(item.path):
                    report.actions.append(f"{safe(item.name)}: staging leftover could not be removed")
                    report.left += 1
                else:
                    report.actions.append(f"{safe(item.name)}: staging leftover removed (no pending entry: it never "
                                          "held a published release)")
        fsync_dir(root)
        _mend_latest(root, report)
    return report


def _mend_latest(root: Path, report: Recovery) -> None:
    """Every dataset's ``LATEST`` (:mod:`ppdp.tasks.latest`) made to name its latest complete release (its last
    published entry), and the temporary files of an interrupted update removed; a damaged trail is left alone."""
    if not db_path(root).is_file():
        return
    trail = read_trail(root)
    if trail.problems:
        return
    for item in sorted(os.scandir(root), key=lambda e: e.name):
        if not valid_name(item.name) or not item.is_dir(follow_symlinks=False):
            continue
        dataset = item.name
        for sub in sorted(os.scandir(item.path), key=lambda e: e.name):
            if is_latest_leftover(sub.name) and sub.is_file(follow_symlinks=False):
                remove_path(Path(sub.path))
                report.actions.append(f"{safe(dataset)}/{safe(sub.name)}: temporary file of an interrupted update "
                                      "of LATEST removed")
        path = latest_path(root, dataset)
        last = latest_of(trail.rows, dataset)
        if read_latest(root, dataset) == last and (last is not None or not os.path.lexists(path)):
            continue
        if os.path.lexists(path) and not path.is_file():
            report.actions.append(f"{safe(dataset)}/{LATEST_NAME}: not a regular file: left as is")
            report.left += 1
            continue
        try:
            write_latest(root, dataset, last)
        except PublishError as exc:
            report.actions.append(f"{safe(dataset)}/{LATEST_NAME}: {exc}")
            report.left += 1
            continue
        report.actions.append(f"{safe(dataset)}/{LATEST_NAME}: " + (
            f"now names release {last} (the dataset's latest published release)" if last else
            "removed (the dataset has no published release)"))
        if last is None:
            _rmdir_quiet(Path(item.path))  # a first release rolled back: its dataset folder held only LATEST


def _recover_pending(root: Path, row: dict, published: set) -> str:
    seq, release_id, dataset = row["seq"], row["release_id"], row["dataset"]
    files = json.loads(row["files"])
    dataset_dir = root / dataset
    final = dataset_dir / release_id
    real_parent = _is_real_dir(dataset_dir)
    common = dict(release_id=release_id, dataset=dataset, started_at=datetime.fromisoformat(row["started_at"]),
                  spec_sha256=row.get("spec_sha256"), input_digest=row.get("input_digest"),
                  input_key_id=row.get("input_key_id"),
                  output_sha256=row.get("output_sha256"), manifest_sha256=row.get("manifest_sha256"),
                  flow_run_id=row.get("flow_run_id"), completes=seq)
    remove_path(staging_folder(root, release_id))
    if real_parent and _is_real_dir(final) and _holds_exactly(final, files):
        done = append_entry(root, status="published", files=files, reason=f"published (recovered: the publish was "
                            f"interrupted after its folder was renamed into place; completes entry {seq})", **common)
        return (f"{row_label(row)}: completed: its folder holds exactly the signed files; published (entry "
                f"{done.seq})")
    removed = ""
    if real_parent and os.path.lexists(final) and (dataset, release_id) not in published:
        remove_path(final)
        removed = "; an incomplete or altered release folder removed"
    if real_parent:
        _rmdir_quiet(dataset_dir)
        fsync_dir(root)
    fault_point("recover-removed")
    done = append_entry(root, status="rolled_back", reason=f"rolled back (recovered: the publish was interrupted "
                        f"before its folder was in place; completes entry {seq}); nothing published", **common)
    return f"{row_label(row)}: rolled back: its folder was not in place{removed} (entry {done.seq})"


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _holds_exactly(folder: Path, files: dict[str, str]) -> bool:
    """The folder holds exactly the signed files (a distributed release's row files under ``data/`` by relative
    name), each a regular file with its signed SHA-256."""
    try:
        if folder_listing(folder, files) != set(files):
            return False
        return all(stat.S_ISREG(os.lstat(folder / n).st_mode) and file_sha256(folder / n) == h
                   for n, h in files.items())
    except OSError:
        return False


def _rmdir_quiet(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
