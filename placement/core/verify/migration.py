"""The re-plan's ``migration`` record re-derived: the mirror of the migration family of the MILP.

For a plan with a ``migration`` record (:func:`placement.core.operations.replan.replan`): each move of a pool the
plan has holds the plan's replicas of that pool part in that group after the move; its additions and
removals take the replicas alive before to those after; its reload bytes, seconds and $ follow the
reload rule (:func:`placement.core.plans.migration.change_cost`) for the pool's configuration on that
group; and the totals are the sums over the moves (the longest reload for ``reload_s``), the
objective the plan's run $/h plus the one-off $ over the amortisation hours.

Examples
--------
>>> from placement.core.verify.migration import check_migration  # doctest: +SKIP
>>> check_migration(ctx, plan, facts)                             # doctest: +SKIP
[]
"""

from __future__ import annotations

from placement.core.instance.context import Context
from placement.core.plans.migration import AMORTISE_H_RANGE, MAX_MOVE_USD, change_cost
from placement.core.plans.plan import Plan
from placement.core.verify.facts import PoolFacts, close

__all__ = ["check_migration"]


def check_migration(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Every field of ``plan.migration`` that does not re-derive (module docstring); [] without one."""
    mig = plan.migration
    if mig is None:
        return []
    lo, hi = AMORTISE_H_RANGE
    if not (lo <= mig.amortise_h <= hi and 0.0 <= mig.move_usd <= MAX_MOVE_USD):
        return [f"migration: amortise_h {mig.amortise_h:g} or move_usd {mig.move_usd:g} out of range"]
    v: list[str] = []
    pools = {p.id: p for p in plan.pools}
    for i, m in enumerate(mig.moves):
        where = f"migration.moves[{i}]"
        pool = pools.get(m.pool) if m.pool is not None else None
        if m.pool is not None and (pool is None or (pool.column, pool.part) != (m.column, m.part)):
            v.append(f"{where}: pool {m.pool!r} is not the plan's pool of column {m.column} part {m.part}")
            continue
        after = sum(s.replicas for s in pool.sites if s.site == m.group) if pool is not None else 0
        if m.replicas_after != after:
            v.append(f"{where}: {m.replicas_after} replicas after in {m.group}, the plan has {after}")
        alive = m.replicas_before - m.replicas_lost
        if min(m.added, m.removed, m.replicas_lost, alive) < 0 or m.added - m.removed != m.replicas_after - alive:
            v.append(f"{where}: +{m.added} −{m.removed} does not take {alive} alive replicas to {m.replicas_after}")
        if pool is None or m.group not in ctx.sites:
            continue
        weight, seconds, usd = change_cost(ctx, pool.config, m.part, m.group, mig.move_usd)
        changes = m.added + m.removed
        for name, stated, derived in (("usd", m.usd, round(changes * usd, 9)), ("reload_bytes", m.reload_bytes,
                                      changes * weight), ("reload_s", m.reload_s, seconds if changes else 0.0)):
            if not close(stated, derived):
                v.append(f"{where}.{name}: {stated:.10g}, the reload rule gives {derived:.10g}")
    total = round(sum(m.usd for m in mig.moves), 9)
    derived = {"replicas_added": sum(m.added for m in mig.moves), "replicas_removed": sum(m.removed for m in mig.moves),
               "replicas_lost": sum(m.replicas_lost for m in mig.moves),
               "reload_bytes": sum(m.reload_bytes for m in mig.moves),
               "reload_s": max((m.reload_s for m in mig.moves), default=0.0), "usd": total,
               "objective_usd_per_hour": round((plan.cost_usd_per_hour or 0.0) + total / mig.amortise_h, 9)}
    for name, value in derived.items():
        if not close(float(getattr(mig, name)), float(value)):
            v.append(f"migration.{name}: {getattr(mig, name):.10g}, the moves give {value:.10g}")
    return v
