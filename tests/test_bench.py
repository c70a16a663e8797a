"""``placement bench``: records per instance and solver, fresh processes, summary, plot, JSON."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from placement.bench.generate import build_instance, write_instance
from placement.bench.options import BenchOptions
from placement.bench.plots import scaling_plot
from placement.bench.report import baseline_rows, markdown, ratios, summarise, table_rows
from placement.bench.runner import bench, run_case
from placement.cli.app import app
from placement.core.instance.errors import InputError

FIELDS = ("build_s", "solve_s", "status", "objective", "best_bound", "gap", "variables", "integer_variables",
          "constraints", "nonzeros", "peak_rss_mb", "solver_child_peak_mb", "candidates_s", "domains", "groups")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    doc = build_instance(domains=16, chip_types=["h100", "b200"], classes=2, family="leaf-spine", seed=0,
                         modes=["aggregated", "pd"], rates={"chat": 30.0, "summarisation": 4.0})
    path = write_instance(doc, d / "inst.yaml")
    return bench([str(path)], solvers=["highs", "cbc"], time_limit_s=60, baselines=["greedy", "lp"], work_dir=d,
                 workers=2)


def test_every_case_has_the_issue_fields(result):
    assert [(c["solver"], c["repeat"]) for c in result["cases"]] == [("highs", 0), ("cbc", 0)]
    for c in result["cases"]:
        assert c["status"] == "optimal", c.get("error") or c.get("message")
        for f in FIELDS:
            assert f in c, f
        assert c["status"] == "optimal" and c["gap"] == 0.0
        assert c["peak_rss_mb"] > 10 and c["variables"] > 0 and c["nonzeros"] >= c["variables"] // 2
    highs, cbc = result["cases"]
    assert highs["objective"] == pytest.approx(cbc["objective"], rel=1e-6)
    assert cbc["solver_child_peak_mb"] > 0  # CBC runs as a child of the case process
    prep = result["instances"][0]
    assert prep["status"] == "ok" and prep["domains"] == 16 and prep["columns"] > 0
    json.dumps(result, default=str)


def test_baselines_are_compared_with_the_milp(result):
    by = {b["method"]: b for b in result["baselines"]}
    opt = result["cases"][0]["objective"]
    assert by["greedy"]["status"] == "finished" and by["greedy"]["objective"] >= opt * (1 - 1e-6)
    assert by["greedy"]["milp_objective"] == pytest.approx(opt)
    assert by["lp-highs"]["objective"] <= opt * (1 + 1e-6) and by["lp-highs"]["reaches_milp_optimum"] is None
    rows = baseline_rows(result["baselines"])
    assert rows[0][2] == "method" and len(rows) == 3


def test_summary_ratio_table_and_plot(result, tmp_path):
    s = summarise(result["cases"])
    r = ratios(s)
    assert set(r) == {result["cases"][0]["instance"]} and r[result["cases"][0]["instance"]] > 0
    md = markdown(table_rows(s))
    assert md.startswith("| instance |") and "CBC/HiGHS" in md and md.count("\n") == 3
    out = scaling_plot(s, tmp_path / "p.png")
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_repeats_are_summarised_by_median():
    rows = [{"instance": "i", "solver": "highs", "solve_s": t, "build_s": 0.1, "status": "optimal"}
            for t in (1.0, 5.0, 2.0)]
    (s,) = summarise(rows)
    assert s["solve_s"] == 2.0 and s["repeats"] == 3


def test_a_runaway_case_is_killed_at_its_hard_limit():
    out = run_case({"instance": "x", "solver": "highs", "problem_path": "/nonexistent", "limit_s": 0.05})
    assert out["status"] == "killed" and "hard limit" in out["error"]


def test_cli_bench_generates_sizes_and_writes_json(tmp_path):
    js = tmp_path / "r.json"
    r = CliRunner().invoke(app, ["bench", "--sizes", "8", "--chip-types", "1", "--classes", "1", "--modes",
                                 "aggregated", "--solvers", "highs", "--time-limit", "30", "--json", str(js)])
    assert r.exit_code == 0, r.output
    data = json.loads(js.read_text())
    assert data["cases"][0]["status"] == "optimal" and data["cases"][0]["domains"] == 8
    assert "placement bench" in data["command"] or "bench" in data["command"]
    assert list(tmp_path.glob("bench-leaf-spine-d8-*.yaml"))
    bad = CliRunner().invoke(app, ["bench", "--solvers", "highs"])
    assert bad.exit_code == 2


@pytest.mark.parametrize(("kwargs", "option"), [
    ({}, "INSTANCES"),
    ({"instances": ("a.yaml",), "solvers": ()}, "--solvers"),
    ({"instances": ("a.yaml",), "repeat": 0}, "--repeat"),
    ({"instances": ("a.yaml",), "time_limit_s": 0.0}, "--time-limit"),
    ({"instances": ("a.yaml",), "baselines": ("random",)}, "--baselines"),
    ({"sizes": (8,), "modes": ("pd-magic",)}, "--modes"),
    ({"instances": ("a.yaml",), "plot_x": "chips"}, "--plot-x"),
])
def test_bench_options_are_checked_when_built(kwargs, option):
    with pytest.raises(InputError) as e:
        BenchOptions(**kwargs)
    assert e.value.field == option
