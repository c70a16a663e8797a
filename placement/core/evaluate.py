"""Performance of one pool configuration for one traffic class, from the cost models.

A *pool* is a set of identical replicas serving one stage of one class. This
module answers, for a configuration and a class: how many requests/s one
replica sustains while meeting the class's SLOs, with which TTFT/TPOT, and
whether it fits in memory. Candidate generation calls it over a grid of
batches (numpy-vectorised); the verifier calls it again for the configuration a
plan names — the same physics, independent of the MILP.

Capacity rules (requests/s per replica):

* prefill: M/D/1 per replica, service S = prefill interval (latency / pp, a
  pipeline admits a new prompt per stage time); TTFT = W_q + prefill latency
  + KV transfer ≤ SLO ⇒ ρ ≤ 2R/(2R + S), R = SLO − latency − transfer;
  capacity = min(ρ, ρ_max)·batch/S.
* decode: a sequence holds a batch slot for output_tokens·TPOT seconds;
  capacity = B / (output_tokens·TPOT), TPOT ≤ SLO.
* aggregated (chunked prefill, decode first): each step carries B decode tokens
  and a C-token prefill chunk; capacity = min(ρ·C/(p·t), B/(o·t)) with ρ from
  the M/D/1 bound on the prompt's ⌈p/C⌉ steps.
* speculative decode: TPOT = (γ·t_draft + t_verify + RTT)/E.
* attention–FFN: TPOT from :func:`costmodels.af.af_pipeline` — the FFN side
  timed layer by layer on one stage's chips, S streams over its ``pp``
  stages, the link's latency per layer crossing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from costmodels import (
    af_activation_bytes_per_token,
    af_pipeline,
    af_stream_counts,
    af_transfer_s,
    aggregated_step,
    decode_attention_step,
    decode_ffn_step,
    decode_step,
    expected_tokens_per_verify,
    fits,
    kv_transfer_bytes,
    md1_max_utilisation,
    memory_per_chip_bytes,
    prefill_step,
    verify_step,
)
from placement.core.context import Context
from placement.core.schema import TrafficClass

__all__ = ["MAX_UTILISATION", "PartLayout", "Perf", "PoolConfig", "evaluate"]

#: Ceiling on a prefill server's utilisation whatever the M/D/1 bound allows:
#: arrivals are burstier than Poisson in practice and the bound → 1 as SLO → ∞.
MAX_UTILISATION = 0.9

Kind = Literal["prefill", "decode", "aggregated", "decode-af", "decode-spec", "measured"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PartLayout(_Record):
    """Chips of one type forming one replica (or one half of a paired replica).

    ``chips = dp·tp·pp``: ``dp`` independent data-parallel groups of ``tp·pp``
    chips each. Only the attention half of an attention–FFN replica uses
    ``dp > 1`` — several attention groups feed one FFN group, as in
    MegaScale-Infer's M:N ratio and DeepSeek's data-parallel attention.
    """

    chip: str
    site_resource: str = Field(description="chip@domain size, the solver's resource type")
    chips: int = Field(ge=1)
    tp: int = Field(ge=1)
    ep: int = Field(ge=1)
    pp: int = Field(ge=1)
    dp: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _chips_add_up(self) -> PartLayout:
        if self.chips != self.dp * self.tp * self.pp:
            raise ValueError(f"chips ({self.chips}) must equal dp·tp·pp ({self.dp}·{self.tp}·{self.pp})")
        return self


class PoolConfig(_Record):
    """What one replica of a pool is; enough to re-evaluate it from the cost models."""

    kind: Kind
    traffic_class: str
    main: PartLayout = Field(description="prefill/decode/target/attention chips")
    partner: PartLayout | None = Field(default=None, description="FFN half (decode-af) or remote draft (decode-spec)")
    batch: int = Field(ge=1)
    chunk_tokens: int | None = None
    micro_batches: int = 1
    draft_tokens: int | None = Field(default=None, ge=1, description="γ, draft tokens per verify (decode-spec)")
    measured_rps: float | None = None


@dataclass(frozen=True)
class Perf:
    """Arrays over the batch grid (or scalars): per-replica capacity and latencies."""

    capacity_rps: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    fits: np.ndarray
    pair_bytes_per_s: np.ndarray
    memory_per_chip_bytes: np.ndarray

    def ok(self, cls: TrafficClass) -> np.ndarray:
        """Meets the class's SLOs, fits in memory, and serves something."""
        return (
            self.fits
            & (self.capacity_rps > 0)
            & (self.tpot_s <= cls.tpot_s * (1 + 1e-9))
            & (self.ttft_s <= cls.ttft_s * (1 + 1e-9))
        )


def _args(ctx: Context, part: PartLayout) -> dict:
    return {"tp": part.tp, "ep": part.ep, "pp": part.pp}


def _prec(ctx: Context) -> dict:
    p = ctx.instance.precision
    return {"precision": p.weights, "kv_precision": p.kv}


def _decode_context(cls: TrafficClass) -> float:
    return cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens / 2


def _max_context(cls: TrafficClass) -> float:
    return float(cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens)


def _md1_capacity(service_s, latency_s, slo_s, batch) -> np.ndarray:
    """ρ·batch/S with ρ from M/D/1 on the time left after the fixed latency."""
    service_s = np.asarray(service_s, dtype=float)
    slack = np.asarray(slo_s - (latency_s - service_s), dtype=float)  # time the queue + service may use
    rho = np.minimum(md1_max_utilisation(service_s, slack), MAX_UTILISATION)
    return np.where(slack > service_s, rho * batch / service_s, 0.0)


def _zeros(shape) -> np.ndarray:
    return np.zeros(shape)


def evaluate(ctx: Context, cfg: PoolConfig, cls: TrafficClass, batch=None, pair_latency_s: float = 0.0,
             memo: dict | None = None) -> Perf:
    """Per-replica capacity and latencies of ``cfg`` for ``cls``.

    ``batch`` (array) overrides ``cfg.batch`` to evaluate a grid at once;
    ``pair_latency_s`` is the one-way latency between the two parts of a paired
    configuration (attention–FFN or remote draft). ``memo``, a dict kept by
    the caller for one context, caches the attention and FFN halves of
    attention–FFN replicas: candidate generation pairs every attention half
    with every FFN half at every latency, and each half costs the same in
    all of its pairings.
    """
    b = np.asarray(cfg.batch if batch is None else batch, dtype=float)
    if cfg.kind == "decode-af":
        return _decode_af(ctx, cfg, cls, b, pair_latency_s, {} if memo is None else memo)
    fn = {
        "prefill": _prefill,
        "decode": _decode,
        "aggregated": _aggregated,
        "decode-spec": _decode_spec,
        "measured": _measured,
    }[cfg.kind]
    return fn(ctx, cfg, cls, b, pair_latency_s)


def _prefill(ctx, cfg, cls, b, _lat) -> Perf:
    chip, m = ctx.chips[cfg.main.chip], ctx.model
    st = prefill_step(chip, m, prompt=cls.prompt_tokens, cached=cls.cached_prefix_tokens, batch=b,
                      **_args(ctx, cfg.main), **_prec(ctx))
    kv_b = kv_transfer_bytes(m, cls.prompt_tokens, cls.cached_prefix_tokens, ctx.instance.precision.kv,
                             cls.prefix_cached_on_decode)
    nic = cfg.main.chips * chip.scale_out_bandwidth_bytes_per_s
    transfer_s = b * kv_b / nic
    latency = np.asarray(st.time_s) + transfer_s
    service = np.asarray(st.time_s) / cfg.main.pp
    cap = _md1_capacity(service, latency, cls.ttft_s, b)
    mem = memory_per_chip_bytes(chip, m, stage="prefill", batch=b, context=cls.cached_prefix_tokens + cls.prompt_tokens,
                                **_args(ctx, cfg.main), **_prec(ctx))
    ok = fits(chip, mem)
    return Perf(cap, latency, _zeros(b.shape), np.asarray(ok), _zeros(b.shape), np.asarray(mem))


def _decode(ctx, cfg, cls, b, _lat) -> Perf:
    chip, m = ctx.chips[cfg.main.chip], ctx.model
    st = decode_step(chip, m, batch=b, context=_decode_context(cls), **_args(ctx, cfg.main), **_prec(ctx))
    tpot = np.asarray(st.time_s, dtype=float)
    cap = b / (cls.output_tokens * tpot)
    mem = memory_per_chip_bytes(chip, m, stage="decode", batch=b, context=_max_context(cls),
                                **_args(ctx, cfg.main), **_prec(ctx))
    return Perf(cap, _zeros(b.shape), tpot, np.asarray(fits(chip, mem)), _zeros(b.shape), np.asarray(mem))


def _aggregated(ctx, cfg, cls, b, _lat) -> Perf:
    chip, m = ctx.chips[cfg.main.chip], ctx.model
    chunk = float(cfg.chunk_tokens)
    # A chunk attends to the cached prefix and, on average, half of the prompt before it.
    chunk_context = cls.cached_prefix_tokens + max(cls.prompt_tokens - chunk, 0) / 2
    st = aggregated_step(chip, m, batch=b, context=_decode_context(cls), chunk_tokens=chunk,
                         chunk_context=chunk_context, **_args(ctx, cfg.main), **_prec(ctx))
    t = np.asarray(st.time_s, dtype=float)
    steps_per_prompt = np.ceil(cls.prompt_tokens / chunk)
    prefill_cap = _md1_capacity(t * cls.prompt_tokens / chunk, steps_per_prompt * t, cls.ttft_s, 1.0)
    decode_cap = b / (cls.output_tokens * t)
    cap = np.minimum(prefill_cap, decode_cap)
    ttft = steps_per_prompt * t
    mem = memory_per_chip_bytes(chip, m, stage="decode", batch=b + 1, context=_max_context(cls),
                                **_args(ctx, cfg.main), **_prec(ctx))
    return Perf(cap, ttft, t, np.asarray(fits(chip, mem)), _zeros(b.shape), np.asarray(mem))


def _decode_spec(ctx, cfg, cls, b, lat) -> Perf:
    draft = ctx.instance.draft
    if draft is None or ctx.draft_model is None:
        raise ValueError("decode-spec pool in an instance without a draft model")
    chip, m, dm = ctx.chips[cfg.main.chip], ctx.model, ctx.draft_model
    prec = _prec(ctx)
    gamma = cfg.draft_tokens or draft.gamma
    if gamma > draft.gamma:
        raise ValueError(f"draft length {gamma} exceeds the {draft.gamma} acceptance rates given")
    t_verify = np.asarray(verify_step(chip, m, batch=b, context=_decode_context(cls), gamma=gamma,
                                      **_args(ctx, cfg.main), **prec).time_s, dtype=float)
    dpart = cfg.partner or cfg.main
    dchip = ctx.chips[dpart.chip]
    t_draft = np.asarray(decode_step(dchip, dm, batch=b, context=_decode_context(cls), **_args(ctx, dpart),
                                     **prec).time_s, dtype=float)
    rtt = 2.0 * lat if cfg.partner is not None else 0.0
    e = expected_tokens_per_verify(draft.acceptance[:gamma])
    tpot = (gamma * t_draft + t_verify + rtt) / e
    cap = b / (cls.output_tokens * tpot)
    mem = np.asarray(memory_per_chip_bytes(chip, m, stage="decode", batch=b, context=_max_context(cls),
                                           **_args(ctx, cfg.main), **prec), dtype=float)
    dmem = np.asarray(memory_per_chip_bytes(dchip, dm, stage="decode", batch=b, context=_max_context(cls),
                                            **_args(ctx, dpart), **prec), dtype=float)
    if cfg.partner is None:
        ok = np.asarray(fits(chip, mem + dmem))
        mem = mem + dmem
    else:
        ok = np.asarray(fits(chip, mem)) & np.asarray(fits(dchip, dmem))
    # Token ids and accept/reject flags only: a few bytes per sequence per cycle.
    pair = b * (gamma + 1) * 8.0 / np.maximum(tpot * e, 1e-12)
    return Perf(cap, _zeros(b.shape), tpot, ok, pair, mem)


def _decode_af(ctx, cfg, cls, b, lat, memo: dict) -> Perf:
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
    t_attn, amem = _af_half(ctx, memo, "attention", att, b / mb, b, cls)
    ep_ffn = ffn.ep > 1
    prec = ctx.instance.precision.weights
    bytes_per_token = af_activation_bytes_per_token(m, prec, ffn_expert_parallel=ep_ffn)
    group_nic = att.tp * a_chip.scale_out_bandwidth_bytes_per_s
    stage_nic = ffn.tp * f_chip.scale_out_bandwidth_bytes_per_s
    attn_comm = af_transfer_s(m, b / mb, group_nic, lat, prec, ffn_expert_parallel=ep_ffn)
    tpot = fmem = None
    for streams in af_stream_counts(dp, mb, ffn.pp):
        tokens = dp * b / streams
        t_ffn, fmem = _af_half(ctx, memo, "ffn", ffn, tokens, dp * b, cls)
        ffn_comm = af_transfer_s(m, tokens, stage_nic, lat, prec, ffn_expert_parallel=ep_ffn)
        pipe = af_pipeline(t_attn, t_ffn, attn_comm, ffn_comm, micro_batches=mb, streams=streams,
                           layers=m.layers, pp=ffn.pp)
        tpot = pipe.tpot_s if tpot is None else np.minimum(tpot, pipe.tpot_s)
    tpot = np.asarray(tpot, dtype=float)
    cap = dp * b / (cls.output_tokens * tpot)
    ok = np.asarray(fits(a_chip, amem)) & np.asarray(fits(f_chip, fmem))
    pair = dp * b * bytes_per_token / tpot
    return Perf(cap, _zeros(b.shape), tpot, ok, pair, amem)


def _af_half(ctx, memo: dict, half: str, part: PartLayout, step_batch, memory_batch, cls) -> tuple:
    """(time through all L layers, memory per chip) of one half of an attention–FFN replica, cached in ``memo``.

    The FFN half is timed layer by layer on the ``tp`` chips of one stage
    (``pp = 1`` in the step model): activations go back to the attention side
    after every layer, so a micro-batch never has more than one stage working
    on it. Its memory is that of the real ``pp``-stage layout.
    """
    step_batch = np.asarray(step_batch, dtype=float)
    key = (half, part.chip, part.tp, part.ep, part.pp, _decode_context(cls), _max_context(cls), step_batch.tobytes(),
           np.asarray(memory_batch, dtype=float).tobytes())
    if key not in memo:
        chip, m, prec = ctx.chips[part.chip], ctx.model, _prec(ctx)
        layout = {"tp": part.tp, "ep": part.ep, "pp": part.pp}
        if half == "attention":
            step = decode_attention_step(chip, m, batch=step_batch, context=_decode_context(cls), **layout, **prec)
            stage = "decode-attention"
        else:
            step = decode_ffn_step(chip, m, batch=step_batch, **{**layout, "pp": 1}, **prec)
            stage = "decode-ffn"
        mem = memory_per_chip_bytes(chip, m, stage=stage, batch=memory_batch, context=_max_context(cls),
                                    **layout, **prec)
        memo[key] = (np.asarray(step.time_s, dtype=float), np.asarray(mem, dtype=float))
    return memo[key]


def _measured(ctx, cfg, cls, b, _lat) -> Perf:
    cap = np.full(b.shape, float(cfg.measured_rps))
    z = _zeros(b.shape)
    return Perf(cap, z, z, np.ones(b.shape, dtype=bool), z, z)
