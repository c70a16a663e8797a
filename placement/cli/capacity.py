"""Command ``capacity``: the largest rate each class (or the mix) is served at on the fleet as given.

The search is :mod:`placement.studies.capacity`; this module checks the options, prints the table and
writes the JSON (every target with the verified plan at its capacity). Exit 0 when every target's
capacity was found, 3 when a target cannot be served at any rate (with the diagnosis of its instance
rate), 4 when the time limit stopped a search.
"""

from typing import Annotated

import typer

from placement.cli.options import (
    DEFAULT_SOLVER,
    CalibrationOpt,
    Gap,
    InstanceArg,
    JsonPath,
    PricesOpt,
    Quiet,
    SolverOpt,
    TimeLimit,
    check_run_options,
)
from placement.core.plans.output import refuse_inputs

__all__ = ["capacity_command"]


def capacity_command(
    instance: InstanceArg,
    class_: Annotated[list[str] | None, typer.Option("--class", help="this class alone, the others at rate 0 "
                                                                     "(repeatable; default: every class, "
                                                                     "then the mix)")] = None,
    mix: Annotated[bool, typer.Option("--mix", help="every class together in the instance's proportions "
                                                    "(with --class: as well)")] = False,
    band: Annotated[bool, typer.Option("--band/--no-band", help="also the capacity at the error band's p10 "
                                                                "and p90 step times")] = True,
    rtol: Annotated[float, typer.Option("--rtol", help="relative width of the final bracket")] = 1e-3,
    solver: SolverOpt = DEFAULT_SOLVER,
    time_limit: TimeLimit = None,
    probe_time_limit: Annotated[float, typer.Option(
        "--probe-time-limit", help="seconds one probe may take; a probe that ends it with neither a plan nor a "
                                   "proof counts unservable and is named (0: no limit)")] = 30.0,
    gap: Gap = None,
    json_path: JsonPath = None,
    quiet: Quiet = False,
    calibration: CalibrationOpt = None,
    prices: PricesOpt = None,
) -> None:
    """Largest servable rate per class (or the mix) under its SLOs, with the verified plan that serves it."""
    from placement.api import capacity
    from placement.cli.consoles import out
    from placement.core.instance.errors import EXIT_INFEASIBLE, EXIT_SOLVER
    from placement.core.instance.loading import load_instance, with_prices

    check_run_options(time_limit_s=time_limit, gap=gap)
    if json_path is not None:
        from placement.core.plans.output import check_writable

        check_writable(json_path)
        refuse_inputs({"--json": json_path}, [instance])
    inst = with_prices(load_instance(instance, calibration), prices)
    results = capacity(inst, classes=class_, mix=mix, backend=solver, rtol=rtol, band=band, time_limit_s=time_limit,
                       gap=gap, source=str(instance), probe_time_limit_s=probe_time_limit or None)
    if json_path is not None:
        import json

        from placement.core.plans.output import write_atomic

        write_atomic(json_path, json.dumps([r.model_dump(mode="json") for r in results], indent=2) + "\n")
    if not quiet:
        print_capacity(out, inst, results)
    statuses = {r.status for r in results}
    if "none" in statuses:
        raise typer.Exit(EXIT_INFEASIBLE)
    if "time_limit" in statuses:
        raise typer.Exit(EXIT_SOLVER)


def print_capacity(console, inst, results) -> None:
    """One row per target: its rate(s), output tokens/s (and per chip), the band, chips and $/h."""
    from rich.table import Table

    from placement.core.plans.numbers import num, usd

    t = Table(title=f"capacity of {inst.name} as given (under each class's SLOs)")
    for col in ("target", "status", "× rates", "req/s", "output tok/s", "p10 – p90 tok/s", "tok/s per chip", "chips",
                "$/h", "verified", "solves"):
        t.add_column(col)
    for r in results:
        band = r.band_output_tokens_per_s
        t.add_row(r.target, r.status, num(r.scale, 4), num(sum(r.rate_rps.values())), num(r.output_tokens_per_s),
                  f"{num(band['p10'])} – {num(band['p90'])}" if band else "-", num(r.output_tokens_per_s_per_chip),
                  f"{num(r.chips)} of {num(r.fleet_chips)}", usd(r.cost_usd_per_hour),
                  "yes" if r.verified else "NO", str(r.solves))
    console.print(t)
    for r in results:
        if r.undecided_scales:
            above = ("no multiple was proven unservable" if r.scale_proven_unservable is None
                     else f"× {num(r.scale_proven_unservable, 4)} was proven unservable")
            top = "" if r.status != "lower_bound" else f"; the limit lies above × {num(r.scale, 4)} ({above})"
            console.print(f"{r.target}: probes at × {', '.join(num(x, 4) for x in r.undecided_scales)} ended their "
                          f"time budget (--probe-time-limit) undecided and count as unservable{top}",
                          highlight=False, soft_wrap=True)
        if r.status == "none":
            console.print(f"{r.target}: not servable at any rate on this fleet", highlight=False)
            for line in r.diagnosis:
                console.print(f"  - {line}", highlight=False, soft_wrap=True)
