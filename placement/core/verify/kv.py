"""Session classes and KV tiers: the plan's retention re-derived from the instance.

A plan for an instance with session classes lists, for each, its policies
(``kv_retention``: tier, window, share) and serves its outcome classes
(:mod:`placement.core.kv.kvmodel`) as classes of their own. Only the shares are
the plan's choice; everything else is re-derived here and compared:

* each policy exists for the plan's ``kv_policy`` (tier and window on the grid);
  shares are ≥ 0 and sum to 1 per class;
* hit rate, residence, KV held (Little's law) and reload time of each policy;
* each tier's capacity, use, read and write bandwidth and holding cost per
  domain group, and its rows: held ≤ capacity, reloads ≤ bandwidth, offloads ≤
  write bandwidth, HBM-parked KV ≤ the headroom of the replicas serving the HBM
  outcome;
* each tier's hits served by pools in the group that holds them (first-step
  load of the outcome class there = λ·Σ π·h of that group's policies);
* a remote store's reloads and offloads (``kv_flows``) on the lowest-latency
  paths between its node and each group; the link checks count them in each
  link's load;
* the session class's summary line (rate, SLOs, mode shares, worst TTFT/TPOT of
  its outcome classes).

The rest of the verifier then checks the plan against the instance whose
session classes are replaced by their outcome classes at the rates the shares
give (λ·Σ π·h and λ·Σ π·(1 − h)), with the holding cost in the totals.

Examples
--------
>>> from placement.core.verify.kv import check_kv  # doctest: +SKIP
>>> ctx_expanded, violations = check_kv(ctx, plan)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math

from placement.core.instance.context import Context
from placement.core.kv.kvmodel import POLICY_MODES, expand, outcome_name
from placement.core.kv.kvplan import kv_facts, session_summary
from placement.core.plans.plan import Plan
from placement.core.verify.facts import close

__all__ = ["check_kv", "has_sessions"]


def has_sessions(ctx: Context) -> bool:
    """Whether the instance has a class with ``sessions``."""
    return any(c.sessions is not None for c in ctx.instance.workload.classes)


def _same(a, b) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return close(float(a), float(b), 1e-6)
    return a == b


def check_kv(ctx: Context, plan: Plan) -> tuple[Context, list[str]]:
    """(the expanded context to verify the rest against, the violations of the KV fields)."""
    if plan.kv_policy not in POLICY_MODES:
        why = f"kv_policy: says {plan.kv_policy!r}; a plan for session classes names one of {', '.join(POLICY_MODES)}"
        return ctx, [why]
    v: list[str] = []
    offered = expand(ctx, plan.kv_policy)
    v += [f"classes[{i}].kv_retention: class {cp.name!r} is not a session class of the instance"
          for i, cp in enumerate(plan.classes) if cp.kv_retention is not None and cp.name not in offered.policies]
    index = {cp.name: i for i, cp in enumerate(plan.classes)}
    shares: dict[str, dict[str, float]] = {}
    for cname, ps in sorted(offered.policies.items()):
        i = index.get(cname)
        if i is None or plan.classes[i].kv_retention is None:
            v.append(f"class {cname}: a session class needs its kv_retention")
            continue
        known = {p.name: p for p in ps}
        mine: dict[str, float] = {}
        for j, e in enumerate(plan.classes[i].kv_retention):
            where = f"classes[{i}].kv_retention[{j}]"
            if e.policy not in known:
                v.append(f"{where}.policy: {e.policy!r} is not a policy {plan.kv_policy} offers class {cname}")
                continue
            if not (math.isfinite(e.share) and 0 <= e.share <= 1 + 1e-9) or e.policy in mine:
                v.append(f"{where}.share: {e.share!r} is not a share in [0, 1] of a policy listed once")
                continue
            mine[e.policy] = e.share
        if mine and abs(sum(mine.values()) - 1.0) > 1e-6:
            v.append(f"classes[{i}].kv_retention: shares sum to {sum(mine.values()):.9g}, not 1")
        shares[cname] = mine
    if v:
        return ctx, v
    exp = expand(ctx, plan.kv_policy, shares)
    facts = kv_facts(ctx, exp, shares, plan)
    for cname, entries in facts.retention.items():
        i = index[cname]
        said = {e.policy: (j, e) for j, e in enumerate(plan.classes[i].kv_retention)}
        for e in entries:
            j, s = said[e.policy]
            for name, gives in e.model_dump().items():
                if not _same(getattr(s, name), gives):
                    v.append(f"classes[{i}].kv_retention[{j}].{name}: says {getattr(s, name)!r}, the instance "
                             f"gives {gives!r}")
        summary = session_summary(ctx, exp, plan.classes, plan, entries, cname)
        for name in ("rate_rps", "modes", "ttft_ms", "tpot_ms", "ttft_slo_ms", "tpot_slo_ms"):
            says, gives = getattr(plan.classes[i], name), getattr(summary, name)
            ok = (says.keys() == gives.keys() and all(_same(says[k], gives[k]) for k in gives)
                  if isinstance(gives, dict) else _same(says, gives) if gives is not None else says is None)
            if not ok:
                v.append(f"classes[{i}].{name}: says {says!r}, its outcome classes give {gives!r}")
        if summary.ttft_ms is not None and summary.ttft_ms > ctx.classes[cname].ttft_ms * (1 + 1e-6):
            v.append(f"class {cname}: TTFT {summary.ttft_ms:.3f} ms (reloads included) exceeds its "
                     f"{ctx.classes[cname].ttft_ms} ms")
    v += [f"kv tier {t}: {what} used {used:.6g} exceeds {limit:.6g}" for t, what, used, limit in facts.over]
    v += [f"class {name}: its pools in {g} serve {got:.9g} req/s of hits, the shares keep {want:.9g} req/s of KV "
          f"there" for name, g, got, want in facts.misplaced]
    want_flows = {(f.transfer, f.source, f.target): f.bytes_per_s for f in facts.flows}
    said_flows = {(f.transfer, f.source, f.target): f.bytes_per_s for f in plan.kv_flows}
    for key in sorted(want_flows.keys() | said_flows.keys()):
        if not _same(said_flows.get(key, 0.0), want_flows.get(key, 0.0)):
            v.append(f"kv_flows: {key[0]} on {key[1]}->{key[2]} says {said_flows.get(key, 0.0):.9g} B/s, the "
                     f"shares give {want_flows.get(key, 0.0):.9g}")
    want = [u.model_dump() for u in facts.tiers]
    said_tiers = [u.model_dump() for u in plan.kv_tiers]
    if len(want) != len(said_tiers):
        v.append(f"kv_tiers: lists {len(said_tiers)} tier uses, the instance and shares give {len(want)}")
    else:
        for k, (s, w) in enumerate(zip(said_tiers, want, strict=True)):
            v += [f"kv_tiers[{k}].{f}: says {s[f]!r}, the instance and shares give {w[f]!r}"
                  for f in w if not _same(s[f], w[f])]
    if not _same(plan.kv_usd_per_hour, facts.usd_per_hour):
        v.append(f"kv_usd_per_hour: says {plan.kv_usd_per_hour!r}, the tiers' use gives {facts.usd_per_hour!r}")
    served = {outcome_name(c, o) for c in offered.policies for o in ("miss", "hbm", *offered.tiers)}
    stray = [cp.name for cp in plan.classes if cp.name in served and cp.name not in exp.context.classes]
    v += [f"class {n}: listed, but the shares send no calls to it" for n in stray]
    return dataclasses.replace(exp.context, kv_usd_per_hour=facts.usd_per_hour), v
