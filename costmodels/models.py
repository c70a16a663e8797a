"""Model records: a transformer's shape, from which every size is computed.

Parameter counts, the attention/FFN split and KV bytes per token are derived
from the architecture, never typed in; the catalogue's published totals are
kept only as ``published_total_params`` to test the derivation against.

Examples
--------
>>> from costmodels.models import load_model_catalog
>>> m = load_model_catalog()["llama-3.1-70b"]
>>> m.kv_bytes_per_token("bf16")
327680.0
>>> round(m.total_params / 1e9, 1)
70.6
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from topology.chips import BYTES_PER_VALUE, read_records
from topology.records import Record

__all__ = [
    "BYTES_PER_VALUE",
    "Attention",
    "MoE",
    "ModelSpec",
    "default_attention_precision",
    "load_model_catalog",
    "read_model_file",
]

CATALOG_PATH = Path(__file__).with_name("catalog") / "models.yaml"




class Attention(Record):
    """Attention block shape.

    ``kind="gqa"`` covers MHA (kv_heads = heads), GQA and MQA (kv_heads = 1).
    ``kind="mla"`` is DeepSeek's multi-head latent attention: the cache holds
    one compressed latent (``kv_lora_rank``) plus a shared RoPE key per token
    and layer, replicated on every tensor-parallel rank.
    ``sliding_window_layers`` layers attend to the last ``sliding_window_tokens``
    tokens only (hybrid sliding-window models such as gpt-oss and Gemma).
    """

    kind: Literal["gqa", "mla"]
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    q_lora_rank: int | None = Field(default=None, ge=1)
    kv_lora_rank: int | None = Field(default=None, ge=1)
    qk_rope_head_dim: int | None = Field(default=None, ge=1)
    v_head_dim: int | None = Field(default=None, ge=1)
    sliding_window_tokens: int | None = Field(default=None, ge=1)
    sliding_window_layers: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _shape_is_consistent(self) -> Attention:
        if self.kind == "mla" and None in (self.kv_lora_rank, self.qk_rope_head_dim, self.v_head_dim):
            raise ValueError("MLA attention needs kv_lora_rank, qk_rope_head_dim and v_head_dim")
        if self.kind == "gqa" and self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.sliding_window_layers and self.sliding_window_tokens is None:
            raise ValueError("sliding_window_layers > 0 needs sliding_window_tokens")
        return self


class MoE(Record):
    """Mixture-of-experts FFN: ``experts`` routed experts of which ``active_experts``
    fire per token, plus ``shared_experts`` that always fire."""

    experts: int = Field(ge=1)
    active_experts: int = Field(ge=1)
    shared_experts: int = Field(default=0, ge=0)
    expert_intermediate_size: int = Field(ge=1)

    @model_validator(mode="after")
    def _k_le_e(self) -> MoE:
        if self.active_experts > self.experts:
            raise ValueError("active_experts cannot exceed experts")
        return self


def default_attention_precision(model: ModelSpec, weights: str) -> str:
    """The attention projections' precision of ``model`` served at ``weights``: the same, except FP4 weights of
    a model whose published FP4 checkpoints keep attention wider (``fp4_attention_precision``).

    Examples
    --------
    >>> m = load_model_catalog()["deepseek-v3"]
    >>> default_attention_precision(m, "fp4"), default_attention_precision(m, "fp8")
    ('fp8', 'fp8')
    """
    if weights == "fp4" and model.fp4_attention_precision is not None:
        return model.fp4_attention_precision
    return weights


class ModelSpec(Record):
    """A decoder-only transformer.

    Attributes
    ----------
    layers
        Decoder layers.
    dense_layers
        Layers whose FFN is dense (``ffn_intermediate_size``); the remaining
        ``layers - dense_layers`` use ``moe``. Defaults to all layers.
    ffn_gated
        SwiGLU-style FFN with three matrices (gate, up, down) rather than two.
    published_total_params
        The publisher's parameter count, kept to test the derivation.
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.\-]*$")
    display_name: str
    layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    vocab_size: int = Field(ge=1)
    tie_word_embeddings: bool = False
    attention: Attention
    ffn_intermediate_size: int = Field(ge=1)
    ffn_gated: bool = True
    dense_layers: int | None = Field(default=None, ge=0)
    moe: MoE | None = None
    published_total_params: float | None = Field(default=None, gt=0)
    fp4_attention_precision: Literal["fp8", "bf16"] | None = Field(
        default=None, description="the attention projections' precision in the published FP4 checkpoints (None: "
                                  "FP4 like the rest); needs a source")
    sources: dict[str, str] = Field(min_length=1)
    estimates: list[str] = Field(default_factory=list)
    hf_ids: list[str] = Field(default_factory=list, description="Hugging Face ids of the checkpoints with this "
                              "architecture; an instance's model may name one (case-insensitive)")

    @model_validator(mode="after")
    def _layers_add_up(self) -> ModelSpec:
        if self.hf_ids and "hf_ids" not in self.sources:
            raise ValueError(f"model {self.name!r}: no source given for hf_ids")
        if self.fp4_attention_precision is not None and "fp4_attention_precision" not in self.sources:
            raise ValueError(f"model {self.name!r}: no source given for fp4_attention_precision")
        if self.dense_layers is not None and self.dense_layers > self.layers:
            raise ValueError("dense_layers cannot exceed layers")
        if self.moe is None and self.dense_layers not in (None, self.layers):
            raise ValueError("a model without moe has only dense layers")
        return self

    # ---- layer counts ---------------------------------------------------------
    @property
    def n_dense_layers(self) -> int:
        if self.moe is None:
            return self.layers
        return self.layers if self.dense_layers is None else self.dense_layers

    @property
    def n_moe_layers(self) -> int:
        return self.layers - self.n_dense_layers

    # ---- parameter counts (derived) ------------------------------------------
    @property
    def attention_params_per_layer(self) -> float:
        """Q, K, V, O projections (with MLA's low-rank factors)."""
        a, d = self.attention, self.hidden_size
        if a.kind == "gqa":
            return float(d * a.heads * a.head_dim * 2 + d * a.kv_heads * a.head_dim * 2)
        rope, v = a.qk_rope_head_dim, a.v_head_dim
        q_dim = a.heads * (a.head_dim + rope)
        q = d * q_dim if a.q_lora_rank is None else d * a.q_lora_rank + a.q_lora_rank * q_dim
        kv = d * (a.kv_lora_rank + rope) + a.kv_lora_rank * a.heads * (a.head_dim + v)
        o = a.heads * v * d
        return float(q + kv + o)

    def _ffn_matrix_params(self, intermediate: int) -> float:
        return float((3 if self.ffn_gated else 2) * self.hidden_size * intermediate)

    @property
    def dense_ffn_params_per_layer(self) -> float:
        return self._ffn_matrix_params(self.ffn_intermediate_size)

    @property
    def expert_params(self) -> float:
        """Parameters of one routed expert (0 for dense models)."""
        return 0.0 if self.moe is None else self._ffn_matrix_params(self.moe.expert_intermediate_size)

    @property
    def moe_ffn_params_per_layer(self) -> float:
        """All experts, shared experts and the router of one MoE layer."""
        if self.moe is None:
            return 0.0
        e = self.moe
        return (e.experts + e.shared_experts) * self.expert_params + self.hidden_size * e.experts

    @property
    def attention_params(self) -> float:
        return self.layers * self.attention_params_per_layer

    @property
    def ffn_params(self) -> float:
        return self.n_dense_layers * self.dense_ffn_params_per_layer + self.n_moe_layers * self.moe_ffn_params_per_layer

    @property
    def embedding_params(self) -> float:
        """Input embedding plus LM head (one matrix when tied)."""
        return float(self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2))

    @property
    def total_params(self) -> float:
        return self.attention_params + self.ffn_params + self.embedding_params

    @property
    def active_ffn_params(self) -> float:
        """FFN parameters one token multiplies by (k routed + shared experts)."""
        if self.moe is None:
            return self.ffn_params
        e = self.moe
        per_moe = (e.active_experts + e.shared_experts) * self.expert_params + self.hidden_size * e.experts
        return self.n_dense_layers * self.dense_ffn_params_per_layer + self.n_moe_layers * per_moe

    @property
    def active_params(self) -> float:
        """Parameters touched per token, embeddings included (the usual convention)."""
        return self.attention_params + self.active_ffn_params + self.embedding_params

    @property
    def matmul_params_active(self) -> float:
        """Parameters in matmuls per token: the input embedding is a lookup, not a matmul."""
        return self.attention_params + self.active_ffn_params + self.vocab_size * self.hidden_size

    @property
    def sparsity(self) -> float:
        """Total over active parameters (1 for dense models)."""
        return self.total_params / self.active_params

    def weight_bytes(self, precision: str) -> float:
        return self.total_params * BYTES_PER_VALUE[precision]

    # ---- KV cache --------------------------------------------------------------
    def kv_bytes_per_token_per_layer(self, precision: str) -> float:
        """KV bytes one token adds in one full-attention layer."""
        a, b = self.attention, BYTES_PER_VALUE[precision]
        if a.kind == "mla":
            return float((a.kv_lora_rank + a.qk_rope_head_dim) * b)
        return float(2 * a.kv_heads * a.head_dim * b)

    def kv_bytes_per_token(self, precision: str, context_tokens=None):
        """Mean KV bytes per token of context, over all layers.

        GQA: κ = 2·L·kv_heads·head_dim·b; MLA: κ = (kv_lora_rank + rope_dim)·L·b.
        Sliding-window layers hold min(context, window) tokens, so at a given
        context their share per token is min(c, w)/c; with ``context_tokens``
        None the window is ignored (the worst case, c ≤ w).

        Examples
        --------
        >>> from costmodels.models import load_model_catalog
        >>> load_model_catalog()["deepseek-v3"].kv_bytes_per_token("bf16")
        70272.0
        """
        per_layer = self.kv_bytes_per_token_per_layer(precision)
        a = self.attention
        full = self.layers - a.sliding_window_layers
        if context_tokens is None or a.sliding_window_layers == 0:
            total = per_layer * self.layers
            return total if np.ndim(context_tokens) == 0 else np.full(np.shape(context_tokens), total)
        c = np.maximum(np.asarray(context_tokens, dtype=float), 1.0)
        swa_share = np.minimum(c, a.sliding_window_tokens) / c
        out = per_layer * (full + a.sliding_window_layers * swa_share)
        return float(out) if np.ndim(out) == 0 else out

    def kv_bytes(self, precision: str, context_tokens):
        """KV bytes held by one sequence of ``context_tokens`` tokens."""
        c = np.asarray(context_tokens, dtype=float)
        out = c * self.kv_bytes_per_token(precision, c)
        return float(out) if np.ndim(out) == 0 else out

    def kv_tp_duplication(self, tp: int) -> float:
        """How many times the KV cache is stored across ``tp`` tensor-parallel ranks.

        GQA shards KV heads over ranks; beyond ``kv_heads`` ranks each head is
        copied ``tp / kv_heads`` times. MLA's latent is replicated on every rank.
        """
        if self.attention.kind == "mla":
            return float(tp)
        return max(1.0, tp / self.attention.kv_heads)


def read_model_file(path: str | Path) -> dict[str, ModelSpec]:
    """Read a model catalogue YAML file (``models: [ {...}, ... ]``) keyed by name."""
    return read_records(path, "models", ModelSpec)


@lru_cache(maxsize=1)
def _shipped() -> dict[str, ModelSpec]:
    return read_model_file(CATALOG_PATH)


def load_model_catalog() -> dict[str, ModelSpec]:
    """The shipped model catalogue, keyed by model name (a fresh dict each call)."""
    return dict(_shipped())
