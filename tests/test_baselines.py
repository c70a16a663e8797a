"""Baselines on the same Problem as the MILP: exhaustive configuration search, greedy, LP bound."""

from __future__ import annotations

import pytest

from placement.bench.baselines import class_options, exhaustive, greedy, lp_relaxation
from placement.bench.generate import build_instance
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.problem import build_problem
from solvers.milp import solve
from solvers.problem import Column, Demand, Part, Problem, Route, Site


def _site(name, resource, price, domains=2, units=8):
    return Site(name=name, node=name, resource=resource, units_per_domain=units, domains=domains,
                usd_per_hour_per_unit=price, power_w_per_unit=500.0)


def _col(name, resource, units, caps):
    return Column(name=name, parts=[Part(resource=resource, units=units)], capacity=caps)


def _two_class_problem(third: bool = False, **kw) -> Problem:
    demands = [Demand(name="a", rate=3.0), Demand(name="b", rate=1.0)]
    routes = [Route(name="a|agg", demand="a", steps=["a|s"]), Route(name="b|agg", demand="b", steps=["b|s"])]
    columns = [_col("ca", "h100", 2, {"a|s": 2.0}), _col("ca-l4", "l4", 1, {"a|s": 0.5}),
               _col("cb", "l4", 1, {"b|s": 0.6}), _col("cb2", "h100", 1, {"b|s": 2.0})]
    if third:
        demands.append(Demand(name="c", rate=1.0))
        routes.append(Route(name="c|agg", demand="c", steps=["c|s"]))
        columns += [_col("cc", "h100", 1, {"c|s": 1.0}), _col("cc2", "h100", 2, {"c|s": 2.5})]
    return Problem(demands=demands, routes=routes, columns=columns,
                   sites=[_site("x", "h100", 1.3), _site("y", "l4", 0.1, domains=2, units=4)], **kw)


def test_exhaustive_and_greedy_never_beat_the_milp():
    p = _two_class_problem()
    milp = solve(p, backend="highs").objective
    ex, gr, lp = exhaustive(p), greedy(p), lp_relaxation(p)
    assert ex.status == gr.status == lp.status == "finished"
    assert lp.objective <= milp + 1e-9 <= ex.objective + 2e-9
    assert milp <= gr.objective + 1e-9
    assert ex.evaluated == ex.combinations == 4  # (2 options for a) x (2 for b)
    assert ex.choice["a"][0][1] in ("ca", "ca-l4")


def test_homogeneous_stages_miss_the_mixed_optimum():
    # Class a needs 3 req/s: cheap l4 replicas give at most 4 x 0.5 = 2; mixing l4 and h100 is cheapest,
    # but a config search must serve a stage with ONE configuration.
    p = Problem(demands=[Demand(name="a", rate=3.0)], routes=[Route(name="a|agg", demand="a", steps=["a|s"])],
                columns=[_col("big", "h100", 8, {"a|s": 2.0}), _col("small", "l4", 1, {"a|s": 0.5})],
                sites=[_site("x", "h100", 1.3), _site("y", "l4", 0.1, domains=1, units=4)])
    milp = solve(p, backend="highs").objective
    ex = exhaustive(p)
    assert milp == pytest.approx(8 * 1.3 + 2 * 0.1)  # 2 l4 replicas (1 req/s) + 1 h100 replica (2 req/s)
    assert ex.objective == pytest.approx(2 * 8 * 1.3) and ex.objective > milp
    # greedy fills all 4 l4 chips first (2 req/s), then needs a whole h100 replica for the rest
    gr = greedy(p).objective
    assert gr == pytest.approx(8 * 1.3 + 4 * 0.1) and gr > milp


def test_exhaustive_stops_with_did_not_finish_beyond_its_budget():
    p = _two_class_problem(third=True)
    assert exhaustive(p).status == "finished"
    r = exhaustive(p, max_evaluations=1)
    assert r.status == "did_not_finish" and "did not finish" in r.message
    assert r.evaluated < r.combinations == 8 and r.objective is not None  # best seen so far
    r = exhaustive(p, time_budget_s=0.0)
    assert r.status == "did_not_finish"


def test_infeasible_fleets_are_reported():
    p = Problem(demands=[Demand(name="a", rate=100.0)], routes=[Route(name="a|agg", demand="a", steps=["a|s"])],
                columns=[_col("c", "h100", 8, {"a|s": 2.0})], sites=[_site("x", "h100", 1.3)])
    assert exhaustive(p).status == "infeasible"
    assert greedy(p).status == "infeasible"


def test_power_cap_is_respected():
    p = _two_class_problem(power_cap_w=7 * 500.0)  # 7 chips
    ex, gr = exhaustive(p), greedy(p)
    # all-l4 (8 chips, $0.8/h) breaks the cap; 6 l4 for a + 1 h100 for b fits
    assert ex.status == "finished" and ex.units == 7 and ex.objective == pytest.approx(0.6 + 1.3)
    assert gr.status == "infeasible"  # greedy takes the 8 l4 chips and breaks the cap


def test_baselines_on_a_generated_instance_use_the_same_problem():
    doc = build_instance(domains=20, chip_types=["h100", "b200", "l4"], classes=2, family="leaf-spine", seed=0,
                         modes=["aggregated", "pd"], rates={"chat": 40.0, "summarisation": 4.0})
    problem, _ = build_problem(Context.of(parse_instance(doc)))
    milp = solve(problem, backend="highs")
    assert milp.status == "optimal"
    opts = class_options(problem)
    assert set(opts) == {"chat", "summarisation"} and all(opts.values())
    assert any(o.route.endswith("|pd") for o in opts["chat"])
    ex, gr, lp = exhaustive(problem), greedy(problem), lp_relaxation(problem)
    assert ex.status == "finished" and ex.objective >= milp.objective * (1 - 1e-6)
    assert gr.status == "finished" and gr.objective >= milp.objective * (1 - 1e-6)
    assert lp.objective <= milp.objective * (1 + 1e-6)
