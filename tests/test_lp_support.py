"""One LP support (issue 31): the schedule's start and the two-level solve restrict to the same columns."""

from __future__ import annotations

from solvers import periods, twolevel
from solvers.backends import SolveOptions, run
from solvers.periods import build_periods, restrict_to_lp_support, solve_periods
from solvers.problem import Column, Demand, Part, Problem, Route, Site
from solvers.support import lp_support

RESERVED = {"gpu": 1.0, "lpu": 3.0}


def _problem() -> Problem:
    def col(name: str, resource: str, units: int, rate: float) -> Column:
        return Column(name=name, parts=[Part(resource=resource, units=units)], capacity={"q": rate})

    def site(resource: str, usd: float) -> Site:
        return Site(name=resource, node=resource, resource=resource, units_per_domain=4, domains=4,
                    usd_per_hour_per_unit=usd, power_w_per_unit=1.0)

    # $ per req/s: a 0.5 (what the LP loads), its sibling b 0.57 (two GPUs, same step), the LPU's c 3.0 and
    # d 0.5008 (nearly as good, outside the support: its replica count's reduced cost is 0 at the LP optimum)
    return Problem(demands=[Demand(name="d", rate=5.0)], routes=[Route(name="r", demand="d", steps=["q"])],
                   columns=[col("a", "gpu", 1, 2.0), col("b", "gpu", 2, 3.5), col("c", "lpu", 1, 1.0),
                            col("d", "lpu", 1, 5.99)],
                   sites=[site("gpu", 1.0), site("lpu", 3.0)])


def _fixed(fraction: float) -> set[str]:
    m, pm = build_periods([_problem()], [1.0], reserved_usd_per_hour_per_unit=RESERVED)
    assert run(m, "highs", SolveOptions(mip=False)).has_values
    restrict_to_lp_support(m, pm, "highs", fraction)
    return {key[0] for key, var in pm.periods[0].n.items() if var.upBound == 0}


def test_the_two_heuristics_share_one_support():
    assert twolevel.lp_support is periods.lp_support is lp_support
    assert lp_support(_problem(), {"a"}) == {"a", "b"}


def test_the_schedule_start_keeps_the_lp_support_and_the_columns_nearly_priced_in():
    # d is kept beside the support (priced in), c is not (reduced cost 2.5 $/h, the LP objective 2.5 $/h) ...
    assert _fixed(0.0005) == {"c"}
    # ... unless a reduced cost of up to twice the LP objective counts as nearly priced in
    assert _fixed(2.0) == set()
    out, full = (solve_periods([_problem()], [1.0], reserved_usd_per_hour_per_unit=RESERVED, backend="highs",
                               restrict=r) for r in (0.0005, None))
    assert out.objective == full.objective == 3.0  # three "a": the full MILP's optimum here
