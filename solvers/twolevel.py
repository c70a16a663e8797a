"""Large models in two levels: a bound from the fleet without its network, a plan from the columns it uses.

On a fleet of ~1,000 domains with attention–FFN pairs the full model has
hundreds of thousands of variables and its root LP alone can take minutes.
:func:`solve` first works on two small problems:

1. The **collapsed** problem (:func:`collapsed`): the sites of each resource
   merged into one site (same units per domain, all their domains, the lowest
   price and power per unit among them), all on one node, with no edges and no
   transfers. Every plan of the full problem is a plan of the collapsed one at
   no higher objective — sites merge, the network and its latency limits go,
   prices can only drop — so the solver's bound on the collapsed optimum is a
   lower bound LB on the full optimum. It has one site per resource instead of
   hundreds, so it solves in seconds. The model's families say what becomes of
   them there (``Family.collapse``): the base families read the collapsed
   problem; a scenario's rows that only restrict plans (N+1 survival) and its
   objective terms ≥ 0 (migration $) are left out, which keeps LB a bound.
2. The **restricted** problem (:func:`restricted`): the full problem — sites,
   network, latency limits — with only the columns the collapsed plan uses.
   Its plans are plans of the full problem (see :func:`start_values`), so its
   objective — every objective term of the model, migration $ included — is
   an upper bound UB. The columns a family's rows name (a re-plan's running
   columns, ``Family.columns``) are kept in every restricted problem. If that is not within the gap, the same
   again with every column serving those steps on those resources (other
   batches, sizes and pair latency limits, which the network may call for),
   when that is at most a tenth of the full problem.

If (UB − LB)/UB is within the requested gap, the restricted plan is the
answer, with LB as its bound, and the full model is never built: the common
case when the network and the site boundaries do not bind. Otherwise the full
model is built and solved starting from the restricted plan (HiGHS
``setSolution``, CBC's MIP start), with LB as a floor under its bound; the
start is returned if the solver finds nothing better in the time left. If the
restricted problems have no plan, the problem without two-part columns (no
attention–FFN or remote-draft pairs, what makes the full model large) gives
the start instead. The collapsed level gets :data:`COLLAPSED_SHARE` of the time limit, each
restricted problem :data:`SHARE` of what is then left, the full model the rest; every solve and model
build also ends by the deadline in force (:mod:`solvers.limits`).

The problem may come with its two-part columns pruned network-free (K0,
:mod:`placement.core.replicas.candidates`: pair traffic and latency limits left out of
dominance) and a callable ``full`` giving the problem with every column. Every
column of the full set is dominated network-free by a K0 column, so the
collapsed problem of K0 — whose columns are those dominance keeps once the
network is gone — has the optimum of the collapsed full problem, and LB is as
valid; every K0 column is a column of the instance, so a restricted plan on K0
is a plan of it and UB too. The collapsed problem and the first two attempts
(spread, restricted) run on K0; only if none is proven is ``full`` called, and
the siblings attempt and the full model run on the full set, as they would
have from the start.

A start is a value for every variable of the full model: the columns left out
have loads, replicas and pairs 0, which satisfies every row they appear in
(replica capacity, pair balance, their terms in site units, edge capacity,
power and budget); flows and pairs are rescaled to the full model's units;
and each family completes the variables it added (``Family.start``: a
single-resource demand that had one possible resource in the smaller problem
gets w = 1 on the resource serving it; a re-plan's changes d⁺, d⁻ follow from
the replicas).
:func:`violated_rows` re-checks every row of the full model at the start
anyway: a start that broke a row would never be used.
"""

from __future__ import annotations

import functools
import heapq
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

import pulp

from solvers import dominance
from solvers.backends import DEFAULT_BACKEND
from solvers.cost_floors import cost_floors, floors
from solvers.extract import empty_solution
from solvers.family import Family, collapse_families
from solvers.index import PairSplit
from solvers.lagrange import solve_by_parts
from solvers.limits import LimitExceeded
from solvers.milp import DEFAULT_GAP, Start, Variables, relax, solve_model, time_left
from solvers.model import families_of
from solvers.problem import Column, Problem, Site
from solvers.solution import Solution, clean
from solvers.support import lp_support
from solvers.tolerances import INTEGRALITY, REL_GAP_MARGIN, ROW_FEASIBILITY, ZERO

__all__ = ["COLLAPSED_SHARE", "MERGED_MIN_SIZE", "MIN_SIZE", "SHARE", "collapsed", "restricted", "solve", "spread",
           "start_values", "two_levels", "undominated", "violated_rows"]

log = logging.getLogger(__name__)

#: Problems with at least this many (column, site) combinations are solved in
#: two levels; smaller ones go straight to the full model, which solves in seconds.
MIN_SIZE = 5_000

#: ... and so are problems of at least this size whose collapse merges sites (two domain groups of one chip
#: type and domain size): their collapsed level has fewer sites and no network, and the one-level model of
#: the 9-group, 320-column all-modes bench fleet (size 2,880) was measured the slow one.
#: The shipped instances have one group per chip type and stay in one level.
MERGED_MIN_SIZE = 1_000

#: Share of the time left given to the collapsed level: it gives the bound and the columns, without which
#: the restricted levels have nothing to try (on the bench fleets it takes most of a two-level solve).
COLLAPSED_SHARE = 0.7

#: Share of the time left given to each restricted problem (up to three) and to the start of the full model.
SHARE = 0.5

#: Share of the time left that the cost floors of a support get (solve_from_lp_support).
FLOOR_SHARE = 0.2

#: The second restricted problem is tried only if it is at most this share of the full one.
NEAR_SHARE = 0.1

#: The one network node of the collapsed problem.
FLEET_NODE = "fleet"


def solve(
    problem: Problem,
    backend: str = DEFAULT_BACKEND,
    time_limit_s: float | None = None,
    gap: float | None = None,
    threads: int | None = None,
    msg: bool = False,
    pair_split: PairSplit = "auto",
    full: Callable[[], Problem | None] | None = None,
    families: tuple[Family, ...] | None = None,
    levels: bool | None = None,
) -> Solution:
    """Solve ``problem`` as :func:`solvers.milp.solve` does, in two levels when it is large.

    Same parameters and result as :func:`solvers.milp.solve` (``families``: the model's, default
    :data:`solvers.model.BASE_FAMILIES`; ``levels``: two levels or one, default :func:`two_levels`); see
    the module docstring for the method and why its bound and plans are valid. With
    ``full``, ``problem`` has its two-part columns pruned network-free and
    ``full()`` (called at most once, only when needed) is the problem with
    every column, or ``None`` if the time limit ran out making it (the result
    is then the best restricted plan, unproven, status ``time_limit``); the
    result is a solution of whichever was solved last.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name=f"s{i}", node=f"v{i}", resource="gpu", units_per_domain=1,
    ...                         domains=1, usd_per_hour_per_unit=1.5, power_w_per_unit=1.0)
    ...                    for i in range(3)])
    >>> sol = solve(p, backend="highs")
    >>> sol.status, sol.objective
    ('optimal', 3.0)
    """
    families = families_of() if families is None else tuple(families)
    options = {"backend": backend, "gap": gap, "threads": threads, "msg": msg, "pair_split": pair_split,
               "families": families}
    if not (two_levels(problem) if levels is None else levels):
        if full is not None:
            whole = full()
            return _unproven(None, None, 0.0, backend) if whole is None else solve(
                whole, time_limit_s=time_limit_s, levels=levels, **options)
        return solve_model(problem, time_limit_s=time_limit_s, **options)[0]
    full = None if full is None else functools.cache(full)
    began = time.perf_counter()
    merged = collapsed(problem)
    lower = solve_from_lp_support(merged, time_limit_s=_share(time_limit_s, began, COLLAPSED_SHARE),
                                  **{**options, "families": collapse_families(families, merged)})
    log.info("collapsed fleet: %s, bound %s, %d variables, %.3g s", lower.status, lower.best_bound,
             lower.variables, time.perf_counter() - began)
    plan = part = None
    best = None  # the objective of ``plan``, every term of the model
    for what, where, columns, start in _attempts(problem, lower, gap, full, families):
        problem = where
        found, found_vars = solve_model(restricted(problem, columns), start=start, **options,
                                        time_limit_s=_share(time_limit_s, began, SHARE))
        log.info("%s (%d columns): %s, objective %s, %d variables, %.3g s", what, len(columns), found.status,
                 found.objective, found.variables, time.perf_counter() - began)
        total = _objective(found, found_vars)
        if found.replicas and (plan is None or total < best):
            plan, part, best = found, found_vars, total
        if plan is not None and lower.best_bound is not None and _within(best, lower.best_bound, gap):
            return _proven(plan, lower, time.perf_counter() - began)
    if full is not None:
        whole = full()  # no attempt proven (or none made): the full model needs every column
        if whole is None:
            return _unproven(plan, lower, time.perf_counter() - began, backend)
        problem = whole
    note = _note(lower, plan)

    def known(m: pulp.LpProblem, v: Variables) -> Start:
        """Start values for the full model: the restricted plan, else the plan without two-part columns."""
        source, singles = part, restricted(problem)
        if source is None and singles is not None:
            first, first_vars = solve_model(singles, time_limit_s=_share(time_limit_s, began, SHARE), **options)
            source = first_vars if first.replicas else None
        values = start_values(m, v, source) if source is not None else None
        return Start(values=values, lower_bound=lower.best_bound, seconds=time.perf_counter() - began, note=note)

    whole = solve_model(problem, time_limit_s=time_limit_s, start=known, **options)[0]
    if whole.replicas or plan is None:
        return whole
    # The full model was not built (over the memory limit) or stopped with nothing: the restricted plan stands.
    return _unproven(plan, lower, time.perf_counter() - began, backend,
                     f"two levels: the full model gave no plan ({whole.message})",
                     "time_limit" if whole.status == "time_limit" else "feasible")


def _objective(sol: Solution, v: Variables | None) -> float | None:
    """The objective of a solution of model ``v`` with every term the model minimises: ``sol.objective``
    and the terms it leaves out (``Variables.objective_terms``: a re-plan's migration $)."""
    if sol.objective is None or v is None or not v.objective_terms:
        return sol.objective
    values = {var: var.varValue for var in v.n.values()}
    return sol.objective + sum(term(values) for term in v.objective_terms)


def two_levels(problem: Problem) -> bool:
    """Whether :func:`solve` takes ``problem`` in two levels (see :data:`MIN_SIZE`, :data:`MERGED_MIN_SIZE`).

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> def fleet(groups, columns):
    ...     return Problem(demands=[Demand(name="d", rate=1.0)], routes=[Route(name="r", demand="d", steps=["q"])],
    ...                    columns=[Column(name=f"c{i}", parts=[Part(resource="gpu", units=1)], capacity={"q": 1.0})
    ...                             for i in range(columns)],
    ...                    sites=[Site(name=f"s{i}", node=f"v{i}", resource="gpu", units_per_domain=1, domains=1,
    ...                                usd_per_hour_per_unit=1.0, power_w_per_unit=1.0) for i in range(groups)])
    >>> two_levels(fleet(2, 100)), two_levels(fleet(9, 320)), two_levels(fleet(2, 3000))
    (False, True, True)
    """
    if problem.policies:  # always the full model (solvers.kv_rows)
        return False
    size = _size(problem)
    merged = len({(s.resource, s.units_per_domain) for s in problem.sites}) < len(problem.sites)
    return size >= MIN_SIZE or (merged and size >= MERGED_MIN_SIZE)


def _share(limit_s: float | None, began: float, share: float) -> float | None:
    """``share`` of what is left of ``limit_s`` (counted from ``began``, ``time.perf_counter()``)."""
    return None if limit_s is None else share * time_left(limit_s, time.perf_counter() - began)


def spread(v: Variables, lower: Solution) -> dict[pulp.LpVariable, float]:
    """Replica counts per real domain group for the collapsed plan ``lower`` (values of ``v.n``).

    Each column's replicas of a resource go one at a time to the group of that
    resource with the most units still free (ties by name), largest replicas
    first: an even spread, which leaves the most room on every group's links.
    A replica that fits nowhere stays unplaced; the plan is then incomplete and
    the LP that completes it (loads, flows, pairs) is infeasible.
    """
    ix = v.index
    free = {s.name: float(s.units_per_domain * s.domains) for s in ix.problem.sites}
    sites_of: dict[tuple[str, int], list[str]] = defaultdict(list)
    for c, p, s in v.n:
        sites_of[c, p].append(s)
    counts = dict.fromkeys(v.n, 0)
    wanted = sorted(((ix.column[r.column].parts[r.part].units, r.column, r.part, r.replicas)
                     for r in lower.replicas if r.column in ix.column), key=lambda t: (-t[0], t[1], t[2]))
    for units, c, p, replicas in wanted:
        emptiest = [(-free[h], h) for h in sites_of[c, p]]  # a heap: the most free units first, then by name
        heapq.heapify(emptiest)
        for _ in range(replicas):
            if not emptiest or free[emptiest[0][1]] < units:
                break
            s = emptiest[0][1]
            free[s] -= units
            counts[c, p, s] += 1
            heapq.heapreplace(emptiest, (-free[s], s))
    return {var: float(counts[key]) for key, var in v.n.items()}


def _attempts(problem: Problem, lower: Solution, gap: float | None, full: Callable[[], Problem | None] | None = None,
              families: tuple[Family, ...] = ()) -> Iterator[tuple[str, Problem, set[str], Callable]]:
    """(what, problem, columns, start) of each plan tried on the real fleet, in order: the collapsed
    replicas spread over the real groups (an LP completes them); the columns of the collapsed optimum;
    then, if few enough, every column serving their steps on their resources (the other batches, sizes
    and latency limits the network may call for) — of ``full()`` when given, the problem with every
    column (``problem`` has its pairs pruned network-free: the siblings the network may call for are
    among those it dropped). Each keeps the columns the ``families`` name (``Family.columns``). The
    MILPs stop at the first plan the bound proves."""
    if not lower.replicas:
        return
    names = {c.name for c in problem.columns}
    used = {p.column for p in lower.replicas} | (set().union(*(f.columns(problem) for f in families)) & names)
    yield "collapsed plan spread over the groups", problem, used, lambda m, v: Start(fixed=spread(v, lower))
    # A plan within the gap of the collapsed bound is all that is needed: stop at the first.
    target = None if lower.best_bound is None else lower.best_bound * (1 - REL_GAP_MARGIN) / (1 - _gap(gap))
    yield "restricted", problem, used, lambda m, v: Start(target=target)
    if full is not None:
        problem = full()
        if problem is None:  # the time ran out generating it
            return
    near = lp_support(problem, used)
    if len(near) > len(used) and len(near) * len(problem.sites) <= _size(problem) * NEAR_SHARE:
        yield "restricted to their siblings", problem, near, lambda m, v: Start(target=target)


def solve_from_lp_support(problem: Problem, time_limit_s: float | None = None, **options) -> Solution:
    """Solve ``problem`` starting from the plan of the columns near its LP relaxation's.

    The relaxation names the steps and resources worth using; the problem
    restricted to the columns that serve those steps on those resources (all
    their replica sizes, which the integer plan needs to round well;
    :func:`solvers.support.lp_support`) is the *support*, small and fast to
    solve. The schedule's start restricts each period to the same support
    (:func:`solvers.periods.restrict_to_lp_support`) and keeps beside it the
    replica counts its LP nearly prices in (reduced cost): that model is
    already built and solved once, so the reduced costs cost nothing there,
    and on the 100-domain benchmark day the support alone gave a start 0.28 %
    dearer, and a schedule 0.29 % dearer at a 0.99 % gap instead of 0.82 %
    (the numbers are in its docstring);
    here the support is a new problem built from columns, which reduced costs
    of the whole model do not name. A problem that falls apart into
    demands tied only by its site rows (the collapsed fleet) is solved by
    :func:`solvers.lagrange.solve_by_parts`, whose support comes from the
    parts' own LPs (the relaxation without the site rows that tie them, which
    it builds anyway; no LP of the whole is solved): each part of the support
    gives a first plan, a Lagrangian bound per part prices the contested units, and
    the problem on the few columns that can still beat the best combined plan
    proves the optimum (~107 → ~10 CPU s on the collapsed 1,000-domain,
    8-chip-type benchmark fleet, which branch and bound alone proved only
    after thousands of nodes). Otherwise, or if that finds no
    plan, the support is solved as a MILP with the cost floors of its parts
    (:mod:`solvers.cost_floors`) and its plan is the start of the whole
    problem's MILP (see :func:`start_values`): with it HiGHS can stop as soon
    as its bound is within the gap instead of spending its time on cuts and
    heuristics before it has an incumbent.
    """
    began = time.perf_counter()
    try:
        by_parts = solve_by_parts(problem, time_limit_s=time_limit_s,
                                  near=lambda used: restricted(problem, lp_support(problem, used)), **options)
    except LimitExceeded:  # a part's model stopped building at a limit: what follows stops at once too
        by_parts = None
    if by_parts is not None:
        return by_parts
    left = None if time_limit_s is None else time_left(time_limit_s, time.perf_counter() - began)
    lp = relax(problem, backend=options["backend"], time_limit_s=left, threads=options.get("threads"),
               pair_split=options.get("pair_split", "auto"), families=options.get("families"))
    support = restricted(problem, lp_support(problem, {load.column for load in lp.loads})) if lp.status == "optimal" else None
    found = None
    if support is not None:
        left = None if time_limit_s is None else time_left(time_limit_s, time.perf_counter() - began)
        rows = floors(support, time_limit_s=None if left is None else left * FLOOR_SHARE, **options)
        left = None if time_limit_s is None else time_left(time_limit_s, time.perf_counter() - began)
        floored = (*(options.get("families") or families_of()), cost_floors(rows))
        sub, sub_vars = solve_model(support, time_limit_s=left, **{**options, "families": floored})
        found = sub_vars if sub.replicas else None

    def known(m: pulp.LpProblem, v: Variables) -> Start:
        values = start_values(m, v, found) if found is not None else None
        return Start(values=values, seconds=time.perf_counter() - began)

    return solve_model(problem, time_limit_s=time_limit_s, start=known, **options)[0]


def _size(problem: Problem) -> int:
    return len(problem.columns) * len(problem.sites)


def _gap(gap: float | None) -> float:
    return DEFAULT_GAP if gap is None else gap


def _within(upper: float, lower: float, gap: float | None) -> bool:
    return upper - lower <= _gap(gap) * max(abs(upper), ZERO) + ZERO


def _proven(plan: Solution, lower: Solution, seconds: float, message: str | None = None) -> Solution:
    """The restricted plan, proven within the gap by the collapsed bound (``message`` says how it was made)."""
    bound = clean(min(lower.best_bound, plan.objective))
    columns = len({p.column for p in plan.replicas})
    message = message or (f"two levels: plan from the {columns} columns of the collapsed optimum ({plan.message}); "
                          f"bound from the fleet collapsed to one site per resource ({lower.message}, "
                          f"{lower.variables:,} variables)")
    return plan.model_copy(update={
        "status": "optimal", "message": message, "best_bound": bound,
        "gap": clean((plan.objective - bound) / max(abs(plan.objective), ZERO)),
        "solve_seconds": seconds - plan.build_seconds,
    })


def _unproven(plan: Solution | None, lower: Solution | None, seconds: float, backend: str,
              message: str = "two levels: the time limit ran out before the full set of pair columns was generated",
              status: str = "time_limit") -> Solution:
    """The best restricted plan, unproven (``status``, ``message`` saying why), with the collapsed bound
    ``lower`` if there is one; without a plan, no placement (status ``time_limit``)."""
    bound = None if lower is None or lower.best_bound is None else clean(lower.best_bound)
    if lower is not None:
        message += _note(lower, plan)
    if plan is None:
        return empty_solution("time_limit", message, backend=backend, build_seconds=0.0, solve_seconds=seconds,
                              stats=dict.fromkeys(("variables", "integer_variables", "constraints", "nonzeros"), 0),
                              bound=bound)
    gap = None if bound is None else clean((plan.objective - bound) / max(abs(plan.objective), ZERO))
    return plan.model_copy(update={"status": status, "message": message, "best_bound": bound, "gap": gap,
                                   "solve_seconds": seconds - plan.build_seconds})


def _note(lower: Solution, plan: Solution | None) -> str:
    if lower.best_bound is None:
        return f"; the collapsed fleet gave no bound ({lower.message})"
    text = f"; bound ≥ {lower.best_bound:.6g} from the fleet collapsed to one site per resource"
    if plan is not None and plan.replicas:
        text += f"; started from the plan of its columns ({plan.objective:.6g})"
    return text


def collapsed(problem: Problem) -> Problem:
    """``problem`` with the sites of each resource merged on one node, no edges and no transfers.

    Sites merge per (resource, units per domain); the merged site has all
    their domains and the lowest price and power per unit among them. See the
    module docstring for why this is a relaxation.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> sites = [Site(name=n, node=n, resource="gpu", units_per_domain=8, domains=d,
    ...               usd_per_hour_per_unit=u, power_w_per_unit=700.0)
    ...          for n, d, u in [("a", 2, 3.0), ("b", 5, 2.5)]]
    >>> p = Problem(demands=[Demand(name="d", rate=1.0)], routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=8)], capacity={"q": 1.0})],
    ...             sites=sites)
    >>> [(s.name, s.domains, s.usd_per_hour_per_unit) for s in collapsed(p).sites]
    [('gpu@8', 7, 2.5)]
    """
    groups: dict[tuple[str, int], list[Site]] = defaultdict(list)
    for s in problem.sites:
        groups[s.resource, s.units_per_domain].append(s)
    sites = [
        Site(name=f"{resource}@{size}", node=FLEET_NODE, resource=resource, units_per_domain=size,
             domains=sum(s.domains for s in group),
             usd_per_hour_per_unit=min(s.usd_per_hour_per_unit for s in group),
             power_w_per_unit=min(s.power_w_per_unit for s in group))
        for (resource, size), group in sorted(groups.items())
    ]
    columns = undominated(problem.columns)
    return problem.model_copy(update={"sites": sites, "nodes": [], "edges": [], "transfers": [],
                                      "columns": columns})


def undominated(columns: list[Column]) -> list[Column]:
    """The columns no other column dominates once the network is gone.

    x is dominated by y (:mod:`solvers.dominance`, supply = capacity per
    step) when both have parts of the same resources and the same steps, m
    copies of y fit in x part by part (sizes divide; m the smallest ratio)
    and serve every step at least as fast. Without a network
    pair traffic and latency limits no longer matter, so m copies of y can
    replace x in any plan of the collapsed problem at no more units, cost or
    power: the collapsed optimum is unchanged. The relation is transitive (a
    copy of a copy fits), so dropping columns one at a time never drops the
    last column that dominates another. Columns are visited by rate per unit,
    then by name; of equal columns the first visited stays.

    Examples
    --------
    >>> from solvers.problem import Column, Part
    >>> def col(name, units, rate):
    ...     return Column(name=name, parts=[Part(resource="gpu", units=units)], capacity={"q": rate})
    >>> [c.name for c in undominated([col("a", 2, 3.0), col("b", 1, 2.0), col("c", 4, 9.0)])]
    ['b', 'c']
    """
    groups: dict[tuple, list[Column]] = defaultdict(list)
    for c in sorted(columns, key=lambda c: c.name):
        groups[tuple(p.resource for p in c.parts), tuple(sorted(c.capacity))].append(c)
    kept: list[Column] = []
    for (_, steps), group in sorted(groups.items()):
        if len(steps) == 1:  # of columns of one size only the fastest can survive (first by name on ties)
            fastest: dict[tuple[int, ...], Column] = {}
            for c in group:
                size = tuple(p.units for p in c.parts)
                if size not in fastest or c.capacity[steps[0]] > fastest[size].capacity[steps[0]]:
                    fastest[size] = c
            group = list(fastest.values())
        group = sorted(sorted(group, key=lambda c: c.name), key=lambda c: -_rate_per_unit(c))
        cols = dominance.Columns.of(units=[[p.units for p in c.parts] for c in group],
                          supply=[[c.capacity[q] for q in steps] for c in group])
        kept += [group[i] for i in dominance.undominated(cols)]
    return sorted(kept, key=lambda c: c.name)


def _rate_per_unit(c: Column) -> float:
    return sum(c.capacity.values()) / sum(p.units for p in c.parts)


def restricted(problem: Problem, columns: set[str] | None = None) -> Problem | None:
    """``problem`` with only the named ``columns`` — by default its single-part ones.

    ``None`` if that leaves no column or all of them.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route
    >>> one = Column(name="a", parts=[Part(resource="gpu", units=1)], capacity={"q": 1.0})
    >>> two = Column(name="b", parts=[Part(resource="gpu", units=1), Part(resource="lpu", units=1)],
    ...              capacity={"q": 2.0})
    >>> p = Problem(demands=[Demand(name="d", rate=1.0)], routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[one, two], sites=[])
    >>> [c.name for c in restricted(p).columns], [c.name for c in restricted(p, {"b"}).columns]
    (['a'], ['b'])
    >>> restricted(p.model_copy(update={"columns": [one]})) is None
    True
    """
    keep = [c for c in problem.columns if (len(c.parts) == 1 if columns is None else c.name in columns)]
    if not keep or len(keep) == len(problem.columns):
        return None if columns is None else problem
    return problem.model_copy(update={"columns": keep})


def start_values(m: pulp.LpProblem, v: Variables, part: Variables) -> dict[pulp.LpVariable, float] | None:
    """A value for every variable of the full model ``(m, v)`` from the solved model of a smaller problem.

    ``part`` holds a solution of the same problem with fewer columns (see the
    module docstring for why its values satisfy the full model); returns
    ``None`` — and logs why — if they break a row all the same.
    """
    values: dict[pulp.LpVariable, float] = {}
    for key, var in v.y.items():  # loads are in units of load_unit[(column, step)], which may differ
        theirs = part.y.get(key)
        values[var] = 0.0 if theirs is None else _value(theirs) * part.load_unit[key[:2]] / v.load_unit[key[:2]]
    for family in ("x", "n", "w"):
        mine, theirs = getattr(v, family), getattr(part, family)
        for key, var in mine.items():
            values[var] = _value(theirs[key]) if key in theirs else 0.0
    for family in ("z", "g"):  # pairs are in units of pair_unit[column], which may differ
        mine, theirs = getattr(v, family), getattr(part, family)
        for key, var in mine.items():
            values[var] = _value(theirs[key]) * part.pair_unit[key[0]] / v.pair_unit[key[0]] if key in theirs else 0.0
    for (t, e), var in v.f.items():
        values[var] = _value(part.f[t, e]) * part.flow_unit[t] / v.flow_unit[t]
    for var in v.n.values():
        values[var] = float(round(values[var]))
    for family in v.families:  # the variables each family added (w, the pool limit's b, a re-plan's d±, ...)
        family.start(v, part, values)
    # Solvers return values a hair outside the bounds (-1e-12); a start must be inside them.
    values = {var: _clamp(var, value) for var, value in values.items()}
    broken = violated_rows(m, values)
    if broken:
        log.warning("a start breaks %d rows of the full model (first: %s); not used", len(broken), broken[0])
        return None
    return values


def _value(var: pulp.LpVariable) -> float:
    return 0.0 if var.varValue is None else float(var.varValue)


def _clamp(var: pulp.LpVariable, value: float) -> float:
    if var.lowBound is not None:
        value = max(value, var.lowBound)
    if var.upBound is not None:
        value = min(value, var.upBound)
    return value


def violated_rows(m: pulp.LpProblem, values: dict[pulp.LpVariable, float]) -> list[str]:
    """Names of the rows of ``m`` that ``values`` break, bounds and integrality included.

    Rows are scaled (largest |coefficient| ≈ 1, see :func:`solvers.variables.add_row`),
    so one absolute tolerance fits all of them.

    Examples
    --------
    >>> m = pulp.LpProblem("t")
    >>> x = m.add_variable("x", 0, 5, pulp.LpInteger)
    >>> m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression({x: 1.0}), pulp.LpConstraintGE, "c", 2))
    >>> violated_rows(m, {x: 2.0}), violated_rows(m, {x: 1.0}), violated_rows(m, {x: 2.5})
    ([], ['c'], ['x'])
    """
    bad = []
    for row in m.constraints():
        activity = sum(coef * values.get(var, 0.0) for var, coef in row.items()) + row.constant
        if (row.sense == pulp.LpConstraintLE and activity > ROW_FEASIBILITY) or (
            row.sense == pulp.LpConstraintGE and activity < -ROW_FEASIBILITY) or (
                row.sense == pulp.LpConstraintEQ and abs(activity) > ROW_FEASIBILITY):
            bad.append(row.name)
    for var, value in values.items():
        low = -float("inf") if var.lowBound is None else var.lowBound
        high = float("inf") if var.upBound is None else var.upBound
        if not low - ROW_FEASIBILITY <= value <= high + ROW_FEASIBILITY or (
                var.cat == pulp.LpInteger and abs(value - round(value)) > INTEGRALITY):
            bad.append(var.name)
    return bad
