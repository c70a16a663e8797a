"""Decision variables of the placement MILP and the helpers that add them and its rows.

Split from :mod:`solvers.milp` (which re-exports :class:`Variables` and
:func:`define_variables`) to keep modules short; the scaling choices are
described in the :mod:`solvers.milp` docstring: :func:`add_row` scales every
row, :func:`define_variables` picks the units of the flows and pairs.
"""

from __future__ import annotations

import contextlib
import gc
import math
import threading
from dataclasses import dataclass, field
from operator import itemgetter

import pulp

from solvers.index import Index
from solvers.limits import tick
from solvers.problem import unit_weight

__all__ = [
    "Key3",
    "Variables",
    "add_row",
    "add_var",
    "define_variables",
    "estimated_size",
    "flow_units",
    "gc_paused",
    "load_units",
    "pair_units",
    "scaled_row",
]

#: A load's unit switches from the replica's capacity to the demand's rate when one replica could
#: serve more than this many times the whole demand of its step (see :func:`load_units`).
LOAD_UNIT_RATIO = 16.0

Key3 = tuple[str, str, str]


@dataclass
class Variables:
    """The decision variables of :func:`build_model` and the scales to read them.

    ``x[route]`` fraction of λ_k, ``y[(column, step, site)]`` load in units of
    ``load_unit[(column, step)]`` requests/s (the replica's capacity: replica-equivalents,
    or about λ_k when a replica could serve far more than the whole demand, see :func:`load_units`),
    ``n[(column, part, site)]`` integer replicas, ``z[(column, site0, site1)]``
    replica pairs in units of ``pair_unit[column]`` pairs (``g[(column, part, site,
    hub)]`` half-pairs at a hub instead, on tree fleets; see :mod:`solvers.index`),
    ``f[(transfer, (u, v))]``
    flow in units of ``flow_unit[transfer]`` bytes/s, ``w[(demand, resource)]``
    binary choice of a single-resource demand. ``primary`` is the objective
    without tie-breaks. ``row_scale[name]`` is the power of two row ``name`` was
    divided by (see :func:`add_row`; absent means 1): row activity × row_scale
    is in the row's natural units (requests/s, units, replicas, bytes/s, W, $/h).
    The solver's objective times ``objective_scale`` is in the objective's units.
    """

    index: Index
    flow_unit: dict[str, float] = field(default_factory=dict)
    pair_unit: dict[str, float] = field(default_factory=dict)
    load_unit: dict[tuple[str, str], float] = field(default_factory=dict)
    x: dict[str, pulp.LpVariable] = field(default_factory=dict)
    y: dict[Key3, pulp.LpVariable] = field(default_factory=dict)
    n: dict[tuple[str, int, str], pulp.LpVariable] = field(default_factory=dict)
    z: dict[Key3, pulp.LpVariable] = field(default_factory=dict)
    g: dict[tuple[str, int, str, str], pulp.LpVariable] = field(default_factory=dict)
    f: dict[tuple[str, tuple[str, str]], pulp.LpVariable] = field(default_factory=dict)
    w: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    #: π[policy]: share of its group served under the policy (:mod:`solvers.kv_rows`).
    pi: dict[str, pulp.LpVariable] = field(default_factory=dict)
    #: Binary "column c carries load of group G" of the pool limit (only with ``Problem.pool_limit``; see
    #: solvers.pool_limit), keyed (column, group).
    u: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    primary: dict[tuple[str, int, str], float] = field(default_factory=dict)
    labels: dict[str, tuple[str, tuple]] = field(default_factory=dict)
    row_scale: dict[str, float] = field(default_factory=dict)
    #: The power of two the objective was divided by (see :func:`solvers.objective.set_objective`).
    objective_scale: float = 1.0
    #: The families the model was built from (:func:`solvers.model.build_model`), in order.
    families: tuple = ()
    #: What the model minimises beyond a solution's ``objective`` (the primary objective and the KV tiers'
    #: holding cost, :func:`solvers.extract.to_solution`), from the values of its variables: one function
    #: per such term (a re-plan's migration $), so that starts and plans are compared by the model's own
    #: objective (:mod:`solvers.milp`, :mod:`solvers.twolevel`).
    objective_terms: list = field(default_factory=list)
    #: Variables a scenario family adds, by family name (its ``start`` reads them in the other model).
    extra: dict = field(default_factory=dict)


def add_var(
    m: pulp.LpProblem,
    v: Variables,
    family: str,
    key: tuple,
    tokens: list[str],
    ub=None,
    integer=False,
):
    tick()
    name = "__".join([family, *tokens])
    var = m.add_variable(name, 0, ub, pulp.LpInteger if integer else pulp.LpContinuous)
    v.labels[name] = (family, key)
    return var


_var, _coef = itemgetter(0), itemgetter(1)


def add_row(
    m: pulp.LpProblem,
    v: Variables,
    family: str,
    key: tuple,
    tokens: list[str],
    terms,
    sense: int,
    rhs: float,
    scaled: float | None = None,
):
    """Add Σ coef·var (sense) rhs, divided by the power of two nearest its largest |coef|.

    ``terms`` and ``rhs`` are in the row's natural units; the row is divided by
    2^j, j = round(log2(max |coef|)), so its largest |coefficient| lands in
    [2^-0.5, 2^0.5) = [0.71, 1.41). Dividing by a power of two is exact in
    binary floating point: every ratio of coefficients in the row stays
    exactly what it was (dividing by 10 does not: 0.3/0.1 ≠ 3, which made
    CBC's preprocessing return 2 A100 instead of the 1 A100 + 3 A10G optimum
    of the single-resource Mélange toy), and short decimal inputs stay short
    in the 13-digit LP/MPS text CBC reads (1/3 written as 0.333333333333 once
    made it round 3 replicas up to 4). A caller whose row is already scaled
    (unit coefficients, or a structure it knows) passes the power of two it
    divided by as ``scaled`` (1.0 if none) and the row is added as it is. The
    divisor is kept in ``v.row_scale`` when it is not 1. By construction no
    row repeats a variable in ``terms``.
    """
    tick()
    name = "__".join([family, *tokens])
    if scaled is None:
        terms, rhs, scaled = scaled_row(terms, rhs)
    if scaled != 1.0:
        v.row_scale[name] = scaled
    m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), sense, name, rhs))
    v.labels[name] = (family, key)


def scaled_row(terms, rhs: float) -> tuple:
    """``(terms, rhs, 2^j)``: the row divided by the power of two 2^j nearest its largest |coefficient|
    (see :func:`add_row`; 2^j = 1 leaves it as it is).

    Examples
    --------
    >>> t, rhs, div = scaled_row([("x", 3.0), ("y", -0.5)], 6.0)
    >>> list(t), rhs, div
    ([('x', 0.75), ('y', -0.125)], 1.5, 4.0)
    """
    top = max(map(abs, map(_coef, terms)), default=0.0)  # (map/zip: no Python-level loop over the terms)
    j = round(math.log2(top)) if top > 0 else 0
    if not j:
        return terms, rhs, 1.0
    mul = 2.0**-j
    return zip(map(_var, terms), map(mul.__mul__, map(_coef, terms))), rhs * mul, 2.0**j


def flow_units(ix: Index) -> dict[str, float]:
    """Unit F_t of the flow variables of each transfer t: the power of ten nearest b_t·λ_k (bytes/s).

    b_t·λ_k is the traffic of t when all of demand k takes its route, so a
    flow is at most ~3 units unless it circulates. A power of ten keeps short
    decimal flows short in the 8-digit solution text CBC writes (a power of
    two made a 1e9 B/s flow read back as 999999995).
    """
    return {
        t.name: 10.0
        ** round(math.log10(t.bytes_per_request * ix.rate[ix.route_of_step[t.source].demand]))
        for t in ix.transfers
    }


def load_units(ix: Index) -> dict[tuple[str, str], float]:
    """Unit κ_{c,q} of the load variables y of column c at step q (requests/s).

    κ = cap_{c,q}, the replica's capacity (y in replica-equivalents), unless one
    replica could serve more than :data:`LOAD_UNIT_RATIO` times the rate λ_k of
    the step's demand; then κ is the power of two nearest λ_k. In
    replica-equivalents such a load is ≤ λ_k/cap ≪ 1 and its coverage row
    holds λ_k beside cap: with one class on 16 H100 at 1e-5 req/s the row's λ
    coefficient was 1e-6 of its largest, inside the solvers' feasibility
    tolerance, and both solvers served the step with no load at all. With κ ≈ λ
    the coverage row is balanced, and :func:`~solvers.constraints.add_replica_capacity`
    adds a linking row a ≤ λ_k·n (exact, as no step carries more than λ_k) so
    that a load on zero replicas is not inside the tolerance either. A power of
    two keeps every ratio of the rows exact in binary.
    """
    units: dict[tuple[str, str], float] = {}
    for c, q, _s in ix.load_keys:
        if (c, q) in units:
            continue
        cap = ix.column[c].capacity[q]
        lam = ix.rate.get(ix.route_of_step[q].demand, 0.0)
        units[c, q] = 2.0 ** round(math.log2(lam)) if 0 < lam * LOAD_UNIT_RATIO < cap else cap
    return units


def pair_units(ix: Index, flow_unit: dict[str, float]) -> dict[str, float]:
    """Unit μ_c of the pair variables of each two-part column c (pairs), a power of ten.

    A pair z of c appears with coefficient μ_c beside −1 (the replicas n) in
    the pair balance rows, and with up to 2·B_c·μ_c (B_c bytes/s each way per
    pair) beside the flows, F_min..F_max (``flow_unit``), in the edge rows.
    A column whose 2·B_c lies outside [F_min, F_max] gets μ_c, the power of
    ten nearest √(F_max/(2·B_c)) below the band or √(F_min/(2·B_c)) above
    it, which splits the spread between the two kinds of row (each then spans
    about √ of what 2·B_c alone would add to the edge row); the others have
    μ_c = 1. Without transfers the band is the single value
    √(min 2·B_c · max 2·B_c). A power of ten keeps whole pair counts short in
    CBC's 8-digit solution text.
    """
    paired = [c for c in ix.columns if len(c.parts) == 2]  # each has a pair (see Index)
    units = dict.fromkeys([c.name for c in paired], 1.0)
    traffic = {c.name: 2.0 * c.pair_bytes_per_s for c in paired if c.pair_bytes_per_s > 0}
    if not traffic:
        return units
    if flow_unit:
        low, high = min(flow_unit.values()), max(flow_unit.values())
    else:
        low = high = math.sqrt(min(traffic.values()) * max(traffic.values()))
    for c, both_ways in traffic.items():
        if both_ways < low:
            units[c] = 10.0 ** round(math.log10(math.sqrt(high / both_ways)))
        elif both_ways > high:
            units[c] = 10.0 ** round(math.log10(math.sqrt(low / both_ways)))
    return units


def define_variables(m: pulp.LpProblem, ix: Index) -> Variables:
    """Create the variables with their bounds (in their units, see :class:`Variables`)::

        0 ≤ x ≤ 1,  y ≥ 0,  n ∈ {0..D_s·m_s // u_p},  z ≥ 0,  0 ≤ F_t·f ≤ cap_e

    and w ∈ {0, 1} for single-resource demands that have a choice, π ∈ [0, 1] for each KV policy
    (:mod:`solvers.kv_rows`); F_t and μ_c
    (the unit of z) are :func:`flow_units` and :func:`pair_units`. z has no
    upper bound of its own: the pair balance rows (Σ μ_c·z = n) bound it by
    the bounds of n, and min(n bounds)/μ_c is not exact in binary when μ_c ≠ 1.
    """
    v = Variables(index=ix)
    v.flow_unit = flow_units(ix)
    v.pair_unit = pair_units(ix, v.flow_unit)
    v.load_unit = load_units(ix)
    tok = ix.names.tokens
    for r in ix.routes:
        v.x[r.name] = add_var(m, v, "x", (r.name,), [tok["route", r.name]], ub=1)
    for c, q, s in ix.load_keys:
        v.y[c, q, s] = add_var(
            m, v, "y", (c, q, s), [tok["column", c], tok["step", q], tok["site", s]]
        )
    for key in ix.replica_keys:
        c, p, s = key
        ub = ix.replica_ub[key]
        v.n[key] = add_var(
            m, v, "n", key, [tok["column", c], str(p), tok["site", s]], ub=ub, integer=True
        )
        v.primary[key] = unit_weight(ix.problem.objective, ix.site[s]) * ix.units[key]
    for c, s0, s1 in ix.pair_keys:
        v.z[c, s0, s1] = add_var(
            m, v, "z", (c, s0, s1), [tok["column", c], tok["site", s0], tok["site", s1]]
        )
    for c, p, s, hub in ix.hub_keys:
        v.g[c, p, s, hub] = add_var(
            m, v, f"g{p}", (c, p, s, hub), [tok["column", c], tok["site", s], tok["hub", hub]]
        )
    for t in ix.transfers:
        unit = v.flow_unit[t.name]
        for e in ix.edges:
            v.f[t.name, e] = add_var(
                m,
                v,
                "f",
                (t.name, e),
                [tok["transfer", t.name], tok["node", e[0]], tok["node", e[1]]],
                ub=ix.capacity[e] / unit,
            )
    for k, options in ix.choices.items():
        for rho in options:
            tokens = [tok["demand", k], tok["resource", rho]]
            v.w[k, rho] = add_var(m, v, "w", (k, rho), tokens, ub=1, integer=True)
    for i, p in enumerate(ix.problem.policies):  # π_p ∈ [0, 1], in the order of the problem (solvers.kv_rows)
        v.pi[p.name] = add_var(m, v, "pi", (p.name,), [str(i)], ub=1)
    return v


def estimated_size(ix: Index) -> tuple[int, int]:
    """(variables, constraint-matrix nonzeros) the model of ``ix`` will have, counted before it is built.

    The variables are those :func:`define_variables` makes; the nonzeros count each variable's terms in
    the rows of the families: a route share in its split row and each step's coverage row; a load in
    its coverage and capacity rows and the conservation rows of its transfers (two each); a replica
    count in a capacity row per step it serves and in its site-units, power and pair-balance rows; a
    pair or half-pair in its balance rows and each edge of its round trip; a flow in the conservation
    rows of the edge's two ends and in the edge's capacity row; the uplink rows' terms
    (:func:`_uplink_size`). The pool limit and policy rows, which few models have, are left out.
    """
    steps = {c.name: len(c.capacity) for c in ix.columns}
    route_steps = sum(len(r.steps) for r in ix.routes)
    moved = {t.route for t in ix.transfers}
    loads = sum(2 + (2 if ix.route_of_step[q].name in moved else 0) for _c, q, _s in ix.load_keys)
    replicas = sum(3 + steps[c] for c, _p, _s in ix.replica_keys)
    pairs = sum(2 + len(ix.pair_edges.get(k, ())) for k in ix.pair_keys)
    halves = sum(1 + len(ix.hub_edges.get(k, ())) for k in ix.hub_keys)
    flows = 3 * len(ix.transfers) * len(ix.edges)
    choices = sum(len(o) for o in ix.choices.values())
    variables = (len(ix.routes) + len(ix.load_keys) + len(ix.replica_keys) + len(ix.pair_keys) + len(ix.hub_keys)
                 + len(ix.transfers) * len(ix.edges) + choices)
    uplink_terms = _uplink_size(ix)
    return variables, (len(ix.routes) + route_steps + loads + replicas + pairs + halves + flows + 2 * choices
                               + uplink_terms)


def _uplink_size(ix: Index) -> int:
    """The nonzeros of :mod:`solvers.uplink_rows` (its δ per site is a family's variable, not counted) on sites of ≥ 2 domains with an uplink: per
    column and direction, its loads at the transfer's end, its replicas and δ; per site δ and the units of
    every replica there; per direction, the flows on the site's node's edges and δ (an upper bound)."""
    ends = {"out": {t.source for t in ix.transfers}, "in": {t.target for t in ix.transfers}}
    rows: set[tuple[str, str, str]] = set()
    terms = 0
    for c, q, s in ix.load_keys:
        site = ix.site[s]
        if site.uplink_bytes_per_s is None or site.domains < 2:
            continue
        for direction, steps in ends.items():
            if q in steps:
                terms += 1
                rows.add((c, s, direction))
    sites = {s for _, s, _ in rows}
    terms += 2 * len(rows) + sum(1 for key in ix.replica_keys if key[2] in sites) + len(sites)
    for s in sites:
        node = ix.site[s].node
        terms += 2 + len(ix.transfers) * sum(1 for e in ix.edges if node in e)
    return terms


_gc_lock = threading.Lock()
_gc_builds = 0  # builds in progress in this process
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic GC while building: the model allocates millions of
    acyclic objects, and generational collections over them cost ~40% of the
    build time. Reference counting still frees memory; nested and concurrent
    builds share one pause."""
    global _gc_builds, _gc_was_enabled
    with _gc_lock:
        if _gc_builds == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_builds += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_builds -= 1
            if _gc_builds == 0 and _gc_was_enabled:
                gc.enable()
