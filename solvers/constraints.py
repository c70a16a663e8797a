"""Rows of the placement MILP that serve the demand within the fleet's units and limits.

One function per constraint family (notation: :mod:`solvers.problem`; scaling:
:mod:`solvers.milp`): route split, step coverage, replica capacity, single
resource, site units, power cap and budget. The network's rows (pairs,
transfers, edge capacity) are :mod:`solvers.network_rows`.
"""

from __future__ import annotations

from collections import defaultdict

import pulp

from solvers.variables import Key3, Variables, add_row

__all__ = [
    "CHOICE_SLACK",
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

    Exact for divisibility chains of part sizes (see check_packable). The row
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
