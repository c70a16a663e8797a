"""The heterogeneous plan beside every homogeneous fleet and every single mode.

Each row re-solves the instance with part of it removed: only the domain
groups of one chip type, or only one serving mode. The savings of the full
heterogeneous plan are read against these rows.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from placement.schema import Instance
from placement.solve import solve

__all__ = ["ComparisonRow", "compare", "variants"]


class ComparisonRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    kind: str
    status: str
    cost_usd_per_hour: float | None
    chips: int | None
    power_w: float | None
    usd_per_million_output_tokens: float | None
    modes: dict[str, float] = {}
    chips_by_type: dict[str, int] = {}


def variants(inst: Instance) -> list[tuple[str, str, Instance]]:
    """(label, kind, instance) for the full fleet, each chip type alone, each mode alone."""
    out = [("heterogeneous, all modes", "full", inst)]
    chips = sorted({d.chip for d in inst.hardware.domains})
    if len(chips) > 1:
        for chip in chips:
            doms = [d for d in inst.hardware.domains if d.chip == chip]
            hw = inst.hardware.model_copy(update={"domains": doms})
            measured = [m for m in inst.measured_capacity if m.chip == chip]
            out.append((f"only {chip}", "homogeneous",
                        inst.model_copy(update={"hardware": hw, "measured_capacity": measured})))
    if len(inst.modes) > 1:
        for mode in inst.modes:
            out.append((f"only mode {mode}", "mode", inst.model_copy(update={"modes": [mode]})))
    return out


def compare(inst: Instance, *, backend: str = "cbc", time_limit_s: float | None = None,
            source: str = "<instance>") -> list[ComparisonRow]:
    rows = []
    for label, kind, variant in variants(inst):
        plan = solve(variant, backend=backend, time_limit_s=time_limit_s, source=source)
        ok = plan.status in ("optimal", "feasible", "time_limit") and plan.verified
        rows.append(ComparisonRow(
            label=label, kind=kind, status=plan.status,
            cost_usd_per_hour=plan.cost_usd_per_hour if ok else None,
            chips=plan.chips if ok else None, power_w=plan.power_w if ok else None,
            usd_per_million_output_tokens=plan.usd_per_million_output_tokens if ok else None,
            modes={m: round(sum(c.modes.get(m, 0) * c.rate_rps for c in plan.classes), 9) for m in
                   sorted({m for c in plan.classes for m in c.modes})},
            chips_by_type=plan.chips_by_type,
        ))
    return rows
