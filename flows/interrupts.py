"""``ppdp run`` stopped by SIGINT (Ctrl-C, to the process or to its group) or by a Prefect cancellation, and a
Prefect API that goes away after the release was published.

:func:`run_guarded` runs the flow in a thread of its own while the main thread waits, so a signal never lands in
the middle of the flow's work (Python delivers SIGINT to the main thread only, as a ``KeyboardInterrupt`` at any
bytecode: inside Prefect's engine, a half-written audit entry or a rename). The main thread:

* on SIGINT (also when the process was started with SIGINT ignored, as a shell script's background job is), on
  SIGTERM (the same, but exit 143), or when the flow run's state becomes Cancelling/Cancelled in the Prefect API
  (polled every second), asks the run to stop (:func:`ppdp.tasks.interrupt.request`), then takes the lock of the
  publish's critical section: a publish under way either rolls back at its check before the rename (staging
  removed, pending entry rolled back) or has completed. Before the rename: the interruption is audited (an
  ``error`` entry: "interrupted by SIGINT ... nothing published"), any staging folder of the run removed, the
  flow run marked Cancelled in the API (best effort, 1 s), the temporary Prefect server and every other child
  process stopped, one line printed, exit 130. After the rename: "interrupted after release R was published: it
  is complete", exit 130 (the release is valid and audited; 130 says the command was interrupted, so a script
  stops as it does on any Ctrl-C).
* once the release is published (:func:`ppdp.tasks.interrupt.note_result`), when the temporary server has died,
  or the API has not answered its health check after :data:`GRACE_SECONDS`, returns the published result without
  waiting for Prefect's retries (about 150 s): the command prints its normal summary, one line naming what Prefect
  did not record, and exits 0 (:func:`leave`).
"""

from __future__ import annotations

import contextvars
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ppdp.flows import local_server, settings
from ppdp.tasks import audit, interrupt
from ppdp.tasks.staging import remove_path, staging_folder

POLL_SECONDS = 0.1
CANCEL_POLL_SECONDS = 1.0
GRACE_SECONDS = 10.0  # after the publish: how long Prefect's bookkeeping may take before the API is checked
STOP_CHILDREN_SECONDS = 1.5


class _Api:
    """Where the Prefect API of this run is, and whether it still answers (plain HTTP, short timeouts, no retries:
    never Prefect's client, which retries for minutes)."""

    def __init__(self) -> None:
        self.gone = False
        self._client: Any = None

    def client(self) -> Any:
        """One HTTP client for every poll of this process (a new one per request built an SSL context each time:
        about 0.03 s of CPU a second of polling)."""
        if self._client is None:
            import httpx  # heavy: only when a flow run's API is polled

            self._client = httpx.Client()
        return self._client

    @staticmethod
    def servers() -> list[Any]:
        """The temporary servers this process started: the CLI's own (:mod:`ppdp.flows.local_server`) and
        Prefect's (the Python API, a Dask runner's)."""
        found: list[Any] = [local_server.temporary()]
        module = sys.modules.get("prefect.server.api.server")
        if module is not None:
            found += list(module.SubprocessASGIServer._instances.values())
        return [s for s in found if getattr(s, "server_process", None) is not None]

    def url(self) -> str | None:
        for server in self.servers():
            return str(server.api_url)
        url = os.environ.get("PREFECT_API_URL")
        if url:
            return url.rstrip("/")
        try:
            from prefect.settings import PREFECT_API_URL  # heavy: Prefect, only when no URL is known

            value = PREFECT_API_URL.value()
        except Exception:  # noqa: BLE001 - no API known: nothing to poll
            return None
        return str(value).rstrip("/") if value else None

    def server_died(self) -> bool:
        """The temporary server this process started has exited."""
        return any(s.server_process.poll() is not None for s in self.servers())

    def answers(self, timeout: float = 2.0) -> bool:
        url = self.url()
        if url is None:
            return False
        try:
            return self.client().get(f"{url}/health", timeout=timeout).status_code == 200
        except Exception:  # noqa: BLE001 - any failure: it does not answer
            return False

    def flow_run_state(self, run_id: str) -> str | None:
        url = self.url()
        if url is None:
            return None
        try:
            response = self.client().get(f"{url}/flow_runs/{run_id}", timeout=1.0)
            return response.json()["state"]["type"] if response.status_code == 200 else None
        except Exception:  # noqa: BLE001 - unknown this time; polled again
            return None

    def mark_cancelled(self, run_id: str | None, message: str) -> None:
        """Best effort (1 s): the flow run shows Cancelled in the UI rather than Running for good."""
        url = self.url()
        if url is None or run_id is None or self.server_died():
            return
        try:
            self.client().post(f"{url}/flow_runs/{run_id}/set_state", timeout=1.0,
                       json={"state": {"type": "CANCELLED", "name": "Cancelled", "message": message}, "force": True})
        except Exception:  # noqa: BLE001, S110 - the run ends anyway; the API may be gone
            pass


API = _Api()


def _on_signal(signum, frame) -> None:  # noqa: ARG001 - a signal handler's signature
    interrupt.request(signal.Signals(signum).name)


def run_guarded(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` (a flow call) in a thread of its own; its result, or its exception raised here.
    Ends the process itself on a stop request (exit 130); returns the published result early when the Prefect API
    went away after the publish (see the module docstring)."""
    interrupt.reset()
    API.gone = False
    main = threading.current_thread() is threading.main_thread()
    # installed even when SIGINT was ignored (SIG_IGN): a script's background job is stopped by kill -INT too.
    # SIGTERM the same way (exit 143): a publish under way is never cut (the flow no longer runs in the main
    # thread, where Prefect turned SIGTERM into an exception)
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    out: dict[str, Any] = {}
    done = threading.Event()
    context = contextvars.copy_context()  # the caller's Prefect settings (a test harness's API URL) go along

    def target() -> None:
        try:
            out["result"] = context.run(call, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            out["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="ppdp-flow", daemon=True).start()
    next_poll = time.monotonic() + CANCEL_POLL_SECONDS
    published_at: float | None = None
    try:
        while not done.wait(POLL_SECONDS):
            if interrupt.requested():
                end_on_request()
            now = time.monotonic()
            run_id = interrupt.STATE.run.get("flow_run_id")
            if run_id and now >= next_poll and interrupt.STATE.result is None:
                next_poll = now + CANCEL_POLL_SECONDS
                if API.flow_run_state(run_id) in ("CANCELLING", "CANCELLED"):
                    interrupt.request("a Prefect cancellation")
                    end_on_request()
            if interrupt.STATE.result is not None:
                published_at = published_at or now
                if API.server_died() or (now - published_at >= GRACE_SECONDS and not API.answers()):
                    return _published_without_api()
                if now - published_at >= GRACE_SECONDS:
                    published_at = now  # it answers: Prefect is slow, not gone; wait on
        if interrupt.requested():
            end_on_request()
        if "error" in out:
            if interrupt.STATE.result is not None:  # published, then Prefect failed (its API went away)
                return _published_without_api()
            raise out["error"]
        return out["result"]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _published_without_api() -> Any:
    API.gone = True
    interrupt.note_not_recorded("the flow run's final state")
    return interrupt.STATE.result


def api_gone() -> bool:
    """The release was published and the Prefect API went away: the command leaves by :func:`leave`."""
    return API.gone


def leave(code: int) -> NoReturn:
    """Print what Prefect did not record, stop the children (the temporary server), exit at once: Prefect's exit
    handlers would wait on the dead API."""
    if API.gone:
        rid = getattr(interrupt.STATE.result, "release_id", "?")
        missing = interrupt.STATE.not_recorded or ["the flow run's final state"]
        _say(f"the Prefect API stopped answering after release {rid} was published: {' and '.join(missing)} "
             f"{'were' if len(missing) > 1 else 'was'} not recorded in Prefect (the release and its audit entry are "
             "complete)")
    stop_children()
    settings.exit_now(code)


def end_on_request() -> NoReturn:
    """End the process on a stop request (SIGINT, a Prefect cancellation): wait for a publish under way to roll
    back or complete, then audit, clean up and exit 130 (see the module docstring)."""
    lock = interrupt.hold()
    lock.acquire()  # never released: no publish starts after this; a publish under way ends first
    state = interrupt.STATE
    reason = state.reason or "a request"
    run = dict(state.run)
    rid = run.get("release_id")
    if rid is not None and rid in state.published:
        message = f"interrupted after release {rid} was published: it is complete ({state.published[rid]})"
    else:
        _discard_staging(run)
        _audit_interruption(run, reason)
        message = (f"interrupted by {reason} before release {rid} was published: nothing published" if rid
                   else f"interrupted by {reason}: nothing published")
        API.mark_cancelled(run.get("flow_run_id"), f"interrupted by {reason}: nothing published")
    stop_children()
    _say(message)
    settings.exit_now(128 + signal.SIGTERM if reason == "SIGTERM" else interrupt.EXIT_CODE)


def _say(line: str) -> None:
    try:
        sys.stderr.write(f"ppdp: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _discard_staging(run: dict) -> None:
    """A staging folder the run left (a distributed release writes its row files before publishing)."""
    if run.get("root") and run.get("release_id"):
        remove_path(staging_folder(Path(run["root"]), run["release_id"]))


def _audit_interruption(run: dict, reason: str) -> None:
    """The interrupted run in the audit trail: an ``error`` entry (nothing published), unless its refusal is there."""
    if not run.get("root") or not run.get("release_id"):
        return
    known = {k: v for k, v in (run.get("known") or {}).items()
             if k in ("spec_sha256", "input_digest", "input_key_id", "private_sha256", "withhold")}
    try:
        audit.record_refusal(run["root"], release_id=run["release_id"], dataset=run.get("dataset"),
                             error=interrupt.Interrupted(f"interrupted by {reason} before publishing: nothing "
                                                         "published"),
                             started_at=run["started"], flow_run_id=run.get("flow_run_id"), **known)
    except Exception as exc:  # noqa: BLE001 - the interruption is reported on the terminal anyway
        _say(f"warning: the interruption was not audited ({type(exc).__name__})")


def stop_children() -> None:
    """Stop this process's children and their children (the temporary Prefect server, a local Dask cluster's
    workers): SIGTERM, then SIGKILL for those still alive after :data:`STOP_CHILDREN_SECONDS`."""
    for server in _Api.servers():
        try:
            server.server_process.terminate()
        except OSError:
            pass
    pids = descendants(os.getpid())
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_CHILDREN_SECONDS
    while pids and time.monotonic() < deadline:
        _reap()
        pids = [p for p in pids if _alive(p)]
        if pids:
            time.sleep(0.05)
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    _reap()


def descendants(pid: int) -> list[int]:
    """The pids of ``pid``'s children and their children (Linux /proc; elsewhere none)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            parents.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[:1] != ["Z"]


def _reap() -> None:
    """Collect exited children (no zombie left while this process still runs)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
