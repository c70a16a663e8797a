"""Re-planning a running plan: failures, demand changes, migration cost (issue 17, item 1).

Small Mélange-style fleets with measured capacities (solves take milliseconds):
one chip per domain (the toy), and four chips per domain, where one failed
domain takes several replicas with it.
"""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

import placement
from placement.cli.app import app
from placement.core.instance.loading import parse_instance
from placement.core.operations.replan import Events, replan
from placement.core.pipeline.solve import solve
from tests.toy_fixture import TOY

BACKEND = "highs"


def _toy(rates=None, chips_per_domain=1, count=16):
    doc = copy.deepcopy(TOY)
    for d in doc["hardware"]["domains"]:
        d["chips_per_domain"], d["count"] = chips_per_domain, count
    for c in doc["workload"]["classes"]:
        c["rate_rps"] = (rates or {}).get(c["name"], c["rate_rps"])
    return parse_instance(doc)


def _replicas(plan) -> dict[tuple[str, int, str], int]:
    return {(p.column, p.part, s.site): s.replicas for p in plan.pools for s in p.sites}


def _slots(plan) -> dict[tuple[str, str], list[int]]:
    return {(p.column, s.site): s.domains for p in plan.pools for s in p.sites}


@pytest.fixture(scope="module")
def base():
    inst = _toy()
    return inst, solve(inst, backend=BACKEND)


def test_no_events_no_moves_same_cost(base):
    inst, plan = base
    new = replan(inst, plan, backend=BACKEND)
    assert new.verified and new.status == "optimal"
    assert new.cost_usd_per_hour == plan.cost_usd_per_hour
    assert new.migration.moves == [] and new.migration.usd == 0
    assert new.migration.replicas_kept == sum(_replicas(plan).values())
    assert _slots(new) == _slots(plan)  # kept replicas keep their domain indices


def test_failed_domains_move_only_the_pools_on_them(base):
    inst, plan = base
    hit = next(p for p in plan.pools if p.chip == "a10g")
    dead = hit.sites[0].domains[:1]
    new = replan(inst, plan, Events(failed_domains={"a10g-pool": dead}), backend=BACKEND)
    assert new.verified and new.failed_domains == {"a10g-pool": dead}
    assert placement.check(inst, new).ok
    moved = {(m.column, m.group) for m in new.migration.moves}
    assert moved == {(hit.column, "a10g-pool")}
    move = new.migration.moves[0]
    assert move.replicas_lost == 1 and move.domains_removed == dead and move.added == 1 and move.removed == 0
    assert not set(move.domains_added) & set(dead)
    for p in plan.pools:  # the pool that lost nothing sits where it did
        if p.column != hit.column:
            assert _slots(new)[p.column, p.sites[0].site] == p.sites[0].domains
    # replicas not on failed domains stayed on their indices
    assert set(hit.sites[0].domains) - set(dead) <= set(_slots(new)[hit.column, "a10g-pool"])


def test_a_replica_on_a_failed_domain_fails_the_verifier(base):
    inst, plan = base
    hit = next(p for p in plan.pools if p.chip == "a10g")
    dead = hit.sites[0].domains[:1]
    new = replan(inst, plan, Events(failed_domains={"a10g-pool": dead}), backend=BACKEND)
    tampered = new.model_copy(deep=True)
    pool = next(p for p in tampered.pools if p.column == hit.column)
    pool.sites[0].domains = sorted([*pool.sites[0].domains[1:], dead[0]])
    result = placement.check(inst, tampered)
    assert not result.ok and "failed domain a10g-pool:" in result.violations[0]
    # the same placement without the failure record is a healthy fleet's plan: that check passes
    healthy = tampered.model_copy(update={"failed_domains": {}})
    assert not any("failed" in v for v in placement.check(inst, healthy).violations)


def test_failed_multi_replica_domain_in_a_degraded_fleet():
    inst = _toy(chips_per_domain=4, count=4)
    plan = solve(inst, backend=BACKEND)
    a10g = next(p for p in plan.pools if p.chip == "a10g")
    first = a10g.sites[0].domains[0]
    new = replan(inst, plan, Events(failed_domains={"a10g-pool": [first]}), backend=BACKEND)
    assert new.verified and placement.check(inst, new).ok
    assert all(first not in s.domains for p in new.pools for s in p.sites if s.site == "a10g-pool")
    lost = sum(m.replicas_lost for m in new.migration.moves)
    assert lost == min(a10g.replicas, 4)  # every replica of that domain (4 one-chip replicas fit in it)


def test_demand_doubled_grows_only(base):
    _, plan = base
    doubled = _toy({c["name"]: 2 * c["rate_rps"] for c in TOY["workload"]["classes"]})
    # A removal saves at most one replica's $/h (A100: $3.67/h) and costs move_usd / amortise_h = $4.17/h:
    # never worth it, so the re-plan only adds.
    new = replan(doubled, plan, Events(move_usd=100.0, amortise_h=24.0), backend=BACKEND)
    assert new.verified
    assert new.migration.replicas_removed == 0 and new.migration.replicas_added > 0
    before, after = _replicas(plan), _replicas(new)
    assert all(after.get(k, 0) >= n for k, n in before.items())
    assert new.cost_usd_per_hour > plan.cost_usd_per_hour


def test_migration_cost_high_means_fewer_moves(base):
    _, plan = base
    smaller = _toy({"long-in-short-out": 1})  # most A10G replicas become idle
    changes, costs = [], []
    for move_usd in (0.0, 1.0, 10.0, 30.0, 100.0, 1000.0):
        new = replan(smaller, plan, Events(move_usd=move_usd), backend=BACKEND)
        assert new.verified
        mig = new.migration
        changes.append(mig.replicas_added + mig.replicas_removed)
        costs.append(new.cost_usd_per_hour)
        assert mig.objective_usd_per_hour == pytest.approx(new.cost_usd_per_hour + mig.usd / mig.amortise_h)
    assert changes == sorted(changes, reverse=True) and changes[0] > changes[-1] == 0
    assert costs == sorted(costs) and costs[0] < costs[-1] == plan.cost_usd_per_hour


def test_failing_every_domain_of_a_needed_group_is_infeasible_or_moves(base):
    inst, plan = base
    new = replan(inst, plan, Events(failed_domains={"a100-pool": range(16)}), backend=BACKEND)
    assert new.verified  # the A10G pool alone can serve the toy
    assert all(p.chip == "a10g" for p in new.pools)
    assert new.failed_domains == {"a100-pool": list(range(16))}


def test_replan_refuses_another_instances_plan(base):
    _, plan = base
    other = _toy().model_copy(update={"name": "other"})
    with pytest.raises(placement.InputError, match="plan is for instance"):
        replan(other, plan)


def test_healthy_plan_json_has_no_replan_fields(base):
    _, plan = base
    doc = json.loads(plan.model_dump_json())
    assert "failed_domains" not in doc and "migration" not in doc


def test_cli_replan_and_check_against_the_degraded_fleet(tmp_path):
    runner = CliRunner()
    toy = "instances/melange-toy.yaml"
    p0, p1 = tmp_path / "p0.json", tmp_path / "p1.json"
    assert runner.invoke(app, ["solve", toy, "--solver", BACKEND, "--json", str(p0), "-q"]).exit_code == 0
    r = runner.invoke(app, ["replan", toy, str(p0), "--solver", BACKEND, "--fail", "a10g-pool:0-2",
                            "--move-usd", "1", "--json", str(p1)])
    assert r.exit_code == 0, r.output
    assert "failed domains: a10g-pool: 0, 1, 2" in r.output and "migration:" in r.output
    doc = json.loads(p1.read_text())
    assert doc["failed_domains"] == {"a10g-pool": [0, 1, 2]} and doc["migration"]["moves"]
    assert runner.invoke(app, ["check", toy, str(p1)]).exit_code == 0
    a10g = next(p for p in doc["pools"] if p["chip"] == "a10g")
    a10g["sites"][0]["domains"] = [0]  # a replica on a failed domain
    p1.write_text(json.dumps(doc))
    r = runner.invoke(app, ["check", toy, str(p1)])
    assert r.exit_code == 5 and "failed domain" in r.output
    for bad in (["--fail", "a10g-pool"], ["--fail", "nope:1"], ["--fail", "a10g-pool:16"], ["--move-usd", "-1"]):
        r = runner.invoke(app, ["replan", toy, str(p0), *bad])
        assert r.exit_code == 2, (bad, r.output)


def test_stated_replicas_per_domain_are_checked_exactly():
    inst = _toy(chips_per_domain=4, count=4)
    plan = solve(inst, backend=BACKEND)
    a10g = next(p for p in plan.pools if p.chip == "a10g")
    new = replan(inst, plan, Events(failed_domains={"a10g-pool": a10g.sites[0].domains[:1]}), backend=BACKEND)
    site = next(s for p in new.pools for s in p.sites if s.site == "a10g-pool")
    assert sum(site.replicas_per_domain) == site.replicas and new.verified
    again = replan(inst, new, backend=BACKEND)  # a re-plan of a re-plan reads the stated counts
    assert again.verified and again.migration.moves == []
    crowded = new.model_copy(deep=True)
    s = next(s for p in crowded.pools for s in p.sites if s.site == "a10g-pool")
    s.replicas_per_domain = [s.replicas, *[0] * (len(s.domains) - 1)] if len(s.domains) > 1 else [s.replicas + 1]
    assert not placement.check(inst, crowded).ok


def test_cli_replan_takes_certify_and_keeps_or_changes_the_kv_policy(tmp_path):
    """``replan`` passes --certify and --kv-policy to the one solve pipeline (they were dropped before): the
    second backend's opinion is recorded; without --kv-policy the running plan's policy holds, with it the new
    policy is planned, and hbm-only costs at least what tiered does (it is tiered with the slower tiers shut)."""
    from tests.test_kv_tiers import TINY

    runner = CliRunner()
    inst_path, p0 = tmp_path / "tiny.json", tmp_path / "p0.json"
    inst_path.write_text(json.dumps(TINY))
    r = runner.invoke(app, ["solve", str(inst_path), "--solver", BACKEND, "--kv-policy", "tiered", "--json", str(p0),
                            "-q"])
    assert r.exit_code == 0, r.output
    out = {}
    for name, extra in (("kept", []), ("hbm", ["--kv-policy", "hbm-only"])):
        path = tmp_path / f"{name}.json"
        r = runner.invoke(app, ["replan", str(inst_path), str(p0), "--solver", BACKEND, "--certify", *extra,
                                "--json", str(path), "-q"])
        assert r.exit_code == 0, r.output
        out[name] = json.loads(path.read_text())
        assert out[name]["certified"] is True and out[name]["verified"]
        assert any(n.startswith("certified: cbc agrees") for n in out[name]["notes"]), out[name]["notes"]
    assert out["kept"]["kv_policy"] == "tiered" and out["hbm"]["kv_policy"] == "hbm-only"
    assert out["kept"]["migration"]["replicas_added"] == 0
    assert out["hbm"]["cost_usd_per_hour"] >= out["kept"]["cost_usd_per_hour"] - 1e-6
