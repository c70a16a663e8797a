"""A study's points that share their candidates generate them once, before the pool forks."""

from __future__ import annotations

import multiprocessing

import pytest

from placement.core.replicas import candidate_cache, candidates
from placement.studies.sweep import run_sweep
from tests.toy_fixture import toy_instance


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="workers inherit the cache by fork only")
def test_price_sweep_generates_once_for_all_workers(tmp_path, monkeypatch):
    log = tmp_path / "generations"
    real = candidates.generate

    def counted(ctx, workers=None, **options):  # forked workers inherit this wrapper: each generation adds a line
        with log.open("a") as f:
            f.write("g\n")
        return real(ctx, workers, **options)

    monkeypatch.setattr(candidate_cache, "generate", counted)
    candidate_cache.clear()
    spec = ["hardware.chips.a10g.usd_per_hour=1,2,4,8"]
    two = run_sweep(toy_instance(), spec, workers=2).canonical_json()
    assert log.read_text().count("g") == 1
    candidate_cache.clear()
    one = run_sweep(toy_instance(), spec, workers=1).canonical_json()
    assert two == one


def test_only_shared_generations_are_made():
    inst = toy_instance()
    other = inst.model_copy(update={"workload": inst.workload.model_copy(update={
        "classes": [c.model_copy(update={"output_tokens": c.output_tokens + 1}) for c in inst.workload.classes]})})
    candidate_cache.clear()
    assert candidate_cache.share_generations([inst, other]) == 0  # nothing shared: left to the workers
    assert candidate_cache.cache_info()["misses"] == 0
    assert candidate_cache.share_generations([inst, other, inst]) == 1
    assert candidate_cache.cache_info()["misses"] == 1
