"""The fleet drawing of the HTML plan report: switches and domain groups, the plan's pools placed on
the groups that host them, every link coloured (and thickened) by its load.

Layout, top to bottom: switches that reach no domain group (spines), switches with domain groups
(leaves, each centred over its groups), and the domain groups in one row, ordered by their switch
then name. The fleet comes from the instance's graph when given; from the plan alone, the nodes are
the ends of the plan's links and the pools' sites, and a node is a domain group when a pool runs on
it, or it has a single neighbour and is not next to a group hosting a pool (domain groups link
only to switches).

Examples
--------
>>> from placement.core.plans.plan import LinkPlan, Plan
>>> plan = Plan(instance="t", status="optimal", objective="cost", links=[
...     LinkPlan(source="g", target="tor", load_bytes_per_s=5e9, capacity_bytes_per_s=1e10, utilisation=0.5),
...     LinkPlan(source="tor", target="g", load_bytes_per_s=0, capacity_bytes_per_s=1e10, utilisation=0),
...     LinkPlan(source="h", target="tor", load_bytes_per_s=0, capacity_bytes_per_s=1e10, utilisation=0)])
>>> fleet = Fleet.of(plan)
>>> fleet.kind, fleet.links[("g", "tor")]
({'g': 'domains', 'h': 'domains', 'tor': 'switch'}, (0.5, 5000000000.0, 10000000000.0))
>>> 'class="link"' in fleet_svg(plan)
True
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import networkx as nx

from placement.core.plans.numbers import num, usd
from placement.core.plans.plan import Plan
from placement.report.svg import PALETTE, esc, fit, load_colour, text_width

__all__ = ["STAGE_COLOURS", "Fleet", "fleet_svg", "stage_colour"]

#: Stage colours, fixed so every report reads the same way.
STAGE_COLOURS = {"prefill": "#0072b2", "decode": "#e69f00", "serve": "#009e73", "decode-attention": "#cc79a7",
                 "decode-ffn": "#56b4e9", "draft": "#d55e00"}

_BOX_W, _GAP, _ROW_H, _POOL_H = 190, 24, 90, 17
#: Font size (px) of a pool's line in its domain group (the page's CSS: svg.fleet .pool text).
_POOL_FONT = 10.5


def stage_colour(stage: str) -> str:
    """The colour of a stage (a palette colour, by a stable hash, for a stage not listed)."""
    return STAGE_COLOURS.get(stage, PALETTE[sum(map(ord, stage)) % len(PALETTE)])


@dataclass
class Fleet:
    """Nodes (name → ``"switch"`` or ``"domains"``), a caption per domain group, and undirected links
    (sorted pair → (worst utilisation of the two directions, its load bytes/s, its capacity bytes/s))."""

    kind: dict[str, str]
    links: dict[tuple[str, str], tuple[float, float, float]]
    caption: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: Plan, graph: nx.DiGraph | None = None) -> Fleet:
        links: dict[tuple[str, str], tuple[float, float, float]] = {}
        for lk in plan.links:
            key = tuple(sorted((lk.source, lk.target)))
            if key not in links or lk.utilisation > links[key][0]:
                links[key] = (lk.utilisation, lk.load_bytes_per_s, lk.capacity_bytes_per_s)
        kind: dict[str, str] = {}
        caption: dict[str, str] = {}
        if graph is not None:
            for n, data in graph.nodes(data=True):
                kind[n] = "switch" if data.get("kind") == "switch" else "domains"
                if kind[n] == "domains":
                    caption[n] = f"{data['count']} × {data['chips_per_domain']} {data['chip']}"
            for u, v, data in graph.edges(data=True):
                links.setdefault(tuple(sorted((u, v))), (0.0, 0.0, data["bandwidth_bytes_per_s"]))
        else:
            hosts = {s.site for p in plan.pools for s in p.sites}
            degree: dict[str, int] = defaultdict(int)
            for u, v in links:
                degree[u] += 1
                degree[v] += 1
            near_host = {n for u, v in links for n, m in ((u, v), (v, u)) if m in hosts}
            for n in sorted(set(degree) | hosts):  # domain groups link only to switches
                kind[n] = "domains" if n in hosts or (degree[n] <= 1 and n not in near_host) else "switch"
        return cls(kind, links, caption)

    def neighbours(self, n: str) -> list[str]:
        return sorted({v if u == n else u for u, v in self.links if n in (u, v)})


def _positions(fleet: Fleet, heights: dict[str, float], box: float = _BOX_W,
               ) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Centre of each switch and top-centre of each domain group (``box`` wide); the drawing's width and
    height."""
    groups = [n for n, k in fleet.kind.items() if k == "domains"]
    switches = [n for n, k in fleet.kind.items() if k == "switch"]
    leaf_of = {g: next((s for s in fleet.neighbours(g) if fleet.kind.get(s) == "switch"), "") for g in groups}
    groups.sort(key=lambda g: (leaf_of[g], g))
    leaves = [s for s in switches if any(leaf_of[g] == s for g in groups)]
    spines = sorted(s for s in switches if s not in leaves)
    rows = (1 if spines else 0) + (1 if leaves else 0)
    y_groups = 20 + rows * _ROW_H
    pos: dict[str, tuple[float, float]] = {}
    for i, g in enumerate(groups):
        pos[g] = (_GAP + box / 2 + i * (box + _GAP), y_groups)
    width = max(len(groups), len(spines), 1) * (box + _GAP) + _GAP
    for s in leaves:
        xs = [pos[g][0] for g in groups if leaf_of[g] == s]
        pos[s] = (sum(xs) / len(xs), 20 + (_ROW_H if spines else 0) + 18)
    for i, s in enumerate(spines):
        pos[s] = ((i + 0.5) * width / len(spines), 38)
    height = y_groups + max(heights.values(), default=40) + 20
    return pos, width, height


def fleet_svg(plan: Plan, graph: nx.DiGraph | None = None) -> str:
    """The fleet of ``plan`` as inline SVG (see the module docstring); node and link tooltips give the
    numbers (chips, replicas, load in GB/s, capacity, utilisation)."""
    fleet = Fleet.of(plan, graph)
    hosted: dict[str, list[tuple[str, str, str]]] = defaultdict(list)  # group -> (text, tooltip, colour)
    for p in plan.pools:
        for s in p.sites:
            text = f"{p.id} {p.stage} {p.chip} {p.layout} × {s.replicas}"
            tip = (f"{p.id}: {p.traffic_class} {p.stage} on {p.chip}, {s.replicas} replicas × {p.chips_per_replica}"
                   f" chips here ({p.layout}), batch {p.batch}, ${usd(p.usd_per_hour)}/h (whole pool)")
            hosted[s.site].append((text, tip, stage_colour(p.stage)))
    box = max([_BOX_W] + [text_width(t, _POOL_FONT) + 22 for texts in hosted.values() for t, _, _ in texts]
              + [text_width(c, _POOL_FONT) + 12 for c in fleet.caption.values()])
    heights = {g: 44 + _POOL_H * len(hosted.get(g, [])) for g, k in fleet.kind.items() if k == "domains"}
    pos, width, height = _positions(fleet, heights, box)
    out = [(f'<svg class="fleet" width="{width:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg"><title>fleet of {esc(plan.instance)}</title>')]
    for (u, v), (util, load, cap) in sorted(fleet.links.items()):
        if u not in pos or v not in pos:
            continue
        (x1, y1), (x2, y2) = pos[u], pos[v]
        tip = f"{u} ↔ {v}: {num(load / 1e9)} GB/s of {num(cap / 1e9)} GB/s ({util:.1%}, busier direction)"
        out.append(f'<line class="link" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                   f'stroke="{load_colour(util)}" stroke-width="{2 + 6 * min(util, 1):.1f}">'
                   f'<title>{esc(tip)}</title></line>')
    for n, k in sorted(fleet.kind.items()):
        x, y = pos[n]
        if k == "switch":
            out.append(f'<g class="switch"><rect x="{x - 50:.1f}" y="{y - 13:.1f}" width="100" height="26" rx="13"/>'
                       f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{esc(fit(n, 92))}</text>'
                       f'<title>switch {esc(n)}</title></g>')
            continue
        h = heights[n]
        used = bool(hosted.get(n))
        out.append(f'<g class="group{" used" if used else ""}"><rect x="{x - box / 2:.1f}" y="{y:.1f}" '
                   f'width="{box:.0f}" height="{h}" rx="6"/><title>domain group {esc(n)}</title>'
                   f'<text x="{x:.1f}" y="{y + 16:.1f}" text-anchor="middle" class="name">{esc(fit(n, box - 8))}</text>'
                   f'<text x="{x:.1f}" y="{y + 31:.1f}" text-anchor="middle" class="caption">'
                   f'{esc(fleet.caption.get(n, ""))}</text>')
        for i, (text, tip, colour) in enumerate(hosted.get(n, [])):
            py = y + 38 + i * _POOL_H
            out.append(f'<g class="pool"><rect x="{x - box / 2 + 5:.1f}" y="{py:.1f}" width="{box - 10:.0f}" '
                       f'height="{_POOL_H - 2}" rx="3" style="fill:{colour}"/><text x="{x - box / 2 + 9:.1f}" '
                       f'y="{py + 11.5:.1f}">{esc(text)}</text><title>{esc(tip)}</title></g>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)
