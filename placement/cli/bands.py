"""The printed plan's band table: every pool's TTFT, TPOT and load against its limit, drawn in text.

The rows are the HTML report's (:func:`placement.core.plans.confidence.band_rows`) on the same logarithmic
axis of the share of the limit (:func:`placement.report.bands.share_axis`): a strip per row with the
p10–p90 band (``━``, green, or red when the limit lies inside it), the p50 (``┃``), the stated value
(``●``), the limit (``│`` at 100 %) and, where the plan was made with an SLO headroom, the SLO it was
planned to (``┊``).

Examples
--------
>>> from placement.core.plans.confidence import BandRow
>>> from placement.report.bands import ShareAxis
>>> row = BandRow(pool="pool-01", chip="h100", traffic_class="chat", figure="TPOT", stated=20, limit=25,
...               low=14, mid=19, high=31, planned=20)
>>> strip(row, ShareAxis(0.1, 10.0), 21).plain
'·······━━●│━·········'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from placement.core.plans.confidence import BandRow
from placement.report.bands import ShareAxis, band_text, share_axis

__all__ = ["axis_header", "print_bands", "strip"]

#: Characters of the strip, and their styles.
_TRACK, _BAND, _P50, _DOT, _LIMIT, _PLANNED = "·", "━", "┃", "●", "│", "┊"
_STYLE = {_TRACK: "dim", _P50: "bold", _DOT: "bold", _LIMIT: "bold", _PLANNED: "bold blue"}


def _cell(axis: ShareAxis, share: float, width: int) -> int:
    return min(max(round(axis.at(share, 0, width - 1)), 0), width - 1)


def strip(r: BandRow, axis: ShareAxis, width: int = 41) -> Text:
    """One row's drawing, ``width`` characters (later marks drawn over earlier ones: band, p50, headroom,
    limit, stated value)."""
    chars = [_TRACK] * width
    band_style = "red" if r.inside else "green"
    if r.high is not None:
        for i in range(_cell(axis, r.share(r.low), width), _cell(axis, r.share(r.high), width) + 1):
            chars[i] = _BAND
        if r.mid is not None:
            chars[_cell(axis, r.share(r.mid), width)] = _P50
    if r.planned is not None:
        chars[_cell(axis, r.share(r.planned), width)] = _PLANNED
    chars[_cell(axis, 1.0, width)] = _LIMIT
    chars[_cell(axis, r.share(r.stated), width)] = _DOT
    text = Text()
    for c in chars:
        late = c == _DOT and r.stated > r.limit * (1 + 1e-9)
        text.append(c, style="bold red" if late else band_style if c == _BAND else _STYLE.get(c, ""))
    return text


def axis_header(axis: ShareAxis, width: int = 41) -> str:
    """The decades of ``axis`` as percentages placed under their strip positions (as many as fit)."""
    line = [" "] * width
    for t in axis.ticks:
        if not math.isclose(math.log10(t), round(math.log10(t)), abs_tol=1e-9):
            continue  # decades only
        label = f"{100 * t:,.0f}%" if t >= 0.01 else f"{100 * t:g}%"
        at = _cell(axis, t, width)
        start = min(max(at - len(label) // 2, 0), width - len(label))
        if all(c == " " for c in line[max(start - 1, 0):start + len(label) + 1]):
            line[start:start + len(label)] = label
    return "".join(line)


def print_bands(console: Console, rows: Sequence[BandRow], width: int = 41) -> None:
    """The band table of ``rows`` (module docstring) and its key."""
    if not any(r.high is not None for r in rows):
        return
    axis = share_axis(rows)
    t = Table(title="against the SLOs: p10–p90 bands (log scale of the share of the limit)")
    for col in ("class / pool", "figure"):
        t.add_column(col)
    t.add_column(axis_header(axis, width), no_wrap=True)
    t.add_column(Text("stated [p10–p90] / limit"))
    for r in rows:
        who = f"{r.traffic_class} (route)" if not r.pool else f"  {r.pool} {r.chip}"
        t.add_row(Text(who, style="bold red" if r.inside else ""), r.figure, strip(r, axis, width), band_text(r))
    console.print(t)
    headroom = any(r.planned is not None for r in rows)
    console.print(f"{_BAND} p10–p90 band (red: the limit inside it)  {_P50} p50  {_DOT} stated  {_LIMIT} the SLO as "
                  "written (load: the rated capacity)" + (f"  {_PLANNED} the SLO planned to (slo_headroom)"
                                                         if headroom else ""), highlight=False, markup=False)
