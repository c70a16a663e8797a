"""Attention–FFN disaggregation (``pd-af``): prefill → decode split into attention and FFN halves.

Route ``class|pd-af``: steps ``prefill`` → ``decode`` with the KV transfer of
:mod:`placement.modes.pd` (the prefill replicas are shared with it). A decode
replica pairs ``dp`` attention groups on one chip type with one FFN group on
another (MegaScale-Infer's M:N ratio, DeepSeek's data-parallel attention),
each group splitting its batch into m micro-batches (a candidate's choice among
:func:`costmodels.af.af_micro_batch_counts`), at each latency the fleet offers
between the two chip types. The FFN group is any whole number of domains near
what its weights need and a pipeline of tensor- or expert-parallel stages
(:func:`placement.modes.layouts.ffn_parts`).

Capacity rule (requests/s per replica): TPOT from
:func:`costmodels.af.af_pipeline` — activations return to the attention side
after every layer, so the FFN half is timed layer by layer on one stage's
dp·tp chips, S streams keep its ``pp`` stages busy, and each crossing goes
over the sending group's and the active stage's NICs, with the link's latency
per crossing. A token crosses once each way, or k times on the MoE layers when
the attention side dispatches it to its experts itself (a stage with ep = tp,
dp = 1); an expert-parallel stage (dp > 1) dispatches and combines over its own
fabric instead. ``dp`` attention groups of batch B: dp·B slots each held
output_tokens·TPOT, capacity and wait for a slot by
:func:`placement.core.replicas.queues.slot_admission`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from costmodels import (
    af_activation_bytes_per_token,
    af_micro_batch_counts,
    af_pipeline_tpot_s,
    af_stream_counts,
    decode_attention_step,
    decode_ffn_step,
    fits,
    memory_per_chip_bytes,
)
from costmodels.comm import af_round_trip_s
from costmodels.efficiency import overhead_time_s
from placement.core.modes.base import Grid, GridSet, PoolKind, ServingMode, main_sites
from placement.core.replicas.evaluate import (
    PartLayout,
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
from placement.core.verify.floors import attention_ffn_floor
from placement.modes.layouts import BATCHES, attention_parts, ffn_parts, weights
from placement.modes.pd import PREFILL, kv_transfer, prefill_grids

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = ["DECODE_AF", "MODE"]


def _decode_af(ctx: Context, cfg: PoolConfig, cls: TrafficClass, b: np.ndarray, lat: float, memo: dict) -> Perf:
    """``dp`` attention groups of B sequences, m micro-batches each (m ≤ B), in S streams over ``pp`` FFN stages.

    TPOT is the closed-loop bound of :func:`costmodels.af.af_pipeline`, at the
    stream count that minimises it (the scheduler's choice among
    :func:`costmodels.af.af_stream_counts`). A group's micro-batch crosses over
    that group's NICs; a stream reaches only the NICs of the stage holding the
    current layer (``tp`` chips of the FFN side, not all of them).

    Generation evaluates every pairing of two resources (:func:`_pairings`) at every latency between them
    as one :class:`GridSet` (:func:`_pairing_perf`). When its grids are handed out one at a time (a
    diagnosis), the first call evaluates them all at once (:func:`_evaluate_pairings`) and keeps the others
    in ``memo`` until asked. Otherwise (a verifier, a plan) one configuration is evaluated alone.
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

    What does not depend on the class comes from :func:`_pairing_layout`; each distinct attention half
    (part, micro-batches) is timed once; every (configuration, stream count) is a row of one array through
    :func:`costmodels.af.af_pipeline_tpot_s`, a configuration's TPOT the minimum of its rows
    (``minimum.reduceat``), and one :func:`placement.core.replicas.queues.slot_admission` takes them all. Every
    formula is elementwise, so each entry is what evaluating its configuration alone gives.
    """
    a_chip, f_chip = ctx.chips[cfgs[0].main.chip], ctx.chips[cfgs[0].partner.chip]
    lay = _pairing_layout(ctx, memo, cfgs, lats, b)
    # Attention: one micro-batch of B/m sequences on its group; its memory holds B sequences.
    halves = [_half(ctx, memo, "attention", cfgs[i].main, b / cfgs[i].micro_batches, b, cls) for i in lay.a_firsts]
    t_attn = np.stack([t for t, _ in halves])[lay.a_of]
    amem = np.stack([mem for _, mem in halves])[lay.a_of]
    # The FFN memory holds dp·B sequences whatever the streams.
    fmem = np.stack([_half_memory(ctx, memo, "ffn", cfgs[i].partner, lay.dp_b[i], cls)
                     for i in lay.m_firsts])[lay.m_of]
    at_s = af_pipeline_tpot_s(t_attn[lay.of][:, None, :], lay.t_ffn, lay.attn_comm, lay.ffn_comm,
                              micro_batches=lay.micro_batches, streams=lay.streams, layers=ctx.model.layers,
                              pp=lay.pp)
    tpot = np.minimum.reduceat(at_s, lay.first_row, axis=0)
    # Each attention DP group is an engine rank running its B sequences, split into m micro-batches of ≥ 1.
    group_chips = np.array([c.main.chips / c.main.dp for c in cfgs])[:, None]  # (C, 1), as the memories (C, B)
    whole = b[None, :] >= np.array([c.micro_batches for c in cfgs])[:, None]
    fit = (np.asarray(fits(a_chip, amem)) & np.asarray(fits(f_chip, fmem)) & engine_admits(ctx, b, group_chips)
           & whole)
    pair = lay.dp_b[:, None, :] * lay.bytes_per_token / tpot
    # One slot admission for every entry (it is elementwise): dp·B slots, each held output_tokens·TPOT.
    caps, waits = slot_admission(np.broadcast_to(lay.dp_b[:, None, :], tpot.shape).ravel(),
                                 (cls.output_tokens * tpot).ravel(), cls)
    return Perf(caps.reshape(tpot.shape), waits.reshape(tpot.shape), tpot, fit[:, None, :], pair,
                amem[:, None, :])


@dataclass
class _PairingLayout:
    """What the pairings of a resource pair share over every class (at given batches and latencies).

    Per configuration (C), by row = (configuration, stream count) (R), batches B, latencies L:
    ``parts`` (main, partner, micro-batches) of each configuration, by identity (the key's check);
    ``dp_b`` (C, B) sequences of the attention groups; ``bytes_per_token`` (C, 1, 1); ``a_firsts`` /
    ``a_of`` the configurations of distinct attention halves and each one's among them, ``m_firsts`` /
    ``m_of`` the same of FFN memories (part, groups); ``of`` (R,) each row's configuration,
    ``first_row`` each configuration's first row; ``streams``, ``micro_batches``, ``pp`` (R, 1, 1);
    ``t_ffn`` (R, 1, B) a stream through the FFN side; ``attn_comm`` / ``ffn_comm`` (R, L, B) C_a, C_f.
    """

    parts: list[tuple]
    dp_b: np.ndarray
    bytes_per_token: np.ndarray
    a_firsts: list[int]
    a_of: np.ndarray
    m_firsts: list[int]
    m_of: np.ndarray
    of: np.ndarray
    first_row: np.ndarray
    streams: np.ndarray
    micro_batches: np.ndarray
    pp: np.ndarray
    t_ffn: np.ndarray
    attn_comm: np.ndarray
    ffn_comm: np.ndarray


def _pairing_layout(ctx: Context, memo: dict, cfgs: list[PoolConfig], lats: list[float],
                    b: np.ndarray) -> _PairingLayout:
    """:class:`_PairingLayout` of ``cfgs``, kept in ``memo`` for the next class whose configurations have
    the same parts (the same objects: :func:`_pairings` reuses them)."""
    parts_of = [(c.main, c.partner, c.micro_batches) for c in cfgs]
    key = ("af pairing layout", cfgs[0].main.site_resource, cfgs[0].partner.site_resource, b.tobytes(), tuple(lats))
    lay = memo.get(key)
    if lay is not None and len(lay.parts) == len(parts_of) and all(
            x[0] is y[0] and x[1] is y[1] and x[2] == y[2] for x, y in zip(lay.parts, parts_of, strict=True)):
        return lay
    m = ctx.model
    a_chip, f_chip = ctx.chips[cfgs[0].main.chip], ctx.chips[cfgs[0].partner.chip]
    act = ctx.instance.precision.activations
    lat = np.asarray(lats, dtype=float)[None, :, None]
    dp = np.array([c.main.dp for c in cfgs])
    mb = np.array([c.micro_batches for c in cfgs])
    pp = np.array([c.partner.pp for c in cfgs])
    # The attention side sends a token's k expert copies itself only to a stage without its own all-to-all.
    per_token = {ep: af_activation_bytes_per_token(m, act, ffn_expert_parallel=ep) for ep in (False, True)}
    bytes_per_token = np.array([per_token[c.partner.ep > 1 and c.partner.dp == 1] for c in cfgs])[:, None, None]
    group_nic = np.array([c.main.tp * a_chip.scale_out_bandwidth_bytes_per_s for c in cfgs])[:, None, None]
    stage_nic = np.array([c.partner.dp * c.partner.tp * f_chip.scale_out_bandwidth_bytes_per_s
                          for c in cfgs])[:, None, None]
    a_firsts, a_of = _distinct(range(len(cfgs)), key=lambda i: (id(cfgs[i].main), cfgs[i].micro_batches))
    m_firsts, m_of = _distinct(range(len(cfgs)), key=lambda i: (id(cfgs[i].partner), cfgs[i].main.dp))
    # A row per (configuration, stream count), a stream of dp·B/S tokens.
    counts: dict[tuple[int, int, int], list[int]] = {}
    rows = []
    for i, c in enumerate(cfgs):
        shape = (c.main.dp, c.micro_batches, c.partner.pp)
        if shape not in counts:
            counts[shape] = af_stream_counts(*shape)
        rows.extend((i, streams, (id(c.partner), c.main.dp, streams)) for streams in counts[shape])
    of, streams = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    dp_b = dp[:, None] * b
    tokens = dp_b[of] / streams[:, None]
    f_firsts, f_of = _distinct(range(len(rows)), key=lambda r: rows[r][2])
    t_ffn = np.stack([_half_time(ctx, memo, "ffn", cfgs[rows[r][0]].partner, tokens[r], None)
                      for r in f_firsts])[f_of]
    attn_comm = af_round_trip_s((b / mb[:, None])[:, None, :], bytes_per_token, group_nic, lat, m.layers)
    lay = _PairingLayout(
        parts_of, dp_b, bytes_per_token, a_firsts, a_of, m_firsts, m_of, of,
        np.flatnonzero(np.r_[True, of[1:] != of[:-1]]), streams[:, None, None], mb[of][:, None, None],
        pp[of][:, None, None], t_ffn[:, None, :], attn_comm[of],
        af_round_trip_s(tokens[:, None, :], bytes_per_token[of], stage_nic[of], lat, m.layers))
    memo[key] = lay
    return lay


def _distinct(items, key=id) -> tuple[list, np.ndarray]:
    """The items of distinct ``key`` (default: identity), in first-seen order, and each item's index among them.

    Examples
    --------
    >>> a, b = object(), object()
    >>> firsts, index = _distinct([a, b, a])
    >>> firsts == [a, b], index.tolist()
    (True, [0, 1, 0])
    >>> _distinct([3, 5, 4], key=lambda x: x % 2)[1].tolist()
    [0, 0, 1]
    """
    position: dict = {}
    firsts = []
    index = []
    for x in items:
        k = key(x)
        if k not in position:
            position[k] = len(firsts)
            firsts.append(x)
        index.append(position[k])
    return firsts, np.array(index, dtype=np.intp)


def _half(ctx: Context, memo: dict, half: str, part: PartLayout, step_batch, memory_batch,
          cls: TrafficClass) -> tuple[np.ndarray, np.ndarray]:
    """(time through all L layers s, memory per chip bytes) of one half of a replica, kept in ``memo``
    (:func:`_half_time`, :func:`_half_memory`)."""
    return _half_time(ctx, memo, half, part, step_batch, cls), _half_memory(ctx, memo, half, part, memory_batch, cls)


def _half_time(ctx: Context, memo: dict, half: str, part: PartLayout, step_batch,
               cls: TrafficClass | None) -> np.ndarray:
    """Time (s) of one step of ``step_batch`` through all L layers on one half of a replica, kept in ``memo``.

    The FFN half is timed layer by layer on the dp·tp chips of one stage
    (``pp = 1`` in the step model): activations go back to the attention side
    after every layer, so a micro-batch never has more than one stage working
    on it. Generation pairs every attention half with every FFN half at every
    latency, and each half costs the same in all of its pairings; the FFN step
    reads no context, so every class shares it (``cls`` may be None).
    """
    step_batch = np.asarray(step_batch, dtype=float)
    attention = half == "attention"
    key = ("af step", half, part.chip, part.tp, part.ep, part.pp if attention else 1, 1 if attention else part.dp,
           decode_context_tokens(cls) if attention else None, step_batch.tobytes())
    if key not in memo:
        chip, m, step_prec = ctx.chips[part.chip], ctx.model, step_precision_args(ctx)
        layout = layout_args(part)
        if attention:
            step = decode_attention_step(chip, m, batch=step_batch, context=decode_context_tokens(cls), **layout,
                                         **step_prec)
        else:
            step = decode_ffn_step(chip, m, batch=step_batch, **{**layout, "pp": 1}, dp=part.dp, **step_prec)
        memo[key] = banded_step_s(ctx, part, "decode", step)
    return memo[key]


def _half_memory(ctx: Context, memo: dict, half: str, part: PartLayout, memory_batch,
                 cls: TrafficClass) -> np.ndarray:
    """Memory per chip (bytes) of one half of a replica holding ``memory_batch`` sequences (that of its real
    ``pp``-stage layout; an attention group's tp chips, an FFN stage's dp·tp), kept in ``memo``."""
    memory_batch = np.asarray(memory_batch, dtype=float)
    dp = 1 if half == "attention" else part.dp
    key = ("af memory", half, part.chip, part.tp, part.ep, part.pp, dp, max_context_tokens(cls),
           memory_batch.tobytes())
    if key not in memo:
        stage = "decode-attention" if half == "attention" else "decode-ffn"
        memo[key] = np.asarray(memory_per_chip_bytes(ctx.chips[part.chip], ctx.model, stage=stage,
                                                     batch=memory_batch, context=max_context_tokens(cls),
                                                     **layout_args(part), dp=dp, **memory_args(ctx)), dtype=float)
    return memo[key]


def _where(cfg: PoolConfig) -> str:
    return f"{cfg.main.chip} attention + {cfg.partner.chip} FFN"


DECODE_AF = PoolKind("decode-af", ("decode-attention", "decode-ffn"), _decode_af, where=_where, partner="always",
                     floor=attention_ffn_floor, words=("decode-attention", "decode-FFN"), weights=("attention", "ffn"))


def _pairings(ctx: Context, cls: TrafficClass, res: str, res_f: str, memo: dict) -> list[PoolConfig]:
    """Attention halves on ``res`` paired with FFN halves on ``res_f`` (:func:`placement.modes.layouts.ffn_parts`)
    at each micro-batch count :func:`costmodels.af.af_micro_batch_counts` allows them, in the order generation
    visits them (the same part objects for every class: kept in ``memo``)."""
    key = ("af part pairs", res, res_f)
    if key not in memo:
        w = weights(ctx)
        resources = ctx.resources()
        # The attention step's fixed cost (no sequences): what one micro-batch more costs a round.
        fixed_s = float(overhead_time_s(resources[res].chip, ctx.model.layers))
        memo[key] = [(apart, fpart, m)
                     for apart, fpart in product(attention_parts(ctx, resources[res], w.attention_bytes),
                                                 ffn_parts(ctx, resources[res_f], w.ffn_bytes, memo))
                     for m in af_micro_batch_counts(apart.dp, fpart.pp, attention_fixed_s=fixed_s,
                                                    layers=ctx.model.layers)]
    return [PoolConfig(kind=DECODE_AF.name, traffic_class=cls.name, main=apart, partner=fpart, batch=1,
                       micro_batches=m) for apart, fpart, m in memo[key]]


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
