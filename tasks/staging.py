"""Crash-safe publishing, the file-system side: the publish root's lock, staging folders, durable renames and
removals, and the crash-test hook.

A release (or a federated model) is written into ``<root>/.staging-<release_id>`` and renamed into place under the
root's publish lock (:func:`publish_lock`); the signed ``pending`` and completing entries around the rename are the
audit trail's (:mod:`ppdp.tasks.audit`, which also reports ``.staging-*`` leftovers), and bringing an interrupted
root back is :func:`ppdp.tasks.recovery.recover`. This module imports no other step: the audit trail builds on it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import stat
import time
from contextlib import contextmanager
from pathlib import Path

from ppdp.tasks import interrupt
from ppdp.tasks.core.errors import PublishError

STAGING_PREFIX = ".staging-"
FAULT_ENV = "PPDP_FAULT_AT"
PAUSE_ENV = "PPDP_PAUSE_AT"
PUBLISH_WAIT_SECONDS = 600.0


class RootBusy(PublishError):
    """Another ppdp process holds the root's publish lock (publishing or recovering)."""


def fault_point(name: str) -> None:
    """TEST HOOK, inert unless ``$PPDP_FAULT_AT`` equals ``name``: then this process kills itself with SIGKILL
    here, as a crash would (``tests/test_crash.py`` names the points: ``staging-created``,
    ``parquet-unfinished``, ``staged``, ``pending-uncommitted``, ``pending-appended``, ``renamed``,
    ``published-uncommitted``, ``completed``, ``recover-removed``, ``rolled_back-uncommitted``)."""
    if os.environ.get(FAULT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(PAUSE_ENV, "").partition(":")[0] == name:
        _pause(os.environ[PAUSE_ENV].partition(":")[2])


def _pause(flag: str) -> None:
    """TEST HOOK of ``$PPDP_PAUSE_AT=<point>:<file>`` (``tests/test_interrupt.py``): at that point, create ``file``
    and wait until it is removed, a stop is requested (:mod:`ppdp.tasks.interrupt`) or 120 s have passed. It only
    delays a run, so that a test can signal it at a known instant."""
    if not flag:
        return
    Path(flag).write_text(f"{os.getpid()}\n", encoding="utf-8")
    deadline = time.monotonic() + 120.0
    while os.path.exists(flag) and not interrupt.requested() and time.monotonic() < deadline:
        time.sleep(0.05)


def staging_folder(root: Path, release_id: str) -> Path:
    """Where a release is written before it is renamed into place (a sibling of the dataset folders)."""
    return Path(root) / f"{STAGING_PREFIX}{release_id}"


def remove_path(path: Path) -> None:
    """Remove a file, a link (never what it points to) or a folder tree; nothing if absent. Errors are ignored
    (a leftover is a finding of ``verify``; ``recover`` tries again and says what it could not remove)."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def fsync_dir(path: Path) -> None:
    """Make the entries of a folder (a rename, a removal) durable; best effort."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def publish_lock(root: Path, wait: float = PUBLISH_WAIT_SECONDS):
    """Hold the publish root's exclusive lock: ``flock`` on the root folder itself (no file is added). A
    publisher holds it from staging to its completing entry, recovery while it works; the kernel releases it
    when the holder dies, so a lock is never stale. Raises :class:`RootBusy` after ``wait`` seconds. On a file
    system without ``flock`` the block runs unlocked."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise PublishError(f"publish root {root} cannot be opened ({exc.strerror or type(exc).__name__})") from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RootBusy(f"publish root {root} is locked by another ppdp process that is publishing or "
                                   f"recovering (waited {wait:g} s)") from None
                time.sleep(0.1)
            except OSError:
                break  # no flock here (some network file systems): unlocked
        yield
    finally:
        os.close(fd)  # releases the lock
