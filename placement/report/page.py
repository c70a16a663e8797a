"""The HTML plan report: one self-contained page (inline CSS and SVG, no script, no network).

Sections: the headline figures; the fleet with the pools on their domain groups and links coloured by
load (:mod:`placement.report.fleet`); cost and power by stage and chip; each class's predicted TTFT
and TPOT against its SLO (with the error band when the class record carries one); the pools and the
busy links; and, when given, the Pareto or sweep chart of a ``pareto``/``sweep --json`` result.

Examples
--------
>>> from placement.core.plan import ClassPlan, Plan
>>> plan = Plan(instance="t", status="optimal", objective="cost", cost_usd_per_hour=1.0, classes=[
...     ClassPlan(name="c", rate_rps=1, modes={"pd": 1.0}, ttft_ms=80, tpot_ms=20, ttft_slo_ms=100,
...               tpot_slo_ms=25)])
>>> page = render_html(plan)
>>> page.startswith("<!DOCTYPE html>") and 'id="slo"' in page and "<script" not in page
True
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import networkx as nx

from placement.core.confidence import slos_inside_bands
from placement.core.plan import ClassPlan, Plan
from placement.report.fleet import STAGE_COLOURS, fleet_svg, stage_colour
from placement.report.labels import axis_label
from placement.report.svg import PALETTE, Series, esc, fmt, hbars, line_chart, load_colour
from placement.studies.sweep import SweepResult

__all__ = ["render_html", "slo_svg", "sweep_svg"]

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
svg.chart,svg.bars,svg.slo{width:100%;max-width:760px;height:auto}
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
             ("$/h", fmt(plan.cost_usd_per_hour, ",.2f")), ("chips", fmt(plan.chips, "d")),
             ("kW", fmt(None if plan.power_w is None else plan.power_w / 1e3, ",.1f")),
             ("output tokens/s", fmt(plan.output_tokens_per_s, ",.0f")),
             ("$/M output tokens", fmt(plan.usd_per_million_output_tokens, ".3f"))]
    if plan.output_tokens_per_s and plan.power_w:
        items.append(("tokens/s per MW", fmt(plan.output_tokens_per_s / (plan.power_w / 1e6), ",.0f")))
    if s is not None:
        items.append(("solver", f"{s.backend} {s.status}, gap {fmt(s.gap, '.1e')}"))
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
    usd: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    watts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    chips: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in plan.pools:
        usd[p.stage][p.chip] += p.usd_per_hour
        watts[p.stage][p.chip] += p.power_w
        chips[p.stage][p.chip] += p.chips
    chip_names = sorted({c for d in usd.values() for c in d})
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(chip_names)}
    stages = sorted(usd)

    def bars(values: dict[str, dict[str, float]], scale: float, unit: str) -> str:
        return hbars([(st, [(c, values[st][c] / scale, colour[c]) for c in chip_names if values[st].get(c)])
                      for st in stages], unit)

    legend = '<div class="legend-row">' + "".join(
        f'<span><i class="sw" style="background:{colour[c]}"></i>{esc(c)}</span>' for c in chip_names) + "</div>"
    rows = [(st, c, chips[st][c], f"{usd[st][c]:,.2f}", fmt(watts[st][c] / 1e3, ",.2f"))
            for st in stages for c in chip_names if c in usd[st]]
    rows.append(("total", "", sum(p.chips for p in plan.pools), f"{sum(p.usd_per_hour for p in plan.pools):,.2f}",
                 fmt(sum(p.power_w for p in plan.pools) / 1e3, ",.2f")))
    return (legend + "<h3>$/h by stage</h3>" + bars(usd, 1.0, "$/h") + "<h3>power by stage</h3>"
            + bars(watts, 1e3, "kW") + _table(("stage", "chip", "chips", "$/h", "kW"), rows, "breakdown"))


def _band(c: ClassPlan, metric: str) -> tuple[float, float] | None:
    """(low, high) of a class's predicted ``metric`` (``ttft``/``tpot``) in ms when the plan gives one."""
    low, high = getattr(c, f"{metric}_ms_low", None), getattr(c, f"{metric}_ms_high", None)
    return (low, high) if low is not None and high is not None else None


def slo_svg(classes: Sequence[ClassPlan], width: int = 640) -> str:
    """Each class's predicted TTFT and TPOT as a share of its SLO: a bar per figure, the SLO at 100 %,
    green within it and red beyond, whiskers for the error band when there is one."""
    rows = [(c, m) for c in classes for m in ("ttft", "tpot")]
    left, right, row_h = 190, width - 20, 22
    top = 22
    share = [getattr(c, f"{m}_ms") / getattr(c, f"{m}_slo_ms") for c, m in rows if getattr(c, f"{m}_ms") is not None]
    limit = max([1.25, *(s * 1.05 for s in share if math.isfinite(s))])
    x = lambda f: left + min(f, limit) / limit * (right - left)
    height = top + row_h * len(rows) + 24
    out = [(f'<svg class="slo" viewBox="0 0 {width} {height}" role="img" xmlns="http://www.w3.org/2000/svg">'
           "<title>predicted latency against the SLO</title>")]
    for t in [i / 4 for i in range(int(limit * 4) + 1)]:
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{height - 20}" class="grid"/>'
                   f'<text x="{x(t):.1f}" y="{height - 6}" text-anchor="middle" class="tick">{t:.0%}</text>')
    for i, (c, m) in enumerate(rows):
        y = top + i * row_h
        pred, slo = getattr(c, f"{m}_ms"), getattr(c, f"{m}_slo_ms")
        label = f"{c.name} {m.upper()}"
        out.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end" class="tick">{esc(label)}</text>')
        if pred is None:
            out.append(f'<text x="{left + 4}" y="{y + 14}" class="tick">no prediction</text>')
            continue
        f = pred / slo
        colour = "#1a7f37" if f <= 1 + 1e-9 else "#cf222e"
        out.append(f'<rect class="slo-bar" x="{left}" y="{y + 3}" width="{x(f) - left:.1f}" height="{row_h - 7}" '
                   f'fill="{colour}" opacity="0.8"><title>{esc(f"{label}: {fmt(pred)} ms predicted, SLO {slo:g} ms")}'
                   f"</title></rect>")
        band = _band(c, m)
        if band is not None:
            lo, hi = x(band[0] / slo), x(band[1] / slo)
            out.append(f'<path class="band" d="M{lo:.1f} {y + 10}H{hi:.1f}M{lo:.1f} {y + 5}V{y + 15}'
                       f'M{hi:.1f} {y + 5}V{y + 15}" stroke="#1f2328" stroke-width="1.5"/>')
        out.append(f'<text x="{x(f) + 4:.1f}" y="{y + 14}" class="tick">{fmt(pred)} / {slo:g} ms</text>')
    out.append(f'<line x1="{x(1):.1f}" y1="{top - 8}" x2="{x(1):.1f}" y2="{height - 20}" stroke="#1f2328" '
               f'stroke-dasharray="4 3"/><text x="{x(1):.1f}" y="{top - 10}" text-anchor="middle" '
               f'class="tick">SLO</text></svg>')
    return "".join(out)


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
        return line_chart(series, "interactivity: tokens/s per user", "$ per million output tokens",
                          title=f"{result.instance}: cost per token against interactivity",
                          log_y=bool(ys) and max(ys) / min(ys) > 20)
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


def render_html(plan: Plan, graph: nx.DiGraph | None = None, sweep: SweepResult | None = None) -> str:
    """The whole report page for ``plan`` (``graph``: the instance's fleet graph, else drawn from the plan)."""
    stage_legend = "".join(f'<span><i class="sw" style="background:{stage_colour(s)}"></i>{esc(s)}</span>'
                           for s in sorted({p.stage for p in plan.pools} or STAGE_COLOURS))
    load_legend = "".join(f'<span><i class="sw" style="background:{load_colour(u)}"></i>{label}</span>'
                          for u, label in ((0, "idle"), (0.01, "1 %"), (0.5, "50 %"), (1.0, "100 % of capacity")))
    pools = [(p.id + (f" ↔ {p.paired_with}" if p.paired_with else ""), p.traffic_class, p.stage, p.chip, p.replicas,
              p.chips, f"{p.tp}/{p.ep}/{p.pp}", p.batch, f"{p.utilisation:.0%}" if p.part == 0 else "",
              fmt(p.ttft_ms), fmt(p.tpot_ms), f"{p.usd_per_hour:,.2f}",
              ", ".join(f"{s.site}×{s.replicas}" for s in p.sites)) for p in plan.pools]
    classes = [(c.name, f"{c.rate_rps:g}", ", ".join(f"{m} {w:.0%}" for m, w in c.modes.items()),
                fmt(c.ttft_ms), f"{c.ttft_slo_ms:g}", fmt(c.tpot_ms), f"{c.tpot_slo_ms:g}") for c in plan.classes]
    busy = [(f"{lk.source} → {lk.target}", fmt(lk.load_bytes_per_s / 1e9), fmt(lk.capacity_bytes_per_s / 1e9),
             f"{lk.utilisation:.1%}") for lk in plan.links if lk.load_bytes_per_s > 0]
    notes = [*(f"SLO inside the band: {line}" for line in slos_inside_bands(plan)), *plan.notes,
             *(f"violation: {v}" for v in plan.violations), *plan.diagnosis]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>placement plan: {esc(plan.instance)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Plan for {esc(plan.instance)}</h1>", _kpis(plan),
        (f'<h2 id="fleet">Fleet and placement</h2><div class="legend-row">{stage_legend}</div>'
        f'<div class="legend-row">links: {load_legend}</div><div class="scroll">{fleet_svg(plan, graph)}</div>'),
        f'<h2 id="cost">Cost and power by stage and chip</h2>{_breakdown(plan)}',
        f'<h2 id="slo">Latency against the SLOs</h2>{slo_svg(plan.classes)}'
        + _table(("class", "req/s", "modes", "TTFT ms", "TTFT SLO ms", "TPOT ms", "TPOT SLO ms"), classes, "classes"),
        '<h2 id="pools">Pools</h2><div class="scroll">'
        + _table(("pool", "class", "stage", "chip", "replicas", "chips", "tp/ep/pp", "batch", "util", "TTFT ms",
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
