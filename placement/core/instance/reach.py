r"""Domain groups that cannot reach each other over the fleet graph, said as what is missing.

A KV transfer from prefill to decode, or the traffic between the two parts of
a paired replica, needs a path of links between the two domain groups. When
the fleet graph falls apart into islands (a group with no ``switch``, or
switches no chain of ``links`` joins), replicas in different islands cannot
work together: ``placement validate`` warns and an infeasibility diagnosis
says the same (:func:`placement.core.pipeline.diagnose.diagnose`).

Examples
--------
>>> import networkx as nx
>>> G = nx.DiGraph()
>>> G.add_node("h100-hgx", kind="domains", chip="h100"); G.add_node("tor-a", kind="switch")
>>> G.add_edge("h100-hgx", "tor-a"); G.add_edge("tor-a", "h100-hgx")
>>> G.add_node("bertha-server", kind="domains", chip="bertha"); G.add_node("tor-b", kind="switch")
>>> G.add_edge("bertha-server", "tor-b"); G.add_edge("tor-b", "bertha-server")
>>> (sentence,) = islands_sentences(G)
>>> print(*sentence.split(": ", 1), sep=":\n")
domain group bertha-server (bertha) cannot reach domain group h100-hgx (h100):
no chain of links joins switch tor-b to switch tor-a (add a link between them to hardware.links)
"""

from __future__ import annotations

from itertools import combinations

import networkx as nx

__all__ = ["islands", "islands_sentences"]

#: Groups named per island before "and N more".
_SHOWN = 3


def islands(G: nx.DiGraph) -> list[list[str]]:
    """The connected parts of the fleet graph that hold domain groups, each as its sorted node names,
    largest first (then by name)."""
    parts = [sorted(c) for c in nx.weakly_connected_components(G)
             if any(G.nodes[n].get("kind") == "domains" for n in c)]
    return sorted(parts, key=lambda c: (-len(c), c))


def _groups(G: nx.DiGraph, part: list[str]) -> str:
    names = [n for n in part if G.nodes[n].get("kind") == "domains"]
    shown = [f"{n} ({G.nodes[n].get('chip', '?')})" for n in names[:_SHOWN]]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    word = "domain group" if len(names) == 1 else "domain groups"
    return f"{word} {', '.join(shown)}{more}"


def _end(G: nx.DiGraph, part: list[str]) -> str:
    """What the island would connect by: its first switch, or its group that hangs off no switch."""
    switches = [n for n in part if G.nodes[n].get("kind") == "switch"]
    if switches:
        return f"switch {switches[0]}"
    return f"{part[0]} (it names no switch)"


def islands_sentences(G: nx.DiGraph) -> list[str]:
    """One sentence per pair of islands (against the largest only, when there are more than three):
    the groups and chips that cannot reach each other and the connection that is missing."""
    parts = islands(G)
    if len(parts) < 2:
        return []
    pairs = combinations(parts, 2) if len(parts) <= 3 else ((parts[0], p) for p in parts[1:])
    out = []
    for a, b in pairs:
        ends = _end(G, a), _end(G, b)
        fix = ("add a link between them to hardware.links" if all(e.startswith("switch ") for e in ends)
               else "give each domain group a switch, and link the switches in hardware.links")
        out.append(f"{_groups(G, a)} cannot reach {_groups(G, b)}: no chain of links joins {ends[0]} to "
                   f"{ends[1]} ({fix})")
    return out
