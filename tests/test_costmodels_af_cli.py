"""Attention–FFN ping-pong, doctests of the cost-model modules, the roofline/catalog CLI."""

from __future__ import annotations

import doctest
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

import costmodels.examples as fx
from costmodels import (
    af_activation_bytes_per_token,
    af_comm_hidden,
    af_tpot_s,
    af_transfer_s,
    decode_attention_step,
    decode_ffn_step,
)
from placement.cli import roofline_report
from placement.core.instance.errors import InputError

# ---- attention–FFN ------------------------------------------------------------------


def test_af_activation_bytes():
    m = fx.llama_70b()
    assert af_activation_bytes_per_token(m) == 2 * 80 * 8192 * 2
    ds = fx.deepseek_v3()
    ep = af_activation_bytes_per_token(ds, ffn_expert_parallel=True)
    assert ep == 2 * 7168 * 2 * (3 + 58 * 8)


def test_af_pingpong_hides_comm_only_when_conditions_hold():
    # Balanced sides, short comm, enough micro-batches: TPOT = m·max(A, F).
    assert af_tpot_s(1.0, 1.0, 0.4, 3) == 3.0 and af_comm_hidden(1.0, 1.0, 0.4, 3)
    # Too few micro-batches to cover the round trip: latency adds.
    assert af_tpot_s(1.0, 1.0, 0.4, 2) == pytest.approx(2.4) and not af_comm_hidden(1.0, 1.0, 0.4, 2)
    # Each crossing longer than compute: the link sets the pace.
    assert af_tpot_s(1.0, 1.0, 4.0, 4) == pytest.approx(8.0) and not af_comm_hidden(1.0, 1.0, 4.0, 4)
    # m = 1: strictly sequential.
    assert af_tpot_s(1.0, 0.5, 0.2, 1) == pytest.approx(1.7)
    got = af_tpot_s(np.array([1.0, 1.0]), 1.0, np.array([0.4, 4.0]), 3)
    assert got.tolist() == pytest.approx([3.0, 6.0])


def test_af_on_gpu_plus_lpu():
    """DeepSeek attention on H100s, FFN on SRAM LPUs: an end-to-end TPOT from the pieces."""
    m, a_chip, f_chip = fx.deepseek_v3(), fx.h100(), fx.lpu_500mb()
    mb, b = 2, 256
    attn = decode_attention_step(a_chip, m, batch=b / mb, context=4096, tp=8, precision="fp8")
    ffn = decode_ffn_step(f_chip, m, batch=b / mb, tp=64, ep=64, pp=24, precision="fp8")
    comm = af_transfer_s(m, b / mb, 8 * a_chip.scale_out_bandwidth_bytes_per_s, 5e-6, ffn_expert_parallel=True)
    tpot = af_tpot_s(attn.time_s, ffn.time_s, comm, mb)
    assert tpot >= mb * max(attn.time_s, ffn.time_s)
    assert tpot <= attn.time_s + ffn.time_s + comm + mb * max(attn.time_s, ffn.time_s, comm)


# ---- doctests ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["roofline", "comm", "specdec", "memory", "serving", "measured"])
def test_docstring_examples_run(name):
    mod = importlib.import_module(f"costmodels.{name}")
    result = doctest.testmod(mod, verbose=False)
    assert result.attempted > 0 and result.failed == 0


# ---- CLI functions ----------------------------------------------------------------------


@pytest.fixture
def catalogues(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps narrow tables
    monkeypatch.setattr(roofline_report, "_chips", fx.all_chips)
    monkeypatch.setattr(roofline_report, "_models", fx.all_models)


def test_roofline_summary_decode(catalogues):
    s = roofline_report.roofline_summary("h100", "llama-3.1-70b", stage="decode", batch=64, context=2048, tp=8)
    assert s["bound"] == "memory"
    assert s["ridge_flop_per_byte"] == pytest.approx(295, abs=1)
    assert s["kv_bytes_per_token"] == 327_680
    assert s["tokens_per_s"] == pytest.approx(64 / (s["step_time_ms"] / 1e3))
    assert s["tokens_per_s_per_user"] == pytest.approx(1 / (s["step_time_ms"] / 1e3))
    assert s["fits"] is True and s["chips_per_replica"] == 8
    json.dumps(s)  # JSON-ready: Python scalars only


def test_roofline_summary_prefill_and_sram(catalogues):
    s = roofline_report.roofline_summary("h100", "llama-3.1-70b", stage="prefill", batch=1, context=8192, tp=8)
    assert s["bound"] == "compute"
    assert s["tokens_per_s"] == pytest.approx(8192 / (s["step_time_ms"] / 1e3))
    lpu = roofline_report.roofline_summary("lpu-500mb", "llama-3.1-70b", stage="decode", batch=1, context=1024,
                                           tp=8, pp=8, precision="fp8")
    assert lpu["fits"] is False


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"chip": "tpu-v9", "model": "llama-3.1-70b"}, "--chip"),
        ({"chip": "h100", "model": "gpt-9"}, "--model"),
        ({"chip": "h100", "model": "llama-3.1-70b", "stage": "sampling"}, "--stage"),
        ({"chip": "h100", "model": "llama-3.1-70b", "precision": "int3"}, "--precision"),
        ({"chip": "h100", "model": "deepseek-v3", "tp": 8, "ep": 3}, "--ep"),
        ({"chip": "h100", "model": "deepseek-v3", "stage": "decode-ffn", "attention_dp": 2}, "--attention-dp"),
    ],
)
def test_roofline_rejects_bad_input(catalogues, kwargs, field):
    chip, model = kwargs.pop("chip"), kwargs.pop("model")
    with pytest.raises(InputError) as e:
        roofline_report.roofline_summary(chip, model, **kwargs)
    assert e.value.field == field
    if field == "--chip":
        assert "unknown chip 'tpu-v9'; expected one of" in str(e.value) and "h100" in str(e.value)


def test_roofline_command_prints_table_json_and_plot(catalogues, capsys, tmp_path):
    import typer

    with pytest.raises(typer.Exit) as stop:  # the FFN half of DeepSeek-V3 on 8 H100 needs 90 GB per chip: exit 3
        roofline_report.roofline(chip="h100", model="deepseek-v3", stage="decode-ffn", batch=32, context=4096,
                                 precision="fp8", tp=8, ep=8, json_out=Path("-"))
    assert stop.value.exit_code == 3
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["stage"] == "decode-ffn" and data["ep"] == 8 and not data["fits"]
    assert "does not fit" in captured.err and "90.22 GB per chip" in captured.err
    png = tmp_path / "roof.png"
    with pytest.raises(typer.Exit):  # 122 GB per chip: the table and the plot are still written
        roofline_report.roofline(chip="h100", model="llama-3.1-70b", stage="decode-attention", batch=8,
                                 context=32768, tp=1, plot=png)
    out = capsys.readouterr().out
    assert "arithmetic intensity" in out and "ridge point" in out and "memory per chip" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["roof.png"]  # no temp file left behind


def test_catalog_command(catalogues, capsys):
    roofline_report.catalog("chips", json_out=Path("-"))
    chips = json.loads(capsys.readouterr().out)
    assert {c["name"] for c in chips} == set(fx.all_chips())
    roofline_report.catalog("models", json_out=None)
    out = capsys.readouterr().out
    assert "deepseek-v3" in out and "mla" in out
    roofline_report.catalog("chips")
    assert "lpu-500mb" in capsys.readouterr().out
    with pytest.raises(InputError):
        roofline_report.catalog("racks")


# ---- the shipped catalogues ---------------------------------------------------------------


def _shipped():
    try:
        from costmodels.models import load_model_catalog
        from topology.chips import load_chip_catalog

        return load_chip_catalog(), load_model_catalog()
    except FileNotFoundError:
        pytest.skip("shipped catalogues not written yet")


def test_every_shipped_chip_and_model_prices_every_stage():
    """Smoke test: finite, positive step times and a memory figure for every pair, vectorised over batch."""
    from costmodels import decode_step, memory_per_chip_bytes, prefill_step

    chips, models = _shipped()
    batch = np.array([1.0, 16.0, 256.0])
    for chip in chips.values():
        for m in models.values():
            for precision in [p for p in ("bf16", "fp8") if chip.runs(p)]:
                for st in (
                    decode_step(chip, m, batch=batch, context=8192, tp=8, ep=8, precision=precision),
                    decode_attention_step(chip, m, batch=batch, context=8192, tp=2, precision=precision),
                    decode_ffn_step(chip, m, batch=batch, tp=4, ep=4, pp=2, precision=precision),
                    prefill_step(chip, m, prompt=2048, cached=1024, batch=batch, pp=2, precision=precision),
                ):
                    assert np.all(np.isfinite(st.time_s)) and np.all(st.time_s > 0), (chip.name, m.name)
                    assert np.all(st.time_s >= np.maximum(st.compute_s, st.memory_s)), (chip.name, m.name)
                mem = memory_per_chip_bytes(chip, m, stage="decode", batch=batch, context=8192, tp=8, pp=2)
                assert np.all(np.diff(mem) > 0)


def test_shipped_h100_seed_figures():
    chips, models = _shipped()
    h100, llama = chips["h100"], models["llama-3.1-70b"]
    assert h100.ridge_flop_per_byte("bf16") == pytest.approx(295, abs=1)
    s = roofline_report.roofline_summary("h100", "llama-3.1-70b", batch=32, context=1024, tp=8)
    assert s["kv_bytes_per_token"] == 327_680 and s["bound"] == "memory"
    from costmodels import optimal_batch_closed_form, optimal_decode_batch

    # Seed 003's balanced batch is a roofline statement, at the chip's peaks: the numeric balance of a flat
    # H100 (η = 1, no operating-point terms) is ridge × sparsity. (The calibrated H100's small-GEMM curve,
    # t½ above its achievable ridge, puts every batch on the compute side of its fitted times.)
    flat = h100.model_copy(update={"compute_efficiency": 1.0, "memory_efficiency": 1.0, "compute_half_tokens": 0.0,
                                   "memory_half_bytes": 0.0})
    assert optimal_decode_batch(flat, llama, context=32) == pytest.approx(
        optimal_batch_closed_form(h100, llama, use_efficiencies=False), rel=0.1)
