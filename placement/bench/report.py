"""Tables of benchmark results: one row per (instance, solver) with medians over repeats, the
CBC/HiGHS solve-time ratio, the baselines beside the MILP; as plain string rows (for the CLI's
rich tables) or GitHub markdown (for ``benchmarks/RESULTS.md``).

Examples
--------
>>> rows = [{"instance": "a", "domains": 10, "groups": 2, "solver": "highs", "repeat": 0, "build_s": 0.1,
...          "solve_s": 1.0, "status": "optimal", "gap": 0.0, "variables": 5, "constraints": 3,
...          "nonzeros": 9, "peak_rss_mb": 100.0, "objective": 3.0},
...         {"instance": "a", "domains": 10, "groups": 2, "solver": "cbc", "repeat": 0, "build_s": 0.1,
...          "solve_s": 3.0, "status": "optimal", "gap": 0.0, "variables": 5, "constraints": 3,
...          "nonzeros": 9, "peak_rss_mb": 90.0, "objective": 3.0}]
>>> s = summarise(rows)
>>> [(r["solver"], r["solve_s"]) for r in s], ratios(s)
([('highs', 1.0), ('cbc', 3.0)], {'a': 3.0})
"""

from __future__ import annotations

import statistics

from placement.core.plans.numbers import num

__all__ = ["baseline_rows", "markdown", "ratios", "report_markdown", "summarise", "table_rows"]


def summarise(cases: list[dict]) -> list[dict]:
    """One row per (instance, solver): medians of times and memory over repeats, the last outcome."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for c in cases:
        groups.setdefault((c["instance"], c["solver"]), []).append(c)
    out = []
    for rows in groups.values():
        last = dict(rows[-1])
        for key in ("build_s", "solve_s", "total_s", "peak_rss_mb", "solver_child_peak_mb", "wall_s"):
            vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
            if vals:
                last[key] = statistics.median(vals)
        last["repeats"] = len(rows)
        out.append(last)
    return out


def ratios(summary: list[dict], numerator: str = "cbc", denominator: str = "highs") -> dict[str, float | None]:
    """Per instance, solve-time ratio ``numerator / denominator`` (CBC / HiGHS by default)."""
    times: dict[str, dict[str, float]] = {}
    for r in summary:
        if isinstance(r.get("solve_s"), (int, float)):
            times.setdefault(r["instance"], {})[r["solver"]] = r["solve_s"]
    out = {}
    for inst, t in times.items():
        if numerator in t and denominator in t:
            out[inst] = round(t[numerator] / t[denominator], 3) if t[denominator] > 0 else None
    return out


def _fmt(x, digits: int = 3) -> str:
    """A cell: a number by :func:`placement.core.plans.numbers.num` (``—`` when missing), anything else as written."""
    return num(x, digits, none="—") if x is None or isinstance(x, (int, float)) else str(x)


def table_rows(summary: list[dict]) -> list[list[str]]:
    """Header and rows of the summary table (plain strings; used by the CLI and RESULTS.md)."""
    rat = ratios(summary)
    header = ["instance", "domains", "groups", "solver", "cands s", "build s", "solve s", "status", "objective",
              "gap", "vars", "int", "rows", "nnz", "peak MB", "CBC/HiGHS"]
    rows = [header]
    for r in summary:
        peak = r.get("peak_rss_mb")
        child = r.get("solver_child_peak_mb") or 0.0
        peak_s = _fmt(peak) if r["solver"] != "cbc" or not child else f"{_fmt(peak)} + {_fmt(child)}"
        rows.append([r["instance"], _fmt(r.get("domains")), _fmt(r.get("groups")), r["solver"],
                     _fmt(r.get("candidates_s")), _fmt(r.get("build_s")), _fmt(r.get("solve_s")),
                     r.get("status", "?"), _fmt(r.get("objective"), 6),
                     "—" if r.get("gap") is None else f"{num(100 * r['gap'])}%",
                     _fmt(r.get("variables")), _fmt(r.get("integer_variables")), _fmt(r.get("constraints")),
                     _fmt(r.get("nonzeros")), peak_s,
                     _fmt(rat.get(r["instance"])) if r["solver"] == "highs" else ""])
    return rows


def baseline_rows(base: list[dict]) -> list[list[str]]:
    """Header and rows of the baseline table."""
    header = ["instance", "domains", "method", "status", "seconds", "objective", "MILP objective", "gap to MILP",
              "reaches optimum", "evaluated / combinations"]
    rows = [header]
    for b in base:
        combos = ""
        if b.get("method") == "exhaustive":
            total = b.get("combinations")
            combos = f"{_fmt(b.get('evaluated'))} / {'> budget' if total == -1 else _fmt(total)}"
        gap = b.get("gap_to_milp")
        rows.append([b["instance"], _fmt(b.get("domains")), b["method"], b.get("status", "?"),
                     _fmt(b.get("seconds")), _fmt(b.get("objective"), 6), _fmt(b.get("milp_objective"), 6),
                     "—" if gap is None else f"{num(100 * gap)}%",
                     "—" if b.get("reaches_milp_optimum") is None else ("yes" if b["reaches_milp_optimum"] else "no"),
                     combos])
    return rows


def markdown(rows: list[list[str]]) -> str:
    """A GitHub markdown table of :func:`table_rows` / :func:`baseline_rows` output."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join(" --- " for _ in rows[0]) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def report_markdown(result: dict) -> str:
    """The summary table (and the baseline table, if any) of a :func:`bench` result as markdown."""
    text = markdown(table_rows(summarise(result["cases"])))
    if result.get("baselines"):
        text += "\n\n" + markdown(baseline_rows(result["baselines"]))
    return text + "\n"
