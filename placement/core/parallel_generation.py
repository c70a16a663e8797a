"""Candidate generation spread over processes, one traffic class at a time.

Pruning and the integer batch search compare columns of one class only, so
the classes of an instance can be generated apart and their kept candidates
merged by name: :func:`placement.core.candidates.generate` gives the same
columns, in the same order, with one process or several. A pool pays only
when the work is large — forking and sending the kept candidates back cost
tens of milliseconds — so :func:`generation_workers` asks for one only on
instances with many (class, chip type, chip type) combinations, and the
``PLACEMENT_WORKERS`` environment variable overrides it (``1``: never).

The workers are forked: they inherit the context (fleet graph, catalogue)
instead of receiving it, and send back only the kept candidates. Results
come back in class order whatever finishes first.

Examples
--------
>>> from pathlib import Path
>>> import placement
>>> from placement.core.context import Context
>>> ctx = Context.of(placement.load_instance(Path(placement.__file__).parent / "instances/melange-toy.yaml"))
>>> generation_workers(ctx)     # a small instance: one process
1
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from placement.core.context import Context
    from placement.core.schema import TrafficClass

__all__ = ["MIN_PARALLEL_WORK", "class_candidates_in_pool", "forked_map", "generation_workers", "pool_workers"]

T = TypeVar("T")

#: Classes × chip types × (chip types, with attention–FFN pairs) from which generation uses a process pool.
MIN_PARALLEL_WORK = 256

#: The jobs a forked worker runs (set in the parent just before the pool forks).
_JOBS: list[Callable[[], Any]] | None = None


def _work(ctx: Context) -> int:
    """How many (class, chip type[, partner chip type]) combinations generation visits."""
    types = len(ctx.resources())
    pairs = "pd-af" in ctx.instance.modes
    return len(ctx.instance.workload.classes) * types * (types if pairs else 1)


def generation_workers(ctx: Context) -> int:
    """Processes to generate ``ctx``'s candidates with: :func:`pool_workers` for its work against
    :data:`MIN_PARALLEL_WORK`."""
    return pool_workers(_work(ctx), MIN_PARALLEL_WORK)


def pool_workers(work: int, threshold: int) -> int:
    """Processes for a job list: ``PLACEMENT_WORKERS`` if set, else the CPUs when ``work`` reaches
    ``threshold``, and 1 for smaller work, inside a daemonic worker, or where processes cannot be forked."""
    env = os.environ.get("PLACEMENT_WORKERS", "").strip()
    if env:
        try:
            return max(int(env), 1)
        except ValueError:
            from placement.core.errors import InputError

            raise InputError(f"expected a whole number of processes, got {env!r}",
                             field="PLACEMENT_WORKERS") from None
    if (work < threshold or multiprocessing.current_process().daemon
            or "fork" not in multiprocessing.get_all_start_methods()):
        return 1
    return max(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 1)


def _run(index: int) -> Any:
    assert _JOBS is not None
    return _JOBS[index]()


def forked_map(jobs: list[Callable[[], T]], workers: int) -> list[T]:
    """The results of ``jobs``, in order, from ``workers`` forked processes (this one when 1).

    The workers inherit the jobs (closures over contexts and problems are never pickled); only the
    results travel back, so they must pickle.
    """
    global _JOBS
    if workers <= 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    _JOBS = jobs
    try:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                                 mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_run, range(len(jobs))))
    finally:
        _JOBS = None


def class_candidates_in_pool(ctx: Context, classes: list[TrafficClass], workers: int) -> list[tuple[list, int, int]]:
    """Per class, in order: (kept candidates, batches evaluated, batches feasible), from ``workers`` forked
    processes."""
    from placement.core.candidates import _class_candidates

    # Largest classes first would balance better, but the order of the results is the classes'.
    return forked_map([partial(_class_candidates, ctx, [c], {}) for c in classes], workers)
