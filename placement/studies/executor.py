"""Run many independent jobs (sweep points, benchmark cases) in parallel, deterministically.

``run_map(fn, items)`` calls ``fn(item)`` for every item and returns one
:class:`Outcome` per item **in input order**, whichever executor ran them and
in whatever order they finished. A job that raises is reported as failed with
its error text — never dropped, never re-raised.

Executors: ``"local"`` (a process pool, the default; ``workers=1`` runs in this
process), ``"ray"`` (an existing Ray cluster at ``address``, or a local one;
Ray is an optional extra). ``fn`` must be a picklable top-level function.
:func:`generation_executor` sends candidate generation's (class, chip type)
jobs (:mod:`placement.core.replicas.parallel_generation`) to the same executors.

Examples
--------
>>> from placement.studies.executor import run_map
>>> [o.value for o in run_map(abs, [-1, 2, -3], workers=1)]
[1, 2, 3]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

from placement.core.instance.errors import InputError
from placement.studies.jobs import Outcome, call
from placement.studies.ray_executor import generation_mapper as ray_mapper
from placement.studies.ray_executor import run_map_ray

__all__ = ["EXECUTORS", "Outcome", "generation_executor", "run_map", "set_generation_executor"]

EXECUTORS = ("local", "ray")


def run_map(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Outcome]:
    """Apply ``fn`` to every item; outcomes in input order.

    Parameters
    ----------
    executor
        ``"local"`` or ``"ray"``.
    workers
        Processes for ``"local"`` (default: CPU count; 1 runs inline).
    address
        Ray cluster address (``"auto"``, ``"ray://host:10001"``); None starts a local Ray.
    progress
        Called as ``progress(done, total)`` after each job finishes.
    """
    if executor not in EXECUTORS:
        raise InputError(f"expected one of {', '.join(EXECUTORS)}, got {executor!r}", field="--executor")
    n = len(items)
    if executor == "ray":
        return run_map_ray(fn, items, address=address, workers=workers, progress=progress)
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise InputError(f"expected workers >= 1, got {workers}", field="--workers")
    results: list[Outcome | None] = [None] * n
    if workers == 1 or n <= 1:
        for i, item in enumerate(items):
            results[i] = call(fn, i, item)
            if progress:
                progress(i + 1, n)
        return results  # type: ignore[return-value]
    with ProcessPoolExecutor(max_workers=min(workers, n)) as pool:
        futures = {pool.submit(call, fn, i, item): i for i, item in enumerate(items)}
        for done, fut in enumerate(as_completed(futures), start=1):
            i = futures[fut]
            try:
                results[i] = fut.result()
            except Exception as e:  # noqa: BLE001 - a crashed worker is a failed point
                results[i] = Outcome(i, error=f"{type(e).__name__}: {e}")
            if progress:
                progress(done, n)
    return results  # type: ignore[return-value]


def _generation_mapper(executor: str, address: str | None):
    """The job mapper of ``executor`` for candidate generation (None: the local process pool)."""
    if executor not in EXECUTORS:
        raise InputError(f"expected one of {', '.join(EXECUTORS)}, got {executor!r}", field="--executor")
    if executor == "local":
        return None
    return ray_mapper(address)


def set_generation_executor(executor: str = "local", address: str | None = None) -> None:
    """Generate this process's later candidates on ``executor``: ``"local"`` (forked process pool on large
    instances, the default) or ``"ray"`` (a task per (class, chip type) job on the cluster at ``address``; a
    private local Ray when None)."""
    from placement.core.replicas.parallel_generation import set_job_mapper

    set_job_mapper(_generation_mapper(executor, address))


@contextmanager
def generation_executor(executor: str, address: str | None = None) -> Iterator[None]:
    """:func:`set_generation_executor` for the block, as it was after it."""
    from placement.core.replicas.parallel_generation import job_mapper

    with job_mapper(_generation_mapper(executor, address)):
        yield
