"""Model records from a Hugging Face ``config.json``: any checkpoint's shape without typing it in.

:func:`model_from_hf_config` maps the keys of the families below onto a :class:`~costmodels.models.ModelSpec`;
every size (parameters, weight bytes, KV and state bytes) is then derived from the record as for catalogue
models. Keys a family leaves out take the value its ``transformers`` configuration class defaults to.

=====================  ==========================================================================
``model_type``          read as
=====================  ==========================================================================
llama, mistral,         GQA (``num_key_value_heads``, ``head_dim`` or hidden/heads), gated FFN
qwen2, qwen3
mixtral                 + MoE: ``num_local_experts``, ``num_experts_per_tok``, experts of ``intermediate_size``
qwen2_moe, qwen3_moe    + MoE: ``num_experts``, ``moe_intermediate_size``, ``decoder_sparse_step``,
                        ``mlp_only_layers``, a shared expert of ``shared_expert_intermediate_size``
qwen3_next              + ``layer_types`` / ``full_attention_interval``: Gated DeltaNet layers
                        (``linear_num_key_heads``, ``linear_key_head_dim``, ``linear_num_value_heads``,
                        ``linear_value_head_dim``, ``linear_conv_kernel_dim``)
deepseek_v3, kimi_k2,   MLA (``q_lora_rank``, ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``,
deepseek_v32,           ``v_head_dim``), MoE (``n_routed_experts``, ``n_shared_experts``,
glm_moe_dsa             ``first_k_dense_replace``, ``mlp_layer_types``); V3.2's and GLM-5's indexer
                        (``index_n_heads``, ``index_head_dim``, ``index_topk``) on every layer
glm4_moe                GQA with DeepSeek-style MoE keys
gpt_oss                 GQA, MoE (``num_local_experts``, ``experts_per_token``), ``layer_types``' sliding layers
minimax_m2              GQA, MoE on every layer (``num_local_experts``, experts of ``intermediate_size``, a shared
                        expert of ``shared_intermediate_size``); ``attn_type_list`` must be all full attention
gemma3 (``text_config``) GQA with ``sliding_window`` on ``layer_types`` (or every layer but each
                        ``sliding_window_pattern``-th), tied embeddings; keys left out as :data:`FAMILY_DEFAULTS`
llama4 (``text_config``) MoE on every ``interleave_moe_layer_step``-th layer (one shared expert), dense
                        layers of ``intermediate_size_mlp``, chunked attention (``attention_chunk_size``)
                        on the RoPE layers, read as a window of the chunk (an upper bound on its reads)
nemotron_h              ``hybrid_override_pattern``: ``M`` Mamba-2 and ``*`` attention blocks are layers,
                        ``-`` MLP blocks (squared ReLU, not gated) the FFN layers
=====================  ==========================================================================

A checkpoint's quantisation (``quantization_config`` inside the config, or NVIDIA ModelOpt's
``hf_quant_config.json``) is read by :func:`costmodels.checkpoint.checkpoint_precision`.

Not represented (each well under 1 % of parameters): norms, biases, attention sinks, Qwen3-Next's output
gate on the full-attention query (d·heads·head_dim per such layer), MoE gate biases, the multi-token
prediction layers (``num_nextn_predict_layers``, MiniMax's ``num_mtp_modules``: reported, not counted). A multimodal checkpoint's vision
tower (``vision_config``) is counted as stored ``encoder_params`` (an estimate), not as per-token work.

Examples
--------
>>> cfg = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
...        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
>>> m = model_from_hf_config(cfg, name="my-llama", source="config.json")
>>> round(m.total_params / 1e9, 2), m.kv_bytes_per_token("bf16")
(8.03, 131072.0)
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from costmodels.models import ModelSpec

__all__ = ["HFConfigError", "config_notes", "model_from_hf_config", "read_hf_config"]

#: ``model_type`` values read, by the attention they carry.
GQA_TYPES = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe", "qwen3_next", "glm4_moe",
             "gpt_oss", "gemma3_text", "llama4_text", "nemotron_h", "glm4", "phi3", "granite", "minimax_m2"}
MLA_TYPES = {"deepseek_v3", "deepseek_v32", "kimi_k2", "deepseek_v2", "glm_moe_dsa"}
#: Multimodal wrappers whose language model sits under ``text_config``.
WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral"}
#: ``transformers`` defaults where a family's configuration class differs from the usual (``head_dim`` =
#: hidden/heads, untied embeddings).
DEFAULT_HEAD_DIM = {"gemma3_text": 256, "qwen3": 128, "qwen3_moe": 128, "qwen3_next": 256, "nemotron_h": 128,
                    "llama4_text": 128, "gpt_oss": 64}
#: Keys a family's published configs leave out, at their ``transformers`` configuration class's defaults.
#: Gemma 3: ``Gemma3TextConfig.__init__`` (huggingface/transformers@008f5c8c29be84d4721dc6d1e0fcd72300580be4
#: src/transformers/models/gemma3/configuration_gemma3.py): vocabulary 262,208, tied embeddings, a 4,096-token
#: window and ``sliding_window_pattern`` 6 (five sliding layers to one global; later versions write the same
#: pattern out as ``layer_types``). google/gemma-3-27b-it's ``text_config`` gives neither vocabulary nor pattern.
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"vocab_size": 262_208, "tie_word_embeddings": True, "sliding_window": 4096,
                    "sliding_window_pattern": 6},
}


class HFConfigError(ValueError):
    """A ``config.json`` this reader cannot turn into a model record; ``key`` names the offending key."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


def _get(cfg: Mapping, key: str, default: Any = None, *, kind: type = int, required: bool = False) -> Any:
    v = cfg.get(key, default)
    if v is None:
        if required:
            raise HFConfigError(f"missing {key!r}, which a {cfg.get('model_type', '?')!r} config needs", key)
        return None
    if kind is int and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
        raise HFConfigError(f"{key!r} must be a non-negative integer, got {v!r}", key)
    if kind is bool and not isinstance(v, bool):
        raise HFConfigError(f"{key!r} must be true or false, got {v!r}", key)
    return v


def _language_model(cfg: Mapping) -> tuple[Mapping, str]:
    """The language model's keys and its ``model_type`` (a multimodal wrapper's ``text_config``)."""
    mt = cfg.get("model_type")
    if not isinstance(mt, str):
        raise HFConfigError("no 'model_type' string: not a Hugging Face model configuration", "model_type")
    if mt in WRAPPERS:
        text = cfg.get("text_config")
        if not isinstance(text, Mapping):
            raise HFConfigError(f"a {mt!r} config needs a 'text_config' mapping", "text_config")
        merged = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}
        merged.update(text)
        return merged, text.get("model_type", WRAPPERS[mt])
    return cfg, mt


def _layer_kinds(cfg: Mapping, layers: int, key: str = "layer_types") -> list[str] | None:
    kinds = cfg.get(key)
    if kinds is None:
        return None
    if not isinstance(kinds, list) or len(kinds) != layers or not all(isinstance(k, str) for k in kinds):
        raise HFConfigError(f"{key!r} must list one string per layer ({layers})", key)
    return kinds


def _indexer_on_every_layer(cfg: Mapping) -> None:
    """Refuse a sparse-attention config whose layers share an indexer's top-k (``transformers``'
    ``GlmMoeDsaConfig.indexer_types``: ``"shared"`` layers run no indexer); the record prices one per layer."""
    types, freq, pattern = cfg.get("indexer_types"), cfg.get("index_topk_freq"), cfg.get("index_topk_pattern")
    shared = ((isinstance(types, list) and any(t != "full" for t in types))
              or (isinstance(freq, int) and freq > 1) or (isinstance(pattern, str) and "S" in pattern.upper()))
    if shared:
        key = "indexer_types" if types is not None else "index_topk_freq" if freq is not None else "index_topk_pattern"
        raise HFConfigError("layers that share another layer's indexer top-k are not read yet (the record runs an "
                            "indexer on every attention layer)", key)


def _attention(cfg: Mapping, mt: str, hidden: int) -> dict:
    heads = _get(cfg, "num_attention_heads", required=True)
    if mt in MLA_TYPES:
        out = {"kind": "mla", "heads": heads, "kv_heads": heads,
               "head_dim": _get(cfg, "qk_nope_head_dim", required=True),
               "q_lora_rank": _get(cfg, "q_lora_rank"), "kv_lora_rank": _get(cfg, "kv_lora_rank", required=True),
               "qk_rope_head_dim": _get(cfg, "qk_rope_head_dim", required=True),
               "v_head_dim": _get(cfg, "v_head_dim", required=True)}
        if cfg.get("index_topk") is not None:
            _indexer_on_every_layer(cfg)
            out["indexer"] = {"heads": _get(cfg, "index_n_heads", required=True),
                              "head_dim": _get(cfg, "index_head_dim", required=True),
                              "topk_tokens": _get(cfg, "index_topk")}
        return out
    kv = _get(cfg, "num_key_value_heads", heads)
    head_dim = _get(cfg, "head_dim") or _get(cfg, "attention_head_dim") or DEFAULT_HEAD_DIM.get(mt)
    if head_dim is None:
        if hidden % heads:
            raise HFConfigError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads} and no "
                                "'head_dim' is given", "head_dim")
        head_dim = hidden // heads
    return {"kind": "gqa", "heads": heads, "kv_heads": kv, "head_dim": head_dim}


def _windows(cfg: Mapping, mt: str, attention_kinds: list[str], attn: dict) -> None:
    """Sliding-window (and Llama 4's chunked) layers among the attention layers, into ``attn``."""
    if mt == "llama4_text":
        chunk = _get(cfg, "attention_chunk_size")
        if chunk is None:
            return
        rope = cfg.get("no_rope_layers")
        n = len(attention_kinds)
        if isinstance(rope, list) and len(rope) == n:
            chunked = sum(1 for r in rope if r)  # 1: the layer uses RoPE and chunked attention
        else:
            step = _get(cfg, "no_rope_layer_interval", 4)
            chunked = sum(1 for i in range(n) if (i + 1) % step)
        attn.update(sliding_window_tokens=chunk, sliding_window_layers=chunked)
        return
    window = cfg.get("sliding_window")
    if window is None or (mt in ("mistral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "mixtral")
                          and not cfg.get("use_sliding_window", mt in ("mistral", "mixtral"))):
        return
    window = _get(cfg, "sliding_window")
    sliding = sum(1 for k in attention_kinds if k == "sliding_attention")
    if sliding == 0 and mt == "gemma3_text" and "layer_types" not in cfg:
        pattern = _get(cfg, "sliding_window_pattern", required=True) or 1
        sliding = sum(1 for i in range(len(attention_kinds)) if (i + 1) % pattern)
    if sliding == 0 and "layer_types" not in cfg and mt in ("mistral", "mixtral"):
        sliding = len(attention_kinds)
    if sliding:
        attn.update(sliding_window_tokens=window, sliding_window_layers=sliding)


def _shared_experts(cfg: Mapping, key: str, expert: int) -> int:
    """Shared experts of a config that gives their total width under ``key`` (0 when absent)."""
    size = _get(cfg, key, 0) or 0
    if size % expert:
        raise HFConfigError(f"a shared expert of {size} is not a whole number of experts of {expert}", key)
    return size // expert


def _moe(cfg: Mapping, mt: str, layers: int) -> tuple[dict | None, int | None]:
    """(the MoE record, the dense layers) of a config, or (None, None)."""
    if mt in MLA_TYPES or mt == "glm4_moe":
        experts = _get(cfg, "n_routed_experts")
        if not experts:
            return None, None
        kinds = _layer_kinds(cfg, layers, "mlp_layer_types")
        if kinds is not None:
            moe_layers = sum(1 for k in kinds if k == "sparse")
        else:
            freq = _get(cfg, "moe_layer_freq", 1) or 1
            first = _get(cfg, "first_k_dense_replace", 0)
            moe_layers = sum(1 for i in range(first, layers) if i % freq == 0)
        return ({"experts": experts, "active_experts": _get(cfg, "num_experts_per_tok", required=True),
                 "shared_experts": _get(cfg, "n_shared_experts", 0) or 0,
                 "expert_intermediate_size": _get(cfg, "moe_intermediate_size", required=True)},
                layers - moe_layers)
    if mt in ("mixtral", "gpt_oss", "minimax_m2"):
        experts = _get(cfg, "num_local_experts", required=True)
        k = _get(cfg, "num_experts_per_tok") or _get(cfg, "experts_per_token", required=True)
        expert = _get(cfg, "intermediate_size", required=True)
        return ({"experts": experts, "active_experts": k, "expert_intermediate_size": expert,
                 "shared_experts": _shared_experts(cfg, "shared_intermediate_size", expert)}, 0)
    if mt in ("qwen2_moe", "qwen3_moe", "qwen3_next"):
        experts = _get(cfg, "num_experts", required=True)
        expert = _get(cfg, "moe_intermediate_size", required=True)
        shared = _shared_experts(cfg, "shared_expert_intermediate_size", expert)
        step = _get(cfg, "decoder_sparse_step", 1) or 1
        dense_only = set(cfg.get("mlp_only_layers") or [])
        moe_layers = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
        return ({"experts": experts, "active_experts": _get(cfg, "num_experts_per_tok", required=True),
                 "shared_experts": shared, "expert_intermediate_size": expert},
                layers - moe_layers)
    if mt == "llama4_text":
        experts = _get(cfg, "num_local_experts", required=True)
        step = _get(cfg, "interleave_moe_layer_step", 1) or 1
        listed = cfg.get("moe_layers")
        moe_layers = len(listed) if isinstance(listed, list) else sum(
            1 for i in range(layers) if (i + 1) % step == 0)
        return ({"experts": experts, "active_experts": _get(cfg, "num_experts_per_tok", required=True),
                 "shared_experts": 1, "expert_intermediate_size": _get(cfg, "intermediate_size", required=True)},
                layers - moe_layers)
    return None, None


def _nemotron_h(cfg: Mapping, out: dict) -> None:
    pattern = cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not re.fullmatch(r"[M*\-E]+", pattern):
        raise HFConfigError("'hybrid_override_pattern' must be a string of M (Mamba-2), * (attention), - (MLP) "
                            "and E (MoE) blocks", "hybrid_override_pattern")
    if "E" in pattern:
        raise HFConfigError("MoE blocks (E) in a Nemotron-H pattern are not read yet", "hybrid_override_pattern")
    mamba, attention, mlp = pattern.count("M"), pattern.count("*"), pattern.count("-")
    out.update(layers=mamba + attention, ffn_layers=mlp, ffn_gated=False)
    heads = _get(cfg, "mamba_num_heads", required=True)
    out["linear_mixer"] = {"kind": "mamba2", "layers": mamba, "key_heads": _get(cfg, "n_groups", 1),
                           "key_head_dim": _get(cfg, "ssm_state_size", required=True), "value_heads": heads,
                           "value_head_dim": _get(cfg, "mamba_head_dim", required=True),
                           "conv_kernel": _get(cfg, "conv_kernel", 4)}


def _encoder_params(config: Mapping, text_hidden: int) -> float:
    """Parameters of a vision tower (``vision_config``): a ViT of L layers, width d and MLP f,
    L·(4·d² + 2·d·f), the patch embedding, an adapter (``projector_input_dim`` → ``projector_output_dim``) and
    the projection to the language model's width. An estimate: norms, biases and position tables left out."""
    v = config.get("vision_config")
    if not isinstance(v, Mapping):
        return 0.0
    layers = _get(v, "num_hidden_layers") or _get(v, "depth") or 0
    d = _get(v, "hidden_size") or _get(v, "width") or 0
    f = _get(v, "intermediate_size") or 4 * d
    patch = _get(v, "patch_size") or 14
    tower = layers * (4 * d * d + 2 * d * f) + (_get(v, "num_channels") or 3) * patch * patch * d
    pin, pout = _get(v, "projector_input_dim"), _get(v, "projector_output_dim")
    adapter = 4 * d * pin + pin * pout if pin and pout else 0  # pixel-shuffle MLP: 4d → in → out
    out_dim = _get(v, "vision_output_dim") or (pout if pout else d)
    return float(tower + adapter + out_dim * text_hidden)


def model_from_hf_config(config: Mapping, *, name: str, source: str, display_name: str | None = None) -> ModelSpec:
    """A :class:`~costmodels.models.ModelSpec` from a parsed ``config.json``.

    Parameters
    ----------
    config
        The configuration mapping (a multimodal wrapper's ``text_config`` is read for the language model).
    name
        The record's name (lower-case letters, digits, ``.``, ``_``, ``-``).
    source
        Where the configuration came from, kept in the record's ``sources``.

    Raises
    ------
    HFConfigError
        A family this reader does not know, or a key missing or of the wrong type (``key`` names it).

    Examples
    --------
    >>> cfg = {"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    ...        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
    ...        "num_local_experts": 8, "num_experts_per_tok": 2}
    >>> m = model_from_hf_config(cfg, name="mixtral", source="config.json")
    >>> round(m.total_params / 1e9, 1), round(m.active_params / 1e9, 1)
    (46.7, 12.9)
    """
    cfg, mt = _language_model(config)
    cfg = {**FAMILY_DEFAULTS.get(mt, {}), **cfg}
    if mt not in GQA_TYPES | MLA_TYPES:
        known = ", ".join(sorted(GQA_TYPES | MLA_TYPES | set(WRAPPERS)))
        raise HFConfigError(f"model_type {mt!r} is not one this reader knows; expected one of {known} "
                            "(or write the model record by hand: docs/instance-format.md)", "model_type")
    hidden = _get(cfg, "hidden_size", required=True)
    layers = _get(cfg, "num_hidden_layers", required=True)
    out: dict = {"name": name, "display_name": display_name or name, "hidden_size": hidden,
                 "vocab_size": _get(cfg, "vocab_size", required=True),
                 "tie_word_embeddings": bool(_get(cfg, "tie_word_embeddings", False, kind=bool)),
                 "layers": layers, "sources": {"architecture": source}}
    attn = _attention(cfg, mt, hidden)
    kinds = _layer_kinds(cfg, layers)
    attention_kinds = ["full_attention"] * layers if kinds is None else kinds
    if mt == "qwen3_next":
        if kinds is None:
            interval = _get(cfg, "full_attention_interval", 4) or 4
            attention_kinds = ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                               for i in range(layers)]
        linear = sum(1 for k in attention_kinds if k == "linear_attention")
        out["linear_mixer"] = {"kind": "gated_deltanet", "layers": linear,
                               "key_heads": _get(cfg, "linear_num_key_heads", required=True),
                               "key_head_dim": _get(cfg, "linear_key_head_dim", required=True),
                               "value_heads": _get(cfg, "linear_num_value_heads", required=True),
                               "value_head_dim": _get(cfg, "linear_value_head_dim", required=True),
                               "conv_kernel": _get(cfg, "linear_conv_kernel_dim", 4)}
        attention_kinds = [k for k in attention_kinds if k != "linear_attention"]
    if mt == "minimax_m2" and any(t != 1 for t in cfg.get("attn_type_list") or []):
        raise HFConfigError("'attn_type_list' entries other than 1 (full attention) are MiniMax's lightning "
                            "(linear) attention layers, not read yet", "attn_type_list")
    if mt == "nemotron_h":
        _nemotron_h(cfg, out)
        attention_kinds = ["full_attention"] * cfg["hybrid_override_pattern"].count("*")
    else:
        _windows(cfg, mt, attention_kinds, attn)
    out["attention"] = attn
    moe, dense_layers = _moe(cfg, mt, layers)
    if mt == "llama4_text":
        out["ffn_intermediate_size"] = _get(cfg, "intermediate_size_mlp", required=True)
    elif moe is not None and dense_layers == 0:
        out["ffn_intermediate_size"] = moe["expert_intermediate_size"]  # no dense layer: the field is unused
    else:
        out["ffn_intermediate_size"] = _get(cfg, "intermediate_size", required=True)
    if moe is not None:
        out.update(moe=moe, dense_layers=dense_layers)
    encoder = _encoder_params(config, hidden)
    if encoder:
        out["encoder_params"] = encoder
        out["sources"]["encoder_params"] = ("estimate: the vision tower from vision_config as a ViT "
                                            "(costmodels/hf_config.py, _encoder_params)")
        out["estimates"] = ["encoder_params"]
    try:
        return ModelSpec.model_validate(out)
    except ValueError as e:
        raise HFConfigError(f"the config does not give a valid model record: {e}") from None


def config_notes(config: Mapping) -> list[str]:
    """What a configuration holds that the record does not count (MTP layers, vision towers, FP8 block scales).

    Examples
    --------
    >>> config_notes({"model_type": "deepseek_v3", "num_nextn_predict_layers": 1})
    ['1 multi-token-prediction layer(s) (num_nextn_predict_layers) not counted: a draft of their own']
    """
    notes = []
    cfg, _ = _language_model(config) if isinstance(config.get("model_type"), str) else (config, "")
    for key in ("num_nextn_predict_layers", "num_mtp_modules"):
        mtp = cfg.get(key)
        if isinstance(mtp, int) and mtp > 0 and cfg.get("use_mtp", True) is not False:
            notes.append(f"{mtp} multi-token-prediction layer(s) ({key}) not counted: a draft of their own")
    q = config.get("quantization_config")
    block = q.get("weight_block_size") if isinstance(q, Mapping) else None
    if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
        notes.append(f"FP8 block scales (one FP32 per {block[0]} × {block[1]} weights: +{400 / (block[0] * block[1]):.3f} "
                     "% of the FP8 weights' bytes) not counted")
    if isinstance(config.get("vision_config"), Mapping):
        notes.append("a vision tower (vision_config) counted in the stored parameters (an estimate), not in the "
                     "per-token work: image prefill is not modelled")
    return notes


def _name_from(path: Path, config: Mapping) -> str:
    raw = str(config.get("_name_or_path") or "").split("/")[-1] or path.stem
    if raw.lower() in ("config", ""):
        raw = path.parent.name or "model"
    name = re.sub(r"[^a-z0-9_.\-]+", "-", raw.lower()).strip("-._") or "model"
    return name if re.match(r"^[a-z0-9]", name) else f"m-{name}"


def read_hf_config(path: str | Path, *, name: str | None = None) -> tuple[ModelSpec, dict]:
    """Read a ``config.json`` into a model record; also return the parsed configuration.

    The record's name is ``name``, else the config's ``_name_or_path`` tail, else the file's stem (its
    folder's name for ``config.json``); its source names the file and its SHA-256.

    Raises
    ------
    HFConfigError
        An unreadable file, invalid JSON, or a configuration :func:`model_from_hf_config` refuses.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise HFConfigError(f"cannot read file: {e.strerror or e}") from None
    try:
        config = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HFConfigError(f"not valid JSON: {e}") from None
    if not isinstance(config, dict):
        raise HFConfigError(f"expected a JSON object at the top level, got {type(config).__name__}")
    label = name or _name_from(p, config)
    source = f"Hugging Face config.json {p.name} (sha256 {hashlib.sha256(raw).hexdigest()[:16]}), read by " \
             "costmodels/hf_config.py"
    display = str(config.get("_name_or_path") or label)
    return model_from_hf_config(config, name=label, source=source, display_name=display), config
