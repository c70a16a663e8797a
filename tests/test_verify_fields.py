"""The verifier re-derives every field a consumer reads: edited plans are rejected, naming the field.

Issue 11 item 9: ``placement check`` accepted the 2,048-chip LP30 replica of the Rubin + LPX plan edited
to 256 chips (cost and power lowered to match) and a decode pool's flat ``stage``, ``tpot_ms``, ``batch``,
``tp``, ``utilisation`` and ``memory_per_chip_gb`` edited. Each edit here must give exit 5 naming the field.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner
from verify_plans import instance_file, pool, solved, write

from placement.cli.app import app
from placement.core.plans.plan import parse_plan
from placement.core.verify.verifier import verify

RUBIN = "rubin-lpx-deepseek"
RUBIN_AF = "rubin-lpx-deepseek-af"  # the Rubin + LPX instance restricted to attention–FFN decode
runner = CliRunner()


def _check(tmp_path, name: str, doc: dict):
    return runner.invoke(app, ["check", instance_file(name), write(tmp_path, doc)])


def test_the_untouched_plans_pass_check(tmp_path):
    for name in (RUBIN, "spec-decode-draft", "melange-toy"):
        r = _check(tmp_path, name, solved(name)[2])
        assert r.exit_code == 0, r.output


def _lp30_to_256(doc: dict, config_too: bool) -> int:
    """The FFN replica (several LPX racks) shrunk to 256 chips, its cost, power and the plan's totals lowered to
    match; returns its chips before."""
    ffn = pool(doc, stage="decode-ffn", chip="lp30")
    g = ffn["chips_per_replica"]
    assert g > 256
    scale = 256 / g
    saved_usd, saved_w = ffn["usd_per_hour"] * (1 - scale), ffn["power_w"] * (1 - scale)
    ffn.update(chips=256 * ffn["replicas"], chips_per_replica=256, usd_per_hour=ffn["usd_per_hour"] * scale,
               power_w=ffn["power_w"] * scale)
    ffn["sites"][0]["domains"] = ffn["sites"][0]["domains"][:1]
    doc["cost_usd_per_hour"] -= saved_usd
    doc["power_w"] -= saved_w
    doc["chips"] -= g - 256
    doc["chips_by_type"]["lp30"] = 256
    if config_too:  # the configuration edited as well: dp × tp × pp = 256 chips, in both halves' copies
        part = next(p["config"]["partner"] for p in doc["pools"] if p["column"] == ffn["column"])
        pp = 256 // (part["tp"] * part.get("dp", 1))
        for p in doc["pools"]:
            if p["column"] == ffn["column"]:
                p["config"]["partner"].update(chips=256, pp=pp)
        ffn["pp"] = pp
    return g


@pytest.mark.parametrize("config_too", [False, True], ids=["flat-fields", "flat-fields-and-config"])
def test_lp30_replica_cut_to_256_chips_is_rejected(tmp_path, config_too):
    _, ctx, doc = solved(RUBIN_AF)
    g = _lp30_to_256(doc, config_too)
    violations = verify(ctx, parse_plan(doc))
    assert violations
    r = _check(tmp_path, RUBIN_AF, doc)
    assert r.exit_code == 5, r.output
    if config_too:  # consistent fields, but 256 LP30 chips cannot hold the FFN weights
        assert "does not fit in memory" in r.output
    else:
        assert "chips_per_replica says 256" in r.output and f"gives {g}" in r.output


DECODE_EDITS = {
    "stage": "prefill",
    "tpot_ms": 10.0,
    "batch": 256,
    "tp": 3,  # no layout has it: differs from every pool
    "utilisation": 0.5,
    "memory_per_chip_gb": 80.0,
}


@pytest.mark.parametrize("field", sorted(DECODE_EDITS))
def test_decode_pool_flat_field_edited_is_rejected(tmp_path, field):
    _, ctx, doc = solved(RUBIN)
    # The plan's first pool that decodes (a decode pool, an aggregated one that also decodes, or the attention
    # half of an attention–FFN pair: the plan may serve every class split).
    decode = next(p for p in doc["pools"] if p["stage"] in ("decode", "aggregated", "decode-attention"))
    assert decode[field] != DECODE_EDITS[field]
    decode[field] = DECODE_EDITS[field]
    assert any(f"{field} says" in v for v in verify(ctx, parse_plan(doc)))
    r = _check(tmp_path, RUBIN, doc)
    assert r.exit_code == 5, r.output
    assert f"pool {decode['id']}: {field} says" in r.output


POOL_EDITS = {  # field -> a function giving the edited value from the current one
    "chip": lambda x: "b200",
    "chips": lambda x: x - 1,
    "ep": lambda x: 1 if x > 1 else 2,
    "pp": lambda x: x + 1,
    "chunk_tokens": lambda x: 4096,
    "micro_batches": lambda x: x + 1,
    "paired_with": lambda x: "pool-01",
    "capacity_rps_per_replica": lambda x: [{**r, "rate_rps": 2 * r["rate_rps"]} for r in x]
    or [{"class": "chat", "mode": "pd", "stage": "decode", "rate_rps": 1.0}],
    "ttft_ms": lambda x: 1.0,
    "usd_per_hour": lambda x: x / 2,
    "power_w": lambda x: x / 2,
    "domains": lambda x: ["lpx"],
    "traffic_class": lambda x: "chat" if x != "chat" else "reasoning",
}


@pytest.mark.parametrize("field", sorted(POOL_EDITS))
def test_every_other_pool_field_edited_is_rejected(field):
    _, ctx, doc = solved(RUBIN)
    for p in doc["pools"]:
        p[field] = POOL_EDITS[field](p[field])
    assert any(f"{field} says" in v for v in verify(ctx, parse_plan(doc)))


@pytest.mark.parametrize(("field", "value"), [("ttft_ms", 1.0), ("tpot_ms", 1.0), ("rate_rps", 1.0),
                                              ("tpot_slo_ms", 1000.0), ("ttft_slo_ms", 1e5)])
def test_class_fields_edited_are_rejected(field, value):
    _, ctx, doc = solved(RUBIN)
    doc["classes"][1][field] = value
    assert any(f"class reasoning: {field} says" in v for v in verify(ctx, parse_plan(doc)))


def test_class_modes_edited_are_rejected():
    _, ctx, doc = solved(RUBIN)
    doc["classes"][0]["modes"] = {"aggregated": 0.5, "pd": 0.5}
    assert any("carries" in v and "expected" in v for v in verify(ctx, parse_plan(doc)))
    doc = solved(RUBIN)[2]
    modes = ("aggregated", "pd", "pd-af")
    cls = next(c for c in doc["classes"] if not all(c["modes"].get(m) for m in modes))
    unused = next(m for m in modes if not cls["modes"].get(m))
    cls["modes"] = {unused: 1.0}  # its pools still carry the modes it is served by
    violations = verify(ctx, parse_plan(doc))
    assert any("a mode its class does not use" in v for v in violations), violations


@pytest.mark.parametrize(("field", "edit"), [
    ("cost_usd_per_hour", lambda d: d["cost_usd_per_hour"] * 0.9),
    ("power_w", lambda d: d["power_w"] * 0.9),
    ("chips", lambda d: d["chips"] - 8),
    ("chips_by_type", lambda d: {**d["chips_by_type"], "lp30": 256}),
    ("output_tokens_per_s", lambda d: d["output_tokens_per_s"] * 2),
    ("usd_per_million_output_tokens", lambda d: d["usd_per_million_output_tokens"] / 2),
])
def test_plan_totals_edited_are_rejected(field, edit):
    _, ctx, doc = solved(RUBIN)
    doc[field] = edit(doc)
    violations = verify(ctx, parse_plan(doc))
    assert any(v.startswith(("cost:", "power:")) or f"plan: {field} says" in v for v in violations), violations


@pytest.mark.parametrize(("field", "edit"), [
    ("load_bytes_per_s", lambda x: x * 1.01),
    ("capacity_bytes_per_s", lambda x: x * 2),
    ("utilisation", lambda x: x + 0.1),
])
def test_link_fields_edited_are_rejected(field, edit):
    _, ctx, doc = solved(RUBIN_AF)
    link = doc["links"][0]
    link[field] = edit(link[field])
    assert any(field in v for v in verify(ctx, parse_plan(doc)))


@pytest.mark.parametrize("stated", [1.0, 1e3])
def test_small_load_stated_on_an_idle_link_is_rejected(stated):
    """A link that carries nothing may not claim a load, however small beside its capacity: the slack
    for pair terms the MILP leaves out (1e-9 of capacity) excuses only a stated load below the derived one."""
    _, ctx, doc = solved("mixed-fleet")
    link = next(lk for lk in doc["links"] if lk["load_bytes_per_s"] == 0 and lk["capacity_bytes_per_s"] >= 1e12)
    link["load_bytes_per_s"] = stated  # utilisation stays 0: stated / capacity rounds to 0 at 6 decimals
    violations = verify(ctx, parse_plan(doc))
    assert any(f"load_bytes_per_s says {stated:.10g}, its flows and pairs put 0" in v for v in violations), violations


def test_pair_latency_edited_is_rejected():
    _, ctx, doc = solved(RUBIN_AF)
    doc["pairs"][0]["latency_us"] = 1.0
    assert any("latency_us says 1.0" in v for v in verify(ctx, parse_plan(doc)))
