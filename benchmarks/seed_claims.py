"""Where do the seeds' claims hold? Sweeps of the shipped instances, written to SEED_CLAIMS.md.

Three claims of the seeds the project started from (each quoted in its
instance's header) are tested against the current cost models, never by
tuning inputs until they appear: each study sweeps one SLO of the class the
claim is about, under a few stated conditions (a link latency, a price, a
traffic level, the acceptance rates), and reports per point the metric the
claim is about.

* seed 000, ``rubin-lpx-deepseek``: "the Rubin + LPX attention–FFN split pays
  for MoE decode" — metric: Rubin-only $/h ÷ heterogeneous $/h (> 1: the
  split pays) and the share of output tokens decoded attention–FFN.
* seed 001, ``trainium-cerebras``: "Trainium prefill → CS-3 decode over EFA
  gives 5× more high-speed token capacity in the same footprint" — metric: at
  equal delivered tokens, the power of the Trainium-only plan ÷ the power of
  the heterogeneous plan (fast tokens per MW, heterogeneous ÷ Trainium only),
  both plans minimising power.
* seed 001, ``spec-decode-draft``: "a draft on fast SRAM chips buys ~10×
  interactivity" — metric: the fastest TPOT each series meets (tokens/s per
  user), and the cost of the draft at equal TPOT.

Run (the Rubin studies are 18 solves each, ~12 s apiece on an idle core; the rest is minutes)::

    .venv/bin/python benchmarks/seed_claims.py            # writes seed_claims.json and SEED_CLAIMS.md
    .venv/bin/python benchmarks/seed_claims.py --only lpx --json /tmp/lpx.json  # one study family
    .venv/bin/python benchmarks/seed_claims.py --render --merge /tmp/lpx.json \
        --price-sweep benchmarks/lp30_price_sweep.json    # merge runs and the LP30 price sweep, solve nothing
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from placement.core.instance.loading import parse_instance, read_document
from placement.studies.pareto import pareto_series, run_pareto
from placement.studies.sweep import Point
from placement.studies.whatif import apply_overrides

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Study:
    """One Pareto sweep: an instance, its swept SLO, a condition (overrides) and the claim it tests."""

    family: str
    instance: str
    sweep: str
    focus: str
    condition: str
    overrides: tuple[str, ...] = ()
    document_edits: dict = field(default_factory=dict)
    objective: str | None = None
    #: the series to solve beside the instance (labels of ``pareto_series``); None: all of them
    series: tuple[str, ...] | None = None
    #: HiGHS, except where its branch and bound is slow (spec-decode-draft: benchmarks/BACKENDS.md); every
    #: plan is verified either way
    backend: str = "highs"
    #: what ``document_edits`` changes, in words, for the document
    edit_note: str = ""


LPX_TPOT = "tpot_ms=6,8,10,15,20,30"
CS3_TPOT = "tpot_ms=2,3,4,6,8,16,50"
DRAFT_TPOT = "tpot_ms=0.5,1,1.5,2,3,4,8,20"

FAST_CHAT = {"name": "fast-chat", "rate_rps": 10, "prompt_tokens": 2000, "output_tokens": 400, "ttft_ms": 1500,
             "tpot_ms": 4}
#: the prompt lengths (tokens) the Trainium → CS-3 claim is tried at, with the fast-chat TTFT SLO (ms) at each:
#: the shipped 1.5 s up to 8K tokens, 4 s at 32K (Llama-3.1-70B's 32K-token prefill is ~5.8 PFLOP, 4.5 of them
#: weights and 1.3 causal attention: ~3 s on four Trainium3 at 0.7 × 671 TFLOP/s BF16 each, ~1.5 s on eight)
CS3_PROMPTS = ((500, 1500), (8000, 1500), (32000, 4000))
LPX_SERIES = ("heterogeneous", "rubin", "PD+AF")
CS3_SERIES = ("heterogeneous", "trainium3")
DRAFT_SERIES = ("heterogeneous", "PD")

STUDIES: tuple[Study, ...] = (
    Study("lpx", "rubin-lpx-deepseek", LPX_TPOT, "reasoning", "as shipped (uplink 2 µs, LP30 $/h from the catalogue)",
          series=LPX_SERIES),
    Study("lpx", "rubin-lpx-deepseek", LPX_TPOT, "reasoning", "traffic ÷ 10 (300 + 60 req/s)",
          ("workload.classes.chat.rate_rps=300", "workload.classes.reasoning.rate_rps=60"), series=LPX_SERIES),
    Study("lpx", "rubin-lpx-deepseek", LPX_TPOT, "reasoning", "LPX uplink latency 10 µs",
          ("hardware.domains.lpx.uplink_latency_us=10",), series=LPX_SERIES),
    Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat", "as shipped, power objective", objective="power",
          series=CS3_SERIES),
    Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat", "as shipped, cost objective", series=CS3_SERIES),
    Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat", "fast-chat ×10 (100 req/s), power objective",
          ("workload.classes.fast-chat.rate_rps=100",), objective="power", series=CS3_SERIES),
    Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat", "fast-chat alone (batch-chat removed), power objective",
          document_edits={"workload": {"classes": [FAST_CHAT]}}, objective="power", series=CS3_SERIES,
          edit_note="batch-chat removed from the instance, so the power is fast-chat's alone"),
    *(Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat",
            f"fast-chat alone, {prompt:,}-token prompts, power objective",
            document_edits={"workload": {"classes": [{**FAST_CHAT, "prompt_tokens": prompt, "ttft_ms": ttft_ms}]}},
            objective="power", series=CS3_SERIES,
            edit_note=f"batch-chat removed; fast-chat's prompts {prompt:,} tokens, TTFT SLO {ttft_ms:,} ms")
      for prompt, ttft_ms in CS3_PROMPTS),
    Study("draft", "spec-decode-draft", DRAFT_TPOT, "fast", "as shipped (acceptance 0.80, 0.75, 0.70, 0.65)",
          series=DRAFT_SERIES, backend="cbc"),
    Study("draft", "spec-decode-draft", DRAFT_TPOT, "fast",
          "DeepSeek-R1 MTP-like acceptance (0.92, 0.88, 0.83, 0.77)",
          document_edits={"draft": {"model": "llama-3.2-1b", "acceptance": [0.92, 0.88, 0.83, 0.77]}},
          edit_note="draft acceptance edited in the instance",
          series=DRAFT_SERIES, backend="cbc"),
)


def load(study: Study):
    """The study's instance, with its document edits and objective applied."""
    path = ROOT / "instances" / f"{study.instance}.yaml"
    doc = read_document(path)
    doc.update(study.document_edits)
    if study.objective:
        doc["objective"] = study.objective
    return parse_instance(doc, source=str(path))


def run(study: Study, workers: int | None = None) -> list[dict]:
    """Solve every point of the study; one row per (point, series). ``workers``: as ``run_pareto``'s (1: in-process)."""
    inst = load(study)
    if study.series is None:
        res = run_pareto(inst, [study.sweep], classes=[study.focus], overrides=list(study.overrides),
                         source=study.instance, backend=study.backend, workers=workers)
        return [p.model_dump() for p in res.points]
    # Only the named series: the overrides first (a homogeneous variant may lack a domain they name),
    # then each variant swept on its own and its points relabelled.
    inst, _ = apply_overrides(inst, list(study.overrides), study.instance)
    rows = []
    for label, kind, variant in pareto_series(inst):
        if label not in study.series:
            continue
        res = run_pareto(variant, [study.sweep], classes=[study.focus], source=study.instance, backend=study.backend,
                         variants=False, workers=workers)
        rows += [{**p.model_dump(), "series": label, "kind": kind} for p in res.points]
    return rows


def _by(points: list[dict]) -> dict[tuple[float, str], Point]:
    return {(next(iter(p["values"].values())), p["series"]): Point.model_validate(p) for p in points}


def _fmt(x: float | None, spec: str = ",.0f") -> str:
    return "infeasible" if x is None else format(x, spec)


def _ratio(a: float | None, b: float | None) -> str:
    if a is None and b is None:
        return "-"
    if a is None:
        return "∞ (baseline infeasible)"
    if b is None:
        return "0 (heterogeneous infeasible)"
    return f"{a / b:.2f}×"


def _cost(p: Point | None) -> float | None:
    return p.cost_usd_per_hour if p is not None and p.ok else None


def _power(p: Point | None) -> float | None:
    return p.power_w if p is not None and p.ok else None


def _chips(p: Point | None) -> str:
    return ", ".join(f"{n} {c}" for c, n in sorted(p.chips_by_type.items())) if p is not None and p.ok else "-"


def _share(p: Point | None, cls: str, mode: str) -> float:
    """The share of class ``cls``'s requests served in ``mode`` (0 when the point has no plan)."""
    return (p.class_modes.get(cls, {}).get(mode, 0.0) or 0.0) if p is not None and p.ok else 0.0


def _xs(by: dict) -> list[float]:
    return sorted({k[0] for k in by})


def table_lpx(points: list[dict]) -> list[str]:
    by = _by(points)
    rows = [("| reasoning TPOT SLO ms | heterogeneous $/h | Rubin only $/h | PD+AF only $/h | "
             "Rubin only ÷ heterogeneous | reasoning served attention–FFN | chips (heterogeneous) |"),
            "|---|---|---|---|---|---|---|"]
    for x in _xs(by):
        h, r, a = by.get((x, "heterogeneous")), by.get((x, "rubin")), by.get((x, "PD+AF"))
        rows.append(f"| {x:g} | {_fmt(_cost(h))} | {_fmt(_cost(r))} | {_fmt(_cost(a))} | "
                    f"{_ratio(_cost(r), _cost(h))} | {_share(h, 'reasoning', 'pd-af'):.0%} | {_chips(h)} |")
    return rows


def verdict_lpx(points: list[dict]) -> str:
    """Where the split is chosen and what it saves; else how far the attention–FFN-only plan is."""
    by = _by(points)
    chosen = [x for x in _xs(by) if _share(by.get((x, "heterogeneous")), "reasoning", "pd-af") > 0]
    if chosen:
        gains = [(_cost(by.get((x, "rubin"))), _cost(by.get((x, "heterogeneous"))), x) for x in chosen]
        best = max(gains, key=lambda g: math.inf if g[0] is None else g[0] / g[1])
        say = "Rubin alone cannot meet it" if best[0] is None else f"Rubin alone costs {best[0] / best[1]:.2f}×"
        return (f"**Holds** at reasoning TPOT ≤ {max(chosen):g} ms (split chosen at {', '.join(f'{x:g}' for x in chosen)}"
                f" ms); largest advantage at {best[2]:g} ms: {say}.")
    near = [(_cost(by.get((x, "PD+AF"))) / _cost(by.get((x, "heterogeneous"))), x) for x in _xs(by)
            if _cost(by.get((x, "PD+AF"))) and _cost(by.get((x, "heterogeneous")))]
    if not near:
        return "**Does not hold** at any swept point; the attention–FFN-only plan is infeasible at every one."
    ratio, x = min(near)
    return (f"**Does not hold** at any swept point: the split is never chosen. Nearest: at {x:g} ms the "
            f"attention–FFN-only plan costs {ratio:.2f}× the optimum. " + _break_even_lp30(by))


def _break_even_lp30(by: dict) -> str:
    """The LP30 $/h at which the attention–FFN-only plan would cost what the optimum costs (arithmetic on
    the solved plans' chip counts, Rubin priced at the Rubin-only plan's $/chip; not a solve)."""
    out = []
    for x in _xs(by):
        a, h, r = by.get((x, "PD+AF")), by.get((x, "heterogeneous")), by.get((x, "rubin"))
        if not (_cost(a) and _cost(h) and _cost(r)) or not a.chips_by_type.get("lp30"):
            continue
        usd_per_rubin = _cost(r) / r.chips_by_type["rubin"]
        price = (_cost(h) - a.chips_by_type.get("rubin", 0) * usd_per_rubin) / a.chips_by_type["lp30"]
        out.append(f"{x:g} ms: {'none (it needs more Rubin than the optimum)' if price <= 0 else f'${price:.3g}/h'}")
    return ("LP30 price at which the attention–FFN-only plan would break even (Rubin at its catalogue price, "
            "chip counts as solved): " + "; ".join(out) + ".") if out else ""


def table_cs3(points: list[dict]) -> list[str]:
    by = _by(points)
    rows = [("| fast-chat TPOT SLO ms | heterogeneous kW | Trainium only kW | fast tokens per MW, heterogeneous ÷ "
             "Trainium only | heterogeneous $/h | Trainium only $/h | fast-chat served | prefill chips | "
             "decode / aggregated chips |"), "|---|---|---|---|---|---|---|---|---|"]
    for x in _xs(by):
        h, t = by.get((x, "heterogeneous")), by.get((x, "trainium3"))
        hp, tp = _power(h), _power(t)
        served = ", ".join(f"{m} {v:.0%}" for m, v in (h.class_modes.get("fast-chat", {}).items()
                                                         if h is not None and h.ok else []) if v > 0) or "-"
        st = h.stages if h is not None and h.ok else {}
        pre = ", ".join(f"{n} {c}" for c, n in st.get("prefill", {}).items()) or "-"
        dec = ", ".join(f"{stage} {n} {c}" for stage in ("decode", "aggregated") for c, n in st.get(stage, {}).items())
        rows.append(f"| {x:g} | {_fmt(hp and hp / 1e3, ',.1f')} | {_fmt(tp and tp / 1e3, ',.1f')} | "
                    f"{_ratio(tp, hp)} | {_fmt(_cost(h), ',.2f')} | {_fmt(_cost(t), ',.2f')} | {served} | {pre} | "
                    f"{dec or '-'} |")
    return rows


def verdict_cs3(points: list[dict]) -> str:
    """Where only the wafer meets the SLO, where Trainium alone does and what the optimum then uses."""
    by = _by(points)
    xs = _xs(by)
    het = {x: by.get((x, "heterogeneous")) for x in xs}
    only_het = [x for x in xs if _power(het[x]) and not _power(by.get((x, "trainium3")))]
    both = [x for x in xs if _power(het[x]) and _power(by.get((x, "trainium3")))]
    parts = []
    if only_het:
        parts.append(f"at TPOT {', '.join(f'{x:g}' for x in only_het)} ms only plans with CS-3 meet the SLO "
                     "(Trainium alone is infeasible: the capacity ratio is unbounded, not 5×)")
    if both:
        ratios = [(_power(by[(x, "trainium3")]) / _power(het[x]), x) for x in both]
        r, x = max(ratios)
        wafer = [x for x in both if "wse3" in het[x].chips_by_type]
        parts.append(f"at {', '.join(f'{x:g}' for x in both)} ms, where Trainium alone meets it, the best power "
                     f"ratio is {r:.2f}× (at {x:g} ms)"
                     + (f", the optimum using CS-3 at {', '.join(f'{x:g}' for x in wafer)} ms" if wafer
                        else " and the optimum uses no CS-3"))
    pd = [x for x in xs if _share(het[x], "fast-chat", "pd") > 0 and "wse3" in het[x].stages.get("decode", {})
          and "trainium3" in het[x].stages.get("prefill", {})]
    parts.append(f"Trainium prefill → CS-3 decode is chosen for fast-chat at {', '.join(f'{x:g}' for x in pd)} ms"
                 if pd else "the Trainium-prefill → CS-3-decode split itself is never chosen (the wafer serves "
                            "fast-chat aggregated, its prefill included)")
    verdict = "**5× does not appear**" if not any(r >= 5 for r, _ in ([] if not both else ratios)) else "**holds**"
    return verdict + ": " + "; ".join(parts) + "."


def table_draft(points: list[dict]) -> list[str]:
    by = _by(points)
    series = sorted({k[1] for k in by})
    rows = ["| fast TPOT SLO ms | " + " | ".join(f"{s} $/h" for s in series)
            + " | fast served with a draft (heterogeneous) | decode + draft chips (heterogeneous) |",
            "|---|" + "---|" * len(series) + "---|---|"]
    for x in _xs(by):
        h = by.get((x, "heterogeneous"))
        st = h.stages if h is not None and h.ok else {}
        where = ", ".join(f"{stage} {n} {c}" for stage in ("decode", "draft", "aggregated")
                          for c, n in st.get(stage, {}).items()) or "-"
        rows.append(f"| {x:g} | " + " | ".join(_fmt(_cost(by.get((x, s))), ",.2f") for s in series)
                    + f" | {_share(h, 'fast', 'pd+draft'):.0%} | {where} |")
    rows += ["", "Fastest TPOT SLO met per series: " + "; ".join(_fastest(by, s) for s in series) + "."]
    return rows


def _fastest(by: dict, series: str) -> str:
    ok = [x for x in _xs(by) if _cost(by.get((x, series))) is not None]
    return f"{series}: {ok[0]:g} ms ({1000 / ok[0]:.0f} tok/s/user)" if ok else f"{series}: none"


def verdict_draft(points: list[dict]) -> str:
    """Cost with drafts ÷ without at equal TPOT, the fastest TPOT each meets, and where the SRAM cards serve."""
    by = _by(points)
    xs = _xs(by)
    fast = {s: next((x for x in xs if _cost(by.get((x, s))) is not None), None) for s in ("PD", "heterogeneous")}
    ratios = [(_cost(by[(x, "PD")]) / _cost(by[(x, "heterogeneous")]), x) for x in xs
              if _cost(by.get((x, "PD"))) and _cost(by.get((x, "heterogeneous")))]
    het = {x: by.get((x, "heterogeneous")) for x in xs}
    sram = [x for x in xs if het[x] is not None and het[x].ok and _share(het[x], "fast", "pd+draft") > 0
            and any("corsair" in het[x].stages.get(st, {}) for st in ("draft", "decode"))]
    parts = []
    if fast["PD"] and fast["heterogeneous"]:
        k = fast["PD"] / fast["heterogeneous"]
        parts.append(f"fastest TPOT met: {fast['heterogeneous']:g} ms with drafts allowed, {fast['PD']:g} ms without "
                     f"(PD only): {k:.1f}× the interactivity on this grid"
                     + (" (both at the grid's fastest point: the grid cannot show more)" if k == 1 and
                        fast["PD"] == xs[0] else ""))
    if ratios:
        r, x = max(ratios)
        parts.append(f"at equal TPOT, serving without a draft costs up to {r:.2f}× as much (at {x:g} ms)")
    parts.append(f"speculative decoding on the Corsair SRAM cards (target and draft) is chosen at "
                 f"{', '.join(f'{x:g}' for x in sram)} ms, elsewhere the draft is co-located on H200s" if sram
                 else "the draft never runs on the Corsair SRAM cards (co-located on the H200s when used)")
    k = fast["PD"] / fast["heterogeneous"] if fast["PD"] and fast["heterogeneous"] else 0.0
    verdict = ("**holds**" if k >= 8 else "**~10× interactivity not decidable on this grid**"
               if fast["PD"] == xs[0] else "**~10× interactivity does not appear**")
    return verdict + ": " + "; ".join(parts) + "."


#: the key of the LP30 price sweep (``placement sweep``, not a study of this script) in the results
PRICE_SWEEP = "LP30 price sweep"
PRICE_SWEEP_CMD = ("placement sweep instances/rubin-lpx-deepseek.yaml --set hardware.chips.lp30.usd_per_hour=0.2:2:20 "
                   "--json lp30.json  # default backend (CBC); both classes at their shipped SLOs")


def table_price(points: list[dict]) -> list[str]:
    by = _by(points)
    rows = ["| LP30 $/h per chip | status | $/h | chips | reasoning served attention–FFN |", "|---|---|---|---|---|"]
    for x in _xs(by):
        p = by[(x, "heterogeneous")]
        rows.append(f"| {x:.4g} | {p.status}{'' if p.verified or not p.ok else ' (not verified)'} | "
                    f"{_fmt(_cost(p), ',.2f')} | {_chips(p)} | {_share(p, 'reasoning', 'pd-af'):.0%} |")
    return rows


def verdict_price(points: list[dict]) -> str:
    by = _by(points)
    lost = [x for x in _xs(by) if not by[(x, "heterogeneous")].ok]
    split = [x for x in _xs(by) if _share(by[(x, "heterogeneous")], "reasoning", "pd-af") > 0]
    head = (f"{len(_xs(by)) - len(lost)} of {len(_xs(by))} points solved and verified"
            + (f" (lost: {', '.join(f'{x:.4g}' for x in lost)})" if lost else ", none lost"))
    return head + "; " + (f"the split is chosen at LP30 ≤ ${max(split):.4g}/h per chip" if split else
                          f"the split is never chosen, even at ${min(_xs(by)):.4g}/h per LP30 chip") + "."


TABLES = {"lpx": table_lpx, "cs3": table_cs3, "draft": table_draft}
VERDICTS = {"lpx": verdict_lpx, "cs3": verdict_cs3, "draft": verdict_draft}
TITLES = {
    "lpx": "Seed 000: the Rubin + LPX attention–FFN split pays for MoE decode (`rubin-lpx-deepseek`)",
    "cs3": "Seed 001: Trainium prefill → CS-3 decode over EFA, 5× fast-token capacity in the same footprint "
           "(`trainium-cerebras`)",
    "draft": "Seed 001: a draft model on SRAM chips buys ~10× interactivity (`spec-decode-draft`)",
}


def section(fam: str, results: dict[str, list[dict]]) -> list[str]:
    """The Markdown lines of one study family (its title, verdicts and tables) from ``results``."""
    studies = [s for s in STUDIES if s.family == fam and s.condition in results]
    out = [f"## {TITLES[fam]}", ""]
    out += [f"* *{s.condition}*: {VERDICTS[fam](results[s.condition])}" for s in studies]
    missing = [s.condition for s in STUDIES if s.family == fam and s.condition not in results]
    if missing:
        out += [f"* Defined in `seed_claims.py` but not in this run's results: {'; '.join(missing)}."]
    out += [""]
    for s in studies:
        cmd = " ".join([f"placement pareto instances/{s.instance}.yaml --sweep {s.sweep} --class {s.focus}"]
                       + [f"--set {o}" for o in s.overrides]
                       + ([f"--set objective={s.objective}"] if s.objective else [])
                       + [f"--solver {s.backend}"])
        series = f"; series solved: {', '.join(s.series)}" if s.series else ""
        out += [f"### {s.condition}", "", f"`{cmd}`" + (f" ({s.edit_note})" if s.edit_note else "") + series, ""]
        out += TABLES[fam](results[s.condition]) + [""]
    if fam == "lpx" and PRICE_SWEEP in results:
        out += [f"### {PRICE_SWEEP} (both classes at their shipped SLOs)", "",
                f"* {verdict_price(results[PRICE_SWEEP])}", "", f"`{PRICE_SWEEP_CMD}`", ""]
        out += table_price(results[PRICE_SWEEP]) + [""]
    return out


def write_markdown(path: Path, results: dict[str, list[dict]]) -> None:
    """Rewrite each family's block of ``path`` (its prose outside the markers kept), or write the whole page
    when there is none yet."""
    from doc_figures import replace_block

    if not path.exists():
        path.write_text(markdown(results) + "\n")
        return
    text = path.read_text()
    for fam in TABLES:
        body = section(fam, results)
        while body and body[-1] == "":
            body.pop()
        text = replace_block(text, f"seed-{fam}", "\n".join(body))
    path.write_text(text)


def markdown(results: dict[str, list[dict]]) -> str:
    """The whole SEED_CLAIMS.md; each family between ``<!-- figures:seed-FAMILY -->`` markers
    (``benchmarks/doc_figures.py`` re-solves the ``draft`` family and rewrites its block)."""
    out = ["# Where the seeds' claims hold", "",
           ("Generated by `.venv/bin/python benchmarks/seed_claims.py` (every plan verified, infeasible points marked; backend per study "
            "below). Each study sweeps one SLO of the class the claim is about; conditions are stated per table. "
            "Inputs are the shipped instances with the stated overrides — nothing was tuned to make a claim appear. "
            "Each condition's verdict line is computed from its table."),
           ""]
    for fam in TABLES:
        body = section(fam, results)
        while body and body[-1] == "":
            body.pop()
        out += [f"<!-- figures:seed-{fam} -->", "", *body, "", f"<!-- /figures:seed-{fam} -->", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TABLES), action="append", help="study families to run (default all)")
    ap.add_argument("--json", type=Path, default=HERE / "seed_claims.json")
    ap.add_argument("--markdown", type=Path, default=HERE / "SEED_CLAIMS.md")
    ap.add_argument("--merge", type=Path, action="append", default=[],
                    help="also take the results of these JSON files (runs of other families); solve nothing new "
                         "with --render")
    ap.add_argument("--render", action="store_true", help="only rewrite the markdown from the JSON")
    ap.add_argument("--condition", action="append", help="run only the studies whose condition starts so")
    ap.add_argument("--price-sweep", type=Path, help=f"the JSON of `{PRICE_SWEEP_CMD.split('  #')[0]}`")
    args = ap.parse_args(argv)
    keep = args.json.exists() and (args.only or args.render or args.merge or args.price_sweep)
    results: dict[str, list[dict]] = json.loads(args.json.read_text()) if keep else {}
    for extra in args.merge:
        results.update(json.loads(extra.read_text()))
    if args.price_sweep:
        results[PRICE_SWEEP] = json.loads(args.price_sweep.read_text())["points"]
    if args.render:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True, default=str) + "\n")
        write_markdown(args.markdown, results)
        return 0
    for s in STUDIES:
        if args.only and s.family not in args.only:
            continue
        if args.condition and not any(s.condition.startswith(c) for c in args.condition):
            continue
        print(f"[{s.family}] {s.condition}", file=sys.stderr, flush=True)
        results[s.condition] = run(s)
        # written after every study, so a long run interrupted keeps what it solved
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True, default=str) + "\n")
        write_markdown(args.markdown, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
