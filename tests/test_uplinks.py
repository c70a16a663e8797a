"""KV handed between two domains of one group crosses their uplinks (issue 30, item 1).

Before, a domain group was one network node and KV moved from a prefill pool on one of its domains to a
decode pool on another cost nothing: a slow- and a fast-network variant of one instance gave the same plan.
The probe here is the shipped bertha-lpddr instance cut down to its 16 HGX H100 domains with one class of
32K-token prompts (5.4 GB of KV per request); the issue's slow network has 1.25 GB/s uplinks, the fast one
400 GB/s (an HGX H100's eight 400 Gb/s NICs).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from types import SimpleNamespace

import yaml

from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.solve import solve
from placement.core.plans.plan import PoolSite
from placement.core.plans.uplinks import domain_uplinks
from placement.core.verify.facts import transfers
from placement.core.verify.verifier import verify
from solvers.elastic import elastic_shortfall
from solvers.milp import solve as solve_problem
from solvers.model import build_model
from solvers.problem import Column, Demand, Part, Problem, Route, Site, Transfer
from solvers.uplink_rows import UPLINK_SHARE

ROOT = Path(__file__).resolve().parents[1]
SLOW_GB_PER_S = 1.25
FAST_GB_PER_S = 400.0
PROMPT_TOKENS = 32768
# Llama-3.1-70B: 80 layers, 8 KV heads of 128, K and V, fp8 (1 byte): bytes of KV per prompt token.
KV_BYTES_PER_TOKEN = 80 * 8 * 128 * 2 * 1


def probe_doc(uplink_gb_per_s: float, *, count: int = 16, rate_rps: float = 2.0, modes=None,
              prompt_tokens: int = PROMPT_TOKENS) -> dict:
    doc = yaml.safe_load((ROOT / "instances" / "bertha-lpddr.yaml").read_text())
    doc["name"] = "pd-probe"
    if modes is not None:
        doc["modes"] = modes
    doc["workload"]["classes"] = [{"name": "long", "rate_rps": rate_rps, "prompt_tokens": prompt_tokens,
                                   "output_tokens": 512, "ttft_ms": 20000, "tpot_ms": 50}]
    doc["hardware"]["domains"] = [{"name": "h100-hgx", "chip": "h100", "chips_per_domain": 8, "count": count,
                                   "switch": "tor", "uplink_gb_per_s": uplink_gb_per_s}]
    return doc


@functools.cache
def probe(uplink_gb_per_s: float):
    inst = parse_instance(probe_doc(uplink_gb_per_s))
    return Context.of(inst), solve(inst)


def _peak(plan) -> float:
    return max((max(u.out_bytes_per_s, u.in_bytes_per_s) for u in plan.uplinks), default=0.0)


def test_slow_uplinks_change_the_pd_probe_plan():
    _, fast = probe(FAST_GB_PER_S)
    _, slow = probe(SLOW_GB_PER_S)
    assert fast.verified and slow.verified
    assert fast.classes[0].modes.get("pd", 0.0) > 0
    # the fast plan hands KV between domains of the group faster than a slow uplink carries it ...
    assert _peak(fast) > SLOW_GB_PER_S * 1e9
    # ... so the slow network's plan is another one, within its uplinks, and (a tighter fleet) no cheaper
    assert slow.canonical_json() != fast.canonical_json()
    assert _peak(slow) <= SLOW_GB_PER_S * 1e9 * (1 + 1e-6)
    assert slow.cost_usd_per_hour >= fast.cost_usd_per_hour
    for u in fast.uplinks:
        assert u.capacity_bytes_per_s == FAST_GB_PER_S * 1e9
        assert u.utilisation == round(max(u.out_bytes_per_s, u.in_bytes_per_s) / u.capacity_bytes_per_s, 6)


def test_verifier_rejects_a_plan_over_its_uplinks():
    ctx_fast, fast = probe(FAST_GB_PER_S)
    ctx_slow, _ = probe(SLOW_GB_PER_S)
    assert verify(ctx_fast, fast) == []
    over = [v for v in verify(ctx_slow, fast, stated_fields=False) if "uplink" in v]
    assert over and all(v.startswith("domain group h100-hgx: domain ") for v in over)
    assert any(f"capacity {SLOW_GB_PER_S:.6g} GB/s per direction" in v for v in over)


def test_verifier_rejects_doctored_uplink_fields():
    ctx, fast = probe(FAST_GB_PER_S)
    doctored = fast.model_copy(deep=True)
    doctored.uplinks[0].out_bytes_per_s = doctored.uplinks[0].out_bytes_per_s * 2 + 1e9
    assert any(v.startswith("uplinks[0] (h100-hgx:") and "out_bytes_per_s" in v for v in verify(ctx, doctored))
    dropped = fast.model_copy(deep=True)
    dropped.uplinks = dropped.uplinks[1:]
    assert any("is missing" in v for v in verify(ctx, dropped))


def test_hand_calculated_domain_uplinks():
    """Issue 30's layout: prefill on domains 0–2 (one 4-chip replica each, 1.2 req/s in all), decode on
    domains 0 and 2 (0.6 req/s each), and one 16-chip prefill replica over domains 3 and 4 (0.6 req/s).

    b = 32768 tokens × 163,840 B = 5.369 GB per request. Domains 0 and 2 each prefill 0.4 req/s, all of it
    handed to their own decode replica (local 0.4·b), and decode 0.6 req/s: 0.2·b comes in. Domain 1 has
    no decode replica: its 0.4·b all leaves. The 16-chip replica sends half of its 0.6·b over each domain.
    """
    ctx, _ = probe(SLOW_GB_PER_S)
    kv = transfers(ctx)
    b = PROMPT_TOKENS * KV_BYTES_PER_TOKEN
    assert kv == {"long|pd|kv": ("long|pd|prefill", "long|pd|decode", b)}

    def pool(pid, chips, domains, rate, stage):
        site = PoolSite(site="h100-hgx", replicas=len(domains) if chips <= 8 else 1, domains=domains,
                        replicas_per_domain=[1] * len(domains), load_rps={f"long|pd|{stage}": rate})
        return SimpleNamespace(id=pid, chips_per_replica=chips, sites=[site])

    pools = [pool("p", 4, [0, 1, 2], 1.2, "prefill"), pool("d", 4, [0, 2], 1.2, "decode"),
             pool("big", 16, [3, 4], 0.6, "prefill")]
    got = {u.domain: (u.out_bytes_per_s, u.in_bytes_per_s, u.local_bytes_per_s) for u in domain_uplinks(ctx, pools, kv)}
    want = {0: (0.0, 0.2 * b, 0.4 * b), 1: (0.4 * b, 0.0, 0.0), 2: (0.0, 0.2 * b, 0.4 * b),
            3: (0.3 * b, 0.0, 0.0), 4: (0.3 * b, 0.0, 0.0)}
    assert got.keys() == want.keys()
    for d, row in want.items():
        assert all(abs(g - w) <= 1e-9 * b for g, w in zip(got[d], row, strict=True)), (d, got[d], row)


def _toy(uplink: float | None, domains: int, rate: float = 1.0) -> Problem:
    """One class, prefill → decode with 5.2 GB of KV per request, 8-unit replicas of 1 req/s, 8-unit domains."""
    return Problem(demands=[Demand(name="k", rate=rate)],
                   routes=[Route(name="r", demand="k", steps=["pre", "dec"])],
                   transfers=[Transfer(name="kv", route="r", source="pre", target="dec", bytes_per_request=5.2e9)],
                   columns=[Column(name="P", parts=[Part(resource="gpu", units=8)], capacity={"pre": 1.0}),
                            Column(name="D", parts=[Part(resource="gpu", units=8)], capacity={"dec": 1.0})],
                   sites=[Site(name="s", node="s", resource="gpu", units_per_domain=8, domains=domains,
                               usd_per_hour_per_unit=1.0, power_w_per_unit=1.0, uplink_bytes_per_s=uplink)])


def test_rows_hold_each_replica_to_its_share():
    """5.2e9 B/s of KV over 1.25e9 B/s per 8-unit replica: ⌈4.16⌉ = 5 prefill and 5 decode replicas."""
    sol = solve_problem(_toy(1.25e9, 16), backend="highs")
    assert sorted((p.column, p.replicas) for p in sol.replicas) == [("D", 5), ("P", 5)]
    assert solve_problem(_toy(None, 16), backend="highs").units == 16
    _, v = build_model(_toy(1.25e9, 1))  # one domain: the site's edge row is exact, no uplink row
    assert not [k for k, (family, _) in v.labels.items() if family == "uplink_share"]
    assert UPLINK_SHARE.collapse(_toy(1.25e9, 16)) is False


def test_elastic_model_reports_the_uplink_shortfall():
    """Two domains, 0.5 req/s: one replica of each kind fits, and each then moves 5.2e9 × 0.5 = 2.6e9 B/s of
    KV over its domain's 1.25e9 B/s uplink."""
    assert solve_problem(_toy(1.25e9, 2, rate=0.5), backend="highs").status == "infeasible"
    short = elastic_shortfall(_toy(1.25e9, 2, rate=0.5), backend="highs")
    assert short.sites == {}
    got = short.limits["uplink_share"]
    assert set(got) == {("P", "s", "out"), ("D", "s", "in")}
    for need, has in got.values():
        assert abs(need - 2.6e9) <= 1e-6 * need and has == 1.25e9


def test_diagnosis_names_the_uplinks_and_their_number_suffices():
    """PD only on three domains: the fast network's plan takes 18 chips, more than one domain, so its KV
    crosses the slow uplinks; the diagnosis names the bandwidth, and that bandwidth is enough."""
    doc = probe_doc(SLOW_GB_PER_S, count=3, modes=["pd"])
    plan = solve(parse_instance(doc))
    assert plan.status == "infeasible"
    said = [d for d in plan.diagnosis if d.startswith("uplinks of domain group h100-hgx need ")]
    assert said, plan.diagnosis
    need = max(float(m.group(1).replace(",", "")) for d in said
               for m in [re.search(r"need ([0-9][0-9,]*(?:\.[0-9]+)?) GB/s", d)] if m)
    assert need > SLOW_GB_PER_S
    raised = probe_doc(need * 1.01, count=3, modes=["pd"])
    assert solve(parse_instance(raised)).verified


def test_a_group_whose_plan_fits_one_domain_keeps_its_kv_inside_it():
    """8K-token prompts at 2 req/s: the fast network's PD plan fits in one 8-chip domain, so its KV never
    crosses an uplink and the slow network's plan is the same one."""
    plans = [solve(parse_instance(probe_doc(bw, prompt_tokens=8192))) for bw in (FAST_GB_PER_S, SLOW_GB_PER_S)]
    fast, slow = plans
    assert fast.verified and slow.verified
    assert fast.classes[0].modes.get("pd", 0.0) > 0 and fast.chips <= 8
    assert slow.cost_usd_per_hour == fast.cost_usd_per_hour and slow.classes[0].modes == fast.classes[0].modes
    for plan in plans:
        assert {s.site for p in plan.pools for s in p.sites} == {"h100-hgx"}
        assert {d for p in plan.pools for s in p.sites for d in s.domains} == {0}
        assert plan.uplinks and all(u.out_bytes_per_s == u.in_bytes_per_s == 0.0 < u.local_bytes_per_s
                                    for u in plan.uplinks)
