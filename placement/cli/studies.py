"""Commands ``sweep``, ``pareto`` and ``marginal``: options in, a study run, outputs and a table out.

The studies themselves (:mod:`placement.studies.sweep`, :mod:`~placement.studies.pareto`,
:mod:`~placement.studies.marginal`) return results and never print; this module checks the
options, shows a progress bar, writes JSON, CSV and charts, prints the table and picks the exit
code: 4 when any point failed (after writing the outputs), 0 otherwise — infeasible points are
results. Heavy modules (the studies, rich, matplotlib) are imported inside the commands.
"""

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Self

import typer

from placement.cli.options import (
    DEFAULT_SOLVER,
    Addr,
    CsvPath,
    DryRun,
    Executor,
    ExecutorOpt,
    Gap,
    InstanceArg,
    JsonPath,
    PlanArg,
    PlotPath,
    PricesOpt,
    Quiet,
    SolverOpt,
    TimeLimit,
    Workers,
    check_outputs,
    check_run_options,
)
from placement.core.plans.output import refuse_inputs

if TYPE_CHECKING:
    from placement.studies.sweep import SweepResult

__all__ = ["ProgressBar", "marginal_command", "pareto_command", "sweep_command"]


class ProgressBar:
    """A rich progress bar on stderr, as a ``progress(done, total)`` callback for the studies, ``bench`` and
    ``compare``; off when stderr is not a terminal (logs and pipes get no bar)."""

    def __init__(self, description: str, total: int | None):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from placement.cli.consoles import err

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False,
                                 disable=not err.is_terminal)
        self.task = self.progress.add_task(description, total=total)

    def __enter__(self) -> Self:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, done: int, total: int) -> None:
        self.progress.update(self.task, completed=done, total=total)


def _load(instance: Path, prices: str | None):
    """The instance at ``instance`` priced with the set ``--prices`` names (None: its own)."""
    from placement.core.instance.loading import load_instance, with_prices

    return with_prices(load_instance(instance), prices)


def _run_kwargs(instance: Path, solver: str, time_limit: float | None, gap: float | None, executor: Executor,
                address: str | None, workers: int | None) -> dict[str, Any]:
    """What every study takes: source, backend, limits and where to run (plain strings for workers)."""
    return {"source": str(instance), "backend": solver, "time_limit_s": time_limit, "gap": gap,
            "executor": str(executor), "workers": workers, "address": address}


def _write_sweep_outputs(result: "SweepResult", json_path: Path | None, csv_path: Path | None,
                         plot_path: Path | None, plot: Callable[["SweepResult", Path], Path]) -> None:
    from placement.core.plans.output import write_atomic
    from placement.studies.sweep import to_csv

    if json_path is not None:
        write_atomic(json_path, result.model_dump_json(indent=2))
    if csv_path is not None:
        write_atomic(csv_path, to_csv(result))
    if plot_path is not None:
        plot(result, plot_path)


def _exit_if_failed(statuses: list[str]) -> None:
    from placement.core.instance.errors import EXIT_SOLVER

    if any(s in ("failed", "error") for s in statuses):
        raise typer.Exit(EXIT_SOLVER)


def sweep_command(
    instance: InstanceArg,
    set_: Annotated[list[str], typer.Option("--set", help="PATH=VALUES, e.g. workload.classes.chat.rate_rps="
                                                          "10:1000:log10 (repeatable: a grid)")],
    plot: PlotPath = None,
    json_path: JsonPath = None,
    csv_path: CsvPath = None,
    solver: SolverOpt = DEFAULT_SOLVER,
    time_limit: TimeLimit = None,
    gap: Gap = None,
    executor: ExecutorOpt = Executor.local,
    address: Addr = None,
    workers: Workers = None,
    quiet: Quiet = False,
    dry_run: DryRun = False,
    prices: PricesOpt = None,
) -> None:
    """What-if: solve the instance across a grid of values of any of its fields."""
    from placement.cli.consoles import err, out
    from placement.studies.sweep import run_sweep

    check_run_options(time_limit_s=time_limit, gap=gap, workers=workers)
    check_outputs(plot, json_path, csv_path)
    refuse_inputs({"--plot": plot, "--json": json_path, "--csv": csv_path}, [instance])
    inst = _load(instance, prices)
    kw = _run_kwargs(instance, solver, time_limit, gap, executor, address, workers)
    planned = run_sweep(inst, set_, validate_only=True, **kw)
    n = math.prod(len(a.values) for a in planned.axes)
    if dry_run:
        out.print(f"[green]ok[/green] {n} points; every point is a valid instance", highlight=False)
        for w in planned.warnings:
            err.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
        return
    with ProgressBar(f"sweep {inst.name}", n) as bar:
        result = run_sweep(inst, set_, progress=bar, **kw)
    from placement.cli.plots import plot_sweep

    _write_sweep_outputs(result, json_path, csv_path, plot, plot_sweep)
    if not quiet:
        from placement.cli.study_report import print_result

        print_result(out, result)
    _exit_if_failed([p.status for p in result.points])


def pareto_command(
    instance: InstanceArg,
    sweep: Annotated[list[str] | None, typer.Option("--sweep", help="tpot_ms=LO:HI:N | ttft_ms=LO:HI:N "
                                                                    "(repeatable; grammar as for sweep --set)")]
    = None,
    class_: Annotated[list[str] | None, typer.Option("--class", help="sweep only this class (repeatable)")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="PATH=VALUE fixed for every point, e.g. "
                                                                 "workload.classes.chat.rate_rps=1600 (repeatable)")]
    = None,
    variants: Annotated[bool, typer.Option("--variants/--no-variants",
                                           help="also solve each homogeneous fleet and each mode")] = True,
    plot: PlotPath = None,
    json_path: JsonPath = None,
    csv_path: CsvPath = None,
    solver: SolverOpt = DEFAULT_SOLVER,
    time_limit: TimeLimit = None,
    gap: Gap = None,
    executor: ExecutorOpt = Executor.local,
    address: Addr = None,
    workers: Workers = None,
    quiet: Quiet = False,
    dry_run: DryRun = False,
    confidence: Annotated[str | None, typer.Option("--confidence", help="cost of confidence: solve every point "
                                                   "at each error-band level, e.g. 0,0.5,0.8,0.9,0.95 "
                                                   "(0: nominal; the chart is cost against level)")] = None,
    prices: PricesOpt = None,
) -> None:
    """SLO sweep: cost, throughput per chip and interactivity per point, with Pareto frontiers."""
    from placement.cli.consoles import out
    from placement.studies.pareto import parse_confidence_levels, run_pareto

    check_run_options(time_limit_s=time_limit, gap=gap, workers=workers)
    check_outputs(plot, json_path, csv_path)
    refuse_inputs({"--plot": plot, "--json": json_path, "--csv": csv_path}, [instance])
    inst = _load(instance, prices)
    kw = {"classes": class_ or None, "overrides": set_ or None, "variants": variants,
          "confidence": None if confidence is None else parse_confidence_levels(confidence),
          **_run_kwargs(instance, solver, time_limit, gap, executor, address, workers)}
    sweep = sweep or []
    planned = run_pareto(inst, sweep, validate_only=True, **kw)
    n = math.prod(len(a.values) for a in planned.axes) * len(planned.series)
    if dry_run:
        out.print(f"[green]ok[/green] {n} solves ({len(planned.series)} series: {', '.join(planned.series)}); "
                  "every point is a valid instance", highlight=False)
        return
    with ProgressBar(f"pareto {inst.name}", n) as bar:
        result = run_pareto(inst, sweep, progress=bar, **kw)
    if confidence is None:
        from placement.cli.plots import plot_pareto as chart
    else:
        from placement.cli.confidence_plot import plot_confidence as chart

    _write_sweep_outputs(result, json_path, csv_path, plot, chart)
    if not quiet:
        from placement.cli.study_report import print_result

        print_result(out, result)
        if confidence is not None:
            out.print("confidence 0: the nominal prediction; c > 0: every step priced at the c quantile of its "
                      "chip family's held-out error band (benchmarks/CALIBRATION.md)", highlight=False)
    _exit_if_failed([p.status for p in result.points])


def marginal_command(
    instance: InstanceArg,
    plan_path: PlanArg,
    bandwidth_factor: Annotated[float, typer.Option("--bandwidth-factor",
                                                    help="multiply each link's / uplink's bandwidth by this")] = 2.0,
    json_path: JsonPath = None,
    csv_path: CsvPath = None,
    solver: SolverOpt = DEFAULT_SOLVER,
    time_limit: TimeLimit = None,
    gap: Gap = None,
    executor: ExecutorOpt = Executor.local,
    address: Addr = None,
    workers: Workers = None,
    quiet: Quiet = False,
    prices: PricesOpt = None,
) -> None:
    """Value of one more / one fewer domain of each group and of more bandwidth on each link (re-solves)."""
    from placement.cli.consoles import out
    from placement.core.plans.output import write_atomic
    from placement.core.plans.plan import read_plan
    from placement.studies.marginal import marginal, to_csv, variants

    check_run_options(time_limit_s=time_limit, gap=gap, workers=workers)
    check_outputs(json_path, csv_path)
    refuse_inputs({"--json": json_path, "--csv": csv_path}, [instance])
    inst = _load(instance, prices)
    plan = read_plan(plan_path)
    n = 1 + len(variants(inst, plan, bandwidth_factor))
    kw = _run_kwargs(instance, solver, time_limit, gap, executor, address, workers)
    with ProgressBar(f"marginal {inst.name}", n) as bar:
        result = marginal(inst, plan, bandwidth_factor=bandwidth_factor, progress=bar, **kw)
    if json_path is not None:
        write_atomic(json_path, result.model_dump_json(indent=2))
    if csv_path is not None:
        write_atomic(csv_path, to_csv(result))
    if not quiet:
        from placement.cli.study_report import print_marginal

        print_marginal(out, result)
    _exit_if_failed([result.base_status, *(r.status for r in result.rows)])
