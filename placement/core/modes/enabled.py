"""What the serving modes an instance allows offer it: the modes, their candidate grids, their transfers.

Generation (:mod:`placement.core.replicas.candidates`), the problem's routes and transfers
(:mod:`placement.core.pipeline.problem`), the SLO floors of a diagnosis and the verifier read the
registered modes through these functions, in registration order
(:mod:`placement.core.modes.registry`); they know no mode by name.

Examples
--------
>>> from placement.core.instance.context import Context
>>> from placement.core.instance.loading import load_instance
>>> ctx = Context.of(load_instance("instances/melange-toy.yaml"))
>>> [m.name for m in enabled_modes(ctx)], ctx.instance.modes
(['aggregated'], ['aggregated'])
>>> transfers(ctx)
[]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.core.modes.base import Grid, GridSet, ServingMode, TransferSpec
from placement.core.modes.registry import MODES

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = ["configurations", "enabled_modes", "transfers"]


def enabled_modes(ctx: Context) -> list[ServingMode]:
    """The modes the instance allows (:meth:`ServingMode.enabled`), in registration order."""
    return [m for m in MODES.values() if m.enabled(ctx)]


def configurations(ctx: Context, cls: TrafficClass, memo: dict, resource: str | None = None,
                   sets: bool = False) -> list[tuple[Grid | GridSet, list[str]]]:
    """Every candidate grid of ``cls`` on the fleet (only those whose main part runs on ``resource``, if
    given: one generation job's share), once each, with the steps it serves.

    The grids of the enabled modes in order; a configuration two modes both
    offer (the prefill replicas) is one grid serving a step of each. None with
    ``only_measured``: measured capacities replace the cost models. Candidate
    generation keeps the columns that meet the class's SLOs; the SLO floors
    of a diagnosis are the best latencies over the same grids.

    A mode's :class:`~placement.core.modes.base.GridSet` is handed out whole with ``sets`` (generation
    evaluates it as one array), else as its grids; a set's configurations are its mode's own (the
    paired kinds of one mode), so sets are not merged.
    """
    if ctx.instance.only_measured:
        return []
    merged: dict[tuple, tuple[Grid | GridSet, list[str]]] = {}
    for mode in enabled_modes(ctx):
        route = mode.route(cls.name)
        for item in mode.grids(ctx, cls, memo) if resource is None else mode.grids(ctx, cls, memo, resource):
            if isinstance(item, GridSet) and sets:
                merged[id(item), None] = (item, [str(route.step(item.stage))])
                continue
            for grid in item.grids(memo) if isinstance(item, GridSet) else (item,):
                key = (grid.config, grid.pair_latency_s)
                step = str(route.step(grid.stage))
                if key not in merged:
                    merged[key] = (grid, [step])
                elif (merged[key][0].batches == grid.batches).all():
                    merged[key][1].append(step)
                else:
                    raise ValueError(f"modes offer {grid.config.kind} configurations on different batch grids")
    return list(merged.values())


def transfers(ctx: Context) -> list[TransferSpec]:
    """What crosses the network between the steps of every class's routes in the enabled modes."""
    return [t for cls in ctx.instance.workload.classes for mode in enabled_modes(ctx)
            for t in mode.transfers(ctx, cls, mode.route(cls.name))]
