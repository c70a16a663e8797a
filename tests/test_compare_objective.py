"""``compare``'s savings are measured in the instance's objective ($/h, W or chips) and labelled so."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from placement import load_instance
from placement.cli.report import print_comparison
from placement.studies.compare import compare

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def toy():
    return load_instance(ROOT / "instances" / "melange-toy.yaml")


@pytest.mark.parametrize(("objective", "field"), [("cost", "cost_usd_per_hour"), ("power", "power_w"),
                                                   ("chips", "chips")])
def test_savings_use_the_objectives_unit(toy, objective, field):
    rows = compare(toy.model_copy(update={"objective": objective}))
    full = getattr(rows[0], field)
    others = [r for r in rows[1:] if r.savings is not None]
    assert others
    for r in others:
        assert r.savings_of == objective
        assert r.savings == pytest.approx(1 - full / getattr(r, field), abs=1e-9)


def test_power_savings_differ_from_cost_savings(toy):
    by_cost = {r.label: r for r in compare(toy)}
    by_power = {r.label: r for r in compare(toy.model_copy(update={"objective": "power"}))}
    a10g, full = "only a10g", by_power["heterogeneous, all modes"]
    assert by_power[a10g].savings == pytest.approx(1 - full.power_w / by_power[a10g].power_w, abs=1e-9)
    assert by_power[a10g].savings != pytest.approx(by_cost[a10g].savings, abs=1e-3)


def test_the_table_names_the_unit(toy):
    console = Console(record=True, width=200)
    print_comparison(console, compare(toy.model_copy(update={"objective": "power"})))
    text = console.export_text()
    assert "full plan saves (power)" in text and "($/h)" not in text


def test_every_objective_an_instance_may_name_measures_a_verified_plan(toy):
    from placement.core.instance.objectives import OBJECTIVES
    from placement.core.pipeline.solve import solve
    from placement.core.plans.plan import Plan
    from placement.studies.compare import objective_value

    plan = solve(toy, backend="highs")
    assert list(OBJECTIVES) == ["cost", "power", "chips"]
    assert [objective_value(plan, name) for name in OBJECTIVES] == [plan.cost_usd_per_hour, plan.power_w, plan.chips]
    with pytest.raises(ValueError, match="unknown objective 'latency'"):
        objective_value(Plan(instance="t", status="infeasible", objective="cost"), "latency")
