"""Re-plan a running placement after failures, demand or price changes, paying for every change.

The instance given is the world *now* (new rates, prices, SLOs: edit it, or
``--set PATH=VALUE`` on the command line); the plan is what runs; the events
add failed domains. The re-plan is the MILP of the degraded fleet
(:mod:`placement.core.instance.failures`) with the migration family of
:mod:`solvers.migration_rows`, a :class:`~placement.core.pipeline.solve.Scenario` of the
one solve pipeline (two levels on large fleets, exact to the gap; the time
limit, repair, ``certify`` and the diagnosis of an infeasible fleet)::

    min  run $/h  +  (Σ reload $ of every replica added or removed) / amortise_h

the reload $ following :mod:`placement.core.plans.migration`. Replicas that stay
keep their domain indices; new ones fill the free room of healthy domains
(:mod:`placement.core.operations.domain_slots`). The new plan records every failed
domain (the current plan's and the events'), so that the verifier — and
``placement check`` — judge it against the degraded fleet, and carries a
``migration`` record: each move, and the totals, which the verifier re-derives
(:mod:`placement.core.verify.migration`).

Examples
--------
>>> import placement
>>> inst = placement.load_instance("instances/melange-toy.yaml")
>>> plan = placement.solve(inst, backend="highs")
>>> same = placement.replan(inst, plan, backend="highs")
>>> same.cost_usd_per_hour == plan.cost_usd_per_hour, len(same.migration.moves)
(True, 0)
>>> hit = plan.pools[0].sites[0]
>>> after = placement.replan(inst, plan, placement.Events(failed_domains={hit.site: hit.domains[:1]}),
...                          backend="highs")
>>> after.verified, after.failed_domains == {hit.site: hit.domains[:1]}, after.migration.replicas_lost
(True, True, 1)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.failures import degrade, healthy_indices, merge_failures
from placement.core.instance.schema import Instance
from placement.core.modes.registry import STAGE_OF_KIND
from placement.core.operations.domain_slots import Slot, place_around, replica_slots
from placement.core.pipeline.solve import Scenario, solve_context
from placement.core.plans.migration import Migration, Move, change_cost, check_move_terms
from placement.core.plans.plan import Plan
from placement.core.replicas.evaluate import PoolConfig
from placement.core.verify.verifier import CHECKED_STATUSES
from solvers.backends import DEFAULT_BACKEND
from solvers.migration_rows import migration

__all__ = ["DEFAULT_AMORTISE_H", "Events", "Running", "replan"]

#: Hours over which a re-plan spreads its one-off migration $ (a plan is expected to hold about a day).
DEFAULT_AMORTISE_H = 24.0

Key = tuple[str, int, str]


@dataclass(frozen=True)
class Events:
    """What happened since the current plan was made.

    ``failed_domains``: domain group -> indices of domains that failed (added
    to those the current plan already records). ``move_usd``: a fixed $ per
    replica added or removed, on top of its reload. ``amortise_h``: hours over
    which one-off $ are spread in the objective (> 0).
    """

    failed_domains: Mapping[str, Sequence[int]] = field(default_factory=dict)
    move_usd: float = 0.0
    amortise_h: float = DEFAULT_AMORTISE_H


@dataclass
class Running:
    """Replicas of one pool part in one group in the current plan: where they sit, which survive."""

    pool: str
    config: PoolConfig
    chips_per_replica: int
    alive: list[Slot]
    lost: list[Slot]


def _running(ctx: Context, plan: Plan, source: str) -> dict[Key, Running]:
    """The current plan's replicas by (column, part, group), per replica, split into alive and lost."""
    by_group: dict[str, dict[Key, tuple[int, int, list[int]]]] = defaultdict(dict)
    pools, stated = {}, {}
    for pool in plan.pools:
        for s in pool.sites:
            if s.site not in ctx.sites:
                raise InputError(f"pool {pool.id} sits in {s.site!r}, not a domain group of the instance",
                                 file=source, field="pools")
            key = (pool.column, pool.part, s.site)
            by_group[s.site][key] = (pool.chips_per_replica, s.replicas, s.domains)
            pools[key] = pool
            stated[key] = _stated_slots(ctx, pool.chips_per_replica, s) if s.replicas_per_domain else None
    out: dict[Key, Running] = {}
    for group, sizes in sorted(by_group.items()):
        info = ctx.sites[group]
        if all(stated[k] is not None for k in sizes):
            slots = {k: stated[k] for k in sizes}
        else:
            slots = replica_slots(info.chips_per_domain, info.group.count, sizes)
        if slots is None:
            raise InputError(f"the pools in {group} do not fit the domains they list", file=source, field="pools")
        dead = set(ctx.failed_domains.get(group, ()))
        for key, mine in slots.items():
            pool = pools[key]
            out[key] = Running(pool=pool.id, config=pool.config, chips_per_replica=pool.chips_per_replica,
                               alive=[sl for sl in mine if not dead & set(sl)],
                               lost=[sl for sl in mine if dead & set(sl)])
    return out


def _stated_slots(ctx: Context, units: int, site) -> list[Slot]:
    """Per-replica slots of a pool site that states its replicas per domain (runs for multi-domain ones)."""
    span = -(-units // ctx.sites[site.site].chips_per_domain)
    if span > 1:
        return [tuple(site.domains[i:i + span]) for i in range(0, len(site.domains), span)]
    return [(d,) for d, c in zip(site.domains, site.replicas_per_domain) for _ in range(c)]


class _PerChange(Mapping[Key, float]):
    """$ of adding or removing one replica, per (column, part, group), worked out when first asked for.

    The two-level re-plan asks only for the keys of the models it builds, a
    small share of every column on every group.
    """

    def __init__(self, ctx: Context, configs: Mapping[str, PoolConfig], running: Mapping[Key, PoolConfig],
                 move_usd: float) -> None:
        self._ctx, self._configs, self._running, self._move_usd = ctx, configs, running, move_usd
        self._known: dict[Key, float] = {}

    def __getitem__(self, key: Key) -> float:
        if key not in self._known:
            column, part, group = key
            config = self._configs.get(column) or self._running.get(key)
            if config is None or group not in self._ctx.sites:
                raise KeyError(key)
            self._known[key] = change_cost(self._ctx, config, part, group, self._move_usd)[2]
        return self._known[key]

    def __iter__(self) -> Iterator[Key]:
        return iter(self._known)

    def __len__(self) -> int:
        return len(self._known)


def _place(ctx: Context, plan: Plan, running: dict[Key, Running]) -> tuple[dict[Key, list[Slot]], list[str]]:
    """Give the new plan's replicas domain indices, keeping running ones in place; write them into the pools."""
    wanted: dict[str, dict[Key, tuple[int, int]]] = defaultdict(dict)
    for pool in plan.pools:
        for s in pool.sites:
            wanted[s.site][pool.column, pool.part, s.site] = (pool.chips_per_replica, s.replicas)
    placed: dict[Key, list[Slot]] = {}
    notes = []
    for group, sizes in sorted(wanted.items()):
        size_d, healthy = ctx.sites[group].chips_per_domain, healthy_indices(ctx, group)
        kept = {k: (u, running[k].alive[:n]) for k, (u, n) in sizes.items() if k in running}
        new = {k: (u, n - len(kept.get(k, (u, []))[1])) for k, (u, n) in sizes.items()}
        slots = place_around(size_d, healthy, kept, new)
        if slots is None:
            slots = place_around(size_d, healthy, {}, sizes)
            notes.append(f"{group}: the replicas kept left the free room too fragmented for the new ones; the "
                         "group was re-packed (the moves below count every replica that changed domain)")
        placed.update(slots or {})
    for pool in plan.pools:
        for s in pool.sites:
            on = Counter(d for sl in placed.get((pool.column, pool.part, s.site), []) for d in sl)
            s.domains = sorted(on)
            s.replicas_per_domain = [on[d] for d in s.domains]
    return placed, notes


def _migration(ctx: Context, plan: Plan, running: dict[Key, Running], placed: dict[Key, list[Slot]],
               events: Events) -> Migration:
    new_pools = {(p.column, p.part): p for p in plan.pools}
    moves = []
    kept_total = 0
    for key in sorted(set(running) | set(placed)):
        column, part, group = key
        now = running.get(key)
        after = placed.get(key, [])
        alive = now.alive if now else []
        lost = now.lost if now else []
        gone, came = Counter(alive) - Counter(after), Counter(after) - Counter(alive)
        kept_total += sum((Counter(alive) & Counter(after)).values())
        if not (gone or came or lost):
            continue
        pool = new_pools.get((column, part))
        config = pool.config if pool is not None else now.config
        weight, seconds, usd = change_cost(ctx, config, part, group, events.move_usd)
        changes = sum(gone.values()) + sum(came.values())
        lay = config.main if part == 0 else config.partner
        moves.append(Move(
            pool=pool.id if pool else None, previous_pool=now.pool if now else None, column=column, part=part,
            stage=pool.stage if pool else _stage(config, part), chip=lay.chip, group=group,
            replicas_before=len(alive) + len(lost), replicas_lost=len(lost), replicas_after=len(after),
            added=sum(came.values()), removed=sum(gone.values()),
            domains_added=sorted({d for sl in came for d in sl}),
            domains_removed=sorted({d for sl in (*gone, *lost) for d in sl}),
            reload_bytes=changes * weight, reload_s=seconds if changes else 0.0, usd=round(changes * usd, 9)))
    total = round(sum(m.usd for m in moves), 9)
    return Migration(
        moves=moves, replicas_added=sum(m.added for m in moves), replicas_removed=sum(m.removed for m in moves),
        replicas_kept=kept_total, replicas_lost=sum(m.replicas_lost for m in moves),
        reload_bytes=sum(m.reload_bytes for m in moves), reload_s=max((m.reload_s for m in moves), default=0.0),
        usd=total, move_usd=events.move_usd, amortise_h=events.amortise_h,
        objective_usd_per_hour=round((plan.cost_usd_per_hour or 0.0) + total / events.amortise_h, 9))


def _stage(config: PoolConfig, part: int) -> str:
    return STAGE_OF_KIND[config.kind][part] or "?"


def _check_inputs(instance: Instance, plan: Plan, events: Events, source: str) -> None:
    if plan.instance != instance.name:
        raise InputError(f"plan is for instance {plan.instance!r}, not {instance.name!r}", field="instance")
    if plan.status not in ("optimal", "feasible", "time_limit"):
        raise InputError(f"the current plan has status {plan.status!r}: there is nothing running to re-plan",
                         field="status")
    if instance.objective != "cost":
        raise InputError(f"a re-plan adds migration $ to the objective: it needs objective 'cost', got "
                         f"{instance.objective!r}", file=source, field="objective")
    check_move_terms(events.move_usd, events.amortise_h, prefix="events.")


def _moving(ctx: Context, running: dict[Key, Running], events: Events) -> Scenario:
    """The re-plan as a scenario: the migration family over the replicas alive now, and the new plan's
    failed domains, replicas per domain and migration record."""
    alive = {k: len(r.alive) for k, r in running.items() if r.alive}

    def families(work: Context, problem, cands) -> tuple:
        usd = _PerChange(ctx, cands.configs, {k: r.config for k, r in running.items()}, events.move_usd)
        return (migration(alive, usd, events.amortise_h),)

    def finish(_: Context, new: Plan, sol) -> Plan:
        update: dict = {"failed_domains": {g: list(ix) for g, ix in ctx.failed_domains.items()}}
        if sol.ok and new.status in CHECKED_STATUSES:
            placed, notes = _place(ctx, new, running)
            update.update(notes=[*new.notes, *notes], migration=_migration(ctx, new, running, placed, events))
        return new.model_copy(update=update)

    # Every column is priced by its configuration's reload: the pair columns are not pruned network-free.
    return Scenario(name="replan", families=families, finish=finish, network_free=False)


def replan(instance: Instance, plan: Plan, events: Events | None = None, *, backend: str = DEFAULT_BACKEND,
           time_limit_s: float | None = None, gap: float | None = None, source: str = "<instance>",
           **options) -> Plan:
    """The cheapest plan for ``instance`` from the running ``plan``, counting migration (module docstring).

    Parameters
    ----------
    instance : Instance
        The instance as it is now (rates, prices, SLOs); its objective must be ``cost``.
    plan : Plan
        The plan that runs (a verified plan of this instance, e.g. from :func:`placement.solve`).
    events : Events, optional
        Failed domains, the fixed $ per move and the amortisation hours.
    backend, time_limit_s, gap
        As for :func:`placement.solve`.
    **options
        :func:`placement.core.pipeline.solve.solve_context`'s (``certify``, ``kv_policy``, ``memory_limit_bytes``,
        ``began``, ``diagnose``).

    Returns
    -------
    Plan
        Verified against the degraded fleet; ``failed_domains`` and ``migration`` filled. Its status
        says what happened (``infeasible``: the fleet left cannot serve the demand, with a diagnosis).

    Raises
    ------
    InputError
        The plan is for another instance or has no placement, a failed group or index does not exist,
        the objective is not cost, or the plan's pools do not fit the domains they list.
    """
    events = events or Events()
    _check_inputs(instance, plan, events, source)
    ctx = degrade(Context.of(instance, source), merge_failures(plan.failed_domains, events.failed_domains))
    running = _running(ctx, plan, source)
    return solve_context(ctx, backend=backend, time_limit_s=time_limit_s, gap=gap,
                         scenario=_moving(ctx, running, events), **options)
