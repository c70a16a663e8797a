"""Rows of the placement MILP for demands whose rates are decided: policies and their limits.

A :class:`~solvers.problem.Policy` p of group g serves a share π_p of the
group; the demands it names are served at λ_k·Σ_p a_{p,k}·π_p. With x_r the
fraction of λ_k sent down route r (as everywhere in :mod:`solvers.milp`)::

    Σ_{r∈k} x_r − Σ_p a_{p,k}·π_p = 0        for each demand k named by a policy
    Σ_{p∈g} π_p = 1                          for each group g
    Σ_p b_{l,p}·π_p − Σ_{c,s} h_{l,c}·n_{c,0,s} ≤ rhs_l    for each limit l
    Σ_{r∈k} Σ_c Σ_{s∈S_l} a_{c,q_r,s} − λ_k·Σ_p d_{l,p}·π_p = 0    for each policy load l
                                                   (q_r the first step of route r)

and Σ_p t_{l,p}·π_p bytes/s joins the edge capacity row of every edge of a
policy flow l (:func:`policy_edge_terms`, read by
:func:`solvers.network_rows.add_edge_capacity`).

and Σ_p cost_p·π_p joins the objective. The first family replaces the route
split row (Σ x_r = 1) of those demands and keeps its family name, so that
every consumer of route split rows (the elastic model of the infeasibility
diagnosis) treats it as the demand's row. The mix is linear and exact: a
share of sessions under each policy is physically realisable, so a fractional
π is no relaxation artefact.

Examples
--------
>>> from solvers.problem import Column, Demand, Part, Policy, Problem, Route, Site
>>> from solvers.milp import solve
>>> p = Problem(demands=[Demand(name="hit", rate=4.0), Demand(name="miss", rate=4.0)],
...             routes=[Route(name="h", demand="hit", steps=["qh"]), Route(name="m", demand="miss", steps=["qm"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"qh": 4.0, "qm": 1.0})],
...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=8,
...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)],
...             policies=[Policy(name="keep", group="g", demands={"hit": 0.75, "miss": 0.25}, cost=0.5),
...                       Policy(name="drop", group="g", demands={"miss": 1.0})])
>>> sol = solve(p, backend="highs")
>>> sol.objective, sol.policy_shares   # 2 GPUs either way; keeping 8/9 of the group fills them
(2.444444444, {'drop': 0.1111111111, 'keep': 0.8888888889})
"""

from __future__ import annotations

from collections import defaultdict

import pulp

from solvers.family import KEEP, Family, ReplicaRow, hard, no_columns, no_start
from solvers.problem import Problem
from solvers.variables import Variables, add_row

__all__ = ["KV_TIERS", "add_policy_objective", "add_policy_rows", "policy_demands", "policy_edge_terms"]


def policy_demands(problem) -> set[str]:
    """The demands whose rate policies decide (their route split rows are written here)."""
    return {k for p in problem.policies for k in p.demands}


def add_policy_rows(m: pulp.LpProblem, v: Variables) -> None:
    """The demand rows, one row per group and one per limit (module docstring)."""
    ix = v.index
    problem = ix.problem
    if not problem.policies:
        return
    routes_of: dict[str, list[str]] = defaultdict(list)
    for r in ix.routes:
        routes_of[r.demand].append(r.name)
    feeds: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for p in problem.policies:
        for k, share in p.demands.items():
            feeds[k].append((p.name, share))
    for k in sorted(feeds):
        if k not in ix.rate:
            continue
        terms = [(v.x[r], 1.0) for r in routes_of[k]] + [(v.pi[name], -share) for name, share in feeds[k]]
        add_row(m, v, "route_split", (k,), [ix.names.tokens["demand", k]], terms, pulp.LpConstraintEQ, 0.0)
    groups: dict[str, list[str]] = defaultdict(list)
    for p in problem.policies:
        groups[p.group].append(p.name)
    for i, g in enumerate(sorted(groups)):
        add_row(m, v, "policy_group", (g,), [str(i)], [(v.pi[name], 1.0) for name in groups[g]],
                pulp.LpConstraintEQ, 1.0, scaled=1.0)
    for i, lim in enumerate(problem.policy_limits):
        terms = [(v.pi[name], b) for name, b in lim.policies.items() if b]
        for c, head in sorted(lim.replicas.items()):
            terms += [(v.n[key], -head) for key in ix.replica_keys if key[0] == c and key[1] == 0 and head]
        add_row(m, v, "policy_limit", (lim.name,), [str(i)], terms, pulp.LpConstraintLE, lim.rhs)
    add_policy_loads(m, v)


def add_policy_loads(m: pulp.LpProblem, v: Variables) -> None:
    """One row per policy load: the first steps' load of its demand at its sites = λ_k·Σ_p d_p·π_p."""
    ix = v.index
    for i, pl in enumerate(ix.problem.policy_loads):
        if pl.demand not in ix.rate:
            continue
        firsts = {r.steps[0] for r in ix.routes if r.demand == pl.demand}
        sites = set(pl.sites)
        terms = [(v.y[key], v.load_unit[key[0], key[1]]) for key in ix.load_keys
                 if key[1] in firsts and key[2] in sites]
        terms += [(v.pi[name], -ix.rate[pl.demand] * d) for name, d in pl.policies.items() if d]
        add_row(m, v, "policy_load", (pl.name,), [str(i)], terms, pulp.LpConstraintEQ, 0.0)


def policy_edge_terms(v: Variables) -> dict[tuple[str, str], list[tuple[pulp.LpVariable, float]]]:
    """edge -> (π_p, bytes/s per unit of π_p) of every policy flow crossing it (summed per π)."""
    out: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for fl in v.index.problem.policy_flows:
        for e in fl.edges:
            for name, b in fl.policies.items():
                if b:
                    out[tuple(e)][name] += b
    return {e: [(v.pi[name], b) for name, b in sorted(terms.items())] for e, terms in sorted(out.items())}


def add_policy_objective(m: pulp.LpProblem, v: Variables) -> None:
    """Add Σ cost_p·π_p to the objective, in its scale (``v.objective_scale``)."""
    costs = [(v.pi[p.name], p.cost / v.objective_scale) for p in v.index.problem.policies if p.cost]
    if costs:
        m.setObjective(m.objective + pulp.LpAffineExpression(costs))


def _policies_tie(problem: Problem) -> list[ReplicaRow] | None:
    """A policy's shares set the rates of several demands, and its limits hold the replicas of all of them."""
    return None if problem.policies else []


#: π are variables of every model (:func:`solvers.variables.define_variables`); the two-level solve never
#: takes a problem with policies (:func:`solvers.twolevel.two_levels`), so no start needs them.
KV_TIERS = Family(name="kv_tiers", check="check_kv", rows=add_policy_rows, objective=add_policy_objective,
                  collapse=KEEP, coupling=_policies_tie, elastic=hard, start=no_start, columns=no_columns)
