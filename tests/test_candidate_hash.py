"""Candidate generation keeps its columns exactly: hashes of shipped instances' columns, the cache, the slot search.

The hashes are those of ``benchmarks/behaviour_hash.py`` (every column and the
configuration behind it, as sorted JSON), taken before candidate generation
was made faster; a change of physics changes them on purpose and must update
them here and in ``benchmarks/behaviour_hash.json`` together.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from costmodels.queueing import _UTILISATION_GRID, _slot_wait_scaled, erlang_c, slot_max_rate_per_s
from placement import load_instance
from placement.core.instance.context import Context
from placement.core.pipeline.problem import build_problem
from placement.core.replicas import candidate_cache
from placement.core.replicas.candidates import generate

ROOT = Path(__file__).resolve().parents[1]

#: instance -> (columns, SHA-256 prefix of the columns), as benchmarks/behaviour_hash.py prints them.
COLUMNS = {
    "melange-toy": (2, "cb26ff2fbaef18d7"),
    "bertha-lpddr": (22, "25a7caa7a4fb9b7c"),
    "spec-decode-draft": (305, "a128cb360f2d1951"),
}


def _columns_sha(problem, cands) -> tuple[int, str]:
    rows = sorted(
        json.dumps({"column": c.model_dump(mode="json"), "config": cands.configs[c.name].model_dump(mode="json")},
                   sort_keys=True)
        for c in problem.columns
    )
    return len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def _context(name: str, **update) -> Context:
    inst = load_instance(ROOT / "instances" / f"{name}.yaml")
    return Context.of(inst.model_copy(update=update) if update else inst)


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_generated_columns_hash_as_before(name):
    ctx = _context(name)
    problem, cands = build_problem(ctx, generate(ctx))
    assert _columns_sha(problem, cands) == COLUMNS[name]


def test_cache_reuses_columns_across_prices_and_rates_only():
    """A price or a rate changed: the same columns, from the cache; an SLO changed: generated again."""
    candidate_cache.clear()
    inst = load_instance(ROOT / "instances" / "melange-toy.yaml")
    first = candidate_cache.cached_generate(Context.of(inst))
    hw = inst.hardware.model_copy(update={"domains": [d.model_copy(update={"usd_per_hour_per_chip": 123.0})
                                                      for d in inst.hardware.domains]})
    classes = [c.model_copy(update={"rate_rps": c.rate_rps * 3}) for c in inst.workload.classes]
    cheaper = inst.model_copy(update={"hardware": hw,
                                      "workload": inst.workload.model_copy(update={"classes": classes})})
    again = candidate_cache.cached_generate(Context.of(cheaper))
    assert candidate_cache.cache_info()["hits"] == 1
    assert again.columns == first.columns == generate(Context.of(cheaper)).columns
    assert again.columns is not first.columns  # callers own their lists
    stricter = [c.model_copy(update={"tpot_ms": c.tpot_ms / 2}) for c in inst.workload.classes]
    candidate_cache.cached_generate(Context.of(
        inst.model_copy(update={"workload": inst.workload.model_copy(update={"classes": stricter})})))
    assert candidate_cache.cache_info()["misses"] == 2
    candidate_cache.clear()


def _slot_rate_by_scan(servers, hold_s, budget_s, tail, max_utilisation):
    """The highest grid utilisation meeting the budget by scanning every grid point (the definition)."""
    grid = _UTILISATION_GRID[_UTILISATION_GRID <= max_utilisation * (1 + 1e-12)]
    rate, wait = np.zeros(len(servers)), np.zeros(len(servers))
    for i, (c, h, r) in enumerate(zip(servers, hold_s, budget_s, strict=True)):
        scaled = _slot_wait_scaled(float(c), grid, np.asarray(erlang_c(int(c), grid)), tail)
        bad = scaled * h > r
        k = int(np.argmax(bad)) - 1 if bad.any() else grid.size - 1
        if k > 0:
            rate[i], wait[i] = grid[k] * c / h, scaled[k] * h
    return rate, wait


@pytest.mark.parametrize("seed", range(4))
def test_slot_search_equals_the_scan_of_every_utilisation(seed):
    rng = np.random.default_rng(seed)
    servers = rng.choice([1, 2, 3, 8, 64, 1000, 4096], size=24)
    hold_s = 10 ** rng.uniform(-3, 3, size=24)
    budget_s = 10 ** rng.uniform(-3, 2, size=24)
    budget_s[:2] = (-1.0, 0.0)
    tail, cap = [(None, 0.9), (0.05, 1.0), (0.005, 0.9), (None, 0.5)][seed]
    fast = slot_max_rate_per_s(servers, hold_s, budget_s, tail, max_utilisation=cap)
    slow = _slot_rate_by_scan(servers, hold_s, budget_s, tail, cap)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    assert (fast[0] > 0).any() and (fast[0] == 0).any()


def test_slot_search_with_rows_evicted_midway(monkeypatch):
    """More slot counts in one call than the kept rows: the same answer as the scan."""
    from costmodels import queueing

    monkeypatch.setattr(queueing, "_WAIT_ROWS", queueing._Rows(2))
    monkeypatch.setattr(queueing, "_ERLANG_ROWS", queueing._Rows(2))
    servers, hold_s, budget_s = np.array([1, 5, 9, 13, 5, 1]), np.full(6, 2.0), np.full(6, 0.5)
    slot_max_rate_per_s(servers[:2], hold_s[:2], budget_s[:2], None, max_utilisation=0.9)  # two rows kept
    fast = slot_max_rate_per_s(servers, hold_s, budget_s, None, max_utilisation=0.9)
    slow = _slot_rate_by_scan(servers, hold_s, budget_s, None, 0.9)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1]) and (fast[0] > 0).all()


def test_classes_in_a_process_pool_give_the_same_columns():
    """Generation spread over forked processes, one class each, keeps every column and its order."""
    ctx = _context("melange-toy")
    one, two = generate(ctx, workers=1), generate(ctx, workers=2)
    assert len(ctx.instance.workload.classes) == 4
    assert two.columns == one.columns and two.configs == one.configs
    assert (two.generated, two.feasible) == (one.generated, one.feasible)


def test_disk_cache_is_read_by_a_later_process(tmp_path, monkeypatch):
    """A generation written to the cache folder is read back (not generated) once the process forgot it."""
    monkeypatch.setenv(candidate_cache.CACHE_DIR_ENV, str(tmp_path))
    candidate_cache.clear()
    ctx = _context("melange-toy")
    first = candidate_cache.cached_generate(ctx)
    entry = f"{candidate_cache.disk_key(ctx)}.json.gz"
    assert sorted(p.name for p in tmp_path.iterdir()) == [entry, "hmac.key"]
    candidate_cache.clear()  # what a new process starts with
    again = candidate_cache.cached_generate(ctx)
    assert candidate_cache.cache_info() == {"hits": 0, "misses": 0, "disk_hits": 1, "kept": 1}
    assert again.columns == first.columns and again.configs == first.configs
    (tmp_path / entry).write_bytes(b"half a file")
    candidate_cache.clear()
    with pytest.warns(candidate_cache.CacheWarning, match="is not used"):
        assert candidate_cache.cached_generate(ctx).columns == first.columns  # unreadable: generated again
    assert candidate_cache.cache_info()["misses"] == 1
    candidate_cache.clear()


def test_the_disk_key_holds_the_code_it_was_generated_by(tmp_path, monkeypatch):
    """A source tree keeps its version across edits: the fingerprint of the code and catalogues that
    generation reads tells two commits apart, and only those files count."""
    ctx = _context("melange-toy")
    key = candidate_cache.disk_key(ctx)
    monkeypatch.setattr(candidate_cache, "code_fingerprint", lambda: "edited")
    assert candidate_cache.disk_key(ctx) != key
    files = ["placement/__init__.py", "placement/core/replicas/candidates.py", "placement/modes/pd.py",
             "costmodels/catalog/models.yaml", "solvers/dominance.py", "topology/catalog/chips.yaml",
             "placement/cli/app.py", "placement/core/__pycache__/candidates.cpython-311.pyc"]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text(f)
    seen = {candidate_cache.tree_fingerprint(tmp_path)}
    for f in files:
        (tmp_path / f).write_text(f + " edited")
        seen.add(candidate_cache.tree_fingerprint(tmp_path))
    assert len(seen) == 1 + 6  # every edit but the command line's and the compiled file's
def test_pairings_evaluated_together_equal_one_at_a_time():
    """Attention–FFN configurations evaluated as one array (generation) give what each gives alone."""
    from placement.core.replicas.evaluate import evaluate
    from placement.modes import configurations

    ctx = _context("rubin-lpx-deepseek")
    cls = ctx.instance.workload.classes[0]
    memo: dict = {}
    grids = [g for g, _ in configurations(ctx, cls, memo) if g.config.kind == "decode-af"]
    assert len(grids) > 10
    for g in grids[:: max(len(grids) // 10, 1)]:
        together = evaluate(ctx, g.config, cls, batch=g.batches, pair_latency_s=g.pair_latency_s, memo=memo)
        alone = evaluate(ctx, g.config, cls, batch=g.batches, pair_latency_s=g.pair_latency_s)
        for a, b in zip(together.__dict__.values(), alone.__dict__.values(), strict=True):
            assert np.array_equal(a, b)



@pytest.mark.parametrize("enabled", [True, False])
def test_generation_runs_without_the_cycle_collector_and_restores_it(enabled, monkeypatch):
    import gc

    from placement.core.replicas import candidates

    during = []
    real = candidates.class_candidates
    monkeypatch.setattr(candidates, "class_candidates",
                        lambda *a, **k: (during.append(gc.isenabled()), real(*a, **k))[1])
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        cands = generate(Context.of(load_instance(ROOT / "instances/melange-toy.yaml")), workers=1)
        after = gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert cands.kept == COLUMNS["melange-toy"][0]
    assert during == [False] and after is enabled


def test_kept_records_equal_validated_ones():
    """Columns and configurations built without validation are what validating them gives."""
    from placement.core.replicas.evaluate import PoolConfig
    from solvers.problem import Column

    cands = generate(Context.of(load_instance(ROOT / "instances/bertha-lpddr.yaml")), workers=1)
    assert len(cands.columns) > 10
    for col in cands.columns:
        for rec, model in ((col, Column), (cands.configs[col.name], PoolConfig)):
            again = model(**{k: getattr(rec, k) for k in rec.model_fields_set})
            assert again == rec and again.model_dump() == rec.model_dump() and repr(again) == repr(rec)
            assert again.model_fields_set == rec.model_fields_set and list(again.__dict__) == list(rec.__dict__)


def test_slot_rates_of_broadcast_counts_equal_those_of_full_arrays():
    """Distinct slot counts taken before broadcasting give the rates of the broadcast array."""
    rng = np.random.default_rng(3)
    servers = rng.choice([8, 16, 64, 128], size=12)
    hold = rng.uniform(0.5, 20.0, size=(3, 4, 12))
    budget = rng.uniform(0.05, 2.0, size=(3, 4, 12))
    for tail in (None, 0.1):
        a = slot_max_rate_per_s(servers, hold, budget, tail, max_utilisation=0.9)
        b = slot_max_rate_per_s(np.broadcast_to(servers, hold.shape).copy(), hold, budget, tail, max_utilisation=0.9)
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
