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
from functools import partial
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from costmodels import (
    af_activation_bytes_per_token,
    af_pipeline_tpot_s,
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
from placement.modes.base import Grid, GridSet, PoolKind, ServingMode, main_sites
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

    Generation asks for every pairing of two resources (:func:`_pairings`) at every latency between them:
    the first call evaluates them all at once (:func:`_evaluate_pairings`) and keeps the others in
    ``memo`` until asked. Outside generation one configuration is evaluated alone.
    """
    res_a, res_f = cfg.main.site_resource, cfg.partner.site_resource
    block, pairings = ("decode-af", cls.name, res_a, res_f, b.tobytes()), ("decode-af pairings", cls.name, res_a, res_f)
    if block not in memo and pairings in memo:
        memo[block] = _evaluate_pairings(ctx, cls, b, memo, *memo.pop(pairings))
    rows, key = memo.get(block), (id(cfg), lat)
    if rows is None or key not in rows or rows[key][0] is not cfg:
        return _evaluate_pairings(ctx, cls, b, memo, [cfg], [lat])[key][1]
    perf = rows.pop(key)[1]
    if not rows:
        del memo[block]
    return perf


def _evaluate_pairings(ctx: Context, cls: TrafficClass, b: np.ndarray, memo: dict, cfgs: list[PoolConfig],
                       lats: list[float]) -> dict[tuple[int, float], tuple[PoolConfig, Perf]]:
    """(configuration, :class:`Perf`) of every configuration of ``cfgs`` (one pair of chip types) at every
    latency of ``lats``, by (``id`` of the configuration, latency): the rows of :func:`_pairing_perf`.
    The configurations generation asks for are these objects, and an id is cheaper to hash than the record.
    """
    shape = b.shape  # one batch (a verifier's) is a grid of one, given back as it came
    perf = _pairing_perf(ctx, cls, np.atleast_1d(b), memo, cfgs, lats)
    same = shape == perf.capacity_rps.shape[2:]
    # (configuration, latency) rows as views, in that order.
    caps_of, waits_of, tpots_of, pairs_of = (list(x.reshape(len(cfgs) * len(lats), -1))
                                             for x in (perf.capacity_rps, perf.ttft_s, perf.tpot_s,
                                                       perf.pair_bytes_per_s))
    fits_of, mems_of = list(perf.fits[:, 0]), list(perf.memory_per_chip_bytes[:, 0])
    out, at_row = {}, 0
    for cfg, fit, mem in zip(cfgs, fits_of, mems_of, strict=True):
        for lat_s in lats:
            row = (caps_of[at_row], waits_of[at_row], tpots_of[at_row], fit, pairs_of[at_row], mem)
            out[id(cfg), lat_s] = cfg, Perf(*(row if same else (x.reshape(shape) for x in row)))
            at_row += 1
    return out


def _pairing_perf(ctx: Context, cls: TrafficClass, b: np.ndarray, memo: dict, cfgs: list[PoolConfig],
                  lats: list[float]) -> Perf:
    """:class:`Perf` of every configuration of ``cfgs`` (one pair of chip types) at every latency of ``lats``
    over the batches ``b``: capacity, TTFT (the wait for a slot), TPOT and pair traffic of shape
    (configurations, latencies, batches), fits and memory per chip of shape (configurations, 1, batches).

    Configurations with the same attention groups, micro-batches, FFN stages and FFN expert parallelism
    run the same stream counts: each such set is one array of shape (configurations, latencies, batches)
    through :func:`costmodels.af.af_pipeline` and :func:`placement.core.evaluate.slot_admission`. Every
    formula is elementwise, so each entry is what evaluating its configuration alone gives.
    """
    m = ctx.model
    act = ctx.instance.precision.activations
    lat = np.asarray(lats, dtype=float)[None, :, None]
    sets: dict[tuple, list[int]] = {}
    for i, cfg in enumerate(cfgs):
        sets.setdefault((cfg.main.dp, cfg.micro_batches, cfg.partner.pp, cfg.partner.ep > 1), []).append(i)
    done = []
    for (dp, mb, pp, ep_ffn), index in sets.items():
        group = [cfgs[i] for i in index]
        a_chip, f_chip = ctx.chips[group[0].main.chip], ctx.chips[group[0].partner.chip]
        step_b = b / mb
        # Each distinct half once (the pairings of one attention or FFN part share it), then a row per pairing.
        a_parts, a_of = _distinct([c.main for c in group])
        f_parts, f_of = _distinct([c.partner for c in group])
        halves = [_half(ctx, memo, "attention", p, step_b, b, cls) for p in a_parts]
        t_attn = np.stack([t for t, _ in halves])[a_of][:, None, :]
        amem = np.stack([mem for _, mem in halves])[a_of]
        bytes_per_token = af_activation_bytes_per_token(m, act, ffn_expert_parallel=ep_ffn)
        group_nic = np.array([c.main.tp * a_chip.scale_out_bandwidth_bytes_per_s for c in group])[:, None, None]
        stage_nic = np.array([c.partner.tp * f_chip.scale_out_bandwidth_bytes_per_s for c in group])[:, None, None]
        attn_comm = af_transfer_s(m, b / mb, group_nic, lat, act, ffn_expert_parallel=ep_ffn)
        tpot = fmem = None
        dp_b = dp * b
        for streams in af_stream_counts(dp, mb, pp):
            tokens = dp * b / streams
            ffn = [_half(ctx, memo, "ffn", p, tokens, dp_b, cls) for p in f_parts]
            t_ffn = np.stack([t for t, _ in ffn])[f_of][:, None, :]
            if fmem is None:  # the FFN memory holds dp·B sequences whatever the streams
                fmem = np.stack([mem for _, mem in ffn])[f_of]
            ffn_comm = af_transfer_s(m, tokens, stage_nic, lat, act, ffn_expert_parallel=ep_ffn)
            at_s = af_pipeline_tpot_s(t_attn, t_ffn, attn_comm, ffn_comm, micro_batches=mb, streams=streams,
                                      layers=m.layers, pp=pp)
            tpot = at_s if tpot is None else np.minimum(tpot, at_s)
        tpot = np.asarray(tpot, dtype=float)
        ok = np.asarray(fits(a_chip, amem)) & np.asarray(fits(f_chip, fmem))
        pair = dp * b * bytes_per_token / tpot
        done.append((index, dp * b, tpot, ok, pair, amem))
    # One slot admission for every set (it is elementwise): the slot counts and holds of each set, flat.
    slots = np.concatenate([np.broadcast_to(s, t.shape).ravel() for _, s, t, *_ in done])
    hold = np.concatenate([(cls.output_tokens * t).ravel() for _, _, t, *_ in done])
    caps, waits = slot_admission(slots, hold, cls)
    full = (len(cfgs), len(lats), len(b))
    cap, wait, tpot_all, pair_all = (np.empty(full) for _ in range(4))
    fit_all, mem_all = np.empty((len(cfgs), 1, len(b)), dtype=bool), np.empty((len(cfgs), 1, len(b)))
    at = 0
    for index, _, tpot, ok, pair, amem in done:
        cap[index] = caps[at:at + tpot.size].reshape(tpot.shape)
        wait[index] = waits[at:at + tpot.size].reshape(tpot.shape)
        at += tpot.size
        tpot_all[index], pair_all[index] = tpot, pair
        fit_all[index, 0], mem_all[index, 0] = ok, amem
    return Perf(cap, wait, tpot_all, fit_all, pair_all, mem_all)


def _distinct(items: list) -> tuple[list, np.ndarray]:
    """The distinct objects of ``items`` (by identity, in first-seen order) and each item's index among them.

    Examples
    --------
    >>> a, b = object(), object()
    >>> firsts, index = _distinct([a, b, a])
    >>> firsts == [a, b], index.tolist()
    (True, [0, 1, 0])
    """
    position: dict[int, int] = {}
    firsts = []
    for x in items:
        if id(x) not in position:
            position[id(x)] = len(firsts)
            firsts.append(x)
    return firsts, np.array([position[id(x)] for x in items], dtype=np.intp)


def _half(ctx: Context, memo: dict, half: str, part: PartLayout, step_batch, memory_batch,
          cls: TrafficClass) -> tuple[np.ndarray, np.ndarray]:
    """(time through all L layers s, memory per chip bytes) of one half of a replica, kept in ``memo``.

    The FFN half is timed layer by layer on the ``tp`` chips of one stage
    (``pp = 1`` in the step model): activations go back to the attention side
    after every layer, so a micro-batch never has more than one stage working
    on it. Its memory is that of the real ``pp``-stage layout. Generation pairs
    every attention half with every FFN half at every latency, and each half
    costs the same in all of its pairings; the FFN step reads no context, so
    every class shares it.
    """
    step_batch = np.asarray(step_batch, dtype=float)
    memory_batch = np.asarray(memory_batch, dtype=float)
    attention = half == "attention"
    step_key = ("af step", half, part.chip, part.tp, part.ep, part.pp if attention else 1,
                decode_context_tokens(cls) if attention else None, step_batch.tobytes())
    mem_key = ("af memory", half, part.chip, part.tp, part.ep, part.pp, max_context_tokens(cls),
               memory_batch.tobytes())
    if step_key in memo and mem_key in memo:
        return memo[step_key], memo[mem_key]
    chip, m, step_prec = ctx.chips[part.chip], ctx.model, step_precision_args(ctx)
    layout = layout_args(part)
    if step_key not in memo:
        if attention:
            step = decode_attention_step(chip, m, batch=step_batch, context=decode_context_tokens(cls), **layout,
                                         **step_prec)
        else:
            step = decode_ffn_step(chip, m, batch=step_batch, **{**layout, "pp": 1}, **step_prec)
        memo[step_key] = np.asarray(step.time_s, dtype=float) * step_factor(ctx, part, "decode")
    if mem_key not in memo:
        stage = "decode-attention" if attention else "decode-ffn"
        memo[mem_key] = np.asarray(memory_per_chip_bytes(chip, m, stage=stage, batch=memory_batch,
                                                         context=max_context_tokens(cls), **layout,
                                                         **precision_args(ctx)), dtype=float)
    return memo[step_key], memo[mem_key]


def _where(cfg: PoolConfig) -> str:
    return f"{cfg.main.chip} attention + {cfg.partner.chip} FFN"


DECODE_AF = PoolKind("decode-af", ("decode-attention", "decode-ffn"), _decode_af, where=_where)


def _pairings(ctx: Context, cls: TrafficClass, res: str, res_f: str, memo: dict) -> list[PoolConfig]:
    """Attention halves on ``res`` paired with FFN halves on ``res_f``, in the order generation visits them."""
    w = weights(ctx)
    resources = ctx.resources()
    return [PoolConfig(kind=DECODE_AF.name, traffic_class=cls.name, main=apart, partner=fpart, batch=1,
                       micro_batches=MICRO_BATCHES)
            for apart, fpart in product(attention_parts(ctx, resources[res], w.attention_bytes),
                                        parts(ctx, resources[res_f], "decode-ffn", w.ffn_bytes, memo))]


def _grids(ctx: Context, cls: TrafficClass, memo: dict, resource: str | None = None) -> Iterator[Grid | GridSet]:
    yield from prefill_grids(ctx, cls, memo, resource)
    resources = ctx.resources()
    for res in main_sites(ctx, resource):
        for res_f in resources:
            if res_f == res:
                continue
            lats = pair_latencies(ctx, res, res_f, memo)
            cfgs = _pairings(ctx, cls, res, res_f, memo)
            if cfgs and lats:
                yield GridSet(tuple(cfgs), "decode", BATCHES, tuple(lats), partial(_set_perf, cfgs, lats),
                              partial(_share_pairings, cls.name, res, res_f, cfgs, lats))


def _set_perf(cfgs: list[PoolConfig], lats: list[float], ctx: Context, cls: TrafficClass, memo: dict) -> Perf:
    """The ``evaluate`` of a pairing :class:`GridSet`: :func:`_pairing_perf` over the batch grid."""
    return _pairing_perf(ctx, cls, BATCHES, memo, cfgs, lats)


def _share_pairings(cls_name: str, res: str, res_f: str, cfgs: list[PoolConfig], lats: list[float],
                    memo: dict) -> None:
    """The ``share`` of a pairing :class:`GridSet`: the pairings wait in ``memo`` until the first of
    them is evaluated, which evaluates them all (:func:`_decode_af`)."""
    memo["decode-af pairings", cls_name, res, res_f] = (cfgs, lats)


MODE = ServingMode(
    name="pd-af", label="PD+AF", option="pd-af", stages=("prefill", "decode"), kinds=(PREFILL, DECODE_AF),
    grids=_grids, transfers=kv_transfer, color="tab:red",
)
