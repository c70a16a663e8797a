"""Robust plans (``solve --confidence``): step times at the pessimistic end of the held-out error band."""

from __future__ import annotations

import copy

import pytest
from typer.testing import CliRunner

from costmodels.bands import chip_band, step_factor
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.solve import solve
from placement.core.verify.verifier import verify

SMALL = {
    "name": "small-h100", "model": "llama-3.1-8b", "modes": ["pd"],
    "workload": {"classes": [{"name": "chat", "rate_rps": 40.0, "prompt_tokens": 1000, "output_tokens": 200,
                              "ttft_ms": 2000, "tpot_ms": 15}]},
    "hardware": {"switches": ["tor"], "domains": [
        {"name": "h100-hgx", "chip": "h100", "chips_per_domain": 8, "count": 2, "switch": "tor"}]},
}


def _instance(confidence: float | None = None):
    doc = copy.deepcopy(SMALL)
    if confidence is not None:
        doc["confidence"] = confidence
    return parse_instance(doc, "small-h100")


@pytest.fixture(scope="module")
def plans():
    return {c: solve(_instance(c), backend="highs") for c in (None, 0.5, 0.8, 0.9, 0.95)}


def test_plans_are_verified_and_record_their_confidence(plans):
    for c, plan in plans.items():
        assert plan.status == "optimal" and plan.verified, (c, plan.violations)
        assert plan.confidence == c


def test_cost_is_monotone_in_confidence(plans):
    costs = [plans[c].cost_usd_per_hour for c in (0.5, 0.8, 0.9, 0.95)]
    assert costs == sorted(costs), costs
    assert costs[-1] > costs[0], costs  # H100's band is wide enough to cost something (5.2 -> 18.2 $/h)


def test_pool_p90_tpot_meets_the_slo_at_confidence_09(plans):
    plan = plans[0.9]
    decode = [p for p in plan.pools if p.tpot_ms is not None]
    assert decode
    for p in decode:
        assert p.bands is not None and p.bands.levels == [0.1, 0.5, 0.9]
        assert p.bands.tpot_ms[-1] == pytest.approx(p.tpot_ms, rel=1e-9)  # the stated TPOT is the p90
        assert p.bands.tpot_ms[-1] <= 15.0 * (1 + 1e-9)
        assert p.bands.tpot_ms[0] < p.bands.tpot_ms[1] < p.bands.tpot_ms[2]


def test_nominal_plan_bands_bracket_the_prediction(plans):
    plan = plans[None]
    band = chip_band("h100")
    for p in plan.pools:
        assert p.bands is not None and p.bands.family == "NVIDIA Hopper"
        if p.tpot_ms is not None:
            assert p.bands.tpot_ms[1] == pytest.approx(p.tpot_ms * band.factor("tpot", 0.5), rel=1e-9)
        for step, cap in p.capacity_rps_per_replica.items():
            lo, _, hi = p.bands.capacity_rps_per_replica[step]
            assert lo < hi and lo == pytest.approx(cap * band.factor("throughput", 0.1), rel=1e-9)


def test_verifier_checks_at_the_plans_confidence(plans):
    plan = plans[0.9]
    ctx = Context.of(_instance(None))  # the instance file has no confidence: the plan's is used
    assert verify(ctx, plan) == []
    nominal = plan.model_copy(deep=True)
    f = step_factor("h100", "decode", 0.9)
    for p in nominal.pools:
        if p.tpot_ms is not None:
            p.tpot_ms = p.tpot_ms / f
    assert any("tpot_ms" in v for v in verify(ctx, nominal))
    relabelled = plan.model_copy(update={"confidence": None})
    assert any("tpot_ms" in v for v in verify(ctx, relabelled))


def test_cli_refuses_a_confidence_outside_0_1(tmp_path):
    import yaml

    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    result = CliRunner().invoke(app, ["solve", str(path), "--confidence", "1.5", "-q"])
    assert result.exit_code == 2
    assert "--confidence" in result.output


def test_verifier_rejects_edited_bands(plans):
    plan = plans[None].model_copy(deep=True)
    pool = next(p for p in plan.pools if p.bands is not None and p.bands.tpot_ms)
    pool.bands.tpot_ms[-1] = pool.bands.tpot_ms[1]  # a narrower band than the family's
    assert any("bands" in v for v in verify(Context.of(_instance(None)), plan))


def test_printed_plan_shows_each_pools_band(plans):
    from rich.console import Console

    from placement.cli.report import print_plan

    console = Console(record=True, width=220)
    print_plan(console, plans[0.9])
    text = console.export_text()
    assert "priced at confidence 0.9 [p10–p90 band" in text
    decode = next(p for p in plans[0.9].pools if p.tpot_ms is not None)
    lo, hi = decode.bands.tpot_ms[0], decode.bands.tpot_ms[-1]
    assert f"[{lo:.3g}–" in text and f"–{hi:.3g}]" in text, text


def test_pareto_confidence_axis_is_the_cost_of_confidence(plans, tmp_path):
    from placement.cli.confidence_plot import confidence_lines, plot_confidence
    from placement.core.instance.errors import InputError
    from placement.studies.pareto import parse_confidence_levels, run_pareto

    result = run_pareto(_instance(), [], confidence=[0.0, 0.9], variants=False, backend="highs", workers=1)
    assert [a.label for a in result.axes] == ["confidence"]
    costs = {p.values["confidence"]: p.cost_usd_per_hour for p in result.points}
    assert costs == {0.0: plans[None].cost_usd_per_hour, 0.9: plans[0.9].cost_usd_per_hour}
    assert [p.values["confidence"] for p in confidence_lines(result)["heterogeneous"]] == [0.0, 0.9]
    assert plot_confidence(result, tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    for bad in ("0.5,1", "0.5,0.5", "x"):
        with pytest.raises(InputError, match="--confidence"):
            parse_confidence_levels(bad)
