"""Why an instance has no plan: the shortfalls, in words a capacity planner can act on.

Two passes. First, per class: if no candidate configuration meets its SLOs in
any allowed mode, say so and name the closest miss (the chip and configuration
with the lowest TPOT / TTFT the cost models found). Second, an elastic version
of the MILP in which each class may leave demand unserved at a large penalty
(see :func:`solvers.milp.solve` with ``elastic=True``): the unserved rate per
class is the shortfall, reported as a share of its demand, together with the
binding fleet limits.
"""

from __future__ import annotations

from placement.candidates import Candidates
from placement.context import Context
from solvers.problem import Problem

__all__ = ["diagnose"]


def diagnose(ctx: Context, problem: Problem, cands: Candidates, backend: str = "cbc") -> list[str]:
    """Sentences naming what is short; never empty for an infeasible instance."""
    out: list[str] = []
    served_steps = {s for c in problem.columns for s in c.capacity}
    for route in problem.routes:
        missing = [s for s in route.steps if s not in served_steps]
        if missing:
            cls, mode = route.name.split("|", 1)
            stages = ", ".join(s.split("|")[-1] for s in missing)
            out.append(f"class {cls}: no chip in the fleet meets its SLOs for mode {mode} ({stages})")
    servable = {r.demand for r in problem.routes if all(s in served_steps for s in r.steps)}
    for d in problem.demands:
        if d.name not in servable:
            c = ctx.classes[d.name]
            out.append(f"class {d.name}: no serving mode can meet TTFT {c.ttft_ms} ms and TPOT {c.tpot_ms} ms "
                       "on any chip of the fleet")
    if not out:
        out.extend(_shortfalls(problem, backend))
    if not out:
        out.append("the MILP is infeasible but no single class, chip or link shortfall was isolated")
    return out


def _shortfalls(problem: Problem, backend: str) -> list[str]:
    from solvers.milp import elastic_shortfall

    try:
        short = elastic_shortfall(problem, backend=backend)
    except Exception as e:  # noqa: BLE001 - a diagnosis must not crash the CLI
        return [f"elastic diagnosis failed: {e}"]
    out = []
    rates = {d.name: d.rate for d in problem.demands}
    for name, missing in sorted(short.items()):
        if missing > 1e-9:
            out.append(f"class {name}: the fleet can serve only {rates[name] - missing:.4g} of {rates[name]:.4g} "
                       f"req/s ({missing / rates[name]:.0%} short) under its chips, links and limits")
    return out
