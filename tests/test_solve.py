"""End to end: instances solve, plans verify, and the verifier catches broken plans."""

from __future__ import annotations

import json

import pytest

import placement
from placement.core.instance.context import Context
from placement.core.verify.verifier import verify

TOY = "instances/melange-toy.yaml"


@pytest.fixture(scope="module")
def bertha_plan():
    inst = placement.load_instance("instances/bertha-lpddr.yaml")
    return inst, placement.solve(inst)


def test_melange_toy_published_optimum_cbc_and_highs():
    """Each bucket on one GPU type (Mélange, slice_factor 1): 3 x A10G + 1 x A100 = $6.70/h."""
    inst = placement.load_instance(TOY)
    for backend in ("cbc", "highs"):
        plan = placement.solve(inst, backend=backend)
        assert plan.status == "optimal" and plan.verified
        assert plan.cost_usd_per_hour == pytest.approx(6.70)
        assert plan.chips_by_type == {"a100-80gb": 1, "a10g": 3}


def test_melange_toy_fluid_optimum_cbc_and_highs():
    """Fluid split (load of a class may be shared across GPU types): 1 A100 + 1 A10G.

    A100 alone would need 6/20 + 3/20 + 15/40 + 6/20 = 1.125 GPUs; moving 5 req/s of
    the long-in/short-out bucket to one A10G (5/5 = 1.0) leaves exactly 1.0 on the A100.
    """
    inst = placement.load_instance(TOY)
    classes = [c.model_copy(update={"single_chip_type": False}) for c in inst.workload.classes]
    inst = inst.model_copy(update={"workload": inst.workload.model_copy(update={"classes": classes})})
    for backend in ("cbc", "highs"):
        plan = placement.solve(inst, backend=backend)
        assert plan.status == "optimal" and plan.verified
        assert plan.cost_usd_per_hour == pytest.approx(3.67 + 1.01)
        assert plan.chips_by_type == {"a100-80gb": 1, "a10g": 1}


def test_plan_json_has_the_documented_fields(bertha_plan):
    _, plan = bertha_plan
    d = json.loads(plan.model_dump_json())
    for key in ("status", "cost_usd_per_hour", "power_w", "pools", "classes", "links", "solver"):
        assert key in d
    for key in ("stage", "chip", "replicas", "chips", "tp", "ep", "pp", "batch", "domains"):
        assert key in d["pools"][0]
    for key in ("name", "modes", "ttft_ms", "tpot_ms"):
        assert key in d["classes"][0]
    for key in ("backend", "seconds", "gap", "variables", "constraints"):
        assert key in d["solver"]
    for key in ("source", "target", "load_bytes_per_s", "capacity_bytes_per_s"):
        assert key in d["links"][0]


def test_plan_meets_every_slo(bertha_plan):
    inst, plan = bertha_plan
    assert plan.verified and not plan.violations
    slo = {c.name: c for c in inst.workload.classes}
    for c in plan.classes:
        assert c.tpot_ms <= slo[c.name].tpot_ms * (1 + 1e-9)
        assert c.ttft_ms <= slo[c.name].ttft_ms * (1 + 1e-9)
        assert sum(c.modes.values()) == pytest.approx(1.0)


def _tampered(plan, **changes):
    p = plan.model_copy(deep=True)
    for fn in changes.values():
        fn(p)
    return p


def test_verifier_catches_too_few_replicas(bertha_plan):
    inst, plan = bertha_plan
    ctx = Context.of(inst)

    def cut(p):
        pool = max((x for x in p.pools if x.part == 0), key=lambda x: x.utilisation)
        pool.sites[0].replicas -= 1
        pool.replicas -= 1

    bad = verify(ctx, _tampered(plan, cut=cut))
    assert any("needs" in v for v in bad), bad


def test_verifier_catches_missing_demand(bertha_plan):
    inst, plan = bertha_plan
    ctx = Context.of(inst)

    def halve(p):
        for pool in p.pools:
            for s in pool.sites:
                s.load_rps = {k: v / 2 for k, v in s.load_rps.items()}

    bad = verify(ctx, _tampered(plan, halve=halve))
    assert any("carries" in v and "expected" in v for v in bad), bad


def test_verifier_catches_wrong_cost_and_overfull_domains(bertha_plan):
    inst, plan = bertha_plan
    ctx = Context.of(inst)

    def overfill(p):
        pool = p.pools[0]
        pool.sites[0].replicas += 10_000
        pool.replicas += 10_000

    bad = verify(ctx, _tampered(plan, overfill=overfill))
    assert any("do not pack" in v for v in bad), bad
    assert any(v.startswith("cost:") for v in bad), bad


def test_verifier_catches_slo_breach_when_batch_is_raised(bertha_plan):
    inst, plan = bertha_plan
    ctx = Context.of(inst)

    def bigger_batch(p):
        for pool in p.pools:
            if pool.stage == "decode":
                pool.config = pool.config.model_copy(update={"batch": 4096})

    bad = verify(ctx, _tampered(plan, bigger_batch=bigger_batch))
    assert any("TPOT" in v or "memory" in v for v in bad), bad


def test_same_instance_same_plan(bertha_plan):
    inst, plan = bertha_plan
    again = placement.solve(inst)
    assert again.canonical_json() == plan.canonical_json()


def test_objective_power_and_chips_change_the_answer_consistently():
    inst = placement.load_instance("instances/bertha-lpddr.yaml")
    by = {o: placement.solve(inst, objective=o) for o in ("cost", "power", "chips")}
    assert all(p.verified for p in by.values())
    assert by["cost"].cost_usd_per_hour <= by["power"].cost_usd_per_hour + 1e-9
    assert by["power"].power_w <= by["cost"].power_w + 1e-9
    assert by["chips"].chips <= by["cost"].chips


def test_verifier_catches_a_single_chip_type_class_split_across_types():
    inst = placement.load_instance(TOY)
    plan = placement.solve(inst)
    ctx = Context.of(inst)
    assert verify(ctx, plan) == []
    p = plan.model_copy(deep=True)
    a10g = next(x for x in p.pools if x.chip == "a10g")
    a100 = next(x for x in p.pools if x.chip == "a100-80gb")
    step = next(iter(a10g.sites[0].load_rps))
    a10g.sites[0].load_rps[step] -= 0.5
    a100.sites[0].load_rps[step] = a100.sites[0].load_rps.get(step, 0.0) + 0.5
    assert any("one chip type" in v for v in verify(ctx, p))
