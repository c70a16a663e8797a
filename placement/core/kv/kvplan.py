"""KV retention in the solver's problem and in the plan: policy rows, tier use, the session classes' summary.

:func:`extend_problem` adds the policies and tier rows of an
:class:`~placement.core.kv.kvmodel.Expansion` to the solver-neutral problem
(:mod:`solvers.kv_rows`); :func:`kv_facts` derives, from policy shares and the
pools of a plan, what each policy holds and each tier carries — used by the
plan writer (:func:`finish_plan`) and, from the plan's shares, by the verifier
(:mod:`placement.core.verify.kv`), both from the instance alone.

Examples
--------
>>> from placement.core.kv.kvplan import kv_facts  # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from placement.core.instance.context import Context
from placement.core.kv.kvmodel import (
    NONE,
    SERVED_RPS,
    Expansion,
    RetentionPolicy,
    group_hit_rates,
    outcome_name,
    prefix_bytes,
    reload_s,
    written_bytes,
)
from placement.core.modes.enabled import enabled_modes
from placement.core.modes.registry import pool_kind
from placement.core.plans.plan import (
    ClassPlan,
    FlowPlan,
    KvRetention,
    KvTierUse,
    LinkPlan,
    Plan,
    class_latencies_ms,
)
from placement.core.replicas.evaluate import PoolConfig, evaluate
from solvers.problem import Policy, PolicyFlow, PolicyLimit, PolicyLoad, Problem
from solvers.solution import Solution

if TYPE_CHECKING:
    from placement.core.replicas.generation import Candidates

__all__ = ["KvFacts", "extend_problem", "finish_plan", "first_step_loads", "headroom_bytes", "kv_facts",
           "session_summary", "shares_of", "with_kv_flows"]


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


def _written_bytes_per_s(ctx: Context, p: RetentionPolicy, share: float = 1.0) -> float:
    cls = ctx.classes[p.cls]
    return cls.rate_rps * share * written_bytes(ctx, cls, p.hit)


def _store_paths(ctx: Context, exp: Expansion) -> dict[tuple[str, str], tuple[list, list]]:
    """(tier, group) of a store on a fleet node -> (edges node → group, edges group → node)."""
    out = {}
    for tier, t in exp.tiers.items():
        for g, gt in t.groups.items():
            if gt.node is not None:
                there, back = ctx.routing.path(gt.node, g) or [], ctx.routing.path(g, gt.node) or []
                out[tier, g] = (list(pairwise(there)), list(pairwise(back)))
    return out


def extend_problem(ctx: Context, exp: Expansion, problem: Problem, cands: Candidates) -> Problem:
    """``problem`` with the session classes' policies and the tier rows (:mod:`placement.core.kv.kvmodel`)."""
    policies, limits, loads, flows = [], [], [], []
    paths = _store_paths(ctx, exp)
    by_tier: dict[str, list[RetentionPolicy]] = defaultdict(list)
    cost = {}
    for cname, ps in sorted(exp.policies.items()):
        for p in ps:
            demands = {outcome_name(cname, "miss"): 1.0 - p.hit} if p.hit < 1 else {}
            if p.hit > 0:
                demands[p.outcome] = p.hit
            price = exp.tiers[p.tier].groups[p.group].usd_per_byte_hour if p.tier in exp.tiers else 0.0
            cost[p.name] = _held_bytes(ctx, p) * price if problem.objective == "cost" else 0.0
            policies.append(Policy(name=p.name, group=cname, demands=demands, cost=cost[p.name]))
            if p.tier != NONE:
                by_tier[p.tier].append(p)
    for tier, ps in sorted(by_tier.items()):
        held = {p.name: _held_bytes(ctx, p) for p in ps}
        if tier == "hbm":
            outcomes = {p.outcome for p in ps}
            room = {c: headroom_bytes(exp.context, cfg) for c, cfg in sorted(cands.configs.items())
                    if cfg.traffic_class in outcomes and not pool_kind(cfg.kind).measured}
            limits.append(PolicyLimit(name="kv-hbm-capacity", policies=held, replicas=room))
            continue
        t = exp.tiers[tier]
        for g in t.groups:
            mine = [p for p in ps if p.group == g]
            gt = t.groups[g]
            limits.append(PolicyLimit(name=f"kv-{tier}@{g}-capacity", policies={p.name: held[p.name] for p in mine},
                                      rhs=gt.capacity_bytes))
            limits.append(PolicyLimit(name=f"kv-{tier}@{g}-bandwidth", rhs=gt.bandwidth_bytes_per_s,
                                      policies={p.name: _reload_bytes_per_s(ctx, p) for p in mine}))
            limits.append(PolicyLimit(name=f"kv-{tier}@{g}-write", rhs=gt.write_bytes_per_s,
                                      policies={p.name: _written_bytes_per_s(ctx, p) for p in mine}))
            for cname in sorted({p.cls for p in mine}):
                loads.append(PolicyLoad(name=f"kv-{tier}@{g}|{cname}", demand=outcome_name(cname, tier), sites=[g],
                                        policies={p.name: p.hit for p in mine if p.cls == cname}))
            if (tier, g) in paths:
                there, back = paths[tier, g]
                flows.append(PolicyFlow(name=f"kv-{tier}@{g}-reload", edges=there,
                                        policies={p.name: _reload_bytes_per_s(ctx, p) for p in mine}))
                flows.append(PolicyFlow(name=f"kv-{tier}@{g}-offload", edges=back,
                                        policies={p.name: _written_bytes_per_s(ctx, p) for p in mine}))
    return problem.model_copy(update={"policies": policies, "policy_limits": limits, "policy_loads": loads,
                                      "policy_flows": flows})


@dataclass
class KvFacts:
    """What the policy shares of a plan hold and carry, from the instance alone."""

    retention: dict[str, list[KvRetention]] = field(default_factory=dict)
    tiers: list[KvTierUse] = field(default_factory=list)
    usd_per_hour: float = 0.0
    #: Tier rows that do not hold: (tier, what, used, limit).
    over: list[tuple[str, str, float, float]] = field(default_factory=list)
    #: A remote store's reloads and offloads on the fleet's links.
    flows: list[FlowPlan] = field(default_factory=list)
    #: Hits served away from the group whose tier holds their KV: (outcome class, group, served, due) req/s.
    misplaced: list[tuple[str, str, float, float]] = field(default_factory=list)


def _hbm_room(exp: Expansion, plan: Plan) -> dict[str, float]:
    """Headroom bytes per domain group of the pools serving an ``hbm`` outcome (part 0)."""
    outcomes = {p.outcome for ps in exp.policies.values() for p in ps if p.tier == "hbm"}
    room: dict[str, float] = defaultdict(float)
    for pool in plan.pools:
        if pool.part == 0 and pool.config.traffic_class in outcomes and not pool_kind(pool.config.kind).measured:
            per = headroom_bytes(exp.context, pool.config)
            for s in pool.sites:
                room[s.site] += per * s.replicas
    return dict(sorted(room.items()))


def first_step_loads(exp: Expansion, plan: Plan) -> dict[tuple[str, str], float]:
    """(class, domain group) -> requests/s its pools there serve of the class's first step (prefill or
    aggregated: where a reload lands)."""
    firsts = {str(mode.steps(c)[0]): c for c in exp.context.classes for mode in enabled_modes(exp.context)}
    out: dict[tuple[str, str], float] = defaultdict(float)
    for pool in plan.pools:
        if pool.part == 0:
            for s in pool.sites:
                for step, rate in s.load_rps.items():
                    if step in firsts:
                        out[firsts[step], s.site] += rate
    return out


def _check_placed(ctx: Context, exp: Expansion, shares: dict[str, dict[str, float]], plan: Plan,
                  out: KvFacts) -> None:
    """Each tier's hits served in the groups whose tier holds them, at the rates the shares give."""
    served = first_step_loads(exp, plan)
    for cname, ps in sorted(exp.policies.items()):
        lam = ctx.classes[cname].rate_rps
        due = group_hit_rates(ps, shares.get(cname, {}), lam)
        for tier in exp.tiers:
            name = outcome_name(cname, tier)
            groups = {g for (c, g) in served if c == name} | {g for (t, g) in due if t == tier}
            for g in sorted(groups):
                got, want = served.get((name, g), 0.0), due.get((tier, g), 0.0)
                if abs(got - want) > 1e-6 * max(lam, 1.0):
                    out.misplaced.append((name, g, got, want))


def _over(out: KvFacts, name: str, what: str, used: float, limit: float) -> None:
    if used > limit * (1 + 1e-6) + 1.0:
        out.over.append((name, what, used, limit))


def kv_facts(ctx: Context, exp: Expansion, shares: dict[str, dict[str, float]], plan: Plan) -> KvFacts:
    """Retention entries per session class, tier use per domain group and holding cost under ``shares``."""
    out = KvFacts()
    held: dict[tuple[str, str], float] = defaultdict(float)
    reload: dict[tuple[str, str], float] = defaultdict(float)
    written: dict[tuple[str, str], float] = defaultdict(float)
    for cname, ps in sorted(exp.policies.items()):
        entries = []
        nbytes = prefix_bytes(ctx, ctx.classes[cname])
        for p in ps:
            share = shares.get(cname, {}).get(p.name, 0.0)
            if share <= 0:
                continue
            h = _held_bytes(ctx, p, share) if p.tier != NONE else 0.0
            held[p.tier, p.group] += h
            reload[p.tier, p.group] += _reload_bytes_per_s(ctx, p, share)
            written[p.tier, p.group] += _written_bytes_per_s(ctx, p, share) if p.tier in exp.tiers else 0.0
            rl = reload_s(exp.tiers[p.tier], nbytes) * 1e3 if p.tier in exp.tiers else 0.0
            entries.append(KvRetention(policy=p.name, tier=p.tier, window_s=p.window_s, share=share,
                                       hit_rate=p.hit, residence_s=p.residence_s, held_gb=h / 1e9, reload_ms=rl))
        out.retention[cname] = entries
    if ("hbm", "") in held:
        room = _hbm_room(exp, plan)
        total = sum(room.values())
        _over(out, "hbm", "capacity", held["hbm", ""], total)
        for g, r in room.items():
            out.tiers.append(KvTierUse(tier="hbm", domain_group=g, capacity_gb=r / 1e9,
                                       used_gb=held["hbm", ""] * (r / total) / 1e9 if total else 0.0,
                                       bandwidth_gb_per_s=0.0, bandwidth_used_gb_per_s=0.0, usd_per_hour=0.0))
    paths = _store_paths(ctx, exp)
    for tier, t in exp.tiers.items():
        for g, gt in t.groups.items():
            key = (tier, g)
            _over(out, f"{tier}@{g}", "capacity", held[key], gt.capacity_bytes)
            _over(out, f"{tier}@{g}", "bandwidth", reload[key], gt.bandwidth_bytes_per_s)
            _over(out, f"{tier}@{g}", "write bandwidth", written[key], gt.write_bytes_per_s)
            usd = held[key] * gt.usd_per_byte_hour
            out.usd_per_hour += usd
            out.tiers.append(KvTierUse(tier=tier, domain_group=g, capacity_gb=gt.capacity_bytes / 1e9,
                                       used_gb=held[key] / 1e9, bandwidth_gb_per_s=gt.bandwidth_bytes_per_s / 1e9,
                                       bandwidth_used_gb_per_s=reload[key] / 1e9,
                                       write_gb_per_s=gt.write_bytes_per_s / 1e9,
                                       write_used_gb_per_s=written[key] / 1e9, usd_per_hour=usd))
            there, back = paths.get(key, ([], []))
            for edges, what, nb in ((there, "reload", reload[key]), (back, "offload", written[key])):
                out.flows += [FlowPlan(transfer=f"kv-{tier}@{g}-{what}", source=u, target=w, bytes_per_s=nb)
                              for u, w in edges if nb > 0]
    _check_placed(ctx, exp, shares, plan, out)
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


def with_kv_flows(links: list[LinkPlan], flows: list[FlowPlan]) -> list[LinkPlan]:
    """The plan's links with the KV store's flows added to their loads (and utilisation)."""
    extra: dict[tuple[str, str], float] = defaultdict(float)
    for fl in flows:
        extra[fl.source, fl.target] += fl.bytes_per_s
    out = []
    for lk in links:
        add = extra.get((lk.source, lk.target), 0.0)
        if add:
            load = lk.load_bytes_per_s + add
            cap = lk.capacity_bytes_per_s
            lk = lk.model_copy(update={"load_bytes_per_s": load, "utilisation": round(load / cap, 6) if cap else 0.0})
        out.append(lk)
    return out


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
        "classes": summaries + classes, "kv_policy": exp.mode, "kv_tiers": facts.tiers, "kv_flows": facts.flows,
        "links": with_kv_flows(plan.links, facts.flows),
        "kv_usd_per_hour": facts.usd_per_hour, "cost_usd_per_hour": round(cost, 9), "output_tokens_per_s": tokens,
        "usd_per_million_output_tokens": round(cost / (tokens * 3600) * 1e6, 9) if tokens else None})

