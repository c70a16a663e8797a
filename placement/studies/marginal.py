"""Marginal values: what one more (or one fewer) domain, or more bandwidth, is worth.

For a plan of an instance this answers, per domain group, "what does one more
domain save?" and "what does losing one cost?", and per scale-out link and
domain uplink "what does ×F bandwidth save?" — as changes of the optimal cost
($/h and $/M output tokens), with the new chip mix and modes.

Method: re-solve, not LP duals
------------------------------
Every variant is a modified instance solved again as its own MILP, the
variants in parallel on :func:`placement.studies.executor.run_map` (local processes
or Ray). Exact, and the only answer that means anything here:

* A domain is a whole scale-up domain (8–256 chips) and replicas are
  integers, so the optimal cost is a step function of the fleet; a dual is a
  derivative, and the question is a finite difference.
* LP duals with the integers fixed at the plan would all be zero: the domain
  rows (Σ u·n ≤ D·m) then hold only fixed variables, and the link rows price
  only flows, whose cost in the objective is zero but for a 1e-7 tie-break.
  They would say that no domain and no link is worth anything, even when one
  more LPX rack halves the bill (it enables a different placement, which a
  fixed-integer LP cannot see).
* Not warm-started: the solver layer takes no MIP start, and most of a
  re-solve is candidate generation (which changes with the fleet: larger
  replica sizes, other pair latencies), not branch and bound. The plan is used
  instead as a *certificate*:

  - removing a domain the optimal plan leaves idle changes nothing (the plan
    still fits, and a smaller fleet cannot do better), so that row is not
    solved at all — it says ``unchanged (proof)``;
  - with one more domain or more bandwidth the plan still fits, so the new
    optimum is at most the old one; every such row is checked against this
    and a violation is reported as a warning.

A group with one domain loses the whole group for "one fewer".
"""

from __future__ import annotations

import copy
import csv
import io
from typing import Any

from pydantic import Field

from placement.core.instance.errors import InputError, VerificationError
from placement.core.instance.paths import instance_document, set_path
from placement.core.plans.numbers import num
from placement.studies.sweep import Job, run_jobs
from solvers.backends import DEFAULT_BACKEND
from topology.records import MutableRecord

__all__ = ["METHOD", "MarginalResult", "MarginalRow", "marginal", "variants"]

METHOD = ("re-solve each variant from scratch (exact; in parallel), with the plan as a certificate: removing a "
          "domain the optimal plan leaves idle is proven not to change the optimum, and adding capacity can only "
          "lower it. Not LP duals with the integers fixed: those are zero for every domain and link (the domain rows "
          "then hold only fixed variables, flows cost nothing), while a domain or link changes the optimum in "
          "integer steps by enabling another placement.")

_TOL = 1e-9


class MarginalRow(MutableRecord):
    """One variant of the fleet and its optimum."""


    kind: str = Field(description="domain+1 | domain-1 | uplink | link")
    target: str = Field(description="domain group, or link SRC/DST")
    change: str
    method: str = Field(description="re-solved | unchanged (proof)")
    status: str
    cost_usd_per_hour: float | None = None
    delta_usd_per_hour: float | None = Field(default=None, description="new optimum − base optimum")
    usd_per_million_output_tokens: float | None = None
    delta_usd_per_million_output_tokens: float | None = None
    chips_by_type: dict[str, int] = Field(default_factory=dict)
    modes: dict[str, float] = Field(default_factory=dict)
    utilisation: float | None = Field(default=None, description="the link's or uplink's use in the plan")
    chips_used: int | None = Field(default=None, description="chips of the group the plan uses")
    message: str = ""


class MarginalResult(MutableRecord):

    instance: str
    method: str
    plan_cost_usd_per_hour: float | None
    base_status: str
    base_cost_usd_per_hour: float | None
    base_usd_per_million_output_tokens: float | None
    bandwidth_factor: float
    rows: list[MarginalRow]
    warnings: list[str] = Field(default_factory=list)


def _plan_chips_in_group(plan, group: str) -> int:
    return sum(s.replicas * p.chips_per_replica for p in plan.pools for s in p.sites if s.site == group)


def _link_utilisation(plan, a: str, b: str) -> float | None:
    u = [lk.utilisation for lk in plan.links if {lk.source, lk.target} == {a, b}]
    return max(u) if u else None


def variants(inst, plan, factor: float, shortcut: bool = True) -> list[tuple[dict, dict | None]]:
    """(row fields, modified document — None when proven unchanged) for every variant, in instance order."""
    from placement.core.instance.context import Context

    if not factor > 1:
        raise InputError(f"expected a bandwidth factor > 1, got {factor}", field="--bandwidth-factor")
    ctx = Context.of(inst)
    base = instance_document(inst)
    out: list[tuple[dict, dict | None]] = []
    proof = shortcut and plan is not None and plan.status == "optimal"
    for d in inst.hardware.domains:
        size = ctx.sites[d.name].chips_per_domain
        used = _plan_chips_in_group(plan, d.name) if plan is not None else None
        doc = copy.deepcopy(base)
        set_path(doc, f"hardware.domains.{d.name}.count", d.count + 1)
        out.append(({"kind": "domain+1", "target": d.name, "change": f"count {d.count} → {d.count + 1} "
                     f"(+{size} {d.chip})", "chips_used": used}, doc))
        row = {"kind": "domain-1", "target": d.name, "chips_used": used,
               "change": f"count {d.count} → {d.count - 1} (−{size} {d.chip})" if d.count > 1
               else f"remove the group (its only {size} {d.chip})"}
        if proof and used is not None and used <= (d.count - 1) * size:
            out.append((row, None))
            continue
        doc = copy.deepcopy(base)
        if d.count > 1:
            set_path(doc, f"hardware.domains.{d.name}.count", d.count - 1)
        else:
            doc["hardware"]["domains"] = [x for x in doc["hardware"]["domains"] if x["name"] != d.name]
            if not any(x["chip"] == d.chip for x in doc["hardware"]["domains"]):
                doc["measured_capacity"] = [m for m in doc.get("measured_capacity", []) if m["chip"] != d.chip]
                doc["measured_step_time"] = [m for m in doc.get("measured_step_time", []) if m["chip"] != d.chip]
            if not doc["hardware"]["domains"]:
                row["message"] = "no domain group left"
        out.append((row, doc))
    for d in inst.hardware.domains:
        if d.switch is None:
            continue
        gbps = ctx.sites[d.name].uplink_bytes_per_s / 1e9
        doc = copy.deepcopy(base)
        set_path(doc, f"hardware.domains.{d.name}.uplink_gb_per_s", float(f"{gbps * factor:.12g}"))
        out.append(({"kind": "uplink", "target": d.name, "change": f"uplink {num(gbps)} → {num(gbps * factor)} GB/s",
                     "utilisation": _link_utilisation(plan, d.name, d.switch) if plan is not None else None}, doc))
    for i, link in enumerate(inst.hardware.links):
        doc = copy.deepcopy(base)
        set_path(doc, f"hardware.links.{i}.bandwidth_gb_per_s", float(f"{link.bandwidth_gb_per_s * factor:.12g}"))
        out.append(({"kind": "link", "target": f"{link.source}/{link.target}",
                     "change": f"{num(link.bandwidth_gb_per_s)} → {num(link.bandwidth_gb_per_s * factor)} GB/s",
                     "utilisation": _link_utilisation(plan, link.source, link.target) if plan is not None else None},
                    doc))
    return out


def marginal(
    inst,
    plan=None,
    *,
    source: str = "<instance>",
    bandwidth_factor: float = 2.0,
    backend: str = DEFAULT_BACKEND,
    time_limit_s: float | None = None,
    gap: float | None = None,
    shortcut: bool = True,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress=None,
) -> MarginalResult:
    """Re-solve the base instance and every variant; rows in instance order.

    ``plan`` (optional) is the plan being asked about: verified against the
    instance, used for utilisations, chips used and the idle-domain shortcut
    (``shortcut=False`` solves those rows too).
    """
    from placement.core.instance.loading import parse_instance

    warnings: list[str] = []
    if plan is not None:
        from placement.core.instance.context import Context
        from placement.core.verify.verifier import verify

        if plan.instance != inst.name:
            raise InputError(f"plan is for instance {plan.instance!r}, not {inst.name!r}", field="instance")
        if plan.status not in ("optimal", "feasible", "time_limit") or not plan.pools:
            raise InputError(f"plan has status {plan.status!r}; expected a plan with pools", field="status")
        # Feasibility only: the plan may state the figures of an earlier version of the instance.
        violations = verify(Context.of(inst, source), plan, stated_fields=False)
        if violations:
            raise VerificationError(f"the plan breaks a constraint of the instance: {violations[0]}")
    vs = variants(inst, plan, bandwidth_factor, shortcut)
    jobs, slots = [Job(inst, backend, time_limit_s, gap, source, ())], []
    for k, (row, doc) in enumerate(vs):
        if doc is None or not doc["hardware"]["domains"]:
            continue
        try:
            vinst = parse_instance(doc, source=source)
        except InputError as e:
            raise InputError(f"variant {row['kind']} {row['target']}: {e.detail}", file=source, field=e.field) from None
        jobs.append(Job(vinst, backend, time_limit_s, gap, source, ()))
        slots.append(k)
    outcomes = run_jobs(jobs, executor=executor, workers=workers, address=address, progress=progress)
    base = outcomes[0].value if outcomes[0].ok else {"status": "failed", "message": outcomes[0].error}
    base_ok = base.get("cost_usd_per_hour") is not None
    b_cost, b_usd = base.get("cost_usd_per_hour"), base.get("usd_per_million_output_tokens")
    if plan is not None and base_ok and plan.cost_usd_per_hour is not None \
            and plan.cost_usd_per_hour > b_cost * (1 + 1e-6) + _TOL:
        warnings.append(f"the plan costs ${plan.cost_usd_per_hour:,.2f}/h but the optimum is ${b_cost:,.2f}/h; "
                        "deltas are against the optimum")
    solved = dict(zip(slots, outcomes[1:]))
    stale = plan is not None and (not base_ok or plan.cost_usd_per_hour is None
                                  or abs(plan.cost_usd_per_hour - b_cost) > 1e-6 * b_cost + _TOL)
    proved = [k for k, (_, doc) in enumerate(vs) if doc is None]
    if proved and stale:
        # The plan is not this instance's optimum, so its idle domains prove nothing: solve those rows too.
        full = variants(inst, plan, bandwidth_factor, shortcut=False)
        extra = [Job(parse_instance(full[k][1], source=source), backend, time_limit_s, gap, source, ())
                 for k in proved]
        more = run_jobs(extra, executor=executor, workers=workers, address=address, progress=progress)
        for k, o in zip(proved, more):
            vs[k] = (vs[k][0], full[k][1])
            solved[k] = o
        warnings.append("the plan is not this instance's optimum, so every row was re-solved (no idle-domain proof)")
    rows = []
    for k, (row, doc) in enumerate(vs):
        if doc is None:
            rows.append(MarginalRow(**row, method="unchanged (proof)", status=base.get("status", "failed"),
                                    cost_usd_per_hour=b_cost, delta_usd_per_hour=0.0 if base_ok else None,
                                    usd_per_million_output_tokens=b_usd,
                                    delta_usd_per_million_output_tokens=0.0 if base_ok else None,
                                    chips_by_type=base.get("chips_by_type", {}), modes=base.get("modes", {}),
                                    message=f"the plan uses {row['chips_used']} chips of {row['target']}, which fit "
                                            "in one domain fewer"))
            continue
        if k not in solved:
            rows.append(MarginalRow(**row, method="not solved", status="infeasible",
                                    message=row.get("message", "") or "nothing left to solve"))
            continue
        o = solved[k]
        v = o.value if o.ok else {"status": "failed", "message": o.error or "failed"}
        cost, usd = v.get("cost_usd_per_hour"), v.get("usd_per_million_output_tokens")
        r = MarginalRow(**{**row, "message": row.get("message", "") or v.get("message", "")}, method="re-solved",
                        status=v["status"], cost_usd_per_hour=cost,
                        delta_usd_per_hour=None if cost is None or not base_ok else round(cost - b_cost, 9),
                        usd_per_million_output_tokens=usd,
                        delta_usd_per_million_output_tokens=None if usd is None or b_usd is None
                        else round(usd - b_usd, 9),
                        chips_by_type=v.get("chips_by_type", {}), modes=v.get("modes", {}))
        if row["kind"] != "domain-1" and base_ok and (cost is None or cost > b_cost * (1 + 1e-6) + _TOL):
            warnings.append(f"{row['kind']} {row['target']}: more capacity gave {v['status']} "
                            f"{'' if cost is None else f'${cost:,.2f}/h'} against ${b_cost:,.2f}/h before; "
                            "the solver did not reach the optimum (time limit or gap?)")
        rows.append(r)
    return MarginalResult(instance=inst.name, method=METHOD,
                          plan_cost_usd_per_hour=plan.cost_usd_per_hour if plan is not None else None,
                          base_status=base.get("status", "failed"), base_cost_usd_per_hour=b_cost,
                          base_usd_per_million_output_tokens=b_usd, bandwidth_factor=bandwidth_factor, rows=rows,
                          warnings=warnings)


def to_csv(result: MarginalResult) -> str:
    chips = sorted({c for r in result.rows for c in r.chips_by_type})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kind", "target", "change", "method", "status", "cost_usd_per_hour", "delta_usd_per_hour",
                "usd_per_million_output_tokens", "delta_usd_per_million_output_tokens", "utilisation", "chips_used"]
               + [f"chips:{c}" for c in chips] + ["message"])

    def f(x: Any):
        return "" if x is None else x

    for r in result.rows:
        w.writerow([r.kind, r.target, r.change, r.method, r.status, f(r.cost_usd_per_hour), f(r.delta_usd_per_hour),
                    f(r.usd_per_million_output_tokens), f(r.delta_usd_per_million_output_tokens), f(r.utilisation),
                    f(r.chips_used)] + [r.chips_by_type.get(c, 0) for c in chips] + [r.message])
    return buf.getvalue()
