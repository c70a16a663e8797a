"""Replica layouts the serving modes enumerate: sizes, TP/EP/PP splits, batches.

Replica sizes per chip type are powers of two dividing the domain, the
domain, and whole numbers of domains (doubling, and every whole number near
what an attention–FFN replica's FFN half needs, :func:`ffn_sizes`), so the
solver's aggregate chip constraint packs exactly (see
:func:`solvers.packing.check_packable`). Tensor parallelism stays inside one
scale-up domain and divides the attention heads; a mixture-of-experts model
may also split its experts over the TP group (EP = TP) or, for decode and
aggregated replicas, run data-parallel attention with its experts over the
whole stage (wide EP, :func:`layouts`); an FFN half may be a pipeline of
expert-parallel stages inside one domain (:func:`ffn_layouts`).

Results that every class asks for again are kept in ``memo``, a dict the
caller keeps for one context (:attr:`placement.core.replicas.candidates.Candidates.memo`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from costmodels.arithmetic import stored_weight_bytes
from placement.core.replicas.evaluate import PartLayout
from placement.core.replicas.precisions import runs_precisions

if TYPE_CHECKING:
    from placement.core.instance.context import Context, SiteInfo

__all__ = [
    "BATCHES",
    "FFN_DENSE_GROUPS",
    "SIZE_HEADROOM",
    "Weights",
    "attention_parts",
    "ffn_layouts",
    "ffn_parts",
    "ffn_sizes",
    "layouts",
    "parts",
    "replica_sizes",
    "weights",
]

#: Batches tried for every decoding configuration.
BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096], dtype=float)
#: Largest replica considered, as a multiple of the smallest one that holds the weights.
SIZE_HEADROOM = 8
#: Data-parallel groups of an expert-parallel FFN stage (:func:`ffn_layouts`): each runs the dense layers
#: and shared experts on its tp = w/8 chips for the tokens it received. Eight copies of DeepSeek-V3's
#: 3.7 GB of dense and shared FFN weights over a 1,536-chip LPX half add 7·3.7 GB / 1,536 = 17 MB a chip
#: (3 % of an LP30's 500 MB SRAM) and keep each dense all-reduce on w/8 chips.
FFN_DENSE_GROUPS = 8
#: Widest expert-parallel FFN stages tried per size: the domain and its next two halvings.
_FFN_STAGE_WIDTHS = 3


@dataclass(frozen=True)
class Weights:
    """Bytes of the model's weights at the instance's precision: all, attention (with embeddings), FFN."""

    all_bytes: float
    attention_bytes: float
    ffn_bytes: float


def weights(ctx: Context) -> Weights:
    """The model's weight bytes, split as the attention–FFN halves hold them (each at its precision)."""
    p = ctx.instance.precision
    w, a = p.weights, p.attention_for(ctx.model)
    return Weights(all_bytes=stored_weight_bytes(ctx.model, "full", w, a),
                   attention_bytes=stored_weight_bytes(ctx.model, "attention", w, a),
                   ffn_bytes=stored_weight_bytes(ctx.model, "ffn", w, a))


def replica_sizes(domain_chips: int, max_chips: int) -> list[int]:
    """Chips per replica: powers of two dividing the domain, then the domain doubling.

    Examples
    --------
    >>> replica_sizes(72, 500)
    [1, 2, 4, 8, 72, 144, 288]
    >>> replica_sizes(1, 4)
    [1, 2, 4]
    """
    sizes = [1 << i for i in range(20) if (1 << i) <= domain_chips and domain_chips % (1 << i) == 0]
    if sizes[-1] != domain_chips:
        sizes.append(domain_chips)
    s = domain_chips * 2
    while s <= max_chips:
        sizes.append(s)
        s *= 2
    return sizes


def layouts(ctx: Context, site: SiteInfo, chips: int, stage: str,
            data_parallel: bool = False) -> list[tuple[int, int, int, int]]:
    """(tp, ep, pp, dp) with dp·tp·pp = chips, tp inside one domain and dividing the heads, pp at most the
    model's layers and :meth:`~placement.core.instance.context.Context.most_pipeline_stages` (the instance's
    ``serving.max_pipeline_stages``, else the stages the chip's calibration measured).

    Always the dp = 1 layouts: tp·pp = chips, ep ∈ {1, tp} on a mixture-of-experts
    model (tp dividing the experts). With ``data_parallel`` (decode and
    aggregated replicas of a mixture-of-experts model) also data-parallel
    attention with wide expert parallelism, ep = dp·tp = w, for each tp and
    each stage width w ∈ {min(chips, domain), chips}: the stage fills the
    scale-up domain (pp = chips/w stages, the all-to-all on the scale-up
    fabric), or the whole replica is one stage whose all-to-all crosses
    domains on the scale-out NICs. That is at most two more layouts per tp:
    the engines' wide-EP shapes (SGLang/TRT-LLM DP attention, EP 8–72 in an
    NVL72 domain, EP 16–32 over RDMA across 8-GPU nodes) without the full
    lattice of divisors.
    """
    m = ctx.model
    out = []
    most_pp = ctx.most_pipeline_stages(site.chip.name, chips, site.chips_per_domain) or m.layers
    tp = 1
    while tp <= min(chips, site.chips_per_domain):
        if chips % tp == 0 and m.attention.heads % tp == 0:
            pp = chips // tp
            eps = [1]
            if m.moe is not None and tp > 1 and m.moe.experts % tp == 0 and stage != "decode-attention":
                eps.append(tp)
            out.extend((tp, ep, pp, 1) for ep in eps if pp <= min(m.layers, most_pp))
            if data_parallel and m.moe is not None:
                for width in sorted({min(chips, site.chips_per_domain), chips}):
                    if width % tp == 0 and width > tp and chips // width <= min(m.layers, most_pp):
                        out.append((tp, width, chips // width, width // tp))
        tp *= 2
    return out


def _min_chips_for_weights(site: SiteInfo, weight_bytes: float) -> int:
    return max(1, math.ceil(weight_bytes / site.chip.memory_bytes))


def _fleet_chips(ctx: Context, resource: str) -> int:
    return sum(s.chips for s in ctx.sites.values() if s.resource == resource)


def parts(ctx: Context, site: SiteInfo, stage: str, weight_bytes: float, memo: dict | None = None,
          data_parallel: bool = False) -> list[PartLayout]:
    """Replica layouts of ``stage`` on ``site``'s resource holding ``weight_bytes`` (kept in ``memo``); none
    where the chip lacks a rate the stage's matmuls need
    (:func:`~placement.core.replicas.precisions.runs_precisions`).

    ``data_parallel`` adds the data-parallel attention / wide-EP layouts of
    :func:`layouts` (for kinds whose replica shares one batch over its dp groups).
    """
    key = ("parts", site.resource, stage, weight_bytes, data_parallel)
    if memo is not None and key in memo:
        return memo[key]
    if not runs_precisions(ctx, site.chip, stage):
        if memo is not None:
            memo[key] = []
        return []
    need = _min_chips_for_weights(site, weight_bytes)
    max_chips = min(_fleet_chips(ctx, site.resource), need * SIZE_HEADROOM)
    out = []
    for g in replica_sizes(site.chips_per_domain, max(max_chips, site.chips_per_domain)):
        if g < need:
            continue
        for tp, ep, pp, dp in layouts(ctx, site, g, stage, data_parallel):
            out.append(PartLayout(chip=site.chip.name, site_resource=site.resource, chips=g, tp=tp, ep=ep, pp=pp,
                                  dp=dp))
    if memo is not None:
        memo[key] = out
    return out


def ffn_sizes(domain_chips: int, need_chips: int, max_chips: int) -> list[int]:
    """Chips of an attention–FFN replica's FFN half: the sub-domain chain of :func:`replica_sizes`, then
    every whole number n of domains from the fewest that hold the weights, n₀ = ⌈need/D⌉, to ⌈1.5·n₀⌉, then
    powers of two times the domain up to ``max_chips``; none below ``need_chips``. (Between ⌈1.5·n₀⌉ and
    the next power of two, two replicas of the smaller sizes serve what one would.)

    Packing: a replica of n ≥ 1 whole domains takes n domains of its site whatever n; the sizes below a
    domain still divide it and each other. So a multiset of replicas whose chips fit a site's D·m chips
    packs: the multi-domain replicas take Σnⱼ whole domains, and the smaller ones, whose chips fit the
    D·(m − Σnⱼ) left, pack into those domains largest first, as any divisibility chain does
    (:func:`solvers.packing.check_packable`).

    Examples
    --------
    DeepSeek-V3's FP8 FFN needs ~1,316 LP30 (500 MB each) on 256-chip LPX racks: 6 racks (1,536 chips),
    not the 2,048 powers of two give.

    >>> ffn_sizes(256, 1316, 8192)
    [1536, 1792, 2048, 2304, 4096, 8192]
    >>> ffn_sizes(72, 3, 600)
    [4, 8, 72, 144, 288, 576]
    """
    n0 = max(1, -(-need_chips // domain_chips))
    most = -(-3 * n0 // 2)
    sizes = [g for g in replica_sizes(domain_chips, domain_chips) if g >= need_chips]
    sizes += [n * domain_chips for n in range(n0, most + 1) if n * domain_chips <= max(max_chips, domain_chips)]
    n = 1
    while n * domain_chips <= max_chips:
        if n > most:
            sizes.append(n * domain_chips)
        n *= 2
    return sorted(set(sizes))


def ffn_layouts(ctx: Context, site: SiteInfo, chips: int) -> list[tuple[int, int, int, int]]:
    """(tp, ep, pp, dp) of an FFN half of ``chips`` chips: :func:`layouts`'s (tensor-parallel stages, their
    experts split over the TP group or not), and on a mixture-of-experts model pipelines of expert-parallel
    stages: pp = chips/w stages of w chips, the experts over all w (ep = w), the tokens arriving once on
    one of dp = :data:`FFN_DENSE_GROUPS` groups of tp = w/dp chips (tp = 1 where w/8 does not divide the
    heads) and dispatched to their experts over the domain's fabric (the all-to-all of
    :func:`costmodels.comm.step_comm_s`) — "EP64 × PP24" beside "TP64 × PP24". Stage widths: the domain
    and its halvings (powers of two) down to 8 chips, the widest :data:`_FFN_STAGE_WIDTHS`, each inside
    one domain and no wider than the experts (every chip holds one at least).
    """
    m = ctx.model
    out = layouts(ctx, site, chips, "decode-ffn")
    if m.moe is None:
        return out
    domain = site.chips_per_domain
    widths = sorted({domain} | {1 << i for i in range(20) if 8 <= (1 << i) < domain and domain % (1 << i) == 0},
                    reverse=True)
    for w in widths[:_FFN_STAGE_WIDTHS]:
        if w < 8 or w > m.moe.experts or chips % w or chips // w > m.layers:
            continue
        tp = w // FFN_DENSE_GROUPS if w % FFN_DENSE_GROUPS == 0 and m.attention.heads % (w // FFN_DENSE_GROUPS) == 0 \
            else 1
        out.append((tp, w, chips // w, w // tp))
    return out


def ffn_parts(ctx: Context, site: SiteInfo, weight_bytes: float, memo: dict | None = None) -> list[PartLayout]:
    """FFN halves on ``site``'s resource holding ``weight_bytes``: every :func:`ffn_sizes` size and its
    :func:`ffn_layouts` (kept in ``memo``); none where the chip lacks the FFN's matmul rate."""
    key = ("ffn parts", site.resource, weight_bytes)
    if memo is not None and key in memo:
        return memo[key]
    out = []
    if runs_precisions(ctx, site.chip, "decode-ffn"):
        need = _min_chips_for_weights(site, weight_bytes)
        max_chips = min(_fleet_chips(ctx, site.resource), need * SIZE_HEADROOM)
        for g in ffn_sizes(site.chips_per_domain, need, max_chips):
            if g > _fleet_chips(ctx, site.resource):
                continue
            for tp, ep, pp, dp in ffn_layouts(ctx, site, g):
                out.append(PartLayout(chip=site.chip.name, site_resource=site.resource, chips=g, tp=tp, ep=ep,
                                      pp=pp, dp=dp))
    if memo is not None:
        memo[key] = out
    return out


def attention_parts(ctx: Context, site: SiteInfo, weight_bytes: float) -> list[PartLayout]:
    """Attention halves: dp groups of tp chips filling a chain size (no pipeline); none where the chip lacks
    the attention projections' rate (:func:`~placement.core.replicas.precisions.runs_precisions`)."""
    if not runs_precisions(ctx, site.chip, "decode-attention"):
        return []
    need = _min_chips_for_weights(site, weight_bytes)
    fleet_chips = _fleet_chips(ctx, site.resource)
    out = []
    for g in replica_sizes(site.chips_per_domain, max(min(fleet_chips, site.chips_per_domain * 4),
                                                      site.chips_per_domain)):
        tp = 1
        while tp <= min(g, site.chips_per_domain):
            if g % tp == 0 and tp >= need and ctx.model.attention.heads % tp == 0:
                out.append(PartLayout(chip=site.chip.name, site_resource=site.resource, chips=g, tp=tp, ep=1,
                                      pp=1, dp=g // tp))
            tp *= 2
    return out
