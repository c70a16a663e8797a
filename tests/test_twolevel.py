"""Large problems in two levels (solvers.twolevel): a bound from the collapsed fleet, a plan from its columns.

Forced on small problems (``MIN_SIZE = 0``), the two-level solve must give the
brute-force optimum on every seed and the shipped optima on both backends; its
bound must never exceed the true optimum; the start it hands to the full model
must satisfy every row of that model; and when the full solve ends without an
incumbent of its own, the start must come back as the plan — verified, with
the bound proven by the collapsed fleet.
"""

from __future__ import annotations

import math

import pytest

from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.core.pipeline.problem import build_problem
from placement.core.pipeline.solve import solve as solve_instance
from solvers import bruteforce, solve, twolevel
from solvers.backends import HighsBackend, Outcome, register_solver
from solvers.milp import build_model, solve_model
from tests.test_solvers_bruteforce import SEEDS, random_problem

SHIPPED = ["instances/rubin-lpx-deepseek.yaml", "instances/spec-decode-draft.yaml", "instances/agentic-coding.yaml",
           "instances/trainium-cerebras.yaml"]


def _shipped_problem(path):
    return build_problem(Context.of(load_instance(path)))[0]


@pytest.mark.parametrize("backend", ["cbc", "highs"])
def test_two_level_solve_matches_bruteforce(backend, monkeypatch):
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    mismatches = []
    for seed in SEEDS:
        problem = random_problem(seed)
        ref, sol = bruteforce(problem), solve(problem, backend=backend)
        same = sol.status == ref.status and (
            ref.objective is None or math.isclose(sol.objective, ref.objective, rel_tol=1e-6, abs_tol=1e-9))
        if not same:
            mismatches.append((seed, sol.status, sol.objective, ref.status, ref.objective))
    assert not mismatches


def test_collapsed_bound_never_exceeds_the_optimum():
    checked = 0
    for seed in SEEDS:
        problem = random_problem(seed)
        ref = bruteforce(problem)
        if ref.status != "optimal":
            continue
        lower = solve(twolevel.collapsed(problem), backend="highs")
        assert lower.status == "optimal" and lower.objective <= ref.objective * (1 + 1e-9) + 1e-9, seed
        checked += 1
    assert checked >= 40


@pytest.mark.parametrize("backend", ["cbc", "highs"])
@pytest.mark.parametrize("path", SHIPPED)
def test_two_levels_keep_the_shipped_optimum(path, backend, monkeypatch):
    cold = solve_instance(load_instance(path), backend=backend)
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    warm = solve_instance(load_instance(path), backend=backend)
    assert cold.status == warm.status == "optimal" and warm.verified
    assert warm.cost_usd_per_hour == pytest.approx(cold.cost_usd_per_hour, rel=1e-9)
    assert warm.solver.best_bound <= warm.cost_usd_per_hour * (1 + 1e-9)


def test_starts_satisfy_every_row_of_the_full_model():
    checked = 0
    problems = [random_problem(seed) for seed in SEEDS] + [_shipped_problem(p) for p in SHIPPED[:2]]
    for problem in problems:
        m, v = build_model(problem)
        for smaller in (twolevel.restricted(problem), _collapsed_columns(problem)):
            if smaller is None:
                continue
            sol, part = solve_model(smaller, backend="highs")
            if sol.replicas:
                values = twolevel.start_values(m, v, part)
                assert values is not None and twolevel.violated_rows(m, values) == []
                checked += 1
    assert checked >= 50, checked


def _collapsed_columns(problem):
    lower = solve(twolevel.collapsed(problem), backend="highs")
    return twolevel.restricted(problem, {p.column for p in lower.replicas}) if lower.replicas else None


def test_a_broken_start_is_caught():
    m, _v = build_model(random_problem(SEEDS[0]))
    assert twolevel.violated_rows(m, dict.fromkeys(m.variables(), 0.0))  # serves nothing


@pytest.mark.parametrize("full_status", ["time_limit", "error"])
def test_start_is_the_plan_when_the_full_solve_finds_none(full_status, monkeypatch, request):
    """The full model's solver ends without an incumbent (as HiGHS does at 1,000 domains with
    attention–FFN pairs, benchmarks/RESULTS.md): the start comes back, verified, with the collapsed
    fleet's bound and the gap between them."""
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    monkeypatch.setattr(twolevel, "_within", lambda *args: False)  # never proven by the two small solves
    starts = []
    full_size = len(build_model(_shipped_problem(SHIPPED[0]))[0].variables())

    class FullFindsNothing(HighsBackend):
        def solve(self, model, options):
            if len(model.variables()) != full_size:  # the collapsed and restricted solves: the real thing
                return super().solve(model, options)
            starts.append(options.start)
            return Outcome(full_status, f"highs: {full_status}", False, None, 1.0, "highs")

    register_solver("highs", FullFindsNothing)
    request.addfinalizer(lambda: register_solver("highs", HighsBackend))
    plan = solve_instance(load_instance(SHIPPED[0]), backend="highs", time_limit_s=60)
    assert len(starts) == 1 and starts[0]  # the full solve was handed the start
    assert plan.verified and not plan.violations
    assert plan.status == ("time_limit" if full_status == "time_limit" else "feasible")
    assert "collapsed to one site per resource" in plan.solver.message
    lower = solve(twolevel.collapsed(_shipped_problem(SHIPPED[0])), backend="highs").best_bound
    assert plan.solver.best_bound == pytest.approx(lower)
    assert plan.solver.gap == pytest.approx((plan.cost_usd_per_hour - lower) / plan.cost_usd_per_hour)


def test_small_problems_go_straight_to_the_full_model(monkeypatch):
    calls = []
    monkeypatch.setattr(twolevel, "solve_model", lambda problem, **kw: calls.append(problem) or solve_model(problem, **kw))
    problem = random_problem(SEEDS[0])
    solve(problem, backend="highs")
    assert calls == [problem]


def test_spread_places_the_collapsed_replicas_evenly_and_within_each_group(monkeypatch):
    """5 replicas of 4 units over three groups of 8: the emptiest group first, ties by name."""
    from solvers.problem import Column, Demand, Part, Problem, Route, Site

    problem = Problem(
        demands=[Demand(name="d", rate=5.0)], routes=[Route(name="r", demand="d", steps=["q"])],
        columns=[Column(name="c", parts=[Part(resource="gpu", units=4)], capacity={"q": 1.0})],
        sites=[Site(name=f"s{i}", node=f"v{i}", resource="gpu", units_per_domain=8, domains=1,
                    usd_per_hour_per_unit=1.0, power_w_per_unit=1.0) for i in range(3)])
    lower = solve(twolevel.collapsed(problem), backend="highs")
    assert [r.replicas for r in lower.replicas] == [5]
    _m, v = build_model(problem)
    counts = {key[2]: value for key, value in zip(v.n, twolevel.spread(v, lower).values(), strict=True)}
    assert counts == {"s0": 2.0, "s1": 2.0, "s2": 1.0}
    one_level = solve(problem, backend="highs")
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    two_levels = solve(problem, backend="highs")  # proven by the spread plan: 5 × 4 units at $1
    assert two_levels.message.startswith("two levels") and two_levels.status == "optimal"
    assert one_level.objective == two_levels.objective == 20.0
