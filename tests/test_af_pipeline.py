"""Attention–FFN replicas with a pipelined FFN side: the audit's hand calculation, streams,
the ingress of the active stage and physical floors (issue 11, items 1 and 2).

The expected numbers are derived here from the cost model's pieces (roofline steps,
transfer times) and written-out closed-loop bounds, not by calling
:func:`costmodels.af.af_pipeline`; the floors use only the catalogue's peak FLOP/s
and bandwidths (no efficiencies, overheads or collectives).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodels import (
    af_activation_bytes_per_token,
    af_layers_per_stage,
    af_pipeline,
    af_pipeline_tpot_s,
    af_stage_utilisation,
    af_stream_counts,
    af_tpot_s,
    af_transfer_s,
    decode_attention_step,
    decode_ffn_step,
)
from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.core.instance.schema import TrafficClass
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.replicas.pair_latencies import pair_latencies
from placement.core.replicas.queues import MAX_UTILISATION
from placement.modes import GridSet, configurations
from placement.modes.pd_af import _evaluate_pairings, _pairings
from placement.modes.pd_af import _half as _af_half

INSTANCE = "instances/rubin-lpx-deepseek.yaml"
#: Rubin rack → spine → LPX rack: two 2-µs uplinks.
LATENCY_S = 4e-6
PREC = "fp8"


@pytest.fixture(scope="module")
def ctx() -> Context:
    return Context.of(load_instance(INSTANCE))


def _cls(ctx: Context, name: str = "reasoning") -> TrafficClass:
    return next(c for c in ctx.instance.workload.classes if c.name == name)


def _short() -> TrafficClass:
    """Tiny contexts: a cheap attention side, so the FFN side and the links show."""
    return TrafficClass(name="short", rate_rps=1.0, prompt_tokens=16, output_tokens=2, ttft_ms=1e3, tpot_ms=1e3)


def _resource(ctx: Context, chip: str) -> str:
    return next(s.resource for s in ctx.sites.values() if s.chip.name == chip)


def _config(ctx: Context, *, a_tp: int, dp: int, f_tp: int, pp: int, ep: int = 1, batch: int = 512,
            mb: int = 2, a_chip: str = "rubin", f_chip: str = "lp30") -> PoolConfig:
    att = PartLayout(chip=a_chip, site_resource=_resource(ctx, a_chip), chips=a_tp * dp, tp=a_tp, ep=1, pp=1, dp=dp)
    ffn = PartLayout(chip=f_chip, site_resource=_resource(ctx, f_chip), chips=f_tp * pp, tp=f_tp, ep=ep, pp=pp)
    return PoolConfig(kind="decode-af", traffic_class="reasoning", main=att, partner=ffn, batch=batch,
                      micro_batches=mb)


def _context_tokens(cls: TrafficClass) -> float:
    return cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens / 2


def _by_hand(ctx: Context, cfg: PoolConfig, cls: TrafficClass, streams: int, lat: float,
             stage_nic_bytes_per_s: float | None = None, activations: str = "bf16") -> dict:
    """The closed loop written out for one stream count (the module notes of costmodels.af); activations
    cross at ``activations`` (the instance's default, BF16; the audited code sent them at the weights' FP8)."""
    m, att, ffn = ctx.model, cfg.main, cfg.partner
    a_chip, f_chip = ctx.chips[att.chip], ctx.chips[ffn.chip]
    mb, dp, b = cfg.micro_batches, att.dp, cfg.batch
    ep = ffn.ep > 1
    tokens = dp * b / streams
    a = decode_attention_step(a_chip, m, batch=b / mb, context=_context_tokens(cls), tp=att.tp, precision=PREC,
                              kv_precision=PREC).time_s
    # Layer by layer on one stage: the step model with pp = 1 on that stage's tp chips.
    f = decode_ffn_step(f_chip, m, batch=tokens, tp=ffn.tp, ep=ffn.ep, pp=1, precision=PREC).time_s
    stage_nic = ffn.tp * f_chip.scale_out_bandwidth_bytes_per_s if stage_nic_bytes_per_s is None \
        else stage_nic_bytes_per_s
    c_a = af_transfer_s(m, b / mb, att.tp * a_chip.scale_out_bandwidth_bytes_per_s, lat, activations,
                        ffn_expert_parallel=ep)
    c_f = af_transfer_s(m, tokens, stage_nic, lat, activations, ffn_expert_parallel=ep)
    share = math.ceil(m.layers / ffn.pp) / m.layers
    loop = a + f + max(c_a, c_f)
    tpot = max(loop, mb * a, streams * share * f, mb * c_a / 2, streams * share * c_f / 2)
    return {"tpot": tpot, "loop": loop, "attn": a, "ffn": f, "c_a": c_a, "c_f": c_f, "tokens": tokens}


def test_audit_hand_calculation(ctx):
    """The audit: FFN on 2,048 LP30 (tp 64 × pp 32), 72 Rubin attention groups × 512, 2 micro-batches.

    Lock-step (each micro-batch of all 72 groups together, 18,432 tokens), one
    stage's 64 chips work on it at a time: 45.6 ms per micro-batch (compute
    16.2, 64-way all-reduce 29.2) where the full-pipeline step said 5.24; with
    the audited ingress (all FFN chips' NICs, 14.4 TB/s) the loop is 58.5 ms — attention 5.6 (its 512 sequences'
    host work overlapped, shorter), FFN 45.6 and
    a crossing of 7.3 ms: 61 layers × 2 dispatches at the 60 µs RDMA kernel floor — with the active stage's
    3.2 TB/s it is longer still. The evaluator takes the stream count with the lowest closed-loop bound.
    """
    cls, m, lp30 = _cls(ctx), ctx.model, ctx.chips["lp30"]
    assert LATENCY_S in pair_latencies(ctx, _resource(ctx, "rubin"), _resource(ctx, "lp30"))
    cfg = _config(ctx, a_tp=1, dp=72, f_tp=64, pp=32)
    st = decode_ffn_step(lp30, m, batch=18432, tp=64, pp=1, precision=PREC)
    assert (st.time_s, st.compute_s, st.comm_s) == pytest.approx((45.6e-3, 16.2e-3, 29.2e-3), abs=0.05e-3)
    assert decode_ffn_step(lp30, m, batch=18432, tp=64, pp=32, precision=PREC).time_s == pytest.approx(5.24e-3,
                                                                                                       abs=0.01e-3)
    all_nics = min(72 * ctx.chips["rubin"].scale_out_bandwidth_bytes_per_s, 2048 * lp30.scale_out_bandwidth_bytes_per_s)
    assert all_nics == pytest.approx(14.4e12)
    today_ingress = _by_hand(ctx, cfg, cls, 2, LATENCY_S, stage_nic_bytes_per_s=all_nics, activations=PREC)
    assert today_ingress["c_f"] == pytest.approx(61 * 2 * 60e-6)
    assert today_ingress["loop"] == pytest.approx(58.5e-3, abs=0.05e-3)
    lockstep = _by_hand(ctx, cfg, cls, 2, LATENCY_S, activations=PREC)
    assert lockstep["tpot"] == lockstep["loop"] > today_ingress["loop"]

    best = min(_by_hand(ctx, cfg, cls, s, LATENCY_S)["tpot"] for s in af_stream_counts(72, 2, 32))
    got = evaluate(ctx, cfg, cls, pair_latency_s=LATENCY_S)
    assert float(got.tpot_s) == pytest.approx(best, rel=1e-9)
    # 72·512 slots each held output·TPOT: with 36,864 slots the wait for one is ~0 up to the utilisation cap
    assert float(got.capacity_rps) == pytest.approx(MAX_UTILISATION * 72 * 512 / (cls.output_tokens * best),
                                                    rel=1e-9)


def test_one_attention_group_runs_lockstep_through_the_stages(ctx):
    """dp = 1 leaves S = m: the FFN side cannot be filled, TPOT ≥ the layer-by-layer loop."""
    cls = _cls(ctx)
    cfg = _config(ctx, a_tp=64, dp=1, f_tp=64, pp=32, batch=8192)
    got = float(evaluate(ctx, cfg, cls, pair_latency_s=LATENCY_S).tpot_s)
    hand = _by_hand(ctx, cfg, cls, 2, LATENCY_S)
    assert got == pytest.approx(hand["tpot"], rel=1e-9)
    assert got >= hand["ffn"] > 3 * decode_ffn_step(ctx.chips["lp30"], ctx.model, batch=4096, tp=64, pp=32,
                                                    precision=PREC).time_s


def test_pp1_reduces_to_the_pingpong_formula(ctx):
    """One FFN stage: exactly af_tpot_s with today's micro-batch (dp·B/m) and bandwidth (all chips' NICs)."""
    cls, m = _cls(ctx), ctx.model
    a_chip, f_chip = ctx.chips["rubin"], ctx.chips["lp30"]
    for a_tp, dp, f_tp, ep, mb in [(8, 1, 256, 1, 2), (64, 1, 256, 256, 3), (1, 1, 128, 1, 1), (1, 72, 256, 1, 2),
                                   (8, 9, 256, 256, 2)]:
        cfg = _config(ctx, a_tp=a_tp, dp=dp, f_tp=f_tp, pp=1, ep=ep, mb=mb)
        b = np.array([16.0, 256.0, 2048.0])
        attn = decode_attention_step(a_chip, m, batch=b / mb, context=_context_tokens(cls), tp=a_tp,
                                     precision=PREC, kv_precision=PREC).time_s
        ffn = decode_ffn_step(f_chip, m, batch=dp * b / mb, tp=f_tp, ep=ep, pp=1, precision=PREC).time_s
        nic = min(dp * a_tp * a_chip.scale_out_bandwidth_bytes_per_s, f_tp * f_chip.scale_out_bandwidth_bytes_per_s)
        comm = af_transfer_s(m, dp * b / mb, nic, LATENCY_S, "bf16", ffn_expert_parallel=ep > 1)
        got = evaluate(ctx, cfg, cls, batch=b, pair_latency_s=LATENCY_S).tpot_s
        np.testing.assert_allclose(got, af_tpot_s(attn, ffn, comm, mb), rtol=1e-12)


def test_pipeline_at_pp1_and_lockstep_is_af_tpot_s():
    rng = np.random.default_rng(11)
    a, f, ca, cf = rng.uniform(0.1, 3.0, (4, 200))
    for mb in (1, 2, 3):
        got = af_pipeline(a, f, ca, cf, micro_batches=mb, streams=mb, layers=61, pp=1).tpot_s
        np.testing.assert_allclose(got, af_tpot_s(a, f, np.maximum(ca, cf), mb), rtol=1e-12)



def test_tpot_alone_is_the_pipelines_tpot():
    rng = np.random.default_rng(5)
    a, f, ca, cf = rng.uniform(0.1, 3.0, (4, 300))
    for mb, streams, pp in ((1, 1, 1), (2, 4, 8), (3, 9, 61)):
        pipe = af_pipeline(a, f, ca, cf, micro_batches=mb, streams=streams, layers=61, pp=pp)
        got = af_pipeline_tpot_s(a, f, ca, cf, micro_batches=mb, streams=streams, layers=61, pp=pp)
        assert got.tobytes() == np.asarray(pipe.tpot_s).tobytes()


def test_pairings_evaluated_together_are_each_evaluated_alone(ctx):
    # Generation evaluates every pairing of two resources at once (distinct halves once, one slot
    # admission for every set); each row must be what the configuration alone gives, bit for bit.
    cls = _cls(ctx)
    res_a, res_f = _resource(ctx, "rubin"), _resource(ctx, "lp30")
    cfgs, lats = _pairings(ctx, cls, res_a, res_f, {}), pair_latencies(ctx, res_a, res_f)
    b = np.array([1.0, 8.0, 64.0, 512.0])
    together = _evaluate_pairings(ctx, cls, b, {}, cfgs, lats)
    assert len({(c.main.dp, c.partner.pp, c.partner.ep > 1) for c in cfgs}) > 1  # several sets
    assert len(together) == len(cfgs) * len(lats)
    assert any((np.asarray(perf.capacity_rps) > 0).any() for _, perf in together.values())
    for cfg in cfgs[::7]:
        for lat in lats:
            alone = _evaluate_pairings(ctx, cls, b, {}, [cfg], [lat])[id(cfg), lat][1]
            got = together[id(cfg), lat][1]
            for field in ("capacity_rps", "ttft_s", "tpot_s", "fits", "pair_bytes_per_s", "memory_per_chip_bytes"):
                assert np.asarray(getattr(got, field)).tobytes() == np.asarray(getattr(alone, field)).tobytes()


def test_a_grid_set_is_its_grids_each_evaluated_alone(ctx):
    # Generation takes each resource pair's pairings as one GridSet and keeps what the classes share in
    # the memo; its grids are those handed out without sets, in order, and each entry of the set's arrays
    # is what its grid gives evaluated alone, bit for bit, for a second class on the first's memo too.
    memo: dict = {}
    for cls in ctx.instance.workload.classes[:2]:
        sets = [g for g, _ in configurations(ctx, cls, memo, sets=True) if isinstance(g, GridSet)]
        grids = [g for g, _ in configurations(ctx, cls, {}) if g.config.kind == "decode-af"]
        assert len(sets) > 1
        assert [(g.config, g.pair_latency_s) for s in sets for g in s.grids({})] == [
            (g.config, g.pair_latency_s) for g in grids]
        for s in sets:
            perf = s.evaluate(ctx, cls, memo)
            assert perf.capacity_rps.shape == (len(s.configs), len(s.pair_latencies_s), len(s.batches))
            assert (perf.capacity_rps > 0).any()
            for c in range(0, len(s.configs), 5):
                for l_, lat in enumerate(s.pair_latencies_s):
                    alone = evaluate(ctx, s.configs[c], cls, batch=s.batches, pair_latency_s=lat)
                    for field in ("capacity_rps", "ttft_s", "tpot_s", "pair_bytes_per_s"):
                        assert getattr(perf, field)[c, l_].tobytes() == getattr(alone, field).tobytes()
                    assert perf.fits[c, 0].tobytes() == alone.fits.tobytes()
                    assert perf.memory_per_chip_bytes[c, 0].tobytes() == alone.memory_per_chip_bytes.tobytes()


def test_more_streams_never_slower_than_lockstep_nor_faster_than_a_loop_or_a_server(ctx):
    """Over the batch grid and several layouts: loop ≤ TPOT ≤ lock-step TPOT; no server over its capacity."""
    cls, m = _cls(ctx), ctx.model
    b = np.array([8.0, 64.0, 512.0, 4096.0])
    for a_tp, dp, f_tp, pp, ep in [(1, 72, 64, 32, 1), (8, 9, 128, 16, 128), (2, 36, 256, 8, 1)]:
        cfg = _config(ctx, a_tp=a_tp, dp=dp, f_tp=f_tp, pp=pp, ep=ep)
        got = evaluate(ctx, cfg, cls, batch=b, pair_latency_s=LATENCY_S).tpot_s
        for i, batch in enumerate(b):
            c = cfg.model_copy(update={"batch": int(batch)})
            hands = [_by_hand(ctx, c, cls, s, LATENCY_S) for s in af_stream_counts(dp, 2, pp)]
            assert got[i] <= hands[0]["tpot"] * (1 + 1e-12)  # S = m, lock-step
            assert got[i] >= min(h["loop"] for h in hands) * (1 - 1e-12)
            h = min(hands, key=lambda x: x["tpot"])
            assert got[i] == pytest.approx(h["tpot"], rel=1e-12)
            # Work per round on each server, from the physical quantities:
            busiest = max(af_layers_per_stage(m.layers, pp)) / m.layers
            bpt = af_activation_bytes_per_token(m, PREC, ffn_expert_parallel=ep > 1)
            stage_bytes = dp * batch * bpt / 2 * busiest  # one direction through the busiest stage's NICs
            assert got[i] >= stage_bytes / (f_tp * ctx.chips["lp30"].scale_out_bandwidth_bytes_per_s)
            assert got[i] >= 2 * h["attn"] * (1 - 1e-12)  # each group: its 2 micro-batches
            streams = dp * batch / h["tokens"]
            assert got[i] >= streams * busiest * h["ffn"] * (1 - 1e-12)


def test_ingress_is_the_active_stage_not_the_whole_ffn_side(ctx):
    """dp = 1, a wide attention group (32 × 200 GB/s), short contexts so the loop sets the pace:
    the stream's crossing is bound by the 64 NICs of the active LP30 stage (3.2 TB/s), not 2,048. (The
    attention chips' per-sequence host cost is set aside: 16,384 sequences a micro-batch would pay 0.33 s
    of it and hide the crossing this test is about.)"""
    import dataclasses

    rubin = ctx.chips["rubin"].model_copy(update={"sequence_overhead_s": 0.0})
    ctx = dataclasses.replace(ctx, chips={**ctx.chips, "rubin": rubin})
    cls = _short()
    cfg = _config(ctx, a_tp=32, dp=1, f_tp=64, pp=32, batch=32768)
    got = float(evaluate(ctx, cfg, cls, pair_latency_s=LATENCY_S).tpot_s)
    stage = _by_hand(ctx, cfg, cls, 2, LATENCY_S, stage_nic_bytes_per_s=64 * 50e9)
    whole = _by_hand(ctx, cfg, cls, 2, LATENCY_S, stage_nic_bytes_per_s=2048 * 50e9)
    assert stage["c_f"] > stage["c_a"]  # the FFN end is the narrower one
    assert got == pytest.approx(stage["tpot"], rel=1e-12)
    assert got > whole["tpot"] * (1 + 1e-3)


def _floor_s(ctx: Context, cfg: PoolConfig, cls: TrafficClass, batch: float) -> float:
    """A TPOT no replica can beat: peak FLOP/s, memory and NIC bandwidth only, no efficiencies.

    The smallest stream a replica can run is one micro-batch of one group
    (B/m tokens); it still passes every layer's FFN on one stage's chips, its
    attention on one group and crosses over the stage's NICs, in sequence. Over
    a round, the busiest stage computes ⌈L/pp⌉ layers for all dp·B tokens and
    each group reads its KV and its attention weights.
    """
    m, att, ffn = ctx.model, cfg.main, cfg.partner
    a_chip, f_chip = ctx.chips[att.chip], ctx.chips[ffn.chip]
    mb, dp = cfg.micro_batches, att.dp
    t = batch / mb
    ffn_flops_per_token = 2.0 * m.active_ffn_params
    attn_flops_per_token = 2.0 * (m.attention_params + m.vocab_size * m.hidden_size)  # projections, LM head
    loop = (t * attn_flops_per_token / (att.tp * a_chip.flops(PREC))
            + t * ffn_flops_per_token / (ffn.tp * f_chip.flops(PREC))
            + t * 2.0 * m.layers * m.hidden_size * 1.0 / (ffn.tp * f_chip.scale_out_bandwidth_bytes_per_s))
    # Per group and round: its attention weights (FP8, 1 byte) at least once and its B sequences' KV.
    kv = batch * m.kv_bytes(PREC, _context_tokens(cls))
    group = (m.attention_params * 1.0 + kv) / (att.tp * a_chip.memory_bandwidth_bytes_per_s)
    share = math.ceil(m.layers / ffn.pp) / m.layers
    stage = dp * batch * ffn_flops_per_token * share / (ffn.tp * f_chip.flops(PREC))
    return max(loop, group, stage)


def test_every_time_is_above_its_physical_floor(ctx):
    """A short-context class so the attention side is cheap and the FFN side shows."""
    short = _short()
    b = np.array([1.0, 64.0, 1024.0, 8192.0, 36864.0])
    for a_tp, dp, f_tp, pp, ep in [(8, 1, 64, 32, 1), (1, 72, 64, 32, 1), (64, 1, 256, 8, 256), (8, 9, 128, 16, 1)]:
        cfg = _config(ctx, a_tp=a_tp, dp=dp, f_tp=f_tp, pp=pp, ep=ep)
        got = evaluate(ctx, cfg, short, batch=b, pair_latency_s=LATENCY_S).tpot_s
        for i, batch in enumerate(b):
            assert got[i] >= _floor_s(ctx, cfg, short, batch), (a_tp, dp, f_tp, pp, batch)


def test_ffn_half_is_above_one_stages_floor(ctx):
    """The FFN time the evaluator uses for a micro-batch of T tokens: at least T tokens' FFN FLOPs
    on the tp chips of one stage at peak (a full-pipeline step over tp·pp chips is not)."""
    cls, m, lp30 = _cls(ctx), ctx.model, ctx.chips["lp30"]
    tokens = np.array([256.0, 2048.0, 18432.0, 65536.0])
    for f_tp, pp, ep in [(64, 32, 1), (128, 16, 128), (256, 8, 1)]:
        part = _config(ctx, a_tp=1, dp=1, f_tp=f_tp, pp=pp, ep=ep).partner
        got, _ = _af_half(ctx, {}, "ffn", part, tokens, tokens, cls)
        floor = tokens * 2.0 * m.active_ffn_params / (f_tp * lp30.flops(PREC))
        assert np.all(got >= floor), (f_tp, pp, got / floor)


def test_stage_utilisation():
    """Busy fractions: the busiest stage's is af_pipeline's; the mean is S·F/(pp·TPOT); none above 1."""
    f, a, c = np.array([0.2, 1.0, 4.0]), 0.5, 0.1
    for streams, pp in [(2, 32), (36, 32), (144, 32), (3, 1)]:
        p = af_pipeline(a, f, c, c, micro_batches=1 if pp > 1 else 3, streams=streams, layers=61, pp=pp)
        u = af_stage_utilisation(f, p.tpot_s, streams=streams, layers=61, pp=pp)
        assert u.shape == (3, pp)
        np.testing.assert_allclose(u.max(axis=-1), p.busiest_stage_utilisation, rtol=1e-12)
        np.testing.assert_allclose(u.mean(axis=-1), streams * f / (pp * p.tpot_s), rtol=1e-12)
        assert np.all(u <= 1 + 1e-12)
        assert np.all(u.max(axis=-1) <= min(1.0, streams * math.ceil(61 / pp) / 61) + 1e-12)


def test_pipeline_rejects_streams_that_are_not_whole_micro_batches():
    with pytest.raises(ValueError, match="multiple of micro_batches"):
        af_pipeline(1.0, 1.0, 0.1, 0.1, micro_batches=2, streams=3, layers=4, pp=2)
    with pytest.raises(ValueError, match="pp must be"):
        af_layers_per_stage(4, 5)
