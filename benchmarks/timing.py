"""Timing shared by the speed benchmarks: the median wall-clock and CPU seconds of repeated in-process runs."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(run: Callable[[], T], repeats: int, *, warm: bool = False) -> tuple[float, float, T]:
    """Median wall-clock seconds and median CPU seconds of this process over ``repeats`` (at least 1) runs of
    ``run``, each after a garbage collection, and the last run's result; ``warm``: one unmeasured run first
    (imports, caches, first allocations)."""
    if warm:
        run()
    walls, cpus = [], []
    for _ in range(repeats):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return statistics.median(walls), statistics.median(cpus), result
