"""Calibrate every measured chip's efficiency factors and report in-sample and held-out error.

Data (both in ``benchmarks/data/``, nothing read from outside the repository):
``measured_aggregated_serving.csv`` (NVIDIA aiconfigurator's measured database,
db dump 2026-04: H100, H200, B200, GB200) and ``public_measurements.csv``
(published per-user speeds and batch sweeps of WSE-3, Groq LPU v1, MI300X,
each row with URL, date and what was measured). :mod:`costmodels.measured_rows`
documents the mapping, :mod:`costmodels.calibration` the fit.

Per chip it fits the factors the data can determine, then scores three
metrics — TPOT, light-load TTFT and throughput per chip — in sample and held
out two ways: leave one *source* out (for the aiconfigurator rows a source is a
serving framework's campaign, trtllm / vllm / sglang; for public rows the
publishing page) and leave one *model* out. Writes
``benchmarks/calibration_results.json`` and ``benchmarks/CALIBRATION.md``; the
catalogue's calibrated fields are copied from the JSON by hand (with sources).

Also writes ``costmodels/catalog/error_bands.yaml`` (:mod:`costmodels.bands`): quantiles of
measured ÷ predicted over the leave-one-source-out predictions per family and metric.

Run: ``python benchmarks/calibrate.py [--no-holdout]`` (~7 min on two cores; the bands need the held-out refits).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration_notes import NOTES, TARGET_REASONS
from framework_report import JOINT_CHIPS
from framework_report import evaluate as step_framework_evaluate
from framework_report import framework_section as step_framework_section
from ttft_framework import framework_bands, framework_evaluation, framework_section
from ttft_report import ttft_section, worst_distinct

from costmodels import calibration
from costmodels.bands import BANDS_PATH, LEVELS, ratio_quantiles
from costmodels.calibration import (
    GPU_FACTORS,
    OFFLINE_FIT_CHIPS,
    PER_MODEL_WEIGHTS,
    PRIOR_WEIGHT,
    PUBLIC_FIT_PLAN,
    SCALE_FIT_CHIPS,
    SHARED_FITS,
    TTFT_WEIGHT,
    fit_chip,
    heldout_predictions,
)
from costmodels.measured_rows import (
    DEFAULT_DATA_PATH,
    PUBLIC_DATA_PATH,
    SCALE_DATA_PATH,
    SYSTEM_CHIPS,
    TTFT_MAX_SEQUENCES,
    UNMAPPED_SYSTEMS,
    map_rows,
    read_measured_csv,
    read_public_csv,
    read_scale_csv,
)
from costmodels.models import load_model_catalog
from costmodels.offline_rows import read_offline_csv
from topology.chips import load_chip_catalog

JSON_PATH = Path(__file__).with_name("calibration_results.json")
MD_PATH = Path(__file__).with_name("CALIBRATION.md")
#: Chip → family the errors are pooled over in the summary. gb200's fit is reported but not adopted
#: (two models, one all wide-EP attention-DP rows; the catalogue keeps it uncalibrated), so it is its own group.
FAMILIES: dict[str, str] = {"h100": "NVIDIA Hopper", "h200": "NVIDIA Hopper", "b200": "NVIDIA Blackwell",
                            "gb200": "GB200 (fit not adopted)", "mi300x": "AMD CDNA3", "mi355x": "AMD CDNA4",
                            "wse3": "SRAM / wafer", "groq-lpu-v1": "SRAM / wafer"}
#: Issue #12 targets: held-out median |error| % per metric (GPU / non-GPU) and the worst held-out ratio.
TARGETS = {"TPOT": (15.0, 25.0), "TTFT": (25.0, 25.0), "throughput per chip": (20.0, 20.0)}
MAX_RATIO = 2.0
METRICS = ("TPOT", "TTFT", "throughput per chip")
SPLITS = ("in-sample", "leave-one-source-out", "leave-one-model-out")
LOAD_BUCKETS = ((0.0, 8.0, "b ≤ 8"), (8.0, 64.0, "8 < b ≤ 64"), (64.0, np.inf, "b > 64"))


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _clean(x):
    """NaN → None (strict JSON), numpy scalars → Python."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return None if np.isnan(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _source(m) -> str:
    return m.row.backend


def _model(m) -> str:
    return m.model


# ---- fitting and held-out predictions -------------------------------------------------


def chip_rows(chips, models) -> tuple[dict[str, list], dict, int, int]:
    """Kept rows per chip (aiconfigurator + public + the campaigns at scale of :data:`SCALE_FIT_CHIPS`),
    skip reasons, rows read, rows kept."""
    measured = read_measured_csv()
    kept, skipped = map_rows(measured, chips, models)
    public = read_public_csv(models=models)
    scale = [m for m in read_scale_csv(chips=chips, models=models)[0] if m.chip in SCALE_FIT_CHIPS]
    scale += [m for m in read_offline_csv(chips=chips, models=models)[0] if m.chip in OFFLINE_FIT_CHIPS]
    by_chip: dict[str, list] = {}
    for m in [*kept, *public, *scale]:
        if m.precision == "mxfp4" and "fp4" not in chips[m.chip].flops_per_s:
            # MXFP4 weights on a chip without FP4 units run a dequantising (W4A16) kernel: its cost measures
            # that kernel, not the chip's factors. The points stay held-out test points (capacity_eval.py).
            skipped["MXFP4 weights on a chip without FP4 units (an emulation kernel)"] += 1
            continue
        by_chip.setdefault(m.chip, []).append(m)
    n = len(kept) + len(public) + len(scale)
    return by_chip, skipped, len(measured) + len(public) + len(scale), n


def campaign_fitted(chip: str) -> bool:
    """Whether the calibration fits ``chip`` on campaigns of ``throughput_at_scale.csv`` (then an evaluation on
    those campaigns must hold each out: :func:`fit_without`)."""
    return chip in SCALE_FIT_CHIPS or chip in OFFLINE_FIT_CHIPS


def fit_without(chip: str, campaign: str, by_chip: dict[str, list], chips, models):
    """``chip``'s fitted factors on every calibration row (:func:`chip_rows`) but those of ``campaign``, with the
    calibration's own settings (:func:`fit_kwargs`): the chip as a fit that never saw the campaign prices it.
    Returns (factors, the rows fitted)."""
    kw = fit_kwargs(chip, by_chip, chips)
    kw["siblings"] = {n: (c, [m for m in r if m.row.backend != campaign]) for n, (c, r) in kw.get("siblings", {}).items()}
    rows = [m for m in by_chip.get(chip, []) if m.row.backend != campaign]
    return fit_chip(chips[chip], rows, models, **kw).fitted, rows


def fit_kwargs(chip: str, by_chip: dict[str, list] | None = None, chips=None) -> dict:
    """What :func:`fit_chip` fits for ``chip``: every factor of GPU_FACTORS on GPU serving data, else the public plan;
    given every chip's rows, also the chips it shares its fit with (:data:`costmodels.calibration.SHARED_FITS`)."""
    if chip in PUBLIC_FIT_PLAN:
        factors, reference = PUBLIC_FIT_PLAN[chip]
        return {"factors": factors, "reference": reference, "system": chip}
    kw = {"factors": GPU_FACTORS, "system": chip}
    if by_chip is not None and SHARED_FITS.get(chip):
        kw["siblings"] = {n: (chips[n], by_chip.get(n, [])) for n in SHARED_FITS[chip]}
    return kw


def _throughput_per_chip(tpot_s: np.ndarray, rows) -> np.ndarray:
    """Decode throughput per chip at the measured concurrency, ``conc / (chips · TPOT)``; ``nan`` on
    attention-DP rows (their per-GPU throughput is recorded inconsistently, data README)."""
    conc = np.array([m.row.conc for m in rows], dtype=float)
    gpus = np.array([m.row.gpus for m in rows], dtype=float)
    ok = np.array([m.layout == "tp" for m in rows])
    return np.where(ok, conc / (gpus * tpot_s), np.nan)


def evaluate_chip(chip_name: str, by_chip: dict[str, list], chips, models, holdout: bool) -> dict:
    """Fit one chip (with the chips it shares its fit with); per-row measured and predicted metrics of its own rows
    for every split."""
    chip, rows = chips[chip_name], by_chip[chip_name]
    kw = fit_kwargs(chip_name, by_chip, chips)
    fit = fit_chip(chip, rows, models, **kw)
    p = fit.predictions
    preds = {"in-sample": (p["tpot_fitted"], p["ttft_fitted"]), "default": (p["tpot_default"], p["ttft_default"])}
    if holdout:
        preds["leave-one-source-out"] = heldout_predictions(chip, rows, models, _source, **kw)
        preds["leave-one-model-out"] = heldout_predictions(chip, rows, models, _model, **kw)
    meas = {"TPOT": p["tpot_measured"], "TTFT": np.where(np.isnan(p["ttft_default"]), np.nan, p["ttft_measured"]),
            "throughput per chip": _throughput_per_chip(p["tpot_measured"], rows)}
    out = {}
    for split, (tpot, ttft) in preds.items():
        out[split] = {"TPOT": tpot, "TTFT": ttft, "throughput per chip": _throughput_per_chip(tpot, rows)}
    return {"fit": fit, "rows": rows, "measured": meas, "predicted": out}


# ---- statistics ------------------------------------------------------------------------


def _abs_err(pred, meas) -> np.ndarray:
    e = np.abs(np.asarray(pred) / np.asarray(meas) - 1.0) * 100.0
    return e[~np.isnan(e)]


def _stats(pred, meas) -> dict:
    e = _abs_err(pred, meas)
    if not e.size:
        return {"n": 0, "median": float("nan"), "p90": float("nan"), "max_ratio": float("nan")}
    r = np.asarray(pred) / np.asarray(meas)
    r = r[~np.isnan(r)]
    return {"n": int(e.size), "median": float(np.median(e)), "p90": float(np.percentile(e, 90)),
            "max_ratio": float(np.max(np.maximum(r, 1.0 / r)))}


def summary(evals: dict[str, dict], group) -> list[dict]:
    """Median / p90 |error| per group (chip or family), metric and split."""
    pooled: dict[tuple, tuple[list, list]] = {}
    for chip, ev in evals.items():
        for split in SPLITS:
            if split not in ev["predicted"]:
                continue
            for metric in METRICS:
                key = (group(chip), metric, split)
                pm = pooled.setdefault(key, ([], []))
                pm[0].append(ev["predicted"][split][metric])
                pm[1].append(ev["measured"][metric])
    return [{"group": g, "metric": metric, "split": split, **_stats(np.concatenate(p), np.concatenate(m))}
            for (g, metric, split), (p, m) in sorted(pooled.items())]


def worst_points(evals: dict[str, dict], n: int = 12) -> list[dict]:
    """The held-out TPOT points furthest off (largest ratio either way, over both held-out splits)."""
    pts = []
    for chip, ev in evals.items():
        meas = ev["measured"]["TPOT"]
        for split in SPLITS[1:]:
            if split not in ev["predicted"]:
                continue
            pred = ev["predicted"][split]["TPOT"]
            for i, m in enumerate(ev["rows"]):
                if np.isnan(pred[i]):
                    continue
                pts.append({"chip": chip, "split": split, "model": m.model, "source": _source(m),
                            "layout": m.layout, "batch": m.batch, "isl": m.row.isl, "osl": m.row.osl,
                            "tp": m.tp, "pp": m.pp, "measured_ms": meas[i] * 1e3, "predicted_ms": pred[i] * 1e3,
                            "ratio": pred[i] / meas[i]})
    return worst_distinct(pts, ("chip", "model", "source", "batch", "isl", "osl", "tp"), n)


def residuals(evals: dict[str, dict]) -> list[dict]:
    """Signed median in-sample TPOT error by load and prompt/output shape (aiconfigurator chips)."""
    out = []
    for chip, ev in evals.items():
        if chip in PUBLIC_FIT_PLAN:
            continue
        rows = ev["rows"]
        lr = np.log(ev["predicted"]["in-sample"]["TPOT"] / ev["measured"]["TPOT"])
        b = np.array([m.batch for m in rows])
        isl, osl = np.array([m.row.isl for m in rows]), np.array([m.row.osl for m in rows])
        adp = np.array([m.layout == "adp" for m in rows])
        sel_all = [(load, shape, (b > lo) & (b <= hi) & s & ~adp) for lo, hi, load in LOAD_BUCKETS
                   for shape, s in (("ISL > OSL", isl > osl), ("ISL = OSL", isl == osl), ("ISL < OSL", isl < osl))]
        sel_all.append(("any", "attention-DP rows", adp))
        for load, shape, sel in sel_all:
            if sel.sum() >= 5:
                out.append({"chip": chip, "load": load, "shape": shape, "n": int(sel.sum()),
                            "signed_median_pct": float((np.exp(np.median(lr[sel])) - 1.0) * 100.0)})
    return out


def _catalogue_factors(f) -> dict:
    """The fitted factors the chip catalogue holds (the closed-loop TTFT model's request latency is none)."""
    return {k: v for k, v in asdict(f).items() if k != "request_overhead_s"}


def chip_table(evals: dict[str, dict]) -> list[dict]:
    """Per chip: fitted factors, default → fitted objective, held-out TPOT median and worst ratio."""
    out = []
    for chip, ev in evals.items():
        fit = ev["fit"]
        meas = ev["measured"]["TPOT"]
        row = {"chip": chip, "family": FAMILIES.get(chip, "?"), "n_rows": len(ev["rows"]),
               "models": sorted({m.model for m in ev["rows"]}),
               "sources": sorted({_source(m) for m in ev["rows"]}),
               "fitted": _catalogue_factors(fit.fitted), "default": _catalogue_factors(fit.default),
               "objective_default": fit.objective_default, "objective_fitted": fit.objective_fitted,
               "tpot_default": _stats(ev["predicted"]["default"]["TPOT"], meas),
               "batch_per_rank": [min(m.batch / m.attn_dp for m in ev["rows"]),
                                  max(m.batch / m.attn_dp for m in ev["rows"])],
               "pipeline_stages": max(m.pp for m in ev["rows"])}
        for split in SPLITS:
            if split in ev["predicted"]:
                row[f"tpot_{split}"] = _stats(ev["predicted"][split]["TPOT"], meas)
        out.append(row)
    return out


# ---- error bands ------------------------------------------------------------------------

#: Split the bands are taken from, and the fewest held-out points a family-metric band needs.
BAND_SPLIT = "leave-one-source-out"
BAND_MIN_POINTS = 5
_BAND_METRICS = {"tpot": "TPOT", "ttft": "TTFT", "throughput": "throughput per chip"}


def _pooled(evals: dict[str, dict], chips: list[str], metric: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    ev = [evals[c] for c in chips if split in evals[c]["predicted"]]
    if not ev:
        return np.array([]), np.array([])
    return (np.concatenate([e["measured"][metric] for e in ev]),
            np.concatenate([e["predicted"][split][metric] for e in ev]))


def _band(meas: np.ndarray, pred: np.ndarray) -> dict:
    ok = np.isfinite(meas) & np.isfinite(pred)
    err = np.abs(pred[ok] / meas[ok] - 1.0)
    return {"n": int(ok.sum()), "median_abs_error": round(float(np.median(err)), 4) if err.size else None,
            "quantiles": [round(q, 4) for q in ratio_quantiles(meas[ok], pred[ok])]}


def _envelope(bands: list[dict]) -> list[float]:
    """Level by level the widest of ``bands``: the lowest quantile below the median, the highest from it up."""
    qs = np.array([b["quantiles"] for b in bands])
    lower = np.array(LEVELS) < 0.5
    return [round(float(q), 4) for q in np.where(lower, qs.min(axis=0), qs.max(axis=0))]


def error_bands(evals: dict[str, dict], calibrated: set[str]) -> dict:
    """Per family and metric, quantiles of measured ÷ held-out predicted; the uncalibrated default band.

    A calibrated chip's family band per metric comes from :data:`BAND_SPLIT` when it has at least
    :data:`BAND_MIN_POINTS` points, else that metric takes the uncalibrated band (said in ``provenance``).
    The uncalibrated band is, level by level, the widest of the reference factors' miss over every
    measured point and every calibrated family's held-out band: a chip priced from its datasheet is at
    least as far off as reference factors have been, and no better known than the least certain family.
    """
    reference = {k: _band(*_pooled(evals, sorted(evals), m, "default")) for k, m in _BAND_METRICS.items()}
    families: dict[str, dict] = {}
    chip_family: dict[str, str] = {}
    for fam in sorted({FAMILIES[c] for c in evals if c in calibrated}):
        members = sorted(c for c in evals if c in calibrated and FAMILIES[c] == fam)
        rec = {k: _band(*_pooled(evals, members, m, BAND_SPLIT)) for k, m in _BAND_METRICS.items()}
        if all(rec[k]["n"] < BAND_MIN_POINTS for k in _BAND_METRICS):
            continue  # nothing held out (one source): the chip keeps the uncalibrated band
        families[fam] = {"provenance": f"{BAND_SPLIT} predictions of {', '.join(members)}", **rec}
        chip_family.update({c: fam for c in members})
    default = {k: {"n": reference[k]["n"], "median_abs_error": None, "quantiles": _envelope(
        [reference[k], *(r[k] for r in families.values() if r[k]["n"] >= BAND_MIN_POINTS)])}
        for k in _BAND_METRICS}
    for fam, rec in families.items():
        fallback = [k for k in _BAND_METRICS if rec[k]["n"] < BAND_MIN_POINTS]
        for k in fallback:
            rec[k] = {"n": 0, "median_abs_error": None, "quantiles": list(default[k]["quantiles"])}
        if fallback:
            rec["provenance"] += (f"; {', '.join(fallback)}: fewer than {BAND_MIN_POINTS} held-out points, "
                                  "the uncalibrated band")
    unc = {"provenance": ("level by level the widest of: reference (uncalibrated catalogue) factors against "
                          "every measured point of every chip, and each calibrated family's held-out band"),
           **default}
    return {"levels": list(LEVELS), "chips": chip_family, "families": {"uncalibrated": unc, **families}}


def bands_yaml(bands: dict, shas: list[str]) -> str:
    head = ("# Error bands of the cost models (costmodels/bands.py): quantiles of measured / predicted.\n"
            "# Generated by `python benchmarks/calibrate.py` from benchmarks/data/measured_aggregated_serving.csv\n"
            f"# (sha256 {shas[0][:16]}…), benchmarks/data/public_measurements.csv (sha256 {shas[1][:16]}…) and, for\n"
            f"# {', '.join(SCALE_FIT_CHIPS)}, benchmarks/data/throughput_at_scale.csv (sha256 {shas[2][:16]}…).\n"
            "# Do not edit by hand. Chips not listed under `chips` take the `uncalibrated` band.\n")
    return head + yaml.safe_dump(bands, sort_keys=False, allow_unicode=True, width=120, default_flow_style=None)


def _band_rows(bands: dict) -> list[list[str]]:
    idx = {round(lv, 2): i for i, lv in enumerate(bands["levels"])}
    rows = []
    for fam, rec in bands["families"].items():
        for k, m in _BAND_METRICS.items():
            q = rec[k]["quantiles"]
            rows.append([fam, m, str(rec[k]["n"]) if rec[k]["n"] else "(default)",
                         *(f"{q[idx[lv]]:.2f}" for lv in (0.1, 0.5, 0.9))])
    return rows


# ---- report ------------------------------------------------------------------------------


def _f(x, nd: int = 0) -> str:
    return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{nd}f}"


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _factors(f: dict) -> str:
    return (f"η_c {f['compute_efficiency']:.3f}, η_m {f['memory_efficiency']:.3f}, "
            f"τ {f['step_overhead_s'] * 1e3:.2f} ms, τ_layer {f['layer_overhead_s'] * 1e6:.1f} µs, "
            f"x½ {f['memory_half_bytes'] / 1e6:.0f} MB, t½ {f['compute_half_tokens']:.0f}, "
            f"η_ar {f['allreduce_efficiency']:.3f}")


def _cell(s: dict) -> str:
    return f"{_f(s['median'])} / {_f(s['p90'])}" if s["n"] else "–"


def _summary_rows(summ: list[dict]) -> list[list[str]]:
    idx = {(d["group"], d["metric"], d["split"]): d for d in summ}
    rows = []
    for g, metric in sorted({(d["group"], d["metric"]) for d in summ}):
        cells = [idx.get((g, metric, s)) for s in SPLITS]
        n = cells[0]["n"] if cells[0] else 0
        if not n:
            continue
        worst = max((c["max_ratio"] for c in cells[1:] if c and c["n"]), default=float("nan"))
        rows.append([g, metric, str(n)] + [_cell(c) if c else "–" for c in cells] + [_f(worst, 2)])
    return rows


def _target_rows(fam: list[dict]) -> list[list[str]]:
    rows = []
    gpu = {"NVIDIA Hopper", "NVIDIA Blackwell", "AMD CDNA3"}
    for metric in METRICS:
        for kind, fams in (("GPU", gpu), ("non-GPU", {"SRAM / wafer"})):
            target = TARGETS[metric][0 if kind == "GPU" else 1]
            for split in SPLITS[1:]:
                ds = [d for d in fam if d["metric"] == metric and d["split"] == split and d["group"] in fams
                      and d["n"]]
                if not ds:
                    continue
                worst = max(d["median"] for d in ds)
                rows.append([metric, kind, split, f"≤ {target:g}",
                             ", ".join(f"{d['group']} {d['median']:.0f}" for d in ds),
                             "met" if worst <= target else "**missed**"])
    return rows


def _ratio_line(per_chip: list[dict]) -> str:
    """The '≤ 2× on every held-out point' target, per chip, over TPOT and throughput held-out points."""
    worst: dict[str, float] = {}
    for d in per_chip:
        if d["split"] != "in-sample" and d["metric"] != "TTFT" and d["n"]:
            worst[d["group"]] = max(worst.get(d["group"], 0.0), d["max_ratio"])
    off = {c: r for c, r in worst.items() if r > MAX_RATIO}
    return (f"Target: no calibrated chip off by more than {MAX_RATIO:g}× on any held-out TPOT point. "
            + ("Missed on " + ", ".join(f"{c} ({r:.1f}×)" for c, r in sorted(off.items())) if off else "Met")
            + "; within on " + (", ".join(sorted(set(worst) - set(off))) or "none") + ".")


def markdown(evals, fam, per_chip, chips_tab, worst, resid, skipped, n_read, n_kept, shas, bands=None,
             ttft: str = "") -> str:
    parts = [
        "# Calibration of the chip factors against public measurements",
        "",
        ("Generated by `python benchmarks/calibrate.py` (do not edit by hand). Library: "
        "`costmodels/measured_rows.py` (the mapping of a measured point to cost-model inputs), "
        "`costmodels/calibration.py` (the fit), `costmodels/efficiency.py` (the operating-point model)."),
        "",
        ("Data: `benchmarks/data/measured_aggregated_serving.csv` (NVIDIA aiconfigurator measured database, "
        f"db dump 2026-04; sha256 `{shas[0][:16]}…`) and `benchmarks/data/public_measurements.csv` "
        f"(published measurements with URL, date and what was measured; sha256 `{shas[1][:16]}…`); for "
        f"{', '.join(SCALE_FIT_CHIPS)} also the closed-loop campaigns of `benchmarks/data/throughput_at_scale.csv` "
        f"(InferenceX, one source per monthly campaign; sha256 `{shas[2][:16]}…`), and for "
        f"{', '.join(OFFLINE_FIT_CHIPS)} its offline maximum-throughput campaigns (the TensorRT-LLM perf overview's "
        "trtllm-bench tables, one source each; a row is the mean step at the batch the engine ran, "
        "`costmodels/offline_rows.py`). "
        f"{n_read} rows read, {n_kept} kept."),
        "",
        "## Model in one paragraph",
        "",
        ("A step costs `max(GEMM FLOPs/(F·η_c(t)), (W + x½)/(BW·η_m)) + max(core FLOPs/(F·η_c), KV/(BW·η_kv)) + "
        "AR/η_ar + comm + τ + L·τ_layer + B·h`: the weight GEMMs' roofline plus the attention core's (each "
        "kernel bound by its own resource; η_kv the fraction of bandwidth the KV-cache reads reach, η_m where "
        "a chip has none fitted), achieved "
        "bandwidth saturates with the bytes `x` one chip moves per step (`BW·η_m·x/(x + x½)`), GEMM "
        "efficiency grows with the tokens per micro-batch `t` (`η_c·t/(t + t½)`), `τ` is the per-step "
        "framework cost and `τ_layer` the per-layer kernel-launch cost (`L` layers); `AR` is the "
        "tensor-parallel all-reduce time the collective model gives (microbenchmark speed) and `η_ar` the "
        "fraction of it a serving step achieves. Measured TPOT in "
        "aggregated serving is priced as an aggregated step: the decode batch plus the other sequences' "
        "prompts, `(b − 1)·ISL/OSL` tokens per step (closed loop). Light-load TTFT (`b ≤ "
        f"{TTFT_MAX_SEQUENCES:g}`) is `(b + 1)/2` prefills of the prompt. Throughput per chip is "
        "`concurrency / (chips · TPOT)` (decode throughput at the measured concurrency; attention-DP rows "
        "excluded, their per-GPU figures are inconsistent in the data)."),
        "",
        ("Fit: per chip, minimise the per-model-weighted mean |ln(pred/measured)| of TPOT + "
        f"{TTFT_WEIGHT:g}·TTFT + a weak log-prior (λ = {PRIOR_WEIGHT:g}) on η_c, η_m by deterministic "
        f"coordinate descent. aiconfigurator chips fit every factor of GPU_FACTORS (η_c, η_m, η_kv, τ, x½, t½, τ_layer, η_ar, h); per-model weights: {PER_MODEL_WEIGHTS}. "
        "Public-data chips fit only what their data can see: WSE-3 and Groq LPU v1 the fixed costs τ and "
        "τ_layer (memory and compute are a few % of their step), MI300X (one model, a batch sweep) "
        "η_c, η_m, τ and t½."),
        "",
        ("Held out: *leave-one-source-out* refits a chip without one source and predicts it (aiconfigurator: "
        "a source is one framework's campaign — trtllm, vllm, sglang; public rows: the publishing page); "
        "*leave-one-model-out* likewise per model. A chip with a single source or model has no held-out "
        "prediction for that split (–)."),
        "",
        "## Held-out error per chip family (absolute %, median / p90)",
        "",
        _md_table(["family", "metric", "n", "in-sample", "leave-one-source-out", "leave-one-model-out",
                   "worst held-out ratio"], _summary_rows(fam)),
        "",
        "## Targets (issue #12): held-out median per family",
        "",
        _md_table(["metric", "chips", "split", "target %", "held-out median % per family", ""],
                  _target_rows(fam)),
        "",
        _ratio_line(per_chip),
        "",
        TARGET_REASONS,
        "",
        *([] if bands is None else [
            "## Error bands (measured ÷ predicted, p10 / p50 / p90)",
            "",
            (f"Written to `costmodels/catalog/error_bands.yaml` ({BAND_SPLIT} predictions pooled per family; "
             "a ratio above 1 is slower, or more throughput, than predicted). `placement solve --confidence c` "
             "multiplies decode steps by the family's TPOT quantile at c and prefill steps by its TTFT quantile; "
             "every plan pool reports its TPOT, TTFT and capacity at p10 / p50 / p90 of these. The "
             "`uncalibrated` band is, level by level, the widest of the reference factors' miss over all "
             "measured points (n below) and every calibrated family's band."),
            "",
            _md_table(["family", "metric", "held-out points", "p10", "p50", "p90"], _band_rows(bands)),
            ""]),
        "## Per chip",
        "",
        _md_table(["chip", "metric", "n", "in-sample", "leave-one-source-out", "leave-one-model-out",
                   "worst held-out ratio"], _summary_rows(per_chip)),
        "",
        _md_table(["chip", "rows", "models", "sources", "TPOT med % kernel reference → fitted", "fitted factors"],
                  [[d["chip"], str(d["n_rows"]), str(len(d["models"])), ", ".join(d["sources"]),
                    f"{_f(d['tpot_default']['median'])} → {_f(d['tpot_in-sample']['median'])}",
                    _factors(d["fitted"])] for d in chips_tab]),
        "",
        "## Worst held-out TPOT points",
        "",
        _md_table(["chip", "split", "model", "source", "layout", "b", "ISL/OSL", "tp·pp", "measured ms",
                   "predicted ms", "pred/meas"],
                  [[d["chip"], d["split"].replace("leave-one-", "").replace("-out", ""), d["model"], d["source"],
                    d["layout"], _f(d["batch"], 1), f"{d['isl']}/{d['osl']}", f"{d['tp']}·{d['pp']}",
                    _f(d["measured_ms"], 2), _f(d["predicted_ms"], 2), _f(d["ratio"], 2)] for d in worst]),
        "",
        "## In-sample residual structure (signed median TPOT error, + = predicted slower)",
        "",
        _md_table(["chip", "load", "shape", "n", "signed median %"],
                  [[d["chip"], d["load"], d["shape"], str(d["n"]), f"{d['signed_median_pct']:+.0f}"] for d in resid]),
        "",
        "## Rows skipped (aiconfigurator data)",
        "",
        _md_table(["reason", "rows", "note"],
                  [[r, str(n), UNMAPPED_SYSTEMS.get(r.split()[1], "") if r.startswith("system ") else ""]
                   for r, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))]),
        "",
        "System → chip: " + ", ".join(f"`{k}` → `{v}`" for k, v in SYSTEM_CHIPS.items()) + ".",
        "",
        *([ttft, ""] if ttft else []),
        NOTES,
    ]
    return "\n".join(parts)


#: Why each target the table above marks missed is out of reach (the numbers are in the table).
def _framework_ttft(by_chip, chips, models, fam, json_path: Path) -> tuple:
    """Fit and score the framework-aware TTFT model; adds its fits to the JSON. Returns the section's arguments."""
    res = framework_evaluation(by_chip, chips, models, fit_kwargs, lambda c: FAMILIES.get(c, c))
    idx = {(d["group"], d["split"]): d["median"] for d in fam if d["metric"] == "TTFT" and d["n"]}
    baseline = {g: (idx[g, "leave-one-source-out"], idx[g, "leave-one-model-out"])
                for g, s in idx if s == "leave-one-source-out" and (g, "leave-one-model-out") in idx}
    doc = json.loads(json_path.read_text())
    doc["ttft_frameworks"] = res["frameworks"]
    _write_atomic(json_path, json.dumps(_clean(doc), indent=2, allow_nan=False) + "\n")
    return res, _md_table, baseline


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, default=JSON_PATH)
    ap.add_argument("--md", type=Path, default=MD_PATH)
    ap.add_argument("--bands", type=Path, default=BANDS_PATH)
    ap.add_argument("--no-holdout", action="store_true", help="skip the leave-one-out refits (and the bands)")
    ap.add_argument("--no-frameworks", action="store_true",
                    help="skip the framework-factor and prefill-regime comparison (~2 CPU-minutes)")
    ap.add_argument("--ttft-model", choices=("wave", "closed-loop"), default=calibration.TTFT_MODEL,
                    help="light-load TTFT model (costmodels.calibration.TTFT_MODEL)")
    args = ap.parse_args(argv)
    calibration.TTFT_MODEL = args.ttft_model

    chips, models = load_chip_catalog(), load_model_catalog()
    by_chip, skipped, n_read, n_kept = chip_rows(chips, models)
    evals = {c: evaluate_chip(c, by_chip, chips, models, not args.no_holdout) for c in sorted(by_chip)}
    fam = summary(evals, lambda c: FAMILIES.get(c, c))
    per_chip = summary(evals, lambda c: c)
    chips_tab, worst, resid = chip_table(evals), worst_points(evals), residuals(evals)
    shas = [hashlib.sha256(Path(p).read_bytes()).hexdigest()
            for p in (DEFAULT_DATA_PATH, PUBLIC_DATA_PATH, SCALE_DATA_PATH)]

    for r in _summary_rows(fam):
        print(" | ".join(r))
    for d in chips_tab:
        print(d["chip"], _factors(d["fitted"]))
    doc = {"data": {"aiconfigurator": {"path": _rel(DEFAULT_DATA_PATH), "sha256": shas[0]},
                    "public": {"path": _rel(PUBLIC_DATA_PATH), "sha256": shas[1]},
                    "scale": {"path": _rel(SCALE_DATA_PATH), "sha256": shas[2], "chips": list(SCALE_FIT_CHIPS)}},
           "settings": {"ttft_weight": TTFT_WEIGHT, "prior_weight": PRIOR_WEIGHT,
                        "per_model_weights": PER_MODEL_WEIGHTS, "families": FAMILIES},
           "n_rows": n_read, "n_kept": n_kept, "skipped": dict(sorted(skipped.items())),
           "families": fam, "chips": per_chip, "fits": chips_tab, "worst_points": worst, "residuals": resid}
    _write_atomic(args.json, json.dumps(_clean(doc), indent=2, allow_nan=False) + "\n")
    bands = fw_args = None
    if not args.no_holdout:
        bands = error_bands(evals, {c for c, spec in chips.items() if spec.calibration == "calibrated"})
        fw_args = _framework_ttft(by_chip, chips, models, fam, args.json)
        doc["ttft_frameworks"] = fw_args[0]["frameworks"]
        bands["frameworks"] = framework_bands(fw_args[0])
        _write_atomic(args.bands, bands_yaml(bands, shas))
    variants = {args.ttft_model: fam}
    if not args.no_holdout:  # the other light-load TTFT model, for the comparison table
        other = "closed-loop" if args.ttft_model == "wave" else "wave"
        calibration.TTFT_MODEL = other
        alt = {c: evaluate_chip(c, by_chip, chips, models, True) for c in sorted(by_chip)}
        calibration.TTFT_MODEL = args.ttft_model
        variants[other] = summary(alt, lambda c: FAMILIES.get(c, c))
    ttft = ttft_section(evals, models, _md_table, dict(sorted(variants.items(), reverse=True)), args.ttft_model)
    if fw_args is not None:  # the serving framework as an input (benchmarks/ttft_framework.py)
        ttft += "\n" + framework_section(*fw_args, bands=bands["frameworks"])
    if not (args.no_holdout or args.no_frameworks):  # a per-framework step factor (benchmarks/framework_report.py)
        fw = step_framework_evaluate(by_chip, chips, models, {c: fit_kwargs(c) for c in JOINT_CHIPS})
        ttft = (ttft + "\n\n" if ttft else "") + step_framework_section(fw, _md_table)
        doc["frameworks"] = {k: v for k, v in fw.items() if k != "stats"}
        _write_atomic(args.json, json.dumps(_clean(doc), indent=2, allow_nan=False) + "\n")
    _write_atomic(args.md, markdown(evals, fam, per_chip, chips_tab, worst, resid, skipped, n_read, n_kept, shas,
                                    bands, ttft))
    print(f"\nwrote {_rel(args.json)} and {_rel(args.md)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
