"""Roofline step models of the inference stages.

One forward step of a replica is priced from three quantities: the FLOPs it
executes, the bytes it reads from the working memory tier, and the collectives
it waits for. A layer runs two kinds of kernel one after the other — the weight
GEMMs (projections, FFN, experts), which stream weights, and the attention core,
which streams each sequence's KV cache — and each is bound by its own resource.
With ``g`` busy chips, peak F (at the weight precision; F_a at the activations'),
working-tier bandwidth BW, achievable fractions η_c, η_m, η_kv and a fixed
per-step overhead τ::

    t = max(GEMM FLOPs / (g·F·η_c), W / (g·BW·η_m))
        + max(core FLOPs / (g·F_a·η_c), KV / (g·BW·η_kv)) + t_comm + τ
    step = max(t, B·h)                                   (the host's work on B sequences, overlapped)

The sequences' host work — scheduling, sampling, detokenising, ``h`` seconds
each per step (``chip.sequence_overhead_s``) — runs beside the device, not
after it: every major engine overlaps the CPU work of step n with the GPU's
step n + 1 (TensorRT-LLM's overlap scheduler, on by default: "CPU work (step n)
and GPU computation (step n+1) run concurrently", nvidia.github.io/TensorRT-LLM
features/overlap-scheduler; SGLang's zero-overhead batch scheduler, lmsys.org
blog 2024-12-04; vLLM's async scheduling). A step therefore takes the longer of
the two, ``max(t, B·h)``: the host sets the pace only where many sequences share
a short device step (small models at large batch).

A routed expert's grouped GEMM has only the tokens routed to it as rows,
``T·k/E_t`` of T tokens (E_t the experts they touch), not T: the GEMM
efficiency curve ``1 + t½/M`` (:mod:`costmodels.efficiency`) is applied to each
GEMM family at its own row count — a MoE step at 4,096 tokens runs its experts'
GEMMs at 128 rows each (DeepSeek: 256 experts, k = 8), its projections at 4,096.
Below one tile of rows (:data:`EXPERT_TILE_ROWS`, 64: Hopper's wgmma and
Blackwell's smallest MMA tile height) the curve holds at its one-tile value: an
expert with a handful of tokens is a weight stream, which the memory term
charges, not a tile's fixed GEMM cost per expert (priced per expert, a decode
step at 1–2 tokens an expert cost twice its weights' streaming time; held out,
H200 DeepSeek decode at concurrency 64 read 0.68× the measured capacity).

Summing the two kernels' rooflines, not taking one roofline of their sums, is
what a step that mixes a compute-bound GEMM (large batch, prompt chunks) with a
memory-bound attention costs: one max over the totals would let the GEMMs' FLOPs
hide under the KV reads, which no kernel schedule does (the roofline's "perfect
overlap" is optimistic exactly where plans run, at large batch). Where both
kernels are bound by the same resource the two forms agree.

What the model touches (parameters, weight and KV bytes, attention FLOPs) is
:mod:`costmodels.arithmetic`, re-exported here; collectives are
:mod:`costmodels.comm`.

The replica layout (``tp``, ``dp``, ``ep``, ``pp``), the bytes a stage reads per
micro-batch and how pipeline stages enter TPOT are set out in docs/layouts.md.
``batch`` is always the number of sequences per replica; ``tokens/s =
batch / time_s`` holds for every layout.

Examples
--------
>>> from costmodels.examples import h100, llama_70b
>>> st = decode_step(h100(), llama_70b(), batch=1, context=1024)
>>> bool(st.memory_bound), round(st.time_s * 1e3, 1)
(True, 54.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodels.arithmetic import (
    FLOPS_PER_MAC,
    ArrayLike,
    Part,
    attention_core_flops,
    attention_flops_per_pair,
    decode_attention_pairs,
    experts_touched_per_layer,
    kv_bytes_per_sequence,
    kv_bytes_read_per_sequence,
    kv_duplication,
    matmul_params_per_token,
    prefill_attention_pairs,
    replicated_weight_bytes,
    routed_active_params,
    stored_weight_bytes,
    weight_bytes_touched,
)
from costmodels.arrays import as_result
from costmodels.comm import DEFAULT_ACTIVATION_PRECISION, ep_imbalance, step_comm_s
from costmodels.efficiency import (
    compute_time_s,
    half_rows_scale,
    kv_memory_time_s,
    memory_time_s,
    overhead_time_s,
    sequence_overhead_s,
)
from costmodels.models import ModelSpec
from topology.chips import ChipSpec

__all__ = [
    "FLOPS_PER_MAC",
    "STAGES",
    "Part",
    "StepCost",
    "aggregated_step",
    "attention_core_flops",
    "attention_flops_per_pair",
    "decode_attention_pairs",
    "decode_attention_step",
    "decode_ffn_step",
    "decode_step",
    "experts_touched_per_layer",
    "forward_cost",
    "kv_bytes_per_sequence",
    "kv_bytes_read_per_sequence",
    "kv_duplication",
    "matmul_params_per_token",
    "prefill_attention_pairs",
    "prefill_step",
    "stage_part",
    "stored_weight_bytes",
    "weight_bytes_touched",
]

#: Stage names used by the CLI, memory fit and candidates.
STAGES: tuple[str, ...] = ("prefill", "decode", "decode-attention", "decode-ffn", "draft")
_STAGE_PART: dict[str, Part] = {
    "prefill": "full",
    "decode": "full",
    "draft": "full",
    "aggregated": "full",
    "decode-attention": "attention",
    "decode-ffn": "ffn",
}


def stage_part(stage: str) -> Part:
    """Which part of the model a stage runs: ``full``, ``attention`` or ``ffn``."""
    try:
        return _STAGE_PART[stage]
    except KeyError:
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(_STAGE_PART)}") from None


@dataclass(frozen=True)
class StepCost:
    """Cost of one forward step of a replica (arrays broadcast over the inputs).

    ``time_s = max(compute_s − core_s, memory_s − kv_memory_s) + max(core_s, kv_memory_s) + comm_s +
    overhead_s`` (the weight GEMMs' roofline plus the attention core's, module notes); ``core_s`` is the
    attention core's share of ``compute_s`` (Q·Kᵀ and P·V, at the activations' precision) and
    ``kv_memory_s`` the KV reads' share of ``memory_s``; ``floor_s`` is the
    step at the chips' peaks, ``max(flops / (g·F), bytes / (g·BW))`` over the g busy
    chips — no efficiency, no overhead — below which no step can run. ``flops`` and
    ``bytes`` are replica totals for the step (all tokens, all layers; bytes
    include KV duplication across tensor-parallel ranks); ``kv_bytes`` is the KV
    part of ``bytes``. ``intensity_flop_per_byte = flops / bytes`` is what the
    chip's ridge point is compared with; ``memory_bound`` says which side of it the
    step lies on at the chips' peaks (the roofline's definition, not the fitted
    efficiencies': small GEMMs are slow, yet a step that reads more than it
    computes is memory-bound).
    """

    time_s: ArrayLike
    compute_s: ArrayLike
    core_s: ArrayLike
    memory_s: ArrayLike
    kv_memory_s: ArrayLike
    comm_s: ArrayLike
    overhead_s: ArrayLike
    floor_s: ArrayLike
    flops: ArrayLike
    bytes: ArrayLike
    kv_bytes: ArrayLike
    intensity_flop_per_byte: ArrayLike
    memory_bound: ArrayLike
    host_s: ArrayLike = 0.0
    gemm_rows: ArrayLike = 1.0

    @property
    def device_s(self):
        """The step on the chips, the host's share aside: both rooflines + comm + overhead."""
        return as_result(np.maximum(np.asarray(self.compute_s) - self.core_s, np.asarray(self.memory_s) - self.kv_memory_s)
                         + np.maximum(self.core_s, self.kv_memory_s) + self.comm_s + self.overhead_s)


#: Rows of one MMA tile: a routed expert's GEMM efficiency curve is held at its value here (module notes).
EXPERT_TILE_ROWS = 64.0


# ---- the step ----------------------------------------------------------------


def _check_layout(tp: np.ndarray, ep: np.ndarray, pp: np.ndarray, dp: np.ndarray) -> None:
    """Layout rules of the module notes; ValueError naming the rule broken."""
    if np.any(tp < 1) or np.any(pp < 1) or np.any(ep < 1) or np.any(dp < 1):
        raise ValueError("tp, ep, pp and dp must be ≥ 1")
    if np.any(np.mod(dp * tp, ep) != 0):
        raise ValueError("ep must divide dp·tp (experts distributed over the chips of one pipeline stage)")


def _core_precision(chip: ChipSpec, activation_precision: str, precision: str) -> str:
    """The precision the attention core runs at: the activations', or the weights' on a chip without that rate."""
    try:
        chip.flops(activation_precision)
    except ValueError:
        return precision
    return activation_precision


def forward_cost(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    part: Part,
    sequences: ArrayLike,
    tokens: ArrayLike,
    attention_flops: ArrayLike,
    kv_bytes: ArrayLike,
    tp: ArrayLike = 1,
    ep: ArrayLike = 1,
    pp: ArrayLike = 1,
    dp: ArrayLike = 1,
    precision: str = "bf16",
    activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
    attention_precision: str | None = None,
) -> StepCost:
    """Price one replica step from its work; the building block of every stage.

    Parameters
    ----------
    sequences, tokens
        Sequences and new tokens in the step (replica totals).
    attention_flops
        Attention-core FLOPs of the step (all sequences, all layers).
    kv_bytes
        KV bytes the step reads/writes, one copy (duplication across the tp
        ranks of each attention group is applied here).
    tp, ep, pp, dp
        The layout (module notes): ``g = dp·tp·pp`` chips, ``ep`` dividing ``dp·tp``.
    precision, activation_precision, attention_precision
        Weight/matmul precision of the FFN (sets the bytes per weight and the peak FLOP/s,
        :meth:`~topology.chips.ChipSpec.flops`), the precision activations travel in through the
        collectives (:data:`costmodels.comm.DEFAULT_ACTIVATION_PRECISION`) and the attention core runs
        at, and that of the attention projections and LM head (default ``precision``). Every stage
        function below takes all three.

    Notes
    -----
    ``n_mb = min(pp, sequences)`` micro-batches of T = ``tokens / n_mb`` tokens
    (FLOPs, bytes; seconds; F in FLOP/s, BW in bytes/s per chip)::

        gemm    = 2·tokens·(N_part + (ρ − 1)·N_routed)     (ρ: the hottest EP rank's load, ep_imbalance)
        core    = attention_flops
        bytes   = n_mb·(W_touched(T) + (dp − 1)·W_rep) + kv_bytes·dup(tp)
        gemm_s  = Σ_f gemm_f/F_w·(1 + t½/t_f) / (n_mb·dp·tp·η_c);   weights_s = n_mb·W / (n_mb·dp·tp·BW·η_m)
        t_f     = T/dp (projections, dense FFN, shared experts);  max(ρ·T·k/E_t, 64) (a routed expert's rows,
                  E_t the experts T tokens touch, experts_touched_per_layer; 64: EXPERT_TILE_ROWS)
        core_s  = core/F_a / (n_mb·dp·tp·η_c);             kv_s      = kv_bytes·dup(tp) / (n_mb·dp·tp·BW·η_kv)
        time    = max(max(gemm_s, weights_s) + max(core_s, kv_s) + comm + τ + L·τ_layer,  B·h)

    F_w is the peak at the weights' precision, F_a at the activations' (the attention core multiplies
    activations and KV: an FP4 model's attention still runs at the BF16 or FP8 rate).
    ``W_rep`` (:func:`~costmodels.arithmetic.replicated_weight_bytes`) is what
    each further DP rank reads again; the routed experts T tokens touch are read
    once per stage, spread over its dp·tp chips. The attention-core FLOPs and
    KV bytes are those of the busiest DP group (⌈B/dp⌉ of the B sequences)
    times dp. ``comm`` is :func:`costmodels.comm.step_comm_s`.
    """
    tp_a, ep_a, pp_a, dp_a = (np.asarray(x, dtype=float) for x in (tp, ep, pp, dp))
    _check_layout(tp_a, ep_a, pp_a, dp_a)
    seqs = np.asarray(sequences, dtype=float)
    tok = np.asarray(tokens, dtype=float)
    n_mb = np.minimum(pp_a, np.maximum(seqs, 1.0))
    tokens_mb = tok / n_mb

    attn_precision = precision if attention_precision is None else attention_precision
    ffn_part = "ffn" if part != "attention" else None
    proj = FLOPS_PER_MAC * tok * (matmul_params_per_token(model, part)
                                  - (matmul_params_per_token(model, "ffn") if ffn_part else 0.0))
    gemm = FLOPS_PER_MAC * tok * (matmul_params_per_token(model, "ffn") if ffn_part else 0.0)
    # Dense GEMMs (projections, dense FFN, shared experts) have one DP group's tokens as rows; a routed
    # expert's grouped GEMM only the tokens routed to it, ρ·T·k/E_t on the hottest rank (T the micro-batch's
    # tokens over every DP group: the experts serve them all; E_t the experts they touch).
    dense_rows = tokens_mb / dp_a
    routed, expert_rows = 0.0 * tok, dense_rows
    if model.moe is not None and part != "attention":
        # The hottest expert-parallel rank multiplies ρ times the mean routed tokens (costmodels.comm.ep_imbalance).
        rho = np.asarray(ep_imbalance(tok, model.moe.active_experts, ep_a))
        routed = FLOPS_PER_MAC * tok * rho * routed_active_params(model)
        gemm = gemm + FLOPS_PER_MAC * tok * (rho - 1.0) * routed_active_params(model)
        touched = np.maximum(np.asarray(experts_touched_per_layer(model, tokens_mb, include_shared=False)), 1e-9)
        expert_rows = np.maximum(rho * tokens_mb * model.moe.active_experts / touched, EXPERT_TILE_ROWS)
    core = 0.0 * tok
    kv_traffic = 0.0 * tok
    if part != "ffn":
        # The busiest DP group holds ⌈B/dp⌉ of the B sequences; its KV and attention set the pace.
        busiest = np.where(dp_a > 1, np.ceil(seqs / dp_a) * dp_a / np.maximum(seqs, 1.0), 1.0)
        core = np.asarray(attention_flops, dtype=float) * busiest
        kv_traffic = np.asarray(kv_bytes, dtype=float) * np.asarray(kv_duplication(model, tp_a)) * busiest
    flops = proj + gemm + core
    weights = n_mb * (np.asarray(weight_bytes_touched(model, part, tokens_mb, precision, attention_precision))
                      + (dp_a - 1.0) * replicated_weight_bytes(model, part, precision, attention_precision))
    total_bytes = weights + kv_traffic

    busy = n_mb * dp_a * tp_a
    # Each data-parallel group multiplies its own B/dp tokens: that is the GEMM's M dimension. Weight GEMMs run
    # at the weights' precision, the attention core (Q·Kᵀ, P·V on activations and KV) at the activations'.
    # The GEMM efficiency curve (t½) is one of weight GEMMs' rows; the attention core's rows are heads × queries.
    core_precision = _core_precision(chip, activation_precision, precision)
    core_s = core / (busy * chip.flops(core_precision) * chip.compute_efficiency)
    gemm_s = (compute_time_s(chip, precision, gemm - routed, busy, dense_rows)
              + compute_time_s(chip, precision, routed, busy, expert_rows)
              + compute_time_s(chip, attn_precision, proj, busy, dense_rows))
    # The one row count M whose curve 1 + t½/M prices all three GEMM families alike (exact for every t½).
    unit = (np.asarray(gemm - routed) / chip.flops(precision), np.asarray(routed) / chip.flops(precision),
            np.asarray(proj) / chip.flops(attn_precision))
    # (each family's rows in units of the chip's fitted t½: half_rows_scale)
    rows_each = (dense_rows / half_rows_scale(chip, precision), expert_rows / half_rows_scale(chip, precision),
                 dense_rows / half_rows_scale(chip, attn_precision))
    weighted = sum(u / np.maximum(r, 1e-9) for u, r in zip(unit, rows_each, strict=True))
    gemm_rows = np.where(weighted > 0, sum(unit) / np.where(weighted > 0, weighted, 1.0), dense_rows)
    weights_s = memory_time_s(chip, weights, busy)
    kv_s = kv_memory_time_s(chip, kv_traffic, busy)
    comm_s = np.asarray(step_comm_s(chip, model, part=part, tokens_per_micro_batch=tokens_mb, tp=tp_a, ep=ep_a, pp=pp_a,
                                    dp=dp_a, activation_precision=activation_precision))
    # The sequences' host work (scheduling, sampling, detokenising) is the side's that holds them, not the FFN
    # pool's; overlapping engines do it while the device runs the step (module notes), so the step is the longer.
    host_sequences = 0.0 if part == "ffn" else seqs
    overhead_s = np.broadcast_to(overhead_time_s(chip, model.layers), np.shape(gemm_s + core_s))
    host_s = np.broadcast_to(host_sequences * sequence_overhead_s(chip), np.shape(gemm_s + core_s))
    time_s = np.maximum(np.maximum(gemm_s, weights_s) + np.maximum(core_s, kv_s) + comm_s + overhead_s, host_s)
    compute_s, memory_s = gemm_s + core_s, weights_s + kv_s
    peak_compute_s = (gemm / chip.flops(precision) + proj / chip.flops(attn_precision)
                      + core / chip.flops(core_precision)) / busy
    peak_memory_s = total_bytes / (busy * chip.memory_bandwidth_bytes_per_s)
    floor_s = np.maximum(peak_compute_s, peak_memory_s)
    shape = np.broadcast_shapes(*(np.shape(x) for x in (time_s, flops, total_bytes, comm_s, kv_s)))

    def b(x):
        return as_result(np.broadcast_to(x, shape))

    return StepCost(
        time_s=b(time_s),
        compute_s=b(compute_s),
        core_s=b(core_s),
        memory_s=b(memory_s),
        kv_memory_s=b(kv_s),
        comm_s=b(comm_s),
        overhead_s=b(overhead_s),
        host_s=b(host_s),
        gemm_rows=b(gemm_rows),
        floor_s=b(floor_s),
        flops=b(flops),
        bytes=b(total_bytes),
        kv_bytes=b(kv_traffic),
        intensity_flop_per_byte=b(flops / total_bytes),
        memory_bound=b(peak_memory_s > peak_compute_s),
    )


def _decode(chip, model, part, batch, context, tp, ep, pp, precision, kv_precision, activation_precision,
            dp=1, attention_precision=None) -> StepCost:
    kv_prec = precision if kv_precision is None else kv_precision
    bt = np.asarray(batch, dtype=float)
    c = np.asarray(context, dtype=float)
    return forward_cost(
        chip, model, part=part, sequences=bt, tokens=bt,
        attention_flops=bt * np.asarray(attention_core_flops(model, new_tokens=1, context=c, decode=True)),
        kv_bytes=bt * np.asarray(kv_bytes_read_per_sequence(model, kv_prec, c)),
        tp=tp, ep=ep, pp=pp, dp=dp, precision=precision, activation_precision=activation_precision,
        attention_precision=attention_precision,
    )


def decode_step(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    batch: ArrayLike,
    context: ArrayLike,
    tp: ArrayLike = 1,
    ep: ArrayLike = 1,
    pp: ArrayLike = 1,
    dp: ArrayLike = 1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
    attention_precision: str | None = None,
) -> StepCost:
    """One decode step: ``batch`` sequences each add one token at ``context`` cached tokens.

    FLOPs = 2·B·N_active + 4·B·L·h·d_head·c (MLA: absorbed dims, see
    :func:`attention_flops_per_pair`); bytes = W_touched(B) + (dp − 1)·W_rep +
    B·c·κ·dup(tp). ``time_s`` is the TPOT (see the module notes for ``pp`` and
    ``dp``); tokens/s = B / time_s. ``kv_precision`` defaults to ``precision``.

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> st = decode_step(h100(), llama_70b(), batch=[1, 64], context=1024, tp=8)
    >>> (st.time_s * 1e3).round(2).tolist()
    [12.54, 14.17]
    """
    return _decode(chip, model, "full", batch, context, tp, ep, pp, precision, kv_precision, activation_precision,
                   dp, attention_precision)


def decode_attention_step(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    batch: ArrayLike,
    context: ArrayLike,
    tp: ArrayLike = 1,
    ep: ArrayLike = 1,
    pp: ArrayLike = 1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
    attention_precision: str | None = None,
) -> StepCost:
    """The attention half of a decode step (attention–FFN disaggregation).

    Attention projections + LM head weights, the attention core and all KV
    bytes; one all-reduce per layer when tp > 1; no pipeline hand-offs (the
    activations leave for the FFN pool every layer instead).

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> st = decode_attention_step(h100(), llama_70b(), batch=64, context=131072)
    >>> round(st.intensity_flop_per_byte, 1)
    8.5
    """
    return _decode(chip, model, "attention", batch, context, tp, ep, pp, precision, kv_precision,
                   activation_precision, attention_precision=attention_precision)


def decode_ffn_step(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    batch: ArrayLike,
    context: ArrayLike = 0,
    tp: ArrayLike = 1,
    ep: ArrayLike = 1,
    pp: ArrayLike = 1,
    dp: ArrayLike = 1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
    attention_precision: str | None = None,
) -> StepCost:
    """The FFN half of a decode step: FFN weights (expert touch), no KV, no context term.

    ``context`` and ``kv_precision`` are accepted for symmetry and ignored. With
    ``ep == tp`` (``dp == 1``) tokens arrive at their experts' ranks directly
    (the dispatch is the attention–FFN traffic), so MoE layers need no
    collective; dense layers and ``ep == 1`` all-reduce once per layer. An
    expert-parallel stage (``dp > 1``, ``ep == dp·tp``) receives each token
    once and dispatches and combines it over its chips (the all-to-all of
    :func:`costmodels.comm.step_comm_s`); its dense layers and shared experts
    are replicated in each of the ``dp`` groups of ``tp`` chips.

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> decode_ffn_step(h100(), llama_70b(), batch=64).intensity_flop_per_byte
    64.0
    """
    return _decode(chip, model, "ffn", batch, 0.0 * np.asarray(batch, dtype=float), tp, ep, pp, precision, kv_precision,
                   activation_precision, dp, attention_precision)


def prefill_step(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    prompt: ArrayLike,
    cached: ArrayLike = 0,
    batch: ArrayLike = 1,
    tp: ArrayLike = 1,
    ep: ArrayLike = 1,
    pp: ArrayLike = 1,
    dp: ArrayLike = 1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
    attention_precision: str | None = None,
) -> StepCost:
    """Prefill ``batch`` sequences of ``prompt`` new tokens after ``cached`` prefix tokens.

    Per sequence: FLOPs = 2·p·N_active + 4·L·h·d_head·(p·c0 + p²/2);
    bytes = W_touched(B·p) + (c0 + p)·κ (read the prefix, write the new KV).
    ``time_s`` is the prefill latency of the batch (the TTFT's service part).
    Activation traffic is ignored (prefill is compute-bound).

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> st = prefill_step(h100(), llama_70b(), prompt=8192, tp=8)
    >>> bool(st.memory_bound), round(st.time_s, 3)
    (False, 0.311)
    """
    kv_prec = precision if kv_precision is None else kv_precision
    bt = np.asarray(batch, dtype=float)
    p = np.asarray(prompt, dtype=float)
    c0 = np.asarray(cached, dtype=float)
    return forward_cost(
        chip, model, part="full", sequences=bt, tokens=bt * p,
        attention_flops=bt * np.asarray(attention_core_flops(model, new_tokens=p, context=c0, decode=False)),
        kv_bytes=bt * np.asarray(kv_bytes_per_sequence(model, kv_prec, c0 + p)),
        tp=tp, ep=ep, pp=pp, dp=dp, precision=precision, activation_precision=activation_precision,
        attention_precision=attention_precision,
    )


def aggregated_step(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    batch: ArrayLike,
    context: ArrayLike,
    chunk_tokens: ArrayLike,
    chunk_context: ArrayLike = 0,
    chunk_prompts: ArrayLike = 1,
    tp: ArrayLike = 1,
    ep: ArrayLike = 1,
    pp: ArrayLike = 1,
    dp: ArrayLike = 1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
    attention_precision: str | None = None,
) -> StepCost:
    """One chunked-prefill step: B decode tokens plus one prefill chunk (decode first).

    The scheduler puts every running decode sequence in the step first and fills
    the rest of the token budget with a ``chunk_tokens`` slice of a prompt whose
    first ``chunk_context`` tokens are already cached (Sarathi/vLLM order).
    Work adds up: tokens = B + C, attention FLOPs = decode part + prefill part of
    the chunk, KV bytes = B·c·κ + (c_chunk + C)·κ; weights are read once for
    all B + C tokens. For a prompt of p tokens after c0 cached, the mean chunk
    sees ``chunk_context = c0 + (p − C)/2``. A chunk longer than the prompt
    (p < C) holds ``chunk_prompts`` = q = C/p prompts: q sequences of C/q
    tokens, each attending to its own cached prefix — attention FLOPs and KV
    bytes are q times one prompt's, not one sequence of C tokens after c0
    (which overcounts the causal part and undercounts the prefix reads).
    Under data-parallel attention each
    of the ``dp`` groups schedules its own B/dp sequences and its own chunk
    (SGLang's per-rank schedulers), so the step carries dp chunks:
    tokens = B + dp·C, and dp times the chunk's attention FLOPs and KV bytes.

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> st = aggregated_step(h100(), llama_70b(), batch=32, context=2048, chunk_tokens=512, tp=8)
    >>> round(st.time_s * 1e3, 1)
    26.2
    """
    kv_prec = precision if kv_precision is None else kv_precision
    bt = np.asarray(batch, dtype=float)
    c = np.asarray(context, dtype=float)
    ch = np.asarray(chunk_tokens, dtype=float)
    cc = np.asarray(chunk_context, dtype=float)
    q = np.asarray(chunk_prompts, dtype=float)
    seqs = np.asarray(dp, dtype=float) * q  # one chunk per data-parallel group, q prompts in each
    per_prompt = ch / q
    attn = bt * np.asarray(attention_core_flops(model, new_tokens=1, context=c, decode=True)) + seqs * np.asarray(
        attention_core_flops(model, new_tokens=per_prompt, context=cc, decode=False)
    )
    kv = bt * np.asarray(kv_bytes_read_per_sequence(model, kv_prec, c)) + seqs * np.where(
        ch > 0, np.asarray(kv_bytes_per_sequence(model, kv_prec, cc + per_prompt)), 0.0
    )
    return forward_cost(
        chip, model, part="full", sequences=bt + seqs * (ch > 0), tokens=bt + seqs * per_prompt,
        attention_flops=attn, kv_bytes=kv, tp=tp, ep=ep, pp=pp, dp=dp, precision=precision,
        activation_precision=activation_precision, attention_precision=attention_precision,
    )
