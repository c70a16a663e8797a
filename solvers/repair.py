"""Repair of a solver plan that breaks a constraint by a tolerance-sized amount.

Solvers accept plans up to ~1e-6 outside their scaled rows; read back in
natural units a violation that small can still exceed what the independent
verifier allows (a transfer's flows not balancing at a node by 1.3e6 B/s of
1e12, say). The integers are not the problem: :func:`repair` keeps every
replica count of the plan, solves the rest of the model — loads, route shares,
flows, pairs, all continuous once the replicas are fixed — again with HiGHS at
a primal feasibility tolerance of :data:`REPAIR_FEASIBILITY`, and reads it
back through :func:`~solvers.extract.to_solution`, which cancels circulating
flow. The repaired plan has the same replicas, so the same cost.

Examples
--------
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> from solvers.milp import solve
>>> p = Problem(demands=[Demand(name="d", rate=3.0)],
...             routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
...                             capacity={"q": 2.0})],
...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
...                         usd_per_hour_per_unit=1.5, power_w_per_unit=1.0)])
>>> fixed = repair(p, solve(p, backend="highs"))
>>> fixed.status, fixed.objective, [ld.rate for ld in fixed.loads]
('optimal', 3.0, [3.0])
"""

from __future__ import annotations

from solvers.family import Family
from solvers.milp import Start, solve_model
from solvers.solution import Solution

__all__ = ["REPAIR_FEASIBILITY", "repair"]

#: Primal feasibility tolerance of the repair solve: 1e-10 on rows scaled to ~1 (HiGHS' default is 1e-7).
REPAIR_FEASIBILITY = 1e-10


def repair(problem, solution: Solution, time_limit_s: float | None = None,
           families: tuple[Family, ...] | None = None) -> Solution:
    """``solution``'s replicas with the continuous part re-solved tightly (see the module docstring).

    ``families``: those of the model ``solution`` came from (its rows hold in the repaired plan too).
    Returns the re-solved solution; its status is that of the repair solve
    (``optimal`` when the fixed replicas admit a plan), and its message says
    it is a repair.
    """
    counts = {(p.column, p.part, p.site): p.replicas for p in solution.replicas}

    def fix(m, v) -> Start:
        return Start(fixed={var: float(counts.get(key, 0)) for key, var in v.n.items()},
                     note="; replicas fixed from the rejected plan, the rest re-solved at feasibility "
                          f"tolerance {REPAIR_FEASIBILITY:g}")

    fixed, _ = solve_model(problem, backend="highs", time_limit_s=time_limit_s, start=fix,
                           feasibility=REPAIR_FEASIBILITY, families=families)
    return fixed
