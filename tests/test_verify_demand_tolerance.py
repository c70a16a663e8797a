"""The verifier's demand check is relative to the class rate, with only a tiny absolute floor.

With an absolute 1e-6 req/s floor, a class at 1e-9 req/s whose steps carried no load at all passed,
and the allowed shortfall at 1e6 req/s was a fixed fraction of the rate only by accident of the
floor. Each step of a mode must carry share × rate within 1e-6 of the rate, at any rate.
"""

from __future__ import annotations

import pytest

from placement.core.instance.context import Context
from placement.core.pipeline.solve import solve
from placement.core.verify.serving import check_demand, demand_tolerance_rps
from placement.core.verify.verifier import verify
from tests.test_conditioning import _one_class as _instance


@pytest.fixture(scope="module")
def tiny():
    """The one-class instance at 1e-9 req/s, its context and its solved plan."""
    inst = _instance(1e-9)
    plan = solve(inst, backend="highs")
    assert plan.status == "optimal", plan.message
    return inst, Context.of(inst, "one-class"), plan


def _scaled_loads(plan, factor: float):
    """The plan with every site load multiplied by ``factor`` (fields and totals untouched)."""
    out = plan.model_copy(deep=True)
    for pool in out.pools:
        for site in pool.sites:
            site.load_rps = {step: rate * factor for step, rate in site.load_rps.items()}
    return out


def test_tolerance_scales_with_the_rate():
    assert demand_tolerance_rps(1e6) == pytest.approx(1.0)
    assert demand_tolerance_rps(1.0) == pytest.approx(1e-6)
    assert 0 < demand_tolerance_rps(1e-9) <= 1.01e-15


def test_a_class_at_1e_minus_9_rps_is_served_and_verifies(tiny):
    _, ctx, plan = tiny
    assert plan.verified
    assert verify(ctx, plan) == []
    served = sum(r for p in plan.pools for s in p.sites for r in s.load_rps.values())
    assert served > 0


@pytest.mark.parametrize("factor", [0.0, 0.99, 1.01])
def test_a_class_at_1e_minus_9_rps_short_or_over_served_is_rejected(tiny, factor):
    _, ctx, plan = tiny
    bad = check_demand(ctx, _scaled_loads(plan, factor), [])
    assert any("carries" in v and "expected" in v for v in bad), bad


def test_a_one_percent_shortfall_at_1e6_rps_is_rejected(tiny):
    _, _, plan = tiny
    ctx = Context.of(_instance(1e6), "one-class")
    exact = _scaled_loads(plan, 1e6 / 1e-9)
    assert check_demand(ctx, exact, []) == []
    short = _scaled_loads(plan, 0.99 * 1e6 / 1e-9)
    bad = check_demand(ctx, short, [])
    assert any("carries" in v and "expected" in v for v in bad), bad
