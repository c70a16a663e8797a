"""A multi-period schedule: one MILP with a period index (:mod:`solvers.periods`), and its two references.

``placement schedule INSTANCE --profile demand.csv`` (profile format:
:mod:`placement.core.operations.profile`). Candidates are generated once; period t's
problem is the instance's with the period's rates (the demand rows) and
on-demand prices (the instance's $/h × ``price_factor``, or the period's
``usd_per_hour:CHIP``). Chips may be **reserved** for the whole horizon at
the instance's $/h × (1 − ``reserved_discount``), or bought **on demand** per
period; every replica added or removed between consecutive periods pays its
weight reload (:mod:`placement.core.plans.migration`, plus ``move_usd``). The total::

    schedule $ = reserved $ + on-demand $ + reconfiguration $

is reported beside

* **independent**: each period solved alone (its own MILP, no reconfiguration,
  each chip at the cheaper of its on-demand and reserved $/h). Every schedule
  pays at least this, so ``independent ≤ schedule``; with a gap, the sum of the
  periods' proven bounds is the bound used;
* **static peak**: one plan sized for every class's peak rate, run all horizon,
  each chip reserved or on demand, whichever is cheaper. It is a schedule (no
  changes) when a plan for the peak serves every period, so ``schedule ≤ static``.

Every period's plan is checked by the verifier against the instance at that
period's rates. ``method="rolling"`` is the rolling-horizon approximation of
:mod:`placement.core.operations.schedule_rolling` (no reserved capacity, no period prices).

**Session classes** (multi-turn KV retention) are expanded as a single solve expands
them (:func:`placement.core.kv.kvmodel.expand`), once per period at that period's rates:
each becomes its outcome classes (the rate of a session class is the rate of each of
its outcome demands), with the policies and KV-tier rows of that period
(:func:`placement.core.kv.kvplan.extend_problem`; what a policy holds, reloads and costs
scales with its class's rate), and each period's plan is finished and verified against
the expanded instance at that period's rates, as a single solve's plan is. The KV
tiers' holding $ joins the total::

    schedule $ = reserved $ + on-demand $ + reconfiguration $ + Σ_t h_t · KV $/h_t

Assumption: **sessions do not straddle periods.** Each period's retention is the steady
state of its own rates (Little's law over that period's calls): KV held at a period's
end is not carried into the next, and a period's tiers hold nothing of the last's. Each
period's KV is therefore what a single solve at that period's rates would choose for the
same pools (tests/test_schedule_sessions.py checks a one-period schedule against that
solve); with periods of hours and retention windows of at most an hour the overlap is
at most a window per boundary.

Examples
--------
>>> import io
>>> from placement.core.instance.loading import load_instance
>>> from placement.core.operations.profile import read_profile
>>> inst = load_instance("instances/melange-toy.yaml")
>>> prof = "period,class,rate_rps,hours\\n" + "".join(f"{p},{c.name},{c.rate_rps * f},{h}\\n"
...     for p, f, h in (("night", 0.3, 12), ("day", 1.0, 12)) for c in inst.workload.classes)
>>> s = schedule(inst, read_profile(io.StringIO(prof)), reserved_discount=0.4, backend="highs")
>>> s.status, [p.verified for p in s.periods], s.independent_usd <= s.total_usd <= s.static_peak_usd
('optimal', [True, True], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.loading import with_prices
from placement.core.instance.schema import Instance
from placement.core.kv.kvmodel import Expansion, expand
from placement.core.kv.kvplan import extend_problem
from placement.core.operations.profile import Period, read_profile, with_rates
from placement.core.operations.schedule_records import Change, PeriodPlan, PoolCount, Schedule
from placement.core.operations.schedule_rolling import rolling_schedule
from placement.core.pipeline.diagnose import diagnose
from placement.core.pipeline.problem import build_problem
from placement.core.pipeline.solve import checked
from placement.core.plans.migration import change_cost, check_move_terms
from placement.core.plans.plan import Plan
from placement.core.replicas.generation import Candidates
from placement.core.replicas.parallel_generation import forked_map, pool_workers
from placement.core.verify.certify import OTHER_BACKEND, disagreement
from solvers.periods import PeriodSolution, reservation
from solvers.problem import Problem
from solvers.strategy import Periods
from solvers.strategy import solve as solve_problem

__all__ = ["Change", "Period", "PeriodPlan", "PoolCount", "Schedule", "read_profile", "schedule", "with_rates"]

#: Relative slack of the inequality checks (the totals are rounded to 10 significant digits).
CHECK_SLACK = 1e-9


def _price(ctx: Context, group: str, period: Period) -> float:
    """On-demand $/h per chip of ``group`` in ``period``."""
    info = ctx.sites[group]
    return period.chip_usd_per_hour.get(info.chip.name, info.usd_per_hour_per_chip * period.price_factor)


def period_problem(ctx: Context, problem: Problem, rates: dict[str, float], prices: dict[str, float]) -> Problem:
    """``problem`` with the demands at ``rates`` (absent: as they are) and the sites at ``prices`` ($/h per unit)."""
    demands = [d.model_copy(update={"rate": rates.get(d.name, d.rate)}) for d in problem.demands]
    sites = [s.model_copy(update={"usd_per_hour_per_unit": prices[s.name]}) for s in problem.sites]
    return problem.model_copy(update={"demands": demands, "sites": sites})


def _has_sessions(instance: Instance) -> bool:
    return any(c.sessions is not None for c in instance.workload.classes)


@dataclass(frozen=True)
class _At:
    """One period's model: the instance at its rates (what its plan is verified against), the session classes
    expanded at those rates (``None`` without session classes), and its problem."""

    ctx: Context
    kv: Expansion | None
    problem: Problem

    @property
    def work(self) -> Context:
        """The context the problem was built on (the session classes expanded)."""
        return self.ctx if self.kv is None else self.kv.context


def _at(instance: Instance, source: str, kv_policy: str | None, base: Problem, cands: Candidates,
        rates: dict[str, float], prices: dict[str, float]) -> _At:
    """The period at ``rates`` (class -> req/s; absent: the instance's) and ``prices`` (group -> $/h per chip).

    Session classes are expanded at these rates: each outcome demand at its class's rate (0 where the
    expansion leaves it out, its class idle this period), and the policies and tier rows of these rates.
    """
    ctx = Context.of(with_rates(instance, rates), source)
    if not _has_sessions(instance):
        return _At(ctx, None, period_problem(ctx, base, rates, prices))
    kv = expand(ctx, kv_policy)
    outcome = {d.name: kv.context.classes[d.name].rate_rps if d.name in kv.context.classes else 0.0
               for d in base.demands}
    return _At(ctx, kv, extend_problem(ctx, kv, period_problem(ctx, base, outcome, prices), cands))


def _base(instance: Instance, periods: Sequence[Period], source: str,
          kv_policy: str | None) -> tuple[Context, Problem, Candidates]:
    """The context the columns are generated on, once for every period: the instance, or with session classes
    its expansion at every class's peak rate (every outcome class some period serves, with its columns)."""
    ctx = Context.of(instance, source)
    if _has_sessions(instance):
        peak = {c.name: max(p.rates.get(c.name, c.rate_rps) for p in periods) for c in instance.workload.classes}
        ctx = expand(Context.of(with_rates(instance, peak), source), kv_policy).context
    base, cands = build_problem(ctx)
    return ctx, base, cands


def _usd_per_change(ctx: Context, cands: Candidates, problem: Problem, move_usd: float) -> dict:
    """(column, part, group) -> $ of adding or removing one replica there (the reload rule)."""
    out = {}
    for column in problem.columns:
        config = cands.configs[column.name]
        for part in range(len(column.parts)):
            for group, info in ctx.sites.items():
                if info.resource == column.parts[part].resource:
                    out[column.name, part, group] = change_cost(ctx, config, part, group, move_usd)[2]
    return out


def _check(instance: Instance, periods: Sequence[Period], reserved_discount: float, move_usd: float) -> None:
    if not periods:
        raise InputError("the profile has no periods", field="profile")
    if instance.objective != "cost":
        raise InputError(f"a schedule minimises $: it needs objective 'cost', got {instance.objective!r}",
                         field="objective")
    if not 0.0 <= reserved_discount < 1.0:
        raise InputError(f"expected 0 <= reserved discount < 1, got {reserved_discount}", field="reserved_discount")
    check_move_terms(move_usd, prefix="")
    chips = {info.chip.name for info in Context.of(instance).sites.values()}
    for p in periods:
        with_rates(instance, p.rates)  # names the unknown class
        unknown = sorted(set(p.chip_usd_per_hour) - chips)
        if unknown:
            raise InputError(f"period {p.name!r}: chip {unknown[0]!r} is in no domain group; the fleet has "
                             f"{', '.join(sorted(chips))}", field="profile")


def _period_plan(at: _At, cands: Candidates, sol, period: Period) -> tuple[PeriodPlan, Plan]:
    # verified (against the instance at the period's rates), and repaired as any solve's plan is when rejected
    plan = checked(at.ctx, at.problem, cands, sol, kv=at.kv)
    violations = plan.violations or ([] if plan.verified else ["no plan"])
    pools = [PoolCount(column=p.column, part=p.part, stage=p.stage, traffic_class=p.traffic_class, chip=p.chip,
                       group=s.site, replicas=s.replicas) for p in plan.pools for s in p.sites]
    return PeriodPlan(period=period.name, hours=period.hours, status=plan.status, verified=not violations,
                      violations=violations, cost_usd_per_hour=plan.cost_usd_per_hour,
                      period_usd_per_hour=sol.cost_usd_per_hour, kv_usd_per_hour=plan.kv_usd_per_hour,
                      chips=plan.chips,
                      chips_by_type=plan.chips_by_type, pools=pools), plan


def _changes(ctx: Context, cands: Candidates, out: PeriodSolution, periods: Sequence[Period],
             usd: dict) -> list[Change]:
    rows = []
    counts = [{(p.column, p.part, p.site): p.replicas for p in s.replicas} for s in out.solutions]
    for (t, key), _ in sorted({**out.added, **out.removed}.items()):
        column, part, group = key
        config = cands.configs[column]
        lay = config.main if part == 0 else config.partner
        before, after = counts[t - 1].get(key, 0), counts[t].get(key, 0)
        rows.append(Change(period=periods[t].name, column=column, part=part, chip=lay.chip, group=group,
                           before=before, after=after, usd=round(abs(after - before) * usd.get(key, 0.0), 9)))
    return rows


#: Columns × periods from which the periods' references and start re-solves run in a process pool.
MIN_PARALLEL_PERIOD_WORK = 2_000

#: The start's re-solves also keep the replica counts whose LP reduced cost is at most this × the LP objective.
START_RESTRICT = 0.0005


def _start(problems: list[Problem], hours: list[float], reserved: dict[str, float], alone: list[PeriodSolution],
           backend: str, time_limit_s: float | None, gap: float | None,
           workers: int = 1) -> list[dict[str, float]] | None:
    """A start for the schedule MILP: each period re-solved around the reservation the references suggest.

    The reservation that suits the references' units in use best (:func:`solvers.periods.reservation`;
    the periods' optima, or their LP relaxations rounded up) is held fixed and each period re-solved
    alone: the chips it reserves cost nothing more to use, so each period leans on them. Each re-solve
    is restricted to its LP relaxation's support — the columns it loads and their siblings, the
    support :mod:`solvers.twolevel` restricts to as well — and the columns within
    :data:`START_RESTRICT` × its LP objective of entering it (reduced cost;
    :func:`solvers.periods.restrict_to_lp_support` says why both, with the numbers): a heuristic,
    for the start only — the schedule MILP has every column (on the 24-period 100-domain benchmark
    day the 24 re-solves take 31.9 CPU s instead of 832.9 s unrestricted, their plans 0.15 % dearer).
    One thread each: these small MILPs gain nothing from a second. When there is nothing to
    reserve the periods are re-solved the same way (the LP references carry no plan).
    """
    prices = [{s.name: s.usd_per_hour_per_unit for s in q.sites} for q in problems]
    fixed = reservation([a.used_units[0] for a in alone], hours, reserved, prices)
    if not any(fixed.values()) and all(a.solutions for a in alone):
        return [a.values for a in alone]
    again = forked_map([partial(_periods, Periods([q], [h], reserved, fixed_reserved=fixed, restrict=START_RESTRICT),
                                backend=backend, time_limit_s=time_limit_s, gap=gap, threads=1)
                        for q, h in zip(problems, hours)], workers)
    picks = [b if b.ok else a for a, b in zip(alone, again)]
    return [p.values for p in picks] if all(p.ok for p in picks) else None


def _diagnosis(ats: list[_At], cands: Candidates, periods: Sequence[Period], alone: list[PeriodSolution],
               backend: str) -> list[str]:
    """Why an infeasible schedule has no plan: each period that has none alone, diagnosed as any solve's
    infeasible model is (:func:`placement.core.pipeline.diagnose.diagnose`, on the expanded context)."""
    out = []
    for at, p, a in zip(ats, periods, alone):
        if a.status == "infeasible":
            out += [f"period {p.name}: {why}" for why in diagnose(at.work, at.problem, cands, backend=backend)]
    return out


def _periods(strategy: Periods, **options) -> PeriodSolution:
    """The periods' model (every period built from the base families) solved by the one solve entry."""
    return solve_problem(None, strategy=strategy, **options)


def _reference(problems: list[Problem], hours: list[float], reserved: dict[str, float], backend: str,
               time_limit_s: float | None, gap: float | None, relax: bool = False,
               threads: int | None = None) -> PeriodSolution:
    return _periods(Periods(problems, hours, reserved, relax=relax), backend=backend, time_limit_s=time_limit_s,
                    gap=gap, threads=threads)


def schedule(instance: Instance, periods: Sequence[Period], *, method: str = "milp", reserved_discount: float = 0.0,
             move_usd: float = 0.0, backend: str = "highs", time_limit_s: float | None = None,
             gap: float | None = None, keep_plans: bool = False, references: str = "exact",
             certify: bool = False, prices: str | None = None, kv_policy: str | None = None,
             source: str = "<instance>") -> Schedule:
    """The cheapest schedule of ``periods`` (module docstring), with its references and checks.

    Parameters
    ----------
    instance : Instance
        Objective ``cost``. Session classes are expanded per period (module docstring).
    periods : sequence of Period
        From :func:`~placement.core.operations.profile.read_profile`.
    method : {"milp", "rolling"}
        One MILP with a period index, or the rolling horizon of :mod:`placement.core.operations.schedule_rolling`.
    reserved_discount : float
        δ in [0, 1): a reserved chip costs the instance's $/h × (1 − δ), every hour of the horizon.
    move_usd : float
        Fixed $ per replica added or removed, on top of its reload.
    backend, time_limit_s, gap
        The solver, its limit per MILP, and the relative MIP gap (``None``: prove optimality).
    keep_plans : bool
        Keep every period's full :class:`~placement.core.plans.plan.Plan` in the result.
    references : {"exact", "bound"}
        The independent periods solved as MILPs (``independent_usd``, and the sum of their proven
        bounds), or only their LP relaxations (``independent_usd`` left unset; the sum of the LP
        optima, a proven lower bound on the independent optima, is ``independent_bound_usd``) —
        seconds instead of minutes on large horizons.
    prices : str, optional
        The chip price set (``tco``, ``on-demand``; :func:`~placement.core.instance.loading.with_prices`) every
        period's prices start from; None: the instance's.
    kv_policy : {"tiered", "hbm-only", "none"}, optional
        Where the session classes' KV may wait between calls (:func:`placement.core.kv.kvmodel.expand`;
        default tiered when a domain group has a KV tier, else hbm-only), as for a single solve.
    certify : bool
        Solve the schedule MILP again with the other bundled backend and compare (:func:`_second_opinion`):
        ``certified`` and a note say whether it agrees; the cheaper verified schedule is returned.

    Raises
    ------
    InputError
        No periods, an unknown class or chip, objective not cost, a discount outside [0, 1),
        prices or a discount with the rolling horizon, ``references`` not exact or bound, or a
        ``kv_policy`` not one of the three.
    """
    if references not in ("exact", "bound"):
        raise InputError(f"expected references exact or bound, got {references!r}", field="references")
    instance = with_prices(instance, prices)
    if method == "rolling":
        if reserved_discount or any(p.price_factor != 1.0 or p.chip_usd_per_hour for p in periods):
            raise InputError("the rolling horizon models neither reserved capacity nor period prices; "
                             "use method milp", field="method")
        return rolling_schedule(instance, list(periods), backend=backend, move_usd=move_usd, keep_plans=keep_plans,
                                kv_policy=kv_policy)
    if method != "milp":
        raise InputError(f"expected method milp or rolling, got {method!r}", field="method")
    _check(instance, periods, reserved_discount, move_usd)
    # generated once: the periods change only demand rows, prices and (session classes) policy rows
    ctx, base, cands = _base(instance, periods, source, kv_policy)
    reserved = {g: info.usd_per_hour_per_chip * (1.0 - reserved_discount) for g, info in ctx.sites.items()}
    ats = [_at(instance, source, kv_policy, base, cands, p.rates, {g: _price(ctx, g, p) for g in ctx.sites})
           for p in periods]
    problems = [at.problem for at in ats]
    hours = [p.hours for p in periods]
    usd = _usd_per_change(ctx, cands, base, move_usd)
    relax = references == "bound"
    # The periods' references and start re-solves are independent MILPs: on large horizons a forked
    # process each (one solver thread apiece), the same results in the same order.
    workers = pool_workers(len(base.columns) * len(periods), MIN_PARALLEL_PERIOD_WORK)
    threads = 1 if workers > 1 else None
    alone = forked_map([partial(_reference, [q], [p.hours], reserved, backend, time_limit_s, gap, relax, threads)
                        for q, p in zip(problems, periods)], workers)
    usable = all(a.used_units for a in alone)
    start = _start(problems, hours, reserved, alone, backend, time_limit_s, gap, workers) if usable else None
    out = _periods(Periods(problems, hours, reserved, usd_per_change=usd, start=start), backend=backend,
                   time_limit_s=time_limit_s, gap=gap)
    opinion = None
    if certify and out.ok:
        out, opinion = _second_opinion(out, Periods(problems, hours, reserved, usd_per_change=usd), backend,
                                       time_limit_s, gap, lambda sol, t: _period_plan(
                                           ats[t], cands, sol, periods[t])[0].verified)
    result = Schedule(status=out.status, message=out.message, reserved_discount=reserved_discount, references=references,
                      build_seconds=round(out.build_seconds, 3), solver_seconds=round(out.solve_seconds, 3),
                      variables=out.stats.get("variables", 0), constraints=out.stats.get("constraints", 0),
                      integer_variables=out.stats.get("integer_variables", 0))
    if opinion is not None:
        result.certified, result.notes = opinion
    if not out.ok:
        result.reference_seconds = round(sum(a.solve_seconds + a.build_seconds for a in alone), 3)
        if out.status == "infeasible":
            result.diagnosis = _diagnosis(ats, cands, periods, alone, backend)
        return result
    for t, p in enumerate(periods):
        row, plan = _period_plan(ats[t], cands, out.solutions[t], p)
        reserved_used = sum(min(u, out.reserved_units.get(g, 0)) for g, u in out.used_units[t].items())
        row.reserved_chips, row.on_demand_chips = reserved_used, sum(out.on_demand_units[t].values())
        row.replicas_added = sum(n for (tt, _), n in out.added.items() if tt == t)
        row.replicas_removed = sum(n for (tt, _), n in out.removed.items() if tt == t)
        row.migration_usd = round(sum(usd.get(k, 0.0) * n for (tt, k), n in [*out.added.items(),
                                                                             *out.removed.items()] if tt == t), 9)
        row.plan = plan if keep_plans else None
        result.periods.append(row)
    result.changes = _changes(ctx, cands, out, periods, usd)
    result.reserved_chips = {g: n for g, n in out.reserved_units.items() if n}
    result.total_usd, result.reserved_usd, result.on_demand_usd = out.objective, out.reserved_usd, out.on_demand_usd
    result.run_usd, result.migration_usd = round(out.reserved_usd + out.on_demand_usd, 6), out.reconfiguration_usd
    result.kv_usd = out.policy_usd
    _references(result, ctx, cands, base, alone, periods, reserved, backend, time_limit_s, gap, instance, source,
                kv_policy)
    bounds = [b for b in (out.best_bound, result.independent_bound_usd) if b is not None]
    if bounds:
        result.best_bound_usd = round(min(max(bounds), out.objective), 6)
        result.gap = round((out.objective - result.best_bound_usd) / max(out.objective, 1e-9), 9)
    if not all(p.verified for p in result.periods):
        result.status = "error"
        result.message = "the verifier rejected a period's plan: " + next(
            f"{p.period}: {p.violations[0]}" for p in result.periods if not p.verified)
    return result


def _second_opinion(out: PeriodSolution, strategy: Periods, backend: str, time_limit_s: float | None,
                    gap: float | None, verified: Callable[[object, int], bool]
                    ) -> tuple[PeriodSolution, tuple[bool, list[str]]]:
    """The schedule MILP solved again by the other bundled backend, the two claims compared as a plan's
    (:func:`placement.core.verify.certify.disagreement`: a verified schedule below the other's proven bound
    refutes it). Returns the solution to keep — the cheaper of the two whose every period's plan verifies —
    and (certified, notes)."""
    other_name = OTHER_BACKEND.get(backend, "highs")
    other = _periods(strategy, backend=other_name, time_limit_s=time_limit_s, gap=gap)
    other_ok = other.ok and all(verified(sol, t) for t, sol in enumerate(other.solutions))
    first = (out.status, out.objective, out.best_bound)
    second = (other.status, other.objective if other_ok else None, other.best_bound)
    why = disagreement(first, second, gap or 0.0)
    keep = other if other_ok and other.objective < out.objective else out
    if why is None:
        said = f", total ${other.objective:.10g}" if other_ok else ""
        return keep, (True, [f"certified: {other_name} agrees ({other.status}{said})"])
    said = why.replace("first", backend).replace("second", other_name)
    kept = other_name if keep is other else backend
    return keep, (False, [f"NOT certified: {said}; the schedule of {kept} is returned"])


def _references(result: Schedule, ctx: Context, cands: Candidates, base: Problem, alone: list[PeriodSolution],
                periods: Sequence[Period], reserved: dict[str, float], backend: str, time_limit_s: float | None,
                gap: float | None, instance: Instance, source: str, kv_policy: str | None) -> None:
    """Fill the independent (``alone``: each period solved alone) and static-peak references and the checks."""
    for row, a in zip(result.periods, alone):
        row.independent_usd_per_hour = round(a.objective / row.hours, 6) if a.ok else None
        row.independent_bound_usd_per_hour = None if a.best_bound is None else round(a.best_bound / row.hours, 6)
    if all(a.ok for a in alone):
        result.independent_usd = round(sum(a.objective for a in alone), 6)
    if all(a.best_bound is not None for a in alone):
        result.independent_bound_usd = round(sum(a.best_bound for a in alone), 6)
    total_h = sum(p.hours for p in periods)
    peak = {c.name: max(p.rates.get(c.name, c.rate_rps) for p in periods) for c in instance.workload.classes}
    mean = {g: sum(q.hours * _price(ctx, g, q) for q in periods) / total_h for g in ctx.sites}
    at = _at(instance, source, kv_policy, base, cands, peak, mean)
    static = _reference([at.problem], [total_h], reserved, backend, time_limit_s, gap)
    if static.ok:
        result.static_peak_usd = static.objective
        result.static_peak_usd_per_hour = round(static.objective / total_h, 6)
        _, plan = _period_plan(at, cands, static.solutions[0], Period("peak", total_h, peak))
        result.static_peak_verified = plan.verified
    total = result.total_usd
    low = result.independent_bound_usd if result.independent_bound_usd is not None else result.independent_usd
    if low is not None:
        result.independent_le_schedule = low <= total * (1 + CHECK_SLACK)
        result.gap_to_independent = round(total / result.independent_usd - 1, 9) if result.independent_usd else None
    if result.static_peak_usd is not None:
        result.schedule_le_static = total <= result.static_peak_usd * (1 + CHECK_SLACK)
    result.reference_seconds = round(sum(a.solve_seconds + a.build_seconds for a in [*alone, static]), 3)
