"""Stopping a run safely: a request to stop (SIGINT, a Prefect cancellation) is a flag, never an exception thrown
into whatever the run was doing.

The command line (:mod:`ppdp.flows.interrupts`) turns SIGINT and a Prefect cancellation into :func:`request`. The
run checks the flag at step boundaries (:func:`check`, raising :class:`Interrupted`) and, last, just before the
rename that publishes a release (:func:`ppdp.tasks.publish.publish_staged`): the rename is the point of no return.
What writes to the publish root (a publish from its staging folder to its completing audit entry, an audit entry
of a refusal) runs inside :func:`critical`; whoever ends the process on a request (:func:`ppdp.flows.interrupts`)
first takes the same lock, so a publish is never cut in half: it either rolls back (staging removed, its pending
entry rolled back) or completes.

Plain threading only (no Prefect): the flags are read by the flow's thread and the command's main thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp.tasks.core.errors import PpdpError

EXIT_CODE = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


class Interrupted(PpdpError):
    """The run was asked to stop (SIGINT, a Prefect cancellation) before its release was published: nothing is
    published (exit 130)."""

    exit_code = EXIT_CODE
    prefix = "interrupted"


@dataclass
class _State:
    """What the process knows about its run, for whoever ends it on a request."""

    reason: str | None = None  # why the run was asked to stop ("SIGINT", "a Prefect cancellation"); None: not asked
    run: dict[str, Any] = field(default_factory=dict)  # root, release_id, dataset, started, flow_run_id, known
    published: dict[str, str] = field(default_factory=dict)  # release id -> its folder, once renamed into place
    refused: set[str] = field(default_factory=set)  # (root, release id) whose refusal is in the audit trail
    result: Any = None  # the published release's ReleaseResult, once the flow has it
    not_recorded: list[str] = field(default_factory=list)  # what Prefect did not record after the publish


STATE = _State()
_REQUESTED = threading.Event()
_LOCK = threading.RLock()  # held by critical sections, and by whoever ends the process on a request


def request(reason: str) -> None:
    """Ask the run to stop (the first reason given is kept)."""
    if STATE.reason is None:
        STATE.reason = reason
    _REQUESTED.set()


def requested() -> bool:
    return _REQUESTED.is_set()


def check(where: str = "") -> None:
    """Raise :class:`Interrupted` when a stop was requested (a step boundary, or just before a publish's rename)."""
    if _REQUESTED.is_set():
        at = f" ({where})" if where else ""
        raise Interrupted(f"interrupted by {STATE.reason or 'a request'}{at}: nothing published")


@contextmanager
def critical() -> Iterator[None]:
    """Writes to the publish root that must not be cut: the process is never ended on a request inside one (see
    the module docstring). Re-entrant."""
    with _LOCK:
        yield


def hold() -> threading.RLock:
    """The critical sections' lock, for whoever ends the process: acquired, no publish starts or is half done."""
    return _LOCK


def begin_run(**run: Any) -> None:
    """What a flow run is about to publish (``root``, ``release_id``, ``dataset``, ``started``, ``flow_run_id``):
    an interruption of it is audited under that root."""
    STATE.run = dict(run)


def note_published(release_id: str, folder: Path) -> None:
    """Called inside the publish's critical section, once the release is renamed into place and audited."""
    STATE.published[release_id] = str(folder)


def _refusal_key(root: Path | str, release_id: str) -> str:
    return f"{Path(root).absolute()}\n{release_id}"


def note_refused(root: Path | str, release_id: str) -> None:
    """The refusal (or interruption) of ``release_id`` is in ``root``'s audit trail."""
    STATE.refused.add(_refusal_key(root, release_id))


def refused(root: Path | str, release_id: str) -> bool:
    return _refusal_key(root, release_id) in STATE.refused


def note_result(result: Any) -> None:
    """The published release's summary (:class:`ppdp.schemas.manifest.ReleaseResult`), as soon as the flow has it."""
    STATE.result = result


def note_not_recorded(what: str) -> None:
    """Something Prefect did not record after the release was published (its artifacts)."""
    if what not in STATE.not_recorded:
        STATE.not_recorded.append(what)


def note_recorded(what: str) -> None:
    """Prefect has recorded it after all."""
    if what in STATE.not_recorded:
        STATE.not_recorded.remove(what)


def reset() -> None:
    """Forget every flag (a long-lived process that runs several releases, and the tests)."""
    fresh = _State()
    for name in fresh.__dataclass_fields__:
        setattr(STATE, name, getattr(fresh, name))
    _REQUESTED.clear()
