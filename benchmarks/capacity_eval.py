"""Capacity at the measured SLO against measured throughput, on public campaigns the fit never saw.

For every kept point of ``benchmarks/data/throughput_at_scale.csv`` (aggregated serving, no speculative
decoding, chip and model in the catalogue) this script builds the instance the measurement answers — the
measured system's chips as the fleet, one class with the measured ISL/OSL, its TPOT SLO the measured mean
TPOT (offline runs: no latency bound) — and asks ``placement.studies.capacity`` for the largest output
rate the fleet serves, any layout. Predicted ÷ measured output tokens/s per GPU is the capacity error a
capacity planner sees. Nothing in the cost models was fitted on these campaigns (the chip factors come
from ``measured_aggregated_serving.csv``), so every figure here is held out; rows that repeat points of
that file (``overlaps_measured_aggregated``) are reported apart.

Points kept per series (campaign, chip, model, precision, framework, ISL/OSL): by default its highest
measured throughput per GPU (``--points saturated``: the server at the load the campaign drove hardest — a
point at low concurrency is a lower bound on what the fleet serves at that TPOT, not its capacity); with
``--points frontier`` the Pareto frontier of (mean TPOT, output tokens/s per GPU) — a dominated measurement
is not what the hardware can do at its SLO.

Run::

    .venv/bin/python benchmarks/capacity_eval.py --json benchmarks/capacity_eval.json --md benchmarks/CAPACITY.md
    .venv/bin/python benchmarks/capacity_eval.py --limit 40 --workers 2     # a quick sample

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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "data" / "throughput_at_scale.csv"

#: Published framework names -> the catalogue's (costmodels/catalog/frameworks.yaml); others are pooled.
FRAMEWORKS = {"sglang": "sglang", "trt": "trtllm", "vllm": "vllm"}
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
            layout=f"tp{r['tp']} ep{r['ep'] or 1}{' dpa' if r['dp_attention'] == 'yes' else ''}"))
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


def instance_doc(c: Case, ttft: str, max_per_rank: int | None = None) -> dict:
    per_domain = min(c.gpus, DOMAIN_CHIPS.get(c.chip, 8))
    ttft_ms = LOOSE_TTFT_MS if ttft == "loose" or c.ttft_ms is None else max(c.ttft_ms, 1.0)
    kv = "fp8" if c.precision in ("fp8", "fp4") else "bf16"
    return {"name": f"point-{c.key}", "model": c.model, "precision": {"weights": c.precision, "kv": kv},
            "serving": {"framework": c.framework,
                        **({"max_sequences_per_rank": max_per_rank} if max_per_rank else {})},
            "workload": {"classes": [{"name": "c", "rate_rps": 1, "prompt_tokens": c.isl, "output_tokens": c.osl,
                                      "ttft_ms": ttft_ms, "tpot_ms": c.tpot_ms or OFFLINE_TPOT_MS}]},
            "hardware": {"domains": [{"name": "g", "chip": c.chip, "chips_per_domain": per_domain,
                                      "count": max(c.gpus // per_domain, 1)}]},
            "modes": ["aggregated"]}


def predict(args: tuple[Case, str, bool, int | None]) -> dict:
    c, ttft, band, max_per_rank = args
    from placement.core.loading import parse_instance
    from placement.studies.capacity import capacity

    began = time.perf_counter()
    try:
        inst = parse_instance(instance_doc(c, ttft, max_per_rank), c.key)
        cap = capacity(inst, backend="highs", band=band, rtol=1e-2)[0]
        pool = cap.plan.pools[0] if cap.plan is not None and cap.plan.pools else None
        out = {"status": cap.status, "predicted_tok_s_per_gpu": cap.output_tokens_per_s / c.gpus,
               "band": {k: v / c.gpus for k, v in cap.band_output_tokens_per_s.items()},
               "plan_layout": None if pool is None else
               f"tp{pool.tp} ep{pool.ep} pp{pool.pp} dp{pool.chips_per_replica // (pool.tp * pool.pp)} "
               f"b{pool.batch} x{pool.replicas}"}
    except Exception as e:  # noqa: BLE001 - a failed point is reported, never dropped
        out = {"status": f"error: {type(e).__name__}: {e}"[:200], "predicted_tok_s_per_gpu": float("nan"), "band": {}}
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
            "coverage_p10_p90": round(len(inside) / len(banded), 3) if banded else None}


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
    return {k: stats(v) for k, v in sorted(groups.items())}


def to_markdown(summary: dict[str, dict], rows: list[dict], ttft: str, points: str) -> str:
    intro = ("Generated by `python benchmarks/capacity_eval.py` (do not edit by hand); data "
             "`benchmarks/data/throughput_at_scale.csv` (see `benchmarks/data/THROUGHPUT_AT_SCALE.md`). Every "
             f"campaign here is held out: no factor of the cost models was fitted on it. TTFT bound: {ttft}. "
             f"Points: {points} (see the script's notes). A ratio above 1 is an optimistic plan: it would buy too "
             "few chips.")
    header = ("| group | points | served | median abs error % | geo-mean ratio | median ratio | beyond 1.5x | "
              "p10-p90 coverage |")
    lines = ["# Capacity at the measured SLO: predicted ÷ measured output tokens/s per GPU", "", intro, "",
             header, "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for k, s in summary.items():
        lines.append(f"| {k} | {s['n']} | {s['served']} | {s.get('median_abs_error_pct', '-')} | "
                     f"{s.get('geo_mean_ratio', '-')} | {s.get('median_ratio', '-')} | {s.get('beyond_1_5x', '-')} | "
                     f"{s.get('coverage_p10_p90', '-')} |")
    worst = sorted((x for x in rows if x["predicted_tok_s_per_gpu"] == x["predicted_tok_s_per_gpu"]),
                   key=lambda x: -abs(math.log(max(x["predicted_tok_s_per_gpu"], 1e-9) / x["measured_tok_s_per_gpu"])))
    worst_header = ("| campaign | chip | model | prec | fw | ISL/OSL | GPUs | measured layout | TPOT ms | "
                    "measured tok/s/GPU | predicted | ratio | plan |")
    lines += ["", "## Worst points", "", worst_header, "| --- " * 13 + "|"]
    for x in worst[:25]:
        ratio = x["predicted_tok_s_per_gpu"] / x["measured_tok_s_per_gpu"]
        lines.append(f"| {x['campaign']} | {x['chip']} | {x['model']} | {x['precision']} | {x['framework']} | "
                     f"{x['isl']}/{x['osl']} | {x['gpus']} | {x['layout']} | {x['tpot_ms'] or 'offline'} | "
                     f"{x['measured_tok_s_per_gpu']:,.0f} | {x['predicted_tok_s_per_gpu']:,.0f} | {ratio:.2f} | "
                     f"{x.get('plan_layout') or x['status']} |")
    return "\n".join(lines) + "\n"


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
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--md", type=Path, default=None)
    a = ap.parse_args(argv)
    cases = read_cases()
    cases = {"saturated": saturated, "frontier": frontier, "all": list}[a.points](cases)
    if a.limit is not None and a.limit < len(cases):
        step = len(cases) / a.limit
        cases = [cases[int(i * step)] for i in range(a.limit)]
    jobs = [(c, a.ttft, a.band, a.max_batch_per_rank) for c in cases]
    if a.workers > 1:
        from multiprocessing import get_context

        with get_context("fork").Pool(a.workers) as pool:
            rows = pool.map(predict, jobs, chunksize=1)
    else:
        rows = [predict(j) for j in jobs]
    summary = summarise(rows)
    for k, s in summary.items():
        print(k, s)
    if a.json is not None:
        a.json.write_text(json.dumps({"ttft": a.ttft, "points": a.points, "max_batch_per_rank": a.max_batch_per_rank, "summary": summary, "rows": rows}, indent=1) + "\n")
    if a.md is not None:
        a.md.write_text(to_markdown(summary, rows, a.ttft, a.points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
