"""The time limit bounds the whole solve and is a finite number of seconds.

* ``--time-limit`` NaN, inf, negative or zero is an input error (exit 2) naming the option;
* candidate generation counts: when it uses the whole limit the plan is "time_limit" without pools
  and says why (exit 4), and SIGALRM is left as it was;
* CBC runs under a watchdog: a binary that ignores its own limit (and SIGINT) is killed at the
  deadline, with no process left and an outcome "time_limit" without values.
"""

from __future__ import annotations

import os
import signal
import stat
import time

import pulp
import pytest
import typer
from click.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import EXIT_INPUT, EXIT_SOLVER
from placement.core.instance.loading import load_instance
from placement.core.pipeline.deadline import TimeLimitError
from placement.core.pipeline.solve import solve
from solvers.backends import SolveOptions
from solvers.backends.pulp_cmd import CbcBackend

COMMAND = typer.main.get_command(app)
TOY = "instances/melange-toy.yaml"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
@pytest.mark.parametrize("command", [["solve", TOY], ["compare", TOY],
                                     ["sweep", TOY, "--set", "workload.classes.0.rate_rps=1:2:2"]])
def test_a_time_limit_that_is_not_a_positive_finite_number_is_an_input_error(command, value):
    r = CliRunner().invoke(COMMAND, [*command, f"--time-limit={value}", "-q"] if command[0] != "compare"
                           else [*command, f"--time-limit={value}"])
    assert r.exit_code == EXIT_INPUT, r.output
    assert "--time-limit" in r.output and "finite number of seconds > 0" in r.output, r.output


def test_the_limit_counts_candidate_generation():
    inst = load_instance("instances/rubin-lpx-deepseek.yaml")
    before = signal.getsignal(signal.SIGALRM)
    plan = solve(inst, backend="highs", time_limit_s=1.0, began=time.monotonic() - 0.999)
    assert plan.status == "time_limit" and plan.pools == [] and not plan.verified
    assert "time limit of 1 s ran out during candidate generation" in plan.message
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_spent_limit_is_exit_4_with_a_message():
    r = CliRunner().invoke(COMMAND, ["solve", "instances/rubin-lpx-deepseek.yaml", "--time-limit", "1e-6", "-q"])
    assert r.exit_code == EXIT_SOLVER, r.output
    assert "time limit of 1e-06 s ran out" in r.output and "--time-limit" in r.output, r.output


def test_time_limit_error_is_exit_4():
    assert TimeLimitError("x").exit_code == EXIT_SOLVER


def test_a_harness_alarm_is_left_alone():
    """A caller that owns SIGALRM (benchmarks/fuzz_long.py) keeps it; the limit is checked after generation."""
    def harness(signum, frame):
        raise AssertionError("the harness alarm fired")

    previous = signal.signal(signal.SIGALRM, harness)
    try:
        plan = solve(load_instance("instances/rubin-lpx-deepseek.yaml"), backend="highs", time_limit_s=1.0,
                     began=time.monotonic() - 0.999)
        assert plan.status == "time_limit" and "ran out during candidate generation" in plan.message
        assert signal.getsignal(signal.SIGALRM) is harness
    finally:
        signal.signal(signal.SIGALRM, previous)


def _deaf_cbc(tmp_path):
    """A stand-in CBC binary that ignores ``-sec`` and SIGINT and records its pid."""
    script = tmp_path / "cbc"
    script.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\ntrap '' INT\nwhile :; do sleep 1; done\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_cbc_that_ignores_its_limit_is_killed_at_the_deadline(tmp_path, monkeypatch):
    m = pulp.LpProblem("t")
    x = m.add_variable("x", 0, 5, pulp.LpInteger)
    m += x
    m += x >= 1
    backend = CbcBackend()
    path = _deaf_cbc(tmp_path)
    make = backend.make_solver

    def deaf(options, log_path):
        solver = make(options, log_path)
        solver.path = path
        return solver

    monkeypatch.setattr(backend, "make_solver", deaf)
    outcome = backend.solve(m, SolveOptions(time_limit_s=0.3))
    assert outcome.status == "time_limit" and not outcome.has_values, outcome
    assert "watchdog" in outcome.message
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
