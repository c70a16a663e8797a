"""Candidate replica configurations and the solver-neutral problem they feed.

For every class, the enabled serving modes (:mod:`placement.modes`) offer
grids of replica configurations — chips per replica, TP/EP/PP layout, prefill
chunk, draft length, the partner chip of a paired replica and the latency
level of the link between the pair — over batches. Each grid is evaluated
with :mod:`placement.core.replicas.evaluate`; configurations that miss an SLO or do
not fit are dropped, and so are dominated ones (:mod:`solvers.dominance`):

    X is dominated by Y when m copies of Y fit in X's chips (part by part, m a
    whole number) and serve at least as much, with no more pair traffic and
    no stricter latency limit.

Batches. Each configuration is evaluated on the coarse grid of its mode, and
the integer batch of largest capacity meeting the SLOs
(:func:`placement.core.replicas.batch_choice.best_batch`) replaces the best grid batch's
column — a configuration keeps no more columns than its grid gave. The search
runs for replicas of one part (paired ones — attention–FFN, remote draft —
keep the power-of-two grid), after a first pruning of the grid columns, and only for configurations
whose capacity bound (:func:`~placement.core.replicas.batch_choice.capacity_bound`)
no kept column dominates; the survivors of both are pruned again.

Network-free pruning. A pair's traffic is charged per replica at its full
capacity, and it has a link-latency limit, so a faster pair never dominates a
slower one of the same chips and pair groups keep hundreds of thousands of
columns on large fleets. With ``network_free_from`` (:func:`generate`) the groups
of two-part columns are pruned with pair traffic and latency limits left out:
copies that fit and serve at least as much suffice, and of tied columns the one
of lowest pair traffic, then highest latency limit, then first name stays. A
mode's :class:`~placement.core.modes.base.GridSet` (attention–FFN pairings of two
resources) is evaluated as one array, and only its entries near the fastest of
their size become candidates (:meth:`_SetBlock.near_fastest`).
Call the result K0. Every column the full pruning keeps is dominated
network-free by a K0 column, so a problem whose network is gone (the collapsed
problem of :mod:`solvers.twolevel`) has the same optimum on K0 as on the full
set; and every K0 column is a real evaluated candidate meeting the SLOs, so a
plan of K0 columns on the real fleet is a plan of the instance. Single-part
groups are pruned as always: they have no pair traffic and no limit. K0 is a
subset of the full kept set wherever the tie order decides alike (a column
the full pruning drops is dominated network-free too); on the shipped
instances and the 1,000-domain benchmark instance it is.

Only columns of one class, kind and resources are compared. Replica sizes
below a domain form a divisibility chain with the domain size, larger ones
are whole domains (:func:`placement.modes.layouts.replica_sizes`,
:func:`~placement.modes.layouts.ffn_sizes`), so the solver's aggregate chip
constraint packs exactly (see :func:`solvers.packing.check_packable`).

Serving modes become routes (ARCHITECTURE.md, "Data flow"), one per class and enabled mode, with
the mode's transfers between their steps. Roofline columns serve one class
each — a batch that meets one class's TPOT need not meet it when mixed with
longer contexts — while a mode's shared columns (measured, Mélange-style
capacities) serve several classes at once as the measurements were taken.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from placement.core.instance.context import Context
from placement.core.instance.schema import TrafficClass
from placement.core.modes.base import Grid, GridSet
from placement.core.modes.enabled import configurations
from placement.core.modes.registry import pool_kind
from placement.core.replicas.batch_choice import best_batches, best_index, capacity_bound
from placement.core.replicas.evaluate import PartLayout, Perf, PoolConfig, evaluate
from solvers.dominance import LOAD_ATOL, RTOL, Columns, Row, copies, dominates, undominated
from solvers.problem import Column

__all__ = ["Candidates", "Pending", "class_candidates", "no_cycle_collection", "prune_groups"]

#: Candidates tested against the survivors at once (see :func:`solvers.dominance.undominated`).
PRUNE_BLOCK = 64


@dataclass
class Candidates:
    """Columns kept, their configurations, and how many were generated."""

    configs: dict[str, PoolConfig] = field(default_factory=dict)
    columns: list[Column] = field(default_factory=list)
    generated: int = 0
    feasible: int = 0
    #: Whether the two-part columns were pruned network-free (module docstring): K0, not the full set.
    network_free: bool = False
    #: Cost-model results shared while generating (see :func:`placement.core.replicas.evaluate.evaluate`).
    memo: dict = field(default_factory=dict, repr=False)

    @property
    def kept(self) -> int:
        return len(self.columns)


@dataclass(slots=True)
class Pending:
    """A feasible configuration awaiting pruning: ``cfg`` at batch ``batch`` (one copy made for those kept);
    ``group`` is :func:`_group_key` (computed once per grid; None: computed when asked)."""

    name: str
    cfg: PoolConfig
    cls: str
    steps: list[str]
    capacity: float
    units: tuple[int, ...]
    pair_bytes_per_s: float = 0.0
    pair_max_latency_s: float = float("inf")
    batch: int = 1
    group: tuple | None = None

    def config(self) -> PoolConfig:
        return self.cfg.model_copy(update={"batch": self.batch})

    def check(self) -> None:
        """What :class:`~solvers.problem.Column` validates of these numbers (ValueError if not)."""
        if not (self.capacity > 0 and self.pair_bytes_per_s >= 0 and self.pair_max_latency_s >= 0
                and 1 <= len(self.units) <= 2 and self.steps):
            raise ValueError(f"candidate {self.name!r}: capacity {self.capacity}, pair traffic "
                             f"{self.pair_bytes_per_s}, latency limit {self.pair_max_latency_s}, parts {self.units}")


def _part_tag(p: PartLayout) -> str:
    dp = f"-dp{p.dp}" if p.dp > 1 else ""
    return f"{p.site_resource}-g{p.chips}{dp}-tp{p.tp}-ep{p.ep}-pp{p.pp}"


def _name_around_batch(cfg: PoolConfig, latency_s: float | None) -> tuple[str, str]:
    """The column name before and after its batch field (one grid shares them)."""
    head = [cfg.traffic_class, cfg.kind, _part_tag(cfg.main)] + ([_part_tag(cfg.partner)] if cfg.partner else [])
    tail = ([f"c{cfg.chunk_tokens}"] if cfg.chunk_tokens else []) + ([f"k{cfg.draft_tokens}"] if cfg.draft_tokens else []) \
        + ([f"m{cfg.micro_batches}"] if cfg.micro_batches > 1 else [])
    if latency_s is not None:
        tail.append(f"l{latency_s * 1e6:.3g}us")
    return "|".join(head), "".join(f"|{t}" for t in tail)


@dataclass
class _Search:
    """A configuration whose best integer batch may beat its grid's (see :func:`_worth_searching`)."""

    grid: Grid
    cls: TrafficClass
    steps: list[str]
    perf: Perf
    ok: np.ndarray
    bound: Pending
    #: The searches searched together with this one (:func:`_search`), itself among them.
    peers: list[_Search] = field(default_factory=list, repr=False, compare=False)


def _pending(ctx_name: tuple[str, str], grid: Grid, cls: TrafficClass, steps: list[str], batch: int,
             capacity_rps: float, pair_bytes_per_s: float) -> Pending:
    """The candidate of ``grid``'s configuration at ``batch`` with that capacity and pair traffic."""
    return _grid_pending(ctx_name, grid, cls, steps)(batch, capacity_rps, pair_bytes_per_s)


def _grid_pending(ctx_name: tuple[str, str], grid: Grid, cls: TrafficClass, steps: list[str]):
    """:func:`_pending` of ``grid`` as a function of (batch, capacity, pair traffic): what the grid's
    candidates share (units, group, latency limit) is worked out once."""
    base, lat = grid.config, grid.pair_latency_s
    head, tail = ctx_name
    paired = base.partner is not None
    units = (base.main.chips,) + ((base.partner.chips,) if paired else ())
    limit = float("inf") if lat is None else lat
    group = (cls.name, base.kind, base.main.site_resource, base.partner.site_resource if paired else None)
    name = cls.name

    def make(batch: int, capacity_rps: float, pair_bytes_per_s: float) -> Pending:
        return Pending(f"{head}|b{batch}{tail}", base, name, steps, float(capacity_rps), units,
                        float(pair_bytes_per_s) if paired else 0.0, limit, batch, group)

    return make


def _evaluate_grid(out: Candidates, pend: list[Pending], ctx: Context, grid: Grid, cls: TrafficClass,
                   steps: list[str]) -> _Search | None:
    """Evaluate one grid; each batch that meets the class's SLOs and fits awaits pruning. Returns the search
    for a better integer batch, with the most it can find, when the grid has batches around a feasible one."""
    base, lat = grid.config, grid.pair_latency_s
    perf = evaluate(ctx, base, cls, batch=grid.batches, pair_latency_s=lat or 0.0, memo=out.memo)
    ok = perf.ok(cls)
    feasible = np.flatnonzero(ok).tolist()
    out.generated += len(grid.batches)
    out.feasible += len(feasible)
    if not feasible:  # nothing awaits pruning, and there is no best batch to search around
        return None
    names = _name_around_batch(base, lat)
    # Python scalars of the arrays once (float() of an element of each, as for one batch).
    caps, pairs = np.asarray(perf.capacity_rps).tolist(), np.asarray(perf.pair_bytes_per_s).tolist()
    batches = grid.batches.astype(int).tolist()
    make = _grid_pending(names, grid, cls, steps)
    pend.extend(make(batches[i], caps[i], pairs[i]) for i in feasible)
    if len(grid.batches) < 2 or base.partner is not None or not pool_kind(base.kind).batch_search:
        # Paired replicas keep the grid (their extra columns made pair-hub MILPs far slower in CBC), and so
        # do prefill replicas: their capacity is not unimodal in the prompts per step (bulk-service waits).
        return None
    i = best_index(perf, ok)
    if i is None:
        return None
    bound = make(batches[i], caps[i], pairs[i])
    bound.capacity = capacity_bound(perf, ok, grid.batches, cls.output_tokens)
    loads = np.asarray(perf.pair_bytes_per_s)[ok][np.argsort(np.asarray(perf.capacity_rps)[ok], kind="stable")]
    if (np.diff(loads) < 0).any():  # pair traffic not growing with capacity: assume none at the best batch
        bound.pair_bytes_per_s = 0.0
    return _Search(grid, cls, steps, perf, ok, bound)


@dataclass
class _SetBlock:
    """A :class:`~placement.core.modes.base.GridSet` of ``cls`` evaluated: capacity and pair traffic of shape
    (configurations, latencies, batches), and which entries meet the SLOs and fit (``ok``).

    Its candidates are made only when asked for (:meth:`pending`): pruning network-free needs only those
    near the best capacity of their size (:meth:`near_fastest`).
    """

    grids: GridSet
    cls: TrafficClass
    steps: list[str]
    capacity_rps: np.ndarray
    pair_bytes_per_s: np.ndarray
    ok: np.ndarray

    def pending(self, among: np.ndarray | None = None) -> list[Pending]:
        """The candidates of the feasible entries (of those of ``among`` too, if given), in the order of the
        set's grids, each grid's batches ascending: what :func:`_evaluate_grid` makes of the grids."""
        take = self.ok if among is None else self.ok & among
        grids, out = self.grids, []
        batches = grids.batches.astype(int).tolist()
        for c, l_ in zip(*np.nonzero(take.any(axis=2)), strict=True):
            grid = Grid(grids.configs[c], grids.stage, grids.batches, grids.pair_latencies_s[l_])
            make = _grid_pending(_name_around_batch(grid.config, grid.pair_latency_s), grid, self.cls, self.steps)
            caps, pairs = self.capacity_rps[c, l_].tolist(), self.pair_bytes_per_s[c, l_].tolist()
            out.extend(make(batches[i], caps[i], pairs[i]) for i in np.flatnonzero(take[c, l_]).tolist())
        return out

    def near_fastest(self) -> list[Pending]:
        """The candidates :func:`_fastest` may keep, and the fastest of each size: the feasible ones within
        :data:`~solvers.dominance.RTOL` of the best capacity of their size (parts' chips), in
        :meth:`pending` order. :func:`_fastest` of them (with the other groups' candidates) is
        :func:`_fastest` of all: the fastest of each size is among them, and so is every candidate it
        keeps (``best − capacity ≤ RTOL·capacity``, computed as it does)."""
        sizes: dict[tuple[int, int], int] = {}
        size_of = np.array([sizes.setdefault((c.main.chips, c.partner.chips), len(sizes))
                            for c in self.grids.configs], dtype=np.intp)
        cap = np.where(self.ok, self.capacity_rps, -np.inf)
        best = np.full(len(sizes), -np.inf)
        np.maximum.at(best, size_of, cap.max(axis=(1, 2)))
        near = best[size_of][:, None, None] - self.capacity_rps <= RTOL * self.capacity_rps
        return self.pending(near)


def _evaluate_set(out: Candidates, ctx: Context, grids: GridSet, cls: TrafficClass,
                  steps: list[str]) -> _SetBlock | None:
    """Evaluate a set of paired grids as one array (:meth:`GridSet.evaluate`); None if no entry is feasible.
    The counts are what evaluating its grids one at a time adds."""
    perf = grids.evaluate(ctx, cls, out.memo)
    ok = perf.ok(cls)
    feasible = int(np.count_nonzero(ok))
    out.generated += ok.size
    out.feasible += feasible
    if not feasible:
        return None
    return _SetBlock(grids, cls, steps, np.asarray(perf.capacity_rps), np.asarray(perf.pair_bytes_per_s), ok)


def _worth_searching(searches: list[_Search], kept: list[Pending]) -> list[_Search]:
    """The searches whose bound no kept column of its group dominates (within the dominance tolerances),
    each with its peers: those of its group and pair latency, searched together (:func:`_search`)."""
    groups: dict[tuple, list[Pending]] = {}
    for p in kept:
        groups.setdefault(_group_key(p), []).append(p)
    out = []
    for s in searches:
        g = groups.get(_group_key(s.bound), [])
        if len(g) and len(s.bound.units) == len(g[0].units):
            m = copies(np.array([s.bound.units]), np.array([p.units for p in g]))[0]
            cap = np.array([p.capacity for p in g])
            load = np.array([p.pair_bytes_per_s for p in g])
            limit = np.array([p.pair_max_latency_s for p in g])
            hit = ((m > 0) & (m * cap >= s.bound.capacity * (1 - RTOL))
                   & (m * load <= s.bound.pair_bytes_per_s * (1 + RTOL) + LOAD_ATOL)
                   & (limit >= s.bound.pair_max_latency_s))
            if hit.any():
                continue
        out.append(s)
    peers: dict[tuple, list[_Search]] = {}
    for s in out:
        s.peers = peers.setdefault((_group_key(s.bound), s.grid.pair_latency_s), [])
        s.peers.append(s)
    return out


def _search(out: Candidates, ctx: Context, s: _Search) -> list[Pending]:
    """The candidate at the best integer batch of a search, if it is not a grid batch (it replaces the best
    grid batch's, ``s.bound.name``: a configuration keeps as many columns as its grid gave).

    The first search of its peers asked for searches them all, in one :func:`best_batches` call
    (``out.memo`` keeps the others' results until they are asked for).
    """
    lat = s.grid.pair_latency_s
    key = ("best batch", s.bound.name)
    if key not in out.memo:
        peers = s.peers or [s]
        rest = peers[next(k for k, p in enumerate(peers) if p is s):]
        found = best_batches(ctx, s.cls, [(p.grid.config, p.grid.batches, p.perf, p.ok) for p in rest], lat or 0.0,
                             out.memo)
        for p, best in zip(rest, found, strict=True):
            out.memo["best batch", p.bound.name] = best
    best = out.memo.pop(key)
    if best is None:
        return []
    out.generated += best[2]
    if best[0] in s.grid.batches[s.ok]:
        return []
    out.feasible += 1
    return [_pending(_name_around_batch(s.grid.config, lat), s.grid, s.cls, s.steps, best[0],
                     best[1].capacity_rps, best[1].pair_bytes_per_s)]


def _columns(group: list[Pending], network_free: bool = False) -> Columns:
    """The numbers dominance compares, ranked by name (equal columns: the first by name stays).

    ``network_free``: units and supply only, ranked by pair traffic (lowest first), then latency limit
    (highest first), then name — of tied columns the one the network constrains least stays.
    """
    order = sorted(group, key=_network_free_order if network_free else (lambda p: p.name))
    rank = {p.name: r for r, p in enumerate(order)}
    # One number each of supply, load and limit: flat lists, read as (n, 1) arrays.
    network = {} if network_free else {"load": [p.pair_bytes_per_s for p in group],
                                       "limit": [p.pair_max_latency_s for p in group]}
    return Columns.of(units=[p.units for p in group], supply=[p.capacity for p in group],
                      rank=[rank[p.name] for p in group], **network)


def _dominated(x: Pending, y: Pending) -> bool:
    """Whether y dominates x (:func:`solvers.dominance.dominates`; equal columns: the first by name stays)."""
    def row(p: Pending, other: Pending) -> Row:
        return Row(p.units, (p.capacity,), (p.pair_bytes_per_s,), (p.pair_max_latency_s,), int(p.name > other.name))

    return x is not y and dominates(row(y, x), row(x, y))


def _group_key(p: Pending) -> tuple:
    """Candidates compared for dominance: one class, kind and resources."""
    if p.group is not None:
        return p.group
    return p.cls, p.cfg.kind, p.cfg.main.site_resource, p.cfg.partner.site_resource if p.cfg.partner else None


def prune_groups(pend: list[Pending]) -> list[list[Pending]]:
    """Candidates that may dominate each other (class, kind, resources), each best capacity per chip
    first (a few strong columns prune most of the rest quickly), then by name."""
    groups: dict[tuple, list[Pending]] = {}
    for p in pend:
        groups.setdefault(_group_key(p), []).append(p)
    return [sorted(sorted(groups[key], key=lambda p: p.name), key=lambda p: -p.capacity / sum(p.units))
            for key in sorted(groups, key=str)]


def _prune(pend: list[Pending], network_free: bool = False) -> list[Pending]:
    """The undominated candidates of every group, by name (``network_free``: see :func:`_columns`)."""
    kept = []
    for g in prune_groups(pend):
        kept.extend(g[i] for i in undominated(_columns(g, network_free), block=PRUNE_BLOCK))
    return sorted(kept, key=lambda p: p.name)


def class_candidates(ctx: Context, classes: list[TrafficClass], memo: dict, resource: str | None = None,
                      network_free_from: int | None = None) -> tuple[list[Pending], int, int, bool]:
    """The kept candidates of ``classes`` (each class is pruned and searched on its own), how many
    batches were evaluated and feasible, and whether two-part ones were pruned network-free; with
    ``resource``, of the configurations whose main part runs on it only (pruning groups and searches
    never mix main resources, so these are its share of the whole).

    Two-part candidates are pruned network-free (module docstring) when that keeps at least
    ``network_free_from`` candidates (0: always; None: never), else the same candidates the full way.
    """
    out = Candidates(memo=memo)
    pend: list[Pending] = []
    searches: list[_Search] = []
    blocks: list[_SetBlock] = []
    for cls in classes:
        for grid, steps in configurations(ctx, cls, out.memo, resource, sets=True):
            if isinstance(grid, GridSet):  # paired: no batch search
                if (block := _evaluate_set(out, ctx, grid, cls, steps)) is not None:
                    blocks.append(block)
            elif (s := _evaluate_grid(out, pend, ctx, grid, cls, steps)) is not None:
                searches.append(s)
    # Searches are of single-part configurations and re-prune only their groups: the pairs are apart.
    pairs = [p for p in pend if len(p.units) == 2]
    kept = _prune([p for p in pend if len(p.units) == 1])
    searched = [(s, p) for s in _worth_searching(searches, kept) for p in _search(out, ctx, s)]
    found = [p for _, p in searched]
    gone = {s.bound.name for s, _ in searched}  # the best batch takes the best grid batch's place
    touched = {_group_key(p) for p in found}  # only their groups can change
    kept = [p for p in kept if _group_key(p) not in touched] + _prune(
        [p for p in kept if _group_key(p) in touched and p.name not in gone] + found)
    if network_free_from is not None:
        # K0 is among the fastest: when they are too few, so is K0. A set's candidates far from its fastest
        # are never made (each set is whole groups: one class, kind and pair of resources).
        fastest = _fastest(pairs + [p for b in blocks for p in b.near_fastest()])
        if len(kept) + len(fastest) >= network_free_from:
            loose = _prune(fastest, network_free=True)
            if len(kept) + len(loose) >= network_free_from:
                return kept + loose, out.generated, out.feasible, bool(pairs or blocks)
    return kept + _prune(pairs + [p for b in blocks for p in b.pending()]), out.generated, out.feasible, False


def _network_free_order(p: Pending) -> tuple:
    """Rank of tied candidates network-free: the lowest pair traffic, the highest latency limit, the name."""
    return p.pair_bytes_per_s, -p.pair_max_latency_s, p.name


def _fastest(pend: list[Pending]) -> list[Pending]:
    """The candidates the fastest of their group and size does not dominate network-free.

    That fastest one (first by :func:`_network_free_order` among equals) is one copy in the other's
    chips serving at least as much, so it dominates every other unless they tie within
    :data:`~solvers.dominance.RTOL` and the other ranks first; dropping them first leaves
    :func:`_prune` the same survivors for a fraction of the comparisons.
    """
    best: dict[tuple, Pending] = {}
    for p in pend:
        key = (_group_key(p), p.units)
        b = best.get(key)
        if b is None or (-p.capacity, _network_free_order(p)) < (-b.capacity, _network_free_order(b)):
            best[key] = p
    out = []
    for p in pend:
        b = best[_group_key(p), p.units]
        if p is b or (b.capacity - p.capacity <= RTOL * p.capacity and _network_free_order(p) < _network_free_order(b)):
            out.append(p)
    return out


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off for the block (as it was after it).

    Generation allocates millions of acyclic objects (candidates, names, small arrays) that live until
    pruning; every full collection walks all of them, a quarter of generation's CPU time on the
    1,000-domain benchmark instance, and finds nothing to free. Reference counting still frees them.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
