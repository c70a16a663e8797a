"""A co-located draft shares its target's workspace reserve and per-step overhead; a remote one keeps its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from costmodels import (
    decode_step,
    expected_tokens_per_verify,
    memory_per_chip_bytes,
    verify_step,
)
from placement import load_instance
from placement.core.instance.context import Context
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate

ROOT = Path(__file__).resolve().parents[1]


# ---- a co-located draft --------------------------------------------------------------------------


def _spec():
    ctx = Context.of(load_instance(ROOT / "instances" / "spec-decode-draft.yaml"))
    main = PartLayout(chip="h200", site_resource="h200@8", chips=8, tp=8, ep=1, pp=1)
    cls = ctx.instance.workload.classes[0]
    cfg = PoolConfig(kind="decode-spec", traffic_class=cls.name, main=main, batch=16, draft_tokens=4)
    return ctx, cls, cfg


def test_colocated_draft_counts_the_workspace_once():
    ctx, cls, cfg = _spec()
    h200 = ctx.chips["h200"]
    perf = evaluate(ctx, cfg, cls)
    context = cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens
    kw = {"stage": "decode", "batch": 16, "context": context, "tp": 8, "precision": "fp8", "kv_precision": "fp8"}
    target = memory_per_chip_bytes(h200, ctx.model, **kw)
    draft_alone = memory_per_chip_bytes(h200, ctx.draft_model, **kw)
    assert float(perf.memory_per_chip_bytes) == pytest.approx(target + draft_alone - 0.1 * h200.memory_bytes)
    assert 0.1 * h200.memory_bytes == pytest.approx(14.1e9)


def test_colocated_draft_steps_do_not_pay_the_targets_step_overhead():
    ctx, cls, cfg = _spec()
    h200 = ctx.chips["h200"]
    perf = evaluate(ctx, cfg, cls)
    c = cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens / 2
    kw = {"batch": 16, "context": c, "tp": 8, "precision": "fp8", "kv_precision": "fp8"}
    t_verify = verify_step(h200, ctx.model, gamma=4, **kw).time_s
    draft = decode_step(h200, ctx.draft_model, **kw)
    e = expected_tokens_per_verify(ctx.instance.draft.acceptance)
    # the draft's steps run inside the target's engine: none of their fixed or host costs (τ, h·B)
    assert draft.overhead_s >= h200.step_overhead_s
    expected = (4 * (draft.time_s - draft.overhead_s) + t_verify) / e
    assert float(perf.tpot_s) == pytest.approx(expected)
    assert float(perf.tpot_s) < (4 * draft.time_s + t_verify) / e - 3 * h200.step_overhead_s / e
    # a remote draft is its own engine: its steps keep its chip's overhead
    corsair = ctx.chips["corsair"]
    dpart = PartLayout(chip="corsair", site_resource="corsair@8", chips=8, tp=8, ep=1, pp=1)
    remote = evaluate(ctx, cfg.model_copy(update={"partner": dpart}), cls, pair_latency_s=5e-6)
    t_remote_draft = decode_step(corsair, ctx.draft_model, **kw).time_s
    assert float(remote.tpot_s) == pytest.approx((4 * t_remote_draft + t_verify + 2 * 5e-6) / e)
    assert np.isfinite(float(remote.tpot_s))
