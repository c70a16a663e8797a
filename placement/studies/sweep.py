"""What-if sweeps over any instance field: the ``sweep`` command, its table, CSV and JSON.

A sweep is many independent solves of modified copies of one instance. Every
point's instance is built and validated (:func:`placement.core.loading.parse_instance`)
**before any solve**, so a bad path, an empty range or a wrong type fails at
once; the solves then run in parallel on :func:`placement.studies.executor.run_map`
(a local process pool, or a Ray cluster) and come back in input order. A point
that fails is reported with status ``failed`` and its error — never dropped.
Results do not depend on the executor or the number of workers (no timings
are stored in them; a ``--time-limit`` that is hit is the one exception).

The grammar of paths and values, and the building of every point's instance,
are in :mod:`placement.studies.whatif`; SLO Pareto sweeps and frontiers in
:mod:`placement.studies.pareto`. This module also holds what both commands share: the
result model (:class:`Point`, :class:`SweepResult`), the per-point solve
(:func:`solve_job`), the outputs and the CLI options.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field

from placement.core.errors import InputError
from placement.modes import labels
from placement.studies.whatif import (
    Axis,
    build_points,
    instance_document,
    parse_assignment,
    price_warnings,
)

__all__ = [
    "MODE_LABELS",
    "Job",
    "Point",
    "SweepResult",
    "run_sweep",
    "solve_job",
    "summarise_plan",
    "to_csv",
]

#: Serving mode name -> its label in tables and charts.
MODE_LABELS = labels()


# ---------------------------------------------------------------------------------------------
# results (shared with placement.studies.pareto)


class AxisInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    paths: list[str]
    values: list[Any]
    log: bool


class Point(BaseModel):
    """One solve of a sweep: the values set, the series, and what the plan says."""

    model_config = ConfigDict(extra="forbid")

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


class SweepResult(BaseModel):
    """Every point of a sweep (or Pareto sweep), in grid order then series order."""

    model_config = ConfigDict(extra="forbid")

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
    from placement.core.solve import solve

    plan = solve(job.instance, backend=job.backend, time_limit_s=job.time_limit_s, gap=job.gap, source=job.source)
    tokens = {c.name: c.rate_rps * c.output_tokens for c in job.instance.workload.classes}
    return summarise_plan(plan, list(job.focus), tokens)


# ---------------------------------------------------------------------------------------------
# running


def _execute(jobs: list[Job], meta: list[dict], *, executor: str, workers: int | None, address: str | None,
             progress) -> list[Point]:
    from placement.studies.executor import run_map

    outcomes = run_map(solve_job, jobs, executor=executor, workers=workers, address=address, progress=progress)
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
    backend: str = "cbc",
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
    from placement.studies.pareto import mark_frontier

    mark_frontier(result)
    return result


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


def _fmt(x, spec=".3g") -> str:
    return "-" if x is None else format(x, spec)


def _mix(d: dict[str, Any], pct: bool = False) -> str:
    if pct:
        return ", ".join(f"{MODE_LABELS.get(k, k)} {v:.0%}" for k, v in d.items() if v >= 0.005)
    return ", ".join(f"{v}×{k}" for k, v in d.items())


def print_result(console, result: SweepResult) -> None:
    from rich.table import Table
    from rich.text import Text

    title = (f"{result.command} of {result.instance}: " + ", ".join(f"{a.label} × {len(a.values)}"
                                                                   for a in result.axes)
             + (f" (classes {', '.join(result.focus_classes)})" if result.command == "pareto" else ""))
    t = Table(title=title)
    cols = (["series"] if len(result.series) > 1 else []) + [a.label.split(".")[-1] if result.command == "pareto"
                                                              else a.label for a in result.axes]
    pareto = result.command == "pareto"
    cols += ["status", "$/h", "$/M tok", "tok/s/chip", "tok/s/user", "kW", "chips by type", "modes"]
    cols += ["frontier"] if pareto else []
    for c in cols:
        t.add_column(c, overflow="fold")
    for p in result.points:
        row = ([p.series] if len(result.series) > 1 else []) + [str(p.values.get(a.label)) for a in result.axes]
        if p.ok:
            row += [p.status, _fmt(p.cost_usd_per_hour, ",.2f"), _fmt(p.usd_per_million_output_tokens, ".3f"),
                    _fmt(p.tokens_per_s_per_chip, ",.1f"), _fmt(p.tokens_per_s_per_user, ",.1f"),
                    _fmt(None if p.power_w is None else p.power_w / 1e3, ",.1f"), _mix(p.chips_by_type),
                    _mix(p.modes, pct=True)]
            row += [("★" if p.frontier else "") + ("◆" if p.frontier_throughput else "")
                    + (" H" if p.envelope else "")] if pareto else []
        else:
            row += [Text(p.status, style="red" if p.status in ("failed", "error") else "")] + [""] * 6
            row += [Text(p.message[:100])] + ([""] if pareto else [])
        t.add_row(*row)
    console.print(t)
    if pareto:
        console.print("★ cheapest $/M tokens at its interactivity (cost frontier of its series); "
                      "◆ most tokens/s per chip at its interactivity (throughput frontier of its series); "
                      "H on the heterogeneous instance's cost frontier (over every series' plans: each is also "
                      "a plan of the instance)", highlight=False)
    failed = [p for p in result.points if p.status in ("failed", "error")]
    if failed:
        console.print(f"[red]{len(failed)} point(s) failed[/red]; they are listed above and in the outputs")
    for w in result.warnings:
        console.print(Text("warning: " + w, style="yellow"))


# ---------------------------------------------------------------------------------------------
# CLI (registered by placement.cli.app)

_Exec = Annotated[str, typer.Option("--executor", help="local (process pool) | ray")]
_Addr = Annotated[str | None, typer.Option("--address", help="Ray cluster address (auto, ray://host:10001)")]
_Workers = Annotated[int | None, typer.Option("--workers", help="parallel workers (default: CPU count)")]
_Solver = Annotated[str, typer.Option("--solver", help="cbc | highs | any PuLP backend name")]
_TL = Annotated[float | None, typer.Option("--time-limit", help="seconds per solve (breaks determinism if hit)")]
_Gap = Annotated[float | None, typer.Option("--gap", help="relative MIP gap per solve")]
_Plot = Annotated[Path | None, typer.Option("--plot", help="write a PNG chart here")]
_Json = Annotated[Path | None, typer.Option("--json", help="write every point as JSON here")]
_Csv = Annotated[Path | None, typer.Option("--csv", help="write every point as CSV here")]
_Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no table")]
_Dry = Annotated[bool, typer.Option("--dry-run", help="validate every point, solve nothing")]
_Inst = Annotated[Path, typer.Argument(help="instance file (YAML or JSON)")]


def plain_errors(fn):
    """Print a :class:`PlacementError` verbatim (no rich markup or emoji: specs such as 5:100:20
    must not turn into pictures) and exit with its code; ``placement.cli.app.guarded`` handles the rest."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from placement.core.errors import PlacementError

        try:
            return fn(*args, **kwargs)
        except PlacementError as e:
            from placement.cli.app import err

            err.print("error: " + str(e), markup=False, emoji=False, highlight=False, soft_wrap=True)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def _check_common(executor: str, workers: int | None, time_limit: float | None, gap: float | None,
                  outputs: list[Path | None]) -> None:
    from placement.studies.executor import EXECUTORS

    if executor not in EXECUTORS:
        raise InputError(f"expected one of {', '.join(EXECUTORS)}, got {executor!r}", field="--executor")
    if workers is not None and workers < 1:
        raise InputError(f"expected workers >= 1, got {workers}", field="--workers")
    if time_limit is not None and time_limit <= 0:
        raise InputError(f"expected seconds > 0, got {time_limit}", field="--time-limit")
    if gap is not None and not 0 <= gap < 1:
        raise InputError(f"expected a relative gap in [0, 1), got {gap}", field="--gap")
    for p in outputs:
        if p is not None and not p.parent.exists():
            raise InputError(f"folder {p.parent} does not exist", file=str(p))


class progress_bar:
    """A rich progress bar on stderr, as a ``progress(done, total)`` callback."""

    def __init__(self, description: str, total: int):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from placement.cli.app import err

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
        self.total = total
        self.task = self.progress.add_task(description, total=total)

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def __call__(self, done: int, total: int) -> None:
        self.progress.update(self.task, completed=done, total=total)


def _write_outputs(result: SweepResult, json_path, csv_path, plot_path, plot_fn) -> None:
    from placement.core.output import write_atomic

    if json_path is not None:
        write_atomic(json_path, result.model_dump_json(indent=2))
    if csv_path is not None:
        write_atomic(csv_path, to_csv(result))
    if plot_path is not None:
        plot_fn(result, plot_path)


def _finish(result: SweepResult) -> None:
    from placement.core.errors import EXIT_SOLVER

    if any(p.status in ("failed", "error") for p in result.points):
        raise typer.Exit(EXIT_SOLVER)


@plain_errors
def sweep_cli(
    instance: _Inst,
    set_: Annotated[list[str], typer.Option("--set", help="PATH=VALUES, e.g. workload.classes.chat.rate_rps="
                                                          "10:1000:log10 (repeatable: a grid)")],
    plot: _Plot = None,
    json_path: _Json = None,
    csv_path: _Csv = None,
    solver: _Solver = "cbc",
    time_limit: _TL = None,
    gap: _Gap = None,
    executor: _Exec = "local",
    address: _Addr = None,
    workers: _Workers = None,
    quiet: _Quiet = False,
    dry_run: _Dry = False,
) -> None:
    """What-if: solve the instance across a grid of values of any of its fields."""
    from placement.cli.app import err, out
    from placement.cli.plots import plot_sweep
    from placement.core.loading import load_instance

    _check_common(executor, workers, time_limit, gap, [plot, json_path, csv_path])
    inst = load_instance(instance)
    kw = {"source": str(instance), "backend": solver, "time_limit_s": time_limit, "gap": gap, "executor": executor,
              "workers": workers, "address": address}
    plan = run_sweep(inst, set_, validate_only=True, **kw)
    n = math.prod(len(a.values) for a in plan.axes)
    if dry_run:
        out.print(f"[green]ok[/green] {n} points; every point is a valid instance", highlight=False)
        for w in plan.warnings:
            err.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
        return
    with progress_bar(f"sweep {inst.name}", n) as bar:
        result = run_sweep(inst, set_, progress=bar, **kw)
    _write_outputs(result, json_path, csv_path, plot, plot_sweep)
    if not quiet:
        print_result(out, result)
    _finish(result)
