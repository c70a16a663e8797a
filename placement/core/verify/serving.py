"""Checks that the plan serves every class: demand, routes, capacity, SLOs, memory and pairing.

Examples
--------
>>> from placement.core.verify.serving import check_demand  # doctest: +SKIP
>>> check_demand(ctx, plan, facts)                          # doctest: +SKIP
[]
"""

from __future__ import annotations

import math
from collections import defaultdict

from placement.core.instance.context import Context
from placement.core.modes.ids import RouteId, StepId
from placement.core.modes.registry import pool_kind
from placement.core.plans.plan import Plan, class_latencies_ms
from placement.core.replicas.evaluate import max_sequences_per_rank, rank_sequence_ceiling
from placement.core.verify.facts import SERVED_RPS, PoolFacts, class_routes, over

__all__ = ["check_capacity", "check_demand", "check_pairing", "check_routes", "check_slos_and_memory",
           "demand_tolerance_rps"]


def _step_loads(plan: Plan) -> dict[str, float]:
    load: dict[str, float] = defaultdict(float)
    for pool in plan.pools:
        for s in pool.sites:
            for step, rate in s.load_rps.items():
                load[step] += rate
    return load


#: A step's load may differ from its mode's share of the class rate by this fraction of the rate: the
#: solvers' primal feasibility tolerance (HiGHS and CBC: 1e-7 on rows whose demand is scaled to order 1,
#: :mod:`solvers.variables`), with margin.
DEMAND_RTOL = 1e-6
#: ...plus this many req/s, only so that a rate near the smallest float is not judged on rounding alone;
#: far below any rate a class can state and still be served (1e-12 req/s is one request in 30,000 years).
DEMAND_ATOL_RPS = 1e-30


def demand_tolerance_rps(rate_rps: float) -> float:
    """How far a step's load may sit from its share of a class rate: relative to the rate, tiny floor.

    Examples
    --------
    >>> demand_tolerance_rps(1e6)
    1.0
    >>> demand_tolerance_rps(1e-9) < 1e-14
    True
    """
    return DEMAND_RTOL * abs(rate_rps) + DEMAND_ATOL_RPS


def check_demand(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Σ_m share_m = 1 per class (0 allowed at rate 0), and every step of mode m carries share_m·rate; one chip type where asked."""
    v: list[str] = []
    step_load = _step_loads(plan)
    for cp in plan.classes:
        cls = ctx.classes.get(cp.name)
        if cls is None:
            continue
        routes = class_routes(ctx, cls)
        total = sum(cp.modes.values())
        # A class at rate 0 (a quiet period of a schedule) carries nothing: no share is needed.
        if abs(total - 1.0) > 1e-6 and not (cls.rate_rps == 0 and abs(total) <= 1e-6):
            v.append(f"class {cp.name}: mode shares sum to {total:.6f}, not 1")
        for mode, share in cp.modes.items():
            if mode not in routes:
                v.append(f"class {cp.name}: mode {mode!r} is not allowed for it (allowed: {', '.join(routes)})")
                continue
            if share < 0:
                v.append(f"class {cp.name}: mode {mode} has share {share}; shares must be ≥ 0")
            want = share * cls.rate_rps
            for step in routes[mode]:
                got = step_load.get(step, 0.0)
                if abs(got - want) > demand_tolerance_rps(cls.rate_rps):
                    v.append(f"class {cp.name} mode {mode}: step {step.split('|')[-1]} carries {got:.6g} req/s, "
                             f"expected {want:.6g}")
    for name in sorted(set(ctx.classes) - {c.name for c in plan.classes}):
        v.append(f"class {name} is not served by the plan")
    for name, cls in ctx.classes.items():
        if cls.single_chip_type:
            kinds = sorted({f.layout.chip for f in facts if f.main and any(
                StepId.parse(st).traffic_class == name and r > 1e-9 for s in f.pool.sites for st, r in s.load_rps.items())})
            if len(kinds) > 1:
                v.append(f"class {name} must be served by one chip type, is served by {', '.join(kinds)}")
    return v


def check_routes(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Loads only on steps the pool's configuration serves, of modes its class uses (partners carry none)."""
    v: list[str] = []
    used = {RouteId(cp.name, mode) for cp in plan.classes for mode, share in cp.modes.items() if share > 0}
    for f in facts:
        for s in f.pool.sites:
            for step, rate in s.load_rps.items():
                if not f.main:
                    v.append(f"pool {f.pool.id}: a partner pool carries load on {step} at {s.site}")
                elif step not in f.steps:
                    v.append(f"pool {f.pool.id} at {s.site}: load on {step!r}, a step its {f.pool.config.kind} "
                             f"configuration does not serve (it serves {', '.join(f.steps) or 'none'})")
                elif rate > SERVED_RPS and StepId.parse(step).route not in used:
                    v.append(f"pool {f.pool.id} at {s.site}: {rate:.6g} req/s on {step}, a mode its class "
                             f"does not use")
    return v


def check_capacity(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Σ_q load_q / cap_q ≤ replicas at each site, cap at the latency its pairs actually use."""
    v: list[str] = []
    for f in facts:
        if not f.main:
            continue
        caps = f.actual_capacity_rps
        for s in f.pool.sites:
            need = sum(rate / caps[st] if caps.get(st, 0) > 0 else math.inf
                       for st, rate in s.load_rps.items() if rate > 1e-9 and st in caps)
            if over(need, s.replicas):
                v.append(f"pool {f.pool.id} at {s.site}: load needs {need:.6g} replicas, has {s.replicas}")
    return v


def _most_stages(ctx: Context, part) -> int | None:
    """The stages ``part`` may run (:meth:`~placement.core.instance.context.Context.most_pipeline_stages`), its
    domain size that of the resource it names."""
    site = ctx.resources().get(part.site_resource)
    return None if site is None else ctx.most_pipeline_stages(part.chip, part.chips, site.chips_per_domain)


def check_slos_and_memory(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Each configuration fits its chips' memory, its engine's sequences per rank and its pipeline stages
    (the main part's: ``serving.max_pipeline_stages``, else its chip's calibrated stages) and meets its
    class's TTFT and TPOT; each route's TTFT (its steps' parts added,
    :func:`placement.core.plans.plan.class_latencies_ms`) meets the class's."""
    v: list[str] = []
    serving = ctx.instance.serving
    engine_cap = max_sequences_per_rank(ctx)
    for f in facts:
        kind = pool_kind(f.pool.config.kind)
        if not f.main or kind.measured:
            continue
        cfg, cls = f.pool.config, ctx.classes[f.pool.config.traffic_class]
        # An attention half's dp groups each run its batch (PoolKind.weights); other kinds share it over dp ranks.
        per_rank = cfg.batch if kind.weights is not None else cfg.batch / cfg.main.dp
        rank_chips = cfg.main.chips / cfg.main.dp
        chip_cap = float(rank_sequence_ceiling(ctx, rank_chips))
        if per_rank > engine_cap:
            v.append(f"pool {f.pool.id}: {per_rank:g} sequences per rank exceed the {serving.framework} "
                     f"engine's {engine_cap} (costmodels/catalog/frameworks.yaml, serving.max_sequences_per_rank)")
        elif per_rank > chip_cap:
            v.append(f"pool {f.pool.id}: {per_rank:g} sequences per rank of {rank_chips:g} chips exceed "
                     f"serving.max_sequences_per_chip {serving.max_sequences_per_chip:g} ({chip_cap:g} a rank)")
        elif (most_pp := _most_stages(ctx, cfg.main)) is not None and cfg.main.pp > most_pp:
            why = "serving.max_pipeline_stages" if serving.max_pipeline_stages is not None else \
                f"the stages {cfg.main.chip}'s calibration measured (raised to fill its domains)"
            v.append(f"pool {f.pool.id}: {cfg.main.pp} pipeline stages exceed {why}: {most_pp}")
        elif not f.fits:
            parts = f"{cfg.main.chip} x{cfg.main.chips}" + (f" + {cfg.partner.chip} x{cfg.partner.chips}"
                                                            if cfg.partner else "")
            v.append(f"pool {f.pool.id}: {parts} does not fit in memory")
        if f.tpot_ms is not None and over(f.tpot_ms, cls.tpot_ms):
            v.append(f"pool {f.pool.id}: TPOT {f.tpot_ms:.3f} ms exceeds class {cls.name}'s {cls.tpot_ms} ms")
        if f.ttft_ms is not None and over(f.ttft_ms, cls.ttft_ms):
            v.append(f"pool {f.pool.id}: TTFT {f.ttft_ms:.3f} ms exceeds class {cls.name}'s {cls.ttft_ms} ms")
    for name, cls in ctx.classes.items():
        ttft, _ = class_latencies_ms(name, (
            ([st for s in f.pool.sites for st, r in s.load_rps.items() if r > SERVED_RPS], f.ttft_ms, None)
            for f in facts if f.main))
        if ttft is not None and over(ttft, cls.ttft_ms):
            v.append(f"class {name}: TTFT {ttft:.3f} ms along its worst route (prefill and decode-slot waits "
                     f"included) exceeds its {cls.ttft_ms} ms")
    return v


def check_pairing(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Paired parts have equal replicas; Σ_{s'} pairs(s, s') = main replicas at s and Σ_s pairs(s, s') =
    partner replicas at s'; a pair's latency is within its column's latency level."""
    v: list[str] = []
    by_key = {(f.pool.column, f.pool.part): f for f in facts}
    for f in facts:
        if not f.main or f.pool.config.partner is None:
            continue
        col, pid = f.pool.column, f.pool.id
        partner = by_key.get((col, 1))
        if partner is None or partner.replicas != f.replicas:
            v.append(f"pool {pid}: paired pool {None if partner is None else partner.pool.id} has "
                     f"{None if partner is None else partner.replicas} replicas, expected {f.replicas}")
            continue
        out: dict[str, float] = defaultdict(float)
        into: dict[str, float] = defaultdict(float)
        for pr in plan.pairs:
            if pr.column == col:
                out[pr.source_site] += pr.replicas
                into[pr.target_site] += pr.replicas
        for side, sums, pool in (("from", out, f.pool), ("to", into, partner.pool)):
            for s in pool.sites:
                if abs(sums.get(s.site, 0.0) - s.replicas) > 1e-6 * max(s.replicas, 1):
                    v.append(f"pool {pid}: pairs {side} {s.site} cover {sums.get(s.site, 0.0):.6g} replicas, "
                             f"expected {s.replicas}")
        if f.latency_level_s is not None and f.latency_s > f.latency_level_s * (1 + 1e-9) + 1e-15:
            v.append(f"pool {pid}: its pairs' latency {f.latency_s * 1e6:.6g} µs exceeds every latency level "
                     f"its capacity allows")
        if not math.isfinite(f.latency_s):
            v.append(f"pool {pid}: a pair has no path between its sites")
    return v
