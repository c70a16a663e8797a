"""A step is the weight GEMMs' roofline plus the attention core's: a hand calculation, the one-max form it replaces,
and the KV-read efficiency η_kv."""

import numpy as np
import pytest

from costmodels.arithmetic import (
    attention_core_flops,
    kv_bytes_read_per_sequence,
    matmul_params_per_token,
)
from costmodels.models import load_model_catalog
from costmodels.roofline import decode_step, weight_bytes_touched
from topology.chips import load_chip_catalog


@pytest.fixture(scope="module")
def unit_h100():
    """H100 at its peaks: every efficiency 1, no overheads, flat operating point."""
    return load_chip_catalog()["h100"].model_copy(update={
        "compute_efficiency": 1.0, "memory_efficiency": 1.0, "kv_memory_efficiency": None, "step_overhead_s": 0.0,
        "layer_overhead_s": 0.0, "sequence_overhead_s": 0.0, "memory_half_bytes": 0.0, "compute_half_tokens": 0.0})


def test_llama_8b_decode_by_hand(unit_h100):
    # Llama-3.1-8B BF16 on one H100, 1,024 sequences at 2,048 cached tokens:
    #   GEMMs  2·1024·N_matmul ≈ 15.3 TFLOP at 989.4 TFLOP/s ≈ 15.5 ms  >  16 GB of weights at 3.35 TB/s ≈ 4.8 ms
    #   core   4·1024·32·4096·2048 ≈ 1.1 PFLOP ≈ 1.1 ms                <  1024·2048·131,072 B ≈ 275 GB ≈ 82 ms of KV
    # The two kernels run one after the other, each at its own bound: ≈ 15.5 + 82 ms. One roofline over the sums
    # (max(16.6, 87) ms) would hide the GEMMs' compute under the KV reads.
    m = load_model_catalog()["llama-3.1-8b"]
    b, c = 1024, 2048
    f_bf16, bw = 989.4e12, 3.35e12
    gemm_s = 2 * b * matmul_params_per_token(m, "full") / f_bf16
    weights_s = float(weight_bytes_touched(m, "full", b, "bf16")) / bw
    core_s = b * float(attention_core_flops(m, new_tokens=1, context=c, decode=True)) / f_bf16
    kv_s = b * float(kv_bytes_read_per_sequence(m, "bf16", c)) / bw
    assert gemm_s == pytest.approx(15.5e-3, rel=0.03) and kv_s == pytest.approx(82e-3, rel=0.03)
    st = decode_step(unit_h100, m, batch=b, context=c, precision="bf16")
    assert float(st.time_s) == pytest.approx(max(gemm_s, weights_s) + max(core_s, kv_s), rel=1e-9)
    one_max = max(gemm_s + core_s, weights_s + kv_s)
    assert float(st.time_s) > 1.1 * one_max  # 97.6 ms against 86.5 ms
    assert float(st.kv_memory_s) == pytest.approx(kv_s, rel=1e-9)
    assert float(st.floor_s) <= float(st.time_s)  # the floor stays the peaks' one-max bound


def test_phases_agree_with_one_max_where_both_kernels_share_the_bound(unit_h100):
    # Batch 1: both kernels memory-bound, so the sum of the two rooflines is the one roofline of the sums.
    m = load_model_catalog()["llama-3.1-8b"]
    st = decode_step(unit_h100, m, batch=1, context=2048, precision="bf16")
    assert float(st.time_s) == pytest.approx(float(st.memory_s), rel=1e-9)


def test_kv_reads_run_at_their_own_efficiency(unit_h100):
    m = load_model_catalog()["llama-3.1-8b"]
    b, c = np.array([1.0, 256.0]), 8192
    base = decode_step(unit_h100, m, batch=b, context=c, precision="bf16")
    half = decode_step(unit_h100.model_copy(update={"kv_memory_efficiency": 0.5}), m, batch=b, context=c,
                       precision="bf16")
    assert np.allclose(np.asarray(half.kv_memory_s), 2 * np.asarray(base.kv_memory_s))
    assert np.allclose(np.asarray(half.memory_s) - np.asarray(half.kv_memory_s),
                       np.asarray(base.memory_s) - np.asarray(base.kv_memory_s))  # weights unchanged
