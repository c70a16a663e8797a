"""Hugging Face config.json → model record: real configs against their publishers' totals, hand-checked KV and
state bytes, the instance and CLI paths, and refusals that name the file and key."""

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodels.arithmetic import (
    attention_core_flops,
    kv_bytes_per_sequence,
    kv_bytes_read_per_sequence,
)
from costmodels.checkpoint import checkpoint_precision
from costmodels.hf_config import HFConfigError, config_notes, model_from_hf_config, read_hf_config
from costmodels.models import load_model_catalog
from placement.cli.app import app

CONFIGS = Path(__file__).resolve().parent.parent / "costmodels" / "catalog" / "hf_configs"

#: Published totals (parameters), as the publishers state them (sources: costmodels/catalog/hf_configs/SOURCES_*.md).
PUBLISHED_TOTAL = {
    "deepseek-v3.2": 671e9,        # DeepSeek-V3 README: 671B total (the checkpoint's 685B counts the MTP layer)
    "qwen3-30b-a3b": 30.5e9,       # Qwen card: 30.5B in total, 3.3B activated
    "qwen3-next-80b-a3b": 80e9,    # Qwen card: 80B in total, 3B activated
    "nemotron-h-56b": 56e9,        # NVIDIA card: Nemotron-H-56B
    "llama-4-scout": 109e9,        # Meta model card: 17B (activated) 109B (total), vision tower included
    "mixtral-8x7b": 46.7e9,        # Mistral AI: 46.7B total, 12.9B per token
    "gpt-oss-120b": 116.83e9,      # OpenAI model card: 116.83B (README: "117B parameters with 5.1B active")
    "qwen3-30b-a3b-fp8": 30.5e9,   # Qwen card: the FP8 checkpoint of Qwen3-30B-A3B
    # Gemma 3 technical report (arXiv 2503.19786) Table 1, 27B: vision encoder 417M + embedding 1,416M +
    # non-embedding 25,600M = 27.433B (the family's "27B"; the SigLIP tower is counted, as in the checkpoint).
    "gemma-3-27b": 27.433e9,
    "glm-5": 744e9,                # zai-org/GLM-5 README: 744B parameters (40B active); MTP layer not counted
    "minimax-m2": 230e9,           # MiniMax-AI/MiniMax-M2 README: 230 billion total, 10 billion active
}


def _config(stem):
    return json.loads((CONFIGS / f"{stem}.json").read_text())


@pytest.mark.parametrize("stem", sorted(PUBLISHED_TOTAL))
def test_total_parameters_within_one_percent_of_the_published_figure(stem):
    spec, _ = read_hf_config(CONFIGS / f"{stem}.json", name=stem)
    assert spec.total_params == pytest.approx(PUBLISHED_TOTAL[stem], rel=0.01)


def test_every_shipped_config_has_a_published_total():
    assert {p.stem for p in CONFIGS.glob("*.json")} == set(PUBLISHED_TOTAL)


def test_quantised_checkpoints_give_their_precisions():
    assert checkpoint_precision(_config("qwen3-30b-a3b-fp8")) == {"weights": "fp8"}
    # gpt-oss: MXFP4 experts, attention among modules_to_not_convert (BF16), as the catalogue record says.
    gpt = load_model_catalog()["gpt-oss-120b"]
    assert checkpoint_precision(_config("gpt-oss-120b")) == {"weights": "mxfp4",
                                                             "attention": gpt.fp4_attention_precision}


def test_qwen3_30b_a3b_by_hand():
    m = model_from_hf_config(_config("qwen3-30b-a3b"), name="q", source="t")
    # 48 layers x 2 (K, V) x 4 KV heads x 128 x 2 B.
    assert m.kv_bytes_per_token("bf16") == 48 * 2 * 4 * 128 * 2 == 98_304
    assert (m.moe.experts, m.moe.active_experts, m.n_moe_layers) == (128, 8, 48)
    assert m.active_params == pytest.approx(3.3e9, rel=0.03)   # Qwen card: 3.3B activated


def test_qwen3_next_linear_layers_hold_a_constant_state():
    m = model_from_hf_config(_config("qwen3-next-80b-a3b"), name="q", source="t")
    assert (m.attention_layers, m.linear_mixer.layers) == (12, 36)  # full_attention_interval 4
    # Only the 12 full-attention layers cache K and V: 12 x 2 x 2 KV heads x 256 x 2 B.
    assert m.kv_bytes_per_token("bf16") == 12 * 2 * 2 * 256 * 2 == 24_576
    # Per DeltaNet layer: 32 value heads x 128 x 128 state + (4 - 1) x (2 x 16 x 128 + 32 x 128) conv inputs.
    state = 36 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2
    assert m.state_bytes_per_sequence("bf16") == state == 39_518_208
    assert m.state_bytes_per_sequence("fp8") == state      # the state is never held below BF16
    one, long = (float(kv_bytes_per_sequence(m, "bf16", c)) for c in (1, 100_000))
    assert long - one == pytest.approx(99_999 * 24_576)     # context grows only the attention layers' KV


def test_nemotron_h_pattern_is_split_into_mixers_and_mlps():
    cfg = _config("nemotron-h-56b")
    m = model_from_hf_config(cfg, name="n", source="t")
    pattern = cfg["hybrid_override_pattern"]
    assert (pattern.count("M"), pattern.count("*"), pattern.count("-")) == (54, 10, 54)
    assert (m.layers, m.attention_layers, m.ffn_layer_count, m.ffn_gated) == (64, 10, 54, False)
    assert m.kv_bytes_per_token("bf16") == 10 * 2 * 8 * 128 * 2 == 40_960
    # Mamba-2: 256 heads x 64 head dim x 256 state + 3 x (2 x 8 groups x 256 + 256 x 64) conv inputs.
    assert m.state_bytes_per_sequence("bf16") == 54 * (256 * 64 * 256 + 3 * (2 * 8 * 256 + 256 * 64)) * 2
    assert m.active_params == m.total_params                 # dense


def test_deepseek_v32_reads_its_top_k_and_every_indexer_key():
    m = model_from_hf_config(_config("deepseek-v3.2"), name="d", source="t")
    v3 = load_model_catalog()["deepseek-v3"]
    ix = m.attention.indexer
    assert (ix.heads, ix.head_dim, ix.topk_tokens) == (64, 128, 2048)
    # Held per token: latent 512 + RoPE key 64 + indexer key 128, 61 layers, 1 B at FP8.
    assert m.kv_bytes_per_token("fp8") == 61 * (512 + 64 + 128) == 42_944
    c = 131_072
    read = float(kv_bytes_read_per_sequence(m, "fp8", c))
    assert read == 61 * (576 * 2048 + 128 * c)               # top-2048 latents + every indexer key
    assert read < 0.25 * float(kv_bytes_read_per_sequence(v3, "fp8", c))
    assert float(kv_bytes_per_sequence(m, "fp8", c)) == 61 * 704 * c   # but every token is held
    # Attention FLOPs per decode token: the top-k pairs at MLA's absorbed width plus the indexer's c scores.
    flops = float(attention_core_flops(m, new_tokens=1, context=c, decode=True))
    assert flops == pytest.approx(61 * (2048 * 2 * 128 * (576 + 512) + c * 2 * 64 * 128))
    assert checkpoint_precision(_config("deepseek-v3.2")) == {"weights": "fp8"}


def test_the_gpt_oss_config_reads_back_as_the_hand_written_catalogue_record():
    gpt = load_model_catalog()["gpt-oss-120b"]
    m = model_from_hf_config(_config("gpt-oss-120b"), name="gpt-oss-120b", source="t")
    architecture = {"sources", "estimates", "display_name", "hf_ids", "published_total_params",
                    "fp4_attention_precision", "ffn_intermediate_size", "calibration"}  # FFN size unused: no dense layer
    assert m.model_dump(exclude=architecture) == gpt.model_dump(exclude=architecture)
    assert m.attention.sliding_window_layers == 18 and m.attention.sliding_window_tokens == 128


def test_llama4_scout_chunked_layers_and_vision_tower():
    m = model_from_hf_config(_config("llama-4-scout"), name="s", source="t")
    # Every 4th layer is global (NoPE); the other 36 attend within 8,192-token chunks.
    assert (m.attention.sliding_window_layers, m.attention.sliding_window_tokens) == (36, 8192)
    assert (m.moe.experts, m.moe.active_experts, m.moe.shared_experts, m.n_moe_layers) == (16, 1, 1, 48)
    # ViT: 34 layers x (4 x 1408² + 2 x 1408 x 5632), patches 3 x 14² x 1408, adapter, projection to 5120.
    vit = 34 * (4 * 1408**2 + 2 * 1408 * 5632) + 3 * 14 * 14 * 1408 + 4 * 1408 * 4096 + 4096 * 4096 + 4096 * 5120
    assert m.encoder_params == vit
    assert m.active_params == pytest.approx(17e9, rel=0.02)     # Meta: 17B activated


def test_gemma_3_27b_takes_the_transformers_defaults_its_config_leaves_out():
    m = model_from_hf_config(_config("gemma-3-27b"), name="g", source="t")
    # Gemma3TextConfig defaults: vocabulary 262,208, tied embeddings, sliding_window_pattern 6.
    assert (m.vocab_size, m.tie_word_embeddings) == (262_208, True)
    # 62 layers, every 6th global: layers 6, 12, ..., 60 are 10 global ones; 52 attend to 1,024 tokens.
    assert (m.attention.sliding_window_layers, m.attention.sliding_window_tokens, m.full_attention_layers) == \
        (52, 1024, 10)
    # Per layer: q and o 5376 x 32 x 128, k and v 5376 x 16 x 128; SwiGLU 3 x 5376 x 21504.
    per_layer = 2 * 5376 * 32 * 128 + 2 * 5376 * 16 * 128 + 3 * 5376 * 21504
    assert m.attention_params + m.ffn_params == 62 * per_layer == 25_598_361_600      # Table 1: 25,600M
    # SigLIP: 27 x (4 x 1152^2 + 2 x 1152 x 4304), 14x14 patches of 3 channels, projection 1152 -> 5376.
    assert m.encoder_params == 27 * (4 * 1152**2 + 2 * 1152 * 4304) + 3 * 14 * 14 * 1152 + 1152 * 5376 \
        == 417_940_992                                                                   # Table 1: 417M
    # KV per token and layer: 2 (K, V) x 16 KV heads x 128 x 2 B = 8,192 B; all 62 layers up to 1,024 tokens.
    assert m.kv_bytes_per_token("bf16") == 62 * 8192 == 507_904
    c = 131_072
    assert float(kv_bytes_per_sequence(m, "bf16", c)) == 8192 * (10 * c + 52 * 1024) == 11_173_625_856
    assert checkpoint_precision(_config("gemma-3-27b")) == {"weights": "bf16"}


def test_glm_5_reads_as_mla_with_an_indexer_on_every_layer():
    cfg = _config("glm-5")
    m = model_from_hf_config(cfg, name="g", source="t")
    a, ix = m.attention, m.attention.indexer
    assert (a.kind, a.heads, a.q_lora_rank, a.kv_lora_rank, a.head_dim, a.qk_rope_head_dim, a.v_head_dim) == \
        ("mla", 64, 2048, 512, 192, 64, 256)
    assert (ix.heads, ix.head_dim, ix.topk_tokens) == (32, 128, 2048)
    # q: 6144 x 2048 + 2048 x 64 x (192 + 64); kv: 6144 x (512 + 64) + 512 x 64 x (192 + 256); o: 64 x 256 x 6144;
    # indexer: 2048 x 32 x 128 (queries) + 6144 x 128 (key) + 6144 x 32 (head weights).
    assert m.attention_params_per_layer == (6144 * 2048 + 2048 * 64 * 256 + 6144 * 576 + 512 * 64 * 448
                                            + 64 * 256 * 6144 + 2048 * 32 * 128 + 6144 * 128 + 6144 * 32)
    assert (m.n_dense_layers, m.n_moe_layers, m.moe.experts, m.moe.active_experts, m.moe.shared_experts) == \
        (3, 75, 256, 8, 1)
    # Held per token at FP8: latent 512 + RoPE key 64 + indexer key 128, 78 layers.
    assert m.kv_bytes_per_token("fp8") == 78 * (512 + 64 + 128) == 54_912
    c = 131_072
    assert float(kv_bytes_read_per_sequence(m, "fp8", c)) == 78 * (576 * 2048 + 128 * c)
    assert m.active_params == pytest.approx(40e9, rel=0.05)   # README: 40B active (41.8B here, embeddings in)
    assert "1 multi-token-prediction layer(s) (num_nextn_predict_layers) not counted: a draft of their own" \
        in config_notes(cfg)


def test_minimax_m2_by_hand():
    cfg = _config("minimax-m2")
    m = model_from_hf_config(cfg, name="m", source="t")
    assert (m.attention.heads, m.attention.kv_heads, m.attention.head_dim) == (48, 8, 128)
    assert (m.moe.experts, m.moe.active_experts, m.moe.shared_experts, m.n_moe_layers, m.n_dense_layers) == \
        (256, 8, 0, 62, 0)
    attention = 2 * 3072 * 48 * 128 + 2 * 3072 * 8 * 128
    expert = 3 * 3072 * 1536
    embeddings = 2 * 200_064 * 3072
    assert m.total_params == 62 * (attention + 256 * expert + 3072 * 256) + embeddings == 228_688_920_576
    # README: 10 billion active; 9.80B here without the embeddings (11.03B with them).
    assert m.active_params - embeddings == 62 * (attention + 8 * expert + 3072 * 256) == pytest.approx(10e9, rel=0.03)
    assert m.kv_bytes_per_token("bf16") == 62 * 2 * 8 * 128 * 2 == 253_952
    assert m.kv_bytes_per_token("fp8") == 126_976
    assert checkpoint_precision(cfg) == {"weights": "fp8"}   # lm_head and gates unconverted: no attention
    notes = config_notes(cfg)
    assert "3 multi-token-prediction layer(s) (num_mtp_modules) not counted: a draft of their own" in notes
    assert any("FP8 block scales (one FP32 per 128 × 128 weights: +0.024 %" in n for n in notes)


@pytest.mark.parametrize("cfg,key", [
    ({"model_type": "bert"}, "model_type"),
    ({"model_type": "llama", "hidden_size": 64}, "num_hidden_layers"),
    ({"model_type": "llama", "num_hidden_layers": "32", "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 10, "intermediate_size": 8}, "num_hidden_layers"),
    ({"model_type": "nemotron_h", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 10, "intermediate_size": 8, "hybrid_override_pattern": "MX"}, "hybrid_override_pattern"),
    ({"model_type": "gemma3"}, "text_config"),
    ({**json.loads((CONFIGS / "minimax-m2.json").read_text()), "attn_type_list": [0] + [1] * 61}, "attn_type_list"),
    ({**json.loads((CONFIGS / "glm-5.json").read_text()), "indexer_types": ["full", "shared"] * 39}, "indexer_types"),
    ({**json.loads((CONFIGS / "glm-5.json").read_text()), "index_topk_freq": 4}, "index_topk_freq"),
])
def test_a_config_the_reader_cannot_use_names_the_key(cfg, key):
    with pytest.raises(HFConfigError) as e:
        model_from_hf_config(cfg, name="x", source="t")
    assert e.value.key == key


class _Done:
    def __init__(self, r):
        self.returncode, self.stdout, self.stderr = r.exit_code, r.stdout, r.output


def _cli(*args, cwd):
    import os

    here = os.getcwd()
    os.chdir(cwd)
    try:
        return _Done(CliRunner().invoke(app, list(args)))
    finally:
        os.chdir(here)


def test_init_from_a_config_writes_an_instance_that_validates_and_solves(tmp_path):
    # A Hugging Face snapshot folder: the record takes the folder's name (the config has no _name_or_path).
    (tmp_path / "Qwen3-30B-A3B").mkdir()
    (tmp_path / "Qwen3-30B-A3B" / "config.json").write_text((CONFIGS / "qwen3-30b-a3b.json").read_text())
    r = _cli("init", "--model-config", "Qwen3-30B-A3B/config.json", "--chips", "h200,b200", "--out", "out/inst.yaml",
             cwd=tmp_path)
    assert r.returncode == 2 and "folder out does not exist" in r.stderr   # nothing half-written
    (tmp_path / "out").mkdir()
    r = _cli("init", "--model-config", "Qwen3-30B-A3B/config.json", "--chips", "h200,b200", "--out", "out/inst.yaml",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "out" / "inst.yaml").read_text()
    assert "config: ../Qwen3-30B-A3B/config.json" in text
    r = _cli("solve", "out/inst.yaml", "--json", "plan.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["status"] == "optimal" and plan["provenance"]["model"] == "qwen3-30b-a3b"


def test_an_instance_naming_a_bad_config_exits_2_naming_the_file_and_key(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": 64}')
    (tmp_path / "i.yaml").write_text(
        "name: t\nmodel: {config: config.json}\nworkload:\n  classes: [{name: c, rate_rps: 1, prompt_tokens: 10, "
        "output_tokens: 10, ttft_ms: 1000, tpot_ms: 100}]\nhardware:\n  domains: [{name: h, chip: h100, count: 1}]\n")
    r = _cli("validate", "i.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert "config.json" in r.stderr and "num_hidden_layers" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "config.json").write_text("{not json")
    r = _cli("validate", "i.yaml", cwd=tmp_path)
    assert r.returncode == 2 and "not valid JSON" in r.stderr


def test_catalog_models_config_prints_every_derived_size(tmp_path):
    r = _cli("catalog", "models", "--config", str(CONFIGS / "qwen3-next-80b-a3b.json"), "--json", "-",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["layer_kinds"] == {"full_attention": 12, "gated_deltanet": 36}
    assert row["state_bytes_per_sequence"] == 39_518_208
    assert math.isclose(row["weight_bytes"], 2 * row["total_params"])


@pytest.mark.parametrize("stem", sorted(PUBLISHED_TOTAL))
def test_every_shipped_config_inits_validates_and_solves_on_h200_and_b200(tmp_path, stem):
    r = _cli("init", "--model-config", str(CONFIGS / f"{stem}.json"), "--chips", "h200,b200", "--out", "i.yaml",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _cli("validate", "i.yaml", cwd=tmp_path).returncode == 0
    r = _cli("solve", "i.yaml", "--json", "plan.json", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr           # solved and passed the independent verifier
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["status"] == "optimal" and plan["pools"]


def _catalogue_configs():
    out = {}
    for name, m in load_model_catalog().items():
        marker = "vendored as costmodels/catalog/hf_configs/"
        src = m.sources.get("architecture", "")
        if marker in src:
            out[name] = src.split(marker)[1].split(".json")[0]
    return out


def test_catalogue_records_from_configs_equal_their_reading():
    pairs = _catalogue_configs()
    assert len(pairs) >= 6
    skip = {"sources", "estimates", "display_name", "hf_ids", "published_total_params", "name", "calibration"}
    for name, stem in sorted(pairs.items()):
        m = load_model_catalog()[name]
        read = model_from_hf_config(_config(stem), name=name, source="t")
        assert read.model_dump(exclude=skip) == m.model_dump(exclude=skip), name
        assert m.total_params == pytest.approx(m.published_total_params, rel=0.01), name
        # a model is calibrated exactly when serving measurements of it fitted the chips (test_catalog.py checks
        # the catalogue flag against benchmarks/calibration_results.json)
        assert m.calibration in ("calibrated", "uncalibrated"), name


def test_attention_kinds_table_is_what_its_script_writes():
    """benchmarks/ATTENTION_KINDS.md is regenerated from the cost model; a stale table fails here."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "attention_kinds.py"), "--check"],
                          check=False, capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr


#: The issue's models in the catalogue: record, publisher's total (its source is the record's).
ISSUE_MODELS = {"gemma-3-27b": 27.433e9, "glm-5": 744e9, "minimax-m2": 230e9, "llama-4-maverick": 400e9,
                "glm-4.5": 355e9, "llama-3.1-70b": 70.55e9}


@pytest.mark.parametrize("name", sorted(ISSUE_MODELS))
def test_the_issue_models_are_catalogued_within_one_percent_of_their_published_totals(name):
    m = load_model_catalog()[name]
    assert m.published_total_params == ISSUE_MODELS[name]
    assert m.total_params == pytest.approx(m.published_total_params, rel=0.01)
    assert m.calibration == ("calibrated" if name in ("llama-3.1-70b", "glm-5") else "uncalibrated")


def test_llama_3_3_70b_is_served_by_the_llama_3_1_70b_record():
    from placement.core.instance.loading import model_aliases

    assert model_aliases()["meta-llama/llama-3.3-70b-instruct"] == "llama-3.1-70b"
    assert "llama3_3/MODEL_CARD.md" in load_model_catalog()["llama-3.1-70b"].sources["hf_ids"]
    # the short name an instance writes resolves too, and no catalogue name is shadowed by a repository name
    from placement.core.instance.loading import parse_instance

    doc = {"name": "x", "model": "Llama-3.3-70B", "workload": {"classes": [
        {"name": "c", "rate_rps": 1, "prompt_tokens": 100, "output_tokens": 10, "ttft_ms": 5000, "tpot_ms": 100}]},
        "hardware": {"domains": [{"name": "g", "chip": "h100", "chips_per_domain": 8, "count": 1}]}}
    from placement.core.instance.context import Context

    assert Context.of(parse_instance(doc)).model.name == "llama-3.1-70b"
    assert all(model_aliases()[n] == n for n in load_model_catalog())


def test_maverick_and_glm_4_5_kv_by_hand():
    cat = load_model_catalog()
    mav, glm = cat["llama-4-maverick"], cat["glm-4.5"]
    # Maverick: 2 x 8 KV heads x 128 x 2 B per layer; 36 chunked layers hold at most 8,192 tokens, 12 global.
    assert mav.kv_bytes_per_token("bf16") == 48 * 4096 == 196_608
    assert float(kv_bytes_per_sequence(mav, "bf16", 100_000)) == 4096 * (12 * 100_000 + 36 * 8192)
    assert (mav.n_moe_layers, mav.n_dense_layers, mav.moe.experts, mav.moe.shared_experts) == (24, 24, 128, 1)
    assert mav.active_params == pytest.approx(17e9, rel=0.02)           # model card: 17B activated
    # GLM-4.5: 92 full-attention layers x 2 x 8 x 128 x 2 B.
    assert glm.kv_bytes_per_token("bf16") == 92 * 2 * 8 * 128 * 2 == 376_832
    assert glm.active_params == pytest.approx(32e9, rel=0.06)           # README: 32B active (33.6B here)
