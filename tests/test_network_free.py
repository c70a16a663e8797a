"""Pair columns pruned network-free first (K0), the full set only when the two-level solve needs it.

On a small Rubin + LPX fleet (attention–FFN pairs only) K0 must be a subset of
the full kept set that dominates every full column once the network is gone,
give the collapsed problem the same optimum, and give the same verified plan
as the full set; when the network binds (a hand-made problem whose fast pair
cannot cross the thin link) the solve must call for the full set and still
reach the brute-force optimum.
"""

from __future__ import annotations

import functools
import math

import pytest

from placement.bench.generate import build_instance
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline import solve as solve_module
from placement.core.pipeline.problem import build_problem
from placement.core.pipeline.solve import solve as solve_instance
from placement.core.replicas import candidate_cache
from placement.core.replicas.candidates import generate
from placement.core.replicas.generation import Candidates
from solvers import bruteforce, dominance, solve, twolevel
from solvers.problem import Column, Demand, Edge, Part, Problem, Route, Site


@functools.cache
def _pairs_instance():
    """Rubin + LPX racks in 10 domains, Llama-3.1-70B, one class at 30 ms TPOT, attention–FFN decode only."""
    doc = build_instance(domains=10, chip_types=["rubin", "lp30"], classes=1, family="mixed",
                         model="llama-3.1-70b")
    doc["modes"] = ["pd-af"]
    doc["workload"]["classes"][0]["tpot_ms"] = 30  # 80 layers × 2 crossings of ≥ 60 µs: 9.6 ms a micro-batch
    return parse_instance(doc)


@functools.cache
def _generations() -> tuple[Candidates, Candidates]:
    ctx = Context.of(_pairs_instance())
    return generate(ctx, workers=1), generate(ctx, workers=1, network_free_from=0)


def _row(c: Column, rank: int) -> dominance.Row:
    return dominance.Row(tuple(p.units for p in c.parts), tuple(c.capacity[q] for q in sorted(c.capacity)),
                         rank=rank)


def test_k0_is_a_subset_of_the_full_set_dominating_it_network_free():
    full, k0 = _generations()
    assert k0.network_free and not full.network_free
    assert k0.generated == full.generated and k0.feasible == full.feasible  # the same candidates, pruned apart
    names = {c.name for c in k0.columns}
    assert names < {c.name for c in full.columns} and len(names) * 10 < full.kept
    assert all(k0.configs[n] == full.configs[n] for n in names)
    for c in full.columns:
        if c.name in names:
            continue
        rivals = [y for y in k0.columns if [p.resource for p in y.parts] == [p.resource for p in c.parts]
                  and sorted(y.capacity) == sorted(c.capacity)]
        assert any(dominance.dominates(_row(y, 0), _row(c, 1)) for y in rivals), c.name


def test_pairs_far_from_the_fastest_are_never_made():
    """A set of pairings evaluated as arrays gives the candidates its grids give one at a time (the full
    set); network-free, only those near the fastest of their size are made, and they keep what all keep."""
    from placement.core.replicas import generation as cand
    from placement.modes import GridSet, configurations

    ctx = Context.of(_pairs_instance())
    cls = ctx.instance.workload.classes[0]
    by_set, by_grid = Candidates(), Candidates()
    blocks = [cand._evaluate_set(by_set, ctx, g, cls, steps)
              for g, steps in configurations(ctx, cls, by_set.memo, sets=True) if isinstance(g, GridSet)]
    blocks = [b for b in blocks if b is not None]
    one_at_a_time: list = []
    for g, steps in configurations(ctx, cls, by_grid.memo):
        if g.config.partner is not None:
            cand._evaluate_grid(by_grid, one_at_a_time, ctx, g, cls, steps)
    made = [p for b in blocks for p in b.pending()]

    def key(p):
        return p.name, p.capacity, p.pair_bytes_per_s, p.pair_max_latency_s, p.batch, p.units, p.steps, p.config()

    assert blocks and [key(p) for p in made] == [key(p) for p in one_at_a_time]
    assert (by_set.generated, by_set.feasible) == (by_grid.generated, by_grid.feasible)
    near = [p for b in blocks for p in b.near_fastest()]
    assert len(near) * 2 < len(made)
    assert [p.name for p in cand._fastest(near)] == [p.name for p in cand._fastest(made)]


def test_collapsed_optimum_is_the_same_on_k0():
    ctx = Context.of(_pairs_instance())
    full, k0 = _generations()
    objectives = [solve(twolevel.collapsed(build_problem(ctx, cands)[0]), backend="highs").objective
                  for cands in (full, k0)]
    assert objectives[0] is not None and objectives[0] == pytest.approx(objectives[1], rel=1e-9)


def test_one_level_instances_prune_the_full_way_in_one_generation():
    """K0 too small for two levels: the same candidates pruned the full way, not a second generation."""
    ctx = Context.of(_pairs_instance())
    full, _ = _generations()
    cands = generate(ctx, workers=1, network_free_from=10**6)
    assert not cands.network_free and cands.columns == full.columns and cands.generated == full.generated


@pytest.mark.parametrize("large", [False, True])
def test_jobs_apart_prune_network_free_only_on_large_fleets(large, monkeypatch):
    """With a job mapper a small fleet is generated once, the full way; a large one (the threshold lowered
    here) has its jobs prune network-free, giving what one process gives."""
    from placement.core.replicas import parallel_generation

    maps = []

    def mapper(fn, items, workers):
        maps.append(len(items))
        return [fn(item) for item in items]

    monkeypatch.setattr(parallel_generation, "MIN_PARALLEL_WORK", 0 if large else 10**6)
    full, k0 = _generations()
    with parallel_generation.job_mapper(mapper):
        cands = generate(Context.of(_pairs_instance()), network_free_from=0 if large else 10**6)
    assert maps == [2]  # one class on two chip types, one generation
    assert cands.network_free is large and cands.columns == (k0 if large else full).columns


def _plan(monkeypatch, min_size: int, cached: tuple[str, Candidates] | None = None):
    """The instance's plan with two levels from ``min_size``, and how many generations it took (``cached``:
    a generation kept beforehand under that cache key)."""
    monkeypatch.setattr(twolevel, "MIN_SIZE", min_size)
    candidate_cache.clear()
    if cached is not None:
        monkeypatch.setitem(candidate_cache._CACHE, *cached)
    try:
        plan = solve_instance(_pairs_instance(), backend="highs")
        return plan, candidate_cache.cache_info()["misses"]
    finally:
        candidate_cache.clear()


def test_lazy_solve_gives_the_full_sets_verified_optimum(monkeypatch):
    lazy, generations = _plan(monkeypatch, 0)
    full, k0 = _generations()
    assert generations == 1 and lazy.candidates.kept == k0.kept
    assert lazy.status == "optimal" and lazy.verified and "pruned network-free" in lazy.notes[-1]
    # 826.784 $/h: the one-level solve of the full set (checked below against the two-level solve of it).
    assert lazy.cost_usd_per_hour == pytest.approx(826.784, rel=1e-9)
    problem, _ = build_problem(Context.of(_pairs_instance()), full)
    two_level_full = solve(problem, backend="highs")
    assert lazy.cost_usd_per_hour == pytest.approx(two_level_full.objective, rel=1e-9)
    key = f"{candidate_cache.candidate_key(Context.of(_pairs_instance()))}|network-free-from-0"
    again, generations = _plan(monkeypatch, 0, cached=(key, k0))
    assert generations == 0
    assert again.model_dump(exclude={"solver", "provenance"}) == lazy.model_dump(exclude={"solver", "provenance"})


def test_a_solve_that_asks_for_the_full_set_plans_on_it(monkeypatch):
    """The plan, its candidates and its verification come from the full set once the solve generated it."""
    asked = []

    def full_then_solve(problem, families=None, strategy="auto", full=None, **options):
        asked.append(len(problem.columns))
        return twolevel.solve(full(), families=families, **options)

    monkeypatch.setattr(solve_module, "solve_problem", full_then_solve)
    plan, generations = _plan(monkeypatch, 0)
    full, k0 = _generations()
    assert asked == [k0.kept] and generations == 2
    assert plan.status == "optimal" and plan.verified and plan.candidates.kept == full.kept
    assert not any("network-free" in note for note in plan.notes)
    assert plan.cost_usd_per_hour == pytest.approx(826.784, rel=1e-9)


def _thin_link_problem(capacity_bytes_per_s: float) -> tuple[Problem, Problem]:
    """Attention on one node, FFN on another, one link: a fast pair (4 bytes/s per replica) dominates a slow
    one (1 byte/s) network-free, so K0 keeps only the fast one; (K0's problem, the full problem)."""
    sites = [Site(name=f"s{i}", node=f"n{i}", resource=r, units_per_domain=1, domains=4,
                  usd_per_hour_per_unit=1.0, power_w_per_unit=1.0) for i, r in enumerate(["att", "ffn"])]
    edges = [Edge(source=a, target=b, capacity_bytes_per_s=capacity_bytes_per_s, latency_s=1e-6)
             for a, b in [("n0", "n1"), ("n1", "n0")]]

    def pair(name: str, rate: float, traffic: float) -> Column:
        return Column(name=name, parts=[Part(resource="att", units=1), Part(resource="ffn", units=1)],
                      capacity={"q": rate}, pair_bytes_per_s=traffic, pair_max_latency_s=1e-5)

    columns = [pair("fast", 2.0, 4.0), pair("slow", 1.5, 1.0)]
    full = Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
                   columns=columns, sites=sites, edges=edges)
    survivors = dominance.undominated(dominance.Columns.of(units=[[1, 1], [1, 1]], supply=[[2.0], [1.5]]))
    return full.model_copy(update={"columns": [columns[i] for i in survivors]}), full


@pytest.mark.parametrize(("capacity_bytes_per_s", "binds"), [(100.0, False), (3.0, True)])
def test_the_full_set_is_asked_for_only_when_the_network_binds(capacity_bytes_per_s, binds, monkeypatch):
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    k0, full = _thin_link_problem(capacity_bytes_per_s)
    assert [c.name for c in k0.columns] == ["fast"]
    asked = []
    sol = solve(k0, backend="highs", full=lambda: (asked.append(True), full)[1])
    ref = bruteforce(full)
    assert sol.status == ref.status == "optimal"
    assert math.isclose(sol.objective, ref.objective, rel_tol=1e-6)
    assert asked == ([True] if binds else [])
    assert {p.column for p in sol.replicas} == ({"slow"} if binds else {"fast"})


def test_a_full_set_that_runs_out_of_time_gives_a_time_limit_not_a_claim(monkeypatch):
    # The network binds (K0's one pair column cannot serve the demand over the thin link), and the full set
    # never comes: the solve must say the time ran out, with the collapsed bound and no plan it has not got.
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    k0, full = _thin_link_problem(3.0)
    sol = solve(k0, backend="highs", full=lambda: None)
    assert sol.status == "time_limit" and not sol.replicas and sol.objective is None
    assert "time limit ran out" in sol.message
    assert sol.best_bound is not None and sol.best_bound <= bruteforce(full).objective * (1 + 1e-9)


def test_the_full_set_is_not_generated_past_the_time_limit():
    # The solve's time limit counts from its start: with none left, no second generation runs.
    import time as clock

    from placement.core.instance.context import Context
    from placement.core.instance.loading import load_instance
    from placement.core.pipeline.problem import build_problem
    from placement.core.pipeline.solve import _Columns

    ctx = Context.of(load_instance("instances/melange-toy.yaml"))
    problem, cands = build_problem(ctx)
    cands.network_free = True  # as if it held K0: asking for every column means generating again
    at = _Columns(ctx, problem, cands, time_limit_s=1.0, began=clock.monotonic() - 2.0)
    assert at.full() is None
    assert at.problem is problem and at.cands is cands
