"""Cost floors (solvers.cost_floors): each independent part's optimum as a row that cuts off no plan.

The rows must never change an optimum: on random problems of two or three
demands sharing a small fleet, the optimum with the floors is the brute-force
optimum, and each floor is at most the cost its part's columns carry in it,
including problems where the shared site rows make the whole cost more than
the sum of the floors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers import bruteforce
from solvers import cost_floors as floors
from solvers.milp import solve_model
from solvers.model import families_of
from solvers.problem import Column, Demand, Part, Problem, Route, Site


def _two_demands(**update) -> Problem:
    def col(name, step, units, rate):
        return Column(name=name, parts=[Part(resource="gpu", units=units)], capacity={step: rate})

    problem = Problem(
        demands=[Demand(name="a", rate=5.0), Demand(name="b", rate=3.0)],
        routes=[Route(name="ra", demand="a", steps=["qa"]), Route(name="rb", demand="b", steps=["qb"])],
        columns=[col("a1", "qa", 1, 2.0), col("a2", "qa", 2, 4.5), col("b1", "qb", 1, 2.0)],
        sites=[Site(name="s", node="v", resource="gpu", units_per_domain=4, domains=2,
                    usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    return problem.model_copy(update=update)


def test_parts_split_by_demand_and_keep_the_fleet():
    split = floors.parts(_two_demands())
    assert [sorted(c.name for c in p.columns) for p in split] == [["a1", "a2"], ["b1"]]
    assert [[d.name for d in p.demands] for p in split] == [["a"], ["b"]]
    assert all(p.sites == _two_demands().sites for p in split)


def test_one_part_is_not_split():
    one = _two_demands(demands=[Demand(name="a", rate=5.0)],
                       routes=[Route(name="ra", demand="a", steps=["qa"])],
                       columns=[c for c in _two_demands().columns if c.name != "b1"])
    assert floors.parts(one) == []


def test_floors_are_the_parts_optima_below_the_margin():
    # a: 5 req/s from a2 (4.5 per 2 units) and a1 (2 per unit): 2 + 1 units = $3; b: 2 x b1 = $2
    found = {min(cols): least for cols, least in floors.floors(_two_demands(), backend="highs")}
    assert found == pytest.approx({"a1": 3.0 * (1 - floors.FLOOR_MARGIN), "b1": 2.0 * (1 - floors.FLOOR_MARGIN)},
                                  rel=1e-12)


def test_floor_rows_are_added_on_the_replicas_of_their_part():
    problem = _two_demands()
    found = floors.floors(problem, backend="highs")
    sol, v = solve_model(problem, backend="highs", families=families_of([floors.cost_floors(found)]))
    assert sorted(name for name, label in v.labels.items() if label[0] == "floor") == ["floor__0", "floor__1"]
    assert sol.status == "optimal" and sol.objective == pytest.approx(5.0)


def _random_parts(seed: int) -> Problem:
    """Two demands, each with a 2-unit column on a cheap and on a dear 8-unit site (so the site rows bind)."""
    rng = np.random.default_rng(seed)
    sites = [Site(name=r, node="v", resource=r, units_per_domain=4, domains=2, usd_per_hour_per_unit=price,
                  power_w_per_unit=1.0) for r, price in (("gpu", 1.0), ("lpu", float(rng.choice([1.25, 2.0]))))]
    demands, routes, columns = [], [], []
    for k in range(2):
        demands.append(Demand(name=f"d{k}", rate=float(rng.choice([1.0, 2.0, 3.0, 4.5]))))
        routes.append(Route(name=f"r{k}", demand=f"d{k}", steps=[f"q{k}"]))
        for r in ("gpu", "lpu"):
            columns.append(Column(name=f"c{k}{r}", parts=[Part(resource=r, units=2)],
                                  capacity={f"q{k}": float(rng.choice([0.75, 1.0, 1.5, 2.0]))}))
    return Problem(demands=demands, routes=routes, columns=columns, sites=sites)


def test_floors_keep_every_optimum():  # CBC solves with floors in tests/test_twolevel.py (via solve_from_lp_support)
    backend = "highs"
    checked = bound = 0
    for seed in range(12):
        problem = _random_parts(seed)
        found = floors.floors(problem, backend=backend)
        ref = bruteforce(problem)
        sol, _ = solve_model(problem, backend=backend, families=families_of([floors.cost_floors(found)]))
        assert sol.status == ref.status, seed
        if ref.status != "optimal":
            continue
        assert math.isclose(sol.objective, ref.objective, rel_tol=1e-6, abs_tol=1e-9), seed
        price = {s.name: s.usd_per_hour_per_unit for s in problem.sites}
        units = {c.name: [part.units for part in c.parts] for c in problem.columns}
        cost: dict[str, float] = {}
        for r in ref.replicas:
            cost[r.column] = cost.get(r.column, 0.0) + r.replicas * units[r.column][r.part] * price[r.site]
        for columns, least in found:
            assert least <= sum(cost.get(c, 0.0) for c in columns) * (1 + 1e-9) + 1e-9, seed
        checked += 1
        bound += sum(least for _, least in found) < ref.objective * (1 - 1e-6)  # the site rows bind
    assert checked == 12 and bound >= 3
