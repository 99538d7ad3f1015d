"""prefect-dask's ``DaskTaskRunner`` as ppdp uses it (see :mod:`ppdp.flows.runners`).

Kept apart from :mod:`ppdp.flows.runners` so that importing Dask (about 0.4 s) is paid only by a Dask run. A
worker process unpickles the runner with the flow (Prefect sends the flow with every task), so this module must
stay importable there: it is, by name.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from typing import Any

from distributed import WorkerPlugin, get_worker
from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings
from prefect_dask import DaskTaskRunner

from ppdp.flows.settings import exit_now

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
    * Dask's INFO lines (cluster start, connections, shutdown) are not shown; its warnings are.
    """

    _warming: threading.Thread | None  # the warm-up thread until __exit__ joins it

    def __enter__(self):
        quiet = logging.getLogger("distributed")
        if quiet.getEffectiveLevel() < logging.WARNING:
            quiet.setLevel(logging.WARNING)
        entered = super().__enter__()
        self._client_lock = threading.Lock()
        if not _in_dask_worker():  # Prefect enters a copy of the runner around each task on a worker: no cluster
            self._warming = threading.Thread(target=self._warm_up, name="ppdp-dask-warm-up", daemon=True)
            self._warming.start()
        return entered

    def __exit__(self, *exc: Any) -> None:
        warming, self._warming = getattr(self, "_warming", None), None
        if warming is not None:
            warming.join()  # never stop the cluster while it is being started
        super().__exit__(*exc)

    def __getstate__(self) -> dict[str, Any]:  # the runner travels with the flow: never its threads or lock
        state = dict(self.__dict__)
        state.pop("_client_lock", None)
        state.pop("_warming", None)
        return state

    @property
    def client(self):
        lock = getattr(self, "_client_lock", None)
        if lock is None:
            return super().client
        with lock:
            return super().client

    def _warm_up(self) -> None:
        """Start (or connect to) the cluster and import :data:`PRELOAD` on each worker, as an ordinary task (a
        worker's event loop stays free); the flow's first tasks queue behind it."""
        try:
            client = self.client
            client.gather([client.submit(import_release_modules, workers=[worker], allow_other_workers=False,
                                         pure=False) for worker in client.scheduler_info()["workers"]])
        except Exception:  # noqa: BLE001, S110 - the first submitted task starts the cluster again and reports it
            pass

    def submit(self, task, parameters, wait_for=None, dependencies=None):
        with workers_api():
            return super().submit(task, parameters, wait_for=wait_for, dependencies=dependencies)


def _in_dask_worker() -> bool:
    try:
        get_worker()
    except ValueError:
        return False
    return True


def import_release_modules() -> None:
    importlib.import_module(PRELOAD)


def local_cluster_runner(cluster_kwargs: dict) -> SharedApiDaskTaskRunner:
    """A runner that starts a ``distributed.LocalCluster`` of ``cluster_kwargs`` when the flow run starts and
    stops it after the run; its workers exit promptly (:class:`QuickExit`)."""
    return SharedApiDaskTaskRunner(cluster_class="distributed.LocalCluster",
                                   cluster_kwargs={**cluster_kwargs, "plugins": {QuickExit()}})


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
