"""Tables of the studies: sweeps and Pareto sweeps (:class:`~placement.studies.sweep.SweepResult`)
and marginal values (:class:`~placement.studies.marginal.MarginalResult`), on a rich console.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from placement.core.plans.numbers import num, usd, value
from placement.studies.marginal import MarginalResult
from placement.studies.sweep import MODE_LABELS, SweepResult

__all__ = ["mix", "print_marginal", "print_result"]


def mix(d: dict[str, Any], pct: bool = False) -> str:
    """A chip mix (``4×h100, 2×a100``) or, with ``pct``, mode shares (``PD 62%, aggregated 38%``).

    Examples
    --------
    >>> mix({"h100": 4, "a100": 2}), mix({"pd": 0.62, "aggregated": 0.38, "pd-af": 0.001}, pct=True)
    ('4×h100, 2×a100', 'PD 62%, aggregated 38%')
    """
    if pct:
        return ", ".join(f"{MODE_LABELS.get(k, k)} {v:.0%}" for k, v in d.items() if v >= 0.005)
    return ", ".join(f"{v}×{k}" for k, v in d.items())


def print_result(console: Console, result: SweepResult) -> None:
    """The points of a sweep or Pareto sweep: one row per point and series, failures in red."""
    title = (f"{result.command} of {result.instance}: " + ", ".join(f"{a.label} × {len(a.values)}"
                                                                   for a in result.axes)
             + (f" (classes {', '.join(result.focus_classes)})" if result.command == "pareto" else ""))
    t = Table(title=title)
    cols = (["series"] if len(result.series) > 1 else []) + [a.label.split(".")[-1] if result.command == "pareto"
                                                              else a.label for a in result.axes]
    pareto = result.command == "pareto"
    cols += ["status", "$/h", "$/M tok", "tok/s/chip", "tok/s/user", "kW", "chips by type", "modes"]
    cols += ["frontier"] if pareto else []
    for c in cols:
        t.add_column(c, overflow="fold")
    for p in result.points:
        row = ([p.series] if len(result.series) > 1 else []) + [value(p.values.get(a.label)) for a in result.axes]
        if p.ok:
            row += [p.status, usd(p.cost_usd_per_hour), num(p.usd_per_million_output_tokens),
                    num(p.tokens_per_s_per_chip), num(p.tokens_per_s_per_user),
                    num(None if p.power_w is None else p.power_w / 1e3), mix(p.chips_by_type),
                    mix(p.modes, pct=True)]
            row += [("★" if p.frontier else "") + ("◆" if p.frontier_throughput else "")
                    + (" H" if p.envelope else "")] if pareto else []
        else:
            row += [Text(p.status, style="red" if p.status in ("failed", "error") else "")] + [""] * 6
            row += [Text(p.message[:100])] + ([""] if pareto else [])
        t.add_row(*row)
    console.print(t)
    if pareto:
        console.print("★ cheapest $/M tokens at its interactivity (cost frontier of its series); "
                      "◆ most tokens/s per chip at its interactivity (throughput frontier of its series); "
                      "H on the heterogeneous instance's cost frontier (over every series' plans: each is also "
                      "a plan of the instance)", highlight=False)
    failed = [p for p in result.points if p.status in ("failed", "error")]
    if failed:
        console.print(f"[red]{len(failed)} point(s) failed[/red]; they are listed above and in the outputs")
    for w in result.warnings:
        console.print(Text("warning: " + w, style="yellow"))


def print_marginal(console: Console, result: MarginalResult) -> None:
    """The base optimum, one row per fleet change with its Δ $/h and Δ $/M tokens, the method and warnings."""
    head = f"[bold]{result.instance}[/bold]: base optimum "
    head += ("-" if result.base_cost_usd_per_hour is None else f"${usd(result.base_cost_usd_per_hour)}/h, "
             f"${num(result.base_usd_per_million_output_tokens)}/M output tokens")
    if result.plan_cost_usd_per_hour is not None:
        head += f" (plan: ${usd(result.plan_cost_usd_per_hour)}/h)"
    console.print(head, highlight=False)
    t = Table(title="marginal value of fleet changes (negative Δ = saves money)")
    for c in ("change", "target", "what", "use in plan", "status", "$/h", "Δ $/h", "Δ $/M tok", "chips by type",
              "modes", "method"):
        t.add_column(c, overflow="fold")
    for r in result.rows:
        use = ("" if r.utilisation is None else f"{r.utilisation:.0%}" if r.utilisation >= 0.01 or not r.utilisation
               else f"{r.utilisation:.2%}") if r.kind in ("uplink", "link") else \
            ("" if r.chips_used is None else f"{r.chips_used} chips")
        d = "-" if r.delta_usd_per_hour is None else f"{r.delta_usd_per_hour:+,.2f}"
        dm = "-" if r.delta_usd_per_million_output_tokens is None else f"{r.delta_usd_per_million_output_tokens:+.3f}"
        t.add_row(r.kind, r.target, r.change, use, r.status, usd(r.cost_usd_per_hour), d, dm,
                  mix(r.chips_by_type), mix(r.modes, pct=True), r.method)
    console.print(t)
    console.print("method: " + result.method, markup=False, emoji=False, highlight=False, soft_wrap=True)
    for w in result.warnings:
        console.print("warning: " + w, style="yellow", markup=False, emoji=False, highlight=False, soft_wrap=True)
