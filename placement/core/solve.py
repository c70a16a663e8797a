"""From an instance to a verified plan: candidates → MILP → plan → verifier.

Examples
--------
>>> import placement
>>> inst = placement.load_instance("instances/melange-toy.yaml")  # doctest: +SKIP
>>> plan = placement.solve(inst)                                  # doctest: +SKIP
>>> plan.cost_usd_per_hour                                        # doctest: +SKIP
6.7
"""

from __future__ import annotations

import time
from collections import defaultdict

from placement.core.calibration_overlay import overlay_band, overlay_framework_latency_s
from placement.core.confidence import pool_bands
from placement.core.context import Context
from placement.core.deadline import TimeLimitError, bounded, left_after
from placement.core.evaluate import evaluate
from placement.core.generation import Candidates
from placement.core.kv_feeds import kv_feeds_of
from placement.core.measured_steps import table_field
from placement.core.plan import (
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
from placement.core.problem import build_problem
from placement.core.queues import at_load
from placement.core.schema import Instance
from placement.core.verify import verify
from placement.core.verify.facts import SERVED_RPS
from placement.modes import RouteId
from solvers import limits, twolevel
from solvers.backends import DEFAULT_BACKEND
from solvers.packing import pack_into_domains
from solvers.problem import Problem, Site
from solvers.repair import REPAIR_FEASIBILITY, repair
from solvers.solution import Solution, clean
from solvers.twolevel import solve as solve_problem

__all__ = ["POST_SOLVE_SHARE", "assemble_plan", "solve", "solve_context"]

#: Share of a time limit kept for what follows the solves: assembling and verifying the plan, writing it.
#: The verifier takes ~1 % of a limit's solve on the 10,000-domain bench fleet (benchmarks/BACKENDS.md).
POST_SOLVE_SHARE = 0.05


def solve(
    instance: Instance,
    *,
    backend: str = DEFAULT_BACKEND,
    objective: str | None = None,
    time_limit_s: float | None = None,
    gap: float | None = None,
    source: str = "<instance>",
    began: float | None = None,
    certify: bool = False,
    kv_policy: str | None = None,
    diagnose: bool = True,
    memory_limit_bytes: int | None = None,
) -> Plan:
    """Solve an instance and return a verified :class:`~placement.core.plan.Plan`.

    The plan's ``status`` says what happened (optimal, feasible, infeasible,
    time_limit, error); a plan that the independent verifier rejects is never
    returned as a success — its status becomes ``error`` with the violations.
    ``time_limit_s`` counts from ``began`` (``time.monotonic()``, default now)
    and covers candidate generation, model builds and solves: every solve and
    build ends by ``began + (1 - POST_SOLVE_SHARE)·time_limit_s``
    (:mod:`solvers.limits`), leaving the rest for the plan's assembly and
    verification; when nothing is left for the solver, or it found no plan, the
    plan has status ``time_limit``, no pools and a message saying so.

    ``memory_limit_bytes`` (default :func:`solvers.limits.default_memory_bytes`)
    is the memory ceiling: a model whose estimate does not fit beside what the
    process holds is not built (status ``error``, the message names both), a
    CBC child runs under ``RLIMIT_AS``, a HiGHS solve is cancelled past it.

    With ``certify`` the model is solved again by the other bundled backend and
    the claims compared (:mod:`placement.core.certify`): ``plan.certified``
    says whether they agree, ``plan.notes`` what the second backend found.

    ``kv_policy`` (``tiered``, ``hbm-only``, ``none``; default: tiered when a
    domain group has a KV tier) says where the session classes' KV may be kept
    between calls (:mod:`placement.core.kvmodel`); without session classes it
    changes nothing. ``diagnose=False`` leaves an infeasible plan's diagnosis empty (a search that only
    needs to know whether a rate is servable, :mod:`placement.studies.capacity`).

    Raises
    ------
    InputError
        A model, chip or mode the instance names that the catalogue cannot resolve.

    Examples
    --------
    >>> from placement.core.loading import load_instance
    >>> plan = solve(load_instance("instances/melange-toy.yaml"), backend="highs")
    >>> plan.status, plan.verified, plan.cost_usd_per_hour
    ('optimal', True, 6.7)
    """
    began = time.monotonic() if began is None else began
    if objective is not None:
        instance = instance.model_copy(update={"objective": objective})
    ctx = Context.of(instance, source)
    plan = solve_context(ctx, backend=backend, time_limit_s=time_limit_s, gap=gap, began=began, certify=certify,
                         kv_policy=kv_policy, diagnose=diagnose, memory_limit_bytes=memory_limit_bytes)
    if plan.provenance is not None:
        return plan
    from placement.core.provenance import provenance  # a plan no solution was assembled into

    return plan.model_copy(update={"provenance": provenance(ctx)})


def solve_context(ctx: Context, *, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
                  gap: float | None = None, candidates: Candidates | None = None,
                  began: float | None = None, certify: bool = False, kv_policy: str | None = None,
                  diagnose: bool = True, memory_limit_bytes: int | None = None) -> Plan:
    """:func:`solve` on a context (``candidates``: reuse these instead of generating them)."""
    began = time.monotonic() if began is None else began
    solver_s = None if time_limit_s is None else time_limit_s * (1 - POST_SOLVE_SHARE)
    with limits.bounded(deadline=None if solver_s is None else began + solver_s, memory_bytes=memory_limit_bytes):
        return _solve_context(ctx, backend, time_limit_s, solver_s, gap, candidates, began, certify, kv_policy,
                              diagnose)


def _solve_context(ctx: Context, backend: str, time_limit_s: float | None, solver_s: float | None,
                   gap: float | None, candidates: Candidates | None, began: float, certify: bool,
                   kv_policy: str | None, diagnose: bool) -> Plan:
    kv = None
    if any(c.sessions is not None for c in ctx.instance.workload.classes):
        from placement.core.kvmodel import expand

        kv = expand(ctx, kv_policy)  # the session classes become their outcome classes
    work = kv.context if kv is not None else ctx
    try:
        with bounded(time_limit_s, began, "candidate generation"):
            # Session classes add policies (always the full model); given candidates are used as they are.
            loose = _network_free_from(work) if kv is None and candidates is None else None
            problem, cands = build_problem(work, candidates, loose)
            if kv is not None:
                from placement.core.kvplan import extend_problem

                problem = extend_problem(ctx, kv, problem, cands)
        left = left_after(time_limit_s, began, "candidate generation")
    except TimeLimitError as e:
        return Plan(instance=ctx.instance.name, objective=ctx.instance.objective, status="time_limit", message=str(e))
    at = _Columns(work, problem, cands, solver_s, began)
    plan = _solve_verified(ctx, at, backend, left, gap, kv)
    # CBC has proven wrong bounds on models with single-chip-type rows (issue 15: $4.68/h "optimal"
    # where $3.03/h is feasible): such models are small, and always get a second opinion.
    # Only its claims are checked: an error or a time limit is reported as it is.
    guard = (backend == "cbc" and plan.status in ("optimal", "infeasible")
             and any(getattr(d, "single_resource", False) for d in problem.demands))
    if certify or guard:
        from placement.core.certify import certify as second_opinion

        plan = second_opinion(plan, backend, gap, lambda other: _solve_verified(ctx, at, other, left, gap, kv))
        if guard and not certify and plan.certified is False:
            plan = plan.model_copy(update={"certified": None})  # guarded, not asked: the better plan stands
    if plan.status == "infeasible" and diagnose:
        from placement.core.diagnose import diagnose as diagnosis_of

        diagnosis = diagnosis_of(work, at.full() or at.problem, at.cands, backend=backend, time_limit_s=left)
        plan = plan.model_copy(update={"diagnosis": diagnosis})
    return plan


def _network_free_from(ctx: Context) -> int | None:
    """Columns from which generation prunes pairs network-free: those whose problem the two-level solve
    (:mod:`solvers.twolevel`) takes in two levels, ``twolevel.MIN_SIZE`` (column, site) combinations."""
    sites = len(ctx.sites)
    return -(-twolevel.MIN_SIZE // sites) if sites else None


class _Columns:
    """The problem and candidates a solve works on: with ``cands.network_free``, K0's (two-part columns
    pruned network-free, :mod:`placement.core.candidates`), until :meth:`full` generates every column."""

    def __init__(self, ctx: Context, problem: Problem, cands: Candidates, time_limit_s: float | None = None,
                 began: float | None = None) -> None:
        self.ctx, self.problem, self.cands = ctx, problem, cands
        self.time_limit_s, self.began = time_limit_s, time.monotonic() if began is None else began

    def full(self) -> Problem | None:
        """The problem with every column (generated on the first call if this one has K0's); ``None`` if the
        time limit (counted from ``began``, as the first generation's) runs out generating it."""
        if self.cands.network_free:
            try:
                with bounded(self.time_limit_s, self.began, "candidate generation"):
                    self.problem, self.cands = build_problem(self.ctx)
            except TimeLimitError:
                return None
        return self.problem


def _solve_verified(ctx: Context, at: _Columns, backend: str, time_limit_s: float | None, gap: float | None,
                    kv=None) -> Plan:
    """One backend's plan, checked by the verifier (status ``error`` with the violations if rejected).

    A rejected plan is first repaired (:func:`solvers.repair.repair`: its replicas kept, the
    continuous part re-solved at a tight tolerance); if the repaired plan passes it is returned,
    with its status that of the original solve and a note saying what was repaired.
    """
    sol = solve_problem(at.problem, backend=backend, time_limit_s=time_limit_s, gap=gap,
                        full=at.full if at.cands.network_free else None)
    problem, cands = at.problem, at.cands  # the full set's if the solve asked for it
    plan = _verified(ctx, problem, cands, sol, kv)
    if not plan.violations:
        return plan
    fixed = repair(problem, sol, time_limit_s=time_limit_s)
    if not fixed.ok or round(fixed.objective or 0.0, 9) != round(sol.objective or 0.0, 9):
        return plan
    repaired = _verified(ctx, problem, cands, fixed.model_copy(update={
        "status": sol.status, "best_bound": sol.best_bound, "gap": sol.gap, "backend": sol.backend,
        "solve_seconds": sol.solve_seconds + fixed.solve_seconds}), kv)
    if repaired.violations:
        return plan
    note = (f"repaired: the verifier rejected {backend}'s plan ({plan.violations[0]}); its replicas were kept and "
            "the loads, flows and pairs re-solved by highs at feasibility tolerance "
            f"{REPAIR_FEASIBILITY:g}, and the repaired plan passes")
    return repaired.model_copy(update={"notes": [*repaired.notes, note]})


def _verified(ctx: Context, problem: Problem, cands: Candidates, sol: Solution, kv=None) -> Plan:
    """The plan of ``sol``, verified against ``ctx`` (``kv``: the session classes' expansion it was solved on)."""
    plan = assemble_plan(ctx if kv is None else kv.context, problem, cands, sol)
    if kv is not None:
        from placement.core.kvplan import finish_plan

        plan = finish_plan(ctx, kv, plan, sol)
    # A time limit without an incumbent has no plan to verify (it stays "time_limit", exit 4).
    if sol.ok and plan.status in ("optimal", "feasible", "time_limit"):
        violations = verify(ctx, plan)
        plan = plan.model_copy(update={"verified": not violations, "violations": violations})
        if violations:
            plan = plan.model_copy(update={"status": "error",
                                           "message": "the verifier rejected the solver's plan: " + violations[0]})
    return plan


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
    from placement.core.provenance import provenance

    inst = ctx.instance
    base = {
        "provenance": provenance(ctx),
        "instance": inst.name,
        "objective": inst.objective,
        "confidence": inst.confidence,
        "notes": headroom_notes(ctx) + framework_notes(inst) + _network_free_notes(cands),
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
        if cls is not None and cfg.kind != "measured":
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
    plan.notes = [*plan.notes, *overlay_range_notes(inst, pools), *uncalibrated_model_notes(ctx.model)]
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
