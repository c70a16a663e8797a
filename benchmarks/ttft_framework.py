"""TTFT with the serving framework as an input: fit each framework's request latency, score it held out.

:mod:`benchmarks.calibrate` calls :func:`framework_evaluation` with its per-chip evaluations and
:func:`framework_section` for ``benchmarks/CALIBRATION.md``. The model (what plans price with
``serving.framework``, :mod:`costmodels.frameworks`)::

    TTFT = one prefill of the prompt on the calibrated chip + L_f

with ``L_f`` the framework's request latency. ``L_f`` minimises the mean |ln(pred/measured)| over the
framework's TTFT-eligible rows, each (chip, model) weighted equally (the objective the chip factors are
fitted with, :mod:`costmodels.calibration`: relative, not absolute, misses).

Held out, three ways, each using only what would be known about the held-out rows:

* *leave-one-campaign-out* (a campaign is one framework on one chip): the chip's factors refitted
  without that framework's rows, the framework's latency fitted on its rows on the *other* chips;
* *leave-one-model-out*: the chip's factors and every framework's latency fitted without the model;
* *leave-one-source-out* (the framework is unknown): the chip's factors refitted without the
  framework, and one latency pooled over the *other* frameworks' rows.

Examples
--------
>>> round(fit_latency_s([0.01, 0.02, 0.05], [0.11, 0.12, 0.30], ["a", "b", "c"]), 3)
0.1
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

import numpy as np

from costmodels.bands import ratio_quantiles
from costmodels.calibration import chip_with, fit_chip
from costmodels.framework_fit import fit_latency_s, one_prefill_s

__all__ = ["BAND_SPLIT", "SPLITS", "TARGET_PCT", "error_table", "fit_latency_s", "framework_bands", "framework_evaluation",
           "framework_section"]

#: Issue #12's held-out TTFT target, median |error| %.
TARGET_PCT = 25.0
#: The held-out splits of the framework-aware model, in report order.
SPLITS = ("leave-one-campaign-out", "leave-one-model-out", "leave-one-source-out")
#: The split a framework's TTFT band is taken from: its latency known, learned on other chips.
BAND_SPLIT = "leave-one-campaign-out"


def _chip_prefills(chip_spec, rows, models, fit_kw: dict) -> dict:
    """One-prefill times of the TTFT-eligible ``rows`` under the chip's in-sample fit and every refit
    without one framework (``("source", f)``) or one model (``("model", M)``)."""
    fits = {"in-sample": fit_chip(chip_spec, rows, models, **fit_kw).fitted}
    for kind, key in (("source", lambda m: m.row.backend), ("model", lambda m: m.model)):
        names = {key(m) for m in rows}
        for g in sorted(names) if len(names) > 1 else []:
            fits[(kind, g)] = fit_chip(chip_spec, [m for m in rows if key(m) != g], models, **fit_kw).fitted
    elig = [m for m in rows if m.ttft_eligible]
    return {k: one_prefill_s(chip_with(chip_spec, **asdict(f)), elig, models) for k, f in fits.items()}


def framework_evaluation(by_chip: dict, chips: dict, models: dict, fit_kwargs, family) -> dict:
    """Fit every framework's latency and predict every TTFT-eligible row in sample and held out.

    ``by_chip`` maps a chip to its measured rows (:func:`benchmarks.calibrate.chip_rows`), ``fit_kwargs(chip)``
    gives :func:`fit_chip`'s arguments, ``family(chip)`` the family errors are pooled over. Returns the
    per-row table (``rows``: chip, family, framework, model, measured and one prefill in seconds, and the
    prediction of every split) and the per-framework fits (``frameworks``).
    """
    rows, pre = [], {}
    for c in sorted(by_chip):
        elig = [m for m in by_chip[c] if m.ttft_eligible and m.row.backend in ("vllm", "trtllm", "sglang")]
        if not elig:
            continue
        pre[c] = _chip_prefills(chips[c], by_chip[c], models, fit_kwargs(c))
        e_all = [m for m in by_chip[c] if m.ttft_eligible]
        for j, m in enumerate(e_all):
            if m.row.backend in ("vllm", "trtllm", "sglang"):
                rows.append({"chip": c, "family": family(c), "framework": m.row.backend, "model": m.model, "j": j,
                             "measured_s": m.row.ttft_ms / 1e3})

    def prefill(r, key):
        p = pre[r["chip"]]
        return p[key if key in p else "in-sample"][r["j"]]

    def latency(select, key_of) -> float:
        pts = [r for r in rows if select(r)]
        return fit_latency_s([prefill(r, key_of(r)) for r in pts], [r["measured_s"] for r in pts],
                             [r["chip"] + "/" + r["model"] for r in pts])

    fws = sorted({r["framework"] for r in rows})
    insample = {f: latency(lambda r, f=f: r["framework"] == f, lambda r: "in-sample") for f in fws}
    cache: dict[tuple, float] = {}
    for r in rows:
        f, c, mdl = r["framework"], r["chip"], r["model"]
        r["prefill_s"] = prefill(r, "in-sample")
        r["in-sample"] = r["prefill_s"] + insample[f]
        k = ("campaign", f, c)
        if k not in cache:
            cache[k] = latency(lambda q, f=f, c=c: q["framework"] == f and q["chip"] != c, lambda q: "in-sample")
        r["leave-one-campaign-out"] = prefill(r, ("source", f)) + cache[k]
        k = ("model", f, mdl)
        if k not in cache:
            cache[k] = latency(lambda q, f=f, mdl=mdl: q["framework"] == f and q["model"] != mdl,
                               lambda q, mdl=mdl: ("model", mdl))
        r["leave-one-model-out"] = prefill(r, ("model", mdl)) + cache[k]
        k = ("source", f)
        if k not in cache:
            cache[k] = latency(lambda q, f=f: q["framework"] != f, lambda q, f=f: ("source", f))
        r["leave-one-source-out"] = prefill(r, ("source", f)) + cache[k]
    frameworks = {}
    for f in fws:
        sel = [r for r in rows if r["framework"] == f]
        per_chip = {c: float(np.median([r["measured_s"] - r["prefill_s"] for r in sel if r["chip"] == c]))
                    for c in sorted({r["chip"] for r in sel})}
        frameworks[f] = {"ttft_request_latency_s": insample[f], "rows": len(sel), "chips": sorted(per_chip),
                         "models": len({r["model"] for r in sel}),
                         "measured_minus_prefill_s_median_per_chip": per_chip,
                         "pooled_latency_without_it_s": cache[("source", f)]}
    return {"rows": rows, "frameworks": frameworks}


def framework_bands(result: dict) -> dict:
    """Per framework, ``ttft`` quantiles of measured ÷ predicted over its :data:`BAND_SPLIT` predictions
    (every chip pooled): the band ``--confidence`` prices a prefill with when the instance names the framework
    (:func:`costmodels.bands.framework_band`)."""
    out = {}
    for f in sorted(result["frameworks"]):
        rs = [r for r in result["rows"] if r["framework"] == f and np.isfinite(r[BAND_SPLIT])]
        meas = np.array([r["measured_s"] for r in rs])
        pred = np.array([r[BAND_SPLIT] for r in rs])
        out[f] = {"provenance": f"{BAND_SPLIT} predictions of one prefill + the {f} request latency "
                                f"(benchmarks/ttft_framework.py), chips {', '.join(sorted({r['chip'] for r in rs}))}",
                  "ttft": {"n": len(rs), "median_abs_error": round(float(np.median(np.abs(pred / meas - 1.0))), 4),
                           "quantiles": [round(q, 4) for q in ratio_quantiles(meas, pred)]}}
    return out


def _err_pct(r: dict, split: str) -> float:
    return abs(r[split] / r["measured_s"] - 1.0) * 100.0


def error_table(result: dict, group: str, baseline: dict | None = None) -> list[dict]:
    """Median / p90 |error| % per ``group`` (``family``, ``framework`` or ``chip``) and split; ``baseline``
    maps a group to the framework-blind model's held-out medians (leave-one-source-out, leave-one-model-out)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in result["rows"]:
        by[r[group]].append(r)
    out = []
    for g, rs in sorted(by.items()):
        d = {"group": g, "n": len(rs)}
        for split in ("in-sample", *SPLITS):
            e = np.array([_err_pct(r, split) for r in rs if np.isfinite(r[split])])
            d[split] = (float(np.median(e)), float(np.percentile(e, 90)), int(e.size)) if e.size else None
        d["baseline"] = (baseline or {}).get(g)
        out.append(d)
    return out


def _cell(s) -> str:
    return "–" if s is None else f"{s[0]:.0f} / {s[1]:.0f}"


def framework_section(result: dict, table, baseline: dict | None = None, bands: dict | None = None) -> str:
    """The Markdown section: per-framework latencies, held-out error per family and framework vs the target.

    ``table(header, rows)`` renders a table; ``baseline`` maps a family to the framework-blind model's
    held-out medians ``(leave-one-source-out, leave-one-model-out)``.
    """
    fws = result["frameworks"]
    fam = error_table(result, "family", baseline)
    per_fw = error_table(result, "framework")
    lines = ["## TTFT with the serving framework as an input", "",
             ("`TTFT = one prefill of the prompt on the calibrated chip + L_f`, `L_f` the framework's request "
              "latency (`costmodels/catalog/frameworks.yaml`, copied from this fit; plans add it to every pool's "
              "TTFT with `serving.framework`). `L_f` minimises the (chip, model)-weighted mean |ln(pred/measured)| "
              "over the framework's TTFT-eligible rows."), "",
             table(["framework", "rows", "models", "chips", "L_f ms", "measured − prefill ms, median per chip",
                    "pooled L without it ms"],
                   [[f, str(d["rows"]), str(d["models"]), ", ".join(d["chips"]),
                     f"{d['ttft_request_latency_s'] * 1e3:.0f}",
                     ", ".join(f"{c} {v * 1e3:.0f}" for c, v in d["measured_minus_prefill_s_median_per_chip"].items()),
                     f"{d['pooled_latency_without_it_s'] * 1e3:.0f}"] for f, d in fws.items()]), "",
             ("Held out: *leave-one-campaign-out* — the chip's factors refitted without the campaign's framework, "
              "`L_f` fitted on that framework's rows on the other chips (a framework's latency measured once, "
              "elsewhere); *leave-one-model-out* — chip factors and `L_f` fitted without the model; "
              "*leave-one-source-out* — the framework unknown: chip factors without it and one latency pooled over "
              "the other frameworks. Median / p90 |error| %; the last column is the framework-blind (`wave`) "
              "model's held-out median, leave-one-source-out / leave-one-model-out."), "",
             table(["family", "n", "in-sample", "leave-one-campaign-out", "leave-one-model-out",
                    "leave-one-source-out (framework unknown)", "framework-blind LOSO / LOMO"],
                   [[d["group"], str(d["n"]), _cell(d["in-sample"]), *(_cell(d[s]) for s in SPLITS),
                     "–" if d["baseline"] is None else " / ".join(f"{x:.0f}" for x in d["baseline"])]
                    for d in fam]), "",
             table(["framework", "n", "in-sample", "leave-one-campaign-out", "leave-one-model-out",
                    "leave-one-source-out (framework unknown)"],
                   [[d["group"], str(d["n"]), _cell(d["in-sample"]), *(_cell(d[s]) for s in SPLITS)]
                    for d in per_fw]), "",
             f"Against the ≤ {TARGET_PCT:.0f} % target (held-out median per family, framework known):", "",
             table(["family", "split", "median %", ""],
                   [[d["group"], s, f"{d[s][0]:.0f}", "met" if d[s][0] <= TARGET_PCT else "**missed**"]
                    for d in fam for s in SPLITS[:2] if d[s] is not None]), ""]
    if bands:
        lines += [("TTFT band per framework (measured ÷ predicted over its leave-one-campaign-out predictions, "
                   "`costmodels/catalog/error_bands.yaml` `frameworks`): `solve --confidence c` with "
                   "`serving.framework` prices prefill steps and the request latency at its c quantile; "
                   "`pooled` keeps the chip family's band."), "",
                  table(["framework", "n", "p10", "p50", "p90"],
                        [[f, str(b["ttft"]["n"]), *(f"{b['ttft']['quantiles'][i]:.2f}" for i in (1, 9, 17))]
                         for f, b in bands.items()]), ""]
    return "\n".join(lines)
