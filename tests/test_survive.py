"""Plans that survive losing any one domain (issue 17, item 3): ``solve --survive domain:1``.

Small Mélange-style fleets (measured capacities): the N+1 plan costs at least
the plain one, survives the removal of each domain in turn (the verifier
removes them), and the plain plan, tight, does not.
"""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

import placement
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.operations.survive import solve_surviving, spread_domains
from placement.core.pipeline.solve import solve
from placement.core.verify.verifier import verify
from tests.toy_fixture import TOY

BACKEND = "highs"


def _toy(chips_per_domain=1, count=16):
    doc = copy.deepcopy(TOY)
    for d in doc["hardware"]["domains"]:
        d["chips_per_domain"], d["count"] = chips_per_domain, count
    return parse_instance(doc)


@pytest.mark.parametrize(("chips_per_domain", "count"), [(1, 16), (4, 4)])
def test_n_plus_one_costs_more_and_survives_every_domain(chips_per_domain, count):
    inst = _toy(chips_per_domain, count)
    plain = solve(inst, backend=BACKEND)
    n1 = solve_surviving(inst, backend=BACKEND)
    assert n1.verified and n1.status == "optimal" and n1.survive == "domain:1"
    # By hand: one A100 serves 6/20 + 3/20 + 15/40 + 6/20 = 1.125 of the demand, one A10G serves at most a
    # whole class's share; 2 A100 + 1 A10G ($8.35/h) survive any loss (1 A100 + 1 A10G is the plain
    # $4.68/h optimum; 2 A100 cover 1.125), and nothing cheaper does (2 A100 alone: one left covers < 1.125;
    # 1 A100 + k A10G: losing the A100 needs 12 A10G).
    assert plain.cost_usd_per_hour == pytest.approx(4.68)
    assert n1.cost_usd_per_hour == pytest.approx(8.35) and n1.cost_usd_per_hour >= plain.cost_usd_per_hour
    assert placement.check(inst, n1).ok
    ctx = Context.of(inst)
    as_n1 = plain.model_copy(deep=True, update={"survive": "domain:1"})
    spread_domains(ctx, as_n1)
    lost = [v for v in verify(ctx, as_n1) if v.startswith("survive")]
    assert lost and all("leaves too few replicas" in v for v in lost)


def test_replicas_crowded_on_one_domain_fail_the_survival_check():
    inst = _toy(4, 4)
    n1 = solve_surviving(inst, backend=BACKEND)
    tampered = n1.model_copy(deep=True)
    a100 = next(p for p in tampered.pools if p.chip == "a100-80gb")
    site = a100.sites[0]
    assert site.replicas == 2 and site.domains == [0, 1]
    site.domains, site.replicas_per_domain = [0], [2]  # both A100 on domain 0: it fits, but losing it is fatal
    result = placement.check(inst, tampered)
    assert not result.ok
    assert result.violations == [("survive domain:1: losing domain a100-pool:0 leaves too few replicas to serve "
                                 "every class")]


def test_survival_needs_stated_replicas_per_domain():
    inst = _toy()
    n1 = solve_surviving(inst, backend=BACKEND)
    unstated = n1.model_copy(deep=True)
    unstated.pools[0].sites[0].replicas_per_domain = []
    assert "states its replicas per domain" in placement.check(inst, unstated).violations[0]


def test_cli_solve_survive(tmp_path):
    runner = CliRunner()
    toy = "instances/melange-toy.yaml"
    out = tmp_path / "n1.json"
    r = runner.invoke(app, ["solve", toy, "--survive", "domain:1", "--solver", BACKEND, "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["survive"] == "domain:1" and doc["cost_usd_per_hour"] == pytest.approx(8.35)
    assert runner.invoke(app, ["check", toy, str(out)]).exit_code == 0
    r = runner.invoke(app, ["solve", toy, "--survive", "rack:2"])
    assert r.exit_code == 2 and "--survive" in r.output


def test_cli_survive_with_certify_is_checked_by_the_other_backend(tmp_path):
    out = tmp_path / "n1.json"
    r = CliRunner().invoke(app, ["solve", "instances/melange-toy.yaml", "--survive", "domain:1", "--certify",
                                 "--solver", BACKEND, "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["survive"] == "domain:1" and doc["verified"] and doc["certified"] is True
    assert doc["cost_usd_per_hour"] == pytest.approx(8.35)
    assert any(n.startswith("certified: cbc agrees") for n in doc["notes"]), doc["notes"]


def test_survive_with_session_classes_and_a_kv_policy():
    """The session classes are expanded (KV tiers) and the failure scenarios serve their outcome classes at the
    rates the retention shares give: one domain of two lost, the other still serves every class."""
    from tests.test_kv_tiers import TINY

    inst = parse_instance(TINY)
    plain = placement.solve(inst, backend=BACKEND, kv_policy="tiered")
    n1 = placement.solve(inst, backend=BACKEND, kv_policy="tiered", survive="domain:1")
    assert plain.verified and n1.verified and n1.status == "optimal", n1.violations
    assert n1.survive == "domain:1" and n1.kv_policy == "tiered" and n1.kv_tiers
    assert n1.cost_usd_per_hour > plain.cost_usd_per_hour
    assert placement.check(inst, n1).ok
    ctx = Context.of(inst)
    as_n1 = plain.model_copy(deep=True, update={"survive": "domain:1"})
    spread_domains(ctx, as_n1)
    lost = [v for v in verify(ctx, as_n1) if v.startswith("survive")]
    assert lost and all("leaves too few replicas" in v for v in lost)  # the plain plan is not one that survives


def test_survive_on_two_levels_keeps_the_one_level_optimum(monkeypatch):
    """A fleet taken in two levels (the threshold lowered): the collapsed bound leaves the scenarios out, a
    restricted plan with them is the start, and the full model proves the one-level optimum."""
    import solvers.twolevel

    doc = copy.deepcopy(TOY)
    doc["hardware"]["domains"].append({**doc["hardware"]["domains"][0], "name": "a10g-dear",
                                       "usd_per_hour_per_chip": 1.3})
    for d in doc["hardware"]["domains"]:
        d["count"] = 8
    inst = parse_instance(doc)
    one = solve_surviving(inst, backend=BACKEND)
    monkeypatch.setattr(solvers.twolevel, "MIN_SIZE", 0)
    two = solve_surviving(inst, backend=BACKEND)
    assert "collapsed" in two.solver.message and "collapsed" not in one.solver.message
    assert "started from the plan of its columns" in two.solver.message  # the start met every row
    assert one.verified and two.verified and two.cost_usd_per_hour == pytest.approx(one.cost_usd_per_hour)


def test_an_infeasible_survival_is_diagnosed_by_scenario():
    doc = copy.deepcopy(TOY)
    for d in doc["hardware"]["domains"]:
        d["count"] = 1
    plan = solve_surviving(parse_instance(doc), backend=BACKEND)
    assert plan.status == "infeasible"
    assert any(s.startswith("losing a domain of group a100-pool leaves class ") and s.endswith("req/s short")
               for s in plan.diagnosis), plan.diagnosis
