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
new point, column for column. A generation whose pair columns were pruned
network-free (K0, :mod:`placement.core.candidates`) is kept under its own key;
a solve that may use K0 takes the full set instead when it is kept already. The cache is in-process (a process pool's
worker keeps its own) and holds the last :data:`CACHE_SIZE` generations.

On disk, optionally: with a cache folder (``placement solve --cache-dir DIR``,
or the ``PLACEMENT_CACHE_DIR`` environment variable, which every command and
worker reads) a generation is also written to ``DIR/<key>.pickle`` and read
back by any later process with the same key — a ``replan`` after a
``solve``, the points of a sweep. The key then also holds the package
version, so an upgrade never reads an older generation. The files are
Python pickles: keep the folder private (a pickle can run code when read).
Failed domains change no candidate (they remove domains, not replica
shapes), so a re-plan reads the generation of the solve before it.

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
import os
import pickle
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from placement.core.candidates import Candidates, generate

if TYPE_CHECKING:
    from placement.core.context import Context

__all__ = ["CACHE_DIR_ENV", "CACHE_SIZE", "cache_dir", "cache_info", "cached_generate", "candidate_key", "clear",
           "disk_key", "set_cache_dir", "share_generations"]

#: Generations kept (a sweep has one per series; the largest instances' take a few hundred MB).
CACHE_SIZE = 2

#: Environment variable naming the on-disk cache folder (empty or unset: none).
CACHE_DIR_ENV = "PLACEMENT_CACHE_DIR"

_CACHE: OrderedDict[str, Candidates] = OrderedDict()
_STATS = {"hits": 0, "misses": 0, "disk_hits": 0}


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


def disk_key(ctx: Context) -> str:
    """:func:`candidate_key` with the package version: the name of a generation on disk."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("placement")
    except PackageNotFoundError:  # run from a source tree
        ver = "source"
    return hashlib.sha256(f"{ver}\n{candidate_key(ctx)}".encode()).hexdigest()


def set_cache_dir(path: str | Path | None) -> None:
    """Use ``path`` as the on-disk cache folder in this process and the processes it starts (None: none)."""
    if path is None:
        os.environ.pop(CACHE_DIR_ENV, None)
    else:
        os.environ[CACHE_DIR_ENV] = str(path)


def cache_dir() -> Path | None:
    """The on-disk cache folder in use, if any."""
    value = os.environ.get(CACHE_DIR_ENV, "").strip()
    return Path(value) if value else None


def _read(path: Path) -> Candidates | None:
    try:
        with path.open("rb") as f:
            found = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError):
        return None  # absent, half-written by a process that died, or from another layout: generate again
    return found if isinstance(found, Candidates) else None


def _write(path: Path, cands: Candidates) -> None:
    """Write atomically (a reader sees the whole file or none); a folder that cannot be written is skipped."""
    from placement.core.errors import InputError
    from placement.core.output import write_bytes_atomic

    data = pickle.dumps(_copy(cands), protocol=pickle.HIGHEST_PROTOCOL)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)
    except (OSError, InputError):
        pass


def cached_generate(ctx: Context, network_free_from: int | None = None) -> Candidates:
    """:func:`placement.core.candidates.generate`, reused when an earlier context had the same key (in this
    process, or on disk when a cache folder is set).

    With ``network_free_from`` (see :func:`~placement.core.candidates.generate`): the full set if it is
    kept already, else the generation with two-part columns pruned network-free, kept under its own key
    (with ``network_free_from``) — or under the full set's when K0 was too small and the full set was
    made instead.

    Returns a fresh :class:`Candidates` (its own list and dict) over the
    shared, never modified, columns and configurations.
    """
    key, folder = candidate_key(ctx), cache_dir()
    where = [(key, lambda: folder / f"{disk_key(ctx)}.pickle")]
    if network_free_from is not None:
        where.append((f"{key}|network-free-from-{network_free_from}",
                      lambda: folder / f"{disk_key(ctx)}-network-free-from-{network_free_from}.pickle"))
    for k, path in where:
        found = _kept(k, path() if folder is not None else None)
        if found is not None:
            return _copy(found)
    _STATS["misses"] += 1
    found = generate(ctx) if network_free_from is None else generate(ctx, network_free_from=network_free_from)
    k, path = where[-1] if found.network_free else where[0]
    if folder is not None:
        _write(path(), found)
    _keep(k, found)
    return _copy(found)


def _kept(key: str, path: Path | None) -> Candidates | None:
    """The generation kept under ``key`` in this process, else read from ``path`` (and kept), else None."""
    if key in _CACHE:
        _CACHE.move_to_end(key)
        _STATS["hits"] += 1
        return _CACHE[key]
    found = _read(path) if path is not None else None
    if found is not None:
        _STATS["disk_hits"] += 1
        _keep(key, found)
    return found


def _keep(key: str, cands: Candidates) -> None:
    _CACHE[key] = cands
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)


def _copy(c: Candidates) -> Candidates:
    """A new record (its own list and dict, no memo) over ``c``'s columns and configurations."""
    return Candidates(configs=dict(c.configs), columns=list(c.columns), generated=c.generated, feasible=c.feasible,
                      network_free=c.network_free)


def share_generations(instances: list) -> int:
    """Generate here, once, the candidates that two or more of ``instances`` share; returns how many.

    Called before a process pool forks (a study's points): forked workers
    inherit this process's cache, so a 20-point price sweep generates once
    instead of once per worker. At most :data:`CACHE_SIZE` generations are
    kept, the most shared first; instances with session classes are left to
    their workers (their candidates are those of the expanded classes).

    Examples
    --------
    >>> from pathlib import Path
    >>> import placement
    >>> inst = placement.load_instance(Path(placement.__file__).parent / "instances/melange-toy.yaml")
    >>> clear(); share_generations([inst, inst]), cache_info()["misses"]
    (1, 1)
    """
    from placement.core.context import Context

    contexts: dict[str, Context] = {}
    count: dict[str, int] = {}
    for inst in instances:
        if any(c.sessions is not None for c in inst.workload.classes):
            continue
        ctx = Context.of(inst)
        key = candidate_key(ctx)
        contexts.setdefault(key, ctx)
        count[key] = count.get(key, 0) + 1
    shared = sorted((k for k, n in count.items() if n > 1), key=lambda k: -count[k])[:CACHE_SIZE]
    for key in shared:
        cached_generate(contexts[key])
    return len(shared)


def cache_info() -> dict[str, int]:
    """Hits (in this process, on disk), misses and generations kept in this process."""
    return {**_STATS, "kept": len(_CACHE)}


def clear() -> None:
    """Forget every kept generation (and the counts)."""
    _CACHE.clear()
    _STATS.update(hits=0, misses=0, disk_hits=0)
