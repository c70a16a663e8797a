"""Solver benchmarks: per instance and solver, time (build and solve apart), outcome, model size, memory.

``placement bench`` (and :func:`bench`) runs, for every instance:

1. *preparation*, once per instance: load, candidate generation and the
   solver-neutral :class:`~solvers.problem.Problem` (timed as
   ``candidates_s``; the problem is pickled for the cases);
2. one *case* per solver and repeat: build the PuLP model (``build_s``) and
   solve it (``solve_s``) through :func:`solvers.twolevel.solve`, the same path
   as ``placement solve``; status, objective, best bound, gap, variables,
   integer variables, constraints, nonzeros;
3. optional *baselines* (:mod:`placement.bench.baselines`): exhaustive
   configuration search, greedy, LP relaxation.

Every preparation, case and baseline runs in a **fresh process** (started
with ``spawn``), so that its memory high-water mark is its own and a runaway
one can be stopped: a process still running after its hard limit is killed
and reported as ``killed``. Jobs go through :func:`placement.studies.executor.run_map`,
the executor sweeps use (``workers=1`` by default: one job at a time gives
clean timings on a small machine).

Peak memory
    ``peak_rss_mb`` is ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of that
    fresh process at its end: the Python side (problem, PuLP model, solution)
    plus HiGHS, which runs in-process. CBC runs as a child process of it; its
    own high-water mark is ``getrusage(RUSAGE_CHILDREN).ru_maxrss``, reported
    as ``solver_child_peak_mb``. Both include the interpreter and imports
    (``base_rss_mb``, measured after loading the problem, is the floor).

Instances come as files, or are generated for ``--sizes`` with
:func:`placement.bench.generate.build_instance` (family, chip types, classes, model,
modes and seed as given) and written next to the results.

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

import contextlib
import hashlib
import json
import multiprocessing
import os
import pickle
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from placement.core.errors import InputError

__all__ = [
    "BASELINES",
    "bench",
    "bench_command",
    "machine_info",
    "mark_out_of_memory",
    "markdown",
    "prepare",
    "ratios",
    "report_markdown",
    "run_baseline",
    "run_case",
    "scaling_plot",
    "summarise",
    "summary_table",
]

BASELINES = ("exhaustive", "greedy", "lp")
#: Hard limit on a preparation (candidate generation) process, seconds.
PREPARE_LIMIT_S = 1800.0


# --------------------------------------------------------------------------- isolation


def _peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0  # Linux: KiB


@contextlib.contextmanager
def _quiet(enabled: bool):
    """Send this process's stdout (HiGHS' banner, CBC chatter) to /dev/null at the fd level."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _child(conn, target: str, job: dict) -> None:
    """Entry point of a fresh process: run ``target`` (a function of this module) on ``job``."""
    try:
        if job.get("memory_limit_mb"):
            limit = int(job["memory_limit_mb"] * 1024 * 1024)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        with _quiet(not job.get("verbose", False)):
            value = globals()[target](job)
        value["peak_rss_mb"] = round(_peak_mb(resource.RUSAGE_SELF), 1)
        value["solver_child_peak_mb"] = round(_peak_mb(resource.RUSAGE_CHILDREN), 1)
        conn.send(("ok", value))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _isolated(target: str, job: dict, limit_s: float) -> dict:
    """Run ``target(job)`` in a fresh spawned process; kill it after ``limit_s`` seconds."""
    load_before = round(os.getloadavg()[0], 2)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, target, job), daemon=False)
    start = time.perf_counter()
    proc.start()
    child.close()
    try:
        ready = parent.poll(limit_s)
        if not ready:
            proc.kill()
            proc.join()
            return {"status": "killed", "error": f"killed after the hard limit of {limit_s:g} s",
                    "wall_s": time.perf_counter() - start}
        try:
            kind, value = parent.recv()
        except EOFError:
            proc.join()
            return {"status": "error", "error": f"process died (exit code {proc.exitcode})",
                    "wall_s": time.perf_counter() - start}
        proc.join()
    finally:
        parent.close()
    if kind == "error":
        return {"status": "error", "error": value, "wall_s": time.perf_counter() - start,
                "loadavg_before": load_before}
    value["wall_s"] = time.perf_counter() - start
    # 1-minute load average before and after: other work on the machine inflates timings.
    value["loadavg_before"] = load_before
    value["loadavg_after"] = round(os.getloadavg()[0], 2)
    return value


# --------------------------------------------------------------------------- jobs


def _prepare_job(job: dict) -> dict:
    from placement.core.candidates import build_problem
    from placement.core.context import Context
    from placement.core.loading import load_instance

    start = time.perf_counter()
    inst = load_instance(job["instance"])
    ctx = Context.of(inst, job["instance"])
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    problem, cands = build_problem(ctx)
    candidates_s = time.perf_counter() - start
    with open(job["problem_path"], "wb") as fh:
        pickle.dump(problem, fh, protocol=pickle.HIGHEST_PROTOCOL)
    chip_types = sorted({s.chip.name for s in ctx.sites.values()})
    return {
        "status": "ok",
        "instance": inst.name,
        "path": job["instance"],
        "problem_path": job["problem_path"],
        "model": ctx.model.name,
        "domains": sum(s.group.count for s in ctx.sites.values()),
        "groups": len(ctx.sites),
        "chips": sum(s.chips for s in ctx.sites.values()),
        "chip_types": len(chip_types),
        "chip_names": chip_types,
        "classes": len(inst.workload.classes),
        "modes": list(inst.modes),
        "switches": len(inst.hardware.switches),
        "edges": len(problem.edges),
        "candidates_generated": cands.generated,
        "candidates_feasible": cands.feasible,
        "columns": cands.kept,
        "two_part_columns": sum(1 for c in problem.columns if len(c.parts) == 2),
        "load_s": round(load_s, 4),
        "candidates_s": round(candidates_s, 4),
    }


def _load_problem(path: str):
    with open(path, "rb") as fh:
        return pickle.load(fh)


def _case_job(job: dict) -> dict:
    from solvers.twolevel import solve

    problem = _load_problem(job["problem_path"])
    base = _peak_mb(resource.RUSAGE_SELF)
    start = time.perf_counter()
    sol = solve(problem, backend=job["solver"], time_limit_s=job.get("time_limit_s"), gap=job.get("gap"),
                threads=job.get("threads"), msg=False)
    total = time.perf_counter() - start
    return {
        "status": sol.status,
        "message": sol.message,
        "objective": sol.objective,
        "best_bound": sol.best_bound,
        "gap": sol.gap,
        "build_s": round(sol.build_seconds, 4),
        "solve_s": round(sol.solve_seconds, 4),
        "total_s": round(total, 4),
        "variables": sol.variables,
        "integer_variables": sol.integer_variables,
        "constraints": sol.constraints,
        "nonzeros": sol.nonzeros,
        "cost_usd_per_hour": sol.cost_usd_per_hour,
        "units": sol.units,
        "base_rss_mb": round(base, 1),
    }


def _baseline_job(job: dict) -> dict:
    from placement.bench import baselines

    problem = _load_problem(job["problem_path"])
    method = job["method"]
    if method == "exhaustive":
        r = baselines.exhaustive(problem, max_evaluations=job.get("max_evaluations", baselines.MAX_EVALUATIONS),
                                 time_budget_s=job.get("budget_s", baselines.TIME_BUDGET_S))
    elif method == "greedy":
        r = baselines.greedy(problem)
    elif method == "lp":
        r = baselines.lp_relaxation(problem, backend=job.get("lp_backend", "highs"),
                                    time_limit_s=job.get("time_limit_s"))
    else:
        raise ValueError(f"unknown baseline {method!r}")
    out = r.to_dict()
    out["choice"] = {k: len(v) for k, v in out["choice"].items()}  # pools per class; the full choice is long
    return out


def prepare(job: dict) -> dict:
    """Candidates and problem of one instance, in a fresh process (``job``: instance, problem_path[, limit_s])."""
    return _isolated("_prepare_job", job, job.get("limit_s", PREPARE_LIMIT_S))


def run_case(job: dict) -> dict:
    """Build and solve one (instance, solver, repeat) in a fresh process; the job dict plus the results."""
    limit = job.get("limit_s") or _hard_limit(job.get("time_limit_s"))
    return {**{k: v for k, v in job.items() if k != "verbose"}, **_isolated("_case_job", job, limit)}


def run_baseline(job: dict) -> dict:
    """One baseline (``method``: exhaustive, greedy or lp) on one prepared instance, in a fresh process."""
    limit = job.get("limit_s") or _hard_limit(job.get("budget_s") or job.get("time_limit_s"))
    return {**{k: v for k, v in job.items() if k != "verbose"}, **_isolated("_baseline_job", job, limit)}


def _hard_limit(time_limit_s: float | None) -> float:
    """Solver limit plus room for building the model and reading the solution back."""
    return 3.0 * (time_limit_s or 600.0) + 120.0


# --------------------------------------------------------------------------- driver


def machine_info() -> dict:
    """Where the numbers come from."""
    import pulp

    info = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "pulp": pulp.__version__, "highspy": _dist_version("highspy")}
    info["code"] = _code_version()
    try:
        with open("/proc/meminfo") as fh:
            info["memory_gb"] = round(int(fh.readline().split()[1]) / 1024 / 1024, 1)
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _code_version() -> dict:
    """The git commit the benchmark ran on and the source files modified since (code in flux)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=False,
                                timeout=10).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", "placement", "solvers", "costmodels",
                                 "topology"], cwd=root, capture_output=True, text=True, check=False,
                                timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "modified": []}
    modified = sorted(line[3:] for line in status.splitlines() if line[:2].strip() and not line.startswith("??"))
    return {"commit": commit or None, "modified": modified}


def _instance_key(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def bench(
    instances: list[str],
    *,
    solvers: list[str] = ("highs", "cbc"),
    repeat: int = 1,
    time_limit_s: float | None = 60.0,
    gap: float | None = None,
    threads: int | None = None,
    baselines: list[str] = (),
    exhaustive_budget_s: float = 60.0,
    workers: int = 1,
    memory_limit_gb: float | None = 12.0,
    prepare_limit_s: float = PREPARE_LIMIT_S,
    work_dir: str | Path | None = None,
    progress=None,
) -> dict:
    """Prepare every instance, run every (solver, repeat) case and the baselines; return all records.

    Returns
    -------
    dict
        ``machine``, ``settings``, ``instances`` (one preparation record each),
        ``cases`` (one per instance × solver × repeat, in that order) and
        ``baselines`` (one per instance × method).
    """
    from placement.studies.executor import run_map

    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise InputError(f"expected baselines among {', '.join(BASELINES)}, got {bad[0]!r}", field="--baselines")
    if repeat < 1:
        raise InputError(f"expected --repeat >= 1, got {repeat}", field="--repeat")
    tmp = None
    if work_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="placement-bench-")
        work_dir = tmp.name
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    try:
        mem = {"memory_limit_mb": memory_limit_gb * 1024} if memory_limit_gb else {}
        prep_jobs = [{"instance": str(p), "problem_path": str(work / f"problem-{_instance_key(p)}.pkl"),
                      "limit_s": prepare_limit_s, **mem} for p in instances]
        preps = [o.value if o.ok else {"status": "error", "error": o.error, "path": j["instance"]}
                 for o, j in zip(run_map(prepare, prep_jobs, workers=workers, progress=progress), prep_jobs)]
        meta_keys = ("instance", "domains", "groups", "chips", "chip_types", "classes", "columns", "candidates_s")
        cases, base_jobs = [], []
        for prep in preps:
            if prep.get("status") != "ok":
                continue
            meta = {k: prep[k] for k in meta_keys}
            for solver in solvers:
                for r in range(repeat):
                    cases.append({**meta, "solver": solver, "repeat": r, "problem_path": prep["problem_path"],
                                  "time_limit_s": time_limit_s, "gap": gap, "threads": threads, **mem})
            for method in baselines:
                base_jobs.append({**meta, "method": method, "problem_path": prep["problem_path"],
                                  "budget_s": exhaustive_budget_s if method == "exhaustive" else None,
                                  "time_limit_s": time_limit_s, **mem})
        results = [o.value if o.ok else {**j, "status": "error", "error": o.error}
                   for o, j in zip(run_map(run_case, cases, workers=workers, progress=progress), cases)]
        base = [o.value if o.ok else {**j, "status": "error", "error": o.error}
                for o, j in zip(run_map(run_baseline, base_jobs, workers=workers, progress=progress), base_jobs)]
    finally:
        if tmp is not None:
            tmp.cleanup()
    for rows in (results, base):
        for row in rows:
            row.pop("problem_path", None)
        mark_out_of_memory(rows, memory_limit_gb)
    for prep in preps:
        prep.pop("problem_path", None)
    _attach_reference(results, base)
    return {
        "machine": machine_info(),
        "settings": {"solvers": list(solvers), "repeat": repeat, "time_limit_s": time_limit_s, "gap": gap,
                     "threads": threads, "baselines": list(baselines), "exhaustive_budget_s": exhaustive_budget_s,
                     "workers": workers, "memory_limit_gb": memory_limit_gb, "prepare_limit_s": prepare_limit_s,
                     "peak_memory": "ru_maxrss of a fresh process per case (Python + in-process HiGHS); "
                                    "CBC's own peak as solver_child_peak_mb (RUSAGE_CHILDREN)"},
        "instances": preps,
        "cases": results,
        "baselines": base,
    }


def mark_out_of_memory(rows: list[dict], memory_limit_gb: float | None) -> None:
    """Relabel failed jobs as ``out_of_memory``: a MemoryError, HiGHS' "Memory limit reached", or a
    crash (CBC's binary inherits the cap) with a peak within 10 % of the per-job cap.

    Examples
    --------
    >>> rows = [{"status": "error", "message": "highs: Memory limit reached"},
    ...         {"status": "error", "message": "cbc: crashed", "solver_child_peak_mb": 11958.0},
    ...         {"status": "error", "error": "ValueError: x", "peak_rss_mb": 90.0}]
    >>> mark_out_of_memory(rows, 12.0); [r["status"] for r in rows]
    ['out_of_memory', 'out_of_memory', 'error']
    """
    for row in rows:
        if row.get("status") not in ("error", "killed"):
            continue
        text = f"{row.get('error', '')} {row.get('message', '')}"
        peak = max(row.get("peak_rss_mb") or 0.0, row.get("solver_child_peak_mb") or 0.0)
        near_cap = bool(memory_limit_gb) and peak >= 0.9 * memory_limit_gb * 1024
        if "MemoryError" in text or "Memory limit" in text or (row["status"] == "error" and near_cap):
            row["status"] = "out_of_memory"


def _attach_reference(cases: list[dict], base: list[dict]) -> None:
    """Give each baseline the best MILP objective of its instance and its gap to it."""
    best: dict[str, float] = {}
    proven: dict[str, bool] = {}
    for c in cases:
        if c.get("objective") is not None and c.get("status") in ("optimal", "feasible", "time_limit"):
            k = c["instance"]
            if k not in best or c["objective"] < best[k]:
                best[k] = c["objective"]
            proven[k] = proven.get(k, False) or c["status"] == "optimal"
    for b in base:
        ref = best.get(b["instance"])
        b["milp_objective"] = ref
        b["milp_proven_optimal"] = proven.get(b["instance"], False)
        obj = b.get("objective")
        if ref and obj is not None and str(b.get("method", "")).startswith("lp"):
            b["gap_to_milp"] = round((obj - ref) / ref, 6)  # integrality gap: <= 0
            b["reaches_milp_optimum"] = None
        elif ref and obj is not None:
            b["gap_to_milp"] = round((obj - ref) / ref, 6)
            b["reaches_milp_optimum"] = bool(abs(obj - ref) <= 1e-6 * max(1.0, abs(ref)))
        else:
            b["gap_to_milp"] = None
            b["reaches_milp_optimum"] = None


# --------------------------------------------------------------------------- reporting


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
    if x is None:
        return "—"
    if isinstance(x, float):
        if x == 0:
            return "0"
        if abs(x) >= 1e4:
            return f"{x:,.0f}"
        return f"{x:.{digits}g}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


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
                     "—" if r.get("gap") is None else f"{100 * r['gap']:.3g}%",
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
                     "—" if gap is None else f"{100 * gap:.3g}%",
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


def summary_table(summary: list[dict], title: str = "placement bench"):
    """A rich table of the summary rows."""
    from rich.table import Table

    rows = table_rows(summary)
    t = Table(title=title)
    for h in rows[0]:
        t.add_column(h, justify="left" if h in ("instance", "solver", "status") else "right")
    for r in rows[1:]:
        t.add_row(*r)
    return t


def scaling_plot(summary: list[dict], path: str | Path, x: str = "domains", title: str | None = None,
                 preps: list[dict] | None = None) -> Path:
    """Log-log plot of solve (solid) and build (dashed) time against ``x`` per solver; candidates dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    solvers = sorted({r["solver"] for r in summary})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, solver in enumerate(solvers):
        pts = sorted((r[x], r.get("solve_s"), r.get("build_s"), r.get("status")) for r in summary
                     if r["solver"] == solver and isinstance(r.get("solve_s"), (int, float)))
        if not pts:
            continue
        c = colors[i % len(colors)]
        ax.plot([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], "o-", color=c, label=f"{solver} solve")
        ax.plot([p[0] for p in pts], [max(p[2], 1e-3) for p in pts], "s--", color=c, alpha=0.7,
                label=f"{solver} model build")
        for xv, yv, _, st in pts:
            if st != "optimal":
                ax.annotate(st, (xv, max(yv, 1e-3)), textcoords="offset points", xytext=(4, 4), fontsize=7)
    seen = {}
    for r in summary:
        if isinstance(r.get("candidates_s"), (int, float)):
            seen[r[x]] = r["candidates_s"]
    if seen:
        xs = sorted(seen)
        ax.plot(xs, [max(seen[v], 1e-3) for v in xs], "^:", color="gray", label="candidates (all solvers)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel({"domains": "scale-up domains in the fleet", "groups": "domain groups (MILP sites)"}.get(x, x))
    ax.set_ylabel("wall time (s)")
    ax.set_title(title or "placement bench: time vs fleet size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- CLI


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def generate_sizes(sizes: list[int], out_dir: Path, *, family: str, chip_types: int | list[str], classes: int,
                   model: str,
                   modes: list[str], seed: int, load: float | None = None) -> list[Path]:
    """Write one generated instance per size into ``out_dir``; returns the paths."""
    from placement.bench.generate import DEFAULT_LOAD, build_instance, write_instance

    paths = []
    for n in sizes:
        doc = build_instance(domains=n, chip_types=chip_types, classes=classes, family=family, seed=seed,
                             model=model, modes=modes, load=load or DEFAULT_LOAD)
        path = out_dir / f"{doc['name']}.yaml"
        write_instance(doc, path)
        paths.append(path)
    return paths


def bench_command(
    instances: Annotated[list[Path] | None, typer.Argument(help="instance files (or use --sizes)")] = None,
    sizes: Annotated[str | None, typer.Option("--sizes", help="generate fleets of these domain counts, e.g. "
                                                              "10,100,1000")] = None,
    solvers: Annotated[str, typer.Option("--solvers", help="comma list: cbc,highs or PuLP names")] = "cbc,highs",
    repeat: Annotated[int, typer.Option("--repeat", help="runs per instance and solver")] = 1,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="solver seconds per case")] = 60.0,
    gap: Annotated[float | None, typer.Option("--gap", help="relative MIP gap to stop at (default: prove "
                                                            "optimality)")] = None,
    threads: Annotated[int | None, typer.Option("--threads", help="solver threads")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write all records here")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="scaling plot PNG")] = None,
    plot_x: Annotated[str, typer.Option("--plot-x", help="x axis of the plot: domains | groups")] = "domains",
    title: Annotated[str | None, typer.Option("--title", help="plot title")] = None,
    markdown_path: Annotated[Path | None, typer.Option("--markdown", help="write the tables as markdown here")]
    = None,
    baselines: Annotated[str | None, typer.Option("--baselines", help="comma list: exhaustive,greedy,lp")] = None,
    exhaustive_budget: Annotated[float, typer.Option("--exhaustive-budget", help="seconds")] = 60.0,
    workers: Annotated[int, typer.Option("--workers", help="jobs in parallel (1 = clean timings)")] = 1,
    memory_limit: Annotated[float | None, typer.Option("--memory-limit", help="GB of address space per job "
                                                                              "(0 = none)")] = 12.0,
    prepare_limit: Annotated[float, typer.Option("--prepare-limit", help="seconds per candidate generation")]
    = PREPARE_LIMIT_S,
    family: Annotated[str, typer.Option("--family", help="with --sizes: leaf-spine | rail | mixed | uniform")]
    = "leaf-spine",
    chip_types: Annotated[int, typer.Option("--chip-types", help="with --sizes")] = 8,
    chips: Annotated[str | None, typer.Option("--chips", help="with --sizes: chip names (overrides "
                                                              "--chip-types)")] = None,
    classes: Annotated[int, typer.Option("--classes", help="with --sizes")] = 6,
    model: Annotated[str, typer.Option("--model", help="with --sizes")] = "llama-3.1-70b",
    modes: Annotated[str | None, typer.Option("--modes", help="with --sizes: comma list (default all)")] = None,
    seed: Annotated[int, typer.Option("--seed", help="with --sizes")] = 0,
    instances_dir: Annotated[Path | None, typer.Option("--instances-dir", help="where generated instances go "
                                                                               "(default: next to --json)")]
    = None,
) -> None:
    """Benchmark solvers on instances: build and solve time, status, gap, model size, peak memory."""
    from rich.console import Console

    from placement.core.output import write_atomic
    from placement.core.schema import MODES

    console = Console(width=None if sys.stdout.isatty() else 220)
    paths = [str(p) for p in instances or []]
    if sizes:
        try:
            size_list = [int(s) for s in _csv(sizes)]
        except ValueError:
            raise InputError(f"expected comma-separated integers, got {sizes!r}", field="--sizes") from None
        mode_list = _csv(modes) or list(MODES)
        out_dir = instances_dir or (json_path.parent if json_path else Path(tempfile.mkdtemp(prefix="bench-inst-")))
        out_dir.mkdir(parents=True, exist_ok=True)
        kinds = _csv(chips) or chip_types
        paths += [str(p) for p in generate_sizes(size_list, out_dir, family=family, chip_types=kinds,
                                                 classes=classes, model=model, modes=mode_list, seed=seed)]
    if not paths:
        raise InputError("expected instance files or --sizes", field="INSTANCES")
    solver_list = _csv(solvers)
    if not solver_list:
        raise InputError("expected at least one solver", field="--solvers")
    if time_limit is not None and time_limit <= 0:
        raise InputError(f"expected seconds > 0, got {time_limit}", field="--time-limit")

    def progress(done: int, total: int) -> None:
        console.print(f"  {done}/{total} done", highlight=False)

    result = bench(paths, solvers=solver_list, repeat=repeat, time_limit_s=time_limit, gap=gap, threads=threads,
                   baselines=_csv(baselines), exhaustive_budget_s=exhaustive_budget, workers=workers,
                   memory_limit_gb=memory_limit or None, prepare_limit_s=prepare_limit, progress=progress)
    # The exact command line when run as the CLI; a library or test caller gets the bare name.
    from_cli = bool(sys.argv) and Path(sys.argv[0]).name == "placement"
    result["command"] = " ".join(["placement", *sys.argv[1:]]) if from_cli else "placement bench"
    for prep in result["instances"]:
        if prep.get("status") != "ok":
            console.print(f"[red]preparation failed[/red] {prep.get('path')}: {prep.get('error')}", highlight=False)
    summary = summarise(result["cases"])
    console.print(summary_table(summary))
    if result["baselines"]:
        from rich.table import Table

        rows = baseline_rows(result["baselines"])
        t = Table(title="baselines")
        for h in rows[0]:
            t.add_column(h)
        for r in rows[1:]:
            t.add_row(*r)
        console.print(t)
    if json_path is not None:
        write_atomic(json_path, json.dumps(result, indent=2, default=str))
        console.print(f"wrote {json_path}", highlight=False)
    if markdown_path is not None:
        write_atomic(markdown_path, report_markdown(result))
        console.print(f"wrote {markdown_path}", highlight=False)
    if plot is not None and summary:
        if plot_x not in ("domains", "groups"):
            raise InputError(f"expected domains or groups, got {plot_x!r}", field="--plot-x")
        scaling_plot(summary, plot, x=plot_x, title=title, preps=result["instances"])
        console.print(f"wrote {plot}", highlight=False)


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a ``--json`` file back."""
    return json.loads(Path(path).read_text())
