"""The audit trail: one SQLite database per publish root (``<root>/audit.db``), one row per run.

Tamper evidence: each entry stores the SHA-256 of the previous entry (a hash chain) and its own hash over all
its fields; a one-row ``head`` table holds the last sequence number and hash, updated in the same transaction,
so that removing the newest entries is detected too. ``verify`` recomputes the chain and, for every published
release, the hashes of its files. Entries hold ids, hashes, statuses and reasons, never data values.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import socket
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from ppdp.schemas.manifest import AuditEntry, Status
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.ingest import file_sha256
from ppdp.tasks.publish import ensure_root, load_manifest, manifest_sha256, read_parquet_metadata, release_folder

GENESIS = "0" * 64
DB_NAME = "audit.db"
_FIELDS = [
    "seq", "release_id", "dataset", "status", "reason", "spec_sha256", "input_sha256", "output_sha256",
    "manifest_sha256", "started_at", "finished_at", "user", "host", "flow_run_id", "prev_hash",
]
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY,
    {", ".join(f"{f} TEXT" for f in _FIELDS[1:])},
    entry_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    entry_hash TEXT NOT NULL
);
"""


def db_path(root: Path) -> Path:
    return Path(root) / DB_NAME


def _connect(root: Path, create: bool) -> sqlite3.Connection:
    path = db_path(root)
    if not create and not path.is_file():
        raise PublishError(f"no audit trail at {path}")
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    if create:
        conn.executescript(_SCHEMA)
    return conn


def compute_hash(fields: dict[str, object]) -> str:
    payload = {f: fields.get(f) for f in _FIELDS}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _who() -> tuple[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return user, socket.gethostname()


def append_entry(
    root: Path,
    *,
    release_id: str,
    dataset: str,
    status: Status,
    reason: str,
    started_at: datetime,
    spec_sha256: str | None = None,
    input_sha256: str | None = None,
    output_sha256: str | None = None,
    manifest_sha256: str | None = None,
    flow_run_id: str | None = None,
) -> AuditEntry:
    """Append one entry to the chain (serialized by an immediate transaction)."""
    user, host = _who()
    fields: dict[str, object] = {
        "release_id": release_id,
        "dataset": dataset,
        "status": status,
        "reason": " ".join(reason.split())[:2000],
        "spec_sha256": spec_sha256,
        "input_sha256": input_sha256,
        "output_sha256": output_sha256,
        "manifest_sha256": manifest_sha256,
        "started_at": started_at.astimezone(UTC).isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "user": user,
        "host": host,
        "flow_run_id": flow_run_id,
    }
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        with closing(_connect(root, create=True)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                last = conn.execute("SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
                fields["seq"] = (last["seq"] + 1) if last else 1
                fields["prev_hash"] = last["entry_hash"] if last else GENESIS
                fields["entry_hash"] = compute_hash(fields)
                cols = [*_FIELDS, "entry_hash"]
                conn.execute(
                    f"INSERT INTO entries ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                    [fields[c] for c in cols],
                )
                conn.execute(
                    "INSERT INTO head (id, seq, entry_hash) VALUES (1, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, entry_hash = excluded.entry_hash",
                    (fields["seq"], fields["entry_hash"]),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    except (sqlite3.Error, OSError) as exc:
        raise PublishError(f"cannot write the audit trail {db_path(root)} ({exc})") from None
    return AuditEntry.model_validate(fields)


def list_entries(root: Path) -> list[AuditEntry]:
    with closing(_connect(root, create=False)) as conn:
        rows = conn.execute("SELECT * FROM entries ORDER BY seq").fetchall()
    return [AuditEntry.model_validate(dict(r)) for r in rows]


def find_entries(root: Path, release_id: str) -> list[AuditEntry]:
    return [e for e in list_entries(root) if e.release_id == release_id]


def verify(root: Path) -> list[str]:
    """Every problem found, one line each naming the entry or release; empty when the trail is intact."""
    root = Path(root)
    problems: list[str] = []
    try:
        with closing(_connect(root, create=False)) as conn:
            rows = [dict(r) for r in conn.execute("SELECT * FROM entries ORDER BY seq").fetchall()]
            head = conn.execute("SELECT seq, entry_hash FROM head WHERE id = 1").fetchone()
    except sqlite3.Error as exc:
        return [f"audit trail {db_path(root)} is unreadable ({exc})"]
    prev, expected_seq = GENESIS, 1
    for row in rows:
        seq = row["seq"]
        label = f"entry {seq} (release {row['release_id']})"
        if seq != expected_seq:
            problems.append(f"entries {expected_seq}..{seq - 1} are missing before {label}")
        if row["prev_hash"] != prev:
            problems.append(f"{label}: previous-entry hash does not match entry {seq - 1}")
        if compute_hash(row) != row["entry_hash"]:
            problems.append(f"{label}: contents altered (hash mismatch)")
        prev, expected_seq = row["entry_hash"], seq + 1
    if head is None:
        if rows:
            problems.append("audit head record is missing")
    elif not rows or head["seq"] != rows[-1]["seq"] or head["entry_hash"] != rows[-1]["entry_hash"]:
        last = rows[-1]["seq"] if rows else 0
        problems.append(f"entries after {last} were removed (head records entry {head['seq']})")

    published = {}
    for row in rows:
        if row["status"] != "published":
            continue
        published[(row["dataset"], row["release_id"])] = row
        problems.extend(_verify_release(root, row))
    for manifest in sorted(root.glob("*/*/manifest.json")):
        key = (manifest.parent.parent.name, manifest.parent.name)
        if key not in published:
            problems.append(f"release {key[1]} ({key[0]}) is on disk but has no published audit entry")
    return problems


def _verify_release(root: Path, row: dict) -> list[str]:
    label = f"entry {row['seq']} (release {row['release_id']})"
    folder = release_folder(root, row["dataset"], row["release_id"])
    data = folder / "data.parquet"
    if not data.is_file() or not (folder / "manifest.json").is_file():
        return [f"{label}: release files are missing from {folder}"]
    out = []
    if file_sha256(data) != row["output_sha256"]:
        out.append(f"{label}: data.parquet altered (SHA-256 differs from the audit trail)")
    try:
        manifest = load_manifest(folder)
        if manifest_sha256(manifest) != row["manifest_sha256"]:
            out.append(f"{label}: manifest.json altered (SHA-256 differs from the audit trail)")
        if manifest.output_sha256 != row["output_sha256"]:
            out.append(f"{label}: manifest.json names another data.parquet hash")
    except (ValueError, OSError):
        out.append(f"{label}: manifest.json is unreadable")
    try:
        meta = read_parquet_metadata(data)
        if meta.get("ppdp.manifest_sha256") != row["manifest_sha256"] or meta.get("ppdp.release_id") != row[
            "release_id"
        ]:
            out.append(f"{label}: data.parquet metadata does not match the manifest")
    except Exception:  # noqa: BLE001 - any unreadable Parquet is a finding, not a crash
        out.append(f"{label}: data.parquet is unreadable")
    return out


def record_refusal(root: Path | None, *, release_id: str, dataset: str | None, error: Exception,
                   started_at: datetime, flow_run_id: str | None = None, spec_sha256: str | None = None,
                   input_sha256: str | None = None) -> AuditEntry | None:
    """Audit a run that published nothing, when its publish root is known and writable; returns the entry."""
    if root is None:
        return None
    status = getattr(error, "status", "error")
    try:
        ensure_root(root)
        return append_entry(root, release_id=release_id, dataset=dataset or "unknown", status=status,
                            reason=str(error), started_at=started_at, flow_run_id=flow_run_id,
                            spec_sha256=spec_sha256, input_sha256=input_sha256)
    except PublishError:
        return None  # the root itself is the problem; the original error is what the user sees
