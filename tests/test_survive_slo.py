"""N+1 at a relaxed SLO (issue 17, item 3): ``solve --survive domain:1 --survive-slo-factor F``.

One class of Llama-3.1-70B on H100 boxes (one 8-chip replica per box) whose TPOT SLO (27 ms) holds
the batch at 64; at 1.5 × the SLOs (40.5 ms TPOT, 2.25 s TTFT) its replicas run larger batches after a
loss and serve more, so fewer replicas need to survive it.
"""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

import placement
from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.loading import parse_instance
from placement.core.operations.survive import solve_surviving
from tests.test_conditioning import ONE_CLASS

BACKEND = "highs"


def _doc(rate: float = 20.0) -> dict:
    doc = copy.deepcopy(ONE_CLASS)
    doc["modes"] = ["aggregated"]
    doc["workload"]["classes"][0].update(rate_rps=rate, tpot_ms=27)
    doc["hardware"]["domains"][0]["count"] = 8
    return doc


@pytest.fixture(scope="module")
def plans():
    inst = parse_instance(_doc(), "one-class")
    return inst, {f: solve_surviving(inst, backend=BACKEND, slo_factor=f) for f in (1.0, 1.5)}


def test_factor_one_is_plain_survive_and_a_larger_factor_costs_no_more(plans):
    inst, by = plans
    plain, relaxed = by[1.0], by[1.5]
    assert plain.verified and relaxed.verified and placement.check(inst, relaxed).ok
    assert plain.survive_slo_factor is None and not plain.survive_batches
    assert "survive_slo_factor" not in json.loads(plain.model_dump_json())
    [pool] = plain.pools
    cap = pool.capacity_rps_per_replica[next(iter(pool.capacity_rps_per_replica))]
    # By hand, from the replicas' capacity: 20 req/s needs 4 replicas at batch 64 (3 serve < 20), so 5, one a
    # box, survive the loss of a box at the instance's SLOs: $26.00/h. At 1.5 x the SLOs every replica runs a
    # larger batch after a loss, so the surviving fleet is cheaper: 4 replicas, $20.80/h.
    assert pool.batch == 64 and 3 * cap < 20 <= 4 * cap
    assert pool.replicas == 5 and plain.cost_usd_per_hour == pytest.approx(26.0)
    assert relaxed.cost_usd_per_hour == pytest.approx(20.8)
    assert relaxed.survive_slo_factor == 1.5
    assert set(relaxed.survive_batches) == {p.id for p in relaxed.pools}
    assert all(relaxed.survive_batches[p.id] > p.batch for p in relaxed.pools)
    assert relaxed.cost_usd_per_hour <= plain.cost_usd_per_hour


def test_verifier_rechecks_the_scenarios_at_the_relaxed_slo(plans):
    inst, by = plans
    relaxed = by[1.5]
    strict = relaxed.model_copy(deep=True, update={"survive_slo_factor": None})  # the larger batches miss 27 ms TPOT
    assert any("misses the failure scenarios' SLOs" in v for v in placement.check(inst, strict).violations)
    same_batch = relaxed.model_copy(deep=True, update={"survive_batches": {}})  # at the plain batches: short
    assert any("leaves too few replicas" in v for v in placement.check(inst, same_batch).violations)
    huge = relaxed.model_copy(deep=True, update={"survive_batches": {relaxed.pools[0].id: 5000}})
    assert any("misses the failure scenarios' SLOs" in v for v in placement.check(inst, huge).violations)


def test_factor_below_one_is_refused():
    with pytest.raises(InputError, match="SLO factor >= 1"):
        solve_surviving(parse_instance(_doc(), "one-class"), backend=BACKEND, slo_factor=0.5)


def test_cli_survive_slo_factor(tmp_path, plans):
    path, out = tmp_path / "one.yaml", tmp_path / "p.json"
    path.write_text(json.dumps(_doc()))
    r = CliRunner().invoke(app, ["solve", str(path), "--survive", "domain:1", "--survive-slo-factor", "1.5",
                                 "--solver", BACKEND, "--json", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["survive_slo_factor"] == 1.5 and sorted(doc["survive_batches"].values()) == [117]
