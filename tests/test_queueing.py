"""Queueing: batched prefill, admission to decode slots, percentile SLOs — formulas against a simulation.

The discrete-event simulations are exact for their models (Poisson arrivals,
deterministic service) and seeded; with 60,000 arrivals the sampling error of
a mean or a p90/p99 near ρ = 0.9 is a few per cent, hence the stated margins.
"""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from costmodels.queueing import (
    bulk_max_rate_per_s,
    bulk_wait_s,
    erlang_c,
    md1_wait_s,
    slot_max_rate_per_s,
    slot_wait_s,
)
from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance, parse_instance
from placement.core.pipeline.solve import solve
from placement.core.plans.plan import class_latencies_ms, replica_load_rps
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.replicas.queues import ADMISSION_SHARE, MAX_UTILISATION, at_load
from placement.core.verify.facts import derive
from placement.core.verify.serving import check_slos_and_memory
from placement.core.verify.verifier import verify
from placement.modes.pd import prefill_batches

ARRIVALS = 60_000
#: Sampling error allowed on a simulated mean (Pollaczek–Khinchine is exact at b = 1: only noise remains).
SAMPLING = 0.06
#: Cosmetatos's M/D/c mean against the simulation: stated error (its own error plus sampling).
COSMETATOS_RTOL = 0.12


def _arrivals(rate_per_s: float, seed: int) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate_per_s, ARRIVALS))


def simulate_bulk(rate_per_s: float, interval_s: float, batch: int, seed: int = 7) -> np.ndarray:
    """Waits of a server that, when free, starts a step of I on up to ``batch`` waiting prompts (warm-up dropped)."""
    arr = _arrivals(rate_per_s, seed)
    wait = np.empty(arr.size)
    free, i = 0.0, 0
    while i < arr.size:
        start = max(free, arr[i])
        j = min(i + batch, int(np.searchsorted(arr, start, "right")))
        wait[i:j] = start - arr[i:j]
        free, i = start + interval_s, j
    return wait[arr.size // 10:]


def simulate_slots(rate_per_s: float, hold_s: float, slots: int, seed: int = 7) -> np.ndarray:
    """Waits for one of ``slots`` slots each held ``hold_s``, first come first served (warm-up dropped)."""
    arr = _arrivals(rate_per_s, seed)
    free = [0.0] * slots
    wait = np.empty(arr.size)
    for k, t in enumerate(arr):
        start = max(t, heapq.heappop(free))
        wait[k] = start - t
        heapq.heappush(free, start + hold_s)
    return wait[arr.size // 10:]


# ---- formulas -------------------------------------------------------------------------


def test_erlang_c_known_values():
    assert erlang_c(1, 0.7) == pytest.approx(0.7)
    assert erlang_c(2, 0.5) == pytest.approx(1 / 3)
    # Textbook: c = 10, a = 8 Erlangs -> C = 0.409
    assert erlang_c(10, 0.8) == pytest.approx(0.40918, abs=1e-4)
    assert erlang_c(4096, 0.5) == pytest.approx(0.0, abs=1e-12)


def test_bulk_of_one_is_md1_and_batches_only_help():
    lam = np.linspace(0.05, 0.85, 9)
    assert np.allclose(bulk_wait_s(1.0, 1, lam), md1_wait_s(1.0, lam))
    caps = [float(bulk_max_rate_per_s(1.0, b, 2.0)) for b in (1, 2, 4, 8)]
    assert caps == sorted(caps) and caps[-1] > 4 * caps[0]
    for tail in (None, 0.05, 0.005):
        rate = bulk_max_rate_per_s(1.0, 4, 3.0, tail)
        assert float(bulk_wait_s(1.0, 4, rate, tail)) == pytest.approx(3.0, rel=1e-6)


@pytest.mark.parametrize("batch", [1, 4, 16])
@pytest.mark.parametrize("rho", [0.3, 0.6, 0.85])
def test_bulk_mean_bound_and_tail_are_conservative(batch, rho):
    lam = rho * batch
    w = simulate_bulk(lam, 1.0, batch)
    assert float(bulk_wait_s(1.0, batch, lam)) >= w.mean() * (1 - SAMPLING)
    if batch == 1:
        assert float(bulk_wait_s(1.0, batch, lam)) == pytest.approx(w.mean(), rel=SAMPLING)
    for p in (0.5, 0.9, 0.99):
        assert float(bulk_wait_s(1.0, batch, lam, 1 - p)) >= np.quantile(w, p) * (1 - SAMPLING)


@pytest.mark.parametrize("slots", [1, 4, 16, 64])
@pytest.mark.parametrize("rho", [0.3, 0.6, 0.85, 0.9])
def test_slot_mean_within_stated_error_and_tail_conservative(slots, rho):
    lam = rho * slots
    w = simulate_slots(lam, 1.0, slots)
    mean = float(slot_wait_s(slots, 1.0, lam))
    assert abs(mean - w.mean()) <= COSMETATOS_RTOL * w.mean() + 2e-3
    for p in (0.5, 0.9, 0.99):
        assert float(slot_wait_s(slots, 1.0, lam, 1 - p)) >= np.quantile(w, p) * (1 - SAMPLING)


def test_slot_capacity_meets_its_budget_in_simulation():
    # 16 slots held 10 s, p99 wait ≤ 1 s: the chosen rate, simulated, keeps the p99 wait within the budget.
    rate, wait = slot_max_rate_per_s(16, 10.0, 1.0, 0.01, max_utilisation=1.0)
    assert 0 < float(wait) <= 1.0
    assert np.quantile(simulate_slots(float(rate), 10.0, 16), 0.99) <= 1.0
    # one grid step more would break the budget: the rate is the highest on the grid
    assert float(slot_wait_s(16, 10.0, float(rate) * (1 + 1e-3) + 16 / 10.0 / 2000, 0.01)) > 1.0
    mean_rate, _ = slot_max_rate_per_s(16, 10.0, 1.0, None, max_utilisation=1.0)
    assert float(mean_rate) > float(rate)



def _slot_rate_by_definition(servers, hold_s, budget_s, tail, max_utilisation):
    """:func:`slot_max_rate_per_s` point by point: the last grid utilisation before the first whose
    scaled wait times H exceeds the budget (the running maximum of the row, so later dips do not count)."""
    from costmodels.queueing import _UTILISATION_GRID, _slot_wait_scaled

    size = int(np.count_nonzero(_UTILISATION_GRID <= max_utilisation * (1 + 1e-12)))
    grid = _UTILISATION_GRID[:size]
    rates, waits = [], []
    for c, h in zip(np.ravel(servers), np.ravel(hold_s), strict=True):
        scaled = _slot_wait_scaled(float(c), grid, np.asarray(erlang_c(float(c), grid)), tail)
        top = np.maximum.accumulate(np.where(np.isnan(scaled), -np.inf, scaled))
        over = np.flatnonzero(top * h > budget_s)
        k = (over[0] if over.size else size) - 1
        rates.append(grid[k] * c / h if k > 0 else 0.0)
        waits.append(scaled[k] * h if k > 0 else 0.0)
    return np.array(rates), np.array(waits)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the infinite hold: inf·0
@pytest.mark.parametrize("tail", [None, 0.05])
def test_slot_rate_is_the_definition_on_first_and_repeated_tables(tail, monkeypatch):
    # The first call with a set of slot counts bisects; later calls search the sorted table (sorted from
    # the second call on here, whatever the queries): both give what the definition gives, bit for bit,
    # holds spread over eight decades.
    monkeypatch.setattr("costmodels.queueing._SORT_QUERIES_PER_POINT", 0.0)
    rng = np.random.default_rng(3)
    servers = np.array([1, 3, 16, 64, 250])
    for _ in range(3):
        hold = rng.lognormal(0.0, 4.0, size=(4, servers.size))
        hold[0, 0], hold[1, 1] = 1e6, np.inf  # one slot held too long to admit anyone; an unusable hold
        rate, wait = slot_max_rate_per_s(servers, hold, 0.05, tail, max_utilisation=0.9)
        want_rate, want_wait = _slot_rate_by_definition(np.broadcast_to(servers, hold.shape), hold, 0.05, tail, 0.9)
        assert rate.ravel().tobytes() == want_rate.tobytes() and wait.ravel().tobytes() == want_wait.tobytes()
        assert (rate > 0).any() and (rate == 0).any()


# ---- the serving modes ------------------------------------------------------------------


@pytest.fixture(scope="module")
def rubin():
    return Context.of(load_instance("instances/rubin-lpx-deepseek.yaml"))


def _rubin(chips: int, tp: int, pp: int) -> PartLayout:
    return PartLayout(chip="rubin", site_resource="rubin@72", chips=chips, tp=tp, ep=tp, pp=pp)


def _with_percentile(ctx: Context, name: str, percentile: str, ttft_ms: float):
    return ctx.classes[name].model_copy(update={"slo_percentile": percentile, "ttft_ms": ttft_ms})


def test_batched_moe_prefill_reads_experts_once_per_batch(rubin):
    cls = rubin.classes["chat"]
    assert prefill_batches(cls).tolist() == [1, 2, 4, 8, 16, 32]
    cfg = PoolConfig(kind="prefill", traffic_class="chat", main=_rubin(4, 1, 4), batch=1)
    b = np.array([1.0, 16.0])
    perf = evaluate(rubin, cfg, cls, batch=b)
    # b = 1: one prompt per stage time t/4; b = 16: 16 prompts per t, all four stages busy, t barely longer
    assert perf.capacity_rps[1] > 3.5 * perf.capacity_rps[0]
    # the TTFT part, waits included, stays within the prefill's share of the SLO
    assert np.all(perf.ttft_s <= (1 - ADMISSION_SHARE) * cls.ttft_s * (1 + 1e-9))


def test_decode_slots_wait_and_are_not_full(rubin):
    cls = rubin.classes["chat"]
    cfg = PoolConfig(kind="decode", traffic_class="chat", main=_rubin(8, 8, 1), batch=1)
    b = np.array([8.0, 64.0, 256.0])
    perf = evaluate(rubin, cfg, cls, batch=b)
    full = b / (cls.output_tokens * perf.tpot_s)
    assert np.all(perf.capacity_rps <= MAX_UTILISATION * full * (1 + 1e-9))
    assert perf.capacity_rps[0] < 0.85 * full[0]           # 8 slots held 500 tokens: admission binds
    assert np.all(perf.ttft_s > 0) and np.all(perf.ttft_s <= ADMISSION_SHARE * cls.ttft_s * (1 + 1e-9))


@pytest.mark.parametrize("kind", ["prefill", "decode"])
def test_a_percentile_slo_costs_capacity(rubin, kind):
    layout = _rubin(4, 1, 4) if kind == "prefill" else _rubin(8, 8, 1)
    cfg = PoolConfig(kind=kind, traffic_class="chat", main=layout, batch=1)
    b = np.array([1.0, 8.0]) if kind == "prefill" else np.array([16.0, 64.0])
    ttft_ms = 250.0 if kind == "prefill" else 2000.0   # the prefill's budget a few steps: the tail binds
    caps = [evaluate(rubin, cfg, _with_percentile(rubin, "chat", p, ttft_ms), batch=b).capacity_rps
            for p in ("mean", "p90", "p99")]
    assert np.all(caps[0] >= caps[1]) and np.all(caps[1] >= caps[2]) and np.any(caps[0] > caps[2])


def test_aggregated_ttft_includes_both_waits(rubin):
    cls = rubin.classes["chat"]
    cfg = PoolConfig(kind="aggregated", traffic_class="chat", main=_rubin(8, 8, 1), batch=1, chunk_tokens=2048)
    perf = evaluate(rubin, cfg, cls, batch=np.array([32.0]))
    steps = np.ceil(cls.prompt_tokens / 2048) * perf.tpot_s
    assert perf.ttft_s[0] > steps[0]                        # more than the prompt's steps alone


def test_route_ttft_adds_prefill_and_slot_wait():
    pools = [(["a|pd|prefill"], 400.0, None), (["a|pd|prefill"], 500.0, None), (["a|pd|decode"], 30.0, 20.0)]
    assert class_latencies_ms("a", pools) == (530.0, 20.0)


# ---- plans ----------------------------------------------------------------------------------


SMALL = {
    "name": "small-pd", "model": "llama-2-7b", "modes": ["pd"],
    "workload": {"classes": [
        {"name": "chat", "rate_rps": 40, "prompt_tokens": 1000, "output_tokens": 300, "ttft_ms": 800, "tpot_ms": 40},
        {"name": "tail", "rate_rps": 10, "prompt_tokens": 2000, "output_tokens": 200, "ttft_ms": 1500, "tpot_ms": 60,
         "slo_percentile": "p99"}]},
    "hardware": {"switches": ["tor"], "domains": [
        {"name": "a100-pool", "chip": "a100-80gb", "chips_per_domain": 8, "count": 4, "switch": "tor"}]},
}


@pytest.fixture(scope="module")
def small_plan():
    inst = parse_instance(SMALL)
    return inst, solve(inst, backend="highs")


def test_plan_reports_waits_and_the_verifier_rederives_them(small_plan):
    inst, plan = small_plan
    assert plan.status == "optimal" and plan.verified, plan.violations
    decode = [p for p in plan.pools if p.stage in ("decode", "aggregated")]
    # the slot wait at the plan's load (0 when slots are rarely all busy)
    assert decode and all(p.ttft_ms is not None and p.ttft_ms >= 0 for p in decode)
    assert any("pd" in cp.modes for cp in plan.classes)
    for cp in plan.classes:
        parts = [p.ttft_ms for p in plan.pools if p.traffic_class == cp.name and p.ttft_ms is not None
                 and p.part == 0]
        assert cp.ttft_ms >= max(parts)                 # prefill part + slot wait along the worst route
        assert cp.ttft_ms <= cp.ttft_slo_ms * (1 + 1e-9)
    ctx = Context.of(inst)
    tampered = plan.model_copy(deep=True)
    tampered.pools[[p.id for p in plan.pools].index(decode[0].id)].ttft_ms += 1.0
    assert any("ttft_ms" in v for v in verify(ctx, tampered))


def test_pools_report_latencies_at_the_plans_load(small_plan):
    inst, plan = small_plan
    ctx = Context.of(inst)
    below = 0
    for pool in plan.pools:
        if pool.part or pool.ttft_ms is None:
            continue
        cls = ctx.classes[pool.traffic_class]
        rated = evaluate(ctx, pool.config, cls)
        load = replica_load_rps(pool.sites)
        assert load <= float(rated.capacity_rps) * (1 + 1e-9)
        assert pool.ttft_ms <= float(rated.ttft_s) * 1e3 * (1 + 1e-9)   # never above its wait at capacity
        with at_load(load):
            assert float(evaluate(ctx, pool.config, cls).ttft_s) * 1e3 == pytest.approx(pool.ttft_ms, rel=1e-12)
        with at_load(float(rated.capacity_rps)):  # at its capacity, the rated TTFT
            assert float(evaluate(ctx, pool.config, cls).ttft_s) == pytest.approx(float(rated.ttft_s), rel=1e-12)
        below += pool.utilisation < 0.9 and pool.ttft_ms < float(rated.ttft_s) * 1e3 * (1 - 1e-6)
    assert below  # a pool loaded below its capacity waits less than at it


def test_verifier_checks_the_route_ttft_end_to_end(small_plan):
    inst, plan = small_plan
    ctx = Context.of(inst)
    facts = derive(ctx, plan)
    assert check_slos_and_memory(ctx, plan, facts) == []
    # each pool within the SLO alone, the decode slot wait pushing its route beyond it
    cls = ctx.classes[plan.classes[0].name]
    for f in facts:
        if f.main and f.pool.traffic_class == cls.name and f.ttft_ms is not None:
            f.ttft_ms = 0.6 * cls.ttft_ms
    violations = check_slos_and_memory(ctx, plan, facts)
    assert any(f"class {cls.name}: TTFT" in v and "worst route" in v for v in violations), violations
    assert not any(v.startswith("pool") for v in violations)


def test_busy_is_the_servers_share_of_time_at_the_plans_load(small_plan):
    inst, plan = small_plan
    ctx = Context.of(inst)
    for pool in plan.pools:
        if pool.part:
            continue
        cfg, load = pool.config, replica_load_rps(pool.sites)
        cls = ctx.classes[pool.traffic_class]
        perf = evaluate(ctx, cfg, cls)
        if pool.stage == "decode":   # slots each held o·TPOT: λ·H/B
            want = load * cls.output_tokens * float(perf.tpot_s) / cfg.batch
            assert pool.busy == pytest.approx(want, rel=1e-5)
        assert 0 < pool.busy <= MAX_UTILISATION * (1 + 1e-6) and pool.busy <= pool.utilisation + 1e-6
    tampered = plan.model_copy(deep=True)
    tampered.pools[0].busy = 0.0
    assert any("busy" in v for v in verify(ctx, tampered))
    # a plan of layout 2 states waits at capacity, and is checked so
    old = plan.model_copy(deep=True, update={"provenance": plan.provenance.model_copy(update={"schema_version": "2"})})
    for f in derive(ctx, old):
        if f.main and f.ttft_ms is not None:
            rated = float(evaluate(ctx, f.pool.config, ctx.classes[f.pool.traffic_class]).ttft_s) * 1e3
            assert f.ttft_ms == pytest.approx(rated, rel=1e-12) and f.busy == f.pool.busy
