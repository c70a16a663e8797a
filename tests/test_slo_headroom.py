"""``slo_headroom``: plan to a share of every class's SLOs, the plan verified at it, its provenance the file's."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.solve import solve
from placement.core.plans.provenance import instance_sha256
from placement.core.verify.api import check

DOC = {"name": "headroom", "model": "llama-3.1-8b", "modes": ["aggregated", "pd"],
       "workload": {"classes": [{"name": "chat", "rate_rps": 40, "prompt_tokens": 1500, "output_tokens": 300,
                                 "ttft_ms": 1000, "tpot_ms": 30}]},
       "hardware": {"domains": [{"name": "h100", "chip": "h100", "chips_per_domain": 8, "count": 4}]}}


@pytest.fixture(scope="module")
def plans():
    plain = parse_instance(DOC)
    tight = parse_instance({**DOC, "slo_headroom": 0.7})
    return plain, tight, solve(plain, backend="highs"), solve(tight, backend="highs")


def test_a_headroom_plans_to_the_tightened_slos_and_verifies_there(plans):
    plain, tight, p0, p1 = plans
    assert p0.verified and p1.verified
    (c0,), (c1,) = p0.classes, p1.classes
    assert (c0.ttft_slo_ms, c0.tpot_slo_ms) == (1000.0, 30.0) and plain.slo_headroom == 1.0
    assert (c1.ttft_slo_ms, c1.tpot_slo_ms) == pytest.approx((700.0, 21.0))
    assert c1.tpot_ms <= 21.0 * (1 + 1e-9) and c1.ttft_ms <= 700.0 * (1 + 1e-9)
    assert p1.cost_usd_per_hour >= p0.cost_usd_per_hour
    assert any("70%" in n and "slo_headroom" in n for n in p1.notes)
    # the plan answers the instance as written: its hash, and check against that file passes
    assert p1.provenance.instance_sha256 == instance_sha256(tight) != instance_sha256(tight.planned())
    assert check(tight, p1).ok
    # a plan made without the headroom does not pass as one made with it
    assert not check(tight, p0).ok


def test_the_cli_flag_sets_the_headroom_and_refuses_nonsense(tmp_path):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(DOC))
    out = tmp_path / "p.json"
    r = CliRunner().invoke(app, ["solve", str(path), "--headroom", "0.8", "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["classes"][0]["tpot_slo_ms"] == pytest.approx(24.0)
    bad = CliRunner().invoke(app, ["solve", str(path), "--headroom", "1.5"])
    assert bad.exit_code == 2 and "--headroom" in bad.output
