"""Rows of the placement MILP on the domains' uplinks: KV sent between two domains of one site.

A site is a group of m_s scale-up domains behind one switch, and the network of :mod:`solvers.network_rows`
sees it as one node: a transfer whose source and target steps both run in the site nets out there and
uses no edge. Physically each domain has its own uplink of U_s bytes/s per direction
(``Site.uplink_bytes_per_s``), and KV handed from a prefill replica in domain 1 to a decode replica in
domain 0 of the same group crosses domain 1's uplink, the switch and domain 0's uplink; only KV handed
inside one domain stays on its scale-up fabric.

The MILP counts replicas per site, not per domain (which domain hosts which replica is decided after the
solve, :func:`solvers.packing.pack_into_domains`), so the family bounds each replica by its own share of the
uplinks, which holds whatever the packing. With a_{c,q,s} the load of step q on column c at site s
(requests/s), b_t the bytes per request of transfer t, u_c the units of c's part 0 and D_s the units per
domain, for each column c, site s with m_s ≥ 2 domains and a stated uplink, and direction (out: the
transfers whose source step c serves; in: those whose target step it serves)::

    Σ_{t: q_t ∈ steps(c)} b_t·a_{c,q_t,s}  ≤  (U_s·u_c/D_s)·n_{c,0,s}        (bytes/s)

The load of a pool is spread evenly over its replicas, so each replica sends (receives) at most
U_s·u_c/D_s. A domain holds replicas of at most D_s units in all, so what leaves (enters) it is at most
Σ U_s·u/D_s ≤ U_s; a replica larger than a domain spans u_c/D_s whole domains and sends D_s/u_c of its KV
over each, again ≤ U_s. The row is *sound* — every plan it admits fits every domain's uplink — but it
counts KV a prefill replica hands to a decode replica in its own domain, which never crosses the uplink,
because which replicas share a domain is not a MILP decision. One case is: a binary δ_s lifts the rows of
site s when all of its replicas fit in one domain (Σ u·n ≤ D_s). Replicas are packed largest first, first
fit, and their sizes form a divisibility chain with D_s, so they then all land in one domain: KV between
them stays on its scale-up fabric, and what leaves the site — the transfers' flows on its node's edges —
crosses that one domain's uplink, held to U_s (not the m_s·U_s of the site's edge). Sites of one domain get
no row at all: every byte that leaves the domain leaves the site, on the site's edge, whose capacity row
(U_s) is exact. The plan reports each domain's real use, local KV netted out (``Plan.uplinks``), and the
verifier checks it against U_s (``check_uplinks``).

Hand calculation (issue 30): U_s = 1.25 GB/s, D_s = 8 chips, a prefill replica of u_c = 8 chips, prompts of
32K tokens whose KV is b = 5.2 GB. The row allows 1.25e9·8/8 = 1.25e9 B/s per replica, so
a/n ≤ 1.25e9/5.2e9 = 0.240 requests/s per replica; a pool that prefills 1 request/s needs ⌈1/0.240⌉ =
⌈4.16⌉ = 5 replicas (and its decode pool as many) where the chips alone would take 1 each. With replicas of
4 chips instead, one of each kind fits one domain: δ = 1, the KV stays inside it, 8 chips in all.

Examples
--------
>>> from solvers.milp import solve
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site, Transfer
>>> def probe(uplink, units=8):
...     return Problem(demands=[Demand(name="k", rate=1.0)],
...                    routes=[Route(name="r", demand="k", steps=["pre", "dec"])],
...                    transfers=[Transfer(name="kv", route="r", source="pre", target="dec", bytes_per_request=5.2e9)],
...                    columns=[Column(name="P", parts=[Part(resource="gpu", units=units)], capacity={"pre": 1.0}),
...                             Column(name="D", parts=[Part(resource="gpu", units=units)], capacity={"dec": 1.0})],
...                    sites=[Site(name="s", node="s", resource="gpu", units_per_domain=8, domains=16,
...                                usd_per_hour_per_unit=1.0, power_w_per_unit=1.0, uplink_bytes_per_s=uplink)])
>>> solve(probe(None), backend="highs").units, solve(probe(1.25e9), backend="highs").units
(16, 80)
>>> solve(probe(1.25e9, units=4), backend="highs").units
8
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial

import pulp

from solvers.family import DROP, Family, ReplicaRow, no_columns, no_objective
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.variables import Variables, add_row, add_var

__all__ = ["UPLINK_SHARE", "add_uplink_share", "uplink_rows_of"]

#: The two directions of a domain's uplink, as the rows' keys name them.
DIRECTIONS = ("out", "in")


def uplink_rows_of(v: Variables) -> dict[tuple[str, str, str], tuple[list[tuple[pulp.LpVariable, float]], float]]:
    """(column, site, direction) -> the KV terms b_t·κ_{c,q}·y_{c,q,s} (bytes/s) of its uplink row and the most
    they can add up to, M = Σ b_t·λ_k (no step carries more than its demand's rate), for the sites of ≥ 2
    domains with a stated uplink (module docstring)."""
    ix = v.index
    bytes_of: dict[str, dict[str, float]] = {d: defaultdict(float) for d in DIRECTIONS}
    for t in ix.transfers:
        bytes_of["out"][t.source] += t.bytes_per_request
        bytes_of["in"][t.target] += t.bytes_per_request
    rows: dict[tuple[str, str, str], tuple[list, float]] = {}
    for key in ix.load_keys:
        c, q, s = key
        site = ix.site[s]
        if site.uplink_bytes_per_s is None or site.domains < 2:
            continue
        for direction in DIRECTIONS:
            b = bytes_of[direction].get(q, 0.0)
            if b > 0:
                terms, most = rows.get((c, s, direction), ([], 0.0))
                rows[c, s, direction] = ([*terms, (v.y[key], b * v.load_unit[c, q])],
                                         most + b * ix.rate[ix.route_of_step[q].demand])
    return dict(sorted(rows.items()))


def add_uplink_share(m: pulp.LpProblem, v: Variables) -> None:
    """Uplink share, for each column c, site s of ≥ 2 domains with an uplink, and direction (bytes/s)::

        Σ_{t: q_t ∈ steps(c)} b_t·a_{c,q_t,s} − (U_s·u_c/D_s)·n_{c,0,s} − M_{c,s}·δ_s ≤ 0

    q_t is t's source step for the outbound row, its target step for the inbound one; a = κ·y
    (``Variables.load_unit``); M_{c,s} = Σ b_t·λ_k, the most the KV terms can reach. δ_s ∈ {0, 1} says that
    the whole site fits in one domain; it lifts the rows above and holds the site to one domain, and its KV
    that leaves the site's node to one uplink, for each direction (F·f: the transfers' flows on the node's
    edges e, whose capacities sum to C_s)::

        Σ_{c,p} u_p·n_{c,p,s} + (D_s·m_s − D_s)·δ_s ≤ D_s·m_s
        Σ_t Σ_e F_t·f_{t,e} + (C_s − U_s)·δ_s ≤ C_s

    Rows that cannot bind are left out, which keeps the matrix's range: a column's row when M_{c,s} is at
    most one replica's share (a load needs n ≥ 1), a site's δ when none of its rows is left, and its edge
    rows when Σ_t b_t·λ_k, the most KV that can leave the one domain (what the verifier counts: the net
    out of the site, flows in circles aside), is at most U_s. add_row divides each row by the power of two
    nearest its largest coefficient.
    """
    ix = v.index
    tok = ix.names.tokens
    binding = {}
    for (c, s, direction), (terms, most) in uplink_rows_of(v).items():
        site = ix.site[s]
        share = site.uplink_bytes_per_s * ix.units[c, 0, s] / site.units_per_domain
        replicas = v.n.get((c, 0, s))
        if replicas is not None and most <= share:
            continue  # a load needs n ≥ 1 (replica capacity), and one replica's share carries the most it can send
        binding[c, s, direction] = (terms if replicas is None else [*terms, (replicas, -share)], most)
    one = {s: add_var(m, v, "uplink_one", (s,), [tok["site", s]], ub=1, integer=True)
           for s in sorted({s for _, s, _ in binding})}
    v.extra["uplink_share"] = one
    for (c, s, direction), (terms, most) in binding.items():
        add_row(m, v, "uplink_share", (c, s, direction), [tok["column", c], tok["site", s], direction],
                [*terms, (one[s], -most)], pulp.LpConstraintLE, 0.0)
    kv_most = sum(t.bytes_per_request * ix.rate[ix.route_of_step[t.source].demand] for t in ix.transfers)
    for s, delta in one.items():
        site = ix.site[s]
        whole = float(site.units_per_domain * site.domains)
        units = [(var, float(ix.units[key])) for key, var in v.n.items() if key[2] == s]
        add_row(m, v, "uplink_one_domain", (s,), [tok["site", s]],
                [*units, (delta, whole - site.units_per_domain)], pulp.LpConstraintLE, whole)
        if kv_most <= site.uplink_bytes_per_s:
            continue  # the KV leaving (entering) the one domain is at most Σ b·λ: its uplink carries it
        for direction, end in (("out", 0), ("in", 1)):
            edges = [e for e in ix.edges if e[end] == site.node]
            cap = sum(ix.capacity[e] for e in edges)
            if cap <= site.uplink_bytes_per_s:
                continue  # one uplink carries whatever the node's edges can
            flows = [(var, v.flow_unit[t]) for (t, e), var in v.f.items() if e in edges]
            if flows:
                add_row(m, v, "uplink_one_node", (s, direction), [tok["site", s], direction],
                        [*flows, (delta, cap - site.uplink_bytes_per_s)], pulp.LpConstraintLE, cap)


def _uplinks_tie(problem: Problem) -> list[ReplicaRow] | None:
    """A site in one domain holds every column placed there: it ties their demands (only with transfers,
    whose conservation ties them already)."""
    multi = any(s.uplink_bytes_per_s is not None and s.domains >= 2 for s in problem.sites)
    return None if multi and problem.transfers else []


def _uplink_start(v: Variables, part: Variables, values: dict) -> None:
    """δ_s of a start: the smaller model's, else 1 where the start's replicas at s fit one domain."""
    one = v.extra.get("uplink_share", {})
    theirs = part.extra.get("uplink_share", {})
    ix = v.index
    for s, var in one.items():
        if s in theirs and theirs[s].varValue is not None:
            values[var] = float(round(theirs[s].varValue))
            continue
        units = sum(values.get(n, 0.0) * ix.units[key] for key, n in v.n.items() if key[2] == s)
        values[var] = 1.0 if units <= ix.site[s].units_per_domain else 0.0


def _uplink_needed(c: str, s: str, uplink: float, seen: dict, sol: Solution, slack: float) -> float | None:
    """The per-domain uplink the row of column ``c`` at site ``s`` needs in the elastic plan: the row
    Σ b·a ≤ (U·u/D)·(n + ω) holds with U' = U·(1 + ω/n) in place of U (``seen``: the plan's replicas, read
    once per solution)."""
    if seen.get("of") is not sol:
        seen.update(of=sol, n={(p.column, p.site): p.replicas for p in sol.replicas if p.part == 0})
    n = seen["n"].get((c, s), 0)
    return None if n <= 0 else uplink * (1.0 + slack / n)


def _uplink_elastic(em) -> None:
    """Let each row's KV exceed its replicas' share by ω replica shares (ω ≥ 0), at W_LIMIT·u/(2·D·m) per
    share: half of what one more replica's units cost as a share of the site's, so that a shortfall the
    uplinks alone explain is said to be theirs, not the chips' (:mod:`solvers.elastic`). The diagnosis
    takes no one-domain credit: δ is fixed to 0 and the one-domain rows are released — with δ = 0 they
    restate the site's units and its edges' bandwidth, which the elastic model lets grow."""
    for delta in em.variables.extra.get("uplink_share", {}).values():
        delta.upBound = 0
    for label in ("uplink_one_domain", "uplink_one_node"):
        for name, _, row in em.rows(label):
            em.release(name, "uplink_one", row)
    ix = em.variables.index
    seen: dict = {}
    for name, key, row in em.rows("uplink_share"):
        c, s, _ = key
        site = ix.site[s]
        units = ix.units[c, 0, s]
        share = site.uplink_bytes_per_s * units / site.units_per_domain
        weight = units / (2.0 * site.units_per_domain * max(site.domains, 1))
        em.relax_excess("uplink_share", "uplink", name, key, row, share, site.uplink_bytes_per_s, "B/s",
                        partial(_uplink_needed, c, s, site.uplink_bytes_per_s, seen), weight,
                        words="the uplinks of domain group {1} ({2}bound KV of column {0})")


#: Dropped on the collapsed fleet (sites merged, no network): leaving rows out is a relaxation, so the
#: collapsed optimum stays a lower bound.
UPLINK_SHARE = Family(name="uplink_share", check="check_uplinks", rows=add_uplink_share, objective=no_objective,
                      collapse=DROP, coupling=_uplinks_tie, elastic=_uplink_elastic, start=_uplink_start,
                      columns=no_columns)
