"""The two-level re-plan (solvers.twolevel.solve with the migration family) finds the one-level re-plan's objective.

Large fleets are re-planned in two levels (a bound from the collapsed fleet,
a plan from the columns it uses and the columns running now, the full model
only if that plan is not within the gap). Here the threshold is lowered so
that a tiny fleet — the Mélange toy with a second, dearer A10G group, which
the collapsed fleet merges with the first at the lower price — takes that
path, and its objective (run $/h + migration $ / H) is compared with the
one-level model's.
"""

from __future__ import annotations

import copy

import pytest

import placement
import solvers.twolevel
from placement.core.instance.loading import parse_instance
from placement.core.operations.replan import Events, replan
from placement.core.pipeline.solve import solve
from tests.toy_fixture import TOY

BACKEND = "highs"
DOUBLED = {c["name"]: 2 * c["rate_rps"] for c in TOY["workload"]["classes"]}


def _fleet(rates=None):
    doc = copy.deepcopy(TOY)
    doc["hardware"]["domains"].append({**doc["hardware"]["domains"][0], "name": "a10g-dear",
                                       "usd_per_hour_per_chip": 1.3})
    for d in doc["hardware"]["domains"]:
        d["count"] = 8
    for c in doc["workload"]["classes"]:
        c["rate_rps"] = (rates or {}).get(c["name"], c["rate_rps"])
    return parse_instance(doc)


@pytest.fixture(scope="module")
def running():
    inst = _fleet()
    return inst, solve(inst, backend=BACKEND)


def _both(inst, plan, events, gap, monkeypatch):
    one = replan(inst, plan, events, backend=BACKEND, gap=gap)
    monkeypatch.setattr(solvers.twolevel, "MIN_SIZE", 1)
    two = replan(inst, plan, events, backend=BACKEND, gap=gap)
    assert one.verified and two.verified and placement.check(inst, two).ok
    return one, two


CASES = {
    "demand drops, moves dear": ({"long-in-short-out": 1}, Events(move_usd=30.0)),
    "demand doubles, an A100 fails": (DOUBLED, Events(failed_domains={"a100-pool": [0]}, move_usd=5.0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_levels_find_the_one_level_optimum(running, case, monkeypatch):
    _, plan = running
    rates, events = CASES[case]
    one, two = _both(_fleet(rates), plan, events, None, monkeypatch)
    assert "collapsed" in two.solver.message and "collapsed" not in one.solver.message  # the path taken
    assert two.migration.objective_usd_per_hour == pytest.approx(one.migration.objective_usd_per_hour, rel=1e-9)


def test_a_restricted_plan_within_the_gap_is_returned_without_the_full_model(running, monkeypatch):
    inst, plan = running
    one, two = _both(inst, plan, Events(failed_domains={"a10g-pool": [0, 1]}), 0.01, monkeypatch)
    assert two.solver.message.startswith("two levels: plan from the")
    bound = two.solver.best_bound
    assert bound <= one.migration.objective_usd_per_hour
    assert two.migration.objective_usd_per_hour - bound <= 0.01 * two.migration.objective_usd_per_hour
    assert not {(m.column, m.group) for m in two.migration.moves} - {(m.column, m.group) for m in one.migration.moves}


def test_cli_replan_reads_the_solves_candidate_cache(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from placement.cli.app import app
    from placement.core.replicas import candidate_cache

    monkeypatch.setenv(candidate_cache.CACHE_DIR_ENV, "")  # none; the commands' --cache-dir set it, undone after
    runner, toy, cache = CliRunner(), "instances/melange-toy.yaml", tmp_path / "cache"
    p0 = tmp_path / "p0.json"
    candidate_cache.clear()  # a generation kept in this process would not be written (a new process has none)
    assert runner.invoke(app, ["solve", toy, "--solver", BACKEND, "--json", str(p0), "-q",
                               "--cache-dir", str(cache)]).exit_code == 0
    assert len(list(cache.glob("*.json.gz"))) == 1
    monkeypatch.setenv(candidate_cache.CACHE_DIR_ENV, "")
    candidate_cache.clear()  # the solve's generation is on disk only
    r = runner.invoke(app, ["replan", toy, str(p0), "--solver", BACKEND, "--fail", "a10g-pool:0", "-q",
                            "--cache-dir", str(cache)])
    assert r.exit_code == 0, r.output
    assert candidate_cache.cache_info()["disk_hits"] == 1 and candidate_cache.cache_info()["misses"] == 0
