"""Checks that every field a consumer reads says what the configuration and instance give.

A plan's flat fields (a pool's ``stage``, ``chips``, ``tpot_ms``, ``usd_per_hour``…,
a class's ``ttft_ms``, the plan's totals) are what reports, comparisons and
people read; the MILP never sees them. Each is compared here with its value
re-derived in :mod:`placement.core.verify.facts`, so an edited plan cannot
say one thing and be another.

Examples
--------
>>> from placement.core.verify.fields import mismatch
>>> mismatch("pool p", "tp", 8, 1)
'pool p: tp says 8, its configuration gives 1'
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from typing import Any

from placement.core.instance.calibration_overlay import overlay_band
from placement.core.instance.context import Context
from placement.core.plans.confidence import pool_bands
from placement.core.plans.plan import Plan, class_latencies_ms
from placement.core.replicas.measured_steps import table_field
from placement.core.verify.facts import RTOL, SERVED_RPS, PoolFacts, close

__all__ = ["check_class_fields", "check_links", "check_pair_fields", "check_pool_fields", "check_totals",
           "mismatch"]

#: Utilisations are written rounded to 6 decimals.
_UTILISATION_TOL = 2e-6


def mismatch(where: str, name: str, says: Any, gives: Any, source: str = "its configuration") -> str:
    """The sentence for a field that does not match its re-derived value."""
    return f"{where}: {name} says {says!r}, {source} gives {gives!r}"


def _same(says: Any, gives: Any) -> bool:
    if isinstance(gives, float) or isinstance(says, float):
        return close(says, gives)
    if isinstance(gives, dict) and isinstance(says, dict):
        return says.keys() == gives.keys() and all(_same(says[k], gives[k]) for k in gives)
    return says == gives


def check_pool_fields(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Every flat field of a pool = its value re-derived from ``config``, its sites and the instance."""
    v: list[str] = []
    ids = {(f.pool.column, f.pool.part): f.pool.id for f in facts}
    for f in facts:
        p, cfg, lay = f.pool, f.pool.config, f.layout
        partner = ids.get((p.column, 1 - p.part)) if cfg.partner is not None else None
        utilisation = 0.0
        if f.main and f.replicas:
            used = sum(rate / f.capacity_rps[st] for s in p.sites for st, rate in s.load_rps.items()
                       if f.capacity_rps.get(st, 0.0) > 0)
            utilisation = round(used / f.replicas, 6)
        want = {
            "stage": f.stage, "traffic_class": cfg.traffic_class, "chip": lay.chip, "replicas": f.replicas,
            "chips": f.chips, "chips_per_replica": f.chips_per_replica, "tp": lay.tp, "ep": lay.ep, "pp": lay.pp,
            "batch": cfg.batch, "chunk_tokens": cfg.chunk_tokens, "micro_batches": cfg.micro_batches,
            "paired_with": partner, "capacity_rps_per_replica": f.capacity_rps, "ttft_ms": f.ttft_ms,
            "tpot_ms": f.tpot_ms, "memory_per_chip_gb": f.memory_per_chip_gb,
            "step_table": table_field(ctx, cfg, p.part), "usd_per_hour": f.usd_per_hour,
            "power_w": f.power_w, "domains": [s.site for s in p.sites],
        }
        bands = pool_bands(p, plan.confidence, ctx.instance.serving.framework,
                           overlay_band(ctx.instance.calibration, p.chip))
        if (None if p.bands is None else p.bands.model_dump()) != (None if bands is None else bands.model_dump()):
            v.append(mismatch(f"pool {p.id}", "bands", p.bands, bands, "its stated TPOT, TTFT and capacity"))
        for name, gives in want.items():
            says = getattr(p, name)
            if not _same(says, gives):
                v.append(mismatch(f"pool {p.id}", name, says, gives))
        if abs(p.utilisation - utilisation) > _UTILISATION_TOL + RTOL * utilisation:
            v.append(mismatch(f"pool {p.id}", "utilisation", p.utilisation, utilisation, "its loads and capacity"))
        if abs(p.busy - f.busy) > _UTILISATION_TOL + RTOL * f.busy:
            v.append(mismatch(f"pool {p.id}", "busy", p.busy, f.busy, "its loads and its servers' service times"))
    return v


def check_class_fields(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """A class's rate and SLOs are the instance's; its TTFT/TPOT from its pools (:func:`class_latencies_ms`)."""
    v: list[str] = []
    for cp in plan.classes:
        cls = ctx.classes.get(cp.name)
        if cls is None:
            continue
        ttft, tpot = class_latencies_ms(cp.name, (
            ([st for s in f.pool.sites for st, r in s.load_rps.items() if r > SERVED_RPS], f.ttft_ms, f.tpot_ms)
            for f in facts))
        want = {"rate_rps": cls.rate_rps, "ttft_slo_ms": cls.ttft_ms, "tpot_slo_ms": cls.tpot_ms,
                "ttft_ms": ttft, "tpot_ms": tpot}
        for name, gives in want.items():
            says = getattr(cp, name)
            if not _same(says, None if gives is None else float(gives)):
                v.append(mismatch(f"class {cp.name}", name, says, gives, "the instance and its pools"))
    return v


def check_totals(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """The plan's cost, power, chips (by type), output tokens/s and $/M tokens = the sums over its pools."""
    v: list[str] = []
    cost = sum(f.usd_per_hour for f in facts) + ctx.kv_usd_per_hour
    power = sum(f.power_w for f in facts)
    if plan.cost_usd_per_hour is not None and not close(plan.cost_usd_per_hour, cost, 1e-6):
        v.append(f"cost: plan says ${plan.cost_usd_per_hour:.6g}/h, its pools (and KV tiers) cost ${cost:.6g}/h")
    if plan.power_w is not None and not close(plan.power_w, power, 1e-6):
        v.append(f"power: plan says {plan.power_w:.6g} W, its pools draw {power:.6g} W")
    by_type: dict[str, int] = defaultdict(int)
    for f in facts:
        by_type[f.layout.chip] += f.chips
    tokens = sum(c.rate_rps * c.output_tokens for c in ctx.instance.workload.classes)
    want = {"chips": sum(f.chips for f in facts), "chips_by_type": dict(sorted(by_type.items())),
            "output_tokens_per_s": float(tokens),
            "usd_per_million_output_tokens": cost / (tokens * 3600) * 1e6 if tokens else None}
    for name, gives in want.items():
        says = getattr(plan, name)
        if says is not None and not _same(says, gives):
            v.append(mismatch("plan", name, says, gives, "its pools"))
    return v


def check_pair_fields(ctx: Context, plan: Plan) -> list[str]:
    """A pair's latency is its lowest-latency path's."""
    v = []
    for i, pr in enumerate(plan.pairs):
        lat_us = ctx.routing.latency_s(pr.source_site, pr.target_site) * 1e6
        if not close(pr.latency_us, lat_us):
            v.append(mismatch(f"pairs[{i}]", "latency_us", pr.latency_us, lat_us, "the fleet's lowest-latency path"))
    return v


def check_links(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Each fleet link listed once; its capacity the fleet's, its utilisation load/capacity, and its load
    Σ flows + Σ pairs·B·(times on the pair's path both ways), B each column's traffic at its latency level
    (on the one lowest-latency path of :class:`topology.routing.Routing`, as the MILP routes it)."""
    v: list[str] = []
    G = ctx.graph
    exact: dict[tuple[str, str], float] = defaultdict(float)
    for fl in (*plan.flows, *plan.kv_flows):  # a remote KV store's flows share the links
        exact[fl.source, fl.target] += fl.bytes_per_s
    level_bytes = {f.pool.column: f.level_pair_bytes_per_s for f in facts if f.main}
    for pr in plan.pairs:
        traffic = pr.replicas * level_bytes.get(pr.column, 0.0)
        if traffic <= 0:
            continue
        for a, b in ((pr.source_site, pr.target_site), (pr.target_site, pr.source_site)):
            for e in pairwise(ctx.routing.path(a, b) or ()):
                exact[e] += traffic
    listed = {(lk.source, lk.target) for lk in plan.links}
    v += [f"links: link {a}->{b} of the fleet is missing" for a, b in sorted(set(G.edges) - listed)]
    for i, lk in enumerate(plan.links):
        if not G.has_edge(lk.source, lk.target):
            continue
        cap = G.edges[lk.source, lk.target]["bandwidth_bytes_per_s"]
        where = f"links[{i}] ({lk.source}->{lk.target})"
        if not close(lk.capacity_bytes_per_s, cap):
            v.append(mismatch(where, "capacity_bytes_per_s", lk.capacity_bytes_per_s, cap, "the fleet"))
        util = round(lk.load_bytes_per_s / cap, 6) if cap else 0.0
        if abs(lk.utilisation - util) > _UTILISATION_TOL + RTOL * util:
            v.append(mismatch(where, "utilisation", lk.utilisation, util, "its load and capacity"))
        want = exact.get((lk.source, lk.target), 0.0)
        slack = RTOL * max(lk.load_bytes_per_s, want) + 1e-3
        # The MILP may leave pair terms summing below 1e-9 of an edge's capacity out of its row
        # (solvers.network_rows.add_edge_capacity), so the load it states may fall short of the derived
        # one by that much; a stated load above the derived one has no such excuse.
        omitted = 1e-9 * cap
        if not want - slack - omitted <= lk.load_bytes_per_s <= want + slack:
            v.append(f"{where}: load_bytes_per_s says {lk.load_bytes_per_s:.10g}, its flows and pairs put "
                     f"{want:.10g} on it")
    return v
