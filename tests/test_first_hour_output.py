"""What a newcomer reads in the first hour (issue 35): the printed plan draws every pool's band against its
SLO and the headroom, numbers read as numbers (no ``7.99e+03``, no ``33.3333333333``), charts list no series
without points, the roofline marks the batches that do not fit, and a plan solved with run options
(--confidence, --headroom, --prices) is checked and reported against its instance file as it was solved."""

import json
import re

import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.cli.study_report import print_result
from placement.core.plans.confidence import band_rows, slos_inside_bands
from placement.core.plans.plan import read_plan
from placement.studies.sweep import AxisInfo, Point, SweepResult
from tests.toy_fixture import BANDED

runner = CliRunner()
EXPONENT = re.compile(r"\d\.?\d*e[+-]\d")


def _instance(tmp_path, **fields):
    path = tmp_path / "banded.yaml"
    path.write_text(yaml.safe_dump({**BANDED, **fields}))
    return path


def test_the_printed_plan_draws_each_pools_band_and_the_headroom(tmp_path):
    path = _instance(tmp_path)
    r = runner.invoke(app, ["solve", str(path), "--headroom", "0.8", "--json", str(tmp_path / "p.json")])
    assert r.exit_code == 0, r.output
    plan = read_plan(tmp_path / "p.json")
    rows = band_rows(plan)
    out = r.output
    assert "against the SLOs: p10–p90 bands" in out and "┊ the SLO planned to (slo_headroom)" in out
    strips = [m.group(0) for ln in out.splitlines() if (m := re.search(r"[·━┃┊│●]{41}", ln)) and "●" in m.group(0)]
    assert len(strips) == len(rows)  # one 41-character strip per row, its stated value a dot
    assert sum("━" in s for s in strips) == sum(r.high is not None for r in rows) > 0  # its band drawn
    assert sum("┊" in s for s in strips) >= 1 and all(r.planned is not None for r in rows if r.figure != "load")
    for line in slos_inside_bands(plan):
        assert f"SLO inside the band: {line}" in out
    assert not EXPONENT.search(out), EXPONENT.search(out)


def test_sweep_values_and_costs_read_as_numbers(capsys):
    from rich.console import Console

    point = Point(index=0, series="heterogeneous", kind="full", values={"rate_rps": 100 / 3}, status="optimal",
                  verified=True, cost_usd_per_hour=12345.678, usd_per_million_output_tokens=0.0123456,
                  tokens_per_s_per_chip=7990.2, tokens_per_s_per_user=33.33333, power_w=2.5e6)
    result = SweepResult(command="sweep", instance="t", source="t", backend="highs", series=["heterogeneous"],
                         focus_classes=[],
                         axes=[AxisInfo(label="rate_rps", paths=["workload.classes.c.rate_rps"], values=[100 / 3],
                                        log=False)], points=[point])
    print_result(Console(width=250, force_terminal=False), result)
    out = capsys.readouterr().out
    assert "33.33 " in out and "33.3333" not in out
    assert "12,345.68" in out and "7,990" in out and "0.0123" in out and "2,500" in out
    assert not EXPONENT.search(out)


def test_the_pareto_png_legend_lists_only_series_with_points():
    from placement.cli.plots import pareto_figure

    def pt(i, series, kind, status="optimal"):
        return Point(index=i, series=series, kind=kind, values={"tpot_ms": i}, status=status,
                     verified=status == "optimal", tokens_per_s_per_user=10.0 * i, tokens_per_s_per_chip=100.0 / i,
                     usd_per_million_output_tokens=1.0 * i, frontier=True, frontier_throughput=True,
                     output_tokens_per_s=1000.0, power_w=1000.0)
    result = SweepResult(command="pareto", instance="t", source="t", backend="highs", focus_classes=["c"],
                         series=["heterogeneous", "h100"], axes=[AxisInfo(label="tpot_ms", paths=[], values=[1, 2],
                                                                           log=False)],
                         points=[pt(1, "heterogeneous", "full"), pt(2, "heterogeneous", "full"),
                                 pt(1, "h100", "homogeneous", "infeasible"), pt(2, "h100", "homogeneous", "infeasible")])
    fig = pareto_figure(result)
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert labels and not any("h100" in t for t in labels)
    note = "not drawn, no verified plan with a predicted TPOT at any point: only h100"
    assert any(note in t.get_text() for t in fig.texts)


def test_the_roofline_png_marks_the_batches_that_do_not_fit():
    from placement.cli.roofline_report import (
        PLOT_BATCHES,
        _chips,
        _models,
        plot_fits,
        roofline_figure,
        roofline_summary,
    )

    s = roofline_summary("h100", "llama-3.1-8b", context=8192, batch=8)
    fits = plot_fits(_chips()["h100"], _models()["llama-3.1-8b"], s)
    assert fits[0] and not fits[-1] and fits == sorted(fits, reverse=True)  # small batches fit, large do not
    first_out = int(PLOT_BATCHES[fits.index(False)])
    labels = [t.get_text() for t in roofline_figure(_chips()["h100"], _models()["llama-3.1-8b"], s)
              .axes[0].get_legend().get_texts()]
    assert f"does not fit in memory (B={first_out}…4096)" in labels


def test_a_plan_solved_with_run_options_is_checked_and_reported_as_solved(tmp_path):
    path = _instance(tmp_path)
    plan = tmp_path / "plan.json"
    r = runner.invoke(app, ["solve", str(path), "--confidence", "0.9", "--headroom", "0.9", "--prices", "on-demand",
                            "--json", str(plan), "-q"])
    assert r.exit_code == 0, r.output
    says = json.loads(plan.read_text())
    assert says["confidence"] == 0.9 and says["provenance"]["slo_headroom"] == 0.9
    r = runner.invoke(app, ["check", str(path), str(plan)])
    assert r.exit_code == 0 and "every constraint holds" in r.output, r.output
    for setting in ("confidence 0.9", "slo_headroom 0.9", "price set on-demand"):
        assert setting in r.output
    r = runner.invoke(app, ["report", str(plan), "--instance", str(path), "--html", str(tmp_path / "p.html")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["deploy", str(plan), "--instance", str(path), "--format", "k8s", "--out",
                            str(tmp_path / "deploy")])
    assert r.exit_code == 0, r.output
    # an instance that asks for another headroom is another question: the plan fails its check
    other = _instance(tmp_path, slo_headroom=0.7)
    r = runner.invoke(app, ["check", str(other), str(plan)])
    assert r.exit_code == 5 and "provenance.slo_headroom" in r.output
