"""Per-component precision from a checkpoint's quantisation config: the bytes each format stores per value, block
scales included, checked by hand, and the tensor rate each runs at per chip."""

import json
from pathlib import Path

import pytest

from costmodels.arithmetic import stored_weight_bytes
from costmodels.checkpoint import checkpoint_precision, model_figures
from costmodels.hf_config import HFConfigError, config_notes, model_from_hf_config
from topology.chips import BYTES_PER_VALUE, load_chip_catalog

CONFIGS = Path(__file__).resolve().parent.parent / "costmodels" / "catalog" / "hf_configs"


def _config(stem):
    return json.loads((CONFIGS / f"{stem}.json").read_text())


def test_bytes_per_value_count_the_block_scales():
    # NVFP4: 4-bit E2M1 values with one 1-byte E4M3 scale per 16; MXFP4: one 1-byte E8M0 scale per 32.
    assert BYTES_PER_VALUE["fp4"] == 4 / 8 + 1 / 16 == 0.5625
    assert BYTES_PER_VALUE["mxfp4"] == 4 / 8 + 1 / 32 == 0.53125
    assert (BYTES_PER_VALUE["fp8"], BYTES_PER_VALUE["bf16"]) == (1.0, 2.0)


def test_mxfp4_experts_with_bf16_attention_by_hand():
    cfg = _config("gpt-oss-120b")
    prec = checkpoint_precision(cfg)
    assert prec == {"weights": "mxfp4", "attention": "bf16"}   # modules_to_not_convert: self_attn, embed, lm_head
    m = model_from_hf_config(cfg, name="gpt-oss-120b", source="t")
    attention = 36 * (2 * 2880 * 64 * 64 + 2 * 2880 * 8 * 64)           # q, o and k, v of 36 layers
    embeddings = 2 * 201_088 * 2880
    experts = 36 * (128 * 3 * 2880 * 2880 + 2880 * 128)                  # 128 SwiGLU experts and the router
    expected = (attention + embeddings) * 2 + experts * (0.5 + 1 / 32)
    f = model_figures(m, prec)
    assert f["weight_bytes"] == expected == 65_148_687_360
    assert f["bytes_per_value"] == {"weights": 0.53125, "attention": 2.0}
    # The published checkpoint is ~60.8 GiB (catalogue gpt-oss-120b, moe source); NVFP4 bytes would be 6 % more.
    assert expected / 2**30 == pytest.approx(60.8, rel=0.01)
    assert stored_weight_bytes(m, "full", "fp4", "bf16") - expected == pytest.approx(experts / 32)


def test_nvfp4_modelopt_checkpoint_by_hand():
    m = model_from_hf_config(_config("qwen3-30b-a3b"), name="q", source="t")
    quant = {"producer": {"name": "modelopt"}, "quantization": {
        "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
        "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}}
    prec = checkpoint_precision(_config("qwen3-30b-a3b"), quant)
    assert prec == {"weights": "fp4", "attention": "bf16", "kv": "fp8"}
    attention = 48 * (2 * 2048 * 32 * 128 + 2 * 2048 * 4 * 128)
    embeddings = 2 * 151_936 * 2048
    experts = 48 * (128 * 3 * 2048 * 768 + 2048 * 128)
    assert model_figures(m, prec)["weight_bytes"] == (attention + embeddings) * 2 + experts * (0.5 + 1 / 16)
    assert model_figures(m, prec)["kv_bytes_per_token"] == 48 * 2 * 4 * 128 * 1


def test_fp8_block_checkpoint_leaves_out_only_its_block_scales():
    cfg = _config("minimax-m2")
    m = model_from_hf_config(cfg, name="m", source="t")
    prec = checkpoint_precision(cfg)
    assert prec == {"weights": "fp8"}
    f = model_figures(m, prec)
    assert f["weight_bytes"] == m.total_params * 1.0
    # One FP32 scale per 128 x 128 block: 4 B per 16,384 weights, 0.024 %, said in the notes.
    with_scales = m.total_params * (1 + 4 / (128 * 128))
    assert f["weight_bytes"] == pytest.approx(with_scales, rel=2.5e-4)
    assert any("+0.024 %" in n for n in config_notes(cfg))
    assert checkpoint_precision(_config("qwen3-30b-a3b-fp8")) == {"weights": "fp8"}   # norms, gates unconverted


@pytest.mark.parametrize("q,expected", [
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "float", "group_size": 16}}},
      "kv_cache_scheme": {"num_bits": 8, "type": "float"}}, {"weights": "fp4", "kv": "fp8"}),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "float"}}}, "ignore": ["lm_head", "re:.*self_attn.*"]},
     {"weights": "fp8", "attention": "bf16"}),
    ({"quant_method": "modelopt", "quant_algo": "MXFP4"}, {"weights": "mxfp4"}),
])
def test_other_quantisation_configs(q, expected):
    assert checkpoint_precision({"quantization_config": q}) == expected


@pytest.mark.parametrize("q,key", [
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "int", "group_size": 128}}}}, "quantization_config.config_groups"),
    ({"quant_method": "awq"}, "quantization_config.quant_method"),
    ({"quant_method": "modelopt", "quant_algo": "W4A16_AWQ"}, "quantization_config.quant_algo"),
])
def test_an_unpriced_quantisation_is_refused_by_key(q, key):
    with pytest.raises(HFConfigError) as e:
        checkpoint_precision({"quantization_config": q})
    assert e.value.key == key


def test_the_rate_each_format_runs_at_per_chip():
    cat = load_chip_catalog()
    b200, h200, gb300 = cat["b200"], cat["h200"], cat["gb300"]
    # NVFP4 at the FP4 rate where the chip has one, else the next wider (unchanged).
    assert (b200.flops("fp4"), h200.flops("fp4")) == (b200.flops_per_s["fp4"], h200.flops_per_s["fp8"])
    # MXFP4 experts: MXFP8 activations on block-scaled FP4-generation tensor cores (the FP8 rate), BF16
    # activations with the weights dequantised on Hopper (the BF16 rate) -- TensorRT-LLM's gpt-oss matrix.
    assert b200.flops("mxfp4") == b200.flops_per_s["fp8"] and gb300.flops("mxfp4") == gb300.flops_per_s["fp8"]
    assert h200.flops("mxfp4") == h200.flops_per_s["bf16"]
    assert all(c.runs("mxfp4") for c in (b200, h200, gb300))


@pytest.mark.parametrize(("chip", "noted"), [("h200", True), ("b200", False)])
def test_a_plan_says_when_its_fp4_weights_run_simulated(chip, noted):
    """gpt-oss's MXFP4 experts on H200 (no FP4 units) run a simulated kernel the fit never measured: the plan
    says so and at which rate it priced them; on B200 (FP4 units) it does not."""
    import placement
    from placement.core.instance.loading import parse_instance

    doc = {"name": "gpt-oss", "model": "gpt-oss-120b", "precision": {"weights": "mxfp4", "kv": "bf16"},
           "modes": ["aggregated"],
           "workload": {"classes": [{"name": "c", "rate_rps": 5, "prompt_tokens": 1000, "output_tokens": 1000,
                                     "ttft_ms": 60000, "tpot_ms": 100}]},
           "hardware": {"domains": [{"name": "g", "chip": chip, "chips_per_domain": 8, "count": 2}]}}
    plan = placement.solve(parse_instance(doc), backend="highs")
    assert plan.status == "optimal" and plan.verified
    notes = [n for n in plan.notes if n.startswith(f"mxfp4 weights on {chip} (no FP4 units)")]
    assert len(notes) == int(noted), plan.notes
    if noted:
        assert "the chip's bf16 rate" in notes[0]
