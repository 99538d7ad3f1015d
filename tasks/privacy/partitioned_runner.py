"""Running the passes of :func:`ppdp.tasks.privacy.partitioned.validate_folder` over a folder's partitions: one
after the other in this process, or as Dask tasks on a local or remote cluster; partial results merged by a tree
of fan-in :data:`FANIN`."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ppdp.tasks.core.errors import InputError

CountPlan = Any
"""A pass's plan (:class:`ppdp.tasks.privacy.partitioned.CountPlan`), passed through to each task unread: that module
imports this one."""

__all__ = ["FANIN", "DaskPasses", "SerialPasses", "pass_runner"]

FANIN = 8  # partitions' tables merged per step of the combine tree


class SerialPasses:
    """Partitions one after the other in this process; partial results merged as soon as ``FANIN`` are ready
    (at most ``FANIN`` per tree level held at once)."""

    def map(self, fn: Callable, items: Sequence, *args: Any) -> list:
        return [fn(item, *args) for item in items]

    def tree(self, fn: Callable, items: Sequence, plan: CountPlan, merge: Callable, finish: Callable,
             finish_args: tuple, fanin: int = FANIN) -> Any:
        """``finish(merge(fn(item, plan) for item in items), plan, *finish_args)``, merging in a tree."""
        levels: list[list] = []
        for item in items:
            value, level = fn(item, plan), 0
            while True:
                if len(levels) <= level:
                    levels.append([])
                levels[level].append(value)
                if len(levels[level]) < fanin:
                    break
                value, levels[level] = merge(levels[level]), []
                level += 1
        rest = [v for level in reversed(levels) for v in level]
        levels.clear()
        merged = merge(rest) if len(rest) > 1 else rest[0]
        del rest  # only the combined table is held while measuring
        return finish(merged, plan, *finish_args)


class DaskPasses:
    """The same work as ``dask.delayed`` tasks on a ``distributed`` cluster: one task per partition, a tree of
    merge tasks (fan-in ``FANIN``) and the measuring task on the workers; only the report comes back."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def map(self, fn: Callable, items: Sequence, *args: Any) -> list:
        import dask  # heavy: loaded when the partitions run on a Dask cluster

        task = dask.delayed(fn)
        return list(self.client.gather(self.client.compute([task(str(item), *args) for item in items])))

    def tree(self, fn: Callable, items: Sequence, plan: CountPlan, merge: Callable, finish: Callable,
             finish_args: tuple, fanin: int = FANIN) -> Any:
        import dask  # heavy: loaded when the partitions run on a Dask cluster

        shared = self.client.scatter(plan, broadcast=True, hash=False)  # sent once to each worker
        task, merge_task = dask.delayed(fn), dask.delayed(merge)
        level = [task(str(item), shared) for item in items]
        while len(level) > 1:
            level = [merge_task(level[i:i + fanin]) for i in range(0, len(level), fanin)]
        final = dask.delayed(finish)(level[0], shared, *finish_args)
        return self.client.gather(self.client.compute(final))


@contextmanager
def pass_runner(cluster: str | None, partitions: int) -> Iterator[SerialPasses | DaskPasses]:
    """Serial without ``cluster``; ``"local"``: a LocalCluster on this machine (one single-threaded worker
    process per core, at most one per partition, loopback only) for the call; else the address of a running
    Dask scheduler (``tcp://host:8786``)."""
    if cluster is None:
        yield SerialPasses()
        return
    from distributed import Client, LocalCluster  # heavy: loaded when the partitions run on a Dask cluster

    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # no start-up chatter on the command's output
    try:
        if cluster == "local":
            workers = max(1, min(len(os.sched_getaffinity(0)), partitions))
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                              dashboard_address=None) as local, Client(local) as client:
                yield DaskPasses(client)
            return
        try:
            client = Client(cluster, timeout="10s")
        except (OSError, TimeoutError, ValueError):
            raise InputError(f"--cluster {cluster}: no Dask scheduler answers at this address") from None
        with client:
            yield DaskPasses(client)
    finally:
        quiet.setLevel(level)
