"""Pipeline stages a deployment does not run: ``serving.max_pipeline_stages`` and the plan's note.

No measured run in the calibration used pipeline stages, and on held-out campaigns the planner's
pipeline-parallel plans were its most optimistic (benchmarks/CAPACITY.md, "plan pipeline-parallel"). The
probe: Qwen3-235B FP8 offline (2,048 / 128 tokens) on 8-GPU H200 domains, where the cheapest plan the model
sees runs four stages (tp1·pp4: 59 GB of weights a stage, every stage busy with a micro-batch).
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
    free, capped = _probe(), _probe(1)
    return free, placement.solve(free, backend="highs"), capped, placement.solve(capped, backend="highs")


def test_free_plan_runs_stages_and_says_they_are_not_measured(plans):
    _, free_plan, _, _ = plans
    assert free_plan.verified and max(p.pp for p in free_plan.pools) > 1
    staged = [p for p in free_plan.pools if p.pp > 1]
    for p in staged:
        assert any(n.startswith(f"{p.id} runs {p.pp} pipeline stages on h200") for n in free_plan.notes), \
            free_plan.notes


def test_capped_plan_runs_none_and_costs_at_least_as_much(plans):
    _, free_plan, _, capped_plan = plans
    assert capped_plan.verified and capped_plan.status == "optimal"
    assert all(p.pp == 1 for p in capped_plan.pools)
    assert capped_plan.cost_usd_per_hour >= free_plan.cost_usd_per_hour - 1e-9
    assert not any("pipeline stages" in n for n in capped_plan.notes)


def test_the_verifier_refuses_stages_beyond_the_cap(plans):
    _, free_plan, capped, _ = plans
    result = placement.check(capped, free_plan)
    assert not result.ok
    assert any("pipeline stages exceed serving.max_pipeline_stages 1" in v for v in result.violations), \
        result.violations


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
    ctx = NS(instance=NS(calibration=None), chips=cat)
    pools = [NS(id=f"pool-{i}", chip=chip, part=0, pp=pp)
             for i, (chip, pp) in enumerate([("wse3", 4), ("wse3", 24), ("h100", 1), ("h100", 2), ("rubin", 8)])]
    notes = pipeline_notes(ctx, pools)
    assert [n.split(":")[0] for n in notes] == ["pool-1 runs 24 pipeline stages on wse3",
                                                "pool-3 runs 2 pipeline stages on h100"]
    assert "its calibration measured at most 20" in notes[0] and "no run its calibration measured" in notes[1]
