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


The package: :mod:`~ppdp.tasks.audit.trail` (the database, hashing and signing, reading),
:mod:`~ppdp.tasks.audit.writing` (appending, refusals, pending entries), :mod:`~ppdp.tasks.audit.verification`
(chain, signatures, head, input digests), :mod:`~ppdp.tasks.audit.folders` (the release folders).
"""

from ppdp.schemas.manifest import AuditEntry
from ppdp.tasks.audit.folders import latest_release, scan_root, valid_name
from ppdp.tasks.audit.trail import (
    DB_NAME,
    FIELDS,
    GENESIS,
    LEGACY_COLUMNS,
    AuditDamaged,
    compute_hash,
    db_path,
    files_json,
    find_entries,
    list_entries,
    read_trail,
    row_label,
    safe,
    signed_message,
    trail_id,
)
from ppdp.tasks.audit.verification import check_chain, parse_head, signed_head, verify
from ppdp.tasks.audit.writing import (
    append_entry,
    check_signing_key,
    interrupted_publishes,
    record_refusal,
    require_no_interrupted_publish,
    roll_back_quietly,
)
from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.staging import fault_point, publish_lock

__all__ = [
    "DB_NAME", "FIELDS", "GENESIS", "LEGACY_COLUMNS", "AuditDamaged", "AuditEntry", "PublishError", "append_entry",
    "check_chain", "check_signing_key", "compute_hash", "db_path", "fault_point", "file_sha256", "files_json",
    "find_entries", "interrupted_publishes", "latest_release", "list_entries", "parse_head", "publish_lock",
    "read_trail", "record_refusal", "require_no_interrupted_publish", "roll_back_quietly", "row_label", "safe",
    "scan_root", "signed_head", "signed_message", "trail_id", "valid_name", "verify",
]
