"""Prefill–decode disaggregation (``pd``): prefill replicas, then decode replicas; the KV cache crosses.

Route ``class|pd``: steps ``prefill`` → ``decode``, with a KV transfer of
:func:`costmodels.kv_transfer_bytes` per request between them. The prefill
kind is shared with every mode that prefills apart (``pd+draft``,
``pd-af``): one prefill column serves the prefill step of each.

Capacity rules (requests/s per replica):

* prefill: a replica starts a step on up to b waiting prompts (b from
  :data:`PREFILL_BATCHES`, b·prompt ≤ :data:`PREFILL_TOKEN_BUDGET` tokens), so
  a MoE reads the experts the batch touches once per step. Bulk-service queue
  (:func:`placement.core.replicas.queues.prefill_queue`). The step model
  (:func:`costmodels.prefill_step`) runs the b prompts as n = min(pp, b)
  micro-batches on n·tp chips at once in time t, so a micro-batch takes t/pp
  per stage: the first stage is free again after I = n·t/pp (the interval
  between steps), the last micro-batch leaves after (n + pp − 1)·t/pp; with
  the KV transfer of the b prompts at the replica's scale-out bandwidth that
  is the latency L. The TTFT part W + L ≤ (1 − s)·SLO, W the wait for a step
  (mean or percentile).
* decode: B slots, a sequence holds one for H = output_tokens·TPOT seconds;
  capacity = the highest rate whose wait for a slot (M/D/c,
  :func:`placement.core.replicas.queues.slot_admission`) is ≤ s·SLO, at most
  MAX_UTILISATION·B/H; TPOT ≤ SLO. The pool reports that wait as its TTFT part.

A measured step table of the instance (``measured_step_time``) replaces the
roofline step of the prefill or decode replicas it matches
(:mod:`placement.core.replicas.measured_steps`); the rules above stay.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from costmodels import decode_step, fits, kv_transfer_bytes, memory_per_chip_bytes, prefill_step
from placement.core.modes.base import Grid, PoolKind, ServingMode, TransferSpec, main_sites
from placement.core.modes.ids import RouteId
from placement.core.replicas.evaluate import (
    Layouts,
    PartLayout,
    Perf,
    PoolConfig,
    banded_step_s,
    broadcast_perf,
    class_table,
    decode_context_tokens,
    engine_admits,
    framework_latency_s,
    max_context_tokens,
    memory_args,
    on_grid,
    prefix_reload_link_s,
    prefix_reload_s,
    step_precision_args,
)
from placement.core.replicas.measured_steps import measured_step_s
from placement.core.replicas.queues import prefill_queue, slot_admission
from placement.core.verify.floors import decode_floor, prefill_floor
from placement.modes.layouts import BATCHES, parts, weights

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = ["DECODE", "MODE", "PREFILL", "PREFILL_BATCHES", "PREFILL_TOKEN_BUDGET", "kv_bytes", "kv_transfer",
           "prefill_batches", "prefill_grids"]

#: Prompts a prefill replica may start in one step.
PREFILL_BATCHES = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])

#: New tokens one prefill step may hold (engines' max_num_batched_tokens); a single prompt is always allowed.
PREFILL_TOKEN_BUDGET = 65536


def prefill_batches(cls: TrafficClass) -> np.ndarray:
    """The prefill batches tried for ``cls``: 1, and those whose prompts fit the token budget.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> prefill_batches(SimpleNamespace(prompt_tokens=20000)).tolist()
    [1.0, 2.0]
    """
    fit = PREFILL_BATCHES * cls.prompt_tokens <= PREFILL_TOKEN_BUDGET
    return PREFILL_BATCHES[(PREFILL_BATCHES == 1.0) | fit]


def kv_bytes(ctx: Context, cls: TrafficClass) -> float:
    """KV cache bytes one request ships from prefill to decode."""
    return float(kv_transfer_bytes(ctx.model, cls.prompt_tokens, cls.cached_prefix_tokens,
                                   ctx.instance.precision.kv, cls.prefix_cached_on_decode))


def _prefill(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    if (perf := _on_grid(ctx, cfg, cls, b, memo, PREFILL.name, prefill_batches(cls))) is not None:
        return perf
    return _prefill_perf(ctx, cfg.main, cls, Layouts.of(cfg.main), b)


def _prefill_perf(ctx: Context, part: PartLayout, cls: TrafficClass, lay: Layouts, b: np.ndarray) -> Perf:
    """The prefill capacity rule (module notes) on ``part`` at layouts ``lay`` (``part``'s own, or arrays of
    ``b``'s shape on its chip without a measured table: elementwise, each point its configuration's alone)."""
    chip, m = ctx.chips[part.chip], ctx.model
    st = prefill_step(chip, m, prompt=cls.prompt_tokens, cached=cls.cached_prefix_tokens, batch=b,
                      **lay.args(), dp=lay.dp, **step_precision_args(ctx))
    t, covered = banded_step_s(ctx, part, "prefill", st), True
    if (measured := measured_step_s(ctx, part, "prefill", b, cls.prompt_tokens, cls.name)) is not None:
        t, covered = measured
    nic = lay.chips * chip.scale_out_bandwidth_bytes_per_s
    transfer_s = b * kv_transfer_bytes(m, cls.prompt_tokens, cls.cached_prefix_tokens, ctx.instance.precision.kv,
                                       cls.prefix_cached_on_decode) / nic
    # The step runs n = min(pp, b) micro-batches, each stage taking t/pp of the step time t for one of them.
    pp = lay.pp
    n_mb = np.minimum(pp, b)
    latency = (t * (n_mb + pp - 1) / pp + transfer_s + prefix_reload_s(ctx, cls, lay.chips, b)
               + framework_latency_s(ctx, part.chip))
    # A step is admitted every t·n/pp, and no faster than the links to a KV tier read its b prefixes.
    cap, ttft = prefill_queue(np.maximum(t * n_mb / pp, prefix_reload_link_s(ctx, cls, lay.chips, b)), latency, b, cls)
    mem = memory_per_chip_bytes(chip, m, stage="prefill", batch=b, context=cls.cached_prefix_tokens + cls.prompt_tokens,
                                **lay.args(), dp=lay.dp, **memory_args(ctx))
    return Perf(cap, ttft, np.zeros(b.shape), np.asarray(fits(chip, mem)) & covered, np.zeros(b.shape),
                np.asarray(mem))


def _decode(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    if (perf := _on_grid(ctx, cfg, cls, b, memo, DECODE.name, BATCHES)) is not None:
        return perf
    return _decode_perf(ctx, cfg.main, cls, Layouts.of(cfg.main), b)


def _decode_perf(ctx: Context, part: PartLayout, cls: TrafficClass, lay: Layouts, b: np.ndarray) -> Perf:
    """The decode capacity rule (module notes), as :func:`_prefill_perf` takes its arguments."""
    chip, m = ctx.chips[part.chip], ctx.model
    st = decode_step(chip, m, batch=b, context=decode_context_tokens(cls), **lay.args(), dp=lay.dp,
                     **step_precision_args(ctx))
    tpot, covered = banded_step_s(ctx, part, "decode", st), True
    if (measured := measured_step_s(ctx, part, "decode", b, decode_context_tokens(cls), cls.name)) is not None:
        tpot, covered = measured
    cap, wait = slot_admission(b, cls.output_tokens * tpot, cls)
    mem = memory_per_chip_bytes(chip, m, stage="decode", batch=b, context=max_context_tokens(cls),
                                **lay.args(), dp=lay.dp, **memory_args(ctx))
    ok = np.asarray(fits(chip, mem)) & covered & engine_admits(ctx, b / lay.dp, lay.chips / lay.dp)
    return Perf(cap, wait, tpot, ok, np.zeros(b.shape), np.asarray(mem))


#: The rule of each kind, as :func:`_prefill_perf` takes its arguments.
_PERF = {"prefill": _prefill_perf, "decode": _decode_perf}


def _many(ctx: Context, cfgs: list[PoolConfig], cls: TrafficClass, batches: list[np.ndarray]) -> list[Perf]:
    """:func:`_prefill` or :func:`_decode` of configurations of that kind on one chip, each over its batches:
    one broadcast, unless an instance's measured step table may replace some of their steps."""
    perf_of = _PERF[cfgs[0].kind]
    if ctx.instance.measured_step_time:
        return [perf_of(ctx, c.main, cls, Layouts.of(c.main), b) for c, b in zip(cfgs, batches, strict=True)]
    return broadcast_perf(perf_of, ctx, cfgs, cls, batches)


def _on_grid(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, memo: dict, kind: str,
             grid: np.ndarray) -> Perf | None:
    """``cfg``'s evaluation over ``b`` from the memo's table of every ``kind`` configuration of ``cls`` on its
    resource over the kind's ``grid`` (one broadcast, built when first asked); None when ``b`` is not that
    grid, the memo is not kept across calls, or ``cfg`` is not among the grids' configurations."""
    if not on_grid(memo, b, grid):
        return None
    res = cfg.main.site_resource

    def build() -> dict:
        grids = [g for g in _grids(ctx, cls, memo, res) if g.config.kind == kind]
        perfs = _many(ctx, [g.config for g in grids], cls, [g.batches for g in grids]) if grids else []
        return {g.config.main: p for g, p in zip(grids, perfs, strict=True)}

    return class_table(memo, ("pd grid", kind, cls.name, res), cls, build).get(cfg.main)


PREFILL = PoolKind("prefill", ("prefill", None), _prefill, evaluate_many=_many, floor=prefill_floor, step_table=True,
                   batch_search=False)
DECODE = PoolKind("decode", ("decode", None), _decode, evaluate_many=_many, floor=decode_floor, decodes=True,
                  step_table=True, shared_batch=True)


def prefill_grids(ctx: Context, cls: TrafficClass, memo: dict, resource: str | None = None) -> Iterator[Grid]:
    """Prefill replicas of every layout on every resource, or on ``resource`` (shared by the modes that prefill
    apart)."""
    w = weights(ctx).all_bytes
    for site in main_sites(ctx, resource).values():
        for part in parts(ctx, site, "prefill", w, memo):
            yield Grid(PoolConfig(kind=PREFILL.name, traffic_class=cls.name, main=part, batch=1), "prefill",
                       prefill_batches(cls))


def kv_transfer(ctx: Context, cls: TrafficClass, route: RouteId) -> list[TransferSpec]:
    """The transfer of a prefill → decode route: the request's KV cache (shared by the modes that prefill apart)."""
    return [TransferSpec(route=route, name="kv", source=route.step("prefill"), target=route.step("decode"),
                         bytes_per_request=kv_bytes(ctx, cls))]


def _grids(ctx: Context, cls: TrafficClass, memo: dict, resource: str | None = None) -> Iterator[Grid]:
    yield from prefill_grids(ctx, cls, memo, resource)
    w = weights(ctx).all_bytes
    for site in main_sites(ctx, resource).values():
        for part in parts(ctx, site, "decode", w, memo, data_parallel=True):
            yield Grid(PoolConfig(kind=DECODE.name, traffic_class=cls.name, main=part, batch=1), "decode", BATCHES)


MODE = ServingMode(
    name="pd", label="PD", option="pd", stages=("prefill", "decode"), kinds=(PREFILL, DECODE), grids=_grids,
    transfers=kv_transfer, color="tab:cyan",
)
