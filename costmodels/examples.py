"""Small fixed chip and model records for the cost-model examples and tests.

The shipped catalogues (``topology/catalog/chips.yaml``,
``costmodels/catalog/models.yaml``) are maintained and calibrated separately;
the docstring examples of this package and the cost-model tests build their
own records here so that the numbers they show stay pinned when the catalogue
changes. Capacities, bandwidths and FLOP/s follow the vendors' pages;
efficiencies and overheads are example choices, not claims.

Examples
--------
>>> h100().flops_per_s["fp8"], llama_70b().layers
(1978900000000000.0, 80)
"""

from __future__ import annotations

from typing import Any

from costmodels.models import ModelSpec
from topology.chips import SOURCED_FIELDS, ChipSpec

__all__ = [
    "all_chips",
    "all_models",
    "bertha",
    "deepseek_v3",
    "gb200",
    "h100",
    "llama_8b",
    "llama_70b",
    "lpu_500mb",
    "make_chip",
    "swa_model",
]



def make_chip(**fields: Any) -> ChipSpec:
    """A ChipSpec with every sourced field attributed to the example record."""
    fields.setdefault("sources", {f: "example record" for f in SOURCED_FIELDS})
    fields.setdefault("price_basis", "example record")
    return ChipSpec.model_validate(fields)


def h100(**overrides: Any) -> ChipSpec:
    """H100 SXM: 989.4 / 1978.9 TFLOP/s, 80 GB at 3.35 TB/s, NVLink 450 GB/s each way."""
    spec = {
        "name": "h100",
        "display_name": "NVIDIA H100 SXM",
        "vendor": "NVIDIA",
        "kind": "gpu",
        "flops_per_s": {"bf16": 989.4e12, "fp8": 1978.9e12},
        "memory": [{"name": "HBM3", "capacity_bytes": 80e9, "bandwidth_bytes_per_s": 3.35e12}],
        "scale_up_domain_chips": 8,
        "scale_up_bandwidth_bytes_per_s": 450e9,
        "scale_up_latency_s": 1.8e-6,
        "scale_out_bandwidth_bytes_per_s": 50e9,
        "power_w": 700.0,
        "usd_per_hour": 2.95,
        "compute_efficiency": 0.7,
        "memory_efficiency": 0.8,
        "step_overhead_s": 2e-3,
    }
    spec.update(overrides)
    return make_chip(**spec)


def bertha(**overrides: Any) -> ChipSpec:
    """HyperAccel Bertha: 192 GB LPDDR5X at 546 GB/s, η_m = 0.9 (seed 000)."""
    spec = {
        "name": "bertha",
        "display_name": "HyperAccel Bertha",
        "vendor": "HyperAccel",
        "kind": "lpddr",
        "flops_per_s": {"bf16": 100e12, "fp8": 200e12},
        "memory": [{"name": "LPDDR5X", "capacity_bytes": 192e9, "bandwidth_bytes_per_s": 546e9}],
        "scale_up_domain_chips": 8,
        "scale_up_bandwidth_bytes_per_s": 64e9,
        "scale_up_latency_s": 5e-6,
        "scale_out_bandwidth_bytes_per_s": 25e9,
        "power_w": 250.0,
        "usd_per_hour": 0.5,
        "compute_efficiency": 0.9,
        "memory_efficiency": 0.9,
        "step_overhead_s": 1e-3,
        "estimates": ["flops_per_s", "power_w", "usd_per_hour", "scale_up_bandwidth_bytes_per_s"],
    }
    spec.update(overrides)
    return make_chip(**spec)


def lpu_500mb(**overrides: Any) -> ChipSpec:
    """An SRAM-only LPU like Groq 3 LP30: 500 MB SRAM at 150 TB/s, FP8 1.23 PFLOP/s."""
    spec = {
        "name": "lpu-500mb",
        "display_name": "SRAM-only LPU (500 MB)",
        "vendor": "test",
        "kind": "lpu",
        "flops_per_s": {"fp8": 1230e12},
        "memory": [{"name": "SRAM", "capacity_bytes": 500e6, "bandwidth_bytes_per_s": 150e12}],
        "sram_only": True,
        "scale_up_domain_chips": 256,
        "scale_up_bandwidth_bytes_per_s": 1250e9,
        "scale_up_latency_s": 1e-6,
        "scale_out_bandwidth_bytes_per_s": 50e9,
        "power_w": 400.0,
        "usd_per_hour": 1.0,
        "compute_efficiency": 0.8,
        "memory_efficiency": 0.9,
        "step_overhead_s": 50e-6,
    }
    spec.update(overrides)
    return make_chip(**spec)


def gb200(**overrides: Any) -> ChipSpec:
    """B200 in a GB200 NVL72: 2.5 / 5 / 10 PFLOP/s, 186 GB at 8 TB/s, 72-GPU NVLink domain."""
    spec = {
        "name": "gb200",
        "display_name": "NVIDIA GB200 (per GPU)",
        "vendor": "NVIDIA",
        "kind": "gpu",
        "flops_per_s": {"bf16": 2500e12, "fp8": 5000e12, "fp4": 10000e12},
        "memory": [{"name": "HBM3e", "capacity_bytes": 186e9, "bandwidth_bytes_per_s": 8e12}],
        "scale_up_domain_chips": 72,
        "scale_up_bandwidth_bytes_per_s": 900e9,
        "scale_up_latency_s": 2e-6,
        "scale_out_bandwidth_bytes_per_s": 50e9,
        "power_w": 1200.0,
        "usd_per_hour": 4.54,
        "compute_efficiency": 0.7,
        "memory_efficiency": 0.8,
        "step_overhead_s": 2e-3,
    }
    spec.update(overrides)
    return make_chip(**spec)


def _model(**fields: Any) -> ModelSpec:
    fields.setdefault("sources", {"architecture": "example record (config.json)"})
    return ModelSpec.model_validate(fields)


def llama_70b() -> ModelSpec:
    """Llama-3.1-70B: 80 layers, d 8192, 64 heads / 8 KV heads of 128, FFN 28672."""
    return _model(
        name="llama-3.1-70b",
        display_name="Llama-3.1-70B",
        layers=80,
        hidden_size=8192,
        vocab_size=128256,
        attention={"kind": "gqa", "heads": 64, "kv_heads": 8, "head_dim": 128},
        ffn_intermediate_size=28672,
        published_total_params=70.6e9,
    )


def llama_8b() -> ModelSpec:
    """Llama-3.1-8B: 32 layers, d 4096, 32 heads / 8 KV heads of 128, FFN 14336."""
    return _model(
        name="llama-3.1-8b",
        display_name="Llama-3.1-8B",
        layers=32,
        hidden_size=4096,
        vocab_size=128256,
        attention={"kind": "gqa", "heads": 32, "kv_heads": 8, "head_dim": 128},
        ffn_intermediate_size=14336,
        published_total_params=8.03e9,
    )


def deepseek_v3() -> ModelSpec:
    """DeepSeek-V3: 61 layers (3 dense), MLA, 256 routed experts (8 active) + 1 shared."""
    return _model(
        name="deepseek-v3",
        display_name="DeepSeek-V3",
        layers=61,
        dense_layers=3,
        hidden_size=7168,
        vocab_size=129280,
        attention={
            "kind": "mla",
            "heads": 128,
            "kv_heads": 128,
            "head_dim": 128,
            "q_lora_rank": 1536,
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
            "v_head_dim": 128,
        },
        ffn_intermediate_size=18432,
        moe={"experts": 256, "active_experts": 8, "shared_experts": 1, "expert_intermediate_size": 2048},
        published_total_params=671e9,
    )


def swa_model() -> ModelSpec:
    """A small hybrid model: 8 layers, 4 of them sliding-window (1024 tokens)."""
    return _model(
        name="swa-toy",
        display_name="Sliding-window toy",
        layers=8,
        hidden_size=1024,
        vocab_size=32000,
        attention={
            "kind": "gqa",
            "heads": 8,
            "kv_heads": 2,
            "head_dim": 128,
            "sliding_window_tokens": 1024,
            "sliding_window_layers": 4,
        },
        ffn_intermediate_size=4096,
    )


def all_chips() -> dict[str, ChipSpec]:
    """The example chips by name."""
    return {c.name: c for c in (h100(), bertha(), lpu_500mb(), gb200())}


def all_models() -> dict[str, ModelSpec]:
    """The example models by name."""
    return {m.name: m for m in (llama_70b(), llama_8b(), deepseek_v3(), swa_model())}
