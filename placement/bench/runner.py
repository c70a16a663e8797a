"""Solver benchmarks: per instance and solver, time (build and solve apart), outcome, model size, memory.

``placement bench`` (and :func:`bench`) runs, for every instance:

1. *preparation*, once per instance: load, candidate generation and the
   solver-neutral :class:`~solvers.problem.Problem` (timed as
   ``candidates_s``; the problem is written as JSON for the cases — data, never a pickle);
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

The tables of the results are in :mod:`placement.bench.report`, the scaling chart in
:mod:`placement.bench.plots`, the options record of ``placement bench`` in :mod:`placement.bench.options`.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from placement.core.instance.errors import InputError

__all__ = [
    "BASELINES",
    "PREPARE_LIMIT_S",
    "bench",
    "machine_info",
    "mark_out_of_memory",
    "prepare",
    "run_baseline",
    "run_case",
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
    from placement.core.instance.context import Context
    from placement.core.instance.loading import load_instance
    from placement.core.pipeline.problem import build_problem

    start = time.perf_counter()
    inst = load_instance(job["instance"])
    ctx = Context.of(inst, job["instance"])
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    problem, cands = build_problem(ctx)
    candidates_s = time.perf_counter() - start
    write_problem(problem, job["problem_path"])
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


def write_problem(problem, path: str) -> None:
    """Write a :class:`~solvers.problem.Problem` for another process to read (:func:`read_problem`); an
    unbounded pair latency is written as ``Infinity``, which the reader takes back."""
    import pydantic_core

    Path(path).write_bytes(pydantic_core.to_json(problem.model_dump(mode="python"), inf_nan_mode="constants"))


def read_problem(path: str):
    """The :class:`~solvers.problem.Problem` :func:`write_problem` wrote: validated data, nothing executed.

    Examples
    --------
    >>> import tempfile
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.5, power_w_per_unit=1.0)])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_problem(p, f"{d}/p.json")
    ...     read_problem(f"{d}/p.json") == p
    True
    """
    from solvers.problem import Problem

    return Problem.model_validate_json(Path(path).read_text())


def _case_job(job: dict) -> dict:
    from solvers.twolevel import solve

    problem = read_problem(job["problem_path"])
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

    problem = read_problem(job["problem_path"])
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

    root = Path(__file__).resolve().parents[2]  # the repository: placement/bench/runner.py
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
        prep_jobs = [{"instance": str(p), "problem_path": str(work / f"problem-{_instance_key(p)}.json"),
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
