"""Rows of the placement MILP on the network: pair balance, transfer conservation, edge capacity.

One function per constraint family (notation: :mod:`solvers.problem`; scaling:
:mod:`solvers.model`; pairs, half-pairs at hubs and their paths:
:mod:`solvers.index`), each declared as a :class:`~solvers.family.Family` beside it.
"""

from __future__ import annotations

import math
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
from solvers.kv_rows import policy_edge_terms
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.variables import Key3, Variables, add_row

__all__ = ["EDGE_CAPACITY", "NEGLIGIBLE", "PAIR_BALANCE", "TRANSFER_CONSERVATION", "add_edge_capacity",
           "add_pair_balance", "add_transfer_conservation"]

#: Pair traffic is left out of an edge row while the most it could ever put on
#: the edge, summed over the terms left out, stays below this share of the
#: edge's capacity (see add_edge_capacity).
NEGLIGIBLE = 1e-9


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
                coef = sign * t.bytes_per_request * v.load_unit[key[0], step]
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
    for e, terms in policy_edge_terms(v).items():  # KV reloads and offloads of a remote store
        load[e] += terms
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


# ---- the families ------------------------------------------------------------------------------------


def _transfers_tie(problem: Problem) -> list[ReplicaRow] | None:
    """Transfers meet at the nodes of every route's flows: they tie the demands they belong to."""
    return None if problem.transfers else []


def _pairs_tie(problem: Problem) -> list[ReplicaRow] | None:
    """Pair traffic shares the edges' capacity rows: it ties the demands of the columns that send it."""
    paired = any(c.pair_bytes_per_s > 0 for c in problem.columns)
    return None if paired and any(e.capacity_bytes_per_s > 0 for e in problem.edges) else []


def _edge_needed(e: tuple[str, str], cap: float, loads: dict, sol: Solution, slack: float) -> float:
    """The bandwidth edge ``e`` carries in the elastic plan, at least its capacity grown by the slack
    (``loads``: the plan's edge loads, read once per solution)."""
    if loads.get("of") is not sol:
        loads.update(of=sol, at={(x.source, x.target): x.load_bytes_per_s for x in sol.edge_loads})
    return max(loads["at"].get(e, 0.0), cap * (1 + slack))


def _edge_elastic(em) -> None:
    """Lift f ≤ cap_e/F_t (it restates the row) and let each edge's bandwidth grow."""
    v = em.variables
    for var in v.f.values():
        var.upBound = None
    loads: dict = {}
    for name, key, row in em.rows("edge_capacity"):
        e = tuple(key)
        em.relax_limit("edge_capacity", "edge", name, key, row, "B/s",
                       partial(_edge_needed, e, v.index.capacity[e], loads))


PAIR_BALANCE = Family(name="pair_balance", check="check_pairing", rows=add_pair_balance, objective=no_objective,
                      collapse=KEEP, coupling=separable, elastic=hard, start=no_start, columns=no_columns)
TRANSFER_CONSERVATION = Family(name="transfer_conservation", check="check_network", rows=add_transfer_conservation,
                               objective=no_objective, collapse=KEEP, coupling=_transfers_tie, elastic=hard,
                               start=no_start, columns=no_columns)
EDGE_CAPACITY = Family(name="edge_capacity", check="check_network", rows=add_edge_capacity, objective=no_objective,
                       collapse=KEEP, coupling=_pairs_tie, elastic=_edge_elastic, start=no_start, columns=no_columns)
