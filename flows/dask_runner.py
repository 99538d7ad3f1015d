"""prefect-dask's ``DaskTaskRunner`` as ppdp uses it (see :mod:`ppdp.flows.runners`).

Kept apart from :mod:`ppdp.flows.runners` so that importing Dask (about 0.4 s) is paid only by a Dask run. A
worker process unpickles the runner with the flow (Prefect sends the flow with every task), so this module must
stay importable there: it is, by name.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import importlib
import ipaddress
import logging
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from distributed import Client, WorkerPlugin, get_worker
from distributed.comm import connect
from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings
from prefect_dask import DaskTaskRunner

from ppdp.flows.settings import FORCED, exit_now, reread_environment
from ppdp.tasks.core.errors import SpecError

PRELOAD = "ppdp.flows.release"
"""What a worker imports to run any step (the flow's module: Prefect sends the flow with every task)."""


class SharedApiDaskTaskRunner(DaskTaskRunner):
    """A ``DaskTaskRunner`` whose workers report to the flow's Prefect API and are warmed up while the flow
    prepares its data.

    * Prefect sends a task's settings with it (:func:`prefect.context.serialize_context`). With no
      ``PREFECT_API_URL`` the flow talks to Prefect's temporary server, started in the flow's process, and the
      settings name no API: every worker process then started a temporary server of its own (measured: 2 extra
      servers, about 10 s each, on one SQLite database). While a task is submitted, the settings it carries name
      the flow's server instead (:func:`workers_api`).
    * prefect-dask starts (or connects to) the cluster at the first submitted task, and each worker then imports
      the release's modules (Prefect, pandas, scikit-learn: 4-5 s on this machine) before its first task. Here a
      background thread does both as soon as the flow run starts (:meth:`__enter__`), while the flow ingests,
      tags and holds out; the first submit waits for it if needed.
    * Before the first task, every worker (and every worker that joins later) gets ppdp's settings
      (:class:`WorkerSettings`, a worker plugin); on an existing cluster (``address``) its workers are first checked
      (:func:`check_workers`: none may spill to disk). The plugin is unregistered after the run: an operator's cluster
      is left running, as it was (the data-safety settings of :data:`ppdp.flows.settings.FORCED` stay set).
    * Dask's INFO lines (cluster start, connections, shutdown) are not shown; its warnings are.
    """

    _warming: threading.Thread | None  # the warm-up thread until __exit__ joins it

    def __enter__(self):
        quiet_dask()
        entered = super().__enter__()
        self._client_lock = threading.Lock()
        self._ready_lock, self._prepared = threading.Lock(), False
        if not _in_dask_worker():  # Prefect enters a copy of the runner around each task on a worker: no cluster
            context = contextvars.copy_context()  # the flow's settings (its Prefect API) in the warm-up thread too
            self._warming = threading.Thread(target=context.run, args=(self._warm_up,), name="ppdp-dask-warm-up",
                                             daemon=True)
            self._warming.start()
        return entered

    def __exit__(self, *exc: Any) -> None:
        warming, self._warming = getattr(self, "_warming", None), None
        if warming is not None:
            warming.join()  # never stop the cluster while it is being started
        try:
            if getattr(self, "_prepared", False) and self._client is not None:
                with contextlib.suppress(Exception):  # the cluster may be gone: nothing left to undo
                    self._client.unregister_worker_plugin(WorkerSettings.name)
        finally:
            super().__exit__(*exc)

    def __getstate__(self) -> dict[str, Any]:  # the runner travels with the flow: never its threads or locks
        state = dict(self.__dict__)
        for name in ("_client_lock", "_warming", "_ready_lock"):
            state.pop(name, None)
        state["_prepared"] = False
        return state

    @property
    def client(self):
        lock = getattr(self, "_client_lock", None)
        if lock is None:
            return super().client
        with lock:
            return super().client

    def ready(self):
        """The client, once the workers are checked (an existing cluster) and carry ppdp's settings: done once, by
        the warm-up or the first submit, whichever comes first (the other waits). Raise :class:`SpecError` (one
        line) when the cluster cannot be used."""
        lock = getattr(self, "_ready_lock", None)
        if lock is None:  # not entered (a copy on a worker): nothing to prepare
            return self.client
        with lock:
            if not self._prepared:
                try:
                    client = self.client
                except Exception as exc:  # noqa: BLE001 - the scheduler went away since the check before the flow
                    if self.address is None:
                        raise  # a local cluster that did not start: not the spec's fault
                    raise SpecError(unreachable(str(self.address), exc)) from None
                with workers_api():
                    api = get_current_settings().api.url
                if self.address is not None:
                    check_workers(client, str(self.address), api)
                client.register_plugin(WorkerSettings(api), name=WorkerSettings.name)
                self._prepared = True
            return self.client

    def _warm_up(self) -> None:
        """Start (or connect to) the cluster, prepare it (:meth:`ready`) and import :data:`PRELOAD` on each worker,
        as an ordinary task (a worker's event loop stays free); the flow's first tasks queue behind it."""
        try:
            client = self.ready()
            client.gather([client.submit(import_release_modules, workers=[worker], allow_other_workers=False,
                                         pure=False) for worker in client.scheduler_info()["workers"]])
        except Exception:  # noqa: BLE001, S110 - the first submitted task prepares the cluster again and reports it
            pass

    def submit(self, task, parameters, wait_for=None, dependencies=None):
        self.ready()
        with workers_api():
            return super().submit(task, parameters, wait_for=wait_for, dependencies=dependencies)


def quiet_dask() -> None:
    """Dask's INFO lines (connections, cluster start and stop) not shown; its warnings are."""
    quiet = logging.getLogger("distributed")
    if quiet.getEffectiveLevel() < logging.WARNING:
        quiet.setLevel(logging.WARNING)


def _in_dask_worker() -> bool:
    try:
        get_worker()
    except ValueError:
        return False
    return True


def import_release_modules() -> None:
    importlib.import_module(PRELOAD)


def cluster_runner(address: str) -> SharedApiDaskTaskRunner:
    """A runner on the existing cluster at ``address``; its client gives up connecting after
    :func:`connect_seconds`."""
    return SharedApiDaskTaskRunner(address=address, client_kwargs={"timeout": connect_seconds()})


def local_cluster_runner(cluster_kwargs: dict) -> SharedApiDaskTaskRunner:
    """A runner that starts a ``distributed.LocalCluster`` of ``cluster_kwargs`` when the flow run starts and
    stops it after the run; its workers exit promptly (:class:`QuickExit`)."""
    return SharedApiDaskTaskRunner(cluster_class="distributed.LocalCluster",
                                   cluster_kwargs={**cluster_kwargs, "plugins": {QuickExit()}})


CONNECT_ENV = "PPDP_CLUSTER_CONNECT_SECONDS"
CONNECT_SECONDS = 10.0
"""How long ppdp tries to reach an existing cluster's scheduler (Dask's own default is 30 s, retried)."""


def connect_seconds() -> float:
    """:data:`CONNECT_SECONDS`, or ``$PPDP_CLUSTER_CONNECT_SECONDS`` (a positive number of seconds)."""
    try:
        seconds = float(os.environ.get(CONNECT_ENV, CONNECT_SECONDS))
    except ValueError:
        return CONNECT_SECONDS
    return seconds if seconds > 0 else CONNECT_SECONDS


def unreachable(address: str, cause: BaseException | str) -> str:
    """The one line for a scheduler that cannot be reached: refused at once, or no (Dask) answer in time."""
    if isinstance(cause, str):
        return f"runner.address {address}: no Dask scheduler answers there ({cause})"
    if isinstance(cause, TimeoutError):
        reason = "no answer"
    elif isinstance(cause, OSError):
        reason = cause.strerror or type(cause).__name__
    else:  # seen: a MemoryError when something else listens there (its bytes read as a frame length)
        reason = f"an answer that is not Dask's: {type(cause).__name__}"
    return (f"runner.address {address}: no Dask scheduler answers there ({reason}; tried for {connect_seconds():g} s, "
            f"${CONNECT_ENV})")


def check_cluster(address: str) -> None:
    """Before a flow starts on the existing cluster at ``address``: raise :class:`SpecError` (one line) when no
    scheduler answers within :func:`connect_seconds` (a refused TCP connection at once), or when its workers
    cannot be used (:func:`check_workers`, against the Prefect API this process names, if any)."""
    quiet_dask()
    target = urlsplit(address if "://" in address else f"tcp://{address}")
    if target.scheme == "tcp" and target.hostname and target.port:
        try:
            socket.create_connection((target.hostname, target.port), timeout=connect_seconds()).close()
        except OSError as exc:
            raise SpecError(unreachable(address, exc.strerror or type(exc).__name__)) from None
    greet(address)
    try:
        client = Client(address, timeout=connect_seconds(), set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - refused, timed out, or not Dask there (seen: a MemoryError on a proxy)
        raise SpecError(unreachable(address, exc)) from None
    with client:
        check_workers(client, address, get_current_settings().api.url)


def greet(address: str) -> None:
    """Raise :class:`SpecError` (one line) unless a Dask server at ``address`` completes Dask's handshake within
    :func:`connect_seconds`. Dask's own connect waits for the handshake's answer without a limit: a port that
    accepts and never answers held ``Client(address, timeout=...)`` for good (measured). In a thread of its own,
    with its own event loop, so that it works whatever loop the caller runs."""
    seconds = connect_seconds()
    out: list[BaseException | None] = []

    async def hello() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=seconds), seconds)
        await comm.close()

    def run() -> None:
        try:
            asyncio.run(hello())
            out.append(None)
        except BaseException as exc:  # noqa: BLE001 - refused, timed out, or not Dask there: reported below
            out.append(exc)

    thread = threading.Thread(target=run, name="ppdp-dask-greet", daemon=True)
    thread.start()
    thread.join(seconds + 1.0)
    if not out:
        raise SpecError(unreachable(address, TimeoutError()))
    if out[0] is not None:
        raise SpecError(unreachable(address, out[0]))


def check_workers(client, address: str, api_url: str | None) -> None:
    """Raise :class:`SpecError` (one line) when the cluster has no worker, when a worker may spill task data to its
    disk (a memory limit with spilling on: Dask's default for ``dask worker``), or when ``api_url`` (the flow's
    Prefect API; None: a temporary server this process will start) is on the loopback interface while a worker is
    on another host, which could not reach it."""
    try:
        views = client.run(worker_view)
    except Exception as exc:  # noqa: BLE001 - a worker without ppdp (or another version): its type only, no data
        raise SpecError(f"runner.address {address}: a worker could not run ppdp's check ({type(exc).__name__}): the "
                        "workers need the same ppdp version as this machine, installed and importable") from None
    if not views:
        raise SpecError(f"runner.address {address}: the cluster has no worker")
    spilling = sorted(worker for worker, view in views.items() if view["spills"])
    if spilling:
        raise SpecError(f"runner.address {address}: worker {spilling[0]} may spill task data (rows) to its disk "
                        f"({len(spilling)} of {len(views)} workers): start the workers with --memory-limit 0 or "
                        "distributed.worker.memory.target and .spill false (docs/distributed.md)")
    api_host = urlsplit(api_url).hostname if api_url else "127.0.0.1"
    remote = sorted(worker for worker in views if not on_this_host(worker))
    if on_this_host(f"tcp://{api_host}") and remote:
        raise SpecError(f"runner.address {address}: worker {remote[0]} is on another host and cannot reach this "
                        f"run's Prefect API on the loopback interface ({api_url or 'a temporary server'}): set "
                        "PREFECT_API_URL to a Prefect server the workers reach")


def on_this_host(address: str) -> bool:
    """Whether a Dask address is on the loopback interface (or in this process: ``inproc://``)."""
    parts = urlsplit(address)
    if parts.scheme == "inproc" or parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname or "").is_loopback
    except ValueError:
        return False


def worker_view(dask_worker) -> dict[str, Any]:
    """What :func:`check_workers` needs of a worker (run on it): whether its data store can spill to disk (a
    ``SpillBuffer`` rather than a plain dict: Dask makes one when the worker has a memory limit and spilling on)."""
    return {"spills": not isinstance(dask_worker.data, dict)}


class WorkerSettings(WorkerPlugin):
    """ppdp's settings on every worker of the flow's cluster, present or joining later (registered by
    :meth:`SharedApiDaskTaskRunner.ready`).

    Prefect sends the flow's settings with each task, so a task runs with ppdp's data-safety settings
    (:data:`ppdp.flows.settings.FORCED`: no result persisted, no cache) and the flow's Prefect API wherever it
    runs. What runs on a worker outside a task's context does not get them: a step's progress thread, Prefect's
    log and event services started from it. Those read the worker process's own settings, which for a worker
    started outside ppdp name no API: Prefect then started a temporary server of its own on the worker
    (``$PREFECT_HOME/prefect.db``, 20-25 s measured, and its errors in the worker's log). So :meth:`setup`
    forces :data:`FORCED` in the worker's environment and, when the worker names no Prefect API of its own (or
    only the one ppdp set), sets the flow's; :meth:`teardown` (the plugin unregistered after the run) removes
    the API ppdp set and keeps :data:`FORCED`."""

    name = "ppdp-settings"
    MARK = "PPDP_WORKER_API_URL"  # the API this plugin set, so that only that one is replaced or removed

    def __init__(self, api_url: str | None) -> None:
        self.api_url = api_url

    def setup(self, worker) -> None:
        os.environ.update(FORCED)
        current = os.environ.get("PREFECT_API_URL")
        if self.api_url and (not current or current == os.environ.get(self.MARK)):
            os.environ["PREFECT_API_URL"] = os.environ[self.MARK] = self.api_url
        reread_environment()

    def teardown(self, worker) -> None:
        mark = os.environ.pop(self.MARK, None)
        if mark is not None and os.environ.get("PREFECT_API_URL") == mark:
            del os.environ["PREFECT_API_URL"]
        reread_environment()


@contextlib.contextmanager
def workers_api() -> Iterator[None]:
    """With no ``PREFECT_API_URL`` set: the temporary server's address as ``PREFECT_API_URL`` in this thread's
    Prefect settings (the server is the process-wide one the flow's client started; starting it is a no-op
    then); otherwise nothing."""
    if get_current_settings().api.url:
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer  # heavy: Prefect's server app, started only here

    server = SubprocessASGIServer()
    server.start()
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield


class QuickExit(WorkerPlugin):
    """Worker plugin of the local cluster: once a worker process has closed, it exits without Python's interpreter
    teardown.

    A spawned Dask worker ends with ``sys.exit``: after the worker has closed and every exit handler has run,
    the interpreter still tears down the modules a release imports (pandas, scikit-learn, Prefect): 2-3 s per
    worker measured on two busy cores, past Dask's grace period under load ("Worker process still alive after 4.0
    seconds, killing"). Registered when the worker starts, before Prefect registers its own exit handlers, this
    handler runs last (they run in reverse order): it removes the worker's (empty: no spilling) local directory
    and its lock file, which the teardown would have removed, flushes the standard streams and leaves with
    ``os._exit(0)``."""

    name = "ppdp-quick-exit"

    def setup(self, worker) -> None:
        atexit.register(_exit_now, str(worker.local_directory))


def _exit_now(local_directory: str) -> None:
    shutil.rmtree(local_directory, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.remove(local_directory + ".dirlock")
    exit_now(0)
