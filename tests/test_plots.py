"""The charts (matplotlib Agg figure objects, not pixels): plain tick labels on log axes, legend
entries for faded markers, chip mixes as steps, a tokens/s-per-MW panel, axis labels from field names,
frontiers only through solved points."""

import math

import pytest

from placement.bench.plots import scaling_figure
from placement.cli.plots import DOMINATED_LABEL, pareto_figure, sweep_figure
from placement.studies.sweep import AxisInfo, Point, SweepResult

PRICE = "hardware.chips.bertha.usd_per_hour"


def point(i, values, status="optimal", **kw):
    base = {"cost_usd_per_hour": 10.0 + i, "usd_per_million_output_tokens": 0.2 + 0.01 * i, "power_w": 9000.0,
            "output_tokens_per_s": 18000.0, "tokens_per_s_per_chip": 1000.0, "chips_by_type": {"h100": 12, "bertha": 6}}
    return Point(index=i, series=kw.pop("series", "heterogeneous"), kind=kw.pop("kind", "full"), values=values,
                 status=status, verified=status == "optimal", **{**base, **kw})


@pytest.fixture
def price_sweep():
    prices = [0.3, 0.6, 1.2, 2.4]
    pts = [point(0, {PRICE: 0.3}), point(1, {PRICE: 0.6}, chips_by_type={"h100": 13, "bertha": 2}),
           point(2, {PRICE: 1.2}, status="infeasible", cost_usd_per_hour=None),
           point(3, {PRICE: 2.4}, chips_by_type={"h100": 15})]
    return SweepResult(command="sweep", instance="bertha-lpddr", source="x", backend="highs", focus_classes=[],
                       series=["heterogeneous"], axes=[AxisInfo(label=PRICE, paths=[PRICE], values=prices, log=True)],
                       points=pts)


def test_sweep_axis_labels_name_the_field_not_its_path(price_sweep):
    fig = sweep_figure(price_sweep)
    labels = {ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()}
    assert labels == {"bertha price ($/h per chip)"}
    assert PRICE not in fig._suptitle.get_text()


def test_sweep_chip_mix_is_drawn_as_steps(price_sweep):
    ax = sweep_figure(price_sweep).axes[1]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"bertha", "h100"}
    assert {ln.get_drawstyle() for ln in lines.values()} == {"steps-mid"}
    assert list(lines["bertha"].get_ydata()[:2]) == [6, 2]


def test_sweep_lines_break_at_points_without_a_plan(price_sweep):
    fig = sweep_figure(price_sweep)
    cost = fig.axes[0].get_lines()[0].get_ydata()
    assert math.isnan(cost[2]) and not any(math.isnan(c) for c in (cost[0], cost[1], cost[3]))
    assert math.isnan(fig.axes[1].get_lines()[0].get_ydata()[2])


def test_sweep_has_a_tokens_per_mw_panel(price_sweep):
    ax = next(a for a in sweep_figure(price_sweep).axes if a.get_ylabel() == "output tokens/s per MW")
    assert ax.get_lines()[0].get_ydata()[0] == pytest.approx(18000 / 9e-3)


def test_log_axes_have_plain_tick_labels(price_sweep):
    fig = sweep_figure(price_sweep)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and ax.get_xlim()[0] <= t.get_position()[0]
             <= ax.get_xlim()[1]]
    assert len(shown) >= 2 and all("^" not in t and "$" not in t for t in shown)  # 0.5, 1, 2: a narrow range


@pytest.fixture
def pareto():
    def p(i, series, kind, x, usd, frontier, status="optimal"):
        return point(i, {"tpot_ms": i}, status=status, series=series, kind=kind, tokens_per_s_per_user=x,
                     usd_per_million_output_tokens=usd, frontier=frontier, frontier_throughput=frontier,
                     envelope=frontier and kind == "full", envelope_throughput=frontier and kind == "full")
    pts = [p(0, "heterogeneous", "full", 10, 0.2, True), p(1, "heterogeneous", "full", 20, 0.3, True),
           p(2, "heterogeneous", "full", 15, 0.5, False), p(3, "heterogeneous", "full", 30, 0.25, True, "time_limit"),
           p(4, "h100", "homogeneous", 10, 0.4, True), p(5, "h100", "homogeneous", 20, 0.6, True)]
    return SweepResult(command="pareto", instance="t", source="x", backend="highs", focus_classes=["c"],
                       series=["heterogeneous", "h100"], fleet_chips=["h100", "bertha"],
                       axes=[AxisInfo(label="tpot_ms", paths=[], values=[1, 2, 3], log=False)], points=pts)


def test_pareto_legend_explains_the_faded_markers(pareto):
    fig = pareto_figure(pareto)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert DOMINATED_LABEL in texts
    faded = [ln for ln in fig.axes[1].get_lines() if ln.get_alpha() == 0.3 and len(ln.get_xdata())]
    assert [list(ln.get_xdata()) for ln in faded] == [[15]]


def test_pareto_frontier_joins_solved_points_only(pareto):
    ax = pareto_figure(pareto).axes[1]
    front = next(ln for ln in ax.get_lines() if ln.get_label().startswith("heterogeneous fleet"))
    assert list(front.get_xdata()) == [10, 20]  # the unverified time-limit point at 30 is left out


def test_pareto_has_a_tokens_per_mw_panel(pareto):
    fig = pareto_figure(pareto)
    assert [ax.get_ylabel() for ax in fig.axes] == ["output tokens/s per chip", "$ per million output tokens",
                                                     "output tokens/s per MW"]
    assert len(fig.axes[2].get_lines()) == 2  # one per series with a solved point


def test_bench_scaling_axes_have_plain_tick_labels():
    summary = [{"solver": "cbc", "domains": d, "solve_s": 0.01 * d, "build_s": 0.002 * d, "status": "optimal"}
               for d in (10, 100, 1000)]
    fig = scaling_figure(summary)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_xticklabels() if t.get_text()]
    assert "100" in labels and all("10^" not in t and "$" not in t for t in labels)
