"""Chip price sets (topology/catalog/prices.yaml, ``--prices``): every price sourced, estimates derived as
the file says, a plan priced with the set it records and checked with it, and the default set leaving
every plan as it was."""

import json
import re
import statistics

import pytest
import yaml
from typer.testing import CliRunner

import placement
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.loading import parse_instance, with_prices
from placement.core.replicas.candidate_cache import candidate_key
from topology import prices as price_module
from topology.chips import load_chip_catalog
from topology.prices import DEFAULT_PRICES, PriceSet, load_price_sets

runner = CliRunner()

#: An instance on catalogue chips at their catalogue prices (no price of its own).
DOC = {
    "name": "priced", "model": "llama-3.1-8b", "modes": ["aggregated"],
    "workload": {"classes": [{"name": "chat", "rate_rps": 4, "prompt_tokens": 500, "output_tokens": 100,
                              "ttft_ms": 2000, "tpot_ms": 60}]},
    "hardware": {"switches": ["tor"], "domains": [
        {"name": "h100s", "chip": "h100", "chips_per_domain": 1, "count": 4, "switch": "tor"},
        {"name": "l4s", "chip": "l4", "chips_per_domain": 1, "count": 4, "switch": "tor"}]},
}


@pytest.fixture(scope="module")
def inst():
    return parse_instance(json.loads(json.dumps(DOC)))


def test_every_price_is_sourced_and_every_estimate_says_so():
    sets = load_price_sets()
    assert next(iter(sets)) == DEFAULT_PRICES and not sets[DEFAULT_PRICES].prices  # tco: the chip catalogue's
    chips = load_chip_catalog()
    for s in sets.values():
        assert s.description and s.as_of
        for p in s.prices:
            assert p.chip in chips, p.chip
            assert p.source.startswith("estimate") == p.estimate, p
            if not p.estimate:  # a page and its date
                assert re.search(r"\b20\d\d\b", p.source) and re.search(r"[a-z]\.[a-z]{2,}/[a-z0-9]",
                                                                        p.source), p


def test_the_estimates_are_tco_times_the_median_ratio_of_the_independently_sourced_chips():
    """The header's rule: the median on-demand / TCO of the chips whose TCO is not itself derived from an
    on-demand price (chips.yaml method M), times each estimated chip's TCO."""
    chips = load_chip_catalog()
    od = load_price_sets()["on-demand"]
    independent = [p for p in od.prices if not p.estimate
                   and not chips[p.chip].sources["usd_per_hour"].startswith("estimate (M)")]
    assert {p.chip for p in independent} == {"h100", "h200", "b200", "gb200", "mi300x"}
    ratio = round(statistics.median(p.usd_per_hour / chips[p.chip].usd_per_hour for p in independent), 2)
    assert ratio == 2.31
    for p in od.prices:
        if p.estimate:
            assert p.usd_per_hour == pytest.approx(chips[p.chip].usd_per_hour * ratio, abs=0.006), p.chip
            assert f"x {ratio}" in p.source


def test_on_demand_prices_the_fleet_and_the_plan_records_and_checks_it(inst):
    od = load_price_sets()["on-demand"]
    plan = placement.solve(inst, backend="highs", prices="on-demand")
    assert plan.verified and plan.provenance.prices == "on-demand"
    for p in plan.pools:
        assert p.usd_per_hour == pytest.approx(p.chips * od.price(p.chip).usd_per_hour)
    assert any(n.startswith("chip prices: the on-demand set") for n in plan.notes)
    result = placement.check(inst, plan)  # the instance says tco: the plan is checked with its own set
    assert result.ok, result.violations
    assert any("price set on-demand" in w for w in result.warnings)
    tco = placement.solve(inst, backend="highs")
    catalogue = load_chip_catalog()
    assert tco.provenance.prices == DEFAULT_PRICES and not any(n.startswith("chip prices") for n in tco.notes)
    for p in tco.pools:
        assert p.usd_per_hour == pytest.approx(p.chips * catalogue[p.chip].usd_per_hour)
    assert plan.cost_usd_per_hour > tco.cost_usd_per_hour


def test_a_plan_priced_otherwise_fails_the_check_when_its_costs_are_not_its_sets(inst):
    plan = placement.solve(inst, backend="highs", prices="on-demand")
    plan.provenance.prices = DEFAULT_PRICES  # claims tco, but its pools cost on-demand prices
    result = placement.check(inst, plan)
    assert not result.ok and any("usd_per_hour" in v or "cost" in v for v in result.violations)


def test_prices_do_not_change_the_candidates(inst):
    assert candidate_key(Context.of(inst)) == candidate_key(Context.of(with_prices(inst, "on-demand")))


def test_a_chip_copied_by_set_keeps_the_set_price(inst):
    """``--set hardware.chips.h100.…`` copies the catalogue chip into the instance: at the instance's set."""
    changed = placement.with_changes(with_prices(inst, "on-demand"), {"hardware.chips.h100.step_overhead_s": 0.003})
    assert Context.of(changed).sites["h100s"].usd_per_hour_per_chip == 3.00


def test_an_own_price_wins_over_the_set(inst):
    doc = json.loads(json.dumps(DOC))
    doc["hardware"]["domains"][0]["usd_per_hour_per_chip"] = 9.5
    ctx = Context.of(with_prices(parse_instance(doc), "on-demand"))
    assert ctx.sites["h100s"].usd_per_hour_per_chip == 9.5 and ctx.sites["l4s"].usd_per_hour_per_chip == 0.48


def test_unknown_sets_and_unpriced_chips_are_input_errors(inst, monkeypatch):
    with pytest.raises(InputError, match="unknown price set 'spot'") as e:
        with_prices(inst, "spot")
    assert e.value.field == "--prices"
    doc = json.loads(json.dumps(DOC))
    doc["prices"] = "retail"
    with pytest.raises(InputError, match="unknown price set 'retail'"):
        parse_instance(doc)
    narrow = {**load_price_sets(), "narrow": PriceSet(name="narrow", description="h100 only", as_of="2026",
                                                      prices=[load_price_sets()["on-demand"].price("h100")])}
    monkeypatch.setattr(price_module, "load_price_sets", lambda: dict(narrow))
    monkeypatch.setattr("placement.core.instance.loading.load_price_sets", lambda: dict(narrow))
    with pytest.raises(InputError, match="price set 'narrow' has no price for chip 'l4'") as e:
        Context.of(inst.model_copy(update={"prices": "narrow"}))
    assert e.value.field == "hardware.domains[1].chip"


def test_the_cli_option_prices_solve_and_report_takes_the_plan(tmp_path):
    path = tmp_path / "priced.yaml"
    path.write_text(yaml.safe_dump(DOC))
    plan_path = tmp_path / "plan.json"
    r = runner.invoke(app, ["solve", str(path), "--prices", "on-demand", "--headroom", "0.9", "--json",
                            str(plan_path), "-q"])
    assert r.exit_code == 0, r.output
    says = json.loads(plan_path.read_text())["provenance"]
    assert says["prices"] == "on-demand" and says["slo_headroom"] == 0.9
    r = runner.invoke(app, ["check", str(path), str(plan_path)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(plan_path), "--instance", str(path), "--html", str(tmp_path / "p.html")])
    assert r.exit_code == 0, r.output  # the file's hash, at the plan's settings, is the plan's
    r = runner.invoke(app, ["solve", str(path), "--prices", "spot", "-q"])
    assert r.exit_code == 2 and "spot" in r.output


def test_every_planning_command_takes_prices():
    import typer

    commands = typer.main.get_command(app).commands
    for name in ("solve", "capacity", "compare", "sweep", "pareto", "marginal", "replan", "schedule", "kv-prices"):
        assert "prices" in [p.name for p in commands[name].params], name


def test_an_instance_that_asks_for_a_price_set_refuses_a_plan_priced_with_another(inst):
    plan = placement.solve(inst, backend="highs")  # tco
    result = placement.check(with_prices(inst, "on-demand"), plan)
    assert not result.ok
    assert result.violations[0] == "provenance.prices: the plan says 'tco', the instance 'on-demand'"


def test_the_catalogue_lists_every_set_with_its_sources():
    r = runner.invoke(app, ["catalog", "prices", "--json", "-"])
    assert r.exit_code == 0, r.output
    rows = {row["chip"]: row for row in json.loads(r.stdout)}
    assert set(rows) == set(load_chip_catalog())
    assert rows["h100"]["on-demand"] == {"usd_per_hour": 3.0, "estimate": False,
                                         "source": load_price_sets()["on-demand"].price("h100").source}
    assert rows["wse3"]["on-demand"]["estimate"] and rows["wse3"]["tco"]["estimate"]
    r = runner.invoke(app, ["catalog", "prices"])
    assert r.exit_code == 0 and "238.62*" in r.output and "--prices NAME" in r.output


def test_a_replan_keeps_the_running_plans_price_set_unless_told(inst):
    running = placement.solve(inst, backend="highs", prices="on-demand")
    new = placement.replan(inst, running, backend="highs")
    assert new.verified and new.provenance.prices == "on-demand"
    assert any("re-planned at the plan's" in n and "on-demand" in n for n in new.notes)
    tco = placement.replan(inst, running, backend="highs", prices="tco")
    assert tco.provenance.prices == "tco" and not any("price set" in n for n in tco.notes)
