"""The HTML plan report: one self-contained page (inline CSS and SVG, no script, no network).

Sections: the headline figures; the fleet with the pools on their domain groups and links coloured by
load (:mod:`placement.report.fleet`); cost and power by stage and chip; each class's route and each
pool's TTFT, TPOT and load against its limit, with their p10–p90 error bands and the SLO headroom
(:mod:`placement.report.bands`); the pools and the busy links; and, when given, the Pareto or sweep
chart of a ``pareto``/``sweep --json`` result.

Examples
--------
>>> from placement.core.plans.plan import ClassPlan, Plan
>>> plan = Plan(instance="t", status="optimal", objective="cost", cost_usd_per_hour=1.0, classes=[
...     ClassPlan(name="c", rate_rps=1, modes={"pd": 1.0}, ttft_ms=80, tpot_ms=20, ttft_slo_ms=100,
...               tpot_slo_ms=25)])
>>> page = render_html(plan)
>>> page.startswith("<!DOCTYPE html>") and 'id="slo"' in page and "<script" not in page
True
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import networkx as nx

from placement.core.plans.confidence import band_rows, loads_inside_bands, slos_inside_bands
from placement.core.plans.numbers import num, usd
from placement.core.plans.plan import Plan
from placement.report.bands import bands_legend, bands_svg
from placement.report.fleet import STAGE_COLOURS, fleet_svg, stage_colour
from placement.report.labels import axis_label
from placement.report.svg import PALETTE, Series, esc, hbars, line_chart, load_colour
from placement.studies.sweep import SweepResult

__all__ = ["render_html", "sweep_svg"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;padding:16px 24px;
color:#1f2328;background:#fff}
h1{font-size:22px;margin:4px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.kpis{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}.kpi{border:1px solid #d0d7de;border-radius:8px;padding:8px 14px}
.kpi b{display:block;font-size:18px}.kpi span{color:#57606a;font-size:12px}
.ok{color:#1a7f37}.bad{color:#cf222e}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{border:1px solid #d0d7de;padding:3px 8px;
text-align:right}th{background:#f6f8fa}td:first-child,th:first-child{text-align:left}
.scroll{overflow-x:auto;border:1px solid #eaeef2;border-radius:6px}
svg text{font-family:system-ui,sans-serif;font-size:11px;fill:#1f2328}
svg.chart,svg.bars{width:100%;max-width:760px;height:auto}svg.bands{width:100%;max-width:820px;height:auto}
svg.bands .class-name{font-size:12px;font-weight:600}svg.bands .row-label.inside{fill:#cf222e;font-weight:600}
svg.bands .track{stroke:#d0d7de}.chart-note{font-size:12px;color:#57606a;margin:4px 0 10px}
svg .grid{stroke:#eaeef2}svg .frame{fill:none;stroke:#8c959f}svg .title{font-size:13px;font-weight:600}
svg .axis-label{font-size:12px}svg .tick{font-size:10.5px;fill:#57606a}
svg.fleet .switch rect{fill:#57606a}svg.fleet .switch text{fill:#fff;font-weight:600}
svg.fleet .group>rect{fill:#f6f8fa;stroke:#8c959f}svg.fleet .group.used>rect{stroke:#1f2328;stroke-width:1.5}
svg.fleet .group .name{font-weight:600}svg.fleet .group .caption{fill:#57606a}
svg.fleet .pool text{fill:#fff;font-size:10.5px}
.legend-row{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;margin:6px 0}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
ul.notes{font-size:13px}
"""


def _kpis(plan: Plan) -> str:
    s = plan.solver
    items = [("status", plan.status + (", verified" if plan.verified else ", NOT verified")),
             ("$/h", usd(plan.cost_usd_per_hour)), ("chips", num(plan.chips)),
             ("kW", num(None if plan.power_w is None else plan.power_w / 1e3)),
             ("output tokens/s", num(plan.output_tokens_per_s)),
             ("$/M output tokens", num(plan.usd_per_million_output_tokens))]
    if plan.output_tokens_per_s and plan.power_w:
        items.append(("tokens/s per MW", num(plan.output_tokens_per_s / (plan.power_w / 1e6))))
    if plan.provenance is not None and plan.provenance.prices is not None:
        items.append(("chip prices", plan.provenance.prices))
    if s is not None:
        items.append(("solver", f"{s.backend} {s.status}, gap {num(s.gap)}"))
    cls = "ok" if plan.verified else "bad"
    return '<div class="kpis">' + "".join(
        f'<div class="kpi"><span>{esc(k)}</span><b{f" class={chr(34)}{cls}{chr(34)}" if k == "status" else ""}>'
        f"{esc(v)}</b></div>" for k, v in items) + "</div>"


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], css_id: str = "") -> str:
    ident = f' id="{esc(css_id)}"' if css_id else ""
    return (f"<table{ident}><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
            + "</tbody></table>")


def _breakdown(plan: Plan) -> str:
    """$/h and kW by stage, split by chip: two stacked-bar drawings and one table."""
    dollars: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    watts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    chips: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in plan.pools:
        dollars[p.stage][p.chip] += p.usd_per_hour
        watts[p.stage][p.chip] += p.power_w
        chips[p.stage][p.chip] += p.chips
    chip_names = sorted({c for d in dollars.values() for c in d})
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(chip_names)}
    stages = sorted(dollars)

    def bars(values: dict[str, dict[str, float]], scale: float, unit: str) -> str:
        return hbars([(st, [(c, values[st][c] / scale, colour[c]) for c in chip_names if values[st].get(c)])
                      for st in stages], unit)

    legend = '<div class="legend-row">' + "".join(
        f'<span><i class="sw" style="background:{colour[c]}"></i>{esc(c)}</span>' for c in chip_names) + "</div>"
    rows = [(st, c, num(chips[st][c]), usd(dollars[st][c]), num(watts[st][c] / 1e3))
            for st in stages for c in chip_names if c in dollars[st]]
    rows.append(("total", "", num(sum(p.chips for p in plan.pools)), usd(sum(p.usd_per_hour for p in plan.pools)),
                 num(sum(p.power_w for p in plan.pools) / 1e3)))
    return (legend + "<h3>$/h by stage</h3>" + bars(dollars, 1.0, "$/h") + "<h3>power by stage</h3>"
            + bars(watts, 1e3, "kW") + _table(("stage", "chip", "chips", "$/h", "kW"), rows, "breakdown"))


def sweep_svg(result: SweepResult) -> str:
    """The chart of a ``pareto`` result ($/M output tokens against tokens/s per user: each series'
    frontier as a line through its solved frontier points, its other solved points faded) or of a
    ``sweep`` ($/h of the optimum and chips by type, as steps, against the first swept value)."""
    if result.command == "pareto":
        series = []
        for i, s in enumerate(result.series):
            pts = [p for p in result.series_points(s) if p.ok and p.tokens_per_s_per_user is not None]
            front = sorted((p for p in pts if p.frontier), key=lambda p: p.tokens_per_s_per_user)
            rest = [p for p in pts if not p.frontier]
            colour = "#1f2328" if s == result.series[0] else PALETTE[i % len(PALETTE)]
            series.append(Series(s + " frontier", [p.tokens_per_s_per_user for p in front],
                                 [p.usd_per_million_output_tokens for p in front], colour))
            if rest:
                series.append(Series(s + " dominated", [p.tokens_per_s_per_user for p in rest],
                                     [p.usd_per_million_output_tokens for p in rest], colour, line=False, faded=True))
        ys = [p.usd_per_million_output_tokens for p in result.points if p.ok and p.usd_per_million_output_tokens]
        chart = line_chart(series, "interactivity: tokens/s per user", "$ per million output tokens",
                           title=f"{result.instance}: cost per token against interactivity",
                           log_y=bool(ys) and max(ys) / min(ys) > 20)
        empty = [s for s in result.series if not any(p.ok and p.tokens_per_s_per_user is not None
                                                     for p in result.series_points(s))]
        note = "Not drawn, no verified plan with a predicted TPOT at any point: " + ", ".join(empty)
        return chart + (f'<p class="chart-note">{esc(note)}</p>' if empty else "")
    first = result.axes[0]
    pts = sorted((p for p in result.points if p.ok and isinstance(p.values.get(first.label), (int, float))),
                 key=lambda p: p.values[first.label])
    xs = [p.values[first.label] for p in pts]
    label = axis_label(first.paths[0] if first.paths else first.label)
    cost = line_chart([Series("cost of the optimal plan ($/h)", xs, [p.cost_usd_per_hour for p in pts])],
                      label, "cost ($/h)", title=f"{result.instance}: sweep of {label}", log_x=first.log)
    chips = sorted({c for p in pts for c in p.chips_by_type})
    mix = line_chart([Series(c, xs, [p.chips_by_type.get(c, 0) for p in pts], PALETTE[i % len(PALETTE)], step=True)
                      for i, c in enumerate(chips)], label, "chips", title="chip mix (steps: each plan drawn halfway to its neighbours)",
                     log_x=first.log)
    return cost + mix


def _bands(plan: Plan) -> str:
    """The band chart, its key and what it rests on (nothing for a plan without classes)."""
    rows = band_rows(plan)
    if not rows:
        return ""
    banded = any(r.high is not None for r in rows)
    at = "nominal prediction" if plan.confidence is None else f"priced at confidence {plan.confidence:g}"
    why = ("bands: p10–p90 of the chip family's held-out error (benchmarks/CALIBRATION.md)" if banded else
           "no pool carries an error band (measured step times or capacities)")
    return (bands_legend(any(r.planned is not None for r in rows)) + bands_svg(rows)
            + f'<p class="chart-note">Stated values: {esc(at)}; {esc(why)}. A decode pool\'s TTFT is its wait for '
              "a slot, in its class's route.</p>")


def render_html(plan: Plan, graph: nx.DiGraph | None = None, sweep: SweepResult | None = None) -> str:
    """The whole report page for ``plan`` (``graph``: the instance's fleet graph, else drawn from the plan)."""
    stage_legend = "".join(f'<span><i class="sw" style="background:{stage_colour(s)}"></i>{esc(s)}</span>'
                           for s in sorted({p.stage for p in plan.pools} or STAGE_COLOURS))
    load_legend = "".join(f'<span><i class="sw" style="background:{load_colour(u)}"></i>{label}</span>'
                          for u, label in ((0, "idle"), (0.01, "1 %"), (0.5, "50 %"), (1.0, "100 % of capacity")))
    pools = [(p.id + (f" ↔ {p.paired_with}" if p.paired_with else ""), p.traffic_class, p.stage, p.chip,
              num(p.replicas), num(p.chips), p.layout, num(p.batch), f"{p.utilisation:.0%}" if p.part == 0 else "",
              num(p.ttft_ms), num(p.tpot_ms), usd(p.usd_per_hour),
              ", ".join(f"{s.site}×{s.replicas}" for s in p.sites)) for p in plan.pools]
    classes = [(c.name, num(c.rate_rps), ", ".join(f"{m} {w:.0%}" for m, w in c.modes.items()),
                num(c.ttft_ms), num(c.ttft_slo_ms), num(c.tpot_ms), num(c.tpot_slo_ms)) for c in plan.classes]
    busy = [(f"{lk.source} → {lk.target}", num(lk.load_bytes_per_s / 1e9), num(lk.capacity_bytes_per_s / 1e9),
             f"{lk.utilisation:.1%}") for lk in plan.links if lk.load_bytes_per_s > 0]
    loads = loads_inside_bands(plan)
    notes = [*(f"SLO inside the band: {line}" for line in slos_inside_bands(plan)),
             *([f"load beyond the p10 capacity: {'; '.join(loads)}"] if loads else []), *plan.notes,
             *(f"violation: {v}" for v in plan.violations), *plan.diagnosis]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>placement plan: {esc(plan.instance)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Plan for {esc(plan.instance)}</h1>", _kpis(plan),
        (f'<h2 id="fleet">Fleet and placement</h2><div class="legend-row">{stage_legend}</div>'
        f'<div class="legend-row">links: {load_legend}</div><div class="scroll">{fleet_svg(plan, graph)}</div>'),
        f'<h2 id="cost">Cost and power by stage and chip</h2>{_breakdown(plan)}',
        f'<h2 id="slo">Latency and load against the SLOs</h2>{_bands(plan)}'
        + _table(("class", "req/s", "modes", "TTFT ms", "TTFT SLO ms", "TPOT ms", "TPOT SLO ms"), classes, "classes"),
        '<h2 id="pools">Pools</h2><div class="scroll">'
        + _table(("pool", "class", "stage", "chip", "replicas", "chips", "layout", "batch", "util", "TTFT ms",
                  "TPOT ms", "$/h", "domain groups"), pools, "pool-table") + "</div>",
    ]
    if busy:
        parts.append('<h2 id="links">Links carrying traffic</h2>'
                     + _table(("link", "load GB/s", "capacity GB/s", "utilisation"), busy, "link-table"))
    if sweep is not None:
        parts.append(f'<h2 id="sweep">{esc(sweep.command.capitalize())} of {esc(sweep.instance)}</h2>'
                     + sweep_svg(sweep))
    if notes:
        parts.append('<h2 id="notes">Notes</h2><ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes)
                     + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
