"""The CLI: exit codes, JSON output, check, compare — as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from placement.cli.app import app

runner = CliRunner()
TOY = "instances/melange-toy.yaml"


def test_solve_writes_json_and_check_accepts_it(tmp_path):
    out = tmp_path / "plan.json"
    r = runner.invoke(app, ["solve", TOY, "--json", str(out), "--solver", "highs"])
    assert r.exit_code == 0, r.output
    assert "verified" in r.output
    plan = json.loads(out.read_text())
    assert plan["status"] == "optimal" and plan["solver"]["backend"] == "highs"
    r = runner.invoke(app, ["check", TOY, str(out)])
    assert r.exit_code == 0, r.output


def test_check_rejects_a_tampered_plan(tmp_path):
    out = tmp_path / "plan.json"
    assert runner.invoke(app, ["solve", TOY, "--json", str(out), "-q"]).exit_code == 0
    plan = json.loads(out.read_text())
    for pool in plan["pools"]:
        for s in pool["sites"]:
            s["load_rps"] = [{**r, "rate_rps": 3 * r["rate_rps"]} for r in s["load_rps"]]
    out.write_text(json.dumps(plan))
    r = runner.invoke(app, ["check", TOY, str(out)])
    assert r.exit_code == 5, r.output
    assert "violation" in r.output


def test_unknown_backend_is_a_solver_failure_not_a_traceback():
    r = runner.invoke(app, ["solve", TOY, "--solver", "no-such-solver", "-q"])
    assert r.exit_code == 4, r.output
    assert "Traceback" not in r.output


def test_demand_beyond_the_fleet_is_infeasible_with_a_diagnosis(tmp_path):
    doc = yaml.safe_load(Path(TOY).read_text())
    doc["workload"]["classes"][0]["rate_rps"] = 100_000
    p = tmp_path / "big.yaml"
    p.write_text(yaml.safe_dump(doc))
    r = runner.invoke(app, ["solve", str(p), "-q"])
    assert r.exit_code == 3, r.output
    assert "infeasible" in r.output


def test_bad_option_names_the_option():
    r = runner.invoke(app, ["solve", TOY, "--objective", "speed"])
    assert r.exit_code == 2
    assert "--objective" in r.output


def test_missing_file_is_an_input_error():
    r = runner.invoke(app, ["validate", "no/such/file.yaml"])
    assert r.exit_code == 2
    assert "no/such/file.yaml" in r.output


def test_compare_lists_each_homogeneous_fleet(tmp_path):
    out = tmp_path / "cmp.json"
    r = runner.invoke(app, ["compare", TOY, "--json", str(out)])
    assert r.exit_code == 0, r.output
    rows = json.loads(out.read_text())
    labels = [row["label"] for row in rows]
    assert labels == ["heterogeneous, all modes", "only a100-80gb", "only a10g"]
    costs = {row["label"]: row["cost_usd_per_hour"] for row in rows}
    # Heterogeneous is never worse than either homogeneous fleet.
    assert costs["heterogeneous, all modes"] <= min(c for c in costs.values() if c is not None) + 1e-9


def test_solve_compare_attaches_savings_to_the_plan(tmp_path):
    out = tmp_path / "plan.json"
    r = runner.invoke(app, ["solve", TOY, "--compare", "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    rows = {c["label"]: c for c in json.loads(out.read_text())["comparisons"]}
    # Published Mélange numbers: A100-only $7.34/h; the mix ($6.70) saves 1 - 6.70/7.34.
    assert rows["only a100-80gb"]["cost_usd_per_hour"] == 7.34
    assert abs(rows["only a100-80gb"]["savings"] - (1 - 6.70 / 7.34)) < 1e-9
    assert rows["only a10g"]["savings"] > 0


def test_quiet_solve_prints_nothing_on_stdout_not_even_the_highs_banner(tmp_path):
    """HiGHS prints a banner from C++ on the first solver of a process; -q output must stay empty
    (a fresh process: the banner is printed once per process)."""
    import subprocess
    import sys
    from pathlib import Path

    exe = str(Path(sys.executable).parent / "placement")
    out = tmp_path / "plan.json"
    done = subprocess.run([exe, "solve", "instances/melange-toy.yaml", "--solver", "highs", "-q", "--json", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout
    assert json.loads(out.read_text())["status"] == "optimal"


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"placement {version('placement')}"


def test_option_choices_are_the_library_words():
    """The CLI's enums repeat the library's tuples (so that --help need not import them)."""
    from costmodels.roofline import STAGES
    from placement.cli.options import Executor, Family, Precision, Prices, Stage
    from placement.studies.executor import EXECUTORS
    from topology.chips import PRECISIONS
    from topology.generators import FAMILIES
    from topology.prices import load_price_sets

    assert [e.value for e in Executor] == list(EXECUTORS)
    assert [e.value for e in Stage] == list(STAGES)
    assert sorted(e.value for e in Precision) == sorted(PRECISIONS)
    assert [e.value for e in Family] == list(FAMILIES)
    assert [e.value for e in Prices] == list(load_price_sets())


def test_a_wrong_choice_is_a_usage_error_listing_the_choices():
    r = runner.invoke(app, ["roofline", "--chip", "h100", "--model", "llama-3.1-70b", "--stage", "encode"])
    assert r.exit_code == 2 and "--stage" in r.output and "decode-attention" in r.output


def test_help_imports_no_heavy_module():
    """``placement --help`` loads typer, not the cost models, solvers, plots or rich tables."""
    code = ("import sys; from placement.cli.app import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = ['numpy', 'pulp', 'highspy', 'networkx', 'matplotlib', 'ray', 'rich.table', 'pydantic', "
            "'costmodels', 'solvers', 'placement.core.instance.loading']\n"
            "print(sorted(m for m in heavy if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
