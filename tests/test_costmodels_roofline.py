"""Roofline step models: seed figures, intensities, FLOP/byte formulas, vectorisation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from costmodels import (
    aggregated_step,
    attention_flops_per_pair,
    decode_attention_step,
    decode_ffn_step,
    decode_step,
    experts_touched_per_layer,
    forward_cost,
    kv_bytes_per_sequence,
    kv_duplication,
    prefill_step,
    weight_bytes_touched,
)
from costmodels.efficiency import sequence_overhead_s
from costmodels.examples import bertha, deepseek_v3, gb200, h100, llama_8b, llama_70b, swa_model


def test_h100_bf16_ridge_is_295():
    assert h100().ridge_flop_per_byte("bf16") == pytest.approx(295, abs=1)


def test_llama70b_kv_is_320kb_per_token():
    assert llama_70b().kv_bytes_per_token("bf16") == 327_680
    assert kv_bytes_per_sequence(llama_70b(), "bf16", 131072) == pytest.approx(42.9e9, rel=1e-2)


def test_decode_ffn_intensity_grows_linearly_with_batch():
    lo = decode_ffn_step(h100(), llama_70b(), batch=1).intensity_flop_per_byte
    hi = decode_ffn_step(h100(), llama_70b(), batch=64).intensity_flop_per_byte
    assert hi / lo == pytest.approx(64, rel=0.2)
    # …and does not depend on context: the FFN never reads KV.
    assert decode_ffn_step(h100(), llama_70b(), batch=64, context=100_000).intensity_flop_per_byte == hi


def test_decode_attention_intensity_stays_at_gqa_group_size():
    """Long context, so the per-sequence KV (not the projection weights) dominates the bytes."""
    m = llama_70b()
    group = m.attention.heads / m.attention.kv_heads
    ints = [decode_attention_step(h100(), m, batch=b, context=131072).intensity_flop_per_byte for b in (8, 64, 512)]
    for i in ints:
        assert i == pytest.approx(group, rel=0.1)
    assert max(ints) / min(ints) < 1.1
    # FP8 KV packs twice the tokens per byte: twice the intensity.
    fp8 = decode_attention_step(h100(), m, batch=64, context=131072, kv_precision="fp8").intensity_flop_per_byte
    assert fp8 == pytest.approx(2 * group, rel=0.1)


def test_mla_decode_attention_nears_compute_bound():
    """MLA (absorbed) reads one 576-wide latent for 128 heads: intensity in the hundreds."""
    st = decode_attention_step(h100(), deepseek_v3(), batch=512, context=32768)
    assert 200 < st.intensity_flop_per_byte < 300
    assert attention_flops_per_pair(deepseek_v3(), absorbed=True) == 2 * 128 * (576 + 512)
    assert attention_flops_per_pair(llama_70b(), absorbed=True) == 4 * 64 * 128


def test_decode_flops_and_bytes_match_design_formula():
    m, b, c = llama_70b(), 16, 4096
    st = decode_step(h100(), m, batch=b, context=c)
    a = m.attention
    flops = 2 * b * m.matmul_params_active + 4 * b * m.layers * a.heads * a.head_dim * c
    assert st.flops == pytest.approx(flops, rel=1e-12)
    assert st.bytes == pytest.approx(m.matmul_params_active * 2 + b * c * m.kv_bytes_per_token("bf16"), rel=1e-12)


def test_bertha_memory_bound_step_is_bytes_over_546_gbs_times_0_9_plus_overhead():
    chip, m = bertha(), llama_70b()
    assert chip.memory_efficiency == 0.9
    st = decode_step(chip, m, batch=4, context=2048)
    assert st.memory_bound
    assert st.comm_s == 0.0
    # the four sequences' host work runs beside the device step (overlapped) and is shorter than it
    assert 4 * sequence_overhead_s(chip) < st.time_s
    assert st.time_s == pytest.approx(st.bytes / (546e9 * 0.9) + chip.step_overhead_s, rel=1e-12)


def test_attention_and_ffn_halves_add_up_to_the_fused_step():
    chip, m = h100(), deepseek_v3()
    kw = {"batch": 32, "context": 8192}
    d = decode_step(chip, m, **kw)
    a = decode_attention_step(chip, m, **kw)
    f = decode_ffn_step(chip, m, **kw)
    assert a.flops + f.flops == pytest.approx(d.flops, rel=1e-12)
    assert a.bytes + f.bytes == pytest.approx(d.bytes, rel=1e-12)
    assert a.kv_bytes == d.kv_bytes and f.kv_bytes == 0
    # Both halves memory-bound at tp = 1: the times add up, minus one overhead.
    assert a.time_s + f.time_s - chip.step_overhead_s == pytest.approx(d.time_s, rel=1e-9)


def test_moe_expert_touch():
    m = deepseek_v3()
    assert experts_touched_per_layer(m, 1) == pytest.approx(9.0)  # 8 routed + 1 shared
    assert experts_touched_per_layer(m, 1, include_shared=False) == pytest.approx(8.0)
    assert experts_touched_per_layer(m, 4096, include_shared=False) == pytest.approx(256, abs=1e-6)
    touched = experts_touched_per_layer(m, np.array([1, 4, 16, 64, 256]), include_shared=False)
    assert np.all(np.diff(touched) > 0) and touched[-1] < 256
    # Weight bytes: B=1 reads exactly the active parameters; B=4096 reads (almost) all of them.
    assert weight_bytes_touched(m, "full", 1, "bf16") == pytest.approx(2 * m.matmul_params_active)
    every = weight_bytes_touched(m, "full", 4096, "bf16")
    assert every == pytest.approx(2 * (m.total_params - m.vocab_size * m.hidden_size), rel=1e-9)


def test_prefill_flops_quadratic_term_and_cached_prefix():
    m = llama_70b()
    a = m.attention
    quad = 4 * m.layers * a.heads * a.head_dim
    for p in (1024, 8192, 32768):
        st = prefill_step(h100(), m, prompt=p)
        assert st.flops == pytest.approx(2 * p * m.matmul_params_active + quad * p * p / 2, rel=1e-12)
    # Doubling p more than doubles the FLOPs (the p² term).
    f1 = prefill_step(h100(), m, prompt=32768).flops
    f2 = prefill_step(h100(), m, prompt=65536).flops
    assert f2 / f1 > 2.2
    # A cached prefix: p new tokens after c0 cost less than prefilling c0 + p from scratch.
    cold = prefill_step(h100(), m, prompt=8192 + 1024)
    warm = prefill_step(h100(), m, prompt=1024, cached=8192)
    assert warm.flops == pytest.approx(2 * 1024 * m.matmul_params_active + quad * (1024 * 8192 + 1024**2 / 2))
    assert warm.flops < 0.2 * cold.flops
    assert warm.kv_bytes == cold.kv_bytes == pytest.approx(9216 * m.kv_bytes_per_token("bf16"))


def test_mla_prefill_takes_cheaper_attention_form():
    m = deepseek_v3()
    short = prefill_step(h100(), m, prompt=4096)
    a = m.attention
    pairs = m.layers * 4096**2 / 2
    expected = 2 * 4096 * m.matmul_params_active + pairs * 2 * a.heads * (a.head_dim + a.qk_rope_head_dim + a.v_head_dim)
    assert short.flops == pytest.approx(expected, rel=1e-12)
    # Long cached prefix: decompressing it costs extra, never more than the absorbed form.
    long = prefill_step(h100(), m, prompt=875, cached=119_000)
    absorbed = 2 * 875 * m.matmul_params_active + m.layers * (875 * 119_000 + 875**2 / 2) * 2 * a.heads * 1088
    assert long.flops <= absorbed * (1 + 1e-12)


def test_sliding_window_caps_kv_and_attention():
    m = swa_model()  # 8 layers, 4 with a 1024-token window
    per_layer = m.kv_bytes_per_token_per_layer("bf16")
    assert kv_bytes_per_sequence(m, "bf16", 4096) == pytest.approx(per_layer * (4 * 4096 + 4 * 1024))
    assert kv_bytes_per_sequence(m, "bf16", 4096) == pytest.approx(m.kv_bytes("bf16", 4096))
    st = decode_step(h100(), m, batch=1, context=4096)
    assert st.kv_bytes == pytest.approx(per_layer * (4 * 4096 + 4 * 1024))


def test_kv_duplication_under_tp():
    assert kv_duplication(llama_70b(), 8) == 1.0
    assert kv_duplication(llama_70b(), 16) == 2.0
    assert kv_duplication(deepseek_v3(), 8) == 8.0
    for tp in (1, 2, 8, 16, 32):
        assert kv_duplication(llama_70b(), tp) == llama_70b().kv_tp_duplication(tp)


def test_tensor_parallel_splits_memory_time_and_adds_comm():
    one = decode_step(h100(), llama_70b(), batch=8, context=2048)
    eight = decode_step(h100(), llama_70b(), batch=8, context=2048, tp=8)
    assert eight.memory_s == pytest.approx(one.memory_s / 8)
    assert one.comm_s == 0 and eight.comm_s > 0
    assert eight.time_s < one.time_s


def test_pipeline_parallel_round_arithmetic():
    """pp=2 with a full pipeline: 2 micro-batches, each stage re-reads its weights per micro-batch."""
    chip, m = h100(), llama_70b()
    base = decode_step(chip, m, batch=64, context=1024, tp=4)
    piped = decode_step(chip, m, batch=64, context=1024, tp=4, pp=2)
    # Twice the chips for the same FLOPs: compute time halves (throughput doubles).
    assert piped.compute_s == pytest.approx(base.compute_s / 2)
    assert piped.flops == pytest.approx(base.flops)
    # Bytes per round: 2 micro-batches × W_touched + KV, over 8 chips.
    w = weight_bytes_touched(m, "full", 32, "bf16")
    assert piped.bytes == pytest.approx(2 * w + base.kv_bytes)
    assert piped.memory_s == pytest.approx(piped.bytes / (8 * 3.35e12 * chip.memory_efficiency))
    assert piped.comm_s > 0 and piped.overhead_s == base.overhead_s
    # Weight-bound (tiny context): pipelining does not shorten the TPOT.
    wb = decode_step(chip, m, batch=8, context=1, tp=4)
    wp = decode_step(chip, m, batch=8, context=1, tp=4, pp=2)
    assert wp.memory_s == pytest.approx(wb.memory_s, rel=1e-3)
    # Fewer sequences than stages: one-token micro-batch, the token still crosses every stage.
    lone = decode_step(chip, m, batch=1, context=1024, tp=4, pp=4)
    assert lone.memory_s == pytest.approx(decode_step(chip, m, batch=1, context=1024, tp=4).memory_s)
    assert lone.compute_s == pytest.approx(decode_step(chip, m, batch=1, context=1024, tp=4).compute_s)


def test_expert_parallel_uses_alltoall_and_rejects_bad_layout():
    chip, m = gb200(), deepseek_v3()
    tp_only = decode_step(chip, m, batch=256, context=4096, tp=8)
    ep = decode_step(chip, m, batch=256, context=4096, tp=8, ep=8)
    assert ep.memory_s == pytest.approx(tp_only.memory_s)
    assert ep.comm_s != tp_only.comm_s
    with pytest.raises(ValueError, match="ep must divide dp·tp"):
        decode_step(chip, m, batch=1, context=1, tp=8, ep=3)
    # On a dense model ep has no effect.
    dense = llama_70b()
    assert decode_step(chip, dense, batch=8, context=64, tp=8, ep=8).time_s == decode_step(
        chip, dense, batch=8, context=64, tp=8).time_s


def test_aggregated_step_is_decode_plus_chunk_work():
    chip, m = h100(), llama_70b()
    agg = aggregated_step(chip, m, batch=32, context=2048, chunk_tokens=512, chunk_context=1024)
    dec = decode_step(chip, m, batch=32, context=2048)
    pre = prefill_step(chip, m, prompt=512, cached=1024)
    assert agg.flops == pytest.approx(dec.flops + pre.flops, rel=1e-12)
    assert agg.kv_bytes == pytest.approx(dec.kv_bytes + pre.kv_bytes, rel=1e-12)
    # Weights are read once for both: fewer bytes than two separate steps.
    assert agg.bytes < dec.bytes + pre.bytes
    assert agg.time_s < dec.time_s + pre.time_s
    no_chunk = aggregated_step(chip, m, batch=32, context=2048, chunk_tokens=0)
    assert no_chunk.time_s == pytest.approx(dec.time_s)


def test_decode_step_vectorises_over_batch_context_tp():
    chip, m = h100(), deepseek_v3()
    batch = np.array([1, 7, 64, 512]).reshape(-1, 1, 1)
    context = np.array([128, 4096, 65536]).reshape(1, -1, 1)
    tp = np.array([1, 2, 8]).reshape(1, 1, -1)
    st = decode_step(chip, m, batch=batch, context=context, tp=tp, ep=tp)
    for field in ("time_s", "compute_s", "memory_s", "comm_s", "flops", "bytes", "memory_bound"):
        assert np.shape(getattr(st, field)) == (4, 3, 3), field
    for i, j, k in itertools.product(range(4), range(3), range(3)):
        one = decode_step(chip, m, batch=int(batch[i, 0, 0]), context=int(context[0, j, 0]),
                          tp=int(tp[0, 0, k]), ep=int(tp[0, 0, k]))
        assert isinstance(one.time_s, float) and isinstance(one.memory_bound, bool)
        assert st.time_s[i, j, k] == pytest.approx(one.time_s, rel=1e-12)
        assert st.flops[i, j, k] == pytest.approx(one.flops, rel=1e-12)


def test_forward_cost_with_zero_attention_is_weights_only():
    chip, m = h100(), llama_8b()
    st = forward_cost(chip, m, part="full", sequences=1, tokens=1, attention_flops=0.0, kv_bytes=0.0)
    assert st.intensity_flop_per_byte == pytest.approx(1.0, rel=1e-12)  # 2 FLOP per 2-byte weight
