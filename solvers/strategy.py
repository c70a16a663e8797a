"""One solve of a placement problem: the families of its model, and the strategy that solves it.

::

    solve(problem, families, strategy) -> Solution

``families`` are the model's constraint families and objective terms (:mod:`solvers.family`; default
:data:`solvers.model.BASE_FAMILIES`, a scenario adds its own with :func:`solvers.model.families_of`).
``strategy`` says how the model is solved:

=============  =====================================================================================
``auto``       in two levels when the problem is large (:func:`solvers.twolevel.two_levels`), else
               the model at once — what every command uses
``direct``     the model at once (:func:`solvers.milp.solve_model`)
``two-level``  in two levels even when small (:func:`solvers.twolevel.solve`): the collapsed fleet's
               bound, plans from the columns it uses, the full model only if they are not proven
``by-parts``   the Lagrangian bound of the problem's parts and its completion
               (:func:`solvers.lagrange.solve_by_parts`) where the problem splits, else ``direct``
:class:`Periods`  one model over periods (:func:`solvers.periods.solve_periods`): each period's problem
               built from the same families, linked by reserved capacity and reconfiguration; the
               result is a :class:`~solvers.periods.PeriodSolution`
=============  =====================================================================================

Examples
--------
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> p = Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...             sites=[Site(name=f"s{i}", node=f"v{i}", resource="gpu", units_per_domain=1, domains=2,
...                         usd_per_hour_per_unit=1.5, power_w_per_unit=1.0) for i in range(2)])
>>> [solve(p, strategy=s, backend="highs").objective for s in ("auto", "direct", "two-level", "by-parts")]
[3.0, 3.0, 3.0, 3.0]
>>> solve(None, strategy=Periods([p, p], [1.0, 3.0], reserved_usd_per_hour_per_unit={"s0": 1.0, "s1": 1.0}),
...       backend="highs").objective
8.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from solvers import twolevel
from solvers.backends import DEFAULT_BACKEND
from solvers.family import Family
from solvers.index import PairSplit
from solvers.lagrange import solve_by_parts
from solvers.milp import solve_model
from solvers.model import families_of
from solvers.periods import PeriodSolution, solve_periods
from solvers.problem import Problem
from solvers.solution import Solution

__all__ = ["STRATEGIES", "Periods", "Strategy", "solve"]

#: The strategies named by a string (a :class:`Periods` record is the other kind).
STRATEGIES = ("auto", "direct", "two-level", "by-parts")


@dataclass(frozen=True)
class Periods:
    """The period-indexed strategy: one problem per period, its hours, and the links between them
    (:func:`solvers.periods.solve_periods` names every field)."""

    problems: Sequence[Problem]
    hours: Sequence[float]
    reserved_usd_per_hour_per_unit: Mapping[str, float]
    usd_per_change: Mapping[tuple[str, int, str], float] | None = None
    start: Sequence[Mapping[str, float]] | None = None
    fixed_reserved: Mapping[str, int] | None = None
    relax: bool = False
    restrict: float | None = None


Strategy = Literal["auto", "direct", "two-level", "by-parts"] | Periods


def solve(problem: Problem | None, families: tuple[Family, ...] | None = None, strategy: Strategy = "auto", *,
          backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None, gap: float | None = None,
          threads: int | None = None, msg: bool = False, pair_split: PairSplit = "auto",
          full: Callable[[], Problem | None] | None = None) -> Solution | PeriodSolution:
    """Solve ``problem`` with the model of ``families`` by ``strategy`` (module docstring).

    ``full`` (``auto`` and ``two-level``): the problem with every column when ``problem`` has its pairs
    pruned network-free (:func:`solvers.twolevel.solve`). With a :class:`Periods` strategy ``problem``
    is not read (the periods' problems are the strategy's). The other parameters are those of
    :func:`solvers.milp.solve`.

    Raises
    ------
    ValueError
        An unknown strategy, or families :func:`solvers.model.families_of` refuses.
    """
    families = families_of() if families is None else tuple(families)
    common = {"backend": backend, "gap": gap, "threads": threads, "msg": msg, "pair_split": pair_split}
    if isinstance(strategy, Periods):
        return solve_periods(strategy.problems, strategy.hours,
                             reserved_usd_per_hour_per_unit=strategy.reserved_usd_per_hour_per_unit,
                             usd_per_change=strategy.usd_per_change, start=strategy.start,
                             fixed_reserved=strategy.fixed_reserved, relax=strategy.relax, restrict=strategy.restrict,
                             time_limit_s=time_limit_s, families=families, **common)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)} or Periods")
    if strategy in ("auto", "two-level"):
        return twolevel.solve(problem, time_limit_s=time_limit_s, full=full, families=families,
                              levels=True if strategy == "two-level" else None, **common)
    if full is not None:
        problem = full() or problem
    if strategy == "by-parts":
        found = solve_by_parts(problem, time_limit_s=time_limit_s, families=families, **common)
        if found is not None:
            return found
    return solve_model(problem, time_limit_s=time_limit_s, families=families, **common)[0]
