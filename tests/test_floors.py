"""Physical floors (placement.core.verify.floors): hand calculations, tampered plans, the shipped instances."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import placement
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.replicas.evaluate import PartLayout, PoolConfig
from placement.core.verify.floors import check_floors, config_floors, model_shape
from placement.core.verify.verifier import verify

SHIPPED = sorted(Path("instances").glob("*.yaml"))


def _ctx(model: str, chip: str, *, prompt: int = 1, cached: int = 0, output: int = 2,
         precision: str = "fp8") -> Context:
    return Context.of(parse_instance({
        "name": "t", "model": model, "precision": {"weights": precision, "kv": precision},
        "workload": {"classes": [{"name": "c", "rate_rps": 1, "prompt_tokens": prompt,
                                  "cached_prefix_tokens": cached, "output_tokens": output,
                                  "ttft_ms": 1000, "tpot_ms": 100}]},
        "hardware": {"domains": [{"name": "g", "chip": chip, "count": 1}]}}))


def _decode(chip: str, chips: int, batch: int, *, tp: int | None = None, pp: int = 1) -> PoolConfig:
    tp = chips // pp if tp is None else tp
    return PoolConfig(kind="decode", traffic_class="c", batch=batch,
                      main=PartLayout(chip=chip, site_resource=f"{chip}@8", chips=chips, tp=tp, ep=1, pp=pp))


def test_llama_70b_fp8_on_8_h100_at_batch_1_is_weight_bound_by_hand():
    """Llama-3.1-70B FP8, 8 × H100 (3.35 TB/s), batch 1, context 1.

    Per layer: attention 2·8192·64·128 + 2·8192·8·128 = 150,994,944; SwiGLU FFN
    3·8192·28672 = 704,643,072; × 80 layers = 68,451,041,280; LM head
    128,256·8192 = 1,050,673,152 → 69,501,714,432 B at one byte per weight (the
    published 70.6 B also counts the input embedding, a lookup of one row).
    KV: 2·8·128 B × 80 layers × 1 token = 163,840 B.
    Floor = 69,501,878,272 B / (8 × 3.35e12 B/s) = 2.5933 ms (not 2.63 ms: no embedding).
    """
    f = config_floors(_decode("h100", 8, 1), _ctx("llama-3.1-70b", "h100"))
    weights, kv = 69_501_714_432, 163_840
    assert f.tpot.binding.name == "memory"
    assert f.tpot.seconds == pytest.approx((weights + kv) / (8 * 3.35e12), rel=1e-12)
    assert f.tpot.seconds * 1e3 == pytest.approx(2.5933, abs=1e-4)
    # The other terms are far below: 2·69.5 GFLOP over 8 × 1,978.9 TFLOP/s ≈ 8.8 µs;
    # the chain: 80 TP latencies × 1.85 µs + that token's FLOPs over 8 chips ≈ 157 µs.
    terms = {t.name: t.seconds for t in f.tpot.terms}
    assert terms["compute"] == pytest.approx((2 * weights + 80 * 4 * 64 * 128) / (8 * 1978.9e12), rel=1e-9)
    assert terms["chain"] == pytest.approx(80 * 1.85e-6 + terms["compute"], rel=1e-9)
    # Little's law: one slot, one decode step per request.
    assert f.capacity_rps_per_replica == pytest.approx(1 / f.tpot.seconds, rel=1e-12)


def test_deepseek_v3_moe_reads_the_experts_its_batch_touches():
    """DeepSeek-V3 FP8 on 8 × B200 (8 TB/s, 4.5 PFLOP/s FP8).

    Per layer MLA: q 7168·1536 + 1536·128·192 = 48,758,784; kv 7168·576 + 512·128·256
    = 20,905,984; o 128·128·7168 = 117,440,512 → 187,105,280 × 61 = 11,413,422,080.
    3 dense FFN layers × 3·7168·18432 = 1,189,085,184. 58 MoE layers × (9 experts
    (8 routed + 1 shared) × 3·7168·2048 + router 7168·256) = 23,095,410,688. LM head
    129,280·7168 = 926,679,040. One token reads 36,624,596,992 B. A step of B tokens routed
    uniformly touches 256·(1 − (1 − 8/256)^B) routed experts per layer: at B = 4096 all 256, so the other
    248 × 58 × 3·7168·2048 = 633,474,121,728 B are read too — 10.5 ms of memory, above the 8.3 ms of compute.
    """
    weights = 11_413_422_080 + 1_189_085_184 + 23_095_410_688 + 926_679_040
    kv_per_seq = 576 * 61  # (512 latent + 64 RoPE) B per layer at FP8, one token of context
    ctx = _ctx("deepseek-v3", "b200")
    s = model_shape(ctx.model, "fp8")
    assert s.part_params("full") == weights  # one byte per FP8 weight
    one = config_floors(_decode("b200", 8, 1), ctx)
    assert one.tpot.binding.name == "memory"
    assert one.tpot.seconds == pytest.approx((weights + kv_per_seq) / (8 * 8e12), rel=1e-12)
    big = config_floors(_decode("b200", 8, 4096), ctx)
    touched = 256 * (1 - (1 - 8 / 256) ** 4096)
    extra = 58 * (touched - 8) * 3 * 7168 * 2048
    assert extra == pytest.approx(633_474_121_728, rel=1e-9)
    mem = next(t for t in big.tpot.terms if t.name == "memory")
    assert mem.seconds == pytest.approx((weights + extra + 4096 * kv_per_seq) / (8 * 8e12), rel=1e-12)
    # Compute: 2·4096·36.6e9 matmul FLOPs (k experts per token) plus 4096 tokens × 61 layers × 1 key
    # × 2·128·min(576 + 512, 192 + 128) attention FLOPs, over 8 × 4.5e15: below the memory term now.
    flops = 2 * 4096 * weights + 4096 * 61 * 2 * 128 * 320
    compute = next(t for t in big.tpot.terms if t.name == "compute")
    assert compute.seconds == pytest.approx(flops / (8 * 4.5e15), rel=1e-12)
    assert big.tpot.binding.name == "memory" and big.tpot.seconds == pytest.approx(mem.seconds, rel=1e-12)


def test_pipeline_chain_on_sram_chips_adds_every_stage():
    """On SRAM-only chips a token's stages read their weights in turn: 8 × 64 LP30 as 8 stages
    take the weights over 64 chips' bandwidth plus 7 hops, not over all 512."""
    ctx = _ctx("llama-3.1-70b", "lp30")
    f = config_floors(_decode("lp30", 512, 1, tp=64, pp=8), ctx)
    chain = next(t for t in f.tpot.terms if t.name == "chain")
    weights = 69_501_714_432 + 163_840
    assert chain.seconds >= weights / (64 * 150e12) + 80 * 0.5e-6 + 7 * 0.5e-6
    assert f.tpot.binding.name == "chain"


def test_speculative_floor_divides_the_cycle_by_gamma_plus_one():
    ctx = Context.of(placement.load_instance("instances/spec-decode-draft.yaml"))
    plain = config_floors(PoolConfig(kind="decode", traffic_class="fast", batch=8,
                                     main=PartLayout(chip="h200", site_resource="h200@8", chips=4, tp=4, ep=1, pp=1)),
                          ctx)
    spec = config_floors(PoolConfig(kind="decode-spec", traffic_class="fast", batch=8, draft_tokens=4,
                                    main=PartLayout(chip="h200", site_resource="h200@8", chips=4, tp=4, ep=1, pp=1)),
                         ctx)
    # Weight-bound at batch 8: the verify reads the target's weights once for 5 tokens, the
    # co-located draft's 4 steps read its own on the same chips — at most 5 tokens per cycle.
    assert spec.tpot.binding.name == "memory"
    assert plain.tpot.seconds / 5 < spec.tpot.seconds < plain.tpot.seconds


@pytest.fixture(scope="module")
def bertha():
    # Prefill/decode only, so the plan has an H100 decode pool whatever aggregated serving costs.
    inst = placement.load_instance("instances/bertha-lpddr.yaml").model_copy(update={"modes": ["pd"]})
    plan = placement.solve(inst, backend="highs")
    assert plan.verified, plan.violations
    return Context.of(inst), plan


def _decode_pool(plan):
    return next(p for p in plan.pools if p.stage == "decode" and p.chip == "h100")


def test_a_tpot_below_its_floor_is_rejected_naming_the_floor(bertha):
    ctx, plan = bertha
    bad = plan.model_copy(deep=True)
    pool = _decode_pool(bad)
    pool.tpot_ms = 1.0
    v = check_floors(bad, ctx)
    # B = 204 on TP4 (the cheapest H100 decode meeting the 25 ms TPOT with the calibrated H100): at the mean
    # context, 1,500 + 300/2 tokens × 163,840 B of FP8 KV = 270 MB a sequence, 55.1 GB for 204;
    # (69.5 GB + 55.1 GB) / (4 × 3.35 TB/s) = 9.30 ms.
    assert pool.batch == 204 and pool.chips_per_replica == 4, pool
    assert (69.5e9 + 204 * 1650 * 163_840) / (4 * 3.35e12) == pytest.approx(9.30e-3, abs=0.005e-3)
    assert any(m.startswith(f"pool {pool.id} tpot_ms 1 < floor 9.3 ") and "memory: weights 69.5 GB" in m
               and "4 × h100 × 3.35 TB/s" in m for m in v), v
    assert any(m in verify(ctx, bad) for m in v)


def test_a_config_that_cannot_deliver_its_capacity_is_rejected(bertha):
    """Eight times the batch on the same four H100s: the claimed TPOT and capacity, kept, beat the floors."""
    ctx, plan = bertha
    bad = plan.model_copy(deep=True)
    pool = _decode_pool(bad)
    pool.config = pool.config.model_copy(update={"batch": 8 * pool.config.batch})
    pool.batch = pool.config.batch
    v = check_floors(bad, ctx)
    assert any(f"pool {pool.id} tpot_ms" in m and "< floor" in m for m in v), v
    cap = [m for m in check_floors(_capacity_x(plan, 10), ctx) if "capacity_rps_per_replica" in m]
    assert cap and "slots /" in cap[0] and "> ceiling" in cap[0], cap


def _capacity_x(plan, factor):
    bad = plan.model_copy(deep=True)
    pool = _decode_pool(bad)
    pool.capacity_rps_per_replica = {k: factor * c for k, c in pool.capacity_rps_per_replica.items()}
    return bad


def test_class_level_claims_are_checked(bertha):
    ctx, plan = bertha
    bad = plan.model_copy(deep=True)
    bad.classes[0].ttft_ms = 0.5
    v = check_floors(bad, ctx)
    assert any(m.startswith(f"class {bad.classes[0].name} ttft_ms 0.5 < floor") for m in v), v


def test_check_exits_5_on_a_tampered_tpot(bertha, tmp_path):
    _, plan = bertha
    doc = json.loads(plan.model_dump_json())
    pool = next(p for p in doc["pools"] if p["stage"] == "decode" and p["chip"] == "h100")
    pool["tpot_ms"] = 0.5
    out = tmp_path / "plan.json"
    out.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["check", "instances/bertha-lpddr.yaml", str(out)])
    assert r.exit_code == 5, r.output
    assert "tpot_ms 0.5 < floor" in r.output


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_plan_is_above_its_floors(path):
    inst = placement.load_instance(path)
    plan = placement.solve(inst)  # the default backend: HiGHS takes ~23 s on spec-decode-draft, CBC 0.4 s
    assert plan.status == "optimal"
    assert check_floors(plan, Context.of(inst)) == []


def test_floors_share_no_code_with_the_cost_models():
    """Only records (under TYPE_CHECKING) come from costmodels/, placement.core.replicas.evaluate and the plan;
    the registry of replica kinds (which floor each kind names) is the one runtime import from placement."""
    for path in ("placement/core/verify/floors.py", "placement/core/verify/floor_shape.py"):
        tree = ast.parse(Path(path).read_text())
        runtime = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        modules = {a.name for n in runtime if isinstance(n, ast.Import) for a in n.names}
        modules |= {n.module for n in runtime if isinstance(n, ast.ImportFrom)}
        allowed = {"__future__", "math", "dataclasses", "typing", "networkx", "placement.core.verify.floor_shape",
                   "placement.core.modes.registry"}
        assert modules <= allowed, (path, modules)
