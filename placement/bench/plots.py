"""The scaling chart of a benchmark: solve and build time against fleet size, per solver."""

from __future__ import annotations

from pathlib import Path

from placement.core.plans.numbers import num

__all__ = ["scaling_figure", "scaling_plot"]


def scaling_plot(summary: list[dict], path: str | Path, x: str = "domains", title: str | None = None) -> Path:
    """Write :func:`scaling_figure` as a PNG."""
    import matplotlib.pyplot as plt

    fig = scaling_figure(summary, x, title)
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scaling_figure(summary: list[dict], x: str = "domains", title: str | None = None):
    """Log-log plot of solve (solid) and build (dashed) time against ``x`` per solver; candidates dotted.

    Tick labels are plain numbers (``0.1``, ``10``, ``1000``) on both log axes; a point that did not
    reach optimality is annotated with its status.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    solvers = sorted({r["solver"] for r in summary})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, solver in enumerate(solvers):
        pts = sorted((r[x], r.get("solve_s"), r.get("build_s"), r.get("status")) for r in summary
                     if r["solver"] == solver and isinstance(r.get("solve_s"), (int, float)))
        if not pts:
            continue
        c = colors[i % len(colors)]
        ax.plot([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], "o-", color=c, label=f"{solver} solve")
        ax.plot([p[0] for p in pts], [max(p[2], 1e-3) for p in pts], "s--", color=c, alpha=0.7,
                label=f"{solver} model build")
        for xv, yv, _, st in pts:
            if st != "optimal":
                ax.annotate(st, (xv, max(yv, 1e-3)), textcoords="offset points", xytext=(4, 4), fontsize=7)
    seen = {}
    for r in summary:
        if isinstance(r.get("candidates_s"), (int, float)):
            seen[r[x]] = r["candidates_s"]
    if seen:
        xs = sorted(seen)
        ax.plot(xs, [max(seen[v], 1e-3) for v in xs], "^:", color="gray", label="candidates (all solvers)")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    plain = FuncFormatter(lambda v, _: num(v))  # 0.01, 1, 100 rather than 10^-2, 10^0, 10^2
    for axis, scale in ((ax.xaxis, ax.set_xscale), (ax.yaxis, ax.set_yscale)):
        scale("log")
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel({"domains": "scale-up domains in the fleet", "groups": "domain groups (MILP sites)"}.get(x, x))
    ax.set_ylabel("wall time (s)")
    ax.set_title(title or "placement bench: time vs fleet size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
