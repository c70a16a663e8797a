"""One routing definition (topology.routing) for candidates, MILP index and verifier.

Latencies are summed in integer picoseconds with one tie rule (fewest hops,
then the smallest node sequence). Float sums made 0.5 + 0.5 + 3.0 µs shorter
than 1.5 + 2.5 µs, so the verifier once charged pair traffic to other links
than the MILP on a fleet that is not a tree; now both take the same path.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.problem import build_problem
from solvers.index import Index
from topology.routing import UNREACHABLE_PS, Routing, latency_ps


def _tie_instance():
    """Racks a and b joined by two switch paths of equal latency: 0.5 + 0.5 + 3.0 µs and 1.5 + 2.5 µs."""
    links = [("s0", "s1", 0.5), ("s1", "s2", 0.5), ("s2", "sb", 3.0), ("s0", "s3", 1.5), ("s3", "sb", 2.5)]
    return parse_instance({
        "name": "tie", "model": "llama-3.1-8b",
        "workload": {"classes": [{"name": "c", "rate_rps": 1, "prompt_tokens": 100, "output_tokens": 10,
                                  "ttft_ms": 1000, "tpot_ms": 100}]},
        "hardware": {
            "switches": ["s0", "s1", "s2", "s3", "sb"],
            "links": [{"source": u, "target": v, "bandwidth_gb_per_s": 100, "latency_us": lat}
                      for u, v, lat in links],
            "domains": [{"name": "a", "chip": "h100", "count": 1, "switch": "s0", "uplink_latency_us": 0},
                        {"name": "b", "chip": "h100", "count": 1, "switch": "sb", "uplink_latency_us": 0}],
        },
    })


def test_float_sums_would_break_the_tie():
    assert 0.5e-6 + 0.5e-6 + 3.0e-6 < 1.5e-6 + 2.5e-6  # why latencies are summed in integer ps
    assert latency_ps(0.5e-6) * 2 + latency_ps(3.0e-6) == latency_ps(1.5e-6) + latency_ps(2.5e-6)


def test_verifier_and_index_route_a_tie_the_same_way():
    ctx = Context.of(_tie_instance())
    problem, _ = build_problem(ctx)
    ix = Index.from_problem(problem)
    assert ctx.routing.path("a", "b") == ("a", "s0", "s3", "sb", "b")  # 4 µs both ways: fewer hops
    assert ctx.routing.path("b", "a") == ("b", "sb", "s3", "s0", "a")
    latency, edges, blocked = ix.trips("a", "b")
    there, back = ctx.routing.path("a", "b"), ctx.routing.path("b", "a")
    assert dict(edges) == dict.fromkeys([*nx.utils.pairwise(there), *nx.utils.pairwise(back)], 1)
    assert latency == ctx.routing.latency_ps("a", "b") == 4_000_000 and not blocked
    assert ctx.routing.latency_s("a", "b") == 4e-6


def _layered(layers: int, width: int) -> nx.DiGraph:
    """source → ``layers`` layers of ``width`` switches (each joined to all of the next) → target."""
    G = nx.DiGraph()
    previous = ["source"]
    for i in range(layers):
        layer = [f"l{i}-{j}" for j in range(width)]
        G.add_edges_from(((u, v) for u in previous for v in layer), latency_s=1e-6)
        previous = layer
    G.add_edges_from(((u, "target") for u in previous), latency_s=1e-6)
    return G


def test_many_equal_paths_are_not_enumerated():
    """12 layers of 6 switches: 6**12 ≈ 2e9 shortest paths; one Dijkstra finds the least in name order."""
    r = Routing(_layered(12, 6))
    assert r.path("source", "target") == ("source", *(f"l{i}-0" for i in range(12)), "target")
    assert r.latency_ps("source", "target") == 13_000_000


def test_unreachable_and_self():
    G = nx.DiGraph()
    G.add_edge("a", "b", latency_s=1e-6)
    r = Routing(G)
    assert r.path("b", "a") is None and r.latency_ps("b", "a") is None and r.latency_s("b", "a") == float("inf")
    assert r.path("a", "a") == ("a",) and r.latency_s("a", "a") == 0.0
    assert r.path("elsewhere", "elsewhere") == ("elsewhere",)  # a node outside the graph reaches itself


def test_later_edits_of_the_graph_do_not_reach_a_routing():
    G = nx.DiGraph()
    G.add_edge("a", "b", latency_s=1e-6)
    r = Routing(G)
    G.edges["a", "b"]["latency_s"] = 5e-6
    assert r.latency_ps("a", "b") == 1_000_000


def _random_graph(seed: int) -> nx.DiGraph:
    """30 nodes, ~90 directed edges of latencies 0–4 µs in 0.5 µs steps (many ties, some zero), a few
    nodes no one reaches and one reaching no one."""
    rng = np.random.default_rng(seed)
    G = nx.DiGraph()
    G.add_nodes_from(f"n{i}" for i in range(30))
    for _ in range(90):
        u, v = rng.integers(0, 27, size=2)
        if u != v:
            G.add_edge(f"n{u}", f"n{v}", latency_s=float(rng.integers(0, 9)) * 0.5e-6)
    G.add_edge("n28", "n0", latency_s=1e-6)  # n28: a source only; n29: isolated
    return G


@pytest.mark.parametrize("seed", range(5))
def test_latencies_without_paths_are_those_of_the_paths(seed):
    """Every (source, node) latency of the array computation equals the Dijkstra with paths, integer for
    integer, and unreachable where it has no path; sources in any order, one outside the graph too."""
    G = _random_graph(seed)
    r = Routing(G)
    sources = sorted(G.nodes, reverse=True) + ["elsewhere"]
    nodes, table = Routing(G).latencies_ps(sources)
    assert set(nodes) == set(G.nodes) | {"elsewhere"}
    reached = 0
    for i, s in enumerate(sources):
        for n, col in nodes.items():
            want = r.latency_ps(s, n)
            assert int(table[i, col]) == (UNREACHABLE_PS if want is None else want)
            reached += want is not None
    assert len(sources) < reached < len(sources) * len(nodes)  # some pairs reached, some not


def test_latencies_without_paths_of_many_equal_paths():
    nodes, table = Routing(_layered(12, 6)).latencies_ps(["source", "l3-2"])
    assert int(table[0, nodes["target"]]) == 13_000_000 and int(table[1, nodes["target"]]) == 9_000_000
    assert int(table[1, nodes["source"]]) == UNREACHABLE_PS
