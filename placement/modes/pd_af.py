"""Attention–FFN disaggregation (``pd-af``): prefill → decode split into attention and FFN halves.

Route ``class|pd-af``: steps ``prefill`` → ``decode`` with the KV transfer of
:mod:`placement.modes.pd` (the prefill replicas are shared with it). A decode
replica pairs ``dp`` attention groups on one chip type with one FFN group on
another (MegaScale-Infer's M:N ratio, DeepSeek's data-parallel attention),
ping-ponging :data:`MICRO_BATCHES` micro-batches, at each latency the fleet
offers between the two chip types.

Capacity rule (requests/s per replica): TPOT from
:func:`costmodels.comm.af_tpot_s` with the link's latency per layer
crossing; ``dp`` attention groups of batch B feed one FFN group that sees
dp·B tokens, so capacity = dp·B / (output_tokens·TPOT).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from costmodels import (
    af_activation_bytes_per_token,
    af_tpot_s,
    af_transfer_s,
    decode_attention_step,
    decode_ffn_step,
    fits,
    memory_per_chip_bytes,
)
from placement.core.evaluate import (
    PartLayout,
    Perf,
    PoolConfig,
    decode_context_tokens,
    layout_args,
    max_context_tokens,
    precision_args,
    step_precision_args,
)
from placement.modes.base import Grid, PoolKind, ServingMode
from placement.modes.layouts import BATCHES, attention_parts, pair_latencies, parts, weights
from placement.modes.pd import PREFILL, kv_transfer, prefill_grids

if TYPE_CHECKING:
    from placement.core.context import Context
    from placement.core.schema import TrafficClass

__all__ = ["DECODE_AF", "MICRO_BATCHES", "MODE"]

#: Ping-pong depth of attention–FFN replicas (MegaScale-Infer uses 2–3).
MICRO_BATCHES = 2


def _decode_af(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    m = ctx.model
    a_chip, f_chip = ctx.chips[cfg.main.chip], ctx.chips[cfg.partner.chip]
    mb, dp = cfg.micro_batches, cfg.main.dp
    t_attn, amem = _half(ctx, memo, "attention", cfg.main, b / mb, b, cls)
    t_ffn, fmem = _half(ctx, memo, "ffn", cfg.partner, dp * b / mb, dp * b, cls)
    ep_ffn = cfg.partner.ep > 1
    bytes_per_token = af_activation_bytes_per_token(m, ctx.instance.precision.activations, ffn_expert_parallel=ep_ffn)
    nic = min(cfg.main.chips * a_chip.scale_out_bandwidth_bytes_per_s,
              cfg.partner.chips * f_chip.scale_out_bandwidth_bytes_per_s)
    comm = af_transfer_s(m, dp * b / mb, nic, lat, ctx.instance.precision.activations, ffn_expert_parallel=ep_ffn)
    tpot = np.asarray(af_tpot_s(t_attn, t_ffn, comm, mb), dtype=float)
    cap = dp * b / (cls.output_tokens * tpot)
    ok = np.asarray(fits(a_chip, amem)) & np.asarray(fits(f_chip, fmem))
    pair = dp * b * bytes_per_token / tpot
    return Perf(cap, np.zeros(b.shape), tpot, ok, pair, amem)


def _half(ctx: Context, memo: dict, half: str, part: PartLayout, step_batch, memory_batch,
          cls: TrafficClass) -> tuple[np.ndarray, np.ndarray]:
    """(step time s, memory per chip bytes) of one half of a replica, kept in ``memo``.

    Generation pairs every attention half with every FFN half at every
    latency, and each half costs the same in all of its pairings.
    """
    step_batch = np.asarray(step_batch, dtype=float)
    key = (half, part.chip, part.tp, part.ep, part.pp, decode_context_tokens(cls), max_context_tokens(cls),
           step_batch.tobytes(), np.asarray(memory_batch, dtype=float).tobytes())
    if key not in memo:
        chip, m, prec, step_prec = ctx.chips[part.chip], ctx.model, precision_args(ctx), step_precision_args(ctx)
        layout = layout_args(part)
        if half == "attention":
            step = decode_attention_step(chip, m, batch=step_batch, context=decode_context_tokens(cls), **layout,
                                         **step_prec)
            stage = "decode-attention"
        else:
            step = decode_ffn_step(chip, m, batch=step_batch, **layout, **step_prec)
            stage = "decode-ffn"
        mem = memory_per_chip_bytes(chip, m, stage=stage, batch=memory_batch, context=max_context_tokens(cls),
                                    **layout, **prec)
        memo[key] = (np.asarray(step.time_s, dtype=float), np.asarray(mem, dtype=float))
    return memo[key]


def _where(cfg: PoolConfig) -> str:
    return f"{cfg.main.chip} attention + {cfg.partner.chip} FFN"


DECODE_AF = PoolKind("decode-af", ("decode-attention", "decode-ffn"), _decode_af, where=_where)


def _grids(ctx: Context, cls: TrafficClass, memo: dict) -> Iterator[Grid]:
    yield from prefill_grids(ctx, cls, memo)
    w = weights(ctx)
    resources = ctx.resources()
    for res, site in resources.items():
        for res_f, site_f in resources.items():
            if res_f == res:
                continue
            lats = pair_latencies(ctx, res, res_f, memo)
            for apart, fpart in product(attention_parts(ctx, site, w.attention_bytes),
                                        parts(ctx, site_f, "decode-ffn", w.ffn_bytes, memo)):
                cfg = PoolConfig(kind=DECODE_AF.name, traffic_class=cls.name, main=apart, partner=fpart, batch=1,
                                 micro_batches=MICRO_BATCHES)
                for lat in lats:
                    yield Grid(cfg, "decode", BATCHES, lat)


MODE = ServingMode(
    name="pd-af", label="PD+AF", option="pd-af", stages=("prefill", "decode"), kinds=(PREFILL, DECODE_AF),
    grids=_grids, transfers=kv_transfer, color="tab:red",
)
