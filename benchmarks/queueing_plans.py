"""Every shipped instance solved (HiGHS): cost, chips, and per pool its batch, utilisation and TTFT part.

What ``benchmarks/QUEUEING.md`` reports before and after batched prefill and
admission queueing. Run from the checkout to measure (``PYTHONPATH`` selects
another checkout's packages)::

    .venv/bin/python benchmarks/queueing_plans.py --json /tmp/after.json
    .venv/bin/python benchmarks/queueing_plans.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure() -> dict:
    """Instance name -> its plan's cost, chips, classes and pools (what the comparison prints)."""
    from placement.core.instance.loading import load_instance
    from placement.core.pipeline.solve import solve

    out = {}
    for path in sorted((ROOT / "instances").glob("*.yaml")):
        plan = solve(load_instance(path), backend="highs")
        out[path.stem] = {
            "status": plan.status, "verified": plan.verified, "cost": plan.cost_usd_per_hour,
            "chips": plan.chips_by_type,
            "classes": {c.name: {"modes": c.modes, "ttft_ms": c.ttft_ms, "slo": c.ttft_slo_ms}
                        for c in plan.classes},
            "pools": [{"cls": p.traffic_class, "stage": p.stage, "chip": p.chip, "chips": p.chips,
                       "batch": p.batch, "util": p.utilisation, "ttft_ms": p.ttft_ms}
                      for p in plan.pools if p.part == 0],
        }
        print(path.stem, plan.status, plan.cost_usd_per_hour, plan.chips_by_type, file=sys.stderr, flush=True)
    return out


def _ms(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def compare(before: dict, after: dict) -> str:
    """A markdown table per instance: cost and chips, then pools (batch, utilisation, TTFT part) and classes."""
    lines = []
    for name, b in before.items():
        a = after[name]
        lines.append(f"### {name}: ${b['cost']:,.2f}/h {b['chips']} → ${a['cost']:,.2f}/h {a['chips']}\n")
        for tag, d in (("before", b), ("after", a)):
            pools = "; ".join(f"{p['cls']} {p['stage']} {p['chips']}×{p['chip']} b{p['batch']} "
                              f"u{p['util']:.2f} TTFT {_ms(p['ttft_ms'])}" for p in d["pools"]
                              if p["stage"] not in ("decode-ffn", "draft"))
            classes = "; ".join(f"{n} {'+'.join(c['modes'])} {_ms(c['ttft_ms'])}/{c['slo']:g} ms"
                                for n, c in d["classes"].items())
            lines.append(f"* {tag}: {pools}\n  classes (TTFT/SLO): {classes}")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the measurement here")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print the comparison of two runs")
    args = ap.parse_args()
    if args.compare:
        print(compare(*(json.loads(Path(p).read_text()) for p in args.compare)))
        return
    data = measure()
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    else:
        print(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
