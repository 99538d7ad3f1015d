"""The audit trail: one SQLite database per publish root (``<root>/audit.db``), one signed row per run.

Each entry stores the SHA-256 of the previous entry (a hash chain), its own hash ``entry_hash`` over every field
(sequence number, trail id, statuses, hashes, the signed file list of a release, key id and previous hash), and
a signature of that hash by a key kept outside the publish root (:mod:`ppdp.tasks.keys`: Ed25519 by default,
or HMAC-SHA256). A one-row ``head`` table holds the last sequence number and hash. Without the key, a writer of
the root can neither alter an entry nor re-chain the trail unseen; truncating the newest entries keeps valid
signatures, so it is caught by a witness of the head: the local witness in the user's configuration folder
(written at every append) or an external one (``ppdp audit head`` printed, stored elsewhere, and given back to
``verify --expect-head``).

A published entry lists every file of its release folder with its SHA-256 (``files``): ``verify`` checks the
folder's exact contents, and that no release folder exists without its entry.

Crash-safe publishing (:func:`ppdp.tasks.publish.publish_release`): a ``pending`` entry, with the staged
folder's file list, is written before the release folder is renamed into place, and resolved by a later entry
whose ``completes`` holds its ``seq``, with status ``published`` (the folder is in place) or ``rolled_back`` (it
is not). An unresolved pending entry and a ``.staging-*`` leftover are findings; :func:`ppdp.tasks.recovery.recover`
(``ppdp audit recover``) resolves them. Publishing and recovery hold the root's publish lock
(:func:`ppdp.tasks.staging.publish_lock`); staging folders, the lock and the crash-test hook are
:mod:`ppdp.tasks.staging`'s.

Entries hold ids, hashes, statuses and reasons, never data values. The input is named by its keyed digest
(``input_digest``, ``input_key_id``: :mod:`ppdp.tasks.digests`), never by its SHA-256, which would confirm a guessed
input; the unkeyed SHA-256 is in the publisher's private record (:mod:`ppdp.tasks.private_record`), against which
``verify`` checks each digest where the key is. A refused differential_privacy run records its reason there too
(its entry says only that it was withheld). ``verify`` never raises on a damaged database or release folder: every
problem is one line naming the file and the entry.

Trails written before keyed digests (a column ``input_sha256``) are read and verified as they are; ppdp appends to
none of them.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
import secrets
import socket
import sqlite3
import stat
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeGuard, cast

from pydantic import ValidationError

from ppdp.schemas.federate import FederatedManifest
from ppdp.schemas.manifest import AuditEntry, AuditStatus, Manifest
from ppdp.tasks import interrupt, keys
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.ingest import file_sha256
from ppdp.tasks.latest import LATEST_NAME, latest_of, read_latest
from ppdp.tasks.latest import is_leftover as is_latest_leftover
from ppdp.tasks.layout import (
    AUX_FOLDERS,
    ensure_root,
    folder_listing,
    is_data_file,
    is_part_file,
    parts_digest,
    read_parquet_metadata,
    release_folder,
)
from ppdp.tasks.staging import STAGING_PREFIX, RootBusy, fault_point, publish_lock

GENESIS = "0" * 64
DB_NAME = "audit.db"
SIGNATURE_DOMAIN = b"ppdp audit entry v1\n"
# every column but seq, in table order; all but entry_hash and signature are hashed (and so signed)
_TEXT_OR_NULL = {"spec_sha256", "input_digest", "input_key_id", "input_sha256", "output_sha256", "manifest_sha256",
                 "files", "flow_run_id"}
_INT_OR_NULL = {"completes"}
_FIELDS = [
    "seq", "trail_id", "release_id", "dataset", "status", "completes", "reason", "spec_sha256", "input_digest",
    "input_key_id", "output_sha256", "manifest_sha256", "files", "started_at", "finished_at", "user", "host",
    "flow_run_id", "key_id", "prev_hash",
]
_COLUMNS = [*_FIELDS, "entry_hash", "signature"]
# a trail written before keyed input digests: the input's unkeyed SHA-256 in input_sha256 (read, never appended to)
_LEGACY_FIELDS = [*_FIELDS[:8], "input_sha256", *_FIELDS[10:]]
_LEGACY_COLUMNS = [*_LEGACY_FIELDS, "entry_hash", "signature"]
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY,
    {", ".join(f"{f} {'INTEGER' if f in _INT_OR_NULL else 'TEXT'}" for f in _COLUMNS[1:])}
);
CREATE TABLE IF NOT EXISTS head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    entry_hash TEXT NOT NULL
);
"""
_HEAD_COLUMNS = ["id", "seq", "entry_hash"]
_ROOT_FILES = {DB_NAME, f"{DB_NAME}-journal", f"{DB_NAME}-wal", f"{DB_NAME}-shm"}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_RESOLVES = ("published", "rolled_back")


class AuditDamaged(PublishError):
    """The audit trail cannot be read as a trail (damaged database): exit 1, like a failed verification."""

    exit_code = 1


def db_path(root: Path) -> Path:
    return Path(root) / DB_NAME


def _connect_rw(root: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path(root), timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.executescript(_SCHEMA)
    return conn


def _connect_ro(root: Path) -> sqlite3.Connection:
    """Read-only: verifying or listing never creates, repairs or locks the database for writing."""
    uri = db_path(root).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def trail_id(root: Path) -> str | None:
    """The trail id of the root's audit trail (fixed by its first entry), None when the root has no entry yet. One
    read-only query: for callers that need the id only (the series ledger's file name), not the whole trail."""
    if not db_path(Path(root)).exists():
        return None
    try:
        with closing(_connect_ro(Path(root))) as conn:
            row = conn.execute("SELECT trail_id FROM entries ORDER BY seq LIMIT 1").fetchone()
    except sqlite3.Error as exc:
        raise PublishError(f"{db_path(Path(root))}: cannot read the audit trail ({_sqlite_reason(exc)})") from None
    return None if row is None else str(row["trail_id"])


# -- hashing and signing ------------------------------------------------------------------------------------
def _legacy(names) -> bool:
    """Whether a row (or a table's columns) is of a trail written before keyed input digests."""
    return "input_sha256" in names and "input_digest" not in names


def _columns_of(row: dict) -> list[str]:
    return _LEGACY_COLUMNS if _legacy(row) else _COLUMNS


def compute_hash(fields: dict[str, object]) -> str:
    """SHA-256 of the canonical JSON of every hashed field (values exactly as stored in the database)."""
    payload = {f: fields.get(f) for f in (_LEGACY_FIELDS if _legacy(fields) else _FIELDS)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def signed_message(entry_hash: str) -> bytes:
    return SIGNATURE_DOMAIN + entry_hash.encode("ascii")


def files_json(files: dict[str, str] | None) -> str | None:
    return None if files is None else json.dumps(dict(sorted(files.items())), separators=(",", ":"))


def _who() -> tuple[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return user, socket.gethostname()


def head_of(row: dict) -> dict:
    """The signed head (what ``ppdp audit head`` prints and ``verify --expect-head`` reads back)."""
    return {"trail_id": row["trail_id"], "seq": row["seq"], "entry_hash": row["entry_hash"],
            "key_id": row["key_id"], "signature": row["signature"]}


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
    if (status == "rolled_back" and completes is None) or (completes is not None and status not in _RESOLVES):
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
    try:
        root.mkdir(parents=True, exist_ok=True)
        with closing(_connect_rw(root)) as conn:
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
                    f"INSERT INTO entries ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})",
                    [fields[c] for c in _COLUMNS],
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
    keys.record_local_witness(head_of(fields))
    return _entry_from_row(fields)


def _require_current_format(conn: sqlite3.Connection, root: Path) -> None:
    for table, expected in (("entries", _COLUMNS), ("head", _HEAD_COLUMNS)):
        found = [r["name"] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]
        if found == _LEGACY_COLUMNS:
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
    from ppdp.tasks.private_record import REFUSAL_WITHHELD, Record

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
                import sys

                sys.stderr.write(f"ppdp: warning: {exc}\n")
    return entry


# -- reading ------------------------------------------------------------------------------------------------
@dataclass
class _Trail:
    """What the database holds, read without trusting it; ``problems`` are findings about the database."""

    rows: list[dict] = field(default_factory=list)
    head: dict | None = None
    problems: list[str] = field(default_factory=list)
    has_head_table: bool = True


def _read_trail(root: Path) -> _Trail:
    trail = _Trail()
    name = DB_NAME
    try:
        with closing(_connect_ro(root)) as conn:
            try:
                check = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
            except sqlite3.DatabaseError as exc:
                trail.problems.append(f"{name}: not a readable SQLite database ({_sqlite_reason(exc)})")
                return trail
            if check != ["ok"]:
                trail.problems.append(f"{name}: SQLite integrity check failed (damaged or truncated file)")
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "entries" not in tables:
                trail.problems.append(f"{name}: table entries is missing")
            else:
                cols = [r["name"] for r in conn.execute("PRAGMA table_info(entries)").fetchall()]
                expected = _LEGACY_COLUMNS if _legacy(cols) else _COLUMNS
                extra = [c for c in cols if c not in expected]
                missing = [c for c in expected if c not in cols]
                if extra:
                    trail.problems.append(f"{name}: table entries has unexpected columns {', '.join(extra)} "
                                          "(not covered by any signature)")
                if missing:
                    trail.problems.append(f"{name}: table entries lacks columns {', '.join(missing)} "
                                          "(an unsigned trail, or altered)")
                order = "seq" if "seq" in cols else "rowid"
                trail.rows = [dict(r) for r in conn.execute(f"SELECT * FROM entries ORDER BY {order}").fetchall()]
            if "head" not in tables:
                trail.has_head_table = False
                trail.problems.append(f"{name}: table head is missing")
            else:
                cols = [r["name"] for r in conn.execute("PRAGMA table_info(head)").fetchall()]
                if cols != _HEAD_COLUMNS:
                    trail.problems.append(f"{name}: table head has columns {', '.join(cols)}, expected "
                                          f"{', '.join(_HEAD_COLUMNS)}")
                rows = [dict(r) for r in conn.execute("SELECT * FROM head").fetchall()]
                if len(rows) > 1:
                    trail.problems.append(f"{name}: table head holds {len(rows)} rows, expected one")
                trail.head = rows[0] if rows else None
    except sqlite3.Error as exc:
        trail.problems.append(f"{name}: cannot be read ({_sqlite_reason(exc)})")
    return trail


def _sqlite_reason(exc: Exception) -> str:
    return " ".join(str(exc).split())[:120] or type(exc).__name__


def _entry_from_row(row: dict) -> AuditEntry:
    data = {c: row.get(c) for c in _columns_of(row)}
    if isinstance(data["files"], str):
        data["files"] = json.loads(data["files"])
    return AuditEntry.model_validate(data)


def _label(row: dict) -> str:
    return f"entry {_safe(row.get('seq'))} (release {_safe(row.get('release_id'))})"


def _safe(value: object, limit: int = 80) -> str:
    """A database value fit for one line of a report (the database may be hostile)."""
    text = value if isinstance(value, str) else repr(value) if isinstance(value, int | float) else (
        "?" if value is None else f"<{type(value).__name__}>")
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def list_entries(root: Path) -> list[AuditEntry]:
    """Every entry, oldest first, as stored (signatures are checked by :func:`verify`, not here).

    Raises :class:`PublishError` when there is no trail and :class:`AuditDamaged` (one line) when the
    database cannot be read as a trail."""
    root = Path(root)
    if not db_path(root).is_file():
        raise PublishError(f"no audit trail at {db_path(root)}")
    trail = _read_trail(root)
    if trail.problems:
        raise AuditDamaged(f"audit trail {db_path(root)} is damaged ({trail.problems[0]}); run ppdp audit verify")
    entries = []
    for row in trail.rows:
        try:
            entries.append(_entry_from_row(row))
        except (ValidationError, ValueError, TypeError):
            raise AuditDamaged(f"audit trail {db_path(root)} is damaged ({_label(row)} cannot be read); run "
                               "ppdp audit verify") from None
    return entries


def find_entries(root: Path, release_id: str) -> list[AuditEntry]:
    return [e for e in list_entries(root) if e.release_id == release_id]


# -- verifying ----------------------------------------------------------------------------------------------
def verify(root: Path, expect_head: dict | None = None, notes: list[str] | None = None) -> list[str]:
    """Every problem found, one line each naming the file and the entry; empty when the trail is intact.

    Checks every signature against the trusted keys, the hash chain, the head record, the local witness and
    ``expect_head`` (an external witness), every published release folder's exact file list and hashes, and
    that every release folder on disk has its entry; where this machine holds the publisher's series key, each
    entry's keyed input digest against the publisher's private record of its run (:func:`_check_digests`).
    ``notes``, when given, receives one line per thing that was not checked and why (no finding). Raises
    :class:`PublishError` only when there is no trail and nothing that should have one (no release folder, no
    witness given)."""
    root = Path(root)
    problems: list[str] = []
    if not os.path.lexists(db_path(root)):
        on_disk = _scan_root(root, expected=set()) if root.is_dir() else []
        if not on_disk and expect_head is None:
            raise PublishError(f"no audit trail at {db_path(root)}")
    try:
        _verify(root, expect_head, problems, notes if notes is not None else [])
    except Exception as exc:  # noqa: BLE001 - last resort: a damaged root is a finding, never a traceback
        problems.append(f"{DB_NAME}: verification stopped early ({type(exc).__name__})")
    return problems


def _verify(root: Path, expect_head: dict | None, problems: list[str], notes: list[str]) -> None:
    trusted, key_problems = keys.trusted_keys()
    if not os.path.lexists(db_path(root)):
        problems.append(f"{DB_NAME}: the audit trail is missing")
        if expect_head is not None:
            problems.append(f"{DB_NAME}: the trail witnessed by --expect-head (entry {_safe(expect_head.get('seq'))}) "
                            "is gone")
        problems.extend(_scan_root(root, expected=set()) if root.is_dir() else [])
        return
    if not db_path(root).is_file() or db_path(root).is_symlink():
        problems.append(f"{DB_NAME}: is not a regular file")
        return
    problems.extend(f"audit key: {p}" for p in key_problems)
    trail = _read_trail(root)
    problems.extend(trail.problems)
    rows = trail.rows
    good = _check_chain(rows, trusted, problems)
    _check_head_record(trail, problems)
    by_seq = {r["seq"]: r for r in rows if isinstance(r.get("seq"), int)}
    last_seq = rows[-1]["seq"] if rows and isinstance(rows[-1].get("seq"), int) else 0
    trail_id = rows[0].get("trail_id") if rows else None
    if isinstance(trail_id, str):
        local = keys.read_local_witness(trail_id)
        if local is not None:
            label = f"the local witness {keys.witness_path(trail_id)}"
            if local.get("seq") == -1:
                problems.append(f"{DB_NAME}: {label} is unreadable")
            else:
                _compare_head(local, label, trail_id, by_seq, last_seq, trusted, problems)
    if expect_head is not None:
        _compare_head(expect_head, "the expected head", trail_id, by_seq, last_seq, trusted, problems)
    expected = _check_releases(root, rows, good, problems)
    _check_digests(rows, good, problems, notes)
    resolved = {r.get("completes") for r in rows}
    staged = {f"{STAGING_PREFIX}{r.get('release_id')}": r for r in rows
              if r.get("status") == "pending" and r.get("seq") not in resolved}
    problems.extend(_scan_root(root, expected, staged, latest=rows))


def _check_digests(rows: list[dict], good: set[int], problems: list[str], notes: list[str]) -> None:
    """Each sound entry's keyed input digest recomputed, with this machine's digest key, from the input's SHA-256
    in the publisher's private record of the run (:mod:`ppdp.tasks.private_record`): a digest that differs is a
    finding. What cannot be checked (no key here, another key, no private record) is one note line each."""
    from ppdp.tasks import digests
    from ppdp.tasks.private_record import read_record

    sound = [r for r in rows if r.get("seq") in good]
    legacy = sum(1 for r in sound if _legacy(r) and r.get("input_sha256"))
    if legacy:
        notes.append(f"input: {legacy} entries name their input by its unkeyed SHA-256 (written before keyed "
                     "digests): nothing to check")
    named = [r for r in sound if isinstance(r.get("input_digest"), str)]
    if not named:
        return
    key = digests.local_key()
    if key is None:
        notes.append(f"input digests of {len(named)} entries not checked: {digests.NO_KEY}")
        return
    mine = digests.key_id(key)
    other = sum(1 for r in named if r.get("input_key_id") != mine)
    checked = unrecorded = 0
    for row in (r for r in named if r.get("input_key_id") == mine):
        record = read_record(str(row.get("trail_id")), str(row.get("release_id")))
        if record is None or record.input_sha256 is None:
            unrecorded += 1
            continue
        result = digests.check(record.input_sha256, row["input_digest"], row["input_key_id"], key)
        if result.verdict == "differs":
            problems.append(f"{DB_NAME}: {_label(row)}: its input digest is not the keyed digest of the input its "
                            "private record names (the entry or the record was altered)")
        else:
            checked += 1
    if other:
        notes.append(f"input digests of {other} entries not checked: made under another key than this machine's "
                     f"series key gives ({mine})")
    if unrecorded:
        notes.append(f"input digests of {unrecorded} entries not checked: no private record of their run on this "
                     "machine (<config>/records/<trail id>/<release id>.json)")
    if checked:
        notes.append(f"input digests of {checked} entries checked against the publisher's private records")


def _check_chain(rows: list[dict], trusted: dict, problems: list[str]) -> set[int]:
    """Types, hash chain, trail id and signatures; returns the seqs of entries that are sound (usable for the
    release checks)."""
    good: set[int] = set()
    prev: str | None  # the previous row's entry_hash, as read (None in a damaged trail)
    prev, expected_seq = GENESIS, 1
    trail_id = rows[0].get("trail_id") if rows else None
    unknown_keys: set[str | None] = set()
    for row in rows:
        label = f"{DB_NAME}: {_label(row)}"
        seq = row.get("seq")
        typed = _check_types(row, label, problems)
        if isinstance(seq, int):
            if seq != expected_seq:
                problems.append(f"{label}: entries {expected_seq}..{seq - 1} are missing before it" if seq >
                                expected_seq else f"{label}: out of sequence (expected entry {expected_seq})")
            expected_seq = seq + 1
        if row.get("prev_hash") != prev:
            problems.append(f"{label}: previous-entry hash does not match the entry before it")
        if row.get("trail_id") != trail_id:
            problems.append(f"{label}: belongs to another trail")
        sound = typed
        if typed:
            entry_hash = compute_hash(row)
            if entry_hash != row.get("entry_hash"):
                problems.append(f"{label}: contents altered (entry hash mismatch)")
                sound = False
            key = trusted.get(row.get("key_id"))
            if key is None:
                sound = False
                if row.get("key_id") not in unknown_keys:
                    problems.append(f"{label}: signed by an unknown key {_safe(row.get('key_id'))} (not the "
                                    f"configured key nor one in ${keys.ENV_TRUSTED})")
                    unknown_keys.add(row.get("key_id"))
                else:
                    problems.append(f"{label}: signed by the same unknown key")
            elif not key.check(signed_message(str(row.get("entry_hash"))), row.get("signature")):
                problems.append(f"{label}: contents altered (signature invalid)")
                sound = False
        if sound and isinstance(seq, int):
            good.add(seq)
        prev = row.get("entry_hash")
    _check_pending(rows, problems)
    return good


def _check_types(row: dict, label: str, problems: list[str]) -> bool:
    ok = True
    columns = _columns_of(row)
    for col in columns:
        if col not in row:
            continue  # reported once for the table
        value = row[col]
        if col == "seq" or col in _INT_OR_NULL:
            want = "integer"
            good = isinstance(value, int) or (value is None and col != "seq")
        else:
            want = "text"
            good = isinstance(value, str) or (value is None and col in _TEXT_OR_NULL)
        if not good:
            got = "NULL" if value is None else {bytes: "blob", int: "integer", float: "real", str: "text"}.get(
                type(value), type(value).__name__)
            problems.append(f"{label}: field {col} is {got}, expected {want}")
            ok = False
    if any(c not in row for c in columns):
        return False
    if ok:
        try:
            _entry_from_row(row)
        except (ValidationError, ValueError, TypeError) as exc:
            where = ""
            if isinstance(exc, ValidationError) and exc.errors():
                where = " (field " + ".".join(str(p) for p in exc.errors()[0]["loc"][:1]) + ")"
            problems.append(f"{label}: does not match the audit entry schema{where}")
            ok = False
    return ok


def _check_pending(rows: list[dict], problems: list[str]) -> None:
    by_seq = {r.get("seq"): r for r in rows}
    resolved: dict[int, int | None] = {}  # pending seq -> the seq of the entry completing it, as read
    for row in rows:
        target = row.get("completes")
        if target is None:
            continue
        label = f"{DB_NAME}: {_label(row)}"
        pending = by_seq.get(target)
        if row.get("status") not in _RESOLVES:
            problems.append(f"{label}: status {_safe(row.get('status'))} cannot complete a pending entry")
        elif not isinstance(target, int) or pending is None or pending.get("status") != "pending" or (
                isinstance(row.get("seq"), int) and target >= row["seq"]):
            problems.append(f"{label}: completes entry {_safe(target)}, which is not an earlier pending entry")
        elif (pending.get("release_id"), pending.get("dataset")) != (row.get("release_id"), row.get("dataset")):
            problems.append(f"{label}: completes entry {target}, a pending entry of another release")
        elif target in resolved:
            problems.append(f"{label}: completes entry {target}, already completed by entry {resolved[target]}")
        else:
            resolved[target] = row.get("seq")
            if row.get("status") == "published" and row.get("files") != pending.get("files"):
                problems.append(f"{label}: published files differ from those of its pending entry {target}")
    for row in rows:
        if row.get("status") == "pending" and row.get("seq") not in resolved:
            problems.append(f"{DB_NAME}: {_label(row)}: pending, never completed or rolled back (an interrupted "
                            "or running publish)")


def _check_head_record(trail: _Trail, problems: list[str]) -> None:
    rows = trail.rows
    if not trail.has_head_table:
        return  # reported with the tables
    if trail.head is None:
        if rows:
            problems.append(f"{DB_NAME}: the head record is missing")
        return
    last = rows[-1] if rows else {"seq": 0, "entry_hash": GENESIS}
    if trail.head.get("seq") != last.get("seq") or trail.head.get("entry_hash") != last.get("entry_hash"):
        problems.append(f"{DB_NAME}: the head record names entry {_safe(trail.head.get('seq'))} but the trail ends "
                        f"at entry {_safe(last.get('seq'))}: entries were removed or the head was altered")


def _compare_head(head: dict, label: str, trail_id: object, by_seq: dict[int, dict], last_seq: int,
                  trusted: dict, problems: list[str]) -> None:
    seq, entry_hash = head.get("seq"), head.get("entry_hash")
    if not isinstance(seq, int) or not isinstance(entry_hash, str):
        problems.append(f"{DB_NAME}: {label} is not a head printed by ppdp audit head")
        return
    key = trusted.get(head.get("key_id"))
    if key is None:
        problems.append(f"{DB_NAME}: {label} (entry {seq}) is signed by an unknown key {_safe(head.get('key_id'))}")
    elif not key.check(signed_message(entry_hash), head.get("signature")):
        problems.append(f"{DB_NAME}: {label} (entry {seq}) has an invalid signature")
    if head.get("trail_id") != trail_id:
        problems.append(f"{DB_NAME}: {label} belongs to trail {_safe(head.get('trail_id'))}, this is trail "
                        f"{_safe(trail_id)}: the trail was replaced")
        return
    if seq > last_seq:
        problems.append(f"{DB_NAME}: trail rewound or truncated: {label} records entry {seq} but the trail ends "
                        f"at entry {last_seq}")
        return
    row = by_seq.get(seq)
    if row is None:
        problems.append(f"{DB_NAME}: entry {seq}, recorded by {label}, is missing")
    elif row.get("entry_hash") != entry_hash:
        problems.append(f"{DB_NAME}: {_label(row)}: trail forked or rewritten: differs from {label}")


def parse_head(text: str) -> dict:
    """A head printed by ``ppdp audit head``, given as that text or as the path of a file holding it."""
    raw = text.strip()
    if not raw.startswith("{"):
        try:
            raw = Path(raw).expanduser().read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError, ValueError):
            raise PublishError("--expect-head: neither a head printed by ppdp audit head nor a readable file "
                               "holding one") from None
    try:
        head = json.loads(raw)
    except ValueError:
        head = None
    if not isinstance(head, dict) or not {"trail_id", "seq", "entry_hash", "key_id", "signature"} <= set(head):
        raise PublishError("--expect-head: not a head printed by ppdp audit head (JSON with trail_id, seq, "
                           "entry_hash, key_id, signature)")
    return head


def signed_head(root: Path) -> dict:
    """The head of a trail whose chain and signatures verify (the release files are not checked here)."""
    root = Path(root)
    if not db_path(root).is_file():
        raise PublishError(f"no audit trail at {db_path(root)}")
    trusted, key_problems = keys.trusted_keys()
    trail = _read_trail(root)
    problems = list(trail.problems) + [f"audit key: {p}" for p in key_problems]
    _check_chain(trail.rows, trusted, problems)
    _check_head_record(trail, problems)
    if problems:
        raise AuditDamaged(f"will not vouch for this trail: {problems[0]}"
                           + (f" (and {len(problems) - 1} more; run ppdp audit verify)" if len(problems) > 1 else ""))
    if not trail.rows:
        raise PublishError(f"audit trail {db_path(root)} has no entries yet")
    return head_of(trail.rows[-1])


# -- release folders ----------------------------------------------------------------------------------------
def _valid_name(name: object) -> TypeGuard[str]:
    return (isinstance(name, str) and name not in ("", ".", "..") and not name.startswith(".")
            and not any(c in name for c in "/\\\0"))


def _valid_key(key: tuple[object, object]) -> TypeGuard[tuple[str, str]]:
    """A (dataset, release id) pair read from the trail that names a folder: two plain folder names."""
    return _valid_name(key[0]) and _valid_name(key[1])


def _check_releases(root: Path, rows: list[dict], good: set[int], problems: list[str]) -> set[tuple[str, str]]:
    """Check every published entry's folder; return the (dataset, release) folders entries account for."""
    expected: set[tuple[str, str]] = set()
    published: dict[tuple[str, str], int | None] = {}  # release -> the seq of its published entry, as read
    resolved = {r.get("completes") for r in rows if r.get("completes") is not None}
    for row in rows:
        status, key = row.get("status"), (row.get("dataset"), row.get("release_id"))
        if status not in ("published", "pending", "rolled_back"):
            continue
        label = _label(row)
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
    label = _label(row)
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
        out.append(f"{rel}/{_safe(name)}: {label}: not in the signed file list (added after publishing)")
    for name in sorted(set(signed) - present):
        out.append(f"{rel}/{_safe(name)}: {label}: file is missing (in the signed file list)")
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
    name = "input_sha256" if _legacy(row) else "input_digest"
    if data.get(name) != row.get(name) or (not _legacy(row) and data.get("input_key_id") != row.get("input_key_id")):
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
            out.append(f"{label}/{_safe(run.name)}: unexpected {'link' if run.is_symlink() else 'file'} in the "
                       f"{what} folder")
            continue
        try:
            files = sorted(os.scandir(run.path), key=lambda e: e.name)
        except OSError as exc:
            out.append(f"{label}/{_safe(run.name)}: unreadable ({exc.strerror or type(exc).__name__})")
            continue
        for f in files:
            if f.name not in allowed or not f.is_file(follow_symlinks=False):
                out.append(f"{label}/{_safe(run.name)}/{_safe(f.name)}: unexpected in a {what} run's folder (only "
                           f"{', '.join(sorted(allowed))})")
    return out


def _scan_root(root: Path, expected: set[tuple[str, str]], staged: dict[str, dict] | None = None,
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
        if name in _ROOT_FILES or name.startswith(".ppdp-write-probe-"):
            continue
        if name.startswith(STAGING_PREFIX):
            pending = (staged or {}).get(name)
            out.append(f"{_safe(name)}: staging folder of an interrupted or running publish "
                       + (f"(pending {_label(pending)})" if pending else "(no audit entry covers it)"))
            continue
        if not item.is_dir(follow_symlinks=False):
            out.append(f"{_safe(name)}: unexpected {'link' if item.is_symlink() else 'file'} in the publish root")
            continue
        try:
            subs = sorted(os.scandir(item.path), key=lambda e: e.name)
        except OSError as exc:
            out.append(f"{_safe(name)}: dataset folder is unreadable ({exc.strerror or type(exc).__name__})")
            continue
        for sub in subs:
            if (name, sub.name) in expected:
                continue
            if sub.name == LATEST_NAME or is_latest_leftover(sub.name):
                out += _check_latest(root, name, sub, latest)
                continue
            if sub.name in AUX_FOLDERS and sub.is_dir(follow_symlinks=False):
                out += _scan_aux(Path(sub.path), f"{_safe(name)}/{sub.name}", AUX_FOLDERS[sub.name], sub.name)
                continue
            if sub.is_dir(follow_symlinks=False):
                out.append(f"{_safe(name)}/{_safe(sub.name)}: release {_safe(sub.name)} ({_safe(name)}) is on disk "
                           "but has no published audit entry")
            else:
                out.append(f"{_safe(name)}/{_safe(sub.name)}: unexpected file in a dataset folder (no audit entry)")
    return out


def _check_latest(root: Path, dataset: str, item: os.DirEntry[str], rows: list[dict] | None) -> list[str]:
    """A dataset's ``LATEST`` pointer (or a temporary file of an interrupted update of it), checked against the
    trail's ``rows`` (None: only its form)."""
    where = f"{_safe(dataset)}/{_safe(item.name)}"
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
    return latest_of(_read_trail(Path(root)).rows, dataset)


# -- pending entries: publishes not yet completed (see :mod:`ppdp.tasks.staging`) ----------------------------
def interrupted_publishes(root: Path) -> list[dict]:
    """Pending entries that no later entry completes, as stored (an interrupted publish, or a running one when
    the publish lock is not held)."""
    root = Path(root)
    if not db_path(root).is_file():
        return []
    rows = _read_trail(root).rows
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
        raise PublishError(f"publish root {root} holds an interrupted publish ({_label(rows[0])}{more}: pending, "
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
