"""Physical floors of a plan's pools: what no hardware can beat, independent of the cost models.

The verifier re-evaluates pools with the cost models that generated them, so it
cannot catch their physics errors. This check uses the catalogue's peak FLOP/s,
memory and link bandwidth and latency alone — no efficiencies or overheads, no
code from ``costmodels`` or :mod:`placement.core.replicas.evaluate`; sizes, bytes and FLOPs
are derived here from the architecture fields. A floor is the largest of named
terms, each a time no schedule can beat (they overlap, so are never added):

* ``memory``: weights read at least once plus KV bytes, over all chips' peak
  bandwidth (fastest tier listed). An MoE layer certainly reads only the k
  experts one token picks (+ shared, router) whatever the batch — B tokens may
  all pick the same k; the expected E·(1 − (1 − k/E)^B) is not a bound. The
  input embedding (a lookup) is left out, the LM head read whole.
* ``compute``: 2 FLOPs per parameter and token, 2·h·(d_qk + d_v) per query–key
  pair and layer (MLA: the cheaper of absorbed and non-absorbed dims, without
  decompression), over all chips at peak FLOP/s of the weight (attention core:
  KV) precision, or the chip's best rate if it lacks that precision.
* ``TP exchange``: a layer's row-sliced output must be combined before the
  next, so each chip receives (tp − 1)/tp of its layers' activations of its
  DP group's B/dp tokens (≥ 8 bits per value, 4 for FP4 models) over its fastest link; ``crossing``: in
  attention–FFN, each token's hidden state goes to the FFN pool and back per layer.
* ``chain``: one token's causal path: a link latency per layer when tp > 1, per
  pipeline hop, two per layer between attention and FFN pools, the draft ↔
  target round trip, the token's FLOPs on each layer's stage chips, and on
  SRAM-only chips (weights sit in the working tier, read once the token
  arrives) its weight bytes; chips with caches the catalogue omits could
  prefetch while they wait, so for them memory stays a separate term.

Per kind (B batch, p prompt, o output tokens): decode TPOT is a step of B
sequences at the mean decode context (terms linear in context bound the mean);
aggregated TPOT a step of B decode tokens and the C̄ = min(C, (B/dp − 1)·p/o) prompt
tokens a decode step carries (C̄/p of the prompt's pairs and KV), TTFT the prompt alone over ⌈p/C⌉ sequential steps;
prefill TTFT one prompt, without the KV transfer the first token needs not;
decode-spec TPOT ≥ (γ draft steps + a verify of γ + 1 tokens) ÷ (γ + 1), the
work summed on shared chips, the chain plus a round trip for a remote draft
(which waits for the verdict); decode-af each attention group and the FFN pool
on their own chips, the crossings, and a chain of 2·L latencies and a token
through both halves (the LM head, on either side, is left out); measured pools
are not checked. Capacity: by Little's law a replica serves at most slots ÷
((o − 1)·TPOT floor) requests/s (fewer busy slots only lower it); prefill one
prompt per single-prompt throughput floor, weights read once per batch.

Examples
--------
>>> from placement.core.verify.floors import model_shape
>>> from costmodels.models import load_model_catalog
>>> s = model_shape(load_model_catalog()["llama-3.1-70b"], "fp8")
>>> round(s.part_params("full") / 1e9, 2)   # all but the input embedding
69.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

import networkx as nx

from placement.core.modes.registry import pool_kind
from placement.core.verify.floor_shape import BYTES_PER_VALUE, FLOPS_PER_MAC, Shape, model_shape

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass
    from placement.core.plans.plan import Plan, Pool
    from placement.core.replicas.evaluate import PartLayout, PoolConfig
    from topology.chips import ChipSpec

__all__ = ["RTOL", "Bound", "Floors", "Shape", "Term", "aggregated_floor", "attention_ffn_floor", "check_floors",
           "config_floors", "decode_floor", "floors", "measured_floor", "model_shape", "prefill_floor",
           "speculative_floor"]

#: Relative slack before a claim counts as beating its floor (solver and float noise).
RTOL = 1e-6


# ---- terms and bounds -------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One lower bound on a time, with what it is made of."""

    name: str
    seconds: float
    detail: str


@dataclass(frozen=True)
class Bound:
    """The largest of several terms: a time no schedule can beat."""

    terms: tuple[Term, ...]

    @property
    def binding(self) -> Term:
        return max(self.terms, key=lambda t: t.seconds)

    @property
    def seconds(self) -> float:
        return self.binding.seconds

    def __str__(self) -> str:
        return f"{self.binding.name}: {self.binding.detail}"

    def scaled(self, factor: float, note: str) -> Bound:
        """Every term × ``factor`` (a time per cycle turned into one per token, …)."""
        return Bound(tuple(Term(t.name, t.seconds * factor, f"{t.detail}{note}") for t in self.terms))


@dataclass(frozen=True)
class Floors:
    """A pool's floors (None where the pool makes no such claim) and its capacity ceiling."""

    kind: str
    tpot: Bound | None = None
    ttft: Bound | None = None
    capacity_rps_per_replica: float | None = None
    capacity_basis: str = ""


@dataclass(frozen=True)
class _Work:
    """What a forward step must at least do on one set of chips."""

    weight_bytes: float = 0.0
    kv_bytes: float = 0.0
    matmul_flops: float = 0.0
    attention_flops: float = 0.0
    exchange_bytes_per_chip: float = 0.0

    def __add__(self, other: _Work) -> _Work:
        return _Work(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def times(self, k: float) -> _Work:
        return _Work(*(getattr(self, f.name) * k for f in fields(self)))


@dataclass(frozen=True)
class _Chips:
    """``count`` chips of one type doing a piece of work, at precisions (weights, KV)."""

    chip: ChipSpec
    count: int
    weights: str
    kv: str
    label: str = ""

    @property
    def bandwidth(self) -> float:
        return max(t.bandwidth_bytes_per_s for t in self.chip.memory)

    def flops(self, precision: str) -> float:
        return self.chip.flops_per_s.get(precision, max(self.chip.flops_per_s.values()))

    @property
    def link(self) -> float:
        return max(self.chip.scale_up_bandwidth_bytes_per_s, self.chip.scale_out_bandwidth_bytes_per_s)

    @property
    def latency(self) -> float:
        """The fastest chip-to-chip hop the catalogue lists."""
        return self.chip.scale_up_latency_s

    def seconds(self, flops_matmul: float, flops_attention: float) -> float:
        return flops_matmul / (self.count * self.flops(self.weights)) + flops_attention / (
            self.count * self.flops(self.kv))

    def where(self) -> str:
        return f"{self.count} × {self.chip.name}"


def _gb(x: float) -> str:
    return f"{x / 1e9:.4g} GB"


def _us(x: float) -> str:
    return f"{x * 1e6:.3g} µs"


def _work_terms(w: _Work, on: _Chips) -> list[Term]:
    """The memory, compute and TP-exchange terms of ``w`` spread over all of ``on``'s chips."""
    pre = f"{on.label} " if on.label else ""
    terms = [
        Term(f"{pre}memory", (w.weight_bytes + w.kv_bytes) / (on.count * on.bandwidth),
             f"weights {_gb(w.weight_bytes)} + KV {_gb(w.kv_bytes)} over {on.where()} × "
             f"{on.bandwidth / 1e12:.4g} TB/s"),
        Term(f"{pre}compute", on.seconds(w.matmul_flops, w.attention_flops),
             f"{(w.matmul_flops + w.attention_flops) / 1e12:.4g} TFLOP over {on.where()} × "
             f"{on.flops(on.weights) / 1e12:.4g} TFLOP/s"),
    ]
    if w.exchange_bytes_per_chip:
        terms.append(Term(f"{pre}TP exchange", w.exchange_bytes_per_chip / on.link,
                          f"{w.exchange_bytes_per_chip / 1e6:.4g} MB received per chip over {on.link / 1e9:.4g} GB/s"))
    return terms


def _activation_bytes(weights: str) -> float:
    return min(BYTES_PER_VALUE[weights], 1.0)


def _exchange(s: Shape, tokens: float, tp: int, pp: int, weights: str) -> float:
    """Activation bytes each chip receives: (tp − 1)/tp of each of its group's tokens' hidden state, per layer."""
    return 0.0 if tp <= 1 else (s.layers / pp) * tokens * s.hidden * _activation_bytes(weights) * (tp - 1) / tp


def _step_work(s: Shape, part: str, *, tokens: float, kv_tokens: float, pairs: float, tp: int, pp: int,
               weights: str, dp: int = 1, routed_tokens: float | None = None) -> _Work:
    """One step of ``tokens`` new tokens reading ``kv_tokens`` cached (token, layer) entries, tokens/dp a group.

    Weights read: the part's parameters with the k routed experts of every MoE layer, plus the other experts
    ``routed_tokens`` (default ``tokens``) touch (:meth:`Shape.extra_expert_params`): a MoE step of many tokens
    reads every expert. The touched count is concave in the tokens, so a mean over steps of different sizes
    takes the fewest tokens every step carries (Jensen), not the mean.
    """
    b = BYTES_PER_VALUE[weights]
    routed = s.extra_expert_params(tokens if routed_tokens is None else routed_tokens) if part in ("full", "ffn") else 0.0
    return _Work(
        weight_bytes=(s.part_params(part) + routed) * b,
        kv_bytes=0.0 if part == "ffn" else kv_tokens * s.kv_bytes_per_token_layer,
        matmul_flops=FLOPS_PER_MAC * tokens * s.part_params(part),
        attention_flops=0.0 if part == "ffn" else pairs * s.flops_per_pair,
        exchange_bytes_per_chip=_exchange(s, tokens / dp, tp, pp, weights),
    )


@dataclass(frozen=True)
class _Chain:
    """One token's causal path: latencies that add up, and its work on each stage's chips."""

    seconds: float = 0.0
    parts: tuple[str, ...] = field(default_factory=tuple)

    def plus(self, seconds: float, what: str) -> _Chain:
        return self if seconds <= 0 else _Chain(self.seconds + seconds, (*self.parts, what))

    def then(self, other: _Chain, times: int = 1) -> _Chain:
        """This path followed by ``times`` passes of ``other``."""
        if times <= 0 or other.seconds <= 0:
            return self
        what = " + ".join(other.parts)
        return _Chain(self.seconds + times * other.seconds, (*self.parts, what if times == 1 else f"{times} × ({what})"))

    def term(self) -> Term:
        return Term("chain", self.seconds, " + ".join(self.parts) or "nothing")


def _token_path(chain: _Chain, s: Shape, part: str, on: _Chips, *, tp: int, pp: int, context: float,
                tp_latency: bool = True) -> _Chain:
    """Add one token's pass through ``part`` on stages of ``tp`` chips (``on.count`` = all stages)."""
    stage = replace(on, count=max(tp, 1))
    kv = 0.0 if part == "ffn" else s.kv_tokens(context)
    t = stage.seconds(FLOPS_PER_MAC * s.part_params(part), kv * s.flops_per_pair)
    pre = f"{on.label} " if on.label else ""
    chain = chain.plus(t, f"{pre}1 token's FLOPs on {stage.where()}")
    if on.chip.sram_only:
        bytes_ = s.part_params(part) * BYTES_PER_VALUE[on.weights] + kv * s.kv_bytes_per_token_layer
        chain = chain.plus(bytes_ / (stage.count * on.bandwidth),
                           f"{pre}its weights {_gb(bytes_)} from SRAM on {stage.where()}")
    if tp > 1 and tp_latency:
        chain = chain.plus(s.layers * on.latency, f"{pre}{s.layers} TP latencies × {_us(on.latency)}")
    if pp > 1:
        chain = chain.plus((pp - 1) * on.latency, f"{pre}{pp - 1} stage hops × {_us(on.latency)}")
    return chain


# ---- floors per pool kind ---------------------------------------------------------------------


def _decode_span(cls: TrafficClass) -> tuple[float, int, float]:
    """First context, number and mean context of the decode steps (contexts c0 + p … c0 + p + o − 2)."""
    first, steps = float(cls.cached_prefix_tokens + cls.prompt_tokens), max(cls.output_tokens - 1, 1)
    return first, steps, first + (steps - 1) / 2


def _decode_bound(s: Shape, cls: TrafficClass, on: _Chips, lay: PartLayout, batch: float) -> tuple[list[Term], _Chain]:
    """Terms and chain of one decode step of ``batch`` sequences, one token each."""
    first, steps, mean = _decode_span(cls)
    kv = batch * s.mean_kv_tokens(first, steps)
    w = _step_work(s, "full", tokens=batch, kv_tokens=kv, pairs=kv, tp=lay.tp, pp=lay.pp, dp=lay.dp, weights=on.weights)
    return _work_terms(w, on), _token_path(_Chain(), s, "full", on, tp=lay.tp, pp=lay.pp, context=mean)


def _little_ceiling(slots: float, cls: TrafficClass, tpot: Bound) -> tuple[float | None, str]:
    steps = cls.output_tokens - 1
    if steps <= 0:
        return None, "one output token: no decode step"
    return slots / (steps * tpot.seconds), (f"{slots:g} slots / ({steps} decode steps × TPOT floor "
                                             f"{tpot.seconds * 1e3:.4g} ms)")


def _decode(ctx, cfg, cls, s, prec) -> Floors:
    on = _Chips(ctx.chips[cfg.main.chip], cfg.main.chips, *prec)
    terms, chain = _decode_bound(s, cls, on, cfg.main, cfg.batch)
    tpot = Bound((*terms, chain.term()))
    cap, basis = _little_ceiling(cfg.batch, cls, tpot)
    return Floors("decode", tpot=tpot, capacity_rps_per_replica=cap, capacity_basis=basis)


def _prompt_work(s: Shape, cls: TrafficClass, steps: int, lay: PartLayout, weights: str) -> _Work:
    """One prompt's own work: its FLOPs, its KV written and prefix read once, weights read each step.

    One step (the whole prompt) reads the experts its p tokens touch; over several chunk steps only the k
    of each token are certain (a small chunk may touch few, and the counts do not add)."""
    p, c0 = float(cls.prompt_tokens), float(cls.cached_prefix_tokens)
    w = _step_work(s, "full", tokens=p, kv_tokens=s.kv_tokens(c0 + p), pairs=s.prefill_pairs(p, c0),
                   tp=lay.tp, pp=lay.pp, weights=weights, routed_tokens=p if steps == 1 else 0.0)
    return replace(w, weight_bytes=w.weight_bytes * steps)


def _reload_ceiling(s: Shape, cls: TrafficClass, chips: int) -> tuple[float, str] | None:
    """Prompts/s a replica's links to a KV tier can reload: chips × bandwidth / prefix bytes (None: no reloads).

    The prefix's KV is kv_tokens(c0) (token, layer) entries of ``kv_bytes_per_token_layer`` each; each chip
    reads over its own link. Llama-3.1-8B FP8, 30,000 tokens: 32 × 30,000 × 2,048 B = 1.97 GB; 1 H100 at
    7 GB/s: 3.56/s.
    """
    if cls.prefix_reload_gb_per_s is None or cls.cached_prefix_tokens == 0:
        return None
    prefix = s.kv_tokens(float(cls.cached_prefix_tokens)) * s.kv_bytes_per_token_layer
    link = chips * cls.prefix_reload_gb_per_s * 1e9
    return link / prefix, f"{chips} links × {cls.prefix_reload_gb_per_s:g} GB/s / {_gb(prefix)} prefix reloads"


def _lower(cap: float | None, basis: str, other: tuple[float, str] | None) -> tuple[float | None, str]:
    """The lower of a capacity ceiling and another (None: none)."""
    if other is None or (cap is not None and cap <= other[0]):
        return cap, basis
    return other


def _prefill(ctx, cfg, cls, s, prec) -> Floors:
    on = _Chips(ctx.chips[cfg.main.chip], cfg.main.chips, *prec)
    one = _prompt_work(s, cls, 1, cfg.main, on.weights)
    chain = _token_path(_Chain(), s, "full", on, tp=cfg.main.tp, pp=cfg.main.pp, context=_decode_span(cls)[0])
    ttft = Bound((*_work_terms(one, on), chain.term()))
    # Throughput: every prompt's FLOPs and KV, the weights once per batch of prompts; and the reload links.
    per_prompt = Bound(tuple(_work_terms(replace(one, weight_bytes=one.weight_bytes / cfg.batch), on)))
    basis = f"1 prompt per {per_prompt.seconds * 1e3:.4g} ms ({per_prompt.binding.name}: {per_prompt.binding.detail})"
    cap, basis = _lower(1.0 / per_prompt.seconds, basis, _reload_ceiling(s, cls, cfg.main.chips))
    return Floors("prefill", ttft=ttft, capacity_rps_per_replica=cap, capacity_basis=basis)


def _aggregated(ctx, cfg, cls, s, prec) -> Floors:
    on = _Chips(ctx.chips[cfg.main.chip], cfg.main.chips, *prec)
    lay, chunk = cfg.main, float(cfg.chunk_tokens or 0)
    p, c0 = float(cls.prompt_tokens), float(cls.cached_prefix_tokens)
    first, steps, mean = _decode_span(cls)
    decode_kv = cfg.batch * s.mean_kv_tokens(first, steps)
    # Decode steps carry the prompts of the slots refilled as others finish: each of a group's other B/dp − 1
    # slots once per o steps, at most C (one group's chunk, still a floor). Of p tokens: that share of pairs, KV.
    carried = min(chunk, max(cfg.batch / lay.dp - 1.0, 0.0) * p / float(cls.output_tokens))
    share = carried / p
    step = _step_work(s, "full", tokens=cfg.batch + carried,
                      kv_tokens=decode_kv + share * s.kv_tokens(c0 + p),
                      pairs=decode_kv + share * s.prefill_pairs(p, c0), tp=lay.tp, pp=lay.pp, weights=on.weights,
                      dp=lay.dp, routed_tokens=cfg.batch)  # every step carries the batch's tokens, some a chunk more
    path = _token_path(_Chain(), s, "full", on, tp=lay.tp, pp=lay.pp, context=mean)
    tpot = Bound((*_work_terms(step, on), path.term()))
    n = max(math.ceil(p / chunk), 1) if chunk else 1
    ttft = Bound((*_work_terms(_prompt_work(s, cls, n, lay, on.weights), on),
                  Term("chain", n * path.seconds, f"{n} sequential chunk steps × ({path.term().detail})")))
    # Little's law on the decode slots, with steps carrying only decode tokens (the fastest they can be).
    decode_only, _ = _decode_bound(s, cls, on, lay, cfg.batch)
    cap, basis = _little_ceiling(cfg.batch, cls, Bound((*decode_only, path.term())))
    cap, basis = _lower(cap, basis, _reload_ceiling(s, cls, cfg.main.chips))
    return Floors("aggregated", tpot=tpot, ttft=ttft, capacity_rps_per_replica=cap, capacity_basis=basis)


def _spec(ctx, cfg, cls, s, prec, crossing_s) -> Floors:
    gamma = int(cfg.draft_tokens or len(ctx.instance.draft.acceptance))
    ds = model_shape(ctx.draft_model, prec[1])
    target = _Chips(ctx.chips[cfg.main.chip], cfg.main.chips, *prec, label="target")
    dlay = cfg.partner or cfg.main
    draft = _Chips(ctx.chips[dlay.chip], dlay.chips, *prec, label="draft")
    first, steps, ctx_mean = _decode_span(cls)
    n = gamma + 1
    kv_t = cfg.batch * s.mean_kv_tokens(first, steps)
    verify = _step_work(s, "full", tokens=cfg.batch * n, kv_tokens=kv_t, pairs=n * kv_t,
                        tp=cfg.main.tp, pp=cfg.main.pp, weights=target.weights, routed_tokens=cfg.batch)
    kv_d = cfg.batch * ds.mean_kv_tokens(first, steps)
    one_draft = _step_work(ds, "full", tokens=cfg.batch, kv_tokens=kv_d, pairs=kv_d, tp=dlay.tp, pp=dlay.pp,
                           weights=draft.weights)
    draft_step = _token_path(_Chain(), ds, "full", draft, tp=dlay.tp, pp=dlay.pp, context=ctx_mean)
    chain = _token_path(_Chain().then(draft_step, gamma), s, "full", target, tp=cfg.main.tp, pp=cfg.main.pp,
                        context=ctx_mean)
    if cfg.partner is None:
        # Same chips: the draft's γ steps and the verify share their bandwidth and FLOP/s.
        terms = _work_terms(verify + one_draft.times(gamma), replace(target, label=""))
    else:
        terms = [*_work_terms(verify, target), *_work_terms(one_draft.times(gamma), draft)]
        chain = chain.plus(2 * crossing_s, f"draft↔target round trip 2 × {_us(crossing_s)}")
    cycle = Bound((*terms, replace(chain.term(), detail=f"{gamma} draft steps + verify: {chain.term().detail}")))
    tpot = cycle.scaled(1.0 / n, f"; cycle ÷ {n} tokens")
    cap, basis = _little_ceiling(cfg.batch, cls, tpot)
    return Floors("decode-spec", tpot=tpot, capacity_rps_per_replica=cap, capacity_basis=basis)


def _attention_ffn(ctx, cfg, cls, s, prec, crossing_s) -> Floors:
    a_lay, f_lay = cfg.main, cfg.partner
    group = _Chips(ctx.chips[a_lay.chip], a_lay.chips // a_lay.dp, *prec, label="attention")
    ffn = _Chips(ctx.chips[f_lay.chip], f_lay.chips, *prec, label="FFN")
    b, tokens = float(cfg.batch), float(cfg.batch * a_lay.dp)
    first, steps, ctx_mean = _decode_span(cls)
    kv = b * s.mean_kv_tokens(first, steps)
    attn = _step_work(s, "attention", tokens=b, kv_tokens=kv, pairs=kv, tp=a_lay.tp, pp=a_lay.pp,
                      weights=group.weights)
    # The FFN's combine can happen on the attention side as the results come back: no certain FFN exchange.
    ffn_work = replace(_step_work(s, "ffn", tokens=tokens, kv_tokens=0.0, pairs=0.0, tp=1, pp=1, weights=ffn.weights),
                       exchange_bytes_per_chip=0.0)
    one_way = s.crossing_layers * s.hidden * _activation_bytes(prec[0])  # bytes per token per direction
    crossing = [
        Term("crossing (attention side)", b * one_way / (group.count * group.link),
             f"{_gb(b * one_way)} each way per attention group over {group.where()} × {group.link / 1e9:.4g} GB/s"),
        Term("crossing (FFN side)", tokens * one_way / (ffn.count * ffn.link),
             f"{_gb(tokens * one_way)} each way over {ffn.where()} × {ffn.link / 1e9:.4g} GB/s"),
    ]
    chain = _Chain().plus(2 * s.crossing_layers * crossing_s, f"{2 * s.crossing_layers} crossings × {_us(crossing_s)}")
    chain = _token_path(chain, s, "attention", group, tp=a_lay.tp, pp=1, context=ctx_mean, tp_latency=False)
    # A token reaches layer l's FFN stage only through the attention side: no stage hops, one stage at a time.
    chain = _token_path(chain, s, "ffn", ffn, tp=f_lay.chips // f_lay.pp, pp=1, context=0.0, tp_latency=False)
    tpot = Bound((*_work_terms(attn, group), *_work_terms(ffn_work, ffn), *crossing, chain.term()))
    cap, basis = _little_ceiling(tokens, cls, tpot)
    return Floors("decode-af", tpot=tpot, capacity_rps_per_replica=cap, capacity_basis=basis)


def config_floors(cfg: PoolConfig, ctx: Context, *, crossing_latency_s: float | None = None) -> Floors:
    """Floors of one pool configuration for its traffic class, by the floor its kind's record names
    (``PoolKind.floor``: one of this module's ``*_floor`` functions).

    ``crossing_latency_s`` is the one-way latency between the two parts of a
    paired configuration (attention–FFN, remote draft); by default the faster
    chip's scale-up latency, the fastest hop the catalogue lists.

    Raises
    ------
    KeyError
        When the configuration names a chip or class the context lacks, or a kind with no floor.
    """
    kind = pool_kind(cfg.kind)
    if kind.floor is None:
        raise KeyError(f"replica kind {cfg.kind!r} names no physical floor (PoolKind.floor)")
    if kind.partner != "never" and crossing_latency_s is None:
        parts = [cfg.main] + ([cfg.partner] if cfg.partner else [])
        crossing_latency_s = min(ctx.chips[p.chip].scale_up_latency_s for p in parts)
    return kind.floor(ctx, cfg, crossing_latency_s)


def _inputs(ctx: Context, cfg: PoolConfig) -> tuple:
    """(class, model shape, (weight precision, KV precision)) of a modelled configuration."""
    prec = (ctx.instance.precision.weights, ctx.instance.precision.kv)
    return ctx.classes[cfg.traffic_class], model_shape(ctx.model, prec[1]), prec


def measured_floor(ctx: Context, cfg: PoolConfig, crossing_s: float | None = None) -> Floors:
    """A measured configuration: its capacity is a measurement, not checked against the physics."""
    return Floors("measured", capacity_basis="measured: not checked")


def prefill_floor(ctx: Context, cfg: PoolConfig, crossing_s: float | None = None) -> Floors:
    """A prefill replica's floors."""
    return _prefill(ctx, cfg, *_inputs(ctx, cfg))


def decode_floor(ctx: Context, cfg: PoolConfig, crossing_s: float | None = None) -> Floors:
    """A decode replica's floors."""
    return _decode(ctx, cfg, *_inputs(ctx, cfg))


def aggregated_floor(ctx: Context, cfg: PoolConfig, crossing_s: float | None = None) -> Floors:
    """An aggregated replica's floors (prefill and decode on the same chips)."""
    return _aggregated(ctx, cfg, *_inputs(ctx, cfg))


def speculative_floor(ctx: Context, cfg: PoolConfig, crossing_s: float | None = None) -> Floors:
    """A decode replica with a draft (beside it or remote, ``crossing_s`` away)'s floors."""
    return _spec(ctx, cfg, *_inputs(ctx, cfg), crossing_s)


def attention_ffn_floor(ctx: Context, cfg: PoolConfig, crossing_s: float | None = None) -> Floors:
    """An attention–FFN pair's floors (its halves ``crossing_s`` apart)."""
    return _attention_ffn(ctx, cfg, *_inputs(ctx, cfg), crossing_s)


def floors(pool: Pool, ctx: Context, plan: Plan | None = None) -> Floors:
    """Floors of a plan's pool (both parts of a paired pool share the pair's floors).

    With ``plan``, a paired pool's crossings take the lowest latency among the
    paths its pairs use (the same site: the faster chip's scale-up latency).
    """
    lat = None if plan is None else _crossing_latency_s(ctx, plan, pool)
    return config_floors(pool.config, ctx, crossing_latency_s=lat)


# ---- checking a plan --------------------------------------------------------------------------


def _crossing_latency_s(ctx: Context, plan: Plan, pool: Pool) -> float | None:
    """Lowest one-way latency among the pairs a paired pool's column uses (None: no pairs listed)."""
    cfg = pool.config
    if cfg.partner is None:
        return None
    fastest = min(ctx.chips[p.chip].scale_up_latency_s for p in (cfg.main, cfg.partner))
    lats = [fastest if pr.source_site == pr.target_site else _path_latency_s(ctx, pr.source_site, pr.target_site)
            for pr in plan.pairs if pr.column == pool.column and pr.replicas > 1e-9]
    return min((x for x in lats if x is not None), default=None)


def _path_latency_s(ctx: Context, source: str, target: str) -> float | None:
    try:
        return nx.shortest_path_length(ctx.graph, source, target, weight="latency_s")
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return None


def _checkable(ctx: Context, pool: Pool) -> bool:
    cfg, kind = pool.config, pool_kind(pool.config.kind)
    return (kind.measured or cfg.traffic_class in ctx.classes) and not (kind.drafts and ctx.draft_model is None) \
        and all(p.chip in ctx.chips for p in (cfg.main, cfg.partner) if p is not None)


def _below(claim_ms: float | None, bound: Bound | None) -> bool:
    return claim_ms is not None and bound is not None and claim_ms < bound.seconds * 1e3 * (1 - RTOL)


def check_floors(plan: Plan, ctx: Context) -> list[str]:
    """Every claim of ``plan`` that beats its physical floor, as a sentence naming the binding term.

    Checks each pool's ``tpot_ms`` and ``ttft_ms``, each main pool's capacity
    per replica for its class against the ceiling the floors imply, and each
    class's ``ttft_ms``/``tpot_ms`` (the worst of its pools) against the
    largest floor among the pools serving it.

    Examples
    --------
    >>> from placement.core.verify.floors import check_floors
    >>> check_floors(plan, ctx)   # doctest: +SKIP
    []
    """
    if plan.status not in ("optimal", "feasible", "time_limit"):
        return []
    v: list[str] = []
    by_pool: dict[str, Floors] = {}
    for pool in plan.pools:
        if not _checkable(ctx, pool):
            continue  # the verifier reports unknown chips and classes
        try:
            f = floors(pool, ctx, plan)
        except KeyError as e:  # a kind without a floor is not accepted unchecked
            v.append(f"pool {pool.id}: {e.args[0]}")
            continue
        by_pool[pool.id] = f
        for name, claim, bound in (("tpot_ms", pool.tpot_ms, f.tpot), ("ttft_ms", pool.ttft_ms, f.ttft)):
            if _below(claim, bound):
                v.append(f"pool {pool.id} {name} {claim:.4g} < floor {bound.seconds * 1e3:.4g} ({bound})")
        if pool.part or f.capacity_rps_per_replica is None:
            continue
        for step, cap in sorted(pool.capacity_rps_per_replica.items()):
            if step.split("|")[0] == pool.config.traffic_class and cap > f.capacity_rps_per_replica * (1 + RTOL):
                v.append(f"pool {pool.id} capacity_rps_per_replica[{step}] {cap:.4g} > ceiling "
                         f"{f.capacity_rps_per_replica:.4g} ({f.capacity_basis})")
    for cp in plan.classes:
        serving = [p for p in plan.pools if p.part == 0 and p.id in by_pool and any(
            st.split("|")[0] == cp.name and r > 1e-12 for s in p.sites for st, r in s.load_rps.items())]
        for name, claim, pick in (("ttft_ms", cp.ttft_ms, lambda f: f.ttft), ("tpot_ms", cp.tpot_ms, lambda f: f.tpot)):
            bounds = [(pick(by_pool[p.id]), p.id) for p in serving if pick(by_pool[p.id]) is not None]
            if not bounds:
                continue
            bound, pid = max(bounds, key=lambda x: x[0].seconds)
            if _below(claim, bound):
                v.append(f"class {cp.name} {name} {claim:.4g} < floor {bound.seconds * 1e3:.4g} of pool {pid} "
                         f"({bound})")
    return v
