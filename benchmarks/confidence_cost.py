"""The cost of confidence of one instance: nominal, 0.5, 0.8, 0.9, 0.95 (:mod:`placement.studies.confidence`).

Run: ``python benchmarks/confidence_cost.py instances/agentic-coding.yaml [--solver highs]``
(prints the Markdown table of the README's Accuracy section).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from placement.core.instance.loading import load_instance
from placement.studies.confidence import cost_of_confidence, markdown


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instance", type=Path)
    ap.add_argument("--solver", default="highs")
    args = ap.parse_args(argv)
    print(markdown(cost_of_confidence(load_instance(args.instance), backend=args.solver, source=str(args.instance))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
