"""``<root>/<dataset>/LATEST``: the id of the dataset's latest complete release, one line.

A reader (a downstream job, a person) finds the newest release of a dataset without listing folders or reading the
audit trail: ``cat <root>/census/LATEST``. The file is a pointer, not a proof: ``ppdp audit verify`` checks that it
names the release of the dataset's last ``published`` audit entry, and the release's own signed entry is what
vouches for its files.

It is replaced atomically (a temporary ``.LATEST.<random>.tmp`` in the dataset's folder, fsynced, then
``os.replace``) by :func:`ppdp.tasks.publish.publish_staged` under the root's publish lock, after the release folder
is renamed into place and before the completing ``published`` entry; a publish that is rolled back puts it back to
the dataset's latest complete release (:func:`ppdp.tasks.audit.latest_release`), and ``ppdp audit recover`` rewrites
it from the audit trail and removes a temporary file a kill left (:func:`ppdp.tasks.recovery.recover`).

Imports neither Prefect nor Great Expectations; no audit import (the audit trail imports this).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

from ppdp.tasks.core.errors import PublishError
from ppdp.tasks.staging import fsync_dir

LATEST_NAME = "LATEST"
_TMP_PREFIX = f".{LATEST_NAME}."
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def latest_path(root: Path | str, dataset: str) -> Path:
    return Path(root) / dataset / LATEST_NAME


def is_leftover(name: str) -> bool:
    """A temporary file of an interrupted update of ``LATEST`` (``.LATEST.<random>.tmp``)."""
    return name.startswith(_TMP_PREFIX) and name.endswith(".tmp")


def read_latest(root: Path | str, dataset: str) -> str | None:
    """The release id ``LATEST`` names, None when there is none or it is not one plain release id."""
    try:
        text = latest_path(root, dataset).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    value = text.strip()
    return value if _PLAIN.match(value) and text == value + "\n" else None


def write_latest(root: Path | str, dataset: str, release_id: str | None) -> None:
    """Point ``<root>/<dataset>/LATEST`` at ``release_id`` atomically (temporary file, fsync, ``os.replace``, fsync
    of the folder); ``None``: remove it (no complete release is left). Raises :class:`PublishError` (one line); a
    failed write leaves the previous pointer as it was."""
    path = latest_path(root, dataset)
    if release_id is None:
        try:
            path.unlink(missing_ok=True)
            fsync_dir(path.parent)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise PublishError(f"cannot remove {path} ({exc.strerror or type(exc).__name__})") from None
        return
    if not _PLAIN.match(release_id):
        raise PublishError(f"{path}: {release_id!r} is not a plain release id")
    tmp = path.parent / f"{_TMP_PREFIX}{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(release_id + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise PublishError(f"cannot write {path} ({exc.strerror or type(exc).__name__})") from None


def latest_of(rows: Iterable[dict], dataset: str) -> str | None:
    """The release of ``dataset``'s last ``published`` audit entry (rows oldest first, as stored), None when none."""
    latest = None
    for row in rows:
        if row.get("status") == "published" and row.get("dataset") == dataset:
            rid = row.get("release_id")
            latest = rid if isinstance(rid, str) and _PLAIN.match(rid) else latest
    return latest
