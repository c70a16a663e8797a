"""`placement marginal`: the value of one more / one fewer domain and of more bandwidth, by re-solving."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.loading import parse_instance
from placement.core.instance.paths import instance_document
from placement.core.pipeline.solve import solve
from placement.studies.marginal import marginal, variants

runner = CliRunner()

from tests.toy_fixture import TOY


def _small_toy():
    """The toy with a single A100 domain: losing it forces the work onto A10Gs."""
    doc = copy.deepcopy(TOY)
    doc["hardware"]["domains"][1]["count"] = 1
    return parse_instance(doc)


@pytest.fixture(scope="module")
def case():
    inst = _small_toy()
    plan = solve(inst)
    assert plan.status == "optimal"
    return inst, plan


def test_rows_cover_every_group_and_uplink(case):
    inst, plan = case
    res = marginal(inst, plan, workers=1)
    assert [(r.kind, r.target) for r in res.rows] == [
        ("domain+1", "a10g-pool"), ("domain-1", "a10g-pool"), ("domain+1", "a100-pool"), ("domain-1", "a100-pool"),
        ("uplink", "a10g-pool"), ("uplink", "a100-pool")]
    assert res.base_cost_usd_per_hour == pytest.approx(plan.cost_usd_per_hour)
    assert "re-solve" in res.method and "duals" in res.method
    assert not res.warnings


def test_values_are_exact_re_solves(case):
    inst, plan = case
    rows = {(r.kind, r.target): r for r in marginal(inst, plan, workers=1).rows}
    # one fewer A10G domain: the plan leaves most of the 16 idle, so the optimum provably stays
    r = rows["domain-1", "a10g-pool"]
    assert r.method == "unchanged (proof)" and r.delta_usd_per_hour == 0.0
    # losing the only A100: the whole group goes, and the A10Gs must carry everything
    r = rows["domain-1", "a100-pool"]
    assert r.method == "re-solved" and r.change.startswith("remove the group")
    assert r.status == "optimal" and r.delta_usd_per_hour > 0 and set(r.chips_by_type) == {"a10g"}
    # more capacity never costs more
    for key in (("domain+1", "a10g-pool"), ("domain+1", "a100-pool"), ("uplink", "a10g-pool")):
        assert rows[key].delta_usd_per_hour <= 1e-9
    # cross-check one row against a solve of the modified instance done by hand
    doc = instance_document(inst)
    doc["hardware"]["domains"] = [doc["hardware"]["domains"][0]]
    doc["measured_capacity"] = [m for m in doc["measured_capacity"] if m["chip"] == "a10g"]
    by_hand = solve(parse_instance(doc))
    assert rows["domain-1", "a100-pool"].cost_usd_per_hour == pytest.approx(by_hand.cost_usd_per_hour)


def test_idle_domain_proof_agrees_with_a_re_solve(case):
    inst, plan = case
    proved = {(r.kind, r.target): r for r in marginal(inst, plan, workers=1).rows}
    solved = {(r.kind, r.target): r for r in marginal(inst, plan, shortcut=False, workers=1).rows}
    assert proved["domain-1", "a10g-pool"].method == "unchanged (proof)"
    assert solved["domain-1", "a10g-pool"].method == "re-solved"
    for key, row in proved.items():
        assert row.cost_usd_per_hour == pytest.approx(solved[key].cost_usd_per_hour)


def test_links_get_more_bandwidth():
    doc = copy.deepcopy(TOY)
    doc["hardware"]["switches"] = ["s1", "s2"]
    doc["hardware"]["domains"][0]["switch"] = "s1"
    doc["hardware"]["domains"][1]["switch"] = "s2"
    doc["hardware"]["links"] = [{"source": "s1", "target": "s2", "bandwidth_gb_per_s": 50}]
    inst = parse_instance(doc)
    out = variants(inst, None, 4.0)
    link = [(row, d) for row, d in out if row["kind"] == "link"]
    assert len(link) == 1 and link[0][0]["target"] == "s1/s2"
    assert link[0][1]["hardware"]["links"][0]["bandwidth_gb_per_s"] == 200
    with pytest.raises(InputError, match="factor > 1"):
        variants(inst, None, 1.0)


def test_cli_marginal(tmp_path, case):
    inst, plan = case
    ipath, ppath = tmp_path / "inst.json", tmp_path / "plan.json"
    ipath.write_text(json.dumps(instance_document(inst)))
    ppath.write_text(plan.model_dump_json())
    r = runner.invoke(app, ["marginal", str(ipath), str(ppath), "--workers", "2", "--json", str(tmp_path / "m.json"),
                            "--csv", str(tmp_path / "m.csv")])
    assert r.exit_code == 0, r.output
    assert "marginal value" in r.output and "unchanged (proof)" in r.output and "method:" in r.output
    doc = json.loads((tmp_path / "m.json").read_text())
    assert len(doc["rows"]) == 6
    assert (tmp_path / "m.csv").read_text().startswith("kind,target,change,method")


def test_cli_marginal_rejects_a_plan_of_another_instance(tmp_path):
    plan = solve(parse_instance(copy.deepcopy(TOY)))
    other = copy.deepcopy(TOY)
    other["name"] = "other"
    ipath, ppath = tmp_path / "i.json", tmp_path / "p.json"
    ipath.write_text(json.dumps(other))
    ppath.write_text(plan.model_dump_json())
    r = runner.invoke(app, ["marginal", str(ipath), str(ppath)])
    assert r.exit_code == 2 and "not 'other'" in r.output


def test_a_plan_that_is_not_the_optimum_gets_every_row_re_solved(case):
    inst, plan = case
    doc = instance_document(inst)
    for m in doc["measured_capacity"]:  # A10Gs three times as capable: the old plan still fits, but is too dear
        if m["chip"] == "a10g":
            m["max_rps_per_replica"] *= 3
    res = marginal(parse_instance(doc), plan, workers=1)
    assert res.base_cost_usd_per_hour < plan.cost_usd_per_hour
    assert all(r.method == "re-solved" for r in res.rows)
    assert any("not this instance's optimum" in w for w in res.warnings)
