"""The elastic placement model: the MILP of :mod:`solvers.model` with its hard limits made soft.

When a solve proves a problem infeasible, this model says by how much. It is the model
:func:`solvers.model.build_model` builds from the same families — the same variables and the same
constraint functions, so the two cannot drift apart — and then each family makes its own rows
elastic (``Family.elastic``): a non-negative, *relative* slack on every row that states a limit, and
the variable upper bounds that mirror those limits lifted (n ≤ U_s/u_p, f ≤ cap_e/F_t). Rows are
shown in natural units; the model's rows are divided by a power of two (``Variables.row_scale``),
right-hand side included, which leaves the relative slacks unchanged. The built-in families:

=================  ==============================================  ==============
row family          elastic form                                    penalty
=================  ==============================================  ==============
route_split         Σ_{r∈k} x_r + s_k = 1,  0 ≤ s_k ≤ 1             W_DEMAND · s_k
site_units          Σ u_p·n_{c,p,s} ≤ U_s·(1 + σ_s)                 W_LIMIT · σ_s
edge_capacity       Σ F·f + Σ k·B·μ·z ≤ cap_e·(1 + ε_e)             W_LIMIT · ε_e
power_cap           Σ W·u·n ≤ P·(1 + π)                             W_LIMIT · π
uplink_share        Σ b·a − (U·u/D)·n ≤ (U·u/D)·ω                    W_LIMIT·u/(2·D·m) · ω
budget              Σ $·u·n ≤ B·(1 + β)                             W_LIMIT · β
=================  ==============================================  ==============

``s_k`` is the share of demand k left unserved; σ, ε, π, β are the shares by
which a site's chips, an edge's bandwidth, the power cap and the budget would
have to grow; ω is a column's KV beyond its replicas' share of the uplinks, in
replica shares U·u/D (:mod:`solvers.uplink_rows`), priced at half of what one more
replica's units cost as a share of the site (D·m units), so that a shortfall the
uplinks alone explain is reported as theirs, not as chips. Each slack's
coefficient equals its row's right-hand side (ω's: U·u/D), so the elastic rows are exactly as well scaled as the originals. The objective is
the penalties alone (plus a 1e-7 tie-break against needless flow): cost does
not matter when no plan exists. ``W_LIMIT = 1`` per 100 % of a limit and
``W_DEMAND = 1e6`` per whole class: raising limits is preferred — it answers
"what would it take?" — and demand is dropped only when no raise helps (a
class whose replicas fit in no site, a pair-latency limit no path meets) or
the raise would be more than 10⁶ times the limit. Slacks are made in the
order of their rows' names, whichever family asks.

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
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import pulp

from solvers.backends import DEFAULT_BACKEND, SolveOptions, run
from solvers.extract import model_stats, to_solution
from solvers.family import Family
from solvers.model import build_model
from solvers.problem import Problem
from solvers.solution import Solution
from solvers.tolerances import ROW_FEASIBILITY, TIE_BREAK
from solvers.variables import Variables

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

#: What a limit's row needs, from the elastic solution and its slack's value (None: not short).
Need = Callable[[Solution, float], "float | None"]


@dataclass(frozen=True)
class Shortfalls:
    """What the elastic model had to relax, in the problem's own units.

    ``unserved_rps``: demand -> requests/s no raise of a limit lets the fleet serve; ``limits``:
    family -> key of its row -> (needed, limit) for every limit that had to grow; ``shares``:
    family -> key -> requests/s left unserved by a family's own demand rows (a failure scenario's);
    ``units``: family -> the unit of its limits; ``words``: family -> what one of its rows says, a
    template of its key's items (``"losing switch {0} leaves class {1}"``). The built-in families read
    as ``sites`` (site ->
    (units needed, units it has)), ``edges`` ((source, target) -> bytes/s), ``power_w`` and
    ``budget_usd_per_hour``. ``solution`` is the elastic placement behind the numbers (its replicas
    may exceed the sites).
    """

    status: str
    message: str
    unserved_rps: dict[str, float] = field(default_factory=dict)
    limits: dict[str, dict[tuple, tuple[float, float]]] = field(default_factory=dict)
    shares: dict[str, dict[tuple, float]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    words: dict[str, str] = field(default_factory=dict)
    solution: Solution | None = None

    def said(self, family: str, key: tuple) -> str:
        """What the row ``key`` of ``family`` is, in the family's words (its name and key without)."""
        template = self.words.get(family)
        return template.format(*key) if template else " ".join([family, *map(str, key)])

    @property
    def sites(self) -> dict[str, tuple[float, float]]:
        return {key[0]: v for key, v in self.limits.get("site_units", {}).items()}

    @property
    def edges(self) -> dict[tuple[str, str], tuple[float, float]]:
        return {tuple(key): v for key, v in self.limits.get("edge_capacity", {}).items()}

    @property
    def power_w(self) -> tuple[float, float] | None:
        return self.limits.get("power_cap", {}).get(())

    @property
    def budget_usd_per_hour(self) -> tuple[float, float] | None:
        return self.limits.get("budget", {}).get(())

    @property
    def solved(self) -> bool:
        """Whether the elastic model was solved (to optimality or with an incumbent)."""
        return self.solution is not None

    @property
    def empty(self) -> bool:
        """No shortfall at all (the problem is feasible as it stands)."""
        return not (self.unserved_rps or any(self.limits.values()) or any(self.shares.values()))


@dataclass(frozen=True)
class _Slack:
    """One slack: the family and key of its row, what kind it is, and how to read it."""

    family: str
    key: tuple
    var: pulp.LpVariable
    has: float
    unit: str = ""
    need: Need | None = None
    words: str = ""


@dataclass
class ElasticModel:
    """The elastic model, its variables, and the slacks the families asked for, by row.

    A family's ``elastic`` reads its rows (:meth:`rows`) and asks for slacks on them
    (:meth:`relax_demand`, :meth:`relax_share`, :meth:`relax_limit`); the slacks are made, in the order
    of their rows' names, when every family has asked (:meth:`apply`).
    """

    model: pulp.LpProblem
    variables: Variables
    demand: dict[str, pulp.LpVariable] = field(default_factory=dict)
    slacks: list[_Slack] = field(default_factory=list)
    penalties: dict[pulp.LpVariable, float] = field(default_factory=dict)
    _by_label: dict[str, list[tuple[str, tuple, pulp.LpConstraint]]] = field(default_factory=dict)
    _asked: dict[str, Callable[[], None]] = field(default_factory=dict)

    def rows(self, label: str) -> list[tuple[str, tuple, pulp.LpConstraint]]:
        """(name, key, row) of every row whose family label is ``label`` (``Variables.labels``)."""
        if not self._by_label:
            for row in self.model.constraints():
                family, key = self.variables.labels.get(row.name, ("", ()))
                self._by_label.setdefault(family, []).append((row.name, key, row))
        return self._by_label.get(label, [])

    def _slack(self, name: str, tag: str, ub: float | None) -> pulp.LpVariable:
        token = name.split("__", 1)[1] if "__" in name else ""
        return self.model.add_variable(f"elastic_{tag}" + (f"__{token}" if token else ""), 0, ub, pulp.LpContinuous)

    def relax_demand(self, name: str, key: tuple, row: pulp.LpConstraint) -> None:
        """A demand's split row Σ x + s = 1 (or = Σ a·π): share s ∈ [0, 1] of it left unserved."""
        def make() -> None:
            s = self._slack(name, "demand", 1.0)
            row.expr.addterm(s, 1.0)
            row.modified = True
            self.demand[key[0]] = s
            self.penalties[s] = W_DEMAND
        self._asked[name] = make

    def relax_share(self, family: str, name: str, key: tuple, row: pulp.LpConstraint, rate: float,
                    words: str = "") -> None:
        """A family's own split row (a failure scenario's): share s ∈ [0, 1] of ``rate`` req/s unserved
        (``words``: what the row is, a template of its key's items)."""
        def make() -> None:
            s = self._slack(name, family, 1.0)
            row.expr.addterm(s, 1.0)
            row.modified = True
            self.slacks.append(_Slack(family, key, s, rate, words=words))
            self.penalties[s] = W_DEMAND
        self._asked[name] = make

    def relax_limit(self, family: str, tag: str, name: str, key: tuple, row: pulp.LpConstraint, unit: str,
                    need: Need, words: str = "") -> None:
        """A limit Σ a·x ≤ rhs made Σ a·x ≤ rhs·(1 + σ), σ ≥ 0 (rows of right-hand side 0 stay hard);
        ``words``: what the row is, a template of its key's items."""
        rhs = -row.constant  # PuLP keeps Σ a·x (sense) rhs as Σ a·x + constant (sense) 0
        if rhs <= 0:
            return

        def make() -> None:
            s = self._slack(name, tag, None)
            row.expr.addterm(s, -rhs)
            row.modified = True
            self.slacks.append(_Slack(family, key, s, rhs * self.variables.row_scale.get(name, 1.0), unit, need,
                                      words))
            self.penalties[s] = W_LIMIT
        self._asked[name] = make

    def relax_excess(self, family: str, tag: str, name: str, key: tuple, row: pulp.LpConstraint, scale: float,
                     has: float, unit: str, need: Need, weight: float, words: str = "") -> None:
        """A limit written Σ a·x ≤ 0 made Σ a·x ≤ ``scale``·ω, ω ≥ 0 at W_LIMIT·``weight`` per unit (``has``: the
        limit reported beside what the row needs; ``scale`` ≤ 0: the row stays hard)."""
        if scale <= 0:
            return

        def make() -> None:
            s = self._slack(name, tag, None)
            row.expr.addterm(s, -scale / self.variables.row_scale.get(name, 1.0))
            row.modified = True
            self.slacks.append(_Slack(family, key, s, has, unit, need, words))
            self.penalties[s] = W_LIMIT * weight
        self._asked[name] = make

    def release(self, name: str, tag: str, row: pulp.LpConstraint) -> None:
        """A ``≤`` row the elastic model does without: a slack ≥ 0 at no penalty makes it hold for any values
        (for a row that restates limits the other families relax)."""
        def make() -> None:
            s = self._slack(name, tag, None)
            row.expr.addterm(s, -1.0)
            row.modified = True
            self.penalties[s] = 0.0
        self._asked[name] = make

    def apply(self) -> None:
        """Make the slacks asked for, in the order of their rows' names."""
        for name in sorted(self._asked):
            self._asked[name]()
        self._asked.clear()


def build_elastic_model(problem: Problem, families: tuple[Family, ...] | None = None) -> ElasticModel:
    """Build the MILP with :func:`solvers.model.build_model`, then let each family make its rows elastic.

    Raises
    ------
    ValueError
        As :func:`solvers.model.build_model` (unpackable part sizes, dangling names), or when a demand of
        rate > 0 has no route split row made elastic.
    """
    m, v = build_model(problem, families=families)
    em = ElasticModel(model=m, variables=v)
    for f in v.families:
        f.elastic(em)
    em.apply()
    # Demands of rate > 0 whose every route was dropped still have a route_split row (0 = 1
    # without slack); demands of rate 0 have none and need no slack.
    missing = sorted(set(v.index.rate) - set(em.demand))
    if missing:  # pragma: no cover - every active demand has a route_split row
        raise ValueError(f"elastic model: no route_split row for demands {missing}")
    objective = dict(em.penalties)
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
    families: tuple[Family, ...] | None = None,
) -> Shortfalls:
    """Solve the elastic model and return what had to give, per demand and per family's limit.

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
    families : tuple of Family, optional
        The families of the model that was infeasible (default: :data:`solvers.model.BASE_FAMILIES`).
    """
    start = time.perf_counter()
    em = build_elastic_model(problem, families)
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
    limits: dict[str, dict[tuple, tuple[float, float]]] = defaultdict(dict)
    shares: dict[str, dict[tuple, float]] = defaultdict(dict)
    units: dict[str, str] = {}
    words: dict[str, str] = {}
    for slack in sorted(em.slacks, key=lambda s: (s.family, s.key)):
        value = _value(slack.var)
        if value <= ROW_FEASIBILITY:
            continue
        if slack.words:
            words[slack.family] = slack.words
        if slack.need is None:
            shares[slack.family][slack.key] = slack.has * min(1.0, value)
            continue
        need = slack.need(sol, value)
        if need is not None:
            limits[slack.family][slack.key] = (need, slack.has)
            units[slack.family] = slack.unit
    return Shortfalls(status=outcome.status, message=outcome.message, unserved_rps=unserved, limits=dict(limits),
                      shares=dict(shares), units=units, words=words, solution=sol)
