"""How far each shipped plan's claims sit above their physical floors (placement.core.verify.floors).

Solves every shipped instance with HiGHS and prints, per pool and claim, the
claimed value, its floor (a ceiling for capacity), the ratio — claimed ÷ floor
for TPOT and TTFT, ceiling ÷ claimed for capacity, so ≥ 1 is physically
possible and 1 is perfect hardware — and the binding term of the floor.

Run::

    .venv/bin/python benchmarks/physics_floors.py                 # table on stdout
    .venv/bin/python benchmarks/physics_floors.py --json /tmp/floors.json
    .venv/bin/python benchmarks/physics_floors.py --plans DIR     # DIR/<instance>.plan.json, no solve

``--plans`` takes the plans ``placement solve INSTANCE --json DIR/<instance>.plan.json`` wrote
(verified again here) instead of solving with ``--solver``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = sorted((ROOT / "instances").glob("*.yaml"))
KEYS = ["instance", "pool", "stage", "chip", "chips_per_replica", "batch", "claim", "claimed", "floor", "ratio",
        "binding"]


def _context():
    """The context class wherever the package keeps it."""
    from placement.core.instance.context import Context

    return Context


def pool_rows(path: Path, solver: str = "highs", plans: Path | None = None) -> list[dict]:
    """One row per claim (tpot_ms, ttft_ms, capacity_rps) of every pool of the instance's plan.

    With ``plans``, the plan is read from ``plans/<instance>.plan.json`` and must pass the verifier.
    """
    import placement
    from placement.core.plans.plan import read_plan
    from placement.core.verify.floors import check_floors, floors
    from placement.core.verify.verifier import verify

    inst = placement.load_instance(path)
    ctx = _context().of(inst, str(path))
    if plans is None:
        plan = placement.solve(inst, backend=solver, source=str(path))
    else:
        plan = read_plan(plans / f"{path.stem}.plan.json")
        rejected = verify(ctx, plan)
        if rejected:
            raise SystemExit(f"{path.stem}: the plan in {plans} does not verify: {rejected[:3]}")
    from placement.core.verify.kv import check_kv, has_sessions

    if has_sessions(ctx):  # session classes are served as outcome classes: floors are of those
        ctx, _ = check_kv(ctx, plan)
    violations = check_floors(plan, ctx)
    rows = []
    for pool in plan.pools:
        f = floors(pool, ctx, plan)
        base = {"instance": path.stem, "pool": pool.id, "stage": pool.stage, "chip": pool.chip,
                "chips_per_replica": pool.chips_per_replica, "batch": pool.batch}
        for claim, value, bound in (("tpot_ms", pool.tpot_ms, f.tpot), ("ttft_ms", pool.ttft_ms, f.ttft)):
            if value is None or bound is None:
                continue
            floor_ms = bound.seconds * 1e3
            rows.append({**base, "claim": claim, "claimed": round(value, 6), "floor": round(floor_ms, 6),
                         "ratio": round(value / floor_ms, 4),
                         "binding": f"{bound.binding.name}: {bound.binding.detail}"})
        caps = [c for step, c in pool.capacity_rps_per_replica.items() if step.split("|")[0] == pool.traffic_class]
        if pool.part == 0 and caps and f.capacity_rps_per_replica:
            cap = max(caps)
            rows.append({**base, "claim": "capacity_rps", "claimed": round(cap, 6),
                         "floor": round(f.capacity_rps_per_replica, 6),
                         "ratio": round(f.capacity_rps_per_replica / cap, 4), "binding": f.capacity_basis})
        if f.kind == "measured":
            rows.append({**base, "claim": "measured", "claimed": None, "floor": None, "ratio": None,
                         "binding": f.capacity_basis})
    for v in violations:
        rows.append({"instance": path.stem, "pool": "", "stage": "", "chip": "", "chips_per_replica": None,
                     "batch": None, "claim": "VIOLATION", "claimed": None, "floor": None, "ratio": None,
                     "binding": v})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instances", nargs="*", type=Path, default=INSTANCES)
    ap.add_argument("--solver", default="highs")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    ap.add_argument("--plans", type=Path, help="read DIR/<instance>.plan.json instead of solving")
    args = ap.parse_args(argv)
    rows = [r for p in args.instances for r in pool_rows(p.resolve(), args.solver, args.plans)]
    print("| " + " | ".join(KEYS) + " |")
    print("|" + "---|" * len(KEYS))
    for r in rows:
        print("| " + " | ".join("" if r[k] is None else f"{r[k]:.4g}" if isinstance(r[k], float) else str(r[k])
                                for k in KEYS) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if any(r["claim"] == "VIOLATION" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
