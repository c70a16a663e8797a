"""The catalogue against measured rows no fit has seen: uncalibrated chips and models, written to
benchmarks/UNSEEN_ROWS.md.

    python benchmarks/unseen_rows.py            # ~10 s; rewrites benchmarks/UNSEEN_ROWS.md
    python benchmarks/unseen_rows.py --check    # fail if the file is not what this script writes

The measured database (``benchmarks/data/measured_aggregated_serving.csv``) holds rows the calibration
never maps: HGX B300 (its system has no entry in :data:`costmodels.measured_rows.SYSTEM_CHIPS`) and
models the catalogue marks ``calibration: uncalibrated``. Each group here is priced by the catalogue as
shipped — the chip's prior factors (:mod:`costmodels.priors`) for an uncalibrated chip, the fitted
factors of a calibrated chip for an uncalibrated model — and compared with what was measured. For an
uncalibrated chip the prior's two ends (``low``: pessimistic, ``high``: optimistic) give a band; the
table says what share of the measured TPOTs lies inside it. Nothing here was fitted on these rows.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.calibration import predict_rows
from costmodels.measured_rows import SYSTEM_CHIPS, map_rows, read_measured_csv
from costmodels.models import load_model_catalog
from costmodels.priors import at_prior
from topology.chips import load_chip_catalog

OUT = ROOT / "benchmarks" / "UNSEEN_ROWS.md"

#: Measured systems the calibration leaves out, and the catalogue chip each is.
UNFITTED_SYSTEMS = {"b300_sxm": "b300"}


def unseen_rows(chips, models):
    """Mapped rows of an unfitted system or an uncalibrated model, and the skip reasons of the rest."""
    wanted = []
    for r in read_measured_csv():
        if r.system in UNFITTED_SYSTEMS:
            wanted.append(replace(r, system=UNFITTED_SYSTEMS[r.system]))
        elif r.system in SYSTEM_CHIPS:
            wanted.append(r)
    kept, skipped = map_rows(wanted, chips, models)
    kept = [m for m in kept if chips[m.chip].calibration != "calibrated"
            or models[m.model].calibration != "calibrated"]
    return kept, skipped


def _ratio_stats(pred_s: np.ndarray, measured_ms: np.ndarray) -> tuple[float, float]:
    ok = np.isfinite(pred_s)
    ratio = pred_s[ok] * 1e3 / measured_ms[ok]
    return float(np.median(ratio)), float(np.median(np.abs(ratio - 1.0)))


def groups(chips, models):
    """One record per (chip, model, precision): row count, TPOT/TTFT ratios and prior-band coverage."""
    kept, _ = unseen_rows(chips, models)
    by_key: dict[tuple, list] = {}
    for m in kept:
        by_key.setdefault((m.chip, m.model, m.precision), []).append(m)
    out = []
    for (chip_name, model_name, precision), rows in sorted(by_key.items()):
        chip = chips[chip_name]
        tpot, ttft = predict_rows(chip, rows, models)
        tpot_ms = np.array([m.row.tpot_ms for m in rows])
        ttft_ms = np.array([m.row.ttft_ms for m in rows])
        rec = {"chip": chip_name, "model": model_name, "precision": precision, "n": len(rows),
               "tpot": _ratio_stats(tpot, tpot_ms), "ttft": _ratio_stats(ttft, ttft_ms),
               "ttft_n": int(np.isfinite(ttft).sum()), "inside": None,
               "batches": (min(m.batch for m in rows), max(m.batch for m in rows))}
        low, high = at_prior(chip, chips, "low"), at_prior(chip, chips, "high")
        if low:
            slow, _ = predict_rows(chip.model_copy(update=low), rows, models)
            fast, _ = predict_rows(chip.model_copy(update=high), rows, models)
            measured_s = tpot_ms / 1e3
            rec["inside"] = float(np.mean((measured_s >= fast) & (measured_s <= slow)))
            rec["band"] = (_ratio_stats(fast, tpot_ms)[0], _ratio_stats(slow, tpot_ms)[0])
        out.append(rec)
    return out


def markdown() -> str:
    chips, models = load_chip_catalog(), load_model_catalog()
    recs = groups(chips, models)
    lines = ["# The catalogue on measured rows no fit has seen", "",
             ("Written by `benchmarks/unseen_rows.py` from `benchmarks/data/measured_aggregated_serving.csv` "
             "(NVIDIA aiconfigurator's measured database, db dump 2026-04). Each row of the table is one "
             "chip, model and precision the calibration never fitted: an uncalibrated chip priced at its prior "
             "(nominal), or an uncalibrated model on a calibrated chip. Ratio = predicted ÷ measured, median "
             "over the group (below 1: optimistic). For an uncalibrated chip, *prior band* is the median ratio "
             "at the prior's optimistic and pessimistic ends and *inside* the share of measured TPOTs between "
             "them."), "",
             ("| chip | model | precision | rows | batch | TPOT ratio | TPOT median error | TTFT ratio (rows) "
             "| prior band (TPOT) | inside |"),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        ttft = f"{r['ttft'][0]:.2f} ({r['ttft_n']})" if r["ttft_n"] else "-"
        band = f"{r['band'][0]:.2f}–{r['band'][1]:.2f}" if r["inside"] is not None else "-"
        inside = f"{100 * r['inside']:.0f} %" if r["inside"] is not None else "-"
        lines.append(f"| {r['chip']} | {r['model']} | {r['precision']} | {r['n']} | "
                     f"{r['batches'][0]:g}–{r['batches'][1]:g} | {r['tpot'][0]:.2f} | {100 * r['tpot'][1]:.0f} % | "
                     f"{ttft} | {band} | {inside} |")
    if not recs:
        lines.append("| (no unseen rows map onto the catalogue) | | | | | | | | | |")
    lines += ["", ("Rows are kept as the calibration keeps them (`costmodels.measured_rows.map_row`: saturated, "
              "unrepresentable-precision and does-not-fit rows are skipped); TTFT is compared only where the "
              "calibration would (light load)."), ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the file is not what this script writes")
    text = markdown()
    if ap.parse_args().check:
        current = OUT.read_text() if OUT.exists() else ""
        print("up to date" if current == text else f"{OUT.name} is stale: run python benchmarks/unseen_rows.py")
        return 0 if current == text else 1
    OUT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
