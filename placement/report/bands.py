"""The band chart of the HTML plan report: every pool's TTFT, TPOT and load against its limit, drawn.

One row per figure (:func:`placement.core.plans.confidence.band_rows`), grouped by class: first the class's
route TTFT and TPOT (its stated figures), then each pool's. A row draws the figure's p10–p90 band as a
bar (green when the limit lies beyond it, red when the limit lies inside it: about one deployment in
ten like it would miss), its p50 as a tick and the stated value as a dot, on one logarithmic axis of
the share of the limit — the class's SLO as written, or the pool's rated capacity for its load. The
limit is a dashed line at 100 %; where the plan was made with an SLO headroom, a dotted blue line on
each latency row marks the SLO it was planned to. Row labels left, numbers right, both cut to fit
(whole in the tooltips).

Examples
--------
>>> from placement.core.plans.confidence import BandRow
>>> svg = bands_svg([BandRow(pool="", chip="", traffic_class="chat", figure="TPOT", stated=20, limit=25),
...                  BandRow(pool="pool-01", chip="h100", traffic_class="chat", figure="TPOT", stated=20,
...                          limit=25, low=14, mid=19, high=31, planned=20)])
>>> svg.count('class="band inside"'), svg.count('class="headroom"'), svg.count('class="limit"')
(1, 1, 1)
>>> share_axis([]).ticks[0], share_axis([]).ticks[-1]
(0.1, 10.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from placement.core.plans.confidence import BandRow
from placement.core.plans.numbers import num
from placement.report.svg import esc, fit

__all__ = ["ShareAxis", "band_text", "bands_legend", "bands_svg", "row_label", "share_axis"]

_W, _LABEL, _CHART, _ROW, _HEAD, _TOP = 820, 200, 360, 22, 20, 40
#: Fills of a band whose limit lies beyond it / inside it, and the dot of a stated value within / beyond.
_OK, _INSIDE, _DOT, _LATE = "#9fd8b4", "#f2a7a7", "#1f2328", "#cf222e"


@dataclass(frozen=True)
class ShareAxis:
    """A logarithmic axis of shares of a limit (1 = 100 %), whole decades from ``lo`` to ``hi``."""

    lo: float
    hi: float

    @property
    def ticks(self) -> list[float]:
        """Decades, with 2 and 5 between them when the axis spans three decades or fewer."""
        a, b = round(math.log10(self.lo)), round(math.log10(self.hi))
        subs = (1, 2, 5) if b - a <= 3 else (1,)
        return [float(m * 10.0**e) for e in range(a, b) for m in subs] + [float(self.hi)]

    def at(self, share: float, x0: float, x1: float) -> float:
        """The x of ``share`` between ``x0`` (``lo``) and ``x1`` (``hi``), clipped to the axis."""
        f = (math.log10(min(max(share, self.lo), self.hi)) - math.log10(self.lo)) / math.log10(self.hi / self.lo)
        return x0 + f * (x1 - x0)


def share_axis(rows: Sequence[BandRow]) -> ShareAxis:
    """The decades covering every row's shares (1 %… at the least, never below 0.1 %), 10 % to 1,000 % at the
    most narrow."""
    shares = [1.0] + [r.share(v) for r in rows for v in (r.low, r.stated, r.high, r.planned) if v and v > 0]
    lo = min(math.floor(math.log10(max(min(shares), 1e-3))), -1)
    hi = max(math.ceil(math.log10(max(shares) * 1.25)), 1)
    return ShareAxis(10.0**lo, 10.0**hi)


def row_label(r: BandRow) -> str:
    """``chat · route TTFT`` for a class's own row, ``pool-01 h100 · TPOT`` for a pool's."""
    what = r.figure
    return f"{r.traffic_class} · route {what}" if not r.pool else f"{r.pool} {r.chip} · {what}"


def band_text(r: BandRow) -> str:
    """The row's numbers: ``20.1 [14–31] / 25 ms`` (stated, p10–p90, limit) or ``83 % [53–181 %]``."""
    if r.figure == "load":
        band = "" if r.high is None else f" [{num(100 * r.low)}–{num(100 * r.high)} %]"
        return f"{num(100 * r.stated)} %{band} of capacity"
    band = "" if r.high is None else f" [{num(r.low)}–{num(r.high)}]"
    return f"{num(r.stated)}{band} / {num(r.limit)} ms"


def _tip(r: BandRow) -> str:
    def v(x: float | None) -> str:
        return f"{num(100 * x)} %" if r.figure == "load" else f"{num(x)} ms"

    limit = "the rated capacity" if r.figure == "load" else f"SLO {v(r.limit)}"
    planned = f", planned to {v(r.planned)} (slo_headroom)" if r.planned is not None else ""
    band = ("no band (priced from measurements, or the class's route)" if r.high is None else
            f"p10 {v(r.low)}, p50 {v(r.mid)}, p90 {v(r.high)}: "
            + ("the limit lies inside the band" if r.inside else "the limit lies beyond the band"))
    return f"{row_label(r)}: stated {v(r.stated)}; {limit}{planned}; {band}"


def bands_svg(rows: Sequence[BandRow], title: str = "") -> str:
    """The band chart of ``rows`` (module docstring) as inline SVG."""
    axis = share_axis(rows)
    x0, x1 = _LABEL + 10, _LABEL + 10 + _CHART
    classes = list(dict.fromkeys(r.traffic_class for r in rows))
    height = _TOP + _ROW * len(rows) + _HEAD * len(classes) + 44
    out = [(f'<svg class="bands" viewBox="0 0 {_W} {height}" role="img" xmlns="http://www.w3.org/2000/svg">'
            f"<title>{esc(title or 'each pool against its SLO: p10–p90 bands')}</title>")]
    bottom = height - 40
    for t in axis.ticks:
        x = axis.at(t, x0, x1)
        out.append(f'<line x1="{x:.1f}" y1="{_TOP - 6}" x2="{x:.1f}" y2="{bottom}" class="grid"/>'
                   f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle" class="tick">{num(100 * t)} %</text>')
    out.append(f'<text x="{(x0 + x1) / 2}" y="{bottom + 30}" text-anchor="middle" class="axis-label">share of the '
               f'SLO (load: of the rated capacity), log scale</text>')
    y = _TOP
    for c in classes:
        out.append(f'<text x="4" y="{y + 14}" class="class-name">{esc(fit(f"class {c}", _LABEL, 12))}</text>')
        y += _HEAD
        for r in (r for r in rows if r.traffic_class == c):
            out.append(_row(r, axis, x0, x1, y))
            y += _ROW
    lx = round(axis.at(1.0, x0, x1))
    out.append(f'<line class="limit" x1="{lx:.1f}" y1="{_TOP - 10}" x2="{lx:.1f}" y2="{bottom}" stroke="#1f2328" '
               f'stroke-width="1.5" stroke-dasharray="5 3"/><text x="{lx:.1f}" y="{_TOP - 14}" '
               'text-anchor="middle" class="tick">SLO / capacity</text>')
    out.append("</svg>")
    return "".join(out)


def _row(r: BandRow, axis: ShareAxis, x0: float, x1: float, y: float) -> str:
    mid_y = y + _ROW / 2
    inside = " inside" if r.inside else ""
    parts = [f'<g class="band-row{inside}"><title>{esc(_tip(r))}</title>',
             (f'<text x="{_LABEL}" y="{mid_y + 4}" text-anchor="end" class="row-label{inside}">'
             f'{esc(fit(row_label(r), _LABEL - 6, bold=r.inside))}</text>'),
             f'<line x1="{x0}" y1="{mid_y}" x2="{x1}" y2="{mid_y}" class="track"/>']
    if r.high is not None:
        a, b = axis.at(r.share(r.low), x0, x1), axis.at(r.share(r.high), x0, x1)
        parts.append(f'<rect class="band{inside}" x="{a:.1f}" y="{mid_y - 6}" width="{max(b - a, 1.5):.1f}" '
                     f'height="12" rx="3" fill="{_INSIDE if r.inside else _OK}"/>')
        if r.mid is not None:
            m = axis.at(r.share(r.mid), x0, x1)
            parts.append(f'<line class="p50" x1="{m:.1f}" y1="{mid_y - 7}" x2="{m:.1f}" y2="{mid_y + 7}" '
                         'stroke="#1f2328" stroke-width="1.5"/>')
    if r.planned is not None:
        h = round(axis.at(r.share(r.planned), x0, x1))  # on the pixel grid: a crisp 2 px line
        parts.append(f'<line class="headroom" x1="{h:.1f}" y1="{y + 1}" x2="{h:.1f}" y2="{y + _ROW - 1}" '
                     'stroke="#0969da" stroke-width="2" stroke-dasharray="2 2"/>')
    s = axis.at(r.share(r.stated), x0, x1)
    late = r.stated > r.limit * (1 + 1e-9)
    parts.append(f'<circle class="stated" cx="{s:.1f}" cy="{mid_y}" r="4" fill="{_LATE if late else _DOT}"/>')
    parts.append(f'<text x="{x1 + 10}" y="{mid_y + 4}" class="tick">{esc(fit(band_text(r), _W - x1 - 14))}</text>')
    parts.append("</g>")
    return "".join(parts)


def bands_legend(headroom: bool) -> str:
    """The chart's key as an HTML row (swatches as the report's legends)."""
    items = [(f'<i class="sw" style="background:{_OK}"></i>p10–p90 band, the SLO beyond it'),
             (f'<i class="sw" style="background:{_INSIDE}"></i>the SLO inside the band'),
             '<i class="sw" style="background:#1f2328;border-radius:6px"></i>predicted (stated) value; │ p50',
             "- - - the SLO as written (load: rated capacity)"]
    if headroom:
        items.append('<span style="color:#0969da">┊</span> the SLO the plan was made to (slo_headroom)')
    return '<div class="legend-row">' + "".join(f"<span>{i}</span>" for i in items) + "</div>"
