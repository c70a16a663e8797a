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
from typing import TYPE_CHECKING

from costmodels.bands import PLAN_LEVELS, ChipBand, chip_band, framework_band, stage_metric
from costmodels.frameworks import DEFAULT_FRAMEWORK
from placement.core.plan import Plan, Pool, PoolBands
from placement.modes.registry import pool_kind

if TYPE_CHECKING:
    from placement.core.context import Context

__all__ = ["PoolBands", "at_confidence", "pool_bands", "scaled", "slos_inside_bands", "with_framework"]


def scaled(values, band: ChipBand, metric: str, levels=PLAN_LEVELS, nominal_factor: float = 1.0) -> list[float]:
    """Each of ``values`` (one nominal-scaled prediction) at every level: ``v / nominal_factor · q(level)``.

    For ``throughput`` a low level is the pessimistic end: the p10 capacity is the 10 % quantile of
    measured ÷ predicted throughput.
    """
    return [round(float(v) / nominal_factor * band.factor(metric, lv), 9) for v in values for lv in levels]


def with_framework(band: ChipBand, framework: str) -> ChipBand:
    """``band`` with its TTFT quantiles replaced by the serving framework's band (calibrated chips only;
    ``pooled``, or a framework without a band, leaves it unchanged), as :func:`placement.core.evaluate.step_factor`
    prices prefill steps."""
    fb = framework_band(framework)
    if fb is None or band.family == "uncalibrated" or tuple(fb[0]) != tuple(band.levels):
        return band
    return replace(band, provenance=f"{band.provenance}; TTFT: the {framework} framework band",
                   quantiles={**band.quantiles, "ttft": fb[1]})


def pool_bands(pool: Pool, confidence: float | None, framework: str = DEFAULT_FRAMEWORK,
               own: ChipBand | None = None) -> PoolBands | None:
    """The bands of ``pool`` from its stated figures, or None for a pool priced from measurements.

    ``own`` is the calibration overlay's band of the pool's chip (:func:`placement.core.calibration_overlay.
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
    from placement.core.context import Context

    given = ctx.instance if ctx.given is None else ctx.given
    return Context.of(given.model_copy(update={"confidence": plan.confidence}), ctx.source)


def slos_inside_bands(plan: Plan) -> list[str]:
    """One sentence per pool whose p90 TTFT or TPOT lies beyond its class's SLO: the SLO is inside the pool's
    p10–p90 band, so about one deployment in ten like it would miss it (prefill and aggregated pools' TTFT;
    a decode pool's is a slot wait, not the class's).

    Examples
    --------
    >>> from placement.core.plan import Plan
    >>> slos_inside_bands(Plan(instance="x", status="infeasible", objective="cost"))
    []
    """
    slo = {c.name: c for c in plan.classes}
    out = []
    for p in plan.pools:
        c, b = slo.get(p.traffic_class), p.bands
        if c is None or b is None:
            continue
        if b.tpot_ms and b.tpot_ms[-1] > c.tpot_slo_ms * (1 + 1e-9):
            out.append(f"{p.id} ({p.chip}, {c.name}): TPOT p90 {b.tpot_ms[-1]:.3g} ms > SLO {c.tpot_slo_ms:g} ms")
        if b.ttft_ms and p.stage in ("prefill", "aggregated") and b.ttft_ms[-1] > c.ttft_slo_ms * (1 + 1e-9):
            out.append(f"{p.id} ({p.chip}, {c.name}): TTFT p90 {b.ttft_ms[-1]:,.4g} ms > SLO {c.ttft_slo_ms:g} ms")
    return out
