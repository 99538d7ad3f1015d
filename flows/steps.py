"""Plain step functions as Prefect tasks that never cache or persist their results (:class:`step`), and the
record of how long each step ran (:data:`STEP_TIMES`, ``ppdp run --timings``). Shared by every flow.

Every task is declared with ``cache_policy=NO_CACHE, persist_result=False``: a cached or persisted task result is
a pickle on disk, and these results are DataFrames of raw or sanitized data.
"""

from __future__ import annotations

import collections
import functools
import logging
import os
import threading
import time
from typing import Any, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.logging import get_run_logger

from ppdp.tasks import interrupt
from ppdp.tasks import steps as release_steps
from ppdp.tasks.core.threads import one_native_thread_from_now_on
from ppdp.tasks.steps import STEPS, log_privacy, log_promoted  # noqa: F401 (the flows' log lines, shared)


class _Refusal:
    """What a guarded step returns instead of raising: the exception, kept in memory (never persisted)."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


STEP_TIMES: collections.deque[tuple[str, float, float]] = collections.deque(maxlen=100_000)
"""(step, start, end) of the step functions run in this process (``time.perf_counter``; the latest 100,000, so a
long-lived deployment process does not grow): the steps' own work, for measuring what a run costs beyond it
(``ppdp run --timings``). Names and times only."""


def step_breakdown(since: float = 0.0) -> list[tuple[str, int, float]]:
    """(step name, runs, seconds summed over its runs) of the steps that started at or after ``since``, most
    seconds first (parallel runs of one step, such as tuning evaluations, add up: the sum can exceed the wall)."""
    totals: dict[str, list[float]] = {}
    for name, a, b in (t for t in STEP_TIMES if t[1] >= since):
        entry = totals.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += b - a
    return sorted(((n, int(c), s) for n, (c, s) in totals.items()), key=lambda t: (-t[2], t[0]))


def steps_seconds(since: float = 0.0) -> float:
    """Seconds during which at least one step function was running (the union of their intervals, so parallel
    evaluations count once), over the steps that started at or after ``since``."""
    total, end = 0.0, float("-inf")
    for _, a, b in sorted((t for t in STEP_TIMES if t[1] >= since), key=lambda t: t[1]):
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def _refused_input(args: tuple, kwargs: dict) -> _Refusal | None:
    """The first refusal among a step's inputs (alone, or in a list): a submitted step that refused, given to
    another as its future (the merge tree, the steps beside the merged counts)."""
    for value in (*args, *kwargs.values()):
        for v in value if isinstance(value, list) else (value,):
            if isinstance(v, _Refusal):
                return v
    return None


def _guarded(fn, name: str):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        refused = _refused_input(args, kwargs)
        if refused is not None:  # passed on unrun: the flow raises it where it asks for a result
            return refused
        started = time.perf_counter()
        beat = HEARTBEAT.begin(name, started)
        try:
            one_native_thread_from_now_on()  # in the step's own thread: OpenMP's limit is per thread
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - handed to the flow, which audits and reports it
            return _Refusal(exc)
        finally:
            HEARTBEAT.end(beat)
            STEP_TIMES.append((name, started, time.perf_counter()))

    return run


PROGRESS_ENV = "PPDP_PROGRESS_SECONDS"
PROGRESS_SECONDS = 10.0


class _Heartbeat:
    """Progress of long steps: while a step function runs, a line ``STEP: still running after N s`` every
    :data:`PROGRESS_SECONDS` (``$PPDP_PROGRESS_SECONDS``; 0 turns it off) on the step's Prefect task-run logger
    (the console, unless ``ppdp run --quiet``; and the Prefect server's database), from one daemon thread per
    process. The line names the step and the elapsed seconds only: never a parameter or a data value (a DP
    synthesizer's fit, 75-88 s on the census demo, is the ``sanitize`` step)."""

    def __reduce__(self):
        # a step's function is pickled by value for Dask workers, and with it this global: each process uses its own
        return (_heartbeat, ())

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: dict[int, list] = {}  # token -> [name, started, logger, next report]
        self._next = 0
        self._thread: threading.Thread | None = None

    @staticmethod
    def interval() -> float:
        try:
            return max(0.0, float(os.environ.get(PROGRESS_ENV, PROGRESS_SECONDS)))
        except ValueError:
            return PROGRESS_SECONDS

    def begin(self, name: str, started: float) -> int | None:
        every = self.interval()
        if every <= 0:
            return None
        logger = _step_logger()
        with self._lock:
            self._next += 1
            self._steps[self._next] = [name, started, logger, started + every, every]
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._beat, name="ppdp-step-progress", daemon=True)
                self._thread.start()
            return self._next

    def end(self, token: int | None) -> None:
        if token is not None:
            with self._lock:
                self._steps.pop(token, None)

    def _beat(self) -> None:
        while True:
            with self._lock:
                due = []
                now = time.perf_counter()
                for entry in self._steps.values():
                    if now >= entry[3]:
                        entry[3] += entry[4]
                        due.append((entry[2], entry[0], now - entry[1]))
                wait = min((e[3] for e in self._steps.values()), default=now + 1.0) - now
            for logger, name, elapsed in due:
                try:
                    logger.info("%s: still running after %.0f s", name, elapsed)
                except Exception:  # noqa: BLE001, S110 - progress is never worth failing a run for
                    pass
            time.sleep(min(1.0, max(0.05, wait)))


def _step_logger():
    """The running Prefect task's logger (its lines reach the console and the flow run's logs), else a plain
    ``ppdp.progress`` logger (a step called outside a flow)."""
    try:
        return get_run_logger()
    except Exception:  # noqa: BLE001 - no Prefect run context
        return logging.getLogger("ppdp.progress")


HEARTBEAT = _Heartbeat()


def _heartbeat() -> _Heartbeat:
    """This process's :data:`HEARTBEAT` (what an unpickled one becomes)."""
    return HEARTBEAT


def _unwrap(value):
    if isinstance(value, _Refusal):
        raise value.error
    return value


class _Future:
    def __init__(self, future) -> None:
        self.future = future

    def result(self):
        return _unwrap(self.future.result())


class step:  # noqa: N801 - used like a decorator
    """A plain step function as a Prefect task that never caches or persists its result (see above).

    An expected refusal (a :class:`PpdpError`) or an unexpected error inside the task is returned to the flow
    rather than raised inside the task, so Prefect neither logs a traceback nor stores the exception text for
    the task run; calling the step (or a submitted step's ``result()``) in the flow raises it there, where the
    flow audits it and ends in a ``Failed`` state without exception text (see :func:`release_flow`).
    """

    def __init__(self, fn, name: str, run_name=None) -> None:
        self.task = task(name=name, cache_policy=NO_CACHE, persist_result=False,
                         task_run_name=_run_name(name, run_name) if run_name else None)(_guarded(fn, name))

    def __call__(self, *args, **kwargs):
        interrupt.check()  # a step boundary: a stop request (SIGINT, a Prefect cancellation) ends the run here
        return _unwrap(self.task(*args, **kwargs))

    def submit(self, *args, **kwargs) -> _Future:
        interrupt.check()
        return _Future(self.task.submit(*args, **kwargs))


def _run_name(name: str, describe):
    """A task run name carrying the step's parameters (``evaluate k=1,487``), never a data value: ``describe``
    reads only settings, counts and names from the parameters; a failure falls back to the step's name."""

    def run_name(parameters: dict) -> str:
        try:
            detail = describe(parameters)
        except Exception:  # noqa: BLE001 - a name is never worth failing a run for
            detail = ""
        return f"{name} {detail}".strip()

    return run_name


R = TypeVar("R")


class TaskRunner(release_steps.Runner):
    """The release plan's steps (:mod:`ppdp.tasks.plan`) as Prefect tasks: each :class:`~ppdp.tasks.plan.Step` a
    :class:`step` of its name (made once, on first use), called in the flow or submitted (a Prefect future, run on
    the flow's task runner: Dask workers or threads; a submitted step given to another travels as its future, which
    Dask sends to each worker once); a step that is no task of its own (``task=False``) is called in place."""

    def __init__(self) -> None:
        self._tasks: dict[release_steps.Step, step] = {}

    def _task(self, s: release_steps.Step) -> step:
        made = self._tasks.get(s)
        if made is None:
            made = self._tasks[s] = step(s.fn, s.name, s.describe)
        return made

    def call(self, step: release_steps.Step[R], *args: Any, **kwargs: Any) -> R:
        if not step.task:
            return super().call(step, *args, **kwargs)
        return self._task(step)(*map(_futures, args), **{k: _futures(v) for k, v in kwargs.items()})

    def submit(self, step: release_steps.Step[R], *args: Any, **kwargs: Any) -> release_steps.Pending[R]:
        if not step.task:
            return super().submit(step, *args, **kwargs)
        return self._task(step).submit(*map(_futures, args), **{k: _futures(v) for k, v in kwargs.items()})

    def cluster(self) -> str | None:
        """The scheduler of the flow's Dask runner (the privacy counts run there too), None on threads."""
        ctx = FlowRunContext.get()
        runner = getattr(ctx, "task_runner", None) if ctx is not None else None
        chosen = getattr(runner, "chosen", None)
        if callable(chosen):
            try:
                runner = chosen()
            except RuntimeError:
                return None
        client = getattr(runner, "_client", None) or None
        try:
            return None if client is None else str(client.scheduler.address)
        except AttributeError:
            return None


def _futures(value):
    """An argument with submitted steps (alone, or in a list) as their Prefect futures."""
    if isinstance(value, _Future):
        return value.future
    if isinstance(value, list) and any(isinstance(v, _Future) for v in value):
        return [_futures(v) for v in value]
    return value


TASKS = TaskRunner()
"""The plan's steps as this process's Prefect tasks (shared by the flows)."""
