"""Checks of what operators read off a plan: which prefill pool feeds which decode pool, and the pool limit.

* ``check_kv_feeds``: the plan's ``prefill_to_decode`` = the feeds re-derived from its
  loads and KV-transfer flows (:func:`placement.core.kv.kv_feeds.derive_kv_feeds`,
  with the transfers of the instance's modes), record by record within
  :data:`~placement.core.verify.facts.RTOL` of the class's rate. Plans written
  before the feeds were recorded (plan schema 1) state none and are not asked to.
* ``check_pool_limit``: at most N pools carry load of each class and stage,
  N the tighter of the limit the plan records (``max_pools_per_stage``) and
  the instance's ``limits.max_pools_per_stage``. A pool carries a step when its
  load there exceeds RTOL of the class's rate (the solver's integrality
  tolerance leaves no more on a pool it switched off).

Examples
--------
>>> from placement.core.verify.operate import pools_per_stage
>>> from placement.core.plans.plan import Pool, PoolSite
>>> pools = [Pool.model_construct(id=i, part=0, sites=[PoolSite(site="s", replicas=1, load_rps={
...     "a|pd|decode": 1.0, "a|pd-af|decode": 0.5})]) for i in ("p1", "p2")]
>>> pools_per_stage(pools, {"a": 10.0})
{('a', 'decode'): ['p1', 'p2']}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from placement.core.instance.context import Context
from placement.core.kv.kv_feeds import kv_feeds_of
from placement.core.modes.ids import StepId
from placement.core.plans.plan import Plan, Pool
from placement.core.verify.facts import RTOL

__all__ = ["check_kv_feeds", "check_pool_limit", "pools_per_stage"]


def _class_rates(ctx: Context) -> dict[str, float]:
    return {c.name: c.rate_rps for c in ctx.instance.workload.classes}


def check_kv_feeds(ctx: Context, plan: Plan) -> list[str]:
    """The stated ``prefill_to_decode`` = the re-derived ones (module docstring)."""
    old = plan.provenance is not None and plan.provenance.schema_version == "1"
    if old and not plan.prefill_to_decode:
        return []
    rates = _class_rates(ctx)

    def keyed(feeds) -> dict[tuple[str, ...], float]:
        out: dict[tuple[str, ...], float] = defaultdict(float)
        for f in feeds:
            out[f.traffic_class, f.mode, f.prefill_pool, f.prefill_site, f.decode_pool, f.decode_site] += f.rate_rps
        return out

    says, gives = keyed(plan.prefill_to_decode), keyed(kv_feeds_of(ctx, plan))
    v = []
    for key in sorted(set(says) | set(gives)):
        a, b = says.get(key, 0.0), gives.get(key, 0.0)
        if abs(a - b) > RTOL * max(rates.get(key[0], 0.0), abs(b), 1.0):
            c, m, pp, ps, dp, ds = key
            v.append(f"prefill_to_decode: class {c} ({m}): prefill pool {pp} in {ps} -> decode pool {dp} in {ds} says "
                     f"{a:.6g} req/s, its loads and KV flows give {b:.6g}")
    return v


def pools_per_stage(pools: Iterable[Pool], class_rates: Mapping[str, float]) -> dict[tuple[str, str], list[str]]:
    """(class, stage) -> ids of the pools (main parts) carrying load of it, in plan order."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for p in pools:
        if p.part:
            continue
        carried = set()
        for s in p.sites:
            for step, rate in s.load_rps.items():
                st = StepId.parse(step)
                if rate > RTOL * class_rates.get(st.traffic_class, 1.0):
                    carried.add((st.traffic_class, st.stage))
        for key in sorted(carried):
            out[key].append(p.id)
    return dict(out)


def check_pool_limit(ctx: Context, plan: Plan) -> list[str]:
    """No class and stage is carried by more pools than the plan's or the instance's max_pools_per_stage."""
    limits = [n for n in (plan.max_pools_per_stage, ctx.instance.limits.max_pools_per_stage) if n is not None]
    if not limits:
        return []
    n = min(limits)
    return [f"class {c}, stage {stage}: {len(ids)} pools carry load ({', '.join(ids)}); max_pools_per_stage "
            f"is {n}" for (c, stage), ids in sorted(pools_per_stage(plan.pools, _class_rates(ctx)).items())
            if len(ids) > n]
