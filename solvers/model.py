"""The placement MILP built, one function per constraint family (notation: :mod:`solvers.problem`).

:func:`build_model` reads like the formulation (the families are in
:mod:`solvers.constraints` and :mod:`solvers.network_rows`, the objective in
:mod:`solvers.objective`, the variables in :mod:`solvers.variables`)::

    min   Σ w_s·u_p·n_{c,p,s}  (+ a tiny tie-break, see set_objective)
    s.t.  route split, step coverage, replica capacity, single resource, site units,
          pair balance, transfer conservation, edge capacity, power cap, budget,
          KV tiers, pool limit, uplink share (KV between the domains of one site)

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
    BUDGET,
    POWER_CAP,
    REPLICA_CAPACITY,
    ROUTE_SPLIT,
    SINGLE_RESOURCE,
    SITE_UNITS,
    STEP_COVERAGE,
)
from solvers.family import Family
from solvers.index import Index, PairSplit
from solvers.kv_rows import KV_TIERS
from solvers.limits import check_model_fits, check_time, start_build
from solvers.network_rows import EDGE_CAPACITY, PAIR_BALANCE, TRANSFER_CONSERVATION
from solvers.objective import PRIMARY
from solvers.packing import check_packable
from solvers.pool_limit import POOL_LIMIT
from solvers.problem import Problem
from solvers.uplink_rows import UPLINK_SHARE
from solvers.variables import Variables, define_variables, estimated_size, gc_paused

__all__ = ["BASE_FAMILIES", "build_model", "families_of"]

#: The families of every placement model, in the order their rows (then their objective terms) are
#: written. Each reads its data from the :class:`~solvers.problem.Problem` and writes nothing when the
#: problem has none (no power cap, no KV policies, …); a scenario adds its own after them
#: (:func:`families_of`).
BASE_FAMILIES: tuple[Family, ...] = (ROUTE_SPLIT, STEP_COVERAGE, REPLICA_CAPACITY, SINGLE_RESOURCE, SITE_UNITS,
                                     PAIR_BALANCE, TRANSFER_CONSERVATION, EDGE_CAPACITY, POWER_CAP, BUDGET, PRIMARY,
                                     KV_TIERS, POOL_LIMIT, UPLINK_SHARE)


def families_of(extra: tuple[Family, ...] | list[Family] | None = None) -> tuple[Family, ...]:
    """:data:`BASE_FAMILIES` followed by ``extra`` (a scenario's families), each name once.

    Raises
    ------
    ValueError
        Two families of one name, or a family that is not a :class:`~solvers.family.Family`.
    """
    out = (*BASE_FAMILIES, *(extra or ()))
    names = [f.name for f in out]
    bad = [f for f in out if not isinstance(f, Family)]
    if bad:
        raise ValueError(f"not a Family: {bad[0]!r}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"family {dup[0]!r} given twice")
    return out


def build_model(problem: Problem, pair_split: PairSplit = "auto", backend: str | None = None,
                families: tuple[Family, ...] | None = None) -> tuple[pulp.LpProblem, Variables]:
    """Build the placement MILP of ``problem``: the variables, every family's rows, then every family's
    objective terms.

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
    families : tuple of Family, optional
        The constraint families and objective terms, in order (default :data:`BASE_FAMILIES`; a
        scenario's: :func:`families_of`).

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
        v.families = BASE_FAMILIES if families is None else tuple(families)
        for family in v.families:
            family.rows(m, v)
        for family in v.families:
            family.objective(m, v)
    return m, v
