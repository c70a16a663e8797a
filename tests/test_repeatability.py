"""``benchmarks/repeatability.py``: one campaign's measurements answering another's capacity question.

The answer at a fixed concurrency is read off the other campaign's TPOT–throughput frontier at the point's
TPOT, under the point's sequences in flight per GPU; checked here against hand-worked values.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def rep():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("repeatability", ROOT / "benchmarks" / "repeatability.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _case(rep, campaign, conc, tpot_ms, tput, gpus=8, regime="concurrency"):
    _case.n = getattr(_case, "n", 0) + 1  # keys are row numbers of the data file
    return rep.Case(key=str(_case.n), campaign=campaign, publisher="p", chip="h200", gpus=gpus,
                    model="llama-3.1-70b", precision="fp8", framework="sglang", isl=1024, osl=1024, regime=regime,
                    concurrency=None if regime == "offline" else conc, tpot_ms=None if regime == "offline" else tpot_ms,
                    ttft_ms=None, measured_tok_s_per_gpu=tput, overlaps_fit=False, layout="tp8 ep1")


def test_the_answer_interpolates_between_the_bracketing_points(rep):
    other = [_case(rep, "b", 32, 20.0, 200.0), _case(rep, "b", 64, 40.0, 400.0), _case(rep, "b", 128, 80.0, 700.0)]
    p = _case(rep, "a", 64, 30.0, 380.0)
    # Log-linear between (20 ms, 200) and (40 ms, 400) at 30 ms: 200·2^(log(1.5)/log(2)) = 300; conc 128 is beyond
    # the point's 8 sequences per GPU and is not read.
    assert rep.answer(p, other) == pytest.approx(200.0 * 2 ** (math.log(1.5) / math.log(2.0)))


def test_a_slower_target_takes_the_load_bound_and_a_faster_one_has_no_answer(rep):
    other = [_case(rep, "b", 32, 20.0, 200.0), _case(rep, "b", 64, 40.0, 400.0)]
    assert rep.answer(_case(rep, "a", 64, 45.0, 380.0), other) == 400.0
    assert rep.answer(_case(rep, "a", 64, 15.0, 380.0), other) is None


def test_offline_answers_with_the_other_campaigns_best(rep):
    other = [_case(rep, "b", None, None, 900.0, regime="offline"), _case(rep, "b", None, None, 1100.0, regime="offline")]
    assert rep.answer(_case(rep, "a", None, None, 1000.0, regime="offline"), other) == 1100.0


def test_pairs_skip_the_points_own_campaign(rep):
    cases = [_case(rep, "a", 64, 30.0, 380.0), _case(rep, "b", 32, 20.0, 200.0), _case(rep, "b", 64, 40.0, 400.0)]
    rows = rep.pairs(cases)
    assert {(r["campaign"], r["other"]) for r in rows} == {("a", "b"), ("b", "a")}
    b_on_a = next(r for r in rows if r["campaign"] == "a")
    assert b_on_a["ratio"] == pytest.approx(300.0 / 380.0)
