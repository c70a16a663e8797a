"""A solution turned into a plan: pools, classes, links, pairs and totals, with the plan's notes.

:func:`assemble_plan` reads a :class:`~solvers.solution.Solution` of a problem of
:func:`placement.core.pipeline.problem.build_problem` back into the instance's words: one pool per column part,
its sites and loads, its latencies at the load it carries (:mod:`placement.core.replicas.queues`), its error
bands, the domains that host it; each class's mode shares and worst latencies; each link's load; the
totals. Nothing here is trusted: :mod:`placement.core.verify.verifier` re-derives every field.
"""

from __future__ import annotations

from collections import defaultdict

from placement.core.instance.calibration_overlay import overlay_band, overlay_framework_latency_s
from placement.core.instance.context import Context
from placement.core.kv.kv_feeds import kv_feeds_of
from placement.core.modes.ids import RouteId
from placement.core.modes.registry import pool_kind
from placement.core.plans.confidence import pool_bands
from placement.core.plans.numbers import num
from placement.core.plans.plan import (
    STAGE_OF_KIND,
    CandidateStats,
    ClassPlan,
    FlowPlan,
    LinkPlan,
    PairPlan,
    Plan,
    Pool,
    PoolSite,
    SolverStats,
    class_latencies_ms,
    replica_load_rps,
)
from placement.core.plans.provenance import provenance
from placement.core.plans.uplinks import domain_uplinks
from placement.core.replicas.evaluate import evaluate
from placement.core.replicas.generation import Candidates
from placement.core.replicas.measured_steps import table_field
from placement.core.replicas.queues import at_load
from placement.core.verify.facts import SERVED_RPS, transfers
from solvers.packing import pack_into_domains
from solvers.problem import Problem, Site
from solvers.solution import Solution, clean

__all__ = ["assemble_plan", "fit_range_notes", "framework_notes", "headroom_notes", "overlay_range_notes",
           "pipeline_notes", "price_notes", "simulated_precision_notes", "uncalibrated_model_notes"]


def _solver_stats(sol: Solution) -> SolverStats:
    return SolverStats(
        backend=sol.backend, status=sol.status, message=sol.message, seconds=sol.build_seconds + sol.solve_seconds,
        build_seconds=sol.build_seconds, objective=sol.objective, best_bound=sol.best_bound, gap=sol.gap,
        variables=sol.variables, integer_variables=sol.integer_variables, constraints=sol.constraints,
        nonzeros=sol.nonzeros,
    )


def headroom_notes(ctx: Context) -> list[str]:
    """The plan note saying its SLOs are the instance's × ``slo_headroom`` (none without a headroom)."""
    if ctx.given is None or ctx.given.slo_headroom == 1.0:
        return []
    return [(f"planned at {ctx.given.slo_headroom:.0%} of every class's SLOs (slo_headroom): the classes' SLO "
             "fields are the tightened ones")]


def price_notes(ctx: Context) -> list[str]:
    """The plan note naming the chip price set and each fleet chip's price from it (none for the default set)."""
    from topology.prices import DEFAULT_PRICES, load_price_sets

    name = ctx.instance.prices
    if name == DEFAULT_PRICES:
        return []
    table = load_price_sets()[name]
    own = {c.name for c in ctx.instance.hardware.chips}
    used = sorted({s.chip.name for s in ctx.sites.values()
                   if s.chip.name not in own and s.group.usd_per_hour_per_chip is None})
    listed = [(c, table.price(c)) for c in used if table.price(c) is not None]
    estimates = [c for c, p in listed if p.estimate]
    if not listed:
        return [(f"chip prices: the {name} set prices no chip here (every chip of the fleet has the instance's "
                 "own price)")]
    each = ", ".join(f"{c} ${p.usd_per_hour:,.2f}/h" for c, p in listed)
    return [f"chip prices: the {name} set (topology/catalog/prices.yaml, {table.as_of}): {each}"
            + (f"; estimates: {', '.join(estimates)}" if estimates else "")]


def framework_notes(inst) -> list[str]:
    """The plan note naming the serving framework whose request latency every pool's TTFT includes (none if
    the instance names no framework)."""
    from costmodels.frameworks import DEFAULT_FRAMEWORK, framework_entry

    name = inst.serving.framework
    if name == DEFAULT_FRAMEWORK:
        return []
    latency_ms = framework_entry(name).ttft_request_latency_s * 1e3
    fleet = {d.chip for d in inst.hardware.domains}
    own = {chip: ms for chip in sorted(fleet)
           if (ms := overlay_framework_latency_s(inst.calibration, name, chip)) is not None}
    mine = "".join(f"; on {chip} {ms * 1e3:.4g} ms (the calibration overlay {inst.calibration.label}, from your "
                   "light-load TTFTs)" for chip, ms in sorted(own.items()))
    return [(f"serving framework {name}: every pool's TTFT includes its request latency of {latency_ms:g} ms "
            f"(costmodels/catalog/frameworks.yaml){mine}")]


def _network_free_notes(cands: Candidates) -> list[str]:
    """The plan note saying the solve saw the pair columns pruned network-free (K0) and no more."""
    if not cands.network_free:
        return []
    return [(f"candidates: the two-part (attention–FFN, remote draft) columns were pruned network-free, pair "
             f"traffic and latency limits left out ({cands.kept:,} columns kept); the bound of the fleet without "
             "its network proved the plan on them, so the full set of pair columns was not generated")]


def assemble_plan(ctx: Context, problem: Problem, cands: Candidates, sol: Solution) -> Plan:
    """Turn a solver solution into pools, classes, links and totals (with the plan's provenance)."""
    inst = ctx.instance
    base = {
        "provenance": provenance(ctx),
        "instance": inst.name,
        "objective": inst.objective,
        "confidence": inst.confidence,
        "notes": headroom_notes(ctx) + price_notes(ctx) + framework_notes(inst) + _network_free_notes(cands),
        "max_pools_per_stage": inst.limits.max_pools_per_stage,
        "solver": _solver_stats(sol),
        "candidates": CandidateStats(generated=cands.generated, feasible=cands.feasible, kept=cands.kept),
    }
    if not sol.ok:
        status = sol.status if sol.status in ("infeasible", "time_limit", "error") else "error"
        return Plan(status=status, message=sol.message, **base)
    columns = {c.name: c for c in problem.columns}
    sites_of: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for p in sol.replicas:
        if p.replicas > 0:
            sites_of[p.column, p.part][p.site] = p.replicas
    loads: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for ld in sol.loads:
        loads[ld.column, ld.site][ld.step] = ld.rate
    pools: list[Pool] = []
    index = {col: i + 1 for i, col in enumerate(sorted({c for c, _ in sites_of}))}
    ids = {(col, part): f"pool-{index[col]:02d}" + ("b" if part else "") for col, part in sites_of}
    for (col, part), where in sorted(sites_of.items()):
        cfg = cands.configs[col]
        lay = cfg.main if part == 0 else cfg.partner
        stage = STAGE_OF_KIND[cfg.kind][part]
        replicas = sum(where.values())
        cap = columns[col].capacity
        psites = [PoolSite(site=s, replicas=n, load_rps=dict(sorted(loads.get((col, s), {}).items())) if part == 0 else {})
                  for s, n in sorted(where.items())]
        used = sum(r / cap[st] for ps in psites for st, r in ps.load_rps.items() if st in cap)
        ttft = tpot = mem = None
        busy = 0.0
        cls = ctx.classes.get(cfg.traffic_class)
        if cls is not None and not pool_kind(cfg.kind).measured:
            # Latencies at the load the plan gives each replica, not at the capacity it is rated for.
            with at_load(replica_load_rps(psites)) as load:
                perf = evaluate(ctx, cfg, cls, pair_latency_s=_pair_latency(ctx, sol, col))
            busy = round(load.busy, 6) if part == 0 else 0.0
            ttft = float(perf.ttft_s) * 1e3 if part == 0 else None
            tpot = float(perf.tpot_s) * 1e3 if stage != "prefill" else None
            mem = float(perf.memory_per_chip_bytes) / 1e9 if part == 0 else None
        usd = sum(n * lay.chips * ctx.sites[s].usd_per_hour_per_chip for s, n in where.items())
        power = sum(n * lay.chips * ctx.sites[s].chip.power_w for s, n in where.items())
        partner = ids.get((col, 1 - part)) if cfg.partner else None
        pools.append(Pool(
            id=ids[col, part], column=col, stage=stage, traffic_class=cfg.traffic_class, chip=lay.chip,
            replicas=replicas, chips=replicas * lay.chips, chips_per_replica=lay.chips, tp=lay.tp, ep=lay.ep,
            pp=lay.pp, batch=cfg.batch, chunk_tokens=cfg.chunk_tokens, micro_batches=cfg.micro_batches,
            paired_with=partner, capacity_rps_per_replica=dict(sorted(cap.items())) if part == 0 else {},
            utilisation=round(used / replicas, 6) if part == 0 and replicas else 0.0, busy=busy,
            ttft_ms=ttft, tpot_ms=tpot, memory_per_chip_gb=mem, step_table=table_field(ctx, cfg, part),
            usd_per_hour=usd, power_w=power,
            domains=[ps.site for ps in psites], sites=psites, config=cfg, part=part,
        ))
    for pool in pools:
        pool.bands = pool_bands(pool, inst.confidence, inst.serving.framework,
                                overlay_band(inst.calibration, pool.chip))
    _assign_domains(ctx, pools)
    classes = _class_plans(ctx, sol, pools)
    edge_load = {(e.source, e.target): e.load_bytes_per_s for e in sol.edge_loads}
    links = [LinkPlan(source=e.source, target=e.target, load_bytes_per_s=edge_load.get((e.source, e.target), 0.0),
                      capacity_bytes_per_s=e.capacity_bytes_per_s,
                      utilisation=round(edge_load.get((e.source, e.target), 0.0) / e.capacity_bytes_per_s, 6)
                      if e.capacity_bytes_per_s else 0.0)
             for e in problem.edges]
    tokens_per_s = sum(c.rate_rps * c.output_tokens for c in inst.workload.classes)
    cost = sum(p.usd_per_hour for p in pools)
    chips_by_type: dict[str, int] = defaultdict(int)
    for p in pools:
        chips_by_type[p.chip] += p.chips
    plan = Plan(
        status="optimal" if sol.status == "optimal" else sol.status,
        cost_usd_per_hour=round(cost, 9),
        power_w=round(sum(p.power_w for p in pools), 6),
        chips=sum(p.chips for p in pools),
        chips_by_type=dict(sorted(chips_by_type.items())),
        output_tokens_per_s=tokens_per_s,
        usd_per_million_output_tokens=round(cost / (tokens_per_s * 3600) * 1e6, 9) if tokens_per_s else None,
        pools=pools,
        classes=classes,
        links=links,
        flows=[FlowPlan(transfer=f.transfer, source=f.source, target=f.target, bytes_per_s=f.bytes_per_s)
               for f in sol.flows],
        pairs=[PairPlan(column=p.column, source_site=p.source_site, target_site=p.target_site, replicas=p.replicas,
                        latency_us=round(ctx.routing.latency_s(p.source_site, p.target_site) * 1e6, 6))
               for p in sol.pairs],
        message=sol.message,
        **base,
    )
    plan.prefill_to_decode = kv_feeds_of(ctx, plan)
    plan.uplinks = domain_uplinks(ctx, plan.pools, transfers(ctx))
    plan.notes = [*plan.notes, *overlay_range_notes(inst, pools), *fit_range_notes(ctx, pools),
                  *pipeline_notes(ctx, pools), *simulated_precision_notes(ctx, pools),
                  *uncalibrated_model_notes(ctx.model)]
    return plan


def uncalibrated_model_notes(model) -> list[str]:
    """A plan note when no serving measurement of the model stands behind the chip factors."""
    if model.calibration == "calibrated":
        return []
    kinds = [k for k, on in (("linear-attention layers", model.linear_mixer is not None),
                             ("sparse attention", model.attention.indexer is not None)) if on]
    extra = f"; its {' and '.join(kinds)} are priced by the roofline alone" if kinds else ""
    return [(f"model {model.name} is uncalibrated: the chip factors were fitted on other models' measurements"
            f"{extra} (placement measure import / placement calibrate fit yours)")]


def simulated_precision_notes(ctx: Context, pools: list[Pool]) -> list[str]:
    """One plan note per chip that runs FP4-family weights without FP4 units (MXFP4 on Hopper): the engines
    simulate the format there, the step model prices it at a rate the chip has (:meth:`ChipSpec.rate_for
    <topology.chips.ChipSpec.rate_for>`: BF16 for MXFP4 on Hopper), and no such measurement is in its fit; held
    out, TensorRT-LLM's gpt-oss tables on H100 and H200 were 1.25–2.3× optimistic at their measured layouts
    (benchmarks/CAPACITY.md).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> from topology.chips import load_chip_catalog
    >>> cat = load_chip_catalog()
    >>> ctx = NS(instance=NS(precision=NS(weights="mxfp4")), chips=cat)
    >>> [n.split(":")[0] for n in simulated_precision_notes(ctx, [NS(chip="h200"), NS(chip="b200"), NS(chip="h200")])]
    ['mxfp4 weights on h200 (no FP4 units)']
    """
    weights = ctx.instance.precision.weights
    if weights not in ("fp4", "mxfp4"):
        return []
    out = []
    for name in dict.fromkeys(p.chip for p in pools):
        chip = ctx.chips.get(name)
        if chip is not None and "fp4" not in chip.flops_per_s:
            out.append(f"{weights} weights on {name} (no FP4 units): the engine simulates the format and the plan "
                       f"prices it at the chip's {chip.rate_for(weights)} rate, unmeasured; held out, such plans (gpt-oss on H100 and "
                       "H200) were 1.25-2.3x optimistic (benchmarks/CAPACITY.md): price at --confidence or "
                       "measure it (placement measure import / placement calibrate)")
    return out


def fit_range_notes(ctx: Context, pools: list[Pool]) -> list[str]:
    """Plan notes for pools on a catalogue-calibrated chip (none of the overlay's) that run more sequences per
    rank than any measurement its factors were fitted on: the step model extrapolates there, and on held-out
    campaigns such plans were the most optimistic (benchmarks/CAPACITY.md)."""
    listed = set() if ctx.instance.calibration is None else set(ctx.instance.calibration.chips)
    out = []
    for p in pools:
        chip = ctx.chips.get(p.chip)
        if chip is None or p.chip in listed or chip.calibrated_batch_per_rank is None or p.part:
            continue
        per_rank = p.batch / max(p.chips_per_replica // (p.tp * p.pp), 1)
        hi = chip.calibrated_batch_per_rank[1]
        if per_rank > hi:
            out.append(f"{p.id} runs {num(per_rank)} sequences per rank on {p.chip}, beyond the {num(hi)} its "
                       "calibration measured: the step model extrapolates there (hold plans to measured loads with "
                       "serving.max_sequences_per_rank, or price them at --confidence)")
    return out


def pipeline_notes(ctx: Context, pools: list[Pool]) -> list[str]:
    """Plan notes for pools on a calibrated chip that run more pipeline stages than any measurement its factors
    were fitted on (``calibrated_pipeline_stages``; 1 for every GPU: no measured GPU run used any). Plans hold
    to them unless ``serving.max_pipeline_stages`` allows more or a replica spans more domains than one
    (:meth:`~placement.core.instance.context.Context.most_pipeline_stages`); such stages' hand-offs and bubbles
    are modelled, not measured, and on held-out campaigns pipeline-parallel GPU plans were the planner's most
    optimistic (benchmarks/CAPACITY.md). The overlay's chips are the user's own."""
    listed = set() if ctx.instance.calibration is None else set(ctx.instance.calibration.chips)
    out = []
    for p in pools:
        chip = ctx.chips.get(p.chip)
        seen = None if chip is None else chip.calibrated_pipeline_stages
        if seen is None or p.chip in listed or p.part or p.pp <= seen:
            continue
        measured = "no run its calibration measured used pipeline stages" if seen == 1 else \
            f"its calibration measured at most {seen}"
        why = "serving.max_pipeline_stages allows them" if ctx.instance.serving.max_pipeline_stages is not None \
            else "its replicas span more than one scale-up domain"
        out.append(f"{p.id} runs {p.pp} pipeline stages on {p.chip} ({why}): {measured}, so this rests on the "
                   "step model alone (held out, such GPU plans were 1.23x optimistic: benchmarks/CAPACITY.md)")
    return out


def overlay_range_notes(inst, pools: list[Pool]) -> list[str]:
    """Plan notes for pools on a chip of the calibration overlay run beyond the batches it was measured at:
    the overlay's factors and band are extrapolated there."""
    ov = inst.calibration
    out = []
    for p in pools:
        cal = None if ov is None else ov.chips.get(p.chip)
        if cal is None or cal.batch_per_replica is None or p.part:
            continue
        lo, hi = cal.batch_per_replica
        if not lo <= p.batch <= hi:
            out.append(f"{p.id} runs batch {p.batch:,} on {p.chip}, outside the {lo:g}–{hi:g} sequences per replica "
                       f"its calibration overlay was measured at: the overlay's factors and band are extrapolated")
    return out


def _pair_latency(ctx: Context, sol: Solution, column: str) -> float:
    lats = [ctx.routing.latency_s(p.source_site, p.target_site) for p in sol.pairs
            if p.column == column and p.replicas > 1e-9]
    return max(lats, default=0.0)


def _assign_domains(ctx: Context, pools: list[Pool]) -> None:
    """Name the domains of each group that host each pool (largest replicas first)."""
    by_site: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for p in pools:
        for s in p.sites:
            by_site[s.site][p.id] = (p.chips_per_replica, s.replicas)
    for site_name, sizes in by_site.items():
        info = ctx.sites[site_name]
        site = Site(name=site_name, node=site_name, resource=info.resource, units_per_domain=info.chips_per_domain,
                    domains=info.group.count, usd_per_hour_per_unit=0.0, power_w_per_unit=0.0)
        try:
            hosted = pack_into_domains(site, sizes)
        except ValueError:
            continue  # the verifier reports it
        for p in pools:
            for s in p.sites:
                if s.site == site_name:
                    s.domains = sorted(d for d, items in hosted.items() if any(k == p.id for k, _ in items))


def _class_plans(ctx: Context, sol: Solution, pools: list[Pool]) -> list[ClassPlan]:
    out = []
    for cls in ctx.instance.workload.classes:
        modes = {}
        for route, rate in sorted(sol.route_rates.items()):
            rid = RouteId.parse(route)
            if rid.traffic_class == cls.name and rate > 0:
                modes[rid.mode] = clean(rate / cls.rate_rps)  # 10 significant digits, not 9 decimals
        ttft, tpot = class_latencies_ms(cls.name, (
            ([st for s in p.sites for st, r in s.load_rps.items() if r > SERVED_RPS], p.ttft_ms, p.tpot_ms) for p in pools))
        out.append(ClassPlan(name=cls.name, rate_rps=cls.rate_rps, modes=modes, ttft_ms=ttft, tpot_ms=tpot,
                             ttft_slo_ms=cls.ttft_ms, tpot_slo_ms=cls.tpot_ms))
    return out
