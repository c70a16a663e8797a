"""What-if sweeps over any instance field: the points, their solves, the result and its CSV.

A sweep is many independent solves of modified copies of one instance. Every
point's instance is built and validated (:func:`placement.core.instance.loading.parse_instance`)
**before any solve**, so a bad path, an empty range or a wrong type fails at
once; the solves then run in parallel on :func:`placement.studies.executor.run_map`
(a local process pool, or a Ray cluster) and come back in input order. A point
that fails is reported with status ``failed`` and its error — never dropped.
Results do not depend on the executor or the number of workers (no timings
are stored in them; a ``--time-limit`` that is hit is the one exception).

The grammar of paths and values, and the building of every point's instance,
are in :mod:`placement.studies.whatif`; SLO Pareto sweeps and frontiers in
:mod:`placement.studies.pareto`. This module also holds what both share: the
result model (:class:`Point`, :class:`SweepResult`), the per-point solve
(:func:`solve_job`) and the CSV. The ``sweep`` command is :mod:`placement.cli.studies`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from placement.core.instance.errors import InputError
from placement.modes import labels
from placement.studies.whatif import (
    Axis,
    build_points,
    instance_document,
    parse_assignment,
    price_warnings,
)
from solvers.backends import DEFAULT_BACKEND
from topology.records import MutableRecord

__all__ = [
    "MODE_LABELS",
    "Job",
    "Point",
    "SweepResult",
    "envelope",
    "mark_frontier",
    "run_jobs",
    "run_sweep",
    "solve_job",
    "summarise_plan",
    "to_csv",
]

#: Serving mode name -> its label in tables and charts.
MODE_LABELS = labels()


# ---------------------------------------------------------------------------------------------
# results (shared with placement.studies.pareto)


class AxisInfo(MutableRecord):

    label: str
    paths: list[str]
    values: list[Any]
    log: bool


class Point(MutableRecord):
    """One solve of a sweep: the values set, the series, and what the plan says."""


    index: int = Field(description="position of the values in the sweep grid")
    series: str = Field(description="'heterogeneous' (the instance) or a variant beside it")
    kind: str = Field(description="full | homogeneous | mode")
    values: dict[str, Any]
    status: str = Field(description="optimal | feasible | time_limit | infeasible | error | failed")
    verified: bool = False
    cost_usd_per_hour: float | None = None
    usd_per_million_output_tokens: float | None = None
    power_w: float | None = None
    chips: int | None = None
    chips_by_type: dict[str, int] = Field(default_factory=dict)
    output_tokens_per_s: float | None = None
    tokens_per_s_per_chip: float | None = None
    tpot_ms: float | None = Field(default=None, description="predicted TPOT, slowest of the focus classes")
    ttft_ms: float | None = Field(default=None, description="predicted TTFT, slowest of the focus classes")
    tokens_per_s_per_user: float | None = Field(default=None, description="1000 / tpot_ms")
    modes: dict[str, float] = Field(default_factory=dict, description="mode -> share of output tokens")
    class_modes: dict[str, dict[str, float]] = Field(default_factory=dict)
    class_tpot_ms: dict[str, float | None] = Field(default_factory=dict)
    stages: dict[str, dict[str, int]] = Field(default_factory=dict, description="stage -> chip -> chips")
    frontier: bool = Field(default=False, description="on its series' $/M-token frontier")
    frontier_throughput: bool = Field(default=False, description="on its series' tokens/s-per-chip frontier")
    envelope: bool = Field(default=False, description="on the heterogeneous instance's $/M-token frontier")
    envelope_throughput: bool = Field(default=False,
                                      description="on the heterogeneous instance's tokens/s-per-chip frontier")
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("optimal", "feasible", "time_limit") and self.verified


class SweepResult(MutableRecord):
    """Every point of a sweep (or Pareto sweep), in grid order then series order."""


    command: str
    instance: str
    source: str
    backend: str
    axes: list[AxisInfo]
    focus_classes: list[str]
    series: list[str]
    fleet_chips: list[str] = Field(default_factory=list, description="chip types of the instance's fleet")
    overrides: dict[str, Any] = Field(default_factory=dict, description="fields fixed for every point (--set)")
    points: list[Point]
    warnings: list[str] = Field(default_factory=list)

    def series_points(self, series: str) -> list[Point]:
        return [p for p in self.points if p.series == series]

    def canonical_json(self) -> str:
        """Everything but the source path: byte-identical across executors and runs."""
        return self.model_dump_json(exclude={"source"})


def _round(x: float | None, digits: int = 9) -> float | None:
    if x is None:
        return None
    return float(f"{x:.{digits}g}")


def summarise_plan(plan, focus: list[str] | None = None,
                   tokens_by_class: dict[str, float] | None = None) -> dict:
    """The per-point numbers of a plan (a plain dict, small enough to ship back from a worker).

    ``modes`` are shares of output tokens when ``tokens_by_class`` (class ->
    output tokens/s) is given, of requests otherwise.
    """
    ok = plan.status in ("optimal", "feasible", "time_limit") and plan.verified
    message = "; ".join(x for x in [plan.message or "", *plan.diagnosis] if x)
    out: dict[str, Any] = {"status": plan.status, "verified": plan.verified, "message": message}
    if not ok:
        return out
    focus = focus or [c.name for c in plan.classes]
    weight = {c.name: (tokens_by_class or {}).get(c.name, c.rate_rps) for c in plan.classes}
    total = sum(weight.values()) or 1.0
    modes: dict[str, float] = {}
    for c in plan.classes:
        for m, share in c.modes.items():
            modes[m] = modes.get(m, 0.0) + share * weight[c.name] / total
    tpots = [c.tpot_ms for c in plan.classes if c.name in focus and c.tpot_ms is not None]
    ttfts = [c.ttft_ms for c in plan.classes if c.name in focus and c.ttft_ms is not None]
    tpot = max(tpots) if tpots else None
    stages: dict[str, dict[str, int]] = {}
    for p in plan.pools:
        stages.setdefault(p.stage, {})
        stages[p.stage][p.chip] = stages[p.stage].get(p.chip, 0) + p.chips
    tokens = plan.output_tokens_per_s or 0.0
    out.update(
        cost_usd_per_hour=_round(plan.cost_usd_per_hour),
        usd_per_million_output_tokens=_round(plan.usd_per_million_output_tokens),
        power_w=_round(plan.power_w),
        chips=plan.chips,
        chips_by_type=dict(sorted(plan.chips_by_type.items())),
        output_tokens_per_s=_round(tokens),
        tokens_per_s_per_chip=_round(tokens / plan.chips) if plan.chips else None,
        tpot_ms=_round(tpot),
        ttft_ms=_round(max(ttfts)) if ttfts else None,
        tokens_per_s_per_user=_round(1000.0 / tpot) if tpot else None,
        modes={m: _round(v) for m, v in sorted(modes.items())},
        class_modes={c.name: {m: _round(v) for m, v in sorted(c.modes.items())} for c in plan.classes},
        class_tpot_ms={c.name: _round(c.tpot_ms) for c in plan.classes},
        stages={s: dict(sorted(v.items())) for s, v in sorted(stages.items())},
    )
    return out


@dataclass(frozen=True)
class Job:
    """What a worker needs to solve one point (picklable)."""

    instance: Any
    backend: str
    time_limit_s: float | None
    gap: float | None
    source: str
    focus: tuple[str, ...]


def solve_job(job: Job) -> dict:
    """Solve one point and summarise it (runs in a worker)."""
    from placement.core.pipeline.solve import solve

    plan = solve(job.instance, backend=job.backend, time_limit_s=job.time_limit_s, gap=job.gap, source=job.source)
    tokens = {c.name: c.rate_rps * c.output_tokens for c in job.instance.workload.classes}
    return summarise_plan(plan, list(job.focus), tokens)


# ---------------------------------------------------------------------------------------------
# running


def run_jobs(jobs: list[Job], *, executor: str, workers: int | None, address: str | None, progress) -> list:
    """:func:`placement.studies.executor.run_map` of :func:`solve_job` over ``jobs``; before a local pool
    forks, the candidates several jobs share are generated once here and inherited by the workers
    (:func:`placement.core.replicas.candidate_cache.share_generations`)."""
    import multiprocessing
    import os

    from placement.studies.executor import run_map

    if (executor == "local" and len(jobs) > 1 and (workers or os.cpu_count() or 1) > 1
            and multiprocessing.get_start_method() == "fork"):
        from placement.core.replicas.candidate_cache import share_generations

        share_generations([job.instance for job in jobs])
    return run_map(solve_job, jobs, executor=executor, workers=workers, address=address, progress=progress)


def _execute(jobs: list[Job], meta: list[dict], *, executor: str, workers: int | None, address: str | None,
             progress) -> list[Point]:
    outcomes = run_jobs(jobs, executor=executor, workers=workers, address=address, progress=progress)
    points = []
    for m, o in zip(meta, outcomes):
        if o.ok:
            points.append(Point(**m, **o.value))
        else:
            points.append(Point(**m, status="failed", message=o.error or "failed"))
    return points


def run_sweep(
    inst,
    assignments: list[str],
    *,
    source: str = "<instance>",
    backend: str = DEFAULT_BACKEND,
    time_limit_s: float | None = None,
    gap: float | None = None,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress=None,
    validate_only: bool = False,
) -> SweepResult:
    """Solve the instance at every point of the ``PATH=VALUES`` grid."""
    axes = []
    for text in assignments:
        path, values, log = parse_assignment(text)
        axes.append(Axis(label=path, paths=(path,), values=tuple(values), log=log, spec=text))
    if not axes:
        raise InputError("expected at least one --set PATH=VALUES", field="--set")
    labels = [a.label for a in axes]
    if len(set(labels)) != len(labels):
        raise InputError("the same path is set twice", field="--set")
    pts = build_points(instance_document(inst), axes, source)
    jobs, meta = [], []
    for i, (values, pinst) in enumerate(pts):
        jobs.append(Job(pinst, backend, time_limit_s, gap, source, tuple(c.name for c in pinst.workload.classes)))
        meta.append({"index": i, "series": "heterogeneous", "kind": "full", "values": values})
    result = SweepResult(command="sweep", instance=inst.name, source=source, backend=backend,
                         axes=[AxisInfo(label=a.label, paths=list(a.paths), values=list(a.values), log=a.log)
                               for a in axes],
                         focus_classes=[c.name for c in inst.workload.classes], series=["heterogeneous"],
                         fleet_chips=sorted({d.chip for d in inst.hardware.domains}),
                         points=[], warnings=price_warnings(inst, axes))
    if validate_only:
        return result
    result.points = _execute(jobs, meta, executor=executor, workers=workers, address=address, progress=progress)
    mark_frontier(result)
    return result


def _frontier(pts: list[Point], y: str, higher_better: bool) -> set[int]:
    keep = set()
    cand = [(i, p) for i, p in enumerate(pts) if p.ok and p.tokens_per_s_per_user is not None
            and getattr(p, y) is not None]
    for i, p in cand:
        x, v = p.tokens_per_s_per_user, getattr(p, y)
        dominated = False
        for j, q in cand:
            if i == j:
                continue
            qx, qv = q.tokens_per_s_per_user, getattr(q, y)
            better = (qv >= v) if higher_better else (qv <= v)
            strictly = qx > x or ((qv > v) if higher_better else (qv < v))
            if qx >= x and better and strictly:
                dominated = True
                break
        if not dominated:
            keep.add(i)
    return keep


def mark_frontier(result: SweepResult) -> None:
    """Flag Pareto-optimal points: interactivity vs $/M tokens, and vs tokens/s per chip.

    ``frontier*`` — within each series. ``envelope*`` — the frontier of the heterogeneous instance
    itself, taken over the plans of *every* series: a homogeneous fleet or a single mode is a
    restriction of the instance (fewer domain groups, fewer routes), so each of their plans is also a
    plan of the instance at the same SLOs. The SLO sweep only finds the cheapest plan at each SLO, and
    a restricted variant may reach an interactivity the sweep's grid skipped; the envelope keeps it.
    """
    for s in result.series:
        pts = result.series_points(s)
        cost = _frontier(pts, "usd_per_million_output_tokens", higher_better=False)
        thr = _frontier(pts, "tokens_per_s_per_chip", higher_better=True)
        for i, p in enumerate(pts):
            p.frontier = i in cost
            p.frontier_throughput = i in thr
    if any(p.kind == "full" for p in result.points):
        pts = result.points
        cost = _frontier(pts, "usd_per_million_output_tokens", higher_better=False)
        thr = _frontier(pts, "tokens_per_s_per_chip", higher_better=True)
        for i, p in enumerate(pts):
            p.envelope = i in cost
            p.envelope_throughput = i in thr


def envelope(result: SweepResult, throughput: bool = False) -> list[Point]:
    """The heterogeneous instance's frontier (see :func:`mark_frontier`), by rising interactivity,
    one point per distinct (interactivity, value) — the instance's own point when it is one of them."""
    flag = "envelope_throughput" if throughput else "envelope"
    y = "tokens_per_s_per_chip" if throughput else "usd_per_million_output_tokens"
    seen: dict[tuple, Point] = {}
    for p in result.points:
        if getattr(p, flag):
            key = (p.tokens_per_s_per_user, getattr(p, y))
            if key not in seen or (p.kind == "full" and seen[key].kind != "full"):
                seen[key] = p
    return [seen[k] for k in sorted(seen)]


# ---------------------------------------------------------------------------------------------
# outputs


def to_csv(result: SweepResult) -> str:
    """One row per point: swept values, status, numbers, chips by type, mode shares.

    The plan's own latencies are ``predicted_tpot_ms``/``predicted_ttft_ms`` (the
    slowest swept class) and ``predicted_tpot_ms:CLASS``, so they never share a
    header with a swept field such as ``tpot_ms``.
    """
    chips = sorted({c for p in result.points for c in p.chips_by_type})
    modes = sorted({m for p in result.points for m in p.modes})
    classes = sorted({c for p in result.points for c in p.class_tpot_ms})
    head = (["index", "series", "kind"] + [a.label for a in result.axes]
            + ["status", "verified", "cost_usd_per_hour", "usd_per_million_output_tokens", "power_w", "chips",
               "output_tokens_per_s", "tokens_per_s_per_chip", "predicted_tpot_ms", "predicted_ttft_ms",
               "tokens_per_s_per_user",
               "frontier", "frontier_throughput"]
            + [f"chips:{c}" for c in chips] + [f"mode:{m}" for m in modes]
            + [f"predicted_tpot_ms:{c}" for c in classes] + ["message"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)

    def f(x):
        return "" if x is None else x

    for p in result.points:
        w.writerow([p.index, p.series, p.kind] + [f(p.values.get(a.label)) for a in result.axes]
                   + [p.status, p.verified, f(p.cost_usd_per_hour), f(p.usd_per_million_output_tokens),
                      f(p.power_w), f(p.chips), f(p.output_tokens_per_s), f(p.tokens_per_s_per_chip), f(p.tpot_ms),
                      f(p.ttft_ms), f(p.tokens_per_s_per_user), p.frontier, p.frontier_throughput]
                   + [p.chips_by_type.get(c, 0) for c in chips] + [p.modes.get(m, 0) for m in modes]
                   + [f(p.class_tpot_ms.get(c)) for c in classes] + [p.message])
    return buf.getvalue()
