"""Measured step tables (``measured_step_time``) replace the roofline step of the pools they match."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import typer
import yaml
from click.testing import CliRunner

from placement import load_instance
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.errors import EXIT_INPUT, InputError
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.solve import solve
from placement.core.replicas.candidates import generate
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.replicas.measured_steps import interpolate
from placement.core.replicas.queues import MAX_UTILISATION
from placement.core.verify.verifier import verify

INSTANCE = Path(__file__).parent / "instances" / "measured-steps.yaml"
H100_TP1 = PartLayout(chip="h100", site_resource="h100@1", chips=1, tp=1, ep=1, pp=1)


def _doc() -> dict:
    return yaml.safe_load(INSTANCE.read_text(encoding="utf-8"))


def _ctx(doc: dict | None = None) -> Context:
    return Context.of(parse_instance(_doc() if doc is None else doc, source="measured-steps.yaml"))


def test_decode_step_is_the_tables_interpolated_by_hand():
    ctx = _ctx()
    cls = ctx.instance.workload.classes[0]
    cfg = PoolConfig(kind="decode", traffic_class="chat", main=H100_TP1, batch=199)
    perf = evaluate(ctx, cfg, cls)
    # context 1,000 + 500/2 = 1,250: 3/14 of the way from the 500-token row to the 4,000-token one;
    # batch 199: 135/192 of the way from 64 to 256
    at_500 = 10.5 + 135 / 192 * (19.0 - 10.5)
    at_4000 = 16.0 + 135 / 192 * (40.0 - 16.0)
    assert float(perf.tpot_s) * 1e3 == pytest.approx(at_500 + 750 / 3500 * (at_4000 - at_500), rel=1e-12)
    # 199 slots each held 500 steps, admitted at the 0.9 utilisation cap (the wait budget does not bind)
    assert float(perf.capacity_rps) == pytest.approx(MAX_UTILISATION * 199 / (500 * float(perf.tpot_s)))


def test_prefill_step_is_the_tables():
    ctx = _ctx()
    cls = ctx.instance.workload.classes[0]
    cfg = PoolConfig(kind="prefill", traffic_class="chat", main=H100_TP1, batch=1)
    perf = evaluate(ctx, cfg, cls)
    step_ms = 9.0 + (1000 - 512) / (4096 - 512) * (60.0 - 9.0)
    # One prompt per step at the 0.9 utilisation cap; TTFT = M/D/1 wait ρS/(2(1 − ρ)) + step + KV transfer.
    assert float(perf.capacity_rps) == pytest.approx(MAX_UTILISATION / (step_ms / 1e3))
    wait_ms = MAX_UTILISATION * step_ms / (2 * (1 - MAX_UTILISATION))
    assert step_ms < float(perf.ttft_s) * 1e3 - wait_ms < step_ms + 2.0


def test_batches_outside_the_table_are_not_offered():
    ctx = _ctx()
    cls = ctx.instance.workload.classes[0]
    cfg = PoolConfig(kind="decode", traffic_class="chat", main=H100_TP1, batch=1)
    perf = evaluate(ctx, cfg, cls, batch=np.array([1.0, 256.0, 257.0, 4096.0]))
    assert perf.fits.tolist() == [True, True, False, False]
    _, inside = interpolate(ctx.instance.measured_step_time[0], np.array([300.0]), 1250.0)
    assert not inside[0]
    cands = generate(ctx)
    batches = [c.batch for c in cands.configs.values() if c.kind == "decode" and c.main == H100_TP1]
    assert batches and max(batches) <= 256


def test_plan_names_the_tables_and_takes_the_largest_batch_they_allow():
    plan = solve(load_instance(INSTANCE), source=str(INSTANCE))
    assert plan.verified, plan.violations
    by_stage = {p.stage: p for p in plan.pools}
    decode, prefill = by_stage["decode"], by_stage["prefill"]
    assert (decode.step_table, prefill.step_table) == ("measured_step_time[0]", "measured_step_time[1]")
    # 199 is the largest batch whose interpolated step meets the 20 ms TPOT (200 gives 20.05 ms)
    assert decode.batch == 199 and decode.tpot_ms == pytest.approx(19.9905, abs=1e-4)
    t, _ = interpolate(load_instance(INSTANCE).measured_step_time[0], np.array([200.0]), 1250.0)
    assert t[0] > 0.020


def test_verifier_re_derives_with_the_same_table():
    inst = load_instance(INSTANCE)
    plan = solve(inst, source=str(INSTANCE))
    assert plan.verified
    # the same plan against a table measured slower: its TPOT and capacity no longer hold
    doc = _doc()
    doc["measured_step_time"][0]["step_time_ms"] = [[2 * t for t in row] for row in
                                                    doc["measured_step_time"][0]["step_time_ms"]]
    slower = _ctx(doc)
    assert any("tpot" in v.lower() for v in verify(slower, plan))
    # and a plan that hides the table it rests on is caught
    tampered = copy.deepcopy(plan)
    next(p for p in tampered.pools if p.stage == "decode").step_table = None
    assert any("step_table" in v for v in verify(Context.of(inst), tampered))


def test_a_context_outside_the_table_is_an_input_error():
    doc = _doc()
    doc["workload"]["classes"][0].update(prompt_tokens=3000, output_tokens=3000)  # decodes at 4,500 tokens
    with pytest.raises(InputError) as e:
        generate(_ctx(doc))
    assert e.value.field == "measured_step_time[0].context_tokens" and "chat" in str(e.value)


@pytest.mark.parametrize(("edit", "field", "words"), [
    (lambda d: d["measured_step_time"][0].update(model="llama-3.1-70b"), "measured_step_time[0].model",
     "llama-3.1-8b"),
    (lambda d: d["measured_step_time"].append(dict(d["measured_step_time"][0])), "measured_step_time[2]",
     "second decode table"),
    (lambda d: d["measured_step_time"][0]["step_time_ms"].pop(), "measured_step_time", "one row per context"),
    (lambda d: d["measured_step_time"][1].update(context_tokens=None), "measured_step_time", "one list"),
])
def test_bad_tables_are_input_errors(edit, field, words, tmp_path):
    doc = _doc()
    edit(doc)
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = CliRunner().invoke(typer.main.get_command(app), ["validate", str(path)])
    assert result.exit_code == EXIT_INPUT, result.output
    assert field in result.output and words in result.output and "Traceback" not in result.output


def test_solve_prints_which_pools_rest_on_tables():
    result = CliRunner().invoke(typer.main.get_command(app), ["solve", str(INSTANCE)])
    assert result.exit_code == 0, result.output
    assert "step times from measured tables" in result.output and "measured_step_time[0]" in result.output
