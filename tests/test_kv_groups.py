"""KV tiers per domain group, their write bandwidth, a remote store's flows on the fleet and prefix growth.

Solver-level tests build :class:`solvers.problem.Problem` by hand; the end-to-end ones solve a tiny
session instance (Llama-3.1-8B on H100 nodes) with two domain groups on one switch.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costmodels import kv_transfer_bytes
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.instance.sessions import Gap, Sessions, mean_prefix_tokens
from placement.core.kv.kvmodel import expand, outcome_name, prefix_bytes, written_bytes
from placement.core.pipeline.solve import solve
from solvers.milp import solve as solve_milp
from solvers.problem import (
    Column,
    Demand,
    Edge,
    Part,
    Policy,
    PolicyFlow,
    PolicyLoad,
    Problem,
    Route,
    Site,
)

AGENT = {"name": "agent", "rate_rps": 4, "prompt_tokens": 500, "cached_prefix_tokens": 30000, "output_tokens": 100,
         "ttft_ms": 5000, "tpot_ms": 50,
         "sessions": {"steps_per_request": 5, "requests_per_session": 4,
                      "tool_gap": {"kind": "lognormal", "mean_s": 10, "median_s": 1},
                      "think_time": {"kind": "exponential", "mean_s": 300}}}


def _two_groups(tiers_a: list[dict], tiers_b: list[dict] | None = None, uplink_gb_per_s: float = 400.0) -> dict:
    """Groups ``a`` and ``b`` (one 8-H100 node each) on switch ``spine``; tiers as given."""
    dom = {"chip": "h100", "count": 1, "switch": "spine", "uplink_gb_per_s": uplink_gb_per_s}
    return {"name": "kv-groups", "model": "llama-3.1-8b", "modes": ["aggregated"],
            "workload": {"classes": [AGENT]},
            "hardware": {"switches": ["spine"], "domains": [{**dom, "name": "a", "kv_tiers": tiers_a},
                                                            {**dom, "name": "b", "kv_tiers": tiers_b or []}]}}


def _check(tmp_path, inst: dict, doc: dict) -> tuple[int, str]:
    (tmp_path / "i.yaml").write_text(json.dumps(inst))
    (tmp_path / "p.json").write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["check", str(tmp_path / "i.yaml"), str(tmp_path / "p.json")])
    return r.exit_code, r.output


def _first_step_sites(plan, cls: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for pool in plan.pools:
        if pool.part == 0 and pool.config.traffic_class == cls:
            for s in pool.sites:
                out[s.site] = out.get(s.site, 0.0) + sum(s.load_rps.values())
    return out


def test_mean_prefix_of_a_growing_session_is_closed_form():
    """S = 5 steps × R = 4 requests = 20 calls; call i reads 30,000 + 600·i tokens: the mean is
    30,000 + 600·19/2 = 35,700 (by hand), and bytes held, reloaded and recomputed follow it."""
    s = Sessions(steps_per_request=5, requests_per_session=4, prefix_growth_tokens_per_step=600,
                 tool_gap=Gap(kind="exponential", mean_s=1), think_time=Gap(kind="exponential", mean_s=60))
    assert mean_prefix_tokens(30000, s) == pytest.approx(sum(30000 + 600 * i for i in range(20)) / 20)
    assert mean_prefix_tokens(30000, s) == pytest.approx(35700)
    doc = {**_two_groups([{"tier": "host"}]), "workload": {"classes": [
        {**AGENT, "sessions": {**AGENT["sessions"], "prefix_growth_tokens_per_step": 600}}]}}
    ctx = Context.of(parse_instance(doc))
    cls = ctx.classes["agent"]
    per_token = kv_transfer_bytes(ctx.model, 0, 1, ctx.instance.precision.kv)
    assert prefix_bytes(ctx, cls) == pytest.approx(35700 * per_token)
    exp = expand(ctx, "tiered")
    miss = exp.context.classes[outcome_name("agent", "miss")]
    hit = exp.context.classes[outcome_name("agent", "host")]
    assert (miss.prompt_tokens, miss.cached_prefix_tokens) == (500 + 35700, 0)
    assert hit.cached_prefix_tokens == 35700
    # Offload per call: the 600 new tokens' KV, plus the whole prefix after a miss.
    assert written_bytes(ctx, cls, 0.75) == pytest.approx((600 + 0.25 * 35700) * per_token)


def test_policy_load_keeps_hits_where_their_tier_is():
    """Hits can be served at a cheap site or a dear one; a policy load ties them to the dear one."""
    def problem(loads):
        return Problem(
            demands=[Demand(name="hit", rate=4.0)], routes=[Route(name="r", demand="hit", steps=["q"])],
            columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 1.0})],
            sites=[Site(name="cheap", node="cheap", resource="gpu", units_per_domain=1, domains=10,
                        usd_per_hour_per_unit=1.0, power_w_per_unit=1.0),
                   Site(name="dear", node="dear", resource="gpu", units_per_domain=1, domains=10,
                        usd_per_hour_per_unit=3.0, power_w_per_unit=1.0)],
            policies=[Policy(name="keep", group="g", demands={"hit": 1.0})], policy_loads=loads)
    free = solve_milp(problem([]), backend="highs")
    assert free.objective == pytest.approx(4.0)
    tied = solve_milp(problem([PolicyLoad(name="t", demand="hit", sites=["dear"], policies={"keep": 1.0})]),
                      backend="highs")
    assert tied.objective == pytest.approx(12.0)
    assert {ld.site for ld in tied.loads} == {"dear"}


def test_policy_flow_takes_edge_capacity():
    """A store at node ``st`` reloads 10 B/s per unit of π over st→g (capacity 4 B/s): π ≤ 0.4, the rest misses
    on priced GPUs (each serves 1 miss/s or 100 hits/s: 3 replicas at π = 0, one at π = 1, and at π = 0.4
    1.8 + 1.2/100 = 1.812 replica-equivalents → 2)."""
    def problem(cap):
        return Problem(
            demands=[Demand(name="miss", rate=3.0), Demand(name="hit", rate=3.0)],
            routes=[Route(name="rm", demand="miss", steps=["qm"]), Route(name="rh", demand="hit", steps=["qh"])],
            columns=[Column(name="gpu", parts=[Part(resource="gpu", units=1)], capacity={"qm": 1.0, "qh": 100.0})],
            sites=[Site(name="g", node="g", resource="gpu", units_per_domain=1, domains=10,
                        usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)],
            nodes=["st"], edges=[Edge(source="st", target="g", capacity_bytes_per_s=cap)],
            policies=[Policy(name="none", group="c", demands={"miss": 1.0}),
                      Policy(name="keep", group="c", demands={"hit": 1.0})],
            policy_flows=[PolicyFlow(name="f", policies={"keep": 10.0}, edges=[("st", "g")])])
    wide = solve_milp(problem(1e3), backend="highs")
    assert wide.policy_shares == {"keep": 1.0} and wide.objective == pytest.approx(1.0)
    narrow = solve_milp(problem(4.0), backend="highs")
    assert narrow.policy_shares["keep"] == pytest.approx(0.4)
    assert narrow.objective == pytest.approx(2.0)


@pytest.fixture(scope="module")
def flash_in_a():
    doc = _two_groups([{"tier": "flash"}])
    return doc, solve(parse_instance(doc), backend="highs")


def test_tier_rows_are_per_group_and_hits_stay_in_the_group(flash_in_a):
    _, plan = flash_in_a
    assert plan.verified, plan.violations
    flash = [u for u in plan.kv_tiers if u.tier == "flash"]
    assert [u.domain_group for u in flash] == ["a"]  # b has no flash: no row, nothing held there
    held = sum(e.held_gb for e in plan.classes[0].kv_retention if e.tier == "flash")
    assert held > 0 and flash[0].used_gb == pytest.approx(held)
    assert all(e.policy.endswith("@a") for e in plan.classes[0].kv_retention if e.tier == "flash")
    assert set(_first_step_sites(plan, "agent.kv-flash")) == {"a"}
    assert 0 < flash[0].write_used_gb_per_s <= flash[0].write_gb_per_s


def test_check_rejects_tampered_group_rows(flash_in_a, tmp_path):
    inst, plan = flash_in_a
    doc = json.loads(plan.model_dump_json())
    assert _check(tmp_path, inst, doc)[0] == 0
    k = next(i for i, u in enumerate(doc["kv_tiers"]) if u["tier"] == "flash")
    for field in ("used_gb", "write_used_gb_per_s", "bandwidth_used_gb_per_s", "domain_group"):
        bad = json.loads(json.dumps(doc))
        bad["kv_tiers"][k][field] = "b" if field == "domain_group" else bad["kv_tiers"][k][field] * 0.5
        code, out = _check(tmp_path, inst, bad)
        assert code == 5 and f"kv_tiers[{k}].{field}" in out, (field, out)
    bad = json.loads(json.dumps(doc))  # the flash hits' pool moved to b, whose hosts hold none of their KV
    pool = next(p for p in bad["pools"] if p["config"]["traffic_class"] == "agent.kv-flash" and p["part"] == 0)
    assert [s["site"] for s in pool["sites"]] == ["a"]
    pool["sites"][0]["site"] = "b"
    code, out = _check(tmp_path, inst, bad)
    assert code == 5 and "class agent.kv-flash: its pools in b serve" in out, out


def test_write_bandwidth_limits_the_retention(flash_in_a):
    """Offloads at 1 MB/s per chip cannot keep up: no flash policy is chosen (with the catalogue's 3.8 GB/s
    they are)."""
    doc, plan = flash_in_a
    assert any(e.tier == "flash" and e.share > 0 for e in plan.classes[0].kv_retention)
    slow = json.loads(json.dumps(doc))
    slow["hardware"]["domains"][0]["kv_tiers"] = [{"tier": "flash", "write_gb_per_s": 0.001}]
    plan = solve(parse_instance(slow), backend="highs")
    assert plan.verified
    assert not any(e.tier == "flash" and e.share > 1e-9 for e in plan.classes[0].kv_retention)


def _remote(uplink_gb_per_s: float) -> dict:
    store = {"tier": "remote", "node": "spine", "capacity_gb": 100000, "bandwidth_gb_per_s": 50,
             "latency_us": 20, "usd_per_gb_hour": 0.0001}
    return _two_groups([store], [store], uplink_gb_per_s=uplink_gb_per_s)


def test_remote_reloads_flow_on_the_links_and_are_checked(tmp_path):
    """Reloads from the store on the spine cross spine→a / spine→b. With 400 GB/s uplinks one group takes
    them all (12.8 GB/s); with 8 GB/s uplinks no link can carry that, and the sessions split over both groups
    with every link within its capacity. check re-derives the flows and rejects a tampered one."""
    wide = solve(parse_instance(_remote(400.0)), backend="highs")
    assert wide.verified, wide.violations
    assert max(f.bytes_per_s for f in wide.kv_flows if f.transfer.endswith("-reload")) > 8e9
    inst = _remote(8.0)
    narrow = solve(parse_instance(inst), backend="highs")
    assert narrow.verified, narrow.violations
    flows = {(f.source, f.target): 0.0 for f in narrow.kv_flows}
    for f in narrow.kv_flows:
        flows[f.source, f.target] += f.bytes_per_s
    assert flows and all(src == "spine" or dst == "spine" for src, dst in flows)
    assert {("spine", "a"), ("spine", "b")} <= set(flows)
    links = {(lk.source, lk.target): lk for lk in narrow.links}
    for e, b in flows.items():
        assert links[e].load_bytes_per_s >= b - 1e-3
        assert links[e].load_bytes_per_s <= links[e].capacity_bytes_per_s * (1 + 1e-6)
    for u in narrow.kv_tiers:  # each group hangs off the spine: its reloads cross one link, spine→group
        if u.tier == "remote" and u.bandwidth_used_gb_per_s > 0:
            f = next(f for f in narrow.kv_flows if f.transfer == f"kv-remote@{u.domain_group}-reload")
            assert (f.source, f.target) == ("spine", u.domain_group)
            assert f.bytes_per_s == pytest.approx(u.bandwidth_used_gb_per_s * 1e9)
    doc = json.loads(narrow.model_dump_json())
    assert _check(tmp_path, inst, doc)[0] == 0
    bad = json.loads(json.dumps(doc))
    bad["kv_flows"][0]["bytes_per_s"] *= 0.5
    code, out = _check(tmp_path, inst, bad)
    assert code == 5 and "kv_flows" in out


def test_only_a_remote_tier_names_a_node():
    doc = _two_groups([{"tier": "host", "node": "spine"}])
    with pytest.raises(ValueError, match=r"kv_tiers\[0\]\.node"):
        solve(parse_instance(doc), backend="highs")
