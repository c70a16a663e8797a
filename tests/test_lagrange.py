"""The Lagrangian bound by part and its completion (solvers.lagrange) against brute force.

On random problems of three demands sharing two small sites (the site rows
bind, so the parts' optima do not add up to the whole's): the completion's
optimum is the brute-force optimum, its bound is at most it, and L(μ) is at
most it at every μ tried (a bound that cut off the optimum would fail here).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from solvers import bruteforce
from solvers import lagrange as lg
from solvers.cost_floors import parts
from solvers.family import ReplicaRow
from solvers.problem import Column, Demand, Part, Problem, Route, Site


@functools.cache
def _reference(seed: int):
    return bruteforce(_random_parts(seed))


#: Seeds whose problem has a plan and whose site rows bind (L(0) is below the optimum).
SEEDS = (0, 3, 4)


def _random_parts(seed: int) -> Problem:
    """Three demands; each has a column on the cheap and one on the dear site, demand 0 also a two-part one."""
    rng = np.random.default_rng(seed)
    sites = [Site(name="gpu", node="v", resource="gpu", units_per_domain=4, domains=2, usd_per_hour_per_unit=1.0,
                  power_w_per_unit=1.0),
             Site(name="lpu", node="v", resource="lpu", units_per_domain=4, domains=1,
                  usd_per_hour_per_unit=float(rng.choice([1.25, 1.5, 2.0])), power_w_per_unit=1.0)]
    demands, routes, columns = [], [], []
    for k in range(3):
        demands.append(Demand(name=f"d{k}", rate=float(rng.choice([1.0, 2.0, 3.0]))))
        routes.append(Route(name=f"r{k}", demand=f"d{k}", steps=[f"q{k}"]))
        for r, units in (("gpu", 2), ("lpu", 4)):
            columns.append(Column(name=f"c{k}{r}", parts=[Part(resource=r, units=units)],
                                  capacity={f"q{k}": float(rng.choice([0.75, 1.0, 1.5, 2.0])) * units / 2}))
    columns.append(Column(name="c0pair", parts=[Part(resource="gpu", units=2), Part(resource="lpu", units=2)],
                          capacity={"q0": float(rng.choice([2.0, 3.0, 4.0]))}))
    return Problem(demands=demands, routes=routes, columns=columns, sites=sites)


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_completion_keeps_the_bruteforce_optimum(backend):
    seeds = SEEDS if backend == "highs" else SEEDS[:2]
    binding = 0
    for seed in seeds:
        problem = _random_parts(seed)
        ref = _reference(seed)
        sol = lg.solve_by_parts(problem, backend=backend)
        assert ref.status == "optimal" and sol is not None, seed
        assert sol.status == "optimal", seed
        assert math.isclose(sol.objective, ref.objective, rel_tol=1e-6, abs_tol=1e-9), seed
        assert sol.best_bound <= ref.objective * (1 + 1e-9) + 1e-9, seed
        floors = sum(lg.evaluate(lg.PartLP(part), {}, [], backend="highs").bound for part in parts(problem))
        binding += floors < ref.objective * (1 - 1e-6)
    assert binding == len(seeds)  # the site rows bind: L(0) is not the optimum


def test_no_plan_gives_none():
    assert _reference(1).status == "infeasible"
    assert lg.solve_by_parts(_random_parts(1), backend="highs") is None


def test_lagrangian_is_a_bound_at_every_multiplier():
    checked = 0
    for seed in SEEDS:
        problem, ref = _random_parts(seed), _reference(seed)
        lps = [lg.PartLP(part) for part in parts(problem)]
        limits = {s.name: float(s.units_per_domain * s.domains) for s in problem.sites}
        for mu in ({"gpu": 0.25}, {"gpu": 0.5, "lpu": 1.0}, {"gpu": 3.0}):
            found = [lg.evaluate(lp, mu, [], backend="highs") for lp in lps]
            value = sum(e.bound for e in found) - sum(mu.get(s, 0.0) * u for s, u in limits.items())
            assert value <= ref.objective * (1 + 1e-9) + 1e-9, (seed, mu)
            checked += 1
    assert checked == 9


def test_column_fixing_keeps_the_optimal_plans_columns():
    # Each part's LP rise r_c: a column of the optimum has LP + r_c at most the Lag cost of its part there.
    for seed in SEEDS:
        problem, ref = _random_parts(seed), _reference(seed)
        for part in parts(problem):
            names = {c.name for c in part.columns}
            mine = lg.plan_of(problem, ref, names)
            for mu in ({}, {"gpu": 0.5}):
                value, rise = lg.PartLP(part).solve(mu)
                cost = lg.lagrangian_cost(mine, mu)
                for c, _, _, _ in mine.replicas:
                    assert value + rise[c] <= cost * (1 + 1e-9) + 1e-9, (seed, c, mu)


def test_the_best_combination_meets_every_coupling_row():
    def row(name, rhs):
        return ReplicaRow(name=name, rhs=rhs, per_unit=lambda site: 1.0)

    a = lg.PartPlan((("x", 0, "s", 1),), 10.0, (("s", 8.0),), (("power_cap", 5.0), ("site_units|s", 8.0)))
    b = lg.PartPlan((("y", 0, "t", 1),), 12.0, (("t", 8.0),), (("power_cap", 1.0), ("site_units|t", 8.0)))
    sites = [row("site_units|s", 8.0), row("site_units|t", 8.0)]
    cost, chosen = lg.best_combination([[a, b], [a, b]], sites)
    assert cost == 22.0 and sorted(p.cost for p in chosen) == [10.0, 12.0]
    assert lg.best_combination([[a], [a]], sites[:1]) is None
    assert lg.best_combination([[a, b], [a, b]], [row("site_units|s", 16.0), sites[1], row("power_cap", 9.0)]) == (
        22.0, [a, b])
    assert lg.best_combination([[a], [a]], [row("site_units|s", 16.0), row("power_cap", 9.0)]) is None


def test_not_applied_with_a_budget_one_part_or_another_objective():
    problem = _random_parts(0)
    assert lg.solve_by_parts(problem.model_copy(update={"budget_usd_per_hour": 100.0}), backend="highs") is None
    assert lg.solve_by_parts(problem.model_copy(update={"objective": "power"}), backend="highs") is None
    one = problem.model_copy(update={"demands": problem.demands[:1], "routes": problem.routes[:1],
                                     "columns": [c for c in problem.columns if c.name.startswith("c0")]})
    assert lg.solve_by_parts(one, backend="highs") is None


def test_the_parts_lps_load_what_the_relaxation_of_the_whole_loads():
    # With room on every site (no site row binds the LP) the parts' LPs together are the relaxation of
    # the whole: the same loaded columns, so the same support and first plans (solvers.twolevel).
    from solvers.milp import relax

    checked = 0
    for seed in SEEDS:
        problem = _random_parts(seed)
        roomy = problem.model_copy(update={"sites": [s.model_copy(update={"domains": 100}) for s in problem.sites]})
        loaded = set().union(*(lg.PartLP(part).loaded for part in parts(roomy)))
        assert loaded and loaded == {ld.column for ld in relax(roomy).loads}, seed
        checked += 1
    assert checked == len(SEEDS)


def test_a_support_made_from_the_parts_lps_keeps_the_bruteforce_optimum():
    seen: list[set[str]] = []

    def near(used: set[str]) -> Problem:
        seen.append(used)
        return problem.model_copy(update={"columns": [c for c in problem.columns if c.name in used]})

    problem, ref = _random_parts(SEEDS[0]), _reference(SEEDS[0])
    sol = lg.solve_by_parts(problem, near=near, backend="highs")
    assert sol is not None and sol.status == "optimal"
    assert math.isclose(sol.objective, ref.objective, rel_tol=1e-6, abs_tol=1e-9)
    assert len(seen) == 1 and seen[0] == set().union(*(lg.PartLP(part).loaded for part in parts(problem)))
