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
from collections.abc import Callable
from dataclasses import dataclass

from placement.core.instance.context import Context
from placement.core.instance.schema import Instance
from placement.core.pipeline.assemble import assemble_plan
from placement.core.pipeline.deadline import TimeLimitError, bounded, left_after
from placement.core.pipeline.problem import build_problem
from placement.core.plans.plan import Plan
from placement.core.replicas.generation import Candidates
from placement.core.verify.verifier import require_checks, verify
from solvers import limits, twolevel
from solvers.backends import DEFAULT_BACKEND
from solvers.family import Family
from solvers.model import families_of
from solvers.problem import Problem
from solvers.repair import REPAIR_FEASIBILITY, repair
from solvers.solution import Solution
from solvers.strategy import solve as solve_problem

__all__ = ["PLACEMENT", "POST_SOLVE_SHARE", "SOURCES", "Scenario", "checked", "register_families", "solve",
           "solve_context", "unregister_families"]

#: Share of a time limit kept for what follows the solves: assembling and verifying the plan, writing it.
#: The verifier takes ~1 % of a limit's solve on the 10,000-domain bench fleet.
POST_SOLVE_SHARE = 0.05


def _no_families(work: Context, problem: Problem, cands: Candidates) -> tuple[Family, ...]:
    return ()


def _as_it_is(ctx: Context, plan: Plan, sol: Solution) -> Plan:
    return plan


@dataclass(frozen=True)
class Scenario:
    """What a solve adds to the placement of an instance: families, and what it makes of the plan.

    ``families(work, problem, candidates)`` gives the families added to the base ones
    (:func:`solvers.model.families_of`), from the context the model is built on (the session classes
    expanded, :mod:`placement.core.kv.kvmodel`), its problem and candidates; ``finish(ctx, plan,
    solution)`` fills what the scenario adds to the assembled plan, before the verifier sees it (a
    failure it survives, its replicas per domain, a re-plan's moves). ``network_free``: whether the
    pair columns may be pruned network-free first (a scenario whose families price columns by their
    configuration needs every column's); ``strategy``: :mod:`solvers.strategy`'s. Every scenario gets
    the same pipeline: KV expansion, the deadline and memory ceiling, the two levels of large fleets,
    repair, the second opinion (``certify``) and the diagnosis of an infeasible model.
    """

    name: str
    families: Callable[[Context, Problem, Candidates], tuple[Family, ...]] = _no_families
    finish: Callable[[Context, Plan, Solution], Plan] = _as_it_is
    network_free: bool = True
    strategy: str = "auto"


#: The plain placement: the base families, the plan as assembled.
PLACEMENT = Scenario("placement")

#: Where every solve's families beyond the base ones come from (an extension's constraint family or
#: objective term, its data read from the instance): ``(work, problem, candidates) -> families``.
SOURCES: list[Callable[[Context, Problem, Candidates], tuple[Family, ...]]] = []


def register_families(source: Callable[[Context, Problem, Candidates], tuple[Family, ...]]) -> None:
    """Add ``source``'s families to every solve from now on (after the base families, before a scenario's);
    its families' verifier checks must be registered (:func:`placement.core.verify.verifier.register_check`)."""
    SOURCES.append(source)


def unregister_families(source: Callable[[Context, Problem, Candidates], tuple[Family, ...]]) -> None:
    """Stop adding ``source``'s families (no error if it was not registered)."""
    if source in SOURCES:
        SOURCES.remove(source)


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
    scenario: Scenario = PLACEMENT,
) -> Plan:
    """Solve an instance and return a verified :class:`~placement.core.plans.plan.Plan`.

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
    the claims compared (:mod:`placement.core.verify.certify`): ``plan.certified``
    says whether they agree, ``plan.notes`` what the second backend found.

    ``kv_policy`` (``tiered``, ``hbm-only``, ``none``; default: tiered when a
    domain group has a KV tier) says where the session classes' KV may be kept
    between calls (:mod:`placement.core.kv.kvmodel`); without session classes it
    changes nothing. ``diagnose=False`` leaves an infeasible plan's diagnosis empty (a search that only
    needs to know whether a rate is servable, :mod:`placement.studies.capacity`). ``scenario`` adds
    families and post-processing (:class:`Scenario`: N+1 survival, :mod:`placement.core.operations.survive`; a
    re-plan, :mod:`placement.core.operations.replan`), through all of the above.

    Raises
    ------
    InputError
        A model, chip or mode the instance names that the catalogue cannot resolve.

    Examples
    --------
    >>> from placement.core.instance.loading import load_instance
    >>> plan = solve(load_instance("instances/melange-toy.yaml"), backend="highs")
    >>> plan.status, plan.verified, plan.cost_usd_per_hour
    ('optimal', True, 6.7)
    """
    began = time.monotonic() if began is None else began
    if objective is not None:
        instance = instance.model_copy(update={"objective": objective})
    ctx = Context.of(instance, source)
    return solve_context(ctx, backend=backend, time_limit_s=time_limit_s, gap=gap, began=began, certify=certify,
                         kv_policy=kv_policy, diagnose=diagnose, memory_limit_bytes=memory_limit_bytes,
                         scenario=scenario)


def solve_context(ctx: Context, *, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
                  gap: float | None = None, candidates: Candidates | None = None,
                  began: float | None = None, certify: bool = False, kv_policy: str | None = None,
                  diagnose: bool = True, memory_limit_bytes: int | None = None,
                  scenario: Scenario = PLACEMENT) -> Plan:
    """:func:`solve` on a context (``candidates``: reuse these instead of generating them): the one path
    every scenario takes."""
    began = time.monotonic() if began is None else began
    solver_s = None if time_limit_s is None else time_limit_s * (1 - POST_SOLVE_SHARE)
    with limits.bounded(deadline=None if solver_s is None else began + solver_s, memory_bytes=memory_limit_bytes):
        plan = _solve_context(ctx, backend, time_limit_s, solver_s, gap, candidates, began, certify, kv_policy,
                              diagnose, scenario)
    if plan.provenance is not None:
        return plan
    from placement.core.plans.provenance import provenance  # a plan no solution was assembled into

    return plan.model_copy(update={"provenance": provenance(ctx)})


def _solve_context(ctx: Context, backend: str, time_limit_s: float | None, solver_s: float | None,
                   gap: float | None, candidates: Candidates | None, began: float, certify: bool,
                   kv_policy: str | None, diagnose: bool, scenario: Scenario) -> Plan:
    kv = None
    if any(c.sessions is not None for c in ctx.instance.workload.classes):
        from placement.core.kv.kvmodel import expand

        kv = expand(ctx, kv_policy)  # the session classes become their outcome classes
    work = kv.context if kv is not None else ctx
    try:
        with bounded(time_limit_s, began, "candidate generation"):
            # Session classes add policies (always the full model); given candidates are used as they are.
            loose = (_network_free_from(work) if kv is None and candidates is None and scenario.network_free
                     else None)
            problem, cands = build_problem(work, candidates, loose)
            if kv is not None:
                from placement.core.kv.kvplan import extend_problem

                problem = extend_problem(ctx, kv, problem, cands)
        left = left_after(time_limit_s, began, "candidate generation")
    except TimeLimitError as e:
        return Plan(instance=ctx.instance.name, objective=ctx.instance.objective, status="time_limit", message=str(e))
    families = families_of([*(f for source in SOURCES for f in source(work, problem, cands)),
                            *scenario.families(work, problem, cands)])
    require_checks(families)  # a family the verifier does not mirror is not solved
    at = _Columns(work, problem, cands, solver_s, began, families=families, scenario=scenario)
    plan = _solve_verified(ctx, at, backend, left, gap, kv)
    # CBC has proven wrong bounds on models with single-chip-type rows (issue 15: $4.68/h "optimal"
    # where $3.03/h is feasible): such models are small, and always get a second opinion.
    # Only its claims are checked: an error or a time limit is reported as it is.
    guard = (backend == "cbc" and plan.status in ("optimal", "infeasible")
             and any(getattr(d, "single_resource", False) for d in problem.demands))
    if certify or guard:
        from placement.core.verify.certify import certify as second_opinion

        plan = second_opinion(plan, backend, gap, lambda other: _solve_verified(ctx, at, other, left, gap, kv))
        if guard and not certify and plan.certified is False:
            plan = plan.model_copy(update={"certified": None})  # guarded, not asked: the better plan stands
    if plan.status == "infeasible" and diagnose:
        from placement.core.pipeline.diagnose import diagnose as diagnosis_of

        diagnosis = diagnosis_of(work, at.full() or at.problem, at.cands, backend=backend, time_limit_s=left,
                                 families=families)
        plan = plan.model_copy(update={"diagnosis": diagnosis})
    return plan


def _network_free_from(ctx: Context) -> int | None:
    """Columns from which generation prunes pairs network-free: those whose problem the two-level solve
    (:mod:`solvers.twolevel`) takes in two levels, ``twolevel.MIN_SIZE`` (column, site) combinations."""
    sites = len(ctx.sites)
    return -(-twolevel.MIN_SIZE // sites) if sites else None


class _Columns:
    """The problem and candidates a solve works on: with ``cands.network_free``, K0's (two-part columns
    pruned network-free, :mod:`placement.core.replicas.candidates`), until :meth:`full` generates every column; the
    model's families (base, registered sources', the scenario's) and the scenario."""

    def __init__(self, ctx: Context, problem: Problem, cands: Candidates, time_limit_s: float | None = None,
                 began: float | None = None, *, families: tuple[Family, ...] | None = None,
                 scenario: Scenario = PLACEMENT) -> None:
        self.ctx, self.problem, self.cands = ctx, problem, cands
        self.time_limit_s, self.began = time_limit_s, time.monotonic() if began is None else began
        self.families, self.scenario = families, scenario

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
    sol = solve_problem(at.problem, families=at.families, strategy=at.scenario.strategy, backend=backend,
                        time_limit_s=time_limit_s, gap=gap, full=at.full if at.cands.network_free else None)
    # the full set's problem and candidates if the solve asked for them
    return checked(ctx, at.problem, at.cands, sol, kv=kv, scenario=at.scenario, families=at.families,
                   time_limit_s=time_limit_s)


def checked(ctx: Context, problem: Problem, cands: Candidates, sol: Solution, *, kv=None,
            scenario: Scenario = PLACEMENT, families: tuple[Family, ...] | None = None,
            time_limit_s: float | None = None) -> Plan:
    """The plan of ``sol`` (a solution of ``problem`` with ``families``), finished by ``scenario`` and verified
    against ``ctx``; status ``error`` with the violations if rejected.

    A rejected plan is first repaired (:func:`solvers.repair.repair`: its replicas kept, the
    continuous part re-solved at a tight tolerance); if the repaired plan passes it is returned,
    with its status that of the original solve and a note saying what was repaired.
    """
    plan = _verified(ctx, problem, cands, sol, kv, scenario)
    if not plan.violations:
        return plan
    fixed = repair(problem, sol, time_limit_s=time_limit_s, families=families)
    if not fixed.ok or round(fixed.objective or 0.0, 9) != round(sol.objective or 0.0, 9):
        return plan
    repaired = _verified(ctx, problem, cands, fixed.model_copy(update={
        "status": sol.status, "best_bound": sol.best_bound, "gap": sol.gap, "backend": sol.backend,
        "solve_seconds": sol.solve_seconds + fixed.solve_seconds}), kv, scenario)
    if repaired.violations:
        return plan
    note = (f"repaired: the verifier rejected {sol.backend}'s plan ({plan.violations[0]}); its replicas were kept "
            "and the loads, flows and pairs re-solved by highs at feasibility tolerance "
            f"{REPAIR_FEASIBILITY:g}, and the repaired plan passes")
    return repaired.model_copy(update={"notes": [*repaired.notes, note]})


def _verified(ctx: Context, problem: Problem, cands: Candidates, sol: Solution, kv=None,
              scenario: Scenario = PLACEMENT) -> Plan:
    """The plan of ``sol``, finished by ``scenario`` and verified against ``ctx`` (``kv``: the session
    classes' expansion it was solved on)."""
    plan = assemble_plan(ctx if kv is None else kv.context, problem, cands, sol)
    if kv is not None:
        from placement.core.kv.kvplan import finish_plan

        plan = finish_plan(ctx, kv, plan, sol)
    plan = scenario.finish(ctx, plan, sol)
    # A time limit without an incumbent has no plan to verify (it stays "time_limit", exit 4).
    if sol.ok and plan.status in ("optimal", "feasible", "time_limit"):
        violations = verify(ctx, plan)
        plan = plan.model_copy(update={"verified": not violations, "violations": violations})
        if violations:
            plan = plan.model_copy(update={"status": "error",
                                           "message": "the verifier rejected the solver's plan: " + violations[0]})
    return plan


