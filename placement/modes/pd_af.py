"""Attention–FFN disaggregation (``pd-af``): prefill → decode split into attention and FFN halves.

Route ``class|pd-af``: steps ``prefill`` → ``decode`` with the KV transfer of
:mod:`placement.modes.pd` (the prefill replicas are shared with it). A decode
replica pairs ``dp`` attention groups on one chip type with one FFN group on
another (MegaScale-Infer's M:N ratio, DeepSeek's data-parallel attention),
ping-ponging :data:`MICRO_BATCHES` micro-batches, at each latency the fleet
offers between the two chip types.

Capacity rule (requests/s per replica): TPOT from
:func:`costmodels.af.af_pipeline` — activations return to the attention side
after every layer, so the FFN half is timed layer by layer on one stage's
``tp`` chips, S streams keep its ``pp`` stages busy, and each crossing goes
over the sending group's and the active stage's NICs, with the link's latency
per crossing; ``dp`` attention groups of batch B: dp·B slots each held
output_tokens·TPOT, capacity and wait for a slot by
:func:`placement.core.evaluate.slot_admission`.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from costmodels import (
    af_activation_bytes_per_token,
    af_pipeline,
    af_stream_counts,
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
    slot_admission,
    step_factor,
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
    """``dp`` attention groups of B sequences, m micro-batches each, in S streams over ``pp`` FFN stages.

    TPOT is the closed-loop bound of :func:`costmodels.af.af_pipeline`, at the
    stream count that minimises it (the scheduler's choice among
    :func:`costmodels.af.af_stream_counts`). A group's micro-batch crosses over
    that group's NICs; a stream reaches only the NICs of the stage holding the
    current layer (``tp`` chips of the FFN side, not all of them).
    """
    m = ctx.model
    att, ffn = cfg.main, cfg.partner
    a_chip, f_chip = ctx.chips[att.chip], ctx.chips[ffn.chip]
    mb, dp = cfg.micro_batches, att.dp
    t_attn, amem = _half(ctx, memo, "attention", att, b / mb, b, cls)
    ep_ffn = ffn.ep > 1
    act = ctx.instance.precision.activations
    bytes_per_token = af_activation_bytes_per_token(m, act, ffn_expert_parallel=ep_ffn)
    group_nic = att.tp * a_chip.scale_out_bandwidth_bytes_per_s
    stage_nic = ffn.tp * f_chip.scale_out_bandwidth_bytes_per_s
    attn_comm = af_transfer_s(m, b / mb, group_nic, lat, act, ffn_expert_parallel=ep_ffn)
    tpot = fmem = None
    for streams in af_stream_counts(dp, mb, ffn.pp):
        tokens = dp * b / streams
        t_ffn, fmem = _half(ctx, memo, "ffn", ffn, tokens, dp * b, cls)
        ffn_comm = af_transfer_s(m, tokens, stage_nic, lat, act, ffn_expert_parallel=ep_ffn)
        pipe = af_pipeline(t_attn, t_ffn, attn_comm, ffn_comm, micro_batches=mb, streams=streams,
                           layers=m.layers, pp=ffn.pp)
        tpot = pipe.tpot_s if tpot is None else np.minimum(tpot, pipe.tpot_s)
    tpot = np.asarray(tpot, dtype=float)
    cap, wait = slot_admission(dp * b, cls.output_tokens * tpot, cls)
    ok = np.asarray(fits(a_chip, amem)) & np.asarray(fits(f_chip, fmem))
    pair = dp * b * bytes_per_token / tpot
    return Perf(cap, wait, tpot, ok, pair, amem)


def _half(ctx: Context, memo: dict, half: str, part: PartLayout, step_batch, memory_batch,
          cls: TrafficClass) -> tuple[np.ndarray, np.ndarray]:
    """(time through all L layers s, memory per chip bytes) of one half of a replica, kept in ``memo``.

    The FFN half is timed layer by layer on the ``tp`` chips of one stage
    (``pp = 1`` in the step model): activations go back to the attention side
    after every layer, so a micro-batch never has more than one stage working
    on it. Its memory is that of the real ``pp``-stage layout. Generation pairs
    every attention half with every FFN half at every latency, and each half
    costs the same in all of its pairings.
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
            step = decode_ffn_step(chip, m, batch=step_batch, **{**layout, "pp": 1}, **step_prec)
            stage = "decode-ffn"
        mem = memory_per_chip_bytes(chip, m, stage=stage, batch=memory_batch, context=max_context_tokens(cls),
                                    **layout, **prec)
        memo[key] = (np.asarray(step.time_s, dtype=float) * step_factor(ctx, part, "decode"),
                     np.asarray(mem, dtype=float))
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
