"""Rows of the placement MILP that serve the demand within the fleet's units and limits.

One function per constraint family (notation: :mod:`solvers.problem`; scaling:
:mod:`solvers.model`): route split, step coverage, replica capacity, single
resource, site units, power cap and budget, each declared as a
:class:`~solvers.family.Family` beside it. The network's rows (pairs,
transfers, edge capacity) are :mod:`solvers.network_rows`.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial

import pulp

from solvers.family import (
    KEEP,
    Family,
    ReplicaRow,
    hard,
    no_columns,
    no_objective,
    no_start,
    separable,
)
from solvers.problem import Problem, Site
from solvers.solution import Solution
from solvers.variables import Key3, Variables, add_row

__all__ = [
    "BUDGET",
    "CHOICE_SLACK",
    "POWER_CAP",
    "REPLICA_CAPACITY",
    "ROUTE_SPLIT",
    "SINGLE_RESOURCE",
    "SITE_UNITS",
    "STEP_COVERAGE",
    "add_budget",
    "add_power_cap",
    "add_replica_capacity",
    "add_route_split",
    "add_single_resource",
    "add_site_units",
    "add_step_coverage",
]

#: Relative slack of the big-M of the single-resource rows (see add_single_resource).
CHOICE_SLACK = 2.0**-10


def add_route_split(m: pulp.LpProblem, v: Variables) -> None:
    """Route split, for each demand k with λ_k > 0::

        Σ_{r∈k} x_r = 1

    x_r is the fraction of λ_k sent down route r. Unit coefficients: the row is
    not rescaled.
    """
    ix = v.index
    routes_of: dict[str, list[str]] = defaultdict(list)
    for r in ix.routes:
        routes_of[r.demand].append(r.name)
    decided = {d for p in ix.problem.policies for d in p.demands}  # their rows: solvers.kv_rows
    for k in sorted(set(ix.rate) - decided):
        terms = [(v.x[r], 1.0) for r in routes_of[k]]
        add_row(
            m,
            v,
            "route_split",
            (k,),
            [ix.names.tokens["demand", k]],
            terms,
            pulp.LpConstraintEQ,
            1.0,
            scaled=1.0,
        )


def add_step_coverage(m: pulp.LpProblem, v: Variables) -> None:
    """Step coverage, for each step q of route r of demand k (requests/s)::

        Σ_{c,s} cap_{c,q}·y_{c,q,s} − λ_k·x_r = 0

    i.e. Σ a_{c,q,s} = λ_k·x_r with a = cap·y. add_row divides the row by the
    power of two nearest max(λ_k, max_c cap_{c,q}), which keeps every ratio
    cap/λ exact (cap/λ = 1/3 written as 0.333333333333 once made CBC's
    preprocessing round 3 replicas up to 4; 0.3/0.1 ≠ 3 made it miss an
    optimum).
    """
    ix = v.index
    loads_of: dict[str, list[Key3]] = defaultdict(list)
    for key in ix.load_keys:
        loads_of[key[1]].append(key)
    for r in ix.routes:
        lam = ix.rate[r.demand]
        for q in r.steps:
            terms = [(v.y[key], v.load_unit[key[0], q]) for key in loads_of[q]]
            terms.append((v.x[r.name], -lam))
            add_row(
                m,
                v,
                "step_coverage",
                (q,),
                [ix.names.tokens["step", q]],
                terms,
                pulp.LpConstraintEQ,
                0.0,
            )


def add_replica_capacity(m: pulp.LpProblem, v: Variables) -> None:
    """Replica capacity, for each column c and site s of part 0::

        Σ_q (κ_{c,q}/cap_{c,q})·y_{c,q,s} ≤ n_{c,0,s}

    i.e. Σ_q a_{c,q,s}/cap_{c,q} ≤ n_{c,0,s}: mixing steps shares a replica
    linearly (κ is the unit of y, :func:`~solvers.variables.load_units`; the
    coefficients are 1 where y is in replica-equivalents, and the row is not
    rescaled then). Where κ ≪ cap (a replica could serve far more than the
    step's whole demand λ_k) the coefficient is tiny and a load on zero replicas
    would be within the solvers' tolerance, so each such load also gets::

        κ_{c,q}·y_{c,q,s} − λ_k·n_{c,0,s} ≤ 0

    valid for every plan (a ≤ λ_k always, so n ≥ 1 satisfies it; n = 0 forces
    a = 0 in the first row anyway), with coefficients of the same size.
    """
    ix = v.index
    loads_at: dict[tuple[str, str], list[Key3]] = defaultdict(list)
    for key in ix.load_keys:
        loads_at[key[0], key[2]].append(key)
    for (c, s), keys in loads_at.items():
        share = {key: v.load_unit[c, key[1]] / ix.column[c].capacity[key[1]] for key in keys}
        terms = [(v.y[key], share[key]) for key in keys] + [(v.n[c, 0, s], -1.0)]
        tokens = [ix.names.tokens["column", c], ix.names.tokens["site", s]]
        add_row(m, v, "replica_capacity", (c, s), tokens, terms, pulp.LpConstraintLE, 0.0,
                scaled=1.0 if all(f == 1.0 for f in share.values()) else None)
        for key in keys:
            if share[key] != 1.0:
                lam = ix.rate[ix.route_of_step[key[1]].demand]
                link = [(v.y[key], v.load_unit[c, key[1]]), (v.n[c, 0, s], -lam)]
                add_row(m, v, "replica_link", key, [ix.names.tokens["step", key[1]], *tokens], link,
                        pulp.LpConstraintLE, 0.0)


def add_single_resource(m: pulp.LpProblem, v: Variables) -> None:
    """Single-resource demands: one part-0 resource ρ serves all of demand k (binary w)::

        Σ_ρ w_{k,ρ} = 1  and  Σ_{c,s: parts[0] of c is ρ} cap_{c,q}·y_{c,q,s} − (1+ε)·λ_k·w_{k,ρ} ≤ 0

    for every step q of every route of k. The first term of the second row is
    the load of demand k that ρ serves at step q (≤ λ_k·x_r ≤ λ_k), so no
    larger big-M is needed. ε = 2^-10 (:data:`CHOICE_SLACK`): with ε = 0 the
    row is tight exactly when ρ serves all of k, and λ_k written with a
    different rounding here and in the coverage row (17/3 scaled by 1/8 and
    1/16) made CBC's preprocessing call a feasible model infeasible. Demands with a single possible resource get no rows. The
    second row (requests/s) is divided by the power of two nearest its largest
    coefficient, max(λ_k, max cap_{c,q}), as the coverage rows are; the first
    has unit coefficients and is not rescaled.
    """
    ix = v.index
    loads_of: dict[tuple[str, str], list[Key3]] = defaultdict(list)
    for key in ix.load_keys:
        loads_of[key[1], ix.column[key[0]].parts[0].resource].append(key)
    for r in ix.routes:
        options = ix.choices.get(r.demand)
        if not options:
            continue
        lam = ix.rate[r.demand]
        for q in r.steps:
            for rho in options:
                keys = loads_of[q, rho]
                if keys:
                    terms = [(v.y[key], v.load_unit[key[0], q]) for key in keys]
                    terms.append((v.w[r.demand, rho], -lam * (1.0 + CHOICE_SLACK)))
                    tokens = [ix.names.tokens["step", q], ix.names.tokens["resource", rho]]
                    add_row(
                        m, v, "resource_choice", (q, rho), tokens, terms, pulp.LpConstraintLE, 0.0
                    )
    for k, options in ix.choices.items():
        terms = [(v.w[k, rho], 1.0) for rho in options]
        tokens = [ix.names.tokens["demand", k]]
        add_row(m, v, "single_resource", (k,), tokens, terms, pulp.LpConstraintEQ, 1.0, scaled=1.0)


def add_site_units(m: pulp.LpProblem, v: Variables) -> None:
    """Units per site, for each site s::

        Σ_{c,p: parts[p].resource = s.resource} u_p·n_{c,p,s} ≤ D_s·m_s

    Exact when the part sizes up to a domain form a divisibility chain and larger ones are whole
    domains (see check_packable). The row
    (units) is divided by the power of two nearest the largest u_p in it.
    """
    ix = v.index
    units = ix.units
    at: dict[str, list] = defaultdict(list)
    for key, var in v.n.items():
        at[key[2]].append((var, float(units[key])))
    for s in sorted(at):
        site = ix.site[s]
        rhs = float(site.units_per_domain * site.domains)
        add_row(
            m, v, "site_units", (s,), [ix.names.tokens["site", s]], at[s], pulp.LpConstraintLE, rhs
        )


def _per_replica(v: Variables, attr: str) -> list:
    ix = v.index
    units = ix.units
    return [(var, getattr(ix.site[key[2]], attr) * units[key]) for key, var in v.n.items()]


def add_power_cap(m: pulp.LpProblem, v: Variables) -> None:
    """Power cap (if set), in W::

        Σ power_w_per_unit_s·u_p·n_{c,p,s} ≤ power_cap_w

    divided by the power of two nearest the largest W per replica.
    """
    cap = v.index.problem.power_cap_w
    if cap is not None:
        add_row(
            m, v, "power_cap", (), [], _per_replica(v, "power_w_per_unit"), pulp.LpConstraintLE, cap
        )


def add_budget(m: pulp.LpProblem, v: Variables) -> None:
    """Budget (if set), in $/h::

        Σ usd_per_hour_per_unit_s·u_p·n_{c,p,s} ≤ budget_usd_per_hour

    divided by the power of two nearest the largest $/h per replica.
    """
    budget = v.index.problem.budget_usd_per_hour
    if budget is not None:
        add_row(
            m,
            v,
            "budget",
            (),
            [],
            _per_replica(v, "usd_per_hour_per_unit"),
            pulp.LpConstraintLE,
            budget,
        )


# ---- the families ------------------------------------------------------------------------------------


def demand_rows_elastic(em) -> None:
    """Every demand's split row (the KV tiers' too, which keep the name): a share of it may go unserved."""
    for name, key, row in em.rows("route_split"):
        em.relax_demand(name, key, row)


def _single_resource_start(v: Variables, part: Variables, values: dict) -> None:
    """w of the full model: a demand with one possible resource in the smaller problem (no choice variable
    there) takes the resource serving it; every w is rounded."""
    serving: dict[str, set[str]] = defaultdict(set)
    for (c, q, _s), var in part.y.items():
        if (var.varValue or 0.0) > 0:
            serving[part.index.route_of_step[q].demand].add(part.index.column[c].parts[0].resource)
    for (k, rho), var in v.w.items():
        if (k, rho) not in part.w:
            values[var] = 1.0 if rho == (sorted(serving.get(k, ())) or v.index.choices[k])[0] else 0.0
        values[var] = float(round(values[var]))


def _site_rows(problem: Problem) -> list[ReplicaRow]:
    return [ReplicaRow(name=f"site_units|{s.name}", rhs=float(s.units_per_domain * s.domains),
                       per_unit=partial(_on_site, s.name)) for s in problem.sites]


def _on_site(name: str, site: Site) -> float:
    return 1.0 if site.name == name else 0.0


def _units_needed(v: Variables, site: str, has: float, used: dict, sol: Solution, slack: float) -> float | None:
    """The units the elastic plan places in ``site``, when over what it has (``used``: the plan's units
    per site, summed once per solution)."""
    if used.get("of") is not sol:
        per: dict[str, float] = defaultdict(float)
        for p in sol.replicas:
            per[p.site] += p.replicas * v.index.column[p.column].parts[p.part].units
        used.update(of=sol, at=per)
    need = used["at"].get(site, 0.0)
    return need if need > has else None


def _site_units_elastic(em) -> None:
    """Lift n ≤ U_s/u_p (it restates the row) and let each site's units grow."""
    v = em.variables
    for var in v.n.values():
        var.upBound = None
    used: dict = {}
    for name, key, row in em.rows("site_units"):
        site = v.index.site[key[0]]
        has = float(site.units_per_domain * site.domains)
        em.relax_limit("site_units", "site", name, key, row, "units", partial(_units_needed, v, key[0], has, used))


def _power_rows(problem: Problem) -> list[ReplicaRow]:
    cap = problem.power_cap_w
    return [] if cap is None else [ReplicaRow(name="power_cap", rhs=cap, per_unit=_power_per_unit)]


def _power_per_unit(site: Site) -> float:
    return site.power_w_per_unit


def _budget_rows(problem: Problem) -> list[ReplicaRow]:
    budget = problem.budget_usd_per_hour
    return [] if budget is None else [ReplicaRow(name="budget", rhs=budget, per_unit=_usd_per_unit, prices=True)]


def _usd_per_unit(site: Site) -> float:
    return site.usd_per_hour_per_unit


def _fleet_need(what: str, cap: float, sol: Solution, slack: float) -> float:
    return max(getattr(sol, what), cap * (1 + slack))


def _limit_elastic(family: str, tag: str, unit: str, what: str, em) -> None:
    for name, key, row in em.rows(family):
        cap = -row.constant * em.variables.row_scale.get(name, 1.0)
        em.relax_limit(family, tag, name, key, row, unit, partial(_fleet_need, what, cap))


ROUTE_SPLIT = Family(name="route_split", check="check_demand", rows=add_route_split, objective=no_objective,
                     collapse=KEEP, coupling=separable, elastic=demand_rows_elastic, start=no_start,
                     columns=no_columns)
STEP_COVERAGE = Family(name="step_coverage", check="check_demand", rows=add_step_coverage, objective=no_objective,
                       collapse=KEEP, coupling=separable, elastic=hard, start=no_start, columns=no_columns)
REPLICA_CAPACITY = Family(name="replica_capacity", check="check_capacity", rows=add_replica_capacity,
                          objective=no_objective, collapse=KEEP, coupling=separable, elastic=hard, start=no_start,
                          columns=no_columns)
SINGLE_RESOURCE = Family(name="single_resource", check="check_demand", rows=add_single_resource,
                         objective=no_objective, collapse=KEEP, coupling=separable, elastic=hard,
                         start=_single_resource_start, columns=no_columns)
SITE_UNITS = Family(name="site_units", check="check_domains", rows=add_site_units, objective=no_objective,
                    collapse=KEEP, coupling=_site_rows, elastic=_site_units_elastic, start=no_start,
                    columns=no_columns)
POWER_CAP = Family(name="power_cap", check="check_limits", rows=add_power_cap, objective=no_objective, collapse=KEEP,
                   coupling=_power_rows, elastic=partial(_limit_elastic, "power_cap", "power", "W", "power_w"),
                   start=no_start, columns=no_columns)
BUDGET = Family(name="budget", check="check_limits", rows=add_budget, objective=no_objective, collapse=KEEP,
                coupling=_budget_rows,
                elastic=partial(_limit_elastic, "budget", "budget", "$/h", "cost_usd_per_hour"), start=no_start,
                columns=no_columns)
