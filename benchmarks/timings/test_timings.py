"""Timings that are recorded per commit: the whole operations a user waits for, each in one process.

Run (``make timings``; ~1 min on two cores)::

    .venv/bin/python -m pytest benchmarks/timings -p no:xdist -p no:cacheprovider --benchmark-only \
        --benchmark-autosave --benchmark-storage=file://benchmarks/timings/history

Each run is saved as ``benchmarks/timings/history/<machine>/<NNNN>_<commit>_<date>.json`` (pytest-benchmark
names it after the commit it ran on, with the machine's CPU and Python), so a commit's figures sit beside the
commit's predecessors; compare two runs with::

    .venv/bin/pytest-benchmark --storage file://benchmarks/timings/history compare 0001 0002 --group-by name

pytest-benchmark rather than asv: asv builds an environment per commit it measures (minutes each, and a
network install of every dependency), where these timings are whole solves of seconds to a minute measured
on the checkout at hand; pytest-benchmark runs them as tests of the same suite's fixtures, records the
commit, machine and spread of every run in one JSON file, and compares any two runs. The timings are never
asserted (a timed assert fails on a loaded machine, not on a slow commit): the suite lives outside the test
paths, and ``make test`` does not run it.

Every case starts cold: the in-process candidate cache is emptied before each round and no disk cache is
set, so a round times candidate generation, the model, the solve and the verifier, as a first
``placement solve`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import placement
from placement.core.replicas import candidate_cache

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "instances").glob("*.yaml"))
GENERATED = ROOT / "benchmarks/instances/bench-mixed-d100-k2-c6-s0.yaml"


@pytest.fixture(autouse=True)
def _cold(monkeypatch):
    monkeypatch.delenv(candidate_cache.CACHE_DIR_ENV, raising=False)
    candidate_cache._CACHE.clear()


def _cold_round():
    candidate_cache._CACHE.clear()
    return (), {}


@pytest.mark.parametrize("backend", ["highs", "cbc"])
@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_solve_shipped(benchmark, path, backend):
    """``placement solve`` on a shipped instance: candidates, model, solve, verification."""
    inst = placement.load_instance(path)
    benchmark.group = f"solve {path.stem}"
    plan = benchmark.pedantic(lambda: placement.solve(inst, backend=backend), setup=_cold_round, rounds=2)
    assert plan.verified, plan.violations


def test_solve_generated_100_domains(benchmark):
    """A seeded 100-domain fleet of two chip types and six classes (``placement bench``'s generator)."""
    inst = placement.load_instance(GENERATED)
    benchmark.group = "solve generated"
    plan = benchmark.pedantic(lambda: placement.solve(inst, backend="highs"), setup=_cold_round, rounds=1)
    assert plan.verified, plan.violations


def test_check_a_plan(benchmark):
    """``placement check``: the independent verifier re-deriving every field of a solved plan."""
    inst = placement.load_instance(ROOT / "instances/rubin-lpx-deepseek.yaml")
    plan = placement.solve(inst, backend="highs")
    benchmark.group = "check"
    result = benchmark.pedantic(lambda: placement.check(inst, plan), rounds=3)
    assert result.ok


def test_capacity_closed_loop(benchmark):
    """``placement capacity``: the largest rate each class is served at, by bisection on the MILP."""
    inst = placement.load_instance(ROOT / "instances/closed-loop.yaml")
    benchmark.group = "capacity"
    benchmark.pedantic(lambda: placement.capacity(inst, band=False), setup=_cold_round, rounds=1)


def test_replan_after_a_failure(benchmark):
    """``placement replan``: the running agentic-coding plan after one B200 domain fails."""
    inst = placement.load_instance(ROOT / "instances/agentic-coding.yaml")
    plan = placement.solve(inst, backend="highs")
    site = next(p.sites[0] for p in plan.pools if p.chip == "b200")
    failed = placement.Events(failed_domains={site.site: site.domains[:1]})
    benchmark.group = "replan"
    new = benchmark.pedantic(lambda: placement.replan(inst, plan, failed), setup=_cold_round, rounds=1)
    assert new.verified, new.violations
