"""Small inline-SVG building blocks for the HTML plan report: escaping, colour scales, axes with
readable ticks (linear or logarithmic), line/scatter charts and horizontal bars.

Everything returns a string of SVG markup sized by its ``viewBox`` (the page's CSS makes it as wide
as its column), with no script, no external reference and no font file.

Examples
--------
>>> esc('<a & "b">')
'&lt;a &amp; &quot;b&quot;&gt;'
>>> load_colour(0.0), load_colour(1.0)
('#b8c0cc', '#d7301f')
>>> nice_ticks(0, 95)
[0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
>>> log_ticks(3, 4000)
[1.0, 10.0, 100.0, 1000.0, 10000.0]
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from placement.core.plans.numbers import num

__all__ = ["PALETTE", "Series", "esc", "fit", "hbars", "line_chart", "load_colour", "log_ticks", "nice_ticks",
           "text_width"]

#: Categorical colours (colour-blind-safe Okabe–Ito, then Tableau), cycled by series, chip or stage.
PALETTE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
           "#8c564b", "#7f7f7f", "#bcbd22", "#17becf"]

#: Link utilisation colour stops: idle grey, then green → yellow → red as the load reaches capacity.
_LOAD_STOPS = [(0.0, (0xb8, 0xc0, 0xcc)), (1e-9, (0x1a, 0x98, 0x50)), (0.5, (0xfe, 0xe0, 0x8b)),
               (1.0, (0xd7, 0x30, 0x1f))]


def esc(text: object) -> str:
    """``text`` escaped for HTML and SVG text and attributes."""
    return html.escape(str(text), quote=True)


#: Width of a character in em of the report's sans-serif font, generous (so that a label measured to fit
#: does fit in the widest common system-ui font, DejaVu Sans, measured in headless Chromium: digits 0.64,
#: lower case 0.56 on average, capitals 0.67): narrow characters, wide ones, digits, capitals, the rest.
_NARROW, _WIDE = set("il.,:;|!'()[]{} fjrt"), set("mwMW@%—")


def text_width(text: str, size_px: float = 11.0, bold: bool = False) -> float:
    """An upper estimate of ``text``'s width in pixels at ``size_px`` (bold: 12 % wider).

    Examples
    --------
    >>> round(text_width("pool-01 trainium3 · load ÷ capacity"))  # DejaVu Sans in Chromium: 195 px
    206
    """
    em = sum(0.36 if c in _NARROW else 0.95 if c in _WIDE else 0.66 if c.isdigit() else 0.74 if c.isupper()
             else 0.62 for c in text)
    return em * size_px * (1.12 if bold else 1.0)


def fit(text: str, width_px: float, size_px: float = 11.0, bold: bool = False) -> str:
    """``text``, cut with an ellipsis to fit ``width_px`` (the caller puts the whole text in a tooltip).

    Examples
    --------
    >>> fit("short", 100), fit("a very long label indeed", 60)
    ('short', 'a very lo…')
    """
    if text_width(text, size_px, bold) <= width_px:
        return text
    while text and text_width(text + "…", size_px, bold) > width_px:
        text = text[:-1]
    return text.rstrip() + "…"


def load_colour(utilisation: float) -> str:
    """Hex colour of a link at ``utilisation`` (0..1, clipped), interpolated between the load stops."""
    u = min(max(utilisation, 0.0), 1.0)
    if u == 0.0:
        return "#{:02x}{:02x}{:02x}".format(*_LOAD_STOPS[0][1])
    for (u0, c0), (u1, c1) in itertools.pairwise(_LOAD_STOPS):
        if u <= u1:
            t = (u - u0) / (u1 - u0)
            return "#{:02x}{:02x}{:02x}".format(*tuple(round(a + t * (b - a)) for a, b in zip(c0, c1)))
    return "#{:02x}{:02x}{:02x}".format(*_LOAD_STOPS[-1][1])


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values (1, 2, 2.5 or 5 × a power of ten apart) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    count = math.ceil((hi - first) / step - 1e-9)
    return [float(round(first + i * step, 12)) for i in range(count + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten covering [lo, hi] (both > 0), at least two."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if a == b:
        b += 1
    return [10.0**e for e in range(a, b + 1)]


@dataclass
class Series:
    """One line (or set of markers) of a chart: x and y values, a colour, a legend label.

    ``line`` False draws markers only; ``faded`` draws them pale (dominated points); ``step`` joins
    points with steps that change halfway between them (a quantity known only at the points).
    """

    label: str
    x: Sequence[float]
    y: Sequence[float]
    colour: str = PALETTE[0]
    line: bool = True
    faded: bool = False
    dashed: bool = False
    step: bool = False
    notes: Sequence[str] = field(default_factory=list)


class _Axis:
    """Maps data values to pixels, linearly or logarithmically, and gives the tick values."""

    def __init__(self, values: Sequence[float], a: float, b: float, log: bool):
        finite = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
        self.log = log and bool(finite)
        if self.log:
            self.ticks = log_ticks(min(finite), max(finite))
        else:
            lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
            self.ticks = nice_ticks(min(lo, 0.0) if lo >= 0 and hi > 0 and lo < 0.3 * hi else lo, hi)
        self.lo, self.hi, self.a, self.b = self.ticks[0], self.ticks[-1], a, b

    def __call__(self, v: float) -> float:
        f = (lambda t: math.log10(t)) if self.log else (lambda t: t)
        span = f(self.hi) - f(self.lo) or 1.0
        return self.a + (f(v) - f(self.lo)) / span * (self.b - self.a)


def line_chart(series: Sequence[Series], x_label: str, y_label: str, *, title: str = "", log_x: bool = False,
               log_y: bool = False, width: int = 640, height: int = 340, css_class: str = "chart") -> str:
    """An SVG chart of ``series`` with labelled axes, tick labels (also on log axes) and a legend.

    Every series with a point to draw gets a legend entry, faded ones included (drawn pale, as on the
    chart); a series with none is left out of the legend. Points with a None or non-finite coordinate,
    or ≤ 0 on a log axis, are left out. Labels are cut to the drawing (whole in their tooltips).
    """
    pts = [(s, [(x, y) for x, y in zip(s.x, s.y) if _ok(x, log_x) and _ok(y, log_y)]) for s in series]
    pts = [(s, p) for s, p in pts if p]
    xs = [x for _, p in pts for x, _ in p]
    last_tick = _Axis(xs, 0, 1, log_x).ticks[-1]
    left, right, top = 64, width - max(12, text_width(num(last_tick), 10.5) / 2 + 4), 28
    bottom = height - 44 - 16 * len(pts)
    X = _Axis(xs, left, right, log_x)
    Y = _Axis([y for _, p in pts for _, y in p], bottom, top, log_y)
    out = [(f'<svg class="{esc(css_class)}" viewBox="0 0 {width} {height}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{esc(title or y_label)}</title>')]
    if title:
        out.append(f'<text x="{width / 2}" y="16" class="title" text-anchor="middle">'
                   f'{esc(fit(title, width - 8, 13))}</text>')
    for t in X.ticks:
        px = X(t)
        out.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{bottom}" class="grid"/>'
                   f'<text x="{px:.1f}" y="{bottom + 14}" text-anchor="middle" class="tick">{num(t)}</text>')
    for t in Y.ticks:
        py = Y(t)
        out.append(f'<line x1="{left}" y1="{py:.1f}" x2="{right}" y2="{py:.1f}" class="grid"/>'
                   f'<text x="{left - 4}" y="{py + 4:.1f}" text-anchor="end" class="tick">{num(t)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" class="frame"/>')
    out.append(f'<text x="{(left + right) / 2}" y="{bottom + 30}" text-anchor="middle" class="axis-label">'
               f'{esc(x_label)}{" (log)" if X.log else ""}</text>')
    out.append(f'<text transform="translate(14 {(top + bottom) / 2}) rotate(-90)" text-anchor="middle" '
               f'class="axis-label">{esc(y_label)}{" (log)" if Y.log else ""}</text>')
    for s, p in pts:
        out.append(_draw_series(s, p, X, Y))
    for i, (s, _) in enumerate(pts):
        ly = bottom + 46 + 16 * i
        opacity = ' opacity="0.35"' if s.faded else ""
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        mark = (f'<line x1="{left}" y1="{ly - 4}" x2="{left + 22}" y2="{ly - 4}" stroke="{s.colour}" '
                f'stroke-width="2"{dash}/>' if s.line else "")
        out.append(f'<g class="legend-entry">{mark}<circle cx="{left + 11}" cy="{ly - 4}" r="3.5" '
                   f'fill="{s.colour}"{opacity}/><text x="{left + 30}" y="{ly}" class="legend">'
                   f'{esc(fit(s.label, width - left - 34))}<title>{esc(s.label)}</title></text></g>')
    out.append("</svg>")
    return "".join(out)


def _ok(v: float | None, log: bool) -> bool:
    return v is not None and math.isfinite(v) and (v > 0 or not log)


def _draw_series(s: Series, p: list[tuple[float, float]], X: _Axis, Y: _Axis) -> str:
    out = []
    if s.line and len(p) > 1:
        coords = []
        for i, (x, y) in enumerate(p):
            if s.step and i:  # change halfway (on the drawing) between the two points
                mid = (X(p[i - 1][0]) + X(x)) / 2
                coords.append(f"{mid:.1f},{Y(p[i - 1][1]):.1f} {mid:.1f},{Y(y):.1f}")
            coords.append(f"{X(x):.1f},{Y(y):.1f}")
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        out.append(f'<polyline class="series-line" fill="none" stroke="{s.colour}" stroke-width="2"{dash} '
                   f'points="{" ".join(coords)}"/>')
    opacity = ' opacity="0.35"' if s.faded else ""
    notes = list(s.notes) + [""] * len(p)
    for (x, y), note in zip(p, notes):
        tip = f"{s.label}: {num(x)}, {num(y)}" + (f" — {note}" if note else "")
        out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3.5" fill="{s.colour}"{opacity}>'
                   f'<title>{esc(tip)}</title></circle>')
    return "".join(out)


def hbars(rows: Sequence[tuple[str, Sequence[tuple[str, float, str]]]], unit: str, *, width: int = 640,
          css_class: str = "bars") -> str:
    """Horizontal stacked bars: one per (label, segments), each segment (name, value, colour); a tooltip
    per segment and the row's total at its end, in ``unit``."""
    row_h, left, right = 24, 130, width - 90
    total_max = max((sum(v for _, v, _ in segs) for _, segs in rows), default=0.0) or 1.0
    height = row_h * len(rows) + 10
    out = [(f'<svg class="{esc(css_class)}" viewBox="0 0 {width} {height}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{esc(unit)}</title>')]
    for i, (label, segs) in enumerate(rows):
        y = 5 + i * row_h
        out.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end" class="tick">{esc(label)}</text>')
        x = float(left)
        for name, value, colour in segs:
            w = value / total_max * (right - left)
            out.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{max(w, 0):.1f}" height="{row_h - 6}" '
                       f'fill="{colour}"><title>{esc(f"{label}, {name}: {num(value)} {unit}")}</title></rect>')
            x += w
        total = sum(v for _, v, _ in segs)
        out.append(f'<text x="{x + 4:.1f}" y="{y + 15}" class="tick">{esc(num(total))} {esc(unit)}</text>')
    out.append("</svg>")
    return "".join(out)
