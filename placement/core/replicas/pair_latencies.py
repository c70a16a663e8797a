"""The one-way latencies between the sites of two chip types: where the two parts of a paired replica
(attention–FFN, a remote draft) may sit.

The paired modes offer a configuration at each of these latencies (:mod:`placement.modes.pd_af`,
:mod:`placement.modes.pd_draft`), the latency is part of its column's name, and the verifier re-derives
the latency a plan's pair crosses from the same table (:mod:`placement.core.verify.facts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from topology.routing import PS_PER_S, UNREACHABLE_PS

if TYPE_CHECKING:
    from placement.core.instance.context import Context

__all__ = ["pair_latencies"]


def pair_latencies(ctx: Context, res_a: str, res_b: str, memo: dict | None = None) -> list[float]:
    """Distinct one-way path latencies (s) between sites of two resources, finite only, ascending.

    The latencies of :meth:`topology.routing.Routing.latency_s`, from the lowest latencies of the sites of
    ``res_a`` alone (:meth:`~topology.routing.Routing.latencies_ps`; the paths are not needed here): the
    same integer picoseconds, each divided by :data:`~topology.routing.PS_PER_S` as ``latency_s`` does.
    ``memo`` keeps them per resource pair: every class asks again.
    """
    key = ("pair latencies", res_a, res_b)
    if memo is not None and key in memo:
        return memo[key]
    # Sites of each side first: on a fleet of hundreds of sites the pairs of the two resources are a
    # small share of all pairs of sites.
    ends = {res_a: [], res_b: []}
    for name, site in ctx.sites.items():
        if site.resource in ends:
            ends[site.resource].append(name)
    lats = set()
    if ends[res_a] and ends[res_b]:
        nodes, table = ctx.routing.latencies_ps(ends[res_a])
        found = table[:, [nodes[b] for b in ends[res_b]]]
        lats = {round(ps / PS_PER_S, 12) for ps in np.unique(found[found < UNREACHABLE_PS]).tolist()}
    if memo is not None:
        memo[key] = sorted(lats)
    return sorted(lats)
