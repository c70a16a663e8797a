"""``placement capacity``: the largest servable rate of a fleet as given, its bracket, plan and band."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance, parse_instance
from placement.core.operations.profile import with_rates
from placement.core.pipeline.solve import solve
from placement.core.replicas.candidate_cache import cached_generate
from placement.studies.capacity import MIX, capacity, largest_scale

runner = CliRunner()


def one_chip_type(count: int = 2, chips_per_domain: int = 8, model: str = "llama-3.1-70b",
                  tpot_ms: float = 50.0) -> dict:
    return {"name": "h100-fleet", "model": model,
            "workload": {"classes": [{"name": "chat", "rate_rps": 1, "prompt_tokens": 2000, "output_tokens": 400,
                                      "ttft_ms": 2000, "tpot_ms": tpot_ms}]},
            "hardware": {"domains": [{"name": "h100", "chip": "h100", "chips_per_domain": chips_per_domain,
                                      "count": count}]},
            "modes": ["aggregated"]}


def test_the_search_brackets_a_threshold_from_above_and_below():
    for limit in (0.003, 0.7, 1.0, 55.5, 4e6):
        lo, hi, plan, n, status = largest_scale(lambda s, t=limit: "plan" if s <= t else None, rtol=1e-3)
        assert status == "optimal" and lo <= limit < hi and hi / lo <= 1.001 + 1e-12, (limit, lo, hi)
        assert plan == "plan" and n < 40
    assert largest_scale(lambda s: "plan")[4] == "unbounded"
    assert largest_scale(lambda s: None)[:3] == (0.0, largest_scale(lambda s: None)[1], None)
    assert largest_scale(lambda s: None)[4] == "none"


def test_a_fleet_of_one_chip_type_packs_its_best_replicas():
    inst = parse_instance(one_chip_type(), "fleet.yaml")
    cap = capacity(inst, backend="highs", band=False, rtol=1e-3)[0]
    assert cap.target == "chat" and cap.status == "optimal" and cap.verified and cap.chips <= 16
    # Bounds from the candidates (aggregated replicas: one step each): the best single configuration packed
    # into the fleet (the MILP can do at least that), and every chip at the best capacity per chip (no better).
    cands = cached_generate(Context.of(inst))
    per_replica = {c.name: (c.capacity, c.parts[0].units) for c in cands.columns}
    packed = max(sum(cap_.values()) * (16 // units) for cap_, units in per_replica.values())
    per_chip = max(sum(cap_.values()) / units for cap_, units in per_replica.values())
    rate = cap.rate_rps["chat"]
    assert packed * (1 - 1e-3) <= rate * (1 + 1e-9) and rate <= 16 * per_chip * (1 + 1e-9)
    assert cap.output_tokens_per_s == pytest.approx(rate * 400)
    # The bracket is real: the plan at s* is verified, just above the bracket's top nothing serves.
    above = solve(with_rates(inst, {"chat": cap.scale_infeasible * 1.0001}), backend="highs", diagnose=False)
    assert above.status == "infeasible"


def test_the_band_brackets_the_nominal_capacity():
    inst = parse_instance(one_chip_type(count=1), "fleet.yaml")
    cap = capacity(inst, backend="highs", rtol=1e-2)[0]
    band = cap.band_output_tokens_per_s
    assert band["p10"] < cap.output_tokens_per_s < band["p90"]


def test_the_mix_keeps_the_instance_proportions():
    inst = load_instance("instances/melange-toy.yaml")
    mix = capacity(inst, targets=[MIX], backend="highs", band=False, rtol=1e-2)[0]
    stated = {c.name: c.rate_rps for c in inst.workload.classes}
    assert {k: pytest.approx(v / mix.scale) for k, v in mix.rate_rps.items()} == stated
    assert mix.plan is not None and mix.plan.verified


def test_cli_capacity_json_and_exit_codes(tmp_path):
    out = tmp_path / "cap.json"
    r = runner.invoke(app, ["capacity", "instances/melange-toy.yaml", "--class", "long-in-short-out", "--mix",
                            "--no-band", "--rtol", "0.01", "--json", str(out), "--solver", "highs"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert [d["target"] for d in doc] == ["long-in-short-out", "mix"]
    assert all(d["verified"] and d["plan"]["verified"] for d in doc)
    r = runner.invoke(app, ["capacity", "instances/melange-toy.yaml", "--class", "nope"])
    assert r.exit_code == 2 and "unknown class 'nope'" in r.output
    r = runner.invoke(app, ["capacity", "instances/melange-toy.yaml", "--rtol", "0"])
    assert r.exit_code == 2 and "--rtol" in r.output


def test_a_fleet_that_cannot_hold_the_model_is_exit_3_with_its_diagnosis(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(json.dumps(one_chip_type(count=1, chips_per_domain=1, model="llama-3.1-405b")))
    r = runner.invoke(app, ["capacity", str(path.with_suffix(".yaml")), "--no-band", "--solver", "highs"])
    assert r.exit_code == 3, r.output
    assert "not servable at any rate" in r.output and "memory" in r.output


def test_an_undecided_probe_counts_unservable_and_the_result_says_so():
    """A probe that ends its time budget with neither plan nor proof (status time_limit, no pools) is counted
    unservable: s* stays a servable scale, the status says the top is unproven, the scales are named."""
    from types import SimpleNamespace

    from placement.studies.capacity import _search

    inst = parse_instance(one_chip_type(), "fleet")
    seen = []

    def fake_solve(scaled, gap, diagnose, probe=False):
        s = scaled.workload.classes[0].rate_rps
        seen.append(s)
        if s <= 3.0:
            return SimpleNamespace(status="optimal", pools=["pool"], verified=True)
        return SimpleNamespace(status="time_limit" if s <= 3.5 else "infeasible", pools=[], verified=False)

    lo, hi, plan, probes, status, undecided, proven = _search(inst, {"chat": 1.0}, fake_solve, 1e-3, None, None)
    assert lo <= 3.0 < hi and hi / lo <= 1.001 + 1e-12 and plan.pools and probes == len(seen)
    assert status == "lower_bound" and hi in undecided and all(3.0 < s <= 3.5 for s in undecided)
    assert proven is not None and proven > 3.5 and proven == min(s for s in seen if s > 3.5)
    # every probe is decided: the bracket's top is a proof
    lo, hi, _, _, status, undecided, proven = _search(
        inst, {"chat": 1.0}, lambda scaled, gap, diagnose, probe=False: SimpleNamespace(
            status="optimal" if scaled.workload.classes[0].rate_rps <= 3.0 else "infeasible",
            pools=["pool"] if scaled.workload.classes[0].rate_rps <= 3.0 else [], verified=True),
        1e-3, None, None)
    assert status == "optimal" and undecided == [] and proven == hi


def test_probe_time_limit_must_be_seconds(tmp_path):
    r = runner.invoke(app, ["capacity", "instances/melange-toy.yaml", "--no-band", "--probe-time-limit", "-1"])
    assert r.exit_code == 2 and "--probe-time-limit" in r.output and "Traceback" not in r.output
