"""The placement MILP, one function per constraint family (notation: :mod:`solvers.problem`).

:func:`build_model` reads like the formulation::

    min   Σ w_s·u_p·n_{c,p,s}  (+ a tiny tie-break, see set_objective)
    s.t.  route split, step coverage, replica capacity, single resource, site units,
          pair balance, transfer conservation, edge capacity, power cap, budget

Scaling. The inputs span bytes/s (~1e13) to replica counts (~1); the model
the solvers see is scaled deterministically, by powers of two and ten only:

* columns: ``x_r`` is the *fraction* of demand k sent down route r (0..1); the
  loads are *replica-equivalents* y_{c,q,s} = a_{c,q,s}/cap_{c,q}, so the
  replica capacity row has unit coefficients; the flows of transfer t are in
  units of F_t bytes/s, the power of ten nearest b_t·λ_k (the whole traffic of
  t), so a flow is ~1 unit instead of ~1e9 bytes/s; the pairs of column c are
  in units of μ_c pairs, a power of ten that is 1 unless c's pair traffic is
  far from the flows it shares edges with (:func:`~solvers.variables.pair_units`).
  n and w are integers and unscaled. Powers of ten keep short decimal values
  short in the 8-digit solution text CBC writes;
* rows: every family writes its rows in natural units (requests/s, units,
  replicas, bytes/s, W, $/h) and :func:`~solvers.variables.add_row` divides
  each row, right-hand side included, by the power of two nearest its largest
  |coefficient| (kept in ``Variables.row_scale``), so that coefficient lies in
  [0.71, 1.41). Dividing by a power of two is exact in binary: every ratio of
  coefficients in a row is exactly what it was in natural units, and short
  decimal inputs stay short in the 13-digit LP/MPS text CBC reads. (Powers of
  ten are not exact in binary: 0.3/0.1 ≠ 3, and CBC's preprocessing then
  returned 2 A100 as "optimal" for the single-resource Mélange toy instead of
  1 A100 + 3 A10G.)
* negligible terms: pair traffic that could never add up to 1e-9 of an edge's
  capacity is left out of that edge's row (see add_edge_capacity).

The matrix of every shipped instance then spans at most ~2e5 (max/min |a|;
rubin-lpx-deepseek, whose candidate replicas for one decode step serve
0.127..1.8e4 requests/s each; ≤ 4e3 for the others, see
tests/test_numerics.py) instead of up to ~1e12. The objective is not
rescaled: it is the primary objective on n plus tie-breaks, and the reported
objective is recomputed from the integer replicas.

Everything is unscaled when the :class:`~solvers.solution.Solution` is built.
Variable and constraint names are deterministic, ``family__token__token``,
with tokens from :class:`solvers.index.Names`; ``Variables.labels`` maps each
LP name back to its family and original key.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import pulp

from solvers.backends import SolveOptions, available_solvers, run
from solvers.export import export_model
from solvers.extract import empty_solution, model_stats, to_solution
from solvers.index import Index
from solvers.packing import check_packable, pack_into_domains
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.tolerances import REL_OBJECTIVE, TIE_BREAK
from solvers.variables import Key3, Variables, add_row, define_variables, gc_paused

__all__ = [
    "DEFAULT_GAP",
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
    "export_model",
    "lp_bound",
    "pack_into_domains",
    "relax",
    "set_objective",
    "solve",
]

#: Relative MIP gap used when ``gap=None``: prove optimality (HiGHS' own default is 1e-4).
DEFAULT_GAP = 1e-9

#: Relative slack of the big-M of the single-resource rows (see add_single_resource).
CHOICE_SLACK = 2.0**-10

#: Pair traffic is left out of an edge row while the most it could ever put on
#: the edge, summed over the terms left out, stays below this share of the
#: edge's capacity (see add_edge_capacity).
NEGLIGIBLE = 1e-9


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
    for k in sorted(ix.rate):
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
            terms = [(v.y[key], ix.column[key[0]].capacity[q]) for key in loads_of[q]]
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

        Σ_q y_{c,q,s} ≤ n_{c,0,s}

    i.e. Σ_q a_{c,q,s}/cap_{c,q} ≤ n_{c,0,s}: mixing steps shares a replica linearly.
    Unit coefficients: the row is not rescaled.
    """
    ix = v.index
    loads_at: dict[tuple[str, str], list[Key3]] = defaultdict(list)
    for key in ix.load_keys:
        loads_at[key[0], key[2]].append(key)
    for (c, s), keys in loads_at.items():
        terms = [(v.y[key], 1.0) for key in keys] + [(v.n[c, 0, s], -1.0)]
        tokens = [ix.names.tokens["column", c], ix.names.tokens["site", s]]
        add_row(
            m, v, "replica_capacity", (c, s), tokens, terms, pulp.LpConstraintLE, 0.0, scaled=1.0
        )


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
                    terms = [(v.y[key], ix.column[key[0]].capacity[q]) for key in keys]
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


def add_pair_balance(m: pulp.LpProblem, v: Variables) -> None:
    """Pair balance of two-part columns, for each site s of part 0 and s' of part 1::

        Σ_{s'} μ_c·z_{c,s,s'} − n_{c,0,s} = 0   and   Σ_s μ_c·z_{c,s,s'} − n_{c,1,s'} = 0

    z is continuous, in units of μ_c pairs (``Variables.pair_unit``, a power
    of ten, 1 for most columns); only allowed pairs (see solvers.index) have a
    z. On tree fleets the pairs are half-pairs g at hubs h instead (z_{c,s,s'}
    replaced by g_{c,0,s,h} and g_{c,1,s',h}, see solvers.index), with the
    same two rows over g and a hub balance, in units of μ_c pairs::

        Σ_s g_{c,0,s,h} − Σ_{s'} g_{c,1,s',h} = 0
 Each row (replicas) is divided by the power of two nearest max(μ_c, 1);
    z has no upper bound of its own, these rows bound it by n's bounds.
    """
    ix = v.index
    # Scaled here as add_row would (2^j nearest max(μ_c, 1)), once per column:
    # column -> (coefficient of z, of n, divisor).
    coef = {}
    for c, mu in v.pair_unit.items():
        div = 2.0 ** round(math.log2(mu)) if mu > 1.0 else 1.0
        coef[c] = (mu / div, -1.0 / div, div)
    out: dict[tuple[str, str], list] = defaultdict(list)
    into: dict[tuple[str, str], list] = defaultdict(list)
    for (c, s0, s1), var in v.z.items():
        term = (var, coef[c][0])
        out[c, s0].append(term)
        into[c, s1].append(term)
    hub: dict[tuple[str, str], list] = defaultdict(list)
    for (c, p, s, h), var in v.g.items():
        (out if p == 0 else into)[c, s].append((var, coef[c][0]))
        hub[c, h].append((var, 1.0 if p == 0 else -1.0))
    tok = ix.names.tokens
    for (c, h), terms in hub.items():
        tokens = [tok["column", c], tok["hub", h]]
        add_row(m, v, "pair_hub", (c, h), tokens, terms, pulp.LpConstraintEQ, 0.0, scaled=1.0)
    for family, part, groups in (("pair_out", 0, out), ("pair_in", 1, into)):
        for (c, s), terms in groups.items():
            _, coef_n, div = coef[c]
            terms.append((v.n[c, part, s], coef_n))
            tokens = [tok["column", c], tok["site", s]]
            add_row(m, v, family, (c, s), tokens, terms, pulp.LpConstraintEQ, 0.0, scaled=div)


def add_transfer_conservation(m: pulp.LpProblem, v: Variables) -> None:
    """Transfer flow conservation, for each transfer t (src → tgt) and node v (bytes/s)::

        Σ_{e out of v} F_t·f_{t,e} − Σ_{e into v} F_t·f_{t,e} = b_t·(Σ_c a_{c,src,v} − Σ_c a_{c,tgt,v})

    with a = cap·y. a at a node sums the loads of the sites on that node, so a
    transfer between steps hosted on the same node nets out there and uses no
    edge. f is in units of F_t bytes/s (``Variables.flow_unit``, the power of
    ten nearest b_t·λ_k, so b_t·cap_{c,q}/F_t ≈ cap_{c,q}/λ_k); add_row
    divides the row by the power of two nearest max(F_t, max b_t·cap_{c,q}).
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
        unit = v.flow_unit[t.name]
        per_node: dict[str, list] = defaultdict(list)
        for node in ix.nodes:
            per_node[node] += [(v.f[t.name, e], unit) for e in out_of[node]]
            per_node[node] += [(v.f[t.name, e], -unit) for e in into[node]]
        for step, sign in ((t.source, -1.0), (t.target, 1.0)):
            for key in loads_of[step]:
                coef = sign * t.bytes_per_request * ix.column[key[0]].capacity[step]
                per_node[node_of[key[2]]].append((v.y[key], coef))
        for node in ix.nodes:
            if per_node[node]:
                tokens = [ix.names.tokens["transfer", t.name], ix.names.tokens["node", node]]
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
    """Edge capacity, for each edge e with capacity > 0 (bytes/s)::

        Σ_t F_t·f_{t,e} + Σ_{(c,s,s')} k_e(s,s')·B_c·μ_c·z_{c,s,s'} ≤ cap_e

    B_c is ``pair_bytes_per_s`` of column c, sent each way on the lowest-latency
    path of that direction; k_e(s,s') counts how often e lies on the paths
    s → s' and s' → s (0, 1, or 2); a half-pair g_{c,p,s,h} counts the same for
    the path s → h and back. f is in units of F_t bytes/s and z in units
    of μ_c pairs (``Variables.flow_unit``, ``Variables.pair_unit``). add_row
    divides the row by the power of two nearest its largest coefficient.

    Negligible pair traffic is left out deliberately. The most traffic a term
    can put on e is k_e·B_c times the most pairs z can hold (the smaller of
    the bounds of the two n it pairs); the terms are taken from the smallest
    such total up and left out while their sum stays below NEGLIGIBLE (1e-9)
    of cap_e. Together they can never use more than 1e-9·cap_e, a thousandth
    of placement/verify.py's 1e-6 relative tolerance, so they cannot bind;
    keeping them would only stretch the row's coefficient range (1 kB/s per
    pair beside 10 TB/s edges gave 1e-10 coefficients, below HiGHS's 1e-9
    cut-off). Reported edge loads and placement/verify.py still count every
    pair's real traffic.
    """
    ix = v.index
    load: dict[tuple[str, str], list] = defaultdict(list)
    for (t, e), var in v.f.items():
        load[e].append((var, v.flow_unit[t]))
    budget = {e: NEGLIGIBLE * ix.capacity[e] for e in ix.edges}
    any_budget = max(budget.values(), default=0.0)
    # column -> (B_c·μ_c, whether a term of c may be small); a pair holds ≥ 1 replica
    traffic = {
        c.name: (c.pair_bytes_per_s * v.pair_unit[c.name], c.pair_bytes_per_s < any_budget)
        for c in ix.columns
        if c.pair_bytes_per_s > 0 and len(c.parts) == 2
    }
    small: dict[tuple[str, str], list] = defaultdict(list)  # terms that might be left out
    for c, var, edges, most_pairs in _pair_terms(v):
        if c not in traffic:
            continue
        coef, maybe_small = traffic[c]
        if not maybe_small:
            for e, times in edges:
                load[e].append((var, coef * times))
            continue
        most = ix.column[c].pair_bytes_per_s * most_pairs
        for e, times in edges:
            if times * most < budget[e]:
                small[e].append((times * most, var.name, var, coef * times))
            else:
                load[e].append((var, coef * times))
    for e, terms in small.items():  # smallest first, while the sum stays below the budget
        left_out = 0.0
        for most, _, var, coef in sorted(terms, key=lambda term: term[:2]):
            if left_out + most < budget[e]:
                left_out += most
            else:
                load[e].append((var, coef))
    for e in ix.edges:
        if load[e]:
            tokens = [ix.names.tokens["node", e[0]], ix.names.tokens["node", e[1]]]
            add_row(
                m,
                v,
                "edge_capacity",
                e,
                tokens,
                load[e],
                pulp.LpConstraintLE,
                ix.capacity[e],
            )


def _pair_terms(v: Variables):
    """(column, variable, round-trip edges, most pairs it can hold) of every z and g."""
    ix = v.index
    for (c, s0, s1), var in v.z.items():
        yield c, var, ix.pair_edges[c, s0, s1], min(ix.replica_ub[c, 0, s0], ix.replica_ub[c, 1, s1])
    for (c, p, s, h), var in v.g.items():
        yield c, var, ix.hub_edges[c, p, s, h], ix.replica_ub[c, p, s]


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


def set_objective(m: pulp.LpProblem, v: Variables) -> None:
    """Minimise Σ w_s·u_p·n_{c,p,s} + ε·Σ u_p·n + ε·Σ_{t,e} f_{t,e} (w: $/h, W or 1 per unit).

    The tie-breaks prefer fewer units among equal-cost placements and forbid
    needless or circulating flow. With w_min the cheapest positive unit weight,
    ε = 1e-7·w_min per unit placed (none for the "units" objective) and per
    unit of flow (F_t bytes/s, about the whole traffic of transfer t, see
    ``Variables.flow_unit``): a flow variable's tie-break is as visible to the
    solvers as a replica's, while a circulation-free transfer crosses only a
    few edges, so the tie-broken optimum stays within ~1e-7 (relative) of the
    primary optimum. (Solvers may still ignore a tie-break this small, so
    :func:`solvers.extract.to_solution` also cancels circulating flow.) The
    objective is not rescaled; reported objectives are always the primary
    one, recomputed from the solution.
    """
    ix = v.index
    units = ix.units
    weights = [w / units[k] for k, w in v.primary.items() if w > 0]
    w_min = min(weights) if weights else 1.0
    eps_u = 0.0 if ix.problem.objective == "units" else TIE_BREAK * w_min
    primary = v.primary
    coefs = {var: primary[k] + eps_u * units[k] for k, var in v.n.items()}
    coefs.update(dict.fromkeys(v.f.values(), TIE_BREAK * w_min))
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


def primary_objective(v: Variables, values: dict[pulp.LpVariable, float]) -> float:
    """Σ w·u·n of ``values`` (the objective without tie-breaks)."""
    return sum(v.primary[key] * round(values.get(var) or 0.0) for key, var in v.n.items())


def _solve(problem: Problem, backend: str, mip: bool, time_limit_s, gap, threads, msg,
           prepare: Callable[[pulp.LpProblem, Variables], Start] | None = None) -> tuple[Solution, Variables]:
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
        known = prepare(m, v) if prepare is not None else Start()
        for var, value in (known.fixed or {}).items():
            var.lowBound = var.upBound = value
        options = SolveOptions(
            mip=mip,
            time_limit_s=None if time_limit_s is None else time_left(time_limit_s, known.seconds),
            gap=DEFAULT_GAP if gap is None else gap,
            threads=threads,
            msg=msg,
            start=known.values,
            target=known.target,
        )
        outcome = run(m, backend, options)
        status, message = outcome.status, outcome.message + known.note
        bounds = [b for b in (outcome.bound, known.lower_bound) if b is not None]
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
    """What is left of a time limit, but never less than a tenth of it (the solver needs some)."""
    return max(limit_s - spent_s, 0.1 * limit_s)


def _start_is_better(v: Variables, values: dict[pulp.LpVariable, float], outcome) -> bool:
    """Whether the start beats what the solver returned (nothing, or a worse plan).

    A start is a plan whose rows were checked, so it also stands when the
    solver returns nothing, whatever the reason it gives.
    """
    if not outcome.has_values:
        return True
    found = {var: var.varValue for var in v.n.values()}
    return primary_objective(v, values) < primary_objective(v, found) * (1 - REL_OBJECTIVE)


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
    return solve_model(problem, backend, time_limit_s, gap, threads, msg)[0]


def solve_model(
    problem: Problem,
    backend: str = "cbc",
    time_limit_s: float | None = None,
    gap: float | None = None,
    threads: int | None = None,
    msg: bool = False,
    prepare: Callable[[pulp.LpProblem, Variables], Start] | None = None,
) -> tuple[Solution, Variables]:
    """:func:`solve`, also returning the model's variables, which hold the solution's values.

    ``prepare``, if given, is called with the built model and its variables
    and returns a :class:`Start` (a checked plan to start from, a bound
    proven elsewhere): the start is handed to the backend and returned if the
    solver finds nothing better, and the bound reported is the better of the
    two (see :mod:`solvers.twolevel`).
    """
    return _solve(problem, backend, True, time_limit_s, gap, threads, msg, prepare)


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
    return _solve(problem, backend, False, time_limit_s, None, threads, msg)[0]


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
