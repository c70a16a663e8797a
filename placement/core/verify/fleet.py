"""Checks against the fleet: domains, chips per domain, network and limits.

Examples
--------
>>> from placement.core.verify.fleet import assign_in_listed_domains
>>> from solvers.problem import Site
>>> site = Site(name="s", node="s", resource="gpu@8", units_per_domain=8, domains=2,
...             usd_per_hour_per_unit=0.0, power_w_per_unit=0.0)
>>> assign_in_listed_domains(site, {"a": (4, 3, [0, 1]), "b": (8, 1, [1])})
'domains [0, 1] cannot host 3 × 4 chips of a beside what is placed there'
>>> assign_in_listed_domains(site, {"a": (4, 2, [0]), "b": (8, 1, [1])}) is None
True
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise

from placement.core.instance.context import Context
from placement.core.plans.plan import Plan
from placement.core.plans.uplinks import place_in_listed_domains
from placement.core.verify.facts import RTOL, PoolFacts, over, transfers
from solvers.packing import pack_into_domains
from solvers.problem import Site

__all__ = ["assign_in_listed_domains", "check_domains", "check_limits", "check_network", "check_stated_domains"]


def _site(ctx: Context, name: str) -> Site:
    info = ctx.sites[name]
    return Site(name=name, node=name, resource=info.resource, units_per_domain=info.chips_per_domain,
                domains=info.group.count, usd_per_hour_per_unit=0.0, power_w_per_unit=0.0)


def check_domains(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Per group Σ replicas·chips ≤ domains·chips per domain; every domain index in [0, count); each
    pool's replicas fit the domains it lists, domain by domain, beside the other pools listed there."""
    v: list[str] = []
    per_site: dict[str, dict[str, tuple[int, int, list[int]]]] = defaultdict(dict)
    for f in facts:
        for s in f.pool.sites:
            per_site[s.site][f.pool.id] = (f.chips_per_replica, s.replicas, sorted(set(s.domains)))
    for name, sizes in sorted(per_site.items()):
        site = _site(ctx, name)
        chips = sum(units * count for units, count, _ in sizes.values())
        if chips > site.units_per_domain * site.domains:
            v.append(f"domain group {name}: replicas do not pack into its domains ({chips} chips, the group "
                     f"holds {site.units_per_domain * site.domains})")
    for f in facts:
        for j, s in enumerate(f.pool.sites):
            info = ctx.sites[s.site]
            where = f"pools[{f.index}].sites[{j}].domains"
            bad = [d for d in s.domains if not 0 <= d < info.group.count]
            if bad:
                v.append(f"{where}: index {bad[0]} is outside {s.site}'s domains 0 … {info.group.count - 1}")
            if len(set(s.domains)) != len(s.domains):
                v.append(f"{where}: {s.domains} lists a domain more than once")
            room = len(set(s.domains)) * info.chips_per_domain
            if s.replicas * f.chips_per_replica > room:
                v.append(f"{where}: {s.replicas} × {f.chips_per_replica} chips of pool {f.pool.id} in "
                         f"{len(set(s.domains))} domain(s) of {info.chips_per_domain} chips")
    if v:
        return v
    stated = {name for name in per_site if all(s.replicas_per_domain for f in facts for s in f.pool.sites
                                               if s.site == name)}
    v.extend(check_stated_domains(ctx, facts, stated))
    for name, sizes in sorted(per_site.items()):
        if name in stated:
            continue
        site = _site(ctx, name)
        try:
            hosted = pack_into_domains(site, {k: (u, n) for k, (u, n, _) in sizes.items()})
        except ValueError as e:
            v.append(f"domain group {name}: replicas do not pack into its domains ({e})")
            continue
        packed: dict[str, set[int]] = defaultdict(set)
        for d, items in hosted.items():
            for key, _ in items:
                packed[key].add(d)
        if any(sorted(packed[k]) != listed for k, (_, _, listed) in sizes.items()):
            problem = assign_in_listed_domains(site, sizes)
            if problem is not None:
                v.append(f"domain group {name}: {problem}")
    return v


def check_stated_domains(ctx: Context, facts: list[PoolFacts], groups: set[str]) -> list[str]:
    """For groups whose pools state ``replicas_per_domain``: the counts add up to the replicas, a replica
    larger than a domain takes runs of consecutive whole domains, and each domain's chips fit in it."""
    v: list[str] = []
    used: dict[tuple[str, int], int] = defaultdict(int)
    for f in facts:
        for j, s in enumerate(f.pool.sites):
            if s.site not in groups:
                continue
            where = f"pools[{f.index}].sites[{j}].replicas_per_domain"
            size_d, units = ctx.sites[s.site].chips_per_domain, f.chips_per_replica
            counts = s.replicas_per_domain
            if len(counts) != len(s.domains) or any(c < 1 for c in counts):
                v.append(f"{where}: expected a count >= 1 for each of the {len(s.domains)} domains listed, got "
                         f"{counts}")
                continue
            span = -(-units // size_d)
            if span > 1:
                runs = [s.domains[i:i + span] for i in range(0, len(s.domains), span)]
                if (any(c != 1 for c in counts) or len(s.domains) != s.replicas * span
                        or any(r[-1] - r[0] != span - 1 for r in runs)):
                    v.append(f"{where}: {s.replicas} replicas of {units} chips need {s.replicas} runs of {span} "
                             f"consecutive domains, got {s.domains}")
                    continue
            elif sum(counts) != s.replicas:
                v.append(f"{where}: {counts} adds up to {sum(counts)}, the site has {s.replicas} replicas")
                continue
            for d, c in zip(s.domains, counts):
                used[s.site, d] += c * min(units, size_d)
    for (name, d), chips in sorted(used.items()):
        if chips > ctx.sites[name].chips_per_domain:
            v.append(f"domain group {name}: domain {d} holds {chips} chips of replicas, it has "
                     f"{ctx.sites[name].chips_per_domain}")
    return v


def assign_in_listed_domains(site: Site, sizes: dict[str, tuple[int, int, list[int]]]) -> str | None:
    """Place every replica in a domain its pool lists (largest first, first fit), every listed domain used.

    ``sizes``: pool -> (chips per replica, replicas, listed domain indices). A replica larger than a
    domain takes consecutive whole listed domains. None when it works, else what does not fit
    (:func:`placement.core.plans.uplinks.place_in_listed_domains`).
    """
    return place_in_listed_domains(site, sizes)[1]


def check_network(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Per transfer and node, net flow out = b·(source-step load − target-step load) there; per link,
    Σ flows + pair traffic (both ways, on lowest-latency paths, at the pairs' latency) ≤ bandwidth."""
    v: list[str] = []
    G = ctx.graph
    load: dict[tuple[str, str], float] = defaultdict(float)
    net: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for fl in (*plan.flows, *plan.kv_flows):  # a remote KV store's flows share the links
        if not G.has_edge(fl.source, fl.target):
            continue
        load[fl.source, fl.target] += fl.bytes_per_s
        net[fl.transfer][fl.source] += fl.bytes_per_s
        net[fl.transfer][fl.target] -= fl.bytes_per_s
    site_of_step: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for pool in plan.pools:
        if pool.part:
            continue
        for s in pool.sites:
            for step, rate in s.load_rps.items():
                site_of_step[step][s.site] += rate
    for tname, (src_step, dst_step, b) in transfers(ctx).items():
        # The solver meets each step's coverage to ~1e-7 of the class's rate, so a node's net
        # (a difference of two loads) is only that exact relative to the bytes of the whole step.
        scale = b * max(sum(site_of_step[src_step].values()), sum(site_of_step[dst_step].values()), 1.0)
        for node in G.nodes:
            want = b * (site_of_step[src_step].get(node, 0.0) - site_of_step[dst_step].get(node, 0.0))
            got = net.get(tname, {}).get(node, 0.0)
            if abs(got - want) > RTOL * max(abs(want), scale) + 1e-3:
                v.append(f"transfer {tname}: node {node} sends {got:.6g} B/s net, its loads need {want:.6g}")
    per_replica = {f.pool.column: f.pair_bytes_per_s for f in facts if f.main}
    for pr in plan.pairs:
        if pr.replicas <= 1e-9 or per_replica.get(pr.column, 0.0) <= 0:
            continue
        for a, b in ((pr.source_site, pr.target_site), (pr.target_site, pr.source_site)):
            path = ctx.routing.path(a, b)
            if path is None:
                v.append(f"pair {pr.column}: no path {a}->{b}")
                continue
            for u, w in pairwise(path):
                load[u, w] += per_replica[pr.column] * pr.replicas
    for (u, w), x in sorted(load.items()):
        cap = G.edges[u, w]["bandwidth_bytes_per_s"]
        if over(x, cap):
            v.append(f"link {u}->{w}: carries {x / 1e9:.6g} GB/s, capacity {cap / 1e9:.6g} GB/s")
    return v


def check_limits(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """Σ power ≤ the power limit and Σ cost ≤ the budget, both re-derived from the pools' configurations."""
    limits = ctx.instance.limits
    cost = sum(f.usd_per_hour for f in facts)
    power = sum(f.power_w for f in facts)
    v = []
    if limits.power_w is not None and over(power, limits.power_w):
        v.append(f"power {power / 1e3:.6g} kW exceeds the limit of {limits.power_kw} kW")
    if limits.budget_usd_per_hour is not None and over(cost, limits.budget_usd_per_hour):
        v.append(f"cost ${cost:.6g}/h exceeds the budget of ${limits.budget_usd_per_hour}/h")
    return v
