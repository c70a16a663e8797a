"""Where do the seeds' claims hold? Sweeps of the shipped instances, written to SEED_CLAIMS.md.

Three claims of the seeds (``../shared/seeds/DIGEST.md``, quoted in each
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

Run (about 10 minutes on 2 cores)::

    .venv/bin/python benchmarks/seed_claims.py            # writes seed_claims.json and SEED_CLAIMS.md
    .venv/bin/python benchmarks/seed_claims.py --only lpx  # one study family
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from placement.core.loading import parse_instance, read_document
from placement.studies.pareto import run_pareto
from placement.studies.sweep import Point

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


LPX_TPOT = "tpot_ms=6,8,10,15,20,30"
CS3_TPOT = "tpot_ms=2,3,4,6,8,16,50"
DRAFT_TPOT = "tpot_ms=2,3,4,6,8,10,20,40"

STUDIES: tuple[Study, ...] = (
    Study("lpx", "rubin-lpx-deepseek", LPX_TPOT, "reasoning", "as shipped (uplink 2 µs, LP30 $/h from the catalogue)"),
    Study("lpx", "rubin-lpx-deepseek", LPX_TPOT, "reasoning", "LPX uplink latency 10 µs",
          ("hardware.domains.lpx.uplink_latency_us=10",)),
    Study("lpx", "rubin-lpx-deepseek", LPX_TPOT, "reasoning", "traffic ÷ 10 (300 + 60 req/s)",
          ("workload.classes.chat.rate_rps=300", "workload.classes.reasoning.rate_rps=60")),
    Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat", "as shipped, power objective", objective="power"),
    Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat", "as shipped, cost objective"),
    Study("cs3", "trainium-cerebras", CS3_TPOT, "fast-chat", "fast-chat ×10 (100 req/s), power objective",
          ("workload.classes.fast-chat.rate_rps=100",), objective="power"),
    Study("draft", "spec-decode-draft", DRAFT_TPOT, "fast", "as shipped (acceptance 0.80, 0.75, 0.70, 0.65)"),
    Study("draft", "spec-decode-draft", DRAFT_TPOT, "fast",
          "DeepSeek-R1 MTP-like acceptance (0.92, 0.88, 0.83, 0.77)",
          document_edits={"draft": {"model": "llama-3.2-1b", "acceptance": [0.92, 0.88, 0.83, 0.77]}}),
)


def load(study: Study):
    """The study's instance, with its document edits and objective applied."""
    path = ROOT / "instances" / f"{study.instance}.yaml"
    doc = read_document(path)
    doc.update(study.document_edits)
    if study.objective:
        doc["objective"] = study.objective
    return parse_instance(doc, source=str(path))


def run(study: Study) -> list[dict]:
    """Solve every point of the study; one row per (point, series)."""
    res = run_pareto(load(study), [study.sweep], classes=[study.focus], overrides=list(study.overrides),
                     source=study.instance, backend="highs")
    return [p.model_dump() for p in res.points]


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


def table_lpx(points: list[dict]) -> list[str]:
    by = _by(points)
    rows = [("| reasoning TPOT SLO ms | heterogeneous $/h | Rubin only $/h | Rubin only ÷ heterogeneous | "
            "attention–FFN share | chips |"), "|---|---|---|---|---|---|"]
    for x in sorted({k[0] for k in by}):
        h, r = by.get((x, "heterogeneous")), by.get((x, "rubin"))
        af = h.modes.get("pd-af", 0.0) if h is not None and h.ok else 0.0
        chips = ", ".join(f"{n} {c}" for c, n in sorted(h.chips_by_type.items())) if h is not None and h.ok else "-"
        rows.append(f"| {x:g} | {_fmt(_cost(h))} | {_fmt(_cost(r))} | {_ratio(_cost(r), _cost(h))} | "
                    f"{af:.0%} | {chips} |")
    return rows


def table_cs3(points: list[dict]) -> list[str]:
    by = _by(points)
    rows = [("| fast-chat TPOT SLO ms | heterogeneous kW | Trainium only kW | fast tokens per MW, heterogeneous ÷ "
            "Trainium only | heterogeneous $/h | Trainium only $/h | chips |"), "|---|---|---|---|---|---|---|"]
    for x in sorted({k[0] for k in by}):
        h, t = by.get((x, "heterogeneous")), by.get((x, "trainium3"))
        chips = ", ".join(f"{n} {c}" for c, n in sorted(h.chips_by_type.items())) if h is not None and h.ok else "-"
        hp, tp = _power(h), _power(t)
        rows.append(f"| {x:g} | {_fmt(hp and hp / 1e3, ',.1f')} | {_fmt(tp and tp / 1e3, ',.1f')} | "
                    f"{_ratio(tp, hp)} | {_fmt(_cost(h), ',.2f')} | {_fmt(_cost(t), ',.2f')} | {chips} |")
    return rows


def table_draft(points: list[dict]) -> list[str]:
    by = _by(points)
    series = sorted({k[1] for k in by})
    rows = ["| fast TPOT SLO ms | " + " | ".join(f"{s} $/h" for s in series)
            + " | draft share (heterogeneous) | decode chips incl. draft (heterogeneous) |",
            "|---|" + "---|" * len(series) + "---|---|"]
    for x in sorted({k[0] for k in by}):
        h = by.get((x, "heterogeneous"))
        share = sum(v for k, v in (h.modes.items() if h is not None and h.ok else []) if "draft" in k.lower())
        decode_chips = h.stages.get("decode", {}) if h is not None and h.ok else {}
        where = ", ".join(f"{n} {c}" for c, n in sorted(decode_chips.items())) or "-"
        rows.append(f"| {x:g} | " + " | ".join(_fmt(_cost(by.get((x, s))), ",.2f") for s in series)
                    + f" | {share:.0%} | {where} |")
    fastest = []
    for s in series:
        ok = [x for x in sorted({k[0] for k in by}) if _cost(by.get((x, s))) is not None]
        fastest.append(f"{s}: {ok[0]:g} ms ({1000 / ok[0]:.0f} tok/s/user)" if ok else f"{s}: none")
    rows += ["", "Fastest TPOT SLO met per series: " + "; ".join(fastest) + "."]
    return rows


TABLES = {"lpx": table_lpx, "cs3": table_cs3, "draft": table_draft}
TITLES = {
    "lpx": "Seed 000: the Rubin + LPX attention–FFN split pays for MoE decode (`rubin-lpx-deepseek`)",
    "cs3": "Seed 001: Trainium prefill → CS-3 decode over EFA, 5× fast-token capacity in the same footprint "
           "(`trainium-cerebras`)",
    "draft": "Seed 001: a draft model on SRAM chips buys ~10× interactivity (`spec-decode-draft`)",
}


def markdown(results: dict[str, list[dict]]) -> str:
    out = ["# Where the seeds' claims hold", "",
           ("Generated by `.venv/bin/python benchmarks/seed_claims.py` (HiGHS; every point verified). "
           "Each study sweeps one SLO of the class the claim is about; conditions are stated per table. "
           "Inputs are the shipped instances with the stated overrides — nothing was tuned to make a claim appear."),
           ""]
    for fam, table in TABLES.items():
        studies = [s for s in STUDIES if s.family == fam and s.condition in results]
        if not studies:
            continue
        out += [f"## {TITLES[fam]}", ""]
        for s in studies:
            cmd = " ".join([f"placement pareto instances/{s.instance}.yaml --sweep {s.sweep} --class {s.focus}"]
                           + [f"--set {o}" for o in s.overrides]
                           + ([f"--set objective={s.objective}"] if s.objective else []))
            out += [f"### {s.condition}", "", f"`{cmd}`" + (" (draft acceptance edited in the instance)"
                                                             if s.document_edits else ""), ""]
            out += table(results[s.condition]) + [""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TABLES), action="append", help="study families to run (default all)")
    ap.add_argument("--json", type=Path, default=HERE / "seed_claims.json")
    ap.add_argument("--markdown", type=Path, default=HERE / "SEED_CLAIMS.md")
    args = ap.parse_args(argv)
    results: dict[str, list[dict]] = json.loads(args.json.read_text()) if args.json.exists() and args.only else {}
    for s in STUDIES:
        if args.only and s.family not in args.only:
            continue
        print(f"[{s.family}] {s.condition}", file=sys.stderr, flush=True)
        results[s.condition] = run(s)
    args.json.write_text(json.dumps(results, indent=1, sort_keys=True, default=str) + "\n")
    args.markdown.write_text(markdown(results) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
