"""What a plan's pools are, re-derived from their configurations and the instance alone.

Every field a consumer reads from a pool is recomputed here from its
``config`` (kind, layouts, batch), the catalogue chip, the domain group's
price and power, and the cost models (:func:`placement.core.replicas.evaluate.evaluate`):
nothing is taken from the pool's flat fields. The checks compare the plan
against these facts.

A paired configuration's capacity (the MILP's column capacity) was evaluated at
a *latency level*: one of the one-way path latencies between sites of its two
resources, at least the latency its pairs actually use. Its TTFT/TPOT, memory
and pair traffic are evaluated at the actual (worst) pair latency.

Examples
--------
>>> from placement.core.verify.facts import class_routes  # doctest: +SKIP
>>> class_routes(ctx, ctx.classes["chat"])                # doctest: +SKIP
{'aggregated': ('chat|aggregated|serve',), 'pd': ('chat|pd|prefill', 'chat|pd|decode')}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement.core.instance.context import Context
from placement.core.instance.schema import TrafficClass
from placement.core.modes.enabled import enabled_modes
from placement.core.modes.enabled import transfers as mode_transfers
from placement.core.modes.registry import pool_kind
from placement.core.plans.plan import STAGE_OF_KIND, Plan, Pool, replica_load_rps
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.replicas.pair_latencies import pair_latencies
from placement.core.replicas.queues import at_load

__all__ = ["RTOL", "PoolFacts", "class_routes", "close", "derive", "over", "pair_latency_of", "transfers"]

#: Relative slack for floating-point comparisons (solvers report ~1e-9 noise).
RTOL = 1e-6

#: Load (req/s) below which a step counts as not served (as the plan writer does).
SERVED_RPS = 1e-12


def over(value: float, limit: float) -> bool:
    """``value`` exceeds ``limit`` by more than the tolerance."""
    return value > limit * (1 + RTOL) + 1e-9


def close(a: float | None, b: float | None, abs_tol: float = 1e-9) -> bool:
    """Equal within :data:`RTOL` (both None counts as equal).

    Examples
    --------
    >>> close(1.0, 1.0 + 1e-9), close(1.0, 1.01), close(None, None), close(None, 0.0)
    (True, False, True, False)
    """
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) + abs_tol


def class_routes(ctx: Context, cls: TrafficClass) -> dict[str, tuple[str, ...]]:
    """Mode -> the steps of its route, for the modes the instance allows (:func:`placement.core.modes.enabled.enabled_modes`)."""
    return {m.name: tuple(str(s) for s in m.steps(cls.name)) for m in enabled_modes(ctx)}


def transfers(ctx: Context) -> dict[str, tuple[str, str, float]]:
    """Transfer name -> (source step, target step, bytes per request), from the modes' transfers."""
    return {t.id: (str(t.source), str(t.target), t.bytes_per_request) for t in mode_transfers(ctx)}


def pair_latency_of(ctx: Context, plan: Plan, column: str) -> float:
    """Worst one-way path latency among the pairs a paired column uses (0 if unpaired)."""
    lats = [ctx.routing.latency_s(p.source_site, p.target_site) for p in plan.pairs
            if p.column == column and p.replicas > 1e-9]
    return max(lats, default=0.0)


def _steps_of(ctx: Context, cfg: PoolConfig) -> tuple[str, ...]:
    """The route steps a configuration may serve (its column's capacity keys): the i-th replica kind of an
    enabled mode serves the i-th step of its route; measured columns serve the classes they were measured for."""
    if pool_kind(cfg.kind).measured:
        if "aggregated" not in ctx.instance.modes:
            return ()
        return tuple(sorted({f"{m.traffic_class}|aggregated|serve" for m in ctx.instance.measured_capacity
                             if m.chip == cfg.main.chip and m.chips == cfg.main.chips}))
    return tuple(sorted(str(step) for m in enabled_modes(ctx)
                        for kind, step in zip(m.kinds, m.steps(cfg.traffic_class), strict=False)
                        if kind.name == cfg.kind))


def _latency_levels(ctx: Context, cfg: PoolConfig) -> list[float]:
    """One-way path latencies between sites of a paired configuration's two resources (finite, rounded)."""
    return pair_latencies(ctx, cfg.main.site_resource, cfg.partner.site_resource)


@dataclass
class PoolFacts:
    """One pool as its configuration and the instance define it."""

    index: int
    pool: Pool
    layout: PartLayout
    stage: str
    steps: tuple[str, ...]
    replicas: int
    chips_per_replica: int
    usd_per_hour: float
    power_w: float
    latency_s: float = 0.0
    latency_level_s: float | None = None
    #: The column's capacity per step (at the latency level); {} for a partner part.
    capacity_rps: dict[str, float] = field(default_factory=dict)
    #: Per-replica capacity per step at the pairs' actual latency (what the loads must fit).
    actual_capacity_rps: dict[str, float] = field(default_factory=dict)
    ttft_ms: float | None = None
    busy: float = 0.0
    tpot_ms: float | None = None
    memory_per_chip_gb: float | None = None
    fits: bool = True
    #: Pair traffic per replica each way (bytes/s), at the actual latency and at the level.
    pair_bytes_per_s: float = 0.0
    level_pair_bytes_per_s: float = 0.0
    problem: str | None = None

    @property
    def chips(self) -> int:
        return self.replicas * self.chips_per_replica

    @property
    def main(self) -> bool:
        return self.pool.part == 0


def rated_latencies(plan: Plan) -> bool:
    """Whether the plan states its pools' waits at their rated capacity (layouts 1 and 2) rather than at its
    load (layout 3, :func:`placement.core.replicas.queues.at_load`)."""
    return plan.provenance is not None and plan.provenance.schema_version in ("1", "2")


def derive(ctx: Context, plan: Plan) -> list[PoolFacts]:
    """The facts of every pool of a well-formed plan (see ``check_configurations``), in plan order."""
    return [_pool_facts(ctx, plan, i, pool) for i, pool in enumerate(plan.pools)]


def _pool_facts(ctx: Context, plan: Plan, index: int, pool: Pool) -> PoolFacts:
    cfg = pool.config
    lay = cfg.main if pool.part == 0 else cfg.partner
    replicas = sum(s.replicas for s in pool.sites)
    f = PoolFacts(
        index=index, pool=pool, layout=lay, stage=STAGE_OF_KIND[cfg.kind][pool.part],
        steps=_steps_of(ctx, cfg) if pool.part == 0 else (), replicas=replicas, chips_per_replica=lay.chips,
        usd_per_hour=sum(s.replicas * lay.chips * ctx.sites[s.site].usd_per_hour_per_chip for s in pool.sites),
        power_w=sum(s.replicas * lay.chips * ctx.sites[s.site].chip.power_w for s in pool.sites),
        latency_s=pair_latency_of(ctx, plan, pool.column) if cfg.partner is not None else 0.0,
    )
    if cfg.kind == "measured":
        table = {f"{m.traffic_class}|aggregated|serve": m.max_rps_per_replica for m in ctx.instance.measured_capacity
                 if m.chip == lay.chip and m.chips == lay.chips}
        f.capacity_rps = {st: table[st] for st in f.steps}
        f.actual_capacity_rps = dict(f.capacity_rps)
        return f
    cls = ctx.classes[cfg.traffic_class]
    try:
        if rated_latencies(plan):  # a plan of layout 1 or 2 states its waits at capacity and no busy share
            perf = evaluate(ctx, cfg, cls, pair_latency_s=f.latency_s)
            f.busy = pool.busy
        else:
            with at_load(replica_load_rps(pool.sites)) as load:  # waits at the plan's load; capacities unchanged
                perf = evaluate(ctx, cfg, cls, pair_latency_s=f.latency_s)
            f.busy = round(load.busy, 6) if pool.part == 0 else 0.0
        level_perf, f.latency_level_s = perf, None
        if cfg.partner is not None:
            level_perf, f.latency_level_s = _level(ctx, cfg, cls, pool, f.latency_s, perf)
    except (ValueError, ArithmeticError) as e:
        f.problem = f"pool {pool.id}: its configuration cannot be evaluated ({e})"
        return f
    f.fits = bool(perf.fits)
    f.ttft_ms = float(perf.ttft_s) * 1e3 if pool.part == 0 else None
    f.tpot_ms = float(perf.tpot_s) * 1e3 if f.stage != "prefill" else None
    f.pair_bytes_per_s = float(perf.pair_bytes_per_s)
    f.level_pair_bytes_per_s = float(level_perf.pair_bytes_per_s)
    if pool.part == 0:
        f.memory_per_chip_gb = float(perf.memory_per_chip_bytes) / 1e9
        f.capacity_rps = {st: float(level_perf.capacity_rps) for st in f.steps}
        f.actual_capacity_rps = {st: float(perf.capacity_rps) for st in f.steps}
    return f


def _level(ctx: Context, cfg: PoolConfig, cls: TrafficClass, pool: Pool, latency_s: float, perf) -> tuple:
    """(performance, latency) at the level the column was built for: the level, at least the pairs' latency,
    whose capacity the plan claims; else the lowest such level (the field check then reports the claim)."""
    levels = [lat for lat in _latency_levels(ctx, cfg) if lat >= latency_s * (1 - 1e-9)]
    claimed = next(iter(pool.capacity_rps_per_replica.values()), None)
    best = None
    for lat in levels:
        p = evaluate(ctx, cfg, cls, pair_latency_s=lat)
        if best is None:
            best = (p, lat)
        if claimed is not None and close(float(p.capacity_rps), claimed):
            return p, lat
    return best if best is not None else (perf, latency_s)
