"""Why an instance has no plan: the shortfalls, in words a capacity planner can act on.

Two passes, each saying only what the previous one left unexplained:

1. **Physical floors.** A class none of whose allowed serving modes has a
   single candidate configuration cannot be served by any fleet of these chip
   types. The cost models are re-run over every configuration the candidate
   generator would try, with the class's SLOs lifted, to find the lowest TTFT
   and TPOT any of them reaches (the floor)::

       no chip meets TPOT 0.5 ms for class chat (best: h100 at 3.05 ms)

   or, when no replica the fleet can form holds the model, says so.
2. **Elastic MILP** (:mod:`solvers.elastic`) over the remaining classes: the
   same model as the solver's with relative slack on every site's chips, every
   edge's bandwidth, the power cap and the budget (penalised), and on each
   class's demand (penalised far more). What had to give is reported::

       class chat needs 113 % more aggregated capacity than the fleet has (+18 h100 chips)
       domain group h100s needs 34 h100 chips, has 16
       link pod-a→pod-b needs 2.1 TB/s, has 1.6 TB/s
       power cap: the plan needs 120 kW, the cap is 100 kW
       budget: the plan needs $140/h, the budget is $100/h

   A class's extra chips are those of the short domain groups, shared out in
   proportion to the chips its pools hold there; "% more capacity" is that
   extra over the chips it keeps.

The sentences are deterministic (same instance, same words) and the function
never raises: a failing pass becomes a sentence saying so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from placement.core.instance.context import Context
from placement.core.instance.reach import islands_sentences
from placement.core.instance.schema import TrafficClass
from placement.core.modes.enabled import configurations, enabled_modes
from placement.core.modes.ids import StepId
from placement.core.modes.registry import pool_kind
from placement.core.plans.numbers import num
from placement.core.replicas.evaluate import evaluate, framework_latency_s
from placement.core.replicas.generation import Candidates
from placement.core.replicas.precisions import missing_rates
from solvers.backends import DEFAULT_BACKEND
from solvers.problem import Problem

__all__ = ["Floor", "diagnose", "format_bandwidth", "slo_floor"]

#: SLO used to find the floors: long enough that no configuration misses it (ms).
_LIFTED_MS = 1e9


def diagnose(ctx: Context, problem: Problem, cands: Candidates, backend: str = DEFAULT_BACKEND,
             time_limit_s: float | None = None, families: tuple | None = None) -> list[str]:
    """Sentences naming what is short; never empty for an infeasible instance, never raises.

    ``families``: the model's (:mod:`solvers.family`; default the base families), each made elastic by
    its own rule in the second pass.
    """
    out: list[str] = []
    try:
        unservable = _unservable_classes(problem)
    except Exception as e:  # noqa: BLE001 - a diagnosis must not crash the caller
        return [f"diagnosis failed: {type(e).__name__}: {e}"]
    for name in unservable:
        try:
            out.extend(_floor_sentences(ctx, problem, name))
        except Exception as e:  # noqa: BLE001
            out.append(f"class {name}: no configuration meets its SLOs (floor search failed: {type(e).__name__}: {e})")
    try:
        out.extend(_stage_limit_sentences(ctx, unservable))
    except Exception as e:  # noqa: BLE001
        out.append(f"pipeline-stage check failed: {type(e).__name__}: {e}")
    rest = [d.name for d in problem.demands if d.rate > 0 and d.name not in unservable]
    if rest:
        try:
            out.extend(_elastic_sentences(ctx, problem, cands, set(unservable), backend, time_limit_s, families))
        except Exception as e:  # noqa: BLE001
            out.append(f"elastic diagnosis failed: {type(e).__name__}: {e}")
    try:
        out.extend(islands_sentences(ctx.graph))
    except Exception as e:  # noqa: BLE001
        out.append(f"reachability check failed: {type(e).__name__}: {e}")
    if not out:
        out.append("the MILP is infeasible but no single class, chip, link or limit shortfall was isolated")
    return out


# ---- pass 1: physical floors ----------------------------------------------------------------


def _unservable_classes(problem: Problem) -> list[str]:
    """Demands (rate > 0) none of whose routes has a column for every step."""
    served = {s for c in problem.columns for s in c.capacity}
    ok = {r.demand for r in problem.routes if all(s in served for s in r.steps)}
    return [d.name for d in problem.demands if d.rate > 0 and d.name not in ok]


def _stage_limit_sentences(ctx: Context, unservable: list[str]) -> list[str]:
    """For each class no configuration serves that one would serve with pipeline stages beyond those its chips'
    calibration measured (the default when ``serving.max_pipeline_stages`` is unset,
    :meth:`~placement.core.instance.context.Context.most_pipeline_stages`): a sentence saying so and how to allow
    them. Candidates are generated again with the stages free — only for an instance that has such a class."""
    if not unservable or ctx.instance.serving.max_pipeline_stages is not None:
        return []
    held = sorted({s.chip.name for s in ctx.sites.values() if s.chip.calibrated_pipeline_stages is not None})
    if not held:
        return []
    from placement.core.pipeline.problem import build_problem
    from placement.core.replicas.candidates import generate

    serving = ctx.instance.serving.model_copy(update={"max_pipeline_stages": min(ctx.model.layers, 1024)})
    free = Context.of(ctx.instance.model_copy(update={"serving": serving}), ctx.source)
    still = set(_unservable_classes(build_problem(free, generate(free))[0]))
    stages = ", ".join(f"{c} {ctx.chips[c].calibrated_pipeline_stages}" for c in held)
    return [f"class {name}: served only with more pipeline stages than its chips' calibration measured "
            f"({stages}); serving.max_pipeline_stages allows them, priced by the step model alone (held out, "
            "such GPU plans were 1.23x optimistic: benchmarks/CAPACITY.md)"
            for name in unservable if name not in still]


@dataclass(frozen=True)
class Floor:
    """The lowest TTFT and TPOT (seconds) any fitting configuration reaches, and where.

    ``None`` when no configuration of that kind fits in memory on this fleet.
    """

    ttft_s: float | None
    ttft_where: str
    tpot_s: float | None
    tpot_where: str
    configurations: int


def _kinds(ctx: Context) -> set[str]:
    """The replica kinds the cost models evaluate for the instance's enabled modes.

    None with ``only_measured``: measured capacities already include the SLO.
    """
    if ctx.instance.only_measured:
        return set()
    return {k.name for mode in enabled_modes(ctx) for k in mode.kinds if not k.measured}


def slo_floor(ctx: Context, cls: TrafficClass) -> Floor:
    """Lowest TTFT / TPOT over every configuration candidate generation tries for ``cls``.

    The same grids as :func:`placement.core.replicas.candidates.generate`
    (:func:`placement.core.modes.enabled.configurations`) and the same test, with the
    class's SLOs lifted: configurations must still fit in memory. A configuration too slow to serve
    anything even then (a step of hours on a chip of 1 kB/s) still counts: its latency is the floor.
    """
    lifted = cls.model_copy(update={"ttft_ms": _LIFTED_MS, "tpot_ms": _LIFTED_MS})
    best = {"ttft": (math.inf, ""), "tpot": (math.inf, "")}
    count = 0
    memo: dict = {}
    for grid, _ in configurations(ctx, lifted, memo):
        perf = evaluate(ctx, grid.config, lifted, batch=grid.batches, pair_latency_s=grid.pair_latency_s or 0.0,
                        memo=memo)
        ok = np.broadcast_to(np.asarray(perf.fits, dtype=bool), np.shape(perf.capacity_rps))
        count += int(ok.sum())
        for key, arr in (("ttft", perf.ttft_s), ("tpot", perf.tpot_s)):
            vals = np.broadcast_to(np.asarray(arr, dtype=float), ok.shape)[ok]
            vals = vals[vals > 0]
            if vals.size and float(vals.min()) < best[key][0]:
                best[key] = (float(vals.min()), pool_kind(grid.config.kind).where(grid.config))
    ttft, ttft_where = best["ttft"]
    tpot, tpot_where = best["tpot"]
    return Floor(ttft_s=None if math.isinf(ttft) else ttft, ttft_where=ttft_where,
                 tpot_s=None if math.isinf(tpot) else tpot, tpot_where=tpot_where, configurations=count)


def _framework_clause(ctx: Context, cls: TrafficClass) -> str:
    """What the serving framework's request latency takes of a missed TTFT ('' when none is added)."""
    latency_s = framework_latency_s(ctx)
    if latency_s <= 0:
        return ""
    fw, ms = ctx.instance.serving.framework, num(latency_s * 1e3)
    where = "serving.framework; costmodels/catalog/frameworks.yaml"
    if latency_s >= cls.ttft_s:
        return f"; the {fw} framework request latency alone is {ms} ms, over the SLO ({where})"
    return f"; {ms} ms of it is the {fw} framework request latency ({where})"


def _floor_sentences(ctx: Context, problem: Problem, name: str) -> list[str]:
    cls = ctx.classes[name]
    inst = ctx.instance
    if not any(r.demand == name for r in problem.routes):
        if inst.only_measured and "aggregated" not in inst.modes:
            return [(f"class {name}: no serving mode is left: only_measured allows measured (aggregated) "
                     f"serving but modes are {', '.join(inst.modes)}")]
        return [f"class {name}: none of the modes {', '.join(inst.modes)} can serve it"]
    if inst.only_measured or not _kinds(ctx):
        return [(f"class {name}: no measured capacity for it on any chip of the fleet "
                 "(measured_capacity lists none and only_measured is true)")]
    floor = slo_floor(ctx, cls)
    out = []
    if floor.tpot_s is None and floor.ttft_s is None:
        lacks = {s.chip.name: missing_rates(ctx, s.chip, "decode") for s in ctx.sites.values()}
        if all(lacks.values()):
            p = inst.precision
            missing = "; ".join(f"{chip} has no {' or '.join(rates)} rate" for chip, rates in sorted(lacks.items()))
            return [(f"class {name}: no chip of the fleet has a tensor rate for {ctx.model.name}'s matmuls at "
                     f"{p.weights} weights and {p.attention_for(ctx.model)} attention projections ({missing}); "
                     "set precision.weights or precision.attention to a rate the chips list "
                     "(placement catalog chips)")]
        sizes = ", ".join(f"{s.chip.name} ×{s.chips}" for _, s in sorted(ctx.sites.items()))
        weights = ctx.model.weight_bytes(inst.precision.weights)
        return [(f"class {name}: no replica the fleet can form holds {ctx.model.name} in memory "
                 f"({num(weights / 1e9)} GB of {inst.precision.weights} weights plus KV cache; fleet: {sizes})")]
    if floor.tpot_s is not None and floor.tpot_s > cls.tpot_s * (1 + 1e-9):
        out.append(f"no chip meets TPOT {num(cls.tpot_ms)} ms for class {name} "
                   f"(best: {floor.tpot_where} at {num(floor.tpot_s * 1e3)} ms)")
    if floor.ttft_s is not None and floor.ttft_s > cls.ttft_s * (1 + 1e-9):
        out.append(f"no chip meets TTFT {num(cls.ttft_ms)} ms for class {name} "
                   f"(best: {floor.ttft_where} at {num(floor.ttft_s * 1e3)} ms){_framework_clause(ctx, cls)}")
    if floor.tpot_s is None:
        decoding = any(pool_kind(k).decodes for k in _kinds(ctx))  # some kind decodes on one chip type
        if not decoding and len(ctx.resources()) < 2:
            out.append(f"class {name}: mode pd-af pairs attention and FFN on two different chip types, but the "
                       f"fleet has only {', '.join(sorted(ctx.resources()))}")
        elif not decoding:
            out.append(f"class {name}: no attention–FFN pair of the fleet's chip types both fits "
                       f"{ctx.model.name} in memory and is connected by the network (pd-af is its only decoding "
                       "mode)")
        else:
            out.append(f"class {name}: no decoding configuration fits {ctx.model.name} in memory on this fleet")
    if floor.ttft_s is None:
        out.append(f"class {name}: no prefill configuration fits {ctx.model.name} in memory on this fleet")
    if not out:
        best = []
        if floor.ttft_s is not None:
            best.append(f"TTFT {num(floor.ttft_s * 1e3)} ms on {floor.ttft_where}")
        if floor.tpot_s is not None:
            best.append(f"TPOT {num(floor.tpot_s * 1e3)} ms on {floor.tpot_where}")
        out.append(f"class {name}: no single configuration meets TTFT {num(cls.ttft_ms)} ms and TPOT "
                   f"{num(cls.tpot_ms)} ms together with queueing (best separately: {'; '.join(best)})")
    return out


# ---- pass 2: elastic MILP -----------------------------------------------------------------------


def format_bandwidth(x: float, unit_of: float | None = None) -> str:
    """Bytes/s in GB/s or TB/s (the unit chosen by ``unit_of``, default ``x``).

    Examples
    --------
    >>> format_bandwidth(2.1e12), format_bandwidth(1.6e12), format_bandwidth(4e11)
    ('2.1 TB/s', '1.6 TB/s', '400 GB/s')
    """
    ref = abs(unit_of if unit_of is not None else x)
    for scale, unit in ((1e15, "PB/s"), (1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s")):
        if ref >= scale:
            return f"{num(x / scale)} {unit}"
    return f"{num(x)} B/s"


def _pct(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else num(x, 2)


def _domains(n: int) -> str:
    return f"{n} domain" if n == 1 else f"{n} domains"


def _elastic_sentences(ctx: Context, problem: Problem, cands: Candidates, skip: set[str], backend: str,
                       time_limit_s: float | None, families: tuple | None = None) -> list[str]:
    from solvers.elastic import DEFAULT_TIME_LIMIT_S, elastic_shortfall

    if skip:  # already explained: leave them out so they do not distort the rest
        problem = problem.model_copy(update={"demands": [d.model_copy(update={"rate": 0.0}) if d.name in skip
                                                         else d for d in problem.demands]})
    short = elastic_shortfall(problem, backend=backend,
                              time_limit_s=DEFAULT_TIME_LIMIT_S if time_limit_s is None else time_limit_s,
                              families=families)
    if not short.solved:
        return [f"elastic diagnosis found no answer ({short.status}: {short.message})"]
    out: list[str] = []
    out.extend(_class_capacity_sentences(ctx, problem, cands, short))
    for site, (need, has) in short.sites.items():
        info = ctx.sites.get(site)
        if info is None:
            out.append(f"domain group {site} needs {num(need, 6)} units, has {num(has, 6)}")
            continue
        per = info.chips_per_domain
        out.append(f"domain group {site} needs {num(need, 6)} {info.chip.name} chips "
                   f"({_domains(math.ceil(need / per - 1e-9))} of {per}), has {num(has, 6)} "
                   f"({_domains(info.group.count)})")
    for (u, v), (need, has) in short.edges.items():
        kind = "link" if u not in ctx.sites and v not in ctx.sites else "uplink"
        out.append(f"{kind} {u}→{v} needs {format_bandwidth(need, has)}, has {format_bandwidth(has)}")
    for (column, site, direction), (need, has) in sorted(short.limits.get("uplink_share", {}).items()):
        cfg = cands.configs.get(column)
        what = column if cfg is None else f"the {cfg.kind} replicas of {cfg.traffic_class} on {cfg.main.chip}"
        out.append(f"uplinks of domain group {site} need {format_bandwidth(need, has)} per domain, have "
                   f"{format_bandwidth(has)}: the KV {what} {'send' if direction == 'out' else 'receive'} "
                   "crosses them (between the group's domains or beyond)")
    if short.power_w is not None:
        need, cap = short.power_w
        out.append(f"power cap: the plan needs {num(need / 1e3)} kW, the cap is {num(cap / 1e3)} kW")
    if short.budget_usd_per_hour is not None:
        need, cap = short.budget_usd_per_hour
        out.append(f"budget: the plan needs ${num(need)}/h, the budget is ${num(cap)}/h")
    for family, limits in sorted(short.limits.items()):
        if family in _SAID:
            continue
        unit = short.units.get(family, "")
        for key, (need, has) in sorted(limits.items()):
            out.append(f"{short.said(family, key)}: the plan needs {num(need)} {unit}, the limit is {num(has)} {unit}")
    for family, shares in sorted(short.shares.items()):
        for key, missing in sorted(shares.items()):
            out.append(f"{short.said(family, key)} {num(missing)} req/s short")
    rates = {d.name: d.rate for d in problem.demands}
    for name, missing in short.unserved_rps.items():
        out.append(f"class {name}: {num(missing)} of {num(rates[name])} req/s cannot be served by adding chips, "
                   "bandwidth, power or budget (no replica of it fits a domain group, its pairs exceed their "
                   "latency limit, or it would need over a million times the fleet)")
    if short.status == "time_limit":
        out.append("(the elastic diagnosis hit its time limit: the shortfalls above may be overstated)")
    return out


#: The families whose shortfalls are said above in their own words.
_SAID = {"site_units", "edge_capacity", "power_cap", "budget", "uplink_share"}


def _class_capacity_sentences(ctx: Context, problem: Problem, cands: Candidates, short) -> list[str]:
    """Share each short group's extra chips among the (class, stage) pools placed there."""
    if not short.sites:
        return []
    sol = short.solution
    columns = {c.name: c for c in problem.columns}
    # Replica-equivalents per (column, site) and step: load / capacity.
    ye: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    ye_col: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for ld in sol.loads:
        cap = columns[ld.column].capacity[ld.step]
        ye[ld.column, ld.site][ld.step] = ld.rate / cap
        ye_col[ld.column][ld.step] += ld.rate / cap
    chips: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))  # (class, stage) -> site
    used: dict[str, float] = defaultdict(float)
    for p in sol.replicas:
        units = p.replicas * columns[p.column].parts[p.part].units
        used[p.site] += units
        loads = ye[p.column, p.site] if p.part == 0 else ye_col[p.column]
        total = sum(loads.values())
        if total <= 0:
            continue
        cfg = cands.configs.get(p.column)
        words = pool_kind(cfg.kind if cfg is not None else "aggregated").said(p.part) or "decode"
        for step, y in loads.items():
            chips[StepId.parse(step).traffic_class, words][p.site] += units * y / total
    out = []
    for (name, words), where in sorted(chips.items()):
        total = sum(where.values())
        extra_by_chip: dict[str, float] = defaultdict(float)
        for site, (need, has) in short.sites.items():
            if where.get(site, 0.0) > 0 and need > 0:
                extra_by_chip[ctx.sites[site].chip.name] += (need - has) * where[site] / need
        extra = sum(extra_by_chip.values())
        if extra < 0.05 or extra < 1e-3 * total:
            continue
        chips_txt = ", ".join(f"+{num(x)} {chip} chips" for chip, x in sorted(extra_by_chip.items()))
        kept = total - extra
        if kept <= 1e-9 * total:
            out.append(f"class {name} has no {words} capacity left in the fleet ({chips_txt})")
        else:
            out.append(f"class {name} needs {_pct(100 * extra / kept)} % more {words} capacity than the fleet "
                       f"has ({chips_txt})")
    return out
