"""Many configurations evaluated in one broadcast (grid tables, evaluate_many, best_batches) give every
field of every configuration bit for bit as evaluating it alone (issue 14)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from placement import load_instance
from placement.core.instance.context import Context
from placement.core.replicas.batch_choice import best_batches
from placement.core.replicas.evaluate import Perf, evaluate, evaluate_many
from placement.modes import configurations

ROOT = Path(__file__).resolve().parents[1]
#: Instances whose classes cover mean and percentile SLOs, cached prefixes, a framework latency and a measured
#: step table (which keeps the one-by-one path).
INSTANCES = ["instances/mixed-fleet.yaml", "instances/agentic-coding.yaml", "instances/trainium-cerebras.yaml",
             "tests/instances/measured-steps.yaml"]
KINDS = ("prefill", "decode", "aggregated")


def _bits(perf: Perf) -> list[tuple]:
    """Every field of ``perf`` as (shape, dtype, bytes): equal only when bit for bit equal."""
    out = []
    for f in fields(Perf):
        a = np.asarray(getattr(perf, f.name))
        out.append((a.shape, a.dtype.str, a.tobytes()))
    return out


def _grids(path: str, most: int):
    """(context, class, memo, about ``most`` configurations of every kind and chip) of the first two classes."""
    ctx = Context.of(load_instance(ROOT / path))
    memo: dict = {}
    for cls in ctx.instance.workload.classes[:2]:
        grids = [g for g, _ in configurations(ctx, cls, memo) if g.config.kind in KINDS]
        yield ctx, cls, memo, grids[::max(len(grids) // most, 1)]


@pytest.mark.parametrize("path", INSTANCES)
def test_grid_tables_and_evaluate_many_match_one_by_one(path):
    seen = 0
    for ctx, cls, memo, grids in _grids(path, 24):
        for g in grids:  # generation's way: a kept memo, every configuration of a resource from one table
            assert _bits(evaluate(ctx, g.config, cls, batch=g.batches, memo=memo)) == _bits(
                evaluate(ctx, g.config, cls, batch=g.batches))
        # Ragged batches off the grid, every kind and chip of the class in one call.
        rng = np.random.default_rng(len(grids))
        batches = [np.unique(rng.integers(1, 600, size=int(rng.integers(1, 9)))).astype(float) for _ in grids]
        many = evaluate_many(ctx, [g.config for g in grids], cls, batches, memo={})
        for g, b, perf in zip(grids, batches, many, strict=True):
            assert _bits(perf) == _bits(evaluate(ctx, g.config, cls, batch=b))
        seen += len(grids)
    assert seen > 0


def test_best_batches_together_match_each_alone():
    for ctx, cls, _, grids in _grids("instances/mixed-fleet.yaml", 16):
        searches = []
        for g in grids:
            if g.config.kind != "prefill":
                perf = evaluate(ctx, g.config, cls, batch=g.batches)
                searches.append((g.config, g.batches, perf, perf.ok(cls)))
        together = best_batches(ctx, cls, searches, memo={})
        assert any(t is not None and t[2] > 0 for t in together)  # some searches evaluated batches off the grid
        for s, t in zip(searches, together, strict=True):
            alone = best_batches(ctx, cls, [s])[0]
            assert (t is None) == (alone is None)
            if t is not None:
                assert (t[0], t[2], _bits(t[1])) == (alone[0], alone[2], _bits(alone[1]))
