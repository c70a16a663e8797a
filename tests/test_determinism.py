"""Determinism and safety for library callers and orchestration tools.

* the same instance gives the same plan, byte for byte (``Plan.canonical_json``), feasible or not;
* concurrent ``solve()`` calls from threads and from processes do not collide (solver temp
  files, logs, names) and give the same bytes as a sequential solve;
* ``placement solve --json`` writes atomically: a bad path fails *before* the solve with exit 2,
  and a failed write leaves neither a partial file nor a temporary one;
* a solver crash or a time limit without a plan is a status (exit 4), never an exception.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest
import typer
from click.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import EXIT_INPUT, EXIT_SOLVER, InputError
from placement.core.instance.loading import load_instance
from placement.core.pipeline.solve import solve
from placement.core.plans.output import write_atomic

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "instances" / "melange-toy.yaml"
PD = ROOT / "instances" / "bertha-lpddr.yaml"
INFEASIBLE = ROOT / "tests" / "bad_instances" / "demand-beyond-fleet.yaml"
CASES = [TOY, PD, INFEASIBLE]
COMMAND = typer.main.get_command(app)
runner = CliRunner()


def _canonical(path: str, backend: str = "cbc") -> str:
    return solve(load_instance(path), backend=backend).canonical_json()


@pytest.fixture(scope="module")
def reference() -> dict[tuple[str, str], str]:
    return {(str(p), b): _canonical(str(p), b) for p in CASES for b in ("cbc", "highs")}


@pytest.mark.parametrize("backend", ["cbc", "highs"])
def test_same_instance_same_bytes(reference, backend):
    for p in CASES:
        again = _canonical(str(p), backend)
        assert again == reference[str(p), backend], p
    plan = json.loads(reference[str(INFEASIBLE), backend])
    assert plan["status"] == "infeasible" and plan["diagnosis"]


@pytest.mark.parametrize("backend", ["cbc", "highs"])
def test_concurrent_solves_from_threads(reference, backend):
    jobs = [str(CASES[k % len(CASES)]) for k in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda p: _canonical(p, backend), jobs))
    for path, plan in zip(jobs, got):
        assert plan == reference[path, backend], path


def test_concurrent_solves_from_processes(reference):
    jobs = [str(PD), str(INFEASIBLE)]  # one each: spawning (and importing) dominates the time
    ctx = multiprocessing.get_context("spawn")  # fork would copy solver state mid-flight
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        got = list(pool.map(_canonical, jobs))
    for path, plan in zip(jobs, got):
        assert plan == reference[path, "cbc"], path


def test_no_solver_temp_files_are_left_behind(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda _: _canonical(str(PD)), range(4)))
    finally:
        tempfile.tempdir = None
    assert sorted(os.listdir(tmp_path)) == []


# ---- atomic output -------------------------------------------------------------------------------


def _solve_cli(*args: str):
    r = runner.invoke(COMMAND, ["solve", "-q", str(TOY), *args])
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    return r


def test_json_to_a_bad_place_is_an_input_error_before_the_solve(tmp_path, monkeypatch):
    import importlib

    def no_solve(*a, **k):  # the path is checked first: no solve may start
        raise AssertionError("solved before checking the output path")

    monkeypatch.setattr(importlib.import_module("placement.core.pipeline.solve"), "solve", no_solve)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for target, words in ((tmp_path / "absent" / "plan.json", "does not exist"),
                          (a_file / "plan.json", "is not a folder"),
                          (tmp_path, "is a directory")):
        r = _solve_cli("--json", str(target))
        assert r.exit_code == EXIT_INPUT and words in r.output, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_json_is_written_whole(tmp_path):
    out = tmp_path / "plan.json"
    r = _solve_cli("--json", str(out))
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["status"] == "optimal"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "plan.json"
    out.write_text("old plan")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    r = _solve_cli("--json", str(out))
    assert r.exit_code == EXIT_INPUT and "No space left on device" in r.output, r.output
    assert out.read_text() == "old plan"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_an_interrupted_write_leaves_no_temporary(tmp_path, monkeypatch):
    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "plan.json", "{}")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError):
        write_atomic(tmp_path / "missing" / "plan.json", "{}")


# ---- solver failure is a status -----------------------------------------------------------------------


def test_a_solver_crash_is_a_status_not_an_exception(monkeypatch):
    import pulp

    def crash(self, lp, *a, **k):
        raise pulp.PulpSolverError("cbc died with signal 11")

    monkeypatch.setattr(pulp.PULP_CBC_CMD, "actualSolve", crash)
    plan = solve(load_instance(TOY), backend="cbc")
    assert plan.status == "error" and "signal 11" in plan.message
    r = _solve_cli("--solver", "cbc")
    assert r.exit_code == EXIT_SOLVER and "signal 11" in r.output, r.output


def test_a_time_limit_without_a_plan_is_a_status(request):
    from solvers.backends import CbcBackend, Outcome, register_solver

    class OutOfTime(CbcBackend):
        def solve(self, model, options):
            return Outcome("time_limit", "cbc: stopped on time limit", False, None, options.time_limit_s, "cbc")

    register_solver("cbc", OutOfTime)
    request.addfinalizer(lambda: register_solver("cbc", CbcBackend))
    plan = solve(load_instance(TOY), backend="cbc", time_limit_s=0.5)
    assert plan.status == "time_limit" and plan.pools == []
    r = _solve_cli("--solver", "cbc", "--time-limit", "0.5")
    assert r.exit_code == EXIT_SOLVER and "time_limit" in r.output, r.output


def test_a_real_short_time_limit_never_raises():
    plan = solve(load_instance(PD), time_limit_s=0.01)
    assert plan.status in ("optimal", "feasible", "time_limit")
    assert plan.status == "time_limit" or plan.verified


def test_written_plans_get_ordinary_permissions(tmp_path):
    import stat

    out = tmp_path / "plan.json"
    write_atomic(out, "{}")  # a new file: 0666 minus the umask, not mkstemp's 0600
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
    out.chmod(0o640)
    write_atomic(out, "{}")  # an existing file keeps its mode
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
