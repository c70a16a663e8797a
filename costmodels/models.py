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
    "Indexer",
    "LinearMixer",
    "MoE",
    "ModelSpec",
    "default_attention_precision",
    "load_model_catalog",
    "read_model_file",
]

CATALOG_PATH = Path(__file__).with_name("catalog") / "models.yaml"




class Indexer(Record):
    """DeepSeek Sparse Attention's lightning indexer: ``heads`` scoring heads of
    ``head_dim`` over every cached token, of which the ``topk_tokens`` highest
    are the only ones the layer's attention reads.

    Per cached token and layer it stores one key of ``head_dim`` values besides
    the attention's own cache; per (query, cached token) pair it costs
    2·heads·head_dim FLOPs (its scores), and its query/key projections and
    head weights are q_lora_rank·heads·head_dim + hidden·head_dim + hidden·heads
    per layer (:attr:`ModelSpec.attention_params_per_layer`).
    """

    heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    topk_tokens: int = Field(ge=1)


class LinearMixer(Record):
    """Layers whose token mixer is a recurrence with a constant state (no KV cache).

    One record covers Gated DeltaNet (Qwen3-Next, Qwen3.5) and Mamba-2
    (Nemotron-H); both project the hidden state to keys/queries of
    ``key_heads·key_head_dim`` (Mamba-2: the groups' B and C of ``ssm_state_size``),
    values and output gates of ``value_heads·value_head_dim`` (Mamba-2: x and z
    of ``d_inner``) and ``gates_per_head`` scalars per value head (DeltaNet: β
    and α, 2; Mamba-2: Δt, 1), run a depthwise causal convolution of
    ``conv_kernel`` taps over the key, query and value channels, and keep per
    sequence and layer a state of value_heads·key_head_dim·value_head_dim values
    plus the convolution's last conv_kernel − 1 inputs.
    """

    kind: Literal["gated_deltanet", "mamba2"]
    layers: int = Field(ge=1)
    key_heads: int = Field(ge=1)
    key_head_dim: int = Field(ge=1)
    value_heads: int = Field(ge=1)
    value_head_dim: int = Field(ge=1)
    conv_kernel: int = Field(ge=1)

    @property
    def gates_per_head(self) -> int:
        return 2 if self.kind == "gated_deltanet" else 1

    @property
    def key_dim(self) -> int:
        return self.key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.value_heads * self.value_head_dim

    @property
    def conv_channels(self) -> int:
        """Channels of the causal convolution: keys and queries (B, C) and values (x)."""
        return 2 * self.key_dim + self.value_dim

    def params_per_layer(self, hidden_size: int) -> float:
        """in_proj d·(2·key_dim + 2·value_dim + gates·value_heads), conv channels·kernel, out_proj value_dim·d."""
        d = hidden_size
        in_proj = d * (2 * self.key_dim + 2 * self.value_dim + self.gates_per_head * self.value_heads)
        return float(in_proj + self.conv_channels * self.conv_kernel + self.value_dim * d)

    @property
    def state_values_per_layer(self) -> int:
        """Values one sequence holds in one layer: the recurrent state and the convolution's window."""
        return (self.value_heads * self.key_head_dim * self.value_head_dim
                + (self.conv_kernel - 1) * self.conv_channels)

    @property
    def flops_per_token_per_layer(self) -> float:
        """Recurrent-step FLOPs beyond the projections, per token and layer.

        DeltaNet reads S·k, writes the rank-1 update and reads q·S: three
        multiply-adds per state value (6·values); Mamba-2 updates h and reads
        C·h: two (4·values); the convolution adds 2·kernel per channel.
        """
        per_state = 6.0 if self.kind == "gated_deltanet" else 4.0
        return (per_state * self.value_heads * self.key_head_dim * self.value_head_dim
                + 2.0 * self.conv_kernel * self.conv_channels)


class Attention(Record):
    """Attention block shape.

    ``kind="gqa"`` covers MHA (kv_heads = heads), GQA and MQA (kv_heads = 1).
    ``kind="mla"`` is DeepSeek's multi-head latent attention: the cache holds
    one compressed latent (``kv_lora_rank``) plus a shared RoPE key per token
    and layer, replicated on every tensor-parallel rank.
    ``sliding_window_layers`` layers attend to the last ``sliding_window_tokens``
    tokens only (hybrid sliding-window models such as gpt-oss and Gemma).
    ``indexer`` makes every attention layer sparse (DeepSeek Sparse Attention):
    each query reads only the ``indexer.topk_tokens`` cached tokens a small
    indexer selects, while the indexer itself scores every cached token.
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
    indexer: Indexer | None = None

    @model_validator(mode="after")
    def _shape_is_consistent(self) -> Attention:
        if self.indexer is not None and self.sliding_window_layers:
            raise ValueError("an indexer (sparse attention) and sliding-window layers cannot be combined")
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
    """The attention projections' precision of ``model`` served at ``weights``: the same, except FP4 (NVFP4 or
    MXFP4) weights of a model whose published FP4 checkpoints keep attention wider (``fp4_attention_precision``).

    Examples
    --------
    >>> m = load_model_catalog()["deepseek-v3"]
    >>> default_attention_precision(m, "fp4"), default_attention_precision(m, "fp8")
    ('fp8', 'fp8')
    >>> default_attention_precision(load_model_catalog()["gpt-oss-120b"], "mxfp4")
    'bf16'
    """
    if weights in ("fp4", "mxfp4") and model.fp4_attention_precision is not None:
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
        ``ffn_layers - dense_layers`` use ``moe``. Defaults to all layers.
    linear_mixer
        Hybrids: ``linear_mixer.layers`` of the ``layers`` replace attention
        by a constant-state recurrence (Gated DeltaNet, Mamba-2); the rest
        attend (full, sliding-window or sparse).
    encoder_params
        A multimodal checkpoint's encoder (vision tower and projector): stored, not run per token.
    ffn_layers
        Layers with an FFN, default all. Hybrids whose blocks hold either a
        mixer or an FFN (Nemotron-H) count their mixer blocks as ``layers``
        and their FFN blocks here.
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
    linear_mixer: LinearMixer | None = None
    ffn_layers: int | None = Field(default=None, ge=0)
    encoder_params: float = Field(default=0.0, ge=0, description="parameters of a vision (or audio) encoder "
                                  "the checkpoint stores beside the language model: held in memory with the "
                                  "attention side, not run per output token; needs a source")
    published_total_params: float | None = Field(default=None, gt=0)
    fp4_attention_precision: Literal["fp8", "bf16"] | None = Field(
        default=None, description="the attention projections' precision in the published FP4 checkpoints (None: "
                                  "FP4 like the rest); needs a source")
    calibration: Literal["calibrated", "uncalibrated"] = Field(
        default="uncalibrated", description="calibrated: the shipped chip factors were fitted on serving "
        "measurements of this model (benchmarks/CALIBRATION.md); uncalibrated: it is priced by the roofline and "
        "factors fitted on other models")
    sources: dict[str, str] = Field(min_length=1)
    estimates: list[str] = Field(default_factory=list)
    hf_ids: list[str] = Field(default_factory=list, description="Hugging Face ids of the checkpoints with this "
                              "architecture; an instance's model may name one (case-insensitive)")

    @model_validator(mode="after")
    def _layers_add_up(self) -> ModelSpec:
        if self.hf_ids and "hf_ids" not in self.sources:
            raise ValueError(f"model {self.name!r}: no source given for hf_ids")
        if self.encoder_params and "encoder_params" not in self.sources:
            raise ValueError(f"model {self.name!r}: no source given for encoder_params")
        if self.fp4_attention_precision is not None and "fp4_attention_precision" not in self.sources:
            raise ValueError(f"model {self.name!r}: no source given for fp4_attention_precision")
        if self.dense_layers is not None and self.dense_layers > self.ffn_layer_count:
            raise ValueError("dense_layers cannot exceed the layers with an FFN")
        if self.linear_mixer is not None and self.linear_mixer.layers > self.layers:
            raise ValueError("linear_mixer.layers cannot exceed layers")
        if self.attention.indexer is not None and (self.attention.kind != "mla" or self.attention.q_lora_rank is None):
            raise ValueError("an indexer needs MLA attention with a q_lora_rank (its queries start there)")
        if self.moe is None and self.dense_layers not in (None, self.layers):
            raise ValueError("a model without moe has only dense layers")
        return self

    # ---- layer counts ---------------------------------------------------------
    @property
    def ffn_layer_count(self) -> int:
        """Layers with an FFN (dense or MoE)."""
        return self.layers if self.ffn_layers is None else self.ffn_layers

    @property
    def attention_layers(self) -> int:
        """Layers that attend (full, sliding-window or sparse): all but the linear mixers."""
        return self.layers - (0 if self.linear_mixer is None else self.linear_mixer.layers)

    @property
    def full_attention_layers(self) -> int:
        """Attention layers without a sliding window."""
        return self.attention_layers - self.attention.sliding_window_layers

    @property
    def n_dense_layers(self) -> int:
        if self.moe is None:
            return self.ffn_layer_count
        return self.ffn_layer_count if self.dense_layers is None else self.dense_layers

    @property
    def n_moe_layers(self) -> int:
        return self.ffn_layer_count - self.n_dense_layers

    # ---- parameter counts (derived) ------------------------------------------
    @property
    def attention_params_per_layer(self) -> float:
        """Q, K, V, O projections of one attention layer (with MLA's low-rank factors and an indexer's)."""
        a, d = self.attention, self.hidden_size
        if a.kind == "gqa":
            return float(d * a.heads * a.head_dim * 2 + d * a.kv_heads * a.head_dim * 2)
        rope, v = a.qk_rope_head_dim, a.v_head_dim
        q_dim = a.heads * (a.head_dim + rope)
        q = d * q_dim if a.q_lora_rank is None else d * a.q_lora_rank + a.q_lora_rank * q_dim
        kv = d * (a.kv_lora_rank + rope) + a.kv_lora_rank * a.heads * (a.head_dim + v)
        o = a.heads * v * d
        ix = a.indexer
        index = 0 if ix is None else a.q_lora_rank * ix.heads * ix.head_dim + d * ix.head_dim + d * ix.heads
        return float(q + kv + o + index)

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
        """Token-mixer parameters of all layers: attention projections and linear mixers."""
        mixers = 0.0 if self.linear_mixer is None else (
            self.linear_mixer.layers * self.linear_mixer.params_per_layer(self.hidden_size))
        return self.attention_layers * self.attention_params_per_layer + mixers

    @property
    def ffn_params(self) -> float:
        return self.n_dense_layers * self.dense_ffn_params_per_layer + self.n_moe_layers * self.moe_ffn_params_per_layer

    @property
    def embedding_params(self) -> float:
        """Input embedding plus LM head (one matrix when tied)."""
        return float(self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2))

    @property
    def total_params(self) -> float:
        """Every stored parameter: token mixers, FFNs, embeddings and a multimodal encoder."""
        return self.attention_params + self.ffn_params + self.embedding_params + self.encoder_params

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

    # ---- KV cache and recurrent state ------------------------------------------
    def kv_bytes_per_token_per_layer(self, precision: str) -> float:
        """KV bytes one token adds in one attention layer (with an indexer: its key too)."""
        a, b = self.attention, BYTES_PER_VALUE[precision]
        if a.kind == "mla":
            index = 0 if a.indexer is None else a.indexer.head_dim
            return float((a.kv_lora_rank + a.qk_rope_head_dim + index) * b)
        return float(2 * a.kv_heads * a.head_dim * b)

    def state_bytes_per_sequence(self, precision: str) -> float:
        """Recurrent state one sequence holds over all linear-mixer layers, whatever its length.

        Held at ``precision`` but never below BF16: the serving engines keep
        the recurrent state at the model's dtype or wider, not in an FP8 cache.

        Examples
        --------
        >>> from costmodels.models import load_model_catalog
        >>> load_model_catalog()["llama-3.1-8b"].state_bytes_per_sequence("bf16")
        0.0
        """
        mixer = self.linear_mixer
        if mixer is None:
            return 0.0
        b = max(BYTES_PER_VALUE[precision], BYTES_PER_VALUE["bf16"])
        return float(mixer.layers * mixer.state_values_per_layer * b)

    def kv_bytes_per_token(self, precision: str, context_tokens=None):
        """Mean KV bytes per token of context, over all layers.

        GQA: κ = 2·L·kv_heads·head_dim·b; MLA: κ = (kv_lora_rank + rope_dim)·L·b.
        Sliding-window layers hold min(context, window) tokens, so at a given
        context their share per token is min(c, w)/c; with ``context_tokens``
        None the window is ignored (the worst case, c ≤ w). Linear-mixer layers
        hold no KV (their constant state is :meth:`state_bytes_per_sequence`).

        Examples
        --------
        >>> from costmodels.models import load_model_catalog
        >>> load_model_catalog()["deepseek-v3"].kv_bytes_per_token("bf16")
        70272.0
        """
        per_layer = self.kv_bytes_per_token_per_layer(precision)
        a = self.attention
        if context_tokens is None or a.sliding_window_layers == 0:
            total = per_layer * self.attention_layers
            return total if np.ndim(context_tokens) == 0 else np.full(np.shape(context_tokens), total)
        c = np.maximum(np.asarray(context_tokens, dtype=float), 1.0)
        swa_share = np.minimum(c, a.sliding_window_tokens) / c
        out = per_layer * (self.full_attention_layers + a.sliding_window_layers * swa_share)
        return float(out) if np.ndim(out) == 0 else out

    def kv_bytes(self, precision: str, context_tokens):
        """KV bytes held by one sequence of ``context_tokens`` tokens, its recurrent state included."""
        c = np.asarray(context_tokens, dtype=float)
        out = c * self.kv_bytes_per_token(precision, c) + self.state_bytes_per_sequence(precision)
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
