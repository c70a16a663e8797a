"""Plans that survive losing any one switch (issue 17, item 3): ``solve --survive switch:1``.

Two racks of the Mélange-style toy, each behind its own top-of-rack switch: losing a switch loses every
domain group hanging off it. The verifier removes each switch's groups in turn and re-checks coverage.
"""

from __future__ import annotations

import copy
import json

from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.operations.survive import solve_surviving, switch_scenarios
from placement.core.pipeline.solve import solve
from placement.core.verify.verifier import verify
from tests.toy_fixture import TOY


def _two_racks() -> dict:
    doc = copy.deepcopy(TOY)
    doc["hardware"] = {"switches": ["tor0", "tor1"],
                       "links": [{"source": "tor0", "target": "tor1", "bandwidth_gb_per_s": 100}],
                       "domains": [{**d, "name": f"{d['name']}-{r}", "count": 8, "switch": f"tor{r}"}
                                   for r in (0, 1) for d in TOY["hardware"]["domains"]]}
    return doc


def test_switch_plan_survives_losing_either_rack():
    inst = parse_instance(_two_racks())
    plain = solve(inst, backend="highs")
    n1 = solve_surviving(inst, survive="switch:1", backend="highs")
    assert n1.verified and n1.status == "optimal" and n1.survive == "switch:1"
    assert switch_scenarios(Context.of(inst)) == {"tor0": ["a10g-pool-0", "a100-pool-0"],
                                                  "tor1": ["a10g-pool-1", "a100-pool-1"]}
    # each rack alone must carry the whole demand, which the plain plan (one rack's worth) does
    # in one rack: at least twice the plain plan's chips, in both racks
    racks = {s.site.rsplit("-", 1)[1] for p in n1.pools for s in p.sites}
    assert racks == {"0", "1"} and n1.cost_usd_per_hour >= 2 * plain.cost_usd_per_hour - 1e-9
    # the plain plan, marked as surviving a switch, fails the verifier for a rack it sits in
    claimed = plain.model_copy(update={"survive": "switch:1"})
    violations = verify(Context.of(inst), claimed)
    assert violations and all("losing switch tor" in v for v in violations)


def test_one_switch_fleet_cannot_survive_its_switch():
    plan = solve_surviving(parse_instance(copy.deepcopy(TOY)), survive="switch:1", backend="highs")
    assert plan.status == "infeasible"


def test_cli_solve_survive_switch(tmp_path):
    path = tmp_path / "two-racks.yaml"
    path.write_text(json.dumps(_two_racks()))
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(app, ["solve", str(path), "--survive", "switch:1", "--solver", "highs",
                                 "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["survive"] == "switch:1"
    r = CliRunner().invoke(app, ["check", str(path), str(out)])
    assert r.exit_code == 0, r.output
