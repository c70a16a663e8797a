"""The bench runner hands its problem to the case processes as data: JSON, read back equal, nothing executed."""

from __future__ import annotations

import json
import math
from pathlib import Path

from placement.bench.runner import read_problem, write_problem
from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.core.pipeline.problem import build_problem

ROOT = Path(__file__).resolve().parents[1]


def test_a_generated_problem_round_trips_through_its_json_file(tmp_path):
    problem, _ = build_problem(Context.of(load_instance(ROOT / "instances" / "rubin-lpx-deepseek.yaml")))
    assert any(math.isinf(c.pair_max_latency_s) for c in problem.columns)  # written as Infinity
    path = tmp_path / "p.json"
    write_problem(problem, str(path))
    assert json.loads(path.read_text())["columns"]  # plain JSON (Python's reader takes Infinity)
    assert read_problem(str(path)) == problem


def test_a_file_that_is_not_a_problem_is_refused(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"__reduce__": "os.system"}')
    try:
        read_problem(str(path))
    except ValueError as e:
        assert "validation error" in str(e)
    else:
        raise AssertionError("accepted")
