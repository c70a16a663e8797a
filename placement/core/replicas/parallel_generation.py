"""Candidate generation spread over processes or Ray tasks, one (traffic class, chip type) at a time.

Pruning and the integer batch search compare columns of one class, kind and
resources only, so the configurations of each class whose main part runs on
one chip type (:func:`placement.core.modes.enabled.configurations` with ``resource``) can
be generated apart and their kept candidates merged by name:
:func:`placement.core.replicas.candidates.generate` gives the same columns, in the
same order, with one process or several. A pool pays only when the work is
large — forking and sending the kept candidates back cost tens of
milliseconds — so :func:`generation_workers` asks for one only on instances
with many (class, chip type, chip type) combinations, and the
``PLACEMENT_WORKERS`` environment variable overrides it (``1``: never).

The local workers are forked: they inherit the context (fleet graph,
catalogue) instead of receiving it, and send back only the kept candidates.
Jobs start in order of domain size, largest first (a proxy of their work:
larger domains offer more layouts; on the 1,000-domain benchmark instance
this order leaves two workers 0.5 % above an even split of the 85 CPU s,
against 7 % for one job per class); results are merged in job order
whatever finishes first. A job mapper (:func:`job_mapper`) runs them
elsewhere instead: :func:`placement.studies.executor.generation_executor`
``"ray"`` makes every job a Ray task that receives the pickled context once
(~80 kB on the 1,000-domain benchmark instance, 2 ms to pickle or rebuild).

Examples
--------
>>> from pathlib import Path
>>> import placement
>>> from placement.core.instance.context import Context
>>> ctx = Context.of(placement.load_instance(Path(placement.__file__).parent / "instances/melange-toy.yaml"))
>>> generation_workers(ctx)     # a small instance: one process
1
>>> [(c.name, r) for c, r in generation_jobs(ctx, ctx.instance.workload.classes)][:2]
[('short-in-short-out', 'a100-80gb@1'), ('short-in-short-out', 'a10g@1')]
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from placement.core.replicas.generation import class_candidates, no_cycle_collection

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = ["MIN_PARALLEL_WORK", "JobMapper", "forked_map", "generation_job", "generation_jobs", "generation_work",
           "generation_workers", "job_mapper", "job_memo", "parallel_candidates", "pool_workers", "set_job_mapper"]

T = TypeVar("T")

#: Classes × chip types × (chip types, with attention–FFN pairs) from which generation uses a process pool.
MIN_PARALLEL_WORK = 256

#: The jobs a forked worker runs (set in the parent just before the pool forks).
_JOBS: list[Callable[[], Any]] | None = None

#: Runs generation jobs elsewhere: ``mapper(fn, items, workers)`` returns ``[fn(item) for item in items]`` in
#: order, raising if one fails (``fn`` and the items pickle).
JobMapper = Callable[[Callable[[Any], Any], list, "int | None"], list]

#: The mapper later generations use; None: this process or a forked pool.
_MAPPER: JobMapper | None = None

#: (context, memo): the cost-model results the jobs of one context share in one process.
_SHARED_MEMO: list = [None, {}]


def set_job_mapper(mapper: JobMapper | None = None) -> None:
    """Run this process's later candidate generations with ``mapper`` (None: locally)."""
    global _MAPPER
    _MAPPER = mapper


@contextmanager
def job_mapper(mapper: JobMapper | None) -> Iterator[None]:
    """:func:`set_job_mapper` for the block, as it was after it."""
    was = _MAPPER
    set_job_mapper(mapper)
    try:
        yield
    finally:
        set_job_mapper(was)


def generation_work(ctx: Context) -> int:
    """How many (class, chip type[, partner chip type]) combinations generation visits."""
    types = len(ctx.resources())
    pairs = "pd-af" in ctx.instance.modes
    return len(ctx.instance.workload.classes) * types * (types if pairs else 1)


def generation_workers(ctx: Context) -> int:
    """Processes to generate ``ctx``'s candidates with: :func:`pool_workers` for its work against
    :data:`MIN_PARALLEL_WORK`."""
    return pool_workers(generation_work(ctx), MIN_PARALLEL_WORK)


def pool_workers(work: int, threshold: int) -> int:
    """Processes for a job list: ``PLACEMENT_WORKERS`` if set, else the CPUs when ``work`` reaches
    ``threshold``, and 1 for smaller work, inside a daemonic worker, or where processes cannot be forked."""
    env = os.environ.get("PLACEMENT_WORKERS", "").strip()
    if env:
        try:
            return max(int(env), 1)
        except ValueError:
            from placement.core.instance.errors import InputError

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


def generation_jobs(ctx: Context, classes: list[TrafficClass]) -> list[tuple[TrafficClass, str]]:
    """Every (class, main chip type) job, classes in order, chip types in the fleet's order."""
    return [(cls, res) for cls in classes for res in ctx.resources()]


def _largest_first(ctx: Context, jobs: list[tuple[TrafficClass, str]]) -> list[int]:
    """Job indices, chip types with the largest domains (a proxy of the most replica layouts) first."""
    chips = {res: site.chips_per_domain for res, site in ctx.resources().items()}
    return sorted(range(len(jobs)), key=lambda i: -chips[jobs[i][1]])


def parallel_candidates(ctx: Context, classes: list[TrafficClass], workers: int | None,
                        network_free: bool = False) -> list[tuple[list, int, int, bool]] | None:
    """Per (class, chip type) job of :func:`generation_jobs`, in order: (kept candidates, batches evaluated,
    batches feasible, whether two-part ones were pruned network-free), from the job mapper
    (:func:`job_mapper`) or ``workers`` forked processes (default :func:`generation_workers`), largest
    jobs first; None when one process should generate everything. ``network_free``: every job prunes its
    two-part candidates network-free (:mod:`placement.core.replicas.candidates`)."""
    jobs = generation_jobs(ctx, classes)
    if workers == 1 or len(jobs) <= 1:
        return None
    mapper = _MAPPER
    if mapper is None:
        workers = generation_workers(ctx) if workers is None else workers
        if workers <= 1:
            return None
        mapper = _forked_mapper
    order = _largest_first(ctx, jobs)
    job = partial(generation_job, ctx, network_free=True) if network_free else partial(generation_job, ctx)
    try:
        done = mapper(job, [(jobs[i][0].name, jobs[i][1]) for i in order], workers)
    finally:
        _SHARED_MEMO[:] = [None, {}]  # jobs run here, if any, leave nothing behind
    results: list = [None] * len(jobs)
    for i, r in zip(order, done, strict=True):
        results[i] = r
    return results


def _forked_mapper(fn: Callable[[Any], T], items: list, workers: int) -> list[T]:
    """The local :data:`JobMapper`: ``fn`` of every item in ``workers`` forked processes (:func:`forked_map`)."""
    return forked_map([partial(fn, item) for item in items], workers)


def generation_job(ctx: Context, job: tuple[str, str], network_free: bool = False) -> tuple[list, int, int, bool]:
    """One job: the kept candidates of class ``job[0]`` on main chip type ``job[1]`` (cycle collector off,
    as in :func:`placement.core.replicas.candidates.generate`), two-part ones pruned network-free if asked."""
    cls = next(c for c in ctx.instance.workload.classes if c.name == job[0])
    with no_cycle_collection():
        return class_candidates(ctx, [cls], job_memo(ctx), job[1], network_free_from=0 if network_free else None)


def job_memo(ctx: Context) -> dict:
    """The memo of cost-model results the jobs of ``ctx`` share in this process.

    One process generating everything shares one memo over every class and chip type
    (:func:`placement.core.replicas.candidates.generate`); a forked worker running several jobs does the same
    (an FFN half is timed once for every attention chip type and class, not once per job). A worker is
    forked from a parent whose memo was reset, and ends with the pool; a job mapper's process keeps the
    memo of the last context it saw.
    """
    if _SHARED_MEMO[0] is not ctx:
        _SHARED_MEMO[:] = [ctx, {}]
    return _SHARED_MEMO[1]
