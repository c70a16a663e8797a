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
network-free (K0, :mod:`placement.core.replicas.candidates`) is kept under its own key;
a solve that may use K0 takes the full set instead when it is kept already. The cache is in-process (a process pool's
worker keeps its own) and holds the last :data:`CACHE_SIZE` generations.

On disk, optionally: with a cache folder (``placement solve --cache-dir DIR``,
or the ``PLACEMENT_CACHE_DIR`` environment variable, which every command and
worker reads) a generation is also written to ``DIR/<key>.json.gz`` and read
back by any later process with the same key — a ``replan`` after a
``solve``, the points of a sweep. Failed domains change no candidate (they
remove domains, not replica shapes), so a re-plan reads the generation of the
solve before it.

An entry is data, never code: gzip-compressed JSON tables
(:mod:`placement.core.replicas.candidate_codec`) whose floats read back exactly, so a
cached generation gives the plan an uncached one gives. Its key
(:func:`disk_key`) is a hash of :func:`candidate_key`, the package version and
:func:`code_fingerprint` — the source and catalogues generation reads, so an
edited source tree (whose version stays the same) never reads a generation
of other code. The folder is private and every entry is authenticated
(:mod:`placement.core.replicas.cache_store`: owner and mode checked, no symbolic link
followed, an HMAC under the folder's own key): a file planted or changed by
anyone without the key is not read, and a folder others may write is not
used; each says why in a :class:`CacheWarning`, and candidates are generated
again.

Examples
--------
>>> from pathlib import Path
>>> import placement
>>> from placement.core.instance.context import Context
>>> inst = placement.load_instance(Path(placement.__file__).parent / "instances/melange-toy.yaml")
>>> dearer = inst.model_copy(update={"limits": inst.limits.model_copy(update={"budget_usd_per_hour": 1e6})})
>>> candidate_key(Context.of(inst)) == candidate_key(Context.of(dearer))
True
>>> cached_generate(Context.of(inst)).columns == cached_generate(Context.of(dearer)).columns
True
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections import OrderedDict
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from placement.core.modes.registry import ENTRY_POINT_GROUP
from placement.core.replicas.cache_store import CacheWarning, Folder, open_folder
from placement.core.replicas.candidate_codec import decode, encode
from placement.core.replicas.candidates import generate
from placement.core.replicas.generation import Candidates

if TYPE_CHECKING:
    from placement.core.instance.context import Context

__all__ = ["CACHE_DIR_ENV", "CACHE_SIZE", "CacheWarning", "cache_dir", "cache_info", "cached_generate",
           "candidate_key", "clear", "code_fingerprint", "disk_key", "mode_packages", "set_cache_dir",
           "share_generations", "tree_fingerprint"]

#: Generations kept (a sweep has one per series; the largest instances' take a few hundred MB).
CACHE_SIZE = 2

#: Environment variable naming the on-disk cache folder (empty or unset: none).
CACHE_DIR_ENV = "PLACEMENT_CACHE_DIR"

_CACHE: OrderedDict[str, Candidates] = OrderedDict()
_STATS = {"hits": 0, "misses": 0, "disk_hits": 0}


def candidate_key(ctx: Context) -> str:
    """Hash of everything candidate generation reads: the instance and its resolved chips and models,
    without prices (nor the price set), rates, link and uplink bandwidths, the objective, the limits or the
    description."""
    doc = ctx.instance.model_dump(mode="json", exclude={"description", "objective", "limits", "prices"})
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


#: The code generation runs: by the architecture's arrows (tests/test_architecture.py), core imports only
#: these packages and the built-in modes only core and these; with their catalogues (topology/catalog,
#: costmodels/catalog). Modes other packages declare are outside the tree: :func:`mode_packages`.
_GENERATION_CODE = ("placement/core", "placement/modes", "costmodels", "solvers", "topology")


@functools.cache
def code_fingerprint() -> str:
    """:func:`tree_fingerprint` of the installed packages, with the Python, numpy and pydantic versions and the
    packages that declare serving modes (:func:`mode_packages`, if any). Computed once per process, when a
    disk cache is used (~30 ms)."""
    import numpy
    import pydantic

    versions = f"python {sys.version}\nnumpy {numpy.__version__}\npydantic {pydantic.VERSION}"
    if plugins := mode_packages():
        versions += f"\n{plugins}"
    return hashlib.sha256(f"{versions}\n{tree_fingerprint(Path(__file__).resolve().parents[3])}".encode()).hexdigest()


def mode_packages() -> str:
    """The serving modes installed packages declare (:data:`~placement.core.modes.registry.ENTRY_POINT_GROUP`),
    one line each: entry point, distribution and version, and a hash of the module it names (their code
    is outside :data:`_GENERATION_CODE`, and its columns may be on disk). Empty without any."""
    import importlib.util

    lines = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        dist = f"{point.dist.name} {point.dist.version}" if point.dist is not None else "?"
        spec = importlib.util.find_spec(point.module)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        code = hashlib.sha256(origin.read_bytes()).hexdigest() if origin and origin.is_file() else "?"
        lines.append(f"{point.name} = {point.value} ({dist}) {code}")
    return "\n".join(lines)


def tree_fingerprint(root: Path) -> str:
    """Hash of the code and catalogues candidate generation reads under ``root`` (the folder holding the
    packages): every file under :data:`_GENERATION_CODE` and those of ``placement/`` itself
    (``__init__.py``), by path and content; compiled files left out."""
    files = [p for sub in _GENERATION_CODE for p in (root / sub).rglob("*")] + list((root / "placement").glob("*"))
    digest = hashlib.sha256()
    for path in sorted(p for p in files if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(root).as_posix()}\n{path.stat().st_size}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def disk_key(ctx: Context) -> str:
    """:func:`candidate_key` with the package version and :func:`code_fingerprint`: the name of a
    generation on disk."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("placement")
    except PackageNotFoundError:  # run from a source tree
        ver = "source"
    return hashlib.sha256(f"{ver}\n{code_fingerprint()}\n{candidate_key(ctx)}".encode()).hexdigest()


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


def _read(folder: Folder, name: str) -> Candidates | None:
    """The generation of entry ``name``; None if there is none or it is not used (a warning says why)."""
    import gzip
    import zlib


    content = folder.read(name)
    if content is None:
        return None
    try:
        return decode(gzip.decompress(content))
    except (OSError, EOFError, zlib.error, ValueError) as e:  # authentic, so written by other code
        return folder.refuse(name, f"it is not a generation this code reads ({e})")


def _write(folder: Folder, name: str, cands: Candidates) -> None:
    import gzip


    # Level 1: a sixth of level 6's time on the 1,000-domain instance, for a file 15% larger.
    folder.write(name, gzip.compress(encode(cands), compresslevel=1, mtime=0))


def cached_generate(ctx: Context, network_free_from: int | None = None) -> Candidates:
    """:func:`placement.core.replicas.candidates.generate`, reused when an earlier context had the same key (in this
    process, or on disk when a cache folder is set).

    With ``network_free_from`` (see :func:`~placement.core.replicas.candidates.generate`): the full set if it is
    kept already, else the generation with two-part columns pruned network-free, kept under its own key
    (with ``network_free_from``) — or under the full set's when K0 was too small and the full set was
    made instead.

    Returns a fresh :class:`Candidates` (its own list and dict) over the
    shared, never modified, columns and configurations.
    """
    folder_path = cache_dir()
    if folder_path is None:
        return _generate(ctx, network_free_from, None)
    with open_folder(folder_path) as folder:
        return _generate(ctx, network_free_from, folder)


def _generate(ctx: Context, network_free_from: int | None, folder: Folder | None) -> Candidates:
    key = candidate_key(ctx)
    where = [(key, lambda: f"{disk_key(ctx)}.json.gz")]
    if network_free_from is not None:
        where.append((f"{key}|network-free-from-{network_free_from}",
                      lambda: f"{disk_key(ctx)}-network-free-from-{network_free_from}.json.gz"))
    for k, name in where:
        found = _kept(k, folder, name)
        if found is not None:
            return _copy(found)
    _STATS["misses"] += 1
    found = generate(ctx) if network_free_from is None else generate(ctx, network_free_from=network_free_from)
    k, name = where[-1] if found.network_free else where[0]
    if folder is not None:
        _write(folder, name(), found)
    _keep(k, found)
    return _copy(found)


def _kept(key: str, folder: Folder | None, name: Callable[[], str]) -> Candidates | None:
    """The generation kept under ``key`` in this process, else read from entry ``name()`` of ``folder``
    (and kept), else None."""
    if key in _CACHE:
        _CACHE.move_to_end(key)
        _STATS["hits"] += 1
        return _CACHE[key]
    found = _read(folder, name()) if folder is not None else None
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
    from placement.core.instance.context import Context

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
