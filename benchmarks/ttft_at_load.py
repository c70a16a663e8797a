"""Each shipped instance's pools: TTFT at the plan's load beside the TTFT at rated capacity.

Prints, per instance solved with HiGHS, every pool that states a TTFT — its utilisation (load ÷ rated
capacity), the TTFT the plan reports (at its load, ``placement.core.replicas.queues.at_load``) and the same
configuration's TTFT evaluated alone (each queue at its own capacity) — then each class's TTFT.
The output is the last section of ``benchmarks/QUEUEING.md``.

Run::

    .venv/bin/python benchmarks/ttft_at_load.py
"""

from __future__ import annotations

from pathlib import Path

from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.core.pipeline.solve import solve
from placement.core.replicas.evaluate import evaluate


def main() -> None:
    for path in sorted(Path("instances").glob("*.yaml")):
        inst = load_instance(path)
        plan = solve(inst, backend="highs")
        print(path.name, f"${plan.cost_usd_per_hour:.2f}/h", "verified" if plan.verified else "NOT VERIFIED")
        ctx = Context.of(inst)
        for p in plan.pools:
            cls = ctx.classes.get(p.traffic_class)
            if p.part or p.ttft_ms is None or p.config.kind == "measured" or cls is None:
                continue
            rated = float(evaluate(ctx, p.config, cls).ttft_s) * 1e3
            print(f"    {p.traffic_class} {p.stage} {p.chips}x{p.chip} u{p.utilisation:.2f} TTFT {p.ttft_ms:.0f} "
                  f"(rated {rated:.0f}, SLO {cls.ttft_ms:g})")
        for c in plan.classes:
            print(f"    class {c.name} TTFT", "-" if c.ttft_ms is None else f"{c.ttft_ms:.0f}", f"of {c.ttft_slo_ms:g}")


if __name__ == "__main__":
    main()
