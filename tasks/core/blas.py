"""One BLAS thread for work made of many small matrix operations.

OpenBLAS splits every product and every eigen-decomposition above a small size between its threads (two on the
2-core machines this project runs on). For the thousands of 10 x 10 to 200 x 90 matrices of condensation that
split costs far more than it saves, and on a loaded machine, where the second thread waits for a core, it is
ruinous: ``numpy.linalg.eigh`` on 500 matrices of 90 x 90 took 4.2 s with two threads and 0.29 s with one at a
load average of 5.5; condensation's synthesis of Adult at k = 100 took 16.9 s with two and 0.42 s with one (load
3.5), with bit-for-bit the same records.

:func:`single_threaded_blas` is ``threadpoolctl.threadpool_limits(limits=1, user_api="blas")`` (threadpoolctl
comes with scikit-learn), used as a context manager, and a no-op when threadpoolctl cannot control the BLAS.
OpenBLAS's thread count is process-wide, so threadpoolctl lets only one Python thread at a time change it: the
first to ask controls it until its ``with`` block ends; a call from another thread meanwhile does nothing (the
count is already one if the controlling thread asked for one, but goes back up when that thread leaves its block
first). A process that wants one BLAS thread throughout, such as a release running tuning evaluations in
parallel threads on 2 cores, should set it once from its main thread (:func:`one_blas_thread_from_now_on`), or
start with ``OPENBLAS_NUM_THREADS=1``; the limit then holds whichever thread enters or leaves a block here. Four
tuning evaluations of Adult in two threads took 10-18 s with the blocks alone and 7.7-8.1 s with the process-wide
setting (load average 2-3).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["one_blas_thread_from_now_on", "single_threaded_blas"]


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the ``with`` block with one BLAS thread, where threadpoolctl can set it (see the module docstring)."""
    try:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(limits=1, user_api="blas")
    except Exception:  # noqa: BLE001 - an unknown BLAS build: run with its own threads, only slower
        limiter = None
    if limiter is None:
        yield
        return
    with limiter:
        yield


def one_blas_thread_from_now_on() -> bool:
    """Limit the BLAS libraries loaded so far to one thread for the rest of the process; True if that was done.

    Call it from the main thread before work starts in other threads (see the module docstring); it does nothing
    when another thread holds threadpoolctl's control at that moment, or when threadpoolctl is missing."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        return all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
    except Exception:  # noqa: BLE001 - an unknown BLAS build: nothing to limit
        return False
