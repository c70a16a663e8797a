"""The TTFT section of ``benchmarks/CALIBRATION.md``: why light-load TTFT misses, and the model variants.

:mod:`benchmarks.calibrate` calls :func:`ttft_section` with its per-chip evaluations. Per chip and
serving framework it sets the measured light-load TTFT beside the predicted time of one prefill of
the prompt on the fitted chip (the physics every TTFT model shares), flags measurement series whose
TTFT *falls* as concurrency rises (no prefill or queueing model produces that), lists the worst
held-out TTFT points, and compares the light-load TTFT models of :data:`costmodels.calibration.TTFT_MODEL`
(in-sample and held-out, TPOT and TTFT) when both were evaluated.

Examples
--------
>>> falls([(4, 300.0), (8, 200.0), (16, 210.0)]), falls([(4, 100.0), (8, 110.0)])
(True, False)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

import numpy as np

from costmodels.calibration import chip_with
from costmodels.roofline import prefill_step

__all__ = ["FALL_SHARE", "falls", "prefill_only_s", "ttft_by_source", "ttft_section", "worst_ttft_points"]

#: The reading of the section's tables (numbers from the shipped data; regenerate when they change).
WHY = """**Why the framework-blind TTFT misses the 25 % target (held-out median 43–48 %).** One prefill
of the prompt explains only 8–35 % of the measured light-load TTFT; the rest is latency outside the forward
steps that depends on the serving framework, not the chip — a median ~60–85 ms on vLLM, 130–175 ms on
TRT-LLM, 290–380 ms on SGLang — and on the campaign (a quarter of the H100 TRT-LLM rows sit in series
whose TTFT falls as concurrency rises; DeepSeek-V3 on SGLang B200 takes 5.6 s at 4 sequences with 8k
prompts). The `wave` model absorbs part of that latency by scaling the prefill by (b + 1)/2; the
`closed-loop` model's fitted per-request latency cannot predict one framework from the others, so the
catalogue keeps the `wave` fit for plans that name no framework. With the framework as an input (next
section) held-out TTFT falls to 33–35 % on Blackwell and 38–42 % on Hopper — closer, still short of 25 %:
within one framework the latency beyond the prefill varies ~10× between models (vLLM: 34 ms for gpt-oss-120b
on B200, ~690 ms for Qwen3-235B on H200), which one constant per framework cannot carry. It grows with the
decode step (roughly 8 decode steps on vLLM, 13 on TRT-LLM, 17 on SGLang); modelling it as a number of the
pool's decode steps instead of seconds was tried and held out about the same (Blackwell 29 / 37 %, Hopper
39 / 37 % leave-one-campaign-out / leave-one-model-out, from a run of that variant), and a prefill pool has no
decode step to count, so the catalogue keeps one latency in seconds. API TTFTs of the public rows include the network round trip and are not fitted.
"""

#: A series "falls" when some higher concurrency has a TTFT this much below the lowest concurrency's.
FALL_SHARE = 0.2


def falls(points: list[tuple[float, float]]) -> bool:
    """Whether TTFT at the lowest concurrency exceeds a later one's by more than :data:`FALL_SHARE`."""
    pts = sorted(points)
    return any(t < pts[0][1] * (1.0 - FALL_SHARE) for _, t in pts[1:])


def _series_key(m) -> tuple:
    r = m.row
    return (m.model, r.backend, m.precision, r.isl, r.osl, m.tp, m.pp, m.layout)


def prefill_only_s(ev: dict, models: dict) -> np.ndarray:
    """One prefill of each TTFT-eligible row's prompt on the fitted chip, alone (nan elsewhere)."""
    fit, rows = ev["fit"], ev["rows"]
    out = np.full(len(rows), np.nan)
    chip = None
    for i, m in enumerate(rows):
        if not m.ttft_eligible:
            continue
        if chip is None:
            from topology.chips import load_chip_catalog

            chip = chip_with(load_chip_catalog()[m.chip], **asdict(fit.fitted))
        out[i] = float(prefill_step(chip, models[m.model], prompt=m.row.isl, batch=1, tp=m.tp, pp=m.pp, ep=m.ep,
                                    precision=m.precision, kv_precision=m.kv_precision).time_s)
    return out


def ttft_by_source(evals: dict[str, dict], models: dict) -> list[dict]:
    """Per chip and framework: measured light-load TTFT against one prefill and the prediction."""
    out = []
    for chip, ev in evals.items():
        rows, meas = ev["rows"], ev["measured"]["TTFT"]
        pred = ev["predicted"]["in-sample"]["TTFT"]
        prefill = prefill_only_s(ev, models)
        series: dict[tuple, list] = defaultdict(list)
        for m in rows:
            series[_series_key(m)].append((m.row.conc, m.row.ttft_ms))
        falling = {k for k, v in series.items() if falls(v)}
        by_src: dict[str, list[int]] = defaultdict(list)
        for i, m in enumerate(rows):
            if not np.isnan(pred[i]) and not np.isnan(meas[i]):
                by_src[m.row.backend].append(i)
        for src, idx in sorted(by_src.items()):
            ix = np.array(idx)
            out.append({"chip": chip, "source": src, "n": len(idx),
                        "measured_ms": float(np.median(meas[ix])) * 1e3,
                        "prefill_ms": float(np.median(prefill[ix])) * 1e3,
                        "prefill_share": float(np.median(prefill[ix] / meas[ix])),
                        "excess_ms": float(np.median(meas[ix] - prefill[ix])) * 1e3,
                        "ratio": float(np.median(pred[ix] / meas[ix])),
                        "falling_share": float(np.mean([_series_key(rows[i]) in falling for i in idx]))})
    return out


def worst_ttft_points(evals: dict[str, dict], n: int = 10) -> list[dict]:
    """The held-out TTFT points furthest off (largest ratio either way, both held-out splits)."""
    pts = []
    for chip, ev in evals.items():
        meas = ev["measured"]["TTFT"]
        for split in ("leave-one-source-out", "leave-one-model-out"):
            pred = ev["predicted"].get(split, {}).get("TTFT")
            if pred is None:
                continue
            for i, m in enumerate(ev["rows"]):
                if np.isnan(pred[i]) or np.isnan(meas[i]):
                    continue
                pts.append({"chip": chip, "split": split.removeprefix("leave-one-").removesuffix("-out"),
                            "model": m.model, "source": m.row.backend, "precision": m.precision,
                            "batch": m.batch, "isl": m.row.isl, "osl": m.row.osl, "tp": m.tp,
                            "measured_ms": meas[i] * 1e3, "predicted_ms": pred[i] * 1e3, "ratio": pred[i] / meas[i]})
    return worst_distinct(pts, ("chip", "model", "source", "isl", "osl", "tp", "precision"), n)


def worst_distinct(points: list[dict], key: tuple[str, ...], n: int) -> list[dict]:
    """The n points furthest from 1 in ``ratio`` (either way), one per distinct ``key``."""
    seen, out = set(), []
    for d in sorted(points, key=lambda d: -max(d["ratio"], 1.0 / d["ratio"])):
        k = tuple(d[f] for f in key)
        if k not in seen:
            seen.add(k)
            out.append(d)
        if len(out) == n:
            break
    return out


def _compare_rows(variants: dict[str, list[dict]], families: set[str]) -> list[list[str]]:
    """Median |error| % per family, metric and split, one column group per TTFT model."""
    idx = {(name, d["group"], d["metric"], d["split"]): d for name, fam in variants.items() for d in fam}
    rows = []
    for g in sorted(families):
        for metric in ("TPOT", "TTFT"):
            cells = []
            for name in variants:
                for split in ("in-sample", "leave-one-source-out", "leave-one-model-out"):
                    d = idx.get((name, g, metric, split))
                    cells.append("–" if d is None or not d["n"] else f"{d['median']:.0f}")
            if any(c != "–" for c in cells):
                rows.append([g, metric, *cells])
    return rows


def ttft_section(evals: dict[str, dict], models: dict, table, variants: dict[str, list[dict]] | None = None,
                 adopted: str = "wave") -> str:
    """The Markdown section; ``table(header, rows)`` renders a table, ``variants`` maps a TTFT model to
    its family summary (:func:`benchmarks.calibrate.summary`)."""
    src = ttft_by_source(evals, models)
    worst = worst_ttft_points(evals)
    parts = ["## TTFT: where the light-load error comes from", "",
             ("Per chip and serving framework (TTFT-eligible rows, medians): measured TTFT, one prefill of the "
              "prompt alone on the fitted chip, the share of the measurement that prefill explains, the rest "
              "(measured − prefill), the adopted model's prediction ÷ measurement, and the share of rows in a "
              "series (same model, framework, precision, ISL/OSL, layout) whose TTFT *falls* by more than "
              f"{FALL_SHARE:.0%} as concurrency rises — which no prefill or queueing model can produce."), "",
             table(["chip", "framework", "n", "measured ms", "one prefill ms", "prefill share", "rest ms",
                    "pred/meas", "falling series"],
                   [[d["chip"], d["source"], str(d["n"]), f"{d['measured_ms']:.0f}", f"{d['prefill_ms']:.0f}",
                     f"{d['prefill_share']:.2f}", f"{d['excess_ms']:.0f}", f"{d['ratio']:.2f}",
                     f"{d['falling_share']:.0%}"] for d in src]), "",
             "Worst held-out TTFT points:", "",
             table(["chip", "split", "model", "framework", "precision", "b", "ISL/OSL", "tp", "measured ms",
                    "predicted ms", "pred/meas"],
                   [[d["chip"], d["split"], d["model"], d["source"], d["precision"], f"{d['batch']:.1f}",
                     f"{d['isl']}/{d['osl']}", str(d["tp"]), f"{d['measured_ms']:.0f}", f"{d['predicted_ms']:.0f}",
                     f"{d['ratio']:.2f}"] for d in worst]), ""]
    if variants and len(variants) > 1:
        fams = {d["group"] for fam in variants.values() for d in fam if d["metric"] == "TTFT" and d["n"]}
        head = ["family", "metric"] + [f"{name}{' (adopted)' if name == adopted else ''} {s}" for name in variants
                                       for s in ("in", "LOSO", "LOMO")]
        parts += [("Light-load TTFT models (`python benchmarks/calibrate.py --ttft-model …`), median |error| %: "
                   "`wave` prices (b + 1)/2 prefills (the replica's prompts sent together); `closed-loop` one "
                   "prefill + half of the others' aggregated step in flight + a fitted per-request latency "
                   "(`request_overhead_s`). Both refit every factor."), "",
                  table(head, _compare_rows(variants, fams)), ""]
    return "\n".join([*parts, WHY])
