"""Operating a fleet over time: ``placement replan`` (registered in :mod:`placement.cli.app`)."""

from pathlib import Path
from typing import Annotated

import typer

from placement.cli.options import (
    DEFAULT_SOLVER,
    CalibrationOpt,
    CertifyOpt,
    InstanceArg,
    KvPolicy,
    PlanArg,
    PricesOpt,
    SolverOpt,
    check_run_options,
)
from placement.core.instance.errors import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    EXIT_SOLVER,
    EXIT_VERIFY,
    InputError,
)
from placement.core.plans.numbers import num, usd

__all__ = ["print_migration", "print_schedule", "replan_command", "schedule_command"]


def print_migration(console, plan) -> None:
    """The moves of a re-plan as a table, then their totals."""
    from rich.table import Table

    mig = plan.migration
    if plan.failed_domains:
        failed = "; ".join(f"{g}: {', '.join(map(str, ix))}" for g, ix in plan.failed_domains.items())
        console.print(f"failed domains: {failed}", highlight=False, markup=False)
    if mig is None:
        return
    if mig.moves:
        t = Table(title="moves")
        for col in ("pool", "stage", "chip", "group", "before → after", "lost", "+", "−", "domains +", "domains −",
                    "reload GB", "s", "$"):
            t.add_column(col)
        for m in mig.moves:
            t.add_row(m.pool or f"({m.previous_pool})", m.stage, m.chip, m.group,
                      f"{m.replicas_before} → {m.replicas_after}", str(m.replicas_lost), str(m.added), str(m.removed),
                      _indices(m.domains_added), _indices(m.domains_removed), num(m.reload_bytes / 1e9),
                      num(m.reload_s), usd(m.usd))
        console.print(t)
    console.print(f"migration: {mig.replicas_added} added, {mig.replicas_removed} removed, {mig.replicas_kept} kept, "
                  f"{mig.replicas_lost} lost; {num(mig.reload_bytes / 1e9)} GB reloaded, longest {num(mig.reload_s)} s, "
                  f"${usd(mig.usd)} one-off; objective ${num(mig.objective_usd_per_hour, 6)}/h "
                  f"(run + one-off / {num(mig.amortise_h)} h)", highlight=False)


def _indices(ix: list[int], most: int = 8) -> str:
    shown = ",".join(map(str, ix[:most]))
    return shown + (f",… ({len(ix)})" if len(ix) > most else "")


def replan_command(
    instance: InstanceArg,
    plan_path: PlanArg,
    fail: Annotated[list[str] | None, typer.Option("--fail", help="GROUP:INDICES of failed domains, e.g. "
                                                   "vr-nvl72:0-7 or vr-nvl72:3,17 (repeatable)")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="PATH=VALUE: the instance now, e.g. "
                                                   "workload.classes.chat.rate_rps=40 (repeatable)")] = None,
    move_usd: Annotated[float, typer.Option("--move-usd", help="fixed $ per replica added or removed, on top "
                                            "of its weight reload")] = 0.0,
    amortise_h: Annotated[float, typer.Option("--amortise-h", help="hours over which one-off $ are spread in "
                                              "the objective")] = 24.0,
    solver: SolverOpt = DEFAULT_SOLVER,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="solver seconds")] = None,
    gap: Annotated[float | None, typer.Option(help="relative MIP gap, e.g. 0.001")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the new plan as JSON here")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no table")] = False,
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="read (and keep) candidate generations "
                                                   "here, e.g. the solve's (also PLACEMENT_CACHE_DIR)")] = None,
    certify: CertifyOpt = False,
    kv_policy: Annotated[KvPolicy | None, typer.Option("--kv-policy", help="session classes: keep KV in every "
                                                       "tier, in HBM only, or recompute every prefix "
                                                       "(default: the running plan's)")] = None,
    calibration: CalibrationOpt = None,
    prices: PricesOpt = None,
) -> None:
    """Re-plan a running plan after failures or changes, counting what each move costs."""
    from rich.markup import escape

    from placement.api import replan
    from placement.cli.consoles import err, out
    from placement.cli.report import print_plan
    from placement.core.instance.failures import parse_failures
    from placement.core.instance.loading import load_instance
    from placement.core.operations.replan import Events
    from placement.core.plans.migration import check_move_terms
    from placement.core.plans.plan import read_plan
    from placement.studies.whatif import apply_overrides

    check_run_options(time_limit_s=time_limit, gap=gap)
    check_move_terms(move_usd, amortise_h)
    if json_path is not None:
        from placement.core.plans.output import check_writable, refuse_inputs

        check_writable(json_path)
        refuse_inputs({"--json": json_path}, [instance, plan_path])
    failed = parse_failures(fail or [])
    inst, _ = apply_overrides(load_instance(instance, calibration), list(set_ or []), str(instance))
    current = read_plan(plan_path)
    new = replan(inst, current, Events(failed_domains=failed, move_usd=move_usd, amortise_h=amortise_h),
                 backend=solver, time_limit_s=time_limit, gap=gap, certify=certify,
                 kv_policy=None if kv_policy is None else str(kv_policy), cache_dir=cache_dir,
                 prices=prices, source=str(instance))
    if json_path is not None:
        from placement.core.plans.output import write_atomic

        write_atomic(json_path, new.model_dump_json(indent=2))
    console = err if str(json_path) == "-" else out
    if not quiet:
        print_plan(console, new)
        print_migration(console, new)
    code = _exit(new)
    if code:
        err.print(f"[red]{new.status}[/red]: {escape(new.message or '')}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _exit(plan) -> int:
    if plan.certified is False:  # --certify: the second backend refuted the first's claim
        return EXIT_SOLVER
    if plan.status in ("optimal", "feasible", "time_limit") and plan.verified:
        return EXIT_OK
    if plan.status == "infeasible":
        return EXIT_INFEASIBLE
    if plan.violations:
        return EXIT_VERIFY
    return EXIT_SOLVER


def schedule_command(
    instance: InstanceArg,
    profile: Annotated[Path, typer.Option("--profile", help="CSV: period,class,rate_rps[,hours][,price_factor]"
                                          "[,usd_per_hour:CHIP]")],
    method: Annotated[str, typer.Option("--method", help="milp (one MILP with a period index) | rolling "
                                        "(each period re-planned from the last)")] = "milp",
    reserved_discount: Annotated[float, typer.Option("--reserved-discount", help="discount of a chip reserved "
                                                     "for the whole horizon vs on demand, e.g. 0.4")] = 0.0,
    move_usd: Annotated[float, typer.Option("--move-usd", help="fixed $ per replica added or removed")] = 0.0,
    solver: SolverOpt = DEFAULT_SOLVER,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="solver seconds per MILP")] = None,
    gap: Annotated[float | None, typer.Option(help="relative MIP gap, e.g. 0.01")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the schedule (with every period's "
                                                   "plan) as JSON here")] = None,
    references: Annotated[str, typer.Option("--references", help="exact (each period solved alone as a MILP) "
                                            "| bound (only their LP relaxations: a lower bound, much faster)")]
    = "exact",
    certify: Annotated[bool, typer.Option("--certify", help="solve the schedule MILP again with the other backend "
                                          "(cbc <-> highs) and compare; exit 4 if they disagree (the cheaper "
                                          "verified schedule is still written)")] = False,
    prices: PricesOpt = None,
    kv_policy: Annotated[KvPolicy | None, typer.Option("--kv-policy", help="session classes: keep KV in every "
                                                       "tier, in HBM only, or recompute every prefix, in every "
                                                       "period (default: tiered if a group has a KV tier)")] = None,
) -> None:
    """One plan per period of a demand profile, beside independent and static-peak plans."""
    from placement.cli.consoles import out
    from placement.core.instance.loading import load_instance
    from placement.core.operations.schedule import read_profile, schedule
    from placement.core.plans.migration import check_move_terms

    check_run_options(time_limit_s=time_limit, gap=gap)
    check_move_terms(move_usd)
    if not 0.0 <= reserved_discount < 1.0:
        raise InputError(f"expected 0 <= discount < 1, got {reserved_discount}", field="--reserved-discount")
    if json_path is not None:
        from placement.core.plans.output import check_writable, refuse_inputs

        check_writable(json_path)
        refuse_inputs({"--json": json_path}, [instance, profile])
    inst = load_instance(instance)
    result = schedule(inst, read_profile(profile), method=method, reserved_discount=reserved_discount,
                      move_usd=move_usd, backend=solver, time_limit_s=time_limit, gap=gap,
                      keep_plans=json_path is not None, references=references, certify=certify,
                      prices=prices, kv_policy=None if kv_policy is None else str(kv_policy), source=str(instance))
    if json_path is not None:
        from placement.core.plans.output import write_atomic

        write_atomic(json_path, result.model_dump_json(indent=2))
    print_schedule(out, result)
    if result.certified is False:  # --certify: the second backend refuted the first's claim
        raise typer.Exit(EXIT_SOLVER)
    if result.total_usd is None or result.status == "error":
        code = EXIT_INFEASIBLE if result.status == "infeasible" or any(
            p.status == "infeasible" for p in result.periods) else EXIT_SOLVER
        raise typer.Exit(EXIT_VERIFY if result.status == "error" and result.periods else code)


def print_schedule(console, result) -> None:
    """The schedule's periods, its changes, reserved chips and totals beside the references."""
    from rich.table import Table

    t = Table(title=f"schedule ({result.method})")
    for col in ("period", "h", "status", "chips", "reserved", "on demand", "+", "−", "reload $", "$/h",
                "alone $/h", "verified"):
        t.add_column(col)
    for p in result.periods:
        t.add_row(p.period, num(p.hours), p.status, num(p.chips), num(p.reserved_chips),
                  num(p.on_demand_chips), num(p.replicas_added), num(p.replicas_removed), usd(p.migration_usd),
                  usd(p.period_usd_per_hour if p.period_usd_per_hour is not None else p.cost_usd_per_hour),
                  usd(p.independent_usd_per_hour if p.independent_usd_per_hour is not None
                         else p.independent_bound_usd_per_hour), "yes" if p.verified else "NO")
    console.print(t)
    if result.changes:
        c = Table(title="changes (at the start of the period)")
        for col in ("period", "pool column", "part", "chip", "group", "before → after", "$"):
            c.add_column(col)
        for ch in result.changes[:40]:
            c.add_row(ch.period, ch.column, str(ch.part), ch.chip, ch.group, f"{ch.before} → {ch.after}",
                      usd(ch.usd))
        console.print(c)
        if len(result.changes) > 40:
            console.print(f"… {len(result.changes) - 40} more changes (--json has them all)", highlight=False)
    if result.reserved_chips:
        held = ", ".join(f"{g}: {n}" for g, n in result.reserved_chips.items())
        console.print(f"reserved for the whole horizon at {result.reserved_discount:.0%} off: {held}",
                      highlight=False, markup=False)
    if result.total_usd is None:
        console.print(f"{result.status}: {result.message}", highlight=False, markup=False)
        return
    kv = f" + KV tiers ${usd(result.kv_usd)}" if result.kv_usd else ""
    console.print(f"schedule ${usd(result.total_usd)} (reserved ${usd(result.reserved_usd)} + on demand "
                  f"${usd(result.on_demand_usd)} + reconfiguration ${usd(result.migration_usd)}{kv}); "
                  f"bound ${usd(result.best_bound_usd)}, gap {_pct(result.gap)}", highlight=False)
    independent = (f"${usd(result.independent_usd)}" if result.independent_usd is not None
                   else f"≥ ${usd(result.independent_bound_usd)} (LP bound)")
    console.print(f"independent periods {independent} ≤ schedule: "
                  f"{_yes(result.independent_le_schedule)}; schedule ≤ static peak plan "
                  f"${usd(result.static_peak_usd)}: {_yes(result.schedule_le_static)}", highlight=False)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, markup=False)


def _yes(x: bool | None) -> str:
    return "-" if x is None else ("yes" if x else "NO")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.2%}"
