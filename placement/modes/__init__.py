"""Serving modes, one module each, in one registry.

A serving mode is a way to serve a traffic class: a route of stages (steps
the solver must cover at the class's rate), the kinds of replica that run
them, the candidate configurations of those replicas on a fleet, what
crosses the network between two steps, and the label and colour that tables
and charts show (:class:`~placement.modes.base.ServingMode`). Generation
(:mod:`placement.core.replicas.candidates`), the SLO floors of a diagnosis
(:func:`placement.core.pipeline.diagnose.slo_floor`), evaluation
(:func:`placement.core.replicas.evaluate.evaluate`), the plan's stages and the
studies' labels all read them here.

==============  =========  =====================  ===================================
mode            option     route stages           replica kinds (stages of their parts)
==============  =========  =====================  ===================================
``aggregated``  aggregated serve                  aggregated, measured
``pd``          pd         prefill → decode (KV)  prefill, decode
``pd+draft``    pd         prefill → decode (KV)  prefill, decode-spec (decode, draft)
``pd-af``       pd-af      prefill → decode (KV)  prefill, decode-af (decode-attention, decode-ffn)
==============  =========  =====================  ===================================

The *option* is the entry of an instance's ``modes`` list that allows the
mode (``pd+draft`` needs ``pd`` and a draft model). Modes are tried in the
order registered: routes, and the steps a shared configuration serves (one
prefill column serves the prefill step of every mode that prefills apart),
follow it.

A new mode is one module defining a :class:`~placement.modes.base.ServingMode`
and its registration; the instance schema then accepts its option::

    # placement/modes/kv_tier.py
    MODE = ServingMode(name="kv-tier", label="KV tier", option="kv-tier",
                       stages=("prefill", "decode"), kinds=(PREFILL, TIERED_DECODE),
                       grids=_grids, transfers=kv_transfer)

    # here, below the built-in modes
    register(kv_tier.MODE)

Examples
--------
>>> from placement.modes import MODES, get_mode, options
>>> list(MODES), options()
(['aggregated', 'pd', 'pd+draft', 'pd-af'], ('aggregated', 'pd', 'pd-af'))
>>> [str(s) for s in get_mode("pd-af").steps("chat")]
['chat|pd-af|prefill', 'chat|pd-af|decode']
>>> STAGE_OF_KIND["decode-af"]
('decode-attention', 'decode-ffn')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.modes.base import Grid, GridSet, PoolKind, ServingMode, SharedColumn, TransferSpec
from placement.modes.ids import RouteId, StepId
from placement.modes.registry import (
    MODES,
    STAGE_OF_KIND,
    check_kind,
    check_option,
    check_stage,
    colors,
    get_mode,
    labels,
    options,
    pool_kind,
    register,
    stages,
)

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = [
    "MODES",
    "STAGE_OF_KIND",
    "Grid",
    "GridSet",
    "PoolKind",
    "RouteId",
    "ServingMode",
    "SharedColumn",
    "StepId",
    "TransferSpec",
    "check_kind",
    "check_option",
    "check_stage",
    "colors",
    "configurations",
    "enabled_modes",
    "get_mode",
    "labels",
    "options",
    "pool_kind",
    "register",
    "stages",
    "transfers",
]


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

    A mode's :class:`~placement.modes.base.GridSet` is handed out whole with ``sets`` (generation
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


def _register_builtin() -> None:
    from placement.modes import aggregated, pd, pd_af, pd_draft

    for module in (aggregated, pd, pd_draft, pd_af):
        register(module.MODE)


_register_builtin()
