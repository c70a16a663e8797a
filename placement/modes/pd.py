"""Prefill–decode disaggregation (``pd``): prefill replicas, then decode replicas; the KV cache crosses.

Route ``class|pd``: steps ``prefill`` → ``decode``, with a KV transfer of
:func:`costmodels.kv_transfer_bytes` per request between them. The prefill
kind is shared with every mode that prefills apart (``pd+draft``,
``pd-af``): one prefill column serves the prefill step of each.

Capacity rules (requests/s per replica):

* prefill: M/D/1 per replica (:func:`placement.core.evaluate.md1_capacity`),
  service S = prefill interval (latency / pp, a pipeline admits a new prompt
  per stage time); TTFT = W_q + prefill latency + KV transfer ≤ SLO,
  the transfer at the replica's scale-out bandwidth.
* decode: a sequence holds a batch slot for output_tokens·TPOT seconds;
  capacity = B / (output_tokens·TPOT), TPOT ≤ SLO.

A measured step table of the instance (``measured_step_time``) replaces the
roofline step of the prefill or decode replicas it matches
(:mod:`placement.core.measured_steps`); the rules above stay.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from costmodels import decode_step, fits, kv_transfer_bytes, memory_per_chip_bytes, prefill_step
from placement.core.evaluate import (
    Perf,
    PoolConfig,
    decode_context_tokens,
    layout_args,
    max_context_tokens,
    md1_capacity,
    precision_args,
    step_precision_args,
)
from placement.core.measured_steps import measured_step_s
from placement.modes.base import Grid, PoolKind, ServingMode, TransferSpec
from placement.modes.ids import RouteId
from placement.modes.layouts import BATCHES, parts, weights

if TYPE_CHECKING:
    from placement.core.context import Context
    from placement.core.schema import TrafficClass

__all__ = ["DECODE", "MODE", "PREFILL", "PREFILL_BATCHES", "kv_bytes", "kv_transfer", "prefill_grids"]

#: Prefill replicas take one prompt at a time (a pipeline overlaps them).
PREFILL_BATCHES = np.array([1.0])


def kv_bytes(ctx: Context, cls: TrafficClass) -> float:
    """KV cache bytes one request ships from prefill to decode."""
    return float(kv_transfer_bytes(ctx.model, cls.prompt_tokens, cls.cached_prefix_tokens,
                                   ctx.instance.precision.kv, cls.prefix_cached_on_decode))


def _prefill(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    chip, m = ctx.chips[cfg.main.chip], ctx.model
    st = prefill_step(chip, m, prompt=cls.prompt_tokens, cached=cls.cached_prefix_tokens, batch=b,
                      **layout_args(cfg.main), **step_precision_args(ctx))
    step_s, covered = np.asarray(st.time_s, dtype=float), True
    if (measured := measured_step_s(ctx, cfg.main, "prefill", b, cls.prompt_tokens, cls.name)) is not None:
        step_s, covered = measured
    nic = cfg.main.chips * chip.scale_out_bandwidth_bytes_per_s
    transfer_s = b * kv_transfer_bytes(m, cls.prompt_tokens, cls.cached_prefix_tokens, ctx.instance.precision.kv,
                                       cls.prefix_cached_on_decode) / nic
    latency = step_s + transfer_s
    service = step_s / cfg.main.pp
    cap = md1_capacity(service, latency, cls.ttft_s, b)
    mem = memory_per_chip_bytes(chip, m, stage="prefill", batch=b, context=cls.cached_prefix_tokens + cls.prompt_tokens,
                                **layout_args(cfg.main), **precision_args(ctx))
    return Perf(cap, latency, np.zeros(b.shape), np.asarray(fits(chip, mem)) & covered, np.zeros(b.shape),
                np.asarray(mem))


def _decode(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    chip, m = ctx.chips[cfg.main.chip], ctx.model
    st = decode_step(chip, m, batch=b, context=decode_context_tokens(cls), **layout_args(cfg.main),
                     **step_precision_args(ctx))
    tpot, covered = np.asarray(st.time_s, dtype=float), True
    if (measured := measured_step_s(ctx, cfg.main, "decode", b, decode_context_tokens(cls), cls.name)) is not None:
        tpot, covered = measured
    cap = b / (cls.output_tokens * tpot)
    mem = memory_per_chip_bytes(chip, m, stage="decode", batch=b, context=max_context_tokens(cls),
                                **layout_args(cfg.main), **precision_args(ctx))
    return Perf(cap, np.zeros(b.shape), tpot, np.asarray(fits(chip, mem)) & covered, np.zeros(b.shape),
                np.asarray(mem))


PREFILL = PoolKind("prefill", ("prefill", None), _prefill)
DECODE = PoolKind("decode", ("decode", None), _decode)


def prefill_grids(ctx: Context, cls: TrafficClass, memo: dict) -> Iterator[Grid]:
    """Prefill replicas of every layout on every resource (shared by the modes that prefill apart)."""
    w = weights(ctx).all_bytes
    for site in ctx.resources().values():
        for part in parts(ctx, site, "prefill", w, memo):
            yield Grid(PoolConfig(kind=PREFILL.name, traffic_class=cls.name, main=part, batch=1), "prefill",
                       PREFILL_BATCHES)


def kv_transfer(ctx: Context, cls: TrafficClass, route: RouteId) -> list[TransferSpec]:
    """The transfer of a prefill → decode route: the request's KV cache (shared by the modes that prefill apart)."""
    return [TransferSpec(route=route, name="kv", source=route.step("prefill"), target=route.step("decode"),
                         bytes_per_request=kv_bytes(ctx, cls))]


def _grids(ctx: Context, cls: TrafficClass, memo: dict) -> Iterator[Grid]:
    yield from prefill_grids(ctx, cls, memo)
    w = weights(ctx).all_bytes
    for site in ctx.resources().values():
        for part in parts(ctx, site, "decode", w, memo):
            yield Grid(PoolConfig(kind=DECODE.name, traffic_class=cls.name, main=part, batch=1), "decode", BATCHES)


MODE = ServingMode(
    name="pd", label="PD", option="pd", stages=("prefill", "decode"), kinds=(PREFILL, DECODE), grids=_grids,
    transfers=kv_transfer, color="tab:cyan",
)
