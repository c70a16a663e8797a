"""The placement MILP over periods: one model with a period index, as PyPSA writes its model over snapshots.

Periods t = 1..T last h_t hours (H = Σ_t h_t). Period t has its own problem
(:class:`~solvers.problem.Problem`): the same columns, sites and network, its
own demand rates λ_{k,t} and on-demand prices w_{t,s} ($/h per unit). Every
constraint family of :func:`solvers.milp.build_model` is written once and
instantiated over the periods, on that period's copy of the variables
(x^t, y^t, n^t, z^t, f^t …; rows and columns named ``t<i>__<family>__…``). The
periods are linked by the replicas::

    min   Σ_s ρ_s·H·r_s  +  Σ_t h_t·Σ_s w_{t,s}·o_{t,s}  +  Σ_{t≥2} Σ_{c,p,s} m_{c,p,s}·(d⁺_{t,c,p,s} + d⁻_{t,c,p,s})
          +  Σ_t h_t·Σ_q c_{t,q}·π^t_q
          (+ per period, h_t times the tie-breaks of solvers.objective.set_objective)
    s.t.  route split, step coverage, replica capacity, …, budget                   for every period t
          reserved cover    Σ_{c,p} u_p·n^t_{c,p,s} ≤ r_s + o_{t,s}                 ∀ t, s
          reconfiguration   n^t_{c,p,s} − n^{t−1}_{c,p,s} = d⁺_{t,c,p,s} − d⁻_{t,c,p,s}   ∀ t ≥ 2, c, p, s
          r_s ∈ ℤ≥0;  o, d⁺, d⁻ ≥ 0

r_s are units of site s *reserved* for the whole horizon at ρ_s $/h per unit
(the discounted price), o_{t,s} units bought *on demand* in period t, and
m_{c,p,s} the $ of adding or removing one replica (its weight reload), and
c_{t,q} the $/h of policy q's share π^t_q in period t (:mod:`solvers.kv_rows`:
a KV tier's holding cost; each period has its own policies and shares). At an
optimum o_{t,s} = max(0, U_{t,s} − r_s) with U the units in use, and
d⁺ − d⁻ = Δn with at most one of them positive (d⁺ replicas added, d⁻
removed), so the objective is the schedule's total $. Policies are not linked
across periods: a period's shares are its own (what they hold is the steady
state of that period's rates). The model with a single
period of H hours prices each unit at min(ρ_s·H, Σ_t h_t·w_{t,s}): that is
how the independent and static references are solved
(:mod:`placement.core.operations.schedule`).

Examples
--------
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> def problem(rate):
...     return Problem(demands=[Demand(name="d", rate=rate)], routes=[Route(name="r", demand="d", steps=["q"])],
...                    columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...                    sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=8,
...                                usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
>>> out = solve_periods([problem(2.0), problem(8.0), problem(2.0)], [10.0, 4.0, 10.0],
...                     reserved_usd_per_hour_per_unit={"s": 0.5}, usd_per_change={("c", 0, "s"): 1.0},
...                     backend="highs")
>>> out.status, [s.replicas[0].replicas for s in out.solutions], out.reserved_units, out.objective
('optimal', [1, 4, 1], {'s': 1}, 30.0)
>>> out.added, out.removed
({(1, ('c', 0, 's')): 3}, {(2, ('c', 0, 's')): 3})

One unit reserved for 24 h at $0.5/h ($12), three more on demand for the 4-hour peak ($12), three
replicas added and three removed at $1 each ($6). Reserving nothing costs $42, four units all day $48.
The LP relaxation (no change costs here; the tie-breaks add ~1e-6) bounds the schedule from below:

>>> lp = solve_periods([problem(2.0), problem(8.0), problem(2.0)], [10.0, 4.0, 10.0],
...                    reserved_usd_per_hour_per_unit={"s": 0.5}, backend="highs", relax=True)
>>> lp.status, round(lp.best_bound, 3), lp.used_units, lp.ok
('relaxed', 24.0, [{'s': 1}, {'s': 4}, {'s': 1}], False)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulp

from solvers.backends import SolveOptions, run
from solvers.extract import model_stats, to_solution
from solvers.family import Family
from solvers.index import PairSplit
from solvers.milp import DEFAULT_GAP
from solvers.model import build_model
from solvers.problem import Problem
from solvers.solution import Solution, clean
from solvers.support import lp_support
from solvers.tolerances import TIE_BREAK, ZERO
from solvers.variables import Variables, gc_paused, scaled_row

__all__ = [
    "PeriodModel",
    "PeriodSolution",
    "add_reconfiguration",
    "add_reserved_cover",
    "build_periods",
    "reservation",
    "restrict_to_lp_support",
    "set_period_objective",
    "solve_periods",
    "start_values",
]

Key = tuple[str, int, str]


@dataclass
class PeriodModel:
    """The variables of :func:`build_periods`: one :class:`~solvers.variables.Variables` per period, and the links.

    ``r[s]`` units reserved in site s, ``o[t, s]`` units on demand in period t,
    ``up[t, key]`` / ``down[t, key]`` replicas added / removed at the start of
    period t (t ≥ 1). The LP names of a period's variables carry its tag
    (``t00__n__…``); its ``Variables.labels`` and ``row_scale`` keep the names
    the period's own model gave them.
    """

    periods: list[Variables]
    hours: list[float]
    reserved_usd_per_hour_per_unit: dict[str, float]
    usd_per_change: dict[Key, float]
    r: dict[str, pulp.LpVariable] = field(default_factory=dict)
    o: dict[tuple[int, str], pulp.LpVariable] = field(default_factory=dict)
    up: dict[tuple[int, Key], pulp.LpVariable] = field(default_factory=dict)
    down: dict[tuple[int, Key], pulp.LpVariable] = field(default_factory=dict)
    stats: list[dict[str, int]] = field(default_factory=list)
    infeasible: list[str] = field(default_factory=list)


@dataclass
class PeriodSolution:
    """What :func:`solve_periods` found; $ totals recomputed from the integer replicas and reserved units.

    ``objective`` = ``reserved_usd + on_demand_usd + reconfiguration_usd + policy_usd``
    over the horizon (``policy_usd``: Σ_t h_t·Σ_q c_{t,q}·π^t_q, the policies' $);
    ``solutions[t]`` is period t's :class:`~solvers.solution.Solution`
    (its ``objective`` in $/h at period t's on-demand prices); ``used_units[t][s]``
    and ``on_demand_units[t][s]`` units in use and bought on demand; ``added``
    and ``removed`` replicas changed at the start of period t, keyed (t, key).
    """

    status: str
    message: str
    objective: float | None = None
    best_bound: float | None = None
    gap: float | None = None
    solutions: list[Solution] = field(default_factory=list)
    reserved_units: dict[str, int] = field(default_factory=dict)
    used_units: list[dict[str, int]] = field(default_factory=list)
    on_demand_units: list[dict[str, int]] = field(default_factory=list)
    added: dict[tuple[int, Key], int] = field(default_factory=dict)
    removed: dict[tuple[int, Key], int] = field(default_factory=dict)
    reserved_usd: float = 0.0
    on_demand_usd: float = 0.0
    reconfiguration_usd: float = 0.0
    policy_usd: float = 0.0
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)
    #: LP name -> value of every column, to start another model from (see :func:`solve_periods`).
    values: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether there is a schedule (optimal, feasible, or a time limit with an incumbent)."""
        return bool(self.solutions)


def _variables(v: Variables) -> list[pulp.LpVariable]:
    return [*v.x.values(), *v.y.values(), *v.n.values(), *v.z.values(), *v.g.values(), *v.f.values(),
            *v.w.values(), *v.pi.values(), *v.u.values()]


def _adopt(m: pulp.LpProblem, sub: pulp.LpProblem, v: Variables, tag: str) -> None:
    """Move the rows of one period's model into ``m``, every column and row name prefixed with ``tag``."""
    for var in _variables(v):
        var.name = f"{tag}__{var.name}"
    for row in sub.constraints():
        m.addConstraint(row, f"{tag}__{row.name}")


def _row(m: pulp.LpProblem, name: str, terms: list[tuple[pulp.LpVariable, float]], sense: int, rhs: float) -> None:
    """Add a row divided by the power of two nearest its largest |coefficient| (:func:`~solvers.variables.scaled_row`)."""
    terms, rhs, _ = scaled_row(terms, rhs)
    m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), sense, name, rhs))


def _sites(pm: PeriodModel) -> list[str]:
    return sorted(pm.reserved_usd_per_hour_per_unit)


def add_reserved_cover(m: pulp.LpProblem, pm: PeriodModel) -> None:
    """Units in use covered by reserved and on-demand units: Σ_{c,p} u_p·n^t_{c,p,s} ≤ r_s + o_{t,s}  ∀ t, s."""
    for j, s in enumerate(_sites(pm)):
        pm.r[s] = m.add_variable(f"reserved__s{j}", 0, None, pulp.LpInteger)
    for t, v in enumerate(pm.periods):
        ix = v.index
        by_site: dict[str, list[tuple[pulp.LpVariable, float]]] = {}
        for key, var in sorted(v.n.items()):
            by_site.setdefault(key[2], []).append((var, float(ix.units[key])))
        for j, s in enumerate(_sites(pm)):
            if s not in by_site:
                continue
            pm.o[t, s] = o = m.add_variable(f"t{t:02d}__ondemand__s{j}", 0, None, pulp.LpContinuous)
            _row(m, f"t{t:02d}__reserved_cover__s{j}", [*by_site[s], (pm.r[s], -1.0), (o, -1.0)],
                 pulp.LpConstraintLE, 0.0)


def add_reconfiguration(m: pulp.LpProblem, pm: PeriodModel) -> None:
    """Replicas changed between periods: n^t_{c,p,s} − n^{t−1}_{c,p,s} = d⁺_{t,c,p,s} − d⁻_{t,c,p,s}  ∀ t ≥ 1.

    Keys a period's model does not have (its demand gone, say) hold 0 replicas there.
    """
    keys = sorted({key for v in pm.periods for key in v.n})
    for t in range(1, len(pm.periods)):
        now, before = pm.periods[t].n, pm.periods[t - 1].n
        for j, key in enumerate(keys):
            if key not in now and key not in before:
                continue
            up = m.add_variable(f"t{t:02d}__dplus__k{j}", 0, None, pulp.LpContinuous)
            down = m.add_variable(f"t{t:02d}__dminus__k{j}", 0, None, pulp.LpContinuous)
            terms = [(up, -1.0), (down, 1.0)]
            if key in now:
                terms.append((now[key], 1.0))
            if key in before:
                terms.append((before[key], -1.0))
            m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), pulp.LpConstraintEQ,
                                              f"t{t:02d}__reconfiguration__k{j}", 0.0))
            pm.up[t, key], pm.down[t, key] = up, down


def set_period_objective(m: pulp.LpProblem, pm: PeriodModel) -> None:
    """Minimise Σ_s ρ_s·H·r_s + Σ_t h_t·Σ_s w_{t,s}·o_{t,s} + Σ m·(d⁺ + d⁻) + Σ_t h_t·Σ_q c_{t,q}·π^t_q
    + Σ_t h_t·(tie-breaks of period t).

    c_{t,q} is policy q's ``cost`` in period t's problem ($/h per unit of its share; the KV
    tiers' family writes it as :func:`solvers.kv_rows.add_policy_objective` does in one period).

    The tie-breaks are those of :func:`solvers.objective.set_objective` (ε per
    unit placed, per unit of flow and per pool of a pool limit), ε = 1e-7 × the
    cheapest positive $/h per unit of any period or reservation, weighted by the
    period's hours.
    """
    total_h = sum(pm.hours)
    prices = [s.usd_per_hour_per_unit for v in pm.periods for s in v.index.problem.sites]
    prices += list(pm.reserved_usd_per_hour_per_unit.values())
    eps = TIE_BREAK * min((w for w in prices if w > 0), default=1.0)
    coefs: dict[pulp.LpVariable, float] = {}
    for s, var in pm.r.items():
        coefs[var] = pm.reserved_usd_per_hour_per_unit[s] * total_h
    for (t, s), var in pm.o.items():
        coefs[var] = pm.hours[t] * pm.periods[t].index.site[s].usd_per_hour_per_unit
    for (_, key), var in [*pm.up.items(), *pm.down.items()]:
        coefs[var] = pm.usd_per_change.get(key, 0.0)
    for t, v in enumerate(pm.periods):
        h = pm.hours[t]
        coefs.update({var: h * eps * v.index.units[key] for key, var in v.n.items()})
        coefs.update(dict.fromkeys([*v.f.values(), *v.u.values()], h * eps))
        coefs.update({v.pi[q.name]: h * q.cost for q in v.index.problem.policies if q.cost})
    m.setObjective(pulp.LpAffineExpression(coefs))


def build_periods(problems: Sequence[Problem], hours: Sequence[float], *,
                  reserved_usd_per_hour_per_unit: Mapping[str, float],
                  usd_per_change: Mapping[Key, float] | None = None,
                  pair_split: PairSplit = "auto",
                  fixed_reserved: Mapping[str, int] | None = None,
                  families: tuple[Family, ...] | None = None) -> tuple[pulp.LpProblem, PeriodModel]:
    """Build the MILP of the module docstring.

    Parameters
    ----------
    problems : sequence of Problem
        One per period: the same columns, sites and network; each period's rates and on-demand
        $/h per unit (``Site.usd_per_hour_per_unit``); its own policies, if any (their shares and
        costs per period). Objective ``cost``.
    hours : sequence of float
        h_t, each > 0.
    reserved_usd_per_hour_per_unit : mapping
        site -> ρ_s, the $/h of a unit reserved for the whole horizon (every site of the problems).
    usd_per_change : mapping, optional
        (column, part, site) -> $ of adding or removing one replica (absent: 0).
    fixed_reserved : mapping, optional
        site -> units reserved, held fixed (r_s's bounds); the periods are then linked only by changes.
    families : tuple of Family, optional
        Each period's model's families (default the base families): every period is built from them, and
        the period objective replaces their objective terms (:func:`set_period_objective` writes the
        primary objective, the tie-breaks and the policies' $ per period).

    Raises
    ------
    ValueError
        Periods and hours differ in number, an hour is not > 0, a problem's objective is not cost,
        or its sites are not those of the others or of the reserved prices.
    """
    if not problems or len(problems) != len(hours) or not all(h > 0 for h in hours):
        raise ValueError("expected one problem per period and hours > 0")
    sites = sorted(reserved_usd_per_hour_per_unit)
    for p in problems:
        if p.objective != "cost" or sorted(s.name for s in p.sites) != sites:
            raise ValueError(f"problem {p.name!r}: expected objective cost and sites {sites}")
    m = pulp.LpProblem(name="schedule", sense=pulp.LpMinimize)
    pm = PeriodModel(periods=[], hours=list(hours), reserved_usd_per_hour_per_unit=dict(reserved_usd_per_hour_per_unit),
                     usd_per_change=dict(usd_per_change or {}))
    for t, problem in enumerate(problems):
        sub, v = build_model(problem, pair_split, families=families)
        pm.stats.append(model_stats(sub, v))
        pm.infeasible += [f"period {t + 1}: {why}" for why in v.index.infeasible]
        _adopt(m, sub, v, f"t{t:02d}")
        pm.periods.append(v)
    add_reserved_cover(m, pm)
    for site, units in (fixed_reserved or {}).items():
        pm.r[site].lowBound = pm.r[site].upBound = units
    add_reconfiguration(m, pm)
    set_period_objective(m, pm)
    return m, pm


def _value(var: pulp.LpVariable | None) -> int:
    return 0 if var is None or var.varValue is None else round(var.varValue)


def _read(pm: PeriodModel, out: PeriodSolution) -> None:
    """Integer replicas and reserved units; on-demand units, changes and $ recomputed from them (and the
    policies' $ from their shares)."""
    counts = [{key: _value(var) for key, var in v.n.items()} for v in pm.periods]
    out.reserved_units = {s: _value(var) for s, var in sorted(pm.r.items())}
    for t, v in enumerate(pm.periods):
        used: dict[str, int] = {}
        for key, n in counts[t].items():
            if n:
                used[key[2]] = used.get(key[2], 0) + n * v.index.units[key]
        out.used_units.append(dict(sorted(used.items())))
        out.on_demand_units.append({s: u - out.reserved_units.get(s, 0) for s, u in sorted(used.items())
                                    if u > out.reserved_units.get(s, 0)})
        out.on_demand_usd += pm.hours[t] * sum(v.index.site[s].usd_per_hour_per_unit * u
                                               for s, u in out.on_demand_units[t].items())
        if t:
            for key in sorted(set(counts[t]) | set(counts[t - 1])):
                delta = counts[t].get(key, 0) - counts[t - 1].get(key, 0)
                if delta > 0:
                    out.added[t, key] = delta
                elif delta < 0:
                    out.removed[t, key] = -delta
    out.reserved_usd = sum(pm.reserved_usd_per_hour_per_unit[s] * sum(pm.hours) * r
                           for s, r in out.reserved_units.items())
    out.reconfiguration_usd = sum(pm.usd_per_change.get(key, 0.0) * n
                                  for (_, key), n in [*out.added.items(), *out.removed.items()])
    out.policy_usd = sum(pm.hours[t] * q.cost * (v.pi[q.name].varValue or 0.0)
                         for t, v in enumerate(pm.periods) for q in v.index.problem.policies if q.cost)
    out.reserved_usd, out.on_demand_usd = clean(out.reserved_usd), clean(out.on_demand_usd)
    out.reconfiguration_usd, out.policy_usd = clean(out.reconfiguration_usd), clean(out.policy_usd)
    out.objective = clean(out.reserved_usd + out.on_demand_usd + out.reconfiguration_usd + out.policy_usd)


def solve_periods(problems: Sequence[Problem], hours: Sequence[float], *,
                  reserved_usd_per_hour_per_unit: Mapping[str, float],
                  usd_per_change: Mapping[Key, float] | None = None, backend: str = "highs",
                  time_limit_s: float | None = None, gap: float | None = None, threads: int | None = None,
                  msg: bool = False, pair_split: PairSplit = "auto",
                  start: Sequence[Mapping[str, float]] | None = None,
                  fixed_reserved: Mapping[str, int] | None = None, relax: bool = False,
                  restrict: float | None = None, families: tuple[Family, ...] | None = None) -> PeriodSolution:
    """Build (:func:`build_periods`) and solve the schedule MILP; never raises for a solver failure.

    ``relax``: solve the LP relaxation only (:func:`_relaxation`: its objective is a proven lower
    bound, ``best_bound``; no integer plan). ``restrict``: solve the LP relaxation first and then the
    MILP restricted to its support (:func:`restrict_to_lp_support`, ``restrict`` its reduced-cost
    fraction) — a heuristic plan (a start), whose ``best_bound`` bounds the restricted model only.

    ``gap`` is the relative MIP gap (``None``: prove optimality, :data:`solvers.milp.DEFAULT_GAP`);
    ``best_bound`` is the solver's proven bound on the total $, clipped to ``objective``. ``start``,
    one mapping per period from the LP names of a single-period model of that period's problem
    (``PeriodSolution.values`` of :func:`solve_periods` on ``[problems[t]]``) to values, is a plan
    handed to backends that take a start (:func:`start_values` completes it). ``fixed_reserved`` and
    ``families``: see :func:`build_periods`.
    """
    began = time.perf_counter()
    with gc_paused():
        m, pm = build_periods(problems, hours, reserved_usd_per_hour_per_unit=reserved_usd_per_hour_per_unit,
                              usd_per_change=usd_per_change, pair_split=pair_split, fixed_reserved=fixed_reserved,
                              families=families)
        build_s = time.perf_counter() - began
        stats = model_stats(m)
        if pm.infeasible:
            return PeriodSolution(status="infeasible", message="; ".join(pm.infeasible), build_seconds=build_s,
                                  stats=stats)
        values = start_values(m, pm, start) if start is not None else None
        relaxed = None
        if relax or restrict is not None:
            relaxed = run(m, backend, SolveOptions(mip=False, time_limit_s=time_limit_s, threads=threads, msg=msg))
            if relax or not relaxed.has_values:
                return _relaxation(m, pm, relaxed, build_s, stats)
            restrict_to_lp_support(m, pm, backend, restrict)
        outcome = run(m, backend, SolveOptions(mip=True, time_limit_s=time_limit_s, start=values,
                                               gap=DEFAULT_GAP if gap is None else gap, threads=threads, msg=msg))
    out = PeriodSolution(status=outcome.status, message=outcome.message, build_seconds=build_s,
                         solve_seconds=outcome.seconds + (relaxed.seconds if relaxed else 0.0), stats=stats)
    if not outcome.has_values:
        return out
    out.solutions = [to_solution(v, status=outcome.status, message=outcome.message, backend=backend, bound=None,
                                 build_seconds=build_s if t == 0 else 0.0,
                                 solve_seconds=outcome.seconds if t == 0 else 0.0, stats=pm.stats[t])
                     for t, v in enumerate(pm.periods)]
    _read(pm, out)
    out.values = {var.name: var.varValue or 0.0 for var in m.variables()}
    if outcome.bound is not None and math.isfinite(outcome.bound):
        out.best_bound = clean(min(outcome.bound, out.objective))
    elif outcome.status == "optimal":
        out.best_bound = out.objective
    if out.best_bound is not None:
        out.gap = clean((out.objective - out.best_bound) / max(abs(out.objective), 1e-9))
    return out


def start_values(m: pulp.LpProblem, pm: PeriodModel, start: Sequence[Mapping[str, float]]) -> dict:
    """A value for every column of ``m`` from each period's single-period values (module docstring's links).

    Period t's columns take the values of the same names in ``start[t]`` (tag ``t00`` there); the
    changes d⁺, d⁻ follow from the replicas; each site reserves the r_s ∈ {0} ∪ {U_{t,s}} that
    minimises ρ_s·H·r + Σ_t h_t·w_{t,s}·max(0, U_{t,s} − r) (the cost is convex piecewise linear
    in r with its kinks at the U_{t,s}), and buys the rest on demand.
    """
    values: dict[pulp.LpVariable, float] = {}
    for t, v in enumerate(pm.periods):
        tag, given = f"t{t:02d}__", start[t]
        for var in _variables(v):
            values[var] = given.get("t00__" + var.name.removeprefix(tag), 0.0)
    n = [{key: round(values[var]) for key, var in v.n.items()} for v in pm.periods]
    used = [{} for _ in pm.periods]
    for t, v in enumerate(pm.periods):
        for key, count in n[t].items():
            used[t][key[2]] = used[t].get(key[2], 0) + count * v.index.units[key]
    prices = [{site.name: site.usd_per_hour_per_unit for site in v.index.problem.sites} for v in pm.periods]
    best = reservation(used, pm.hours, pm.reserved_usd_per_hour_per_unit, prices)
    for s, var in pm.r.items():
        values[var] = var.lowBound if var.lowBound == var.upBound else best.get(s, 0)
    for (t, s), var in pm.o.items():
        values[var] = max(0, used[t].get(s, 0) - values[pm.r[s]])
    for (t, key), var in pm.up.items():
        values[var] = max(0, n[t].get(key, 0) - n[t - 1].get(key, 0))
        values[pm.down[t, key]] = max(0, n[t - 1].get(key, 0) - n[t].get(key, 0))
    for var in m.variables():
        values.setdefault(var, 0.0)
    return values


def reservation(used: Sequence[Mapping[str, int]], hours: Sequence[float], reserved_usd_per_hour_per_unit:
                Mapping[str, float], prices: Sequence[Mapping[str, float]]) -> dict[str, int]:
    """The cheapest units to reserve per site for the units ``used[t]`` in each period, the rest on demand.

    r_s minimises ρ_s·H·r + Σ_t h_t·w_{t,s}·max(0, U_{t,s} − r), convex piecewise linear in r with its
    kinks at the U_{t,s}: the best of {0} ∪ {U_{t,s}} (the smallest on a tie).

    Examples
    --------
    >>> reservation([{"s": 1}, {"s": 4}, {"s": 1}], [10, 4, 10], {"s": 0.5}, [{"s": 1.0}] * 3)
    {'s': 1}
    """
    total_h = sum(hours)
    out = {}
    for s, rho in sorted(reserved_usd_per_hour_per_unit.items()):
        def cost(r: int, s: str = s, rho: float = rho) -> float:
            return rho * total_h * r + sum(h * w[s] * max(0, u.get(s, 0) - r) for h, w, u in zip(hours, prices, used))
        out[s] = min([0, *(u.get(s, 0) for u in used)], key=lambda r: (cost(r), r))
    return out


def _relaxation(m: pulp.LpProblem, pm: PeriodModel, outcome, build_s: float, stats: dict) -> PeriodSolution:
    """The LP relaxation's optimum as a bound (``objective`` = ``best_bound``), its units in use per period.

    ``used_units[t][s]`` is the fractional units of site s in use, rounded up (the least a plan
    with integer replicas could need there, to the LP); there are no ``solutions``.
    """
    out = PeriodSolution(status=outcome.status if outcome.status != "optimal" else "relaxed", message=outcome.message,
                         build_seconds=build_s, solve_seconds=outcome.seconds, stats=stats)
    if outcome.status != "optimal" or not outcome.has_values:
        return out
    out.objective = out.best_bound = clean(pulp.value(m.objective))
    for v in pm.periods:
        used: dict[str, float] = {}
        for key, var in v.n.items():
            used[key[2]] = used.get(key[2], 0.0) + (var.varValue or 0.0) * v.index.units[key]
        out.used_units.append({s: math.ceil(u - 1e-6) for s, u in sorted(used.items()) if u > 1e-6})
    return out


def restrict_to_lp_support(m: pulp.LpProblem, pm: PeriodModel, backend: str, fraction: float) -> int:
    """Fix to 0 the replicas of each period's columns outside its LP support that the LP prices out; return
    how many replica counts were fixed.

    Kept: the support :func:`solvers.support.lp_support` gives of the columns the LP relaxation just
    solved in ``m`` loads in that period (the LP's columns and their siblings, as the two-level solve
    restricts to), and every replica count at most ``fraction`` × the LP objective from entering it
    (reduced cost). Reduced costs are read from HiGHS's in-process model, or from PuLP's ``dj`` for
    other backends (none there: the support alone). A heuristic (it may cut off the MILP's optimum),
    for the schedule's start only.

    Why both, measured (HiGHS, ``fraction`` 0.0005, one run each on the shared 2-core machine at load
    ~4): on the 24-period 100-domain benchmark day (``--references bound``, gap 1 %) the 24 start
    re-solves took 4.2 CPU s with the support alone, 15.4 s with reduced costs alone and 31.9 s with
    both (832.9 s unrestricted), their plans +0.43 %, +0.24 % and +0.15 % over the unrestricted
    $29,327.03; the whole schedule: support alone $29,506.10 at a 0.99 % gap (22.4 s wall, 12.6 s in
    the schedule MILP), reduced costs alone $29,449.54 at 0.91 % (16.5 s, 6.2 s), both $29,421.86 at
    0.82 % (22.7 s, 8.6 s). On the mixed fleet's spot day reduced costs alone cut the columns its
    optimum needs (re-solved periods $414.65 against $352.25 unrestricted; the support alone and both
    $355.37); its schedule is $352.26 either way (25.0 s wall with reduced costs alone, 23.4 s with both).
    """
    variables = m.variables()
    model = getattr(m, "solverModel", None)
    dj = list(model.getSolution().col_dual) if backend == "highs" and model is not None else [v.dj for v in variables]
    reduced = ({var.name: d for var, d in zip(variables, dj)}
               if len(dj) == len(variables) and all(d is not None for d in dj) else {})
    limit = fraction * abs(pulp.value(m.objective) or 0.0)
    fixed = 0
    for v in pm.periods:
        keep = lp_support(v.index.problem, {key[0] for key, var in v.y.items() if (var.varValue or 0.0) > ZERO})
        for key, var in v.n.items():
            priced_out = not reduced or reduced[var.name] > limit
            if key[0] not in keep and priced_out and abs(var.varValue or 0.0) < ZERO and var.lowBound == 0:
                var.upBound = 0
                fixed += 1
    return fixed
