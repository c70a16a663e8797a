"""Error bands on a plan's pools, and the context a plan made at a confidence level is checked in.

Every roofline pool of a plan carries :class:`PoolBands`: its TPOT, TTFT and
capacity at the levels :data:`costmodels.bands.PLAN_LEVELS` (p10 / p50 / p90)
of its chip family's held-out ``measured ÷ predicted`` ratios
(:mod:`costmodels.bands`). The band is multiplicative around the *nominal*
prediction (the one at no confidence): a plan solved with ``--confidence c``
states step times already scaled by the family's ``c`` quantile, so the nominal
is the stated value divided by that factor, and the stated TPOT is the band's
value at ``c``. Capacity is banded by the throughput residuals (a p10 capacity
is the capacity nine measurements in ten met or beat).

Pools whose step times are not the roofline's — measured step tables or
measured capacities — carry no band: their numbers are measurements, not
predictions of the model the bands describe.

Examples
--------
>>> from costmodels.bands import chip_band
>>> b = scaled([10.0], chip_band("h100"), "tpot", (0.1, 0.9))
>>> b[0] < 10.0 < b[1] or b
True
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from costmodels.bands import PLAN_LEVELS, ChipBand, chip_band, framework_band, stage_metric
from costmodels.frameworks import DEFAULT_FRAMEWORK
from placement.core.modes.registry import pool_kind
from placement.core.plans.numbers import num
from placement.core.plans.plan import Plan, Pool, PoolBands
from topology.records import Record

if TYPE_CHECKING:
    from placement.core.instance.context import Context

__all__ = ["BandRow", "PoolBands", "at_confidence", "band_rows", "loads_inside_bands", "pool_bands", "scaled",
           "slos_inside_bands", "with_framework"]


def scaled(values, band: ChipBand, metric: str, levels=PLAN_LEVELS, nominal_factor: float = 1.0) -> list[float]:
    """Each of ``values`` (one nominal-scaled prediction) at every level: ``v / nominal_factor · q(level)``.

    For ``throughput`` a low level is the pessimistic end: the p10 capacity is the 10 % quantile of
    measured ÷ predicted throughput.
    """
    return [round(float(v) / nominal_factor * band.factor(metric, lv), 9) for v in values for lv in levels]


def with_framework(band: ChipBand, framework: str) -> ChipBand:
    """``band`` with its TTFT quantiles replaced by the serving framework's band (calibrated chips only;
    ``pooled``, or a framework without a band, leaves it unchanged), as :func:`placement.core.replicas.evaluate.step_factor`
    prices prefill steps."""
    fb = framework_band(framework)
    if fb is None or band.family == "uncalibrated" or tuple(fb[0]) != tuple(band.levels):
        return band
    return replace(band, provenance=f"{band.provenance}; TTFT: the {framework} framework band",
                   quantiles={**band.quantiles, "ttft": fb[1]})


def pool_bands(pool: Pool, confidence: float | None, framework: str = DEFAULT_FRAMEWORK,
               own: ChipBand | None = None) -> PoolBands | None:
    """The bands of ``pool`` from its stated figures, or None for a pool priced from measurements.

    ``own`` is the calibration overlay's band of the pool's chip (:func:`placement.core.instance.calibration_overlay.
    overlay_band`), which is used as it is; else ``framework`` (the instance's ``serving.framework``) selects
    the TTFT band of the chip family's: the framework's own when it has one.
    """
    cfg = pool.config
    if pool_kind(cfg.kind).measured or pool.step_table is not None:
        return None
    band = own or with_framework(chip_band(pool.chip), framework)
    level = confidence

    def factor(metric: str) -> float:
        return 1.0 if level is None else band.factor(metric, level)

    step = stage_metric(pool.stage)
    return PoolBands(
        levels=list(PLAN_LEVELS), family=band.family, provenance=band.provenance,
        tpot_ms=None if pool.tpot_ms is None else scaled([pool.tpot_ms], band, "tpot",
                                                         nominal_factor=factor("tpot")),
        ttft_ms=None if pool.ttft_ms is None else scaled([pool.ttft_ms], band, "ttft",
                                                         nominal_factor=factor(step)),
        capacity_rps_per_replica={st: scaled([c], band, "throughput", nominal_factor=1.0 / factor(step))
                                  for st, c in pool.capacity_rps_per_replica.items()},
    )


def at_confidence(ctx: Context, plan: Plan) -> Context:
    """``ctx`` with the plan's confidence level: a plan is checked at the level it was made for."""
    if plan.confidence == ctx.instance.confidence:
        return ctx
    from placement.core.instance.context import Context

    given = ctx.instance if ctx.given is None else ctx.given
    return Context.of(given.model_copy(update={"confidence": plan.confidence}), ctx.source)


class BandRow(Record):
    """One figure of a pool (or, with ``pool`` empty, of its class's route) against its limit, as the plan
    report and the printed plan draw it.

    ``figure`` TTFT or TPOT (ms) against the class's SLO as written (``limit``; ``planned`` is the
    SLO the plan was made to, the written one × ``slo_headroom``, when a headroom was set), or ``load``:
    the pool's load as a share of its capacity (``limit`` 1), whose band comes from the capacity band
    (its p90 share at the p10 capacity). ``low``/``mid``/``high`` are the figure at p10/p50/p90 of the
    chip family's error band, None for a pool priced from measurements.
    """

    pool: str
    chip: str
    traffic_class: str
    figure: Literal["TTFT", "TPOT", "load"]
    stated: float
    limit: float
    low: float | None = None
    mid: float | None = None
    high: float | None = None
    planned: float | None = None

    @property
    def inside(self) -> bool:
        """The limit lies inside the p10–p90 band: about one deployment in ten like it would miss it."""
        return self.high is not None and self.high > self.limit * (1 + 1e-9)

    def share(self, value: float) -> float:
        """``value`` as a share of the limit."""
        return value / self.limit


def band_rows(plan: Plan) -> list[BandRow]:
    """Per class, its route's TTFT and TPOT, then every pool's TTFT (prefill and aggregated pools: a decode
    pool's is a slot wait, not the class's), TPOT and load against its limit.

    Examples
    --------
    >>> from placement.core.plans.plan import Plan
    >>> band_rows(Plan(instance="x", status="infeasible", objective="cost"))
    []
    """
    headroom = (plan.provenance.slo_headroom if plan.provenance else None) or 1.0
    rows: list[BandRow] = []
    for c in plan.classes:
        slo = {"TTFT": c.ttft_slo_ms, "TPOT": c.tpot_slo_ms}
        figures = [("", "", "TTFT", c.ttft_ms, None), ("", "", "TPOT", c.tpot_ms, None)]
        for p in sorted((q for q in plan.pools if q.traffic_class == c.name), key=lambda q: q.id):
            b = p.bands
            figures += [(p.id, p.chip, "TTFT", p.ttft_ms if p.stage in ("prefill", "aggregated") else None,
                         b and b.ttft_ms), (p.id, p.chip, "TPOT", p.tpot_ms, b and b.tpot_ms)]
            load = _load_band(p)
            if load is not None:
                figures.append((p.id, p.chip, "load", p.utilisation, load))
        for pool, chip, figure, value, band in figures:
            if value is None:
                continue
            if figure == "load":
                rows.append(BandRow(pool=pool, chip=chip, traffic_class=c.name, figure=figure, stated=value,
                                    limit=1.0, **band))
            else:
                rows.append(BandRow(pool=pool, chip=chip, traffic_class=c.name, figure=figure, stated=value,
                                    limit=slo[figure] / headroom, planned=slo[figure] if headroom < 1 else None,
                                    **_levels(band)))
    return rows


def _load_band(p: Pool) -> dict[str, float | None] | None:
    """A pool's load as a share of its capacity at p90 / p50 / p10 capacity (low / mid / high), None for a
    partner part or a pool with no load or capacity stated."""
    if p.part != 0 or not p.capacity_rps_per_replica or p.utilisation <= 0:
        return None
    if p.bands is None:
        return {}
    step, stated = next(iter(p.capacity_rps_per_replica.items()))
    band = p.bands.capacity_rps_per_replica.get(step)
    if not band or stated <= 0 or min(band) <= 0:
        return {}
    return _levels([p.utilisation * stated / c for c in reversed(band)])  # p10 capacity: the highest share


def _levels(values: list[float] | None) -> dict[str, float]:
    """p10, p50 and p90 of a band given at :data:`PLAN_LEVELS` (nothing without one)."""
    return {} if not values else {"low": values[0], "mid": values[len(values) // 2], "high": values[-1]}


def slos_inside_bands(plan: Plan) -> list[str]:
    """One sentence per pool whose p90 TTFT or TPOT lies beyond its class's SLO as written: the SLO is inside
    the pool's p10–p90 band, so about one deployment in ten like it would miss it.

    Examples
    --------
    >>> from placement.core.plans.plan import Plan
    >>> slos_inside_bands(Plan(instance="x", status="infeasible", objective="cost"))
    []
    """
    return [f"{r.pool} ({r.chip}, {r.traffic_class}): {r.figure} p90 {num(r.high)} ms > SLO {num(r.limit)} ms"
            for r in band_rows(plan) if r.figure != "load" and r.inside]


def loads_inside_bands(plan: Plan) -> list[str]:
    """One sentence per pool whose load exceeds its p10 capacity: its capacity band reaches below the load.

    Examples
    --------
    >>> from placement.core.plans.plan import Plan
    >>> loads_inside_bands(Plan(instance="x", status="infeasible", objective="cost"))
    []
    """
    return [f"{r.pool} ({r.chip}, {r.traffic_class}): load {r.high:.0%} of its p10 capacity"
            for r in band_rows(plan) if r.figure == "load" and r.inside]
