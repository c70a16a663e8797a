"""The placement MILP, one function per constraint family (notation: :mod:`solvers.problem`).

:func:`build_model` reads like the formulation::

    min   Σ w_s·u_p·n_{c,p,s}  (+ a tiny tie-break, see set_objective)
    s.t.  route split, step coverage, replica capacity, single resource, site units,
          pair balance, transfer conservation, edge capacity, power cap, budget

Scaling (so that coefficients stay within a few orders of magnitude):

* ``x_r`` is the *fraction* of demand k sent down route r (0..1), so the
  route split reads Σ x_r = 1 and λ_k moves into the coverage rows;
* the loads are *replica-equivalents* y_{c,q,s} = a_{c,q,s}/cap_{c,q}, so the
  replica capacity row has unit coefficients and the coverage row of step q
  of route r is Σ (cap_{c,q}/S_k)·y_{c,q,s} = (λ_k/S_k)·x_r, S_k the power of
  ten nearest λ_k (scaling by a power of ten, not by λ_k itself, keeps
  decimal inputs exact in the LP/MPS text that CBC reads);
* flows and edge capacities are in units of ``flow_scale`` bytes/s, the power
  of ten nearest the median positive edge capacity (1e9 without edges).

Everything is unscaled when the :class:`~solvers.solution.Solution` is built.
Variable and constraint names are deterministic, ``family__token__token``,
with tokens from :class:`solvers.index.Names`; ``Variables.labels`` maps each
LP name back to its family and original key.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pulp

from solvers.backends import available_backends, run
from solvers.export import export_model
from solvers.extract import empty_solution, model_stats, to_solution
from solvers.index import Index
from solvers.packing import check_packable, pack_into_domains
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.variables import Key3, Variables, add_row, decimal_shift, define_variables, gc_paused

__all__ = [
    "Variables",
    "build_model",
    "define_variables",
    "add_route_split",
    "add_step_coverage",
    "add_replica_capacity",
    "add_single_resource",
    "add_site_units",
    "add_pair_balance",
    "add_transfer_conservation",
    "add_edge_capacity",
    "add_power_cap",
    "add_budget",
    "set_objective",
    "solve",
    "relax",
    "lp_bound",
    "export_model",
    "check_packable",
    "pack_into_domains",
    "available_backends",
    "DEFAULT_GAP",
]

#: Relative MIP gap used when ``gap=None``: prove optimality (HiGHS' own default is 1e-4).
DEFAULT_GAP = 1e-9

# Tie-break weight relative to the cheapest unit, small enough that the
# primary objective moves by at most ~1e-7 relative (see set_objective).
_TIE = 1e-7


def add_route_split(m: pulp.LpProblem, v: Variables) -> None:
    """Route split, for each demand k with λ_k > 0::

        Σ_{r∈k} x_r = 1

    x_r is the fraction of λ_k sent down route r.
    """
    ix = v.index
    routes_of: dict[str, list[str]] = defaultdict(list)
    for r in ix.routes:
        routes_of[r.demand].append(r.name)
    for k in sorted(ix.rate):
        terms = [(v.x[r], 1.0) for r in routes_of[k]]
        add_row(
            m,
            v,
            "route_split",
            (k,),
            [ix.names.token("demand", k)],
            terms,
            pulp.LpConstraintEQ,
            1.0,
        )


def add_step_coverage(m: pulp.LpProblem, v: Variables) -> None:
    """Step coverage, for each step q of route r of demand k::

        Σ_{c,s} (cap_{c,q}/S_k)·y_{c,q,s} = (λ_k/S_k)·x_r

    i.e. Σ a_{c,q,s} = λ_k·x_r with a = cap·y. S_k is the power of ten nearest
    λ_k: it scales the row like dividing by λ_k would, but keeps decimal
    inputs exact in the 13-digit LP/MPS text CBC reads (cap/λ = 1/3 written
    as 0.333333333333 made CBC's preprocessing round 3 replicas up to 4).
    """
    ix = v.index
    loads_of: dict[str, list[Key3]] = defaultdict(list)
    for key in ix.load_keys:
        loads_of[key[1]].append(key)
    for r in ix.routes:
        lam = ix.rate[r.demand]
        for q in r.steps:
            terms = [
                (v.y[key], decimal_shift(ix.column[key[0]].capacity[q], lam)) for key in loads_of[q]
            ]
            terms.append((v.x[r.name], -decimal_shift(lam, lam)))
            add_row(
                m,
                v,
                "step_coverage",
                (q,),
                [ix.names.token("step", q)],
                terms,
                pulp.LpConstraintEQ,
                0.0,
            )


def add_replica_capacity(m: pulp.LpProblem, v: Variables) -> None:
    """Replica capacity, for each column c and site s of part 0::

        Σ_q y_{c,q,s} ≤ n_{c,0,s}

    i.e. Σ_q a_{c,q,s}/cap_{c,q} ≤ n_{c,0,s}: mixing steps shares a replica linearly.
    """
    ix = v.index
    loads_at: dict[tuple[str, str], list[Key3]] = defaultdict(list)
    for key in ix.load_keys:
        loads_at[key[0], key[2]].append(key)
    for (c, s), keys in loads_at.items():
        terms = [(v.y[key], 1.0) for key in keys] + [(v.n[c, 0, s], -1.0)]
        tokens = [ix.names.token("column", c), ix.names.token("site", s)]
        add_row(m, v, "replica_capacity", (c, s), tokens, terms, pulp.LpConstraintLE, 0.0)


def add_single_resource(m: pulp.LpProblem, v: Variables) -> None:
    """Single-resource demands: one part-0 resource ρ serves all of demand k (binary w)::

        Σ_ρ w_{k,ρ} = 1  and  Σ_{c,s: parts[0] of c is ρ} (cap_{c,q}/S_k)·y_{c,q,s} ≤ (λ_k/S_k)·w_{k,ρ}

    for every step q of every route of k. The left side of the second row is
    the share of demand k that ρ serves at step q (≤ x_r ≤ 1, times λ_k/S_k),
    so no big-M is needed. Demands with a single possible resource get no rows.
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
                    terms = [
                        (v.y[key], decimal_shift(ix.column[key[0]].capacity[q], lam))
                        for key in keys
                    ]
                    terms.append((v.w[r.demand, rho], -decimal_shift(lam, lam)))
                    tokens = [ix.names.token("step", q), ix.names.token("resource", rho)]
                    add_row(
                        m, v, "resource_choice", (q, rho), tokens, terms, pulp.LpConstraintLE, 0.0
                    )
    for k, options in ix.choices.items():
        terms = [(v.w[k, rho], 1.0) for rho in options]
        tokens = [ix.names.token("demand", k)]
        add_row(m, v, "single_resource", (k,), tokens, terms, pulp.LpConstraintEQ, 1.0)


def add_site_units(m: pulp.LpProblem, v: Variables) -> None:
    """Units per site, for each site s::

        Σ_{c,p: parts[p].resource = s.resource} u_p·n_{c,p,s} ≤ D_s·m_s

    Exact for divisibility chains of part sizes (see check_packable).
    """
    ix = v.index
    at: dict[str, list] = defaultdict(list)
    for key, var in v.n.items():
        at[key[2]].append((var, float(ix.replica_units(key))))
    for s in sorted(at):
        site = ix.site[s]
        rhs = float(site.units_per_domain * site.domains)
        add_row(
            m, v, "site_units", (s,), [ix.names.token("site", s)], at[s], pulp.LpConstraintLE, rhs
        )


def add_pair_balance(m: pulp.LpProblem, v: Variables) -> None:
    """Pair balance of two-part columns, for each site s of part 0 and s' of part 1::

        Σ_{s'} z_{c,s,s'} = n_{c,0,s}   and   Σ_s z_{c,s,s'} = n_{c,1,s'}

    z is continuous; only allowed pairs (see solvers.index) have a z.
    """
    ix = v.index
    out: dict[tuple[str, str], list] = defaultdict(list)
    into: dict[tuple[str, str], list] = defaultdict(list)
    for (c, s0, s1), var in v.z.items():
        out[c, s0].append((var, 1.0))
        into[c, s1].append((var, 1.0))
    for family, part, groups in (("pair_out", 0, out), ("pair_in", 1, into)):
        for (c, s), terms in groups.items():
            terms = terms + [(v.n[c, part, s], -1.0)]
            tokens = [ix.names.token("column", c), ix.names.token("site", s)]
            add_row(m, v, family, (c, s), tokens, terms, pulp.LpConstraintEQ, 0.0)


def add_transfer_conservation(m: pulp.LpProblem, v: Variables) -> None:
    """Transfer flow conservation, for each transfer t (src → tgt) and node v::

        Σ_{e out of v} f_{t,e} − Σ_{e into v} f_{t,e} = b_t·(Σ_c a_{c,src,v} − Σ_c a_{c,tgt,v})

    a at a node sums the loads of the sites on that node, so a transfer
    between steps hosted on the same node nets out there and uses no edge.
    In scaled units b_t·cap_{c,q}/F multiplies y_{c,q,s}.
    """
    ix = v.index
    node_of = {name: site.node for name, site in ix.site.items()}
    loads_of: dict[str, list[Key3]] = defaultdict(list)
    for key in ix.load_keys:
        loads_of[key[1]].append(key)
    out_of: dict[str, list] = defaultdict(list)
    into: dict[str, list] = defaultdict(list)
    for e in ix.edges:
        out_of[e[0]].append(e)
        into[e[1]].append(e)
    for t in ix.transfers:
        per_node: dict[str, list] = defaultdict(list)
        for node in ix.nodes:
            per_node[node] += [(v.f[t.name, e], 1.0) for e in out_of[node]]
            per_node[node] += [(v.f[t.name, e], -1.0) for e in into[node]]
        for step, sign in ((t.source, -1.0), (t.target, 1.0)):
            for key in loads_of[step]:
                coef = sign * t.bytes_per_request * ix.column[key[0]].capacity[step] / v.flow_scale
                per_node[node_of[key[2]]].append((v.y[key], coef))
        for node in ix.nodes:
            if per_node[node]:
                tokens = [ix.names.token("transfer", t.name), ix.names.token("node", node)]
                add_row(
                    m,
                    v,
                    "flow_conservation",
                    (t.name, node),
                    tokens,
                    per_node[node],
                    pulp.LpConstraintEQ,
                    0.0,
                )


def add_edge_capacity(m: pulp.LpProblem, v: Variables) -> None:
    """Edge capacity, for each edge e with capacity > 0::

        Σ_t f_{t,e} + Σ_{(c,s,s')} k_e(s,s')·B_c·z_{c,s,s'} ≤ cap_e

    B_c is ``pair_bytes_per_s`` of column c, sent each way on the lowest-latency
    path of that direction; k_e(s,s') counts how often e lies on the paths
    s → s' and s' → s (0, 1, or 2). Everything in ``flow_scale`` bytes/s.
    """
    ix = v.index
    load: dict[tuple[str, str], list] = defaultdict(list)
    for (_, e), var in v.f.items():
        load[e].append((var, 1.0))
    for key, var in v.z.items():
        pair_bytes = ix.column[key[0]].pair_bytes_per_s / v.flow_scale
        if pair_bytes > 0:
            for e, times in ix.pair_edges[key]:
                load[e].append((var, pair_bytes * times))
    for e in ix.edges:
        if load[e]:
            tokens = [ix.names.token("node", e[0]), ix.names.token("node", e[1])]
            add_row(
                m,
                v,
                "edge_capacity",
                e,
                tokens,
                load[e],
                pulp.LpConstraintLE,
                ix.capacity[e] / v.flow_scale,
            )


def _per_replica(v: Variables, attr: str) -> list:
    ix = v.index
    return [
        (var, getattr(ix.site[key[2]], attr) * ix.replica_units(key)) for key, var in v.n.items()
    ]


def add_power_cap(m: pulp.LpProblem, v: Variables) -> None:
    """Power cap (if set): Σ power_w_per_unit_s·u_p·n_{c,p,s} ≤ power_cap_w."""
    cap = v.index.problem.power_cap_w
    if cap is not None:
        add_row(
            m, v, "power_cap", (), [], _per_replica(v, "power_w_per_unit"), pulp.LpConstraintLE, cap
        )


def add_budget(m: pulp.LpProblem, v: Variables) -> None:
    """Budget (if set): Σ usd_per_hour_per_unit_s·u_p·n_{c,p,s} ≤ budget_usd_per_hour."""
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


def set_objective(m: pulp.LpProblem, v: Variables) -> None:
    """Minimise Σ w_s·u_p·n_{c,p,s} + ε_u·Σ u_p·n + ε_f·Σ f (w: $/h, W or 1 per unit).

    The tie-breaks prefer fewer units among equal-cost placements and forbid
    needless or circulating flow. With w_min the cheapest positive unit weight,
    ε_u = 1e-7·w_min (none for the "units" objective) and
    ε_f = 1e-7·w_min / max(1, Σ_t b_t·λ_k / F), so the tie-broken optimum is
    within ~1e-7 (relative) of the primary optimum. Reported objectives are
    always the primary one, recomputed from the solution.
    """
    ix = v.index
    weights = [w / ix.replica_units(k) for k, w in v.primary.items() if w > 0]
    w_min = min(weights) if weights else 1.0
    eps_u = 0.0 if ix.problem.objective == "units" else _TIE * w_min
    total = sum(
        t.bytes_per_request * ix.rate[ix.route_of_step[t.source].demand] for t in ix.transfers
    )
    eps_f = _TIE * w_min / max(1.0, total / v.flow_scale)
    coefs = {var: v.primary[k] + eps_u * ix.replica_units(k) for k, var in v.n.items()}
    coefs.update({var: eps_f for var in v.f.values()})
    m.setObjective(pulp.LpAffineExpression(coefs))


def build_model(problem: Problem) -> tuple[pulp.LpProblem, Variables]:
    """Build the placement MILP of ``problem``.

    Parameters
    ----------
    problem : Problem
        The solver-neutral problem.

    Returns
    -------
    (pulp.LpProblem, Variables)
        The model and its variables (with scales and LP-name labels).

    Raises
    ------
    ValueError
        If part sizes are not packable (:func:`check_packable`) or names dangle.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    >>> m, v = build_model(p)
    >>> sorted(c.name for c in m.constraints())
    ['replica_capacity__c__s', 'route_split__d', 'site_units__s', 'step_coverage__q']
    """
    check_packable(problem)
    with gc_paused():
        ix = Index.from_problem(problem)
        m = pulp.LpProblem(name="placement", sense=pulp.LpMinimize)
        v = define_variables(m, ix)
        add_route_split(m, v)
        add_step_coverage(m, v)
        add_replica_capacity(m, v)
        add_single_resource(m, v)
        add_site_units(m, v)
        add_pair_balance(m, v)
        add_transfer_conservation(m, v)
        add_edge_capacity(m, v)
        add_power_cap(m, v)
        add_budget(m, v)
        set_objective(m, v)
    return m, v


def _solve(problem: Problem, backend: str, mip: bool, time_limit_s, gap, threads, msg) -> Solution:
    with gc_paused():  # PuLP's MPS writer and the read-back allocate as much as the build
        start = time.perf_counter()
        m, v = build_model(problem)
        build_seconds = time.perf_counter() - start
        stats = model_stats(m, v)
        if not mip:
            stats["integer_variables"] = 0  # the relaxation has none
        common = dict(backend=backend, build_seconds=build_seconds, stats=stats)
        if v.index.infeasible:
            return empty_solution(
                "infeasible", "; ".join(v.index.infeasible), solve_seconds=0.0, **common
            )
        if stats["variables"] == 0:
            return to_solution(
                v,
                status="optimal",
                message="nothing to place",
                bound=None,
                solve_seconds=0.0,
                relaxed=not mip,
                **common,
            )
        outcome = run(
            m,
            backend,
            mip=mip,
            time_limit_s=time_limit_s,
            gap=DEFAULT_GAP if gap is None else gap,
            threads=threads,
            msg=msg,
        )
        if not outcome.has_values:
            return empty_solution(
                outcome.status,
                outcome.message,
                solve_seconds=outcome.seconds,
                bound=outcome.bound,
                **common,
            )
        return to_solution(
            v,
            status=outcome.status,
            message=outcome.message,
            bound=outcome.bound,
            solve_seconds=outcome.seconds,
            relaxed=not mip,
            **common,
        )


def solve(
    problem: Problem,
    backend: str = "cbc",
    time_limit_s: float | None = None,
    gap: float | None = None,
    threads: int | None = None,
    msg: bool = False,
) -> Solution:
    """Build and solve the placement MILP.

    Parameters
    ----------
    problem : Problem
        The problem.
    backend : str
        ``"cbc"`` (bundled CBC), ``"highs"`` (highspy API) or any name
        :func:`pulp.getSolver` knows. An unavailable backend gives
        ``status="error"`` naming the available ones, never an exception.
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
    return _solve(problem, backend, True, time_limit_s, gap, threads, msg)


def relax(
    problem: Problem,
    backend: str = "highs",
    time_limit_s: float | None = None,
    threads: int | None = None,
    msg: bool = False,
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
    return _solve(problem, backend, False, time_limit_s, None, threads, msg)


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
