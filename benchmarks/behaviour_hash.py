"""A fingerprint of what the engine decides: every candidate column and every plan.

Refactors must leave behaviour unchanged. This script prints, per instance, a
SHA-256 of every candidate column (name, parts, capacities, pair traffic and
latency, and the full configuration behind it) and of the canonical plan JSON
(timings left out) solved with HiGHS and with CBC. Two commits that print the
same table decide the same things.

Run::

    .venv/bin/python benchmarks/behaviour_hash.py            # table on stdout
    .venv/bin/python benchmarks/behaviour_hash.py --json benchmarks/behaviour_hash.json

The instances are the shipped ones and two generated 100-domain fleets
(``benchmarks/instances``): one with 2 chip types and one with 8 chip types and
every serving mode, attention–FFN pairs included.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = sorted((ROOT / "instances").glob("*.yaml")) + [
    ROOT / "benchmarks/instances/bench-mixed-d100-k2-c6-s0.yaml",
    ROOT / "benchmarks/instances/bench-leaf-spine-d100-k8-c6-s0.yaml",
]


def _api():
    """The candidate and context entry points wherever the package keeps them."""
    from placement.core.instance.context import Context

    try:
        from placement.core.pipeline.problem import build_problem
    except ImportError:  # layout before build_problem left placement.core.replicas.candidates
        from placement.core.replicas.candidates import build_problem
    return build_problem, Context


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(path: Path, solvers: tuple[str, ...] = ("highs", "cbc")) -> dict:
    """Column and plan hashes of one instance file."""
    import placement

    build_problem, Context = _api()
    inst = placement.load_instance(path)
    problem, cands = build_problem(Context.of(inst, str(path)))
    rows = sorted(
        json.dumps({"column": c.model_dump(mode="json"), "config": cands.configs[c.name].model_dump(mode="json")},
                   sort_keys=True)
        for c in problem.columns
    )
    row = {
        "instance": str(path.relative_to(ROOT)),
        "columns": len(rows),
        "columns_sha256": _sha("\n".join(rows)),
        "problem_sha256": _sha(problem.model_dump_json(exclude={"columns"})),
    }
    for solver in solvers:
        plan = placement.solve(inst, backend=solver, source=str(path))
        row[f"{solver}_status"] = plan.status
        row[f"{solver}_cost_usd_per_hour"] = plan.cost_usd_per_hour
        row[f"{solver}_plan_sha256"] = _sha(plan.canonical_json())
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instances", nargs="*", type=Path, default=INSTANCES)
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    # absolute(), not resolve(): instances/ is a symlink to placement/instances and the labels keep its name.
    rows = [fingerprint(p.absolute()) for p in args.instances]
    keys = ["instance", "columns", "columns_sha256", "problem_sha256", "highs_plan_sha256", "cbc_plan_sha256",
            "highs_cost_usd_per_hour"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
