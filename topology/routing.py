"""Lowest-latency routing on a directed graph: the one definition every layer uses.

Latencies are summed in integer picoseconds (each edge's ``latency_s``
rounded to the nearest ps once), so paths of equal latency tie exactly
instead of differing in the last bit of a float sum (0.5 + 0.5 + 3.0 µs and
1.5 + 2.5 µs are both 4,000,000 ps).

Tie rule. Among paths of the least latency, the one with the fewest hops;
among those, the lexicographically smallest node sequence. The label
(latency, hops, node sequence) is monotone under extension (appending the
same edge to two equally long paths keeps their order), so one Dijkstra per
source finds it exactly, in O(E log V), without enumerating paths (a fleet of
12 layers of 6 equal-latency switches has 6¹² shortest paths).

A :class:`Routing` is built once per graph and computes each source's paths
on first use; it copies the latencies when built, so later edits of the graph
do not reach it.

Examples
--------
>>> import networkx as nx
>>> G = nx.DiGraph()
>>> for u, v, lat in [("a", "s1", 0.5e-6), ("s1", "s2", 0.5e-6), ("s2", "b", 3.0e-6),
...                   ("a", "s3", 1.5e-6), ("s3", "b", 2.5e-6)]:
...     G.add_edge(u, v, latency_s=lat)
>>> r = Routing(G)
>>> r.path("a", "b"), r.latency_ps("a", "b"), r.latency_s("a", "b")
(('a', 's3', 'b'), 4000000, 4e-06)
>>> r.path("b", "a") is None, r.latency_s("b", "a")
(True, inf)
>>> r.path("a", "a")
('a',)
"""

from __future__ import annotations

import heapq
import math

import networkx as nx

__all__ = ["PS_PER_S", "NodePath", "Routing", "latency_ps", "lowest_latency_paths"]

#: Picoseconds per second: latencies are compared in integer picoseconds so equal sums tie exactly.
PS_PER_S = 1e12

NodePath = tuple[str, ...]


def latency_ps(latency_s: float) -> int:
    """A latency in seconds as whole picoseconds (rounded to nearest).

    Examples
    --------
    >>> latency_ps(2e-6), latency_ps(0.0)
    (2000000, 0)
    """
    return round(latency_s * PS_PER_S)


def lowest_latency_paths(
    adjacency: dict[str, list[tuple[str, int]]], source: str
) -> dict[str, tuple[int, NodePath]]:
    """Lowest-latency path from ``source`` to every reachable node (tie rule: module docstring).

    Parameters
    ----------
    adjacency
        node -> [(successor, edge latency in integer ps)], no self-loops.
    source
        Start node; it need not be in ``adjacency`` (it then reaches only itself).

    Returns
    -------
    dict
        node -> (latency in ps, node sequence from ``source`` to node).

    Examples
    --------
    >>> adj = {"a": [("b", 1), ("c", 2)], "b": [("c", 1)]}
    >>> lowest_latency_paths(adj, "a")["c"]  # 2 ps either way: fewer hops wins
    (2, ('a', 'c'))
    """
    best: dict[str, tuple[int, int, NodePath]] = {}
    heap: list[tuple[int, int, NodePath]] = [(0, 0, (source,))]
    while heap:
        label = heapq.heappop(heap)
        node = label[2][-1]
        if node in best:
            continue
        best[node] = label
        lat, hops, path = label
        for nxt, ps in adjacency.get(node, ()):
            if nxt not in best:
                heapq.heappush(heap, (lat + ps, hops + 1, path + (nxt,)))
    return {node: (lat, path) for node, (lat, _, path) in best.items()}


class Routing:
    """The lowest-latency paths of a directed graph, per source on first use.

    Parameters
    ----------
    graph
        Directed graph whose edges carry the latency attribute ``weight`` (s).
    weight
        Name of that attribute.
    """

    def __init__(self, graph: nx.DiGraph, weight: str = "latency_s"):
        self.adjacency: dict[str, list[tuple[str, int]]] = {
            u: [(v, latency_ps(attrs[weight])) for v, attrs in graph.adj[u].items() if v != u]
            for u in graph.nodes
        }
        self._trees: dict[str, dict[str, tuple[int, NodePath]]] = {}

    def from_source(self, source: str) -> dict[str, tuple[int, NodePath]]:
        """node -> (latency in ps, path) for every node reachable from ``source``."""
        tree = self._trees.get(source)
        if tree is None:
            tree = self._trees[source] = lowest_latency_paths(self.adjacency, source)
        return tree

    def path(self, source: str, target: str) -> NodePath | None:
        """The lowest-latency path ``source`` → ``target`` (nodes, both ends included); None if unreachable."""
        found = self.from_source(source).get(target)
        return None if found is None else found[1]

    def latency_ps(self, source: str, target: str) -> int | None:
        """One-way latency of :meth:`path` in integer ps; None if unreachable."""
        found = self.from_source(source).get(target)
        return None if found is None else found[0]

    def latency_s(self, source: str, target: str) -> float:
        """One-way latency of :meth:`path` in seconds; ``inf`` if unreachable."""
        ps = self.latency_ps(source, target)
        return math.inf if ps is None else ps / PS_PER_S
