"""Migration: re-plan a running placement, paying for every replica that changes (a family).

Given the replicas that run now, n⁰_{c,p,s} (those on failed domains already
dropped), and the one-off cost m_{c,p,s} of adding or removing one replica
(its weight reload, see :mod:`placement.core.plans.migration`), a re-plan
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

:func:`migration` declares the rows and terms as one
:class:`~solvers.family.Family`; large fleets are then re-planned in two
levels by :func:`solvers.twolevel.solve` as any placement is: the collapsed
fleet leaves the family out (migration $ are ≥ 0, so its bound is a bound of
the re-plan), every restricted problem keeps the columns running now (so
that keeping a replica where it is stays possible), and plans are compared
by run $/h + migration $ / H.

Examples
--------
>>> from solvers.milp import solve
>>> from solvers.model import build_model, families_of
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> p = Problem(demands=[Demand(name="d", rate=3.0)],
...             routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...             sites=[Site(name=f"s{i}", node=f"v{i}", resource="gpu", units_per_domain=1, domains=2,
...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0) for i in range(2)])
>>> moves = migration({("c", 0, "s1"): 2}, {("c", 0, "s0"): 1.0, ("c", 0, "s1"): 1.0}, amortise_h=1.0)
>>> m, v = build_model(p, families=families_of([moves]))
>>> [c.name for c in m.constraints() if c.name.startswith("migration")]
['migration__c__0__s1']
>>> sol = solve(p, backend="highs", families=families_of([moves]))
>>> sol.status, sol.objective, [(r.site, r.replicas) for r in sol.replicas]
('optimal', 2.0, [('s1', 2)])
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import pulp

from solvers.family import DROP, Family, ReplicaRow, hard
from solvers.problem import Problem
from solvers.variables import Variables, add_row, add_var

__all__ = ["CHECK", "Key", "add_migration_objective", "add_migration_rows", "migration", "migration_usd"]

#: The verifier check that mirrors the family: the plan's migration record re-derived.
CHECK = "check_migration"

Key = tuple[str, int, str]


def add_migration_rows(current: Mapping[Key, int], m: pulp.LpProblem, v: Variables) -> None:
    """For each key (column, part, site) that runs now and the model has::

        n_{c,p,s} − d⁺_{c,p,s} + d⁻_{c,p,s} = n⁰_{c,p,s}        (replicas; d⁺, d⁻ ≥ 0)

    unit coefficients, not rescaled; (d⁺, d⁻) of each key in ``v.extra["migration"]``.
    """
    tok = v.index.names.tokens
    deltas: dict[Key, tuple[pulp.LpVariable, pulp.LpVariable]] = {}
    for key, var in sorted(v.n.items()):
        now = int(current.get(key, 0))
        if now <= 0:
            continue
        c, p, s = key
        tokens = [tok["column", c], str(p), tok["site", s]]
        up = add_var(m, v, "dplus", key, tokens)
        down = add_var(m, v, "dminus", key, tokens)
        add_row(m, v, "migration", key, tokens, [(var, 1.0), (up, -1.0), (down, 1.0)],
                pulp.LpConstraintEQ, float(now), scaled=1.0)
        deltas[key] = (up, down)
    v.extra["migration"] = deltas


def add_migration_objective(current: Mapping[Key, int], usd_per_change: Mapping[Key, float], amortise_h: float,
                            m: pulp.LpProblem, v: Variables) -> None:
    """Add (1/H)·m_{c,p,s} to the objective per replica added or removed (d⁺ + d⁻, or n where n⁰ = 0), in
    its scale, and the migration $ of a plan to ``v.objective_terms`` (a start is compared with it)."""
    objective = m.objective
    deltas = v.extra["migration"]
    for key, var in sorted(v.n.items()):
        weight = usd_per_change.get(key, 0.0) / amortise_h / v.objective_scale
        if key not in deltas:
            if weight:
                objective[var] = objective.get(var, 0.0) + weight
            continue
        up, down = deltas[key]
        if weight:
            objective[up] = weight
            objective[down] = weight

    def spread_usd(values: dict[pulp.LpVariable, float]) -> float:
        after = {key: round(values.get(var) or 0.0) for key, var in v.n.items()}
        return migration_usd(after, current, usd_per_change) / amortise_h

    v.objective_terms.append(spread_usd)


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


def _changes_start(current: Mapping[Key, int], v: Variables, part: Variables, values: dict) -> None:
    """d⁺, d⁻ of a start: the replicas it adds to and removes from each running key."""
    for key, (up, down) in v.extra["migration"].items():
        change = values[v.n[key]] - int(current.get(key, 0))
        values[up], values[down] = max(change, 0.0), max(-change, 0.0)


def _running_columns(current: Mapping[Key, int], problem: Problem) -> set[str]:
    return {c for (c, _, _), n in current.items() if n > 0}


def _per_key(problem: Problem) -> list[ReplicaRow] | None:
    """Its terms are the running keys' own, not prices a part plan carries: it does not split by parts."""
    return None


def migration(current: Mapping[Key, int], usd_per_change: Mapping[Key, float], amortise_h: float) -> Family:
    """The migration rows and terms of the module docstring, as a family.

    Parameters
    ----------
    current : mapping
        (column, part, site) -> replicas running now, n⁰.
    usd_per_change : mapping
        (column, part, site) -> $ to add or remove one replica there, m (keys absent cost 0).
    amortise_h : float
        Hours H over which the one-off $ are spread (> 0).

    Raises
    ------
    ValueError
        ``amortise_h`` is not > 0.
    """
    if not amortise_h > 0:
        raise ValueError(f"amortise_h must be > 0, got {amortise_h}")
    return Family(name="migration", check=CHECK, rows=partial(add_migration_rows, current),
                  objective=partial(add_migration_objective, current, usd_per_change, amortise_h),
                  collapse=DROP, coupling=_per_key, elastic=hard, start=partial(_changes_start, current),
                  columns=partial(_running_columns, current))
