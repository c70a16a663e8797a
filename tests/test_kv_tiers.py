"""KV retention across tiers (issue 18): gap statistics, the policy rows of the MILP, plans and their check.

The solver-level tests build :class:`solvers.problem.Problem` by hand (no cost models): a
``miss`` demand served by a priced column, a ``hit`` demand by a free one, and one policy per
retention window whose cost is the holding cost. The end-to-end tests solve a tiny session
instance (Llama-3.1-8B on two H100 nodes with host and flash tiers).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.loading import load_instance, parse_instance
from placement.core.instance.sessions import (
    RETENTION_WINDOWS_S,
    Gap,
    Sessions,
    expected_min_s,
    session_hit_and_residence,
)
from placement.core.pipeline.solve import solve
from solvers.milp import relax
from solvers.milp import solve as solve_milp
from solvers.problem import Column, Demand, Part, Policy, PolicyLimit, Problem, Route, Site

TINY = {
    "name": "kv-tiny", "model": "llama-3.1-8b", "modes": ["aggregated"],
    "workload": {"classes": [
        {"name": "agent", "rate_rps": 4, "prompt_tokens": 500, "cached_prefix_tokens": 30000, "output_tokens": 100,
         "ttft_ms": 5000, "tpot_ms": 50,
         "sessions": {"steps_per_request": 5, "requests_per_session": 4,
                      "tool_gap": {"kind": "lognormal", "mean_s": 10, "median_s": 1},
                      "think_time": {"kind": "exponential", "mean_s": 300}}}]},
    "hardware": {"domains": [{"name": "h100", "chip": "h100", "count": 2,
                              "kv_tiers": [{"tier": "host"}, {"tier": "flash"}]}]},
}


def _problem(rate: float, miss_usd_per_hour: float, miss_capacity: float, policies: list[Policy],
             limits: list[PolicyLimit] | None = None) -> Problem:
    """Misses on a priced GPU column, hits on a free one; ``policies`` split the demand."""
    return Problem(
        demands=[Demand(name="miss", rate=rate), Demand(name="hit", rate=rate)],
        routes=[Route(name="rm", demand="miss", steps=["qm"]), Route(name="rh", demand="hit", steps=["qh"])],
        columns=[Column(name="gpu", parts=[Part(resource="gpu", units=1)], capacity={"qm": miss_capacity}),
                 Column(name="free", parts=[Part(resource="free", units=1)], capacity={"qh": 1e3})],
        sites=[Site(name="g", node="g", resource="gpu", units_per_domain=1, domains=1000,
                    usd_per_hour_per_unit=miss_usd_per_hour, power_w_per_unit=1.0),
               Site(name="f", node="f", resource="free", units_per_domain=1, domains=1000,
                    usd_per_hour_per_unit=0.0, power_w_per_unit=0.0)],
        policies=policies, policy_limits=limits or [])


def _policies(sessions: Sessions, rate: float, bytes_held: float, usd_per_byte_hour: float) -> tuple[list[Policy], dict]:
    out = [Policy(name="none", group="c", demands={"miss": 1.0})]
    info = {"none": (0.0, 0.0)}
    for w in RETENTION_WINDOWS_S:
        h, r = session_hit_and_residence(sessions, w)
        name = f"w{w:g}"
        out.append(Policy(name=name, group="c", demands={"hit": h, "miss": 1.0 - h},
                          cost=rate * r * bytes_held * usd_per_byte_hour))
        info[name] = (h, r)
    return out, info


def _exponential(mean_s: float) -> Sessions:
    # One step per request and (almost) endless sessions: every gap is a think time.
    return Sessions(steps_per_request=1, requests_per_session=1e6, tool_gap=Gap(kind="exponential", mean_s=1.0),
                    think_time=Gap(kind="exponential", mean_s=mean_s))


@pytest.mark.parametrize(("usd_per_byte_hour", "want"), [(1e-13, "w14400"), (1e-11, "none")])
def test_exponential_gaps_best_window_is_closed_form(usd_per_byte_hour, want):
    """One tier, exponential gaps of mean m, λ calls/s, B bytes per session, holding price c ($/byte-h),
    misses served by replicas of price P ($/h) serving κ misses/s each, so R = P/κ ($/h per call/s).
    Under window T, h = 1 − e^(−T/m) and E[min(G, T)] = m·h, so the cost per hour is

        λ·(1 − h)·R + λ·m·h·B·c = λ·R − λ·h·(R − m·B·c)

    (λ·m is a number of sessions, × B bytes × c $/byte-h). It is linear in h: if R > m·B·c (a hit saves
    more than holding the KV until the expected next call costs) the longest window is best, else none —
    memoryless gaps have no interior optimum. Here R = 20, m·B·c = 3 (keep) or 300 (recompute)."""
    rate, m, nbytes, price, cap = 2.0, 3000.0, 1e10, 1.0, 0.05
    assert (price / cap > m * nbytes * usd_per_byte_hour) == (want != "none")
    policies, _ = _policies(_exponential(m), rate, nbytes, usd_per_byte_hour)
    sol = relax(_problem(rate, price, cap, policies))
    assert max(sol.policy_shares, key=sol.policy_shares.get) == want
    assert sol.policy_shares[want] == pytest.approx(1.0)


def test_exponential_residence_closed_form():
    """E[min(G, T)] = m·(1 − e^(−T/m)) for exponential gaps; a lognormal's tends to its mean."""
    g = Gap(kind="exponential", mean_s=300.0)
    for w in RETENTION_WINDOWS_S:
        assert expected_min_s(g, w) == pytest.approx(300.0 * (1 - math.exp(-w / 300.0)))
    assert expected_min_s(Gap(kind="lognormal", mean_s=20.0, median_s=2.0), 1e12) == pytest.approx(20.0)


def test_littles_law_matches_a_simulation():
    """Time-average bytes held = λ·E[min(G, T)]·B: calls at rate λ, each holding B for min(gap, T)."""
    rng = np.random.default_rng(7)
    lam, window, nbytes, horizon = 3.0, 120.0, 5.0, 200_000.0
    gap = Gap(kind="lognormal", mean_s=200.0, median_s=40.0)
    arrivals = np.cumsum(rng.exponential(1 / lam, size=int(lam * horizon)))
    gaps = rng.lognormal(math.log(40.0), gap.sigma, size=arrivals.size)
    held = np.minimum(gaps, window)
    simulated = held.sum() * nbytes / arrivals[-1]
    assert simulated == pytest.approx(lam * expected_min_s(gap, window) * nbytes, rel=0.02)


def test_empirical_quantiles_interpolate_in_log_time():
    g = Gap(kind="empirical", quantiles={0.5: 84.0, 0.9: 1236.0, 0.99: 50040.0})
    assert g.cdf(84.0) == pytest.approx(0.5)
    assert g.cdf(math.sqrt(84.0 * 1236.0)) == pytest.approx(0.7)
    assert g.cdf(1e6) == pytest.approx(0.99)  # the top 1 % never returns within the grid
    assert expected_min_s(g, 60.0) < 60.0 < expected_min_s(g, 3600.0) < 3600.0


def test_capacity_row_limits_what_is_held():
    """A tier too small for the best window: the solver keeps exactly what fits (Little's law) and recomputes
    the rest; the mix is the LP optimum, not a rounding."""
    rate, nbytes = 2.0, 1e10
    policies, info = _policies(_exponential(300.0), rate, nbytes, 1e-13)
    best = max(info, key=lambda k: info[k][0])
    cap = 0.3 * rate * info[best][1] * nbytes
    limit = PolicyLimit(name="cap", policies={p: rate * r * nbytes for p, (_, r) in info.items() if p != "none"},
                        rhs=cap)
    sol = relax(_problem(rate, 1.0, 0.05, policies, [limit]))
    held = sum(sol.policy_shares.get(p, 0.0) * rate * r * nbytes for p, (_, r) in info.items())
    assert held == pytest.approx(cap, rel=1e-6)
    assert sol.policy_shares.get("none", 0.0) < 1.0


def _brute_force(rate, price, cap, info, costs, limit_cap, nbytes) -> float:
    """min over replicas n and every pair of policies (p, q) at share t of p, 1 − t of q: the cost is linear
    in t on the interval where misses fit n replicas and the held bytes fit the tier, so its ends suffice."""
    best = math.inf
    names = list(info)
    for n in range(200):
        for p in names:
            for q in names:
                miss = [rate * (1 - info[x][0]) for x in (p, q)]
                hold = [rate * info[x][1] * nbytes for x in (p, q)]
                lo, hi = 0.0, 1.0
                for a, b, lim in ((miss[0], miss[1], n * cap), (hold[0], hold[1], limit_cap)):
                    # t·a + (1 − t)·b ≤ lim
                    if abs(a - b) < 1e-15:
                        if b > lim * (1 + 1e-12):
                            lo, hi = 1.0, 0.0
                    elif a > b:
                        hi = min(hi, (lim - b) / (a - b))
                    else:
                        lo = max(lo, (lim - b) / (a - b))
                for t in (lo, hi):
                    if lo <= hi + 1e-12 and 0 <= t <= 1:
                        best = min(best, n * price + t * costs[p] + (1 - t) * costs[q])
    return best


def test_milp_matches_brute_force_on_a_tiny_instance():
    rate, nbytes, price, cap = 1.5, 2e10, 1.0, 0.1
    sessions = Sessions(steps_per_request=4, requests_per_session=3, tool_gap=Gap(kind="lognormal", mean_s=8,
                        median_s=0.5), think_time=Gap(kind="lognormal", mean_s=900, median_s=90))
    policies, info = _policies(sessions, rate, nbytes, 2e-12)
    costs = {p.name: p.cost for p in policies}
    limit_cap = 0.5 * rate * info["w14400"][1] * nbytes
    limit = PolicyLimit(name="cap", policies={p: rate * r * nbytes for p, (_, r) in info.items() if p != "none"},
                        rhs=limit_cap)
    sol = solve_milp(_problem(rate, price, cap, policies, [limit]), backend="highs")
    assert sol.objective == pytest.approx(_brute_force(rate, price, cap, info, costs, limit_cap, nbytes), rel=1e-6)


def test_model_reproduces_the_trace_eviction_sweep():
    """TraceLab's eviction sweep (timeout 1 / 5 / 60 min → hit rate 85.4 / 94.3 / 98.6 %) against the
    shipped instance's sessions: within 6 points at each timeout, and increasing like it."""
    inst = load_instance("instances/agentic-coding.yaml")
    s = next(c.sessions for c in inst.workload.classes if c.sessions is not None)
    hits = [session_hit_and_residence(s, w)[0] for w in (60.0, 300.0, 3600.0)]
    assert hits == sorted(hits)
    for got, want in zip(hits, (0.854, 0.943, 0.986), strict=True):
        assert abs(got - want) < 0.06


@pytest.fixture(scope="module")
def tiny_plans():
    return {mode: solve(parse_instance(TINY), backend="highs", kv_policy=mode)
            for mode in ("tiered", "hbm-only", "none")}


def test_three_policies_succeed_verify_and_are_ordered(tiny_plans):
    for plan in tiny_plans.values():
        assert plan.status == "optimal" and plan.verified, plan.violations
    cost = {m: p.cost_usd_per_hour for m, p in tiny_plans.items()}
    assert cost["tiered"] <= cost["hbm-only"] + 1e-9
    assert cost["tiered"] < cost["none"]
    none = tiny_plans["none"].classes[0].kv_retention
    assert [(e.policy, e.share) for e in none] == [("agent.none", 1.0)]


def test_tiered_plan_reports_tiers_and_retention(tiny_plans):
    plan = tiny_plans["tiered"]
    entries = plan.classes[0].kv_retention
    assert sum(e.share for e in entries) == pytest.approx(1.0)
    used = sum(u.used_gb for u in plan.kv_tiers)
    assert used == pytest.approx(sum(e.held_gb for e in entries if e.tier != "none"))
    assert all(u.used_gb <= u.capacity_gb for u in plan.kv_tiers)
    assert plan.kv_usd_per_hour == pytest.approx(sum(u.usd_per_hour for u in plan.kv_tiers))


def _check(tmp_path, doc: dict) -> tuple[int, str]:
    inst = tmp_path / "tiny.yaml"
    inst.write_text(json.dumps(TINY))
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["check", str(inst), str(path)])
    return r.exit_code, r.output


def test_check_accepts_the_plan_and_rejects_tampered_retention(tiny_plans, tmp_path):
    doc = json.loads(tiny_plans["tiered"].model_dump_json())
    assert _check(tmp_path, doc)[0] == 0
    bad = json.loads(json.dumps(doc))
    bad["classes"][0]["kv_retention"][0]["hit_rate"] = 0.999
    code, out = _check(tmp_path, bad)
    assert code == 5 and "kv_retention[0].hit_rate" in out
    bad = json.loads(json.dumps(doc))
    bad["classes"][0]["kv_retention"][0]["window_s"] = 7.0
    code, out = _check(tmp_path, bad)
    assert code == 5 and "kv_retention[0].window_s" in out
    bad = json.loads(json.dumps(doc))
    used = next(i for i, t in enumerate(bad["kv_tiers"]) if t["used_gb"] > 0)
    bad["kv_tiers"][used]["used_gb"] *= 0.5
    code, out = _check(tmp_path, bad)
    assert code == 5 and f"kv_tiers[{used}].used_gb" in out


def test_instances_without_sessions_are_unchanged():
    """No sessions: no policies, no kv fields in the plan JSON."""
    doc = {**TINY, "workload": {"classes": [{k: v for k, v in TINY["workload"]["classes"][0].items()
                                             if k != "sessions"}]}}
    plan = solve(parse_instance(doc), backend="highs")
    text = plan.model_dump_json()
    assert plan.verified and "kv_" not in text and plan.kv_policy is None


def test_kv_prices_marginal_hits_cost_more_with_longer_windows(tmp_path):
    """The hits a longer window adds cost more to hold per hit (the gap tail thins out), in every tier; the
    command prints the table with the uncached price."""
    from placement.core.instance.context import Context
    from placement.studies.kv_prices import price_rows

    ctx = Context.of(parse_instance(TINY))
    rows = price_rows(ctx, ctx.classes["agent"])
    for tier in ("hbm", "host", "flash"):
        marginal = [r[5] for r in rows if r[0] == tier]
        assert marginal == sorted(marginal) and len(marginal) == len(RETENTION_WINDOWS_S)
    inst = tmp_path / "tiny.yaml"
    inst.write_text(json.dumps(TINY))
    r = CliRunner().invoke(app, ["kv-prices", str(inst)])
    assert r.exit_code == 0 and "recomputing the prefix costs $" in r.output


def test_compare_lists_the_other_kv_policies(tiny_plans):
    from placement.studies.compare import compare

    rows = compare(parse_instance(TINY), backend="highs", full=tiny_plans["tiered"])
    kv = {r.label: r for r in rows if r.kind == "kv"}
    assert set(kv) == {"KV policy hbm-only", "KV policy none"}
    assert kv["KV policy none"].cost_usd_per_hour == pytest.approx(tiny_plans["none"].cost_usd_per_hour)
    assert kv["KV policy none"].savings > 0
    assert sum(rows[0].modes.values()) == pytest.approx(4.0)  # the session class counted once


def test_a_remote_store_needs_its_numbers_and_then_serves(tmp_path):
    """A remote KV store (Mooncake-style) has no catalogue default: without capacity, bandwidth and price the
    instance is refused naming the field (exit 2); with them the policies may use it."""
    doc = json.loads(json.dumps(TINY))
    doc["hardware"]["domains"][0]["kv_tiers"] = [{"tier": "remote"}]
    inst = tmp_path / "remote.yaml"
    inst.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["solve", str(inst), "--solver", "highs", "-q"])
    assert r.exit_code == 2 and "hardware.domains[0].kv_tiers[0]" in r.output and "capacity_gb" in r.output
    doc["hardware"]["domains"][0]["kv_tiers"] = [{"tier": "remote", "capacity_gb": 100000, "bandwidth_gb_per_s": 25,
                                                  "latency_us": 20, "usd_per_gb_hour": 0.0005}]
    plan = solve(parse_instance(doc), backend="highs")
    assert plan.verified and plan.kv_policy == "tiered"
    assert {e.tier for e in plan.classes[0].kv_retention} <= {"remote", "hbm", "none"}
    assert {u.tier for u in plan.kv_tiers} >= {"remote"}


def test_a_session_class_needs_a_cached_prefix():
    doc = json.loads(json.dumps(TINY))
    doc["workload"]["classes"][0]["cached_prefix_tokens"] = 0
    with pytest.raises(ValueError, match=r"classes\[0\]\.cached_prefix_tokens"):
        solve(parse_instance(doc), backend="highs")


def test_cli_policy_choices_are_the_library_modes():
    from placement.cli.options import KvPolicy
    from placement.core.kv.kvmodel import POLICY_MODES

    assert tuple(p.value for p in KvPolicy) == POLICY_MODES


def test_solve_summary_shows_retention_and_tiers(tiny_plans):
    from rich.console import Console

    from placement.cli.report import print_plan

    console = Console(record=True, width=160)
    print_plan(console, tiny_plans["tiered"])
    text = console.export_text()
    assert "KV retention (--kv-policy tiered)" in text and "KV tiers in use" in text


def test_a_replica_reloads_no_faster_than_its_own_links_read():
    """Llama-3.1-8B's KV in BF16 (the instance's) is 32 layers x 8 KV heads x 128 x 2 x 2 B = 131 kB a token:
    a 30,000-token prefix is 3.9 GB, and one H100 reads local flash at 7 GB/s — at most ~1.8 reloads/s, however
    fast it prefills. Host memory (63 GB/s) allows ~16/s. The tiny instance's hits therefore move from flash to
    host."""
    from placement.core.instance.context import Context
    from placement.core.kv.kvmodel import outcome_class, resolve_tiers
    from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate

    ctx = Context.of(parse_instance(TINY))
    tiers = resolve_tiers(ctx)
    for tier, gb_per_s in (("flash", 7.0), ("host", 63.0)):
        cls = outcome_class(ctx, ctx.instance.workload.classes[0], tier, tiers, 1.0)
        prefix_bytes = 32 * 8 * 128 * 2 * 2 * cls.cached_prefix_tokens   # BF16 KV of the session's mean prefix
        assert cls.prefix_reload_gb_per_s == gb_per_s and prefix_bytes > 3e9
        part = PartLayout(chip="h100", site_resource="h100@8", chips=1, tp=1, ep=1, pp=1)
        best = max(float(evaluate(ctx, PoolConfig(kind="aggregated", traffic_class=cls.name, main=part, batch=b,
                                                  chunk_tokens=c), cls).capacity_rps)
                   for b in (8, 32, 128) for c in (512, 2048, 8192))
        assert best <= gb_per_s * 1e9 / prefix_bytes * (1 + 1e-9)
    assert best > 7.0 * 1e9 / prefix_bytes   # host: the link is no longer what binds


def test_the_independent_floor_caps_reloads_at_the_links():
    from placement.core.instance.context import Context
    from placement.core.kv.kvmodel import outcome_class, resolve_tiers
    from placement.core.replicas.evaluate import PartLayout, PoolConfig
    from placement.core.verify.floors import config_floors

    ctx = Context.of(parse_instance(TINY))
    cls = outcome_class(ctx, ctx.instance.workload.classes[0], "flash", resolve_tiers(ctx), 1.0)
    ctx.classes[cls.name] = cls
    part = PartLayout(chip="h100", site_resource="h100@8", chips=2, tp=2, ep=1, pp=1)
    f = config_floors(PoolConfig(kind="aggregated", traffic_class=cls.name, main=part, batch=8, chunk_tokens=2048), ctx)
    prefix_bytes = 32 * 8 * 128 * 2 * 2 * cls.cached_prefix_tokens   # BF16 KV
    assert f.capacity_rps_per_replica == pytest.approx(2 * 7e9 / prefix_bytes, rel=1e-9)
    assert "links" in f.capacity_basis
