"""All-reduce algorithms: the switch points by message size, the measured 128 MiB case,
small-message latency, the floors, scale-out, and the sourced capability field."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest

from costmodels.collectives import (
    ALGORITHMS,
    SCALE_OUT_LATENCY_S,
    allreduce_algorithm,
    allreduce_s,
    allreduce_times_s,
    ring_s,
)
from costmodels.comm import ep_alltoall_s, tp_allreduce_s
from costmodels.examples import h100 as example_h100
from costmodels.models import load_model_catalog
from costmodels.roofline import decode_step
from topology.chips import load_chip_catalog

MIB = 2**20
#: 8xH100 NCCL all-reduce of 128 MiB: ~417 GB/s algorithm bandwidth (Vidur profiles) = 322 µs.
MEASURED_128MIB_S = 128 * MIB / 417e9


@pytest.fixture(scope="module")
def chips():
    return load_chip_catalog()


def _with(chip, algorithms):
    return chip.model_copy(update={"all_reduce_algorithms": algorithms})


def test_catalogue_nvswitch_chips_offer_the_fast_algorithms_with_a_source(chips):
    for name in ("h100", "h200", "b200", "gb200", "gb300", "rubin"):
        assert set(chips[name].all_reduce_algorithms) == {"one-shot", "two-shot", "nvls"}
        assert "all_reduce_algorithms" in chips[name].sources
    assert chips["lp30"].all_reduce_algorithms == []


def test_capability_without_a_source_is_refused():
    with pytest.raises(pydantic.ValidationError, match="all_reduce_algorithms"):
        example_h100(all_reduce_algorithms=["nvls"])
    with pytest.raises(pydantic.ValidationError):
        example_h100(all_reduce_algorithms=["magic"], sources={**example_h100().sources,
                                                               "all_reduce_algorithms": "x"})


def test_switch_points_by_message_size(chips):
    h = chips["h100"]
    bw, lat, n = h.scale_up_bandwidth_bytes_per_s, h.scale_up_latency_s, 8
    # one-shot = λ + (n−1)S/BW meets in-switch = 2λ + (n+1)/n·S/BW at S* = λ·BW / ((n−1) − (n+1)/n)
    s_nvls = lat * bw / ((n - 1) - (n + 1) / n)
    assert allreduce_algorithm(h, 0.9 * s_nvls, n) == "one-shot"
    assert allreduce_algorithm(h, 1.1 * s_nvls, n) == "in-switch"
    # without NVLS, one-shot meets two-shot = 2λ + 2(n−1)/n·S/BW at λ·BW / ((n−1) − 2(n−1)/n)
    no_nvls = _with(h, ["one-shot", "two-shot"])
    s_two = lat * bw / ((n - 1) - 2 * (n - 1) / n)
    assert allreduce_algorithm(no_nvls, 0.9 * s_two, n) == "one-shot"
    assert allreduce_algorithm(no_nvls, 1.1 * s_two, n) == "two-shot"
    # a ring-only fabric keeps the ring at every size
    sizes = np.array([1e3, 1e5, 1e7, 1e9])
    assert list(allreduce_algorithm(_with(h, []), sizes, n)) == ["ring"] * 4
    assert allreduce_s(_with(h, []), sizes, n) == pytest.approx(ring_s(sizes, n, bw, lat))
    # vectorised choice agrees with the scalar one
    grid = np.geomspace(1e2, 1e9, 40)
    assert list(allreduce_algorithm(h, grid, n)) == [allreduce_algorithm(h, float(s), n) for s in grid]


def test_128_mib_closer_to_the_measurement(chips):
    h = chips["h100"]
    ring = ring_s(128 * MIB, 8, h.scale_up_bandwidth_bytes_per_s, h.scale_up_latency_s)
    got = allreduce_s(h, 128 * MIB, 8)
    assert ring == pytest.approx(548e-6, rel=0.01)
    assert abs(got - MEASURED_128MIB_S) < 0.1 * MEASURED_128MIB_S < abs(ring - MEASURED_128MIB_S)


def test_small_message_one_shot_is_one_link_latency_plus_bytes_over_bandwidth(chips):
    h = chips["h100"]
    bw, lat = h.scale_up_bandwidth_bytes_per_s, h.scale_up_latency_s
    s = 8 * 7168 * 2  # batch 8 of DeepSeek's hidden state in BF16
    assert allreduce_algorithm(h, s, 8) == "one-shot"
    assert allreduce_s(h, s, 8) == pytest.approx(lat + 7 * s / bw)
    assert allreduce_s(h, s, 8) < 2 * lat


def test_floors_hold_for_every_algorithm(chips):
    sizes = np.geomspace(1.0, 1e10, 60)
    for name in ("h100", "gb200", "rubin", "lp30", "trainium3"):
        chip = _with(chips[name], ["one-shot", "two-shot", "nvls", "sharp"])
        for n in (2, 8, 64, 512):
            inside = n <= chip.scale_up_domain_chips
            bw = chip.scale_up_bandwidth_bytes_per_s if inside else chip.scale_out_bandwidth_bytes_per_s
            lat = chip.scale_up_latency_s if inside else SCALE_OUT_LATENCY_S
            floor = np.maximum(lat, (n - 1) / n * sizes / bw)
            times = allreduce_times_s(chip, sizes, n, bw, lat, inside)
            for algo in ALGORITHMS:
                assert np.all(times[algo] >= floor * (1 - 1e-12)), (name, n, algo)
            best = allreduce_s(chips[name], sizes, n)
            assert np.all(best >= floor * (1 - 1e-12))
            assert np.all(best <= ring_s(sizes, n, bw, lat) * (1 + 1e-12))
        assert allreduce_s(chip, 1e6, 1) == 0.0


def test_scale_out_keeps_the_ring_unless_the_network_reduces(chips):
    h = chips["h100"]
    s, n = 4 * MIB, 16  # beyond the 8-GPU NVLink domain
    bw = h.scale_out_bandwidth_bytes_per_s
    assert allreduce_algorithm(h, s, n) == "ring"
    assert allreduce_s(h, s, n) == pytest.approx(ring_s(s, n, bw, SCALE_OUT_LATENCY_S))
    sharp = _with(h, [*h.all_reduce_algorithms, "sharp"])
    assert allreduce_algorithm(sharp, s, n) == "in-switch"
    assert allreduce_s(sharp, s, n) == pytest.approx((n + 1) / n * s / bw + 2 * SCALE_OUT_LATENCY_S)


def test_decode_steps_no_longer_pay_a_ring_per_layer(chips):
    models = load_model_catalog()
    h = chips["h100"]
    # Llama-3.1-70B TP8 batch 1: 160 all-reduces of 16 KB; the ring alone cost 160·2·7·λ ≈ 4.1 ms.
    step = decode_step(h, models["llama-3.1-70b"], batch=1, context=2000, tp=8, precision="fp8")
    ring_only = decode_step(_with(h, []), models["llama-3.1-70b"], batch=1, context=2000, tp=8, precision="fp8")
    assert ring_only.comm_s > 4.0e-3
    assert step.comm_s < 0.1 * ring_only.comm_s
    assert step.time_s == pytest.approx(ring_only.time_s - ring_only.comm_s + step.comm_s)
    # Rubin TP64 DeepSeek-V3: 2·63 ring steps per all-reduce made the step > 15 ms of latency alone
    r = chips["rubin"]
    ds = models["deepseek-v3"]
    fast = decode_step(r, ds, batch=1, context=2000, tp=64, ep=64, precision="fp8")
    ring = decode_step(_with(r, []), ds, batch=1, context=2000, tp=64, ep=64, precision="fp8")
    # the expert all-to-all at 1 token is its kernel floor (58 layers × 2 × 25 µs), the same for both
    a2a = 58 * float(ep_alltoall_s(r, 1, 8, 7168, 2, 64))
    assert a2a == pytest.approx(58 * 2 * r.alltoall_floor_s)
    assert fast.comm_s - a2a < 1e-3 < ring.comm_s - a2a
    assert tp_allreduce_s(r, 14336, 64) == pytest.approx(r.scale_up_latency_s + 63 * 14336
                                                          / r.scale_up_bandwidth_bytes_per_s)


def test_serving_allreduce_efficiency_slows_the_collective_and_needs_a_source(chips):
    h = chips["h100"]
    assert 0 < h.allreduce_efficiency < 1 and "allreduce_efficiency" in h.sources
    ideal = h.model_copy(update={"allreduce_efficiency": 1.0})
    sizes = np.array([16e3, 2e6, 128e6])
    np.testing.assert_allclose(tp_allreduce_s(h, sizes, 8), tp_allreduce_s(ideal, sizes, 8) / h.allreduce_efficiency)
    assert tp_allreduce_s(h, 1e6, 1) == 0.0
    rec = h.model_dump()
    rec["sources"] = {k: v for k, v in rec["sources"].items() if k != "allreduce_efficiency"}
    with pytest.raises(pydantic.ValidationError, match="allreduce_efficiency"):
        type(h).model_validate(rec)
    type(h).model_validate({**rec, "allreduce_efficiency": 1.0})
