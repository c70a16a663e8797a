"""Whole-process solves of instances with each backend: wall, CPU, peak RSS, status, $/h, load average.

Each (instance, backend) is one ``placement solve INSTANCE -q --solver B --json PLAN`` run under
``/usr/bin/time -f "%e %U %S %M"`` (wall s, user s, system s, peak RSS KiB of the largest process: the
``placement`` process or its CBC child), with the 1-minute load average read before and after. Rows are
appended to the JSON file as they finish, so a long run can be read while it goes on.

Usage::

    .venv/bin/python benchmarks/backend_table.py --json /tmp/backends.json \
        [--solvers cbc,highs] [--time-limit S] [--address-space-gb G] [--placement CMD] INSTANCE...

``--address-space-gb`` caps the whole command's address space with ``prlimit --as`` (a guard for the
measuring machine, not a feature of ``placement``); ``--placement`` is the command to run (default
the one beside this Python).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _load() -> float:
    return os.getloadavg()[0]


def run_one(placement: list[str], instance: str, solver: str, time_limit_s: float | None,
            address_space_gb: float | None) -> dict:
    """One measured solve: its figures, exit code, status and $/h."""
    with tempfile.TemporaryDirectory(prefix="backend-table-") as tmp:
        plan_path, times_path = os.path.join(tmp, "plan.json"), os.path.join(tmp, "time.txt")
        cmd = [*placement, "solve", instance, "-q", "--solver", solver, "--json", plan_path]
        if time_limit_s is not None:
            cmd += ["--time-limit", f"{time_limit_s:g}"]
        cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", times_path, *cmd]
        if address_space_gb is not None:
            cmd = ["prlimit", f"--as={int(address_space_gb * 2**30)}", "--", *cmd]
        load_before, started = _load(), time.strftime("%Y-%m-%dT%H:%M:%S")
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        load_after = _load()
        figures = Path(times_path).read_text().split()[-4:] if os.path.exists(times_path) else []
        plan = json.loads(Path(plan_path).read_text()) if os.path.exists(plan_path) else {}
    wall, user, system, rss = (float(x) for x in figures) if len(figures) == 4 else (None,) * 4
    solver_stats = plan.get("solver") or {}
    return {
        "instance": Path(instance).name, "solver": solver, "time_limit_s": time_limit_s, "started": started,
        "exit": done.returncode, "wall_s": wall, "cpu_s": None if user is None else round(user + system, 2),
        "peak_rss_mb": None if rss is None else round(rss / 1024), "load_before": round(load_before, 2),
        "load_after": round(load_after, 2), "status": plan.get("status"),
        "usd_per_hour": plan.get("cost_usd_per_hour"), "gap": solver_stats.get("gap"),
        "stderr": done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else "",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instances", nargs="+")
    ap.add_argument("--json", required=True, help="rows appended here (a JSON list)")
    ap.add_argument("--solvers", default="cbc,highs")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--address-space-gb", type=float, default=None)
    ap.add_argument("--placement", default=str(Path(sys.executable).with_name("placement")))
    args = ap.parse_args(argv)
    out = Path(args.json)
    rows = json.loads(out.read_text()) if out.exists() else []
    for instance in args.instances:
        for solver in args.solvers.split(","):
            row = run_one(shlex.split(args.placement), instance, solver, args.time_limit, args.address_space_gb)
            rows.append(row)
            out.write_text(json.dumps(rows, indent=1) + "\n")
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
