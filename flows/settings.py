"""Prefect settings ppdp needs, applied explicitly by every entry point: :func:`apply_settings`.

Importing this module (or any ppdp module) changes nothing: the CLI's ``main`` and each command, the Python API's
functions (:mod:`ppdp.api`), the deployments (:mod:`ppdp.deployments`), the flows themselves at their start (for a
flow called from Python or run by a Prefect worker) and the tests' ``conftest`` call :func:`apply_settings`. It
sets the environment (read by Prefect when it is imported, and by the processes it starts: its temporary server,
Dask workers) and, when Prefect is imported already and does not see them, refreshes Prefect's global settings.

A Prefect task with any cache policy pickles its return value (raw data included) to disk, and
``PREFECT_TASKS_DEFAULT_PERSIST_RESULT=false`` does not stop it: ``PREFECT_TASKS_DISABLE_CACHING=true`` does,
so it is forced. Every ppdp task is also declared with ``cache_policy=NO_CACHE, persist_result=False``.

With no ``PREFECT_API_URL``, Prefect 3 starts a temporary API server as a child process (uvicorn, started by
``prefect.server.api.server.SubprocessASGIServer``) and stops it at exit, but a killed ``ppdp`` (kill -9, the
OOM killer) left it running for good. :func:`server_dies_with_parent` makes that child die with its parent on
Linux (``PR_SET_PDEATHSIG``); :func:`apply_settings` installs it.

:func:`apply_settings` also sets the native libraries' thread variables (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
...) that the process has not set, before numpy and SciPy load: one thread per pool, as every step runs
(:mod:`ppdp.tasks.core.threads`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import queue
import signal
import subprocess
import sys
import threading
from importlib.machinery import PathFinder
from typing import TYPE_CHECKING, Any, NoReturn, cast

from ppdp.tasks.core.threads import set_thread_environment

if TYPE_CHECKING:
    from importlib.abc import Loader

FORCED = {
    "PREFECT_TASKS_DISABLE_CACHING": "true",
    "PREFECT_TASKS_DEFAULT_PERSIST_RESULT": "false",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
}
DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "PREFECT_LOGGING_LOG_PRINTS": "false",
    # the temporary server is stopped as soon as the flow ends; its event recorder, still flushing, then logged
    # "Error flushing ... events" with a traceback after a release had published (2 of 190 runs under load)
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
}


def apply_settings() -> None:
    """Apply ppdp's Prefect settings (idempotent; see the module docstring): :data:`FORCED` always,
    :data:`DEFAULTS` where the process has not set them, the native thread variables, the temporary server's
    death with its parent; Prefect's global settings refreshed if Prefect was imported before."""
    os.environ.update(FORCED)
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    set_thread_environment()
    server_dies_with_parent()
    refresh_prefect_settings()


def prefect_persists() -> bool | None:
    """Whether an imported Prefect's global settings could persist results or cache tasks (None: Prefect is not
    imported)."""
    context = sys.modules.get("prefect.context")
    if context is None:
        return None
    current = context.GLOBAL_SETTINGS_CONTEXT.settings
    return bool(not current.tasks.disable_caching or current.tasks.default_persist_result is not False
                or current.results.persist_by_default)


def reread_environment() -> None:
    """Prefect's global settings read again from the environment, if Prefect is imported (else it reads them when
    it is): after this process changed ``PREFECT_API_URL``."""
    context = sys.modules.get("prefect.context")
    if context is not None:
        context.refresh_global_settings_context()


def refresh_prefect_settings() -> None:
    """Prefect reads the environment into its global settings when it is imported: if it was imported before
    :func:`apply_settings` (a Prefect worker, a user's script), refresh them from the environment now."""
    if prefect_persists():
        sys.modules["prefect.context"].refresh_global_settings_context()


# -- the temporary Prefect server dies with its parent ---------------------------------------------------------
SERVER_MODULE = "prefect.server.api.server"
_PR_SET_PDEATHSIG = 1


def server_dies_with_parent() -> None:
    """Make every temporary Prefect server that this process starts die with it (Linux) and stop after the
    run's log lines were sent (everywhere).

    Narrow patch: in the module that starts the server, and only there, the name ``subprocess`` is replaced by
    a proxy whose ``Popen`` adds a ``preexec_fn`` calling ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` in the child (and
    exiting if the parent is already gone). The kernel sends that signal when the *thread* that forked the
    child ends, so a server started from any thread but the main one is forked from a long-lived daemon thread
    instead. On every platform the same patch makes the server's ``stop`` send the run's queued log lines first
    (:func:`_logs_sent_first`). The module is patched when it is imported (a meta path hook; importing it costs
    about 2.5 s, so it is not imported here), or at once if it is imported already."""
    module = sys.modules.get(SERVER_MODULE)
    if module is not None:
        _patch(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


class _PatchOnImport:
    """Meta path finder: finds nothing itself, but wraps the loader of :data:`SERVER_MODULE` to patch it."""

    def find_spec(self, name, path, target=None):
        if name != SERVER_MODULE:
            return None
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            # a duck-typed loader: create_module and exec_module, everything else delegated to the wrapped one
            spec.loader = cast("Loader", _PatchingLoader(spec.loader))
        return spec

    def invalidate_caches(self) -> None:
        pass


class _PatchingLoader:
    def __init__(self, inner) -> None:
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:
        self.inner.exec_module(module)
        _patch(module)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _patch(module) -> None:
    if sys.platform.startswith("linux") and getattr(module, "subprocess", None) is subprocess:
        module.subprocess = _DiesWithParent(subprocess)
    server = getattr(module, "SubprocessASGIServer", None)
    if server is not None and not getattr(server.stop, DRAINS, False):
        server.stop = _logs_sent_first(server.stop)


DRAINS = "_ppdp_sends_logs_first"


def _logs_sent_first(stop):
    """``SubprocessASGIServer.stop`` that first sends the run's queued log lines to the server while it still
    answers. Prefect stops the temporary server in an exit handler that runs before ``logging.shutdown``, whose
    flush of Prefect's API log handler then waited its full 5 s for a worker that could no longer reach the
    stopped server: 5 of the 26 s of an Adult release from the CLI (measured: the exit took 5.25 s, 0.25 s
    with the logs sent first)."""

    @functools.wraps(stop)
    def stop_after_logs(self) -> None:
        process = getattr(self, "server_process", None)
        if process is not None and process.poll() is None:
            send_queued_logs()
        stop(self)

    setattr(stop_after_logs, DRAINS, True)
    return stop_after_logs


class _DiesWithParent:
    """``subprocess`` as seen by Prefect's server module: ``Popen`` children die with this process."""

    def __init__(self, real) -> None:
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def Popen(self, *args, **kwargs):  # noqa: N802 - stands in for subprocess.Popen
        return popen_dying_with_parent(self._real.Popen, *args, **kwargs)


def popen_dying_with_parent(popen, *args, **kwargs):
    """``popen(*args, **kwargs)`` (``subprocess.Popen``) whose child gets SIGKILL when this process dies (Linux:
    ``PR_SET_PDEATHSIG``, forked from a thread that lives as long as the process; elsewhere a plain start)."""
    if not sys.platform.startswith("linux"):
        return popen(*args, **kwargs)
    kwargs["preexec_fn"] = _pdeathsig_preexec(kwargs.get("preexec_fn"))
    if threading.current_thread() is threading.main_thread():
        return popen(*args, **kwargs)
    return _Forker.get().call(popen, *args, **kwargs)


def send_queued_logs(timeout: float = 5.0) -> None:
    """Send the log lines Prefect's API log worker still holds (when Prefect's logging is loaded): call it while
    the server still answers, before stopping a server this process started."""
    handlers = sys.modules.get("prefect.logging.handlers")
    if handlers is not None:
        handlers.APILogWorker.drain_all(timeout=timeout)


def _pdeathsig_preexec(inner):
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: die now
            os._exit(1)
        if inner is not None:
            inner()

    return preexec


class _Forker:
    """A daemon thread that lives as long as the process and forks on request (see above)."""

    _instance: _Forker | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.requests: queue.Queue = queue.Queue()
        threading.Thread(target=self._serve, name="ppdp-server-forker", daemon=True).start()

    @classmethod
    def get(cls) -> _Forker:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _serve(self) -> None:
        while True:
            fn, args, kwargs, done, out = self.requests.get()
            try:
                out.append((True, fn(*args, **kwargs)))
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                out.append((False, exc))
            done.set()

    def call(self, fn, *args, **kwargs):
        done = threading.Event()
        out: list[tuple[bool, Any]] = []
        self.requests.put((fn, args, kwargs, done, out))
        done.wait()
        ok, value = out[0]
        if ok:
            return value
        raise value


def exit_now(code: int) -> NoReturn:
    """Flush the standard streams and leave with ``os._exit(code)``: no interpreter teardown (which costs
    seconds once Prefect, pandas and scikit-learn are imported). Callers run what must run first (exit
    handlers, thread joins)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed or broken stream: nothing left to flush
            pass
    os._exit(code)

