"""DRAM / flash price sweep on instances/agentic-coding.yaml: where the optimal tier and window move.

Run: ``.venv/bin/python benchmarks/kv_sweep.py`` (one solve per row, ~10 s each on this machine).
Each row scales the catalogue prices of host memory and flash ($0.00334 and $0.00011 per GB-h) and
prints the plan's cost, the KV holding cost and the policies chosen for the coding-agent class.
"""

from __future__ import annotations

from placement.core.loading import load_instance
from placement.core.solve import solve

HOST, FLASH = 0.00334, 0.00011
POINTS = [(1, 1), (1, 30), (1, 300), (0.1, 300), (10, None)]


def instance(host_x: float, flash_x: float | None):
    inst = load_instance("instances/agentic-coding.yaml")
    tiers = [{"tier": "host", "usd_per_gb_hour": HOST * host_x}]
    if flash_x is not None:
        tiers.append({"tier": "flash", "usd_per_gb_hour": FLASH * flash_x})
    doms = [d.model_copy(update={"kv_tiers": [type(d.kv_tiers[0]).model_validate(t) for t in tiers]})
            for d in inst.hardware.domains]
    return inst.model_copy(update={"hardware": inst.hardware.model_copy(update={"domains": doms})})


def main() -> None:
    print("| host $/GB-h | flash $/GB-h | $/h | KV $/h | policies (share) |")
    print("| --- | --- | --- | --- | --- |")
    for host_x, flash_x in POINTS:
        plan = solve(instance(host_x, flash_x), backend="highs")
        ret = plan.classes[0].kv_retention or []
        pols = ", ".join(f"{e.tier} {e.window_s / 60:g} min ({e.share:.2f})" for e in ret)
        flash = "-" if flash_x is None else f"{FLASH * flash_x:.5g}"
        print(f"| {HOST * host_x:.5g} | {flash} | {plan.cost_usd_per_hour:.2f} | {plan.kv_usd_per_hour or 0:.2f} "
              f"| {pols} |", flush=True)


if __name__ == "__main__":
    main()
