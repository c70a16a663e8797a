"""The objective of the placement MILP: the primary objective on the replicas, plus tie-breaks."""

from __future__ import annotations

import math

import pulp

from solvers.family import KEEP, Family, hard, no_columns, no_rows, no_start, separable
from solvers.problem import OBJECTIVES
from solvers.tolerances import TIE_BREAK
from solvers.variables import Variables

__all__ = ["OBJECTIVE_BAND", "PRIMARY", "model_objective", "primary_objective", "set_objective"]

#: Cheapest unit weights inside this band leave the objective as it is; outside it the objective
#: is divided by the power of two nearest the cheapest weight (see set_objective).
OBJECTIVE_BAND = (2.0**-4, 2.0**10)


def set_objective(m: pulp.LpProblem, v: Variables) -> None:
    """Minimise Σ w_s·u_p·n_{c,p,s} + ε·Σ u_p·n + ε·Σ_{t,e} f_{t,e} + ε·Σ_c b_c (w: the objective's
    :class:`~solvers.problem.Measure` per unit: $/h, W or 1).

    The tie-breaks prefer fewer units among equal-cost placements and forbid
    needless or circulating flow. With w_min the cheapest positive unit weight,
    ε = 1e-7·w_min per unit placed (none for a measure of units) and per
    unit of flow (F_t bytes/s, about the whole traffic of transfer t, see
    ``Variables.flow_unit``): a flow variable's tie-break is as visible to the
    solvers as a replica's, while a circulation-free transfer crosses only a
    few edges, so the tie-broken optimum stays within ~1e-7 (relative) of the
    primary optimum. With a pool limit (:mod:`solvers.pool_limit`) each column carrying load
    (b_c = 1) also costs ε: among plans of equal cost and units, the one with fewer pools wins,
    whatever the coefficients of columns it does not use (a price swept on an unused chip no
    longer flips the plan between equal-cost alternatives). (Solvers may still ignore a tie-break this small, so
    :func:`solvers.extract.to_solution` also cancels circulating flow.) The
    objective is not rescaled; reported objectives are always the primary
    one, recomputed from the solution.
    """
    ix = v.index
    units = ix.units
    weights = [w / units[k] for k, w in v.primary.items() if w > 0]
    w_min = min(weights) if weights else 1.0
    eps_u = TIE_BREAK * w_min if OBJECTIVES[ix.problem.objective].units_tie_break else 0.0
    primary = v.primary
    low, high = OBJECTIVE_BAND
    scale = 1.0 if low <= w_min <= high else 2.0 ** round(math.log2(w_min))
    v.objective_scale = scale
    coefs = {var: (primary[k] + eps_u * units[k]) / scale for k, var in v.n.items()}
    coefs.update(dict.fromkeys(v.f.values(), TIE_BREAK * w_min / scale))
    coefs.update(dict.fromkeys(v.u.values(), TIE_BREAK * w_min / scale))
    m.setObjective(pulp.LpAffineExpression(coefs))


def primary_objective(v: Variables, values: dict[pulp.LpVariable, float]) -> float:
    """Σ w·u·n of ``values`` (the objective without tie-breaks)."""
    return sum(v.primary[key] * round(values.get(var) or 0.0) for key, var in v.n.items())


def model_objective(v: Variables, values: dict[pulp.LpVariable, float]) -> float:
    """The model's objective of ``values`` without tie-breaks: the primary objective and the terms of
    ``Variables.objective_terms`` (a re-plan's migration $)."""
    return primary_objective(v, values) + sum(term(values) for term in v.objective_terms)


#: The primary objective: it *sets* the objective, so it comes before every other term.
PRIMARY = Family(name="primary_objective", check="check_totals", rows=no_rows, objective=set_objective,
                 collapse=KEEP, coupling=separable, elastic=hard, start=no_start, columns=no_columns)
