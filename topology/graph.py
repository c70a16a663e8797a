"""The fleet as a NetworkX graph: domain groups and switches as nodes, links as edges.

Plain functions, graph first (NetworkX style). A *domain group* is ``count``
identical scale-up domains of one chip type attached the same way; it is one
node (attribute ``kind="domains"``), which keeps symmetric fleets small. Its
uplink to its switch is an edge pair whose capacity is the sum over its domains.
Every edge carries ``bandwidth_bytes_per_s`` (per direction) and ``latency_s``.

Examples
--------
>>> G = fleet_graph(
...     [{"name": "rack", "chip": "h100", "chips_per_domain": 8, "count": 4, "switch": "leaf",
...       "uplink_bytes_per_s": 400e9, "uplink_latency_s": 2e-6}],
...     switches=["leaf"], links=[])
>>> G.edges["rack", "leaf"]["bandwidth_bytes_per_s"]
1600000000000.0
>>> from topology.routing import Routing
>>> Routing(G).latency_s("rack", "leaf")
2e-06

Paths and latencies over the graph are :mod:`topology.routing`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import networkx as nx

__all__ = ["domain_groups", "fleet_graph"]


def fleet_graph(
    domain_groups: Iterable[Mapping],
    switches: Iterable[str] = (),
    links: Iterable[Mapping] = (),
) -> nx.DiGraph:
    """Build the directed fleet graph.

    Parameters
    ----------
    domain_groups
        Mappings with ``name``, ``chip``, ``chips_per_domain``, ``count`` and,
        when attached, ``switch``, ``uplink_bytes_per_s`` (per domain, per
        direction) and ``uplink_latency_s``.
    switches
        Switch names.
    links
        Mappings with ``source``, ``target`` (switches), ``bandwidth_bytes_per_s``
        (per direction) and ``latency_s``; each becomes two directed edges.
    """
    G = nx.DiGraph()
    for s in switches:
        G.add_node(s, kind="switch")
    for d in domain_groups:
        G.add_node(d["name"], kind="domains", chip=d["chip"], chips_per_domain=int(d["chips_per_domain"]),
                   count=int(d["count"]))
        if d.get("switch") is not None:
            cap = float(d["uplink_bytes_per_s"]) * int(d["count"])
            lat = float(d.get("uplink_latency_s", 0.0))
            G.add_edge(d["name"], d["switch"], bandwidth_bytes_per_s=cap, latency_s=lat)
            G.add_edge(d["switch"], d["name"], bandwidth_bytes_per_s=cap, latency_s=lat)
    for link in links:
        for u, v in ((link["source"], link["target"]), (link["target"], link["source"])):
            if G.has_edge(u, v):
                # Parallel cables between two switches add up.
                G.edges[u, v]["bandwidth_bytes_per_s"] += float(link["bandwidth_bytes_per_s"])
            else:
                G.add_edge(u, v, bandwidth_bytes_per_s=float(link["bandwidth_bytes_per_s"]),
                           latency_s=float(link.get("latency_s", 0.0)))
    return G


def domain_groups(G: nx.DiGraph) -> list[str]:
    """Names of the domain-group nodes, sorted."""
    return sorted(n for n, k in G.nodes(data="kind") if k == "domains")

