"""The library API (placement.api): every CLI option of a command has its keyword twin, and each
function does what its command does."""

import inspect
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import placement
from placement import api
from placement.cli.app import app
from placement.core.instance.errors import InputError, VerificationError

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "instances" / "melange-toy.yaml"

#: Command → its library function.
FUNCTIONS = {"solve": api.solve, "check": api.check, "capacity": api.capacity, "compare": api.compare,
             "sweep": api.sweep, "pareto": api.pareto, "marginal": api.marginal, "replan": api.replan,
             "schedule": placement.schedule, "kv-prices": api.kv_prices, "deploy": api.deployment,
             "report": api.html_report}

#: CLI parameter → library keyword, where the names differ (library names carry units, no CLI abbreviations).
RENAMES = {"solver": "backend", "time_limit": "time_limit_s", "memory_limit": "memory_limit_bytes",
           "with_compare": "compare", "max_pools": "max_pools_per_stage", "class_": "classes",
           "probe_time_limit": "probe_time_limit_s",
           "dry_run": "dry_run"}
#: Per command, renames that hold for it alone.
COMMAND_RENAMES = {"sweep": {"set_": "assignments"}, "pareto": {"sweep": "sweeps", "set_": "changes"},
                   "replan": {"set_": "changes", "fail": "events", "move_usd": "events", "amortise_h": "events"},
                   "marginal": {"plan_path": "plan"}, "check": {"plan_path": "plan"}}


def _cli_params(name: str) -> list[str]:
    return [p.name for p in typer.main.get_command(app).commands[name].params]


@pytest.mark.parametrize("command", sorted(FUNCTIONS))
def test_every_cli_option_has_its_library_twin(command):
    fn = FUNCTIONS[command]
    params = inspect.signature(fn).parameters
    only = api.CLI_ONLY.get(command, {})
    missing = []
    for p in _cli_params(command):
        if p in only:
            continue
        twin = COMMAND_RENAMES.get(command, {}).get(p, RENAMES.get(p, p))
        if twin not in params:
            missing.append(f"{p} (expected {twin})")
    assert not missing, f"{command}: CLI options without a library twin: {missing}"
    # options are keyword-only: only the instance, plan and the command's main input are positional
    positional = [n for n, q in params.items() if q.kind is q.POSITIONAL_OR_KEYWORD]
    assert len(positional) <= 3, positional
    for why in only.values():
        assert why.strip()


def test_cli_only_names_only_real_options():
    for command, only in api.CLI_ONLY.items():
        assert set(only) <= set(_cli_params(command)), command


def test_public_names_resolve_to_the_api():
    for name in ("solve", "replan", "capacity", "compare", "sweep", "pareto", "marginal", "kv_prices", "deployment",
                 "html_report", "with_changes"):
        assert getattr(placement, name) is getattr(api, name)
        assert name in placement.__all__


def test_with_changes_validates_as_on_load():
    inst = placement.load_instance(TOY)
    cls = inst.workload.classes[0].name
    changed = placement.with_changes(inst, {f"workload.classes.{cls}.rate_rps": 7.5})
    assert changed.workload.classes[0].rate_rps == 7.5 and inst.workload.classes[0].rate_rps != 7.5
    with pytest.raises(InputError, match="rate_rps"):
        placement.with_changes(inst, {f"workload.classes.{cls}.rate_rps": -1})
    assert placement.with_changes(inst, {}) is inst


def test_solve_options_match_the_cli(tmp_path):
    inst = placement.load_instance(TOY)
    out = tmp_path / "p.json"
    r = CliRunner().invoke(app, ["solve", str(TOY), "--headroom", "0.9", "--max-pools-per-stage", "2",
                                 "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    plan = placement.solve(inst, headroom=0.9, max_pools_per_stage=2, source=str(TOY))
    cli = json.loads(out.read_text())
    assert plan.cost_usd_per_hour == pytest.approx(cli["cost_usd_per_hour"])
    assert [p.chip for p in plan.pools] == [p["chip"] for p in cli["pools"]]
    with pytest.raises(InputError, match="--confidence"):
        placement.solve(inst, confidence=1.5)
    with pytest.raises(InputError, match="--survive"):
        placement.solve(inst, survive="rack:2")


def test_solve_settings_last_for_the_call_only(tmp_path, monkeypatch):
    import os

    from placement.core.replicas.candidate_cache import CACHE_DIR_ENV

    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    plan = placement.solve(placement.load_instance(TOY), cache_dir=tmp_path / "cache")
    assert plan.verified and CACHE_DIR_ENV not in os.environ
    assert any((tmp_path / "cache").iterdir())


def test_capacity_compare_replan_deploy_report_through_the_api(tmp_path):
    inst = placement.load_instance(TOY)
    caps = placement.capacity(inst, classes=[inst.workload.classes[0].name], band=False)
    assert caps[0].status == "optimal" and caps[0].verified and caps[0].output_tokens_per_s > 0
    rows = placement.compare(inst, priors="low")
    assert rows and rows[0].label
    with pytest.raises(InputError, match="--priors"):
        placement.compare(inst, priors="median")
    plan = placement.solve(inst)
    cls = inst.workload.classes[0].name
    new = placement.replan(inst, plan, changes={f"workload.classes.{cls}.rate_rps":
                                                2 * inst.workload.classes[0].rate_rps})
    assert new.verified and new.cost_usd_per_hour >= plan.cost_usd_per_hour
    files = placement.deployment(plan, fmt="k8s", instance=inst)
    assert "README.md" in files and "bench.sh" in files
    with pytest.raises(InputError, match="--image"):
        placement.deployment(plan, fmt="k8s", image="vllm/vllm-openai:v1; rm -rf /")
    with pytest.raises(InputError, match="--chips-per-node"):
        placement.deployment(plan, fmt="k8s", chips_per_node={"h100; x": 8})
    bad = plan.model_copy(deep=True)
    bad.pools[0].replicas += 1
    with pytest.raises(VerificationError):
        placement.deployment(bad, fmt="k8s", instance=inst)
    assert placement.html_report(plan, instance=inst).lstrip().lower().startswith("<!doctype html")


def test_the_api_reference_builds_offline_and_is_current():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "docs" / "build_api.py"), "--check"], check=False,
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_packages_ship_their_type_hints():
    for package in ("placement", "topology", "costmodels", "solvers"):
        assert (ROOT / package / "py.typed").exists()
    text = (ROOT / "pyproject.toml").read_text()
    assert text.count('"py.typed"') == 4


def test_the_orchestrator_example_runs_as_written(monkeypatch):
    import doctest

    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "docs" / "orchestrator.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10 and result.failed == 0
