"""The long fuzz profile: the strategies and checks of tests/test_fuzz.py, many more examples.

Runs three properties — valid instances (load → solve with CBC, 10 s → verify), invalid
instances (must raise InputError) and mangled files (load or InputError) — without shrinking,
recording every outcome instead of stopping at the first failure, and writes
``benchmarks/fuzz_long.json`` with the counts, the slowest examples and each failure
(kind, error, the example itself) so it can become a regression test.

Usage::

    .venv/bin/python benchmarks/fuzz_long.py [--valid 400] [--invalid 1000] [--mangled 1000] [--seed 6]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import test_fuzz as fz
from hypothesis import HealthCheck, Phase, given, seed, settings

#: An example slower than this is reported; one slower than HANG_S is aborted and counted as a hang.
SLOW_S = 20.0
HANG_S = 180.0


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"no answer within {HANG_S:.0f} s")


def _run(name: str, strategy, check, examples: int, seed_value: int, report: dict) -> None:
    outcomes: Counter = Counter()
    failures: list[dict] = []
    slow: list[dict] = []
    count = [0]

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def prop(example):
        count[0] += 1
        start = time.perf_counter()
        signal.alarm(int(HANG_S))
        try:
            outcomes[check(example)] += 1
        except _Hang as e:
            outcomes["hang"] += 1
            failures.append({"kind": "hang", "error": str(e), "example": example})
        except AssertionError as e:
            outcomes["violation"] += 1
            failures.append({"kind": "violation", "error": str(e)[:2000], "example": example})
        except Exception as e:  # noqa: BLE001 - a crash is what we are looking for
            outcomes["crash"] += 1
            failures.append({"kind": "crash", "error": f"{type(e).__name__}: {e}"[:2000],
                             "traceback": traceback.format_exc()[-3000:], "example": example})
        finally:
            signal.alarm(0)
        seconds = time.perf_counter() - start
        if seconds > SLOW_S:
            slow.append({"seconds": round(seconds, 1), "example": example})

    start = time.perf_counter()
    prop()
    report[name] = {
        "examples": count[0],
        "outcomes": dict(sorted(outcomes.items())),
        "crashes": outcomes["crash"],
        "violations": outcomes["violation"],
        "hangs": outcomes["hang"],
        "seconds": round(time.perf_counter() - start, 1),
        "slow_examples": sorted(slow, key=lambda s: -s["seconds"])[:5],
        "failures": failures[:20],
    }
    print(f"{name}: {count[0]} examples, {dict(outcomes)} in {report[name]['seconds']} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--valid", type=int, default=400)
    ap.add_argument("--invalid", type=int, default=1000)
    ap.add_argument("--mangled", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "fuzz_long.json")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    report: dict = {"seed": args.seed, "time_limit_s": fz.TIME_LIMIT_S}
    _run("valid", fz.valid_documents(big=True), fz.check_valid, args.valid, args.seed, report)

    def invalid(case):
        doc, kind = case
        fz.check_invalid(doc)
        return f"input-error ({kind})"

    _run("invalid", fz.invalid_documents(), invalid, args.invalid, args.seed, report)
    with tempfile.TemporaryDirectory() as tmp:
        def mangled(case):
            suffix, text = case
            path = Path(tmp) / f"instance{suffix}"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            return fz.check_text(path)

        _run("mangled", fz.mangled_texts(), mangled, args.mangled, args.seed, report)
    report["total"] = {k: sum(report[p][k] for p in ("valid", "invalid", "mangled"))
                       for k in ("examples", "crashes", "violations", "hangs")}
    from placement.core.output import write_atomic

    write_atomic(args.out, json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps(report["total"]))
    return 1 if report["total"]["crashes"] or report["total"]["violations"] or report["total"]["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())
