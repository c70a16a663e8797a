"""The serving framework and the harness's prefill regime as inputs: held-out TPOT / throughput, four models.

``benchmarks/calibrate.py`` calls :func:`framework_section` for the CALIBRATION.md section
"Serving framework and prefill regime". Models compared on the aiconfigurator GPUs
(:data:`JOINT_CHIPS`), each refitting every factor in every split:

pooled
    Today's fit: one set of chip factors per chip, frameworks pooled.
framework factor
    :mod:`costmodels.framework_fit`: one multiplicative decode-step factor per framework, shared by
    every chip, fitted jointly with the chip factors.
framework step cost
    The same with an additive per-step cost per framework (seconds) instead of a factor.
vLLM waves
    The vLLM campaign's rows flagged ``prefill_regime = "waves"``
    (:func:`costmodels.measured_rows.with_prefill_regime`): no prompt tokens in its decode steps.

Splits: in sample; leave one *campaign* (chip × framework) out — the chip's factors from its
other frameworks, the framework's factor from the other chips (for the pooled fit this is its
leave-one-source-out); leave one *framework* out of every chip (its factor unknown: 1); leave one
*model* out of every chip.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from costmodels.calibration import heldout_predictions
from costmodels.framework_fit import (
    FRAMEWORKS,
    fit_joint,
    framework_of,
    heldout_joint,
    predict_joint,
)
from costmodels.measured_rows import with_prefill_regime

#: Chips with several frameworks (gb200's fit is not adopted and is left out).
JOINT_CHIPS: tuple[str, ...] = ("b200", "h100", "h200")
FAMILY = {"b200": "Blackwell", "h100": "Hopper", "h200": "Hopper"}
SPLITS = ("in-sample", "leave-one-campaign-out", "leave-one-framework-out", "leave-one-model-out")
VARIANTS = ("pooled", "framework factor", "framework step cost", "pooled + vLLM waves",
            "framework factor + vLLM waves")


def _campaign(chip, m):
    return (chip, framework_of(m))


def _framework(chip, m):
    return framework_of(m)


def _model(chip, m):
    return m.model


def _pooled(by_chip, chips, models, fit_kw) -> dict[str, dict[str, np.ndarray]]:
    """Per split, per chip: TPOT predictions of the per-chip (pooled) fit."""
    from costmodels.calibration import chip_with, fit_chip, predict_rows

    out: dict[str, dict[str, np.ndarray]] = {s: {} for s in SPLITS}
    for c, rows in by_chip.items():
        f = fit_chip(chips[c], rows, models, **fit_kw[c]).fitted
        out["in-sample"][c] = predict_rows(chip_with(chips[c], **asdict(f)), rows, models)[0]
        loso = heldout_predictions(chips[c], rows, models, lambda m: m.row.backend, **fit_kw[c])[0]
        out["leave-one-campaign-out"][c] = out["leave-one-framework-out"][c] = loso
        out["leave-one-model-out"][c] = heldout_predictions(chips[c], rows, models, lambda m: m.model,
                                                            **fit_kw[c])[0]
    return out


def _joint(by_chip, chips, models, fit_kw, additive: bool = False
           ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, float]]:
    """Per split, per chip: TPOT predictions of the framework-factor fit; its in-sample step factors."""
    fit = fit_joint(by_chip, chips, models, fit_kw, additive=additive)
    out = {"in-sample": {c: predict_joint(fit, chips[c], rows, models) for c, rows in by_chip.items()}}
    for split, key in (("leave-one-campaign-out", _campaign), ("leave-one-framework-out", _framework),
                       ("leave-one-model-out", _model)):
        out[split] = heldout_joint(by_chip, chips, models, key, fit_kw, additive=additive)
    return out, fit.step_factors


def _throughput(tpot_s: np.ndarray, rows) -> np.ndarray:
    conc = np.array([m.row.conc for m in rows], dtype=float)
    gpus = np.array([m.row.gpus for m in rows], dtype=float)
    return np.where([m.layout == "tp" for m in rows], conc / (gpus * tpot_s), np.nan)


def _stats(pred: np.ndarray, meas: np.ndarray) -> tuple[float, float]:
    """Median |error| % and the largest ratio either way."""
    r = pred / meas
    r = r[np.isfinite(r)]
    return float(np.median(np.abs(r - 1.0)) * 100.0), float(np.max(np.maximum(r, 1.0 / r)))


def evaluate(by_chip, chips, models, fit_kw) -> dict:
    """Every variant's held-out statistics per family and split, the step factors, and the worst-point rows."""
    by_chip = {c: by_chip[c] for c in JOINT_CHIPS if c in by_chip}
    waved = {c: with_prefill_regime(rows, {"vllm"}) for c, rows in by_chip.items()}
    preds = {"pooled": _pooled(by_chip, chips, models, fit_kw),
             "pooled + vLLM waves": _pooled(waved, chips, models, fit_kw)}
    preds["framework factor"], factors = _joint(by_chip, chips, models, fit_kw)
    preds["framework factor + vLLM waves"], factors_waved = _joint(waved, chips, models, fit_kw)
    preds["framework step cost"], costs = _joint(by_chip, chips, models, fit_kw, additive=True)
    stats: dict[str, dict] = {}
    for variant, per_split in preds.items():
        for split, per_chip in per_split.items():
            for fam in sorted(set(FAMILY.values())):
                cs = [c for c in by_chip if FAMILY[c] == fam]
                rows = [m for c in cs for m in by_chip[c]]
                pred = np.concatenate([per_chip[c] for c in cs])
                meas = np.array([m.row.tpot_ms for m in rows]) / 1e3
                stats.setdefault(variant, {}).setdefault(split, {})[fam] = {
                    "TPOT": _stats(pred, meas),
                    "throughput per chip": _stats(_throughput(pred, rows), _throughput(meas, rows))}
            stats[variant][split]["worst"] = {
                c: _stats(per_chip[c], np.array([m.row.tpot_ms for m in by_chip[c]]) / 1e3)[1] for c in by_chip}
    return {"stats": stats, "step_factors": factors, "step_factors_waves": factors_waved, "step_costs_s": costs,
            "worst_rows": _worst_rows(by_chip, preds), "campaigns": _campaign_residuals(by_chip, preds["pooled"])}


def _campaign_residuals(by_chip, pooled) -> dict[str, dict[str, float]]:
    """Per chip and framework: median measured ÷ pooled in-sample TPOT − 1, in % (what a step factor would fix)."""
    out: dict[str, dict[str, float]] = {}
    for c, rows in by_chip.items():
        meas = np.array([m.row.tpot_ms for m in rows]) / 1e3
        fw = np.array([framework_of(m) for m in rows])
        for f in FRAMEWORKS:
            sel = fw == f
            if sel.any():
                out.setdefault(c, {})[f] = float((np.exp(np.median(np.log(meas[sel] / pooled["in-sample"][c][sel])))
                                                  - 1.0) * 100.0)
    return out


def _worst_rows(by_chip, preds) -> list[dict]:
    """The two worst series of the pooled fit, under every variant (median held-out pred ÷ measured)."""
    series = {
        "H200 vLLM Llama-3.1-8B, ISL/OSL ≥ 40": ("h200", lambda m: m.row.backend == "vllm"
                                                 and m.model == "llama-3.1-8b" and m.row.isl >= 40 * m.row.osl),
        "B200 TRT-LLM DeepSeek-V3 TP 8, 4000/1000, b ≤ 128": (
            "b200", lambda m: m.row.backend == "trtllm" and m.model == "deepseek-v3" and m.layout == "tp"
            and m.tp == 8 and m.batch <= 128 and (m.row.isl, m.row.osl) == (4000, 1000)),
    }
    out = []
    for name, (c, sel) in series.items():
        idx = np.flatnonzero([sel(m) for m in by_chip[c]])
        meas = np.array([by_chip[c][i].row.tpot_ms for i in idx]) / 1e3
        rec = {"series": name, "n": int(idx.size)}
        for variant in VARIANTS:
            for split in ("leave-one-campaign-out", "leave-one-model-out"):
                rec[f"{variant}|{split}"] = float(np.median(preds[variant][split][c][idx] / meas)) if idx.size \
                    else float("nan")
        out.append(rec)
    return out


def framework_section(result: dict, md_table) -> str:
    """The CALIBRATION.md section from :func:`evaluate`'s result."""
    st = result["stats"]
    rows = []
    for variant in VARIANTS:
        for split in SPLITS:
            s = st[variant][split]
            rows.append([variant, split, *(f"{s[f][m][0]:.1f}" for m in ("TPOT", "throughput per chip")
                                           for f in ("Blackwell", "Hopper")),
                         " / ".join(f"{s['worst'][c]:.2f}" for c in JOINT_CHIPS)])
    fac = " · ".join(f"{f} {result['step_factors'].get(f, 1.0):.3f}" for f in FRAMEWORKS)
    fac_w = " · ".join(f"{f} {result['step_factors_waves'].get(f, 1.0):.3f}" for f in FRAMEWORKS)
    cost = " · ".join(f"{f} {result['step_costs_s'].get(f, 0.0) * 1e3:+.2f} ms" for f in FRAMEWORKS)
    worst = [[w["series"], str(w["n"]), *(f"{w[f'{v}|{s}']:.2f}" for v in VARIANTS
                                          for s in ("leave-one-campaign-out", "leave-one-model-out"))]
             for w in result["worst_rows"]]
    return "\n".join([
        "## Serving framework and prefill regime as inputs",
        "",
        ("Held-out median |error| % on the aiconfigurator GPUs (b200; h100 + h200), every factor refitted in "
         "every split (`benchmarks/framework_report.py`, `costmodels/framework_fit.py`). *framework factor*: one "
         "multiplicative decode-step factor per serving framework shared by every chip, fitted jointly with the "
         "chip factors (geometric mean 1 over the frameworks). *vLLM waves*: the vLLM campaign's rows flagged "
         "`prefill_regime: waves` (its harness prefills a replica's prompts together, inside TTFT: no prompt "
         "tokens in its decode steps). *leave-one-campaign-out*: one chip × framework out — the chip's factors "
         "from its other frameworks, the framework's factor from the other chips (the pooled fit's "
         "leave-one-source-out); *leave-one-framework-out*: a framework out of every chip (factor unknown: 1)."),
        "",
        md_table(["model", "split", "Blackwell TPOT", "Hopper TPOT", "Blackwell thr./chip", "Hopper thr./chip",
                  "worst TPOT ratio b200 / h100 / h200"], rows),
        "",
        (f"Fitted step factors (in sample): {fac}; with vLLM waves: {fac_w} (below 1: faster than the average "
         f"framework's step); per-step costs: {cost}."),
        "",
        ("Median measured ÷ pooled in-sample TPOT − 1 per campaign (%; + = the framework is slower than the "
         "chip's pooled fit): " + "; ".join(f"{c} " + ", ".join(f"{f} {v:+.0f}" for f, v in fs.items())
                                            for c, fs in result["campaigns"].items()) + "."),
        "",
        "The two worst series, median held-out predicted ÷ measured TPOT (campaign-out / model-out):",
        "",
        md_table(["series", "n", *(f"{v} {s}" for v in VARIANTS for s in ("campaign", "model"))], worst),
    ])
