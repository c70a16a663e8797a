"""``placement measure import`` on real published result files (tests/data/measure/*/SOURCES.md), and clean
errors on bad or partial ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.measure.formats import detect_format
from placement.measure.importer import import_files, read_result_file

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "measure"
ROOT = Path(__file__).resolve().parents[1]


def _one(path: Path, **given):
    m = import_files([path], given)
    assert len(m.points) == len(m.sources) == 1 or m.sources[0].points == len(m.points)
    return m.points[0]


def test_vllm_bench_serve_result_closed_loop():
    raw = json.loads((DATA / "vllm/h100x8-qwen3-32b-tp8-dp1-c100-in1024-out128.json").read_text())
    p = _one(DATA / "vllm/h100x8-qwen3-32b-tp8-dp1-c100-in1024-out128.json", chip="h100", framework="vllm", tp=8)
    assert (p.chip, p.chips, p.tp, p.model, p.precision) == ("h100", 8, 8, "qwen3-32b", "bf16")
    assert p.concurrency == raw["max_concurrency"] == 100 and p.concurrency_basis == "stated"
    assert p.prompt_tokens == pytest.approx(raw["total_input_tokens"] / raw["completed"])
    assert p.tpot_ms.mean == pytest.approx(raw["mean_tpot_ms"]) and p.ttft_ms.p99 == pytest.approx(raw["p99_ttft_ms"])
    assert p.itl_ms.p50 == pytest.approx(raw["median_itl_ms"])


def test_old_vllm_result_at_an_unbounded_rate_takes_littles_law():
    path = DATA / "vllm/h100x1-llama-3.1-8b-fp8-tp1-n10-sharegpt.json"
    raw = json.loads(path.read_text())
    p = _one(path, chip="h100", framework="vllm")
    assert p.model == "llama-3.1-8b" and p.precision == "fp8"  # neuralmagic/Meta-Llama-3.1-8B-FP8
    assert p.concurrency_basis == "little"
    assert p.concurrency == pytest.approx(raw["request_throughput"] * raw["mean_latency_ms"] / 1e3)


def test_sglang_server_info_states_layout_and_framework():
    p = _one(DATA / "sglang/h200x8-gpt-oss-120b-tp4-dp2-c100-in2048-out128.jsonl", chip="h200")
    assert (p.framework, p.tp, p.dp, p.chips, p.model) == ("sglang", 4, 2, 8, "gpt-oss-120b")
    assert p.concurrency == 100


def test_sglang_file_of_2024_lacks_tpot_and_says_so():
    with pytest.raises(InputError) as e:
        import_files([DATA / "sglang/h200x4-llama-3.3-70b-tp4-online-rr1-16.jsonl"], {"chip": "h200"})
    assert "line 1" in str(e.value) and "tpot" in str(e.value)


@pytest.mark.parametrize("name,conc,isl,model", [
    ("aiperf/anud18_h100-pcie_qwen3.6-35b-a3b-nvfp4_vllm-tp1_chatbot_c8_profile_export_aiperf.json", 8, 466.4375,
     "qwen3-32b"),
    ("aiperf/dynamo-recipe_gb200_qwen3-vl-30b-a3b-fp8_vllm-tp1_c32_profile_export_aiperf.json", 32, 400.004,
     "qwen3-32b"),
    ("aiperf/aiperf-repo-example-run1_gpt-oss-20b_c100_profile_export_aiperf.json", 100, 550.0, "gpt-oss-20b"),
])
def test_aiperf_exports_of_three_schema_versions(name, conc, isl, model):
    # The models of the first two are not in the catalogue: --model names the one to price them as.
    p = _one(DATA / name, chip="h100", framework="vllm", model=model)
    assert p.concurrency == conc and p.concurrency_basis == "stated" and p.prompt_tokens == pytest.approx(isl)
    assert p.tpot_ms.central > 0 and p.ttft_ms.central > p.tpot_ms.central


def test_aiperf_per_request_records_aggregate_to_its_summary():
    summary = _one(DATA / "aiperf/aiperf-repo-example-run1_gpt-oss-20b_c100_profile_export_aiperf.json",
                   chip="h100", framework="vllm")
    per_request = _one(DATA / "aiperf/aiperf-repo-example-run1_gpt-oss-20b_c100_profile_export.jsonl",
                       chip="h100", framework="vllm", model="gpt-oss-20b")  # the records name no model
    assert per_request.format == "aiperf" and per_request.concurrency_basis == "little"
    assert per_request.ttft_ms.mean == pytest.approx(summary.ttft_ms.mean, rel=1e-6)
    assert per_request.tpot_ms.mean == pytest.approx(summary.tpot_ms.mean, rel=1e-6)
    assert per_request.prompt_tokens == pytest.approx(summary.prompt_tokens)


@pytest.mark.parametrize("name,conc", [("nim-llama3-8b-instruct_c1_profile_export_genai_perf.json", 1),
                                       ("nim-llama3-8b-instruct_c100_profile_export_genai_perf.json", 100),
                                       ("dynamo-qwen3-0.6b_isl3000-osl150_c16_profile_export_genai_perf.json", 16)])
def test_genai_perf_exports_old_and_new_config_layouts(name, conc):
    path = DATA / "genai-perf" / name
    assert detect_format(read_result_file(path)[0], str(path), False) == "genai-perf"
    p = _one(path, chip="h100", framework="trtllm", model="llama-3.1-8b")
    assert p.concurrency == conc and p.tpot_ms.mean > 0


def test_genai_perf_llama3_8b_maps_to_its_architecture_twin():
    p = _one(DATA / "genai-perf/nim-llama3-8b-instruct_c10_profile_export_genai_perf.json", chip="h100",
             framework="trtllm")
    assert p.model == "llama-3.1-8b" and any("Llama 3 8B" in n for n in p.notes)


def test_inferencex_agg_states_hardware_and_converts_seconds():
    path = DATA / "inferencex/agg_h100_70b-fp8_vllm_tp2_1k1k_conc16_run18606786029.json"
    raw = json.loads(path.read_text())
    p = _one(path)
    assert (p.chip, p.chips, p.tp, p.framework, p.precision, p.model) == ("h100", 2, 2, "vllm", "fp8", "llama-3.1-70b")
    assert p.tpot_ms.mean == pytest.approx(raw["mean_tpot"] * 1e3) and p.prompt_tokens == pytest.approx(0.9 * 1024)
    assert p.output_tokens_per_s == pytest.approx(raw["output_tput_per_gpu"] * 2)


def test_inferencex_runner_labels_and_speculative_decoding():
    p = _one(DATA / "inferencex/agg_h200_dsr1-fp8_trt_tp8-ep8_1k1k_conc16_run18599855208.json")
    assert (p.chip, p.framework, p.ep, p.model) == ("h200", "trtllm", 8, "deepseek-v3")  # "h200-trt"
    p = _one(DATA / "inferencex/agg_mi355x_kimik2.5-int4_vllm_tp8-ep1_mtp_1k1k_conc4.json")
    assert p.speculative == "mtp" and p.precision == "int4"


def test_inferencex_collected_array_is_one_point_per_entry():
    m = import_files([ROOT / "instances/measured/agg_gptoss_1k1k.json"], {})
    assert len(m.points) == 124 and sum(p.chip == "h100" for p in m.points) == 15


def test_disaggregated_inferencex_run_is_refused_by_name():
    with pytest.raises(InputError, match="disaggregated"):
        import_files([DATA / "inferencex/agg_gb200-disagg_dsr1-fp4_dynamo-trtllm_ctx1-gen1-dep16_1k1k_conc1075_gpus20"
                      "_run18300889557.json"], {})


def test_a_flag_contradicting_the_file_is_an_error_not_an_override():
    with pytest.raises(InputError, match="states chip = 'h100', --chip says 'b200'"):
        import_files([DATA / "inferencex/agg_h100_70b-fp8_vllm_tp2_1k1k_conc16_run18606786029.json"], {"chip": "b200"})


@pytest.mark.parametrize("text,field", [
    ('{"model_id": "m", "completed": 4', "invalid JSON"),
    (('{"model_id": "meta-llama/Llama-3.1-8B", "completed": 4, "total_input_tokens": 40, "total_output_tokens": 40,'
     ' "request_throughput": 1.0, "mean_ttft_ms": 10}'), "tpot"),
    ('{"hello": 1}', "not a result file"),
    ('', "empty"),
    ('[1, 2]', "not a result file"),
])
def test_malformed_files_exit_2_naming_the_file(tmp_path, text, field):
    f = tmp_path / "bad.json"
    f.write_text(text)
    r = runner.invoke(app, ["measure", "import", str(f), "--chip", "h100", "--framework", "vllm",
                            "--out", str(tmp_path / "m.yaml")])
    assert r.exit_code == 2, r.output
    assert "bad.json" in r.output and field in r.output and "Traceback" not in r.output
    assert not (tmp_path / "m.yaml").exists()


def test_cli_writes_a_measurements_file_that_reads_back(tmp_path):
    out = tmp_path / "m.yaml"
    r = runner.invoke(app, ["measure", "import", str(ROOT / "instances/measured/agg_gptoss_1k1k.json"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(out.read_text())
    assert doc["placement_measurements"] == 1 and len(doc["points"]) == 124
    from placement.measure.points import read_measurements

    assert len(read_measurements(out).points) == 124
    r = runner.invoke(app, ["calibrate", str(ROOT / "instances/measured/agg_gptoss_1k1k.json"), "--out",
                            str(tmp_path / "o.yaml")])
    assert r.exit_code == 2 and "measure import" in r.output  # a raw result file is not a measurements file
