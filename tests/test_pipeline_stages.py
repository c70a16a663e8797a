"""Pipeline stages: plans hold to the stages each chip's calibration measured, ``serving.max_pipeline_stages``
overrides, and the plan's note.

No measured GPU run in the calibration used pipeline stages, and on held-out campaigns the planner's
pipeline-parallel plans were its most optimistic (benchmarks/CAPACITY.md, "plan pipeline-parallel"). The
probe: Qwen3-235B FP8 offline (2,048 / 128 tokens) on 8-GPU H200 domains, where the cheapest plan the model
sees when stages are allowed runs four (tp1·pp4: 59 GB of weights a stage, every stage busy with a micro-batch).
"""

from __future__ import annotations

import copy

import pytest

import placement
from placement.core.instance.loading import parse_instance

PROBE = {
    "name": "pp-probe", "model": "qwen3-235b-a22b", "precision": {"weights": "fp8", "kv": "fp8"},
    "modes": ["aggregated"],
    "workload": {"classes": [{"name": "offline", "rate_rps": 20, "prompt_tokens": 2048, "output_tokens": 128,
                              "ttft_ms": 60000, "tpot_ms": 1000}]},
    "hardware": {"domains": [{"name": "h200-hgx", "chip": "h200", "chips_per_domain": 8, "count": 8}]},
}


def _probe(max_stages=None):
    doc = copy.deepcopy(PROBE)
    if max_stages is not None:
        doc["serving"] = {"max_pipeline_stages": max_stages}
    return parse_instance(doc)


@pytest.fixture(scope="module")
def plans():
    default, allowed, capped = _probe(), _probe(8), _probe(1)
    return {"default": (default, placement.solve(default, backend="highs")),
            "allowed": (allowed, placement.solve(allowed, backend="highs")),
            "capped": (capped, placement.solve(capped, backend="highs"))}


def test_by_default_plans_hold_to_the_stages_the_chip_was_measured_at(plans):
    """H200's factors were fitted on runs without pipeline stages: unless the instance allows them, none."""
    _, default_plan = plans["default"]
    _, capped_plan = plans["capped"]
    assert default_plan.verified and default_plan.status == "optimal"
    assert all(p.pp == 1 for p in default_plan.pools)
    assert not any("pipeline stages" in n for n in default_plan.notes)
    assert default_plan.cost_usd_per_hour == pytest.approx(capped_plan.cost_usd_per_hour, rel=1e-9)


def test_allowed_plan_runs_stages_and_says_they_are_not_measured(plans):
    _, allowed_plan = plans["allowed"]
    assert allowed_plan.verified and max(p.pp for p in allowed_plan.pools) > 1
    for p in (p for p in allowed_plan.pools if p.pp > 1):
        assert any(n.startswith(f"{p.id} runs {p.pp} pipeline stages on h200 (serving.max_pipeline_stages "
                                "allows them)") for n in allowed_plan.notes), allowed_plan.notes


def test_capped_plan_runs_none_and_costs_at_least_as_much(plans):
    _, allowed_plan = plans["allowed"]
    _, capped_plan = plans["capped"]
    assert capped_plan.verified and capped_plan.status == "optimal"
    assert all(p.pp == 1 for p in capped_plan.pools)
    assert capped_plan.cost_usd_per_hour >= allowed_plan.cost_usd_per_hour - 1e-9
    assert not any("pipeline stages" in n for n in capped_plan.notes)


def test_the_verifier_refuses_stages_beyond_the_cap_or_the_calibrated_ones(plans):
    _, allowed_plan = plans["allowed"]
    capped, _ = plans["capped"]
    default, _ = plans["default"]
    result = placement.check(capped, allowed_plan)
    assert not result.ok
    assert any("pipeline stages exceed serving.max_pipeline_stages: 1" in v for v in result.violations), \
        result.violations
    result = placement.check(default, allowed_plan)
    assert not result.ok
    assert any("pipeline stages exceed the stages h200's calibration measured" in v for v in result.violations), \
        result.violations


def test_a_replica_wider_than_a_domain_may_take_the_stages_it_needs():
    """Llama-3.1-405B in BF16 (810 GB of weights) does not fit one 8-GPU H100 domain: its 16-GPU replicas need
    two stages, one a domain; the plan says they rest on the step model."""
    from placement.core.instance.context import Context

    doc = {"name": "wide", "model": "llama-3.1-405b", "precision": {"weights": "bf16", "kv": "bf16"},
           "modes": ["aggregated"],
           "workload": {"classes": [{"name": "chat", "rate_rps": 0.5, "prompt_tokens": 1024, "output_tokens": 128,
                                     "ttft_ms": 60000, "tpot_ms": 1000}]},
           "hardware": {"domains": [{"name": "h100-hgx", "chip": "h100", "chips_per_domain": 8, "count": 2}]}}
    inst = parse_instance(doc)
    ctx = Context.of(inst)
    assert [ctx.most_pipeline_stages("h100", n, 8) for n in (8, 16)] == [1, 2]
    plan = placement.solve(inst, backend="highs")
    assert plan.verified and plan.pools and all(p.pp == 2 for p in plan.pools)
    assert any("(its replicas span more than one scale-up domain)" in n for n in plan.notes), plan.notes


def test_an_overlay_states_the_stages_its_measurements_ran():
    """A chip the user calibrated on pipelined runs: the overlay's stages, not the catalogue's, hold its plans."""
    from placement.core.instance.calibration_overlay import (
        LEVELS,
        BandRecord,
        CalibrationOverlay,
        ChipCalibration,
    )
    from placement.core.instance.context import Context

    band = BandRecord(n=0, quantiles=[0.8 + 0.4 * i / max(len(LEVELS) - 1, 1) for i in range(len(LEVELS))])
    bands = {m: band for m in ("tpot", "ttft", "throughput")}
    for stages, expected in ((4, 4), (None, 1)):
        overlay = CalibrationOverlay(chips={"h200": ChipCalibration(bands=bands, points=3, pipeline_stages=stages)})
        ctx = Context.of(_probe().model_copy(update={"calibration": overlay}))
        assert ctx.most_pipeline_stages("h200", 8, 8) == expected


@pytest.mark.parametrize("bad", [0, -1, 2.5, "two"])
def test_a_bad_cap_is_refused_naming_the_field(bad):
    doc = copy.deepcopy(PROBE)
    doc["serving"] = {"max_pipeline_stages": bad}
    with pytest.raises(placement.InputError, match="max_pipeline_stages"):
        parse_instance(doc)


def test_the_note_follows_each_chips_measured_stages():
    """WSE-3 and Groq were calibrated on pipelined runs (Llama-3.1-405B over 20 wafers, Llama-2-70B over 72
    LPU stages): a plan within those stages needs no note, one beyond says how many were measured."""
    from types import SimpleNamespace as NS

    from placement.core.pipeline.assemble import pipeline_notes
    from topology.chips import load_chip_catalog

    cat = load_chip_catalog()
    assert cat["h100"].calibrated_pipeline_stages == 1 and cat["wse3"].calibrated_pipeline_stages == 20
    assert cat["rubin"].calibrated_pipeline_stages is None  # uncalibrated: its band says more than a note
    ctx = NS(instance=NS(calibration=None, serving=NS(max_pipeline_stages=None)), chips=cat)
    pools = [NS(id=f"pool-{i}", chip=chip, part=0, pp=pp)
             for i, (chip, pp) in enumerate([("wse3", 4), ("wse3", 24), ("h100", 1), ("h100", 2), ("rubin", 8)])]
    notes = pipeline_notes(ctx, pools)
    assert [n.split(" (")[0] for n in notes] == ["pool-1 runs 24 pipeline stages on wse3",
                                                 "pool-3 runs 2 pipeline stages on h100"]
    assert "its calibration measured at most 20" in notes[0] and "no run its calibration measured" in notes[1]


def test_the_diagnosis_says_when_only_unmeasured_stages_would_serve_a_class():
    """agentic-coding on its H200 group alone: its 119K-token cache misses meet TTFT and TPOT together only with
    H200 pipeline stages, which no H200 measurement used. The infeasible plan says so; an instance that set the
    limit itself is not told."""
    from placement.core.instance.loading import load_instance

    inst = load_instance("instances/agentic-coding.yaml")
    h200 = [d for d in inst.hardware.domains if d.chip == "h200"]
    inst = inst.model_copy(update={"hardware": inst.hardware.model_copy(update={"domains": h200})})
    plan = placement.solve(inst, backend="highs")
    assert plan.status == "infeasible"
    said = [s for s in plan.diagnosis if "more pipeline stages than its chips' calibration measured (h200 1)" in s]
    assert [s.split(":")[0] for s in said] == ["class coding-agent.kv-miss"], plan.diagnosis
    held = inst.model_copy(update={"serving": inst.serving.model_copy(update={"max_pipeline_stages": 1})})
    assert not any("pipeline stages" in s for s in placement.solve(held, backend="highs").diagnosis)
