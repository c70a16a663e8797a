"""Decode TPOT at the measured layout and concurrency, on public campaigns the fit never saw.

Every closed-loop point of ``benchmarks/data/throughput_at_scale.csv`` (aggregated serving, fixed client
concurrency, no speculative decoding, chip and model in the catalogue) is priced exactly as the calibration
prices its own rows (:func:`costmodels.row_costs.row_costs`, the catalogue's calibrated chips): the measured
tensor, expert and attention-data parallelism, the measured concurrency as the batch, the prompts of the
other sequences interleaved into each decode step. Predicted ÷ measured mean TPOT is the stage model's
error with the layout taken from the measurement — the part of a capacity error that is physics, not the
planner's choice of layout. The throughput ratio is the same TPOT seen as output tokens/s per GPU at the
measured TTFT: ``conc·osl / (gpus·(TTFT + (osl − 1)·TPOT))``.

Held out, and how: a point of campaign X is priced by a chip no factor of which was fitted on X — the
catalogue's for chips the calibration fits on ``measured_aggregated_serving.csv`` alone, and for chips it also
fits on these campaigns the chip refitted without X (:func:`calibrate.fit_without`); rows that repeat points of
``measured_aggregated_serving.csv`` (``overlaps_measured_aggregated``) are reported apart. *Beyond the fit's batches* marks points whose
sequences per replica (per attention rank with DP attention) exceed the largest the fit saw for that chip
and model — an extrapolation in batch, not only in campaign.

Run::

    .venv/bin/python benchmarks/layout_eval.py --md benchmarks/LAYOUT_ACCURACY.md --json benchmarks/layout_eval.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
DATA = ROOT / "benchmarks" / "data" / "throughput_at_scale.csv"


def _batch_per_rank(m) -> float:
    """Sequences one replica (one attention rank group with DP attention) decodes at once."""
    return m.batch / m.attn_dp


def fit_batch_ceilings() -> dict[tuple[str, str], float]:
    """Largest sequences per replica/attention group the calibration saw, per (chip, model)."""
    from costmodels.measured_rows import map_rows, read_measured_csv

    kept, _ = map_rows(read_measured_csv())
    top: dict[tuple[str, str], float] = defaultdict(float)
    for m in kept:
        top[(m.chip, m.model)] = max(top[(m.chip, m.model)], _batch_per_rank(m))
    return dict(top)


def mapped_points(path: Path = DATA) -> tuple[list, list[dict], dict[str, int]]:
    """The closed-loop points as mapped rows, their CSV facts and the skip reasons
    (:func:`costmodels.measured_rows.read_scale_csv`)."""
    from costmodels.measured_rows import read_scale_csv

    rows, facts, skipped = read_scale_csv(path)
    return rows, facts, dict(skipped)


def price(rows: list) -> np.ndarray:
    """Predicted mean TPOT (s) of every row on its catalogue chip; on a chip the calibration fits on these
    campaigns (:func:`calibrate.campaign_fitted`), from the chip refitted without the row's campaign
    (:func:`calibrate.fit_without`)."""
    from dataclasses import asdict

    from calibrate import campaign_fitted, chip_rows, fit_without

    from costmodels.models import load_model_catalog
    from costmodels.row_costs import chip_with, row_costs
    from topology.chips import load_chip_catalog

    chips, models = load_chip_catalog(), load_model_catalog()
    out = np.full(len(rows), np.nan)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, m in enumerate(rows):
        groups[(m.chip, m.row.backend if campaign_fitted(m.chip) else "")].append(i)
    by_chip = chip_rows(chips, models)[0]
    for (chip, campaign), idx in groups.items():
        chip_spec = chips[chip]
        if campaign:
            factors, _ = fit_without(chip, campaign, by_chip, chips, models)
            chip_spec = chip_with(chip_spec, **asdict(factors))
        out[idx] = row_costs(chip_spec, models, [rows[i] for i in idx]).tpot_s
    return out


def records(rows: list, facts: list[dict], tpot_s: np.ndarray, ceilings: dict) -> list[dict]:
    out = []
    for m, f, t in zip(rows, facts, tpot_s):
        meas_s = m.row.tpot_ms / 1e3
        ttft_s = m.row.ttft_ms / 1e3
        conc, osl = m.row.conc, m.row.osl
        tput = conc * osl / (m.row.gpus * (ttft_s + (osl - 1) * t)) if t > 0 else float("nan")
        ceiling = ceilings.get((m.chip, m.model))
        out.append({**f, "chip": m.chip, "model": m.model, "precision": m.precision, "isl": m.row.isl,
                    "osl": osl, "gpus": m.row.gpus, "tp": m.row.tp, "ep": m.ep, "concurrency": conc,
                    "batch_per_rank": _batch_per_rank(m), "fit_batch_ceiling": ceiling,
                    "beyond_fit_batch": ceiling is not None and _batch_per_rank(m) > ceiling,
                    "measured_tpot_ms": m.row.tpot_ms, "predicted_tpot_ms": 1e3 * float(t),
                    "tpot_ratio": float(t) / meas_s, "throughput_ratio": tput / f["measured_tok_s_per_gpu"]
                    if f["measured_tok_s_per_gpu"] else float("nan")})
    return out


def stats(recs: list[dict]) -> dict:
    r = np.array([x["tpot_ratio"] for x in recs])
    q = np.array([x["throughput_ratio"] for x in recs if math.isfinite(x["throughput_ratio"])])
    if not len(r):
        return {"n": 0}
    return {"n": len(r), "tpot_median_abs_error_pct": round(100 * float(np.median(np.abs(r - 1))), 1),
            "tpot_geo_mean_ratio": round(float(np.exp(np.mean(np.log(r)))), 3),
            "tpot_p10_ratio": round(float(np.quantile(r, 0.1)), 3),
            "tpot_p90_ratio": round(float(np.quantile(r, 0.9)), 3),
            "throughput_geo_mean_ratio": round(float(np.exp(np.mean(np.log(q)))), 3) if len(q) else None,
            "beyond_1_5x": int(np.sum((r > 1.5) | (r < 1 / 1.5)))}


#: Upper ends of the batch-per-rank bins: how the error moves as a step holds more sequences.
BATCH_BINS = (4, 16, 32, 64, 128)


def _batch_bin(batch_per_rank: float) -> str:
    """The bin label of a batch per rank (sequences), right-aligned so that labels sort by size.

    Examples
    --------
    >>> _batch_bin(1), _batch_bin(16), _batch_bin(17), _batch_bin(500)
    ('  1-4', '  5-16', ' 17-32', '> 128')
    """
    lo = 1
    for hi in BATCH_BINS:
        if batch_per_rank <= hi:
            return f"{lo:>3}-{hi}"
        lo = hi + 1
    return f"> {BATCH_BINS[-1]}"


def summarise(recs: list[dict]) -> dict[str, dict]:
    from calibrate import campaign_fitted

    groups: dict[str, list[dict]] = defaultdict(list)
    for x in recs:
        groups["all held out" if not x["overlaps_fit"] else "rows that repeat fit data"].append(x)
        if x["overlaps_fit"]:
            continue
        groups[f"publisher {x['publisher']}"].append(x)
        groups[f"campaign {x['campaign']}"].append(x)
        groups[f"chip {x['chip']} {x['precision']}"].append(x)
        groups[f"{'DP attention' if x['dp_attention'] else 'TP attention'}"].append(x)
        groups[f"batch per rank {_batch_bin(x['batch_per_rank'])}"].append(x)
        if campaign_fitted(x["chip"]):
            groups["chips these campaigns calibrate (each campaign predicted by a fit without it)"].append(x)
        elif x["fit_batch_ceiling"] is None:
            groups["chip or model not in the fit (priors only)"].append(x)
        else:
            groups[f"calibrated chip, batch {'beyond' if x['beyond_fit_batch'] else 'within'} the fit's"].append(x)
    return {k: stats(v) for k, v in sorted(groups.items())}


def to_markdown(summary: dict[str, dict], recs: list[dict], skipped: dict[str, int]) -> str:
    head = ("| group | points | TPOT median abs error % | TPOT geo-mean pred/meas | p10 | p90 | "
            "beyond 1.5x | throughput geo-mean pred/meas |")
    lines = ["# Decode TPOT at the measured layout and concurrency (held-out campaigns)", "",
             ("Generated by `python benchmarks/layout_eval.py` (do not edit by hand). Data "
             "`benchmarks/data/throughput_at_scale.csv`; the calibrated catalogue chips priced as the "
             "calibration prices its rows. A TPOT ratio below 1 is an optimistic model (faster than measured); "
             "a throughput ratio above 1 is optimistic."), "", head, "| --- " * 8 + "|"]
    for k, s in summary.items():
        if not s.get("n"):
            continue
        lines.append(f"| {k} | {s['n']} | {s['tpot_median_abs_error_pct']} | {s['tpot_geo_mean_ratio']} | "
                     f"{s['tpot_p10_ratio']} | {s['tpot_p90_ratio']} | {s['beyond_1_5x']} | "
                     f"{s['throughput_geo_mean_ratio']} |")
    lines += ["", "Points left out: " + (", ".join(f"{v} {k}" for k, v in sorted(skipped.items())) or "none") + "."]
    worst = sorted((x for x in recs if not x["overlaps_fit"]), key=lambda x: abs(math.log(x["tpot_ratio"])),
                   reverse=True)[:25]
    lines += ["", "## Worst held-out points", "",
              ("| campaign | chip | model | prec | fw | ISL/OSL | GPUs | tp | ep | DPA | conc | measured TPOT ms | "
              "predicted | ratio |"), "| --- " * 14 + "|"]
    for x in worst:
        lines.append(f"| {x['campaign']} | {x['chip']} | {x['model']} | {x['precision']} | {x['framework']} | "
                     f"{x['isl']}/{x['osl']} | {x['gpus']} | {x['tp']} | {x['ep']} | "
                     f"{'yes' if x['dp_attention'] else 'no'} | {x['concurrency']} | {x['measured_tpot_ms']:.1f} | "
                     f"{x['predicted_tpot_ms']:.1f} | {x['tpot_ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--md", type=Path, default=None)
    a = ap.parse_args(argv)
    rows, facts, skipped = mapped_points()
    recs = records(rows, facts, price(rows), fit_batch_ceilings())
    summary = summarise(recs)
    for k, s in summary.items():
        print(k, s)
    if a.json is not None:
        a.json.write_text(json.dumps({"summary": summary, "skipped": skipped, "rows": recs}, indent=1) + "\n")
    if a.md is not None:
        a.md.write_text(to_markdown(summary, recs, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
