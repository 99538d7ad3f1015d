"""Verifying the audit trail: types, hash chain, signatures, head (and an expected head from a witness),
pending entries, input digests against the publisher's private records; every problem one line, never an
exception. The release folders are :mod:`ppdp.tasks.audit.folders`'."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from ppdp.tasks import digests, keys
from ppdp.tasks.audit.folders import check_releases, scan_root
from ppdp.tasks.audit.trail import (
    DB_NAME,
    GENESIS,
    INT_OR_NULL,
    RESOLVES,
    TEXT_OR_NULL,
    AuditDamaged,
    Trail,
    columns_of,
    compute_hash,
    db_path,
    entry_from_row,
    head_of,
    is_legacy,
    read_trail,
    row_label,
    safe,
    signed_message,
)
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.private_record import read_record
from ppdp.tasks.staging import STAGING_PREFIX


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
        on_disk = scan_root(root, expected=set()) if root.is_dir() else []
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
            problems.append(f"{DB_NAME}: the trail witnessed by --expect-head (entry {safe(expect_head.get('seq'))}) "
                            "is gone")
        problems.extend(scan_root(root, expected=set()) if root.is_dir() else [])
        return
    if not db_path(root).is_file() or db_path(root).is_symlink():
        problems.append(f"{DB_NAME}: is not a regular file")
        return
    problems.extend(f"audit key: {p}" for p in key_problems)
    trail = read_trail(root)
    problems.extend(trail.problems)
    rows = trail.rows
    good = check_chain(rows, trusted, problems)
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
    expected = check_releases(root, rows, good, problems)
    _check_digests(rows, good, problems, notes)
    resolved = {r.get("completes") for r in rows}
    staged = {f"{STAGING_PREFIX}{r.get('release_id')}": r for r in rows
              if r.get("status") == "pending" and r.get("seq") not in resolved}
    problems.extend(scan_root(root, expected, staged, latest=rows))


def _check_digests(rows: list[dict], good: set[int], problems: list[str], notes: list[str]) -> None:
    """Each sound entry's keyed input digest recomputed, with this machine's digest key, from the input's SHA-256
    in the publisher's private record of the run (:mod:`ppdp.tasks.private_record`): a digest that differs is a
    finding. What cannot be checked (no key here, another key, no private record) is one note line each."""
    sound = [r for r in rows if r.get("seq") in good]
    legacy = sum(1 for r in sound if is_legacy(r) and r.get("input_sha256"))
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
            problems.append(f"{DB_NAME}: {row_label(row)}: its input digest is not the keyed digest of the input its "
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


def check_chain(rows: list[dict], trusted: dict, problems: list[str]) -> set[int]:
    """Types, hash chain, trail id and signatures; returns the seqs of entries that are sound (usable for the
    release checks)."""
    good: set[int] = set()
    prev: str | None  # the previous row's entry_hash, as read (None in a damaged trail)
    prev, expected_seq = GENESIS, 1
    trail_id = rows[0].get("trail_id") if rows else None
    unknown_keys: set[str | None] = set()
    for row in rows:
        label = f"{DB_NAME}: {row_label(row)}"
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
                    problems.append(f"{label}: signed by an unknown key {safe(row.get('key_id'))} (not the "
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
    columns = columns_of(row)
    for col in columns:
        if col not in row:
            continue  # reported once for the table
        value = row[col]
        if col == "seq" or col in INT_OR_NULL:
            want = "integer"
            good = isinstance(value, int) or (value is None and col != "seq")
        else:
            want = "text"
            good = isinstance(value, str) or (value is None and col in TEXT_OR_NULL)
        if not good:
            got = "NULL" if value is None else {bytes: "blob", int: "integer", float: "real", str: "text"}.get(
                type(value), type(value).__name__)
            problems.append(f"{label}: field {col} is {got}, expected {want}")
            ok = False
    if any(c not in row for c in columns):
        return False
    if ok:
        try:
            entry_from_row(row)
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
        label = f"{DB_NAME}: {row_label(row)}"
        pending = by_seq.get(target)
        if row.get("status") not in RESOLVES:
            problems.append(f"{label}: status {safe(row.get('status'))} cannot complete a pending entry")
        elif not isinstance(target, int) or pending is None or pending.get("status") != "pending" or (
                isinstance(row.get("seq"), int) and target >= row["seq"]):
            problems.append(f"{label}: completes entry {safe(target)}, which is not an earlier pending entry")
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
            problems.append(f"{DB_NAME}: {row_label(row)}: pending, never completed or rolled back (an interrupted "
                            "or running publish)")


def _check_head_record(trail: Trail, problems: list[str]) -> None:
    rows = trail.rows
    if not trail.has_head_table:
        return  # reported with the tables
    if trail.head is None:
        if rows:
            problems.append(f"{DB_NAME}: the head record is missing")
        return
    last = rows[-1] if rows else {"seq": 0, "entry_hash": GENESIS}
    if trail.head.get("seq") != last.get("seq") or trail.head.get("entry_hash") != last.get("entry_hash"):
        problems.append(f"{DB_NAME}: the head record names entry {safe(trail.head.get('seq'))} but the trail ends "
                        f"at entry {safe(last.get('seq'))}: entries were removed or the head was altered")


def _compare_head(head: dict, label: str, trail_id: object, by_seq: dict[int, dict], last_seq: int,
                  trusted: dict, problems: list[str]) -> None:
    seq, entry_hash = head.get("seq"), head.get("entry_hash")
    if not isinstance(seq, int) or not isinstance(entry_hash, str):
        problems.append(f"{DB_NAME}: {label} is not a head printed by ppdp audit head")
        return
    key = trusted.get(head.get("key_id"))
    if key is None:
        problems.append(f"{DB_NAME}: {label} (entry {seq}) is signed by an unknown key {safe(head.get('key_id'))}")
    elif not key.check(signed_message(entry_hash), head.get("signature")):
        problems.append(f"{DB_NAME}: {label} (entry {seq}) has an invalid signature")
    if head.get("trail_id") != trail_id:
        problems.append(f"{DB_NAME}: {label} belongs to trail {safe(head.get('trail_id'))}, this is trail "
                        f"{safe(trail_id)}: the trail was replaced")
        return
    if seq > last_seq:
        problems.append(f"{DB_NAME}: trail rewound or truncated: {label} records entry {seq} but the trail ends "
                        f"at entry {last_seq}")
        return
    row = by_seq.get(seq)
    if row is None:
        problems.append(f"{DB_NAME}: entry {seq}, recorded by {label}, is missing")
    elif row.get("entry_hash") != entry_hash:
        problems.append(f"{DB_NAME}: {row_label(row)}: trail forked or rewritten: differs from {label}")


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
    trail = read_trail(root)
    problems = list(trail.problems) + [f"audit key: {p}" for p in key_problems]
    check_chain(trail.rows, trusted, problems)
    _check_head_record(trail, problems)
    if problems:
        raise AuditDamaged(f"will not vouch for this trail: {problems[0]}"
                           + (f" (and {len(problems) - 1} more; run ppdp audit verify)" if len(problems) > 1 else ""))
    if not trail.rows:
        raise PublishError(f"audit trail {db_path(root)} has no entries yet")
    return head_of(trail.rows[-1])
