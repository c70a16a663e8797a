"""Capacity at the measured SLO against measured throughput, on public campaigns the fit never saw.

For every kept point of ``benchmarks/data/throughput_at_scale.csv`` (aggregated serving, no speculative
decoding, chip and model in the catalogue) this script builds the instance the measurement answers — the
measured system's chips as the fleet, one class with the measured ISL/OSL, its TPOT SLO the measured mean
TPOT (offline runs: no latency bound) — and asks ``placement.studies.capacity`` for the largest output
rate the fleet serves, any layout. Predicted ÷ measured output tokens/s per GPU is the capacity error a
capacity planner sees. Nothing in the cost models was fitted on these campaigns (the chip factors come
from ``measured_aggregated_serving.csv`` and, for the chips :data:`costmodels.calibration.SCALE_FIT_CHIPS` and
:data:`costmodels.calibration.OFFLINE_FIT_CHIPS`, from these campaigns too). Every figure is held out by campaign:
a point of campaign X on such a chip is planned with a calibration overlay — the chip's factors fitted without
X and a p10–p90 band from the other campaigns' own leave-one-campaign-out residuals
(:func:`heldout_overlays`) — so no factor or band that prices it saw X; rows that repeat points of
``measured_aggregated_serving.csv`` (``overlaps_measured_aggregated``) are reported apart.

Points kept per series (campaign, chip, model, precision, framework, ISL/OSL): by default its highest
measured throughput per GPU (``--points saturated``: the server at the load the campaign drove hardest — a
point at low concurrency is a lower bound on what the fleet serves at that TPOT, not its capacity); with
``--points frontier`` the Pareto frontier of (mean TPOT, output tokens/s per GPU) — a dominated measurement
is not what the hardware can do at its SLO.

Run::

    .venv/bin/python benchmarks/capacity_eval.py --band --json benchmarks/capacity_eval.json --md benchmarks/CAPACITY.md
    .venv/bin/python benchmarks/capacity_eval.py --limit 40 --workers 2     # a quick sample

Concurrency (``--concurrency``, default ``both``): a fixed-concurrency campaign's highest point is the capacity
of the layout and concurrency it ran, not of the hardware — the planner may find another layout or a larger
batch that meets the same TPOT, which no one measured. ``measured`` holds each such point's plans to the
sequences in flight per GPU it was measured at (``serving.max_sequences_per_chip`` = concurrency / GPUs), the
same question the measurement answered; ``free`` lets the planner choose any batch the engine ceiling and
memory allow. Offline (throughput) runs are free in both: they are the hardware's capacity.

TTFT: ``--ttft measured`` bounds TTFT by the measured mean too; the default ``loose`` (60 s) compares
throughput at the TPOT alone (the measured TTFT at a fixed concurrency is mostly queueing the
benchmark client chose).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "data" / "throughput_at_scale.csv"

#: Published framework names -> the catalogue's (costmodels/catalog/frameworks.yaml); others are pooled.
FRAMEWORKS = {"sglang": "sglang", "trt": "trtllm", "tensorrt-llm": "trtllm", "vllm": "vllm"}
#: The sequences one engine of an offline TensorRT-LLM run held at most (``trtllm-bench``'s tuning caps them at
#: 4,096 ÷ pp, :data:`costmodels.offline_rows.ENGINE_MAX_REQUESTS`): its plans may run as many per rank.
OFFLINE_ENGINE_SEQUENCES = 4096
#: TTFT bound when only the TPOT should bind (ms) and the TPOT bound of offline runs (ms).
LOOSE_TTFT_MS = 60_000.0
OFFLINE_TPOT_MS = 1_000.0
#: Chips per scale-up domain of the measured systems (HGX boards; NVL72 racks).
DOMAIN_CHIPS = {"gb200": 72, "gb300": 72}


@dataclass(frozen=True)
class Case:
    key: str
    campaign: str
    publisher: str
    chip: str
    gpus: int
    model: str
    precision: str
    framework: str
    isl: int
    osl: int
    regime: str
    concurrency: float | None
    tpot_ms: float | None
    ttft_ms: float | None
    measured_tok_s_per_gpu: float
    overlaps_fit: bool
    layout: str
    pp: int = 1


def _f(x: str) -> float | None:
    return float(x) if x not in ("", None) else None


def _measured_output_per_gpu(r: dict) -> float | None:
    out = _f(r["output_tok_s_per_gpu"])
    if out is not None:
        return out
    if _f(r["output_tok_s_total"]) is not None:
        return _f(r["output_tok_s_total"]) / int(r["gpus"])
    if _f(r["total_tok_s_per_gpu"]) is not None:
        return _f(r["total_tok_s_per_gpu"]) * int(r["osl"]) / (int(r["isl"]) + int(r["osl"]))
    return None


def read_cases(path: Path = DATA) -> list[Case]:
    from topology.chips import load_chip_catalog

    chips = load_chip_catalog()
    out = []
    with open(path, newline="") as f:
        table = list(csv.DictReader(f))
    for i, r in enumerate(table):
        if r["disaggregated"] != "no" or r["spec_decode"] not in ("", "none") or r["model_catalogued"] != "yes":
            continue
        if r["chip"] not in chips or r["load_kind"] not in ("concurrency", "offline-max-throughput"):
            continue
        meas = _measured_output_per_gpu(r)
        tpot = _f(r["tpot_ms_mean"]) or _f(r["tpot_ms_median"])
        offline = r["load_kind"] == "offline-max-throughput"
        if meas is None or (tpot is None and not offline) or r["precision"] not in ("fp4", "fp8", "bf16", "fp16"):
            continue
        fw = next((v for k, v in FRAMEWORKS.items() if r["framework"].startswith(k)), "pooled")
        out.append(Case(
            key=f"{i}", campaign=r["campaign"], publisher=r["publisher"], chip=r["chip"], gpus=int(r["gpus"]),
            model=r["model"], precision="bf16" if r["precision"] == "fp16" else r["precision"], framework=fw,
            isl=int(r["isl"]), osl=int(r["osl"]), regime="offline" if offline else "concurrency",
            concurrency=_f(r["concurrency"]), tpot_ms=None if offline else tpot,
            ttft_ms=_f(r["ttft_ms_mean"]) or _f(r["ttft_ms_median"]), measured_tok_s_per_gpu=meas,
            overlaps_fit=r["overlaps_measured_aggregated"] == "yes",
            layout=f"tp{r['tp']} ep{r['ep'] or 1}{' dpa' if r['dp_attention'] == 'yes' else ''}",
            pp=int(r["pp"] or 1)))
    return out


def _series(cases: list[Case]) -> list[list[Case]]:
    series: dict[tuple, list[Case]] = defaultdict(list)
    for c in cases:
        series[(c.campaign, c.chip, c.model, c.precision, c.framework, c.isl, c.osl, c.regime)].append(c)
    return list(series.values())


def saturated(cases: list[Case]) -> list[Case]:
    """Per series, its highest measured throughput per GPU: the load a capacity planner buys for."""
    return sorted((max(pts, key=lambda c: c.measured_tok_s_per_gpu) for pts in _series(cases)),
                  key=lambda c: int(c.key))


def frontier(cases: list[Case]) -> list[Case]:
    """Per series, the points no other point beats on both TPOT (lower) and throughput per GPU (higher)."""
    kept = []
    for pts in _series(cases):
        if pts[0].regime == "offline":
            kept.append(max(pts, key=lambda c: c.measured_tok_s_per_gpu))  # one max-throughput figure
            continue
        pts = sorted(pts, key=lambda c: (c.tpot_ms, -c.measured_tok_s_per_gpu))
        best = -1.0
        for c in pts:
            if c.measured_tok_s_per_gpu > best:
                kept.append(c)
                best = c.measured_tok_s_per_gpu
    return sorted(kept, key=lambda c: int(c.key))




def checkpoint_precision(c: Case) -> tuple[str, str]:
    """(weights, KV cache) precision of the checkpoint and engine configuration a point measured.

    FP8 and FP4 checkpoints (ModelOpt's carry an FP8 KV-cache scale) run an FP8 KV cache; BF16 ones BF16.
    gpt-oss is MXFP4 whatever the label; on Hopper its KV cache is the engine's ``auto``, BF16 (the perf
    overview's gpt-oss options: ``kv_cache_config: dtype: fp8  # Hopper: use auto``).

    Examples
    --------
    >>> base = dict(key="0", campaign="x", publisher="p", gpus=1, framework="pooled", isl=1, osl=1, regime="offline",
    ...             concurrency=None, tpot_ms=None, ttft_ms=None, measured_tok_s_per_gpu=1.0, overlaps_fit=False,
    ...             layout="tp1 ep1")
    >>> checkpoint_precision(Case(chip="h200", model="gpt-oss-120b", precision="fp8", **base))
    ('mxfp4', 'bf16')
    >>> checkpoint_precision(Case(chip="b200", model="gpt-oss-120b", precision="fp4", **base))
    ('mxfp4', 'fp8')
    >>> checkpoint_precision(Case(chip="h100", model="llama-3.1-70b", precision="fp8", **base))
    ('fp8', 'fp8')
    """
    from costmodels.measured_rows import (
        MXFP4_MODELS,  # gpt-oss: a row labelled FP8 still serves MXFP4
    )
    from topology.chips import load_chip_catalog

    if c.model in MXFP4_MODELS:
        has_fp4 = "fp4" in load_chip_catalog()[c.chip].flops_per_s
        return "mxfp4", "fp8" if has_fp4 else "bf16"
    return c.precision, "fp8" if c.precision in ("fp8", "fp4") else "bf16"


#: Publishers whose benchmark client draws each request's lengths uniformly in [r·L, L] (the integers of
#: ``randint(int(r·L), L + 1)``), by r: InferenceX's random dataset, ``--random-range-ratio 0.8``. Others ran
#: fixed lengths (trtllm-bench's synthetic datasets with zero standard deviation).
RANGE_RATIO = {"semianalysis-inferencex": 0.8}
#: Points of the histogram a uniform length range is given as.
RANGE_POINTS = 17


def class_lengths(c: Case, lengths: str = "as-run") -> dict:
    """The class's length fields: as the point's benchmark client drew them (``as-run``: a uniform range is
    a histogram of :data:`RANGE_POINTS` equal weights, its mean the class's length), or ISL/OSL fixed.

    Examples
    --------
    >>> base = dict(key="0", campaign="x", gpus=1, framework="pooled", regime="offline", concurrency=None,
    ...             tpot_ms=None, ttft_ms=None, measured_tok_s_per_gpu=1.0, overlaps_fit=False, layout="tp1 ep1",
    ...             chip="h100", model="llama-3.1-8b", precision="fp8", isl=1024, osl=1024)
    >>> class_lengths(Case(publisher="semianalysis-inferencex", **base))["prompt_tokens"]
    922
    >>> class_lengths(Case(publisher="nvidia-tensorrt-llm", **base))
    {'prompt_tokens': 1024, 'output_tokens': 1024}
    """
    ratio = RANGE_RATIO.get(c.publisher) if lengths == "as-run" else None
    if ratio is None:
        return {"prompt_tokens": c.isl, "output_tokens": c.osl}
    out = {}
    for name, top in (("prompt", c.isl), ("output", c.osl)):
        points = np.unique(np.round(np.linspace(max(int(ratio * top), 1), top, RANGE_POINTS)).astype(int))
        out[f"{name}_tokens"] = round(float(points.mean()))
        out[f"{name}_lengths"] = {"histogram": [[int(t), 1] for t in points]}
    return out


def heldout_overlays(cases: list[Case]) -> dict[tuple[str, str], dict]:
    """(chip, campaign) → the calibration overlay a point of that campaign on that chip is planned with.

    For each chip the calibration fits on campaigns (:data:`costmodels.calibration.SCALE_FIT_CHIPS`,
    :data:`costmodels.calibration.OFFLINE_FIT_CHIPS`) and each of its campaigns X among ``cases``: the chip's
    factors fitted on every calibration row but X's (:func:`benchmarks.calibrate.chip_rows`, the fit's own
    settings), and bands from a nested leave-one-source-out over those rows (each remaining source predicted by
    a fit without it and without X): TPOT measured ÷ predicted, throughput its inverse, TTFT the chip family's
    catalogue band. Nothing that prices a point of X was fitted on X.
    """
    from dataclasses import asdict

    from calibrate import campaign_fitted, chip_rows, fit_kwargs, fit_without

    from costmodels.bands import LEVELS, chip_band, ratio_quantiles
    from costmodels.calibration import heldout_predictions
    from costmodels.models import load_model_catalog
    from topology.chips import load_chip_catalog

    chips, models = load_chip_catalog(), load_model_catalog()
    by_chip = chip_rows(chips, models)[0]
    out = {}
    for chip, campaign in sorted({(c.chip, c.campaign) for c in cases if campaign_fitted(c.chip)}):
        fitted, rows = fit_without(chip, campaign, by_chip, chips, models)
        if len(rows) == len(by_chip.get(chip, [])):
            continue  # the calibration never saw this campaign: the catalogue already holds it out
        f = asdict(fitted)
        kw = fit_kwargs(chip, by_chip, chips)
        kw["siblings"] = {n: (c, [m for m in r if m.row.backend != campaign]) for n, (c, r) in kw.get("siblings", {}).items()}
        pred, _ = heldout_predictions(chips[chip], rows, models, lambda m: m.row.backend, **kw)
        meas = np.array([m.row.tpot_ms for m in rows]) / 1e3
        tpot = ratio_quantiles(meas, pred)
        thr = ratio_quantiles(pred, meas)
        band = chip_band(chip)
        factors = {k: v for k, v in f.items() if k != "request_overhead_s"
                   and not (k == "kv_memory_efficiency" and v == 0.0)}
        per_rank = [m.batch / m.attn_dp for m in rows]
        out[(chip, campaign)] = {
            "levels": list(LEVELS),
            "chips": {chip: {
                "factors": factors, "points": len(rows), "batch_per_replica": (min(per_rank), max(per_rank)),
                "heldout": f"fitted without {campaign}; bands: leave-one-source-out over the other sources",
                "bands": {"tpot": {"n": int(np.isfinite(pred).sum()), "quantiles": tpot},
                          "throughput": {"n": int(np.isfinite(pred).sum()), "quantiles": thr},
                          "ttft": {"n": 0, "quantiles": list(band.quantiles["ttft"])}}}}}
    return out


def instance_doc(c: Case, ttft: str, max_per_rank: int | None = None, per_chip: float | None = None,
                 lengths: str = "as-run", overlay: dict | None = None) -> dict:
    per_domain = min(c.gpus, DOMAIN_CHIPS.get(c.chip, 8))
    if max_per_rank is None and c.regime == "offline" and c.framework == "trtllm":
        max_per_rank = OFFLINE_ENGINE_SEQUENCES  # the engine the measurement ran, not the server's default
    ttft_ms = LOOSE_TTFT_MS if ttft == "loose" or c.ttft_ms is None else max(c.ttft_ms, 1.0)
    weights, kv = checkpoint_precision(c)
    return {"name": f"point-{c.key}", "model": c.model, "precision": {"weights": weights, "kv": kv},
            "serving": {"framework": c.framework,
                        **({"max_sequences_per_rank": max_per_rank} if max_per_rank else {}),
                        **({"max_sequences_per_chip": per_chip} if per_chip else {})},
            "workload": {"classes": [{"name": "c", "rate_rps": 1, **class_lengths(c, lengths),
                                      "ttft_ms": ttft_ms, "tpot_ms": c.tpot_ms or OFFLINE_TPOT_MS}]},
            "hardware": {"domains": [{"name": "g", "chip": c.chip, "chips_per_domain": per_domain,
                                      "count": max(c.gpus // per_domain, 1)}]},
            "modes": ["aggregated"], **({"calibration": overlay} if overlay else {})}


def measured_layout_capacity(c: Case, ttft: str, per_chip: float | None, lengths: str = "as-run",
                             overlay: dict | None = None) -> tuple[float, str]:
    """Output tokens/s per GPU at the point's own layout (tp, ep, DP attention, pp as measured), the batch the
    best the SLO allows — held to ``per_chip`` sequences per chip when given, as plans are — and every chunk size,
    from :func:`placement.core.replicas.evaluate.evaluate` (no MILP: one replica's capacity times the replicas).
    Returns (tokens/s per GPU, the configuration), or (0, why) when no batch is feasible."""

    from placement.core.instance.context import Context
    from placement.core.instance.loading import parse_instance
    from placement.core.replicas.evaluate import (
        PartLayout,
        PoolConfig,
        evaluate,
        rank_sequence_ceiling,
    )
    from placement.modes.aggregated import CHUNKS

    tp, ep = (int(w[2:]) for w in c.layout.split()[:2])
    dpa = c.layout.endswith("dpa")
    chips = tp * c.pp
    if c.gpus % chips:
        return 0.0, f"{c.gpus} GPUs are not whole replicas of {chips}"
    ctx = Context.of(parse_instance(instance_doc(c, ttft, per_chip=per_chip, lengths=lengths, overlay=overlay),
                                    c.key))
    cls = ctx.instance.workload.classes[0]
    if ctx.model.moe is None:
        ep = 1
    site = next(iter(ctx.sites.values()))
    dp, rank_tp = (tp, 1) if dpa else (1, tp)
    part = PartLayout(chip=c.chip, site_resource=site.resource, chips=chips, tp=rank_tp, ep=ep, pp=c.pp, dp=dp)
    # The replica's dp ranks each at the engine's (and the instance's per-chip) ceiling, as plans are held.
    top = float(rank_sequence_ceiling(ctx, chips / dp)) * dp
    batches = np.unique(np.round(np.geomspace(1, max(top, 1), 400)))
    best, how = 0.0, "no feasible batch"
    for chunk in CHUNKS:
        cfg = PoolConfig(kind="aggregated", traffic_class=cls.name, main=part, batch=1, chunk_tokens=chunk)
        perf = evaluate(ctx, cfg, cls, batch=batches)
        ok = perf.ok(cls)
        if ok.any():
            i = int(np.argmax(np.where(ok, perf.capacity_rps, -1.0)))
            tok_per_gpu = float(perf.capacity_rps[i]) * cls.output_tokens / chips
            if tok_per_gpu > best:
                best, how = tok_per_gpu, f"tp{rank_tp} ep{ep} pp{c.pp} dp{dp} b{batches[i]:g} chunk{chunk}"
    return best, how


def predict(args: tuple[Case, str, bool, int | None, float | None, str, dict | None]) -> dict:
    c, ttft, band, max_per_rank, per_chip, lengths, overlay = args
    from placement.core.instance.loading import parse_instance
    from placement.studies.capacity import capacity

    began = time.perf_counter()
    try:
        inst = parse_instance(instance_doc(c, ttft, max_per_rank, per_chip, lengths, overlay), c.key)
        # every probe waits for its proof: the evaluation does not depend on the machine's speed
        cap = capacity(inst, backend="highs", band=band, rtol=1e-2, probe_time_limit_s=None)[0]
        pool = cap.plan.pools[0] if cap.plan is not None and cap.plan.pools else None
        out = {"status": cap.status, "predicted_tok_s_per_gpu": cap.output_tokens_per_s / c.gpus,
               "band": {k: v / c.gpus for k, v in cap.band_output_tokens_per_s.items()},
               "plan_layout": None if pool is None else
               f"tp{pool.tp} ep{pool.ep} pp{pool.pp} dp{pool.chips_per_replica // (pool.tp * pool.pp)} "
               f"b{pool.batch} x{pool.replicas}"}
        if pool is not None and overlay is not None:  # beyond the largest batch per rank the held-out fit saw?
            seen = overlay["chips"][c.chip]["batch_per_replica"][1]
            out["beyond_fit_batch"] = pool.batch / (pool.chips_per_replica // (pool.tp * pool.pp)) > seen
    except Exception as e:  # noqa: BLE001 - a failed point is reported, never dropped
        out = {"status": f"error: {type(e).__name__}: {e}"[:200], "predicted_tok_s_per_gpu": float("nan"), "band": {}}
    try:
        out["layout_tok_s_per_gpu"], out["layout_config"] = measured_layout_capacity(c, ttft, per_chip, lengths,
                                                                                     overlay)
    except Exception as e:  # noqa: BLE001 - reported beside the plan's figure, never dropped
        out["layout_tok_s_per_gpu"], out["layout_config"] = float("nan"), f"error: {type(e).__name__}: {e}"[:200]
    out["seconds"] = round(time.perf_counter() - began, 2)
    return {**asdict(c), **out}


def stats(rows: list[dict]) -> dict:
    r = [x["predicted_tok_s_per_gpu"] / x["measured_tok_s_per_gpu"] for x in rows
         if math.isfinite(x["predicted_tok_s_per_gpu"]) and x["predicted_tok_s_per_gpu"] > 0]
    if not r:
        return {"n": len(rows), "served": 0}
    logs = sorted(math.log(v) for v in r)
    inside = [x for x in rows if x["band"] and x["band"]["p10"] <= x["measured_tok_s_per_gpu"] <= x["band"]["p90"]]
    banded = [x for x in rows if x["band"]]
    return {"n": len(rows), "served": len(r),
            "median_abs_error_pct": round(100 * sorted(abs(v - 1) for v in r)[len(r) // 2], 1),
            "geo_mean_ratio": round(math.exp(sum(logs) / len(logs)), 3),
            "median_ratio": round(sorted(r)[len(r) // 2], 3),
            "beyond_1_5x": sum(1 for v in r if v > 1.5 or v < 1 / 1.5),
            "coverage_p10_p90": round(len(inside) / len(banded), 3) if banded else None,
            **_layout_stats(rows)}


def _layout_stats(rows: list[dict]) -> dict:
    """The same figures for the capacity at the measured layout (:func:`measured_layout_capacity`)."""
    r = [x["layout_tok_s_per_gpu"] / x["measured_tok_s_per_gpu"] for x in rows
         if math.isfinite(x.get("layout_tok_s_per_gpu", math.nan)) and x["layout_tok_s_per_gpu"] > 0]
    if not r:
        return {"layout_served": 0}
    return {"layout_served": len(r),
            "layout_median_abs_error_pct": round(100 * sorted(abs(v - 1) for v in r)[len(r) // 2], 1),
            "layout_geo_mean_ratio": round(math.exp(sum(math.log(v) for v in r) / len(r)), 3),
            "layout_beyond_1_5x": sum(1 for v in r if v > 1.5 or v < 1 / 1.5)}


def _plan_pp(layout: str | None) -> int | None:
    """The pipeline stages of a plan's layout string ("tp2 ep1 pp4 dp1 b512 x2" -> 4); None without a plan."""
    if not layout:
        return None
    return next((int(w[2:]) for w in layout.split() if w.startswith("pp") and w[2:].isdigit()), None)


def summarise(rows: list[dict]) -> dict[str, dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for x in rows:
        groups["all"].append(x)
        groups[f"publisher {x['publisher']}"].append(x)
        groups[f"campaign {x['campaign']}"].append(x)
        groups[f"chip {x['chip']} {x['precision']}"].append(x)
        groups[f"regime {x['regime']}"].append(x)
        if x["overlaps_fit"]:
            groups["rows that repeat fit data"].append(x)
        pp = _plan_pp(x.get("plan_layout"))
        if pp is not None:  # no measured run of a calibrated chip used pipeline stages: pp > 1 is modelled only
            groups["plan pipeline-parallel (pp > 1)" if pp > 1 else "plan without pipeline stages (pp 1)"].append(x)
        if "beyond_fit_batch" in x:
            groups["plan batch per rank " + ("beyond" if x["beyond_fit_batch"] else "within")
                   + " the held-out fit's"].append(x)
    return {k: stats(v) for k, v in sorted(groups.items())}


MODE_TITLES = {
    "measured": "At the measured concurrency (each fixed-concurrency point's plans hold as many sequences in flight "
                "per GPU as were measured; offline points free)",
    "free": "At any concurrency (any batch the engine ceiling and memory allow: the planner's own capacity)",
}


def to_markdown(results: dict[str, dict], ttft: str, points: str, lengths: str = "as-run") -> str:
    intro = ("Generated by `python benchmarks/capacity_eval.py` (do not edit by hand); data "
             "`benchmarks/data/throughput_at_scale.csv` (see `benchmarks/data/THROUGHPUT_AT_SCALE.md`). Every "
             f"campaign here is held out: no factor of the cost models was fitted on it. TTFT bound: {ttft}. "
             f"Points: {points} (see the script's notes). A ratio above 1 is an optimistic plan: it would buy too "
             "few chips. A fixed-concurrency campaign's highest point is its capacity only at the concurrency it "
             "ran: the first table asks the planner that question, the second lets it choose any batch. The last "
             "columns price the measured layout itself (tp, ep, DP attention, pp as run) at its best batch — "
             "no MILP, no layout choice: the cost model's own error, apart from the planner's choices. Lengths: "
             + ("as each campaign's client drew them (InferenceX uniform in [0.8, 1] × ISL/OSL, given to the "
                "planner as a histogram; TensorRT-LLM fixed)." if lengths == "as-run" else "ISL/OSL for every request."))
    lines = ["# Capacity at the measured SLO: predicted ÷ measured output tokens/s per GPU", "", intro]
    for mode, res in results.items():
        lines += ["", f"## {MODE_TITLES[mode]}", "", *_summary_table(res["summary"]), "",
                  f"### Worst points ({mode} concurrency)", "", *_worst_table(res["rows"])]
    return "\n".join(lines) + "\n"


def _summary_table(summary: dict[str, dict]) -> list[str]:
    lines = [("| group | points | served | median abs error % | geo-mean ratio | median ratio | beyond 1.5x | "
              "p10-p90 coverage | at the measured layout: served | median abs error % | geo-mean ratio | "
              "beyond 1.5x |"), "| --- " * 12 + "|"]
    for k, s in summary.items():
        lines.append(f"| {k} | {s['n']} | {s['served']} | {s.get('median_abs_error_pct', '-')} | "
                     f"{s.get('geo_mean_ratio', '-')} | {s.get('median_ratio', '-')} | {s.get('beyond_1_5x', '-')} | "
                     f"{s.get('coverage_p10_p90', '-')} | {s.get('layout_served', '-')} | "
                     f"{s.get('layout_median_abs_error_pct', '-')} | {s.get('layout_geo_mean_ratio', '-')} | "
                     f"{s.get('layout_beyond_1_5x', '-')} |")
    return lines


def _worst_table(rows: list[dict], n: int = 20) -> list[str]:
    worst = sorted((x for x in rows if x["predicted_tok_s_per_gpu"] == x["predicted_tok_s_per_gpu"]),
                   key=lambda x: -abs(math.log(max(x["predicted_tok_s_per_gpu"], 1e-9) / x["measured_tok_s_per_gpu"])))
    lines = [("| campaign | chip | model | prec | fw | ISL/OSL | GPUs | measured layout | conc | TPOT ms | "
              "measured tok/s/GPU | predicted | ratio | plan | at the measured layout |"), "| --- " * 15 + "|"]
    for x in worst[:n]:
        ratio = x["predicted_tok_s_per_gpu"] / x["measured_tok_s_per_gpu"]
        conc = "offline" if not x.get("concurrency") else f"{x['concurrency']:g}"
        tpot = f"{x['tpot_ms']:.1f}" if x["tpot_ms"] else "offline"
        lines.append(f"| {x['campaign']} | {x['chip']} | {x['model']} | {x['precision']} | {x['framework']} | "
                     f"{x['isl']}/{x['osl']} | {x['gpus']} | {x['layout']} | {conc} | {tpot} | "
                     f"{x['measured_tok_s_per_gpu']:,.0f} | {x['predicted_tok_s_per_gpu']:,.0f} | {ratio:.2f} | "
                     f"{x.get('plan_layout') or x['status']} | {_layout_cell(x)} |")
    return lines


def _layout_cell(x: dict) -> str:
    v = x.get("layout_tok_s_per_gpu", math.nan)
    if not math.isfinite(v) or v <= 0:
        return x.get("layout_config", "-")
    return f"{v:,.0f} ({v / x['measured_tok_s_per_gpu']:.2f}, {x['layout_config']})"


def run(jobs: list[tuple], workers: int) -> list[dict]:
    """:func:`predict` of every job, in a fork pool of ``workers`` processes (in order)."""
    if workers <= 1:
        return [predict(j) for j in jobs]
    from multiprocessing import get_context

    with get_context("fork").Pool(workers) as pool:
        return pool.map(predict, jobs, chunksize=1)


def measured_per_chip(c: Case) -> float | None:
    """Sequences in flight per GPU of a fixed-concurrency point (None for offline runs: no concurrency)."""
    return None if c.regime != "concurrency" or not c.concurrency else c.concurrency / c.gpus


def fit_ceilings() -> dict[tuple[str, str], int]:
    """Largest sequences per rank (attention group) among the calibration's rows, per (chip, model)."""
    from layout_eval import fit_batch_ceilings

    return {k: max(int(v), 1) for k, v in fit_batch_ceilings().items()}


def _cap(*caps: int | None) -> int | None:
    """The smallest of the caps given (None: no cap)."""
    given = [c for c in caps if c is not None]
    return min(given) if given else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="evaluate an evenly spaced sample of this many points")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ttft", choices=("loose", "measured"), default="loose")
    ap.add_argument("--band", action="store_true", help="also the p10/p90 capacity (three searches a point)")
    ap.add_argument("--points", choices=("saturated", "frontier", "all"), default="saturated",
                    help="each series' highest-throughput point (default), its TPOT-throughput frontier, or all")
    ap.add_argument("--max-batch-per-rank", type=int, default=None,
                    help="hold plans to this many sequences per rank (serving.max_sequences_per_rank)")
    ap.add_argument("--cap-at-fit-batch", action="store_true",
                    help="hold each point's plans to the largest batch per rank the calibration saw for its chip and "
                         "model (points whose chip or model the fit never saw stay uncapped)")
    ap.add_argument("--concurrency", choices=("both", "measured", "free"), default="both",
                    help="measured: hold each fixed-concurrency point's plans to the sequences in flight it was "
                         "measured at (serving.max_sequences_per_chip = concurrency / GPUs; offline points stay "
                         "free); free: any batch the engine ceiling and memory allow; both (default): each in turn")
    ap.add_argument("--lengths", choices=("as-run", "fixed"), default="as-run",
                    help="as-run: each request's lengths as the campaign's client drew them (InferenceX: uniform in "
                         "[0.8, 1] x ISL and OSL); fixed: every request ISL/OSL")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--md", type=Path, default=None)
    a = ap.parse_args(argv)
    cases = read_cases()
    cases = {"saturated": saturated, "frontier": frontier, "all": list}[a.points](cases)
    if a.limit is not None and a.limit < len(cases):
        step = len(cases) / a.limit
        cases = [cases[int(i * step)] for i in range(a.limit)]
    ceilings = fit_ceilings() if a.cap_at_fit_batch else {}
    began = time.perf_counter()
    overlays = heldout_overlays(cases)
    print(f"held-out overlays: {len(overlays)} (chip, campaign) fits in {time.perf_counter() - began:.0f} s")
    modes = ("measured", "free") if a.concurrency == "both" else (a.concurrency,)
    results: dict[str, dict] = {}
    for mode in modes:
        jobs = [(c, a.ttft, a.band, _cap(a.max_batch_per_rank, ceilings.get((c.chip, c.model))),
                 measured_per_chip(c) if mode == "measured" else None, a.lengths,
                 overlays.get((c.chip, c.campaign))) for c in cases]
        rows = run(jobs, a.workers)
        results[mode] = {"summary": summarise(rows), "rows": rows}
        print(f"-- concurrency {mode}")
        for k, s in results[mode]["summary"].items():
            print(k, s)
    if a.json is not None:
        a.json.write_text(json.dumps({"ttft": a.ttft, "points": a.points, "max_batch_per_rank": a.max_batch_per_rank,
                                      "cap_at_fit_batch": a.cap_at_fit_batch, "lengths": a.lengths,
                                      "concurrency": results},
                                     indent=1) + "\n")
    if a.md is not None:
        a.md.write_text(to_markdown(results, a.ttft, a.points, a.lengths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
