"""Write a synthetic diurnal 24-hour profile for an instance's classes (``placement schedule --profile``).

Each class peaks at its instance rate at its peak hour and falls to ``floor`` of it twelve hours away:
factor = floor + (1 − floor)·(1 + cos(2π(h − peak)/24))/2, rates rounded to 3 significant digits.
Interactive classes peak in the afternoon, ``batch`` at night (it fills the trough).

    python benchmarks/diurnal_profile.py benchmarks/instances/bench-leaf-spine-d100-k8-c6-s0-agg.pd.yaml \\
        > benchmarks/instances/bench-leaf-spine-d100-k8-c6-s0-agg.pd.diurnal.csv
"""

from __future__ import annotations

import math
import sys

import yaml

#: (peak hour, floor) per class name; other classes peak at 14:00 with a 30 % floor.
SHAPES = {"chat": (14, 0.3), "summarisation": (11, 0.4), "coding-agent": (15, 0.2), "reasoning": (16, 0.5),
          "rag": (13, 0.35), "batch": (2, 0.1)}


def factor(hour: int, peak: int, floor: float) -> float:
    """The share of the peak rate at ``hour``."""
    return floor + (1 - floor) * (1 + math.cos(2 * math.pi * (hour - peak) / 24)) / 2


def main(path: str) -> None:
    with open(path) as f:
        classes = yaml.safe_load(f)["workload"]["classes"]
    print(f"# Synthetic diurnal profile for {path.rsplit('/', 1)[-1]}: written by benchmarks/diurnal_profile.py")
    print("period,class,rate_rps,hours")
    for h in range(24):
        for c in classes:
            peak, floor = SHAPES.get(c["name"], (14, 0.3))
            rate = float(f"{c['rate_rps'] * factor(h, peak, floor):.3g}")
            print(f"h{h:02d},{c['name']},{rate:g},1")


if __name__ == "__main__":
    main(sys.argv[1])
