"""The cost of confidence: one instance solved at several error-band levels (``solve --confidence``).

Each level prices every roofline step at that quantile of its chip family's
held-out ``measured ÷ predicted`` ratio (:mod:`costmodels.bands`), so the plan
at 0.9 meets its SLOs if the real system is no slower than nine held-out
measurements in ten were. The table says what that insurance costs.

Run: ``python benchmarks/confidence_cost.py instances/agentic-coding.yaml`` (prints a Markdown table).

Examples
--------
>>> from placement.core.plans.plan import Plan
>>> rows = [ConfidenceRow(None, Plan(instance="x", status="optimal", objective="cost", cost_usd_per_hour=10.0))]
>>> print(markdown(rows).splitlines()[2])
| nominal | optimal | 10.00 | – | – |
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.core.instance.schema import Instance
from placement.core.plans.plan import Plan

__all__ = ["DEFAULT_LEVELS", "ConfidenceRow", "cost_of_confidence", "markdown"]

#: Levels the study solves at besides the nominal plan.
DEFAULT_LEVELS = (0.5, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class ConfidenceRow:
    """One solve: its level (None: nominal) and plan."""

    confidence: float | None
    plan: Plan


def cost_of_confidence(instance: Instance, levels=DEFAULT_LEVELS, backend: str = "highs",
                       source: str = "<instance>") -> list[ConfidenceRow]:
    """The nominal plan of ``instance`` and one plan per level, in that order."""
    from placement.core.pipeline.solve import solve

    return [ConfidenceRow(c, solve(instance.model_copy(update={"confidence": c}), backend=backend, source=source))
            for c in (None, *levels)]


def markdown(rows: list[ConfidenceRow]) -> str:
    """Cost, chips and the ratio to the nominal plan per level, as a Markdown table."""
    base = rows[0].plan.cost_usd_per_hour if rows else None
    lines = ["| confidence | status | $/h | × nominal | chips |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        cost = r.plan.cost_usd_per_hour
        rel = f"{cost / base:.2f}" if cost is not None and base and r.confidence is not None else "–"
        lines.append(f"| {'nominal' if r.confidence is None else f'{r.confidence:g}'} | {r.plan.status} | "
                     f"{'–' if cost is None else f'{cost:.2f}'} | {rel} | "
                     f"{'–' if r.plan.chips is None else r.plan.chips} |")
    return "\n".join(lines)
