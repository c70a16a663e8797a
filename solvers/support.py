"""The support of an LP relaxation: the columns it uses and their siblings, the one restriction the heuristics share.

An LP relaxation of the placement MILP names the steps worth serving and the resources worth
serving them on; its integer plan usually needs other replica sizes, batches and pair latency
limits of the same steps on the same resources to round well. :func:`lp_support` is those
columns: what the two-level solve's restricted problems keep (:mod:`solvers.twolevel`) and what
the schedule's start re-solves keep of each period (:func:`solvers.periods.restrict_to_lp_support`).

Examples
--------
>>> from solvers.problem import Column, Demand, Part, Problem, Route
>>> def col(name, resource, step):
...     return Column(name=name, parts=[Part(resource=resource, units=1)], capacity={step: 1.0})
>>> p = Problem(demands=[Demand(name="d", rate=1.0)], routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[col("a", "gpu", "q"), col("b", "gpu", "q"), col("c", "lpu", "q"), col("e", "gpu", "x")],
...             sites=[])
>>> sorted(lp_support(p, {"a"}))   # b serves q on gpu too; c is on another resource, e serves another step
['a', 'b']
"""

from __future__ import annotations

from solvers.problem import Problem

__all__ = ["lp_support"]


def lp_support(problem: Problem, used: set[str]) -> set[str]:
    """Columns of ``problem`` serving a step of a ``used`` column with parts only on resources ``used``
    columns occupy (the ``used`` columns among them)."""
    steps = {q for c in problem.columns if c.name in used for q in c.capacity}
    resources = {p.resource for c in problem.columns if c.name in used for p in c.parts}
    return {c.name for c in problem.columns
            if steps.intersection(c.capacity) and {p.resource for p in c.parts} <= resources}
