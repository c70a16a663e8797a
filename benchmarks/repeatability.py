"""How far one campaign's measurements predict another's: a floor under any held-out capacity error.

``benchmarks/capacity_eval.py`` plans every saturated point of ``benchmarks/data/throughput_at_scale.csv`` with the
chip's factors refitted without the point's campaign. Its targets (no point beyond 1.5×) assume that the same
configuration measured twice gives the same capacity. This script measures that: for each saturated point P of
campaign A it asks every *other* campaign B that measured the same series (chip, model, precision, framework,
ISL/OSL, regime) the question the planner is asked of P —

* fixed concurrency: B's output tokens/s per GPU at P's mean TPOT with no more sequences in flight per GPU than
  P (the capacity at the measured concurrency, read off B's own measurements and interpolated between them:
  :func:`answer`; B has no answer when it ran nothing that fast at that load);
* offline: B's highest output tokens/s per GPU of the series —

and reports B's answer ÷ P's measurement, the error a model that reproduced campaign B exactly would make on P.
Campaigns differ by software version (SGLang, TensorRT-LLM, ATOM releases month to month), configuration and
client; nothing here is fitted.

Run::

    .venv/bin/python benchmarks/repeatability.py --md benchmarks/REPEATABILITY.md
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import itertools

from capacity_eval import Case, read_cases, saturated

BEYOND = 1.5


def _series_key(c: Case) -> tuple:
    return (c.chip, c.model, c.precision, c.framework, c.isl, c.osl, c.regime)


def answer(p: Case, other: list[Case]) -> float | None:
    """Campaign ``other``'s capacity for the question ``p`` answers (module docstring); ``None``: none.

    Fixed concurrency: among ``other``'s points with no more sequences in flight per GPU than ``p``, the
    throughput at ``p``'s TPOT, interpolated log-linearly between the two points of their TPOT–throughput
    frontier that bracket it (a planner picks any batch in between, as the measured clients did not); above
    their slowest TPOT, their highest throughput (the load bound binds); below their fastest, no answer.
    """
    if p.regime == "offline":
        return max(c.measured_tok_s_per_gpu for c in other)
    per_gpu = p.concurrency / p.gpus
    pts = sorted((c.tpot_ms, c.measured_tok_s_per_gpu) for c in other
                 if c.concurrency / c.gpus <= per_gpu * (1 + 1e-9))
    front: list[tuple[float, float]] = []
    for tpot, tput in pts:  # the frontier: each point faster than every point before it
        if not front or tput > front[-1][1]:
            front.append((tpot, tput))
    if not front or p.tpot_ms < front[0][0]:
        return None
    if p.tpot_ms >= front[-1][0]:
        return front[-1][1]
    (t0, y0), (t1, y1) = next((a, b) for a, b in itertools.pairwise(front) if a[0] <= p.tpot_ms < b[0])
    w = math.log(p.tpot_ms / t0) / math.log(t1 / t0)
    return math.exp(math.log(y0) + w * math.log(y1 / y0))


def pairs(cases: list[Case]) -> list[dict]:
    """One row per (saturated point, other campaign of its series): the other's answer ÷ the point's measurement."""
    by_series: dict[tuple, dict[str, list[Case]]] = defaultdict(lambda: defaultdict(list))
    for c in cases:
        by_series[_series_key(c)][c.campaign].append(c)
    rows = []
    for p in saturated(cases):
        for campaign, pts in sorted(by_series[_series_key(p)].items()):
            if campaign == p.campaign:
                continue
            got = answer(p, pts)
            rows.append({"point": p.key, "campaign": p.campaign, "publisher": p.publisher, "other": campaign,
                         "chip": p.chip, "model": p.model, "precision": p.precision, "framework": p.framework,
                         "isl": p.isl, "osl": p.osl, "regime": p.regime, "measured": p.measured_tok_s_per_gpu,
                         "answer": got, "ratio": None if got is None else got / p.measured_tok_s_per_gpu})
    return rows


def stats(ratios: list[float]) -> dict:
    r = np.array(ratios, dtype=float)
    if not len(r):
        return {"n": 0}
    return {"n": len(r), "median_abs_error_pct": round(float(np.median(np.abs(r - 1))) * 100, 1),
            "geo_mean": round(float(np.exp(np.mean(np.log(r)))), 3),
            "beyond": int(((r > BEYOND) | (r < 1 / BEYOND)).sum())}


def summarise(rows: list[dict]) -> list[tuple[str, dict, dict, int]]:
    """Per group: pair statistics, per-point statistics (each point's median ratio over the campaigns that answer),
    and the pairs without an answer."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        for g in ("all", f"publisher {r['publisher']}", f"chip {r['chip']} {r['precision']}", f"regime {r['regime']}"):
            groups[g].append(r)
    out = []
    for g in sorted(groups, key=lambda g: (g != "all", g)):
        answered = [r for r in groups[g] if r["ratio"] is not None]
        per_point: dict[str, list[float]] = defaultdict(list)
        for r in answered:
            per_point[r["point"]].append(r["ratio"])
        medians = [math.exp(float(np.median(np.log(v)))) for v in per_point.values()]
        out.append((g, stats([r["ratio"] for r in answered]), stats(medians), len(groups[g]) - len(answered)))
    return out


def to_markdown(rows: list[dict], points: int) -> str:
    lines = ["# Campaign against campaign: how far one campaign's measurements predict another's", "",
             ("Generated by `python benchmarks/repeatability.py` (do not edit by hand); data "
             "`benchmarks/data/throughput_at_scale.csv`. For each saturated point of a campaign (the points "
             "`benchmarks/CAPACITY.md` evaluates), every other campaign that measured the same series (chip, model, "
             "precision, framework, ISL/OSL) answers the same question from its own measurements: its output tokens/s per "
             "GPU at the point's mean TPOT with no more sequences in flight per GPU, interpolated between its points "
             "(offline: its highest). "
             "The ratio answer ÷ measured is the error a model that reproduced the other campaign exactly would make: "
             "a floor under what chip factors fitted across campaigns can reach."), "",
             (f"{points} saturated points; {len({r['point'] for r in rows})} have at least one other campaign of the same "
             f"series; {len(rows)} pairs."), "",
             ("| group | pairs answered | median abs error % | geo-mean ratio | beyond 1.5x | points | median abs "
             "error % (point's median over campaigns) | geo-mean | beyond 1.5x | pairs without an answer |"),
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for g, pair, point, missing in summarise(rows):
        if not pair["n"]:
            continue
        lines.append(f"| {g} | {pair['n']} | {pair['median_abs_error_pct']} | {pair['geo_mean']} | {pair['beyond']} | "
                     f"{point['n']} | {point['median_abs_error_pct']} | {point['geo_mean']} | {point['beyond']} | "
                     f"{missing} |")
    worst = sorted((r for r in rows if r["ratio"] is not None), key=lambda r: -abs(math.log(r["ratio"])))[:15]
    lines += ["", "## Widest pairs", "", ("| point's campaign | other campaign | chip | model | prec | fw | ISL/OSL | "
              "measured tok/s/GPU | other's answer | ratio |"), "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in worst:
        lines.append(f"| {r['campaign']} | {r['other']} | {r['chip']} | {r['model']} | {r['precision']} | "
                     f"{r['framework']} | {r['isl']}/{r['osl']} | {r['measured']:,.0f} | {r['answer']:,.0f} | "
                     f"{r['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--md", type=Path, default=None, help="the report (markdown); - for standard output")
    a = ap.parse_args(argv)
    from placement.core.instance.errors import InputError
    from placement.core.plans.output import check_writable, write_atomic

    try:
        if a.md is not None:
            check_writable(a.md)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cases = read_cases()
    rows = pairs(cases)
    summary = sys.stderr if str(a.md) == "-" else sys.stdout  # the report alone on standard output
    for g, pair, point, missing in summarise(rows):
        print(g, pair, point, f"no answer {missing}", file=summary)
    if a.md is not None:
        write_atomic(a.md, to_markdown(rows, len(saturated(cases))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
