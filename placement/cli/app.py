"""The ``placement`` command line (typer + rich).

Exit codes are those of :mod:`placement.core.errors`: 0 success, 2 input error,
3 infeasible, 4 solver failure, 5 verification failed. Errors print one clear
message on stderr, never a traceback.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from placement.core.errors import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    EXIT_SOLVER,
    EXIT_VERIFY,
    InputError,
    PlacementError,
)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Placement optimizer for heterogeneous LLM inference.")
# Wide tables when piped (rich would otherwise wrap at 80 columns).
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

__all__ = ["app", "main"]


def guarded(fn):
    """Turn every failure into a message on stderr and an exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except PlacementError as e:
            err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
            raise typer.Exit(e.exit_code) from None
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None
        except Exception as e:  # noqa: BLE001 - the CLI never shows a traceback
            err.print(f"[red]internal error:[/red] {type(e).__name__}: {escape(str(e))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper


InstanceArg = Annotated[Path, typer.Argument(help="instance file (YAML or JSON)")]


def _load(path: Path):
    from placement.core.loading import load_instance

    return load_instance(path)


def _plan_exit(plan) -> int:
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
def validate(instance: InstanceArg) -> None:
    """Check an instance file and summarise it."""
    from placement.core.context import Context

    inst = _load(instance)
    ctx = Context.of(inst, str(instance))
    chips = sum(s.chips for s in ctx.sites.values())
    out.print(f"[green]ok[/green] {instance}: model {ctx.model.name}, {len(inst.workload.classes)} classes, "
              f"{len(ctx.sites)} domain groups, {chips} chips, modes {', '.join(inst.modes)}")


@app.command()
@guarded
def solve(
    instance: InstanceArg,
    solver: Annotated[str, typer.Option("--solver", help="cbc | highs | any PuLP backend name")] = "cbc",
    objective: Annotated[str | None, typer.Option(help="cost | power | chips (default: the instance's)")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="seconds")] = None,
    gap: Annotated[float | None, typer.Option(help="relative MIP gap, e.g. 0.001")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the plan as JSON here")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no table")] = False,
    with_compare: Annotated[bool, typer.Option("--compare", help="also solve each homogeneous fleet and "
                                                "each single mode; report the savings")] = False,
) -> None:
    """Find the cheapest verified placement of an instance."""
    from placement.cli.report import print_plan
    from placement.core.solve import solve as run

    if objective is not None and objective not in ("cost", "power", "chips"):
        raise InputError(f"expected cost, power or chips, got {objective!r}", field="--objective")
    if time_limit is not None and time_limit <= 0:
        raise InputError(f"expected seconds > 0, got {time_limit}", field="--time-limit")
    if gap is not None and not 0 <= gap < 1:
        raise InputError(f"expected a relative gap in [0, 1), got {gap}", field="--gap")
    if json_path is not None:
        from placement.core.output import check_writable

        check_writable(json_path)  # before the solve, not after it
    inst = _load(instance)
    plan = run(inst, backend=solver, objective=objective, time_limit_s=time_limit, gap=gap, source=str(instance))
    if with_compare and plan.verified:
        from placement.studies.compare import with_comparisons

        plan = with_comparisons(plan, inst if objective is None else inst.model_copy(update={"objective": objective}),
                                backend=solver, time_limit_s=time_limit, source=str(instance))
    if json_path is not None:
        from placement.core.output import write_atomic

        write_atomic(json_path, plan.model_dump_json(indent=2))
    if not quiet:
        print_plan(out, plan)
    code = _plan_exit(plan)
    if code:
        err.print(f"[red]{plan.status}[/red]: {escape(plan.message or '')}", highlight=False, soft_wrap=True)
        for d in plan.diagnosis:
            err.print(f"  - {escape(d)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@app.command()
@guarded
def check(instance: InstanceArg,
          plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="plan JSON written by solve --json")]) -> None:
    """Verify a plan against an instance with the cost models (not the MILP)."""
    from placement.core.context import Context
    from placement.core.plan import read_plan
    from placement.core.verify import verify

    inst = _load(instance)
    plan = read_plan(plan_path)
    if plan.instance != inst.name:
        raise InputError(f"plan is for instance {plan.instance!r}, not {inst.name!r}", file=str(plan_path),
                         field="instance")
    if plan.status not in ("optimal", "feasible", "time_limit"):
        raise InputError(f"plan has status {plan.status!r}; nothing to check", file=str(plan_path), field="status")
    violations = verify(Context.of(inst, str(instance)), plan)
    if violations:
        for v in violations:
            err.print(f"[red]violation:[/red] {escape(v)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_VERIFY)
    out.print(f"[green]ok[/green] {plan_path}: {len(plan.pools)} pools, every constraint holds")


@app.command()
@guarded
def compare(
    instance: InstanceArg,
    solver: Annotated[str, typer.Option("--solver")] = "cbc",
    time_limit: Annotated[float | None, typer.Option("--time-limit")] = None,
    json_path: Annotated[Path | None, typer.Option("--json")] = None,
) -> None:
    """Heterogeneous fleet vs each homogeneous fleet and each single mode."""
    from placement.cli.report import print_comparison
    from placement.studies.compare import compare as run

    if json_path is not None:
        from placement.core.output import check_writable

        check_writable(json_path)  # before the solves, not after them
    inst = _load(instance)
    rows = run(inst, backend=solver, time_limit_s=time_limit, source=str(instance))
    if json_path is not None:
        from placement.core.output import write_atomic

        write_atomic(json_path, json.dumps([r.model_dump() for r in rows], indent=2))
    print_comparison(out, rows)


def _register_optional() -> None:
    """Commands that live in their own modules."""
    try:
        from placement.cli.roofline_report import catalog, roofline
    except ImportError:  # pragma: no cover - during development only
        return
    app.command("roofline")(guarded(roofline))
    app.command("catalog")(guarded(catalog))
    from placement.studies.marginal import marginal_cli
    from placement.studies.pareto import pareto_cli
    from placement.studies.sweep import sweep_cli

    app.command("pareto")(guarded(pareto_cli))
    app.command("sweep")(guarded(sweep_cli))
    app.command("marginal")(guarded(marginal_cli))
    from placement.bench.export import export_command
    from placement.bench.generate import generate_command
    from placement.bench.runner import bench_command

    app.command("generate")(guarded(generate_command))
    app.command("bench")(guarded(bench_command))
    app.command("export")(guarded(export_command))


_register_optional()


def main() -> None:  # pragma: no cover
    sys.exit(app())
