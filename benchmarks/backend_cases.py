"""Issue 15's backend disagreement, re-run: bertha-lpddr with every price ×1e-4 on CBC and HiGHS.

Before the conditioning of the objective, CBC reported $0.0014746/h "optimal" with bound 0.0014746
while HiGHS found $0.0014742 — a feasible point below CBC's proven bound. This solves the scaled
instance (each domain group's $/h per chip ×1e-4, as ``tests/test_conditioning.py`` scales it) and
the unscaled one with both backends and checks: the objectives agree within the larger relative
gap of the two, and neither backend's bound exceeds the other's verified cost.

Run::

    .venv/bin/python benchmarks/backend_cases.py [--json /tmp/backend_cases.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import yaml

from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.solve import solve

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("cbc", "highs")


def scaled(name: str, price: float) -> object:
    """The shipped instance with every domain group's chip price multiplied by ``price``."""
    doc = yaml.safe_load((ROOT / "instances" / name).read_text(encoding="utf-8"))
    if price != 1.0:
        ctx = Context.of(parse_instance(copy.deepcopy(doc), name), name)
        for d in doc["hardware"]["domains"]:
            d["usd_per_hour_per_chip"] = ctx.sites[d["name"]].usd_per_hour_per_chip * price
        if "budget_usd_per_hour" in doc.get("limits", {}):
            doc["limits"]["budget_usd_per_hour"] *= price
    return parse_instance(doc, name)


def case(name: str, price: float) -> dict:
    """Both backends on one scaled instance, and whether their answers are consistent."""
    inst = scaled(name, price)
    rows = {}
    for backend in BACKENDS:
        plan = solve(inst, backend=backend)
        rows[backend] = {"status": plan.status, "verified": plan.verified, "cost": plan.cost_usd_per_hour,
                         "bound": plan.solver.best_bound, "gap": plan.solver.gap, "notes": list(plan.notes),
                         "chips_by_type": plan.chips_by_type}
    c, h = rows["cbc"], rows["highs"]
    gap = max(c["gap"] or 0.0, h["gap"] or 0.0, 1e-9)
    agree = abs(c["cost"] - h["cost"]) <= gap * max(c["cost"], h["cost"])
    bounds_ok = c["bound"] <= h["cost"] * (1 + 1e-9) and h["bound"] <= c["cost"] * (1 + 1e-9)
    return {"instance": name, "price_factor": price, **{b: rows[b] for b in BACKENDS},
            "objectives_agree_within_gap": agree, "no_bound_above_other_feasible": bounds_ok}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    out = [case("bertha-lpddr.yaml", p) for p in (1.0, 1e-4)]
    for r in out:
        print(f"{r['instance']} prices ×{r['price_factor']:g}: " + "; ".join(
            f"{b} {r[b]['status']} verified={r[b]['verified']} cost {r[b]['cost']:.10g} bound {r[b]['bound']:.10g}"
            for b in BACKENDS) + f"; agree={r['objectives_agree_within_gap']} bounds_ok={r['no_bound_above_other_feasible']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0 if all(r["objectives_agree_within_gap"] and r["no_bound_above_other_feasible"] for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
