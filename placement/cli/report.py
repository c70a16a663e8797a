"""Rich tables for plans and comparisons (friendly units at the edge)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from placement.core.instance.objectives import objective
from placement.core.plans.numbers import num, usd
from placement.core.plans.plan import Plan

__all__ = ["print_comparison", "print_plan"]


def _ms(x: float | None) -> str:
    """Milliseconds as the tables give them: ``<0.01`` below a hundredth (a wait that all but never happens).

    Examples
    --------
    >>> [_ms(x) for x in (1234.5, 12.345, 9.96e-09, 0.0, None)]
    ['1,234', '12.3', '<0.01', '0', '-']
    """
    return num(x, floor=0.01)


def _banded(value, band) -> str:
    """A pool's stated TPOT or TTFT with its p10–p90 band, ``12.3 [9.1–21]``, or just the value."""
    if value is None or not band:
        return _ms(value)
    return f"{_ms(value)} [{_ms(band[0])}–{_ms(band[-1])}]"


def print_plan(console: Console, plan: Plan) -> None:
    s = plan.solver
    head = f"[bold]{plan.instance}[/bold]: {plan.status}"
    if plan.cost_usd_per_hour is not None:
        head += (f" — ${usd(plan.cost_usd_per_hour)}/h, {num(plan.chips)} chips, {num(plan.power_w / 1e3)} kW, "
                 f"${num(plan.usd_per_million_output_tokens)}/M output tokens")
    console.print(head, highlight=False)
    for note in plan.notes:
        console.print(f"  note: {note}", highlight=False, markup=False)
    if plan.pools:
        t = Table(title="pools")
        for col in ("pool", "class", "stage", "chip", "replicas", "chips", "layout", "batch", "util (busy)",
                    "TTFT ms", "TPOT ms", "$/h", "domain groups"):
            t.add_column(col)
        for p in plan.pools:
            t.add_row(p.id + (f"↔{p.paired_with}" if p.paired_with else ""), p.traffic_class, p.stage, p.chip,
                      num(p.replicas), num(p.chips), p.layout, num(p.batch),
                      f"{p.utilisation:.0%} ({p.busy:.0%})" if p.part == 0 else "",
                      ("wait " if p.stage != "prefill" and p.stage != "aggregated" and p.ttft_ms is not None else "")
                      + _banded(p.ttft_ms, p.bands and p.bands.ttft_ms), _banded(p.tpot_ms, p.bands and p.bands.tpot_ms),
                      usd(p.usd_per_hour), ", ".join(f"{x.site}×{x.replicas}" for x in p.sites))
        console.print(t)
        if any(p.bands for p in plan.pools):
            at = "nominal prediction" if plan.confidence is None else f"priced at confidence {plan.confidence:g}"
            own = plan.provenance.calibration if plan.provenance else None
            console.print(f"TTFT / TPOT: {at} [p10–p90 band of the chip family's held-out error, "
                          "benchmarks/CALIBRATION.md" + (f"; the chips of the calibration overlay {own}: its bands, "
                                                         "from your measurements" if own else "") + "]",
                          highlight=False, markup=False)
            from placement.cli.bands import print_bands
            from placement.core.plans.confidence import (
                band_rows,
                loads_inside_bands,
                slos_inside_bands,
            )

            print_bands(console, band_rows(plan))
            for line in slos_inside_bands(plan):
                console.print(f"[yellow]SLO inside the band:[/yellow] {escape(line)}", highlight=False)
            loads = loads_inside_bands(plan)
            if loads:
                console.print(f"[yellow]load beyond the p10 capacity:[/yellow] {escape('; '.join(loads))}",
                              highlight=False)
        console.print("TTFT at the plan's load, waits included (a decode pool's: its wait for a slot); util: load ÷ "
                      "rated capacity, the rate at which the SLOs hold with each server busy at most 90 % of the time; "
                      "busy: the busiest server's share of time working at the plan's load", highlight=False,
                      markup=False)
        measured = [f"{p.id} ({p.step_table})" for p in plan.pools if p.step_table]
        if measured:
            console.print(f"step times from measured tables: {', '.join(measured)}", highlight=False)
    if plan.classes:
        t = Table(title="classes")
        for col in ("class", "req/s", "modes", "TTFT ms (SLO)", "TPOT ms (SLO)"):
            t.add_column(col)
        for c in plan.classes:
            t.add_row(c.name, num(c.rate_rps), ", ".join(f"{m} {w:.0%}" for m, w in c.modes.items()),
                      f"{_ms(c.ttft_ms)} ({num(c.ttft_slo_ms)})", f"{_ms(c.tpot_ms)} ({num(c.tpot_slo_ms)})")
        console.print(t)
    if plan.kv_policy is not None:
        from placement.cli.kv import print_kv

        print_kv(console, plan)
    busy = [lk for lk in plan.links if lk.load_bytes_per_s > 0]
    if busy:
        t = Table(title="links carrying traffic")
        for col in ("link", "load GB/s", "capacity GB/s", "util"):
            t.add_column(col)
        for lk in busy:
            t.add_row(f"{lk.source}→{lk.target}", num(lk.load_bytes_per_s / 1e9), num(lk.capacity_bytes_per_s / 1e9),
                      f"{lk.utilisation:.0%}")
        console.print(t)
    if s is not None:
        console.print(f"solver {s.backend}: {s.status}, objective {num(s.objective, 6)}, bound "
                      f"{num(s.best_bound, 6)}, gap {num(s.gap)}, {s.seconds:.2f} s "
                      f"(build {s.build_seconds:.2f} s), {num(s.variables)} vars ({num(s.integer_variables)} int), "
                      f"{num(s.constraints)} rows, {num(s.nonzeros)} nz", highlight=False)
    if plan.candidates is not None:
        c = plan.candidates
        console.print(f"candidates: {num(c.generated)} generated, {num(c.feasible)} meet SLOs and fit, {num(c.kept)} "
                      "kept after dominance pruning", highlight=False)
    if plan.comparisons:
        print_comparison(console, plan.comparisons)
    if plan.verified:
        console.print("[green]verified[/green]: every constraint re-derived from the cost models holds")
    for v in plan.violations:
        console.print(f"[red]violation:[/red] {v}", highlight=False)


def print_comparison(console: Console, rows) -> None:
    t = Table(title="heterogeneous vs homogeneous fleets and single modes")
    saved = objective(rows[0].savings_of if rows else "cost").heading  # what the full plan saves is measured in
    for col in ("fleet / modes", "status", "$/h", "chips", "kW", "$/M out tok", saved):
        t.add_column(col)
    for r in rows:
        t.add_row(r.label, r.status, usd(r.cost_usd_per_hour), num(r.chips),
                  num(None if r.power_w is None else r.power_w / 1e3), num(r.usd_per_million_output_tokens),
                  "" if r.savings is None else f"{r.savings:.1%}")
    console.print(t)
    for r in rows:
        if r.reason:
            console.print(f"{r.label}: {r.status}: {r.reason}", markup=False, highlight=False, soft_wrap=True)
