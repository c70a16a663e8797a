"""Classes whose prompt and output lengths vary: the record, its moments, the queues and the plans.

The simulations draw service and hold times from a gamma distribution of the stated squared
coefficient of variation (seeded, 200,000 arrivals: a few per cent of sampling error on a mean,
more on a p99). Below v = 1 the tails are bounds; from v = 1 (exponential: M/M/1 and M/M/c exact)
they are approximations, held to within TAIL_RTOL of the simulation.
"""

from __future__ import annotations

import heapq
import json
import math
from statistics import NormalDist

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodels.queueing import bulk_max_rate_per_s, bulk_wait_s, slot_max_rate_per_s, slot_wait_s
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.instance.schema import LengthDistribution, TrafficClass
from placement.core.pipeline.solve import solve
from placement.core.replicas.evaluate import decode_context_tokens, max_context_tokens
from placement.core.replicas.queues import prompt_tail_ratio, ttft_tail
from placement.core.verify.verifier import verify

ARRIVALS = 200_000
SAMPLING = 0.04
#: The M/G/c mean (Lee–Longton interpolation between M/D/c and M/M/c) against simulation.
MGC_RTOL = 0.15
TAIL_RTOL = 0.1

BASE = {"name": "c", "rate_rps": 1, "prompt_tokens": 1000, "output_tokens": 400, "ttft_ms": 2000, "tpot_ms": 50}


def _gamma(mean: float, squared_cv: float, n: int, rng: np.random.Generator) -> np.ndarray:
    if squared_cv == 0:
        return np.full(n, mean)
    return rng.gamma(1.0 / squared_cv, mean * squared_cv, n)


def simulate_mg1(rate_per_s: float, mean_s: float, squared_cv: float, seed: int = 3) -> np.ndarray:
    """Waits of an M/G/1 queue, first come first served (warm-up dropped)."""
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1.0 / rate_per_s, ARRIVALS))
    service = _gamma(mean_s, squared_cv, ARRIVALS, rng)
    wait, free = np.empty(ARRIVALS), 0.0
    for k, t in enumerate(arr):
        start = max(t, free)
        wait[k], free = start - t, start + service[k]
    return wait[ARRIVALS // 10:]


def simulate_mgc(rate_per_s: float, mean_s: float, squared_cv: float, slots: int, seed: int = 3) -> np.ndarray:
    """Waits for one of ``slots`` slots with gamma holds, first come first served (warm-up dropped)."""
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1.0 / rate_per_s, ARRIVALS))
    hold = _gamma(mean_s, squared_cv, ARRIVALS, rng)
    free, wait = [0.0] * slots, np.empty(ARRIVALS)
    for k, t in enumerate(arr):
        start = max(t, heapq.heappop(free))
        wait[k] = start - t
        heapq.heappush(free, start + hold[k])
    return wait[ARRIVALS // 10:]


# ---- the record ---------------------------------------------------------------------------


def test_histogram_moments_are_the_weighted_ones():
    tokens, weights = np.array([128, 512, 2048, 8192]), np.array([4, 3, 2, 1])
    d = LengthDistribution(histogram=list(zip(tokens.tolist(), weights.tolist(), strict=True)))
    w = weights / weights.sum()
    mean = float(w @ tokens)
    assert d.mean() == pytest.approx(mean)
    assert d.squared_cv(mean) == pytest.approx(float(w @ tokens**2) / mean**2 - 1)
    assert d.inverse_mean(mean) == pytest.approx(float(w @ (1 / tokens)))
    assert [d.quantile(mean, q) for q in (0.1, 0.4, 0.41, 0.7, 0.71, 0.99)] == [128, 128, 512, 512, 2048, 8192]


@pytest.mark.parametrize("cv", [0.2, 1.0, 2.5])
def test_lognormal_shape_keeps_the_class_mean_and_cv(cv):
    d = LengthDistribution(cv=cv)
    # integrate the quantile function over the normal scale: E[f(x)] = ∫ f(x(Φ(z))) φ(z) dz
    z = np.linspace(-7.5, 7.5, 6001)
    phi = np.exp(-z**2 / 2) / math.sqrt(2 * math.pi) * (z[1] - z[0])
    x = np.array([d.quantile(300.0, NormalDist().cdf(float(t))) for t in z])
    assert float(phi @ x) == pytest.approx(300.0, rel=1e-3)
    assert float(phi @ x**2) / 300.0**2 - 1 == pytest.approx(d.squared_cv(300.0), rel=1e-2)
    assert d.squared_cv(300.0) == pytest.approx(cv**2)
    assert d.inverse_mean(300.0) == pytest.approx(float(phi @ (1.0 / x)), rel=1e-3)


@pytest.mark.parametrize("bad", [{}, {"cv": 0.5, "histogram": [[10, 1]]}, {"histogram": []},
                                 {"histogram": [[0, 1]]}, {"histogram": [[10, -1]]}, {"cv": -1}, {"shape": "x"}])
def test_a_distribution_says_one_thing(bad):
    with pytest.raises(ValueError):
        LengthDistribution.model_validate(bad)


def test_a_histogram_must_have_the_class_mean():
    TrafficClass(**{**BASE, "output_tokens": 200}, output_lengths={"histogram": [[100, 1], [300, 1]]})
    with pytest.raises(ValueError, match=r"output_tokens 400 is not the mean of output_lengths.histogram \(200"):
        TrafficClass(**BASE, output_lengths={"histogram": [[100, 1], [300, 1]]})


def test_a_bad_histogram_in_a_file_is_a_clear_error(tmp_path):
    inst = {"name": "bad", "model": "llama-3.1-8b",
            "workload": {"classes": [{**BASE, "prompt_lengths": {"histogram": [[500, 1], [700, "x"]]}}]},
            "hardware": {"domains": [{"name": "h100", "chip": "h100", "count": 2}]}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(inst))
    result = CliRunner().invoke(app, ["solve", str(path)])
    assert result.exit_code == 2
    assert "bad.json" in result.output and "prompt_lengths" in result.output and "Traceback" not in result.output


# ---- what the shape changes -----------------------------------------------------------------


def test_slots_hold_length_biased_contexts():
    same, varied = TrafficClass(**BASE), TrafficClass(**BASE, output_lengths={"cv": 1.0})
    assert decode_context_tokens(same) == 1000 + 400 / 2
    assert decode_context_tokens(varied) == pytest.approx(1000 + 400 * 2 / 2)   # E[o²]/(2E[o]) = ō(1 + cv²)/2
    assert max_context_tokens(varied) == pytest.approx(1000 + 800)
    # by definition: over slot-steps of requests o ~ histogram, the mean context c + p + j, j = 1..o
    hist = [[100, 3], [400, 2], [1600, 1]]
    cls = TrafficClass(**{**BASE, "output_tokens": 450}, output_lengths={"histogram": hist})
    steps = np.concatenate([np.repeat(1000 + np.arange(1, o + 1), w) for o, w in hist])
    assert decode_context_tokens(cls) == pytest.approx(float(steps.mean()), rel=2e-3)


def test_a_percentile_ttft_takes_the_prompt_at_its_tail():
    cls = TrafficClass(**BASE, slo_percentile="p99", prompt_lengths={"cv": 0.5})
    assert ttft_tail(cls) == pytest.approx(0.01 / 3)
    s2 = math.log(1.25)
    assert prompt_tail_ratio(cls) == pytest.approx(math.exp(math.sqrt(s2) * 2.7131 - s2 / 2), rel=1e-3)
    assert prompt_tail_ratio(TrafficClass(**BASE, prompt_lengths={"cv": 0.5})) == 1.0   # a mean SLO
    assert ttft_tail(TrafficClass(**BASE, slo_percentile="p99")) == pytest.approx(0.005)


@pytest.mark.parametrize("v", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_varied_service_is_pollaczek_khinchine(v, rho):
    w = simulate_mg1(rho, 1.0, v)
    assert float(bulk_wait_s(1.0, 1, rho, squared_cv=v)) == pytest.approx(w.mean(), rel=SAMPLING)
    margin = SAMPLING if v < 1 else TAIL_RTOL
    for p in (0.9, 0.99):
        assert float(bulk_wait_s(1.0, 1, rho, 1 - p, squared_cv=v)) >= np.quantile(w, p) * (1 - margin)
    # the rate for a budget is the inverse of the wait
    rate = float(bulk_max_rate_per_s(1.0, 1, 2.0, squared_cv=v))
    assert float(bulk_wait_s(1.0, 1, rate, squared_cv=v)) == pytest.approx(2.0, rel=1e-9)
    assert rate < float(bulk_max_rate_per_s(1.0, 1, 2.0))


@pytest.mark.parametrize("slots", [4, 32])
@pytest.mark.parametrize("v", [0.5, 1.0, 2.0])
def test_varied_holds_wait_as_mgc(slots, v):
    rho = 0.7
    w = simulate_mgc(rho * slots, 1.0, v, slots)
    mean = float(slot_wait_s(slots, 1.0, rho * slots, hold_squared_cv=v))
    assert abs(mean - w.mean()) <= MGC_RTOL * w.mean() + 1e-3
    margin = SAMPLING if v < 1 else TAIL_RTOL
    for p in (0.9, 0.99):
        assert float(slot_wait_s(slots, 1.0, rho * slots, 1 - p, hold_squared_cv=v)) >= np.quantile(w, p) * (1 - margin)
    rate, wait = slot_max_rate_per_s(slots, 1.0, 0.05, None, hold_squared_cv=v)
    plain, _ = slot_max_rate_per_s(slots, 1.0, 0.05, None)
    assert 0 < float(wait) <= 0.05 and float(rate) < float(plain)


# ---- plans -------------------------------------------------------------------------------------


def _instance(**shape) -> dict:
    chat = {"name": "chat", "rate_rps": 60, "prompt_tokens": 1500, "output_tokens": 300, "ttft_ms": 1500,
            "tpot_ms": 40, "slo_percentile": "p99", **shape}
    return {"name": "lengths", "model": "llama-3.1-8b", "modes": ["pd", "aggregated"],
            "workload": {"classes": [chat]},
            "hardware": {"switches": ["tor"], "domains": [
                {"name": "h100", "chip": "h100", "chips_per_domain": 8, "count": 4, "switch": "tor"}]}}


@pytest.fixture(scope="module")
def plans():
    shapes = {"same": {}, "mild": {"prompt_lengths": {"cv": 0.5}, "output_lengths": {"cv": 0.5}},
              "wide": {"prompt_lengths": {"cv": 1.5}, "output_lengths": {"cv": 1.5}}}
    return {k: (inst := parse_instance(_instance(**v)), solve(inst, backend="highs")) for k, v in shapes.items()}


def test_varied_lengths_cost_more_and_the_verifier_agrees(plans):
    costs = []
    for inst, plan in plans.values():
        assert plan.status == "optimal" and plan.verified, plan.violations
        assert verify(Context.of(inst), plan) == []
        costs.append(plan.cost_usd_per_hour)
    assert costs == sorted(costs) and costs[-1] > costs[0]


def test_a_plan_for_equal_lengths_fails_verification_when_they_vary(plans):
    _, plan = plans["same"]
    inst, _ = plans["wide"]
    assert verify(Context.of(inst), plan)


def test_the_benchmark_script_draws_the_class_lengths(plans):
    from placement.deploy import build

    inst, plan = plans["wide"]
    script = build(plan, fmt="k8s", engine="vllm", instance=inst)["bench.sh"]
    line = next(ln for ln in script.splitlines() if ln.startswith("aiperf"))
    assert "--synthetic-input-tokens-mean 1500 --synthetic-input-tokens-stddev 2250 " in line   # σ = 1.5 · 1500
    assert "--output-tokens-mean 300 --output-tokens-stddev 450 " in line
    _, same = plans["same"]
    line = next(ln for ln in build(same, fmt="k8s", engine="vllm", instance=plans["same"][0])["bench.sh"].splitlines()
                if ln.startswith("aiperf"))
    assert "--synthetic-input-tokens-stddev 0 " in line and "--output-tokens-stddev 0 " in line
