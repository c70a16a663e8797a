"""The ``placement`` command line (typer + rich): the app, its callback (``--version``) and the core
commands; the others are registered from :mod:`placement.cli.studies`, :mod:`~placement.cli.bench` and
:mod:`~placement.cli.roofline_report`. Heavy modules are imported inside the commands, so that
``placement --help`` starts fast.

Exit codes are those of :mod:`placement.core.instance.errors`: 0 success, 2 input error,
3 infeasible, 4 solver failure, 5 verification failed. Errors print one clear
message on stderr, never a traceback.
"""

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from placement.cli.bench import bench_command, export_command, generate_command
from placement.cli.capacity import capacity_command
from placement.cli.deploy import deploy_command
from placement.cli.examples import examples_command
from placement.cli.guard import guarded
from placement.cli.html_report import report_command
from placement.cli.init import init_command
from placement.cli.kv import kv_prices_command
from placement.cli.measure import calibrate_command, measure_app
from placement.cli.ops import replan_command, schedule_command
from placement.cli.options import (
    DEFAULT_SOLVER,
    Addr,
    CalibrationOpt,
    CertifyOpt,
    Executor,
    ExecutorOpt,
    InstanceArg,
    KvPolicy,
    PlanArg,
    PricesOpt,
    SolverOpt,
    check_run_options,
    memory_limit_bytes,
    objective_name,
)
from placement.cli.roofline_report import catalog, roofline
from placement.cli.schema import schema_command
from placement.cli.studies import marginal_command, pareto_command, sweep_command
from placement.core.instance.errors import EXIT_INFEASIBLE, EXIT_OK, EXIT_SOLVER, EXIT_VERIFY

# Plain click help and usage errors (rich_markup_mode=None): typer's rich help costs ~0.3 s of imports
# (rich.markdown, markdown_it) on every `placement --help`.
app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Placement optimizer for heterogeneous LLM inference.")

__all__ = ["app", "main"]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"placement {version('placement')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    """Placement optimizer for heterogeneous LLM inference."""


def _load(path: Path, calibration: Path | None = None):
    from placement.core.instance.loading import load_instance

    return load_instance(path, calibration)


def _plan_exit(plan) -> int:
    if plan.certified is False:  # --certify: the second backend refuted the first's claim
        return EXIT_SOLVER
    if plan.status in ("optimal", "feasible") and plan.verified:
        return EXIT_OK
    if plan.status == "time_limit":
        return EXIT_OK if plan.verified else EXIT_SOLVER
    if plan.status == "infeasible":
        return EXIT_INFEASIBLE
    if plan.violations:
        return EXIT_VERIFY
    return EXIT_SOLVER


@app.command()
@guarded
def validate(instance: InstanceArg, calibration: CalibrationOpt = None) -> None:
    """Check an instance file and summarise it."""
    from placement.cli.consoles import out
    from placement.core.instance.context import Context

    inst = _load(instance, calibration)
    ctx = Context.of(inst, str(instance))
    chips = sum(s.chips for s in ctx.sites.values())
    from placement.core.plans.numbers import num
    from topology.prices import DEFAULT_PRICES

    out.print(f"[green]ok[/green] {instance}: model {ctx.model.name}, {len(inst.workload.classes)} classes, "
              f"{num(len(ctx.sites))} domain groups, {num(chips)} chips, modes {', '.join(inst.modes)}"
              + ("" if inst.prices == DEFAULT_PRICES else f", chip prices {inst.prices}"))
    from placement.cli.consoles import warn_unreachable

    warn_unreachable(ctx.graph)


@app.command()
@guarded
def solve(
    instance: InstanceArg,
    solver: SolverOpt = DEFAULT_SOLVER,
    objective: Annotated[str | None, typer.Option(help="what to minimise: cost, power, chips or another registered "
                                                       "objective (default: the instance's)",
                                                  callback=objective_name)] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="seconds for the whole command (reading, "
                                                     "candidates, model builds, solves, verification); exit 4 "
                                                     "if no plan was found by then")] = None,
    memory_limit: Annotated[str | None, typer.Option("--memory-limit", help="memory ceiling, e.g. 8G or 512M "
                                                     "(default 0.8 of the machine's memory): a larger model is "
                                                     "not built, a solver past it is stopped; exit 4")] = None,
    gap: Annotated[float | None, typer.Option(help="relative MIP gap, e.g. 0.001")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the plan as JSON here")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no table")] = False,
    with_compare: Annotated[bool, typer.Option("--compare", help="also solve each homogeneous fleet and "
                                                "each single mode; report the savings")] = False,
    certify: CertifyOpt = False,
    kv_policy: Annotated[KvPolicy | None, typer.Option("--kv-policy", help="session classes: keep KV in every "
                                                       "tier (default when tiers exist), in HBM only, or "
                                                       "recompute every prefix")] = None,
    survive: Annotated[str | None, typer.Option("--survive", help="domain:1 or switch:1: the plan still serves every class "
                                                "after losing any one domain or switch (N+1)")] = None,
    survive_slo_factor: Annotated[float, typer.Option("--survive-slo-factor", help="with --survive: in the failure "
                                                      "scenarios every TTFT and TPOT SLO is multiplied by this")] = 1.0,
    max_pools: Annotated[int | None, typer.Option("--max-pools-per-stage", min=1, help="at most N pools per class "
                                                  "and stage (sets limits.max_pools_per_stage); among plans of "
                                                  "equal cost, the one with fewer pools")] = None,
    confidence: Annotated[float | None, typer.Option(help="plan robustly: price every step at this quantile "
                                                     "of its chip's held-out error band, e.g. 0.9")] = None,
    headroom: Annotated[float | None, typer.Option(help="plan to this share of every class's TTFT and TPOT SLO, "
                                                   "e.g. 0.8 (the instance's slo_headroom)")] = None,
    prices: PricesOpt = None,
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="keep candidate generations here and "
                                                   "reuse them in later runs (also PLACEMENT_CACHE_DIR)")] = None,
    executor: ExecutorOpt = Executor.local,
    address: Addr = None,
    calibration: CalibrationOpt = None,
) -> None:
    """Find the cheapest verified placement of an instance.

    Candidates are generated in (class, chip type) jobs: a local process pool on large instances, or Ray
    tasks with --executor ray (--address: an existing cluster; none: a private local Ray).
    """
    began = time.monotonic()  # --time-limit bounds the whole command: imports, reading, candidates, solver
    from rich.markup import escape

    from placement.api import solve as run
    from placement.cli.consoles import err, out
    from placement.cli.report import print_plan

    check_run_options(time_limit_s=time_limit, gap=gap)
    memory_bytes = memory_limit_bytes(memory_limit)
    if json_path is not None:
        from placement.core.plans.output import check_writable, refuse_inputs

        check_writable(json_path)  # before the solve, not after it
        refuse_inputs({"--json": json_path}, [instance, *([calibration] if calibration else [])])
    plan = run(_load(instance, calibration), backend=solver, objective=objective,
               time_limit_s=time_limit, memory_limit_bytes=memory_bytes, gap=gap, compare=with_compare,
               certify=certify, kv_policy=None if kv_policy is None else str(kv_policy), survive=survive,
               survive_slo_factor=survive_slo_factor, max_pools_per_stage=max_pools, confidence=confidence,
               headroom=headroom, prices=prices, cache_dir=cache_dir, executor=str(executor), address=address,
               source=str(instance), began=began)
    if json_path is not None:
        from placement.core.plans.output import write_atomic

        write_atomic(json_path, plan.model_dump_json(indent=2))
    if not quiet:  # with --json - the plan owns standard output; the table goes to standard error
        print_plan(err if str(json_path) == "-" else out, plan)
    code = _plan_exit(plan)
    if code:
        why = next((n for n in plan.notes if n.startswith("NOT certified")), None) if plan.certified is False else None
        head, text = ("not certified", why.removeprefix("NOT certified: ")) if why else (plan.status, plan.message)
        err.print(f"[red]{head}[/red]: {escape(text or '')}", highlight=False, soft_wrap=True)
        for d in plan.diagnosis:
            err.print(f"  - {escape(d)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@app.command()
@guarded
def check(instance: InstanceArg, plan_path: PlanArg, calibration: CalibrationOpt = None) -> None:
    """Verify a plan against an instance with the cost models (not the MILP), and its provenance."""
    from rich.markup import escape

    from placement.cli.consoles import err, out
    from placement.core.plans.plan import read_plan
    from placement.core.verify.api import check as run

    inst = _load(instance, calibration)
    plan = read_plan(plan_path)
    result = run(inst, plan, source=str(instance), plan_source=str(plan_path))
    for w in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False, soft_wrap=True)
    if not result.ok:
        for v in result.violations:
            err.print(f"[red]violation:[/red] {escape(v)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_VERIFY)
    out.print(f"[green]ok[/green] {plan_path}: {len(plan.pools)} pools, every constraint holds")


@app.command()
@guarded
def compare(
    instance: InstanceArg,
    solver: SolverOpt = DEFAULT_SOLVER,
    time_limit: Annotated[float | None, typer.Option("--time-limit")] = None,
    json_path: Annotated[Path | None, typer.Option("--json")] = None,
    calibration: CalibrationOpt = None,
    priors: Annotated[str, typer.Option("--priors", help="low | nominal | high: every uncalibrated chip's "
                                        "efficiencies, step cost and all-reduce speed at that end of its prior "
                                        "(the range of its calibrated peers, costmodels/priors.py)")] = "nominal",
    prices: PricesOpt = None,
) -> None:
    """Heterogeneous fleet vs each homogeneous fleet and each single mode."""
    from placement.api import compare as run
    from placement.cli.consoles import out
    from placement.cli.report import print_comparison

    check_run_options(time_limit_s=time_limit)
    if json_path is not None:
        from placement.core.plans.output import check_writable, refuse_inputs

        check_writable(json_path)  # before the solves, not after them
        refuse_inputs({"--json": json_path}, [instance])
    from placement.cli.studies import ProgressBar
    from placement.core.instance.loading import with_prices
    from placement.studies.compare import kv_variants, variants

    inst = with_prices(_load(instance, calibration), prices)
    with ProgressBar(f"compare {inst.name}", len(variants(inst)) + len(kv_variants(inst))) as bar:
        rows = run(inst, backend=solver, time_limit_s=time_limit, priors=priors, source=str(instance), progress=bar)
    if json_path is not None:
        from placement.core.plans.output import write_atomic

        write_atomic(json_path, json.dumps([r.model_dump() for r in rows], indent=2))
    print_comparison(out, rows)


app.command("roofline")(guarded(roofline))
app.command("catalog")(guarded(catalog))
app.command("pareto")(guarded(pareto_command))
app.command("sweep")(guarded(sweep_command))
app.command("marginal")(guarded(marginal_command))
app.command("generate")(guarded(generate_command))
app.command("bench")(guarded(bench_command))
app.command("export")(guarded(export_command))
app.command("kv-prices")(guarded(kv_prices_command))
app.command("replan")(guarded(replan_command))
app.command("schedule")(guarded(schedule_command))
app.command("schema")(guarded(schema_command))
app.command("deploy")(guarded(deploy_command))
app.command("init")(guarded(init_command))
app.command("examples")(guarded(examples_command))
app.command("report")(guarded(report_command))
app.command("capacity")(guarded(capacity_command))
app.command("calibrate")(guarded(calibrate_command))
app.add_typer(measure_app, name="measure")


def main() -> None:  # pragma: no cover
    sys.exit(app())
