"""The KV each domain of a group sends and receives over its uplink: what a plan reports and the verifier checks.

A domain group is one node of the fleet graph, so the plan's ``flows`` only show KV that leaves a group. Inside
a group the pools sit in particular domains (``PoolSite.domains``), and KV handed from a prefill replica in
one domain to a decode replica in another crosses both domains' uplinks (and the group's switch); KV handed
inside one domain stays on its scale-up fabric. Per domain d and transfer t (source step → target step,
b_t bytes per request), with each pool's load at a site spread evenly over its replicas there (a replica
larger than a domain evenly over its domains)::

    sent_{t,d}     = b_t · Σ_pools load(source step) · share of the pool's replicas in d
    received_{t,d} = b_t · Σ_pools load(target step) · share of the pool's replicas in d
    local_d = Σ_t min(sent, received)     out_d = Σ_t max(0, sent − received)     in_d = Σ_t max(0, received − sent)

(KV is handed inside the domain first: a router that sends each request's KV to a decode replica in its own
domain when one has room.) ``out_d`` and ``in_d`` include KV for other groups — it crosses the same uplink —
and each must stay within the domain's uplink, per direction (``check_uplinks``). The MILP keeps them there
with :mod:`solvers.uplink_rows`.

Examples
--------
Issue 30's plan: prefill on domains 0–2 (one replica each, 1.2 requests/s in all), decode on domains 0 and 2
(0.6 requests/s each), 5.2 GB of KV per request. Each prefill domain sends 5.2e9 · 0.4 = 2.08e9 B/s;
domains 0 and 2 receive 5.2e9 · 0.6 = 3.12e9 B/s each, 2.08e9 of it from their own prefill replica.
Domain 1 has no decode replica: all of its 2.08 GB/s leave it, and domains 0 and 2 take 1.04 GB/s each in.

>>> kv = {"kv": ("c|pd|prefill", "c|pd|decode", 5.2e9)}
>>> prefill = ({0: 1 / 3, 1: 1 / 3, 2: 1 / 3}, {"c|pd|prefill": 1.2})
>>> decode = ({0: 0.5, 2: 0.5}, {"c|pd|decode": 1.2})
>>> {d: tuple(round(x / 1e9, 3) for x in t) for d, t in domain_traffic(kv, [prefill, decode]).items()}
{0: (0.0, 1.04, 2.08), 1: (2.08, 0.0, 0.0), 2: (0.0, 1.04, 2.08)}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from placement.core.instance.field_types import Name
from solvers.problem import Site
from topology.records import MutableRecord

if TYPE_CHECKING:
    from placement.core.instance.context import Context

__all__ = ["UplinkPlan", "domain_traffic", "domain_uplinks", "place_in_listed_domains"]

#: Sent and received KV of one transfer in one domain closer than this share of the larger are equal (the
#: solver's loads carry 10 significant digits: 2.7 GB/s each way left 0.27 B/s "out").
SAME = 1e-9

#: Transfer name -> (source step, target step, bytes per request).
Transfers = dict[str, tuple[str, str, float]]


class UplinkPlan(MutableRecord):
    """One domain's uplink: the KV its replicas send to and receive from other domains (its own group's or
    others'), the KV handed inside it, and its bandwidth per direction."""

    site: Name
    domain: int = Field(ge=0)
    out_bytes_per_s: float = Field(description="KV leaving the domain (to other domains of its group or beyond)")
    in_bytes_per_s: float = Field(description="KV entering the domain")
    local_bytes_per_s: float = Field(description="KV handed inside the domain, on its scale-up fabric")
    capacity_bytes_per_s: float = Field(description="the domain's uplink per direction")
    utilisation: float = Field(description="max(out, in) / capacity")


def domain_traffic(transfers: Transfers, placed: Iterable[tuple[dict[int, float], dict[str, float]]],
                   ) -> dict[int, tuple[float, float, float]]:
    """Domain -> (out, in, local) bytes/s of KV, for the pools of one group (module docstring).

    ``placed``: per pool, (domain -> share of its replicas there, step -> its load at the group in
    requests/s). Only domains that send or receive KV are listed, in order.
    """
    sent: dict[tuple[str, int], float] = defaultdict(float)
    received: dict[tuple[str, int], float] = defaultdict(float)
    for shares, loads in placed:
        for name, (source, target, b) in transfers.items():
            for d, share in shares.items():
                if loads.get(source, 0.0) > 0:
                    sent[name, d] += b * loads[source] * share
                if loads.get(target, 0.0) > 0:
                    received[name, d] += b * loads[target] * share
    out: dict[int, list[float]] = {}
    for name, d in sorted(set(sent) | set(received), key=lambda k: (k[1], k[0])):
        s, r = sent.get((name, d), 0.0), received.get((name, d), 0.0)
        if abs(s - r) <= SAME * max(s, r):  # two loads the solver met to ~1e-10 of each other: all local
            s = r = max(s, r)
        row = out.setdefault(d, [0.0, 0.0, 0.0])
        row[0] += max(0.0, s - r)
        row[1] += max(0.0, r - s)
        row[2] += min(s, r)
    return {d: (o, i, local) for d, (o, i, local) in sorted(out.items())}


def place_in_listed_domains(site: Site, sizes: dict[str, tuple[int, int, list[int]]],
                            ) -> tuple[dict[str, dict[int, int]], str | None]:
    """Every replica placed in a domain its pool lists (largest first, first fit, every listed domain used).

    ``sizes``: pool -> (chips per replica, replicas, listed domain indices). A replica larger than a domain
    takes consecutive whole listed domains (and counts once in each). Returns pool -> domain -> replicas, and
    None or what does not fit.

    Examples
    --------
    >>> site = Site(name="s", node="s", resource="gpu@8", units_per_domain=8, domains=3,
    ...             usd_per_hour_per_unit=0.0, power_w_per_unit=0.0)
    >>> place_in_listed_domains(site, {"a": (4, 3, [0, 1]), "b": (16, 1, [1, 2])})
    ({'b': {1: 1, 2: 1}}, 'domains [0, 1] cannot host 3 × 4 chips of a beside what is placed there')
    >>> place_in_listed_domains(site, {"a": (4, 3, [0, 2]), "b": (8, 1, [1])})
    ({'b': {1: 1}, 'a': {0: 2, 2: 1}}, None)
    """
    size_d = site.units_per_domain
    free = [size_d] * site.domains
    placed: dict[str, dict[int, int]] = {}
    for key, (units, count, listed) in sorted(sizes.items()):
        bad = [d for d in listed if not 0 <= d < site.domains]
        if bad or len(set(listed)) != len(listed):
            return placed, f"{key} lists domains {listed}: each once, in 0 … {site.domains - 1}"
        if units < 1 or count < 0:
            return placed, f"{key}: {count} replicas of {units} chips"
    for key, (units, count, listed) in sorted(sizes.items(), key=lambda kv: (-kv[1][0], kv[0])):
        span = -(-units // size_d)
        where: dict[int, int] = defaultdict(int)
        at = 0  # first fit only moves forward: free space only shrinks and every replica is the same size
        for _ in range(count):
            while at + span <= len(listed) and not _fits(free, listed[at:at + span], units, size_d):
                at += 1
            if at + span > len(listed):
                return placed, f"domains {listed} cannot host {count} × {units} chips of {key} beside what is placed there"
            for d in listed[at:at + span]:
                free[d] -= min(units, size_d)
                where[d] += 1
        if set(where) != set(listed):
            return placed, f"{key} lists domains {sorted(set(listed) - set(where))} that none of its replicas needs"
        placed[key] = dict(sorted(where.items()))
    return placed, None


def _fits(free: list[int], run: list[int], units: int, size_d: int) -> bool:
    """One replica of ``units`` chips fits in ``run`` (one domain, or consecutive whole free domains)."""
    if units <= size_d:
        return free[run[0]] >= units
    return run[-1] - run[0] == len(run) - 1 and all(free[d] == size_d for d in run)


def replicas_per_domain(ctx: Context, pools: list[Any], group: str) -> dict[str, dict[int, int]] | None:
    """Pool id -> domain -> replicas of the pools in ``group``: as the pools state them
    (``replicas_per_domain``), else placed in the domains they list; None when they do not fit (the
    verifier's ``check_domains`` says why)."""
    here = [(p, s) for p in pools for s in p.sites if s.site == group]
    if here and all(s.replicas_per_domain and len(s.replicas_per_domain) == len(s.domains) for _, s in here):
        return {p.id: dict(zip(s.domains, s.replicas_per_domain, strict=True)) for p, s in here}
    info = ctx.sites[group]
    site = Site(name=group, node=group, resource=info.resource, units_per_domain=info.chips_per_domain,
                domains=info.group.count, usd_per_hour_per_unit=0.0, power_w_per_unit=0.0)
    placed, problem = place_in_listed_domains(
        site, {p.id: (p.chips_per_replica, s.replicas, sorted(set(s.domains))) for p, s in here})
    return None if problem is not None else placed


def domain_uplinks(ctx: Context, pools: list[Any], transfers: Transfers) -> list[UplinkPlan]:
    """Every domain that sends or receives KV, in groups attached to a switch: its uplink's use
    (:func:`domain_traffic`) and capacity (the group's per-domain uplink), by group and domain."""
    transfers = {name: t for name, t in transfers.items() if t[2] > 0}
    out: list[UplinkPlan] = []
    for group in sorted({s.site for p in pools for s in p.sites}):
        info = ctx.sites.get(group)
        if info is None or info.group.switch is None or not transfers:
            continue
        counts = replicas_per_domain(ctx, pools, group)
        if counts is None:
            continue
        placed = []
        for p in pools:
            for s in p.sites:
                total = sum(counts.get(p.id, {}).values())
                if s.site == group and s.load_rps and total:
                    placed.append(({d: n / total for d, n in counts[p.id].items()}, dict(s.load_rps)))
        cap = info.uplink_bytes_per_s
        for d, (o, i, local) in domain_traffic(transfers, placed).items():
            out.append(UplinkPlan(site=group, domain=d, out_bytes_per_s=o, in_bytes_per_s=i, local_bytes_per_s=local,
                                  capacity_bytes_per_s=cap, utilisation=round(max(o, i) / cap, 6) if cap else 0.0))
    return out
