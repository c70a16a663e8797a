"""Failures an adversarial run found in re-planning, schedules, confidence, outputs and chip records.

Each test runs what the attacker or careless user ran and asserts the outcome the README promises:
exit 0 with a verified plan, exit 2 naming the field, never a traceback or a false "infeasible".
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodels.examples import h100, llama_70b
from costmodels.roofline import aggregated_step, decode_step, prefill_step
from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.failures import parse_failures
from placement.core.instance.loading import load_instance, parse_instance
from placement.core.operations.profile import MAX_PERIODS, read_profile
from placement.core.operations.schedule import schedule
from placement.core.pipeline.solve import solve
from placement.core.plans.migration import check_move_terms

TOY = "instances/melange-toy.yaml"
EXE = str(Path(sys.executable).parent / "placement")
TOY_CLASSES = ("short-in-short-out", "short-in-long-out", "long-in-short-out", "long-in-long-out")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def toy_plan(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    assert CliRunner().invoke(app, ["solve", TOY, "-q", "--json", str(path)]).exit_code == 0
    return path


def test_a_period_without_demand_is_a_valid_empty_plan(tmp_path):
    profile = tmp_path / "quiet.csv"
    profile.write_text("period,class,rate_rps\n" + "".join(f"night,{c},0\n" for c in TOY_CLASSES)
                       + "day,short-in-short-out,6\n")
    result = schedule(load_instance(TOY), read_profile(profile), backend="highs")
    night = result.periods[0]
    assert night.period == "night" and night.verified, night.violations
    assert night.chips == 0 and night.cost_usd_per_hour == 0
    r = CliRunner().invoke(app, ["schedule", TOY, "--profile", str(profile)])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("confidence", [0.05, 0.01])
def test_a_low_confidence_never_goes_below_the_physical_floor(confidence):
    plan = solve(load_instance("instances/bertha-lpddr.yaml").model_copy(update={"confidence": confidence}),
                 backend="highs")
    assert plan.status == "optimal" and plan.verified, plan.violations


def test_every_roofline_step_sits_above_its_floor():
    chip, model = h100(), llama_70b()
    b = np.array([1.0, 8.0, 64.0, 512.0])
    for st in (decode_step(chip, model, batch=b, context=4096, tp=8),
               prefill_step(chip, model, prompt=2048, batch=b, tp=4, pp=2),
               aggregated_step(chip, model, batch=b, context=2048, chunk_tokens=512, chunk_context=1024, tp=8)):
        floor = np.asarray(st.floor_s)
        assert np.all(floor > 0) and np.all(np.asarray(st.time_s) >= floor)
        peak = np.maximum(np.asarray(st.flops) / (8 * chip.flops("bf16")),
                          np.asarray(st.bytes) / (8 * chip.memory_bandwidth_bytes_per_s))
        assert np.all(floor >= peak * (1 - 1e-12))  # never below the whole replica at its peaks


def test_a_huge_failure_range_is_refused_before_it_is_expanded(toy_plan):
    with pytest.raises(InputError, match="beyond any group"):
        parse_failures(["a10g-pool:0-999999999"])
    r = CliRunner().invoke(app, ["replan", TOY, str(toy_plan), "--fail", "a10g-pool:0-999999999", "-q"])
    assert r.exit_code == 2 and "--fail a10g-pool:0-999999999" in r.output


@pytest.mark.parametrize("args", [["--move-usd", "1e30"], ["--amortise-h", "1e-300"], ["--amortise-h", "1e300"]])
def test_extreme_migration_prices_are_refused_not_a_false_infeasible(toy_plan, args):
    r = CliRunner().invoke(app, ["replan", TOY, str(toy_plan), "--set",
                                 "workload.classes.short-in-short-out.rate_rps=20", *args, "-q"])
    assert r.exit_code == 2, r.output
    assert args[0] in r.output


def test_the_largest_accepted_migration_price_still_solves(toy_plan):
    r = CliRunner().invoke(app, ["replan", TOY, str(toy_plan), "--set",
                                 "workload.classes.short-in-short-out.rate_rps=20", "--move-usd", "1e9",
                                 "--amortise-h", "1e-3", "-q"])
    assert r.exit_code == 0, r.output
    with pytest.raises(InputError, match="move-usd"):
        check_move_terms(float("nan"))


@pytest.mark.parametrize("hours", ["1e300", "1e-300", "9000"])
def test_extreme_period_hours_are_refused(tmp_path, hours):
    profile = tmp_path / "h.csv"
    profile.write_text(f"period,class,rate_rps,hours\nnight,short-in-short-out,1,{hours}\n")
    r = CliRunner().invoke(app, ["schedule", TOY, "--profile", str(profile)])
    assert r.exit_code == 2 and "hours between" in r.output


def test_too_many_periods_are_refused(tmp_path):
    profile = tmp_path / "many.csv"
    profile.write_text("period,class,rate_rps\n" + "".join(f"p{i},short-in-short-out,1\n"
                                                           for i in range(MAX_PERIODS + 1)))
    with pytest.raises(InputError, match="more than 1,000 periods"):
        read_profile(profile)
    at_most = io.StringIO("".join(profile.read_text().splitlines(keepends=True)[:MAX_PERIODS + 1]))
    assert len(read_profile(at_most)) == MAX_PERIODS


def test_a_profile_that_never_ends_is_refused():
    r = CliRunner().invoke(app, ["schedule", TOY, "--profile", "/dev/zero"])
    assert r.exit_code == 2 and "larger than" in r.output


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["solve", TOY, "-q", "--json", "-"], ["solve", TOY]])
def test_standard_output_on_a_full_device_is_exit_2(args):
    with open("/dev/full", "w") as full:
        done = subprocess.run([EXE, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300,
                              check=False)
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_the_report_on_a_full_device_is_exit_2(toy_plan):
    with open("/dev/full", "w") as full:
        done = subprocess.run([EXE, "report", str(toy_plan), "--html", "-", "--instance", TOY], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stderr


def test_survive_with_json_on_stdout_prints_only_json():
    done = _run("solve", TOY, "--survive", "domain:1", "--json", "-")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)  # a HiGHS banner in front would fail here
    assert plan["survive"] == "domain:1" and plan["provenance"] is not None


def test_replanned_plans_carry_their_provenance(toy_plan):
    done = _run("replan", TOY, str(toy_plan), "--set", "workload.classes.short-in-short-out.rate_rps=20",
                "--json", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["provenance"]["model"]


@pytest.mark.parametrize("field, value", [
    ("memory", [{"name": "hbm", "capacity_bytes": 1e-300, "bandwidth_bytes_per_s": 3.35e12}]),
    ("memory", [{"name": "hbm", "capacity_bytes": 80e9, "bandwidth_bytes_per_s": 1e-300}]),
    ("flops_per_s", {"bf16": 1e-300}),
    ("scale_out_bandwidth_bytes_per_s", 1e-300),
    ("scale_up_bandwidth_bytes_per_s", 1e300),
])
def test_chip_numbers_near_the_float_limits_are_input_errors(field, value):
    doc = {"name": "tiny", "model": "llama-3.1-8b",
           "workload": {"classes": [{"name": "chat", "rate_rps": 2, "prompt_tokens": 500, "output_tokens": 100,
                                     "ttft_ms": 1000, "tpot_ms": 50}]},
           "hardware": {"chips": [{"name": "h100x", "base": "h100", field: value}],
                        "domains": [{"name": "g", "chip": "h100x", "count": 2}]}}
    with pytest.raises(InputError, match=f"hardware.chips\\[0\\].{field}"):
        parse_instance(doc, "tiny.yaml")
