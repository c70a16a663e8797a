"""The long runs, as tests behind the ``slow`` marker (deselected by the normal test command, pyproject.toml).

``pytest -m slow tests/test_slow_benchmarks.py`` runs them:

* every concrete case of the reliability review (``benchmarks/reliability_cases.py``), each a whole
  ``placement`` process whose exit code and output are judged — every case must come out as the
  review allows;
* the long fuzz profile (``benchmarks/fuzz_long.py``: valid, invalid and mangled instances, small
  rates, tampered plans, tampered caches, hostile names, provenance edits) — no crash, no violation,
  no hang.

Both write their JSON reports to a temporary folder, never over the committed ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str, timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True, text=True,
                          timeout=timeout_s, check=False, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_every_reliability_case_ends_as_the_review_allows(tmp_path):
    out = tmp_path / "cases.json"
    done = _run("reliability_cases.py", "--json", str(out), timeout_s=4 * 3600)
    report = json.loads(out.read_text())
    bad = [c for c in report["cases"] if not c["ok"]]
    assert done.returncode == 0 and not bad, (bad[:5], done.stdout[-2000:], done.stderr[-2000:])
    assert report["summary"]["cases"] == len(report["cases"]) > 0


def test_the_long_fuzz_profile_finds_no_crash_violation_or_hang(tmp_path):
    out = tmp_path / "fuzz.json"
    done = _run("fuzz_long.py", "--out", str(out), timeout_s=6 * 3600)
    report = json.loads(out.read_text())
    assert done.returncode == 0, (report.get("total"), done.stderr[-2000:])
    assert report["total"]["examples"] > 0
    assert (report["total"]["crashes"], report["total"]["violations"], report["total"]["hangs"]) == (0, 0, 0)
