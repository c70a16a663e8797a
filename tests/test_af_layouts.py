"""Attention–FFN as the physics allows (issue 30, item 2): micro-batch counts chosen by the candidates,
expert-parallel FFN stages with their own all-to-all, FFN halves of any whole number of domains.

Expected numbers are derived here from the cost model's pieces (the all-to-all and all-reduce written out,
the closed loop of :mod:`costmodels.af` written out), not by calling the evaluator's code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodels import (
    af_micro_batch_counts,
    af_stream_counts,
    af_transfer_s,
    decode_attention_step,
    decode_ffn_step,
    tp_allreduce_s,
)
from costmodels.comm import (
    ALLTOALL_ALPHA_S,
    EPLB_RESIDUAL_IMBALANCE,
    SCALE_UP_ALLTOALL_EFFICIENCY,
    SCALE_UP_ALLTOALL_FLOOR_S,
)
from placement.api import solve
from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.core.instance.schema import TrafficClass
from placement.core.plans.plan import parse_plan
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.replicas.pair_latencies import pair_latencies
from placement.core.verify.verifier import verify
from placement.modes.layouts import BATCHES, ffn_parts, parts, weights
from placement.modes.pd_af import _pairings
from placement.studies.whatif import apply_overrides
from solvers.packing import check_packable, pack_into_domains
from solvers.problem import Column, Demand, Part, Problem, Route, Site

INSTANCE = "instances/rubin-lpx-deepseek.yaml"
#: Rubin rack → spine → LPX rack: two 2-µs uplinks.
LATENCY_S = 4e-6
PREC = "fp8"


@pytest.fixture(scope="module")
def ctx() -> Context:
    return Context.of(load_instance(INSTANCE))


def _resource(ctx: Context, chip: str) -> str:
    return next(s.resource for s in ctx.sites.values() if s.chip.name == chip)


def _reasoning(ctx: Context, tpot_ms: float | None = None) -> TrafficClass:
    cls = ctx.classes["reasoning"]
    return cls if tpot_ms is None else cls.model_copy(update={"tpot_ms": tpot_ms})


def _config(ctx: Context, *, dp: int, ffn: dict, mb: int, batch: int = 512) -> PoolConfig:
    att = PartLayout(chip="rubin", site_resource=_resource(ctx, "rubin"), chips=dp, tp=1, ep=1, pp=1, dp=dp)
    f = PartLayout(chip="lp30", site_resource=_resource(ctx, "lp30"), **ffn)
    return PoolConfig(kind="decode-af", traffic_class="reasoning", main=att, partner=f, batch=batch,
                      micro_batches=mb)


def test_ffn_halves_take_any_whole_number_of_racks(ctx):
    """DeepSeek-V3's FP8 FFN weights need ≥ 1,316 LP30 of 500 MB: 6 LPX racks (1,536 chips) hold them, where the
    powers-of-two chain the other kinds use jumps from 1,024 to 2,048 chips."""
    site = ctx.resources()[_resource(ctx, "lp30")]
    w = weights(ctx)
    need = math.ceil(w.ffn_bytes / site.chip.memory_bytes)
    racks = math.ceil(need / site.chips_per_domain)
    assert (need, racks) == (1316, 6)
    sizes = {p.chips for p in ffn_parts(ctx, site, w.ffn_bytes)}
    assert {6 * 256, 7 * 256} <= sizes and all(g % 256 == 0 and g >= need for g in sizes)
    assert min(sizes) == racks * 256 not in {p.chips for p in parts(ctx, site, "decode-ffn", w.ffn_bytes)}
    cfgs = _pairings(ctx, _reasoning(ctx), _resource(ctx, "rubin"), _resource(ctx, "lp30"), {})
    assert any(c.partner.chips == 1536 for c in cfgs)


def test_whole_domain_sizes_pack_exactly():
    """Sizes above a domain need only be whole domains: 3 and 5 domains beside 2 and a sub-domain chain pass
    the check and pack into exactly the domains their units fill; 12 units on 8-unit domains do not."""
    site = Site(name="s", node="v", resource="lpu", units_per_domain=8, domains=10, usd_per_hour_per_unit=1.0,
                power_w_per_unit=1.0)

    def problem(*units):
        cols = [Column(name=f"c{u}", parts=[Part(resource="lpu", units=u)], capacity={"q": 1.0}) for u in units]
        return Problem(demands=[Demand(name="d", rate=1.0)], routes=[Route(name="r", demand="d", steps=["q"])],
                       columns=cols, sites=[site])

    check_packable(problem(2, 4, 16, 24, 40))
    hosted = pack_into_domains(site, {"c40": (40, 1), "c24": (24, 1), "c4": (4, 2), "c2": (2, 2)})
    assert sum(u for d in hosted.values() for _, u in d) == 40 + 24 + 8 + 4
    assert len(hosted) == 5 + 3 + 2 and all(sum(u for _, u in d) <= 8 for d in hosted.values())
    with pytest.raises(ValueError, match="c12.*not a whole number of domains"):
        check_packable(problem(4, 12))


def test_expert_parallel_stage_step_by_hand(ctx):
    """An EP64 stage of 8 groups × TP8 on one LPX rack, 18,432 tokens (the audit's lock-step micro-batch):
    58 MoE layers dispatch and combine over the rack's C2C links, the 3 dense layers all-reduce inside each
    group — 9.3 ms where the TP64 stage's 64-way all-reduce of every token per layer is 29.2 ms."""
    lp30, m = ctx.chips["lp30"], ctx.model
    t, tp, dp, ep = 18432.0, 8, 8, 64
    k, d = m.moe.active_experts, m.hidden_size
    assert lp30.alltoall_efficiency is None and lp30.alltoall_floor_s is None  # the defaults below apply
    rho = 1 + EPLB_RESIDUAL_IMBALANCE + math.sqrt(2 * math.log(ep) / (t * k / ep))
    rank_bytes = rho * (t / ep) * k * d * 2  # BF16 activations out, BF16 combine back
    phase_s = max(SCALE_UP_ALLTOALL_FLOOR_S,
                  ALLTOALL_ALPHA_S + rank_bytes / (SCALE_UP_ALLTOALL_EFFICIENCY * lp30.scale_up_bandwidth_bytes_per_s))
    dense_s = float(tp_allreduce_s(lp30, t / dp * d * 2, tp))
    hand_s = m.n_moe_layers * 2 * phase_s + m.n_dense_layers * dense_s
    st = decode_ffn_step(lp30, m, batch=t, tp=tp, ep=ep, pp=1, dp=dp, precision=PREC)
    assert float(st.comm_s) == pytest.approx(hand_s, rel=1e-12)
    assert hand_s == pytest.approx(9.3e-3, abs=0.05e-3)
    tp64 = decode_ffn_step(lp30, m, batch=t, tp=64, pp=1, precision=PREC)
    assert float(tp64.comm_s) > 3 * hand_s


def test_expert_parallel_stage_replica_sends_each_token_once(ctx):
    """A decode-af replica whose FFN stages are EP128 (8 groups × TP16) × PP12: each token crosses once each
    way (no k copies: the stage dispatches itself) over the NICs of all 128 chips of the active stage; its
    TPOT is the closed loop of costmodels.af written out, at the best stream count."""
    cls, m = _reasoning(ctx), ctx.model
    a_chip, f_chip = ctx.chips["rubin"], ctx.chips["lp30"]
    ffn = {"chips": 1536, "tp": 16, "ep": 128, "pp": 12, "dp": 8}
    cfg = _config(ctx, dp=144, ffn=ffn, mb=2, batch=256)
    mb, dp, b = 2, 144, 256
    context = cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens / 2
    a = float(decode_attention_step(a_chip, m, batch=b / mb, context=context, tp=1, precision=PREC,
                                    kv_precision=PREC).time_s)
    c_a = float(af_transfer_s(m, b / mb, a_chip.scale_out_bandwidth_bytes_per_s, LATENCY_S))
    share = math.ceil(m.layers / 12) / m.layers
    best = math.inf
    for s in af_stream_counts(dp, mb, 12):
        tokens = dp * b / s
        f = float(decode_ffn_step(f_chip, m, batch=tokens, tp=16, ep=128, pp=1, dp=8, precision=PREC).time_s)
        c_f = float(af_transfer_s(m, tokens, 128 * f_chip.scale_out_bandwidth_bytes_per_s, LATENCY_S))
        best = min(best, max(a + f + max(c_a, c_f), mb * a, s * share * f, mb * c_a / 2, s * share * c_f / 2))
    assert LATENCY_S in pair_latencies(ctx, _resource(ctx, "rubin"), _resource(ctx, "lp30"))
    assert float(evaluate(ctx, cfg, cls, pair_latency_s=LATENCY_S).tpot_s) == pytest.approx(best, rel=1e-9)


def test_micro_batch_counts_are_candidates(ctx):
    """Every pairing is offered at each micro-batch count af_micro_batch_counts allows it (not only 2): a Rubin
    attention step's fixed 2 ms is below DeepSeek-V3's 2·61 crossings at the 60 µs kernel floor (7.3 ms), so
    one micro-batch is never offered; deep pipelines over few groups are offered more than 8."""
    rubin, layers = ctx.chips["rubin"], ctx.model.layers
    fixed_s = rubin.step_overhead_s + layers * (rubin.layer_overhead_s or 0.0)
    assert fixed_s < 2 * layers * 60e-6
    cfgs = _pairings(ctx, _reasoning(ctx), _resource(ctx, "rubin"), _resource(ctx, "lp30"), {})
    counts = {c.micro_batches for c in cfgs}
    assert {2, 4, 8} <= counts and 1 not in counts and max(counts) > 8
    by_parts: dict = {}
    for c in cfgs:
        by_parts.setdefault((c.main, c.partner), []).append(c.micro_batches)
    assert all(ms == af_micro_batch_counts(a.dp, f.pp, attention_fixed_s=fixed_s, layers=layers)
               for (a, f), ms in by_parts.items())


def test_four_micro_batches_serve_more_where_the_link_paces(ctx):
    """At reasoning TPOT 30 ms, 144 Rubin groups and 1,536 LP30 whose TP32 = EP32 stages take each token's 8
    expert copies from the attention side over the NICs: with 2 micro-batches a round carries B/2 of a group's
    sequences each way and the NICs pace it, so B = 256 is the largest batch within the SLO; 4 micro-batches
    halve every crossing and hold B = 512 — more requests/s on the same chips, so fewer chips for a load."""
    cls = _reasoning(ctx, 30.0)
    ffn = {"chips": 1536, "tp": 32, "ep": 32, "pp": 48, "dp": 1}
    best = {}
    for mb in (2, 4):
        perf = evaluate(ctx, _config(ctx, dp=144, ffn=ffn, mb=mb), cls, batch=BATCHES, pair_latency_s=LATENCY_S)
        ok = np.asarray(perf.ok(cls))
        best[mb] = (float(np.max(np.where(ok, perf.capacity_rps, 0.0))), float(np.max(BATCHES[ok])))
    assert best[2][1] == 256 and best[4][1] == 512
    assert best[4][0] > 1.2 * best[2][0]


def test_an_expert_parallel_ffn_plan_is_verified_and_a_bad_one_refused():
    """With reasoning at 50 ms and decode by attention–FFN disaggregation only (at 50 ms Rubin alone is cheaper)
    the plan's FFN halves are EP stages (dp > 1, ep = dp·tp); the verifier re-derives them and passes them, and
    refuses one once its experts no longer span the stage."""
    af_only = load_instance(INSTANCE).model_copy(update={"modes": ["pd-af"]})
    inst, _ = apply_overrides(af_only, ["workload.classes.reasoning.tpot_ms=50"], INSTANCE)
    plan = solve(inst, source=INSTANCE)
    assert plan.verified
    ep_stage = [p for p in plan.pools if p.part == 1 and p.config.partner.dp > 1]
    assert ep_stage and all(p.config.partner.ep == p.config.partner.dp * p.config.partner.tp for p in ep_stage)
    ctx = Context.of(inst)
    doc = plan.model_dump(mode="json")
    assert verify(ctx, parse_plan(doc)) == []
    column = ep_stage[0].column
    for p in doc["pools"]:
        if p["column"] == column:
            p["config"]["partner"]["ep"] = p["config"]["partner"]["tp"]
    assert any("needs its stage's experts over all dp·tp chips" in v for v in verify(ctx, parse_plan(doc)))


def test_four_micro_batches_are_chosen_where_they_are_cheaper(monkeypatch):
    """Llama-3.1-70B on 10 Rubin + LPX domains at 30 ms, attention–FFN decode only (tests/test_network_free.py's
    instance): the optimum runs one pair (72 Rubin groups, 128 LP30 as TP8 × PP16) at 4 micro-batches; with every
    pairing held to 2, as before, the verified optimum costs more."""
    from placement.bench.generate import build_instance
    from placement.core.instance.loading import parse_instance
    from placement.core.replicas import candidate_cache
    from placement.modes import pd_af

    doc = build_instance(domains=10, chip_types=["rubin", "lp30"], classes=1, family="mixed", model="llama-3.1-70b")
    doc["modes"] = ["pd-af"]
    doc["workload"]["classes"][0]["tpot_ms"] = 30
    inst = parse_instance(doc)
    candidate_cache.clear()
    try:
        plan = solve(inst)
        monkeypatch.setattr(pd_af, "af_micro_batch_counts", lambda *args, **kwargs: [2])
        candidate_cache.clear()
        two = solve(inst)
    finally:
        candidate_cache.clear()
    assert plan.verified and two.verified
    assert {p.config.micro_batches for p in plan.pools if p.config.kind == "decode-af"} >= {4}
    assert {p.config.micro_batches for p in two.pools if p.config.kind == "decode-af"} == {2}
    assert plan.cost_usd_per_hour < 0.95 * two.cost_usd_per_hour
