"""The serving framework as an instance input: its request latency enters every pool's TTFT."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import placement
from costmodels.frameworks import framework_entry, framework_names
from placement import load_instance
from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate

ROOT = Path(__file__).resolve().parents[1]


def _toy(tmp_path: Path, framework: str | None, ttft_ms: float = 2000.0, **serving) -> placement.Instance:
    """melange-toy priced by the roofline (no measured capacities): one class, the A100 domain group."""
    doc = yaml.safe_load((ROOT / "instances" / "melange-toy.yaml").read_text())
    doc.pop("measured_capacity")
    doc["only_measured"] = False
    doc["workload"]["classes"] = [{**doc["workload"]["classes"][0], "ttft_ms": ttft_ms}]
    doc["hardware"]["domains"] = [d for d in doc["hardware"]["domains"] if d["chip"] == "a100-80gb"]
    if framework is not None:
        doc["serving"] = {"framework": framework, **serving}
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_instance(path)


def test_catalogue_lists_the_measured_frameworks_and_pooled_adds_nothing():
    assert framework_names() == ["pooled", "sglang", "trtllm", "vllm"]
    assert framework_entry("pooled").ttft_request_latency_s == 0.0
    lat = [framework_entry(f).ttft_request_latency_s for f in ("vllm", "trtllm", "sglang")]
    assert 0 < lat[0] < lat[1] < lat[2] < 1.0  # the order the measured light-load TTFT excess shows


def test_catalogued_latencies_are_the_calibration_fit_to_the_millisecond():
    fits = json.loads((ROOT / "benchmarks" / "calibration_results.json").read_text())["ttft_frameworks"]
    assert sorted(fits) == ["sglang", "trtllm", "vllm"]
    for name, fit in fits.items():
        entry = framework_entry(name)
        assert entry.ttft_request_latency_s == round(fit["ttft_request_latency_s"], 3)
        assert entry.ttft_request_latency_fit["rows"] == fit["rows"]


def test_unknown_framework_is_an_input_error_listing_the_known_ones(tmp_path):
    with pytest.raises(InputError, match=r"serving\.framework.*'tgi'.*known: pooled, sglang, trtllm, vllm"):
        _toy(tmp_path, "tgi")


def test_serving_forbids_extra_fields(tmp_path):
    with pytest.raises(InputError, match=r"serving\.latency_ms"):
        _toy(tmp_path, "vllm", latency_ms=5)


@pytest.mark.parametrize("kind", ["aggregated", "prefill"])
def test_every_pool_ttft_rises_by_exactly_the_framework_latency(tmp_path, kind):
    """Hand check: at a loose SLO the queue runs at its utilisation cap in both plans, so the wait is the
    same and the TTFT differs by the catalogued latency alone (vLLM's, as costmodels/catalog/frameworks.yaml states it)."""
    base, vllm = _toy(tmp_path, None), _toy(tmp_path, "vllm")
    main = PartLayout(chip="a100-80gb", site_resource="a100-80gb@1", chips=1, tp=1, ep=1, pp=1)
    cls = base.workload.classes[0]
    cfg = PoolConfig(kind=kind, traffic_class=cls.name, main=main, batch=4 if kind == "prefill" else 16,
                     chunk_tokens=2048 if kind == "aggregated" else None)
    p0, p1 = evaluate(Context.of(base), cfg, cls), evaluate(Context.of(vllm), cfg, cls)
    catalogued = yaml.safe_load((ROOT / "costmodels/catalog/frameworks.yaml").read_text())["frameworks"]["vllm"]
    lat = framework_entry("vllm").ttft_request_latency_s
    assert lat == catalogued["ttft_request_latency_s"] > 0
    assert float(p1.ttft_s) - float(p0.ttft_s) == pytest.approx(lat, abs=1e-12)
    assert float(p1.capacity_rps) == pytest.approx(float(p0.capacity_rps))


def test_framework_latency_over_the_slo_is_infeasible_and_diagnosed(tmp_path):
    inst = _toy(tmp_path, "sglang", ttft_ms=250.0)
    plan = placement.solve(inst)
    assert plan.status == "infeasible"
    ms = f"{framework_entry('sglang').ttft_request_latency_s * 1e3:.0f}"
    assert float(ms) > 250
    assert any(f"sglang framework request latency alone is {ms} ms, over the SLO" in s for s in plan.diagnosis)
    assert plan.notes[0].startswith(f"serving framework sglang: every pool's TTFT includes its request latency of {ms}")


def test_verifier_rederives_the_framework_latency(tmp_path):
    """A plan made without the framework's latency fails the check of the same instance with it."""
    base, vllm = _toy(tmp_path, None), _toy(tmp_path, "vllm")
    plan = placement.solve(base)
    assert plan.status == "optimal" and placement.check(base, plan).ok
    bad = placement.check(vllm, plan)
    assert not bad.ok and any("ttft_ms" in v for v in bad.violations)


def test_latency_fit_minimises_the_group_weighted_log_error():
    """Three rows, one per group: the fit sits on a break point (measured − prefill) and beats a grid."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from ttft_framework import fit_latency_s

    p, m = np.array([0.01, 0.02, 0.05]), np.array([0.11, 0.12, 0.30])
    lat = fit_latency_s(p, m, ["a", "b", "c"])
    assert lat == pytest.approx(0.1)  # two rows met, the third at half (0.69) beats meeting it (0.86 + 0.81)

    def loss(x):
        return np.abs(np.log((p + x) / m)).sum()

    assert all(loss(lat) <= loss(x) + 1e-12 for x in np.linspace(0.0, 0.5, 501))
    assert fit_latency_s(p, np.array([0.005, 0.01, 0.02]), ["a", "b", "c"]) == 0.0  # never negative


def test_confidence_prices_prefill_and_request_latency_at_the_framework_band(tmp_path):
    """With a framework and a confidence, a calibrated chip's prefill steps and the request latency take the
    framework's TTFT quantile; an uncalibrated chip's prefill keeps its own (wider) band; pooled has none."""
    from costmodels.bands import chip_band, framework_band, interpolate_quantile
    from placement.core.replicas.evaluate import framework_latency_s, step_factor

    assert framework_band("pooled") is None
    levels, q = framework_band("vllm")
    assert len(levels) == len(q) == 19 and list(q) == sorted(q)
    inst = _toy(tmp_path, "vllm")
    doc = inst.model_dump(mode="json", exclude_defaults=True)
    doc["hardware"]["domains"].append({"name": "h100-pool", "chip": "h100", "chips_per_domain": 1, "count": 2})
    ctx = Context.of(placement.Instance.model_validate({**doc, "confidence": 0.9}))
    h100 = PartLayout(chip="h100", site_resource="h100@1", chips=1, tp=1, ep=1, pp=1)
    a100 = PartLayout(chip="a100-80gb", site_resource="a100-80gb@1", chips=1, tp=1, ep=1, pp=1)
    f90 = interpolate_quantile(levels, q, 0.9)
    assert step_factor(ctx, h100, "prefill") == f90 and chip_band("h100").family != "uncalibrated"
    assert step_factor(ctx, a100, "prefill") == chip_band("a100-80gb").factor("ttft", 0.9) != f90
    assert step_factor(ctx, h100, "decode") == chip_band("h100").factor("tpot", 0.9)
    assert framework_latency_s(ctx) == pytest.approx(framework_entry("vllm").ttft_request_latency_s * f90)


def test_plan_bands_take_the_framework_ttft_band_on_calibrated_chips_only():
    from costmodels.bands import chip_band, framework_band
    from placement.core.plans.confidence import with_framework

    h100, a100 = chip_band("h100"), chip_band("a100-80gb")
    assert with_framework(h100, "pooled") == h100 and with_framework(a100, "vllm") == a100
    mixed = with_framework(h100, "vllm")
    assert mixed.quantiles["ttft"] == framework_band("vllm")[1] and mixed.quantiles["tpot"] == h100.quantiles["tpot"]
    assert "vllm framework band" in mixed.provenance
