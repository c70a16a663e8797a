"""Which prefill pool feeds which decode pool: a plan's ``prefill_to_decode``, derived from its loads and flows.

The MILP does not pair pools: it places each step's load on (column, site)
and routes each KV transfer ``class|mode|kv`` as a flow over the fleet graph
whose net out of a node is b·(prefill load − decode load) there. The feeds
are read back from those two in three steps, per transfer:

1. **Local.** At each site, min(prefill, decode) requests/s stay in the site
   (their transfer nets out and uses no edge).
2. **Across the network.** The rest of a site's prefill load (its surplus)
   leaves along the transfer's flow. The flow is decomposed into paths from
   surplus sites to deficit sites (largest edge first, names breaking ties,
   cycles cancelled); a surplus site's requests/s are split over the sites
   its paths reach in proportion to the bytes/s each path carries. A surplus
   with no flow out (a plan whose flows do not balance, which the verifier
   rejects on its own) is split in proportion to the deficits.
3. **Pools.** Within a site, a flow is shared among the prefill pools in
   proportion to their load there, and among the decode pools likewise.

The derivation reads only the plan and the transfers' step names, so the
verifier re-derives the feeds (``check_kv_feeds``) with the same function from
the instance's modes and compares them with what the plan states.

Examples
--------
Two prefill sites, one decode site; site ``b`` sends 2 req/s over its link
to ``a``:

>>> from placement.core.plans.plan import FlowPlan, Plan, Pool, PoolSite
>>> def pool(pid, stage, site, rate):
...     return Pool.model_construct(id=pid, stage=stage, part=0, traffic_class="chat", sites=[
...         PoolSite(site=site, replicas=1, load_rps={f"chat|pd|{stage}": rate})])
>>> plan = Plan.model_construct(pools=[pool("p1", "prefill", "a", 3.0), pool("p2", "prefill", "b", 2.0),
...     pool("d1", "decode", "a", 5.0)], flows=[FlowPlan(transfer="chat|pd|kv", source="b", target="a",
...     bytes_per_s=2e9)])
>>> [(f.prefill_pool, f.prefill_site, f.decode_pool, f.decode_site, f.rate_rps)
...  for f in derive_kv_feeds(plan, {"chat|pd|kv": ("chat|pd|prefill", "chat|pd|decode")})]
[('p1', 'a', 'd1', 'a', 3.0), ('p2', 'b', 'd1', 'a', 2.0)]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING

from placement.core.modes.enabled import transfers as mode_transfers
from placement.core.modes.ids import StepId
from placement.core.plans.plan import FlowPlan, KvFeed, Plan
from solvers.solution import clean

if TYPE_CHECKING:
    from placement.core.instance.context import Context

__all__ = ["FEED_EPS_RPS", "derive_kv_feeds", "kv_feeds_of", "site_feeds"]

#: Requests/s below which a load or a feed is zero (the solver's loads are exact to ~1e-7 of a class's rate).
FEED_EPS_RPS = 1e-9

#: Bytes/s below which an edge's remaining flow is spent while decomposing.
_EPS_BYTES_PER_S = 1e-6

_Feeds = dict[tuple[str, str], float]


def _paths(flows: Iterable[FlowPlan], sources: Iterable[str], sinks: set[str]) -> dict[tuple[str, str], float]:
    """Bytes/s from each source to each sink: a path decomposition of the flow (cycles cancelled)."""
    rem: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for f in flows:
        if f.source != f.target and f.bytes_per_s > 0:
            rem[f.source][f.target] += f.bytes_per_s
    net_in: dict[str, float] = defaultdict(float)
    for u, outs in rem.items():
        for v, x in outs.items():
            net_in[v] += x
            net_in[u] -= x
    sink_left = {t: net_in[t] for t in sinks if net_in[t] > _EPS_BYTES_PER_S}
    out: dict[tuple[str, str], float] = defaultdict(float)
    for s in sorted(sources):
        while True:
            path = [s]
            while path[-1] == s or path[-1] not in sink_left:
                edges = [(x, v) for v, x in rem[path[-1]].items() if x > _EPS_BYTES_PER_S]
                if not edges:
                    break
                _, nxt = min(edges, key=lambda e: (-e[0], e[1]))
                if nxt in path:  # a cycle carries nothing from s to a sink: cancel it
                    cyc = path[path.index(nxt):] + [nxt]
                    least = min(rem[a][b] for a, b in pairwise(cyc))
                    for a, b in pairwise(cyc):
                        rem[a][b] -= least
                    del path[path.index(nxt) + 1:]
                    continue
                path.append(nxt)
            t = path[-1]
            if t == s or t not in sink_left:
                break
            legs = list(pairwise(path))
            x = min(sink_left[t], *(rem[a][b] for a, b in legs))
            for a, b in legs:
                rem[a][b] -= x
            sink_left[t] -= x
            if sink_left[t] <= _EPS_BYTES_PER_S:
                del sink_left[t]
            out[s, t] += x
    return out


def site_feeds(prefill: Mapping[str, float], decode: Mapping[str, float], flows: Iterable[FlowPlan]) -> _Feeds:
    """Requests/s from each prefill site to each decode site of one transfer (module docstring, steps 1–2).

    Examples
    --------
    >>> site_feeds({"a": 4.0}, {"a": 1.0, "b": 1.0, "c": 2.0}, [])  # no flows: in proportion to the deficits
    {('a', 'a'): 1.0, ('a', 'b'): 1.0, ('a', 'c'): 2.0}
    """
    feeds: _Feeds = defaultdict(float)
    surplus, deficit = {}, {}
    for n in sorted(set(prefill) | set(decode)):
        p, d = prefill.get(n, 0.0), decode.get(n, 0.0)
        if min(p, d) > FEED_EPS_RPS:
            feeds[n, n] += min(p, d)
        if p - d > FEED_EPS_RPS:
            surplus[n] = p - d
        elif d - p > FEED_EPS_RPS:
            deficit[n] = d - p
    if not surplus:
        return dict(feeds)
    sent = _paths(flows, surplus, set(deficit))
    for s, rate in surplus.items():
        by_target = {t: x for (a, t), x in sent.items() if a == s}
        weights = by_target if sum(by_target.values()) > 0 else deficit
        total = sum(weights.values())
        for t, w in sorted(weights.items()):
            feeds[s, t] += rate * w / total
    return dict(feeds)


def derive_kv_feeds(plan: Plan, transfers: Mapping[str, tuple[str, str]]) -> list[KvFeed]:
    """The plan's feeds: per transfer (name -> source step, target step), prefill (pool, site) -> decode
    (pool, site) -> requests/s, sorted; see the module docstring."""
    feeds: list[KvFeed] = []
    for name, (src, dst) in sorted(transfers.items()):
        at: dict[str, dict[str, dict[str, float]]] = {src: defaultdict(dict), dst: defaultdict(dict)}
        for pool in plan.pools:
            if pool.part:
                continue
            for s in pool.sites:
                for step in (src, dst):
                    if s.load_rps.get(step, 0.0) > FEED_EPS_RPS:
                        at[step][s.site][pool.id] = s.load_rps[step]
        if not at[src] or not at[dst]:
            continue
        totals = {step: {site: sum(p.values()) for site, p in at[step].items()} for step in (src, dst)}
        flows = [f for f in plan.flows if f.transfer == name]
        pair: dict[tuple[str, str, str, str], float] = defaultdict(float)
        for (ps, ds), rate in site_feeds(totals[src], totals[dst], flows).items():
            for pp, lp in at[src][ps].items():
                for dp, ld in at[dst][ds].items():
                    pair[pp, ps, dp, ds] += rate * lp / totals[src][ps] * ld / totals[dst][ds]
        step = StepId.parse(src)
        feeds += [KvFeed(traffic_class=step.traffic_class, mode=step.mode, prefill_pool=pp, prefill_site=ps,
                         decode_pool=dp, decode_site=ds, rate_rps=clean(rate))
                  for (pp, ps, dp, ds), rate in sorted(pair.items()) if rate > FEED_EPS_RPS]
    return feeds


def kv_feeds_of(ctx: Context, plan: Plan) -> list[KvFeed]:
    """The feeds of ``plan`` for the transfers of the modes ``ctx``'s instance enables."""
    return derive_kv_feeds(plan, {t.id: (str(t.source), str(t.target)) for t in mode_transfers(ctx)})
