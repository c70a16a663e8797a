"""The N+1 check: with any one domain lost, the replicas left still serve every class.

For a plan that says it survives ``domain:1``, every pool states its replicas
per domain; for each domain that hosts something, the replicas on it are
removed (and, for a paired part, the replicas of the other part they pair
with) and a small LP asks whether the rest can carry every class: each class
may re-split over the modes the instance enables, each step's load is spread
over the pools serving it, each pool's loads fit its replicas left at its
re-derived capacity (:func:`placement.core.verify.facts.derive`). Only
capacity is checked: transfers and links are not re-routed.

Examples
--------
>>> from placement.core.verify.survive import check_survival  # doctest: +SKIP
>>> check_survival(ctx, plan, facts)                          # doctest: +SKIP
[]
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import pulp

from placement.core.instance.context import Context
from placement.core.modes.enabled import enabled_modes
from placement.core.modes.registry import pool_kind
from placement.core.plans.plan import Plan
from placement.core.verify.facts import RTOL, PoolFacts
from solvers.backends.highs import quiet_highs_banner

__all__ = ["SURVIVABLE", "check_survival", "covers", "relaxed_context"]

#: Failures a plan can be built to survive.
SURVIVABLE = ("domain:1", "switch:1")


def _var(m: pulp.LpProblem, name: str, up: float | None = None) -> pulp.LpVariable:
    if hasattr(m, "add_variable"):
        return m.add_variable(name, 0, up, pulp.LpContinuous)
    return pulp.LpVariable(name, 0, up)  # PuLP < 3


def covers(ctx: Context, facts: list[PoolFacts], replicas: dict[str, float]) -> bool:
    """Whether pools with ``replicas`` (pool id -> replicas of its main part) can serve every class."""
    m = pulp.LpProblem("survive", pulp.LpMinimize)
    loads: dict[str, list] = defaultdict(list)
    for f in facts:
        if not f.main:
            continue
        used = []
        for j, (step, cap) in enumerate(sorted(f.actual_capacity_rps.items())):
            if cap > 0:
                a = _var(m, f"a_{f.index}_{j}")
                loads[step].append(a)
                used.append(a * (1.0 / cap))
        if used:
            m += pulp.lpSum(used) <= max(replicas.get(f.pool.id, 0.0), 0.0)
    for k, cls in enumerate(ctx.instance.workload.classes):
        shares = []
        for i, mode in enumerate(enabled_modes(ctx)):
            x = _var(m, f"x_{k}_{i}", 1)
            shares.append(x)
            for step in mode.steps(cls.name):
                m += pulp.lpSum(loads.get(str(step), [])) >= cls.rate_rps * (1 - RTOL) * x
        m += pulp.lpSum(shares) == 1
    m += pulp.lpSum([])
    quiet_highs_banner()
    m.solve(pulp.HiGHS(msg=False))
    return pulp.LpStatus[m.status] == "Optimal"


def relaxed_context(ctx: Context, factor: float) -> Context:
    """``ctx`` with every class's TTFT and TPOT SLO multiplied by ``factor`` (the failure scenarios' SLOs)."""
    inst = ctx.instance
    classes = [c.model_copy(update={"ttft_ms": c.ttft_ms * factor, "tpot_ms": c.tpot_ms * factor})
               for c in inst.workload.classes]
    relaxed = inst.model_copy(update={"workload": inst.workload.model_copy(update={"classes": classes})})
    return dataclasses.replace(ctx, instance=relaxed, classes={c.name: c for c in classes})


def check_survival(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Every domain whose loss leaves a class short, for a plan with ``survive`` set; [] otherwise.

    With ``survive_slo_factor`` f > 1 the scenarios are checked at every SLO × f: each pool's capacity
    is re-derived for the relaxed classes (the same configuration admits more load when TTFT may be
    longer), the healthy plan having been checked at the instance's SLOs.
    """
    if plan.survive is None:
        return []
    factor = plan.survive_slo_factor
    if factor is not None and not factor >= 1.0:
        return [f"survive_slo_factor: expected >= 1, got {factor}"]
    if factor is not None and factor > 1.0:
        from placement.core.verify.facts import derive

        ctx = relaxed_context(ctx, factor)
        facts = derive(ctx, plan)
    rebatched = _failover_batches(ctx, plan, facts)
    if rebatched:
        return rebatched
    if plan.survive not in SURVIVABLE:
        return [f"survive: {plan.survive!r} is not a failure this verifier checks ({', '.join(SURVIVABLE)})"]
    if plan.survive == "switch:1":
        return _check_switches(ctx, plan, facts)
    unstated = [f"pools[{f.index}].sites[{j}]" for f in facts for j, s in enumerate(f.pool.sites)
                if not s.replicas_per_domain]
    if unstated:
        return [f"{unstated[0]}: a plan that survives {plan.survive} states its replicas per domain"]
    partner = {f.pool.id: f.pool.paired_with for f in facts if f.main}
    on: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for f in facts:
        for s in f.pool.sites:
            for d, c in zip(s.domains, s.replicas_per_domain):
                on[s.site, d][f.pool.id] = c
    whole = {f.pool.id: float(f.pool.replicas) for f in facts if f.main}
    v = []
    for (group, d), here in sorted(on.items()):
        left = {p: n - here.get(p, 0) - here.get(partner[p] or "", 0) for p, n in whole.items()}
        if not covers(ctx, facts, left):
            v.append(f"survive {plan.survive}: losing domain {group}:{d} leaves too few replicas to serve "
                     "every class")
    return v


def _failover_batches(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Give each pool of ``survive_batches`` the capacity of its configuration at that batch (the scenarios'
    SLOs must hold there); the reasons it cannot, if any."""
    from placement.core.replicas.evaluate import evaluate

    v = []
    by_id = {f.pool.id: f for f in facts}
    for pool_id, batch in sorted(plan.survive_batches.items()):
        f = by_id.get(pool_id)
        if f is None or not f.main or pool_kind(f.pool.config.kind).measured or f.pool.config.partner is not None:
            v.append(f"survive_batches: {pool_id!r} is not a one-part, modelled pool of the plan")
            continue
        cls = ctx.classes[f.pool.config.traffic_class]
        perf = evaluate(ctx, f.pool.config.model_copy(update={"batch": batch}), cls)
        if not bool(perf.ok(cls)):
            v.append(f"survive_batches: pool {pool_id} at batch {batch} misses the failure scenarios' SLOs "
                     f"(TTFT {float(perf.ttft_s) * 1e3:.4g} ms of {cls.ttft_ms:.4g}, TPOT {float(perf.tpot_s) * 1e3:.4g} "
                     f"ms of {cls.tpot_ms:.4g}) or does not fit")
            continue
        f.actual_capacity_rps = {st: float(perf.capacity_rps) for st in f.steps}
    return v


def _check_switches(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Every switch whose loss (with every domain group hanging off it) leaves a class short."""
    behind: dict[str, set[str]] = defaultdict(set)
    for g in ctx.instance.hardware.domains:
        if g.switch is not None:
            behind[g.switch].add(g.name)
    partner = {f.pool.id: f.pool.paired_with for f in facts if f.main}
    placed = {f.pool.id: {s.site: s.replicas for s in f.pool.sites} for f in facts}
    whole = {f.pool.id: float(f.pool.replicas) for f in facts if f.main}
    v = []
    for switch, groups in sorted(behind.items()):
        def lost(pool: str | None, groups=groups) -> int:
            return sum(n for site, n in placed.get(pool or "", {}).items() if site in groups)

        left = {p: n - lost(p) - lost(partner[p]) for p, n in whole.items()}
        if not covers(ctx, facts, left):
            v.append(f"survive {plan.survive}: losing switch {switch} (domain groups {', '.join(sorted(groups))}) "
                     "leaves too few replicas to serve every class")
    return v
