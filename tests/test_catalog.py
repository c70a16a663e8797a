"""Checks on the shipped chip and model catalogues against published figures.

Expected numbers are copied here with their sources; nothing reads the shared
reference notes at test time.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from costmodels.efficiency import sequence_overhead_s
from costmodels.models import load_model_catalog
from topology.chips import load_chip_catalog

CHIP_NAMES = {
    "h100", "h200", "b200", "b300", "gb200", "gb300", "rubin", "lp30", "groq-lpu-v1",
    "trainium2", "trainium3", "wse3", "bertha", "corsair", "mi300x", "mi355x",
    "a10g", "a100-80gb", "l4",
}
MODEL_NAMES = {
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b",
    "llama-2-7b", "llama-2-70b", "deepseek-v3", "deepseek-v3-mtp",
    "gpt-oss-120b", "gpt-oss-20b", "qwen3-235b-a22b", "qwen3-32b", "kimi-k2",
    "eagle3-llama-3.1-8b", "eagle3-llama-3.3-70b",
    "deepseek-v3.2", "qwen3-30b-a3b", "qwen3-next-80b-a3b", "nemotron-h-56b", "llama-4-scout", "mixtral-8x7b",
    "gemma-3-27b", "glm-5", "minimax-m2", "llama-4-maverick", "glm-4.5",
}

#: Numeric ChipSpec fields; each needs a source (scale_up_latency_s included,
#: which the schema validator does not enforce).
NUMERIC_CHIP_FIELDS = (
    "flops_per_s", "memory", "scale_up_domain_chips", "scale_up_bandwidth_bytes_per_s",
    "scale_up_latency_s", "scale_out_bandwidth_bytes_per_s", "power_w", "usd_per_hour",
    "compute_efficiency", "memory_efficiency", "step_overhead_s",
)


@pytest.fixture(scope="module")
def chips():
    return load_chip_catalog()


@pytest.fixture(scope="module")
def models():
    return load_model_catalog()


# ---- catalogue integrity ------------------------------------------------------
def test_chip_names_are_exactly_the_listed_ids(chips):
    assert set(chips) == CHIP_NAMES


def test_model_names_are_exactly_the_listed_ids(models):
    assert set(models) == MODEL_NAMES


@pytest.mark.parametrize("name", sorted(CHIP_NAMES))
def test_every_numeric_chip_field_has_a_source(chips, name):
    chip = chips[name]
    missing = [f for f in NUMERIC_CHIP_FIELDS if not chip.sources.get(f, "").strip()]
    assert not missing, f"{name}: no source for {missing}"


@pytest.mark.parametrize("name", sorted(CHIP_NAMES))
def test_sources_that_say_estimate_are_listed_as_estimates(chips, name):
    chip = chips[name]
    said = {f for f, s in chip.sources.items() if s.lower().startswith("estimate")}
    assert said <= set(chip.estimates), f"{name}: not flagged {sorted(said - set(chip.estimates))}"


@pytest.mark.parametrize("name", sorted(MODEL_NAMES))
def test_every_model_has_an_architecture_source(models, name):
    assert models[name].sources.get("architecture", "").strip()


# ---- chips: seed and README figures ---------------------------------------------
def test_h100_bf16_ridge_is_295(chips):
    # Seed 000: ~1,000 TFLOP/s / 3.35 TB/s => ridge ~295-300 FLOP/B (989.4e12 / 3.35e12 = 295.3).
    assert chips["h100"].ridge_flop_per_byte("bf16") == pytest.approx(295, rel=0.01)


def test_h100_kernel_reference_ridge_matches_measurement(chips):
    # README (Vidur profiles): effective H100 kernel-level ridge ~240 FLOP/B.
    from costmodels.calibration import KERNEL_REFERENCE as k

    h = chips["h100"]
    eff = h.flops("bf16") * k.compute_efficiency / (h.memory_bandwidth_bytes_per_s * k.memory_efficiency)
    assert eff == pytest.approx(240, rel=0.03)


def _fits():
    import json

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "calibration_results.json"
    return {f["chip"]: f["fitted"] for f in json.loads(path.read_text())["fits"]}


def test_calibrated_chips_carry_their_fit(chips):
    # benchmarks/calibration_results.json (python benchmarks/calibrate.py): the catalogue holds the
    # fitted factors of every calibrated chip, to three significant digits.
    fits = _fits()
    calibrated = [n for n, c in chips.items() if c.calibration == "calibrated"]
    assert {"h100", "h200", "b200", "wse3", "groq-lpu-v1", "mi300x"} <= set(calibrated)
    for name in sorted(calibrated):
        for field, value in fits[name].items():
            # a factor the chip's data cannot see is left to the code's prior, which the fit then used
            got = sequence_overhead_s(chips[name]) if field == "sequence_overhead_s" else getattr(chips[name], field)
            assert got == pytest.approx(value, rel=5e-3, abs=1e-12), (name, field)
        assert "calibration" in chips[name].sources and "step_overhead_s" not in chips[name].estimates


def test_lp30_ridge_is_single_digit(chips):
    # Seed 000: LPX ridge ~8 FLOP/B (1.23 PF FP8 / 150 TB/s SRAM).
    assert chips["lp30"].ridge_flop_per_byte("fp8") < 10


def test_bertha_effective_bandwidth(chips):
    # Seed 000: 546 GB/s LPDDR5X at >90 % utilisation.
    b = chips["bertha"]
    assert math.isclose(b.memory_bandwidth_bytes_per_s * b.memory_efficiency, 546e9 * 0.9, rel_tol=1e-9)
    assert b.memory_bytes == 192e9 and b.kind == "lpddr"


# Bidirectional NVLink / Infinity Fabric / C2C totals per chip from the vendor
# figures (hardware_and_models.md): the catalogue must hold half of each.
BIDIR_SCALE_UP = {
    "h100": 900e9, "h200": 900e9, "b200": 1.8e12, "b300": 1.8e12, "gb200": 1.8e12, "gb300": 1.8e12,
    "rubin": 3.6e12, "lp30": 2.5e12, "a100-80gb": 600e9, "mi300x": 896e9, "mi355x": 1075.2e9,
}


@pytest.mark.parametrize("name,bidir", sorted(BIDIR_SCALE_UP.items()))
def test_scale_up_bandwidth_is_per_direction(chips, name, bidir):
    assert chips[name].scale_up_bandwidth_bytes_per_s == pytest.approx(bidir / 2, rel=1e-6)


# README: scale-up : scale-out per GPU per direction ~9:1 for H100/H200 (400G),
# GB300 (800G), Vera Rubin (1.6T); 18:1 for B200/GB200 with 400G; ~11:1 MI355X;
# 26-51:1 for Trainium UltraServers (200 Gb/s EFA per chip).
@pytest.mark.parametrize(
    "name,lo,hi",
    [("h100", 9, 9), ("h200", 9, 9), ("b300", 9, 9), ("gb300", 9, 9), ("rubin", 9, 9), ("b200", 18, 18),
     ("gb200", 18, 18), ("mi355x", 10.5, 11), ("trainium2", 25, 52), ("trainium3", 25, 52)],
)
def test_scale_up_to_scale_out_ratio(chips, name, lo, hi):
    c = chips[name]
    ratio = c.scale_up_bandwidth_bytes_per_s / c.scale_out_bandwidth_bytes_per_s
    assert lo * 0.99 <= ratio <= hi * 1.01


def test_domains(chips):
    assert chips["rubin"].scale_up_domain_chips == 72
    assert chips["gb200"].scale_up_domain_chips == 72
    assert chips["lp30"].scale_up_domain_chips == 256
    assert chips["wse3"].scale_up_domain_chips == 1
    assert chips["h100"].scale_up_domain_chips == 8


@pytest.mark.parametrize("name", ["lp30", "groq-lpu-v1", "wse3"])
def test_sram_only_chips_work_from_sram(chips, name):
    c = chips[name]
    assert c.sram_only and "SRAM" in c.memory[0].name


def test_lp30_sram_is_the_vendor_500_mb(chips):
    # NVIDIA 500 MB (LPX rack 128 GB / 256) vs Tom's Hardware 512 MB: the catalogue keeps 500 MB.
    assert chips["lp30"].memory_bytes == 500e6


def test_sparse_vendor_figures_are_halved(chips):
    # L4 datasheet: 242 BF16 / 485 FP8 TFLOP/s "with sparsity".
    assert chips["l4"].flops_per_s["bf16"] == pytest.approx(242e12 / 2, rel=0.01)
    assert chips["l4"].flops_per_s["fp8"] == pytest.approx(485e12 / 2, rel=0.01)
    # WSE-3: 125 PF "peak AI" read as sparse.
    assert chips["wse3"].flops_per_s["bf16"] == pytest.approx(125e15 / 2)


# InferenceX TCO basis, $/GPU-hour (README constants).
INFERENCEX_TCO = {"h100": 1.30, "h200": 1.41, "b200": 1.95, "gb200": 2.21, "mi300x": 1.12, "mi355x": 1.48}


def test_one_price_basis(chips):
    for name, chip in chips.items():
        assert "TCO" in chip.price_basis, name
        if name in INFERENCEX_TCO:
            assert chip.usd_per_hour == pytest.approx(INFERENCEX_TCO[name]), name
            assert "InferenceX" in chip.price_basis, name
        else:
            assert "usd_per_hour" in chip.estimates, name


# ---- models: KV cache ---------------------------------------------------------------
def test_llama_3_1_70b_kv(models):
    m = models["llama-3.1-70b"]
    assert m.kv_bytes_per_token("bf16") == 327_680
    # Seed 000: 128K context => ~40 GB per user (exactly 40 GiB = 42.9e9 B).
    assert m.kv_bytes("bf16", 131_072) == pytest.approx(42.9e9, rel=0.01)
    assert m.kv_bytes("bf16", 131_072) == 40 * 2**30


def test_deepseek_v3_kv(models):
    assert models["deepseek-v3"].kv_bytes_per_token("bf16") == 70_272


# kv_bytes_per_token_bf16 as published in hardware_and_models.yaml (for sliding-window
# models: the full-attention layers' share, plus a fixed per-sequence amount).
PUBLISHED_KV_BF16 = {
    "llama-3.1-8b": 131_072,     # 2*32*8*128*2
    "llama-3.1-70b": 327_680,    # 2*80*8*128*2
    "llama-3.1-405b": 516_096,   # 2*126*8*128*2
    "llama-3.2-1b": 32_768,      # 2*16*8*64*2
    "deepseek-v3": 70_272,       # 61*(512+64)*2
    "deepseek-v3-mtp": 1_152,    # kv_note: "MTP layer adds 1152 B"
    "qwen3-235b-a22b": 192_512,  # 2*94*4*128*2
    "qwen3-32b": 262_144,        # 2*64*8*128*2
    "kimi-k2": 70_272,           # 61*576*2
    "eagle3-llama-3.1-8b": 4_096,
    "eagle3-llama-3.3-70b": 4_096,
}
# gpt-oss: (bytes/token over full layers, fixed bytes per sequence, bytes/token if all full)
PUBLISHED_SWA_KV_BF16 = {
    "gpt-oss-120b": (36_864, 4_718_592, 73_728),
    "gpt-oss-20b": (24_576, 3_145_728, 49_152),
}


@pytest.mark.parametrize("name,kv", sorted(PUBLISHED_KV_BF16.items()))
def test_kv_matches_published(models, name, kv):
    assert models[name].kv_bytes_per_token("bf16") == kv


@pytest.mark.parametrize("name,published", sorted(PUBLISHED_SWA_KV_BF16.items()))
def test_sliding_window_kv_matches_published(models, name, published):
    per_token, fixed, all_full = published
    m = models[name]
    assert m.kv_bytes_per_token("bf16") == all_full  # no context given: window ignored
    for c in (131_072, 1_000_000):
        assert m.kv_bytes("bf16", c) == pytest.approx(c * per_token + fixed, rel=1e-12)


def test_gpt_oss_window_cuts_kv_at_128k(models):
    m = models["gpt-oss-120b"]
    at_128k = m.kv_bytes_per_token("bf16", 131_072)
    assert at_128k <= 0.51 * m.kv_bytes_per_token("bf16")


def test_kv_tp_duplication(models):
    assert models["llama-3.1-70b"].kv_tp_duplication(16) == 2
    assert models["llama-3.1-70b"].kv_tp_duplication(8) == 1
    assert models["deepseek-v3"].kv_tp_duplication(8) == 8


# ---- models: parameters ---------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(MODEL_NAMES))
def test_derived_total_params_match_published(models, name):
    m = models[name]
    if m.published_total_params is None:
        pytest.skip("no published total kept (see the record's sources)")
    assert m.total_params == pytest.approx(m.published_total_params, rel=0.03)


def test_models_without_published_total_are_the_known_ones(models):
    assert {n for n, m in models.items() if m.published_total_params is None} == {
        "deepseek-v3-mtp", "eagle3-llama-3.1-8b", "eagle3-llama-3.3-70b"}


def test_active_params(models):
    # DeepSeek: 37B activated.
    assert models["deepseek-v3"].active_params == pytest.approx(37e9, rel=0.05)
    # OpenAI counts active parameters without the input embedding table: 5.13B / 3.61B.
    assert models["gpt-oss-120b"].matmul_params_active == pytest.approx(5.1e9, rel=0.03)
    assert models["gpt-oss-20b"].matmul_params_active == pytest.approx(3.61e9, rel=0.03)
    # Qwen3-235B-A22B: 22B active. Kimi K2: 32B active.
    assert models["qwen3-235b-a22b"].active_params == pytest.approx(22e9, rel=0.05)
    assert models["kimi-k2"].active_params == pytest.approx(32e9, rel=0.05)


def test_llama_3_1_70b_weights_bf16(models):
    # Seed 000: Llama-3.1-70B weights in BF16 ~141 GB.
    assert models["llama-3.1-70b"].weight_bytes("bf16") == pytest.approx(141e9, rel=0.01)


def test_dense_attention_ffn_split(models):
    # Seed 000: attention ~20 % of a dense model's parameters, FFN ~80 %.
    for name in ("llama-3.1-70b", "llama-3.1-8b", "llama-3.1-405b", "qwen3-32b"):
        m = models[name]
        share = m.attention_params / (m.attention_params + m.ffn_params)
        assert 0.10 <= share <= 0.30, (name, share)


def test_mtp_module_has_the_target_shapes(models):
    target, mtp = models["deepseek-v3"], models["deepseek-v3-mtp"]
    assert mtp.layers == 1 and mtp.n_moe_layers == 1 and mtp.tie_word_embeddings
    assert mtp.attention == target.attention and mtp.moe == target.moe
    assert mtp.attention_params_per_layer == target.attention_params_per_layer
    # DeepSeek: the MTP module is 14B (685B - 671B) counting its own embedding and
    # head copies and eh_proj (2d -> d), which the record does not model.
    d, v = mtp.hidden_size, mtp.vocab_size
    assert mtp.total_params + v * d + 2 * d * d == pytest.approx(14e9, rel=0.05)


@pytest.mark.parametrize(
    "name,expected",
    # hardware_and_models.md: ~425M (~810 MiB BF16, reported ~811 MB checkpoint) and ~1.40B.
    [("eagle3-llama-3.1-8b", 0.425e9), ("eagle3-llama-3.3-70b", 1.40e9)],
)
def test_eagle3_heads_with_unmodeled_parts(models, name, expected):
    m = models[name]
    d, a = m.hidden_size, m.attention
    extra_qkv = d * (a.heads + 2 * a.kv_heads) * a.head_dim  # q/k/v read 2*d, not d
    fc = 3 * d * d                                            # fuse 3 target layers
    assert m.total_params + extra_qkv + fc == pytest.approx(expected, rel=0.015)


def test_calibrated_models_are_exactly_those_the_chip_fits_used():
    import json

    results = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "calibration_results.json").read_text())
    fitted = {m for f in results["fits"] for m in f["models"]}
    flagged = {n for n, m in load_model_catalog().items() if m.calibration == "calibrated"}
    assert flagged == fitted
