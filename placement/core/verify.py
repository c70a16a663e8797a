"""The independent verifier: re-derive every constraint of a plan from the cost models.

Nothing here reads the MILP. From the instance and the plan alone it
recomputes, with :mod:`placement.core.evaluate` and the fleet graph:

1. demand: each class's mode shares sum to its rate, and every step of every
   mode carries that mode's rate;
2. capacity: each pool's load per site fits its replicas there at the capacity
   the cost models give its configuration (paired pools at the latency of the
   paths their pairs actually use);
3. SLOs and memory: each configuration meets its class's TTFT/TPOT and fits;
4. chips: every site's replicas pack into its whole domains;
5. network: per transfer, flow conservation at every node against the loads,
   and every edge's transfer + pair traffic within its bandwidth;
6. pairing: paired pools have equal replicas at both ends;
7. economics and limits: cost, power and chips recomputed and within the limits;
8. physics: no pool's TPOT, TTFT or capacity beats the floors of
   :mod:`placement.core.floors`, which share no code with the cost models.

Examples
--------
>>> from placement.core.verify import verify  # doctest: +SKIP
>>> verify(ctx, plan)                    # doctest: +SKIP
[]
"""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import pairwise

from placement.core.context import Context
from placement.core.evaluate import PoolConfig, evaluate
from placement.core.floors import check_floors
from placement.core.plan import Plan
from solvers.packing import pack_into_domains
from solvers.problem import Site

__all__ = ["RTOL", "pair_latency_of", "verify"]

#: Relative slack for floating-point comparisons (solvers report ~1e-9 noise).
RTOL = 1e-6


def _over(value: float, limit: float) -> bool:
    return value > limit * (1 + RTOL) + 1e-9


def pair_latency_of(ctx: Context, plan: Plan, column: str) -> float:
    """Worst one-way path latency among the pairs a paired column uses (0 if unpaired)."""
    lats = [ctx.routing.latency_s(p.source_site, p.target_site) for p in plan.pairs
            if p.column == column and p.replicas > 1e-9]
    return max(lats, default=0.0)


def verify(ctx: Context, plan: Plan) -> list[str]:
    """Every violated constraint of ``plan`` as a sentence; empty when it holds."""
    v: list[str] = []
    if plan.status not in ("optimal", "feasible", "time_limit"):
        return v
    inst = ctx.instance
    classes = ctx.classes
    # ---- 1. demand -------------------------------------------------------------
    step_load: dict[str, float] = defaultdict(float)
    for pool in plan.pools:
        if pool.part:
            continue
        for s in pool.sites:
            for step, rate in s.load_rps.items():
                step_load[step] += rate
    for cp in plan.classes:
        cls = classes.get(cp.name)
        if cls is None:
            v.append(f"class {cp.name!r} is not in the instance")
            continue
        total = sum(cp.modes.values())
        if abs(total - 1.0) > 1e-6:
            v.append(f"class {cp.name}: mode shares sum to {total:.6f}, not 1")
        for mode, share in cp.modes.items():
            want = share * cls.rate_rps
            for step in _mode_steps(cp.name, mode):
                got = step_load.get(step, 0.0)
                if abs(got - want) > RTOL * max(want, 1.0) + 1e-9:
                    v.append(f"class {cp.name} mode {mode}: step {step.split('|')[-1]} carries {got:.6g} req/s, "
                             f"expected {want:.6g}")
    for name, cls in classes.items():
        if cls.single_chip_type:
            kinds = sorted({p.chip for p in plan.pools if p.part == 0 and any(
                st.split("|")[0] == name and r > 1e-9 for s in p.sites for st, r in s.load_rps.items())})
            if len(kinds) > 1:
                v.append(f"class {name} must be served by one chip type, is served by {', '.join(kinds)}")
    missing = set(classes) - {c.name for c in plan.classes}
    for name in sorted(missing):
        v.append(f"class {name} is not served by the plan")
    # ---- 2./3. capacity, SLOs, memory ------------------------------------------
    pools_by_id = {p.id: p for p in plan.pools}
    for pool in plan.pools:
        if pool.part:
            continue
        cfg: PoolConfig = pool.config
        lat = pair_latency_of(ctx, plan, pool.column)
        caps: dict[str, float] = {}
        for step in sorted({st for s in pool.sites for st in s.load_rps}):
            cname = step.split("|")[0]
            cls = classes.get(cname)
            if cls is None:
                v.append(f"pool {pool.id}: serves unknown class {cname!r}")
                continue
            caps[step] = _capacity(ctx, pool, cfg, cls, lat, v)
        for s in pool.sites:
            need = sum(rate / caps[st] if caps.get(st, 0) > 0 else math.inf
                       for st, rate in s.load_rps.items() if rate > 1e-9 and st in caps)
            if _over(need, s.replicas):
                v.append(f"pool {pool.id} at {s.site}: load needs {need:.6g} replicas, has {s.replicas}")
        # ---- 6. pairing ---------------------------------------------------------
        if pool.paired_with:
            partner = pools_by_id.get(pool.paired_with)
            if partner is None or partner.replicas != pool.replicas:
                v.append(f"pool {pool.id}: paired pool {pool.paired_with} has "
                         f"{None if partner is None else partner.replicas} replicas, expected {pool.replicas}")
            pair_sum = sum(p.replicas for p in plan.pairs if p.column == pool.column)
            if abs(pair_sum - pool.replicas) > 1e-6:
                v.append(f"pool {pool.id}: pairs cover {pair_sum:.6g} replicas, expected {pool.replicas}")
    # ---- 4. chips per site -----------------------------------------------------
    per_site: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for pool in plan.pools:
        chip_ok = True
        for s in pool.sites:
            info = ctx.sites.get(s.site)
            if info is None:
                v.append(f"pool {pool.id}: unknown domain group {s.site!r}")
                chip_ok = False
                continue
            if info.chip.name != pool.chip:
                v.append(f"pool {pool.id}: {pool.chip} replicas placed in {s.site}, a group of {info.chip.name}")
                chip_ok = False
            per_site[s.site][pool.id] = (pool.chips_per_replica, s.replicas)
        if pool.domains != [s.site for s in pool.sites]:
            v.append(f"pool {pool.id}: domains {pool.domains} do not match its sites")
        if chip_ok and sum(s.replicas for s in pool.sites) != pool.replicas:
            v.append(f"pool {pool.id}: sites hold {sum(s.replicas for s in pool.sites)} replicas, pool says "
                     f"{pool.replicas}")
    for site_name, sizes in sorted(per_site.items()):
        info = ctx.sites.get(site_name)
        if info is None:
            continue
        site = Site(name=site_name, node=site_name, resource=info.resource, units_per_domain=info.chips_per_domain,
                    domains=info.group.count, usd_per_hour_per_unit=0.0, power_w_per_unit=0.0)
        try:
            pack_into_domains(site, sizes)
        except ValueError as e:
            v.append(f"domain group {site_name}: replicas do not pack into its domains ({e})")
    # ---- 5. network -------------------------------------------------------------
    v.extend(_check_network(ctx, plan))
    # ---- 7. economics and limits -------------------------------------------------
    cost = sum(s.replicas * p.chips_per_replica * ctx.sites[s.site].usd_per_hour_per_chip
               for p in plan.pools for s in p.sites if s.site in ctx.sites)
    power = sum(s.replicas * p.chips_per_replica * ctx.sites[s.site].chip.power_w
                for p in plan.pools for s in p.sites if s.site in ctx.sites)
    if plan.cost_usd_per_hour is not None and abs(cost - plan.cost_usd_per_hour) > 1e-6 * max(cost, 1.0):
        v.append(f"cost: plan says ${plan.cost_usd_per_hour:.6g}/h, its pools cost ${cost:.6g}/h")
    if plan.power_w is not None and abs(power - plan.power_w) > 1e-6 * max(power, 1.0):
        v.append(f"power: plan says {plan.power_w:.6g} W, its pools draw {power:.6g} W")
    if inst.limits.power_kw is not None and _over(power, inst.limits.power_kw * 1e3):
        v.append(f"power {power / 1e3:.6g} kW exceeds the limit of {inst.limits.power_kw} kW")
    if inst.limits.budget_usd_per_hour is not None and _over(cost, inst.limits.budget_usd_per_hour):
        v.append(f"cost ${cost:.6g}/h exceeds the budget of ${inst.limits.budget_usd_per_hour}/h")
    # ---- 8. physical floors ------------------------------------------------------
    v.extend(check_floors(plan, ctx))
    return v


def _capacity(ctx: Context, pool, cfg: PoolConfig, cls, lat: float, v: list[str]) -> float:
    """Per-replica capacity for ``cls``, noting SLO and memory violations in ``v``."""
    if cfg.kind == "measured":
        cap = _measured_capacity(ctx, cfg, cls.name)
        if cap is None:
            v.append(f"pool {pool.id}: no measured capacity for class {cls.name} on {cfg.main.chip}")
        return cap or 0.0
    perf = evaluate(ctx, cfg, cls, pair_latency_s=lat)
    if not bool(perf.fits):
        v.append(f"pool {pool.id}: {cfg.main.chip} x{cfg.main.chips} does not fit in memory")
    if _over(float(perf.tpot_s), cls.tpot_s):
        v.append(f"pool {pool.id}: TPOT {float(perf.tpot_s) * 1e3:.3f} ms exceeds class {cls.name}'s {cls.tpot_ms} ms")
    if _over(float(perf.ttft_s), cls.ttft_s):
        v.append(f"pool {pool.id}: TTFT {float(perf.ttft_s) * 1e3:.3f} ms exceeds class {cls.name}'s {cls.ttft_ms} ms")
    return float(perf.capacity_rps)


def _mode_steps(cls: str, mode: str) -> list[str]:
    if mode == "aggregated":
        return [f"{cls}|aggregated|serve"]
    return [f"{cls}|{mode}|prefill", f"{cls}|{mode}|decode"]


def _measured_capacity(ctx: Context, cfg: PoolConfig, cls: str) -> float | None:
    for m in ctx.instance.measured_capacity:
        if m.chip == cfg.main.chip and m.chips == cfg.main.chips and m.traffic_class == cls:
            return m.max_rps_per_replica
    return None


def _check_network(ctx: Context, plan: Plan) -> list[str]:
    v: list[str] = []
    G = ctx.graph
    load: dict[tuple[str, str], float] = defaultdict(float)
    # Transfers: conservation against the loads, and their share of each edge.
    net: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for f in plan.flows:
        if not G.has_edge(f.source, f.target):
            v.append(f"flow {f.transfer} uses {f.source}->{f.target}, which is not a link")
            continue
        load[f.source, f.target] += f.bytes_per_s
        net[f.transfer][f.source] += f.bytes_per_s
        net[f.transfer][f.target] -= f.bytes_per_s
    kv_of = _transfer_bytes(ctx)
    site_of_step: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for pool in plan.pools:
        if pool.part:
            continue
        for s in pool.sites:
            for step, rate in s.load_rps.items():
                site_of_step[step][s.site] += rate
    for tname, (src_step, dst_step, b) in kv_of.items():
        # The solver meets each step's coverage to ~1e-7 of the class's rate, so a node's net
        # (a difference of two loads) is only that exact relative to the bytes of the whole step.
        scale = b * max(sum(site_of_step[src_step].values()), sum(site_of_step[dst_step].values()), 1.0)
        for node in G.nodes:
            want = b * (site_of_step[src_step].get(node, 0.0) - site_of_step[dst_step].get(node, 0.0))
            got = net.get(tname, {}).get(node, 0.0)
            if abs(got - want) > RTOL * max(abs(want), scale) + 1e-3:
                v.append(f"transfer {tname}: node {node} sends {got:.6g} B/s net, its loads need {want:.6g}")
    # Pair traffic along the lowest-latency paths, at the rate the cost model gives.
    pools_by_column = {p.column: p for p in plan.pools if p.part == 0}
    for pr in plan.pairs:
        pool = pools_by_column.get(pr.column)
        if pool is None or pr.replicas <= 1e-9:
            continue
        cls = ctx.classes.get(pool.traffic_class)
        lat = pair_latency_of(ctx, plan, pr.column)
        per_replica = float(evaluate(ctx, pool.config, cls, pair_latency_s=lat).pair_bytes_per_s)
        for a, b in ((pr.source_site, pr.target_site), (pr.target_site, pr.source_site)):
            path = ctx.routing.path(a, b)
            if path is None:
                v.append(f"pair {pr.column}: no path {a}->{b}")
                continue
            for u, w in pairwise(path):
                load[u, w] += per_replica * pr.replicas
    for (u, w), x in sorted(load.items()):
        cap = G.edges[u, w]["bandwidth_bytes_per_s"]
        if _over(x, cap):
            v.append(f"link {u}->{w}: carries {x / 1e9:.6g} GB/s, capacity {cap / 1e9:.6g} GB/s")
    return v


def _transfer_bytes(ctx: Context) -> dict[str, tuple[str, str, float]]:
    from costmodels import kv_transfer_bytes

    out = {}
    for cls in ctx.instance.workload.classes:
        b = float(kv_transfer_bytes(ctx.model, cls.prompt_tokens, cls.cached_prefix_tokens,
                                    ctx.instance.precision.kv, cls.prefix_cached_on_decode))
        for mode in ("pd", "pd+draft", "pd-af"):
            out[f"{cls.name}|{mode}|kv"] = (f"{cls.name}|{mode}|prefill", f"{cls.name}|{mode}|decode", b)
    return out
