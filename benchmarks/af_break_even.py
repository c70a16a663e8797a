"""Where attention–FFN disaggregation pays against Rubin alone: LP30 $/h × model size × TPOT (issue 30, item 2).

The shipped ``rubin-lpx-deepseek`` fleet and workload, with a mixture-of-experts model of each size
(Qwen3-235B-A22B, DeepSeek-V3 671B, Kimi-K2 1T) in place of DeepSeek-V3 and the reasoning class's TPOT SLO
at 15 and 30 ms (chat stays at 25 ms). Per (model, TPOT): the Rubin-only fleet solved once (it holds no
LP30), then the whole fleet at each LP30 price of :data:`PRICES_USD_PER_HOUR`, cheapest first. A price at
which the optimum buys no LP30 ends the row: at a higher price every plan holding LP30 costs more and the
Rubin-only ones the same. AF *pays* at a price when the optimum decodes some of a class attention–FFN and
costs less than Rubin alone.

Break-even: the cheapest price's attention–FFN plan, priced as solved, costs Rubin alone's $/h at

    p* = (C_rubin − (C_plan − n_LP30·p_low)) / n_LP30

and stays feasible at every price, so the optimum beats Rubin alone at every price below p* (a bound from
below: a plan with fewer LP30 may pay above it). Every plan is verified.

Hand calculation (DeepSeek-V3 FP8, both classes at their shipped SLOs, the catalogue's prices)::

    FFN weights      58 MoE layers × (256 routed + 1 shared) × 3·7168·2048 B + 3 dense × 3·7168·18432 B
                     ≈ 658 GB → 658 GB / 0.5 GB per LP30 ≥ 1,316 chips → 6 LPX racks = 1,536 LP30 per FFN
                     half (8 racks = 2,048 before whole numbers of racks were candidates)
    one FFN half per class (a replica serves one class):  2 × 1,536 LP30
    attention + prefill on Rubin (the plan's):  288 (reasoning) + 72 (chat) + 60 (prefill) = 420 Rubin
                     × $4.60/h = $1,932/h
    Rubin alone (placement solve --compare): $12,218/h
    p* = ($12,218 − $1,932) / 3,072 ≈ $3.35/h per LP30, 4.7× the catalogue's $0.714

The Rubin-only plan is what makes the split pay this well: at 15 ms a Rubin decode step of DeepSeek-V3
pays the uncalibrated per-step (2 ms) and per-sequence (20 µs) costs the catalogue prices GPUs at, which
hold its replicas to small batches (the instance's header); an LP30 FFN step pays 0.1 ms. The table below
is the solver's, at every price and TPOT.

Run (15 s on an idle core, a minute on a busy one: 6 Rubin-only solves and at most 18 whole-fleet ones, the
prices of one point sharing its candidate generation, :mod:`placement.core.replicas.candidate_cache`)::

    .venv/bin/python benchmarks/af_break_even.py      # writes af_break_even.json and SEED_CLAIMS.md's block
    .venv/bin/python benchmarks/af_break_even.py --render   # the block from the JSON, no solve
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
INSTANCE = ROOT / "instances" / "rubin-lpx-deepseek.yaml"
#: The block of SEED_CLAIMS.md this script rewrites (after the seed-lpx block, which seed_claims.py rewrites).
BLOCK = "af-break-even"
MODELS = ("qwen3-235b-a22b", "deepseek-v3", "kimi-k2")
TPOTS_MS = (15.0, 30.0)
#: LP30 $/h per chip: the low end of the issue's range, the catalogue's estimate, and the high end.
PRICES_USD_PER_HOUR = (0.2, 0.714, 2.0)
FOCUS = "reasoning"


def _overrides(model: str, tpot_ms: float, price: float | None) -> list[str]:
    out = [f"model={model}", f"workload.classes.{FOCUS}.tpot_ms={tpot_ms:g}"]
    return out + ([f"hardware.chips.lp30.usd_per_hour={price:g}"] if price is not None else [])


def _record(plan, **key) -> dict:
    ok = plan.verified and plan.cost_usd_per_hour is not None
    return {**key, "status": str(plan.status), "verified": bool(plan.verified),
            "cost_usd_per_hour": plan.cost_usd_per_hour if ok else None,
            "chips_by_type": dict(plan.chips_by_type) if ok else {},
            "af_share": {c.name: float(c.modes.get("pd-af", 0.0) or 0.0) for c in plan.classes} if ok else {}}


def run() -> list[dict]:
    """Every solve of the grid (module notes), one record each."""
    from costmodels.models import load_model_catalog
    from placement.api import solve
    from placement.core.instance.loading import load_instance
    from placement.studies.pareto import pareto_series
    from placement.studies.whatif import apply_overrides

    base = load_instance(INSTANCE)
    catalogue = load_model_catalog()
    rows = []
    for model in MODELS:
        params = catalogue[model].total_params
        for tpot in TPOTS_MS:
            inst, _ = apply_overrides(base, _overrides(model, tpot, None), str(INSTANCE))
            rubin = next(v for label, _, v in pareto_series(inst) if label == "rubin")
            print(f"[{model} {tpot:g} ms] Rubin only", file=sys.stderr, flush=True)
            rows.append(_record(solve(rubin, source=str(INSTANCE)), model=model, params=params, tpot_ms=tpot,
                                series="rubin", price=None))
            for price in PRICES_USD_PER_HOUR:
                inst, _ = apply_overrides(base, _overrides(model, tpot, price), str(INSTANCE))
                print(f"[{model} {tpot:g} ms] LP30 ${price:g}/h", file=sys.stderr, flush=True)
                rows.append(_record(solve(inst, source=str(INSTANCE)), model=model, params=params, tpot_ms=tpot,
                                    series="heterogeneous", price=price))
                if not rows[-1]["chips_by_type"].get("lp30"):
                    break  # dearer LP30 cannot bring it back (module notes)
    return rows


def break_even_usd_per_hour(rubin_cost: float, plan_cost: float, lp30_chips: int, price: float) -> float:
    """p* of the module notes: the LP30 price at which a plan solved at ``price`` costs ``rubin_cost``.

    Examples
    --------
    The hand calculation: 3,072 LP30 and $1,932/h of Rubin against $12,218/h of Rubin alone.

    >>> round(break_even_usd_per_hour(12218.0, 1932.0 + 3072 * 0.714, 3072, 0.714), 2)
    3.35
    """
    return (rubin_cost - (plan_cost - lp30_chips * price)) / lp30_chips


def _usd(x: float | None) -> str:
    return "infeasible" if x is None else f"{x:,.0f}"


def markdown(rows: list[dict]) -> str:
    """The block: a verdict line per (model, TPOT) and one table."""
    lines = ["### Where attention–FFN pays: LP30 $/h × model size × reasoning TPOT (issue 30, item 2)", "",
             ("`python benchmarks/af_break_even.py` (the shipped fleet and workload, the model swapped in, chat at "
             "25 ms; the Rubin-only fleet against the whole fleet at each LP30 price; the module docstring has the "
             "hand calculation). *pays*: the optimum decodes some class attention–FFN and costs less than Rubin "
             "alone; *break-even*: the LP30 price at which the cheapest price's attention–FFN plan, as solved, "
             "costs what Rubin alone costs — it pays at every price below."), "",
             "| model | params | reasoning TPOT ms | Rubin only $/h | "
             + " | ".join(f"LP30 ${p:g}/h: $/h (LP30 chips, AF share chat/reasoning)" for p in PRICES_USD_PER_HOUR)
             + " | break-even LP30 $/h |",
             "|---|---|---|---|" + "---|" * len(PRICES_USD_PER_HOUR) + "---|"]
    verdicts = []
    for model in dict.fromkeys(r["model"] for r in rows):
        for tpot in sorted({r["tpot_ms"] for r in rows if r["model"] == model}):
            mine = [r for r in rows if r["model"] == model and r["tpot_ms"] == tpot]
            rubin = next(r for r in mine if r["series"] == "rubin")
            by_price = {r["price"]: r for r in mine if r["series"] == "heterogeneous"}
            cells, pays, even = [], [], None
            for p in PRICES_USD_PER_HOUR:
                h = by_price.get(p)
                if h is None:
                    cells.append("no LP30 (as at a lower price)")
                    continue
                lp30 = h["chips_by_type"].get("lp30", 0)
                share = "/".join(f"{h['af_share'].get(c, 0.0):.0%}" for c in ("chat", FOCUS))
                cells.append(f"{_usd(h['cost_usd_per_hour'])} ({lp30:,}, {share})")
                cost_r, cost_h = rubin["cost_usd_per_hour"], h["cost_usd_per_hour"]
                if lp30 and cost_h is not None and (cost_r is None or cost_h < cost_r) and any(h["af_share"].values()):
                    pays.append(p)
                    if even is None and cost_r is not None:
                        even = break_even_usd_per_hour(cost_r, cost_h, lp30, p)
            lines.append(f"| {model} | {rubin['params'] / 1e9:,.0f} B | {tpot:g} | {_usd(rubin['cost_usd_per_hour'])} | "
                         + " | ".join(cells) + f" | {'-' if even is None else f'{even:.3g}'} |")
            say = (f"pays at LP30 ${', $'.join(f'{p:g}' for p in pays)}/h" if pays else "does not pay at any price "
                   f"swept (from ${PRICES_USD_PER_HOUR[0]:g}/h)")
            verdicts.append(f"* {model} ({rubin['params'] / 1e9:,.0f} B), reasoning at {tpot:g} ms: {say}"
                            + (f"; break-even ≈ ${even:.3g}/h per LP30" if even is not None else "") + ".")
    return "\n".join(lines[:4] + verdicts + [""] + lines[4:])


def write(markdown_text: str, path: Path) -> None:
    """Rewrite the block in ``path``, or add it after the seed-lpx block when there is none yet."""
    sys.path.insert(0, str(HERE))
    from doc_figures import replace_block

    text = path.read_text()
    try:
        text = replace_block(text, BLOCK, markdown_text)
    except KeyError:
        end = "<!-- /figures:seed-lpx -->"
        text = text.replace(end, f"{end}\n\n<!-- figures:{BLOCK} -->\n\n{markdown_text}\n\n<!-- /figures:{BLOCK} -->", 1)
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=HERE / "af_break_even.json")
    ap.add_argument("--markdown", type=Path, default=HERE / "SEED_CLAIMS.md")
    ap.add_argument("--render", action="store_true", help="only rewrite the block from the JSON")
    args = ap.parse_args(argv)
    if args.render:
        rows = json.loads(args.json.read_text())
    else:
        rows = run()
        args.json.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    write(markdown(rows), args.markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
