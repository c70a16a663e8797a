"""The long fuzz profile: the strategies and checks of tests/test_fuzz.py, many more examples.

Runs the properties — valid instances (load → solve with CBC, 10 s → verify), invalid
instances (must raise InputError), mangled files (load or InputError), small rates (valid
instances with demand scaled by 1e-4…1e-12, solved with CBC or HiGHS → verify), tampered plans
(one number of a solved plan changed: refused unless within tolerance, tests/test_verify_property.py)
and devices as inputs (/dev/zero, /dev/urandom, /dev/null, a pipe: InputError, never unbounded
reads) — without shrinking, recording every outcome instead of stopping at the first failure, and
writes ``benchmarks/fuzz_long.json`` with the counts, the slowest examples and each failure (kind,
error, the example itself) so it can become a regression test. Signals and time limits are
exercised by tests/test_signals.py and tests/test_time_limit.py (real processes).

Usage::

    .venv/bin/python benchmarks/fuzz_long.py [--valid 400] [--invalid 1000] [--mangled 1000]
        [--small-rates 100] [--tamper 1000] [--seed 6]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
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
import test_verify_property as tp
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

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


def _tamper_check(plans: dict):
    """The tamper property of tests/test_verify_property.py as a check of one drawn case."""
    from placement.core.errors import InputError
    from placement.core.plan import parse_plan
    from placement.core.verify import verify

    def check(case) -> str:
        name, index, new = case
        ctx, doc, leaves = plans[name]
        path, old = leaves[index % len(leaves)]
        doc = copy.deepcopy(doc)
        tp._set(doc, path, new(old))
        try:
            plan = parse_plan(doc)
        except InputError:
            return "refused by the loader"
        if verify(ctx, plan):
            return "rejected by the verifier"
        assert tp._within_tolerance(path, old, new(old)), f"{name}: {'.'.join(map(str, path))} {old!r} passed"
        return "passed within tolerance"

    return check


def _tamper_cases():
    """(instance, leaf index, how to change the old value)."""
    change = st.sampled_from([
        lambda v: 0, lambda v: -v, lambda v: -1, lambda v: float("nan"), lambda v: float("inf"),
        lambda v: 1e300, lambda v: v * 2, lambda v: v * 0.5, lambda v: v + 1, lambda v: v * (1 + 1e-9),
        lambda v: 10**6, lambda v: 5e-324])
    return st.tuples(st.sampled_from(tp.INSTANCES), st.integers(0, 10**6), change)


def _devices(report: dict) -> None:
    """Special files as instance and plan inputs: each must be an InputError naming the file."""
    from placement.core.errors import InputError
    from placement.core.loading import load_instance
    from placement.core.plan import read_plan

    outcomes: Counter = Counter()
    failures = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "pipe.yaml"
        os.mkfifo(fifo)
        paths = ["/dev/zero", "/dev/urandom", "/dev/null", str(fifo)]
        for path in paths:
            for read in (load_instance, read_plan):
                if path == str(fifo):  # a writer that never stops: the cap must end the read
                    pid = os.fork()
                    if pid == 0:  # pragma: no cover - the child writes until the reader closes
                        try:
                            with open(fifo, "wb") as w:
                                while True:
                                    w.write(b"a" * 65536)
                        finally:
                            os._exit(0)
                try:
                    read(path)
                    outcomes["loaded"] += 1
                    failures.append({"kind": "violation", "error": f"{path} loaded", "example": path})
                except InputError as e:
                    ok = path in str(e)
                    outcomes["input-error" if ok else "violation"] += 1
                    if not ok:
                        failures.append({"kind": "violation", "error": str(e), "example": path})
                except Exception as e:  # noqa: BLE001
                    outcomes["crash"] += 1
                    failures.append({"kind": "crash", "error": f"{type(e).__name__}: {e}", "example": path})
                finally:
                    if path == str(fifo):
                        os.waitpid(pid, 0)
    report["devices"] = {"examples": sum(outcomes.values()), "outcomes": dict(outcomes),
                         "crashes": outcomes["crash"], "violations": outcomes["violation"], "hangs": 0,
                         "seconds": round(time.perf_counter() - start, 1), "slow_examples": [],
                         "failures": failures}
    print(f"devices: {dict(outcomes)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--valid", type=int, default=400)
    ap.add_argument("--invalid", type=int, default=1000)
    ap.add_argument("--mangled", type=int, default=1000)
    ap.add_argument("--small-rates", type=int, default=100)
    ap.add_argument("--tamper", type=int, default=1000)
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

    def small_rate(case):
        doc, backend = case
        return f"{backend} {fz.check_valid(doc, backend=backend)}"

    _run("small_rates", fz.small_rate_documents(), small_rate, args.small_rates, args.seed, report)
    from verify_plans import solved

    plans = {}
    for name in tp.INSTANCES:
        _, ctx, doc = solved(name)
        plans[name] = (ctx, doc, list(tp._leaves(doc)))
    _run("tamper", _tamper_cases(), _tamper_check(plans), args.tamper, args.seed, report)
    _devices(report)
    families = ("valid", "invalid", "mangled", "small_rates", "tamper", "devices")
    report["total"] = {k: sum(report[p][k] for p in families) for k in ("examples", "crashes", "violations", "hangs")}
    # A tampered plan that the verifier accepted beyond tolerance; the other violations are solver plans it rejected.
    report["total"]["verifier_escapes"] = report["tamper"]["violations"]
    from placement.core.output import write_atomic

    write_atomic(args.out, json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps(report["total"]))
    return 1 if report["total"]["crashes"] or report["total"]["violations"] or report["total"]["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())
