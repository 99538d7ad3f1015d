"""The audit trail: signed hash chain, head record, keys outside the root, and a verifier that never crashes.

Release folders (file lists, planted files, swapped data) are attacked in ``test_audit_attacks.py``; here the
trail is filled with entries of refused runs, which need no Prefect."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks import audit, keys
from ppdp.tasks.core.errors import PublishError

runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def fill(root, n=4, start=0):
    for i in range(start, start + n):
        audit.append_entry(root, release_id=f"r{i}", dataset="d", status="rejected", reason=f"gate {i}",
                           started_at=datetime.now(UTC))


def write_key(path: Path) -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return key


def sql(root, statement, *params):
    with closing_db(root) as conn:
        conn.execute(statement, params)


class closing_db:  # noqa: N801 - a tiny context manager: commit and close
    def __init__(self, root):
        self.conn = sqlite3.connect(Path(root) / "audit.db")

    def __enter__(self):
        return self.conn

    def __exit__(self, *exc):
        self.conn.commit()
        self.conn.close()


# -- the signed chain ---------------------------------------------------------------------------------------
def test_chain_links_signs_and_verifies(tmp_path):
    fill(tmp_path)
    entries = audit.list_entries(tmp_path)
    assert [e.seq for e in entries] == [1, 2, 3, 4]
    assert entries[0].prev_hash == audit.GENESIS
    assert all(b.prev_hash == a.entry_hash for a, b in zip(entries, entries[1:]))
    assert len({e.trail_id for e in entries}) == 1
    key = keys.signing_key(tmp_path)
    assert all(e.key_id == key.key_id and e.key_id.startswith("ed25519:") for e in entries)
    # the signature is an Ed25519 signature of the entry hash, by the key in the configuration folder
    public = key._private.public_key()
    for e in entries:
        public.verify(bytes.fromhex(e.signature), audit.signed_message(e.entry_hash))
    assert audit.verify(tmp_path) == []


def test_the_hash_covers_every_field(tmp_path):
    fill(tmp_path, 1)
    with closing_db(tmp_path) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM entries").fetchone())
    for name in audit.FIELDS:  # every field (seq, previous hash and key id included) changes the hash
        changed = dict(row, **{name: (row[name] + 1) if isinstance(row[name], int) else f"{row[name]}x"})
        assert audit.compute_hash(changed) != row["entry_hash"], name


@pytest.mark.parametrize("seq", [2, 4])
def test_deleting_a_row_is_detected(tmp_path, seq):
    fill(tmp_path)
    sql(tmp_path, "DELETE FROM entries WHERE seq = ?", seq)
    problems = audit.verify(tmp_path)
    assert problems and any(f"entry {seq}" in p or f"{seq}..{seq}" in p for p in problems)


def test_editing_a_row_is_detected(tmp_path):
    fill(tmp_path)
    sql(tmp_path, "UPDATE entries SET status = 'published' WHERE seq = 3")
    problems = audit.verify(tmp_path)
    assert any("entry 3" in p and "altered" in p for p in problems)


def test_missing_trail_is_an_error(tmp_path):
    with pytest.raises(PublishError, match="no audit trail"):
        audit.list_entries(tmp_path)
    with pytest.raises(PublishError, match="no audit trail"):
        audit.verify(tmp_path)
    assert ppdp("audit", "verify", "--root", tmp_path).exit_code == 2


def test_a_missing_trail_with_releases_on_disk_is_a_finding(tmp_path):
    (tmp_path / "d" / "r9").mkdir(parents=True)
    problems = audit.verify(tmp_path)
    assert "audit.db: the audit trail is missing" in problems
    assert any(p.startswith("d/r9: release r9") and "no published audit entry" in p for p in problems)


def test_entries_of_another_key_are_findings_and_trusted_keys_fix_that(tmp_path, monkeypatch):
    root = tmp_path / "root"
    fill(root, 2)
    other = tmp_path / "other" / "key.pem"
    write_key(other)
    monkeypatch.setenv("PPDP_AUDIT_KEY", str(other))
    fill(root, 2, start=2)
    problems = audit.verify(root)
    # the configured key is now the other one: the first two entries carry a key the verifier does not trust
    assert problems[0].startswith("audit.db: entry 1 (release r0): signed by an unknown key ed25519:")
    assert problems[1] == "audit.db: entry 2 (release r1): signed by the same unknown key"
    assert len(problems) == 2
    monkeypatch.setenv("PPDP_AUDIT_TRUSTED_KEYS", str(Path(os.environ["PPDP_CONFIG_DIR"]) / "audit-key.pem"))
    assert audit.verify(root) == []
    # a public key file is enough to trust (an auditor never holds the private key)
    public = tmp_path / "publisher.pub.pem"
    publisher = load_pem_private_key((Path(os.environ["PPDP_CONFIG_DIR"]) / "audit-key.pem").read_bytes(), None)
    public.write_bytes(publisher.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    monkeypatch.setenv("PPDP_AUDIT_TRUSTED_KEYS", str(public))
    assert audit.verify(root) == []


# -- keys ---------------------------------------------------------------------------------------------------
def test_default_key_is_created_once_outside_the_root_with_mode_0600(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config"
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(config))
    root = tmp_path / "root"
    fill(root, 1)
    err = capsys.readouterr().err
    key = config / "audit-key.pem"
    assert err.count("\n") == 1 and f"created the audit signing key {key}" in err
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(config.stat().st_mode) == 0o700
    fill(root, 2, start=1)
    assert capsys.readouterr().err == ""
    [entry] = {e.key_id for e in audit.list_entries(root)}
    assert entry == keys.configured_key().key_id
    assert sorted(p.name for p in root.iterdir()) == ["audit.db"]  # nothing of the key under the root
    assert audit.verify(root) == []


@pytest.mark.parametrize("where", ["xdg", "home"])
def test_default_key_follows_xdg_then_home(tmp_path, monkeypatch, where):
    monkeypatch.delenv("PPDP_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if where == "xdg":
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        expected = tmp_path / "xdg" / "ppdp" / "audit-key.pem"
    else:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        expected = tmp_path / "home" / ".config" / "ppdp" / "audit-key.pem"
    fill(tmp_path / "root", 1)
    assert expected.is_file() and keys.default_key_path() == expected


def test_verifying_never_creates_a_key(tmp_path, monkeypatch):
    fill(tmp_path / "root", 2)
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(tmp_path / "auditor"))
    problems = audit.verify(tmp_path / "root")
    assert "signed by an unknown key" in problems[0] and not (tmp_path / "auditor").exists()


def test_a_key_under_the_publish_root_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_key(root / "secrets" / "key.pem")
    monkeypatch.setenv("PPDP_AUDIT_KEY", str(root / "secrets" / "key.pem"))
    with pytest.raises(PublishError, match="lives under the publish root"):
        fill(root, 1)
    assert not (root / "audit.db").exists()
    monkeypatch.delenv("PPDP_AUDIT_KEY")
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(root / "config"))
    with pytest.raises(PublishError, match="lives under the publish root"):
        fill(root, 1)
    assert not (root / "config").exists() and not (root / "audit.db").exists()


def test_key_file_from_the_environment(tmp_path, monkeypatch):
    private = write_key(tmp_path / "keys" / "audit.pem")
    monkeypatch.setenv("PPDP_AUDIT_KEY", str(tmp_path / "keys" / "audit.pem"))
    fill(tmp_path / "root", 2)
    [key_id] = {e.key_id for e in audit.list_entries(tmp_path / "root")}
    assert key_id == keys.ed25519_key_id(private.public_key())
    assert audit.verify(tmp_path / "root") == []
    (tmp_path / "keys" / "audit.pem").write_text("not a key", encoding="utf-8")
    with pytest.raises(PublishError, match="not a PEM file"):
        fill(tmp_path / "root", 1)


def test_hmac_key_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PPDP_AUDIT_HMAC_KEY", "k" * 40)
    fill(tmp_path, 3)
    entries = audit.list_entries(tmp_path)
    assert all(e.key_id.startswith("hmac-sha256:") and len(e.signature) == 64 for e in entries)
    assert "k" * 40 not in (tmp_path / "audit.db").read_bytes().decode("latin-1")  # the secret is never stored
    assert audit.verify(tmp_path) == []
    monkeypatch.setenv("PPDP_AUDIT_HMAC_KEY", "j" * 40)
    assert all("signed by" in p and "unknown key hmac-sha256:" in p or "same unknown key" in p
               for p in audit.verify(tmp_path))
    monkeypatch.setenv("PPDP_AUDIT_HMAC_KEY", "short")
    with pytest.raises(PublishError, match="too short"):
        fill(tmp_path, 1)


# -- the witness --------------------------------------------------------------------------------------------
def rewind(root, keep: int) -> None:
    """What a writer of the root can do without the key: drop the newest entries and rewind the head row."""
    with closing_db(root) as conn:
        conn.execute("DELETE FROM entries WHERE seq > ?", (keep,))
        h = conn.execute("SELECT entry_hash FROM entries WHERE seq = ?", (keep,)).fetchone()[0]
        conn.execute("UPDATE head SET seq = ?, entry_hash = ?", (keep, h))


def test_rewinding_is_caught_by_the_local_witness_and_by_an_expected_head(tmp_path, monkeypatch):
    root = tmp_path / "root"
    fill(root, 4)
    printed = ppdp("audit", "head", "--root", root)
    assert printed.exit_code == 0 and printed.output.count("\n") == 1
    head = json.loads(printed.output)
    assert head["seq"] == 4 and set(head) == {"trail_id", "seq", "entry_hash", "key_id", "signature"}
    rewind(root, 3)
    [finding] = audit.verify(root)
    assert finding.startswith("audit.db: trail rewound or truncated: the local witness") and "entry 4" in finding
    # an auditor elsewhere has no local witness, only the stored head: given as text, or as a file
    monkeypatch.setenv("PPDP_AUDIT_TRUSTED_KEYS", str(Path(os.environ["PPDP_CONFIG_DIR"]) / "audit-key.pem"))
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(tmp_path / "auditor"))
    assert audit.verify(root) == []  # signatures alone cannot see a truncation: this is what the witness is for
    (tmp_path / "head.json").write_text(printed.output, encoding="utf-8")
    for given in (printed.output, tmp_path / "head.json"):
        result = ppdp("audit", "verify", "--root", root, "--expect-head", given)
        assert result.exit_code == 1 and "trail rewound or truncated: the expected head records entry 4" in (
            result.stderr), result.output


def test_expected_head_accepts_a_grown_trail_and_names_a_fork(tmp_path):
    root = tmp_path / "root"
    fill(root, 3)
    head = ppdp("audit", "head", "--root", root).output
    fill(root, 2, start=3)
    ok = ppdp("audit", "verify", "--root", root, "--expect-head", head)
    assert ok.exit_code == 0 and "expected head matched" in ok.output
    # a fork needs the key (a key holder rewrites history): signatures hold, the witness does not
    rewind(root, 2)
    # the local witness would see it too: remove it to show what the external witness alone catches
    keys.witness_path(json.loads(head)["trail_id"]).unlink()
    fill(root, 3, start=10)
    assert audit.verify(root) == []
    result = ppdp("audit", "verify", "--root", root, "--expect-head", head)
    assert result.exit_code == 1 and "audit.db: entry 3 (release r10): trail forked or rewritten" in result.stderr
    bad = ppdp("audit", "verify", "--root", root, "--expect-head", "{not json")
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "--expect-head" in bad.output


def test_expected_head_names_a_replaced_or_deleted_trail(tmp_path):
    root = tmp_path / "root"
    fill(root, 2)
    head = ppdp("audit", "head", "--root", root).output
    (root / "audit.db").unlink()
    fill(root, 3)  # a fresh trail, properly signed, in place of the witnessed one
    result = ppdp("audit", "verify", "--root", root, "--expect-head", head)
    assert result.exit_code == 1 and "the expected head belongs to trail" in result.stderr
    assert "the trail was replaced" in result.stderr
    (root / "audit.db").unlink()
    result = ppdp("audit", "verify", "--root", root, "--expect-head", head)
    assert result.exit_code == 1 and result.stderr.splitlines() == [
        "ppdp: audit: audit.db: the audit trail is missing",
        "ppdp: audit: audit.db: the trail witnessed by --expect-head (entry 2) is gone"]


def test_head_refuses_to_vouch_for_an_altered_trail(tmp_path):
    fill(tmp_path, 3)
    sql(tmp_path, "UPDATE entries SET reason = 'edited' WHERE seq = 2")
    result = ppdp("audit", "head", "--root", tmp_path)
    assert result.exit_code == 1 and result.output.count("\n") == 1 and "entry 2" in result.output
    assert "{" not in result.output


# -- pending entries (room for crash-safe publishing) -------------------------------------------------------
def test_pending_entries_must_be_resolved_once(tmp_path):
    files = {"data.parquet": "a" * 64, "manifest.json": "b" * 64}
    now = datetime.now(UTC)
    pending = audit.append_entry(tmp_path, release_id="p1", dataset="d", status="pending", reason="publishing",
                                 started_at=now, output_sha256="a" * 64, files=files)
    problems = audit.verify(tmp_path)
    assert problems == ["audit.db: entry 1 (release p1): pending, never completed or rolled back (an "
                        "interrupted or running publish)"]
    audit.append_entry(tmp_path, release_id="p1", dataset="d", status="rolled_back", reason="recovered",
                       started_at=now, completes=pending.seq)
    assert audit.verify(tmp_path) == []
    with pytest.raises(PublishError, match="resolved already"):
        audit.append_entry(tmp_path, release_id="p1", dataset="d", status="rolled_back", reason="again",
                           started_at=now, completes=pending.seq)
    with pytest.raises(PublishError, match="not a pending entry"):
        audit.append_entry(tmp_path, release_id="other", dataset="d", status="rolled_back", reason="x",
                           started_at=now, completes=pending.seq)
    (tmp_path / "d" / "p1").mkdir(parents=True)
    assert any("rolled back, but its release folder exists" in p for p in audit.verify(tmp_path))


# -- a damaged database: findings, never a traceback ---------------------------------------------------------
def _truncate_half(db: Path) -> None:
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])


CORRUPTIONS = {
    "empty file": lambda db: db.write_bytes(b""),
    "half-truncated": _truncate_half,
    "garbage bytes": lambda db: db.write_bytes(np.random.default_rng(0).bytes(16384)),
    "garbage after the header": lambda db: db.write_bytes(db.read_bytes()[:100] + np.random.default_rng(1).bytes(
        db.stat().st_size - 100)),
    "blob in a text field": lambda db: sql(db.parent, "UPDATE entries SET reason = X'00ff' WHERE seq = 2"),
    "text in an integer field": lambda db: sql(db.parent, "UPDATE entries SET completes = 'abc' WHERE seq = 2"),
    "bad status value": lambda db: sql(db.parent, "UPDATE entries SET status = 'bogus' WHERE seq = 2"),
    "extra column": lambda db: sql(db.parent, "ALTER TABLE entries ADD COLUMN note TEXT"),
    "missing column": lambda db: sql(db.parent, "ALTER TABLE entries DROP COLUMN signature"),
    "missing entries table": lambda db: sql(db.parent, "DROP TABLE entries"),
    "missing head table": lambda db: sql(db.parent, "DROP TABLE head"),
    "NULL in a required field": lambda db: sql(db.parent, "UPDATE entries SET release_id = NULL WHERE seq = 2"),
    "NULL signature": lambda db: sql(db.parent, "UPDATE entries SET signature = NULL WHERE seq = 2"),
    "audit.db is a folder": lambda db: (db.unlink(), db.mkdir()),
}
EXPECTED = {
    "empty file": ["audit.db: table entries is missing", "audit.db: table head is missing"],
    "blob in a text field": ["audit.db: entry 2 (release r1): field reason is blob, expected text"],
    "text in an integer field": ["audit.db: entry 2 (release r1): field completes is text, expected integer"],
    "bad status value": ["audit.db: entry 2 (release r1): does not match the audit entry schema (field status)"],
    "extra column": ["audit.db: table entries has unexpected columns note (not covered by any signature)"],
    "missing column": ["audit.db: table entries lacks columns signature (an unsigned trail, or altered)"],
    "missing head table": ["audit.db: table head is missing"],
    "NULL in a required field": ["audit.db: entry 2 (release ?): field release_id is NULL, expected text"],
    "NULL signature": ["audit.db: entry 2 (release r1): field signature is NULL, expected text"],
    "audit.db is a folder": ["audit.db: is not a regular file"],
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_a_damaged_database_is_reported_never_raised(tmp_path, case):
    fill(tmp_path, 40)
    db = tmp_path / "audit.db"
    CORRUPTIONS[case](db)
    before = db.read_bytes() if db.is_file() else None
    problems = audit.verify(tmp_path)
    assert problems, case
    for line in EXPECTED.get(case, []):
        assert line in problems, (case, problems)
    result = ppdp("audit", "verify", "--root", tmp_path)
    assert result.exit_code == 1, (case, result.output)
    lines = result.stderr.splitlines()
    assert lines == [f"ppdp: audit: {p}" for p in problems] and "Traceback" not in result.output
    assert all(line.startswith("ppdp: audit: audit.db: ") for line in lines), lines  # each names the file
    if before is not None:
        assert db.read_bytes() == before  # verifying never writes
    for args in (["list"], ["show", "r1"], ["head"]):
        other = ppdp("audit", *args, "--root", tmp_path)
        assert other.exit_code in (1, 2) and other.output.count("\n") == 1, (case, args, other.output)
        assert other.output.startswith("ppdp: error: ") and "Traceback" not in other.output


def test_row_level_damage_names_the_entry(tmp_path):
    fill(tmp_path, 5)
    sql(tmp_path, "UPDATE entries SET reason = X'00ff' WHERE seq = 2")
    sql(tmp_path, "UPDATE entries SET started_at = 'yesterday' WHERE seq = 4")
    problems = audit.verify(tmp_path)
    assert problems == [
        "audit.db: entry 2 (release r1): field reason is blob, expected text",
        "audit.db: entry 4 (release r3): does not match the audit entry schema (field started_at)",
    ]


def test_an_old_unsigned_trail_is_refused_for_writing_and_reported(tmp_path):
    with closing_db(tmp_path) as conn:  # the format of ppdp before signed entries
        conn.executescript("""
            CREATE TABLE entries (seq INTEGER PRIMARY KEY, release_id TEXT, dataset TEXT, status TEXT, reason TEXT,
                spec_sha256 TEXT, input_sha256 TEXT, output_sha256 TEXT, manifest_sha256 TEXT, started_at TEXT,
                finished_at TEXT, user TEXT, host TEXT, flow_run_id TEXT, prev_hash TEXT,
                entry_hash TEXT NOT NULL);
            CREATE TABLE head (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL,
                entry_hash TEXT NOT NULL);
            INSERT INTO entries VALUES (1, 'r0', 'd', 'rejected', 'x', NULL, NULL, NULL, NULL, '2026-01-01T00:00:00',
                '2026-01-01T00:00:01', 'u', 'h', NULL, '0000', 'abcd');
            INSERT INTO head VALUES (1, 1, 'abcd');
        """)
    with pytest.raises(PublishError, match="not in the signed format"):
        fill(tmp_path, 1)
    problems = audit.verify(tmp_path)
    assert problems[0].startswith("audit.db: table entries lacks columns trail_id, completes, files, key_id, "
                                  "signature")
