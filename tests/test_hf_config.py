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
from costmodels.hf_config import (
    HFConfigError,
    checkpoint_precision,
    model_from_hf_config,
    read_hf_config,
)
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
    assert checkpoint_precision(_config("gpt-oss-120b")) == {"weights": "fp4",
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


@pytest.mark.parametrize("cfg,key", [
    ({"model_type": "bert"}, "model_type"),
    ({"model_type": "llama", "hidden_size": 64}, "num_hidden_layers"),
    ({"model_type": "llama", "num_hidden_layers": "32", "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 10, "intermediate_size": 8}, "num_hidden_layers"),
    ({"model_type": "nemotron_h", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 10, "intermediate_size": 8, "hybrid_override_pattern": "MX"}, "hybrid_override_pattern"),
    ({"model_type": "gemma3"}, "text_config"),
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
        assert m.calibration == "uncalibrated", name     # no serving measurement of these fitted the chips


def test_attention_kinds_table_is_what_its_script_writes():
    """benchmarks/ATTENTION_KINDS.md is regenerated from the cost model; a stale table fails here."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "attention_kinds.py"), "--check"],
                          check=False, capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
