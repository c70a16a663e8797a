"""Migration cost rows: re-plan a running placement, paying for every replica that changes.

Given the replicas that run now, n⁰_{c,p,s} (those on failed domains already
dropped), and the one-off cost m_{c,p,s} of adding or removing one replica
(its weight reload, see :mod:`placement.core.migration`), a re-plan
minimises::

    Σ w_s·u_p·n_{c,p,s}  +  (1/H)·Σ m_{c,p,s}·|n_{c,p,s} − n⁰_{c,p,s}|

with H the hours over which one-off costs are spread (``amortise_h``).
The absolute value is linearised with two non-negative variables per key
that runs now::

    n_{c,p,s} − d⁺_{c,p,s} + d⁻_{c,p,s} = n⁰_{c,p,s},   d⁺, d⁻ ≥ 0

and, minimising, at most one of d⁺, d⁻ is positive: d⁺ = replicas added,
d⁻ = replicas removed. Keys with n⁰ = 0 need no row: |n − 0| = n, so m/H is
added to n's own objective coefficient. Replicas now running in a key the
model no longer has (their column is gone) are a constant: they are removed
whatever the plan, so they do not change the optimum.

Large fleets (:func:`solve_with_migration`) are solved in two levels, as
:mod:`solvers.twolevel` solves a plain placement:

1. **Bound.** The collapsed fleet (:func:`solvers.twolevel.collapsed`) without
   migration terms: its bound LB is at most the run $/h of every plan of the
   real fleet, and migration $ are ≥ 0, so LB ≤ the re-plan's optimum.
2. **Plan.** The real fleet, with migration rows, restricted to the columns of
   the collapsed optimum *and the columns running now* (so that keeping a
   replica where it is stays possible): its plan is a plan of the full re-plan,
   whose objective U = run $/h + migration $ / H (replicas of columns left out
   count as removed) is an upper bound. If that is not within the gap, the same
   again with their siblings (other batches, sizes, latency limits).

If (U − LB)/U is within the gap, that plan is the answer and the full model is
never built; otherwise the full model is solved starting from the best of
them, with LB as a floor under its bound.

Examples
--------
>>> from solvers.milp import build_model
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> p = Problem(demands=[Demand(name="d", rate=3.0)],
...             routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
>>> m, v = build_model(p)
>>> add_migration(m, v, {("c", 0, "s"): 3}, {("c", 0, "s"): 2.0}, amortise_h=4.0)
{('c', 0, 's'): (dplus__c__0__s, dminus__c__0__s)}
>>> [c.name for c in m.constraints() if c.name.startswith("migration")]
['migration__c__0__s']
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import pulp

from solvers import twolevel
from solvers.backends import DEFAULT_BACKEND
from solvers.milp import Start, solve_model
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.tolerances import REL_GAP_MARGIN
from solvers.variables import Variables, add_row, add_var

__all__ = ["Key", "add_migration", "migration_usd", "solve_with_migration"]

#: Share of the time limit each small solve of a re-plan's two levels gets (collapsed; restricted, up to twice).
SHARE = 0.2

Key = tuple[str, int, str]


def add_migration(m: pulp.LpProblem, v: Variables, current: Mapping[Key, int], usd_per_change: Mapping[Key, float],
                  amortise_h: float) -> dict[Key, tuple[pulp.LpVariable, pulp.LpVariable]]:
    """Add the migration rows and objective terms of the module docstring to a built model.

    Parameters
    ----------
    m, v
        The model and variables of :func:`solvers.milp.build_model` (objective already set).
    current : mapping
        (column, part, site) -> replicas running now, n⁰.
    usd_per_change : mapping
        (column, part, site) -> $ to add or remove one replica there, m (keys absent cost 0).
    amortise_h : float
        Hours H over which the one-off $ are spread (> 0).

    Returns
    -------
    dict
        (column, part, site) -> (d⁺, d⁻) for the keys that run now and the model has.
    """
    if amortise_h <= 0:
        raise ValueError(f"amortise_h must be > 0, got {amortise_h}")
    tok = v.index.names.tokens
    objective = m.objective
    deltas: dict[Key, tuple[pulp.LpVariable, pulp.LpVariable]] = {}
    for key, var in sorted(v.n.items()):
        weight = usd_per_change.get(key, 0.0) / amortise_h / v.objective_scale
        now = int(current.get(key, 0))
        if now <= 0:
            if weight:
                objective[var] = objective.get(var, 0.0) + weight
            continue
        c, p, s = key
        tokens = [tok["column", c], str(p), tok["site", s]]
        up = add_var(m, v, "dplus", key, tokens)
        down = add_var(m, v, "dminus", key, tokens)
        add_row(m, v, "migration", key, tokens, [(var, 1.0), (up, -1.0), (down, 1.0)],
                pulp.LpConstraintEQ, float(now), scaled=1.0)
        if weight:
            objective[up] = weight
            objective[down] = weight
        deltas[key] = (up, down)
    return deltas


def migration_usd(replicas: Mapping[Key, int], current: Mapping[Key, int],
                  usd_per_change: Mapping[Key, float]) -> float:
    """Σ m·|n − n⁰| over every key that runs now or after (one-off $, not amortised).

    Examples
    --------
    >>> migration_usd({("c", 0, "s"): 5}, {("c", 0, "s"): 3, ("d", 0, "s"): 1},
    ...               {("c", 0, "s"): 2.0, ("d", 0, "s"): 0.5})
    4.5
    """
    keys = set(replicas) | set(current)
    return sum(usd_per_change.get(k, 0.0) * abs(int(replicas.get(k, 0)) - int(current.get(k, 0)))
               for k in sorted(keys))


def solve_with_migration(problem: Problem, current: Mapping[Key, int], usd_per_change: Mapping[Key, float],
                         amortise_h: float, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
                         gap: float | None = None, min_size: int | None = None) -> Solution:
    """Solve ``problem`` with the migration terms of :func:`add_migration`, in two levels when it is large.

    A problem with fewer (column, site) combinations than ``min_size``
    (default :data:`solvers.twolevel.MIN_SIZE`), or with policies, goes
    straight to the full model; larger ones are solved as
    the module docstring says. The solution's ``objective`` is the run $/h
    (as for a plain solve), its ``best_bound`` a bound on the re-plan's
    objective, run $/h + migration $ / ``amortise_h``.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
    ...             sites=[Site(name=f"s{i}", node=f"v{i}", resource="gpu", units_per_domain=1, domains=2,
    ...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0) for i in range(2)])
    >>> sol = solve_with_migration(p, {("c", 0, "s1"): 2}, {("c", 0, "s0"): 1.0, ("c", 0, "s1"): 1.0},
    ...                            amortise_h=1.0, backend="highs", min_size=1)
    >>> sol.status, sol.objective, [(r.site, r.replicas) for r in sol.replicas]
    ('optimal', 2.0, [('s1', 2)])
    """
    options = {"backend": backend, "gap": gap}

    def rows(start: Start | None = None):
        def prepare(m: pulp.LpProblem, v: Variables) -> Start:
            add_migration(m, v, current, usd_per_change, amortise_h)
            return start or Start()
        return prepare

    if twolevel._size(problem) < (twolevel.MIN_SIZE if min_size is None else min_size) or problem.policies:
        return solve_model(problem, time_limit_s=time_limit_s, prepare=rows(), **options)[0]
    began = time.perf_counter()
    share = None if time_limit_s is None else time_limit_s * SHARE
    lower = twolevel.solve_from_lp_support(twolevel.collapsed(problem), time_limit_s=share, **options)
    bound = lower.best_bound

    def total(sol: Solution) -> float:
        after = {(r.column, r.part, r.site): r.replicas for r in sol.replicas}
        return sol.objective + migration_usd(after, current, usd_per_change) / amortise_h

    # Stop at the first plan within the gap of the bound (HiGHS objective_target, on the model's objective).
    target = None if bound is None else bound * (1 - REL_GAP_MARGIN) / (1 - twolevel._gap(gap))
    best: tuple[float, Solution, Variables] | None = None
    for columns in _attempts(problem, lower, current):
        found, found_vars = solve_model(twolevel.restricted(problem, columns), time_limit_s=share,
                                        prepare=rows(Start(target=target)), **options)
        cost = total(found) if found.replicas else None
        if cost is not None and (best is None or cost < best[0]):
            best = (cost, found, found_vars)
        if best is not None and bound is not None and twolevel._within(best[0], bound, gap):
            return _proven(best[1], best[0], lower, time.perf_counter() - began)

    def prepare(m: pulp.LpProblem, v: Variables) -> Start:
        values = twolevel.start_values(m, v, best[2]) if best is not None else None
        deltas = add_migration(m, v, current, usd_per_change, amortise_h)
        if values is not None:
            for key, (up, down) in deltas.items():
                change = values[v.n[key]] - int(current.get(key, 0))
                values[up], values[down] = max(change, 0.0), max(-change, 0.0)
        return Start(values=values, lower_bound=bound, seconds=time.perf_counter() - began,
                     note=twolevel._note(lower, best[1] if best else None), cost=_cost(v, current, usd_per_change,
                                                                                       amortise_h))

    return solve_model(problem, time_limit_s=time_limit_s, prepare=prepare, **options)[0]


def _attempts(problem: Problem, lower: Solution, current: Mapping[Key, int]):
    """Column sets of the restricted re-plans, in order: those of the collapsed optimum and those running
    now; then, if few enough, with every column serving their steps on their resources."""
    running = {c for (c, _, _), n in current.items() if n > 0}
    names = {c.name for c in problem.columns}
    used = {r.column for r in lower.replicas} | (running & names)
    if not used:
        return
    yield used
    near = twolevel._near(problem, used)
    if len(near) > len(used) and len(near) * len(problem.sites) <= twolevel._size(problem) * twolevel.NEAR_SHARE:
        yield near


def _cost(v: Variables, current: Mapping[Key, int], usd_per_change: Mapping[Key, float], amortise_h: float):
    """The re-plan's objective of a plan given by the values of ``v.n`` (to compare a start with a solution)."""
    def cost(values: dict[pulp.LpVariable, float]) -> float:
        after = {key: round(values.get(var) or 0.0) for key, var in v.n.items()}
        run = sum(v.primary[key] * n for key, n in after.items())
        return run + migration_usd(after, current, usd_per_change) / amortise_h
    return cost


def _proven(plan: Solution, total: float, lower: Solution, seconds: float) -> Solution:
    """The restricted re-plan, proven within the gap by the collapsed bound."""
    message = (f"two levels: re-plan from the {len({p.column for p in plan.replicas})} columns of the collapsed "
               f"optimum and of the running plan ({plan.message}; run + migration {total:.6g} $/h); bound from "
               f"the fleet collapsed to one site per resource, without migration ({lower.message}, "
               f"{lower.variables:,} variables)")
    return twolevel._proven(plan, lower, seconds, message)
