"""Solver backends behind one protocol and a registry by name (solvers.backends)."""

from __future__ import annotations

import pulp
import pytest

from solvers import Column, Demand, Part, Problem, Route, Site
from solvers.backends import (
    Backend,
    Capabilities,
    CbcBackend,
    HighsBackend,
    Outcome,
    SolveOptions,
    UnknownSolverError,
    available_solvers,
    get_solver,
    register_solver,
    registered_solvers,
    unregister_solver,
)
from solvers.milp import solve


def _problem() -> Problem:
    return Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
                   columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
                   sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
                               usd_per_hour_per_unit=1.5, power_w_per_unit=1.0)])


def test_the_registry_lists_both_backends():
    assert registered_solvers()[:2] == ["cbc", "highs"]
    assert {"cbc", "highs"} <= set(available_solvers())
    assert isinstance(get_solver("cbc"), CbcBackend) and isinstance(get_solver("highs"), HighsBackend)
    for name in ("cbc", "highs"):
        backend = get_solver(name)
        assert isinstance(backend, Backend) and backend.name == name and backend.available()


def test_capabilities_are_what_each_backend_supports():
    assert get_solver("highs").capabilities == Capabilities(start=True, best_bound=True, objective_target=True,
                                                            time_limit=True)
    assert get_solver("cbc").capabilities == Capabilities(start=True, best_bound=True, objective_target=False,
                                                          time_limit=True)


def test_an_unknown_name_is_a_clear_error_listing_the_registered_names():
    with pytest.raises(UnknownSolverError, match=r"unknown solver 'nope'; registered: cbc, highs"):
        get_solver("nope")
    sol = solve(_problem(), backend="nope")  # through the MILP: a status, never an exception
    assert sol.status == "error" and "unknown solver 'nope'" in sol.message and "highs" in sol.message


def test_a_registered_backend_is_the_one_milp_solve_uses(request):
    """The seam: a fake backend answers with HiGHS's values and says it was called, with the options."""
    seen: list[SolveOptions] = []

    class Fake:
        name = "fake"
        capabilities = Capabilities(start=False, best_bound=False, objective_target=False, time_limit=False)

        def available(self) -> bool:
            return True

        def solve(self, model: pulp.LpProblem, options: SolveOptions) -> Outcome:
            seen.append(options)
            done = HighsBackend().solve(model, options)
            return Outcome(done.status, "fake: answered", done.has_values, done.bound, 0.0, self.name)

    register_solver("fake", Fake)
    request.addfinalizer(lambda: unregister_solver("fake"))
    assert "fake" in registered_solvers() and "fake" in available_solvers()
    sol = solve(_problem(), backend="fake", gap=0.01, time_limit_s=30)
    assert sol.status == "optimal" and sol.objective == 3.0 and sol.message.startswith("fake: answered")
    assert sol.backend == "fake"
    assert len(seen) == 1 and seen[0].mip and seen[0].gap == 0.01 and seen[0].time_limit_s == 30
    unregister_solver("fake")
    assert solve(_problem(), backend="fake").status == "error"


@pytest.mark.parametrize("name", ["cbc", "highs"])
def test_both_backends_report_the_same_optimum_and_bound(name):
    m = pulp.LpProblem("t")
    x = m.add_variable("x", 0, 5, pulp.LpInteger)
    m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression({x: 2.0}), pulp.LpConstraintGE, "c", 3))
    m.setObjective(pulp.LpAffineExpression({x: 1.0}))
    outcome = get_solver(name).solve(m, SolveOptions())
    assert (outcome.status, outcome.bound, outcome.has_values, outcome.backend) == ("optimal", 2.0, True, name)
    assert x.varValue == pytest.approx(2.0)


def test_cbc_cut_off_before_its_result_is_not_called_infeasible():
    """A solution file read as infeasible, with a CBC log that has no result line (the time limit cut CBC
    off first), is no proof: the outcome is a time limit, not infeasible; with the result line it is."""
    import pulp

    from solvers.backends.pulp_cmd import pulp_outcome

    m = pulp.LpProblem("cut")
    m.status, m.sol_status = pulp.LpStatusInfeasible, pulp.LpSolutionInfeasible
    cut = pulp_outcome(m, "cbc", 0.06, 0.05, "Welcome to the CBC MILP Solver\nContinuous objective value is 1\n")
    assert cut.status == "time_limit" and "no proof" in cut.message
    proven = pulp_outcome(m, "cbc", 0.06, 0.05, "Result - Problem proven infeasible\n")
    assert proven.status == "infeasible"


def test_cbc_preprocessing_cut_short_by_the_time_limit_is_not_called_infeasible():
    """CBC's pre-processing stopped by a 0.05 s limit says "infeasible or unbounded" of a feasible model (seen:
    4 of 60 runs of tests/test_solvers_milp.py's hard problem on a loaded machine); said in time, it stands."""
    import pulp

    from solvers.backends.pulp_cmd import _WATCHDOG_LINE, pulp_outcome

    m = pulp.LpProblem("cut")
    m.status, m.sol_status = pulp.LpStatusInfeasible, pulp.LpSolutionInfeasible
    log = ("Continuous objective value is 6.57839 - 0.03 seconds\n"
           "Cgl0000I Cut generators found to be infeasible! (or unbounded)\n"
           "Pre-processing says infeasible or unbounded\n")
    for seconds, tail, says in [(0.07, "", "no proof"), (0.04, _WATCHDOG_LINE + "\n", "watchdog")]:
        cut = pulp_outcome(m, "cbc", seconds, 0.05, log + tail)
        assert cut.status == "time_limit" and says in cut.message
    assert pulp_outcome(m, "cbc", 0.04, 0.05, log).status == "infeasible"
    assert pulp_outcome(m, "cbc", 0.5, None, log).status == "infeasible"
