"""Writing the audit trail: one signed entry appended to the chain, a refused run recorded, and the pending
entries of publishes not yet completed (see :mod:`ppdp.tasks.staging`) checked and rolled back."""

from __future__ import annotations

import getpass
import secrets
import socket
import sqlite3
import sys
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from ppdp.schemas.manifest import AuditEntry, AuditStatus
from ppdp.tasks import interrupt, keys
from ppdp.tasks.audit.trail import (
    COLUMNS,
    GENESIS,
    HEAD_COLUMNS,
    LEGACY_COLUMNS,
    RESOLVES,
    compute_hash,
    connect_rw,
    db_path,
    entry_from_row,
    files_json,
    head_of,
    read_trail,
    row_label,
    signed_message,
)
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.layout import (
    ensure_root,
)
from ppdp.tasks.private_record import REFUSAL_WITHHELD, Record
from ppdp.tasks.staging import RootBusy, fault_point, publish_lock


def _who() -> tuple[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return user, socket.gethostname()


# -- writing ------------------------------------------------------------------------------------------------
def check_signing_key(root: Path) -> str:
    """Load (or create) the signing key before any work; return its id. Raises :class:`PublishError`."""
    return keys.signing_key(Path(root)).key_id


def append_entry(
    root: Path,
    *,
    release_id: str,
    dataset: str,
    status: AuditStatus,
    reason: str,
    started_at: datetime,
    spec_sha256: str | None = None,
    input_digest: str | None = None,
    input_key_id: str | None = None,
    output_sha256: str | None = None,
    manifest_sha256: str | None = None,
    files: dict[str, str] | None = None,
    completes: int | None = None,
    flow_run_id: str | None = None,
) -> AuditEntry:
    """Append one signed entry to the chain (serialized by an immediate transaction).

    ``files`` is the exact content of the release folder (name to SHA-256), required for ``published`` and
    ``pending``. ``completes`` is the ``seq`` of a pending entry of the same release that this entry resolves
    (status ``published`` or ``rolled_back``).
    """
    root = Path(root)
    if status in ("published", "pending") and not files:
        raise PublishError(f"audit entry for release {release_id}: a {status} entry needs its file list")
    if (status == "rolled_back" and completes is None) or (completes is not None and status not in RESOLVES):
        raise PublishError(f"audit entry for release {release_id}: only published or rolled_back entries "
                           "complete a pending one, and a rolled_back entry always does")
    key = keys.signing_key(root)
    user, host = _who()
    fields: dict[str, object] = {
        "release_id": release_id,
        "dataset": dataset,
        "status": status,
        "completes": completes,
        "reason": " ".join(reason.split())[:2000],
        "spec_sha256": spec_sha256,
        "input_digest": input_digest,
        "input_key_id": input_key_id,
        "output_sha256": output_sha256,
        "manifest_sha256": manifest_sha256,
        "files": files_json(files),
        "started_at": started_at.astimezone(UTC).isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "user": user,
        "host": host,
        "flow_run_id": flow_run_id,
        "key_id": key.key_id,
    }
    _insert_signed(root, fields, key, status, completes, release_id, dataset)
    keys.record_local_witness(head_of(fields))
    return entry_from_row(fields)


def _insert_signed(root: Path, fields: dict[str, object], key: keys.SigningKey, status: str, completes: int | None,
                   release_id: str, dataset: str) -> None:
    """Chain ``fields`` to the last entry (seq, previous hash, trail id), hash and sign them, and insert the entry
    and the new head in one immediate transaction."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with closing(connect_rw(root)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                _require_current_format(conn, root)
                last = conn.execute("SELECT seq, entry_hash, trail_id FROM entries ORDER BY seq DESC LIMIT 1"
                                    ).fetchone()
                if completes is not None:
                    _check_completes(conn, root, completes, release_id, dataset)
                fields["seq"] = (last["seq"] + 1) if last else 1
                fields["prev_hash"] = last["entry_hash"] if last else GENESIS
                fields["trail_id"] = last["trail_id"] if last else secrets.token_hex(16)
                fields["entry_hash"] = entry_hash = compute_hash(fields)
                fields["signature"] = key.sign(signed_message(entry_hash))
                conn.execute(
                    f"INSERT INTO entries ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
                    [fields[c] for c in COLUMNS],
                )
                conn.execute(
                    "INSERT INTO head (id, seq, entry_hash) VALUES (1, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, entry_hash = excluded.entry_hash",
                    (fields["seq"], fields["entry_hash"]),
                )
                fault_point(f"{status}-uncommitted")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    except (sqlite3.Error, OSError) as exc:
        raise PublishError(f"cannot write the audit trail {db_path(root)} ({type(exc).__name__}: {exc})") from None


def _require_current_format(conn: sqlite3.Connection, root: Path) -> None:
    for table, expected in (("entries", COLUMNS), ("head", HEAD_COLUMNS)):
        found = [r["name"] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]
        if found == LEGACY_COLUMNS:
            raise PublishError(f"audit trail {db_path(root)} was written before keyed input digests (its entries name "
                               "inputs by their unkeyed SHA-256): ppdp verifies it but appends to it no more, and "
                               "the releases under this root cannot be judged with later ones; nothing published")
        if found != expected:
            raise PublishError(f"audit trail {db_path(root)} is not in the signed format of this ppdp (table "
                               f"{table} has other columns): run ppdp audit verify; nothing published")


def _check_completes(conn: sqlite3.Connection, root: Path, completes: int, release_id: str, dataset: str) -> None:
    row = conn.execute("SELECT status, release_id, dataset FROM entries WHERE seq = ?", (completes,)).fetchone()
    if row is None or row["status"] != "pending" or row["release_id"] != release_id or row["dataset"] != dataset:
        raise PublishError(f"audit trail {db_path(root)}: entry {completes} is not a pending entry of release "
                           f"{release_id}")
    if conn.execute("SELECT 1 FROM entries WHERE completes = ?", (completes,)).fetchone() is not None:
        raise PublishError(f"audit trail {db_path(root)}: pending entry {completes} is resolved already")


def record_refusal(root: Path | None, *, release_id: str, dataset: str | None, error: Exception,
                   started_at: datetime, flow_run_id: str | None = None, spec_sha256: str | None = None,
                   input_digest: str | None = None, input_key_id: str | None = None,
                   private_sha256: str | None = None, withhold: bool = False) -> AuditEntry | None:
    """Audit a run that published nothing, when its publish root is known and writable; returns the entry.

    ``input_digest`` and ``input_key_id`` name the input it read (keyed); ``private_sha256``, the input's unkeyed
    SHA-256, goes only to the publisher's private record of the run. ``withhold`` (a differential_privacy run): the
    entry says only what kind of refusal it was, the reason (which may quote a figure of the input) is kept in the
    private record."""
    if root is None:
        return None
    status = cast(AuditStatus, getattr(error, "status", "error"))  # a PpdpError's status: "error" or "rejected"
    reason = str(error)
    public = f"{type(error).__name__}: {REFUSAL_WITHHELD}" if withhold else reason
    with interrupt.critical():  # a stop request (SIGINT) ends the process after this entry, or before it
        if interrupt.refused(root, release_id):
            return None  # recorded already (an interruption, recorded by whoever ended the process)
        try:
            ensure_root(root)
            entry = append_entry(root, release_id=release_id, dataset=dataset or "unknown", status=status,
                                 reason=public, started_at=started_at, flow_run_id=flow_run_id,
                                 spec_sha256=spec_sha256, input_digest=input_digest, input_key_id=input_key_id)
        except PublishError:
            return None  # the root (or the key) is the problem; the original error is what the user sees
        interrupt.note_refused(root, release_id)
        private = Record(release_id=release_id, dataset=dataset or "unknown", input_sha256=private_sha256,
                         input_digest=input_digest, input_key_id=input_key_id, reason=reason if withhold else None)
        if private.needed:
            try:
                private.write(entry.trail_id, Path(root))
            except PublishError as exc:  # the refusal is audited; its private record is the publisher's to restore
                sys.stderr.write(f"ppdp: warning: {exc}\n")
    return entry


# -- pending entries: publishes not yet completed (see :mod:`ppdp.tasks.staging`) ----------------------------
def interrupted_publishes(root: Path) -> list[dict]:
    """Pending entries that no later entry completes, as stored (an interrupted publish, or a running one when
    the publish lock is not held)."""
    root = Path(root)
    if not db_path(root).is_file():
        return []
    rows = read_trail(root).rows
    resolved = {r.get("completes") for r in rows if isinstance(r.get("completes"), int)}
    return [r for r in rows if r.get("status") == "pending" and r.get("seq") not in resolved]


def require_no_interrupted_publish(root: Path, locked: bool = False) -> None:
    """Refuse (:class:`PublishError`, one line) when ``root`` holds an interrupted publish: a pending entry never
    completed while no ppdp process holds the publish lock. ``ppdp run`` checks this at start and again when
    it publishes (``locked``: the caller holds the lock); the operator runs ``ppdp audit recover`` (never
    automatic: a crash is something to look at)."""
    root = Path(root)
    if not db_path(root).is_file():
        return
    if locked:
        rows = interrupted_publishes(root)
    else:
        try:
            with publish_lock(root, wait=0):
                rows = interrupted_publishes(root)
        except RootBusy:
            return  # a publish is running: its pending entry is not an interrupted one
    if rows:
        more = f" and {len(rows) - 1} more" if len(rows) > 1 else ""
        raise PublishError(f"publish root {root} holds an interrupted publish ({row_label(rows[0])}{more}: pending, "
                           f"never completed): run ppdp audit recover --root {root} first")


def roll_back_quietly(root: Path, pending: AuditEntry, why: str) -> None:
    """Append the ``rolled_back`` entry completing ``pending`` (its folder is not in place); when that fails too,
    the pending entry stays and ``ppdp audit recover`` rolls it back later."""
    try:
        append_entry(root, release_id=pending.release_id, dataset=pending.dataset, status="rolled_back",
                     reason=f"rolled back: {why}; nothing published", started_at=pending.started_at,
                     spec_sha256=pending.spec_sha256, input_digest=pending.input_digest,
                     input_key_id=pending.input_key_id, output_sha256=pending.output_sha256,
                     manifest_sha256=pending.manifest_sha256,
                     completes=pending.seq, flow_run_id=pending.flow_run_id)
    except PublishError:
        pass
