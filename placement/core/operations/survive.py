"""Plans that survive losing any one domain or switch (``solve --survive domain:1`` or ``switch:1``).

The MILP is the instance's with the N+1 rows of :mod:`solvers.survive_rows`
(replicas spread over their group's domains, at most m_{c,p,s} per domain;
for every group, the replicas left after losing its fullest domain cover
every class). Replicas are then spread round-robin over the group's domains
— domain i of D gets ⌊n/D⌋ replicas, one more for the first n mod D — which
puts at most ⌈n/D⌉ ≤ m on any domain, and the plan states its replicas per
domain, so that the verifier (:mod:`placement.core.verify.survive`) removes
each domain in turn and re-checks coverage. Parts larger than a domain are
not offered (they take whole domains and are not spread this way).

It is a :class:`~placement.core.pipeline.solve.Scenario` of the one solve pipeline
(:func:`survival`): the failure families and the plan's survival fields on
top of the plain placement, so session classes (KV tiers and ``kv_policy``),
the time limit, two levels on large fleets (the collapsed bound without the
scenarios, which only restrict plans), repair, the second opinion
(``certify``) and the diagnosis of an infeasible model all apply.

Examples
--------
>>> from placement.core.instance.loading import load_instance
>>> plan = solve_surviving(load_instance("instances/melange-toy.yaml"), backend="highs")
>>> plan.survive, plan.verified, plan.cost_usd_per_hour, [(p.chip, p.replicas) for p in plan.pools]
('domain:1', True, 8.35, [('a100-80gb', 2), ('a10g', 1)])

(The plain optimum is 3 A10G + 1 A100, $6.70/h: losing the A100 leaves the
classes it serves with nothing.)

``switch:1``: losing a switch loses every domain group hanging off it
(``hardware.domains[].switch``), all at once; the MILP gets one scenario per
switch (:func:`solvers.survive_rows.add_site_loss`, exact, no spread), and the
verifier removes each switch's groups in turn and re-checks coverage. Capacity
only, as for domains: the paths between the pools left are not re-checked.
"""

from __future__ import annotations

import math

import numpy as np

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.failures import healthy_indices
from placement.core.instance.schema import Instance
from placement.core.modes.registry import pool_kind
from placement.core.pipeline.solve import Scenario, solve
from placement.core.plans.plan import Plan
from placement.core.replicas.evaluate import evaluate
from placement.core.replicas.generation import Candidates
from placement.core.verify.survive import SURVIVABLE, relaxed_context
from placement.core.verify.verifier import CHECKED_STATUSES
from solvers import survive_rows
from solvers.backends import DEFAULT_BACKEND
from solvers.problem import Problem
from solvers.solution import Solution

#: The batches tried in the failure scenarios, as multiples of a column's own (rounded to integers).
FAILOVER_BATCHES = 2.0 ** np.linspace(0.0, 2.0, 17)

__all__ = ["FAILOVER_BATCHES", "parse_survive", "relaxed_capacity", "solve_surviving", "spread_domains", "survival",
           "switch_scenarios"]


def parse_survive(text: str) -> str:
    """The failure ``--survive`` names, checked.

    Examples
    --------
    >>> parse_survive("domain:1")
    'domain:1'
    >>> parse_survive("rack:2")
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: --survive: expected domain:1 or switch:1 (losing any one domain or switch), got 'rack:2'
    """
    if text not in SURVIVABLE:
        raise InputError(f"expected {' or '.join(SURVIVABLE)} (losing any one domain or switch), got {text!r}",
                         field="--survive")
    return text


def spread_domains(ctx: Context, plan: Plan) -> None:
    """Spread each pool's replicas round-robin over its group's healthy domains; state them per domain."""
    for pool in plan.pools:
        for s in pool.sites:
            healthy = healthy_indices(ctx, s.site)
            base, extra = divmod(s.replicas, len(healthy))
            counts = [base + (i < extra) for i in range(len(healthy))]
            s.domains = [d for d, c in zip(healthy, counts) if c]
            s.replicas_per_domain = [c for c in counts if c]


def switch_scenarios(ctx: Context) -> dict[str, list[str]]:
    """Switch -> the domain groups hanging off it (lost with it), for every switch that has some."""
    out: dict[str, list[str]] = {}
    for g in ctx.instance.hardware.domains:
        if g.switch is not None and g.name in ctx.sites:
            out.setdefault(g.switch, []).append(g.name)
    return dict(sorted(out.items()))


def relaxed_capacity(ctx: Context, problem: Problem, cands: Candidates,
                     factor: float) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """Column -> step -> requests/s per replica at every SLO × ``factor``, and the batch that gives it.

    Each one-part modelled column's configuration (chips, parallelism, chunk) is re-evaluated for the
    relaxed classes (:func:`~placement.core.verify.survive.relaxed_context`) at its own batch and at
    larger ones (up to 4×, :data:`FAILOVER_BATCHES`): a longer TPOT admits a larger batch, a longer
    TTFT more queueing. The best batch meeting the relaxed SLOs and fitting in memory is kept when
    it serves more than the column does at the instance's SLOs. Measured and paired (two-part)
    columns keep their capacity (conservative).
    """
    if factor == 1.0:
        return {}, {}
    rctx = relaxed_context(ctx, factor)
    capacity: dict[str, dict[str, float]] = {}
    batches: dict[str, int] = {}
    for column in problem.columns:
        cfg = cands.configs.get(column.name)
        if cfg is None or pool_kind(cfg.kind).measured or cfg.partner is not None or cfg.traffic_class not in rctx.classes:
            continue
        cls = rctx.classes[cfg.traffic_class]
        grid = np.unique(np.round(cfg.batch * FAILOVER_BATCHES)).astype(int)
        try:
            perf = evaluate(rctx, cfg, cls, batch=grid)
        except (ValueError, ArithmeticError):
            continue
        rps = np.where(perf.ok(cls), np.broadcast_to(perf.capacity_rps, grid.shape), 0.0)
        best = int(np.argmax(rps))
        if all(rps[best] > cap * (1 + 1e-9) for cap in column.capacity.values()):
            capacity[column.name] = {q: float(rps[best]) for q in column.capacity}
            batches[column.name] = int(grid[best])
    return capacity, batches


def survival(survive: str = "domain:1", slo_factor: float = 1.0) -> Scenario:
    """The N+1 scenario: the failure families of ``survive`` (at the scenarios' capacities for
    ``slo_factor``, :func:`relaxed_capacity`) and the plan's survival fields.

    Raises
    ------
    InputError
        ``survive`` is not a failure this solver knows (:func:`parse_survive`), or the factor is not ≥ 1.
    """
    parse_survive(survive)
    if not (math.isfinite(slo_factor) and slo_factor >= 1.0):
        raise InputError(f"expected a finite SLO factor >= 1, got {slo_factor}", field="--survive-slo-factor")
    made: dict = {"batches": {}, "dropped": set(), "scenarios": {}}

    def families(work: Context, problem: Problem, cands: Candidates) -> tuple:
        capacity, made["batches"] = relaxed_capacity(work, problem, cands, slo_factor)
        if survive == "switch:1":
            made["scenarios"] = switch_scenarios(work)
            return (survive_rows.site_loss(made["scenarios"], capacity),)
        return (survive_rows.survive(capacity, made["dropped"]),)

    def finish(ctx: Context, plan: Plan, sol: Solution) -> Plan:
        update: dict = {"survive": survive}
        batches = made["batches"]
        if slo_factor > 1.0:
            update["survive_slo_factor"] = slo_factor
            update["survive_batches"] = {p.id: batches[p.column] for p in plan.pools
                                         if p.part == 0 and p.column in batches and p.batch != batches[p.column]}
        if survive == "switch:1" and not made["scenarios"]:
            update["notes"] = [*plan.notes, "--survive switch:1: no domain group hangs off a switch; nothing to lose"]
        elif made["dropped"]:
            update["notes"] = [*plan.notes, (f"--survive {survive}: {len({k[0] for k in made['dropped']})} "
                                             "candidate configuration(s) larger than a domain were not offered")]
        if sol.ok and plan.status in CHECKED_STATUSES and survive == "domain:1":
            spread_domains(ctx, plan)
        return plan.model_copy(update=update)

    return Scenario(name=f"survive {survive}", families=families, finish=finish)


def solve_surviving(instance: Instance, *, survive: str = "domain:1", backend: str = DEFAULT_BACKEND,
                    time_limit_s: float | None = None, gap: float | None = None, slo_factor: float = 1.0,
                    source: str = "<instance>", **options) -> Plan:
    """The cheapest verified plan that still serves every class after losing any one domain (or switch).

    ``slo_factor`` f ≥ 1: in the failure scenarios every class's TTFT and TPOT SLO is multiplied by
    f, so each replica left may carry the load it admits at the relaxed SLOs
    (:func:`relaxed_capacity`, possibly at a larger batch); the healthy plan still meets the instance's
    SLOs. The plan records f (``survive_slo_factor``, when f > 1) and each pool's batch in the
    scenarios (``survive_batches``), and the verifier re-checks each scenario at the relaxed SLOs.
    ``options`` are :func:`placement.core.pipeline.solve.solve`'s (``certify``, ``kv_policy``,
    ``memory_limit_bytes``, ``began``, ``diagnose``).

    Returns
    -------
    Plan
        With ``survive`` set (and, for ``domain:1``, replicas stated per domain); ``status`` ``infeasible``
        when no plan survives.

    Raises
    ------
    InputError
        ``survive`` is not a failure this solver knows (:func:`parse_survive`).
    """
    return solve(instance, backend=backend, time_limit_s=time_limit_s, gap=gap, source=source,
                 scenario=survival(survive, slo_factor), **options)
