"""The verifier cannot be fooled or crashed by a hostile plan (issue 15 item 1).

Each case of the issue's list of tampered plans that ``placement check`` accepted (exit 0) or crashed on
(exit 1): every one must now give exit 2 (malformed plan, the field named) or exit 5 (a violation),
never a traceback.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from verify_plans import instance_file, pool, solved, write

from placement.cli.app import app
from placement.core.plans.plan import parse_plan
from placement.core.plans.uplinks import domain_uplinks
from placement.core.verify.facts import transfers
from placement.core.verify.verifier import verify

runner = CliRunner()


def set_load(site, step, rate):
    """Set one step's rate in a site's ``load_rps`` records (plan schema 2), adding the record if missing."""
    c, m, st = step.split("|")
    recs = [r for r in site["load_rps"] if (r["class"], r["mode"], r["stage"]) != (c, m, st)]
    site["load_rps"] = [*recs, {"class": c, "mode": m, "stage": st, "rate_rps": rate}]


def nan_loads_zero_replicas_zero_cost(doc):
    for p in doc["pools"]:
        p.update(replicas=0, chips=0, usd_per_hour=0.0, power_w=0.0)
        for s in p["sites"]:
            s["replicas"] = 0
            s["load_rps"] = [{**r, "rate_rps": float("nan")} for r in s["load_rps"]]
    doc.update(cost_usd_per_hour=0.0, power_w=0.0, chips=0)


def zero_replicas_zero_cost(doc):
    for p in doc["pools"]:
        p.update(replicas=0, chips=0, usd_per_hour=0.0, power_w=0.0)
        for s in p["sites"]:
            s["replicas"] = 0
    doc.update(cost_usd_per_hour=0.0, power_w=0.0, chips=0, chips_by_type={})


def duplicate_pool_ids(doc):
    """1,000,001 A100 replicas in a 16-domain group, the packing keyed by pool id."""
    a100 = pool(doc, chip="a100-80gb")
    twin = json.loads(json.dumps(a100))
    twin.update(replicas=1_000_001, chips=1_000_001, usd_per_hour=3.67 * 1_000_001)
    twin["sites"][0]["replicas"] = 1_000_001
    doc["pools"].append(twin)


def duplicate_site_entries(doc):
    a100 = pool(doc, chip="a100-80gb")
    a100["sites"].append({**a100["sites"][0], "replicas": 1_000_000, "load_rps": []})


def h100_config_on_bertha_sites(doc):
    """``config.main.chip`` h100 on Bertha chips at Bertha prices, replicas cut to a third (at least 1)."""
    b = pool(doc, chip="bertha", stage="decode")
    n = b["replicas"]
    k = max(1, n // 3)
    b["config"]["main"].update(chip="h100", site_resource="h100@8")
    per_replica = b["usd_per_hour"] / n
    b.update(replicas=k, chips=k * b["chips_per_replica"], usd_per_hour=k * per_replica,
             power_w=b["power_w"] * k / n)
    b["sites"][0]["replicas"] = k
    doc["cost_usd_per_hour"] -= (n - k) * per_replica


def _multi_chip_pool(doc: dict) -> dict:
    """The plan's first single-part pool of several chips per replica (a tensor-parallel one)."""
    return next(p for p in doc["pools"] if p["chips_per_replica"] > 1 and not p["paired_with"])


def tp8_charged_one_chip(doc):
    """A multi-chip configuration charged for 1 chip per replica."""
    p = _multi_chip_pool(doc)
    per_chip = p["usd_per_hour"] / p["chips"]
    doc["cost_usd_per_hour"] -= per_chip * (p["chips"] - p["replicas"])
    p.update(chips_per_replica=1, chips=p["replicas"], usd_per_hour=per_chip * p["replicas"])


def tp8_config_on_one_chip(doc):
    """The configuration itself edited: a tp > 1 layout on 1 chip (breaks chips = dp·tp·pp)."""
    p = _multi_chip_pool(doc)
    p["config"]["main"]["chips"] = 1
    p.update(chips_per_replica=1, chips=p["replicas"])


def domain_index_huge(doc):
    doc["pools"][0]["sites"][0]["domains"][0] = 1_000_000


def domain_index_negative(doc):
    doc["pools"][0]["sites"][0]["domains"][0] = -1


def all_rubin_in_rack_0(doc):
    for p in doc["pools"]:
        if p["chip"] == "rubin":
            for s in p["sites"]:
                s["domains"] = [0]


def negative_load_on_unused_mode(doc):
    """Negative loads on reasoning's pd steps."""
    for p in doc["pools"]:
        if p["traffic_class"] == "reasoning" and p["part"] == 0:
            step = "reasoning|pd|prefill" if p["stage"] == "prefill" else "reasoning|pd|decode"
            set_load(p["sites"][0], step, -5.0)


def positive_load_on_unused_mode(doc):
    """A class's prefill pool says it carries the prefill of the one of pd and pd-af the class does not use
    (the prefill column serves both modes' prefill steps)."""
    cls, mode = next((c["name"], m) for c in doc["classes"] for m in ("pd", "pd-af") if not c["modes"].get(m))
    p = pool(doc, traffic_class=cls, stage="prefill")
    set_load(p["sites"][0], f"{cls}|{mode}|prefill", 5.0)


def config_chip_not_in_catalogue(doc):
    p = doc["pools"][0]
    p["config"]["main"]["chip"] = "warp-core-9000"
    p["chip"] = "warp-core-9000"


def config_kind_decode_to_decode_af(doc):
    # A pool without a partner part (the plan may decode every class attention–FFN: then a prefill pool).
    next(p for p in doc["pools"] if p["stage"] in ("decode", "aggregated", "prefill"))["config"]["kind"] = "decode-af"


def config_kind_prefill_to_aggregated(doc):
    pool(doc, stage="prefill")["config"]["kind"] = "aggregated"


def config_kind_unknown(doc):
    doc["pools"][0]["config"]["kind"] = "teleport"


def pair_to_unknown_site(doc):
    doc["pairs"][0]["target_site"] = "atlantis"


def pair_to_a_site_without_replicas(doc):
    doc["pairs"][0]["target_site"] = "vr-nvl72"


def unknown_pool_site(doc):
    doc["pools"][0]["sites"][0]["site"] = "atlantis"
    doc["pools"][0]["domains"] = ["atlantis"]


def unknown_transfer(doc):
    doc["flows"] = [{"transfer": "chat|teleport|kv", "source": "vr-nvl72", "target": "spine", "bytes_per_s": 1.0}]


def malformed_step_id(doc):
    doc["pools"][0]["sites"][0]["load_rps"].append({"class": "a|b", "mode": "pd", "stage": "decode", "rate_rps": 1.0})


def unknown_step(doc):
    set_load(doc["pools"][0]["sites"][0], "long-in-long-out|teleport|decode", 1.0)


def kv_feed_moved(doc):
    """Half of chat's feed said to go to reasoning's decode pool."""
    feed = next(f for f in doc["prefill_to_decode"] if f["traffic_class"] == "chat")
    other = next(f for f in doc["prefill_to_decode"] if f["traffic_class"] == "reasoning")
    feed["rate_rps"] /= 2
    doc["prefill_to_decode"].append({**feed, "decode_pool": other["decode_pool"]})


def kv_feeds_dropped(doc):
    doc["prefill_to_decode"] = []


def over_the_pool_limit(doc):
    """A class's load shared by both pools of the toy plan, under a recorded limit of 1 pool per stage."""
    doc["max_pools_per_stage"] = 1
    one, two = doc["pools"][0]["sites"][0], doc["pools"][1]["sites"][0]
    rec = dict(one["load_rps"][0])
    two["load_rps"] = [r for r in two["load_rps"] if (r["class"], r["mode"]) != (rec["class"], rec["mode"])]
    two["load_rps"].append({**rec, "rate_rps": 0.5})


def infinite_power(doc):
    doc["power_w"] = float("inf")


def huge_integer(doc):
    doc["pools"][0]["replicas"] = 10**30


CASES = [
    ("melange-toy", nan_loads_zero_replicas_zero_cost),
    ("melange-toy", zero_replicas_zero_cost),
    ("melange-toy", duplicate_pool_ids),
    ("melange-toy", duplicate_site_entries),
    ("bertha-lpddr", h100_config_on_bertha_sites),
    ("rubin-lpx-deepseek", tp8_charged_one_chip),
    ("rubin-lpx-deepseek", tp8_config_on_one_chip),
    ("rubin-lpx-deepseek", domain_index_huge),
    ("rubin-lpx-deepseek", domain_index_negative),
    ("rubin-lpx-deepseek", all_rubin_in_rack_0),
    ("rubin-lpx-deepseek", negative_load_on_unused_mode),
    ("rubin-lpx-deepseek", positive_load_on_unused_mode),
    ("rubin-lpx-deepseek", config_chip_not_in_catalogue),
    ("rubin-lpx-deepseek", config_kind_decode_to_decode_af),
    ("rubin-lpx-deepseek", config_kind_prefill_to_aggregated),
    ("rubin-lpx-deepseek", config_kind_unknown),
    ("rubin-lpx-deepseek-af", pair_to_unknown_site),
    ("rubin-lpx-deepseek-af", pair_to_a_site_without_replicas),
    ("rubin-lpx-deepseek", unknown_pool_site),
    ("rubin-lpx-deepseek", unknown_transfer),
    ("melange-toy", malformed_step_id),
    ("rubin-lpx-deepseek", kv_feed_moved),
    ("rubin-lpx-deepseek", kv_feeds_dropped),
    ("melange-toy", over_the_pool_limit),
    ("melange-toy", unknown_step),
    ("melange-toy", infinite_power),
    ("melange-toy", huge_integer),
]


@pytest.mark.parametrize(("name", "tamper"), CASES, ids=[f.__name__ for _, f in CASES])
def test_tampered_plan_is_refused_without_a_traceback(tmp_path, name, tamper):
    _, _, doc = solved(name)
    tamper(doc)
    r = runner.invoke(app, ["check", instance_file(name), write(tmp_path, doc)])
    assert r.exit_code in (2, 5), r.output
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    assert ("violation:" if r.exit_code == 5 else "error:") in r.output


EXPECTED = {  # a phrase of the message each case must give
    nan_loads_zero_replicas_zero_cost: "expected a finite number, got nan",
    zero_replicas_zero_cost: "needs",
    duplicate_pool_ids: "appears more than once",
    duplicate_site_entries: "appears more than once",
    h100_config_on_bertha_sites: "placed in bertha-server, a group of bertha",
    tp8_charged_one_chip: "chips_per_replica says 1",
    tp8_config_on_one_chip: "must equal dp·tp·pp",
    domain_index_huge: "index 1000000 is outside",
    domain_index_negative: "index -1 is outside",
    all_rubin_in_rack_0: "domain(s) of 72 chips",
    negative_load_on_unused_mode: "loads must be ≥ 0",
    malformed_step_id: "expected a step id of 3 non-empty fields",
    kv_feed_moved: "prefill_to_decode: class chat (",
    kv_feeds_dropped: "its loads and KV flows give",
    over_the_pool_limit: "stage serve: 2 pools carry load (pool-01, pool-02); max_pools_per_stage is 1",
    unknown_step: "load on 'long-in-long-out|teleport|decode', which is no step",
    positive_load_on_unused_mode: "a mode its class does not use",
    config_chip_not_in_catalogue: "is not in the catalogue",
    config_kind_decode_to_decode_af: "needs a partner part",
    config_kind_prefill_to_aggregated: "only an aggregated configuration has a chunk",
    config_kind_unknown: "config.kind",
    pair_to_unknown_site: "unknown domain group 'atlantis'",
    pair_to_a_site_without_replicas: "has no replicas in 'vr-nvl72'",
    unknown_pool_site: "unknown domain group 'atlantis'",
    unknown_transfer: "unknown transfer",
    infinite_power: "expected a finite number, got inf",
    huge_integer: "integer within ±2^53",
}


@pytest.mark.parametrize(("name", "tamper"), CASES, ids=[f.__name__ for _, f in CASES])
def test_tampered_plan_message_names_what_is_wrong(tmp_path, name, tamper):
    _, _, doc = solved(name)
    tamper(doc)
    r = runner.invoke(app, ["check", instance_file(name), write(tmp_path, doc)])
    assert EXPECTED[tamper] in r.output, r.output


def test_in_memory_plans_with_nan_are_rejected_by_verify_itself():
    """verify() is also called on plans built in Python (no JSON loader in between)."""
    _, ctx, doc = solved("melange-toy")
    plan = parse_plan(doc)
    plan.pools[0].sites[0].load_rps = {k: float("nan") for k in plan.pools[0].sites[0].load_rps}
    assert any("must be finite" in v for v in verify(ctx, plan))


def test_a_valid_alternative_domain_listing_is_accepted():
    """Domains are checked index by index, not against one packing: a pool moved to a free domain is fine,
    once the plan's uplinks say where its KV now goes (they follow the domains)."""
    _, ctx, doc = solved("rubin-lpx-deepseek-af")
    af = pool(doc, stage="decode-attention")
    used = {d for p in doc["pools"] if p["chip"] == "rubin" for s in p["sites"] for d in s["domains"]}
    free = sorted(set(range(ctx.sites["vr-nvl72"].group.count)) - used)
    af["sites"][0]["domains"] = free[:len(af["sites"][0]["domains"])]
    moved = parse_plan(doc)
    assert any(v.startswith("uplinks: domain ") for v in verify(ctx, moved))
    moved.uplinks = domain_uplinks(ctx, moved.pools, transfers(ctx))
    assert verify(ctx, moved) == []


def test_plan_file_that_is_not_an_object_is_an_input_error(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("[1, 2, 3]")
    r = runner.invoke(app, ["check", "instances/melange-toy.yaml", str(path)])
    assert r.exit_code == 2 and "expected a JSON object" in r.output, r.output


def test_integer_beyond_the_digit_limit_is_an_input_error(tmp_path):
    _, _, doc = solved("melange-toy")
    text = json.dumps(doc).replace('"replicas": 1,', '"replicas": ' + "9" * 5000 + ",", 1)
    path = tmp_path / "plan.json"
    path.write_text(text)
    r = runner.invoke(app, ["check", "instances/melange-toy.yaml", str(path)])
    assert r.exit_code == 2, r.output
