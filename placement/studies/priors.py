"""Verdicts across their priors: an instance with every uncalibrated chip at the low, nominal or high end of
its prior (:mod:`costmodels.priors`), and the heterogeneous-vs-homogeneous comparison at each.

``placement compare INSTANCE --priors low|nominal|high`` solves the comparison at one level;
:func:`sensitivity` at all three, for ``benchmarks/priors.py``: a verdict ("the mix saves X % against the
best single chip type") *holds* when it has the same sign at every level.

Examples
--------
>>> from placement.core.instance.loading import load_instance
>>> inst = with_priors(load_instance("instances/rubin-lpx-deepseek.yaml"), "low")
>>> rubin = next(c for c in inst.hardware.chips if c.name == "rubin")
>>> rubin.step_overhead_s, rubin.layer_overhead_s, rubin.allreduce_efficiency  # slowest peer's fixed pair
(0.000539, 4.24e-05, 0.314)
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.priors import Level, at_prior, prior_range
from placement.core.instance.loading import chips_of, parse_instance
from placement.core.instance.schema import Instance
from placement.core.plans.plan import Comparison
from solvers.backends import DEFAULT_BACKEND

__all__ = ["PriorVerdict", "prior_chips", "sensitivity", "with_priors"]


def prior_chips(inst: Instance) -> dict[str, dict[str, tuple[float, float, float]]]:
    """The fleet's chips that carry priors (uncalibrated, not the instance's own records): chip -> ranges."""
    chips = chips_of(inst)
    own = {c.name for c in inst.hardware.chips}
    return {name: r for name in sorted({d.chip for d in inst.hardware.domains}) if name not in own
            and (r := prior_range(chips[name], chips))}


def with_priors(inst: Instance, level: Level) -> Instance:
    """``inst`` with every chip of :func:`prior_chips` at ``level`` of its prior (as ``hardware.chips``
    records based on the catalogue's; ``nominal`` returns ``inst`` itself)."""
    if level == "nominal":
        return inst
    chips = chips_of(inst)
    extra = [{"name": name, "base": name, **at_prior(chips[name], chips, level)} for name in prior_chips(inst)]
    if not extra:
        return inst
    doc = inst.model_dump(mode="json", by_alias=True, exclude_none=True)
    doc["hardware"]["chips"] = [*doc["hardware"].get("chips", []), *extra]
    return parse_instance(doc, f"<{inst.name} at {level} priors>")


@dataclass(frozen=True)
class PriorVerdict:
    """The comparison at one prior level: the mix's objective value, the best single chip type's, and the
    saving ``1 − mix / best single`` (None where either is infeasible)."""

    level: str
    mix: float | None
    best_single: str | None
    best_single_value: float | None
    saving: float | None
    rows: list[Comparison]


def sensitivity(inst: Instance, *, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
                source: str = "<instance>") -> list[PriorVerdict]:
    """:func:`placement.studies.compare.compare` at the low, nominal and high priors."""
    from placement.studies.compare import compare

    out = []
    for level in ("low", "nominal", "high"):
        rows = compare(with_priors(inst, level), backend=backend, time_limit_s=time_limit_s, source=source)
        full = next(r for r in rows if r.kind == "full")
        singles = [r for r in rows if r.kind == "homogeneous" and r.savings is not None]
        best = min(singles, key=lambda r: r.savings, default=None)  # the smallest saving: the cheapest single type
        value = None if best is None else (full_value(full) / (1 - best.savings) if full_value(full) else None)
        out.append(PriorVerdict(level, full_value(full), None if best is None else best.label.removeprefix("only "),
                                value, None if best is None else best.savings, rows))
    return out


def full_value(row: Comparison) -> float | None:
    """The objective value of a comparison row in the instance's objective (None when it was not solved)."""
    return {"cost": row.cost_usd_per_hour, "power": row.power_w, "chips": row.chips}[row.savings_of]
