"""Dominance pruning of candidates: the vectorised pass keeps exactly what pairwise tests keep."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from placement.core.replicas import generation
from placement.core.replicas.generation import Pending, _dominated, _prune, prune_groups


def _pairwise(pend: list[Pending]) -> list[Pending]:
    """The definition, one pair at a time (what _prune must reproduce)."""
    kept = []
    for g in prune_groups(pend):
        survivors: list[Pending] = []
        for x in g:
            if not any(_dominated(x, y) for y in survivors):
                survivors = [y for y in survivors if not _dominated(y, x)]
                survivors.append(x)
        kept.extend(survivors)
    return sorted(kept, key=lambda p: p.name)


def _random_pending(rng: np.random.Generator, n: int) -> list[Pending]:
    out = []
    for i in range(n):
        paired = bool(rng.random() < 0.5)
        units = (int(rng.choice([1, 2, 4, 8, 72])),) + ((int(rng.choice([1, 2, 4, 256])),) if paired else ())
        cfg = SimpleNamespace(kind="decode-af" if paired else "decode",
                              main=SimpleNamespace(site_resource="a"),
                              partner=SimpleNamespace(site_resource="b") if paired else None)
        # Few distinct values, so ties and equal columns (the name tie-break) occur.
        out.append(Pending(name=f"c{i:03d}", cfg=cfg, cls=str(rng.choice(["x", "y"])), steps=["q"],
                            capacity=float(rng.choice([1.0, 2.0, 3.0, 4.0, 8.0])) * units[0],
                            units=units,
                            pair_bytes_per_s=float(rng.choice([0.0, 1e9, 2e9])) if paired else 0.0,
                            pair_max_latency_s=float(rng.choice([4e-6, 1e-5, np.inf])) if paired else np.inf))
    return out


@pytest.mark.parametrize("block", [1, 7, 64])
@pytest.mark.parametrize("seed", range(30))
def test_vectorised_pruning_equals_pairwise(seed, block, monkeypatch):
    """Whatever the block size of the block-wise test (solvers.dominance.undominated)."""
    monkeypatch.setattr(generation, "PRUNE_BLOCK", block)
    pend = _random_pending(np.random.default_rng(seed), 120)
    fast, slow = _prune(pend), _pairwise(pend)
    assert [p.name for p in fast] == [p.name for p in slow]
    assert 0 < len(fast) < len(pend)
