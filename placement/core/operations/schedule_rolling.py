"""A multi-period schedule by rolling horizon: one plan per period, each re-planned from the last.

The approximation of the period-indexed MILP of :mod:`placement.core.operations.schedule`
(``placement schedule --method rolling``): period 1 is solved from scratch; every later
period is :func:`placement.core.operations.replan.replan` of the previous plan at the
period's rates, its migration $ spread over the period's hours. Total = Σ run
$/h × hours + Σ migration $. The references are those of the MILP without
reserved capacity: each period solved alone (a lower bound), and one plan for
every class's peak rate. Reserved capacity and period prices are not modelled.
"""

from __future__ import annotations

from placement.core.instance.errors import InputError
from placement.core.instance.schema import Instance
from placement.core.operations.profile import Period, with_rates
from placement.core.operations.replan import Events, replan
from placement.core.operations.schedule_records import PeriodPlan, Schedule
from placement.core.pipeline.solve import solve
from placement.core.plans.plan import Plan
from solvers.backends import DEFAULT_BACKEND

__all__ = ["METHOD", "rolling_schedule"]

METHOD = "rolling horizon: each period re-planned from the last (placement.replan)"


def _usd(plan: Plan) -> float | None:
    return plan.cost_usd_per_hour if plan.verified else None


def rolling_schedule(instance: Instance, periods: list[Period], *, backend: str = DEFAULT_BACKEND, move_usd: float = 0.0,
                     keep_plans: bool = False, kv_policy: str | None = None) -> Schedule:
    """Plan every period (rolling horizon), and the independent and static-peak references.

    ``kv_policy``: where the session classes' KV may wait (:func:`placement.core.pipeline.solve.solve`'s).

    Raises
    ------
    InputError
        No periods, or a class the instance does not have.
    """
    if not periods:
        raise InputError("the profile has no periods", field="profile")
    rows: list[PeriodPlan] = []
    previous: Plan | None = None
    for p in periods:
        inst = with_rates(instance, p.rates)
        alone = solve(inst, backend=backend, kv_policy=kv_policy)
        plan = alone if previous is None else replan(inst, previous, Events(move_usd=move_usd, amortise_h=p.hours),
                                                     backend=backend, kv_policy=kv_policy)
        mig = plan.migration
        rows.append(PeriodPlan(period=p.name, hours=p.hours, status=plan.status, verified=plan.verified,
                               cost_usd_per_hour=_usd(plan),
                               chips=plan.chips, migration_usd=mig.usd if mig else 0.0,
                               replicas_added=mig.replicas_added if mig else 0,
                               replicas_removed=mig.replicas_removed if mig else 0,
                               independent_usd_per_hour=_usd(alone), plan=plan if keep_plans else None))
        if not plan.verified:
            return Schedule(method=METHOD, status=plan.status, message=plan.message or "", periods=rows)
        previous = plan
    peak = {c.name: max(p.rates.get(c.name, c.rate_rps) for p in periods) for c in instance.workload.classes}
    static = solve(with_rates(instance, peak), backend=backend, kv_policy=kv_policy)
    hours = sum(p.hours for p in periods)
    run = sum(r.cost_usd_per_hour * r.hours for r in rows)
    migration = sum(r.migration_usd for r in rows)
    independent = (sum(r.independent_usd_per_hour * r.hours for r in rows)
                   if all(r.independent_usd_per_hour is not None for r in rows) else None)
    total = run + migration
    static_usd = None if _usd(static) is None else round(static.cost_usd_per_hour * hours, 6)
    return Schedule(method=METHOD, periods=rows, total_usd=round(total, 6), run_usd=round(run, 6),
                    on_demand_usd=round(run, 6), migration_usd=round(migration, 6),
                    independent_usd=None if independent is None else round(independent, 6),
                    static_peak_usd=static_usd, static_peak_usd_per_hour=_usd(static),
                    static_peak_verified=static.verified,
                    independent_le_schedule=None if independent is None else independent <= total * (1 + 1e-9),
                    schedule_le_static=None if static_usd is None else total <= static_usd * (1 + 1e-9),
                    gap_to_independent=None if not independent else round(total / independent - 1, 9))
