"""Reference solver for tiny problems: enumerate replica counts, check the rest with an LP.

Written independently of :mod:`solvers.milp` (own unscaled LP, own
enumeration) so that agreement between the two is evidence; paths are the one
routing definition, :class:`topology.routing.Routing`, tested on its own.

Every integer vector n with 0 ≤ n_{c,p,s} ≤ D_s·m_s // u_p is enumerated;
vectors violating a family's rows over replica counts (``Family.coupling``:
units per site, the power cap, the budget, …) are dropped;
the rest are sorted by objective and the first whose continuous part
(x, a, z, f) is feasible is optimal. The continuous part is this module's own
LP: route split, step coverage, replica capacity, pairs, transfers and edges
(:data:`OWN`); a family that is neither of these nor stated over replica
counts (KV policies, a pool limit, a failure scenario) is refused. Demands with ``single_resource`` are
checked for every choice of resource (loads of other resources bound to 0). The LP has n as fixed variables and is
re-solved with new bounds for each vector.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import defaultdict
from itertools import pairwise

import networkx as nx
import pulp

from solvers.family import Family, ReplicaRow
from solvers.model import families_of
from solvers.problem import Problem, Site, unit_weight
from solvers.solution import Flow, Load, Pair, Placement, Solution, clean
from solvers.tolerances import REL_FEASIBILITY, TIE_BREAK
from topology.routing import Routing

__all__ = ["OWN", "allowed_pairs", "bruteforce", "replica_limits", "replicas_feasible"]

_GB = 1e9  # flows in the LP are in GB/s

#: The families this module checks with its own LP (and its own objective), not from their rows.
OWN = frozenset({"route_split", "step_coverage", "replica_capacity", "single_resource", "pair_balance",
                 "transfer_conservation", "edge_capacity", "primary_objective"})


def replica_limits(problem: Problem, families: tuple[Family, ...] | None = None) -> list[ReplicaRow]:
    """The rows over replica counts of every family of ``families`` (default the base families) but
    :data:`OWN`'s.

    Raises
    ------
    ValueError
        A family neither in :data:`OWN` nor stated over replica counts.
    """
    rows: list[ReplicaRow] = []
    for f in families_of() if families is None else families:
        if f.name in OWN:
            continue
        mine = f.coupling(problem)
        if mine is None:
            raise ValueError(f"bruteforce: family {f.name!r} is not stated over replica counts; not checked here")
        rows += mine
    return rows


def _within(rows: list[ReplicaRow], site: dict[str, Site], units: dict, counts: list) -> bool:
    """Whether replica counts ``counts`` (a list of ((column, part, site), count)) meet every row of ``rows``
    (each linear in the units placed per site)."""
    placed: dict[str, float] = defaultdict(float)
    for (c, p, s), n in counts:
        placed[s] += units[c, p] * n
    return all(sum(row.per_unit(site[s]) * u for s, u in placed.items()) <= row.rhs * (1 + REL_FEASIBILITY)
               for row in rows)


def allowed_pairs(problem: Problem) -> dict[str, list[tuple[str, str, list[tuple[str, str]]]]]:
    """For each two-part column: (site of part 0, site of part 1, edges used both ways) within its latency limit.

    Paths are networkx Dijkstra paths by ``latency_s``; both directions must
    exist and be within ``pair_max_latency_s``.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> s = lambda n, r: Site(name=n, node=n, resource=r, units_per_domain=1, domains=1,
    ...                       usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)
    >>> col = Column(name="c", parts=[Part(resource="a", units=1), Part(resource="b", units=1)],
    ...              capacity={"q": 1.0})
    >>> p = Problem(demands=[Demand(name="d", rate=1.0)], routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[col], sites=[s("x", "a"), s("y", "b")])
    >>> allowed_pairs(p)
    {'c': []}
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(s.node for s in problem.sites)
    for e in problem.edges:
        if e.source != e.target:
            graph.add_edge(e.source, e.target, latency_s=e.latency_s)
    routing = Routing(graph)
    out = {}
    for c in problem.columns:
        if len(c.parts) != 2:
            continue
        out[c.name] = []
        for s0 in problem.sites:
            if s0.resource != c.parts[0].resource:
                continue
            for s1 in problem.sites:
                if s1.resource != c.parts[1].resource:
                    continue
                there, back = routing.path(s0.node, s1.node), routing.path(s1.node, s0.node)
                if there is None or back is None:
                    continue
                lat_s = max(routing.latency_s(s0.node, s1.node), routing.latency_s(s1.node, s0.node))
                if lat_s <= c.pair_max_latency_s * (1 + REL_FEASIBILITY):
                    edges = list(pairwise(there)) + list(pairwise(back))
                    out[c.name].append((s0.name, s1.name, edges))
    return out


def bruteforce(problem: Problem, backend: str = "highs", max_vectors: int = 50_000,
               families: tuple[Family, ...] | None = None) -> Solution:
    """Exact optimum of a tiny problem by enumeration (see the module docstring).

    Parameters
    ----------
    problem : Problem
        A problem with a handful of integer replica variables.
    backend : str
        ``"highs"`` or ``"cbc"``, the LP solver of the feasibility checks.
    max_vectors : int
        Refuse (``ValueError``) problems with more candidate vectors.
    families : tuple of Family, optional
        The model's families (default the base families); each must be in :data:`OWN` or stated over
        replica counts (:func:`replica_limits`).

    Returns
    -------
    Solution
        ``optimal`` with objective, replicas, loads, route rates, flows and
        pairs, or ``infeasible``. Model-size fields describe the LP.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.5, power_w_per_unit=1.0)])
    >>> bruteforce(p).objective
    3.0
    """
    start = time.perf_counter()
    site = {s.name: s for s in problem.sites}
    limits = replica_limits(problem, families)
    pairs = allowed_pairs(problem)
    paired = {c: ({p[0] for p in ps}, {p[1] for p in ps}) for c, ps in pairs.items()}

    # integer variables and their upper bounds
    keys, bounds = [], []
    for c in problem.columns:
        for p, part in enumerate(c.parts):
            for s in problem.sites:
                ub = (
                    s.units_per_domain * s.domains // part.units
                    if s.resource == part.resource
                    else 0
                )
                if c.name in paired and s.name not in paired[c.name][p]:
                    ub = 0  # no allowed partner site: pair balance forces n = 0
                if ub > 0:
                    keys.append((c.name, p, s.name))
                    bounds.append(ub)
    units_of = {(c.name, p): part.units for c in problem.columns for p, part in enumerate(c.parts)}
    if math.prod(b + 1 for b in bounds) > max_vectors:
        raise ValueError(
            f"bruteforce: {math.prod(b + 1 for b in bounds)} vectors exceed max_vectors={max_vectors}"
        )

    candidates = []
    for vec in itertools.product(*(range(b + 1) for b in bounds)):
        power = cost = objective = 0.0
        for (c, p, s), count in zip(keys, vec):
            u = units_of[c, p] * count
            power += site[s].power_w_per_unit * u
            cost += site[s].usd_per_hour_per_unit * u
            objective += unit_weight(problem.objective, site[s]) * u
        if not _within(limits, site, units_of, list(zip(keys, vec))):
            continue
        candidates.append((objective, vec, cost, power))
    candidates.sort()

    lp, n_vars, values = _feasibility_lp(problem, keys, pairs)
    solver = _lp_solver(backend)
    for objective, vec, cost, power in candidates:
        for key, count in zip(keys, vec):
            n_vars[key].lowBound = n_vars[key].upBound = count
        if _some_assignment_feasible(problem, lp, values, solver):
            return _solution(
                problem,
                keys,
                vec,
                objective,
                cost,
                power,
                values,
                time.perf_counter() - start,
                backend,
                lp,
            )
    return Solution(
        status="infeasible",
        message=f"bruteforce: none of {len(candidates)} vectors feasible",
        objective=None,
        best_bound=None,
        gap=None,
        backend=f"bruteforce-{backend}",
        build_seconds=0.0,
        solve_seconds=time.perf_counter() - start,
        variables=len(keys),
        integer_variables=len(keys),
        constraints=len(lp.constraints()),
        nonzeros=0,
        replicas=[],
        loads=[],
        route_rates={},
        flows=[],
        pairs=[],
        edge_loads=[],
        cost_usd_per_hour=0.0,
        power_w=0.0,
        units=0,
    )


def replicas_feasible(
    problem: Problem, replicas: dict[tuple[str, int, str], int], backend: str = "highs",
    families: tuple[Family, ...] | None = None,
) -> bool:
    """Whether fixed replica counts admit loads, pairs and flows serving every demand.

    Checks the continuous part with this module's own LP, and the families' rows over replica
    counts (:func:`replica_limits`: units per site, power cap, budget, …) directly.

    Parameters
    ----------
    replicas : dict
        ``(column, part, site) -> count``; missing keys are 0.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.5, power_w_per_unit=1.0)])
    >>> replicas_feasible(p, {("c", 0, "s"): 1}), replicas_feasible(p, {("c", 0, "s"): 2})
    (False, True)
    """
    site = {s.name: s for s in problem.sites}
    units = {(c.name, p): part.units for c in problem.columns for p, part in enumerate(c.parts)}
    resource = {
        (c.name, p): part.resource for c in problem.columns for p, part in enumerate(c.parts)
    }
    if any(count and resource[c, p] != site[s].resource for (c, p, s), count in replicas.items()):
        return False
    if not _within(replica_limits(problem, families), site, units, list(replicas.items())):
        return False
    pairs = allowed_pairs(problem)
    keys = sorted(replicas)
    if any(
        c in pairs and s not in {pair[p] for pair in pairs[c]}
        for c, p, s in keys
        if replicas[c, p, s] > 0
    ):
        return False
    lp, n_vars, values = _feasibility_lp(problem, keys, pairs)
    for key in keys:
        n_vars[key].lowBound = n_vars[key].upBound = replicas[key]
    return _some_assignment_feasible(problem, lp, values, _lp_solver(backend))


def _some_assignment_feasible(problem: Problem, lp, values, solver) -> bool:
    """Solve the LP once per choice of resource for the single-resource demands.

    A demand with ``single_resource`` may only load columns whose part 0 is
    of the chosen resource; the loads of the other columns get bound 0.
    """
    col = values["col"]
    step_demand = {q: r.demand for r in problem.routes for q in r.steps}
    singles = sorted(
        d.name for d in problem.demands if getattr(d, "single_resource", False) and d.rate > 0
    )
    options = {
        k: sorted({col[c].parts[0].resource for (c, q, _) in values["a"] if step_demand[q] == k})
        for k in singles
    }
    for choice in itertools.product(*(options[k] for k in singles)):
        chosen = dict(zip(singles, choice))
        for (c, q, _), var in values["a"].items():
            k = step_demand[q]
            var.upBound = 0 if k in chosen and col[c].parts[0].resource != chosen[k] else None
        lp.solve(solver)
        if lp.status == pulp.LpStatusOptimal:
            return True
    return False


def _lp_solver(backend: str) -> pulp.LpSolver:
    if backend == "highs":
        return pulp.HiGHS(msg=False)
    if backend == "cbc":
        try:
            return pulp.PULP_CBC_CMD(msg=False, _skip_v4_deprecation=True)
        except TypeError:  # PuLP without the v4 deprecation switch
            return pulp.PULP_CBC_CMD(msg=False)
    raise ValueError(f"bruteforce: backend must be 'highs' or 'cbc', got {backend!r}")


def _feasibility_lp(problem: Problem, keys, pairs):
    """LP in x (req/s), a (req/s), z (pairs), f (GB/s) with n as variables to be fixed."""
    lp = pulp.LpProblem("bruteforce", pulp.LpMinimize)
    var = lp.add_variable
    n = {k: var(f"n_{i}", 0, 0) for i, k in enumerate(keys)}

    def n_of(c, p, s):
        return n.get((c, p, s))

    def row(terms, sense, rhs, name):
        expr = defaultdict(float)
        for v, coef in terms:
            if v is not None:
                expr[v] += coef
        lp.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(dict(expr)), sense, name, rhs))

    x = {r.name: var(f"x_{i}", 0) for i, r in enumerate(problem.routes)}
    route_steps = {q: r for r in problem.routes for q in r.steps}
    a = {}
    for c in problem.columns:
        for q in c.capacity:
            if q in route_steps:
                for s in problem.sites:
                    if s.resource == c.parts[0].resource:
                        a[c.name, q, s.name] = var(f"a_{len(a)}", 0)
    z = {}
    for c, ps in pairs.items():
        for s0, s1, _ in ps:
            z[c, s0, s1] = var(f"z_{len(z)}", 0)
    edges = [(e.source, e.target) for e in problem.edges]
    f = {}
    for t in problem.transfers:
        if t.bytes_per_request > 0:
            for e in edges:
                f[t.name, e] = var(f"f_{len(f)}", 0)

    ri = 0
    for d in problem.demands:
        row(
            [(x[r.name], 1.0) for r in problem.routes if r.demand == d.name],
            pulp.LpConstraintEQ,
            d.rate,
            f"d{ri}",
        )
        ri += 1
    for q, r in route_steps.items():
        row(
            [(v, 1.0) for (c, qq, s), v in a.items() if qq == q] + [(x[r.name], -1.0)],
            pulp.LpConstraintEQ,
            0,
            f"q{ri}",
        )
        ri += 1
    col = {c.name: c for c in problem.columns}
    for c in problem.columns:
        for s in problem.sites:
            terms = [
                (v, 1.0 / col[cc].capacity[q])
                for (cc, q, ss), v in a.items()
                if cc == c.name and ss == s.name
            ]
            if terms:
                row(terms + [(n_of(c.name, 0, s.name), -1.0)], pulp.LpConstraintLE, 0, f"cap{ri}")
                ri += 1
    for c in pairs:
        for p in (0, 1):
            for s in problem.sites:
                if s.resource != col[c].parts[p].resource:
                    continue
                terms = [
                    (v, 1.0) for (cc, s0, s1), v in z.items() if cc == c and (s0, s1)[p] == s.name
                ]
                row(terms + [(n_of(c, p, s.name), -1.0)], pulp.LpConstraintEQ, 0, f"pair{ri}")
                ri += 1
    nodes = sorted(
        {s.node for s in problem.sites} | set(problem.nodes) | {v for e in edges for v in e}
    )
    node_of = {s.name: s.node for s in problem.sites}
    for t in problem.transfers:
        if t.bytes_per_request <= 0:
            continue
        for node in nodes:
            terms = [(f[t.name, e], 1.0) for e in edges if e[0] == node]
            terms += [(f[t.name, e], -1.0) for e in edges if e[1] == node]
            for (_, q, s), v in a.items():
                if node_of[s] == node and q == t.source:
                    terms.append((v, -t.bytes_per_request / _GB))
                if node_of[s] == node and q == t.target:
                    terms.append((v, t.bytes_per_request / _GB))
            row(terms, pulp.LpConstraintEQ, 0, f"flow{ri}")
            ri += 1
    for e in problem.edges:
        key = (e.source, e.target)
        terms = [(v, 1.0) for (t, ee), v in f.items() if ee == key]
        for c, s0, s1, used in (
            (c, s0, s1, used) for c, ps in pairs.items() for s0, s1, used in ps
        ):
            terms += [(z[c, s0, s1], col[c].pair_bytes_per_s / _GB)] * used.count(key)
        row(terms, pulp.LpConstraintLE, e.capacity_bytes_per_s / _GB, f"edge{ri}")
        ri += 1
    lp.setObjective(pulp.LpAffineExpression({v: TIE_BREAK for v in f.values()}))
    return lp, n, {"x": x, "a": a, "z": z, "f": f, "col": col}


def _solution(problem, keys, vec, objective, cost, power, values, seconds, backend, lp) -> Solution:
    col = values["col"]
    units = sum(col[c].parts[p].units * count for (c, p, _), count in zip(keys, vec))
    replicas = [
        Placement(column=c, part=p, site=s, replicas=count)
        for (c, p, s), count in sorted(zip(keys, vec))
        if count > 0
    ]
    rate = lambda v: clean(v.varValue or 0.0)
    loads = [
        Load(column=c, step=q, site=s, rate=rate(v))
        for (c, q, s), v in sorted(values["a"].items())
        if rate(v)
    ]
    flows = [
        Flow(transfer=t, source=e[0], target=e[1], bytes_per_s=clean((v.varValue or 0.0) * _GB))
        for (t, e), v in sorted(values["f"].items())
        if rate(v)
    ]
    pairs = [
        Pair(column=c, source_site=s0, target_site=s1, replicas=rate(v))
        for (c, s0, s1), v in sorted(values["z"].items())
        if rate(v)
    ]
    return Solution(
        status="optimal",
        message="bruteforce",
        objective=clean(objective),
        best_bound=clean(objective),
        gap=0.0,
        backend=f"bruteforce-{backend}",
        build_seconds=0.0,
        solve_seconds=seconds,
        variables=len(keys),
        integer_variables=len(keys),
        constraints=len(lp.constraints()),
        nonzeros=0,
        replicas=replicas,
        loads=loads,
        route_rates={r: rate(v) for r, v in sorted(values["x"].items()) if rate(v)},
        flows=flows,
        pairs=pairs,
        edge_loads=[],
        cost_usd_per_hour=clean(cost),
        power_w=clean(power),
        units=units,
    )
