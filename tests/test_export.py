"""``placement export``: LP/MPS files any solver can read, deterministic names, same optimum."""

from __future__ import annotations

import highspy
import pytest
from typer.testing import CliRunner

from placement.bench.export import export_instance
from placement.bench.generate import build_instance, write_instance
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.core.pipeline.problem import build_problem
from solvers.milp import solve

RATES = {"chat": 30.0, "summarisation": 4.0}


@pytest.fixture(scope="module")
def instance_path(tmp_path_factory):
    doc = build_instance(domains=24, chip_types=["h100", "b200"], classes=2, family="leaf-spine", seed=0,
                         modes=["aggregated", "pd"], rates=RATES)
    return write_instance(doc, tmp_path_factory.mktemp("exp") / "inst.yaml")


def _highs_objective(path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-9)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


def test_files_are_deterministic_and_name_every_family(instance_path, tmp_path):
    inst = load_instance(instance_path)
    a = export_instance(inst, lp=tmp_path / "a.lp", mps=tmp_path / "a.mps")
    b = export_instance(inst, lp=tmp_path / "b.lp", mps=tmp_path / "b.mps")
    assert (tmp_path / "a.lp").read_bytes() == (tmp_path / "b.lp").read_bytes()
    assert (tmp_path / "a.mps").read_bytes() == (tmp_path / "b.mps").read_bytes()
    assert a["variables"] == b["variables"] > 0 and a["nonzeros"] > 0
    text = (tmp_path / "a.lp").read_text()
    for family in ("route_split__chat", "step_coverage__", "replica_capacity__", "site_units__", "n__", "y__",
                   "x__chat_pd", "f__"):
        assert family in text, family


def test_external_solver_finds_the_same_optimum(instance_path, tmp_path):
    inst = load_instance(instance_path)
    export_instance(inst, lp=tmp_path / "m.lp", mps=tmp_path / "m.mps")
    problem, _ = build_problem(Context.of(inst))
    ours = solve(problem, backend="highs")
    assert ours.status == "optimal"
    # The exported objective carries the tie-breaks (<= ~1e-7 relative).
    for path in (tmp_path / "m.mps", tmp_path / "m.lp"):
        assert _highs_objective(path) == pytest.approx(ours.objective, rel=1e-6)


def test_cli_export_and_its_errors(instance_path, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["export", str(instance_path), "--mps", str(tmp_path / "c.mps")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "c.mps").stat().st_size > 0 and "variables" in ok.output
    assert runner.invoke(app, ["export", str(instance_path)]).exit_code == 2
    assert runner.invoke(app, ["export", str(instance_path), "--lp", str(tmp_path / "x.mps")]).exit_code == 2
    assert runner.invoke(app, ["export", str(instance_path), "--lp", str(tmp_path / "no" / "x.lp")]).exit_code == 2
    assert runner.invoke(app, ["export", str(tmp_path / "missing.yaml"), "--lp", "x.lp"]).exit_code == 2
