"""Data-parallel attention and wide expert parallelism (issue 11 item 3).

Hand calculations for DeepSeek-V3 on Rubin NVL72 and on 8-GPU H100 nodes, the layouts the modes offer,
the verifier's layout checks, the floors, the roofline CLI and the shipped Rubin + LPX instance.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner
from verify_plans import solved

from costmodels import decode_step, memory_per_chip_bytes
from costmodels.models import load_model_catalog
from placement.cli.app import app
from placement.core.plans.plan import parse_plan
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.verify.floors import config_floors
from placement.core.verify.verifier import verify
from placement.modes.layouts import layouts
from topology.chips import load_chip_catalog

runner = CliRunner()

# DeepSeek-V3 by hand: 61 layers (3 dense, 58 MoE), d = 7168, 256 routed experts of 3·7168·2048
# parameters, k = 8, one shared expert; MLA caches 512 + 64 = 576 values per token and layer.
LAYERS, MOE_LAYERS, DENSE_LAYERS, D = 61, 58, 3, 7168
EXPERTS, K, EXPERT_PARAMS = 256, 8, 3 * 7168 * 2048
KV_BYTES_PER_TOKEN_FP8 = LAYERS * 576


@pytest.fixture(scope="module")
def hw():
    chips, models = load_chip_catalog(), load_model_catalog()
    return chips["rubin"], chips["h100"], models["deepseek-v3"]


def _replicated_params(ds) -> float:
    """What every DP rank holds: attention, LM head, 3 dense FFNs, per MoE layer the shared expert and router."""
    return (ds.attention_params + ds.vocab_size * D + DENSE_LAYERS * 3 * D * 18432
            + MOE_LAYERS * (EXPERT_PARAMS + D * EXPERTS))


def test_mla_kv_bytes_per_step_fall_8x_under_dp8_on_rubin(hw):
    """dp8·tp1·ep8 against tp8·ep8 on 8 Rubin chips, B = 256 at 8,192 tokens: the latent is read once, not 8 times.

    One copy of the KV: 256 · 8192 · 61 · 576 B = 73.7 GB; TP8 reads it 8 times (589 GB). The dp8 step
    reads 8 copies of the replicated weights plus the experts 256 tokens touch once
    (256·(1 − (1 − 8/256)^256) of 256 per layer), over 8 chips × 22 TB/s × η_m 0.5.
    """
    rubin, _, ds = hw
    b, c = 256, 8192
    one_copy = b * c * KV_BYTES_PER_TOKEN_FP8
    tp8 = decode_step(rubin, ds, batch=b, context=c, tp=8, ep=8, precision="fp8")
    dp8 = decode_step(rubin, ds, batch=b, context=c, tp=1, ep=8, dp=8, precision="fp8")
    assert one_copy == pytest.approx(73.69e9, rel=1e-3)
    assert tp8.kv_bytes == pytest.approx(8 * one_copy)
    assert dp8.kv_bytes == pytest.approx(one_copy)
    touched = EXPERTS * (1 - (1 - K / EXPERTS) ** b) * EXPERT_PARAMS * MOE_LAYERS
    weights = 8 * _replicated_params(ds) + touched
    assert dp8.bytes == pytest.approx(weights + one_copy, rel=1e-9)
    assert dp8.memory_s == pytest.approx((weights + one_copy) / (8 * 22e12 * 0.5), rel=1e-9)
    assert dp8.time_s < tp8.time_s


def test_memory_per_chip_holds_the_attention_whole_and_the_kv_of_b_over_dp(hw):
    rubin, _, ds = hw
    b, c = 256, 8192
    kw = {"stage": "decode", "batch": b, "context": c, "precision": "fp8", "workspace_fraction": 0.0}
    routed = MOE_LAYERS * EXPERTS * EXPERT_PARAMS
    dp8 = memory_per_chip_bytes(rubin, ds, tp=1, ep=8, dp=8, **kw)
    assert dp8 == pytest.approx((ds.total_params - routed) + routed / 8 + b / 8 * c * KV_BYTES_PER_TOKEN_FP8)
    tp8 = memory_per_chip_bytes(rubin, ds, tp=8, ep=8, **kw)
    assert tp8 == pytest.approx(ds.total_params / 8 + b * c * KV_BYTES_PER_TOKEN_FP8)
    # EP 72 over 256 experts: the fullest rank holds ⌈256/72⌉ = 4 experts per layer (EPLB's redundant slots).
    wide = memory_per_chip_bytes(rubin, ds, tp=1, ep=72, dp=72, **kw)
    assert wide == pytest.approx((ds.total_params - routed) + 4 * MOE_LAYERS * EXPERT_PARAMS
                                 + b / 72 * c * KV_BYTES_PER_TOKEN_FP8)


def _phase_s(tokens_per_rank: float, ep: int, bw: float, eta: float, floor: float) -> float:
    """One dispatch or combine by hand (BF16 both ways): the hottest rank's ρ·T·k·d·2 logical bytes."""
    rho = 1.0 + 0.03 + math.sqrt(2 * math.log(ep) / (tokens_per_rank * K))  # EPLB residual + sampling
    return max(floor, 15e-6 + rho * tokens_per_rank * K * D * 2 / (eta * bw))


def test_alltoall_inside_one_domain_by_hand(hw):
    """dp8·tp1·ep8: no TP all-reduce; per MoE layer a dispatch and a combine of the 32 tokens a rank holds over
    NVLink: ρ·32·8·7168·2 B = 4.2 MB at 0.8 × 1.8 TB/s is 2.9 µs + 15 µs, under Rubin's 25 µs kernel floor —
    58 layers × 2 × 25 µs = 2.9 ms, whatever the bytes."""
    rubin, _, ds = hw
    b = 256
    st = decode_step(rubin, ds, batch=b, context=1024, tp=1, ep=8, dp=8, precision="fp8")
    phase = _phase_s(b / 8, 8, rubin.scale_up_bandwidth_bytes_per_s, rubin.alltoall_efficiency, rubin.alltoall_floor_s)
    assert phase == rubin.alltoall_floor_s == 25e-6
    assert st.comm_s == pytest.approx(MOE_LAYERS * 2 * phase, rel=1e-9)


def test_ep_across_8_gpu_nodes_is_priced_on_the_nics_and_beats_pp_across_them(hw):
    """DeepSeek-V3 FP8 decode on two 8 × H100 nodes (671 GB does not fit one node's 640 GB).

    EP 16 across the nodes pays its all-to-all on the 50 GB/s NICs (1/9 of NVLink's 450 GB/s, seed 003's
    "1/8 rule"): at 16 tokens a rank each phase moves ρ·16·8·7168·2 B = 2.0 MB at 0.8 × 50 GB/s, 51 µs + 15 µs,
    just above the 60 µs RDMA kernel floor (DeepEP, pplx-kernels). PP across the nodes keeps EP inside a node
    but each stage re-reads its experts for every micro-batch. At B = 256 and 4,096 tokens EP across still wins
    (calibrated H100): 43.6 ms (the weights' 30.3 above the GEMMs' 9.1 — each routed expert's GEMM has only the
    few tokens routed to it as rows, its efficiency held at one tile's — the attention core 1.8 above its KV
    reads' 0.8, all-to-all 8.3, fixed costs 3.1; the 256 sequences' host work, 12.6, runs beside the step)
    against 60.9 (dp8·ep8·pp2) and 58.7 (tp8·ep8·pp2).
    """
    _, h100, ds = hw
    b, c = 256, 4096
    wide = decode_step(h100, ds, batch=b, context=c, tp=1, ep=16, dp=16, precision="fp8")
    phase = _phase_s(b / 16, 16, 50e9, 0.8, 60e-6)
    assert phase > 60e-6
    assert wide.comm_s == pytest.approx(MOE_LAYERS * 2 * phase, rel=1e-9)
    pp_tp = decode_step(h100, ds, batch=b, context=c, tp=8, ep=8, pp=2, precision="fp8")
    pp_dp = decode_step(h100, ds, batch=b, context=c, tp=1, ep=8, dp=8, pp=2, precision="fp8")
    assert [round(x.time_s * 1e3, 1) for x in (wide, pp_dp, pp_tp)] == [43.6, 60.9, 58.7]
    mem = memory_per_chip_bytes(h100, ds, stage="decode", batch=b, context=c, tp=1, ep=16, dp=16, precision="fp8")
    assert mem < h100.memory_bytes


def test_layout_rules(hw):
    rubin, _, ds = hw
    with pytest.raises(ValueError, match="ep must divide dp·tp"):
        decode_step(rubin, ds, batch=8, context=8, tp=1, dp=8, ep=16)
    with pytest.raises(ValueError, match="≥ 1"):
        decode_step(rubin, ds, batch=8, context=8, dp=0)


@pytest.fixture(scope="module")
def rubin_plan():
    return solved("rubin-lpx-deepseek")


def test_layouts_offer_wide_ep_in_and_across_domains(rubin_plan):
    _, ctx, _ = rubin_plan
    site = next(s for s in ctx.resources().values() if s.chip.name == "rubin")
    old = layouts(ctx, site, 72, "decode")
    new = layouts(ctx, site, 72, "decode", data_parallel=True)
    assert all(dp == 1 for *_, dp in old) and set(old) <= set(new)
    assert {x for x in new if x[3] > 1} == {(1, 72, 1, 72), (2, 72, 1, 36), (4, 72, 1, 18), (8, 72, 1, 9)}
    two = {x for x in layouts(ctx, site, 144, "decode", data_parallel=True) if x[3] > 1}
    assert (1, 72, 2, 72) in two and (1, 144, 1, 144) in two  # EP in the domain + PP, or EP across domains
    assert len(two) <= 2 * len({x[0] for x in two})  # at most two stage widths per tp


def test_shipped_rubin_plan_runs_attention_data_parallel(rubin_plan):
    """The shipped plan's decode attention is data-parallel on Rubin (each DP rank holds its sequences' latent
    KV once), whether the experts sit with it (wide EP) or on LP30 (attention–FFN): with the all-to-all's
    published kernel floors, 58 MoE layers of small dispatches cost Rubin wide EP several ms a step, and the
    plan moves reasoning's FFN to LP30 (benchmarks/SEED_CLAIMS.md)."""
    _, ctx, doc = rubin_plan
    wide = [p for p in doc["pools"] if p["part"] == 0 and p["config"]["main"]["dp"] > 1]
    assert wide and all(p["chip"] == "rubin" and p["stage"] in ("decode", "aggregated", "decode-attention")
                        for p in wide)
    assert verify(ctx, parse_plan(doc)) == []


def _dp_pool(doc: dict) -> dict:
    return next(p for p in doc["pools"] if p["part"] == 0 and p["config"]["main"]["dp"] > 1)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda p: p["config"]["main"].update(ep=5), "must divide the"),
    (lambda p: p.update(stage="prefill") or p["config"].update(kind="prefill", chunk_tokens=None),
     "only decode and aggregated replicas"),
])
def test_verifier_rejects_impossible_dp_layouts(rubin_plan, edit, message):
    _, ctx, doc = rubin_plan
    edit(_dp_pool(doc))
    violations = verify(ctx, parse_plan(doc))
    assert any(message in v for v in violations), violations


def test_chips_must_equal_dp_tp_pp(rubin_plan, tmp_path):
    _, _, doc = rubin_plan
    _dp_pool(doc)["config"]["main"]["dp"] += 1
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    r = runner.invoke(app, ["check", "instances/rubin-lpx-deepseek.yaml", str(path)])
    assert r.exit_code in (2, 5) and "must equal dp·tp·pp" in r.output, r.output


def test_cross_domain_ep_is_re_derived_on_the_scale_out_links(rubin_plan, hw):
    """The verifier re-derives a pool's TPOT with the cost models: a 144-chip wide-EP replica (two NVL72
    domains) pays its all-to-all on the NICs, so a plan claiming the in-domain (NVLink) price is refused
    as a ``tpot_ms`` mismatch."""
    rubin, _, ds = hw
    _, ctx, _ = rubin_plan
    cls = ctx.classes["reasoning"]
    part = PartLayout(chip="rubin", site_resource="rubin@72", chips=144, tp=1, ep=144, pp=1, dp=144)
    # 288 sequences: their host work (288 × 20 µs, beside the step) is shorter than the device step on either fabric
    cfg = PoolConfig(kind="decode", traffic_class="reasoning", main=part, batch=288)
    derived = float(evaluate(ctx, cfg, cls).tpot_s)
    kw = {"batch": 288, "context": cls.prompt_tokens + cls.output_tokens / 2, "tp": 1, "ep": 144, "dp": 144,
          "precision": "fp8", "kv_precision": ctx.instance.precision.kv}
    nics = decode_step(rubin, ds, **kw)
    nvlink = decode_step(rubin.model_copy(update={"scale_up_domain_chips": 144}), ds, **kw)
    # 2 tokens a rank: both fabrics at their kernel floors, 60 µs a phase on the NICs against 25 on NVLink.
    assert nics.comm_s == pytest.approx(MOE_LAYERS * 2 * 60e-6)
    assert nvlink.comm_s == pytest.approx(MOE_LAYERS * 2 * 25e-6)
    assert float(nics.host_s) < float(nvlink.device_s)
    assert derived == pytest.approx(float(nics.time_s), rel=1e-9) and derived > float(nvlink.time_s)


def test_floor_tp_exchange_counts_the_tokens_of_one_dp_group(rubin_plan):
    _, ctx, _ = rubin_plan
    b = 1024

    def exchange_s(dp: int, tp: int) -> float:
        part = PartLayout(chip="rubin", site_resource="rubin@72", chips=dp * tp, tp=tp, ep=dp * tp, pp=1, dp=dp)
        f = config_floors(PoolConfig(kind="decode", traffic_class="reasoning", main=part, batch=b), ctx)
        return next(t.seconds for t in f.tpot.terms if t.name == "TP exchange")

    link = max(ctx.chips["rubin"].scale_up_bandwidth_bytes_per_s, ctx.chips["rubin"].scale_out_bandwidth_bytes_per_s)
    assert exchange_s(4, 2) == pytest.approx(LAYERS * (b / 4) * D * 1.0 * (1 / 2) / link)
    assert exchange_s(4, 2) == pytest.approx(exchange_s(1, 2) / 4)


def test_roofline_cli_attention_dp_and_free_ep():
    def run(*args: str) -> dict:
        r = runner.invoke(app, ["roofline", "--chip", "rubin", "--model", "deepseek-v3", "--precision", "fp8",
                                "--batch", "256", "--context", "8192", "--json", "-", *args])
        assert r.exit_code == 0, r.output
        return json.loads(r.output)

    tp8, dp8 = run("--tp", "8", "--ep", "8"), run("--attention-dp", "8", "--tp", "1", "--ep", "8")
    assert dp8["chips_per_replica"] == tp8["chips_per_replica"] == 8 and dp8["attention_dp"] == 8
    assert dp8["memory_per_chip_gb"] < tp8["memory_per_chip_gb"] and dp8["step_time_ms"] < tp8["step_time_ms"]
    assert run("--attention-dp", "4", "--tp", "2", "--ep", "2")["ep"] == 2  # any divisor of dp·tp
    bad = runner.invoke(app, ["roofline", "--chip", "rubin", "--model", "deepseek-v3", "--attention-dp", "8",
                              "--ep", "16"])
    assert bad.exit_code == 2 and "--ep" in bad.output


def test_data_parallel_pools_of_the_plan_are_whole_dp_groups():
    _, _, doc = solved("rubin-lpx-deepseek")  # a copy: other tests edit the module's plan
    for p in (x for x in doc["pools"] if x["part"] == 0 and x["config"]["main"]["dp"] > 1):
        assert p["config"]["main"]["dp"] * p["tp"] * p["pp"] == p["chips_per_replica"]