"""The audit trail's storage: the SQLite database of a publish root (``<root>/audit.db``), its columns, the
hash and signature of an entry, and the trail read back without trusting it (see :mod:`ppdp.tasks.audit`)."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ppdp.schemas.manifest import AuditEntry
from ppdp.tasks.core.errors import PublishError

GENESIS = "0" * 64
DB_NAME = "audit.db"
SIGNATURE_DOMAIN = b"ppdp audit entry v1\n"
# every column but seq, in table order; all but entry_hash and signature are hashed (and so signed)
TEXT_OR_NULL = {"spec_sha256", "input_digest", "input_key_id", "input_sha256", "output_sha256", "manifest_sha256",
                "files", "flow_run_id"}
INT_OR_NULL = {"completes"}
FIELDS = [
    "seq", "trail_id", "release_id", "dataset", "status", "completes", "reason", "spec_sha256", "input_digest",
    "input_key_id", "output_sha256", "manifest_sha256", "files", "started_at", "finished_at", "user", "host",
    "flow_run_id", "key_id", "prev_hash",
]
COLUMNS = [*FIELDS, "entry_hash", "signature"]
# a trail written before keyed input digests: the input's unkeyed SHA-256 in input_sha256 (read, never appended to)
_LEGACY_FIELDS = [*FIELDS[:8], "input_sha256", *FIELDS[10:]]
LEGACY_COLUMNS = [*_LEGACY_FIELDS, "entry_hash", "signature"]
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY,
    {", ".join(f"{f} {'INTEGER' if f in INT_OR_NULL else 'TEXT'}" for f in COLUMNS[1:])}
);
CREATE TABLE IF NOT EXISTS head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    entry_hash TEXT NOT NULL
);
"""
HEAD_COLUMNS = ["id", "seq", "entry_hash"]
ROOT_FILES = {DB_NAME, f"{DB_NAME}-journal", f"{DB_NAME}-wal", f"{DB_NAME}-shm"}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
RESOLVES = ("published", "rolled_back")


class AuditDamaged(PublishError):
    """The audit trail cannot be read as a trail (damaged database): exit 1, like a failed verification."""

    exit_code = 1


def db_path(root: Path) -> Path:
    return Path(root) / DB_NAME


def connect_rw(root: Path) -> sqlite3.Connection:
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
def is_legacy(names) -> bool:
    """Whether a row (or a table's columns) is of a trail written before keyed input digests."""
    return "input_sha256" in names and "input_digest" not in names


def columns_of(row: dict) -> list[str]:
    return LEGACY_COLUMNS if is_legacy(row) else COLUMNS


def compute_hash(fields: dict[str, object]) -> str:
    """SHA-256 of the canonical JSON of every hashed field (values exactly as stored in the database)."""
    payload = {f: fields.get(f) for f in (_LEGACY_FIELDS if is_legacy(fields) else FIELDS)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def signed_message(entry_hash: str) -> bytes:
    return SIGNATURE_DOMAIN + entry_hash.encode("ascii")


def files_json(files: dict[str, str] | None) -> str | None:
    return None if files is None else json.dumps(dict(sorted(files.items())), separators=(",", ":"))


def head_of(row: dict) -> dict:
    """The signed head (what ``ppdp audit head`` prints and ``verify --expect-head`` reads back)."""
    return {"trail_id": row["trail_id"], "seq": row["seq"], "entry_hash": row["entry_hash"],
            "key_id": row["key_id"], "signature": row["signature"]}


# -- reading ------------------------------------------------------------------------------------------------
@dataclass
class Trail:
    """What the database holds, read without trusting it; ``problems`` are findings about the database."""

    rows: list[dict] = field(default_factory=list)
    head: dict | None = None
    problems: list[str] = field(default_factory=list)
    has_head_table: bool = True


def read_trail(root: Path) -> Trail:
    trail = Trail()
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
                expected = LEGACY_COLUMNS if is_legacy(cols) else COLUMNS
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
                if cols != HEAD_COLUMNS:
                    trail.problems.append(f"{name}: table head has columns {', '.join(cols)}, expected "
                                          f"{', '.join(HEAD_COLUMNS)}")
                rows = [dict(r) for r in conn.execute("SELECT * FROM head").fetchall()]
                if len(rows) > 1:
                    trail.problems.append(f"{name}: table head holds {len(rows)} rows, expected one")
                trail.head = rows[0] if rows else None
    except sqlite3.Error as exc:
        trail.problems.append(f"{name}: cannot be read ({_sqlite_reason(exc)})")
    return trail


def _sqlite_reason(exc: Exception) -> str:
    return " ".join(str(exc).split())[:120] or type(exc).__name__


def entry_from_row(row: dict) -> AuditEntry:
    data = {c: row.get(c) for c in columns_of(row)}
    if isinstance(data["files"], str):
        data["files"] = json.loads(data["files"])
    return AuditEntry.model_validate(data)


def row_label(row: dict) -> str:
    return f"entry {safe(row.get('seq'))} (release {safe(row.get('release_id'))})"


def safe(value: object, limit: int = 80) -> str:
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
    trail = read_trail(root)
    if trail.problems:
        raise AuditDamaged(f"audit trail {db_path(root)} is damaged ({trail.problems[0]}); run ppdp audit verify")
    entries = []
    for row in trail.rows:
        try:
            entries.append(entry_from_row(row))
        except (ValidationError, ValueError, TypeError):
            raise AuditDamaged(f"audit trail {db_path(root)} is damaged ({row_label(row)} cannot be read); run "
                               "ppdp audit verify") from None
    return entries


def find_entries(root: Path, release_id: str) -> list[AuditEntry]:
    return [e for e in list_entries(root) if e.release_id == release_id]
