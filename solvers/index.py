"""Index maps precomputed once per problem for the MILP builder.

Everything the constraint functions of :mod:`solvers.milp` iterate over is
built here, in deterministic (name-sorted) order: which variables exist, the
lowest-latency paths and the allowed site pairs of two-part columns, and the
LP-safe names of every entity.

Reductions (all exact, because every objective coefficient is ≥ 0 and n = 0
satisfies every constraint it appears in):

* demands of rate 0 and their routes, transfers and steps are left out;
* a column keeps only sites that can host one replica of the part
  (D_s·m_s ≥ u_p) and, for two-part columns, that appear in an allowed pair;
* a column that then serves no remaining step gets no variables (n = 0);
* a ``single_resource`` demand whose steps only one part-0 resource can
  serve needs no choice variables.

Pairs of a two-part column: site s (part 0) and s' (part 1) may pair when the
lowest-latency paths node(s)→node(s') *and* node(s')→node(s) both exist and
both have latency ≤ ``pair_max_latency_s`` (traffic flows both ways), and,
if the column sends pair traffic, neither path crosses a zero-capacity edge.
Sites on the same node pair over an empty path (latency 0, no edge).
Paths and latencies are :class:`topology.routing.Routing`'s (integer
picoseconds, ties to fewer hops, then to the smallest node sequence), the
same definition the verifier uses.

Hubs. On a *tree* fleet (the graph without directions is a tree and every
link has a reverse of equal latency — every generated and shipped fleet) a
pair's path is s → h → s' with h the top of the path (the lowest common
ancestor, the tree rooted at its centre). Instead of one pair variable per
(s, s') the pairs are then split into halves at hubs (h, a), a = latency
s → h: a half (s, (h, a)) for part 0 and (s', (h, a)) for part 1 when
a + latency(h → s') ≤ the limit, with a balance per hub (see
``solvers.milp.add_pair_balance``). Every matching at a hub meets the
latency limit and uses at most the edges of its two halves (the walk
s → h → s' contains the path s → s'), and every allowed pair is one half at
its top node and one half back down, with exactly its own edges, so the
optimum is the same — with O(sites × depth) variables per column instead of
O(sites²) (2.3 M pair variables → 0.33 M half-pairs on a 1,000-domain fleet).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal

import networkx as nx

from solvers.limits import tick
from solvers.problem import Column, Problem, Route, Site, Transfer
from topology.routing import NodePath, Routing, latency_ps

__all__ = ["PAIR_SPLITS", "HubTree", "Index", "Names", "PairSplit"]

#: How pairs of two-part columns are modelled on tree fleets: "auto" (half-pairs
#: at hubs when they are fewer than the site pairs), "hubs" (always) or
#: "pairs" (never). The optimum is the same; tests compare the three.
PairSplit = Literal["auto", "hubs", "pairs"]
PAIR_SPLITS: tuple[str, ...] = ("auto", "hubs", "pairs")
EdgeKey = tuple[str, str]
EdgeUse = tuple[tuple[EdgeKey, int], ...]  # edges of a round trip and how often each is crossed

_UNSAFE = re.compile(r"[^A-Za-z0-9.]+")
_MAX_TOKEN = 30  # 3 tokens + prefix stay under PuLP's 100-character LP name limit


class Names:
    """LP-safe tokens for entity names, unique per kind and deterministic.

    A token keeps letters, digits and dots, joins the rest with single
    underscores and never starts or ends with one, so ``"__"`` separates the
    tokens of a variable name unambiguously. Long names are cut and suffixed
    with a hash; collisions get ``_2``, ``_3``, ... in sorted order of the
    original names. ``tokens[kind, original]`` is ``token(kind, original)``
    without a method call (the model builder looks up thousands).

    Examples
    --------
    >>> names = Names({"site": ["a b", "a-b", "x"]})
    >>> names.token("site", "a b"), names.token("site", "a-b"), names.tokens["site", "x"]
    ('a_b', 'a_b_2', 'x')
    """

    def __init__(self, kinds: dict[str, list[str]]):
        self._tokens: dict[tuple[str, str], str] = {}
        self.tokens = self._tokens  # read-only by convention
        for kind, originals in kinds.items():
            used: set[str] = set()
            for original in sorted(set(originals)):
                base = _sanitise(original)
                token, k = base, 1
                while token in used:
                    k += 1
                    token = f"{base}_{k}"
                used.add(token)
                self._tokens[kind, original] = token

    def token(self, kind: str, original: str) -> str:
        """The token of ``original`` among entities of ``kind``."""
        return self._tokens[kind, original]


def _sanitise(original: str) -> str:
    token = _UNSAFE.sub("_", original).strip("_") or "x"
    if len(token) > _MAX_TOKEN - 8:
        digest = hashlib.sha1(original.encode()).hexdigest()[:7]
        token = f"{token[: _MAX_TOKEN - 8].rstrip('_')}_{digest}"
    return token


def _path_edges(path: NodePath) -> list[EdgeKey]:
    return list(pairwise(path))

@dataclass
class HubTree:
    """A tree fleet rooted at its centre: each node's ancestors (itself first) with one-way latency
    and round-trip edges to each, for the hub split of pairs (see the module docstring).

    Examples
    --------
    >>> g = nx.DiGraph()
    >>> for u, v in [("a", "leaf"), ("b", "leaf"), ("leaf", "spine"), ("c", "spine")]:
    ...     g.add_edge(u, v, ps=2); g.add_edge(v, u, ps=2)
    >>> t = HubTree.of(g, {e: 1.0 for e in g.edges})
    >>> [(h, ps) for h, ps, _, _ in t.up["a"]], [(h, ps) for h, ps, _, _ in t.up["c"]]  # rooted at leaf
    ([('a', 0), ('leaf', 2)], [('c', 0), ('spine', 2), ('leaf', 4)])
    >>> HubTree.of(nx.DiGraph([("a", "b")]), {("a", "b"): 1.0}) is None  # no reverse link
    True
    """

    up: dict[str, list[tuple[str, int, EdgeUse, bool]]]  # node -> (hub, ps, round-trip edges, blocked)

    @classmethod
    def of(cls, graph: nx.DiGraph, capacity: dict[EdgeKey, float]) -> HubTree | None:
        """The rooted tree of ``graph``, or None when it is not a tree with symmetric links."""
        if graph.number_of_nodes() == 0:
            return None
        for u, w, attrs in graph.edges(data=True):
            if not graph.has_edge(w, u) or graph.edges[w, u]["ps"] != attrs["ps"]:
                return None
        undirected = graph.to_undirected(as_view=True)
        if not nx.is_tree(undirected):
            return None
        root = _centre(undirected)
        parent = {root: None}
        order = [root]
        for u in order:  # breadth first from the root, neighbours in name order
            for w in sorted(undirected[u]):
                if w not in parent:
                    parent[w] = u
                    order.append(w)
        up: dict[str, list[tuple[str, int, EdgeUse, bool]]] = {}
        for node in order:
            chain = [(node, 0, (), False)]
            p = parent[node]
            if p is not None:
                edges = Counter({(node, p): 1, (p, node): 1})
                blocked = capacity.get((node, p), 0) <= 0 or capacity.get((p, node), 0) <= 0
                ps = graph.edges[node, p]["ps"]
                for hub, hub_ps, hub_edges, hub_blocked in up[p]:
                    both = edges + Counter(dict(hub_edges))
                    chain.append((hub, ps + hub_ps, tuple(sorted(both.items())), blocked or hub_blocked))
            up[node] = chain
        return cls(up)

    def halves(self, hosts: list[list[Site]], limit_ps: float, traffic: bool) -> list[tuple[int, str, str, EdgeUse]]:
        """Half-pairs (part, site, hub, round-trip edges) of a column whose parts may sit on ``hosts``.

        Hub ``"h@a"`` takes part-0 sites at latency a below h and part-1 sites
        at most ``limit_ps`` − a below it; a hub with no site on either side is
        left out, and with ``traffic`` no half crosses a zero-capacity edge.
        """
        side0: dict[tuple[str, int], list[tuple[str, EdgeUse]]] = defaultdict(list)
        side1: dict[str, list[tuple[int, str, EdgeUse]]] = defaultdict(list)
        for s in hosts[0]:
            for hub, ps, edges, blocked in self.up.get(s.node, ()):
                if ps <= limit_ps and not (traffic and blocked):
                    side0[hub, ps].append((s.name, edges))
        for s in hosts[1]:
            for hub, ps, edges, blocked in self.up.get(s.node, ()):
                if ps <= limit_ps and not (traffic and blocked):
                    side1[hub].append((ps, s.name, edges))
        out = []
        for (hub, a), zeros in sorted(side0.items()):
            ones = [(name, edges) for b, name, edges in side1[hub] if a + b <= limit_ps]
            if ones:
                tag = f"{hub}@{a}"
                out += [(0, name, tag, edges) for name, edges in zeros]
                out += [(1, name, tag, edges) for name, edges in ones]
        return out


def _centre(tree: nx.Graph) -> str:
    """A centre of a tree (the middle of a longest path; two BFS), the smaller name on a tie."""
    start = min(tree.nodes)
    far = nx.single_source_shortest_path_length(tree, start)
    a = min(far, key=lambda n: (-far[n], n))
    path = nx.single_source_shortest_path(tree, a)
    dist = {n: len(p) - 1 for n, p in path.items()}
    b = min(dist, key=lambda n: (-dist[n], n))
    longest = path[b]
    middle = [longest[(len(longest) - 1) // 2], longest[len(longest) // 2]]
    return min(middle)


@dataclass
class _Demands:
    """The demands with a rate and what serves them (step 1 of :meth:`Index.from_problem`)."""

    names: set[str]
    rate: dict[str, float]  # demand -> λ_k, active demands only
    routes: list[Route]  # active routes, by name
    routes_of: dict[str, list[Route]]  # demand -> all its routes
    all_steps: dict[str, Route]  # step -> its route (every route)
    active_steps: dict[str, Route]  # step -> its route (active routes only)
    infeasible: list[str]


@dataclass
class _Network:
    """Nodes, edge capacities and the routing of the problem's network (step 3)."""

    nodes: set[str]
    capacity: dict[EdgeKey, float]
    edges: list[EdgeKey]  # capacity > 0, no self-loops
    graph: nx.DiGraph  # edge attributes latency_s and ps (integer picoseconds)
    routing: Routing


@dataclass
class _Placements:
    """The variables' keys of every active column (step 4)."""

    columns: list[Column] = field(default_factory=list)
    load_keys: list[tuple[str, str, str]] = field(default_factory=list)
    replica_keys: list[tuple[str, int, str]] = field(default_factory=list)
    replica_ub: dict[tuple[str, int, str], int] = field(default_factory=dict)
    units: dict[tuple[str, int, str], int] = field(default_factory=dict)
    pair_keys: list[tuple[str, str, str]] = field(default_factory=list)
    pair_edges: dict[tuple[str, str, str], EdgeUse] = field(default_factory=dict)
    hub_keys: list[tuple[str, int, str, str]] = field(default_factory=list)
    hub_edges: dict[tuple[str, int, str, str], EdgeUse] = field(default_factory=dict)


class _RoundTrips:
    """Round trips between two nodes along the routing's paths, cached per node pair.

    ``trips(a, b)`` is (worst one-way latency in ps, edges used there and back
    with multiplicity, whether any of them has zero capacity), or None when
    either direction is unreachable.
    """

    def __init__(self, routing: Routing, capacity: dict[EdgeKey, float]):
        self._routing = routing
        self._capacity = capacity
        self._trips: dict[tuple[str, str], tuple[int, EdgeUse, bool] | None] = {}

    def __call__(self, a: str, b: str) -> tuple[int, EdgeUse, bool] | None:
        if (a, b) not in self._trips:
            there, back = self._routing.from_source(a).get(b), self._routing.from_source(b).get(a)
            if there is None or back is None:
                self._trips[a, b] = None
            else:
                used = Counter(_path_edges(there[1]) + _path_edges(back[1]))
                blocked = any(self._capacity[e] <= 0 for e in used)
                self._trips[a, b] = (max(there[0], back[0]), tuple(sorted(used.items())), blocked)
        return self._trips[a, b]


@dataclass
class Index:
    """Deterministic index maps of a :class:`Problem` (see the module docstring)."""

    problem: Problem
    names: Names
    rate: dict[str, float]  # demand -> λ_k (requests/s), active demands only
    routes: list[Route]  # active routes
    route_of_step: dict[str, Route]
    site: dict[str, Site]
    columns: list[Column]  # active columns
    column: dict[str, Column]
    load_keys: list[tuple[str, str, str]]  # (column, step, site) of y / a
    replica_keys: list[tuple[str, int, str]]  # (column, part, site) of n
    replica_ub: dict[tuple[str, int, str], int]
    units: dict[tuple[str, int, str], int]  # u_p of each replica key, as replica_units()
    pair_keys: list[tuple[str, str, str]]  # (column, site of part 0, site of part 1) of z
    pair_edges: dict[tuple[str, str, str], EdgeUse]  # round-trip edges and multiplicities
    transfers: list[Transfer]  # active, bytes_per_request > 0
    nodes: list[str]
    edges: list[EdgeKey]  # capacity > 0, no self-loops
    capacity: dict[EdgeKey, float]
    infeasible: list[str] = field(default_factory=list)  # reasons found before solving
    # single-resource demand -> the part-0 resources it may choose from (only if ≥ 2)
    choices: dict[str, list[str]] = field(default_factory=dict)
    # hub mode (tree fleets): (column, part, site, hub) of the half-pairs g, their round-trip edges
    hub_keys: list[tuple[str, int, str, str]] = field(default_factory=list)
    hub_edges: dict[tuple[str, int, str, str], EdgeUse] = field(default_factory=dict)
    trips: Callable[[str, str], tuple[int, EdgeUse, bool] | None] | None = None

    @classmethod
    def from_problem(cls, problem: Problem, pair_split: PairSplit = "auto") -> Index:
        """Validate references and build every map.

        Parameters
        ----------
        problem
            The problem.
        pair_split
            How pairs of two-part columns are modelled on tree fleets:
            ``"auto"`` (half-pairs at hubs where they are fewer than the site
            pairs), ``"hubs"`` (always) or ``"pairs"`` (never); the optimum is
            the same.

        Raises
        ------
        ValueError
            On dangling names, a step in two routes, a transfer between steps
            of another route, two edges with the same endpoints, or an unknown
            ``pair_split``.
        """
        if pair_split not in PAIR_SPLITS:
            raise ValueError(f"pair_split must be one of {', '.join(PAIR_SPLITS)}, not {pair_split!r}")
        _check_unique_names(problem)
        demands = _active_demands(problem)
        transfers = _active_transfers(problem, {r.name for r in demands.routes})
        network = _network(problem)
        trips = _RoundTrips(network.routing, network.capacity)
        placed = _place_columns(problem, demands, network, trips, pair_split)
        return cls(
            problem=problem,
            names=_names(problem, demands, network, placed),
            rate=demands.rate,
            routes=demands.routes,
            route_of_step=demands.active_steps,
            site={s.name: s for s in problem.sites},
            columns=placed.columns,
            column={c.name: c for c in placed.columns},
            load_keys=placed.load_keys,
            replica_keys=placed.replica_keys,
            replica_ub=placed.replica_ub,
            units=placed.units,
            pair_keys=placed.pair_keys,
            pair_edges=placed.pair_edges,
            hub_keys=placed.hub_keys,
            hub_edges=placed.hub_edges,
            trips=trips,
            transfers=transfers,
            nodes=sorted(network.nodes),
            edges=network.edges,
            capacity=network.capacity,
            infeasible=demands.infeasible,
            choices=_resource_choices(problem, demands, placed),
        )

    def replica_units(self, key: tuple[str, int, str]) -> int:
        """u_p of the replica key ``(column, part, site)`` (also ``units[key]``)."""
        return self.units[key]


def _check_unique_names(problem: Problem) -> None:
    for kind, names in (
        ("demand", [d.name for d in problem.demands]),
        ("route", [r.name for r in problem.routes]),
        ("transfer", [t.name for t in problem.transfers]),
        ("column", [c.name for c in problem.columns]),
        ("site", [s.name for s in problem.sites]),
    ):
        repeated = sorted(n for n, k in Counter(names).items() if k > 1)
        if repeated:
            raise ValueError(f"{kind} names must be unique: {repeated} repeated")


def _active_demands(problem: Problem) -> _Demands:
    """Demands of rate > 0, their routes and steps; a demand with a rate and no route is infeasible."""
    demand_names = {d.name for d in problem.demands}
    rate = {d.name: d.rate for d in problem.demands if d.rate > 0}
    route_of_step: dict[str, Route] = {}
    routes_of: dict[str, list[Route]] = defaultdict(list)
    for route in problem.routes:
        if route.demand not in demand_names:
            raise ValueError(f"route {route.name!r}: unknown demand {route.demand!r}")
        routes_of[route.demand].append(route)
        for step in route.steps:
            if step in route_of_step:
                raise ValueError(
                    f"step {step!r} appears in routes {route_of_step[step].name!r} and {route.name!r}"
                )
            route_of_step[step] = route
    infeasible = [
        f"demand {k!r} has rate {lam} but no route"
        for k, lam in rate.items()
        if not routes_of[k]
    ]
    routes = sorted((r for r in problem.routes if r.demand in rate), key=lambda r: r.name)
    active_steps = {q: r for r in routes for q in r.steps}
    return _Demands(demand_names, rate, routes, routes_of, route_of_step, active_steps, infeasible)


def _active_transfers(problem: Problem, active_routes: set[str]) -> list[Transfer]:
    """Transfers of active routes that move bytes between two different steps, by name."""
    route_names = {r.name: r for r in problem.routes}
    transfers = []
    for t in problem.transfers:
        r = route_names.get(t.route)
        if r is None or t.source not in r.steps or t.target not in r.steps:
            raise ValueError(
                f"transfer {t.name!r}: steps {t.source!r}, {t.target!r} not both in route {t.route!r}"
            )
        if t.route in active_routes and t.bytes_per_request > 0 and t.source != t.target:
            transfers.append(t)
    transfers.sort(key=lambda t: t.name)
    return transfers


def _network(problem: Problem) -> _Network:
    """The directed graph of the problem's nodes and edges and its routing."""
    nodes = set(problem.nodes) | {s.node for s in problem.sites}
    capacity: dict[EdgeKey, float] = {}
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(nodes))
    for e in problem.edges:
        key = (e.source, e.target)
        if key in capacity:
            raise ValueError(f"two edges {e.source!r} -> {e.target!r}: merge them into one")
        capacity[key] = e.capacity_bytes_per_s
        nodes.update(key)
        if e.source != e.target:
            graph.add_edge(e.source, e.target, latency_s=e.latency_s, ps=latency_ps(e.latency_s))
    edges = sorted(k for k, c in capacity.items() if c > 0 and k[0] != k[1])
    return _Network(nodes, capacity, edges, graph, Routing(graph))


class _Pairing:
    """The site pairs (or, on tree fleets, half-pairs at hubs) a two-part column may use."""

    def __init__(self, network: _Network, trips: _RoundTrips, pair_split: PairSplit):
        self.tree = HubTree.of(network.graph, network.capacity) if pair_split != "pairs" else None
        self.trips = trips
        self.pair_split = pair_split
        self._halves_of: dict[tuple, list[tuple[int, str, str, EdgeUse]] | None] = {}

    def of(self, c: Column, hosts: list[list[Site]]) -> tuple[list[tuple[str, str, EdgeUse]],
                                                              list[tuple[int, str, str, EdgeUse]]]:
        """(pairs, half-pairs) of ``c`` on ``hosts``: one of the two lists is used, the other is empty."""
        limit = math.inf if math.isinf(c.pair_max_latency_s) else latency_ps(c.pair_max_latency_s)
        if self.tree is not None:
            traffic = c.pair_bytes_per_s > 0
            signature = (*(tuple(s.name for s in h) for h in hosts), limit, traffic)
            if signature not in self._halves_of:
                found = self.tree.halves(hosts, limit, traffic)
                # Halves where they are fewer than the pairs they replace (at most |S0|·|S1|).
                fewer = self.pair_split == "hubs" or len(found) < len(hosts[0]) * len(hosts[1])
                self._halves_of[signature] = found if fewer else None
            found = self._halves_of[signature]
            if found is not None:
                return [], found
        return _allowed_pairs(c, hosts, limit, self.trips), []


def _place_columns(
    problem: Problem, demands: _Demands, network: _Network, trips: _RoundTrips, pair_split: PairSplit
) -> _Placements:
    """Keys of the variables of every column that serves an active step on some site, by column name."""
    sites_of: dict[str, list[Site]] = defaultdict(list)
    for s in sorted(problem.sites, key=lambda s: s.name):
        sites_of[s.resource].append(s)
    pairing = _Pairing(network, trips, pair_split)
    out = _Placements()
    for c in sorted(problem.columns, key=lambda c: c.name):
        tick()  # a full 10,000-domain fleet's keys take minutes and gigabytes: the limits are looked at
        steps = sorted(q for q in c.capacity if q in demands.active_steps)
        hosts = [
            [s for s in sites_of[part.resource] if s.units_per_domain * s.domains >= part.units]
            for part in c.parts
        ]
        pairs: list[tuple[str, str, EdgeUse]] = []
        halves: list[tuple[int, str, str, EdgeUse]] = []
        if len(c.parts) == 2 and steps:
            pairs, halves = pairing.of(c, hosts)
            used = [{pair[p] for pair in pairs} | {h[1] for h in halves if h[0] == p} for p in (0, 1)]
            hosts = [[s for s in hosts[p] if s.name in used[p]] for p in (0, 1)]
        if not steps or not hosts[0]:
            continue
        out.columns.append(c)
        out.load_keys += [(c.name, q, s.name) for q in steps for s in hosts[0]]
        for p, part in enumerate(c.parts):
            for s in hosts[p]:
                out.replica_keys.append((c.name, p, s.name))
                out.replica_ub[c.name, p, s.name] = s.units_per_domain * s.domains // part.units
                out.units[c.name, p, s.name] = part.units
        for s0, s1, used_edges in pairs:
            out.pair_keys.append((c.name, s0, s1))
            out.pair_edges[c.name, s0, s1] = used_edges
        for p, s, hub, used_edges in halves:
            out.hub_keys.append((c.name, p, s, hub))
            out.hub_edges[c.name, p, s, hub] = used_edges
    return out


def _allowed_pairs(
    c: Column, hosts: list[list[Site]], limit_ps: float, trips: _RoundTrips
) -> list[tuple[str, str, EdgeUse]]:
    """(site of part 0, site of part 1, round-trip edges) of every pair within the latency limit."""
    pairs = []
    for s0 in hosts[0]:
        for s1 in hosts[1]:
            tick()
            trip = trips(s0.node, s1.node)
            if trip is None or trip[0] > limit_ps:
                continue
            if trip[2] and c.pair_bytes_per_s > 0:
                continue  # pair traffic cannot cross a zero-capacity edge
            pairs.append((s0.name, s1.name, trip[1]))
    return pairs


def _names(problem: Problem, demands: _Demands, network: _Network, placed: _Placements) -> Names:
    return Names(
        {
            "demand": list(demands.names),
            "route": [r.name for r in problem.routes],
            "step": list(demands.all_steps) + [q for c in problem.columns for q in c.capacity],
            "transfer": [t.name for t in problem.transfers],
            "column": [c.name for c in problem.columns],
            "site": [s.name for s in problem.sites],
            "node": list(network.nodes),
            "resource": [s.resource for s in problem.sites]
            + [part.resource for c in problem.columns for part in c.parts],
            "hub": sorted({k[3] for k in placed.hub_keys}),
        }
    )


def _resource_choices(problem: Problem, demands: _Demands, placed: _Placements) -> dict[str, list[str]]:
    """Single-resource demand -> the part-0 resources that could serve it, when there are two or more."""
    columns_by_name = {c.name: c for c in problem.columns}
    choices: dict[str, list[str]] = {}
    served_by: dict[str, set[str]] = defaultdict(set)  # step -> part-0 resources serving it
    for c_name, q, _ in placed.load_keys:
        served_by[q].add(columns_by_name[c_name].parts[0].resource)
    for d in sorted(problem.demands, key=lambda d: d.name):
        if getattr(d, "single_resource", False) and d.name in demands.rate:
            options = set()
            for r in demands.routes_of[d.name]:
                for q in r.steps:
                    options |= served_by[q]
            if len(options) > 1:  # with one option the choice is already made
                choices[d.name] = sorted(options)
    return choices
