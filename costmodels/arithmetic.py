"""Model arithmetic: what a forward pass of a model touches, independent of the chip.

Parameters multiplied per token (:func:`matmul_params_per_token`), stored and
touched weight bytes (MoE expert touch, :func:`weight_bytes_touched`),
attention-core FLOPs per query–key pair (MLA absorbed or not) and pairs per
decode or prefill step, KV bytes per sequence and their duplication across
tensor-parallel ranks. :mod:`costmodels.roofline` prices these on a chip.

Examples
--------
>>> from costmodels.examples import llama_70b
>>> round(matmul_params_per_token(llama_70b()) / 1e9, 1), kv_bytes_per_sequence(llama_70b(), "bf16", 1000)
(69.5, 327680000.0)
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from costmodels.arrays import as_result
from costmodels.models import BYTES_PER_VALUE, ModelSpec

__all__ = [
    "FLOPS_PER_MAC",
    "ArrayLike",
    "Part",
    "attention_core_flops",
    "attention_flops_per_pair",
    "decode_attention_pairs",
    "experts_touched_per_layer",
    "kv_bytes_per_sequence",
    "kv_bytes_read_per_sequence",
    "kv_duplication",
    "matmul_params_per_token",
    "prefill_attention_pairs",
    "replicated_weight_bytes",
    "routed_active_params",
    "routed_expert_bytes",
    "stored_weight_bytes",
    "weight_bytes_touched",
]

#: Multiply-add = 2 FLOPs: a token through an N-parameter matmul costs 2·N FLOPs.
FLOPS_PER_MAC = 2.0

Part = Literal["full", "attention", "ffn"]
ArrayLike = float | int | np.ndarray


def _lm_head_params(model: ModelSpec) -> float:
    # The LM head is a matmul; the input embedding is a lookup (no FLOPs, ~no bytes).
    return float(model.vocab_size * model.hidden_size)


def matmul_params_per_token(model: ModelSpec, part: Part = "full") -> float:
    """Parameters one token multiplies by in ``part``.

    The attention side owns the projections and the LM head (it holds the
    sequence state and samples); the FFN side owns dense FFNs, routers and the
    k routed + shared experts. ``full`` = ``model.matmul_params_active``.
    """
    attn = model.attention_params + _lm_head_params(model)
    if part == "attention":
        return attn
    if part == "ffn":
        return model.active_ffn_params
    return attn + model.active_ffn_params


def routed_active_params(model: ModelSpec) -> float:
    """Routed-expert parameters one token multiplies by (k experts per MoE layer, all MoE layers).

    Examples
    --------
    >>> from costmodels.examples import deepseek_v3, llama_70b
    >>> round(routed_active_params(deepseek_v3()) / 1e9, 1), routed_active_params(llama_70b())
    (20.4, 0.0)
    """
    if model.moe is None:
        return 0.0
    return model.n_moe_layers * model.moe.active_experts * model.expert_params


def _attention_bytes_per_value(precision: str, attention_precision: str | None) -> float:
    return BYTES_PER_VALUE[precision if attention_precision is None else attention_precision]


def stored_weight_bytes(model: ModelSpec, part: Part, precision: str, attention_precision: str | None = None) -> float:
    """Weight bytes a part stores: attention (+ embeddings and a multimodal encoder), FFN, or all.

    ``precision`` is the FFN's (dense layers and experts); ``attention_precision`` (default the same) that of
    the attention projections, embeddings and LM head — FP4 checkpoints of MoE models keep them at 8 or 16 bits.

    Examples
    --------
    >>> from costmodels.examples import deepseek_v3
    >>> m = deepseek_v3()
    >>> round(stored_weight_bytes(m, "full", "fp4") / 1e9, 1), round(stored_weight_bytes(m, "full", "fp4", "fp8") / 1e9, 1)
    (377.5, 383.3)
    """
    a = ((model.attention_params + model.embedding_params + model.encoder_params)
         * _attention_bytes_per_value(precision, attention_precision))
    f = model.ffn_params * BYTES_PER_VALUE[precision]
    return {"attention": a, "ffn": f}.get(part, a + f)


def routed_expert_bytes(model: ModelSpec, precision: str) -> float:
    """Bytes of all routed experts (every MoE layer): what expert parallelism distributes.

    Examples
    --------
    >>> from costmodels.examples import deepseek_v3, llama_70b
    >>> round(routed_expert_bytes(deepseek_v3(), "fp8") / 1e9), routed_expert_bytes(llama_70b(), "fp8")
    (654, 0.0)
    """
    if model.moe is None:
        return 0.0
    return model.n_moe_layers * model.moe.experts * model.expert_params * BYTES_PER_VALUE[precision]


def replicated_weight_bytes(model: ModelSpec, part: Part, precision: str, attention_precision: str | None = None
                            ) -> float:
    """Weight bytes every data-parallel rank reads each step whatever its tokens.

    Under data-parallel attention each DP rank holds its own (tp-sliced) copy of
    everything but the routed experts: attention projections and LM head,
    dense FFN layers, shared experts and routers. ``weight_bytes_touched`` of a
    part minus its routed experts, for a step with at least one token.

    Examples
    --------
    >>> from costmodels.examples import llama_70b
    >>> m = llama_70b()
    >>> replicated_weight_bytes(m, "full", "bf16") == weight_bytes_touched(m, "full", 1, "bf16")
    True
    """
    b = BYTES_PER_VALUE[precision]
    attn = (model.attention_params + _lm_head_params(model)) * _attention_bytes_per_value(precision, attention_precision)
    ffn = model.n_dense_layers * model.dense_ffn_params_per_layer * b
    if model.moe is not None:
        per_layer = model.moe.shared_experts * model.expert_params + model.hidden_size * model.moe.experts
        ffn += model.n_moe_layers * per_layer * b
    return {"attention": attn, "ffn": ffn}.get(part, attn + ffn)


def experts_touched_per_layer(model: ModelSpec, tokens: ArrayLike, *, include_shared: bool = True):
    """Experts whose weights a step of ``tokens`` tokens reads in one MoE layer.

    With uniform routing of k of E experts per token, an expert is missed by all
    t tokens with probability (1 − k/E)^t::

        touched = E·(1 − (1 − k/E)^t)  (+ shared experts, always read)

    Examples
    --------
    >>> from costmodels.examples import deepseek_v3
    >>> experts_touched_per_layer(deepseek_v3(), 1)
    9.0
    >>> round(experts_touched_per_layer(deepseek_v3(), 4096, include_shared=False))
    256
    """
    if model.moe is None:
        return as_result(np.zeros_like(np.asarray(tokens, dtype=float)))
    e = model.moe
    t = np.asarray(tokens, dtype=float)
    routed = e.experts * (1.0 - np.power(1.0 - e.active_experts / e.experts, t))
    if include_shared:
        routed = routed + np.where(t > 0, e.shared_experts, 0.0)
    return as_result(routed)


def weight_bytes_touched(model: ModelSpec, part: Part, tokens: ArrayLike, precision: str,
                         attention_precision: str | None = None):
    """Weight bytes one step of ``tokens`` tokens reads (``W_touched``).

    Attention projections and LM head always (at ``attention_precision``, default ``precision``); dense
    FFNs always; per MoE layer the router and the touched experts (:func:`experts_touched_per_layer`).
    """
    b = BYTES_PER_VALUE[precision]
    t = np.asarray(tokens, dtype=float)
    attn = (model.attention_params + _lm_head_params(model)) * _attention_bytes_per_value(precision, attention_precision)
    dense = model.n_dense_layers * model.dense_ffn_params_per_layer * b
    if model.moe is not None and model.n_moe_layers:
        per_layer = experts_touched_per_layer(model, t) * model.expert_params + model.hidden_size * model.moe.experts
        ffn = dense + model.n_moe_layers * np.asarray(per_layer) * b
    else:
        ffn = dense + 0.0 * t
    if part == "attention":
        return as_result(attn + 0.0 * t)
    if part == "ffn":
        return as_result(ffn)
    return as_result(attn + ffn)


def attention_flops_per_pair(model: ModelSpec, *, absorbed: bool) -> float:
    """FLOPs per (query token, cached token) pair per layer: 2·h·(d_qk + d_v).

    GQA/MHA: d_qk = d_v = head_dim, i.e. 4·h·d_head (QKᵀ and AV).
    MLA absorbed (decode: W_UK/W_UV folded into the query/output, attention in
    the latent space): d_qk = kv_lora_rank + rope_dim, d_v = kv_lora_rank
    (DeepSeek-V3: 2·128·1088). MLA non-absorbed (prefill: K/V decompressed per
    head): d_qk = head_dim + rope_dim, d_v = v_head_dim (2·128·320).
    """
    a = model.attention
    if a.kind == "gqa":
        return 2.0 * a.heads * (a.head_dim + a.head_dim)
    if absorbed:
        return 2.0 * a.heads * ((a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank)
    return 2.0 * a.heads * ((a.head_dim + a.qk_rope_head_dim) + a.v_head_dim)


def _layer_split(model: ModelSpec) -> tuple[int, int, float]:
    """Attention layers by the cached tokens one query reads: (full, capped, cap).

    Full layers read every cached token; capped layers at most ``cap``:
    sliding-window layers their window, sparse-attention layers (an indexer)
    the top-k tokens it selects. Linear-mixer layers read no KV.
    """
    a = model.attention
    if a.indexer is not None:
        return 0, model.attention_layers, float(a.indexer.topk_tokens)
    swa = a.sliding_window_layers
    window = float(a.sliding_window_tokens) if swa else np.inf
    return model.attention_layers - swa, swa, window


def decode_attention_pairs(model: ModelSpec, context: ArrayLike):
    """Query–key pairs of one decode token summed over layers: L_full·c + L_capped·min(c, w)."""
    full, swa, w = _layer_split(model)
    c = np.asarray(context, dtype=float)
    return as_result(full * c + (swa * np.minimum(c, w) if swa else 0.0))


def _causal_pairs(x: np.ndarray, w: float) -> np.ndarray:
    # ∫₀ˣ min(t, w) dt: pairs of a causal prefix of x tokens with window w.
    return np.where(x <= w, 0.5 * x * x, 0.5 * w * w + w * (x - w))


def prefill_attention_pairs(model: ModelSpec, prompt: ArrayLike, cached: ArrayLike = 0):
    """Query–key pairs of prefilling p tokens after c0 cached ones, summed over layers.

    Full layers: p·c0 + p²/2 (causal); capped layers (sliding window, sparse
    top-k) cap each query at w keys: F(c0 + p) − F(c0) with F(x) = ∫₀ˣ min(t, w) dt.
    """
    full, swa, w = _layer_split(model)
    p = np.asarray(prompt, dtype=float)
    c0 = np.asarray(cached, dtype=float)
    out = full * (p * c0 + 0.5 * p * p)
    if swa:
        out = out + swa * (_causal_pairs(c0 + p, w) - _causal_pairs(c0, w))
    return as_result(out)


def _mixer_and_indexer_flops(model: ModelSpec, new_tokens: ArrayLike, context: ArrayLike, decode: bool):
    # Linear mixers: a constant cost per token and layer. An indexer scores every cached token (2·h_i·d_i per
    # pair and layer): c per decode token, p·c0 + p²/2 per prefill.
    p = np.asarray(new_tokens, dtype=float)
    mixer = model.linear_mixer
    out = 0.0 * p if mixer is None else p * mixer.layers * mixer.flops_per_token_per_layer
    ix = model.attention.indexer
    if ix is not None:
        c = np.asarray(context, dtype=float)
        pairs = c if decode else p * c + 0.5 * p * p
        out = out + pairs * model.attention_layers * FLOPS_PER_MAC * ix.heads * ix.head_dim
    return out


def attention_core_flops(model: ModelSpec, *, new_tokens: ArrayLike, context: ArrayLike, decode: bool):
    """Token-mixer FLOPs beyond the projections (QKᵀ, AV, an indexer's scores, linear-mixer recurrences) of one
    sequence, all layers.

    Decode (one new token at context c): pairs·2·h·(d_qk + d_v), which for GQA is
    4·L·h·d_head·c over all layers; MLA uses the absorbed dims. Prefill (p new tokens
    after c0 cached): pairs = p·c0 + p²/2 per layer; MLA takes the cheaper of
    the non-absorbed form, which must also decompress the cached prefix's K/V
    (2·c0·r_kv·h·(d_nope + d_v) per layer), and the absorbed form. An indexer adds
    2·h_i·d_i per full-context pair and attention layer, a linear mixer its
    per-token step (:attr:`costmodels.models.LinearMixer.flops_per_token_per_layer`).
    """
    extra = _mixer_and_indexer_flops(model, 1 if decode else new_tokens, context, decode)
    if decode:
        return as_result(np.asarray(decode_attention_pairs(model, context)) * attention_flops_per_pair(model, absorbed=True)
                         + extra)
    pairs = np.asarray(prefill_attention_pairs(model, new_tokens, context))
    flops = pairs * attention_flops_per_pair(model, absorbed=False)
    a = model.attention
    if a.kind == "mla":
        c0 = np.asarray(context, dtype=float)
        decompress = FLOPS_PER_MAC * c0 * a.kv_lora_rank * a.heads * (a.head_dim + a.v_head_dim) * model.attention_layers
        flops = np.minimum(flops + decompress, pairs * attention_flops_per_pair(model, absorbed=True))
    return as_result(flops + extra)


def kv_bytes_per_sequence(model: ModelSpec, kv_precision: str, context: ArrayLike):
    """KV bytes one sequence of ``context`` tokens holds (vectorised ``model.kv_bytes``).

    κ_layer·(L_full·c + L_swa·min(c, w)) + S; κ_layer = 2·kv_heads·head_dim·b (GQA)
    or (kv_lora_rank + rope_dim [+ indexer head_dim])·b (MLA); S the linear
    mixers' constant state (:meth:`costmodels.models.ModelSpec.state_bytes_per_sequence`).
    Sparse attention holds every token (it reads only some: :func:`kv_bytes_read_per_sequence`).
    """
    a = model.attention
    swa = a.sliding_window_layers
    c = np.asarray(context, dtype=float)
    tokens = (model.attention_layers - swa) * c + (swa * np.minimum(c, a.sliding_window_tokens) if swa else 0.0)
    return as_result(model.kv_bytes_per_token_per_layer(kv_precision) * tokens
                     + model.state_bytes_per_sequence(kv_precision))


def kv_bytes_read_per_sequence(model: ModelSpec, kv_precision: str, context: ArrayLike):
    """KV and state bytes one decode token of a sequence at ``context`` reads.

    What the sequence holds (:func:`kv_bytes_per_sequence`), except under sparse
    attention: each layer reads the attention cache of its top-k tokens only,
    κ_attn·L·min(c, k), plus the indexer's keys of every token, d_i·b·L·c.

    Examples
    --------
    >>> from costmodels.examples import llama_70b
    >>> kv_bytes_read_per_sequence(llama_70b(), "bf16", 1000) == kv_bytes_per_sequence(llama_70b(), "bf16", 1000)
    True
    """
    ix = model.attention.indexer
    if ix is None:
        return kv_bytes_per_sequence(model, kv_precision, context)
    b = BYTES_PER_VALUE[kv_precision]
    c = np.asarray(context, dtype=float)
    attn_per_token = model.kv_bytes_per_token_per_layer(kv_precision) - ix.head_dim * b
    out = model.attention_layers * (attn_per_token * np.minimum(c, ix.topk_tokens) + ix.head_dim * b * c)
    return as_result(out + model.state_bytes_per_sequence(kv_precision))


def kv_duplication(model: ModelSpec, tp: ArrayLike):
    """Copies of the KV cache across the ``tp`` ranks of one attention group (vectorised ``model.kv_tp_duplication``).

    GQA: max(1, tp / kv_heads); MLA: tp (the latent has no head axis to slice,
    so every tensor-parallel rank holds it whole). The duplication is over the
    *TP* group only: under data-parallel attention (``dp`` groups of ``tp``
    chips) each group holds its own B/dp sequences, so the whole replica stores
    B·kv·dup(tp) bytes — MLA's latent once per DP rank when tp = 1.

    Examples
    --------
    >>> from costmodels.examples import deepseek_v3
    >>> kv_duplication(deepseek_v3(), 8), kv_duplication(deepseek_v3(), 1)
    (8.0, 1.0)
    """
    t = np.asarray(tp, dtype=float)
    if model.attention.kind == "mla":
        return as_result(t)
    return as_result(np.maximum(1.0, t / model.attention.kv_heads))
