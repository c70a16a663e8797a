"""Aggregated serving (``aggregated``): one replica prefills and decodes, chunked prefill.

Route ``class|aggregated``: one step, ``serve``. Roofline replicas serve one
class each — a batch that meets one class's TPOT need not meet it when mixed
with longer contexts. Measured (Mélange-style) capacities, from the
instance's ``measured_capacity``, make one column per (chip, chips) that
serves every class measured on it, mixing them linearly as the measurements
were taken; with ``only_measured`` they are the only columns.

Capacity rule (requests/s per replica): a step carries B decode tokens and
prompt tokens, decode first, at most C of them (the chunk budget). A prompt's
own steps carry a full chunk, of time t_C; a request's decode steps carry on
average the prompts of the sequences that replace finishing ones,
c̄ = min(C, (B − 1)·p/o) tokens (each of the other B − 1 slots is refilled once
per o steps): a share q = c̄/s of them carry s = max(min(C, p), c̄) prompt tokens
(a waiting prompt fills the budget) and the rest none, so the mean step is
t = (1 − q)·t_0 + q·t_s. Two queues, the TTFT budget shared as in
:mod:`placement.core.replicas.evaluate`: the chunk channel is one server of service
p·t_C/C per prompt and latency ⌈p/C⌉·t_C (M/D/1,
:func:`placement.core.replicas.queues.prefill_queue`); the B slots are each held
o·t (:func:`placement.core.replicas.queues.slot_admission`); TPOT is t, the mean over
a request's steps; a percentile TPOT (``tpot_percentile``) counts the steps that carry
prompt tokens among a request's o, binomially (:func:`tpot_percentile_s`). Capacity = the lower
of the two; TTFT = the channel's wait + ⌈p/C⌉·t_C + the wait for a slot, each
wait at the rate its own limit allows (at least the wait at the capacity).
Under data-parallel attention each of the dp groups runs its own chunk: dp such
channels, each at 1/dp of the rate (capacity ×dp, the same waits).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from costmodels import aggregated_step, fits, memory_per_chip_bytes
from placement.core.modes.base import Grid, PoolKind, ServingMode, SharedColumn, main_sites
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
from placement.core.replicas.queues import prefill_queue, slot_admission
from placement.core.verify.floors import aggregated_floor, measured_floor
from placement.modes.layouts import BATCHES, parts, weights

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = ["AGGREGATED", "CHUNKS", "MEASURED", "MODE"]

#: Prefill chunk sizes tried (tokens per step).
CHUNKS = (512, 2048, 8192)


def _aggregated(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    if on_grid(memo, b, BATCHES):
        # Generation asks for every configuration of the resource on the grid: one broadcast for all of them.
        res = cfg.main.site_resource
        table = class_table(memo, ("aggregated grid", cls.name, res), cls, lambda: _grid_table(ctx, cls, res, memo))
        if (perf := table.get((cfg.main, cfg.chunk_tokens))) is not None:
            return perf
    return _aggregated_perf(ctx, cfg.main, cls, Layouts.of(cfg.main), float(cfg.chunk_tokens), b)


def _aggregated_perf(ctx: Context, part: PartLayout, cls: TrafficClass, lay: Layouts, chunk, b: np.ndarray) -> Perf:
    """The capacity rule (module notes) on ``part``'s chip at layouts ``lay`` and chunks ``chunk`` (scalars,
    or arrays of ``b``'s shape: elementwise, so each point's floats are its configuration's alone)."""
    chip, m = ctx.chips[part.chip], ctx.model
    p, o = cls.prompt_tokens, cls.output_tokens

    def step_s(tokens):
        # A chunk attends to the cached prefix and, on average, half of the prompt before it; a chunk
        # longer than the prompt holds C/p prompts, each reading its own cached prefix.
        st = aggregated_step(chip, m, batch=b, context=decode_context_tokens(cls), chunk_tokens=tokens,
                             chunk_context=cls.cached_prefix_tokens + np.maximum(p - tokens, 0) / 2,
                             chunk_prompts=np.maximum(tokens / p, 1.0), **lay.args(), dp=lay.dp,
                             **step_precision_args(ctx))
        return banded_step_s(ctx, part, "decode", st)

    # A prompt's own steps carry a full chunk C (its prefill latency, the channel's service time). A
    # request's decode steps carry, on average, the prompts of the sequences that join as others finish:
    # each of a group's b/dp − 1 other slots is refilled once per o steps, c̄ = (b/dp − 1)·p/o tokens per
    # step, at most C. The scheduler does not spread them: a waiting prompt fills the step's budget, so a
    # share q = c̄/s of the steps carry s = max(min(C, p), c̄) prompt tokens and the rest none. The mean step
    # (what the mean TPOT and the slots' holding time see) is the mixture — not one step of c̄ tokens, which
    # would touch more experts per prompt token than a full step does and hide the chunk steps' compute.
    t_chunk = step_s(chunk)
    carried = np.minimum(chunk, np.maximum(b / lay.dp - 1.0, 0.0) * p / o)
    s = np.maximum(np.minimum(chunk, p), carried)
    q = carried / s
    t_plain, t_carry = step_s(0.0 * carried), step_s(s)
    t = (1.0 - q) * t_plain + q * t_carry
    tpot = t if cls.tpot_percentile == "mean" else tpot_percentile_s(cls, t, t_plain, t_carry, q)
    steps_per_prompt = np.ceil(p / chunk)
    # Each data-parallel group prefills its own prompts: dp channels, each at 1/dp of the rate.
    reload_s = prefix_reload_s(ctx, cls, lay.chips / lay.dp)  # a group's chips read its prompt's prefix
    latency_s = steps_per_prompt * t_chunk + reload_s + framework_latency_s(ctx, part.chip)
    # Each channel's prompts reload their prefixes over its group's chips' links: no faster than those read.
    interval_s = np.maximum(t_chunk * p / chunk, prefix_reload_link_s(ctx, cls, lay.chips / lay.dp))
    channel_cap, prefill_ttft = prefill_queue(interval_s, latency_s, 1.0, cls, channels=lay.dp)
    prefill_cap = lay.dp * channel_cap
    decode_cap, slot_wait = slot_admission(b, o * t, cls)
    cap = np.minimum(prefill_cap, decode_cap)
    ttft = prefill_ttft + slot_wait
    mem = memory_per_chip_bytes(chip, m, stage="decode", batch=b + lay.dp, context=max_context_tokens(cls),
                                **lay.args(), dp=lay.dp, **memory_args(ctx))
    ok = np.asarray(fits(chip, mem)) & engine_admits(ctx, b / lay.dp, lay.chips / lay.dp)
    return Perf(cap, ttft, tpot, ok, np.zeros(b.shape), np.asarray(mem))


#: Standard normal quantiles of the TPOT percentiles a class may bound.
_Z = {"p50": 0.0, "p90": 1.2815515655446004, "p99": 2.3263478740408408}


def tpot_percentile_s(cls: TrafficClass, t_mean, t_plain, t_chunk, share):
    """A percentile over requests of each request's TPOT when a ``share`` of all steps carry prompt tokens.

    A request's o decode steps each carry prompt tokens with probability q = ``share`` (the mean prompt
    tokens per step over a carrying step's): K ~ Bin(o, q) of them do, and each costs ``t_chunk − t_plain`` more
    than a step without one. Around the mean TPOT ``t_mean`` the request's TPOT moves by that much per
    step above the mean count, ``K/o − q``, whose percentile by the normal approximation is
    ``min(1 − q, z·sqrt(q(1 − q)/o))``. Over requests of varying o its variance is q(1 − q)·E[1/o]:
    o is their harmonic mean (``output_harmonic_tokens``).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> cls = NS(output_harmonic_tokens=100.0, tpot_percentile="p99")
    >>> round(float(tpot_percentile_s(cls, 0.012, 0.010, 0.030, 0.1)), 5)   # + 2.326 · 0.03 of 20 ms
    0.0134
    """
    q = np.clip(np.asarray(share, dtype=float), 0.0, 1.0)
    above = np.minimum(1.0 - q, _Z[cls.tpot_percentile] * np.sqrt(q * (1.0 - q) / cls.output_harmonic_tokens))
    return t_mean + (t_chunk - t_plain) * above


def _aggregated_many(ctx: Context, cfgs: list[PoolConfig], cls: TrafficClass, batches: list[np.ndarray]) -> list[Perf]:
    """:func:`_aggregated` of configurations on one chip, each over its batches, in one broadcast."""
    return broadcast_perf(_aggregated_perf, ctx, cfgs, cls, batches, [c.chunk_tokens for c in cfgs])


def _grid_table(ctx: Context, cls: TrafficClass, resource: str, memo: dict) -> dict[tuple, Perf]:
    """The grid evaluation of every aggregated configuration of ``cls`` on ``resource``, by (main part, chunk)."""
    cfgs = [g.config for g in _grids(ctx, cls, memo, resource)]
    perfs = _aggregated_many(ctx, cfgs, cls, [BATCHES] * len(cfgs)) if cfgs else []
    return {(c.main, c.chunk_tokens): p for c, p in zip(cfgs, perfs, strict=True)}


def _measured(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    cap = np.full(b.shape, float(cfg.measured_rps))
    z = np.zeros(b.shape)
    return Perf(cap, z, z, np.ones(b.shape, dtype=bool), z, z)


AGGREGATED = PoolKind("aggregated", ("aggregated", None), _aggregated, evaluate_many=_aggregated_many,
                      floor=aggregated_floor, words=("aggregated-serving", None), decodes=True, chunked=True,
                      shared_batch=True)
MEASURED = PoolKind("measured", ("aggregated", None), _measured, measured=True, floor=measured_floor,
                    words=("aggregated-serving", None))


def _grids(ctx: Context, cls: TrafficClass, memo: dict, resource: str | None = None) -> Iterator[Grid]:
    w = weights(ctx).all_bytes
    for site in main_sites(ctx, resource).values():
        for part in parts(ctx, site, "prefill", w, memo, data_parallel=True):
            for chunk in CHUNKS:
                yield Grid(PoolConfig(kind=AGGREGATED.name, traffic_class=cls.name, main=part, batch=1,
                                      chunk_tokens=chunk), "serve", BATCHES)


def _measured_columns(ctx: Context) -> list[SharedColumn]:
    """One column per (chip, chips) measured, serving every class it was measured for."""
    by_chip: dict[tuple[str, int], dict[str, float]] = {}
    for mc in ctx.instance.measured_capacity:
        step = str(MODE.route(mc.traffic_class).step("serve"))
        by_chip.setdefault((mc.chip, mc.chips), {})[step] = mc.max_rps_per_replica
    out = []
    for (chip, chips), caps in sorted(by_chip.items()):
        site = next(s for _, s in sorted(ctx.sites.items()) if s.chip.name == chip)
        tp = _measured_tp(chips, site.chips_per_domain, ctx.model.attention.heads)
        part = PartLayout(chip=chip, site_resource=site.resource, chips=chips, tp=tp, ep=1, pp=chips // tp)
        out.append(SharedColumn(name=f"measured|{site.resource}-g{chips}",
                                config=PoolConfig(kind=MEASURED.name, traffic_class="*", main=part, batch=1),
                                capacity_rps=dict(sorted(caps.items()))))
    return out


def _measured_tp(chips: int, domain_chips: int, heads: int) -> int:
    """The tensor-parallel width a measured replica of ``chips`` is labelled with: the widest power of two
    inside one domain dividing its chips and the heads (the rest of its chips are pipeline stages, as a
    replica larger than its domain is laid out); its capacity is the measured one whatever the layout.

    Examples
    --------
    >>> _measured_tp(8, 8, 32), _measured_tp(2, 1, 32), _measured_tp(144, 72, 64)
    (8, 1, 16)
    """
    tp = 1
    while tp * 2 <= min(chips, domain_chips) and chips % (tp * 2) == 0 and heads % (tp * 2) == 0:
        tp *= 2
    return tp


MODE = ServingMode(
    name="aggregated", label="aggregated", option="aggregated", stages=("serve",), kinds=(AGGREGATED, MEASURED),
    grids=_grids, shared_columns=_measured_columns, color="tab:gray",
)
