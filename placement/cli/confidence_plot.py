"""The cost-of-confidence chart of ``pareto --confidence`` (matplotlib, Agg backend; PNG written atomically).

Two panels against the confidence level (0: the nominal prediction): the optimal cost per hour of
each series, and that cost as a multiple of the series' cost at the lowest level. With SLO sweeps
as well, each SLO point of a series is its own line (labelled with its values). Points with no
verified plan break the lines.

Examples
--------
>>> level_label(0.0), level_label(0.9)
('nominal', '0.9')
"""

from __future__ import annotations

import io
from pathlib import Path

from placement.core.plans.numbers import value
from placement.core.plans.output import write_bytes_atomic
from placement.studies.pareto import CONFIDENCE_AXIS
from placement.studies.sweep import Point, SweepResult

__all__ = ["confidence_figure", "confidence_lines", "level_label", "plot_confidence"]


def level_label(level: float) -> str:
    """A level's tick label: ``nominal`` for 0, else the level."""
    return "nominal" if level == 0 else f"{level:g}"


def confidence_lines(result: SweepResult) -> dict[str, list[Point]]:
    """Points by line (series, plus the SLO values when swept), each ordered by rising level."""
    others = [a.label for a in result.axes if a.label != CONFIDENCE_AXIS]
    lines: dict[str, list[Point]] = {}
    for p in result.points:
        slo = ", ".join(f"{k}={value(p.values[k])}" for k in others)
        lines.setdefault(p.series + (f" ({slo})" if slo else ""), []).append(p)
    return {k: sorted(v, key=lambda p: p.values[CONFIDENCE_AXIS]) for k, v in lines.items()}


def confidence_figure(result: SweepResult, title: str | None = None):
    """Cost per hour and cost relative to the lowest level, against the confidence level, per line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_cost, ax_rel) = plt.subplots(1, 2, figsize=(13, 4.8))
    levels = next(a.values for a in result.axes if a.label == CONFIDENCE_AXIS)
    for i, (label, pts) in enumerate(confidence_lines(result).items()):
        full = pts[0].kind == "full"
        style = {"color": "black" if full else f"C{i % 10}", "lw": 2.2 if full else 1.2,
                 "ls": "-" if full else "--", "marker": "o", "ms": 5}
        x = [p.values[CONFIDENCE_AXIS] for p in pts]
        cost = [p.cost_usd_per_hour if p.ok else float("nan") for p in pts]
        base = next((p.cost_usd_per_hour for p in pts if p.ok), None)
        ax_cost.plot(x, cost, label=label, **style)
        ax_rel.plot(x, [c / base if base else float("nan") for c in cost], label=label, **style)
    for ax, ylabel in ((ax_cost, "cost of the optimal plan ($/h)"),
                       (ax_rel, f"cost ÷ cost at {level_label(levels[0])}")):
        ax.set_xticks(list(levels), [level_label(v) for v in levels], rotation=45)
        ax.set_xlabel("confidence level (step times at this quantile of the held-out error band)")
        ax.set_ylabel(ylabel)
        ax.grid(True, lw=0.3)
    ax_cost.legend(fontsize=7)
    fig.suptitle(title or f"{result.instance}: the cost of confidence")
    return fig


def plot_confidence(result: SweepResult, path: str | Path, title: str | None = None) -> Path:
    """Write :func:`confidence_figure` as a PNG."""
    import matplotlib.pyplot as plt

    fig = confidence_figure(result, title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    write_bytes_atomic(path, buf.getvalue())
    return Path(path)
