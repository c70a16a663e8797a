"""Candidates kept in this process and reused by the solves whose candidates they are.

Candidate generation reads the model, the precision, the chips' physics, the
classes' shapes and SLOs, the modes, the draft, the measured tables and the
fleet (domain sizes and counts bound the replica sizes; switches, links and
their latencies give the pair latencies) — never a price, a class's rate, a
link's or an uplink's bandwidth (paths are the lowest-latency ones), the
objective or the limits. Sweep, Pareto and marginal points that change only
those share one generation: the key is a hash of the instance and of its
resolved chips and models with exactly those fields left out
(:func:`candidate_key`). A point with another domain count generates again.

Nothing is pruned by price, so a cached generation is the generation of the
new point, column for column. The cache is in-process (a process pool's
worker keeps its own) and holds the last :data:`CACHE_SIZE` generations.

Examples
--------
>>> from pathlib import Path
>>> import placement
>>> from placement.core.context import Context
>>> inst = placement.load_instance(Path(placement.__file__).parent / "instances/melange-toy.yaml")
>>> dearer = inst.model_copy(update={"limits": inst.limits.model_copy(update={"budget_usd_per_hour": 1e6})})
>>> candidate_key(Context.of(inst)) == candidate_key(Context.of(dearer))
True
>>> cached_generate(Context.of(inst)).columns == cached_generate(Context.of(dearer)).columns
True
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import TYPE_CHECKING

from placement.core.candidates import Candidates, generate

if TYPE_CHECKING:
    from placement.core.context import Context

__all__ = ["CACHE_SIZE", "cache_info", "cached_generate", "candidate_key", "clear"]

#: Generations kept (a sweep has one per series; the largest instances' take a few hundred MB).
CACHE_SIZE = 2

_CACHE: OrderedDict[str, Candidates] = OrderedDict()
_STATS = {"hits": 0, "misses": 0}


def candidate_key(ctx: Context) -> str:
    """Hash of everything candidate generation reads: the instance and its resolved chips and models,
    without prices, rates, link and uplink bandwidths, the objective, the limits or the description."""
    doc = ctx.instance.model_dump(mode="json", exclude={"description", "objective", "limits"})
    for cls in doc["workload"]["classes"]:
        cls.pop("rate_rps", None)
    for group in doc["hardware"]["domains"]:
        group.pop("usd_per_hour_per_chip", None)
        group.pop("uplink_gb_per_s", None)
    for link in doc["hardware"]["links"]:
        link.pop("bandwidth_gb_per_s", None)
    for chip in doc["hardware"]["chips"]:
        chip.pop("usd_per_hour", None)
    resolved = {
        "chips": {n: c.model_dump(mode="json", exclude={"usd_per_hour"}) for n, c in sorted(ctx.chips.items())},
        "model": ctx.model.model_dump(mode="json"),
        "draft": None if ctx.draft_model is None else ctx.draft_model.model_dump(mode="json"),
    }
    text = json.dumps([doc, resolved], sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def cached_generate(ctx: Context) -> Candidates:
    """:func:`placement.core.candidates.generate`, reused when an earlier context had the same key.

    Returns a fresh :class:`Candidates` (its own list and dict) over the
    shared, never modified, columns and configurations.
    """
    key = candidate_key(ctx)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        _STATS["hits"] += 1
    else:
        _STATS["misses"] += 1
        _CACHE[key] = generate(ctx)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    c = _CACHE[key]
    return Candidates(configs=dict(c.configs), columns=list(c.columns), generated=c.generated, feasible=c.feasible)


def cache_info() -> dict[str, int]:
    """Hits, misses and generations kept in this process."""
    return {**_STATS, "kept": len(_CACHE)}


def clear() -> None:
    """Forget every kept generation (and the counts)."""
    _CACHE.clear()
    _STATS.update(hits=0, misses=0)
