"""A Lagrangian bound by part, and the exact completion it allows, for problems tied only by site rows.

The collapsed fleet of :mod:`solvers.twolevel` falls apart into parts
(:func:`solvers.cost_floors.parts`): demands no column links, tied only by
the families' rows over replica counts (``Family.coupling``) — the site-unit
rows Σ_d u_{d,s} ≤ U_s (u_{d,s}: units of site s that part d's replicas use),
which the method prices, and the others (a power cap), which a combination of
part plans must meet. Its MILP is slow to prove although its LP gap is tiny, because
branch and bound must close every part's rounding gap in one tree.

**Bound.** Price the units of site s at w_s + μ_s with μ ≥ 0 and drop the
coupling: for any plan x = (x_d) of the whole,

    cost(x) ≥ cost(x) + Σ_s μ_s·(Σ_d u_{d,s}(x_d) − U_s) = Σ_d Lag_d(x_d; μ) − μ·U
            ≥ Σ_d L_d(μ) − μ·U =: L(μ),

with Lag_d(x_d; μ) = Σ (w_s + μ_s)·units of x_d and L_d(μ) its least value
over the plans of part d alone (each part keeps every site row, which x_d
meets on its own). L(0) is the sum of the cost floors; L(μ) also charges the
units the parts compete for. Each L_d(μ) is a MILP of one part at shifted
prices, solved exactly; μ comes from Kelley's cutting planes on the part
plans seen so far (:func:`next_multipliers`).

**Column fixing.** Let UB be the cost of a plan of the whole (the best
combination of the part plans seen, :func:`best_combination`). Any plan x
with cost(x) ≤ UB has, by the chain above and L_{d'}(μ) ≥ B_{d'} (proven
bounds), for each part d::

    Lag_d(x_d; μ) ≤ UB + μ·U − Σ_{d'≠d} B_{d'} =: cap_d.

If x_d uses column c, Lag_d(x_d; μ) ≥ LP_d + r_c, where LP_d is the optimum
of part d's LP relaxation at prices w + μ and r_c the least rise of that LP's
objective when c has a replica: for any x of the LP, objective(x) = LP_d +
Σ_j d_j·(x_j − bound_j) ≥ LP_d + Σ_{j of c} d⁺_j·x_j (d the reduced costs,
every term ≥ 0 at an optimum), and a replica of c puts Σ_s n_{c,p,s} ≥ 1 on
each part p and μ_c·Σ z ≥ 1 on its pairs, so r_c = Σ_p min_s d⁺(n_{c,p,s}) +
min d⁺(z_c)/μ_c. Columns with LP_d + r_c > cap_d are in no plan of cost ≤ UB.

**Completion.** The problem with only the columns left, plus for each part
the rows B_d ≤ Lag_d ≤ cap_d (both hold for every plan of cost ≤ UB), holds
every plan of cost ≤ UB, the optimum among them; so its optimum is the
optimum of the whole and its proven bound a bound of the whole. Its LP bound
is at least L(μ) (the floor rows, summed, with the site rows), so little is
left to branch on.

Margins: the solvers' objectives carry tie-breaks of at most ``TIE_BREAK``
(1e-7) relative and bounds are reported to ~1e-9, so every bound is taken
``MARGIN`` = 1e-6 relative below and every cap as much above: a looser row
cuts off nothing more.

The parts' LPs and each round's part MILPs are solved side by side on threads
(:func:`solvers.backends.threads.threaded_map`) and taken in part order, so
every round is that of a solve one part at a time.

Applies when the problem splits into parts, minimises cost and no family's
coupling row reads the prices that the multipliers shift (a budget,
``ReplicaRow.prices``); otherwise :func:`solve_by_parts` returns ``None``.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pulp

from solvers.backends import SolveOptions, run
from solvers.backends.threads import solve_threads, threaded_map
from solvers.cost_floors import CUT, FLOOR_MARGIN, parts, solved_parts
from solvers.family import (
    DROP,
    Family,
    ReplicaRow,
    coupling_rows,
    hard,
    no_columns,
    no_objective,
    no_start,
    separable,
)
from solvers.milp import DEFAULT_GAP, Start, Variables, build_model, solve_model, time_left
from solvers.model import families_of
from solvers.problem import OBJECTIVES, Problem
from solvers.solution import Solution
from solvers.tolerances import ZERO
from solvers.variables import add_row

__all__ = [
    "CONVERGED",
    "FIRST_RADIUS",
    "MARGIN",
    "ROUNDS",
    "Evaluation",
    "PartLP",
    "PartPlan",
    "add_completion_bounds",
    "best_combination",
    "completion_bounds",
    "evaluate",
    "first_plans",
    "lagrangian_cost",
    "next_multipliers",
    "plan_of",
    "priced",
    "solve_by_parts",
]

log = logging.getLogger(__name__)

#: Relative margin under every bound and over every cap (see the module docstring).
MARGIN = FLOOR_MARGIN

#: Most evaluations of the Lagrangian (each solves the parts whose bound may have moved).
ROUNDS = 6

#: First trust-region radius of Kelley's steps, as a share of the dearest unit's price.
FIRST_RADIUS = 1 / 32

#: Kelley's steps stop when the model's best value is within this (relative) of the best L(μ) found.
CONVERGED = 1e-7

Multipliers = dict[str, float]


@dataclass(frozen=True)
class PartPlan:
    """A plan of one part: its replicas (column, part, site, count), cost ($/h), units per site, and what it
    puts on each coupling row (``ReplicaRow.name`` -> amount)."""

    replicas: tuple[tuple[str, int, str, int], ...]
    cost: float
    units: tuple[tuple[str, float], ...]
    uses: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Evaluation:
    """One part at multipliers ``mu``: a proven bound on L_d(μ), its LP (value, least rise per column), a plan."""

    mu: Multipliers
    bound: float
    lp: float
    rise: dict[str, float]
    plan: PartPlan | None


def priced(problem: Problem, mu: Multipliers) -> Problem:
    """``problem`` with μ_s added to the price per unit of each site s.

    Examples
    --------
    >>> from solvers.problem import Site
    >>> s = Site(name="s", node="v", resource="gpu", units_per_domain=8, domains=1,
    ...          usd_per_hour_per_unit=2.0, power_w_per_unit=1.0)
    >>> [x.usd_per_hour_per_unit for x in priced(Problem(demands=[], routes=[], columns=[], sites=[s]),
    ...                                          {"s": 0.25}).sites]
    [2.25]
    """
    return problem.model_copy(update={"sites": [
        s.model_copy(update={"usd_per_hour_per_unit": s.usd_per_hour_per_unit + mu.get(s.name, 0.0)})
        if mu.get(s.name) else s for s in problem.sites]})


def plan_of(problem: Problem, sol: Solution, columns: set[str] | None = None,
            rows: list[ReplicaRow] = ()) -> PartPlan:
    """The replicas of ``sol`` on ``columns`` (default: all) as a :class:`PartPlan` priced by ``problem``,
    with what it puts on each of the coupling ``rows``."""
    col = {c.name: c for c in problem.columns}
    site = {s.name: s for s in problem.sites}
    picked = sorted((r.column, r.part, r.site, r.replicas) for r in sol.replicas
                    if r.replicas and (columns is None or r.column in columns))
    units: dict[str, float] = defaultdict(float)
    uses: dict[str, float] = defaultdict(float)
    cost = 0.0
    for c, p, s, n in picked:
        size = col[c].parts[p].units
        units[s] += n * size
        cost += n * size * site[s].usd_per_hour_per_unit
        for row in rows:
            uses[row.name] += row.use(site[s], size, n)
    return PartPlan(tuple(picked), cost, tuple(sorted(units.items())),
                    tuple(sorted((name, u) for name, u in uses.items() if u)))


def lagrangian_cost(plan: PartPlan, mu: Multipliers) -> float:
    """Lag_d of ``plan``: its cost with μ_s charged per unit of site s.

    >>> lagrangian_cost(PartPlan((), 10.0, (("s", 8.0),), 0.0), {"s": 0.5})
    14.0
    """
    return plan.cost + sum(mu.get(s, 0.0) * u for s, u in plan.units)


class PartLP:
    """The LP relaxation of one part at prices w + μ, built once and re-solved for each μ (HiGHS, warm start).

    Its objective is Lag_d exactly (no tie-breaks), so its optimum is a lower
    bound on L_d(μ) and its column duals are the reduced costs of the module
    docstring's column fixing.
    """

    def __init__(self, part: Problem, families: tuple[Family, ...] | None = None) -> None:
        self.problem = part
        self.model, self.v = build_model(part, families=families)
        position = {id(var): j for j, var in enumerate(self.model.variables())}
        price = {s.name: s.usd_per_hour_per_unit for s in part.sites}
        self.n_keys = list(self.v.n)
        self.n_cols = np.array([position[id(self.v.n[k])] for k in self.n_keys], dtype=np.int32)
        self.n_cost = np.array([price[k[2]] * self.v.index.units[k] for k in self.n_keys])
        self.n_units = np.array([float(self.v.index.units[k]) for k in self.n_keys])
        self.n_site = [k[2] for k in self.n_keys]
        self.z = [(k[0], position[id(var)], self.v.pair_unit[k[0]]) for k, var in self.v.z.items()]
        self.model.setObjective(pulp.LpAffineExpression(
            {self.v.n[k]: float(c) for k, c in zip(self.n_keys, self.n_cost)}))
        self.ready = run(self.model, "highs", SolveOptions(mip=False)).status == "optimal"
        #: The columns the LP optimum at μ = 0 loads (as a solution's loads name them), if it is solved.
        self.loaded = {c for (c, _q, _s), var in self.v.y.items() if _loaded(var)} if self.ready else set()

    def solve(self, mu: Multipliers) -> tuple[float, dict[str, float]] | None:
        """The LP optimum at prices w + μ and each column's least rise r_c; ``None`` if it is not solved."""
        import highspy

        h = self.model.solverModel
        if h is None or not self.ready:
            return None
        shift = np.array([mu.get(s, 0.0) for s in self.n_site])
        h.changeColsCost(len(self.n_cols), self.n_cols, self.n_cost + shift * self.n_units)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        dual = np.maximum(np.asarray(h.getSolution().col_dual), 0.0)
        least: dict[tuple, float] = {}
        for (c, p, _s), j in zip(self.n_keys, self.n_cols):
            least[c, p] = min(least.get((c, p), float("inf")), float(dual[j]))
        for c, j, unit in self.z:
            least[c, "z"] = min(least.get((c, "z"), float("inf")), float(dual[j]) / unit)
        total: dict[str, float] = defaultdict(float)
        for (c, _), r in least.items():
            total[c] += r
        return float(h.getInfo().objective_function_value), {c.name: total[c.name] for c in self.problem.columns}


def _loaded(var: pulp.LpVariable) -> bool:
    """Whether a load variable carries load: its value projected onto its bounds is not below ``ZERO``
    (what :func:`solvers.extract.to_solution` reports as a load)."""
    value = var.varValue or 0.0
    if var.lowBound is not None:
        value = max(value, var.lowBound)
    if var.upBound is not None:
        value = min(value, var.upBound)
    return abs(value) >= ZERO


def evaluate(part: PartLP, mu: Multipliers, known: list[PartPlan], time_limit_s: float | None = None,
             rows: list[ReplicaRow] = (), **options) -> Evaluation | None:
    """L_d(μ) of one part: its MILP at prices w + μ, on the columns that can beat the best ``known`` plan.

    A column whose least rise puts the LP above the best known plan's Lag_d is
    in no plan better than that one, so the MILP without it has the same
    optimum, and its bound (≤ that optimum) is a bound on L_d(μ). The LP
    optimum is a bound too, used when the MILP proves less. ``None`` if the
    part's LP is not solved (then the part has no plan, or time is out).
    """
    began = time.perf_counter()
    shifted = priced(part.problem, mu)
    lp = part.solve(mu)
    if lp is None:
        return None
    value, rise = lp
    best = min((lagrangian_cost(p, mu) for p in known), default=None)
    keep = {c for c, r in rise.items() if best is None or value + r <= best + MARGIN * abs(best)}
    solved = shifted.model_copy(update={"columns": [c for c in shifted.columns if c.name in keep]})
    left = None if time_limit_s is None else time_left(time_limit_s, time.perf_counter() - began)
    sol, _ = solve_model(solved, time_limit_s=left, **options)
    bounds = [value] + ([sol.best_bound] if sol.best_bound is not None else [])
    bound = max(bounds) - MARGIN * abs(max(bounds))
    plan = (plan_of(part.problem, sol, rows=rows) if sol.replicas and sol.status in ("optimal", "feasible", "time_limit")
            else None)
    return Evaluation(dict(mu), bound, value, rise, plan)


def _reusable(e: Evaluation, mu: Multipliers) -> bool:
    """Whether ``e`` still gives a tight bound at ``mu``: μ ≥ e.mu, and its plan uses no unit whose price rose.

    Valid either way: L_d and every Lag_d only grow with μ; tight because the plan's Lag_d did not move.
    """
    if e.plan is None or any(mu.get(s, 0.0) < m for s, m in e.mu.items()):
        return False
    return all(mu.get(s, 0.0) == e.mu.get(s, 0.0) for s, u in e.plan.units if u > 0)


def next_multipliers(known: list[list[PartPlan]], limits: dict[str, float], sites: list[str],
                     centre: Multipliers, radius: float) -> tuple[Multipliers, float] | None:
    """Kelley's step: μ ≥ 0 on ``sites`` within ``radius`` of ``centre`` maximising Σ_d min_{known} Lag_d − μ·U.

    Returns μ and the maximum, which is at least max L(μ) over that box (each
    L_d is at most the Lag_d of any known plan of part d). The box keeps the
    step where the known plans say something: with few plans the model is
    nearly linear and its maximum lies on the box. ``None`` if the LP is not solved.

    Examples
    --------
    >>> cheap, dear = PartPlan((), 10.0, (("s", 8.0),), 0.0), PartPlan((), 12.0, (), 0.0)
    >>> mu, value = next_multipliers([[cheap, dear], [cheap, dear]], {"s": 8.0}, ["s"], {}, 5.0)
    >>> round(mu["s"], 6), round(value, 6)
    (0.25, 22.0)
    """
    m = pulp.LpProblem("lagrange", pulp.LpMaximize)
    mu = {s: m.add_variable(f"mu_{i}", max(centre.get(s, 0.0) - radius, 0.0), centre.get(s, 0.0) + radius)
          for i, s in enumerate(sites)}
    theta = [m.add_variable(f"theta_{d}") for d in range(len(known))]
    m += pulp.lpSum(theta) - pulp.lpSum(limits[s] * mu[s] for s in sites)
    for d, plans in enumerate(known):
        for j, p in enumerate(plans):
            units = dict(p.units)
            m += theta[d] <= p.cost + pulp.lpSum(units.get(s, 0.0) * mu[s] for s in sites), f"cut_{d}_{j}"
    outcome = run(m, "highs", SolveOptions(mip=False))
    if outcome.status != "optimal":
        return None
    return {s: max(float(var.varValue or 0.0), 0.0) for s, var in mu.items()}, float(pulp.value(m.objective))


def best_combination(known: list[list[PartPlan]], rows: list[ReplicaRow]) -> tuple[float, list[PartPlan]] | None:
    """The cheapest choice of one known plan per part that meets every coupling row (the sites' units, a
    power cap, …: ``PartPlan.uses``): a plan of the whole.

    Examples
    --------
    >>> units = ReplicaRow(name="site_units|s", rhs=8.0, per_unit=lambda site: 1.0)
    >>> a, b = PartPlan((), 10.0, (("s", 8.0),), (("site_units|s", 8.0),)), PartPlan((), 12.0, ())
    >>> cost, chosen = best_combination([[a, b], [a, b]], [units])
    >>> cost
    22.0
    """
    m = pulp.LpProblem("combine", pulp.LpMinimize)
    pick = {(d, j): m.add_variable(f"pick_{d}_{j}", 0, 1, pulp.LpInteger)
            for d, plans in enumerate(known) for j in range(len(plans))}
    m += pulp.lpSum(known[d][j].cost * var for (d, j), var in pick.items())
    for d, plans in enumerate(known):
        m += pulp.lpSum(pick[d, j] for j in range(len(plans))) == 1, f"one_{d}"
    use: dict[str, list] = defaultdict(list)
    for (d, j), var in pick.items():
        for name, u in known[d][j].uses:
            use[name].append((u, var))
    for i, row in enumerate(r for r in rows if use[r.name]):
        m += pulp.lpSum(u * var for u, var in use[row.name]) <= row.rhs, f"row_{i}"
    outcome = run(m, "highs", SolveOptions(mip=True))
    if outcome.status != "optimal":
        return None
    chosen = [known[d][j] for (d, j), var in pick.items() if (var.varValue or 0.0) > 0.5]
    return sum(p.cost for p in chosen), chosen


def first_plans(problem: Problem, support: Problem | None, names: list[frozenset[str]], time_limit_s: float | None,
                rows: list[ReplicaRow] = (), **options) -> list[list[PartPlan]]:
    """A plan of each part of ``problem`` (named by its columns ``names``): the optimum of that part of ``support``.

    ``support`` is ``problem`` with fewer columns (the columns near its LP
    optimum, see :func:`solvers.twolevel.solve_from_lp_support`): each of its
    parts is small and solves fast, and its plan is a plan of the part of
    ``problem`` that holds its columns. A part without such a plan gets none.
    """
    known: list[list[PartPlan]] = [[] for _ in names]
    if support is None:
        return known
    part_of = {c: d for d, n in enumerate(names) for c in n}
    for part, sol in solved_parts(parts(support, options.get("families")), time_limit_s, **options):
        if sol.replicas:
            known[part_of[part.columns[0].name]].append(plan_of(problem, sol, rows=rows))
    return known


def solve_by_parts(problem: Problem, support: Problem | None = None, time_limit_s: float | None = None,
                   near: Callable[[set[str]], Problem | None] | None = None, **options) -> Solution | None:
    """The optimum of ``problem`` by the Lagrangian bound of its parts and the completion (module docstring).

    ``support``, ``problem`` on fewer columns, gives each part a first plan
    (:func:`first_plans`); without it, ``near`` (if given) makes one from the
    columns the parts' LP optima load. The parts' LPs have no site rows in
    common, so together they are the LP relaxation of ``problem`` without
    its coupling: where the site rows do not bind it (the collapsed bench
    fleets), the same columns, and no LP of the whole is needed. ``options`` are those of
    :func:`solvers.milp.solve_model`. The result is the completion's solution:
    a plan of ``problem`` (on the columns that can beat the best combination)
    with the better of its proven bound and L(μ). ``None`` if the method does
    not apply (no parts, another objective, a budget), a part has no plan or
    no combination of the part plans found fits the fleet.

    Examples
    --------
    Two demands of 2 req/s share one 4-unit site at $1/h per unit; each
    needs 2 units (one 2-unit replica or two 1-unit ones), $4/h in all:

    >>> from solvers.problem import Column, Demand, Part, Route, Site
    >>> def col(name, step, units, rate):
    ...     return Column(name=name, parts=[Part(resource="gpu", units=units)], capacity={step: rate})
    >>> p = Problem(demands=[Demand(name=k, rate=2.0) for k in "ab"],
    ...             routes=[Route(name=f"r{k}", demand=k, steps=[f"q{k}"]) for k in "ab"],
    ...             columns=[col(f"{k}{u}", f"q{k}", u, float(u)) for k in "ab" for u in (1, 2)],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=4, domains=1,
    ...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    >>> sol = solve_by_parts(p, backend="highs")
    >>> sol.status, sol.objective, sol.best_bound
    ('optimal', 4.0, 4.0)
    """
    families = options.get("families") or families_of()
    rows = coupling_rows(families, problem)
    if not OBJECTIVES[problem.objective].prices or rows is None or any(r.prices for r in rows):
        return None
    split = parts(problem, families)
    if not split:
        return None
    began = time.perf_counter()
    cpu = time.process_time()
    limits = {s.name: float(s.units_per_domain * s.domains) for s in problem.sites}
    names = [frozenset(c.name for c in part.columns) for part in split]
    lps = threaded_map(lambda part: PartLP(part, families), split)
    if support is None and near is not None and all(lp.ready for lp in lps):
        support = near(set().union(*(lp.loaded for lp in lps)))
    known = first_plans(problem, support, names, time_limit_s, rows, **options)
    # Trust region of Kelley's steps ($/h per unit): first a small share of the dearest unit, doubled after a
    # step that improved L(μ) on its edge, halved after one that did not.
    radius = (max((s.usd_per_hour_per_unit for s in problem.sites), default=1.0) or 1.0) * FIRST_RADIUS
    latest: list[Evaluation | None] = [None] * len(split)
    mu: Multipliers = {}
    contested: list[str] = []
    best: tuple[float, Multipliers, list[Evaluation]] | None = None
    least_cost: float | None = None
    solves = 0
    for _ in range(ROUNDS):
        stale = [d for d in range(len(split)) if latest[d] is None or not _reusable(latest[d], mu)]
        left = None if time_limit_s is None else time_left(time_limit_s, time.perf_counter() - began)
        share = None if left is None else left * min(solve_threads(), len(stale)) / len(split)
        found = threaded_map(lambda d, at=mu, limit=share: evaluate(lps[d], at, known[d], time_limit_s=limit, rows=rows,
                                                                    **options), stale)
        if any(e is None for e in found):
            return None
        solves += len(stale)
        for d, e in zip(stale, found):
            latest[d] = e
            if e.plan is not None and e.plan not in known[d]:
                known[d].append(e.plan)
        evals = [e for e in latest if e is not None]
        value = sum(e.bound for e in evals) - sum(mu.get(s, 0.0) * limits[s] for s in limits)
        if best is None or value > best[0]:
            if best is not None and max(abs(mu.get(x, 0.0) - best[1].get(x, 0.0)) for x in contested) >= radius * 0.99:
                radius *= 2
            best = (value, dict(mu), evals)
        elif contested:
            radius /= 2
        contested += [s for s in sorted(limits) if s not in contested and
                      sum(dict(e.plan.units).get(s, 0.0) for e in evals if e.plan is not None) > limits[s]]
        combined = best_combination(known, rows) if all(known) else None
        if combined is not None and (least_cost is None or combined[0] < least_cost):
            least_cost = combined[0]
        log.info("Lagrangian by part at %s: L = %.10g, best plan %s, %d part solves, %.3g s (%.3g CPU s)",
                 {s: round(m, 6) for s, m in mu.items() if m}, value, least_cost, solves,
                 time.perf_counter() - began, time.process_time() - cpu)
        if least_cost is not None and least_cost - best[0] <= _gap(options.get("gap")) * abs(least_cost):
            break
        step = next_multipliers(known, limits, contested, best[1], radius) if contested and all(known) else None
        if step is None or step[1] - best[0] <= CONVERGED * abs(step[1]) or step[0] == mu:
            break
        mu = step[0]
    if least_cost is None or best is None:
        return None
    left = None if time_limit_s is None else time_left(time_limit_s, time.perf_counter() - began)
    return _complete(problem, names, limits, best, least_cost, left, options)


def _gap(gap: float | None) -> float:
    return DEFAULT_GAP if gap is None else gap


def _complete(problem: Problem, names: list[frozenset[str]], limits: dict[str, float],
              best: tuple[float, Multipliers, list[Evaluation]], upper: float, time_limit_s: float | None,
              options: dict) -> Solution | None:
    """Solve ``problem`` on the columns that can beat ``upper``, with each part's floor and cap rows."""
    lower, mu, evals = best
    total = sum(e.bound for e in evals)
    charged = sum(mu.get(s, 0.0) * u for s, u in limits.items())
    caps = [upper + charged - (total - e.bound) + MARGIN * abs(upper) for e in evals]
    keep = {c for n, e, cap in zip(names, evals, caps) for c in n if e.lp + e.rise[c] <= cap}
    small = problem.model_copy(update={"columns": [c for c in problem.columns if c.name in keep]})
    price = {s.name: s.usd_per_hour_per_unit + mu.get(s.name, 0.0) for s in problem.sites}
    part_of = {c: d for d, n in enumerate(names) for c in n}
    bounds = [(e.bound, cap) for e, cap in zip(evals, caps)]
    families = (*(options.get("families") or families_of()), completion_bounds(part_of, price, bounds))
    began, cpu = time.perf_counter(), time.process_time()
    sol, _ = solve_model(small, time_limit_s=time_limit_s, start=lambda m, v: Start(lower_bound=lower),
                         **{**options, "families": families})
    log.info("completion on %d of %d columns (best combined plan %.10g, L = %.10g): %s, %s, bound %s, "
             "%.3g s (%.3g CPU s)", len(keep), len(problem.columns), upper, lower, sol.status, sol.objective,
             sol.best_bound, time.perf_counter() - began, time.process_time() - cpu)
    if not sol.replicas:
        return None
    note = (f"; Lagrangian bound by part {lower:.10g}, completed on {len(keep):,} of "
            f"{len(problem.columns):,} columns")
    return sol.model_copy(update={"message": sol.message + note})


def add_completion_bounds(part_of: dict[str, int], price: dict[str, float], bounds: list[tuple[float, float]],
                          m: pulp.LpProblem, v: Variables) -> None:
    """The completion's rows, for each part d with columns in the model (module docstring)::

        B_d ≤ Σ_{(c,p,s): c in d} (w_s + μ_s)·u_p·n_{c,p,s} ≤ cap_d

    named ``lagrange_floor__d`` and ``lagrange_cap__d`` ($/h at the multipliers' prices).
    """
    terms: dict[int, list] = defaultdict(list)
    for key, var in v.n.items():
        terms[part_of[key[0]]].append((var, price[key[2]] * v.index.units[key]))
    for d, (floor, cap) in enumerate(bounds):
        if terms[d]:
            add_row(m, v, "lagrange_floor", (d,), [str(d)], terms[d], pulp.LpConstraintGE, floor)
            add_row(m, v, "lagrange_cap", (d,), [str(d)], terms[d], pulp.LpConstraintLE, cap)


def completion_bounds(part_of: dict[str, int], price: dict[str, float], bounds: list[tuple[float, float]]) -> Family:
    """The completion's floor and cap rows as a family: they hold for every plan of cost ≤ the best
    combination's, the optimum among them, so they cut off no plan that matters (:data:`CUT`)."""
    return Family(name="lagrange_bounds", check=CUT, rows=partial(add_completion_bounds, part_of, price, bounds),
                  objective=no_objective, collapse=DROP, coupling=separable, elastic=hard, start=no_start,
                  columns=no_columns)
