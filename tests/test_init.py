"""The first hour: ``placement init``, model names by Hugging Face id in any case, user chips from a base,
every validation error at once, ``roofline`` failing when it does not fit, ``--json PATH`` everywhere, an
unreachable Ray address failing fast, ``make demo`` without Ray."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError, SolverError
from placement.core.instance.loading import load_instance, model_aliases, parse_instance

runner = CliRunner()
ROOT = Path(__file__).parents[1]


def _tiny(**hardware) -> dict:
    return {"name": "t", "model": "llama-3.1-70b", "precision": {"weights": "fp8", "kv": "fp8"},
            "workload": {"classes": [{"name": "chat", "rate_rps": 2, "prompt_tokens": 500, "output_tokens": 100,
                                      "ttft_ms": 1000, "tpot_ms": 50}]},
            "hardware": {"domains": [{"name": "g", "chip": "h100", "count": 2}], **hardware}}


def test_init_writes_a_starter_that_validates_and_solves(tmp_path):
    from placement.core.pipeline.solve import solve

    out = tmp_path / "starter.yaml"
    r = runner.invoke(app, ["init", "--model", "META-LLAMA/Llama-3.1-70B-Instruct", "--chips", "h100,Bertha",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    inst = load_instance(out)
    assert inst.model == "llama-3.1-70b" and {d.chip for d in inst.hardware.domains} == {"h100", "bertha"}
    plan = solve(inst, backend="highs")
    assert plan.status == "optimal" and plan.verified
    r = runner.invoke(app, ["init", "--model", "llama-3.1-70b", "--chips", "h100", "--out", str(out)])
    assert r.exit_code == 2 and "refusing to overwrite" in r.output


def test_init_names_what_it_does_not_know():
    r = runner.invoke(app, ["init", "--model", "llama-3.1-70b", "--chips", "h100,h1000"])
    assert r.exit_code == 2 and "--chips" in r.output and "'h1000'" in r.output and "bertha" in r.output
    r = runner.invoke(app, ["init", "--model", "lama-3.1-70b", "--chips", "h100"])
    assert r.exit_code == 2 and "--model" in r.output and "did you mean 'llama-3.1-70b'" in r.output
    r = runner.invoke(app, ["init", "--model", "qwen3-32b", "--chips", "h100"])
    assert r.exit_code == 0 and "model: qwen3-32b" in r.stdout


def test_hugging_face_ids_are_unique_sourced_aliases():
    from costmodels.models import load_model_catalog

    models = load_model_catalog()
    ids = [hf.lower() for m in models.values() for hf in m.hf_ids]
    assert len(ids) == len(set(ids)) and len(ids) >= len(models) - 1
    assert all("hf_ids" in m.sources for m in models.values() if m.hf_ids)
    aliases = model_aliases()
    assert aliases["deepseek-ai/deepseek-v3"] == "deepseek-v3" and aliases["llama-3.1-8b"] == "llama-3.1-8b"
    inst = parse_instance({**_tiny(), "model": "Meta-Llama/LLAMA-3.1-70B-INSTRUCT"})
    assert inst.model == "Meta-Llama/LLAMA-3.1-70B-INSTRUCT"  # kept as written; resolved by model_of
    from placement.core.instance.loading import model_of

    assert model_of(inst).name == "llama-3.1-70b"


def test_a_user_chip_from_a_base_with_overrides():
    inst = parse_instance(_tiny(chips=[{"name": "h100-spot", "base": "h100", "usd_per_hour": 1.1}],
                                domains=[{"name": "g", "chip": "h100-spot", "count": 2}]))
    chip = inst.hardware.chips[0]
    from topology.chips import load_chip_catalog

    h100 = load_chip_catalog()["h100"]
    assert chip.usd_per_hour == 1.1 and chip.flops_per_s == h100.flops_per_s
    assert chip.calibration == h100.calibration and "user override" in chip.sources["usd_per_hour"]
    slow = parse_instance(_tiny(chips=[{"name": "h100-slow", "base": "h100", "memory_efficiency": 0.5}])).hardware
    assert slow.chips[0].calibration == "uncalibrated" and slow.chips[0].heldout_tpot_error is None
    with pytest.raises(InputError, match="unknown base chip 'h10'"):
        parse_instance(_tiny(chips=[{"name": "x", "base": "h10"}]))


def test_a_user_chip_needs_no_sources_and_is_uncalibrated():
    from topology.chips import load_chip_catalog

    record = load_chip_catalog()["bertha"].model_dump(exclude={"sources", "calibration", "heldout_tpot_error"})
    record["name"] = "my-card"
    inst = parse_instance(_tiny(chips=[record]))
    assert inst.hardware.chips[0].calibration == "uncalibrated"
    assert set(inst.hardware.chips[0].sources.values()) == {"user-supplied (no source)"}
    gpu = load_chip_catalog()["h100"].model_dump(exclude={"sources", "calibration", "heldout_tpot_error"})
    gpu["name"] = "my-gpu"
    chip = parse_instance(_tiny(chips=[gpu])).hardware.chips[0]
    assert chip.allreduce_efficiency == gpu["allreduce_efficiency"] < 1
    assert chip.sources["allreduce_efficiency"] == "user-supplied (no source)"
    slow = parse_instance(_tiny(chips=[{"name": "h100-ar", "base": "h100", "allreduce_efficiency": 0.9}])).hardware
    assert slow.chips[0].calibration == "uncalibrated"


def test_every_validation_error_at_once(tmp_path):
    doc = _tiny()
    doc["workload"]["classes"][0]["rate_rps"] = -1
    doc["workload"]["classes"][0]["tpot_ms"] = 0
    doc["hardware"]["domains"][0]["count"] = 0
    doc["objective"] = "speed"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    r = runner.invoke(app, ["validate", str(path)])
    assert r.exit_code == 2
    for field in ("workload.classes[0].rate_rps", "workload.classes[0].tpot_ms", "hardware.domains[0].count",
                  "objective"):
        assert field in r.output, field
    assert "more problem" not in r.output


def test_roofline_exits_3_when_it_does_not_fit_and_json_takes_a_path(tmp_path):
    args = ["roofline", "--chip", "h100", "--model", "llama-3.1-70b", "--batch", "8", "--context", "4096"]
    r = runner.invoke(app, args)  # 141 GB of BF16 weights on one 80 GB H100
    assert r.exit_code == 3 and "does not fit" in r.output
    r = runner.invoke(app, [*args, "--tp", "4", "--json", "-"])
    assert r.exit_code == 0 and json.loads(r.stdout)["fits"] is True
    out = tmp_path / "chips.json"
    r = runner.invoke(app, ["catalog", "chips", "--json", str(out)])
    assert r.exit_code == 0 and {c["name"] for c in json.loads(out.read_text())} >= {"h100", "bertha"}


def test_an_unreachable_ray_address_fails_fast_with_exit_4():
    from placement.studies.ray_executor import probe_address

    with pytest.raises(SolverError, match="does not answer") as e:
        probe_address("127.0.0.1:1", timeout_s=2)
    assert e.value.exit_code == 4
    probe_address("auto")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_installs_no_test_extra(tmp_path):
    done = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path}/venv"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    installs = [ln for ln in done.stdout.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]
    assert installs == [f"{tmp_path}/venv/bin/pip install --quiet -e ."]


def test_standard_output_for_generate_out_and_roofline_plot():
    r = runner.invoke(app, ["generate", "--family", "uniform", "--domains", "4", "--chip-types", "1", "--classes", "1",
                            "--out", "-"])
    assert r.exit_code == 0, r.output
    assert yaml.safe_load(r.stdout)["name"].startswith("bench-uniform-d4") and "wrote" not in r.stdout
    r = runner.invoke(app, ["roofline", "--chip", "h100", "--model", "llama-3.1-8b", "--plot", "-"])
    assert r.exit_code == 0 and r.stdout_bytes.startswith(b"\x89PNG\r\n\x1a\n")


def test_the_starter_writes_percentile_slos(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from placement.cli.app import app

    out = tmp_path / "s.yaml"
    r = CliRunner().invoke(app, ["init", "--model", "llama-3.1-8b", "--chips", "h100", "--out", str(out)])
    assert r.exit_code == 0, r.output
    classes = yaml.safe_load(out.read_text())["workload"]["classes"]
    assert {(c["slo_percentile"], c["tpot_percentile"]) for c in classes} == {("p90", "p90")}
