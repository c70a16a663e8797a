"""The elastic placement model: the MILP of :mod:`solvers.milp` with its hard limits made soft.

When :func:`solvers.milp.solve` proves a problem infeasible, this model says by
how much. It is the model :func:`solvers.milp.build_model` builds — the same
variables and the same constraint functions, so the two cannot drift apart —
with a non-negative, *relative* slack added to every row that states a limit,
and the variable upper bounds that mirror those limits lifted
(n ≤ U_s/u_p, f ≤ cap_e/F_t). Rows are shown in natural units; the model's
rows are divided by a power of two (``Variables.row_scale``), right-hand side
included, which leaves the relative slacks unchanged:

=================  ==============================================  ==============
row family          elastic form                                    penalty
=================  ==============================================  ==============
route_split         Σ_{r∈k} x_r + s_k = 1,  0 ≤ s_k ≤ 1             W_DEMAND · s_k
site_units          Σ u_p·n_{c,p,s} ≤ U_s·(1 + σ_s)                 W_LIMIT · σ_s
edge_capacity       Σ F·f + Σ k·B·μ·z ≤ cap_e·(1 + ε_e)             W_LIMIT · ε_e
power_cap           Σ W·u·n ≤ P·(1 + π)                             W_LIMIT · π
budget              Σ $·u·n ≤ B·(1 + β)                             W_LIMIT · β
=================  ==============================================  ==============

``s_k`` is the share of demand k left unserved; σ, ε, π, β are the shares by
which a site's chips, an edge's bandwidth, the power cap and the budget would
have to grow. Each slack's coefficient equals its row's right-hand side, so
the elastic rows are exactly as well scaled as the originals. The objective is
the penalties alone (plus a 1e-7 tie-break against needless flow): cost does
not matter when no plan exists. ``W_LIMIT = 1`` per 100 % of a limit and
``W_DEMAND = 1e6`` per whole class: raising limits is preferred — it answers
"what would it take?" — and demand is dropped only when no raise helps (a
class whose replicas fit in no site, a pair-latency limit no path meets) or
the raise would be more than 10⁶ times the limit.

Examples
--------
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> p = Problem(demands=[Demand(name="d", rate=10.0)],
...             routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
>>> short = elastic_shortfall(p, backend="highs")
>>> short.status, short.sites
('optimal', {'s': (5.0, 4.0)})
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pulp

from solvers.backends import DEFAULT_BACKEND, SolveOptions, run
from solvers.extract import model_stats, to_solution
from solvers.milp import Variables, build_model
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.tolerances import ROW_FEASIBILITY, TIE_BREAK

__all__ = ["W_DEMAND", "W_LIMIT", "ElasticModel", "Shortfalls", "build_elastic_model", "elastic_shortfall"]

#: Penalty per 100 % raise of a limit (site chips, edge bandwidth, power, budget).
W_LIMIT = 1.0
#: Penalty per class left entirely unserved.
W_DEMAND = 1e6
#: Default time limit of the elastic solve (seconds); diagnosis must not hang.
DEFAULT_TIME_LIMIT_S = 30.0
#: Relative gap: within 1 % of the smallest total raise. CBC can take minutes to close the last
#: few tenths of a percent on the (flat, degenerate) penalty objective; the incumbent it already
#: holds is what a planner needs.
DEFAULT_GAP = 1e-2


@dataclass(frozen=True)
class Shortfalls:
    """What the elastic model had to relax, in the problem's own units.

    ``unserved_rps``: demand -> requests/s no raise of a limit lets the fleet
    serve; ``sites``: site -> (units needed, units it has); ``edges``:
    (source, target) -> (bytes/s needed, capacity); ``power_w`` and
    ``budget_usd_per_hour``: (needed, limit) when short. ``solution`` is the
    elastic placement behind the numbers (its replicas may exceed the sites).
    """

    status: str
    message: str
    unserved_rps: dict[str, float] = field(default_factory=dict)
    sites: dict[str, tuple[float, float]] = field(default_factory=dict)
    edges: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    power_w: tuple[float, float] | None = None
    budget_usd_per_hour: tuple[float, float] | None = None
    solution: Solution | None = None

    @property
    def solved(self) -> bool:
        """Whether the elastic model was solved (to optimality or with an incumbent)."""
        return self.solution is not None

    @property
    def empty(self) -> bool:
        """No shortfall at all (the problem is feasible as it stands)."""
        return not (self.unserved_rps or self.sites or self.edges or self.power_w or self.budget_usd_per_hour)


@dataclass
class ElasticModel:
    """The elastic model, its variables, and the slack variables by row."""

    model: pulp.LpProblem
    variables: Variables
    demand: dict[str, pulp.LpVariable] = field(default_factory=dict)
    site: dict[str, pulp.LpVariable] = field(default_factory=dict)
    edge: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    power: pulp.LpVariable | None = None
    budget: pulp.LpVariable | None = None


def _slack(m: pulp.LpProblem, name: str, ub: float | None = None) -> pulp.LpVariable:
    if hasattr(m, "add_variable"):
        return m.add_variable(name, 0, ub, pulp.LpContinuous)
    return pulp.LpVariable(name, 0, ub, pulp.LpContinuous)  # PuLP < 3


def _rows(m: pulp.LpProblem) -> list:
    rows = m.constraints
    return list(rows()) if callable(rows) else list(rows.values())  # PuLP ≥ 3.3 / older


def build_elastic_model(problem: Problem) -> ElasticModel:
    """Build the MILP with :func:`solvers.milp.build_model`, then make its limit rows elastic.

    Raises
    ------
    ValueError
        As :func:`solvers.milp.build_model` (unpackable part sizes, dangling names).
    """
    m, v = build_model(problem)
    ix = v.index
    em = ElasticModel(model=m, variables=v)
    rows = {row.name: row for row in _rows(m)}
    for var in [*v.n.values(), *v.z.values(), *v.f.values()]:
        var.upBound = None  # these bounds restate the limits made elastic below
    penalties: dict[pulp.LpVariable, float] = {}
    for name in sorted(rows):
        family, key = v.labels.get(name, ("", ()))
        row = rows[name]
        rhs = -row.constant  # PuLP stores Σ a·x (sense) rhs as Σ a·x + constant (sense) 0
        token = name.split("__", 1)[1] if "__" in name else ""
        if family == "route_split":
            s = _slack(m, f"elastic_demand__{token}", ub=1.0)
            row.expr.addterm(s, 1.0)
            em.demand[key[0]] = s
            penalties[s] = W_DEMAND
        elif family == "site_units" and rhs > 0:
            s = _slack(m, f"elastic_site__{token}")
            row.expr.addterm(s, -rhs)
            em.site[key[0]] = s
            penalties[s] = W_LIMIT
        elif family == "edge_capacity" and rhs > 0:
            s = _slack(m, f"elastic_edge__{token}")
            row.expr.addterm(s, -rhs)
            em.edge[tuple(key)] = s
            penalties[s] = W_LIMIT
        elif family == "power_cap":
            em.power = _slack(m, "elastic_power")
            row.expr.addterm(em.power, -rhs)
            penalties[em.power] = W_LIMIT
        elif family == "budget":
            em.budget = _slack(m, "elastic_budget")
            row.expr.addterm(em.budget, -rhs)
            penalties[em.budget] = W_LIMIT
        row.modified = True
    # Demands of rate > 0 whose every route was dropped still have a route_split row (0 = 1
    # without slack); demands of rate 0 have none and need no slack.
    missing = sorted(set(ix.rate) - set(em.demand))
    if missing:  # pragma: no cover - add_route_split writes one row per active demand
        raise ValueError(f"elastic model: no route_split row for demands {missing}")
    objective = dict(penalties)
    objective.update({var: TIE_BREAK for var in v.f.values()})
    m.setObjective(pulp.LpAffineExpression(objective))
    return em


def _value(var: pulp.LpVariable | None) -> float:
    if var is None or var.varValue is None:
        return 0.0
    return max(0.0, float(var.varValue))


def elastic_shortfall(
    problem: Problem,
    backend: str = DEFAULT_BACKEND,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    gap: float | None = DEFAULT_GAP,
) -> Shortfalls:
    """Solve the elastic model and return what had to give, per demand, site, edge and limit.

    Never raises for solver trouble: a failed or timed-out solve without an
    incumbent gives ``status`` ``"error"``/``"time_limit"`` and no shortfalls.

    Parameters
    ----------
    problem : Problem
        The (infeasible) problem.
    backend : str
        As :func:`solvers.milp.solve`.
    time_limit_s, gap : float, optional
        Limits of the elastic solve.
    """
    start = time.perf_counter()
    em = build_elastic_model(problem)
    m, v = em.model, em.variables
    ix = v.index
    stats = model_stats(m)
    common = {"backend": backend, "build_seconds": time.perf_counter() - start, "stats": stats}
    outcome = run(m, backend, SolveOptions(time_limit_s=time_limit_s, gap=gap))
    if not outcome.has_values:
        return Shortfalls(status=outcome.status, message=outcome.message)
    sol = to_solution(v, status=outcome.status, message=outcome.message, bound=None,
                      solve_seconds=outcome.seconds, **common)
    unserved = {}
    for k, s in sorted(em.demand.items()):
        share = min(1.0, _value(s))
        if share > ROW_FEASIBILITY:
            unserved[k] = ix.rate[k] * share
    used: dict[str, float] = {}
    for p in sol.replicas:
        used[p.site] = used.get(p.site, 0.0) + p.replicas * ix.column[p.column].parts[p.part].units
    sites = {}
    for name, s in sorted(em.site.items()):
        site = ix.site[name]
        has = float(site.units_per_domain * site.domains)
        need = used.get(name, 0.0)
        if _value(s) > ROW_FEASIBILITY and need > has:
            sites[name] = (need, has)
    load = {(e.source, e.target): e.load_bytes_per_s for e in sol.edge_loads}
    edges = {}
    for e, s in sorted(em.edge.items()):
        cap = ix.capacity[e]
        if _value(s) > ROW_FEASIBILITY:
            edges[e] = (max(load.get(e, 0.0), cap * (1 + _value(s))), cap)
    power = budget = None
    if em.power is not None and _value(em.power) > ROW_FEASIBILITY:
        cap = float(problem.power_cap_w)
        power = (max(sol.power_w, cap * (1 + _value(em.power))), cap)
    if em.budget is not None and _value(em.budget) > ROW_FEASIBILITY:
        cap = float(problem.budget_usd_per_hour)
        budget = (max(sol.cost_usd_per_hour, cap * (1 + _value(em.budget))), cap)
    return Shortfalls(status=outcome.status, message=outcome.message, unserved_rps=unserved, sites=sites,
                      edges=edges, power_w=power, budget_usd_per_hour=budget, solution=sol)
