"""One native thread per step: the thread pools of BLAS (OpenBLAS, MKL, BLIS) and OpenMP held to
:func:`native_thread_limit` (1 unless ``PPDP_NATIVE_THREADS`` says otherwise) for every library a run loads.

ppdp runs its steps in parallel itself (tuning evaluations in two Prefect worker threads, partitions on Dask
workers). A native library that also splits each product between the machine's cores then runs 2 x 2 threads
on 2 cores, and on a loaded machine each waits for the others: ``ppdp run examples/adult.yaml`` took 228-393 s
with the libraries' own defaults and 44 s with ``OPENBLAS_NUM_THREADS=1`` (issue 33); ``numpy.linalg.eigh`` on
500 matrices of 90 x 90 took 4.2 s with two threads and 0.29 s with one at a load average of 5.5.

Two facts shape the code:

* A library reads its thread count when it is loaded, and some load late: SciPy brings its own OpenBLAS when a
  step first imports scikit-learn, and scikit-learn brings OpenMP (``libgomp``). threadpoolctl can only limit
  the libraries already loaded. So the environment variables (:data:`THREAD_VARIABLES`) are set as well, before
  anything loads where ppdp controls the process (:func:`ppdp.flows.settings.apply_settings`, run by every entry
  point, before numpy is imported) and at every limit after that, for the libraries still to come.
* OpenBLAS's count is process-wide, but OpenMP's is per thread: ``omp_set_num_threads`` in the main thread
  leaves a Prefect worker thread at the default (the machine's cores). So :func:`one_native_thread_from_now_on`
  is called in each step's own thread (:mod:`ppdp.flows.steps`) and by the flows' main thread; the Python API
  uses :func:`native_threads_limited`, which restores the caller's settings afterwards.

:func:`single_threaded_blas` remains for code that wants the limit inside one block whatever the process does
(condensation's thousands of small eigen-decompositions).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

__all__ = ["THREAD_VARIABLES", "native_thread_limit", "native_threads_limited", "one_native_thread_from_now_on",
           "set_thread_environment", "single_threaded_blas"]

LIMIT_VARIABLE = "PPDP_NATIVE_THREADS"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
"""Read by OpenMP, OpenBLAS, MKL, BLIS, Accelerate and numexpr when they load."""


def native_thread_limit() -> int:
    """Threads each native pool may use: ``PPDP_NATIVE_THREADS`` (a whole number >= 1), else 1."""
    text = os.environ.get(LIMIT_VARIABLE, "").strip()
    return int(text) if text.isdigit() and int(text) >= 1 else 1


def set_thread_environment() -> dict[str, str]:
    """Set each of :data:`THREAD_VARIABLES` the process has not set to :func:`native_thread_limit`, for the
    libraries loaded from now on (a variable the user set is left as it is); returns what was set."""
    limit = str(native_thread_limit())
    added = {name: limit for name in THREAD_VARIABLES if name not in os.environ}
    os.environ.update(added)
    return added


def one_native_thread_from_now_on() -> bool:
    """Hold every native thread pool loaded so far to :func:`native_thread_limit` (BLAS for the process, OpenMP
    for the calling thread), and set the environment for those loaded later; True when every pool the calling
    thread sees is at the limit (False when threadpoolctl is missing or cannot control a library)."""
    set_thread_environment()
    limit = native_thread_limit()
    try:
        from threadpoolctl import threadpool_info, threadpool_limits  # optional: threadpoolctl may be missing

        threadpool_limits(limits=limit)
        return all(lib["num_threads"] == limit for lib in threadpool_info())
    except Exception:  # noqa: BLE001 - an unknown native build: nothing to limit, the run is only slower
        return False


@contextmanager
def native_threads_limited() -> Iterator[None]:
    """The limit of :func:`one_native_thread_from_now_on` inside the ``with`` block, the caller's pools and
    environment as they were after it (for the Python API, which runs in the caller's process)."""
    added = set_thread_environment()
    try:
        with _limited(native_thread_limit(), None):
            yield
    finally:
        for name, value in added.items():
            if os.environ.get(name) == value:
                del os.environ[name]


def single_threaded_blas() -> AbstractContextManager[object]:
    """Run the ``with`` block with one BLAS thread, where threadpoolctl can set it. OpenBLAS's count is
    process-wide and threadpoolctl lets one Python thread at a time change it: a call from another thread
    meanwhile does nothing, so a process that wants one thread throughout sets it once
    (:func:`one_native_thread_from_now_on`)."""
    return _limited(1, "blas")


def _limited(limits: int, user_api: str | None) -> AbstractContextManager[object]:
    """threadpoolctl's limit as a context manager (restoring on exit), or a no-op where it cannot be set."""
    try:
        from threadpoolctl import threadpool_limits  # optional: threadpoolctl may be missing

        return threadpool_limits(limits=limits, user_api=user_api)
    except Exception:  # noqa: BLE001 - an unknown native build: run with its own threads, only slower
        return nullcontext()
