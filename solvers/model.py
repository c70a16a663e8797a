"""The placement MILP built, one function per constraint family (notation: :mod:`solvers.problem`).

:func:`build_model` reads like the formulation (the families are in
:mod:`solvers.constraints` and :mod:`solvers.network_rows`, the objective in
:mod:`solvers.objective`, the variables in :mod:`solvers.variables`)::

    min   Σ w_s·u_p·n_{c,p,s}  (+ a tiny tie-break, see set_objective)
    s.t.  route split, step coverage, replica capacity, single resource, site units,
          pair balance, transfer conservation, edge capacity, power cap, budget

Scaling. The inputs span bytes/s (~1e13) to replica counts (~1); the model
the solvers see is scaled deterministically, by powers of two and ten only:

* columns: ``x_r`` is the *fraction* of demand k sent down route r (0..1); the
  loads are *replica-equivalents* y_{c,q,s} = a_{c,q,s}/cap_{c,q}, so the
  replica capacity row has unit coefficients; the flows of transfer t are in
  units of F_t bytes/s, the power of ten nearest b_t·λ_k (the whole traffic of
  t), so a flow is ~1 unit instead of ~1e9 bytes/s; the pairs of column c are
  in units of μ_c pairs, a power of ten that is 1 unless c's pair traffic is
  far from the flows it shares edges with (:func:`~solvers.variables.pair_units`).
  n and w are integers and unscaled. Powers of ten keep short decimal values
  short in the 8-digit solution text CBC writes;
* rows: every family writes its rows in natural units (requests/s, units,
  replicas, bytes/s, W, $/h) and :func:`~solvers.variables.add_row` divides
  each row, right-hand side included, by the power of two nearest its largest
  |coefficient| (kept in ``Variables.row_scale``), so that coefficient lies in
  [0.71, 1.41). Dividing by a power of two is exact in binary: every ratio of
  coefficients in a row is exactly what it was in natural units, and short
  decimal inputs stay short in the 13-digit LP/MPS text CBC reads. (Powers of
  ten are not exact in binary: 0.3/0.1 ≠ 3, and CBC's preprocessing then
  returned 2 A100 as "optimal" for the single-resource Mélange toy instead of
  1 A100 + 3 A10G.)
* negligible terms: pair traffic that could never add up to 1e-9 of an edge's
  capacity is left out of that edge's row (see add_edge_capacity).

The matrix of every shipped instance then spans at most ~2e5 (max/min |a|;
rubin-lpx-deepseek, whose candidate replicas for one decode step serve
0.127..1.8e4 requests/s each; ≤ 4e3 for the others, see
tests/test_numerics.py) instead of up to ~1e12. The objective is not
rescaled: it is the primary objective on n plus tie-breaks, and the reported
objective is recomputed from the integer replicas.

Everything is unscaled when the :class:`~solvers.solution.Solution` is built.
Variable and constraint names are deterministic, ``family__token__token``,
with tokens from :class:`solvers.index.Names`; ``Variables.labels`` maps each
LP name back to its family and original key.
"""

from __future__ import annotations

import pulp

from solvers.constraints import (
    add_budget,
    add_power_cap,
    add_replica_capacity,
    add_route_split,
    add_single_resource,
    add_site_units,
    add_step_coverage,
)
from solvers.index import Index, PairSplit
from solvers.kv_rows import add_policy_objective, add_policy_rows, add_policy_variables
from solvers.limits import check_model_fits, check_time, start_build
from solvers.network_rows import add_edge_capacity, add_pair_balance, add_transfer_conservation
from solvers.objective import set_objective
from solvers.packing import check_packable
from solvers.pool_limit import add_pool_limit
from solvers.problem import Problem
from solvers.variables import Variables, define_variables, estimated_size, gc_paused

__all__ = ["build_model"]


def build_model(problem: Problem, pair_split: PairSplit = "auto",
                backend: str | None = None) -> tuple[pulp.LpProblem, Variables]:
    """Build the placement MILP of ``problem``.

    Parameters
    ----------
    problem : Problem
        The solver-neutral problem.
    pair_split : {"auto", "hubs", "pairs"}
        How pairs of two-part columns are modelled on tree fleets (see
        :mod:`solvers.index`); the optimum is the same.
    backend : str, optional
        The backend that will solve it: the model is then built only if its estimated memory
        (:func:`solvers.limits.check_model_fits`) fits in the memory limit in force.

    Returns
    -------
    (pulp.LpProblem, Variables)
        The model and its variables (with scales and LP-name labels).

    Raises
    ------
    ValueError
        If part sizes are not packable (:func:`check_packable`) or names dangle.
    solvers.limits.OverMemory
        With ``backend``, if the model would not fit in the memory limit (nothing built).
    solvers.limits.OutOfTime
        If the deadline in force (:func:`solvers.limits.bounded`) passes while building.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)],
    ...                             capacity={"q": 2.0})],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    >>> m, v = build_model(p)
    >>> sorted(c.name for c in m.constraints())
    ['replica_capacity__c__s', 'route_split__d', 'site_units__s', 'step_coverage__q']
    """
    check_time("before building the model")
    check_packable(problem)
    start_build()
    with gc_paused():
        ix = Index.from_problem(problem, pair_split)
        if backend is not None:
            check_model_fits(*estimated_size(ix), backend)
        m = pulp.LpProblem(name="placement", sense=pulp.LpMinimize)
        v = define_variables(m, ix)
        add_policy_variables(m, v)
        add_route_split(m, v)
        add_step_coverage(m, v)
        add_replica_capacity(m, v)
        add_single_resource(m, v)
        add_site_units(m, v)
        add_pair_balance(m, v)
        add_transfer_conservation(m, v)
        add_edge_capacity(m, v)
        add_power_cap(m, v)
        add_budget(m, v)
        add_policy_rows(m, v)
        add_pool_limit(m, v)
        set_objective(m, v)
        add_policy_objective(m, v)
    return m, v
