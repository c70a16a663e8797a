"""Every candidate column of an instance: generation (:mod:`placement.core.replicas.generation`) per class and
chip type, in one process or spread over several (:mod:`placement.core.replicas.parallel_generation`), merged
into one :class:`~placement.core.replicas.generation.Candidates` with the shared columns of the modes.

Examples
--------
>>> from pathlib import Path
>>> import placement
>>> from placement.core.instance.context import Context
>>> ctx = Context.of(placement.load_instance(Path(placement.__file__).parent / "instances/melange-toy.yaml"))
>>> cands = generate(ctx)
>>> cands.kept, sorted(c.main.chip for c in cands.configs.values())
(2, ['a100-80gb', 'a10g'])
"""

from __future__ import annotations

from placement.core.instance.context import Context
from placement.core.modes.enabled import enabled_modes
from placement.core.replicas import parallel_generation
from placement.core.replicas.candidate_records import records
from placement.core.replicas.evaluate import PartLayout
from placement.core.replicas.generation import Candidates, class_candidates, no_cycle_collection
from solvers.problem import Column, Part

__all__ = ["Candidates", "generate"]


def generate(ctx: Context, workers: int | None = None, network_free_from: int | None = None) -> Candidates:
    """Enumerate, evaluate and prune every replica configuration of the instance.

    Classes and main chip types are independent (pruning and the batch search compare columns of one
    class, kind and resources), so a large instance spreads (class, chip type) jobs over ``workers``
    processes (default :func:`generation_workers`) or Ray tasks
    (:func:`~placement.core.replicas.parallel_generation.generation_executor`); the result is the same column for
    column, in the same order. The cycle collector is off meanwhile
    (:func:`~placement.core.replicas.generation.no_cycle_collection`).

    With ``network_free_from`` the two-part columns are pruned network-free (K0, :mod:`placement.core.replicas.generation`;
    ``Candidates.network_free``) when K0 has at least that many columns, else the full way. In one
    process the same evaluated candidates are pruned again; with several, the jobs prune network-free
    only when the fleet is large (:data:`~placement.core.replicas.parallel_generation.MIN_PARALLEL_WORK`) and
    are run again the full way if K0 is too small all the same.
    """
    with no_cycle_collection():
        return _generate(ctx, workers, network_free_from)


def _generate(ctx: Context, workers: int | None, network_free_from: int | None = None) -> Candidates:
    """:func:`generate`, with the cycle collector as the caller left it."""
    classes = list(ctx.instance.workload.classes)
    out = Candidates()
    shared = [s for mode in enabled_modes(ctx) for s in (mode.shared_columns(ctx) if mode.shared_columns else [])]
    wanted = None if network_free_from is None else network_free_from - len(shared)
    # Jobs apart cannot count K0 as a whole: they prune network-free only on fleets large enough for a
    # pool, whose K0 is large, and are run again the full way if it is not.
    apart = wanted is not None and parallel_generation.generation_work(ctx) >= parallel_generation.MIN_PARALLEL_WORK
    results = parallel_generation.parallel_candidates(ctx, classes, workers, network_free=apart)
    if results is not None and apart and any(r[3] for r in results) and sum(len(r[0]) for r in results) < wanted:
        results = parallel_generation.parallel_candidates(ctx, classes, workers)  # K0 too small: the full way
    if results is None:  # one process does it all
        results = [class_candidates(ctx, classes, out.memo, network_free_from=wanted)]
    kept = sorted((p for r in results for p in r[0]), key=lambda p: p.name)
    out.generated = sum(r[1] for r in results)
    out.feasible = sum(r[2] for r in results)
    out.network_free = any(r[3] for r in results)
    part_of: dict[tuple[str, int], Part] = {}  # one (frozen) record per resource and size, shared by the columns

    def part(lay: PartLayout) -> Part:
        key = (lay.site_resource, lay.chips)
        if key not in part_of:
            part_of[key] = Part(resource=lay.site_resource, units=lay.chips)
        return part_of[key]

    out.configs, out.columns = records(kept, part)
    for column in shared:
        main = column.config.main
        out.configs[column.name] = column.config
        out.columns.append(Column(name=column.name, parts=[Part(resource=main.site_resource, units=main.chips)],
                                  capacity=column.capacity_rps))
        out.generated += len(column.capacity_rps)
        out.feasible += len(column.capacity_rps)
    out.memo.clear()  # only needed while generating; plans and executors need not carry it
    return out
