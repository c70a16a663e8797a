"""Checks on the domains' uplinks: the KV each domain of a group sends and receives, re-derived from the
pools' loads and domains (:mod:`placement.core.plans.uplinks`), within the domain's uplink; the plan's ``uplinks``
say so."""

from __future__ import annotations

from placement.core.instance.context import Context
from placement.core.plans.plan import Plan
from placement.core.plans.uplinks import UplinkPlan, domain_uplinks
from placement.core.verify.facts import PoolFacts, close, over, transfers

__all__ = ["check_uplink_fields", "check_uplinks"]

#: The fields of an uplink record re-derived and compared.
_FIELDS = ("out_bytes_per_s", "in_bytes_per_s", "local_bytes_per_s", "capacity_bytes_per_s", "utilisation")


def _derived(ctx: Context, plan: Plan) -> list[UplinkPlan]:
    return domain_uplinks(ctx, plan.pools, transfers(ctx))


def check_uplinks(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Per domain of a group attached to a switch, per direction: KV leaving (entering) it, what its pools'
    replicas there send (receive) less what is handed inside it, ≤ the domain's uplink."""
    v = []
    for u in _derived(ctx, plan):
        cap = u.capacity_bytes_per_s
        for word, x in (("out of", u.out_bytes_per_s), ("into", u.in_bytes_per_s)):
            if over(x, cap):
                v.append(f"domain group {u.site}: domain {u.domain}'s uplink carries {x / 1e9:.6g} GB/s of KV "
                         f"{word} it (beside {u.local_bytes_per_s / 1e9:.6g} GB/s handed inside it), capacity "
                         f"{cap / 1e9:.6g} GB/s per direction")
    return v


def check_uplink_fields(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """The plan's ``uplinks`` = the re-derived ones: the same domains, each field equal (a plan that lists
    none, written before they were recorded, states nothing to compare; ``check_uplinks`` still checks its
    domains)."""
    if not plan.uplinks:
        return []
    gives = {(u.site, u.domain): u for u in _derived(ctx, plan)}
    says = {(u.site, u.domain): (i, u) for i, u in enumerate(plan.uplinks)}
    v = [f"uplinks: domain {d} of {g} sends or receives KV and is missing" for g, d in sorted(set(gives) - set(says))]
    for key, (i, u) in sorted(says.items(), key=lambda kv: kv[1][0]):
        where = f"uplinks[{i}] ({u.site}:{u.domain})"
        if key not in gives:
            v.append(f"{where}: the pools send no KV over this domain's uplink")
            continue
        for name in _FIELDS:
            said, derived = getattr(u, name), getattr(gives[key], name)
            if not close(said, derived):
                v.append(f"{where}: {name} says {said!r}, the pools' loads and domains give {derived!r}")
    if len(says) != len(plan.uplinks):
        v.append("uplinks: a domain is listed more than once")
    return v
