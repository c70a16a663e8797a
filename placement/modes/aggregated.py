"""Aggregated serving (``aggregated``): one replica prefills and decodes, chunked prefill.

Route ``class|aggregated``: one step, ``serve``. Roofline replicas serve one
class each — a batch that meets one class's TPOT need not meet it when mixed
with longer contexts. Measured (Mélange-style) capacities, from the
instance's ``measured_capacity``, make one column per (chip, chips) that
serves every class measured on it, mixing them linearly as the measurements
were taken; with ``only_measured`` they are the only columns.

Capacity rule (requests/s per replica): each step carries B decode tokens and
a C-token prefill chunk, decode first. Two queues, the TTFT budget shared as
in :mod:`placement.core.evaluate`: the chunk channel is one server of service
p·t/C per prompt and latency ⌈p/C⌉·t (M/D/1,
:func:`placement.core.evaluate.prefill_queue`); the B slots are each held
o·t (:func:`placement.core.evaluate.slot_admission`). Capacity = the lower
of the two; TTFT = the channel's wait + ⌈p/C⌉·t + the wait for a slot, each
wait at the rate its own limit allows (at least the wait at the capacity).
Under data-parallel attention each of the dp groups runs its own chunk: dp such
channels, each at 1/dp of the rate (capacity ×dp, the same waits).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from costmodels import aggregated_step, fits, memory_per_chip_bytes
from placement.core.evaluate import (
    PartLayout,
    Perf,
    PoolConfig,
    decode_context_tokens,
    framework_latency_s,
    layout_args,
    max_context_tokens,
    precision_args,
    prefill_queue,
    prefix_reload_s,
    slot_admission,
    step_factor,
    step_precision_args,
)
from placement.modes.base import Grid, PoolKind, ServingMode, SharedColumn, main_sites
from placement.modes.layouts import BATCHES, parts, weights

if TYPE_CHECKING:
    from placement.core.context import Context
    from placement.core.schema import TrafficClass

__all__ = ["AGGREGATED", "CHUNKS", "MEASURED", "MODE"]

#: Prefill chunk sizes tried (tokens per step).
CHUNKS = (512, 2048, 8192)


def _aggregated(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    chip, m = ctx.chips[cfg.main.chip], ctx.model
    chunk = float(cfg.chunk_tokens)
    # A chunk attends to the cached prefix and, on average, half of the prompt before it.
    chunk_context = cls.cached_prefix_tokens + max(cls.prompt_tokens - chunk, 0) / 2
    # A chunk longer than the prompt holds C/p prompts, each reading its own cached prefix.
    chunk_prompts = max(chunk / cls.prompt_tokens, 1.0)
    st = aggregated_step(chip, m, batch=b, context=decode_context_tokens(cls), chunk_tokens=chunk,
                         chunk_context=chunk_context, chunk_prompts=chunk_prompts, **layout_args(cfg.main),
                         dp=cfg.main.dp,
                         **step_precision_args(ctx))
    t = np.asarray(st.time_s, dtype=float) * step_factor(ctx, cfg.main, "decode")
    steps_per_prompt = np.ceil(cls.prompt_tokens / chunk)
    # Each data-parallel group prefills its own prompts: dp channels, each at 1/dp of the rate.
    reload_s = prefix_reload_s(ctx, cls, cfg.main.chips)
    latency_s = steps_per_prompt * t + reload_s + framework_latency_s(ctx)
    channel_cap, prefill_ttft = prefill_queue(t * cls.prompt_tokens / chunk, latency_s, 1.0, cls)
    prefill_cap = cfg.main.dp * channel_cap
    decode_cap, slot_wait = slot_admission(b, cls.output_tokens * t, cls)
    cap = np.minimum(prefill_cap, decode_cap)
    ttft = prefill_ttft + slot_wait
    mem = memory_per_chip_bytes(chip, m, stage="decode", batch=b + cfg.main.dp, context=max_context_tokens(cls),
                                **layout_args(cfg.main), dp=cfg.main.dp, **precision_args(ctx))
    return Perf(cap, ttft, t, np.asarray(fits(chip, mem)), np.zeros(b.shape), np.asarray(mem))


def _measured(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    cap = np.full(b.shape, float(cfg.measured_rps))
    z = np.zeros(b.shape)
    return Perf(cap, z, z, np.ones(b.shape, dtype=bool), z, z)


AGGREGATED = PoolKind("aggregated", ("aggregated", None), _aggregated)
MEASURED = PoolKind("measured", ("aggregated", None), _measured, measured=True)


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
        res = next(s.resource for _, s in sorted(ctx.sites.items()) if s.chip.name == chip)
        part = PartLayout(chip=chip, site_resource=res, chips=chips, tp=chips, ep=1, pp=1)
        out.append(SharedColumn(name=f"measured|{res}-g{chips}",
                                config=PoolConfig(kind=MEASURED.name, traffic_class="*", main=part, batch=1),
                                capacity_rps=dict(sorted(caps.items()))))
    return out


MODE = ServingMode(
    name="aggregated", label="aggregated", option="aggregated", stages=("serve",), kinds=(AGGREGATED, MEASURED),
    grids=_grids, shared_columns=_measured_columns, color="tab:gray",
)
