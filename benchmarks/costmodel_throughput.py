"""How fast the roofline evaluates decode configurations (the target: ~1 s per million).

For each model, loops over a handful of chips and evaluates
``decode_step`` and the memory fit on the full (layout × batch × context) grid in one vectorised
call per chip: 4 chips × 10 layouts × 100 batches × 250 contexts = 1,000,000
configurations per model. Prints a table and writes
``benchmarks/costmodel_throughput.json`` atomically.

Run: ``python benchmarks/costmodel_throughput.py [--repeat N]``. Uses the
shipped catalogues when present, else the test fixtures' records.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels import decode_step, fits, memory_per_chip_bytes

OUT_PATH = Path(__file__).with_name("costmodel_throughput.json")
CHIPS = ("h100", "gb200", "bertha", "lp30")
#: The test fixtures' names for the same chips when the catalogue is absent.
FIXTURE_CHIPS = ("h100", "gb200", "bertha", "lpu-500mb")
MODELS = ("llama-3.1-70b", "deepseek-v3")
#: Every chip of :data:`CHIPS` lists an FP8 rate (LP30 lists only FP8).
PRECISION = "fp8"
#: (tp, ep, pp) layouts; ep = tp marks expert parallelism (ignored on dense models).
LAYOUTS = ((1, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1), (8, 8, 1), (4, 1, 2), (8, 1, 2), (8, 8, 2), (8, 1, 4), (8, 8, 8))
BATCHES = np.geomspace(1, 4096, 100)  # fractional batches are fine for the roofline
CONTEXTS = np.geomspace(128, 131072, 250)


def _records():
    """(chips, models): shipped catalogue if available, else the test fixtures."""
    try:
        from costmodels.models import load_model_catalog
        from topology.chips import load_chip_catalog

        chips, models = load_chip_catalog(), load_model_catalog()
        if all(c in chips for c in CHIPS) and all(m in models for m in MODELS):
            return {c: chips[c] for c in CHIPS}, {m: models[m] for m in MODELS}, "catalogue"
    except (OSError, KeyError, ValueError):
        pass
    spec = importlib.util.spec_from_file_location("costmodel_fixtures", ROOT / "tests" / "costmodel_fixtures.py")
    fx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fx)
    chips, models = fx.all_chips(), fx.all_models()
    return {c: chips[c] for c in FIXTURE_CHIPS}, {m: models[m] for m in MODELS}, "test fixtures"


def _time_grid(chips, model, repeat: int, flat: bool) -> tuple[float, float]:
    """Best-of-``repeat`` seconds for all chips, and a checksum (Σ tokens/s of fitting configs)."""
    lay = np.array(LAYOUTS, dtype=float)
    tp, ep, pp = (lay[:, i].reshape(-1, 1, 1) for i in range(3))
    batch = BATCHES.reshape(1, -1, 1)
    context = CONTEXTS.reshape(1, 1, -1)
    if flat:  # every configuration materialised as its own element: no broadcast savings
        tp, ep, pp, batch, context = (a.ravel() for a in np.broadcast_arrays(tp, ep, pp, batch, context))
    best, checksum = np.inf, 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        checksum = 0.0
        for chip in chips.values():
            st = decode_step(chip, model, batch=batch, context=context, tp=tp, ep=ep, pp=pp, precision=PRECISION)
            ok = fits(chip, memory_per_chip_bytes(chip, model, stage="decode", batch=batch, context=context,
                                                  tp=tp, ep=ep, pp=pp, precision=PRECISION))
            checksum += float(np.sum(np.where(ok, batch / st.time_s, 0.0)))
        best = min(best, time.perf_counter() - t0)
    return best, checksum


def run(repeat: int = 3) -> dict:
    chips, models, origin = _records()
    n = len(LAYOUTS) * BATCHES.size * CONTEXTS.size * len(chips)
    results = []
    for mname, model in models.items():
        for flat in (False, True):
            seconds, checksum = _time_grid(chips, model, repeat, flat)
            results.append({
                "model": mname,
                "inputs": "flat 1-D arrays" if flat else "broadcast grid",
                "configs": n,
                "seconds": round(seconds, 4),
                "configs_per_s": round(n / seconds),
                "sum_tokens_per_s_of_fitting_configs": checksum,
            })
    return {
        "what": "decode_step + memory fit over chip × layout × batch × context (vectorised per chip)",
        "records": origin,
        "chips": list(chips),
        "layouts_tp_ep_pp": [list(x) for x in LAYOUTS],
        "batches": BATCHES.size,
        "contexts": CONTEXTS.size,
        "repeat_best_of": repeat,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "results": results,
    }


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="best of N timings")
    parser.add_argument("--out", type=Path, default=OUT_PATH)
    args = parser.parse_args()
    report = run(args.repeat)
    for r in report["results"]:
        print(f"{r['model']:>14} ({r['inputs']:>15}): {r['configs']:,} configs in {r['seconds']:.3f} s = {r['configs_per_s']:,.0f} configs/s")
    _write_atomic(args.out, json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
