"""The independent verifier: a plan is accepted only for what can be re-derived from the instance.

Nothing here reads the MILP or trusts a plan's own numbers. First the plan
must be well formed (:mod:`~placement.core.verify.structure`): finite
numbers, unique ids, names that exist, configurations the cost models can
evaluate on the chips they sit on. Then every pool is re-derived from its
configuration, the catalogue, the domain groups and the cost models
(:mod:`~placement.core.verify.facts`), and each constraint family is one
check, its rule in its docstring:

========================  ==================================================================
``check_pool_fields``     every field of a pool = its re-derived value
``check_class_fields``    a class's rate, SLOs, TTFT and TPOT = the instance's and its pools'
``check_totals``          cost, power, chips (by type), tokens/s, $/M tokens = sums over pools
``check_objective``       the plan's objective is a registered one; what it measures = its pools'
``check_pair_fields``     a pair's latency = its path's
``check_links``           a link's capacity, utilisation and load = the fleet's and its flows'
``check_uplink_fields``   a domain's uplink use (KV out, in, handed inside) = its pools' loads and domains'
``check_demand``          mode shares sum to 1, each step carries its mode's share of the rate
``check_routes``          loads only on steps a configuration serves, of modes its class uses
``check_capacity``        each site's load fits its replicas at the pairs' actual latency
``check_slos_and_memory`` each configuration fits in memory and meets its class's TTFT/TPOT
``check_pairing``         paired parts balance site by site within their latency level
``check_domains``         domain indices in range, replicas fit the domains listed, packing
``check_failed_domains``  no replica on a domain the plan records as failed (whose uplink share is gone)
``check_network``         transfer conservation per node, link loads within bandwidth
``check_uplinks``         the KV each domain of a group sends and receives within its uplink, per direction
``check_kv_feeds``        which prefill pool feeds which decode pool = what the loads and KV flows give
``check_pool_limit``      at most max_pools_per_stage pools per class and stage (the plan's or instance's)
``check_limits``          power and budget limits
``check_survival``        (N+1 plans) with any one domain lost, the rest still serve every class
``check_floors``          no TPOT, TTFT or capacity beats its physical floor (:mod:`placement.core.verify.floors`,
                          which shares no code with the cost models)
``check_migration``       (re-plans) each move's replicas and reload $ and the totals re-derived
``check_kv``              session classes: retention policies, hit rates, tier capacity, bandwidth
                          and cost re-derived (:mod:`~placement.core.verify.kv`); the checks above
                          then see the session classes as their outcome classes
========================  ==================================================================

The checks are kept by name (:mod:`~placement.core.verify.checks`): each constraint family of the
MILP names the one that mirrors it, and an extension registers its own
(:func:`~placement.core.verify.checks.register_check`).

Examples
--------
>>> from placement.core.verify.verifier import verify  # doctest: +SKIP
>>> verify(ctx, plan)                    # doctest: +SKIP
[]
"""

from __future__ import annotations

from placement.core.instance.context import Context
from placement.core.plans.confidence import at_confidence
from placement.core.plans.plan import Plan
from placement.core.verify.checks import CHECKS, register_check, require_checks, unregister_check
from placement.core.verify.facts import RTOL, derive, pair_latency_of
from placement.core.verify.fields import (
    check_class_fields,
    check_links,
    check_pair_fields,
    check_pool_fields,
    check_totals,
)
from placement.core.verify.fleet import check_domains, check_limits, check_network
from placement.core.verify.floors import check_floors
from placement.core.verify.kv import check_kv, has_sessions
from placement.core.verify.migration import check_migration
from placement.core.verify.objective import check_objective
from placement.core.verify.operate import check_kv_feeds, check_pool_limit
from placement.core.verify.serving import (
    check_capacity,
    check_demand,
    check_pairing,
    check_routes,
    check_slos_and_memory,
)
from placement.core.verify.structure import check_configurations, check_numbers, check_references
from placement.core.verify.survive import check_survival
from placement.core.verify.uplinks import check_uplink_fields, check_uplinks

__all__ = ["CHECKS", "RTOL", "pair_latency_of", "register_check", "require_checks", "unregister_check", "verify"]

#: Plan statuses that carry a placement to verify.
CHECKED_STATUSES = ("optimal", "feasible", "time_limit")


def verify(ctx: Context, plan: Plan, *, stated_fields: bool = True) -> list[str]:
    """Every violated constraint of ``plan`` as a sentence naming the pool or field; empty when it holds.

    ``stated_fields=False`` asks only whether the placement is feasible for ``ctx``'s instance, not whether
    the figures the plan states (pool and class fields, totals, links) are this instance's: for a plan
    written for an earlier version of the instance (other prices or capacities), as ``marginal`` asks.
    """
    if plan.status not in CHECKED_STATUSES:
        return []
    ctx = at_confidence(ctx, plan)
    if plan.failed_domains:  # a plan for a degraded fleet is checked against that fleet
        from placement.core.instance.errors import InputError
        from placement.core.instance.failures import check_failed_domains, degrade

        try:
            ctx = degrade(ctx, plan.failed_domains, "failed_domains")
        except InputError as e:
            return [str(e)]
        on_failed = check_failed_domains(ctx.failed_domains, plan.pools)
        if on_failed:
            return on_failed
    if has_sessions(ctx):
        ctx, kv_violations = check_kv(ctx, plan)
        if kv_violations:
            return kv_violations
    malformed = [*check_numbers(plan), *check_references(ctx, plan), *check_configurations(ctx, plan)]
    if malformed:
        return malformed  # the checks below re-derive from the configurations: only from sound ones
    facts = derive(ctx, plan)
    unevaluable = [f.problem for f in facts if f.problem]
    if unevaluable:
        return unevaluable
    return [v for check in CHECKS.values() if stated_fields or not check.stated for v in check.run(ctx, plan, facts)]


def _without_facts(check):
    return lambda ctx, plan, facts: check(ctx, plan)


for _name, _run in (("check_pool_fields", check_pool_fields), ("check_class_fields", check_class_fields),
                    ("check_totals", check_totals), ("check_objective", check_objective),
                    ("check_pair_fields", _without_facts(check_pair_fields)),
                    ("check_links", check_links), ("check_uplink_fields", check_uplink_fields),
                    ("check_kv_feeds", _without_facts(check_kv_feeds))):
    register_check(_name, _run, stated=True)
for _name, _run in (("check_demand", check_demand), ("check_routes", check_routes), ("check_capacity", check_capacity),
                    ("check_slos_and_memory", check_slos_and_memory), ("check_pairing", check_pairing),
                    ("check_domains", check_domains), ("check_network", check_network),
                    ("check_uplinks", check_uplinks),
                    ("check_pool_limit", _without_facts(check_pool_limit)), ("check_limits", check_limits),
                    ("check_floors", lambda ctx, plan, facts: check_floors(plan, ctx)),
                    ("check_survival", check_survival), ("check_migration", check_migration)):
    register_check(_name, _run)
