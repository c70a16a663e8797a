"""Plan layout 2: per-step rates as {class, mode, stage, rate_rps} records (layout-1 objects still read),
and the prefill -> decode feeds derived from loads and KV-transfer flows."""

import json

import pytest

from placement.core.instance.errors import InputError
from placement.core.kv.kv_feeds import derive_kv_feeds, site_feeds
from placement.core.plans.plan import (
    PLAN_SCHEMA_VERSION,
    FlowPlan,
    Plan,
    Pool,
    PoolSite,
    parse_plan,
)

KV = {"c|pd|kv": ("c|pd|prefill", "c|pd|decode")}


def _site(site, **rates):
    return {"site": site, "replicas": 1, "load_rps": rates}


def _doc(sites):
    return {"instance": "t", "status": "optimal", "objective": "cost", "pools": [{
        "id": "p", "column": "col", "stage": "aggregated", "traffic_class": "c", "chip": "h100", "replicas": 1,
        "chips": 1, "chips_per_replica": 1, "tp": 1, "ep": 1, "pp": 1, "batch": 1, "usd_per_hour": 1.0,
        "power_w": 1.0, "domains": ["s"], "sites": sites, "capacity_rps_per_replica": {"c|aggregated|serve": 4.0},
        "config": {"traffic_class": "c", "kind": "aggregated", "batch": 1, "main": {
            "chip": "h100", "site_resource": "h100@8", "chips": 1, "tp": 1, "ep": 1, "pp": 1, "dp": 1}}}]}


def test_layout_1_objects_are_read_and_written_back_as_records():
    plan = parse_plan(_doc([_site("s", **{"c|aggregated|serve": 2.5})]))
    assert plan.pools[0].sites[0].load_rps == {"c|aggregated|serve": 2.5}
    out = json.loads(plan.model_dump_json())["pools"][0]
    assert out["sites"][0]["load_rps"] == [{"class": "c", "mode": "aggregated", "stage": "serve", "rate_rps": 2.5}]
    assert out["capacity_rps_per_replica"] == [{"class": "c", "mode": "aggregated", "stage": "serve",
                                                "rate_rps": 4.0}]
    assert parse_plan(json.loads(plan.model_dump_json())) == plan
    assert PLAN_SCHEMA_VERSION == "3"


@pytest.mark.parametrize(("records", "phrase"), [
    ([{"class": "c", "mode": "pd", "stage": "decode", "rate_rps": 1.0}] * 2, "appears more than once"),
    ([{"class": "c", "mode": "pd", "stage": "decode"}], "missing rate_rps"),
    ([{"class": "c", "mode": "pd", "stage": "decode", "rate_rps": 1.0, "site": "x"}], "unknown site"),
    ([{"class": "c|d", "mode": "pd", "stage": "decode", "rate_rps": 1.0}], "3 non-empty fields"),
    (["c|pd|decode"], "expected an object"),
])
def test_bad_records_are_input_errors_naming_the_field(records, phrase):
    with pytest.raises(InputError, match=phrase) as e:
        parse_plan(_doc([{"site": "s", "replicas": 1, "load_rps": records}]))
    assert "pools.0.sites.0.load_rps" in str(e.value)


def _pd_plan(prefill: dict, decode: dict, flows=()) -> Plan:
    """Pools p<site>/d<site> per site of each map (site -> req/s)."""
    pools = [Pool.model_construct(id=f"{k}{s}", part=0, sites=[PoolSite(site=s, replicas=1,
                                                                         load_rps={f"c|pd|{stage}": r})])
             for k, stage, rates in (("p", "prefill", prefill), ("d", "decode", decode)) for s, r in rates.items()]
    return Plan.model_construct(pools=pools, flows=[FlowPlan(transfer="c|pd|kv", source=a, target=b, bytes_per_s=x)
                                                    for a, b, x in flows])


def _feeds(plan):
    return {(f.prefill_pool, f.decode_pool): f.rate_rps for f in derive_kv_feeds(plan, KV)}


def test_feeds_follow_the_flow_paths_through_switches():
    """a sends 3 req/s (3 GB/s) to b and 1 to c, through the spine; the flow, not the deficits, decides."""
    flows = [("a", "spine", 4e9), ("spine", "b", 3e9), ("spine", "c", 1e9)]
    plan = _pd_plan({"a": 5.0}, {"a": 1.0, "b": 3.0, "c": 1.0}, flows)
    assert _feeds(plan) == {("pa", "da"): 1.0, ("pa", "db"): 3.0, ("pa", "dc"): 1.0}
    # Against the flows, a split by deficits alone would still be 3:1 here; make the flow disagree with it.
    flows = [("a", "spine", 4e9), ("spine", "b", 2e9), ("spine", "c", 2e9)]
    assert _feeds(_pd_plan({"a": 5.0}, {"a": 1.0, "b": 3.0, "c": 1.0}, flows))[("pa", "db")] == 2.0


def test_a_cycle_in_the_flow_is_cancelled():
    flows = [("a", "x", 2e9), ("x", "y", 3e9), ("y", "x", 1e9), ("y", "b", 2e9)]
    assert _feeds(_pd_plan({"a": 2.0}, {"b": 2.0}, flows)) == {("pa", "db"): 2.0}


def test_feeds_split_within_a_site_by_load_and_sum_to_the_class_rate():
    plan = _pd_plan({"a": 4.0}, {"a": 4.0})
    plan.pools.append(Pool.model_construct(id="p2", part=0, sites=[PoolSite(site="a", replicas=1,
                                                                           load_rps={"c|pd|prefill": 4.0})]))
    feeds = _feeds(plan)
    assert feeds == {("pa", "da"): 2.0, ("p2", "da"): 2.0}


def test_without_flows_a_surplus_goes_to_the_deficits_in_proportion():
    assert site_feeds({"a": 3.0}, {"b": 1.0, "c": 2.0}, []) == {("a", "b"): 1.0, ("a", "c"): 2.0}
