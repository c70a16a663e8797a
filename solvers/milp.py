"""Solving the placement MILP: :func:`solve`, :func:`relax`, :func:`lp_bound` and the starts of
:mod:`solvers.twolevel`.

The model itself — its families, scaling and names — is :func:`solvers.model.build_model`, re-exported
here with the constraint functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pulp

from solvers.backends import DEFAULT_BACKEND, Outcome, SolveOptions, available_solvers, run
from solvers.constraints import (
    CHOICE_SLACK,
    add_budget,
    add_power_cap,
    add_replica_capacity,
    add_route_split,
    add_single_resource,
    add_site_units,
    add_step_coverage,
)
from solvers.extract import empty_solution, model_stats, to_solution
from solvers.family import Family
from solvers.index import PairSplit
from solvers.limits import LimitExceeded, OutOfTime, clip_time
from solvers.model import build_model
from solvers.network_rows import (
    NEGLIGIBLE,
    add_edge_capacity,
    add_pair_balance,
    add_transfer_conservation,
)
from solvers.objective import model_objective, primary_objective, set_objective
from solvers.packing import check_packable, pack_into_domains
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.tolerances import REL_OBJECTIVE
from solvers.variables import Variables, define_variables, gc_paused

__all__ = [
    "CHOICE_SLACK",
    "DEFAULT_GAP",
    "NEGLIGIBLE",
    "Known",
    "PairSplit",
    "Start",
    "Variables",
    "add_budget",
    "add_edge_capacity",
    "add_pair_balance",
    "add_power_cap",
    "add_replica_capacity",
    "add_route_split",
    "add_single_resource",
    "add_site_units",
    "add_step_coverage",
    "add_transfer_conservation",
    "available_solvers",
    "build_model",
    "check_packable",
    "define_variables",
    "lp_bound",
    "pack_into_domains",
    "primary_objective",
    "relax",
    "set_objective",
    "solve",
    "solve_model",
]

#: The model statistics of a solution (all 0 when no model was built).
_STATS = ("variables", "integer_variables", "constraints", "nonzeros")

#: Relative MIP gap used when ``gap=None``: prove optimality (HiGHS' own default is 1e-4).
DEFAULT_GAP = 1e-9


@dataclass(frozen=True)
class Start:
    """What is known about a model before solving it (see :mod:`solvers.twolevel`).

    ``values`` is a value for every variable of the model, a plan whose rows
    have been checked (``None`` if there is none); ``lower_bound`` a proven
    bound on the optimum found elsewhere; ``seconds`` the wall time it took
    (counted in the solve time); ``note`` says where it came from; ``target``
    an objective at which to stop (a plan that good is all the caller needs).
    """

    values: dict[pulp.LpVariable, float] | None = None
    lower_bound: float | None = None
    seconds: float = 0.0
    note: str = ""
    #: Stop at the first plan whose objective is at most this (HiGHS ``objective_target``).
    target: float | None = None
    #: Variables held at these values (both bounds set): the rest of a plan is to be completed.
    fixed: dict[pulp.LpVariable, float] | None = None


#: ``(model, variables) -> Start``: what is known about a built model before it is solved.
Known = Callable[[pulp.LpProblem, Variables], Start]


def _solve(problem: Problem, backend: str, mip: bool, time_limit_s, gap, threads, msg, start: Known | None = None,
           pair_split: PairSplit = "auto", feasibility: float | None = None,
           families: tuple[Family, ...] | None = None) -> tuple[Solution, Variables]:
    with gc_paused():  # PuLP's MPS writer and the read-back allocate as much as the build
        began = time.perf_counter()
        try:
            m, v = build_model(problem, pair_split, backend, families)
        except LimitExceeded as exc:  # not built, or stopped building: no model to solve
            status = "time_limit" if isinstance(exc, OutOfTime) else "error"
            return empty_solution(status, str(exc), backend=backend, build_seconds=time.perf_counter() - began,
                                  solve_seconds=0.0, stats=dict.fromkeys(_STATS, 0)), None
        build_seconds = time.perf_counter() - began
        stats = model_stats(m, v)
        if not mip:
            stats["integer_variables"] = 0  # the relaxation has none
        common = {"backend": backend, "build_seconds": build_seconds, "stats": stats}
        if v.index.infeasible:
            return empty_solution(
                "infeasible", "; ".join(v.index.infeasible), solve_seconds=0.0, **common
            ), v
        if stats["variables"] == 0:
            return to_solution(
                v,
                status="optimal",
                message="nothing to place",
                bound=None,
                solve_seconds=0.0,
                relaxed=not mip,
                **common,
            ), v
        known = start(m, v) if start is not None else Start()
        for var, value in (known.fixed or {}).items():
            var.lowBound = var.upBound = value
        limit_s = clip_time(None if time_limit_s is None else time_left(time_limit_s, known.seconds))
        options = SolveOptions(
            mip=mip,
            time_limit_s=limit_s,
            gap=DEFAULT_GAP if gap is None else gap,
            threads=threads,
            msg=msg,
            start=known.values,
            target=None if known.target is None else known.target / v.objective_scale,
            feasibility=feasibility,
        )
        if limit_s is not None and limit_s <= 0:  # nothing left for the solver: the start, if any, stands
            outcome = Outcome("time_limit", f"{backend}: the time limit ran out before the solver started", False,
                              None, 0.0, backend)
        else:
            outcome = run(m, backend, options)
        status, message = outcome.status, outcome.message + known.note
        solver_bound = None if outcome.bound is None else outcome.bound * v.objective_scale
        bounds = [b for b in (solver_bound, known.lower_bound) if b is not None]
        bound = max(bounds) if bounds else None
        solve_seconds = outcome.seconds + known.seconds
        if known.values is not None and _start_is_better(v, known.values, outcome):
            for var, value in known.values.items():
                var.varValue = value
            status = "time_limit" if status == "time_limit" else "feasible"
            message += "; the solver found no better plan than the start, returned"
        elif not outcome.has_values:
            return empty_solution(status, message, solve_seconds=solve_seconds, bound=bound, **common), v
        return to_solution(
            v,
            status=status,
            message=message,
            bound=bound,
            solve_seconds=solve_seconds,
            relaxed=not mip,
            **common,
        ), v


def time_left(limit_s: float, spent_s: float) -> float:
    """What is left of a time limit after ``spent_s`` (never below 0: a solve with none left does not start)."""
    return max(limit_s - spent_s, 0.0)


def _start_is_better(v: Variables, values: dict[pulp.LpVariable, float], outcome) -> bool:
    """Whether the start beats what the solver returned (nothing, or a worse plan), by the model's objective
    without tie-breaks (:func:`solvers.objective.model_objective`: the primary objective, and a re-plan's
    migration $ or the KV tiers' holding cost).

    A start is a plan whose rows were checked, so it also stands when the
    solver returns nothing, whatever the reason it gives.
    """
    if not outcome.has_values:
        return True
    found = {var: var.varValue for var in (*v.n.values(), *v.pi.values())}
    return model_objective(v, values) < model_objective(v, found) * (1 - REL_OBJECTIVE)


def solve(
    problem: Problem,
    backend: str = DEFAULT_BACKEND,
    time_limit_s: float | None = None,
    gap: float | None = None,
    threads: int | None = None,
    msg: bool = False,
    pair_split: PairSplit = "auto",
    families: tuple[Family, ...] | None = None,
) -> Solution:
    """Build and solve the placement MILP.

    Parameters
    ----------
    problem : Problem
        The problem.
    backend : str
        A solver name of :func:`solvers.backends.get_solver`: ``"cbc"``
        (bundled CBC), ``"highs"`` (highspy API), a registered backend or any
        name :func:`pulp.getSolver` knows. An unknown or unavailable backend
        gives ``status="error"`` naming the available ones, never an exception.
    time_limit_s : float, optional
        Wall-clock limit of the solver. When hit, ``status="time_limit"``
        with the incumbent if there is one (no placement otherwise). Model
        building is not counted, and CBC checks its clock only after the
        root LP, so on large models it can overrun.
    gap : float, optional
        Relative MIP gap at which to stop; ``None`` means :data:`DEFAULT_GAP`.
        ``"optimal"`` means optimal within this gap.
    threads : int, optional
        Solver threads (CBC results may then depend on timing).
    msg : bool
        Show the solver log (CBC's log goes to the ``solvers.backends`` logger).
    pair_split : {"auto", "hubs", "pairs"}
        How pairs of two-part columns are modelled (see :func:`build_model`).
    families : tuple of Family, optional
        The model's families (default :data:`solvers.model.BASE_FAMILIES`).

    Returns
    -------
    Solution

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.5, power_w_per_unit=1.0)])
    >>> sol = solve(p, backend="highs")
    >>> sol.status, sol.objective, sol.replicas[0].replicas
    ('optimal', 3.0, 2)
    """
    return solve_model(problem, backend, time_limit_s, gap, threads, msg, pair_split=pair_split,
                       families=families)[0]


def solve_model(
    problem: Problem,
    backend: str = DEFAULT_BACKEND,
    time_limit_s: float | None = None,
    gap: float | None = None,
    threads: int | None = None,
    msg: bool = False,
    start: Known | None = None,
    pair_split: PairSplit = "auto",
    feasibility: float | None = None,
    families: tuple[Family, ...] | None = None,
) -> tuple[Solution, Variables]:
    """:func:`solve`, also returning the model's variables, which hold the solution's values.

    ``start``, if given, is called with the built model and its variables and returns a :class:`Start`
    (a checked plan to start from, a bound proven elsewhere, variables to fix): the start is handed to
    the backend and returned if the solver finds nothing better, and the bound reported is the better of
    the two (see :mod:`solvers.twolevel`). It adds no rows: those are the ``families``'. ``feasibility``
    is a primal feasibility tolerance tighter than the backend's default (HiGHS; see :mod:`solvers.repair`).
    """
    return _solve(problem, backend, True, time_limit_s, gap, threads, msg, start, pair_split, feasibility, families)


def relax(
    problem: Problem,
    backend: str = "highs",
    time_limit_s: float | None = None,
    threads: int | None = None,
    msg: bool = False,
    pair_split: PairSplit = "auto",
    families: tuple[Family, ...] | None = None,
) -> Solution:
    """Solve the LP relaxation (integrality of n dropped).

    The result has the relaxed objective (a lower bound on the MILP optimum)
    as ``objective`` and ``best_bound``, loads, flows and pairs, fractional
    cost and power, ``units`` rounded up, and no ``replicas`` (they are
    fractional).

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    >>> relax(p).objective
    1.5
    """
    return _solve(problem, backend, False, time_limit_s, None, threads, msg, pair_split=pair_split,
                  families=families)[0]


def lp_bound(
    problem: Problem, backend: str = "highs", time_limit_s: float | None = None
) -> float | None:
    """Objective of the LP relaxation, or ``None`` if it was not solved.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    >>> lp_bound(p)
    1.5
    """
    solution = relax(problem, backend=backend, time_limit_s=time_limit_s)
    return solution.objective if solution.status == "optimal" else None
