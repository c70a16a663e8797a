"""What large batches and wide expert parallelism cost (issue 29 item 1), and per-request TPOT percentiles.

Each test either works a term out by hand from its published source or checks a bound every evaluation
must respect: no layout's throughput per chip beats what its step's physics, the engine's batch ceiling and
the all-to-all kernel floors allow.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from costmodels.comm import SCALE_OUT_ALLTOALL_FLOOR_S, SCALE_UP_ALLTOALL_FLOOR_S, ep_alltoall_s
from costmodels.frameworks import framework_entry
from costmodels.memory import memory_per_chip_bytes
from costmodels.models import load_model_catalog
from costmodels.roofline import aggregated_step, decode_step
from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.solve import solve
from placement.core.plans.plan import parse_plan
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.verify.verifier import verify
from topology.chips import load_chip_catalog

CHIPS, MODELS = load_chip_catalog(), load_model_catalog()


def _doc(framework: str = "vllm", tpot_ms: float = 50.0, percentile: str = "mean", model: str = "deepseek-v3",
         chip: str = "b200", weights: str = "fp8", tokens: int = 1024) -> dict:
    return {"name": "scale", "model": model, "precision": {"weights": weights, "kv": "fp8"},
            "serving": {"framework": framework},
            "workload": {"classes": [{"name": "c", "rate_rps": 1, "prompt_tokens": tokens, "output_tokens": tokens,
                                      "ttft_ms": 60_000, "tpot_ms": tpot_ms, "tpot_percentile": percentile}]},
            "hardware": {"domains": [{"name": "g", "chip": chip, "chips_per_domain": 8, "count": 1}]},
            "modes": ["aggregated"]}


def test_the_floor_of_small_dispatches_is_per_layer_per_phase():
    """1 token a rank on 8 B200: 58 MoE layers × (dispatch + combine) at the 25 µs kernel floor = 2.9 ms; over
    two nodes of H100 the RDMA floor, 60 µs, makes it 7.0 ms — bytes alone would say a few µs."""
    b200, h100 = CHIPS["b200"], CHIPS["h100"]
    assert 58 * float(ep_alltoall_s(b200, 8, 8, 7168, 2, 8)) == pytest.approx(58 * 2 * 25e-6)
    assert 58 * float(ep_alltoall_s(h100, 16, 8, 7168, 2, 16)) == pytest.approx(58 * 2 * SCALE_OUT_ALLTOALL_FLOOR_S)
    assert float(ep_alltoall_s(h100, 8, 8, 7168, 2, 8)) == pytest.approx(2 * SCALE_UP_ALLTOALL_FLOOR_S)


def test_an_fp4_model_keeps_its_attention_at_the_checkpoints_precision():
    """DeepSeek-R1's NVFP4 checkpoint keeps attention at FP8: the FP4 step reads 8.2 GB more than an all-FP4
    one would, and its attention core runs at the BF16 rate."""
    ds = MODELS["deepseek-v3"]
    inst = parse_instance(_doc(weights="fp4"))
    assert inst.precision.attention_for(ds) == "fp8"
    gpt = MODELS["gpt-oss-120b"]
    assert parse_instance(_doc(weights="fp4", model="gpt-oss-120b")).precision.attention_for(gpt) == "bf16"
    b200 = CHIPS["b200"]
    kw = {"batch": 64, "context": 2048, "tp": 8, "precision": "fp4", "kv_precision": "fp8"}
    wide, all_fp4 = decode_step(b200, ds, attention_precision="fp8", **kw), decode_step(b200, ds, **kw)
    assert float(wide.bytes) > float(all_fp4.bytes)
    assert float(wide.core_s) == pytest.approx(float(all_fp4.core_s))  # the core is the activations' either way
    assert float(wide.core_s) > float(decode_step(b200, ds, activation_precision="fp8", **kw).core_s)


def test_plans_never_exceed_the_engines_sequences_per_rank():
    """A loose TPOT and short requests let Llama-3.1-8B take its largest batches: each engine's ceiling
    holds them, one per data-parallel rank."""
    for framework in ("vllm", "trtllm", "sglang"):
        cap = framework_entry(framework).max_sequences_per_rank
        inst = parse_instance(_doc(framework, tpot_ms=5000.0, model="llama-3.1-8b", tokens=64))
        ctx = Context.of(inst)
        part = PartLayout(chip="b200", site_resource="b200@8", chips=8, tp=1, ep=1, pp=1, dp=8)
        cfg = PoolConfig(kind="aggregated", traffic_class="c", main=part, batch=1, chunk_tokens=2048)
        perf = evaluate(ctx, cfg, inst.workload.classes[0], batch=np.array([8.0 * cap, 8.0 * cap + 8]))
        assert perf.fits.tolist() == [True, False], framework


def test_the_verifier_refuses_a_batch_beyond_the_engine_ceiling():
    inst = parse_instance(_doc("vllm", tpot_ms=500.0, model="llama-3.1-8b"))
    plan = solve(inst, backend="highs")
    assert plan.status == "optimal" and plan.verified
    doc = json.loads(plan.model_dump_json())
    pool = doc["pools"][0]
    pool["config"]["batch"] = pool["batch"] = 2000 * pool["config"]["main"]["dp"]
    v = verify(Context.of(inst), parse_plan(doc))
    assert any("sequences per rank exceed the vllm engine's 1024" in m for m in v), v


def test_the_engine_setting_may_raise_the_ceiling_above_the_default():
    """``serving.max_sequences_per_rank`` is the deployment's engine setting, above the default too (an
    offline ``trtllm-bench`` engine holds up to 4,096): a rank at 2,000 sequences passes the check of an
    instance that sets 4,096 and fails the default vLLM's 1,024."""
    doc = _doc("vllm", tpot_ms=500.0, model="llama-3.1-8b")
    inst = parse_instance(doc)
    plan = solve(inst, backend="highs")
    pdoc = json.loads(plan.model_dump_json())
    pool = pdoc["pools"][0]
    pool["config"]["batch"] = pool["batch"] = 2000 * pool["config"]["main"]["dp"]
    raised = json.loads(json.dumps(doc))
    raised.setdefault("serving", {})["max_sequences_per_rank"] = 4096
    assert any("exceed the vllm engine's 1024" in m for m in verify(Context.of(inst), parse_plan(pdoc)))
    assert not any("exceed the vllm engine" in m
                   for m in verify(Context.of(parse_instance(raised)), parse_plan(pdoc)))


def _solved_with_serving(**serving) -> tuple[dict, object, object]:
    """A Llama-3.1-8B fleet of 8 domains at 10 req/s under TensorRT-LLM, without and with ``serving`` set:
    (the held instance document, the loose plan, the held plan), both plans optimal and verified."""
    loose = _doc("trtllm", tpot_ms=200.0, model="llama-3.1-8b")
    loose["workload"]["classes"][0]["rate_rps"] = 10
    loose["hardware"]["domains"][0]["count"] = 8
    held_doc = json.loads(json.dumps(loose))
    held_doc["serving"].update(serving)
    free, held = solve(parse_instance(loose), backend="highs"), solve(parse_instance(held_doc), backend="highs")
    assert free.status == held.status == "optimal" and free.verified and held.verified
    return held_doc, free, held


def test_an_instance_can_hold_plans_to_a_smaller_batch_per_rank():
    """``serving.max_sequences_per_rank`` lowers the engine's ceiling: the plan's batches per rank stay under
    it, the plan costs no less, and a plan made without it fails the check of the capped instance."""
    capped, free, held = _solved_with_serving(max_sequences_per_rank=16)
    per_rank = [p.config.batch / p.config.main.dp for p in held.pools]
    assert max(per_rank) <= 16 < max(p.config.batch / p.config.main.dp for p in free.pools)
    assert held.cost_usd_per_hour >= free.cost_usd_per_hour
    v = verify(Context.of(parse_instance(capped)), free)
    assert any("exceed the trtllm engine's 16" in m for m in v), v


def test_workspace_of_what_the_weights_leave_lets_deepseek_fp8_fit_four_b200():
    """671 GB of FP8 weights on 4 × 180 GB: vLLM keeps 8 % of the GPU (662 GB usable: it does not fit),
    TensorRT-LLM 10 % of what the weights leave (it does), as the published TP4 runs show."""
    b200, ds = CHIPS["b200"], MODELS["deepseek-v3"]
    kw = {"stage": "decode", "batch": 4, "context": 2048, "tp": 4, "ep": 4, "precision": "fp8"}
    vllm = float(memory_per_chip_bytes(b200, ds, workspace_fraction=0.08, **kw))
    trt = float(memory_per_chip_bytes(b200, ds, workspace_fraction=0.10, workspace_of_free=True, **kw))
    assert vllm > b200.memory_bytes > trt


def test_a_p99_tpot_is_above_the_mean_where_chunks_share_the_steps():
    """128-token requests at batch 64: the other 63 slots bring 63·128/128 = 63 prompt tokens a step on
    average, but a waiting prompt fills its step: q = 63/128 of the steps carry one whole 128-token prompt,
    the rest none. The mean TPOT is that mixture; the p99 request has 2.326·sqrt(q(1 − q)/128) more of
    the carrying steps, each a prompt's prefill dearer."""
    ctx = Context.of(parse_instance(_doc(percentile="p99", tokens=128)))
    mean_ctx = Context.of(parse_instance(_doc(tokens=128)))
    part = PartLayout(chip="b200", site_resource="b200@8", chips=8, tp=8, ep=8, pp=1, dp=1)
    cfg = PoolConfig(kind="aggregated", traffic_class="c", main=part, batch=1, chunk_tokens=2048)
    b = np.array([1.0, 64.0])
    p99 = evaluate(ctx, cfg, ctx.instance.workload.classes[0], batch=b).tpot_s
    mean = evaluate(mean_ctx, cfg, mean_ctx.instance.workload.classes[0], batch=b).tpot_s
    assert p99[0] == pytest.approx(mean[0])  # one sequence: no other prompt shares its steps
    q = 63 / 128
    kw = {"batch": 64, "context": 128 + 64, "tp": 8, "ep": 8, "precision": "fp8", "kv_precision": "fp8",
          "attention_precision": "fp8"}
    t_carry = aggregated_step(CHIPS["b200"], MODELS["deepseek-v3"], chunk_tokens=128, chunk_context=0,
                              chunk_prompts=1, **kw).time_s
    t_plain = aggregated_step(CHIPS["b200"], MODELS["deepseek-v3"], chunk_tokens=0, chunk_context=64, **kw).time_s
    assert mean[1] == pytest.approx((1 - q) * t_plain + q * t_carry, rel=1e-9)
    want = 2.3263478740408408 * np.sqrt(q * (1 - q) / 128) * (t_carry - t_plain)
    assert p99[1] - mean[1] == pytest.approx(want, rel=1e-9) and want > 1e-3 * mean[1]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(chip=st.sampled_from(["h100", "h200", "b200", "gb200", "mi300x"]),
       model=st.sampled_from(["deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b", "llama-3.1-70b"]),
       dp=st.sampled_from([1, 2, 4, 8]), tp=st.sampled_from([1, 2, 4, 8]),
       batch=st.builds(lambda e, j: max(1, int(2 ** e * j)), st.integers(0, 14), st.floats(0.5, 1.0)),
       framework=st.sampled_from(["vllm", "trtllm", "sglang", "pooled"]))
def test_throughput_per_chip_never_beats_the_physics_the_engine_and_the_all_to_all(chip, model, dp, tp, batch,
                                                                                  framework):
    """Tokens/s per chip ≤ B / (g · max(step floor at the peaks, all-to-all floors)) and B/dp ≤ the engine's
    ceiling wherever the configuration counts as feasible."""
    g = dp * tp
    assume(g <= CHIPS[chip].scale_up_domain_chips)
    m = MODELS[model]
    ep = g if m.moe is not None else 1
    doc = _doc(framework, tpot_ms=1e5, model=model, chip=chip)
    doc["hardware"]["domains"][0]["chips_per_domain"] = CHIPS[chip].scale_up_domain_chips
    ctx = Context.of(parse_instance(doc))
    cls = ctx.instance.workload.classes[0]
    part = PartLayout(chip=chip, site_resource=f"{chip}@{CHIPS[chip].scale_up_domain_chips}", chips=g, tp=tp, ep=ep,
                      pp=1, dp=dp)
    cfg = PoolConfig(kind="decode", traffic_class="c", main=part, batch=batch)
    perf = evaluate(ctx, cfg, cls)
    assume(bool(perf.ok(cls)))  # infeasible configurations have nothing to bound
    assert batch / dp <= framework_entry(framework).max_sequences_per_rank
    step = decode_step(CHIPS[chip], m, batch=batch, context=cls.prompt_tokens + cls.output_tokens / 2, tp=tp, ep=ep,
                       dp=dp, precision="fp8", kv_precision="fp8")
    a2a = m.n_moe_layers * float(ep_alltoall_s(CHIPS[chip], batch, m.moe.active_experts, m.hidden_size, 2, ep)) \
        if m.moe is not None else 0.0
    tokens_per_chip = float(perf.capacity_rps) * cls.output_tokens / g
    assert float(perf.tpot_s) >= max(float(step.floor_s), a2a) * (1 - 1e-9)
    assert tokens_per_chip <= batch / (g * max(float(step.floor_s), a2a)) * (1 + 1e-9)


def test_sequences_per_chip_bound_every_layouts_ranks():
    """``serving.max_sequences_per_chip`` bounds the sequences in flight per chip whatever the layout: every
    decode-holding rank of c chips runs at most floor(c x the bound), the plan costs no less, and a plan made
    without it fails the check of the bounded instance, naming the field."""
    bounded, free, held = _solved_with_serving(max_sequences_per_chip=6.5)
    for p in held.pools:
        rank_chips = p.config.main.chips // p.config.main.dp
        assert p.config.batch / p.config.main.dp <= max(1, int(rank_chips * 6.5))
    assert max(p.config.batch / p.config.main.chips for p in free.pools) > 6.5
    assert held.cost_usd_per_hour >= free.cost_usd_per_hour
    v = verify(Context.of(parse_instance(bounded)), free)
    assert any("exceed serving.max_sequences_per_chip 6.5" in m for m in v), v


def test_sequences_per_chip_must_be_a_positive_finite_number():
    doc = _doc("trtllm", tpot_ms=200.0, model="llama-3.1-8b")
    for bad in (0, -1, float("inf")):
        doc["serving"]["max_sequences_per_chip"] = bad
        with pytest.raises(InputError, match="serving.max_sequences_per_chip"):
            parse_instance(doc)
