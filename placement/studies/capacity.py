"""Capacity of a fleet as given: the largest rate each class — or the instance's mix — is served at under its SLOs.

A capacity planner's first question. For a *target* (one class alone, the others at rate 0; or every class
together, their rates in the instance's proportions) the answer is the largest scale ``s*`` of the target's
rates at which the fleet — the instance's domain groups at their counts, its power and budget limits — still
has a verified plan::

    s* = max { s ≥ 0 : the placement MILP with rates s·λ_k (k in the target) has a plan }

Feasibility is monotone in ``s`` (a plan for s serves any s' < s with the same replicas), so ``s*`` is found
by search on the MILP: a bracket ``[lo, hi]`` (``lo`` servable, ``hi`` not) from the instance's rates,
grown geometrically, then bisected in ratio until ``hi / lo ≤ 1 + rtol``. Each probe is a whole solve of
the scaled instance: candidates are generated once (rates are not part of the candidate key,
:mod:`placement.core.replicas.candidate_cache`), probes stop at a loose gap (only feasibility matters) and are not
diagnosed; the plan at ``lo`` is then solved to the instance's own optimality gap and passes the
independent verifier. ``hi``'s infeasibility is the solver's word (with ``lo``'s plan verified, the
reported capacity is a proven lower bound within ``rtol`` of the solver's optimum).

Near the limit a probe can be hard: a fleet that almost serves the load leaves the MILP a long proof
that no plan exists (minutes on the Rubin + LPX fleet). Each probe therefore has a budget
(``probe_time_limit_s``, :data:`PROBE_TIME_LIMIT_S`); a probe that ends it with neither a plan nor a proof
is *undecided*: the search counts it unservable, so ``s*`` stays a verified lower bound, and the record
names the undecided scales (status ``lower_bound`` when the bracket's top is one of them: the capacity
lies between ``s*`` and the smallest scale proven unservable, or is unbounded above). With the budget
the answer can depend on the machine's speed, only where a probe is undecided; ``None`` waits for
every proof.

The band: the same search with every roofline step time at the error band's 90 % and 10 % quantiles
(:mod:`costmodels.bands`, ``Instance.confidence``): the capacity nine fleets in ten reach or beat, and one in
ten. Pools priced from measurements carry no band: a fleet of them has the same capacity at every level.

Examples
--------
>>> from placement.core.instance.loading import load_instance
>>> inst = load_instance("instances/melange-toy.yaml")
>>> mix = capacity(inst, targets=["mix"], backend="highs", band=False)[0]
>>> mix.status, mix.verified, mix.chips <= 32, round(mix.scale, 2) >= 1
('optimal', True, True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from pydantic import Field

from placement.core.instance.errors import InputError
from placement.core.instance.schema import Instance
from placement.core.operations.profile import with_rates
from placement.core.plans.plan import Plan
from solvers.backends import DEFAULT_BACKEND
from topology.records import MutableRecord

__all__ = ["MIX", "Capacity", "capacity", "largest_scale"]

#: The target that scales every class together, in the instance's proportions.
MIX = "mix"

#: Default relative width of the final bracket: s* is found within 0.1 %.
RTOL = 1e-3

#: Optimality gap of the probes: only whether a plan exists matters there.
PROBE_GAP = 0.5

#: Seconds one probe may take before it is undecided (counted unservable; module notes).
PROBE_TIME_LIMIT_S = 30.0

#: The geometric search gives up beyond this scale of the starting rates (a fleet "without" a limit: a
#: target whose demand the fleet never exhausts, e.g. one whose classes are all at rate 0).
MAX_SCALE = 2.0**40

#: Error-band levels the capacity is reported at: step times at the 90 % quantile give the pessimistic
#: (p10) capacity, at the 10 % quantile the optimistic (p90) one.
BAND_CONFIDENCE = {"p10": 0.9, "p90": 0.1}


class Capacity(MutableRecord):
    """The largest servable rate of one target on the fleet as given, and the plan that serves it."""

    target: str = Field(description="a class name, or 'mix' for every class in the instance's proportions")
    status: str = Field(description="optimal (bracket within rtol), lower_bound (the bracket's top an "
                                    "undecided probe: s* verified, the limit above it unproven), unbounded (no "
                                    "limit found below MAX_SCALE), none (not even a tiny rate is servable) or "
                                    "time_limit")
    scale: float = Field(description="s*: the largest servable multiple of the target's instance rates")
    scale_infeasible: float | None = Field(description="the smallest multiple found unservable (the bracket's top)")
    undecided_scales: list[float] = Field(default_factory=list, description="multiples whose probe ended its "
                                          "time budget with neither a plan nor a proof (counted unservable)")
    scale_proven_unservable: float | None = Field(default=None, description="the smallest multiple the solver "
                                                  "proved unservable (with status lower_bound, the limit lies "
                                                  "between scale and it)")
    rate_rps: dict[str, float] = Field(description="class -> requests/s at s*")
    output_tokens_per_s: float
    chips: int = Field(description="chips the plan at s* uses")
    fleet_chips: int = Field(description="chips the fleet has")
    output_tokens_per_s_per_chip: float = Field(description="output tokens/s per chip the plan uses")
    cost_usd_per_hour: float | None
    verified: bool
    band_output_tokens_per_s: dict[str, float] = Field(
        default_factory=dict, description="p10 / p90 of the capacity (output tokens/s) over the error band")
    solves: int = Field(description="MILP solves the search took (the band's included)")
    diagnosis: list[str] = Field(default_factory=list, description="why not even a tiny rate is servable "
                                                                   "(status none): the instance rate's diagnosis")
    plan: Plan | None = Field(default=None, repr=False)


def largest_scale(servable: Callable[[float], Plan | None], start: float = 1.0, rtol: float = RTOL,
                  max_scale: float = MAX_SCALE, deadline: float | None = None
                  ) -> tuple[float, float | None, Plan | None, int, str]:
    """The largest ``s`` with ``servable(s)`` a plan, by geometric bracketing then bisection in ratio.

    Returns ``(lo, hi, plan at lo, probes, status)``; ``hi`` is None when no unservable scale was met below
    ``max_scale`` (status ``unbounded``); ``lo`` is 0 with status ``none`` when nothing down to
    ``start / max_scale`` is servable. ``deadline`` (``time.monotonic()``) stops the search, status
    ``time_limit``, with the bracket reached.

    Examples
    --------
    >>> lo, hi, plan, n, status = largest_scale(lambda s: "plan" if s <= 3.7 else None, start=1.0, rtol=1e-4)
    >>> round(lo, 3), round(hi, 3), status, n < 30
    (3.7, 3.7, 'optimal', True)
    """
    probes = 0

    def probe(s: float) -> Plan | None:
        nonlocal probes
        probes += 1
        return servable(s)

    def late() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    lo, hi, best = 0.0, None, probe(start)
    if best is not None:
        lo, step = start, 2.0
        while hi is None:
            if lo * step > start * max_scale:
                return lo, None, best, probes, "unbounded"
            if late():
                return lo, hi, best, probes, "time_limit"
            found = probe(lo * step)
            if found is not None:
                lo, best, step = lo * step, found, step * step  # the limit is far: widen the stride
            else:
                hi = lo * step
    else:
        hi = start
        while best is None:
            if hi / 2.0 < start / max_scale:
                return 0.0, hi, None, probes, "none"
            if late():
                return 0.0, hi, None, probes, "time_limit"
            best = probe(hi / 2.0)
            if best is None:
                hi = hi / 2.0
            else:
                lo = hi / 2.0
    while hi / lo > 1.0 + rtol:
        if late():
            return lo, hi, best, probes, "time_limit"
        mid = math.sqrt(lo * hi)
        found = probe(mid)
        if found is not None:
            lo, best = mid, found
        else:
            hi = mid
    return lo, hi, best, probes, "optimal"


def _scaled(instance: Instance, base: dict[str, float], s: float) -> Instance:
    return with_rates(instance, {name: s * rate for name, rate in base.items()})


def _base_rates(instance: Instance, target: str) -> dict[str, float]:
    """Class -> the rate that scale 1 means: the instance's (a class alone: its rate, or 1 req/s at 0)."""
    classes = {c.name: c.rate_rps for c in instance.workload.classes}
    if target == MIX:
        if not any(classes.values()):
            raise InputError("every class has rate 0: the mix has no proportions to scale", field="workload.classes")
        return classes
    if target not in classes:
        raise InputError(f"unknown class {target!r}; the instance has {', '.join(classes)}", field="--class")
    return {name: (rate or 1.0) if name == target else 0.0 for name, rate in classes.items()}


def _output_tokens_per_s(instance: Instance, rates: dict[str, float]) -> float:
    return sum(rates[c.name] * c.output_tokens for c in instance.workload.classes)


def _search(instance: Instance, base: dict[str, float], solve: Callable[..., Plan], rtol: float,
            deadline: float | None, gap: float | None
            ) -> tuple[float, float | None, Plan | None, int, str, list[float], float | None]:
    """:func:`largest_scale` over whole solves; also the scales whose probe was undecided (module notes) and
    the smallest one proven unservable."""
    undecided: list[float] = []
    proven: list[float] = []

    def servable(s: float) -> Plan | None:
        plan = solve(_scaled(instance, base, s), gap=PROBE_GAP, diagnose=False, probe=True)
        if plan.status in ("optimal", "feasible", "time_limit") and plan.pools:
            return plan
        (undecided if plan.status == "time_limit" else proven).append(s)
        return None

    lo, hi, plan, probes, status = largest_scale(servable, 1.0, rtol, deadline=deadline)
    if status == "optimal" and hi in undecided:
        status = "lower_bound"
    if plan is not None and (gap is None or gap < PROBE_GAP):
        final = solve(_scaled(instance, base, lo), gap=gap, diagnose=False, probe=True)  # the cheapest plan at s*
        probes += 1
        if final.pools and final.verified:
            plan = final
    return lo, hi, plan, probes, status, sorted(undecided), min(proven, default=None)


def capacity(instance: Instance, *, targets: Sequence[str] | None = None, backend: str = DEFAULT_BACKEND,
             rtol: float = RTOL, band: bool = True, time_limit_s: float | None = None, gap: float | None = None,
             source: str = "<instance>", probe_time_limit_s: float | None = PROBE_TIME_LIMIT_S) -> list[Capacity]:
    """The capacity of every target (default: each class alone, then the mix) on the instance's fleet.

    ``rtol``: relative width of the final bracket. ``band``: also search at the error band's p10 and p90
    step times (two more searches per target). ``time_limit_s`` bounds the whole study; a target whose
    search it stops reports status ``time_limit`` with the bracket reached. ``gap``: the final plan's
    optimality gap (probes use :data:`PROBE_GAP`).
    """
    from placement.core.pipeline.solve import solve as solve_instance

    if not (math.isfinite(rtol) and 1e-9 <= rtol <= 1.0):
        raise InputError(f"expected a relative tolerance between 1e-9 and 1, got {rtol:g}", field="--rtol")
    if probe_time_limit_s is not None and not (math.isfinite(probe_time_limit_s) and probe_time_limit_s > 0):
        raise InputError(f"expected a finite number of seconds > 0 (0 on the command line: no limit), got "
                         f"{probe_time_limit_s:g}", field="--probe-time-limit")
    names = [c.name for c in instance.workload.classes]
    targets = list(targets) if targets else [*names, *([MIX] if len(names) > 1 else [])]
    deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
    fleet = sum(g.count * (g.chips_per_domain or 1) for g in instance.hardware.domains)

    def solve(inst: Instance, gap: float | None, diagnose: bool, probe: bool = False) -> Plan:
        left = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
        if probe and probe_time_limit_s is not None:
            left = probe_time_limit_s if left is None else min(left, probe_time_limit_s)
        return solve_instance(inst, backend=backend, gap=gap, time_limit_s=left, source=source, diagnose=diagnose)

    out = []
    for target in targets:
        base = _base_rates(instance, target)
        lo, hi, plan, probes, status, undecided, proven = _search(instance, base, solve, rtol, deadline, gap)
        rates = {k: lo * v for k, v in base.items() if v > 0}
        tokens = _output_tokens_per_s(instance, {k: lo * v for k, v in base.items()})
        chips = (plan.chips or 0) if plan is not None else 0
        record = Capacity(target=target, status=status, scale=lo, scale_infeasible=hi, rate_rps=rates,
                          output_tokens_per_s=tokens, chips=chips, fleet_chips=fleet,
                          output_tokens_per_s_per_chip=tokens / chips if chips else 0.0,
                          cost_usd_per_hour=None if plan is None else plan.cost_usd_per_hour,
                          verified=bool(plan is not None and plan.verified), solves=probes, plan=plan,
                          undecided_scales=undecided, scale_proven_unservable=proven)
        if status == "none":
            record.diagnosis = solve(_scaled(instance, base, 1.0), gap=gap, diagnose=True).diagnosis
            record.solves += 1
        if band and plan is not None:
            for level, confidence in BAND_CONFIDENCE.items():
                banded = instance.model_copy(update={"confidence": confidence})
                b_lo, _, _, n, _, _, _ = _search(banded, base, solve, rtol, deadline, PROBE_GAP)
                record.band_output_tokens_per_s[level] = _output_tokens_per_s(
                    instance, {k: b_lo * v for k, v in base.items()})
                record.solves += n
        out.append(record)
    return out
