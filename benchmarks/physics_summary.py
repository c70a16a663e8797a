"""The tables of PHYSICS.md from plan JSONs and ``physics_floors.py --json`` rows.

Prints, in markdown, one row per shipped instance (cost, chips by type, modes per class) and one
row per pool (claimed TPOT and TTFT, their physical floors, the ratios, the binding term).

Run::

    mkdir -p /tmp/after && for f in instances/*.yaml; do n=$(basename $f .yaml);
        .venv/bin/placement solve $f -q --json /tmp/after/$n.plan.json; done
    .venv/bin/python benchmarks/physics_floors.py --plans /tmp/after --json /tmp/after/physics.json
    .venv/bin/python benchmarks/physics_summary.py /tmp/after
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def plan_row(path: Path) -> str:
    """``| instance | $/h | chips | modes per class |`` for one plan JSON."""
    d = json.loads(path.read_text(encoding="utf-8"))
    modes = "; ".join(f"{c['name']}: " + ", ".join(f"{m} {v:.0%}" for m, v in c["modes"].items() if v > 0)
                      for c in d["classes"])
    chips = ", ".join(f"{n} {k}" for k, n in sorted(d["chips_by_type"].items()))
    return f"| {path.name.removesuffix('.plan.json')} | {d['cost_usd_per_hour']:,.2f} | {chips} | {modes} |"


def pool_rows(rows: list[dict]) -> list[str]:
    """One markdown row per pool: TPOT and TTFT claimed, floor and ratio, the capacity ratio, the binding term."""
    by: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r["claim"] in ("tpot_ms", "ttft_ms", "capacity_rps", "measured"):
            by.setdefault((r["instance"], r["pool"]), {})[r["claim"]] = r
    out = [("| instance | pool | stage | chip × chips/replica | batch | TPOT claimed ms | floor ms | ratio | "
            "TTFT claimed ms | floor ms | ratio | capacity ceiling ÷ claimed | binding (TPOT, else TTFT) |"),
           "|" + "---|" * 13]

    def fmt(r: dict | None, k: str) -> str:
        return "–" if r is None or r[k] is None else f"{r[k]:.4g}"

    for (inst, pool), cl in by.items():
        first = next(iter(cl.values()))
        t, f, c = cl.get("tpot_ms"), cl.get("ttft_ms"), cl.get("capacity_rps")
        out.append(f"| {inst} | {pool} | {first['stage']} | {first['chip']} × {first['chips_per_replica']} | "
                   f"{first['batch']} | {fmt(t, 'claimed')} | {fmt(t, 'floor')} | {fmt(t, 'ratio')} | "
                   f"{fmt(f, 'claimed')} | {fmt(f, 'floor')} | {fmt(f, 'ratio')} | {fmt(c, 'ratio')} | "
                   f"{(t or f or first)['binding'][:90]} |")
    violations = [r["binding"] for r in rows if r["claim"] == "VIOLATION"]
    return out + ([""] + [f"* VIOLATION: {v}" for v in violations] if violations else [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plans", type=Path, help="folder with <instance>.plan.json and physics.json")
    args = ap.parse_args(argv)
    print("| instance | $/h | chips | modes |")
    print("|---|---|---|---|")
    for p in sorted(args.plans.glob("*.plan.json")):
        print(plan_row(p))
    print()
    print("\n".join(pool_rows(json.loads((args.plans / "physics.json").read_text(encoding="utf-8")))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
