"""A chip without a tensor rate a model's matmuls need serves none of them, and a fleet of only such chips
is a diagnosed infeasibility, not a crash (found by the long fuzz: gpt-oss keeps its attention projections
in BF16 with FP4 experts, and d-Matrix Corsair lists only FP8 and FP4 rates)."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.solve import solve


def _doc(domains: list[dict]) -> dict:
    return {"name": "rates", "model": "gpt-oss-20b", "precision": {"weights": "fp4", "kv": "fp8"},
            "workload": {"classes": [{"name": "chat", "rate_rps": 6.9, "prompt_tokens": 126, "output_tokens": 108,
                                      "ttft_ms": 47_000, "tpot_ms": 77}]},
            "hardware": {"domains": domains}, "modes": ["pd-af", "pd", "aggregated"]}


def test_a_chip_without_the_attention_rate_hosts_no_stage_that_runs_attention():
    plan = solve(parse_instance(_doc([{"name": "c", "chip": "corsair", "count": 2},
                                      {"name": "r", "chip": "rubin", "count": 1, "chips_per_domain": 4}])),
                 backend="highs")
    assert plan.status == "optimal" and plan.verified
    assert plan.pools and all(p.chip != "corsair" or p.stage == "decode-ffn" for p in plan.pools)


def test_a_fleet_of_only_such_chips_is_infeasible_and_says_which_rate_is_missing(tmp_path):
    path = tmp_path / "corsair.yaml"
    path.write_text(yaml.safe_dump(_doc([{"name": "c", "chip": "corsair", "count": 2}])))
    r = CliRunner().invoke(app, ["solve", str(path), "-q"])
    assert r.exit_code == 3, r.output
    assert "corsair has no bf16 rate" in r.output and "precision.attention" in r.output
    assert "Traceback" not in r.output
