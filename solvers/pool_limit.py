"""The pool limit: at most N columns carrying load of each group of steps (one class and stage).

A plan that serves a class's decode with three pools of the same chip at TP 1, 2 and 4 can be
the cheapest by a few cents and still be a plan nobody wants to operate. With
``Problem.pool_limit`` (``limits.max_pools_per_stage`` of an instance), each column c of a
group of steps G gets a binary b_{c,G}, "c carries load of G", linked to its loads, and each
group a cardinality row; the objective adds a tie-break ε per b_{c,G} = 1
(:mod:`solvers.objective`).

Examples
--------
>>> from solvers.milp import build_model
>>> from solvers.problem import Column, Demand, Part, PoolLimit, Problem, Route, Site
>>> cols = [Column(name=f"c{i}", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0}) for i in (1, 2)]
>>> p = Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=cols, sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
...                                       usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)],
...             pool_limit=PoolLimit(max_columns=1, groups={"d|decode": ["q"]}))
>>> m, v = build_model(p)
>>> sorted(c.name for c in m.constraints() if c.name.startswith("pool"))
['pool_count__d_decode', 'pool_load__c1__q', 'pool_load__c2__q']
"""

from __future__ import annotations

from collections import defaultdict

import pulp

from solvers.family import KEEP, Family, ReplicaRow, hard, no_columns, no_objective
from solvers.problem import Problem
from solvers.variables import Variables, add_row, add_var

__all__ = ["POOL_LIMIT", "add_pool_limit"]


def add_pool_limit(m: pulp.LpProblem, v: Variables) -> None:
    """Pool limit (if set): for each group G of steps, each column c with a load at a step of G
    and each such step q::

        Σ_s κ_{c,q}·y_{c,q,s} − λ_k·b_{c,G} ≤ 0        (requests/s; b_{c,G} ∈ {0, 1})

    and for each group G::

        Σ_c b_{c,G} ≤ N

    b_{c,G} = 1 when column c carries load of G (a column serving two classes counts once in
    each). The first row's big-M is the demand λ_k of q's route: the load of one column at q
    is at most λ_k·x_r ≤ λ_k, so b = 1 never binds and b = 0 forbids any load. It is divided
    by the power of two nearest max(λ_k, κ) as the coverage rows are; the count has unit
    coefficients and is not rescaled, and is left out where at most N columns could serve G
    (the binaries are still made: they carry the tie-break of :mod:`solvers.objective`).
    Steps or columns of a group absent from the problem (the restricted problems of
    :mod:`solvers.twolevel`) are skipped.
    """
    limit = v.index.problem.pool_limit
    if limit is None:
        return
    ix = v.index
    tok = ix.names.tokens
    loads: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))  # step -> column -> load keys
    for key in ix.load_keys:
        loads[key[1]][key[0]].append(key)
    for group, steps in sorted(limit.groups.items()):
        name = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in group)
        members: set[str] = set()
        for q in sorted(set(steps)):
            if q not in loads:
                continue
            lam = ix.rate[ix.route_of_step[q].demand]
            for c, keys in sorted(loads[q].items()):
                if (c, group) not in v.u:
                    v.u[c, group] = add_var(m, v, "b", (c, group), [tok["column", c], name], ub=1, integer=True)
                members.add(c)
                terms = [(v.y[key], v.load_unit[c, q]) for key in keys] + [(v.u[c, group], -lam)]
                add_row(m, v, "pool_load", (c, q), [tok["column", c], tok["step", q]], terms,
                        pulp.LpConstraintLE, 0.0)
        if len(members) > limit.max_columns:
            add_row(m, v, "pool_count", (group,), [name], [(v.u[c, group], 1.0) for c in sorted(members)],
                    pulp.LpConstraintLE, float(limit.max_columns), scaled=1.0)


def _groups_tie(problem: Problem) -> list[ReplicaRow] | None:
    """A group of steps is a class and stage of every mode: its count ties their columns."""
    return None if problem.pool_limit is not None else []


def _pool_limit_start(v: Variables, part: Variables, values: dict) -> None:
    """b_{c,G} of a start: 1 where column c carries load of a step of G."""
    if not v.u:
        return
    busy = {key[:2] for key, var in v.y.items() if values[var] > 0}
    groups = v.index.problem.pool_limit.groups
    for (c, group), var in v.u.items():
        values[var] = 1.0 if any((c, q) in busy for q in groups[group]) else 0.0


POOL_LIMIT = Family(name="pool_limit", check="check_pool_limit", rows=add_pool_limit, objective=no_objective,
                    collapse=KEEP, coupling=_groups_tie, elastic=hard, start=_pool_limit_start, columns=no_columns)
