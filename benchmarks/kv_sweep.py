"""DRAM / flash price sweep on instances/agentic-coding.yaml: where the optimal tier and window move.

Run: ``.venv/bin/python benchmarks/kv_sweep.py`` (one solve per row, ~35 s each on this machine).
Each row scales the catalogue prices of host memory and flash ($0.00334 and $0.00011 per GB-h) and
prints the plan's cost, the KV holding cost and the policies chosen for the coding-agent class. The
last row replaces the local tiers by a Mooncake-style remote store on the spine (a DRAM pool at the
host price, 50 GB/s per GPU [EST: one 400G NIC per GPU], 20 µs) and prints its reloads on the links.
"""

from __future__ import annotations

from placement.core.instance.loading import load_instance
from placement.core.pipeline.solve import solve

HOST, FLASH = 0.00334, 0.00011
POINTS = [(1, 1), (1, 30), (1, 300), (0.1, 300), (10, None)]
REMOTE = {"tier": "remote", "node": "spine", "capacity_gb": 200000, "bandwidth_gb_per_s": 50, "latency_us": 20,
          "usd_per_gb_hour": HOST}


def instance(tiers: list[dict]):
    inst = load_instance("instances/agentic-coding.yaml")
    doms = [d.model_copy(update={"kv_tiers": [type(d.kv_tiers[0]).model_validate(t) for t in tiers]})
            for d in inst.hardware.domains]
    return inst.model_copy(update={"hardware": inst.hardware.model_copy(update={"domains": doms})})


def priced(host_x: float, flash_x: float | None) -> list[dict]:
    tiers = [{"tier": "host", "usd_per_gb_hour": HOST * host_x}]
    if flash_x is not None:
        tiers.append({"tier": "flash", "usd_per_gb_hour": FLASH * flash_x})
    return tiers


def row(plan, host: str, flash: str) -> str:
    ret = plan.classes[0].kv_retention or []
    pols = ", ".join(f"{e.tier}{'@' + e.policy.split('@')[1] if '@' in e.policy else ''} "
                     f"{e.window_s / 60:g} min ({e.share:.2f})" for e in ret if e.share > 5e-3)
    return f"| {host} | {flash} | {plan.cost_usd_per_hour:.2f} | {plan.kv_usd_per_hour or 0:.2f} | {pols} |"


def main() -> None:
    print("| host $/GB-h | flash $/GB-h | $/h | KV $/h | policies (share ≥ 0.005) |")
    print("| --- | --- | --- | --- | --- |")
    for host_x, flash_x in POINTS:
        plan = solve(instance(priced(host_x, flash_x)), backend="highs")
        flash = "-" if flash_x is None else f"{FLASH * flash_x:.5g}"
        print(row(plan, f"{HOST * host_x:.5g}", flash), flush=True)
    plan = solve(instance([REMOTE]), backend="highs")
    print(row(plan, "remote store", "-"), flush=True)
    for f in plan.kv_flows:
        link = next(lk for lk in plan.links if (lk.source, lk.target) == (f.source, f.target))
        print(f"    {f.transfer}: {f.source}->{f.target} {f.bytes_per_s / 1e9:.2f} GB/s "
              f"(link {link.capacity_bytes_per_s / 1e9:.0f} GB/s, {link.utilisation:.2%} used)")


if __name__ == "__main__":
    main()
