"""The operating-point efficiency model (costmodels.efficiency) and its use in the roofline."""

from __future__ import annotations

import numpy as np
import pytest

from costmodels import decode_step, prefill_step
from costmodels.efficiency import (
    achieved_compute_flops_per_s,
    achieved_memory_bandwidth_bytes_per_s,
    compute_time_s,
    memory_time_s,
    overhead_time_s,
)
from costmodels.examples import h100, llama_70b
from topology.chips import OPERATING_POINT_FIELDS, ChipSpec


def _flat():
    return h100().model_copy(update={f: 0.0 for f in OPERATING_POINT_FIELDS})


def _with(**kw):
    return _flat().model_copy(update=kw)


def test_flat_defaults_reproduce_the_flat_roofline_exactly():
    chip = _flat()
    flops, busy, total = np.array([1e12, 3e15]), np.array([1.0, 8.0]), np.array([1e9, 7e10])
    ref_c = flops / (busy * chip.flops("bf16") * chip.compute_efficiency)
    ref_m = total / (busy * chip.memory_bandwidth_bytes_per_s * chip.memory_efficiency)
    assert np.array_equal(compute_time_s(chip, "bf16", flops, busy, [1.0, 512.0]), ref_c)
    assert np.array_equal(memory_time_s(chip, total, busy), ref_m)
    assert float(overhead_time_s(chip, 80)) == chip.step_overhead_s


def test_bandwidth_saturates_with_bytes_per_chip():
    chip = _with(memory_half_bytes=4e8)
    x = np.geomspace(1e6, 1e11, 50)
    bw = achieved_memory_bandwidth_bytes_per_s(chip, x)
    peak = chip.memory_bandwidth_bytes_per_s * chip.memory_efficiency
    assert np.all(np.diff(bw) > 0) and bw[-1] < peak and bw[-1] > 0.99 * peak
    assert achieved_memory_bandwidth_bytes_per_s(chip, 4e8) == pytest.approx(peak / 2)
    # the curve is a fixed latency x½ / (BW·η_m) on top of the streaming time
    t = memory_time_s(chip, x, 1.0)
    np.testing.assert_allclose(t, x / bw, rtol=1e-12)
    np.testing.assert_allclose(t - x / peak, 4e8 / peak, rtol=1e-9)


def test_compute_efficiency_grows_with_gemm_rows():
    chip = _with(compute_half_tokens=128.0)
    t = np.array([1.0, 128.0, 4096.0])
    f = achieved_compute_flops_per_s(chip, "bf16", t) / (chip.flops("bf16") * chip.compute_efficiency)
    np.testing.assert_allclose(f, t / (t + 128.0))
    assert f[1] == pytest.approx(0.5)


def test_layer_launch_cost_scales_with_layers():
    chip = _with(step_overhead_s=1e-3, layer_overhead_s=20e-6)
    np.testing.assert_allclose(overhead_time_s(chip, np.array([32, 80])), [1.64e-3, 2.6e-3])


def test_roofline_uses_the_operating_point():
    flat, model = _flat(), llama_70b()
    half = 1e9
    st0 = decode_step(flat, model, batch=[1, 64], context=1024, tp=8)
    st1 = decode_step(_with(memory_half_bytes=half), model, batch=[1, 64], context=1024, tp=8)
    extra = half / (flat.memory_bandwidth_bytes_per_s * flat.memory_efficiency)
    np.testing.assert_allclose(st1.memory_s - st0.memory_s, extra, rtol=1e-9)
    st2 = decode_step(_with(layer_overhead_s=10e-6), model, batch=[1, 64], context=1024, tp=8)
    np.testing.assert_allclose(st2.overhead_s - st0.overhead_s, model.layers * 10e-6, rtol=1e-9)
    # GEMM rows: a prefill of 8 tokens is slowed by (1 + t½/8), one of 8,192 barely; the attention core is not
    p0 = prefill_step(flat, model, prompt=np.array([8.0, 8192.0]), tp=8)
    p1 = prefill_step(_with(compute_half_tokens=64.0), model, prompt=np.array([8.0, 8192.0]), tp=8)
    gemm0, gemm1 = (np.asarray(p.compute_s) - np.asarray(p.core_s) for p in (p0, p1))
    np.testing.assert_allclose(gemm1 / gemm0, [1 + 64 / 8, 1 + 64 / 8192])
    np.testing.assert_allclose(p1.core_s, p0.core_s)
    assert np.all(np.asarray(p0.core_s) > 0)


def test_broadcast_shapes_hold():
    chip = _with(memory_half_bytes=1e8, compute_half_tokens=32.0, layer_overhead_s=5e-6)
    st = decode_step(chip, llama_70b(), batch=np.ones((3, 1)) * [1, 8, 64, 256], context=np.full((3, 1), 2048.0),
                     tp=np.array([[1], [2], [8]]))
    assert np.shape(st.time_s) == (3, 4) and np.shape(st.overhead_s) == (3, 4)
    assert np.all(np.isfinite(st.time_s))


def test_nonzero_operating_point_fields_need_a_source():
    rec = h100().model_dump()
    rec["sources"] = {k: v for k, v in rec["sources"].items() if k not in OPERATING_POINT_FIELDS}
    ChipSpec.model_validate({**rec, **{f: 0.0 for f in OPERATING_POINT_FIELDS}})
    with pytest.raises(ValueError, match="layer_overhead_s"):
        ChipSpec.model_validate({**rec, **{f: 0.0 for f in OPERATING_POINT_FIELDS}, "layer_overhead_s": 1e-6})
    with pytest.raises(ValueError, match="calibration"):
        ChipSpec.model_validate({**rec, "sources": {k: v for k, v in rec["sources"].items()
                                                      if k != "calibration"},
                                 **{f: 0.0 for f in OPERATING_POINT_FIELDS}, "calibration": "calibrated"})


def test_the_host_work_of_a_step_runs_beside_the_device():
    """step = max(device step, B·h): h below the device step per sequence changes nothing, above it sets the pace."""
    model = llama_70b()
    base = _with(step_overhead_s=1e-3, sequence_overhead_s=0.0)
    st0 = decode_step(base, model, batch=256, context=1024, tp=8)
    device = float(st0.time_s)
    assert float(st0.device_s) == pytest.approx(device) and float(st0.host_s) == 0.0
    hidden = decode_step(base.model_copy(update={"sequence_overhead_s": 0.5 * device / 256}), model, batch=256,
                         context=1024, tp=8)
    assert float(hidden.time_s) == pytest.approx(device)  # 128 sequences' worth of host work: hidden
    pacing = decode_step(base.model_copy(update={"sequence_overhead_s": 2.0 * device / 256}), model, batch=256,
                         context=1024, tp=8)
    assert float(pacing.time_s) == pytest.approx(2.0 * device) and float(pacing.device_s) == pytest.approx(device)


def test_a_routed_experts_gemm_has_only_its_routed_tokens_as_rows():
    """DeepSeek-V3 at 4,096 tokens (ep 1): projections and shared experts at 4,096 rows, each routed expert at
    4,096·8/E_t ≈ 128 (E_t ≈ 256 touched); the compute time is each family's at its own rows, by hand."""
    from costmodels.arithmetic import (
        FLOPS_PER_MAC,
        experts_touched_per_layer,
        matmul_params_per_token,
        routed_active_params,
    )
    from costmodels.examples import deepseek_v3
    from costmodels.roofline import forward_cost

    ds, t_half, tokens = deepseek_v3(), 200.0, 4096.0
    chip = _with(compute_half_tokens=t_half)
    st = forward_cost(chip, ds, part="ffn", sequences=tokens, tokens=tokens, attention_flops=0.0, kv_bytes=0.0,
                      precision="fp8")
    rows = tokens * 8 / float(experts_touched_per_layer(ds, tokens, include_shared=False))
    assert rows == pytest.approx(128.0, rel=1e-3)
    routed = FLOPS_PER_MAC * tokens * routed_active_params(ds)
    dense = FLOPS_PER_MAC * tokens * matmul_params_per_token(ds, "ffn") - routed
    peak = chip.flops("fp8") * chip.compute_efficiency
    by_hand = dense / peak * (1 + t_half / tokens) + routed / peak * (1 + t_half / rows)
    assert float(st.compute_s) == pytest.approx(by_hand, rel=1e-9)
    # the one row count the calibration uses prices the same time
    assert float(st.compute_s) == pytest.approx((dense + routed) / peak * (1 + t_half / float(st.gemm_rows)), rel=1e-9)
    # a dense model's GEMMs all have the step's tokens as rows
    assert float(forward_cost(chip, llama_70b(), part="full", sequences=64, tokens=64, attention_flops=0.0,
                              kv_bytes=0.0).gemm_rows) == 64.0
    # 32 decode tokens touch ~163 experts at ~1.6 rows each: the curve holds at one tile's rows (64), so the
    # routed GEMMs cost their FLOPs × (1 + t½/64), not × (1 + t½/1.6)
    from costmodels.roofline import EXPERT_TILE_ROWS

    small = 32.0
    st = forward_cost(chip, ds, part="ffn", sequences=small, tokens=small, attention_flops=0.0, kv_bytes=0.0,
                      precision="fp8")
    assert small * 8 / float(experts_touched_per_layer(ds, small, include_shared=False)) < 2.0
    routed = FLOPS_PER_MAC * small * routed_active_params(ds)
    dense = FLOPS_PER_MAC * small * matmul_params_per_token(ds, "ffn") - routed
    by_hand = dense / peak * (1 + t_half / small) + routed / peak * (1 + t_half / EXPERT_TILE_ROWS)
    assert EXPERT_TILE_ROWS == 64.0 and float(st.compute_s) == pytest.approx(by_hand, rel=1e-9)
