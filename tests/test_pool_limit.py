"""The pool limit (``limits.max_pools_per_stage``, ``solve --max-pools-per-stage``): at most N pools
carry load of each class and stage, the plans still verify, cost no less than the free plan, and
among equal-cost plans the one with fewer pools wins."""

import copy
import json
from collections import Counter

import pytest
from typer.testing import CliRunner

import placement
from placement.cli.app import app
from placement.core.instance.loading import parse_instance
from placement.modes import StepId
from solvers.problem import Column, Demand, Part, PoolLimit, Problem, Route, Site
from tests.toy_fixture import TOY, toy_instance

runner = CliRunner()


def limited(inst, n):
    return inst.model_copy(update={"limits": inst.limits.model_copy(update={"max_pools_per_stage": n})})


def pools_per_stage(plan) -> Counter:
    """(class, stage) -> pools carrying load of it (a pool serving two classes counts in each)."""
    out = Counter()
    for p in plan.pools:
        carried = {StepId.parse(q) for s in p.sites for q, r in s.load_rps.items() if r > 0}
        out.update({(q.traffic_class, q.stage) for q in carried})
    return out


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_one_pool_per_class_and_stage(backend):
    free = placement.solve(toy_instance(), backend=backend)
    one = placement.solve(limited(toy_instance(), 1), backend=backend)
    assert free.verified and one.verified and one.status == "optimal"
    assert max(pools_per_stage(free).values()) == 2  # long-in-short-out is split over A10G and A100
    assert set(pools_per_stage(one).values()) == {1}
    # Each bucket on one GPU type is Mélange's single-type optimum: 3 A10G + 1 A100 = $6.70/h
    # (instances/melange-toy.yaml), against $4.68/h split.
    assert free.cost_usd_per_hour == pytest.approx(4.68)
    assert one.cost_usd_per_hour == pytest.approx(6.70)


def test_a_limit_that_does_not_bind_keeps_the_optimum():
    two = placement.solve(limited(toy_instance(), 2), backend="highs")
    assert two.verified and two.cost_usd_per_hour == pytest.approx(4.68)
    assert max(pools_per_stage(two).values()) <= 2


def test_fewer_pools_win_between_equal_cost_plans():
    """Two chip types at the same price and capacity: 2+0, 1+1 and 0+2 replicas all cost $2/h and 2 chips;
    with the limit on (even one that cannot bind) the plan uses one pool."""
    doc = copy.deepcopy(TOY)
    doc["workload"]["classes"] = [dict(doc["workload"]["classes"][0], rate_rps=4)]
    for d in doc["hardware"]["domains"]:
        d["usd_per_hour_per_chip"] = 1.0
    doc["measured_capacity"] = [{"chip": c, "class": "short-in-short-out", "max_rps_per_replica": 2}
                                for c in ("a10g", "a100-80gb")]
    for backend in ("highs", "cbc"):
        plan = placement.solve(limited(parse_instance(copy.deepcopy(doc)), 50), backend=backend)
        assert plan.verified and plan.cost_usd_per_hour == pytest.approx(2.0)
        assert len(plan.pools) == 1


def test_problem_without_a_limit_serialises_as_before():
    p = Problem(demands=[Demand(name="d", rate=1.0)], routes=[Route(name="r", demand="d", steps=["q"])],
                columns=[Column(name="c", parts=[Part(resource="g", units=1)], capacity={"q": 1.0})],
                sites=[Site(name="s", node="s", resource="g", units_per_domain=1, domains=1,
                            usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    limited_p = p.model_copy(update={"pool_limit": PoolLimit(max_columns=1, groups={"d|x": ["q"]})})
    assert "pool_limit" not in p.model_dump() and limited_p.model_dump() == p.model_dump()


def test_solve_option(tmp_path):
    (tmp_path / "toy.json").write_text(json.dumps(TOY))
    out = tmp_path / "plan.json"
    r = runner.invoke(app, ["solve", str(tmp_path / "toy.json"), "--max-pools-per-stage", "1", "--json", str(out),
                            "-q", "--solver", "highs"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["cost_usd_per_hour"] == pytest.approx(6.70)
    r = runner.invoke(app, ["solve", str(tmp_path / "toy.json"), "--max-pools-per-stage", "0"])
    assert r.exit_code == 2 and "max-pools-per-stage" in r.output


def test_limit_is_an_instance_field_sweeps_can_set():
    doc = copy.deepcopy(TOY)
    doc["limits"] = {"max_pools_per_stage": 0}
    with pytest.raises(Exception, match="max_pools_per_stage"):
        parse_instance(doc)


def test_each_pool_binary_carries_the_tie_break():
    from solvers.milp import build_model

    cols = [Column(name=f"c{i}", parts=[Part(resource="g", units=1)], capacity={"q": 2.0}) for i in (1, 2, 3)]
    p = Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
                columns=cols, sites=[Site(name="s", node="s", resource="g", units_per_domain=1, domains=4,
                                          usd_per_hour_per_unit=2.0, power_w_per_unit=1.0)],
                pool_limit=PoolLimit(max_columns=2, groups={"d|decode": ["q"]}))
    m, v = build_model(p)
    assert sorted(v.u) == [("c1", "d|decode"), ("c2", "d|decode"), ("c3", "d|decode")]
    assert all(var.cat == "Integer" and var.upBound == 1 for var in v.u.values())
    weights = {var.name: m.objective.get(var) for var in v.u.values()}
    assert all(0 < w < 1e-5 for w in weights.values())  # ε·w_min, far below one unit's $2/h
    count = next(c for c in m.constraints() if c.name == "pool_count__d_decode")
    assert count.constant == -2 and {var.name for var in count} == set(weights)
