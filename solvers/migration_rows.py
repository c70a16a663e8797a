"""Migration cost rows: re-plan a running placement, paying for every replica that changes.

Given the replicas that run now, n⁰_{c,p,s} (those on failed domains already
dropped), and the one-off cost m_{c,p,s} of adding or removing one replica
(its weight reload, see :mod:`placement.core.migration`), a re-plan
minimises::

    Σ w_s·u_p·n_{c,p,s}  +  (1/H)·Σ m_{c,p,s}·|n_{c,p,s} − n⁰_{c,p,s}|

with H the hours over which one-off costs are spread (``amortise_h``).
The absolute value is linearised with two non-negative variables per key
that runs now::

    n_{c,p,s} − d⁺_{c,p,s} + d⁻_{c,p,s} = n⁰_{c,p,s},   d⁺, d⁻ ≥ 0

and, minimising, at most one of d⁺, d⁻ is positive: d⁺ = replicas added,
d⁻ = replicas removed. Keys with n⁰ = 0 need no row: |n − 0| = n, so m/H is
added to n's own objective coefficient. Replicas now running in a key the
model no longer has (their column is gone) are a constant: they are removed
whatever the plan, so they do not change the optimum.

Examples
--------
>>> from solvers.milp import build_model
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> p = Problem(demands=[Demand(name="d", rate=3.0)],
...             routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
>>> m, v = build_model(p)
>>> add_migration(m, v, {("c", 0, "s"): 3}, {("c", 0, "s"): 2.0}, amortise_h=4.0)
{('c', 0, 's'): (dplus__c__0__s, dminus__c__0__s)}
>>> [c.name for c in m.constraints() if c.name.startswith("migration")]
['migration__c__0__s']
"""

from __future__ import annotations

from collections.abc import Mapping

import pulp

from solvers.variables import Variables, add_row, add_var

__all__ = ["Key", "add_migration"]

Key = tuple[str, int, str]


def add_migration(m: pulp.LpProblem, v: Variables, current: Mapping[Key, int], usd_per_change: Mapping[Key, float],
                  amortise_h: float) -> dict[Key, tuple[pulp.LpVariable, pulp.LpVariable]]:
    """Add the migration rows and objective terms of the module docstring to a built model.

    Parameters
    ----------
    m, v
        The model and variables of :func:`solvers.milp.build_model` (objective already set).
    current : mapping
        (column, part, site) -> replicas running now, n⁰.
    usd_per_change : mapping
        (column, part, site) -> $ to add or remove one replica there, m (keys absent cost 0).
    amortise_h : float
        Hours H over which the one-off $ are spread (> 0).

    Returns
    -------
    dict
        (column, part, site) -> (d⁺, d⁻) for the keys that run now and the model has.
    """
    if amortise_h <= 0:
        raise ValueError(f"amortise_h must be > 0, got {amortise_h}")
    tok = v.index.names.tokens
    objective = m.objective
    deltas: dict[Key, tuple[pulp.LpVariable, pulp.LpVariable]] = {}
    for key, var in sorted(v.n.items()):
        weight = usd_per_change.get(key, 0.0) / amortise_h / v.objective_scale
        now = int(current.get(key, 0))
        if now <= 0:
            if weight:
                objective[var] = objective.get(var, 0.0) + weight
            continue
        c, p, s = key
        tokens = [tok["column", c], str(p), tok["site", s]]
        up = add_var(m, v, "dplus", key, tokens)
        down = add_var(m, v, "dminus", key, tokens)
        add_row(m, v, "migration", key, tokens, [(var, 1.0), (up, -1.0), (down, 1.0)],
                pulp.LpConstraintEQ, float(now), scaled=1.0)
        if weight:
            objective[up] = weight
            objective[down] = weight
        deltas[key] = (up, down)
    return deltas
