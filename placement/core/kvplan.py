"""KV retention in the solver's problem and in the plan: policy rows, tier use, the session classes' summary.

:func:`extend_problem` adds the policies and tier rows of an
:class:`~placement.core.kvmodel.Expansion` to the solver-neutral problem
(:mod:`solvers.kv_rows`); :func:`kv_facts` derives, from policy shares and the
pools of a plan, what each policy holds and each tier carries — used by the
plan writer (:func:`finish_plan`) and, from the plan's shares, by the verifier
(:mod:`placement.core.verify.kv`), both from the instance alone.

Examples
--------
>>> from placement.core.kvplan import kv_facts  # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from placement.core.context import Context
from placement.core.evaluate import PoolConfig, evaluate
from placement.core.kvmodel import (
    NONE,
    SERVED_RPS,
    Expansion,
    RetentionPolicy,
    outcome_name,
    prefix_bytes,
    reload_s,
)
from placement.core.plan import ClassPlan, KvRetention, KvTierUse, Plan, class_latencies_ms
from solvers.problem import Policy, PolicyLimit, Problem
from solvers.solution import Solution

if TYPE_CHECKING:
    from placement.core.candidates import Candidates

__all__ = ["KvFacts", "extend_problem", "finish_plan", "headroom_bytes", "kv_facts", "session_summary", "shares_of"]


def headroom_bytes(ctx: Context, cfg: PoolConfig) -> float:
    """HBM one replica of ``cfg`` leaves free at its batch: chips × (HBM − memory per chip), ≥ 0."""
    chip = ctx.chips[cfg.main.chip]
    perf = evaluate(ctx, cfg, ctx.classes[cfg.traffic_class])
    return max(cfg.main.chips * (chip.memory_bytes - float(perf.memory_per_chip_bytes)), 0.0)


def _held_bytes(ctx: Context, p: RetentionPolicy, share: float = 1.0) -> float:
    """Little's law: λ·π·E[min(G, T)]·B."""
    cls = ctx.classes[p.cls]
    return cls.rate_rps * share * p.residence_s * prefix_bytes(ctx, cls)


def _reload_bytes_per_s(ctx: Context, p: RetentionPolicy, share: float = 1.0) -> float:
    cls = ctx.classes[p.cls]
    return cls.rate_rps * share * p.hit * prefix_bytes(ctx, cls)


def extend_problem(ctx: Context, exp: Expansion, problem: Problem, cands: Candidates) -> Problem:
    """``problem`` with the session classes' policies and the tier rows (:mod:`placement.core.kvmodel`)."""
    policies, limits = [], []
    by_tier: dict[str, list[RetentionPolicy]] = defaultdict(list)
    cost = {}
    for cname, ps in sorted(exp.policies.items()):
        for p in ps:
            demands = {outcome_name(cname, "miss"): 1.0 - p.hit} if p.hit < 1 else {}
            if p.hit > 0:
                demands[p.outcome] = p.hit
            price = exp.tiers[p.tier].usd_per_byte_hour if p.tier in exp.tiers else 0.0
            cost[p.name] = _held_bytes(ctx, p) * price if problem.objective == "cost" else 0.0
            policies.append(Policy(name=p.name, group=cname, demands=demands, cost=cost[p.name]))
            if p.tier != NONE:
                by_tier[p.tier].append(p)
    for tier, ps in sorted(by_tier.items()):
        held = {p.name: _held_bytes(ctx, p) for p in ps}
        if tier == "hbm":
            outcomes = {p.outcome for p in ps}
            room = {c: headroom_bytes(exp.context, cfg) for c, cfg in sorted(cands.configs.items())
                    if cfg.traffic_class in outcomes and cfg.kind != "measured"}
            limits.append(PolicyLimit(name="kv-hbm-capacity", policies=held, replicas=room))
            continue
        t = exp.tiers[tier]
        limits.append(PolicyLimit(name=f"kv-{tier}-capacity", policies=held, rhs=t.capacity_bytes))
        limits.append(PolicyLimit(name=f"kv-{tier}-bandwidth", rhs=t.bandwidth_bytes_per_s,
                                  policies={p.name: _reload_bytes_per_s(ctx, p) for p in ps}))
    return problem.model_copy(update={"policies": policies, "policy_limits": limits})


@dataclass
class KvFacts:
    """What the policy shares of a plan hold and carry, from the instance alone."""

    retention: dict[str, list[KvRetention]] = field(default_factory=dict)
    tiers: list[KvTierUse] = field(default_factory=list)
    usd_per_hour: float = 0.0
    #: Tier rows that do not hold: (tier, what, used, limit).
    over: list[tuple[str, str, float, float]] = field(default_factory=list)


def _hbm_room(exp: Expansion, plan: Plan) -> dict[str, float]:
    """Headroom bytes per domain group of the pools serving an ``hbm`` outcome (part 0)."""
    outcomes = {p.outcome for ps in exp.policies.values() for p in ps if p.tier == "hbm"}
    room: dict[str, float] = defaultdict(float)
    for pool in plan.pools:
        if pool.part == 0 and pool.config.traffic_class in outcomes and pool.config.kind != "measured":
            per = headroom_bytes(exp.context, pool.config)
            for s in pool.sites:
                room[s.site] += per * s.replicas
    return dict(sorted(room.items()))


def kv_facts(ctx: Context, exp: Expansion, shares: dict[str, dict[str, float]], plan: Plan) -> KvFacts:
    """Retention entries per session class, tier use per domain group and holding cost under ``shares``."""
    out = KvFacts()
    held: dict[str, float] = defaultdict(float)
    reload: dict[str, float] = defaultdict(float)
    for cname, ps in sorted(exp.policies.items()):
        entries = []
        nbytes = prefix_bytes(ctx, ctx.classes[cname])
        for p in ps:
            share = shares.get(cname, {}).get(p.name, 0.0)
            if share <= 0:
                continue
            h = _held_bytes(ctx, p, share) if p.tier != NONE else 0.0
            held[p.tier] += h
            reload[p.tier] += _reload_bytes_per_s(ctx, p, share)
            rl = reload_s(exp.tiers[p.tier], nbytes) * 1e3 if p.tier in exp.tiers else 0.0
            entries.append(KvRetention(policy=p.name, tier=p.tier, window_s=p.window_s, share=share,
                                       hit_rate=p.hit, residence_s=p.residence_s, held_gb=h / 1e9, reload_ms=rl))
        out.retention[cname] = entries
    if "hbm" in held:
        room = _hbm_room(exp, plan)
        total = sum(room.values())
        if held["hbm"] > total * (1 + 1e-6) + 1.0:
            out.over.append(("hbm", "capacity", held["hbm"], total))
        for g, r in room.items():
            out.tiers.append(KvTierUse(tier="hbm", domain_group=g, capacity_gb=r / 1e9,
                                       used_gb=held["hbm"] * (r / total) / 1e9 if total else 0.0,
                                       bandwidth_gb_per_s=0.0, bandwidth_used_gb_per_s=0.0, usd_per_hour=0.0))
    for tier, t in exp.tiers.items():
        if held.get(tier, 0.0) > t.capacity_bytes * (1 + 1e-6) + 1.0:
            out.over.append((tier, "capacity", held[tier], t.capacity_bytes))
        if reload.get(tier, 0.0) > t.bandwidth_bytes_per_s * (1 + 1e-6) + 1.0:
            out.over.append((tier, "bandwidth", reload[tier], t.bandwidth_bytes_per_s))
        for g, (cap, bw, _chip_bw, _lat, price) in t.groups.items():
            used = held.get(tier, 0.0) * t.share(g)
            usd = used * price
            out.usd_per_hour += usd
            out.tiers.append(KvTierUse(tier=tier, domain_group=g, capacity_gb=cap / 1e9, used_gb=used / 1e9,
                                       bandwidth_gb_per_s=bw / 1e9,
                                       bandwidth_used_gb_per_s=reload.get(tier, 0.0) * t.share(g) / 1e9,
                                       usd_per_hour=usd))
    return out


def session_summary(ctx: Context, exp: Expansion, classes: list[ClassPlan], plan: Plan,
                    retention: list[KvRetention], cname: str) -> ClassPlan:
    """The session class as one line: its rate and SLOs, the mode shares and worst TTFT/TPOT of its
    outcome classes (reloads included, they are in the prefill pools' TTFT), its retention."""
    cls = ctx.classes[cname]
    mine = {outcome_name(cname, o) for o in ("miss", *{p.tier for p in exp.policies[cname]})}
    modes: dict[str, float] = defaultdict(float)
    for cp in classes:
        if cp.name in mine:
            for m, s in cp.modes.items():
                modes[m] += s * cp.rate_rps / cls.rate_rps
    ttfts, tpots = [], []
    for name in sorted(mine):
        ttft, tpot = class_latencies_ms(name, (
            ([st for s in p.sites for st, r in s.load_rps.items() if r > SERVED_RPS], p.ttft_ms, p.tpot_ms)
            for p in plan.pools))
        ttfts += [ttft] if ttft is not None else []
        tpots += [tpot] if tpot is not None else []
    return ClassPlan(name=cname, rate_rps=cls.rate_rps, modes={m: round(s, 10) for m, s in sorted(modes.items())},
                     ttft_ms=max(ttfts, default=None), tpot_ms=max(tpots, default=None), ttft_slo_ms=cls.ttft_ms,
                     tpot_slo_ms=cls.tpot_ms, kv_retention=retention)


def shares_of(sol: Solution, exp: Expansion) -> dict[str, dict[str, float]]:
    """class -> policy -> π from a solution."""
    return {c: {p.name: sol.policy_shares[p.name] for p in ps if sol.policy_shares.get(p.name, 0.0) > 0}
            for c, ps in sorted(exp.policies.items())}


def finish_plan(ctx: Context, exp: Expansion, plan: Plan, sol: Solution) -> Plan:
    """A plan assembled on the expanded context, with the outcome classes at their served rates, one summary
    per session class with its retention, the tiers' use and their holding cost in the totals."""
    if not plan.pools and not plan.classes:
        return plan.model_copy(update={"kv_policy": exp.mode})
    served: dict[str, dict[str, float]] = defaultdict(dict)
    for route, rate in sol.route_rates.items():
        c, m = route.split("|")[:2]
        served[c][m] = rate
    classes = []
    for cp in plan.classes:
        if cp.name in ctx.classes:
            classes.append(cp)
            continue
        total = sum(served[cp.name].values())
        if total <= SERVED_RPS:
            continue
        classes.append(cp.model_copy(update={"rate_rps": total, "modes": {
            m: round(r / total, 10) for m, r in sorted(served[cp.name].items())}}))
    facts = kv_facts(ctx, exp, shares_of(sol, exp), plan)
    summaries = [session_summary(ctx, exp, classes, plan, facts.retention[c], c) for c in sorted(exp.policies)]
    tokens = sum(c.rate_rps * c.output_tokens for c in ctx.instance.workload.classes)
    cost = (plan.cost_usd_per_hour or 0.0) + facts.usd_per_hour
    return plan.model_copy(update={
        "classes": summaries + classes, "kv_policy": exp.mode, "kv_tiers": facts.tiers,
        "kv_usd_per_hour": facts.usd_per_hour, "cost_usd_per_hour": round(cost, 9), "output_tokens_per_s": tokens,
        "usd_per_million_output_tokens": round(cost / (tokens * 3600) * 1e6, 9) if tokens else None})

