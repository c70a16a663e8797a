"""--certify and the CBC guard: a second backend's verified plan refutes a wrong "optimal" or "infeasible".

The Mélange-Arena-style instance below (9 single-chip-type buckets, 1 req/s in all, A10G + A100)
is one on which CBC proves a wrong bound: $4.68/h "optimal, gap 0" while 3 A10G at $3.03/h meet
every row of the same model (HiGHS finds it; the verifier accepts it).
"""

from __future__ import annotations

import random

import pytest
import typer
import yaml
from click.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.errors import EXIT_OK, EXIT_SOLVER
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.problem import build_problem
from placement.core.pipeline.solve import solve
from placement.core.verify.certify import claim_of, disagreement
from solvers.twolevel import solve as solve_problem

COMMAND = typer.main.get_command(app)


def arena(seed: int = 28, buckets: int = 9) -> dict:
    rnd = random.Random(seed)
    shares = [rnd.random() for _ in range(buckets)]
    classes, measured = [], []
    for i, share in enumerate(shares):
        name = f"b{i}"
        classes.append({"name": name, "rate_rps": round(share / sum(shares), 4), "prompt_tokens": 100,
                        "output_tokens": 100, "ttft_ms": 2000, "tpot_ms": 120, "single_chip_type": True})
        a10g = round(10 ** rnd.uniform(-1.3, 0.7), 3)
        measured += [{"chip": "a10g", "class": name, "max_rps_per_replica": a10g},
                     {"chip": "a100-80gb", "class": name, "max_rps_per_replica": round(a10g * rnd.uniform(2, 8), 3)}]
    return {"name": "arena", "model": "llama-2-7b", "modes": ["aggregated"], "only_measured": True,
            "workload": {"classes": classes},
            "hardware": {"domains": [
                {"name": "a10g-pool", "chip": "a10g", "chips_per_domain": 1, "count": 16, "usd_per_hour_per_chip": 1.01},
                {"name": "a100-pool", "chip": "a100-80gb", "chips_per_domain": 1, "count": 16,
                 "usd_per_hour_per_chip": 3.67}]},
            "measured_capacity": measured}


@pytest.fixture(scope="module")
def raw():
    """Each backend's own answer on the arena model, without guard or certification."""
    ctx = Context.of(parse_instance(arena(), "arena"), "arena")
    problem, _ = build_problem(ctx, None)
    return {b: solve_problem(problem, backend=b) for b in ("cbc", "highs")}


def test_highs_finds_the_three_a10g_plan(raw):
    assert raw["highs"].status == "optimal" and raw["highs"].objective == pytest.approx(3.03)


def test_the_cbc_guard_returns_the_cheaper_verified_plan_with_a_note(raw):
    plan = solve(parse_instance(arena(), "arena"), backend="cbc")
    assert plan.verified and plan.cost_usd_per_hour == pytest.approx(3.03)
    assert any("highs" in n for n in plan.notes), plan.notes
    if raw["cbc"].objective != pytest.approx(3.03):  # CBC's own wrong claim is named in the note
        assert any("NOT certified" in n and "4.68" in n for n in plan.notes), plan.notes


def test_certify_exits_4_when_the_backends_disagree(raw, tmp_path):
    path = tmp_path / "arena.yaml"
    path.write_text(yaml.safe_dump(arena()), encoding="utf-8")
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(COMMAND, ["solve", str(path), "--solver", "cbc", "--certify", "-q", "--json", str(out)])
    disagree = raw["cbc"].objective != pytest.approx(raw["highs"].objective)
    assert r.exit_code == (EXIT_SOLVER if disagree else EXIT_OK), r.output
    if disagree:
        assert "not certified" in r.output and "below the cbc's proven bound" in r.output, r.output
    plan = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert plan["certified"] is (not disagree) and plan["cost_usd_per_hour"] == pytest.approx(3.03)


@pytest.mark.parametrize("backend", ["cbc", "highs"])
def test_certify_agrees_on_the_melange_toy(backend):
    from tests.toy_fixture import toy_instance

    plan = solve(toy_instance(), backend=backend, certify=True)
    assert plan.certified is True and plan.verified, plan.notes
    assert any(n.startswith("certified:") for n in plan.notes)


def test_disagreement_rules():
    assert disagreement(("optimal", 4.68, 4.68), ("optimal", 3.03, 3.03), 0.0) is not None
    assert disagreement(("infeasible", None, None), ("optimal", 3.03, 3.03), 0.0) is not None
    assert disagreement(("optimal", 3.03, 3.0), ("optimal", 3.03, 3.03), 0.0) is None  # a weaker bound is fine
    assert disagreement(("optimal", 3.2, 3.0), ("optimal", 3.1, 3.1), 0.1) is None  # within the gap
    assert disagreement(("infeasible", None, None), ("infeasible", None, None), 0.0) is None


def test_claim_of_an_unverified_plan_has_no_objective():
    plan = solve(parse_instance(arena(), "arena"), backend="highs")
    assert claim_of(plan)[1] == pytest.approx(3.03)
    assert claim_of(plan.model_copy(update={"verified": False}))[1] is None
