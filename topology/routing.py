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

Latencies alone, from many sources at once (:func:`lowest_latencies_ps`): the
same integer sums, without the paths — what pairing sites by latency needs.

>>> nodes, table = r.latencies_ps(("a", "b"))
>>> [int(table[0, nodes[n]]) for n in ("a", "s3", "b")], int(table[1, nodes["a"]]) == UNREACHABLE_PS
([0, 1500000, 4000000], True)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import networkx as nx
import numpy as np

__all__ = ["PS_PER_S", "UNREACHABLE_PS", "NodePath", "Routing", "latency_ps", "lowest_latencies_ps",
           "lowest_latency_paths"]

#: Picoseconds per second: latencies are compared in integer picoseconds so equal sums tie exactly.
PS_PER_S = 1e12

NodePath = tuple[str, ...]

#: The latency (ps) :func:`lowest_latencies_ps` gives a node a source does not reach: far above any sum of
#: edge latencies (2**62 ps is 53 days), and adding one more edge's to it stays inside int64.
UNREACHABLE_PS = 2**62


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


def lowest_latencies_ps(adjacency: dict[str, list[tuple[str, int]]],
                        sources: Sequence[str]) -> tuple[dict[str, int], np.ndarray]:
    """Lowest latency (integer ps) from each of ``sources`` to every node, without the paths.

    Every edge is relaxed for every source at once (Bellman–Ford on arrays: round k finds the lowest
    latency over paths of at most k hops) until a round changes nothing; a lowest-latency path has at
    most as many hops as there are nodes, and on a leaf–spine fleet a handful of rounds do. The sums
    are of the same integers as :func:`lowest_latency_paths`'s, so each latency is the same number
    (the least sum is one integer whichever path attains it).

    Parameters
    ----------
    adjacency
        node -> [(successor, edge latency in integer ps)], as :func:`lowest_latency_paths` takes it.
    sources
        Start nodes (a source not in ``adjacency`` reaches only itself).

    Returns
    -------
    tuple
        (node -> its column, int64 array of shape (sources, nodes): the latency in ps,
        :data:`UNREACHABLE_PS` where the source does not reach the node).

    Examples
    --------
    >>> adj = {"a": [("b", 1), ("c", 3)], "b": [("c", 1)], "c": []}
    >>> nodes, table = lowest_latencies_ps(adj, ["a", "c"])
    >>> table[0].tolist(), [int(table[1, nodes[n]]) == UNREACHABLE_PS for n in "abc"]
    ([0, 1, 2], [True, True, False])
    """
    nodes: dict[str, int] = {}
    for u, out in adjacency.items():
        nodes.setdefault(u, len(nodes))
        for v, _ in out:
            nodes.setdefault(v, len(nodes))
    for u in sources:
        nodes.setdefault(u, len(nodes))
    table = np.full((len(sources), len(nodes)), UNREACHABLE_PS, dtype=np.int64)
    table[np.arange(len(sources)), [nodes[u] for u in sources]] = 0
    edges = sorted((nodes[v], nodes[u], ps) for u, out in adjacency.items() for v, ps in out)
    if not edges or not len(sources):
        return nodes, table
    head, tail, ps = (np.array(x, dtype=np.int64) for x in zip(*edges, strict=True))
    # Edges grouped by head: the least over each group's tails is one reduceat.
    starts = np.flatnonzero(np.r_[True, head[1:] != head[:-1]])
    heads = head[starts]
    while True:
        current = table[:, heads]
        best = np.minimum(current, np.minimum.reduceat(table[:, tail] + ps, starts, axis=1))
        if np.array_equal(best, current):
            return nodes, table
        table[:, heads] = best


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
        self._tables: dict[tuple[str, ...], tuple[dict[str, int], np.ndarray]] = {}

    def latencies_ps(self, sources: Sequence[str]) -> tuple[dict[str, int], np.ndarray]:
        """:func:`lowest_latencies_ps` from ``sources`` (kept per tuple of sources): the latencies of
        :meth:`latency_ps` for every node at once, :data:`UNREACHABLE_PS` where it gives None."""
        key = tuple(sources)
        found = self._tables.get(key)
        if found is None:
            found = self._tables[key] = lowest_latencies_ps(self.adjacency, key)
        return found

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
