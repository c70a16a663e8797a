"""How fast a 50-point sweep runs with the local executor, and the speed-up per added worker.

Runs the same 50-point sweep of a shipped instance with 1, 2, ... workers (a
process pool; 1 runs in this process), checks that every run gives byte-identical
results (canonical JSON, no timings), and reports wall time, seconds per point,
speed-up over one worker and parallel efficiency. Each configuration is run
``--repeat`` times and the best wall time is kept. CPU seconds (this process and
every finished descendant: pool workers and their CBC processes) are recorded too:
they do not depend on what else the machine is running, so ``cpu_s / cpus`` is
the wall time an otherwise idle machine would approach with enough workers.
Writes ``benchmarks/sweep_speed.json`` atomically.

Run: ``python benchmarks/sweep_speed.py [--workers 1 2 3 4] [--repeat N] [--case NAME ...]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)

from placement.core.instance.loading import load_instance
from placement.studies.sweep import run_sweep

OUT_PATH = Path(__file__).with_name("sweep_speed.json")
#: name -> (instance, --set specs); each is 50 points.
CASES = {
    "bertha-price": ("instances/bertha-lpddr.yaml", ["hardware.chips.bertha.usd_per_hour=0.02:1:50"]),
    "agentic-rate": ("instances/agentic-coding.yaml", ["workload.classes.coding-agent.rate_rps=1:50:50"]),
    "rubin-tpot": ("instances/rubin-lpx-deepseek.yaml", ["workload.classes.reasoning.tpot_ms=8:57:50"]),
}


def _cpu_s() -> float:
    """CPU seconds of this process and of every finished descendant (pool workers, CBC)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _run(instance: str, specs: list[str], workers: int) -> tuple[float, float, str, int, int]:
    inst = load_instance(instance)
    cpu0, start = _cpu_s(), time.perf_counter()
    res = run_sweep(inst, specs, source=instance, workers=workers)
    wall, cpu = time.perf_counter() - start, _cpu_s() - cpu0
    ok = sum(p.ok for p in res.points)
    return wall, cpu, res.canonical_json(), len(res.points), ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--case", choices=sorted(CASES), nargs="+", default=sorted(CASES))
    args = ap.parse_args()
    results = []
    for case in args.case:
        instance, specs = CASES[case]
        reference = None
        rows = []
        for w in args.workers:
            walls, cpus = [], []
            for _ in range(args.repeat):
                wall, cpu, canon, n, ok = _run(instance, specs, w)
                walls.append(wall)
                cpus.append(cpu)
                if reference is None:
                    reference = canon
                elif canon != reference:
                    raise SystemExit(f"{case}: results with {w} workers differ from the first run")
            best = min(walls)
            rows.append({"workers": w, "wall_s": round(best, 3), "all_wall_s": [round(x, 3) for x in walls],
                         "cpu_s": round(min(cpus), 3), "cpu_s_per_point": round(min(cpus) / n, 4),
                         "load_average_1min_after": round(os.getloadavg()[0], 2),
                         "s_per_point": round(best / n, 4), "points": n, "feasible_points": ok})
            print(f"{case:14s} workers={w}: {best:6.2f} s wall ({best / n:.3f} s/point), {min(cpus):6.1f} CPU-s, "
                  f"{ok}/{n} feasible, load {os.getloadavg()[0]:.1f}", flush=True)
        base = rows[0]["wall_s"]
        for r in rows:
            r["speedup_vs_1"] = round(base / r["wall_s"], 3)
            r["efficiency"] = round(base / r["wall_s"] / r["workers"], 3)
        for prev, r in itertools.pairwise(rows):
            r["speedup_from_previous"] = round(prev["wall_s"] / r["wall_s"], 3)
        results.append({"case": case, "instance": instance, "set": specs, "identical_results": True,
                        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": rows})
    if OUT_PATH.exists():  # keep the cases not run this time
        try:
            kept = [r for r in json.loads(OUT_PATH.read_text()).get("results", []) if r["case"] not in args.case]
        except (ValueError, KeyError):
            kept = []
        results = sorted(kept + results, key=lambda r: r["case"])
    doc = {
        "what": "50-point `placement sweep` with the local executor (process pool), best of --repeat wall times",
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "note": "the machine may be shared: load_average_1min_after > cpus means other work competed for the CPUs",
        "python": platform.python_version(),
        "repeat": args.repeat,
        "results": results,
    }
    fd, tmp = tempfile.mkstemp(dir=OUT_PATH.parent, prefix=".sweep_speed.")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, OUT_PATH)
    print(f"wrote {OUT_PATH.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
