"""The model sizes the physical floors work from, derived from the architecture fields alone.

Part of the independent floors (:mod:`placement.core.verify.floors`): nothing here shares code with
``costmodels/`` or the evaluation, so a cost-model error cannot hide in both.

Examples
--------
>>> from costmodels.models import load_model_catalog
>>> s = model_shape(load_model_catalog()["llama-3.1-70b"], "fp8")
>>> round(s.part_params("full") / 1e9, 2)   # all but the input embedding
69.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from costmodels.models import ModelSpec

__all__ = ["BYTES_PER_VALUE", "FLOPS_PER_MAC", "Shape", "model_shape"]

#: Bytes per stored value without block scales (a floor); FP4 (NVFP4 and MXFP4) packs two values per byte.
BYTES_PER_VALUE = {"fp4": 0.5, "mxfp4": 0.5, "fp8": 1.0, "bf16": 2.0}
#: A multiply-add is two FLOPs.
FLOPS_PER_MAC = 2.0


@dataclass(frozen=True)
class Shape:
    """Sizes of a model per token and layer, derived from its architecture fields.

    ``attention_params`` are all layers' Q, K, V and O projections (MLA: its
    low-rank factors); ``ffn_min_params`` the FFN parameters one token
    certainly multiplies by (dense FFNs, routers, k routed + shared experts per
    MoE layer); ``flops_per_pair`` the attention-core FLOPs per query–key pair
    and layer; ``kv_bytes_per_token_layer`` the cache one token adds to one layer;
    ``moe_layers``, ``experts`` (E), ``experts_per_token`` (k) and ``expert_params``
    (one routed expert of one layer) what a batch's routing reads beyond the k;
    ``ffn_layers`` the layers with an FFN (None: all).
    """

    layers: int
    hidden: int
    attention_params: float
    lm_head_params: float
    ffn_min_params: float
    full_layers: int
    window_layers: int
    window_tokens: float
    kv_bytes_per_token_layer: float
    flops_per_pair: float
    moe_layers: int = 0
    experts: int = 0
    experts_per_token: int = 0
    expert_params: float = 0.0
    ffn_layers: int | None = None

    @property
    def crossing_layers(self) -> int:
        """Layers whose hidden state crosses between an attention and an FFN pool: those with an FFN."""
        return self.layers if self.ffn_layers is None else min(self.layers, self.ffn_layers)

    def touched_experts(self, tokens: float) -> float:
        """Distinct routed experts a step of ``tokens`` tokens reads per MoE layer, in expectation under
        independent uniform routing (each token k of E): E·(1 − (1 − k/E)^T), at least k for T ≥ 1.

        Skewed routing touches fewer; the cost model prices the same expectation, and expert-load balancing
        (EPLB) serves close to it. Past T ≈ (E/k)·ln E nearly every expert is read: DeepSeek-V3 (E = 256, k = 8)
        reads 251.6 of 256 at 128 tokens, all but 2e-5 of one at 512.

        Examples
        --------
        >>> s = Shape(1, 1, 0.0, 0.0, 0.0, 1, 0, math.inf, 1.0, 1.0, moe_layers=1, experts=256,
        ...           experts_per_token=8, expert_params=1.0)
        >>> round(s.touched_experts(1), 3), round(s.touched_experts(64), 1), round(s.touched_experts(2048), 2)
        (8.0, 222.4, 256.0)
        """
        if not self.moe_layers or tokens <= 0:
            return float(self.experts_per_token)
        k, e = self.experts_per_token, self.experts
        return max(float(k), e * (1.0 - (1.0 - k / e) ** tokens))

    def extra_expert_params(self, tokens: float) -> float:
        """Routed-expert parameters a step of ``tokens`` reads beyond the k of ``ffn_min_params`` (all MoE
        layers): (touched − k) × expert × layers."""
        return self.moe_layers * (self.touched_experts(tokens) - self.experts_per_token) * self.expert_params

    def part_params(self, part: str) -> float:
        """Parameters one token multiplies by in ``full``, ``attention`` (no LM head) or ``ffn``."""
        return {"full": self.attention_params + self.lm_head_params + self.ffn_min_params,
                "attention": self.attention_params, "ffn": self.ffn_min_params}[part]

    def kv_tokens(self, context: float) -> float:
        """Cached (token, layer) entries one query at ``context`` attends to: L_full·c + L_swa·min(c, w)."""
        return self.full_layers * context + self.window_layers * min(context, self.window_tokens)

    def mean_kv_tokens(self, first: float, steps: int) -> float:
        """Mean of :meth:`kv_tokens` over contexts first, first + 1, …, first + steps − 1."""
        n = max(int(steps), 1)
        full = self.full_layers * (first + (n - 1) / 2)
        if not self.window_layers:
            return full
        w = self.window_tokens
        below = int(min(n, max(0.0, math.floor(w - first) + 1)))  # contexts ≤ w
        s = below * first + below * (below - 1) / 2 + (n - below) * w
        return full + self.window_layers * s / n

    def prefill_pairs(self, prompt: float, cached: float) -> float:
        """Query–key pairs of p new tokens after c0 cached ones, all layers (≤ the discrete count)."""
        def g(x: float) -> float:  # ∫₀ˣ min(t, w) dt
            w = self.window_tokens
            return 0.5 * x * x if x <= w else 0.5 * w * w + w * (x - w)

        full = self.full_layers * (prompt * cached + 0.5 * prompt * prompt)
        return full + (self.window_layers * (g(cached + prompt) - g(cached)) if self.window_layers else 0.0)


def model_shape(model: ModelSpec, kv_precision: str) -> Shape:
    """Derive a model's :class:`Shape` from its architecture fields (not from its derived properties).

    Examples
    --------
    >>> from costmodels.models import load_model_catalog
    >>> s = model_shape(load_model_catalog()["deepseek-v3"], "fp8")
    >>> round(s.ffn_min_params / 1e9, 1), s.kv_bytes_per_token_layer
    (24.3, 576.0)
    """
    a, d = model.attention, model.hidden_size
    if a.kind == "gqa":
        attn = d * a.heads * a.head_dim * 2 + d * a.kv_heads * a.head_dim * 2
        kv_layer = 2 * a.kv_heads * a.head_dim
        per_pair = FLOPS_PER_MAC * a.heads * 2 * a.head_dim
    else:
        q_dim = a.heads * (a.head_dim + a.qk_rope_head_dim)
        q = d * q_dim if a.q_lora_rank is None else d * a.q_lora_rank + a.q_lora_rank * q_dim
        kv = d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank * a.heads * (a.head_dim + a.v_head_dim)
        attn = q + kv + a.heads * a.v_head_dim * d
        kv_layer = a.kv_lora_rank + a.qk_rope_head_dim  # an indexer's keys left out: the floor stays below
        absorbed = (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
        plain = (a.head_dim + a.qk_rope_head_dim) + a.v_head_dim
        per_pair = FLOPS_PER_MAC * a.heads * min(absorbed, plain)
    mixer = model.linear_mixer
    mixer_layers = 0 if mixer is None else mixer.layers
    attention_layers = model.layers - mixer_layers
    mixer_params = 0.0
    if mixer is not None:  # in/out projections only: the convolution's taps are left out
        mixer_params = d * (2 * mixer.key_dim + 2 * mixer.value_dim) + mixer.value_dim * d
    matrices = 3 if model.ffn_gated else 2
    moe = model.moe
    ffn_layers = model.layers if model.ffn_layers is None else model.ffn_layers
    dense_layers = ffn_layers if moe is None else (ffn_layers if model.dense_layers is None else model.dense_layers)
    ffn = dense_layers * matrices * d * model.ffn_intermediate_size
    expert = 0.0
    if moe is not None:
        expert = matrices * d * moe.expert_intermediate_size
        ffn += (ffn_layers - dense_layers) * ((moe.active_experts + moe.shared_experts) * expert + d * moe.experts)
    # Sparse attention reads at most its top-k tokens per query, as a window of k would.
    window = attention_layers if a.indexer is not None else a.sliding_window_layers
    window_tokens = a.indexer.topk_tokens if a.indexer is not None else a.sliding_window_tokens
    return Shape(
        layers=model.layers, hidden=d,
        attention_params=float(attention_layers * attn + mixer_layers * mixer_params),
        lm_head_params=float(model.vocab_size * d), ffn_min_params=float(ffn),
        full_layers=attention_layers - window, window_layers=window,
        window_tokens=float(window_tokens) if window else math.inf,
        kv_bytes_per_token_layer=kv_layer * BYTES_PER_VALUE[kv_precision], flops_per_pair=float(per_pair),
        moe_layers=0 if moe is None else ffn_layers - dense_layers,
        experts=0 if moe is None else moe.experts, experts_per_token=0 if moe is None else moe.active_experts,
        expert_params=float(expert), ffn_layers=ffn_layers,
    )
