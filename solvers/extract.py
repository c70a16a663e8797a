"""Turn solved MILP variables into a :class:`~solvers.solution.Solution` (unscaled, rounded, sorted)."""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import pulp

from solvers.solution import EdgeLoad, Flow, Load, Pair, Placement, Solution, clean
from solvers.tolerances import INTEGRALITY, ZERO

if TYPE_CHECKING:
    from solvers.variables import Variables

__all__ = ["cancel_cycles", "empty_solution", "model_stats", "rebalance_forest", "to_solution"]


def model_stats(m: pulp.LpProblem, v: Variables | None = None) -> dict[str, int]:
    """Variables, integer variables, constraints and constraint-matrix nonzeros of ``m``.

    With ``v`` the variables are counted from it, avoiding PuLP's
    ``variables()``, which rescans every constraint.

    Examples
    --------
    >>> m = pulp.LpProblem("t")
    >>> m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(), pulp.LpConstraintLE, "c", 0))
    >>> model_stats(m)
    {'variables': 0, 'integer_variables': 0, 'constraints': 1, 'nonzeros': 0}
    """
    rows = m.constraints()
    if v is None:
        variables = m.variables()
        count = len(variables)
        integers = sum(1 for var in variables if var.cat == pulp.LpInteger)
    else:
        count = len(v.x) + len(v.y) + len(v.n) + len(v.z) + len(v.g) + len(v.f) + len(v.w)
        integers = len(v.n) + len(v.w)
    return {
        "variables": count,
        "integer_variables": integers,
        "constraints": len(rows),
        "nonzeros": sum(
            sum(1 for coef in getattr(row, "expr", row).values() if coef != 0) for row in rows
        ),
    }


def empty_solution(
    status: str,
    message: str,
    *,
    backend: str,
    build_seconds: float,
    solve_seconds: float,
    stats: dict[str, int],
    bound: float | None = None,
) -> Solution:
    """A solution without a placement (infeasible, error, or time limit without incumbent).

    Examples
    --------
    >>> s = empty_solution("error", "no", backend="x", build_seconds=0.0, solve_seconds=0.0,
    ...                    stats={"variables": 0, "integer_variables": 0, "constraints": 0, "nonzeros": 0})
    >>> s.status, s.replicas
    ('error', [])
    """
    return Solution(
        status=status,
        message=message,
        objective=None,
        best_bound=None if bound is None or not math.isfinite(bound) else clean(bound),
        gap=None,
        backend=backend,
        build_seconds=build_seconds,
        solve_seconds=solve_seconds,
        replicas=[],
        loads=[],
        route_rates={},
        flows=[],
        pairs=[],
        edge_loads=[],
        cost_usd_per_hour=0.0,
        power_w=0.0,
        units=0,
        **stats,
    )


def _value(var: pulp.LpVariable) -> float:
    """The solver's value of ``var``, projected onto its bounds (solvers honour bounds only to their
    feasibility tolerance: a load of −1e-5 req/s is a 0), tiny values flushed to 0."""
    value = var.varValue
    if value is None:
        return 0.0
    if var.lowBound is not None:
        value = max(value, var.lowBound)
    if var.upBound is not None:
        value = min(value, var.upBound)
    return 0.0 if abs(value) < ZERO else float(value)


def _digits(value: float) -> float:
    """``value`` to 10 significant digits, with no absolute flush: a load of 1e-12 req/s is a load
    when the demand is 1e-12 req/s (values are flushed in their variable's unit, by :func:`_value`)."""
    return float(f"{value:.10g}")


def cancel_cycles(flow: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    """``flow`` (edge -> amount > 0) of one commodity with every circulation removed.

    Repeatedly finds a directed cycle of edges carrying flow (depth-first, in
    sorted order, so the result is deterministic) and subtracts its smallest
    amount along it, which empties at least one edge. Every node's net flow is
    unchanged and no edge carries more. The MILP's flow tie-break is meant to
    rule circulations out, but it is too small for the solvers' tolerances to
    always see it.

    Examples
    --------
    >>> cancel_cycles({("a", "b"): 3.0, ("b", "c"): 2.0, ("c", "a"): 2.0})
    {('a', 'b'): 1.0}
    """
    flow = {e: amount for e, amount in sorted(flow.items()) if amount > 0}
    while True:
        cycle = _find_cycle(flow)
        if not cycle:
            return flow
        least = min(flow[e] for e in cycle)
        for e in cycle:
            rest = flow[e] - least
            if rest > 0:
                flow[e] = rest
            else:
                del flow[e]


def rebalance_forest(flow: dict[tuple[str, str], float], supply: dict[str, float]) -> dict[tuple[str, str], float]:
    """``flow`` (edge -> amount > 0, circulation-free) re-derived exactly from the nodes' net ``supply``.

    On a forest (no undirected cycle in the edges carrying flow) each edge carries
    exactly what the nodes beyond it supply, so the amounts follow from the
    supplies by peeling leaves. Solvers report values to ~8 significant digits;
    when they return a large circulation (cancelled by :func:`cancel_cycles`) the
    rest of the flow keeps the rounding of the large amounts, which can break
    conservation at 1e-5 of the traffic; this restores it. ``flow`` is returned
    unchanged if its support is not a forest, or if a re-derived amount is not
    positive or differs by more than 1e-4 of the largest amount (then the two
    are not roundings of each other).

    Examples
    --------
    >>> rebalance_forest({("a", "s"): 0.20004358, ("s", "b"): 0.20004}, {"a": 0.20004358, "b": -0.20004358})
    {('a', 's'): 0.20004358, ('s', 'b'): 0.20004358}
    """
    if not flow:
        return flow
    adj: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for e in flow:
        adj[e[0]].append(e)
        adj[e[1]].append(e)
    parent = {x: x for x in adj}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, w in flow:
        ru, rw = root(u), root(w)
        if ru == rw:
            return flow  # an undirected cycle: amounts do not follow from the supplies alone
        parent[ru] = rw
    rest = {x: supply.get(x, 0.0) for x in adj}
    left = {x: set(es) for x, es in adj.items()}
    out: dict[tuple[str, str], float] = {}
    leaves = sorted(x for x, es in left.items() if len(es) == 1)
    while leaves:
        x = leaves.pop()
        if len(left[x]) != 1:
            continue
        e = left[x].pop()
        y = e[1] if e[0] == x else e[0]
        out[e] = rest[x] if e[0] == x else -rest[x]
        rest[y] += rest[x]
        left[y].discard(e)
        if len(left[y]) == 1:
            leaves.append(y)
    top = max(flow.values())
    if len(out) != len(flow) or any(a <= 0 or abs(a - flow[e]) > 1e-4 * top for e, a in out.items()):
        return flow
    return {e: out[e] for e in flow}


def _find_cycle(flow: dict[tuple[str, str], float]) -> list[tuple[str, str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for u, w in flow:  # sorted keys: deterministic successor order
        out[u].append(w)
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in sorted(out):
        if root in state:
            continue
        path, stack = [root], [iter(out[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                nodes = path[path.index(nxt) :] + [nxt]
                return list(pairwise(nodes))
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(out[nxt]))
    return []


def _transfer_supplies(v: Variables) -> dict[str, dict[str, float]]:
    """Per transfer and node, the bytes/s its loads hand out: b·(source-step load − target-step load)."""
    ix = v.index
    out: dict[str, dict[str, float]] = {}
    for t in ix.transfers:
        net: dict[str, float] = defaultdict(float)
        for (c, q, s), var in v.y.items():
            sign = 1.0 if q == t.source else -1.0 if q == t.target else 0.0
            if sign:
                net[ix.site[s].node] += sign * t.bytes_per_request * _value(var) * ix.column[c].capacity[q]
        out[t.name] = dict(net)
    return out


def match_hubs(halves: dict[tuple[str, int, str, str], float]) -> dict[tuple[str, str, str], float]:
    """Pairs (column, part-0 site, part-1 site) -> count, matched from half-pair counts at each hub.

    ``halves`` maps (column, part, site, hub) to pairs. At each hub the part-0
    and part-1 halves (equal totals: the hub balance) are matched in
    site-name order, north-west corner rule: every match is an allowed pair
    (see solvers.index), and the path between its sites uses no edge more
    often than its two halves did.

    Examples
    --------
    >>> halves = {("c", 0, "a", "h"): 2.0, ("c", 0, "b", "h"): 1.0, ("c", 1, "x", "h"): 1.5,
    ...           ("c", 1, "y", "h"): 1.5}
    >>> sorted(match_hubs(halves).items())
    [(('c', 'a', 'x'), 1.5), (('c', 'a', 'y'), 0.5), (('c', 'b', 'y'), 1.0)]
    """
    sides: dict[tuple[str, str], tuple[list, list]] = defaultdict(lambda: ([], []))
    for (c, p, s, h), count in sorted(halves.items()):
        if count > ZERO:
            sides[c, h][p].append([s, count])
    out: dict[tuple[str, str, str], float] = defaultdict(float)
    for (c, _), (zeros, ones) in sorted(sides.items()):
        i = j = 0
        while i < len(zeros) and j < len(ones):
            amount = min(zeros[i][1], ones[j][1])
            out[c, zeros[i][0], ones[j][0]] += amount
            zeros[i][1] -= amount
            ones[j][1] -= amount
            if zeros[i][1] <= ZERO:
                i += 1
            if ones[j][1] <= ZERO:
                j += 1
    return dict(out)


def to_solution(
    v: Variables,
    *,
    status: str,
    message: str,
    backend: str,
    bound: float | None,
    build_seconds: float,
    solve_seconds: float,
    stats: dict[str, int],
    relaxed: bool = False,
) -> Solution:
    """Read the values of ``v`` into a Solution, in the problem's units.

    Flows are multiplied by their transfer's ``flow_unit`` and pairs by their
    column's ``pair_unit`` (values below 1e-9 of a unit count as 0); loads are
    in units of ``load_unit``; row scaling needs no undoing. Flows
    that circulate are cancelled (:func:`cancel_cycles`).

    ``objective`` is the primary objective recomputed from n (rounded to
    integers unless ``relaxed``). ``bound`` is the solver's bound on the
    tie-broken objective; it is clipped to the objective (the tie-break adds
    at most ~1e-7 relative) and the gap is recomputed from the two.
    """
    ix = v.index
    n = {key: (_value(var) if relaxed else float(round(_value(var)))) for key, var in v.n.items()}
    shares = {p: _digits(_value(var)) for p, var in v.pi.items()}
    objective = sum(v.primary[key] * count for key, count in n.items())
    objective += sum(p.cost * shares[p.name] for p in ix.problem.policies)
    units = sum(ix.replica_units(key) * count for key, count in n.items())
    cost = sum(
        ix.site[key[2]].usd_per_hour_per_unit * ix.replica_units(key) * c for key, c in n.items()
    )
    power = sum(
        ix.site[key[2]].power_w_per_unit * ix.replica_units(key) * c for key, c in n.items()
    )

    replicas = (
        []
        if relaxed
        else [
            Placement(column=c, part=p, site=s, replicas=int(count))
            for (c, p, s), count in sorted(n.items())
            if count > 0
        ]
    )
    loads = []
    for (c, q, s), var in sorted(v.y.items()):
        rate = _digits(_value(var) * v.load_unit[c, q])
        if rate:
            loads.append(Load(column=c, step=q, site=s, rate=rate))
    route_rates = {}
    for r in ix.routes:
        rate = _digits(_value(v.x[r.name]) * ix.rate[r.demand])
        if rate:
            route_rates[r.name] = rate
    edge_load: dict[tuple[str, str], float] = defaultdict(float)
    per_transfer: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for (t, e), var in v.f.items():
        per_transfer[t][e] = _value(var)
    supply = _transfer_supplies(v)
    flows = []
    for t in sorted(per_transfer):
        unit = v.flow_unit[t]
        net = {node: amount / unit for node, amount in supply.get(t, {}).items()}
        for e, amount in rebalance_forest(cancel_cycles(per_transfer[t]), net).items():
            value = amount * unit
            edge_load[e] += value
            if value:
                flows.append(Flow(transfer=t, source=e[0], target=e[1], bytes_per_s=_digits(value)))
    pairs = []
    pair_counts = {key: _value(var) * v.pair_unit[key[0]] for key, var in v.z.items()}
    halves = {key: _value(var) * v.pair_unit[key[0]] for key, var in v.g.items()}
    pair_counts.update(match_hubs(halves))
    for (c, s0, s1), count in sorted(pair_counts.items()):
        edges = ix.pair_edges.get((c, s0, s1))
        if edges is None:  # a pair matched at a hub: the path between its two sites
            edges = ix.trips(ix.site[s0].node, ix.site[s1].node)[1]
        for e, times in edges:
            edge_load[e] += ix.column[c].pair_bytes_per_s * count * times
        if clean(count):
            pairs.append(Pair(column=c, source_site=s0, target_site=s1, replicas=clean(count)))
    edge_loads = [
        EdgeLoad(
            source=e[0],
            target=e[1],
            load_bytes_per_s=clean(load),
            capacity_bytes_per_s=ix.capacity[e],
        )
        for e, load in sorted(edge_load.items())
        if clean(load)
    ]

    objective = clean(objective)
    best_bound = gap = None
    if bound is not None and math.isfinite(bound):
        best_bound = clean(min(bound, objective))
    elif status == "optimal":
        best_bound = objective
    if best_bound is not None:
        gap = clean((objective - best_bound) / max(abs(objective), ZERO))
    fields: dict[str, Any] = dict(
        status=status,
        message=message,
        objective=objective,
        best_bound=best_bound,
        gap=gap,
        backend=backend,
        build_seconds=build_seconds,
        solve_seconds=solve_seconds,
        replicas=replicas,
        loads=loads,
        route_rates=route_rates,
        policy_shares={p: s for p, s in sorted(shares.items()) if s},
        flows=flows,
        pairs=pairs,
        edge_loads=edge_loads,
        cost_usd_per_hour=clean(cost),
        power_w=clean(power),
        units=math.ceil(units - INTEGRALITY) if relaxed else round(units),
        **stats,
    )
    return Solution(**fields)
