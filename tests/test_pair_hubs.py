"""Pairs of two-part columns as half-pairs at hubs (tree fleets): the same optimum as one variable per pair.

See the module docstring of solvers.index for why the split is exact; these
tests check it end to end on a generated attention–FFN fleet with several
pods (where pairs may cross pods and links are shared with KV transfers), and
that fleets which are not trees with symmetric links keep the per-pair model.
"""

from __future__ import annotations

import functools

import networkx as nx
import pytest

from placement.bench.generate import build_instance
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.assemble import assemble_plan
from placement.core.pipeline.problem import build_problem
from placement.core.plans.plan import Plan
from placement.core.verify.verifier import verify
from solvers import solve
from solvers.index import HubTree, Index


@functools.cache
def af_instance(link_factor: float = 1.0):
    """Rubin + LPX racks in 3 mixed pods, DeepSeek-V3, 2 classes at TPOT 15 ms, decode by attention–FFN
    disaggregation only (with data-parallel attention Rubin alone is cheaper; this is about the pairs), pod
    links scaled by ``link_factor`` (0.1: the busiest carries 0.13 of its capacity at 1, so thin links bind)."""
    doc = build_instance(domains=40, chip_types=["rubin", "lp30"], classes=2, family="mixed",
                         model="deepseek-v3")
    doc["modes"] = ["pd-af"]
    for c in doc["workload"]["classes"]:
        c["tpot_ms"] = 15
    for link in doc["hardware"]["links"]:
        link["bandwidth_gb_per_s"] *= link_factor
    return parse_instance(doc)


@pytest.mark.parametrize(("link_factor", "backend"), [(1.0, "highs"), (0.1, "highs"), (0.1, "cbc")])
def test_hubs_and_pairs_give_the_same_verified_optimum(link_factor, backend):
    plans = {split: _solve(af_instance(link_factor), backend, split) for split in ("pairs", "hubs")}
    for plan in plans.values():
        assert plan.status == "optimal" and plan.verified, (plan.status, plan.violations)
        assert {p.stage for p in plan.pools} >= {"decode-attention", "decode-ffn"}  # pairs are placed
    assert plans["hubs"].cost_usd_per_hour == pytest.approx(plans["pairs"].cost_usd_per_hour, rel=1e-9)
    for plan in plans.values():
        assert all(lk.load_bytes_per_s <= lk.capacity_bytes_per_s * (1 + 1e-6) for lk in plan.links)
    # with thin links the network binds: the plan of the full links would not fit them
    wide = _solve(af_instance(1.0), backend, "hubs")
    busiest = max(lk.load_bytes_per_s / lk.capacity_bytes_per_s for lk in wide.links)
    assert (busiest > link_factor) == (link_factor < 1)


def _solve(instance, backend: str, split: str) -> Plan:
    """The instance's verified plan, its pairs modelled as ``split`` says."""
    ctx = Context.of(instance)
    problem, cands = build_problem(ctx)
    plan = assemble_plan(ctx, problem, cands, solve(problem, backend=backend, pair_split=split))
    violations = verify(ctx, plan)
    return plan.model_copy(update={"verified": not violations, "violations": violations})


def test_hub_model_has_half_pairs_and_no_pair_variables():
    ctx = Context.of(af_instance())
    problem, _ = build_problem(ctx)
    hubs = Index.from_problem(problem, pair_split="hubs")
    pairs = Index.from_problem(problem, pair_split="pairs")
    assert hubs.hub_keys and not hubs.pair_keys
    assert pairs.pair_keys and not pairs.hub_keys
    # Exactly the same sites host each part: the halves allow the same pairs.
    assert hubs.replica_keys == pairs.replica_keys and hubs.load_keys == pairs.load_keys


def _tree() -> nx.DiGraph:
    g = nx.DiGraph()
    for u, v in [("a", "leaf1"), ("b", "leaf2"), ("leaf1", "spine"), ("leaf2", "spine")]:
        g.add_edge(u, v, ps=1_000_000)
        g.add_edge(v, u, ps=1_000_000)
    return g


def test_only_trees_with_symmetric_links_are_split():
    g = _tree()
    cap = dict.fromkeys(g.edges, 1e12)
    assert HubTree.of(g, cap) is not None
    ring = g.copy()
    ring.add_edge("leaf1", "leaf2", ps=1)
    ring.add_edge("leaf2", "leaf1", ps=1)
    assert HubTree.of(ring, dict.fromkeys(ring.edges, 1e12)) is None  # a cycle: paths are not unique
    skew = g.copy()
    skew.edges["a", "leaf1"]["ps"] = 2_000_000
    assert HubTree.of(skew, cap) is None  # there and back differ in latency
