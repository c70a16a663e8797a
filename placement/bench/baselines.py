"""How the field plans today, on the same :class:`~solvers.problem.Problem` as the MILP.

Three baselines, each a function of the problem alone (the columns the
candidate generator kept, the demands, routes and sites), so they see exactly
the configurations the MILP sees:

:func:`exhaustive`
    Configuration search as config-search tools do it (aiconfigurator and
    similar): every class is served by ONE serving mode, every stage of it by
    ONE replica configuration (homogeneous per stage: one chip type, layout,
    batch), with ``ceil(λ / capacity)`` replicas. Every combination of one
    such option per class is enumerated and the cheapest one that fits the
    fleet's chips (per chip type and domain size), the power cap and the
    budget wins. The number of combinations is the product of the classes'
    option counts; beyond ``max_evaluations`` (or ``time_budget_s``) the
    search stops and says **did not finish**, reporting how much it covered
    and the best combination seen so far.
:func:`greedy`
    Cheapest chip per stage first: classes in decreasing order of demand
    (requests/s × the cheapest cost per request/s); each stage repeatedly
    takes, among the configurations whose chips are still free, the one
    whose replicas cover the remaining demand at the lowest cost per
    request/s actually served (so one huge replica is not bought for a small
    demand), until the stage is covered; each class takes the serving mode
    whose greedy cover is cheapest. Chips taken are never given back.
:func:`lp_relaxation`
    The MILP with integrality dropped (:func:`solvers.milp.relax`), a lower
    bound on every plan.

Neither :func:`exhaustive` nor :func:`greedy` models the scale-out network
(KV transfers, attention–FFN pair traffic and their latency limits are not
checked), just as config-search tools size one cluster at a time; both never
share a replica between two stages or classes, so their ceilings add up.
Their costs are therefore never below the MILP optimum when the network does
not bind, and the difference is what exact joint placement buys.

Examples
--------
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> site = lambda n, r, price: Site(name=n, node=n, resource=r, units_per_domain=8, domains=2,
...                                 usd_per_hour_per_unit=price, power_w_per_unit=700.0)
>>> p = Problem(demands=[Demand(name="a", rate=3.0), Demand(name="b", rate=1.0)],
...             routes=[Route(name="a|agg", demand="a", steps=["a|s"]), Route(name="b|agg", demand="b", steps=["b|s"])],
...             columns=[Column(name="ca", parts=[Part(resource="h100", units=2)], capacity={"a|s": 2.0}),
...                      Column(name="cb", parts=[Part(resource="l4", units=1)], capacity={"b|s": 0.6}),
...                      Column(name="cb2", parts=[Part(resource="h100", units=1)], capacity={"b|s": 2.0})],
...             sites=[site("x", "h100", 1.3), site("y", "l4", 0.1)])
>>> r = exhaustive(p)
>>> r.status, r.objective, r.evaluated, r.combinations
('finished', 5.4, 2, 2)
>>> g = greedy(p)
>>> g.status, g.objective
('finished', 5.4)
"""

from __future__ import annotations

import itertools
import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np

from solvers.problem import Column, Problem, unit_weight

__all__ = ["BaselineResult", "Option", "class_options", "exhaustive", "greedy", "lp_relaxation", "resources"]

#: Default cap on combinations the exhaustive search evaluates.
MAX_EVALUATIONS = 200_000_000
#: Default wall-clock budget of the exhaustive search (seconds).
TIME_BUDGET_S = 120.0
_REL = 1e-9
#: Largest numpy grid of combinations evaluated at once.
_GRID = 1 << 22
#: Most options one class may have before the search gives up (Python objects).
MAX_CLASS_OPTIONS = 3_000_000


@dataclass
class BaselineResult:
    """What a baseline found.

    ``status``: ``finished`` (searched everything it meant to), ``did_not_finish``
    (budget hit; ``objective`` is the best seen so far, if any), ``infeasible``
    (nothing it can build fits the fleet) or ``error``.
    """

    method: str
    status: str
    objective: float | None
    seconds: float
    message: str = ""
    evaluated: int = 0
    combinations: int = 0
    units: int | None = None
    choice: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)  # class -> (step, column, replicas)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Option:
    """One way to serve a whole class: a route and one column per step with its replica count."""

    route: str
    picks: tuple[tuple[str, str, int], ...]  # (step, column, replicas)
    objective: float
    usage: tuple[int, ...]  # units per resource (order of :func:`resources`)
    cost_usd: float
    power_w: float


def resources(problem: Problem) -> tuple[list[str], np.ndarray, dict[str, tuple[float, float, float]]]:
    """Resource names (sorted), units available per resource, and (objective weight, $/h, W) per unit.

    Sites of one resource pool their units; the weight is the cheapest of the
    resource's sites (generated instances price every site of a chip alike).
    """
    units: dict[str, int] = defaultdict(int)
    price: dict[str, tuple[float, float, float]] = {}
    for s in problem.sites:
        units[s.resource] += s.units_per_domain * s.domains
        w = unit_weight(problem.objective, s)
        cur = price.get(s.resource)
        if cur is None or w < cur[0]:
            price[s.resource] = (w, s.usd_per_hour_per_unit, s.power_w_per_unit)
    names = sorted(units)
    return names, np.array([units[r] for r in names], dtype=np.int64), price


def _replica(col: Column, price, index) -> tuple[float, float, float, list[tuple[int, int]]]:
    w = usd = watts = 0.0
    use = []
    for part in col.parts:
        pw, pu, pp = price[part.resource]
        w += pw * part.units
        usd += pu * part.units
        watts += pp * part.units
        use.append((index[part.resource], part.units))
    return w, usd, watts, use


def class_options(problem: Problem, max_options: int | None = None) -> dict[str, list[Option]]:
    """Every homogeneous-per-stage option of every class that fits the fleet on its own, cheapest first.

    Raises
    ------
    ValueError
        If a class has more than ``max_options`` options (the enumeration of
        one class alone would not finish).
    """
    names, avail, price = resources(problem)
    index = {r: i for i, r in enumerate(names)}
    serving: dict[str, list[Column]] = defaultdict(list)
    for c in problem.columns:
        if all(p.resource in index for p in c.parts):
            for q in c.capacity:
                serving[q].append(c)
    rate = {d.name: d.rate for d in problem.demands}
    out: dict[str, list[Option]] = {}
    for d in problem.demands:
        opts: list[Option] = []
        if d.rate <= 0:
            out[d.name] = [Option("", (), 0.0, tuple([0] * len(names)), 0.0, 0.0)]
            continue
        for r in (r for r in problem.routes if r.demand == d.name):
            per_step = []
            for q in r.steps:
                choices = []
                for c in serving.get(q, []):
                    n = math.ceil(rate[d.name] / c.capacity[q] * (1 - _REL))
                    w, usd, watts, use = _replica(c, price, index)
                    choices.append((q, c.name, n, n * w, n * usd, n * watts, [(i, n * u) for i, u in use]))
                per_step.append(choices)
            count = math.prod(len(c) for c in per_step)
            if max_options is not None and len(opts) + count > max_options:
                raise ValueError(f"class {d.name!r} alone has more than {max_options} options")
            for combo in itertools.product(*per_step):
                usage = [0] * len(names)
                for *_, use in combo:
                    for i, u in use:
                        usage[i] += u
                if any(u > a for u, a in zip(usage, avail)):
                    continue
                opts.append(Option(r.name, tuple((q, c, n) for q, c, n, *_ in combo),
                                   sum(x[3] for x in combo), tuple(usage), sum(x[4] for x in combo),
                                   sum(x[5] for x in combo)))
        opts.sort(key=lambda o: (o.objective, o.route, o.picks))
        out[d.name] = opts
    return out


def _limits_ok(problem: Problem, cost, power) -> np.ndarray:
    ok = np.ones(np.shape(cost), dtype=bool)
    if problem.power_cap_w is not None:
        ok &= power <= problem.power_cap_w * (1 + _REL)
    if problem.budget_usd_per_hour is not None:
        ok &= cost <= problem.budget_usd_per_hour * (1 + _REL)
    return ok


def exhaustive(problem: Problem, max_evaluations: int = MAX_EVALUATIONS,
               time_budget_s: float = TIME_BUDGET_S) -> BaselineResult:
    """Enumerate every combination of one homogeneous-per-stage option per class (module docstring).

    The last two classes are evaluated as a numpy grid per combination of the
    others (tens of millions of combinations per second); the budget is
    checked between grids.
    """
    start = time.perf_counter()
    names, avail, _ = resources(problem)
    try:
        opts = class_options(problem, max_options=MAX_CLASS_OPTIONS)
    except ValueError as e:
        return BaselineResult("exhaustive", "did_not_finish", None, time.perf_counter() - start,
                              message=f"did not finish: {e}", combinations=-1)
    classes = [k for k in opts]
    total = math.prod(len(o) for o in opts.values())
    if total == 0:
        empty = [k for k, o in opts.items() if not o]
        return BaselineResult("exhaustive", "infeasible", None, time.perf_counter() - start,
                              message=f"class {empty[0]!r} has no option that fits the fleet", combinations=0)
    arrays = []
    for k in classes:
        o = opts[k]
        arrays.append((np.array([x.objective for x in o]), np.array([x.usage for x in o], dtype=np.int64),
                       np.array([x.cost_usd for x in o]), np.array([x.power_w for x in o])))
    two = len(classes) >= 2 and len(opts[classes[-2]]) * len(opts[classes[-1]]) <= _GRID
    head, tail = (classes[:-2], classes[-2:]) if two else (classes[:-1], classes[-1:])
    if len(tail) == 1:
        tail_obj, tail_use, tail_usd, tail_w = arrays[-1]
        tail_idx = np.arange(len(tail_obj))[:, None]
    else:
        (oa, ua, ca, wa), (ob, ub, cb, wb) = arrays[-2], arrays[-1]
        tail_obj = (oa[:, None] + ob[None, :]).ravel()
        tail_use = (ua[:, None, :] + ub[None, :, :]).reshape(-1, len(names))
        tail_usd = (ca[:, None] + cb[None, :]).ravel()
        tail_w = (wa[:, None] + wb[None, :]).ravel()
        tail_idx = np.stack(np.unravel_index(np.arange(len(oa) * len(ob)), (len(oa), len(ob))), axis=1)
    best, best_pick, evaluated, stopped = math.inf, None, 0, ""
    head_ranges = [range(len(opts[k])) for k in head]
    for pick in itertools.product(*head_ranges):
        h_obj = sum(arrays[i][0][j] for i, j in enumerate(pick))
        h_use = sum((arrays[i][1][j] for i, j in enumerate(pick)), np.zeros(len(names), dtype=np.int64))
        h_usd = sum(arrays[i][2][j] for i, j in enumerate(pick))
        h_w = sum(arrays[i][3][j] for i, j in enumerate(pick))
        ok = np.all(tail_use + h_use <= avail, axis=1) & _limits_ok(problem, tail_usd + h_usd, tail_w + h_w)
        evaluated += len(tail_obj)
        if ok.any():
            cand = np.where(ok, tail_obj + h_obj, np.inf)
            j = int(np.argmin(cand))
            if cand[j] < best:
                best, best_pick = float(cand[j]), (pick, tuple(int(x) for x in tail_idx[j]))
        if evaluated >= max_evaluations:
            stopped = f"evaluation budget {max_evaluations:,}"
        elif time.perf_counter() - start > time_budget_s:
            stopped = f"time budget {time_budget_s:g} s"
        if stopped and evaluated < total:
            break
        stopped = ""
    seconds = time.perf_counter() - start
    choice, units = {}, None
    if best_pick is not None:
        idx = list(best_pick[0]) + list(best_pick[1])
        chosen = {k: opts[k][i] for k, i in zip(classes, idx)}
        choice = {k: [list(p) for p in o.picks] for k, o in chosen.items()}
        units = int(sum(sum(o.usage) for o in chosen.values()))
    if stopped:
        return BaselineResult("exhaustive", "did_not_finish", None if best_pick is None else best, seconds,
                              message=f"did not finish: {stopped} hit after {evaluated:,} of {total:,} "
                                      "combinations; objective is the best seen", evaluated=evaluated,
                              combinations=total, units=units, choice=choice)
    if best_pick is None:
        return BaselineResult("exhaustive", "infeasible", None, seconds,
                              message="no combination fits the fleet and limits", evaluated=evaluated,
                              combinations=total)
    return BaselineResult("exhaustive", "finished", _round(best), seconds, evaluated=evaluated, combinations=total,
                          units=units, choice=choice)


def greedy(problem: Problem) -> BaselineResult:
    """Cheapest chip per stage first (module docstring)."""
    start = time.perf_counter()
    names, avail, price = resources(problem)
    index = {r: i for i, r in enumerate(names)}
    left = avail.copy()
    serving: dict[str, list[tuple[float, Column, float, list[tuple[int, int]]]]] = defaultdict(list)
    for c in problem.columns:
        if not all(p.resource in index for p in c.parts):
            continue
        w = _replica(c, price, index)[0]
        per = [(index[p.resource], p.units) for p in c.parts]
        for q, cap in c.capacity.items():
            serving[q].append((w / cap, c, w, per))
    for options in serving.values():
        options.sort(key=lambda x: (x[0], x[1].name))

    def unit_cost(route) -> float:
        return sum(serving[q][0][0] if serving.get(q) else math.inf for q in route.steps)

    def cover(route, rate, trial):
        """Greedy cover of every step of ``route``; (picks, weight) or None when chips run out."""
        picks, w_sum = [], 0.0
        for q in route.steps:
            need = rate
            while need > rate * _REL:
                best = None
                for _, c, w, per in serving.get(q, []):
                    fit = min(int(trial[i]) // u for i, u in per)
                    if fit <= 0:
                        continue
                    cap = c.capacity[q]
                    n = min(fit, math.ceil(need / cap * (1 - _REL)))
                    score = n * w / min(need, n * cap)  # cost per request/s actually served
                    if best is None or score < best[0]:
                        best = (score, c, n, w, per)
                if best is None:
                    return None
                _, c, n, w, per = best
                for i, u in per:
                    trial[i] -= n * u
                w_sum += n * w
                picks.append((q, c.name, n))
                need -= n * c.capacity[q]
        return picks, w_sum

    routes_of = defaultdict(list)
    for r in problem.routes:
        routes_of[r.demand].append(r)
    demands = [d for d in problem.demands if d.rate > 0]
    demands.sort(key=lambda d: (-d.rate * min((unit_cost(r) for r in routes_of[d.name]), default=math.inf), d.name))
    choice: dict[str, list[tuple[str, str, int]]] = {}
    for d in demands:
        best_route = None
        for r in sorted(routes_of[d.name], key=lambda r: r.name):
            trial = left.copy()
            got = cover(r, d.rate, trial)
            if got is not None and (best_route is None or got[1] < best_route[1]):
                best_route = (got[0], got[1], trial)
        if best_route is None:
            return BaselineResult("greedy", "infeasible", None, time.perf_counter() - start,
                                  message=f"greedy ran out of chips for class {d.name!r}", choice=choice)
        choice[d.name], _, left = best_route
    cols = {c.name: c for c in problem.columns}
    total_w = total_usd = total_power = 0.0
    for picks in choice.values():
        for _, name, n in picks:
            w, usd, watts, _ = _replica(cols[name], price, index)
            total_w, total_usd, total_power = total_w + n * w, total_usd + n * usd, total_power + n * watts
    if not _limits_ok(problem, np.array(total_usd), np.array(total_power)):
        return BaselineResult("greedy", "infeasible", None, time.perf_counter() - start,
                              message="greedy plan breaks the power cap or budget", choice=choice)
    return BaselineResult("greedy", "finished", _round(total_w), time.perf_counter() - start,
                          units=int((avail - left).sum()), choice=choice)


def lp_relaxation(problem: Problem, backend: str = "highs", time_limit_s: float | None = None) -> BaselineResult:
    """The LP relaxation's objective (a lower bound on the MILP optimum) and its time (build + solve)."""
    from solvers.milp import relax

    sol = relax(problem, backend=backend, time_limit_s=time_limit_s)
    seconds = sol.build_seconds + sol.solve_seconds
    if sol.status != "optimal":
        return BaselineResult(f"lp-{backend}", sol.status if sol.status == "infeasible" else "error", None, seconds,
                              message=sol.message)
    return BaselineResult(f"lp-{backend}", "finished", sol.objective, seconds,
                          message=f"build {sol.build_seconds:.3f} s, solve {sol.solve_seconds:.3f} s")


def _round(x: float) -> float:
    return float(f"{x:.10g}")
