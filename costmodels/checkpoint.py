"""What a checkpoint stores: each component's precision from its quantisation config, and the sizes that follow.

A model's weights fall into the components the cost models price at their own precision
(:func:`costmodels.arithmetic.stored_weight_bytes`): **weights** — the FFN (dense layers, experts,
routers) — and **attention** — attention projections, embeddings, LM head and a vision tower — beside the
**kv** cache. :func:`checkpoint_precision` reads them from a Hugging Face ``quantization_config`` (or an
NVIDIA ModelOpt ``hf_quant_config.json``); a component the checkpoint leaves unquantised
(``modules_to_not_convert``, ``ignore``, ``exclude_modules`` naming attention) stays at BF16.

Bytes per stored value, block scales included (:data:`topology.chips.BYTES_PER_VALUE`):

=========  ===================================================================  ==================
precision  layout                                                               bytes per value
=========  ===================================================================  ==================
bf16       16-bit                                                               2
fp8        E4M3; one FP32 scale per 128 × 128 block (4 / 16,384: left out)      1
fp4        NVFP4: two E2M1 values a byte, one E4M3 scale per 16 values          0.5 + 1/16 = 0.5625
mxfp4      OCP MXFP4: two E2M1 values a byte, one E8M0 scale per 32 values      0.5 + 1/32 = 0.53125
=========  ===================================================================  ==================

The rate each runs at on a chip is :meth:`topology.chips.ChipSpec.flops`: MXFP4 experts at the FP8 rate
on chips with FP4 units (MXFP8 activations) and at BF16 on Hopper (BF16 activations, weights dequantised).

Examples
--------
>>> cfg = {"quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}}
>>> checkpoint_precision(cfg)
{'weights': 'mxfp4', 'attention': 'bf16'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from costmodels.hf_config import HFConfigError
from costmodels.models import ModelSpec

__all__ = ["checkpoint_precision", "model_figures"]


def _float_bits(scheme: Any) -> str | None:
    """A compressed-tensors weight scheme's precision: 8-bit floats are FP8; 4-bit floats NVFP4 (groups of
    16) or MXFP4 (groups of 32); integers and other widths are not priced."""
    if not isinstance(scheme, Mapping):
        return None
    bits, kind, group = scheme.get("num_bits"), scheme.get("type", "float"), scheme.get("group_size")
    if kind != "float":
        return None
    return {8: "fp8", 16: "bf16"}.get(bits) or ({16: "fp4", 32: "mxfp4"}.get(group) if bits == 4 else None)


def _modelopt_weights(algo: str, key: str) -> str:
    a = algo.upper()
    if "NVFP4" in a:
        return "fp4"
    if "MXFP4" in a:
        return "mxfp4"
    if a.startswith("FP8"):
        return "fp8"
    raise HFConfigError(f"ModelOpt quant_algo {algo!r} is not one the cost models price; expected NVFP4, MXFP4 or "
                        "FP8 (or set precision in the instance)", key)


def _keeps_attention_wide(q: Mapping) -> bool:
    """Whether the unquantised modules a quantisation config lists include the attention projections
    (``self_attn``, ``attn``; not ``post_attention_layernorm``)."""
    names = [*(q.get("modules_to_not_convert") or []), *(q.get("ignore") or []), *(q.get("exclude_modules") or [])]
    return any("attn" in str(n) for n in names)


def checkpoint_precision(config: Mapping, quant_config: Mapping | None = None) -> dict[str, str]:
    """The precisions a checkpoint stores: ``weights`` and, where they differ, ``attention`` and ``kv``.

    Reads ``quantization_config`` (``quant_method`` fp8 and fbgemm_fp8, mxfp4, modelopt, compressed-tensors)
    from the config, or an NVIDIA ModelOpt ``hf_quant_config.json`` given as ``quant_config``. An unquantised
    checkpoint is ``{"weights": "bf16"}``; attention listed among the unquantised modules is ``bf16``.

    Raises
    ------
    HFConfigError
        A quantisation the cost models do not price (an unknown method, integer weights); ``key`` names it.

    Examples
    --------
    >>> checkpoint_precision({"model_type": "llama"})
    {'weights': 'bf16'}
    >>> checkpoint_precision({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})
    {'weights': 'fp8'}
    >>> checkpoint_precision({}, {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}})
    {'weights': 'fp4', 'kv': 'fp8'}
    """
    if quant_config is not None:
        q = quant_config.get("quantization", quant_config)
        out = {"weights": _modelopt_weights(str(q.get("quant_algo", "")), "quantization.quant_algo")}
        if _keeps_attention_wide(q):
            out["attention"] = "bf16"
        if "FP8" in str(q.get("kv_cache_quant_algo", "")).upper():
            out["kv"] = "fp8"
        return out
    q = config.get("quantization_config")
    if not isinstance(q, Mapping):
        return {"weights": "bf16"}
    method = str(q.get("quant_method", "")).lower()
    if method == "mxfp4":
        out = {"weights": "mxfp4"}
    elif method in ("fp8", "fbgemm_fp8"):
        out = {"weights": "fp8"}
    elif method == "modelopt":
        out = {"weights": _modelopt_weights(str(q.get("quant_algo", "")), "quantization_config.quant_algo")}
    elif method == "compressed-tensors":
        groups = [g for g in (q.get("config_groups") or {}).values() if isinstance(g, Mapping)]
        weights = _float_bits(groups[0].get("weights")) if groups else None
        if weights is None:
            raise HFConfigError("compressed-tensors weights other than FP8, NVFP4 (4-bit floats in groups of 16) "
                                "or MXFP4 (groups of 32) are not priced (integer weights run weight-only kernels); "
                                "set precision in the instance", "quantization_config.config_groups")
        out = {"weights": weights}
    else:
        raise HFConfigError(f"quantization_config.quant_method {method!r} is not one this reader knows; expected "
                            "fp8, mxfp4, modelopt or compressed-tensors (or set precision in the instance)",
                            "quantization_config.quant_method")
    if _keeps_attention_wide(q):
        out["attention"] = "bf16"
    kv = q.get("kv_cache_scheme")
    if _float_bits(kv) == "fp8" or "FP8" in str(q.get("kv_cache_quant_algo", "")).upper():
        out["kv"] = "fp8"
    return out


def model_figures(model: ModelSpec, precision: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every derived size of ``model`` in base units, at a checkpoint's ``precision`` (default BF16).

    Keys: parameter counts (total, active, embedding, token mixers, FFN), ``weight_bytes`` at the
    checkpoint's precisions (attention projections and embeddings at ``attention``) and the bytes per value
    of each component, scales included; KV bytes per token (at ``kv``; per attention layer and over all
    layers at 8K, 32K and 128K tokens of context), the recurrent state per sequence and the layer kinds.

    Examples
    --------
    >>> from costmodels.models import load_model_catalog
    >>> f = model_figures(load_model_catalog()["llama-3.1-70b"])
    >>> round(f["total_params"] / 1e9, 2), f["kv_bytes_per_token"], f["layer_kinds"]
    (70.55, 327680.0, {'full_attention': 80})
    >>> model_figures(load_model_catalog()["gpt-oss-120b"], {"weights": "mxfp4", "attention": "bf16"})["bytes_per_value"]
    {'weights': 0.53125, 'attention': 2.0}
    """
    from costmodels.arithmetic import kv_bytes_per_sequence, stored_weight_bytes
    from costmodels.models import BYTES_PER_VALUE

    prec = {"weights": "bf16", **(precision or {})}
    kv = prec.get("kv", "bf16")
    a = model.attention
    kinds: dict[str, int] = {}
    if a.indexer is not None:
        kinds[f"sparse_attention (top {a.indexer.topk_tokens:,} tokens)"] = model.attention_layers
    else:
        if model.full_attention_layers:
            kinds["full_attention"] = model.full_attention_layers
        if a.sliding_window_layers:
            kinds[f"sliding_attention ({a.sliding_window_tokens:,} tokens)"] = a.sliding_window_layers
    if model.linear_mixer is not None:
        kinds[model.linear_mixer.kind] = model.linear_mixer.layers
    return {
        "name": model.name, "precision": prec,
        "total_params": model.total_params, "active_params": model.active_params,
        "embedding_params": model.embedding_params, "token_mixer_params": model.attention_params,
        "ffn_params": model.ffn_params, "encoder_params": model.encoder_params,
        "weight_bytes": stored_weight_bytes(model, "full", prec["weights"], prec.get("attention")),
        "bytes_per_value": {"weights": BYTES_PER_VALUE[prec["weights"]],
                            "attention": BYTES_PER_VALUE[prec.get("attention", prec["weights"])]},
        "kv_bytes_per_token_per_layer": model.kv_bytes_per_token_per_layer(kv),
        "kv_bytes_per_token": model.kv_bytes_per_token(kv),
        "kv_bytes_per_sequence": {f"{c // 1024}K": float(kv_bytes_per_sequence(model, kv, c))
                                  for c in (8192, 32768, 131072)},
        "state_bytes_per_sequence": model.state_bytes_per_sequence(kv),
        "layers": model.layers, "ffn_layers": model.ffn_layer_count, "layer_kinds": kinds,
        "experts": None if model.moe is None else
        f"{model.moe.active_experts} of {model.moe.experts} + {model.moe.shared_experts} shared",
    }
