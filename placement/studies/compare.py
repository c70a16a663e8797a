"""The heterogeneous plan beside every homogeneous fleet and every single mode.

Each alternative re-solves the instance with part of it removed: only the
domain groups of one chip type, or only one serving mode; with session
classes, also each other ``--kv-policy`` (HBM only, recompute every prefix).
``savings`` says what the full heterogeneous plan saves against each, in the
instance's objective
(1 − full value / its value: $/h for ``cost``, W for ``power``, chips for
``chips``; ``savings_of`` names it).

Examples
--------
>>> import placement
>>> from placement.studies.compare import compare
>>> rows = compare(placement.load_instance("instances/melange-toy.yaml"))  # doctest: +SKIP
>>> [(r.label, r.cost_usd_per_hour) for r in rows]                         # doctest: +SKIP
[('heterogeneous, all modes', 6.7), ('only a100-80gb', 7.34), ('only a10g', 30.3)]
"""

from __future__ import annotations

from collections.abc import Callable

from placement.core.instance.objectives import objective
from placement.core.instance.schema import Instance
from placement.core.pipeline.solve import solve
from placement.core.plans.plan import Comparison, Plan
from solvers.backends import DEFAULT_BACKEND

__all__ = ["compare", "kv_variants", "objective_value", "reason_of", "variants", "with_comparisons"]


def variants(inst: Instance) -> list[tuple[str, str, Instance]]:
    """(label, kind, instance) for the full fleet, each chip type alone, each mode alone."""
    out = [("heterogeneous, all modes", "full", inst)]
    chips = sorted({d.chip for d in inst.hardware.domains})
    if len(chips) > 1:
        for chip in chips:
            doms = [d for d in inst.hardware.domains if d.chip == chip]
            hw = inst.hardware.model_copy(update={"domains": doms})
            measured = [m for m in inst.measured_capacity if m.chip == chip]
            out.append((f"only {chip}", "homogeneous",
                        inst.model_copy(update={"hardware": hw, "measured_capacity": measured})))
    if len(inst.modes) > 1:
        for mode in inst.modes:
            out.append((f"only mode {mode}", "mode", inst.model_copy(update={"modes": [mode]})))
    return out


def kv_variants(inst: Instance) -> list[tuple[str, str]]:
    """(label, --kv-policy) of the KV policies other than the instance's default, when it has session classes."""
    if not any(c.sessions is not None for c in inst.workload.classes):
        return []
    default = "tiered" if any(d.kv_tiers for d in inst.hardware.domains) else "hbm-only"
    return [(f"KV policy {p}", p) for p in ("tiered", "hbm-only", "none") if p != default]


def objective_value(plan: Plan, name: str) -> float | None:
    """What objective ``name`` (:mod:`placement.core.instance.objectives`) measures of a verified plan: $/h, W, chips.

    Raises
    ------
    ValueError
        ``name`` is not a registered objective.
    """
    try:
        measured = objective(name)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    if not plan.verified:
        return None
    value = measured.of_plan(plan)
    return None if value is None else float(value)


def reason_of(plan: Plan) -> str | None:
    """Why ``plan`` is no verified placement, in one sentence (None when it is one).

    Examples
    --------
    >>> reason_of(Plan(instance="t", status="infeasible", objective="cost", diagnosis=["class a: TPOT floor 31 ms"]))
    'class a: TPOT floor 31 ms'
    >>> reason_of(Plan(instance="t", status="time_limit", objective="cost", message="no incumbent after 5 s"))
    'no incumbent after 5 s'
    """
    if plan.verified and plan.status in ("optimal", "feasible", "time_limit"):
        return None
    for text in (*plan.diagnosis, plan.message, *plan.violations):
        if text:
            return text
    return f"status {plan.status}"


def _row(label: str, kind: str, plan: Plan, full_value: float | None, objective: str) -> Comparison:
    ok = plan.status in ("optimal", "feasible", "time_limit") and plan.verified
    value = objective_value(plan, objective) if ok else None
    classes = [c for c in plan.classes if c.kv_retention is None]  # a session class: its outcome classes count
    return Comparison(
        label=label, kind=kind, status=plan.status, cost_usd_per_hour=plan.cost_usd_per_hour if ok else None,
        chips=plan.chips if ok else None, power_w=plan.power_w if ok else None,
        usd_per_million_output_tokens=plan.usd_per_million_output_tokens if ok else None,
        modes={m: round(sum(c.modes.get(m, 0) * c.rate_rps for c in classes), 9)
               for m in sorted({m for c in classes for m in c.modes})} if ok else {},
        chips_by_type=plan.chips_by_type if ok else {},
        savings=round(1 - full_value / value, 9) if value and full_value is not None else None,
        savings_of=objective,
        reason=reason_of(plan),
    )


def compare(inst: Instance, *, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
            source: str = "<instance>", full: Plan | None = None,
            progress: Callable[[int, int], None] | None = None) -> list[Comparison]:
    """Solve the full instance (unless ``full`` is given) and every variant of it; ``progress(done, total)``
    after each solve."""
    rows: list[Comparison] = []
    full_value = None
    todo, kv = variants(inst), kv_variants(inst)
    total = len(todo) + len(kv)
    for label, kind, variant in todo:
        if kind == "full" and full is not None:
            plan = full
        else:
            plan = solve(variant, backend=backend, time_limit_s=time_limit_s, source=source)
        if kind == "full":
            full_value = objective_value(plan, inst.objective)
        rows.append(_row(label, kind, plan, full_value, inst.objective))
        if progress is not None:
            progress(len(rows), total)
    for label, policy in kv:
        plan = solve(inst, backend=backend, time_limit_s=time_limit_s, source=source, kv_policy=policy)
        rows.append(_row(label, "kv", plan, full_value, inst.objective))
        if progress is not None:
            progress(len(rows), total)
    return rows


def with_comparisons(plan: Plan, inst: Instance, *, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
                     source: str = "<instance>") -> Plan:
    """``plan`` with the best homogeneous plans and single-mode plans attached, with savings."""
    rows = compare(inst, backend=backend, time_limit_s=time_limit_s, source=source, full=plan)
    return plan.model_copy(update={"comparisons": rows[1:]})
