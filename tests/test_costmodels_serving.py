"""Serving formulas, specdec, memory fit, measured tables, communication."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pydantic
import pytest

from costmodels import (
    MeasuredCapacity,
    MeasuredStepTable,
    aggregated_serving,
    capacities_from_melange,
    decode_step,
    ep_alltoall_s,
    expected_tokens_per_verify,
    fits,
    kv_transfer_bytes,
    kv_transfer_s,
    max_batch_that_fits,
    md1_max_utilisation,
    md1_wait_s,
    memory_per_chip_bytes,
    min_chips_for_weights,
    optimal_batch_closed_form,
    optimal_decode_batch,
    spec_tpot_s,
    tokens_per_s_per_mw,
    tp_allreduce_s,
    usd_per_million_tokens,
    verify_step,
)
from costmodels.examples import deepseek_v3, h100, llama_8b, llama_70b, lpu_500mb

#: The Mélange toy case (its description names the source: arXiv 2404.14527, example.json of the public code).
MELANGE_TOY = Path(__file__).resolve().parents[1] / "benchmarks/data/melange_toy.json"


# ---- balanced batch (seed 003) ---------------------------------------------------------


@pytest.mark.parametrize(
    "model, context",
    [
        # Dense: KV must be tiny next to the weights, so a very short context (32 tokens).
        (llama_70b, 32),
        # MLA's latent KV is small: 1K tokens of context barely move the crossing.
        (deepseek_v3, 1024),
    ],
)
def test_optimal_decode_batch_matches_ridge_times_sparsity(model, context):
    chip, m = h100(), model()
    found = optimal_decode_batch(chip, m, context=context)
    assert found == pytest.approx(optimal_batch_closed_form(chip, m), rel=0.10)
    st = decode_step(chip, m, batch=found, context=context)
    assert st.compute_s == pytest.approx(st.memory_s, rel=1e-6)


def test_optimal_batch_closed_form_is_ridge_times_sparsity():
    chip, m = h100(), deepseek_v3()
    raw = optimal_batch_closed_form(chip, m, use_efficiencies=False)
    assert raw == pytest.approx(chip.ridge_flop_per_byte("bf16") * m.sparsity)
    assert 4000 < raw < 6000  # seed 003: ~300 × sparsity, thousands of sequences


def test_optimal_decode_batch_diverges_at_long_context():
    assert optimal_decode_batch(h100(), llama_70b(), context=131072) == float("inf")


# ---- speculative decoding ------------------------------------------------------------


def test_expected_tokens_constant_acceptance():
    assert round(expected_tokens_per_verify(0.8, 4), 2) == 3.36
    assert expected_tokens_per_verify(0.8, 4) == pytest.approx((1 - 0.8**5) / (1 - 0.8))
    assert expected_tokens_per_verify([0.8] * 4) == pytest.approx(3.3616)
    assert expected_tokens_per_verify(1.0, 7) == 8.0


def test_expected_tokens_per_position_and_deepseek_mtp():
    # DeepSeek-R1 MTP with one draft token accepts 1.92 tokens per step (data/README).
    assert expected_tokens_per_verify([0.92]) == pytest.approx(1.92)
    assert expected_tokens_per_verify([0.9, 0.5, 0.1], gamma=2) == pytest.approx(1 + 0.9 + 0.45)
    rows = expected_tokens_per_verify(np.array([[0.8] * 4, [0.5] * 4]))
    assert rows.shape == (2,) and rows[0] == pytest.approx(3.3616)
    with pytest.raises(ValueError):
        expected_tokens_per_verify(0.8)
    with pytest.raises(ValueError):
        expected_tokens_per_verify([0.8], gamma=3)
    with pytest.raises(ValueError):
        expected_tokens_per_verify(1.2, 2)


def test_spec_tpot():
    e = expected_tokens_per_verify(0.8, 4)
    assert spec_tpot_s(0.002, 0.030, 4, 0.8) == pytest.approx((4 * 0.002 + 0.030) / e)
    assert spec_tpot_s(0.002, 0.030, 4, 0.8, round_trip_s=0.001) == pytest.approx((4 * 0.002 + 0.031) / e)


def test_verify_step_costs_less_than_gamma_plus_one_decode_steps():
    chip, m = h100(), llama_70b()
    v = verify_step(chip, m, batch=8, context=4096, gamma=4, tp=8)
    d = decode_step(chip, m, batch=8, context=4096, tp=8)
    assert d.time_s < v.time_s < 5 * d.time_s
    assert v.flops == pytest.approx(5 * d.flops, rel=0.01)  # 5 tokens per sequence
    assert v.kv_bytes == pytest.approx(d.kv_bytes * (4096 + 5) / 4096)  # KV read once per sequence


# ---- memory --------------------------------------------------------------------------


def test_llama70b_on_sram_lpu_needs_hundreds_of_chips():
    chip, m = lpu_500mb(), llama_70b()
    assert min_chips_for_weights(chip, m, precision="bf16") >= 280
    kw = {"stage": "decode", "batch": 1, "context": 1024, "precision": "bf16"}
    assert not fits(chip, m, tp=8, pp=8, **kw)  # 64 chips
    assert fits(chip, m, tp=8, pp=64, **kw)  # 512 chips
    assert fits(chip, memory_per_chip_bytes(chip, m, tp=8, pp=64, **kw))


def test_memory_per_chip_formula_and_stage_weights():
    chip, m = h100(), llama_70b()
    got = memory_per_chip_bytes(chip, m, stage="decode", batch=16, context=8192, tp=4, pp=2, workspace_fraction=0.1)
    expected = m.weight_bytes("bf16") / 8 + 16 * 8192 * 327_680 / 8 + 0.1 * 80e9
    assert got == pytest.approx(expected)
    attn = memory_per_chip_bytes(chip, m, stage="decode-attention", batch=16, context=8192, workspace_fraction=0)
    ffn = memory_per_chip_bytes(chip, m, stage="decode-ffn", batch=16, context=8192, workspace_fraction=0)
    full = memory_per_chip_bytes(chip, m, stage="decode", batch=16, context=8192, workspace_fraction=0)
    assert attn + ffn == pytest.approx(full + 0.0)  # KV counted once, on the attention side
    assert ffn == pytest.approx(m.ffn_params * 2)
    # MLA latent replicated on every tp rank: per-chip KV does not shrink with tp.
    ds = deepseek_v3()
    kv1 = memory_per_chip_bytes(chip, ds, stage="decode-attention", batch=8, context=4096, tp=1, workspace_fraction=0)
    kv8 = memory_per_chip_bytes(chip, ds, stage="decode-attention", batch=8, context=4096, tp=8, workspace_fraction=0)
    w = (ds.attention_params + ds.embedding_params) * 2
    assert kv8 - w / 8 == pytest.approx(kv1 - w)
    arr = memory_per_chip_bytes(chip, m, stage="decode", batch=np.array([1, 10]), context=4096, tp=8)
    assert np.shape(fits(chip, arr)) == (2,)


def test_max_batch_that_fits():
    chip, m = h100(), llama_70b()
    b = max_batch_that_fits(chip, m, stage="decode", context=131072, tp=8)
    assert fits(chip, m, stage="decode", batch=b, context=131072, tp=8)
    assert not fits(chip, m, stage="decode", batch=b + 1, context=131072, tp=8)
    assert max_batch_that_fits(chip, m, stage="decode", context=1024, tp=1) == 0  # 141 GB > 80 GB
    assert max_batch_that_fits(chip, llama_8b(), stage="decode-ffn", context=1024) == float("inf")


# ---- queueing and economics ------------------------------------------------------------


def test_md1_utilisation():
    assert md1_max_utilisation(1.0, 1.0) == 0.0
    assert md1_max_utilisation(2.0, 1.0) == 0.0
    assert md1_max_utilisation(1.0, 1e9) == pytest.approx(1.0, abs=1e-8)
    rho = md1_max_utilisation(0.5, 2.0)
    assert rho == pytest.approx(2 * 1.5 / 3.5)
    assert md1_wait_s(0.5, rho) + 0.5 == pytest.approx(2.0)  # the bound is tight
    slos = np.array([0.6, 1, 2, 10, 100])
    r = md1_max_utilisation(0.5, slos)
    assert np.all(np.diff(r) > 0) and r.shape == (5,)


def test_economics():
    assert usd_per_million_tokens(3.6, 1.0) == pytest.approx(1000.0)
    assert usd_per_million_tokens(2.95, 0.0) == float("inf")
    assert tokens_per_s_per_mw(1000.0, 2000.0) == pytest.approx(5e5)


def test_aggregated_serving_balances_prefill_and_decode():
    s = aggregated_serving(h100(), llama_70b(), prompt=2000, output=200, batch=np.array([8, 64, 512]),
                           token_budget=2048, tp=8)
    assert s.chunk_tokens.tolist() == [2000, 1984, 1536]
    t = s.step_s
    expected = np.minimum(s.chunk_tokens / (2000 * t), np.array([8, 64, 512]) / (199 * t))
    assert s.requests_per_s == pytest.approx(expected)
    assert s.output_tokens_per_s == pytest.approx(expected * 200)
    assert s.ttft_service_s[0] == pytest.approx(t[0])  # whole prompt in one chunk


# ---- communication --------------------------------------------------------------------


def test_tp_allreduce_ring():
    chip = h100()
    got = tp_allreduce_s(chip, 2**21, 8)
    assert got == pytest.approx(2 * 7 / 8 * 2**21 / 450e9 + 2 * 7 * chip.scale_up_latency_s)
    assert 20e-6 < got < 50e-6  # Vidur measures ~34 µs for 2 MiB on 8 H100s
    assert tp_allreduce_s(chip, 1e9, 1) == 0.0
    # Beyond the 8-GPU domain the ring runs over the NICs.
    assert tp_allreduce_s(chip, 1e6, 16) > 5 * tp_allreduce_s(chip, 1e6, 8)


def test_ep_alltoall_moves_bkd_each_way():
    """Dispatch and combine each move the hottest rank's ρ·(T/ep)·k·d·b logical bytes (DeepEP's count: the
    rank's own copies too) at η of the link, above a kernel floor; combine is BF16 whatever the dispatch."""
    chip = h100()
    rho = 1.03 + math.sqrt(2 * math.log(8) / (1024 / 8 * 8))
    per_rank = rho * 1024 / 8 * 8 * 7168

    def phase(bytes_per_value):
        return max(40e-6, 15e-6 + per_rank * bytes_per_value / (0.45 * 450e9))

    assert ep_alltoall_s(chip, 1024, 8, 7168, 2, 8) == pytest.approx(2 * phase(2))
    assert ep_alltoall_s(chip, 1024, 8, 7168, 1, 8) == pytest.approx(phase(1) + phase(2))  # FP8 dispatch
    assert ep_alltoall_s(chip, 8, 8, 7168, 2, 8) == pytest.approx(2 * 40e-6)  # 1 token a rank: the floors
    assert ep_alltoall_s(chip, 1024, 8, 7168, 2, 1) == 0.0


def test_kv_transfer():
    m = llama_70b()
    kappa = m.kv_bytes_per_token("bf16")
    assert kv_transfer_bytes(m, 1000, 3000, "bf16") == pytest.approx(4000 * kappa)
    assert kv_transfer_bytes(m, 1000, 3000, "bf16", prefix_cached_on_decode=True) == pytest.approx(1000 * kappa)
    assert kv_transfer_bytes(m, 1000, 3000, "fp8") == pytest.approx(2000 * kappa)
    assert kv_transfer_s(1e9, 50e9, 1e-5) == pytest.approx(0.02001)


# ---- measured tables ------------------------------------------------------------------


def test_measured_step_table_interpolates_and_flags():
    t = MeasuredStepTable(chip="h100", stage="decode", batch=[1, 8, 64], step_times_s=[0.02, 0.022, 0.03])
    assert t.step_time_s(1) == 0.02
    assert t.step_time_s(4.5) == pytest.approx(0.021)
    assert t.step_time_s(36) == pytest.approx(0.026)
    assert t.lookup(128) == (0.03, True)
    assert t.lookup(0.5) == (0.02, True)
    assert t.lookup(8) == (0.022, False)
    arr = t.step_time_s(np.array([1, 36, 1000]))
    assert arr.tolist() == pytest.approx([0.02, 0.026, 0.03])
    assert t.extrapolated(np.array([1, 100])).tolist() == [False, True]
    ms = MeasuredStepTable.from_milliseconds(chip="h100", batch=[1, 2], step_time_ms=[10, 12])
    assert ms.step_times_s == [0.01, 0.012]
    with pytest.raises(pydantic.ValidationError):
        MeasuredStepTable(chip="h100", batch=[8, 1], step_times_s=[0.1, 0.2])
    with pytest.raises(pydantic.ValidationError):
        MeasuredStepTable(chip="h100", batch=[1, 8], step_times_s=[0.1])
    with pytest.raises(pydantic.ValidationError):
        MeasuredStepTable(chip="h100", batch=[1], step_times_s=[0.1], colour="red")


def test_measured_capacity_and_melange_toy():
    c = MeasuredCapacity(chip="a100", traffic_class="chat", max_rps_per_replica=20, chips=2)
    assert c.max_rps_per_chip == 10
    case = json.loads(MELANGE_TOY.read_text())
    caps = capacities_from_melange(case)
    assert len(caps) == 8
    lookup = {(x.chip, x.traffic_class): x.max_rps_per_replica for x in caps}
    assert lookup[("A10G", "bucket_1_0")] == 5 and lookup[("A100-80GB", "bucket_1_0")] == 40
