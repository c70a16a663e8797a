"""Solves run side by side in threads, and all of them stopped when the caller is interrupted.

:func:`threaded_map` runs independent solves (the parts of
:mod:`solvers.lagrange`) on worker threads: HiGHS releases the GIL while it
solves and CBC is a child process, so two solves use two cores. A signal
(Ctrl-C, or SIGTERM turned into an exception by the CLI) only ever interrupts
the main thread, which here just waits; so each running solve registers how
to stop it (:func:`cancellable`: HiGHS's ``cancelSolve``, a kill of CBC's
process group) and the waiting thread, when interrupted, stops them all,
refuses new ones, waits for the workers to return and re-raises. No solve
outlives the call, so nothing keeps ``placement`` alive after a signal.

Examples
--------
>>> threaded_map(lambda x: x * x, [1, 2, 3], workers=2)
[1, 4, 9]
>>> with cancellable(lambda: None):  # outside threaded_map: nothing to register
...     pass
"""

from __future__ import annotations

import contextvars
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["Cancelled", "cancellable", "solve_threads", "threaded_map"]

T = TypeVar("T")
R = TypeVar("R")

#: How often the waiting thread wakes (to let a pending signal raise, and to repeat the stops), in seconds.
_WAIT_S = 0.1


class Cancelled(BaseException):
    """A solve started after its :func:`threaded_map` was told to stop (a BaseException: nothing swallows it)."""


class _Group:
    """The running solves of one :func:`threaded_map`: how to stop each, and whether it is stopping."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stops: set[Callable[[], None]] = set()
        self.stopping = False

    def stop_all(self) -> None:
        with self.lock:
            self.stopping = True
            stops = list(self.stops)
        for stop in stops:
            stop()


_local = threading.local()


@contextmanager
def cancellable(stop: Callable[[], None]) -> Iterator[None]:
    """Register ``stop`` (ends the solve the block runs) with the :func:`threaded_map` this thread works for.

    Raises :class:`Cancelled` on entry if that map is stopping. Outside a map it does nothing: there the
    caller's own thread receives the signal.
    """
    group: _Group | None = getattr(_local, "group", None)
    if group is None:
        yield
        return
    with group.lock:
        if group.stopping:
            raise Cancelled
        group.stops.add(stop)
    try:
        yield
    finally:
        with group.lock:
            group.stops.discard(stop)


def solve_threads() -> int:
    """Threads for side-by-side solves: ``PLACEMENT_WORKERS`` if set (a whole number ≥ 1), else the usable CPUs
    (one inside a daemonic worker process: its siblings use the others)."""
    env = os.environ.get("PLACEMENT_WORKERS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return int(env)
    if multiprocessing.current_process().daemon:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threaded_map(fn: Callable[[T], R], items: list[T], workers: int | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on up to ``workers`` threads (default :func:`solve_threads`), in order.

    If the calling thread is interrupted, or ``fn`` raises, every running solve is stopped and the workers
    are awaited before the exception propagates (that of the first item, in order, among those that failed by
    then). Called from a worker of another map, it runs in that worker: its solves stop with that map's.
    """
    workers = min(workers or solve_threads(), len(items))
    if workers <= 1 or getattr(_local, "group", None) is not None:
        return [fn(x) for x in items]
    group = _Group()

    def work(x: T) -> R:
        _local.group = group
        try:
            return fn(x)
        finally:
            _local.group = None

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="solve")
    futures: list[Future] = []
    try:
        # Each item in a copy of the caller's context: its solves see the caller's limits (solvers.limits).
        futures = [pool.submit(contextvars.copy_context().run, work, x) for x in items]
        while wait(futures, timeout=_WAIT_S, return_when=FIRST_EXCEPTION).not_done:
            if any(f.done() and f.exception() is not None for f in futures):
                break
        failed = [f for f in futures if f.done() and f.exception() is not None]
        if failed:
            raise failed[0].exception()
        return [f.result() for f in futures]
    except BaseException:
        _stop(group, futures)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _stop(group: _Group, futures: list[Future]) -> None:
    """Stop every solve of ``group`` until its workers have returned (a solve may register just after a stop)."""
    for f in futures:
        f.cancel()
    group.stop_all()
    while wait(futures, timeout=_WAIT_S).not_done:
        group.stop_all()
