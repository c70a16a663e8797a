"""Bounded solves: the deadline reaches model builds and solves, the memory ceiling holds, HiGHS is the default.

* ``--memory-limit`` parses ``8G``, ``512M``, plain bytes; a bad value is exit 2 naming the option;
* a model whose estimate does not fit in the ceiling is not built: exit 4 naming the estimate and the limit;
* a CBC child under a tiny ``RLIMIT_AS`` fails cleanly (status ``error``, exit 4 from the CLI, no traceback);
  an in-process HiGHS solve of a process over the ceiling is cancelled;
* a deadline that has passed stops a model build (``OutOfTime``) and turns a solve into ``time_limit``
  without running the solver; no solve gets more than what is left (no floor of a tenth of the limit);
  the worker threads of ``threaded_map`` see the caller's limits;
* the size rule takes the 9-group all-modes bench fleet (320 columns, size 2,880) in two levels and keeps
  the shipped instances in one.

No assert depends on how fast the machine is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import typer
from click.testing import CliRunner

from placement.cli.app import app
from placement.cli.options import DEFAULT_SOLVER
from placement.core.instance.context import Context
from placement.core.instance.errors import EXIT_INPUT, EXIT_OK, EXIT_SOLVER
from placement.core.instance.loading import load_instance
from placement.core.pipeline.problem import build_problem
from solvers import limits, twolevel
from solvers.backends import DEFAULT_BACKEND, SolveOptions, run
from solvers.backends.highs import HighsBackend
from solvers.backends.threads import threaded_map
from solvers.milp import build_model, solve_model, time_left
from tests.test_signals import _market_split

COMMAND = typer.main.get_command(app)
TOY = "instances/melange-toy.yaml"
SPEC = "instances/spec-decode-draft.yaml"
AGG_PD_D100 = "benchmarks/instances/bench-leaf-spine-d100-k8-c6-s0-agg.pd.yaml"


def _problem(path: str):
    return build_problem(Context.of(load_instance(path), path))[0]


@pytest.fixture(scope="module")
def spec_problem():
    return _problem(SPEC)


@pytest.mark.parametrize("size", ["8G", "16384M", "17179869184"])  # above what a test process holds
def test_a_memory_limit_parses(size):
    r = CliRunner().invoke(COMMAND, ["solve", TOY, "-q", "--memory-limit", size])
    assert r.exit_code == EXIT_OK, r.output


@pytest.mark.parametrize("size", ["8 apples", "-1G", "0", "G", "1e3M"])
def test_a_bad_memory_limit_is_an_input_error_naming_the_option(size):
    r = CliRunner().invoke(COMMAND, ["solve", TOY, "-q", f"--memory-limit={size}"])
    assert r.exit_code == EXIT_INPUT, r.output
    assert "--memory-limit" in r.output and "expected a size" in r.output, r.output


def test_a_model_over_the_memory_limit_is_not_built():
    r = CliRunner().invoke(COMMAND, ["solve", SPEC, "-q", "--memory-limit", "100M"])
    assert r.exit_code == EXIT_SOLVER, r.output
    assert "would need an estimated" in r.output and "memory limit of 0.10 GiB" in r.output, r.output
    assert "--memory-limit" in r.output and "Traceback" not in r.output, r.output


def test_the_estimate_counts_at_least_the_nonzeros_built(spec_problem):
    from solvers.index import Index
    from solvers.variables import estimated_size

    variables, nonzeros = estimated_size(Index.from_problem(spec_problem))
    sol, _ = solve_model(spec_problem, backend="highs")
    assert variables == sol.variables and sol.nonzeros <= nonzeros <= 2 * sol.nonzeros


def test_a_cbc_child_out_of_its_address_space_fails_cleanly(spec_problem):
    m, _ = build_model(spec_problem)
    with limits.bounded(memory_bytes=1):  # the child gets the floor, 16 MiB: too little for this model
        assert limits.child_address_space() == limits.MIN_CHILD_BYTES
        outcome = run(m, "cbc", SolveOptions())
    assert outcome.status == "error" and not outcome.has_values
    assert "out of memory" in outcome.message and "--memory-limit" in outcome.message, outcome.message
    assert run(m, "cbc", SolveOptions()).status == "optimal"  # the same model without the ceiling


def test_a_cbc_child_killed_by_its_memory_limit_is_exit_4_from_the_cli():
    # The pre-build check and the build's look at memory would refuse first; switched off in this process,
    # the child meets its RLIMIT_AS.
    code = ("import sys; import solvers.limits as L; import solvers.model as M; M.check_model_fits = lambda *a: None; "
            "L.over_memory = lambda: None; "
            "from placement.cli.app import main; sys.argv = ['placement'] + sys.argv[1:]; main()")
    done = subprocess.run([sys.executable, "-c", code, "solve", SPEC, "-q", "--solver", "cbc", "--memory-limit", "1M"],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PLACEMENT_WORKERS": "1"})
    assert done.returncode == EXIT_SOLVER, done.stderr
    assert "out of memory" in done.stderr and "--memory-limit" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_highs_is_cancelled_when_the_process_is_over_the_ceiling():
    with limits.bounded(memory_bytes=1):
        outcome = HighsBackend().solve(_market_split(seed=3), SolveOptions())  # minutes if not stopped
    assert outcome.status in ("error", "feasible") and "stopped at the memory limit" in outcome.message, outcome


def test_a_passed_deadline_stops_the_model_build(spec_problem):
    with limits.bounded(deadline=time.monotonic() - 1), pytest.raises(limits.OutOfTime, match="building the model"):
        build_model(spec_problem)


def test_the_deadline_is_looked_at_while_a_build_runs(spec_problem, monkeypatch):
    checks = []
    monkeypatch.setattr(limits, "check_time", lambda what: checks.append(what))
    monkeypatch.setattr(limits, "_TICK", 512)  # the model has a few thousand variables, rows and keys
    build_model(spec_problem)
    assert "while building the model" in checks


def test_a_build_past_the_memory_ceiling_stops(spec_problem, monkeypatch):
    import solvers.model

    monkeypatch.setattr(solvers.model, "check_model_fits", lambda *a: None)  # the estimate alone would refuse it
    monkeypatch.setattr(limits, "_TICK", 512)  # the model has a few thousand variables, rows and keys
    with limits.bounded(memory_bytes=1), pytest.raises(limits.OverMemory, match="past the memory limit"):
        build_model(spec_problem, backend="highs")


def test_a_passed_deadline_makes_a_solve_a_time_limit_without_running_the_solver(spec_problem):
    with limits.bounded(deadline=time.monotonic() - 1):
        sol, _ = solve_model(spec_problem, backend="cbc", time_limit_s=100.0)
    assert sol.status == "time_limit" and not sol.replicas
    assert "time limit ran out" in sol.message, sol.message


def test_no_solve_gets_more_than_is_left():
    assert time_left(10.0, 12.0) == 0.0 and time_left(10.0, 4.0) == 6.0
    with limits.bounded(deadline=time.monotonic() + 5):
        assert 0 < limits.clip_time(100.0) <= 5 and limits.clip_time(1.0) == 1.0
        with limits.bounded(deadline=time.monotonic() + 3600):  # an outer, tighter deadline stays
            assert limits.clip_time(None) <= 5


def test_worker_threads_see_the_callers_limits():
    with limits.bounded(deadline=time.monotonic() + 60, memory_bytes=12345):
        seen = threaded_map(lambda _: (limits.seconds_left(), limits.memory_limit_bytes()), [1, 2, 3], workers=2)
    assert all(left is not None and 0 < left <= 60 and memory == 12345 for left, memory in seen)


def test_the_size_rule_takes_the_all_modes_bench_fleet_in_two_levels():
    p = _problem(AGG_PD_D100)
    assert twolevel._size(p) < twolevel.MIN_SIZE  # the old rule's one level
    assert twolevel.two_levels(p)


@pytest.mark.parametrize("path", [SPEC, "instances/mixed-fleet.yaml"])
def test_the_shipped_instances_stay_in_one_level(path):
    assert not twolevel.two_levels(_problem(path))


def test_the_rubin_lpx_instance_is_proven_in_two_levels():
    """Its attention–FFN pairings (micro-batch counts, expert-parallel FFN stages, whole numbers of LPX racks:
    ~9,000 kept columns on 2 sites) pass the size rule, and the collapsed fleet's bound proves its plan."""
    from placement.api import solve

    path = "instances/rubin-lpx-deepseek.yaml"
    assert twolevel.two_levels(_problem(path))
    plan = solve(load_instance(path), source=path)
    assert plan.verified and plan.solver.best_bound == pytest.approx(plan.solver.objective, rel=1e-9)


def test_the_default_backend_is_highs_everywhere():
    assert DEFAULT_BACKEND == DEFAULT_SOLVER == "highs"
    r = CliRunner().invoke(COMMAND, ["solve", "--help"])
    assert "highs (default)" in r.output, r.output
