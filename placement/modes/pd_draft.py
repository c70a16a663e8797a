"""Speculative decoding after a disaggregated prefill (``pd+draft``): prefill → target + draft decode.

Allowed by the ``pd`` option when the instance has a draft model. Route
``class|pd+draft``: steps ``prefill`` → ``decode`` with the KV transfer of
:mod:`placement.modes.pd` (the prefill replicas are shared with it). The
draft runs co-located with the target model or on a remote chip type
(``draft.placement``), for every draft length γ up to the acceptance rates
given; a remote draft pairs the target replica with a draft replica and the
latency of the link between them.

Capacity rule (requests/s per replica): a cycle drafts γ tokens, verifies
them in one target step and, remote, waits a round trip; it yields
E = :func:`costmodels.expected_tokens_per_verify` tokens, so
TPOT = (γ·t_draft + t_verify + RTT)/E; B slots each held output_tokens·TPOT,
capacity and wait for a slot by :func:`placement.core.replicas.queues.slot_admission`.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from costmodels import (
    draft_memory_per_chip_bytes,
    draft_step,
    expected_tokens_per_verify,
    fits,
    memory_per_chip_bytes,
    verify_step,
)
from placement.core.modes.base import Grid, PoolKind, ServingMode, main_sites
from placement.core.replicas.evaluate import (
    Perf,
    PoolConfig,
    banded_step_s,
    decode_context_tokens,
    engine_admits,
    layout_args,
    max_context_tokens,
    memory_args,
    step_precision_args,
)
from placement.core.replicas.pair_latencies import pair_latencies
from placement.core.replicas.queues import slot_admission
from placement.core.verify.floors import speculative_floor
from placement.modes.layouts import BATCHES, parts, weights
from placement.modes.pd import PREFILL, kv_transfer, prefill_grids

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = ["DECODE_SPEC", "MODE"]

#: Draft bytes per sequence per cycle are token ids and accept/reject flags: this many per token.
_TOKEN_BYTES = 8.0


def _decode_spec(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    draft = ctx.instance.draft
    if draft is None or ctx.draft_model is None:
        raise ValueError("decode-spec pool in an instance without a draft model")
    chip, m, dm = ctx.chips[cfg.main.chip], ctx.model, ctx.draft_model
    prec = memory_args(ctx)
    gamma = cfg.draft_tokens or draft.gamma
    if gamma > draft.gamma:
        raise ValueError(f"draft length {gamma} exceeds the {draft.gamma} acceptance rates given")
    t_verify = banded_step_s(ctx, cfg.main, "decode", verify_step(
        chip, m, batch=b, context=decode_context_tokens(cls), gamma=gamma, **layout_args(cfg.main),
        **step_precision_args(ctx)))
    dpart = cfg.partner or cfg.main
    dchip = ctx.chips[dpart.chip]
    colocated = cfg.partner is None
    t_draft = banded_step_s(ctx, dpart, "decode", draft_step(
        dchip, dm, colocated=colocated, batch=b, context=decode_context_tokens(cls), **layout_args(dpart),
        **step_precision_args(ctx)))
    rtt = 2.0 * lat if cfg.partner is not None else 0.0
    e = expected_tokens_per_verify(draft.acceptance[:gamma])
    tpot = (gamma * t_draft + t_verify + rtt) / e
    cap, wait = slot_admission(b, cls.output_tokens * tpot, cls)
    mem = np.asarray(memory_per_chip_bytes(chip, m, stage="decode", batch=b, context=max_context_tokens(cls),
                                           **layout_args(cfg.main), **prec), dtype=float)
    dmem = np.asarray(draft_memory_per_chip_bytes(dchip, dm, colocated=colocated, batch=b,
                                                  context=max_context_tokens(cls), **layout_args(dpart), **prec),
                      dtype=float)
    if colocated:
        ok = np.asarray(fits(chip, mem + dmem))
        mem = mem + dmem
    else:
        ok = np.asarray(fits(chip, mem)) & np.asarray(fits(dchip, dmem))
    ok = ok & engine_admits(ctx, b / cfg.main.dp, cfg.main.chips / cfg.main.dp)
    pair = b * (gamma + 1) * _TOKEN_BYTES / np.maximum(tpot * e, 1e-12)
    return Perf(cap, wait, tpot, ok, pair, mem)


def _where(cfg: PoolConfig) -> str:
    return f"{cfg.main.chip} with a draft on {cfg.partner.chip}" if cfg.partner else cfg.main.chip


DECODE_SPEC = PoolKind("decode-spec", ("decode", "draft"), _decode_spec, where=_where, partner="optional",
                       floor=speculative_floor, decodes=True, drafts=True)


def _grids(ctx: Context, cls: TrafficClass, memo: dict, resource: str | None = None) -> Iterator[Grid]:
    yield from prefill_grids(ctx, cls, memo, resource)
    draft = ctx.instance.draft
    gammas = range(1, draft.gamma + 1)
    w = weights(ctx).all_bytes
    resources = ctx.resources()
    for res, site in main_sites(ctx, resource).items():
        targets = parts(ctx, site, "decode", w, memo)
        if draft.placement in ("any", "colocated"):
            for part, gamma in product(targets, gammas):
                yield Grid(PoolConfig(kind=DECODE_SPEC.name, traffic_class=cls.name, main=part, batch=1,
                                      draft_tokens=gamma), "decode", BATCHES)
        if draft.placement not in ("any", "remote"):
            continue
        dw = ctx.draft_model.weight_bytes(ctx.instance.precision.weights)
        for res_d, site_d in resources.items():
            if res_d == res:
                continue
            lats = pair_latencies(ctx, res, res_d, memo)
            drafts = parts(ctx, site_d, "decode", dw, memo)
            # A draft model is small: replicas beyond twice the smallest that holds it add nothing.
            drafts = [d for d in drafts if d.chips <= 2 * drafts[0].chips] if drafts else []
            for part, dpart, gamma in product(targets, drafts, gammas):
                cfg = PoolConfig(kind=DECODE_SPEC.name, traffic_class=cls.name, main=part, partner=dpart, batch=1,
                                 draft_tokens=gamma)
                for lat in lats:
                    yield Grid(cfg, "decode", BATCHES, lat)


MODE = ServingMode(
    name="pd+draft", label="PD+draft", option="pd", stages=("prefill", "decode"), kinds=(PREFILL, DECODE_SPEC),
    grids=_grids, transfers=kv_transfer, requires_draft=True, color="tab:green",
)
