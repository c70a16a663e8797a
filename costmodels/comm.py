"""Communication costs: TP all-reduce, EP all-to-all, stage hand-offs, KV transfer,
attention–FFN activation ping-pong.

Bandwidths are per chip per direction (``ChipSpec.scale_up_bandwidth_bytes_per_s``,
``scale_out_bandwidth_bytes_per_s``). A collective over ``n`` chips uses the
scale-up fabric when ``n`` fits in one scale-up domain and the scale-out NICs
otherwise (:func:`link_for_span`). Communication is not overlapped with compute
inside a step (a conservative, common roofline choice); the attention–FFN
ping-pong is the one place where overlap is modelled (:func:`af_tpot_s`).

Examples
--------
>>> from costmodels.examples import h100
>>> round(tp_allreduce_s(h100(), 2 * 2**20, 8) * 1e6, 1)  # Vidur measures ~34 µs
33.4
"""

from __future__ import annotations

import numpy as np

from costmodels.arithmetic import kv_bytes_per_sequence
from costmodels.arrays import as_result
from costmodels.collectives import SCALE_OUT_LATENCY_S, allreduce_s, link_for_span
from costmodels.models import BYTES_PER_VALUE, ModelSpec
from topology.chips import ChipSpec

__all__ = [
    "ACTIVATION_BYTES_PER_VALUE",
    "DEFAULT_ACTIVATION_PRECISION",
    "SCALE_OUT_LATENCY_S",
    "af_activation_bytes_per_token",
    "af_comm_hidden",
    "af_round_trip_s",
    "af_tpot_s",
    "af_transfer_s",
    "alltoall_fabric",
    "ep_alltoall_s",
    "ep_imbalance",
    "kv_transfer_bytes",
    "kv_transfer_s",
    "link_for_span",
    "pp_hop_s",
    "step_comm_s",
    "tp_allreduce_s",
]

#: The one rule for activation bytes (TP all-reduce, EP dispatch/combine, pipeline
#: hand-offs, attention–FFN traffic): activations travel at the activation
#: precision, not the weight precision, by default BF16 even when weights are
#: FP8/FP4 (vLLM/TRT-LLM all-reduce and combine in BF16). An instance may set FP8
#: (e.g. DeepEP's FP8 dispatch); every function here takes ``activation_precision``.
DEFAULT_ACTIVATION_PRECISION = "bf16"
#: Bytes per activation value at :data:`DEFAULT_ACTIVATION_PRECISION`.
ACTIVATION_BYTES_PER_VALUE = BYTES_PER_VALUE[DEFAULT_ACTIVATION_PRECISION]
#: An all-to-all exchange happens twice per MoE layer: dispatch and combine.
_ALLTOALL_PHASES = 2.0
#: Activations cross between the attention and FFN pools twice per layer (there and back).
_AF_CROSSINGS_PER_LAYER = 2.0


def tp_allreduce_s(chip: ChipSpec, bytes_per_rank, tp):
    """Tensor-parallel all-reduce of ``bytes_per_rank`` over ``tp`` ranks (0 for tp = 1).

    The fastest algorithm the chip's fabric offers for that message size:
    ring, one-shot, two-shot or in-switch reduction
    (:func:`costmodels.collectives.allreduce_s`, which documents the formulas
    and the measurements), on the scale-up fabric when the ranks fit in one
    domain, else on the scale-out NICs (:func:`link_for_span`). Divided by
    the chip's ``allreduce_efficiency``: in a serving step the all-reduces
    run as separate kernels between the layer's GEMMs, slower than in the
    microbenchmarks the formulas reproduce (fitted, ``benchmarks/CALIBRATION.md``).

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> tp_allreduce_s(h100(), 1e6, 1)
    0.0
    """
    t = allreduce_s(chip, bytes_per_rank, tp)
    if chip.allreduce_efficiency == 1.0:
        return t
    return as_result(np.asarray(t) / chip.allreduce_efficiency)


#: Published all-to-all kernels (DeepSeek-V3 shape: 7168 hidden, top-8) on each fabric, per phase
#: (dispatch or combine) of one MoE layer: a floor no message size goes below, a fixed cost α and the
#: fraction η of the link's per-direction bandwidth the logical bytes (every one of a token's k copies,
#: the rank's own included, as the kernels' benchmarks count them) move at. Chips may state their own
#: (``ChipSpec.alltoall_floor_s``, ``alltoall_efficiency``); these are the defaults.
#:
#: * scale-up, the default (HGX H100-class NVLink): pplx-kernels README (2025-03-25), NVLink EP 8:
#:   41.6 µs dispatch / 41.7 µs combine at 1 token per GPU, 83.6 / 102.3 µs at 128 tokens
#:   (≈ 15 µs + 14.7 MB at 0.48 of 450 GB/s) → floor 40 µs, η 0.45;
#: * scale-out (RDMA, 400 Gb/s CX7 per GPU): DeepEP low-latency kernels (README, 2025-02-24), H800,
#:   128 tokens per rank, EP 16–256: 163–194 µs dispatch, 318–369 µs combine, 39–46 GB/s logical of the
#:   NIC's 50 (η 0.8); pplx-kernels IBGDA at 1 token: 103–126 µs dispatch, 55–63 µs combine → floor 60 µs.
ALLTOALL_ALPHA_S = 15e-6
SCALE_UP_ALLTOALL_FLOOR_S = 40e-6
SCALE_UP_ALLTOALL_EFFICIENCY = 0.45
SCALE_OUT_ALLTOALL_FLOOR_S = 60e-6
SCALE_OUT_ALLTOALL_EFFICIENCY = 0.8
#: Engines combine expert outputs in BF16 whatever the dispatch precision (DeepEP, TRT-LLM, SGLang, vLLM).
COMBINE_BYTES_PER_VALUE = BYTES_PER_VALUE["bf16"]
#: Load imbalance left on the hottest expert-parallel rank with expert-parallel load balancing (EPLB):
#: TensorRT-LLM (blog 4, DeepSeek-R1, EP 32, 1,024 routed tokens per rank) measures (max − mean)/mean =
#: 0.109–0.115 with EPLB (1.56 without); the sampling noise of m routed tokens over ep ranks,
#: sqrt(2·ln(ep)/m), is 0.082 of it, the rest (~0.03) a residual skew.
EPLB_RESIDUAL_IMBALANCE = 0.03


def ep_imbalance(tokens, k, ep):
    """ρ: the hottest expert-parallel rank's routed tokens over the mean, under EPLB-balanced experts.

    ``ρ = 1 + r₀ + sqrt(2·ln(ep) / m)`` with m = tokens·k/ep the mean routed tokens per rank and r₀ =
    :data:`EPLB_RESIDUAL_IMBALANCE` (1 for ep = 1): the expected maximum of ep near-Gaussian loads.

    Examples
    --------
    >>> round(float(ep_imbalance(4096, 8, 32)), 3)   # 1,024 routed tokens a rank: TensorRT-LLM 1.109-1.115
    1.112
    >>> float(ep_imbalance(100, 8, 1))
    1.0
    """
    n = np.asarray(ep, dtype=float)
    m = np.maximum(np.asarray(tokens, dtype=float) * k / n, 1.0)
    return as_result(np.where(n > 1, 1.0 + EPLB_RESIDUAL_IMBALANCE + np.sqrt(2.0 * np.log(np.maximum(n, 1.0)) / m),
                              1.0))


def alltoall_fabric(chip: ChipSpec, span_chips):
    """(link bandwidth per direction, η, floor per phase) of an all-to-all over ``span_chips`` chips."""
    bw, _ = link_for_span(chip, span_chips)
    inside = np.asarray(span_chips, dtype=float) <= chip.scale_up_domain_chips
    eta_up = chip.alltoall_efficiency or SCALE_UP_ALLTOALL_EFFICIENCY
    floor_up = chip.alltoall_floor_s or SCALE_UP_ALLTOALL_FLOOR_S
    return (bw, np.where(inside, eta_up, SCALE_OUT_ALLTOALL_EFFICIENCY),
            np.where(inside, floor_up, SCALE_OUT_ALLTOALL_FLOOR_S))


def ep_alltoall_s(chip: ChipSpec, tokens, k, d, bytes_per_value, ep, span_chips=None):
    """Expert-parallel dispatch + combine of ``tokens`` tokens over ``ep`` ranks, one MoE layer.

    The tokens start spread evenly over the ``span_chips`` chips the ranks occupy (default ``ep``; under
    data-parallel attention the dp·tp chips of a stage). Per phase, the hottest rank moves the logical
    bytes the published kernels count — every one of its tokens' k copies, its own included — scaled by
    the imbalance ρ (:func:`ep_imbalance`)::

        B_dispatch = ρ·(T/span)·k·d·b_a          B_combine = ρ·(T/span)·k·d·2    (combine in BF16)
        t_phase ≥ max(floor, α + B/(η·BW))        t = t_dispatch + t_combine      (0 for ep = 1)

    with BW the link per direction (scale-up inside one domain, else the NIC: :func:`link_for_span`) and
    α, η, floor those of the fabric (:data:`ALLTOALL_ALPHA_S`, :func:`alltoall_fabric`). The floor is
    what makes many small all-to-alls expensive: at 1–16 tokens a rank, 58 MoE layers pay ≥ 4.6 ms a step
    on NVLink and ≥ 7 ms over RDMA, where bytes alone would say microseconds.

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> round(ep_alltoall_s(h100(), 8 * 128, 8, 7168, 2, 8) * 1e6, 1)   # pplx NVLink EP8: 83.6 + 102.3 µs
    188.6
    >>> round(ep_alltoall_s(h100(), 16, 8, 7168, 2, 8) * 1e6, 1)        # 2 tokens a rank: the floors
    80.0
    >>> round(ep_alltoall_s(h100(), 16 * 128, 8, 7168, 1, 16) * 1e6, 1)  # two nodes, FP8: DeepEP 173 + 329 µs
    637.5
    """
    n = np.asarray(ep, dtype=float)
    span = n if span_chips is None else np.asarray(span_chips, dtype=float)
    bw, eta, floor = alltoall_fabric(chip, span)
    rank_tokens = np.asarray(ep_imbalance(tokens, k, n)) * np.asarray(tokens, dtype=float) / span
    copies = rank_tokens * k * d
    dispatch = np.maximum(floor, ALLTOALL_ALPHA_S + copies * bytes_per_value / (eta * bw))
    combine = np.maximum(floor, ALLTOALL_ALPHA_S + copies * COMBINE_BYTES_PER_VALUE / (eta * bw))
    return as_result(np.where(n > 1, dispatch + combine, 0.0))


def pp_hop_s(chip: ChipSpec, bytes_per_micro_batch, tp, pp):
    """Hand-off of one micro-batch's activations between two pipeline stages.

    The ``tp`` ranks of a stage each send 1/tp of the activations in parallel;
    scale-up when the whole replica (tp·pp chips) fits in one domain, else
    scale-out: ``t = bytes/(tp·BW) + latency``.
    """
    t_a = np.asarray(tp, dtype=float)
    bw, lat = link_for_span(chip, t_a * np.asarray(pp, dtype=float))
    return as_result(np.asarray(bytes_per_micro_batch, dtype=float) / (t_a * bw) + lat)


def step_comm_s(chip: ChipSpec, model: ModelSpec, *, part: str, tokens_per_micro_batch, tp, ep, pp, dp=1,
                activation_precision: str = DEFAULT_ACTIVATION_PRECISION):
    """Communication time of one forward round of one micro-batch through all L layers.

    A stage has dp·tp chips: ``dp`` data-parallel attention ranks of ``tp``
    chips; each rank holds t/dp of the micro-batch's t tokens. With
    x = (t/dp)·d·b_a the activation bytes of one rank (b_a = bytes per value at
    ``activation_precision``), AR(x, n) = :func:`tp_allreduce_s` over n chips and
    A2A = :func:`ep_alltoall_s` of the t tokens over ``ep`` ranks spanning the
    stage's dp·tp chips:

    * ``full``: dense layers 2·AR(x, tp) (attention and FFN, inside each TP
      group); MoE layers AR(x, tp) + [A2A if ep > 1] + [AR(x_e, e) if e > 1],
      where e = dp·tp/ep chips slice each EP rank's experts and
      x_e = t·min(1, k/ep)·d·b_a is what one EP rank's expert outputs add up to
      (ep = 1: every token, summed over its k local experts). With dp = 1 this
      is AR + A2A for ep = tp and 2·AR for ep = 1. Plus (pp − 1) stage hand-offs
      (:func:`pp_hop_s`, sent by all dp·tp chips of a stage).
    * ``attention``: AR(x, tp) per layer (after the output projection).
    * ``ffn``: AR(x, tp) per dense layer, and per MoE layer when ep = 1; with
      ep = tp (dp = 1) tokens arrive at their experts directly (the dispatch is
      the attention–FFN traffic, :func:`af_activation_bytes_per_token`). An
      expert-parallel stage (dp > 1, ep = dp·tp) receives each token once, on
      one of its dp groups of tp chips: a dense layer is AR(x, tp) in each
      group, a MoE layer A2A + [AR(x_e, e) if e > 1] over the stage, as in
      ``full`` without the attention's all-reduce.

    A collective whose chips span more than one scale-up domain runs on the
    scale-out NICs (:func:`link_for_span`).
    """
    t = np.asarray(tokens_per_micro_batch, dtype=float)
    tp_a, ep_a, pp_a, dp_a = (np.asarray(v, dtype=float) for v in (tp, ep, pp, dp))
    activation_bytes_per_value = BYTES_PER_VALUE[activation_precision]
    x = t * model.hidden_size * activation_bytes_per_value
    ar = np.asarray(tp_allreduce_s(chip, x / dp_a, tp_a))
    dense, moe = model.n_dense_layers, model.n_moe_layers
    if part == "attention":
        return as_result(model.layers * ar)
    sharded = ep_a > 1
    stage_chips = dp_a * tp_a
    exchange = 0.0
    if moe:
        k = model.moe.active_experts
        a2a = np.asarray(ep_alltoall_s(chip, t, k, model.hidden_size, activation_bytes_per_value, ep_a, stage_chips))
        slices = stage_chips / ep_a
        x_e = x * np.minimum(1.0, k / ep_a)
        exchange = a2a + np.where(slices > 1, np.asarray(tp_allreduce_s(chip, x_e, slices)), 0.0)
    if part == "ffn":
        # ep = 1: the TP group all-reduces; ep = tp, dp = 1: tokens came to their experts directly; dp > 1: the
        # stage dispatches and combines itself.
        moe_ffn = np.where(sharded, np.where(dp_a > 1, exchange, 0.0), ar)
        return as_result(dense * ar + moe * moe_ffn)
    moe_s = ar + exchange if moe else 0.0
    # One all-reduce after each layer's token mixer (``ar`` in moe_s for a MoE layer's), one after each dense
    # FFN; MoE layers dispatch instead. Layers without an FFN (hybrids' mixer-only blocks) add their mixer's.
    total = dense * 2.0 * ar + moe * moe_s + (model.layers - model.ffn_layer_count) * ar
    hops = (pp_a - 1.0) * np.asarray(pp_hop_s(chip, x, stage_chips, pp_a))
    return as_result(total + hops)


def kv_transfer_bytes(model: ModelSpec, prompt, cached=0, kv_precision: str = "bf16",
                      prefix_cached_on_decode: bool = False):
    """KV bytes a request moves from its prefill pool to its decode pool (PD).

    ``(c0 + p)·κ`` — the whole cache the decode side needs — or, when the decode
    side already holds the prefix, only the new tokens' ``p·κ``: what that many tokens hold
    (:func:`costmodels.arithmetic.kv_bytes_per_sequence`: sliding windows capped, a linear mixer's state whole).

    Examples
    --------
    >>> from costmodels.examples import llama_70b
    >>> kv_transfer_bytes(llama_70b(), 1000, 3000, "bf16")
    1310720000.0
    >>> kv_transfer_bytes(llama_70b(), 1000, 3000, "bf16", True)
    327680000.0
    """
    p = np.asarray(prompt, dtype=float)
    c = p if prefix_cached_on_decode else p + np.asarray(cached, dtype=float)
    return kv_bytes_per_sequence(model, kv_precision, c)


def kv_transfer_s(bytes_, bandwidth_bytes_per_s, latency_s=0.0):
    """Time to move ``bytes_`` over a path: bytes / bandwidth + latency.

    Examples
    --------
    >>> round(kv_transfer_s(1e9, 50e9, 5e-6), 6)
    0.020005
    """
    return as_result(np.asarray(bytes_, dtype=float) / np.asarray(bandwidth_bytes_per_s, dtype=float)
                + np.asarray(latency_s, dtype=float))


def af_activation_bytes_per_token(model: ModelSpec, activation_precision: str = DEFAULT_ACTIVATION_PRECISION, *,
                                  ffn_expert_parallel: bool = False) -> float:
    """Bytes one decode token sends between attention and FFN pools, both ways, all layers.

    ≈ 2·L·d·b_a: the hidden state goes to the FFN pool and comes back once per
    layer. With an expert-parallel FFN pool (``ffn_expert_parallel``) the MoE
    layers dispatch a copy to each of the token's k experts and combine k
    results back (× k on those layers); shared experts are co-located and free.
    Values travel at ``activation_precision`` (default BF16, whatever the weights).

    Examples
    --------
    >>> from costmodels.examples import llama_70b
    >>> af_activation_bytes_per_token(llama_70b())
    2621440.0
    """
    b = BYTES_PER_VALUE[activation_precision]
    k = model.moe.active_experts if (ffn_expert_parallel and model.moe is not None) else 1
    per_layer = _AF_CROSSINGS_PER_LAYER * model.hidden_size * b
    return float(per_layer * (model.n_dense_layers + model.n_moe_layers * k))


def af_transfer_s(model: ModelSpec, tokens, bandwidth_bytes_per_s, latency_s,
                  activation_precision: str = DEFAULT_ACTIVATION_PRECISION, *, ffn_expert_parallel: bool = False):
    """Round-trip activation time of one micro-batch of ``tokens`` tokens, all layers.

    ``tokens·af_activation_bytes_per_token / BW + 2·L·latency``: the ``comm_s``
    argument of :func:`af_tpot_s`.
    """
    per_token = af_activation_bytes_per_token(model, activation_precision, ffn_expert_parallel=ffn_expert_parallel)
    return as_result(af_round_trip_s(tokens, per_token, bandwidth_bytes_per_s, latency_s, model.layers))


def af_round_trip_s(tokens, bytes_per_token, bandwidth_bytes_per_s, latency_s, layers: int, *,
                    floor_s: float = SCALE_OUT_ALLTOALL_FLOOR_S, efficiency: float = SCALE_OUT_ALLTOALL_EFFICIENCY,
                    alpha_s: float = ALLTOALL_ALPHA_S) -> np.ndarray:
    """:func:`af_transfer_s` from the bytes per token (:func:`af_activation_bytes_per_token`), every
    argument but ``layers`` an array that broadcasts (one replica layout per row).

    Each of the 2·L crossings is a dispatch of the micro-batch's hidden states between the pools over
    their NICs, priced as the expert all-to-all kernels are (:func:`ep_alltoall_s`)::

        crossing ≥ max(floor, α + latency + (tokens·bytes_per_token / 2L) / (η·BW))

    Examples
    --------
    >>> af_round_trip_s(np.array([1.0, 2.0]), 10.0, np.array([[10.0], [20.0]]), 0.5, layers=2, floor_s=0.0,
    ...                 efficiency=1.0, alpha_s=0.0).tolist()
    [[3.0, 4.0], [2.5, 3.0]]
    >>> round(float(af_round_trip_s(64, 2 * 61 * 7168 * 2, 400e9, 5e-6, layers=61)) * 1e3, 2)  # the floors
    7.32
    """
    per_crossing = (np.asarray(tokens, dtype=float) * bytes_per_token / (_AF_CROSSINGS_PER_LAYER * layers)
                    / (efficiency * np.asarray(bandwidth_bytes_per_s, dtype=float)))
    crossing = np.maximum(floor_s, alpha_s + np.asarray(latency_s, dtype=float) + per_crossing)
    return as_result(_AF_CROSSINGS_PER_LAYER * layers * crossing)


def af_tpot_s(attn_s, ffn_s, comm_s, micro_batches):
    """TPOT of attention–FFN disaggregation with ping-pong micro-batches (MegaScale-Infer).

    Parameters
    ----------
    attn_s, ffn_s
        Time of ONE micro-batch through all L layers on the attention pool,
        resp. the FFN pool (``decode_attention_step(batch=B/m).time_s`` …).
    comm_s
        Round-trip activation time of one micro-batch over all layers (both
        crossings, :func:`af_transfer_s`); each direction carries half.
    micro_batches
        m micro-batches circulate between the pools.

    Notes
    -----
    Per layer the m micro-batches form a closed loop over four servers:
    attention (A/L per micro-batch), link out (C/2L), FFN (F/L), link back
    (C/2L). The round of all m micro-batches through all L layers takes::

        TPOT = max(m · max(A, F, C/2),  A + F + C)

    Communication is *hidden* — TPOT = m·max(A, F) — only when both
    MegaScale-Infer conditions hold: (1) each crossing is shorter than the
    slower side's compute, C/2 ≤ max(A, F); (2) enough micro-batches are in
    flight to cover one round trip, m·max(A, F) ≥ A + F + C. Otherwise the
    link either sets the pace (m·C/2) or its latency adds in full (A + F + C;
    with m = 1 nothing overlaps).

    Examples
    --------
    >>> af_tpot_s(1.0, 1.0, 0.2, 3)   # hidden: 3·1 ≥ 2.2
    3.0
    >>> af_tpot_s(1.0, 1.0, 0.2, 1)   # m = 1: strictly sequential
    2.2
    """
    a, f, c = (np.asarray(v, dtype=float) for v in (attn_s, ffn_s, comm_s))
    m = np.asarray(micro_batches, dtype=float)
    one_way = c / _AF_CROSSINGS_PER_LAYER
    return as_result(np.maximum(m * np.maximum(np.maximum(a, f), one_way), a + f + c))


def af_comm_hidden(attn_s, ffn_s, comm_s, micro_batches):
    """Whether the ping-pong hides communication (both conditions of :func:`af_tpot_s`)."""
    a, f, c = (np.asarray(v, dtype=float) for v in (attn_s, ffn_s, comm_s))
    slow = np.maximum(a, f)
    m = np.asarray(micro_batches, dtype=float)
    return as_result((c / _AF_CROSSINGS_PER_LAYER <= slow) & (m * slow >= a + f + c))
