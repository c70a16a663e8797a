"""Cost floors: the optimum of each independent part of a problem as a valid row of the whole.

A problem without a network (the collapsed fleet of :mod:`solvers.twolevel`)
falls apart into *parts*: groups of demands no column links (each column
serves steps of one part), tied together only by the fleet-wide rows — site
units, power cap, budget: the rows over replica counts the families declare
(``Family.coupling``). Drop those rows for all but one part's columns and
what is left is a relaxation: every plan of the whole restricted to part P's
columns is a plan of P alone (with all the fleet to itself, it uses no more
of any site, power or budget than the whole plan does). So the cost of part
P's replicas in any plan of the whole is at least the optimum of P alone,
and each part's proven bound L_P gives the valid row::

    Σ_{(c,p,s): c in P} w_s·u_p·n_{c,p,s}  ≥  L_P·(1 − FLOOR_MARGIN)

It cuts off no plan, so optimum and bound are unchanged, but the root LP
bound rises from the LP relaxation to at least Σ_P L_P. Branch and bound on
a sum of independent integer problems has to close every part's rounding gap
in the same tree (a product of trees); with the floors only the gap the
fleet-wide rows cause is left. On the 57-integer support MILP of the
1,000-domain collapsed fleet HiGHS went from 7,554 nodes and 12 CPU s to
4 CPU s, floors included.

Why the margin: L_P is a bound on P's objective *with* its tie-breaks
(:func:`solvers.objective.set_objective`), which add at most ``TIE_BREAK``
(1e-7) relative to the primary cost the row sums; the solvers report bounds
to ~1e-9. ``FLOOR_MARGIN`` = 1e-6 covers both with room to spare.
"""

from __future__ import annotations

import collections
import time
from functools import partial

import pulp

from solvers.backends.threads import solve_threads, threaded_map
from solvers.family import (
    DROP,
    Family,
    coupling_rows,
    hard,
    no_columns,
    no_objective,
    no_start,
    separable,
)
from solvers.milp import Variables, solve_model, time_left
from solvers.model import families_of
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.variables import add_row

__all__ = ["CUT", "FLOOR_MARGIN", "Floor", "add_floors", "cost_floors", "floors", "parts", "solved_parts"]

#: The verifier check of a valid inequality (a cut): it cuts off no plan, so there is nothing to check.
CUT = "cut"

#: Relative margin below a part's proven bound at which its floor row is set (see the module docstring).
FLOOR_MARGIN = 1e-6

#: A floor: the columns of one part and the least cost of their replicas in any plan.
Floor = tuple[frozenset[str], float]


def parts(problem: Problem, families: tuple[Family, ...] | None = None) -> list[Problem]:
    """``problem`` split into parts no column links (see the module docstring); ``[]`` if it is one part.

    Each part keeps every site and the fleet-wide limits. A problem is not split when one of its
    ``families`` (default :data:`solvers.model.BASE_FAMILIES`) ties demands other than by rows over
    replica counts (``Family.coupling`` is ``None``: a network's transfers, a pool limit, KV policies).

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route
    >>> def col(name, step):
    ...     return Column(name=name, parts=[Part(resource="gpu", units=1)], capacity={step: 1.0})
    >>> p = Problem(demands=[Demand(name=k, rate=1.0) for k in "ab"],
    ...             routes=[Route(name=f"r{k}", demand=k, steps=[f"q{k}"]) for k in "ab"],
    ...             columns=[col("x", "qa"), col("y", "qb"), col("z", "qa")], sites=[])
    >>> [sorted(c.name for c in part.columns) for part in parts(p)]
    [['x', 'z'], ['y']]
    """
    if coupling_rows(families_of() if families is None else families, problem) is None:
        return []
    root = {d.name: d.name for d in problem.demands}

    def find(k: str) -> str:
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k

    demand_of = {q: r.demand for r in problem.routes for q in r.steps}
    for c in problem.columns:
        first, *rest = sorted({find(demand_of[q]) for q in c.capacity})
        for k in rest:
            root[find(k)] = find(first)
    groups: dict[str, set[str]] = collections.defaultdict(set)
    for k in root:
        groups[find(k)].add(k)
    if len(groups) < 2:
        return []
    out = []
    for _, demands in sorted(groups.items()):
        out.append(problem.model_copy(update={
            "demands": [d for d in problem.demands if d.name in demands],
            "routes": [r for r in problem.routes if r.demand in demands],
            "columns": [c for c in problem.columns if demand_of[next(iter(c.capacity))] in demands],
        }))
    return out


def floors(problem: Problem, time_limit_s: float | None = None, **options) -> list[Floor]:
    """The floor of each part of ``problem`` (:func:`parts`) whose solve proved a bound.

    ``options`` are those of :func:`solvers.milp.solve_model` (``families`` included); the parts share
    ``time_limit_s``.
    """
    return [(frozenset(c.name for c in part.columns), sol.best_bound * (1 - FLOOR_MARGIN))
            for part, sol in solved_parts(parts(problem, options.get("families")), time_limit_s, **options)
            if sol.best_bound is not None and sol.best_bound > 0]


def solved_parts(split: list[Problem], time_limit_s: float | None = None,
                 **options) -> list[tuple[Problem, Solution]]:
    """Each part of ``split`` with its MILP solution, in order, solved side by side
    (:func:`solvers.backends.threads.threaded_map`); the parts share ``time_limit_s`` (each gets an equal
    share of it, up to what is left). ``options`` are those of :func:`solvers.milp.solve_model`."""
    began = time.perf_counter()
    share = None if time_limit_s is None else time_limit_s * min(solve_threads(), len(split)) / max(len(split), 1)

    def solve(part: Problem) -> tuple[Problem, Solution]:
        left = None if time_limit_s is None else min(share, time_left(time_limit_s, time.perf_counter() - began))
        return part, solve_model(part, time_limit_s=left, **options)[0]

    return threaded_map(solve, split)


def add_floors(found: list[Floor], m: pulp.LpProblem, v: Variables) -> None:
    """Cost floors, for each part P of ``found`` (module docstring)::

        Σ_{(c,p,s): c in P} w_s·u_p·n_{c,p,s}  ≥  L_P·(1 − FLOOR_MARGIN)

    one row per part, named ``floor__<i>``; a part none of whose columns the model has gets none.
    """
    terms: dict[int, list] = collections.defaultdict(list)
    part_of = {c: i for i, (columns, _) in enumerate(found) for c in columns}
    for key, var in v.n.items():
        if key[0] in part_of and v.primary[key] > 0:
            terms[part_of[key[0]]].append((var, v.primary[key]))
    for i, (_, least) in enumerate(found):
        if terms[i]:
            add_row(m, v, "floor", (i,), [str(i)], terms[i], pulp.LpConstraintGE, least)


def cost_floors(found: list[Floor]) -> Family:
    """The floors ``found`` as a family: valid inequalities (module docstring) that cut off no plan, so
    its verifier check has nothing to check (:data:`CUT`) and the collapsed fleet may leave them out."""
    return Family(name="cost_floors", check=CUT, rows=partial(add_floors, found), objective=no_objective,
                  collapse=DROP, coupling=separable, elastic=hard, start=no_start, columns=no_columns)
