"""Charts of sweeps (matplotlib, Agg backend; written atomically as PNG).

* :func:`plot_pareto` — InferenceX-style: output tokens/s per chip, $/M output
  tokens and output tokens/s per MW against tokens/s per user (interactivity);
  the heterogeneous frontier (black) beside each homogeneous fleet's (dashed) and
  each serving mode's (dotted). Lines join each series' frontier points, solved
  and verified ones only; faint markers are its dominated points (in the legend
  too).
* :func:`plot_sweep` — cost/h (and $/M tokens), chips by type, the share of
  output tokens by mode and output tokens/s per MW, against the swept value.
  The optimum is known only at the swept values: chip mixes and mode shares are
  drawn as steps (each plan from halfway to its left neighbour to halfway to its
  right one, since where the optimum changes between two swept values is not
  known), and lines break at points with no verified plan.

Log axes get plain tick labels (``50``, ``100``, ``200``, not ``10^2``), with
1-2-5 ticks when the range spans less than two decades; axis labels name the
swept field with its unit (:func:`placement.report.labels.axis_label`).
:func:`pareto_figure` and :func:`sweep_figure` return the matplotlib figures.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from placement.core.plans.numbers import num, value
from placement.core.plans.output import write_bytes_atomic
from placement.modes import colors
from placement.report.labels import axis_label
from placement.studies.pareto import envelope
from placement.studies.sweep import MODE_LABELS, Point, SweepResult

__all__ = ["DOMINATED_LABEL", "log_axis", "pareto_figure", "plot_pareto", "plot_sweep", "sweep_figure",
           "tokens_per_s_per_mw"]

#: Legend entry of the faint markers: plans of a series off its frontier.
DOMINATED_LABEL = "faint markers: plans off their series' frontier"

_HOMOGENEOUS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
                "tab:olive", "tab:cyan"]
_MODES = colors()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})
    _pyplot().close(fig)
    write_bytes_atomic(path, buf.getvalue())
    return Path(path)


def _style(result: SweepResult) -> dict[str, dict]:
    out, h = {}, 0
    for s in result.series:
        kind = next((p.kind for p in result.points if p.series == s), "full")
        if kind == "full":
            out[s] = {"color": "black", "ls": "-", "lw": 3.0, "marker": "*", "ms": 11, "zorder": 2, "alpha": 0.8}
        elif kind == "homogeneous":
            out[s] = {"color": _HOMOGENEOUS[h % len(_HOMOGENEOUS)], "ls": "--", "lw": 1.4, "marker": "o", "ms": 5,
                      "zorder": 3, "alpha": 1.0}
            h += 1
        else:
            out[s] = {"color": _MODES.get(s, "tab:olive"), "ls": ":", "lw": 1.6, "marker": "s", "ms": 4, "zorder": 4,
                      "alpha": 1.0}
    return out


def _label(result: SweepResult, s: str) -> str:
    kind = next((p.kind for p in result.points if p.series == s), "full")
    if kind == "full":
        chips = result.fleet_chips or sorted({c for p in result.points if p.series == s for c in p.chips_by_type})
        return (f"heterogeneous fleet ({' + '.join(chips)}), all modes" if chips else "heterogeneous") + \
            (" — frontier over every plan below" if result.command == "pareto" and len(result.series) > 1 else "")
    if kind == "homogeneous":
        return f"only {s}"
    return f"mode: {s}"


def log_axis(ax, axis: str, values: list[float]) -> None:
    """Put ``axis`` ("x" or "y") of ``ax`` on a log scale with plain tick labels: powers of ten, and
    1-2-5 ticks when the positive ``values`` span less than two decades (so a narrow range still has
    labelled ticks)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    v = [x for x in values if x and x > 0]
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    narrow = bool(v) and max(v) / min(v) < 100
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
    target.set_major_formatter(FuncFormatter(lambda x, _: num(x)))
    target.set_minor_formatter(NullFormatter())


def _log_if_wide(ax, axis: str, values: list[float], ratio: float = 20) -> None:
    v = [x for x in values if x and x > 0]
    if v and max(v) / min(v) > ratio:
        log_axis(ax, axis, v)


def tokens_per_s_per_mw(p: Point) -> float | None:
    """Output tokens/s per MW of a point's plan (None without power or throughput).

    Examples
    --------
    >>> from placement.studies.sweep import Point
    >>> tokens_per_s_per_mw(Point(index=0, series="s", kind="full", values={}, status="optimal",
    ...                           output_tokens_per_s=2000.0, power_w=4000.0))
    500000.0
    """
    if not p.output_tokens_per_s or not p.power_w:
        return None
    return p.output_tokens_per_s / (p.power_w / 1e6)


def _short_modes(p: Point) -> str:
    """'PD+AF + aggregated' — the modes carrying at least 5% of the output tokens, largest first."""
    return " + ".join(MODE_LABELS.get(m, m) for m, v in sorted(p.modes.items(), key=lambda kv: -kv[1]) if v >= 0.05)


def _front_key(pts: list[Point]) -> tuple:
    return tuple(sorted((p.tokens_per_s_per_user, p.usd_per_million_output_tokens) for p in pts if p.frontier))


def _env_key(pts: list[Point]) -> tuple:
    return tuple((p.tokens_per_s_per_user, p.usd_per_million_output_tokens) for p in pts)


def plot_pareto(result: SweepResult, path: str | Path, title: str | None = None) -> Path:
    """Write :func:`pareto_figure` as a PNG."""
    return _save(pareto_figure(result, title), path)


def pareto_figure(result: SweepResult, title: str | None = None):
    """Three panels: tokens/s per chip, $/M output tokens and tokens/s per MW, against tokens/s per user.

    The heterogeneous frontier is annotated with its serving modes where they change; a series whose
    frontier coincides with the heterogeneous one says so in the legend. The tokens/s-per-MW panel
    joins each series' solved points by rising interactivity.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.4))
    style = _style(result)
    full = next((s for s in result.series if any(p.kind == "full" for p in result.series_points(s))), None)
    env = {"frontier": envelope(result), "frontier_throughput": envelope(result, throughput=True)}
    full_front = _env_key(env["frontier"])
    faded = False
    xs_all, thr_all, usd_all, mw_all = [], [], [], []
    for s in result.series:
        pts = [p for p in result.series_points(s) if p.ok and p.tokens_per_s_per_user is not None]
        if not pts:
            continue
        st = style[s]
        mw = sorted((p for p in pts if tokens_per_s_per_mw(p) is not None), key=lambda p: p.tokens_per_s_per_user)
        axes[2].plot([p.tokens_per_s_per_user for p in mw], [tokens_per_s_per_mw(p) for p in mw], color=st["color"],
                     ls=st["ls"], lw=min(st["lw"], 2.0), marker=st["marker"], ms=st["ms"] * 0.8, zorder=st["zorder"],
                     alpha=st["alpha"])
        mw_all += [tokens_per_s_per_mw(p) for p in mw]
        for ax, y, flag in ((axes[0], "tokens_per_s_per_chip", "frontier_throughput"),
                            (axes[1], "usd_per_million_output_tokens", "frontier")):
            if s == full:  # the instance's frontier: the envelope of every series' plans
                front = [p for p in env[flag] if p.ok]
                keys = {id(p) for p in front}
                rest = [p for p in pts if id(p) not in keys]
            else:
                front = sorted((p for p in pts if getattr(p, flag)), key=lambda p: p.tokens_per_s_per_user)
                rest = [p for p in pts if not getattr(p, flag)]
            front = [p for p in front if p.ok and p.tokens_per_s_per_user is not None]
            same = s != full and full_front and _front_key(pts) == tuple(sorted(full_front))
            ax.plot([p.tokens_per_s_per_user for p in front], [getattr(p, y) for p in front], color=st["color"],
                    ls=st["ls"], lw=st["lw"], marker=st["marker"], ms=st["ms"], zorder=st["zorder"],
                    alpha=st["alpha"], label=_label(result, s) + (" (= heterogeneous)" if same else ""))
            if s == full and flag == "frontier" and front:
                last, last_x = None, None
                lo = min(q.tokens_per_s_per_user for q in front)
                span = max(q.tokens_per_s_per_user for q in front) - lo
                for p in front:
                    text = _short_modes(p)
                    near = last_x is not None and p.tokens_per_s_per_user - last_x < 0.12 * span
                    if text != last and not near:
                        right = p.tokens_per_s_per_user > lo + 0.5 * span  # keep the label inside the axes
                        ax.annotate(text, (p.tokens_per_s_per_user, getattr(p, y)), textcoords="offset points",
                                    xytext=(-4 if right else 4, 9), fontsize=7, color="black",
                                    ha="right" if right else "left", zorder=6)
                        last_x = p.tokens_per_s_per_user
                    last = text
            if rest:
                ax.plot([p.tokens_per_s_per_user for p in rest], [getattr(p, y) for p in rest], ls="none",
                        marker=st["marker"], ms=st["ms"] * 0.7, color=st["color"], alpha=0.3, zorder=2)
                faded = True
        xs_all += [p.tokens_per_s_per_user for p in pts]
        thr_all += [p.tokens_per_s_per_chip for p in pts]
        usd_all += [p.usd_per_million_output_tokens for p in pts]
    focus = ", ".join(result.focus_classes)
    for ax in axes:
        ax.set_xlabel(textwrap.fill(f"interactivity: tokens/s per user (1000 / predicted TPOT of {focus})", 60))
        _log_if_wide(ax, "x", xs_all)
        ax.grid(True, which="both", lw=0.3)
    axes[0].set_ylabel("output tokens/s per chip")
    axes[1].set_ylabel("$ per million output tokens")
    axes[2].set_ylabel("output tokens/s per MW")
    _log_if_wide(axes[0], "y", thr_all)
    _log_if_wide(axes[1], "y", usd_all, ratio=6)
    _log_if_wide(axes[2], "y", mw_all)
    axes[0].set_title("throughput per chip vs interactivity (frontiers)", fontsize=10)
    axes[1].set_title("cost per token vs interactivity (frontiers)", fontsize=10)
    axes[2].set_title("throughput per MW vs interactivity (solved plans)", fontsize=10)
    empty = [_label(result, s) for s in result.series  # not in the legend: a note under it
             if not any(p.ok and p.tokens_per_s_per_user is not None for p in result.series_points(s))]
    if faded:
        axes[0].plot([], [], ls="none", marker="o", color="tab:gray", alpha=0.3, label=DOMINATED_LABEL)
    handles, labels = axes[0].get_legend_handles_labels()
    if labels:
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8,
                   bbox_to_anchor=(0.5, -0.06))
    if empty:
        fig.text(0.5, -0.1, "not drawn, no verified plan with a predicted TPOT at any point: " + "; ".join(empty),
                 ha="center", fontsize=8)
    sweep = ", ".join(f"{axis_label(a.label)} {value(a.values[0])}…{value(a.values[-1])} ({len(a.values)} points)"
                      for a in result.axes)
    fixed = "; ".join(f"{axis_label(k)} = {value(v)}" for k, v in result.overrides.items())
    fig.suptitle(title or f"{result.instance}: {sweep}" + (f"\nwith {fixed}" if fixed else ""), fontsize=11)
    if not xs_all:
        axes[0].text(0.5, 0.5, "no point to draw", ha="center", transform=axes[0].transAxes)
    return fig


def _x(p: Point, label: str):
    v = p.values.get(label)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def plot_sweep(result: SweepResult, path: str | Path, title: str | None = None) -> Path:
    """Write :func:`sweep_figure` as a PNG."""
    return _save(sweep_figure(result, title), path)


def _broken(xs: list, ys: list, ok: list[bool]) -> tuple[list, list]:
    """``xs``, ``ys`` with NaN at points without a verified plan, so a line never bridges them.

    Examples
    --------
    >>> _broken([1, 2, 3], [5.0, 0.0, 7.0], [True, False, True])
    ([1, 2, 3], [5.0, nan, 7.0])
    """
    return list(xs), [y if good and y is not None else float("nan") for y, good in zip(ys, ok)]


def sweep_figure(result: SweepResult, title: str | None = None):
    """Four panels against the first swept value: cost, chip mix (steps), modes (steps) and output
    tokens/s per MW; other axes at their first value in the last three, one cost line per combination
    of the other axes."""
    plt = _pyplot()
    first = result.axes[0]
    others = result.axes[1:]
    pts = result.series_points(result.series[0])
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in first.values)
    fig, grid = plt.subplots(2, 2, figsize=(13, 8.4))
    axes = grid.ravel()

    def pos(p: Point):
        return _x(p, first.label) if numeric else first.values.index(p.values[first.label])

    groups: dict[tuple, list[Point]] = {}
    for p in pts:
        groups.setdefault(tuple(p.values[a.label] for a in others), []).append(p)
    ax = axes[0]
    for key, g in groups.items():
        lbl = ", ".join(f"{axis_label(a.label)} = {value(v)}" for a, v in zip(others, key)) or "cost of the optimum ($/h)"
        ax.plot(*_broken([pos(p) for p in g], [p.cost_usd_per_hour for p in g], [p.ok for p in g]), "o-", label=lbl)
        bad = [p for p in g if not p.ok]
        if bad:
            ax.plot([pos(p) for p in bad], [0] * len(bad), "x", color="red", ms=8,
                    label="infeasible / failed" if key == next(iter(groups)) else None)
    ax.set_ylabel("cost ($/h)")
    ax.set_title("cost of the optimal plan", fontsize=10)
    if len(groups) == 1:
        twin = ax.twinx()
        twin.plot(*_broken([pos(p) for p in pts], [p.usd_per_million_output_tokens for p in pts],
                           [p.ok for p in pts]), "s:", color="tab:gray", ms=3, label="$/M output tokens (right)")
        twin.set_ylabel("$ per million output tokens", color="tab:gray")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = twin.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7)
    else:
        ax.legend(fontsize=7)
    base = next(iter(groups.values())) if groups else []
    ok = [p for p in base if p.ok]
    chips = sorted({c for p in ok for c in p.chips_by_type})
    xs = [pos(p) for p in base]
    for i, c in enumerate(chips):  # steps: the optimum is known only at the swept values
        axes[1].plot(*_broken(xs, [p.chips_by_type.get(c, 0) for p in base], [p.ok for p in base]),
                     drawstyle="steps-mid", marker="o", ms=4, color=_HOMOGENEOUS[i % len(_HOMOGENEOUS)], label=c)
    if chips:
        axes[1].legend(fontsize=7, loc="upper left")
    axes[1].set_ylabel("chips")
    axes[1].set_title("chip mix (steps: each plan drawn halfway to its neighbours)", fontsize=10)
    modes = sorted({m for p in ok for m in p.modes})
    if ok and modes:
        axes[2].stackplot([pos(p) for p in ok], [[p.modes.get(m, 0) for p in ok] for m in modes],
                          labels=[MODE_LABELS.get(m, m) for m in modes], alpha=0.8, step="mid",
                          colors=[_MODES.get(MODE_LABELS.get(m, m), "tab:olive") for m in modes])
        axes[2].legend(fontsize=7, loc="upper left")
    axes[2].set_ylim(0, 1.02)
    axes[2].set_ylabel("share of output tokens")
    axes[2].set_title("serving modes (steps)", fontsize=10)
    axes[3].plot(*_broken(xs, [tokens_per_s_per_mw(p) for p in base], [p.ok for p in base]), "o-", color="tab:green")
    axes[3].set_ylabel("output tokens/s per MW")
    axes[3].set_title("throughput per MW of the optimal plan", fontsize=10)
    xlabel = axis_label(first.label)
    for a in axes:
        a.set_xlabel(xlabel)
        if numeric and first.log:
            log_axis(a, "x", [float(v) for v in first.values])
        if not numeric:
            a.set_xticks(range(len(first.values)), [value(v) for v in first.values])
        a.grid(True, which="both", lw=0.3)
    if others:
        fixed = ", ".join(f"{axis_label(a.label)} = {value(a.values[0])}" for a in others)
        for a, what in zip(axes[1:], ("chip mix", "serving modes", "throughput per MW")):
            a.set_title(f"{what} ({fixed})", fontsize=9)
    fig.suptitle(title or f"{result.instance}: sweep of {', '.join(axis_label(a.label) for a in result.axes)}",
                 fontsize=11)
    fig.tight_layout()
    return fig
