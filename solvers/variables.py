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

import pulp

from solvers.index import Index

__all__ = [
    "Variables",
    "define_variables",
    "add_var",
    "add_row",
    "gc_paused",
    "decimal_shift",
    "flow_units",
    "pair_units",
    "pow10_exponent",
    "shift",
    "Key3",
]

Key3 = tuple[str, str, str]


@dataclass
class Variables:
    """The decision variables of :func:`build_model` and the scales to read them.

    ``x[route]`` fraction of λ_k, ``y[(column, step, site)]`` replica-equivalents,
    ``n[(column, part, site)]`` integer replicas, ``z[(column, site0, site1)]``
    replica pairs in units of ``pair_unit[column]`` pairs, ``f[(transfer, (u, v))]``
    flow in units of ``flow_unit[transfer]`` bytes/s, ``w[(demand, resource)]``
    binary choice of a single-resource demand. ``primary`` is the objective
    without tie-breaks. ``row_scale[name]`` is the power of ten row ``name`` was
    divided by (see :func:`add_row`; absent means 1): row activity × row_scale
    is in the row's natural units (requests/s, units, bytes/s, W, $/h).
    """

    index: Index
    flow_unit: dict[str, float] = field(default_factory=dict)
    pair_unit: dict[str, float] = field(default_factory=dict)
    x: dict[str, pulp.LpVariable] = field(default_factory=dict)
    y: dict[Key3, pulp.LpVariable] = field(default_factory=dict)
    n: dict[tuple[str, int, str], pulp.LpVariable] = field(default_factory=dict)
    z: dict[Key3, pulp.LpVariable] = field(default_factory=dict)
    f: dict[tuple[str, tuple[str, str]], pulp.LpVariable] = field(default_factory=dict)
    w: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    primary: dict[tuple[str, int, str], float] = field(default_factory=dict)
    labels: dict[str, tuple[str, tuple]] = field(default_factory=dict)
    row_scale: dict[str, float] = field(default_factory=dict)


def add_var(
    m: pulp.LpProblem,
    v: Variables,
    family: str,
    key: tuple,
    tokens: list[str],
    ub=None,
    integer=False,
):
    name = "__".join([family, *tokens])
    cat = pulp.LpInteger if integer else pulp.LpContinuous
    if hasattr(m, "add_variable"):
        var = m.add_variable(name, 0, ub, cat)
    else:  # PuLP < 3
        var = pulp.LpVariable(name, 0, ub, cat)
    v.labels[name] = (family, key)
    return var


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
    """Add Σ coef·var (sense) rhs, divided by the power of ten nearest its largest |coef|.

    ``terms`` and ``rhs`` are in the row's natural units; the row is divided by
    10^j, j = round(log10(max |coef|)), so its largest |coefficient| lands in
    [10^-0.5, 10^0.5). A power of ten, not the maximum itself, keeps short
    decimal inputs short in the 13-digit LP/MPS text CBC reads (1/3 written as
    0.333333333333 made CBC's preprocessing round 3 replicas up to 4). A
    caller whose row is already so scaled (unit coefficients, or a structure
    it knows) passes the power of ten it divided by as ``scaled`` (1.0 if
    none), and the row is added as it is. The divisor is kept in
    ``v.row_scale`` when it is not 1. By construction no row repeats a
    variable in ``terms``.
    """
    name = "__".join([family, *tokens])
    if scaled is None:
        coefs = [coef for _, coef in terms]
        top = max(max(coefs), -min(coefs)) if coefs else 0.0
        j = round(math.log10(top)) if top > 0 else 0
        if j > 0:
            scaled = 10.0**j
            terms = [(var, coef / scaled) for var, coef in terms]
            rhs = rhs / scaled
        elif j < 0:
            mul = 10.0**-j
            terms = [(var, coef * mul) for var, coef in terms]
            rhs = rhs * mul
            scaled = 10.0**j
    if scaled is not None and scaled != 1.0:
        v.row_scale[name] = scaled
    m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), sense, name, rhs))
    v.labels[name] = (family, key)


def pow10_exponent(value: float) -> int:
    """j such that 10^j is the power of ten nearest ``value`` (> 0) on a log scale.

    Examples
    --------
    >>> pow10_exponent(3.1), pow10_exponent(3.2), pow10_exponent(0.004), pow10_exponent(6.4e12)
    (0, 1, -2, 13)
    """
    return round(math.log10(value))


def shift(value: float, j: int) -> float:
    """``value`` / 10^j, dividing or multiplying by an exactly representable power of ten.

    Examples
    --------
    >>> shift(5.0, 1), shift(0.3, -1), shift(1.6384e9, 9)
    (0.5, 3.0, 1.6384)
    """
    return value / 10.0**j if j >= 0 else value * 10.0**-j


def decimal_shift(value: float, reference: float) -> float:
    """``value`` divided by the power of ten nearest ``reference`` (> 0).

    Multiplying or dividing by an exactly representable power of ten keeps a
    short decimal short when printed with 13 digits, unlike dividing by an
    arbitrary number.

    Examples
    --------
    >>> decimal_shift(5.0, 15.0), decimal_shift(15.0, 15.0), decimal_shift(0.3, 0.3)
    (0.5, 1.5, 3.0)
    """
    return shift(value, pow10_exponent(reference))


def flow_units(ix: Index) -> dict[str, float]:
    """Unit of the flow variables of each transfer t: 10^round(log10(b_t·λ_k)) bytes/s.

    b_t·λ_k is the traffic of t when all of demand k takes its route, so a
    flow is at most ~3 units unless it circulates.
    """
    return {
        t.name: 10.0 ** pow10_exponent(
            t.bytes_per_request * ix.rate[ix.route_of_step[t.source].demand]
        )
        for t in ix.transfers
    }


def pair_units(ix: Index, flow_unit: dict[str, float]) -> dict[str, float]:
    """Unit μ_c of the pair variables of each two-part column c (pairs).

    A pair z of c appears with coefficient 1 beside the replicas n in the pair
    balance rows and with B_c (bytes/s per pair, ×1 or ×2) beside flows of
    ``flow_unit`` bytes/s in the edge rows. Measuring z in units of μ_c =
    10^round(log10(√(G/B_c))) puts both coefficients equally far from 1 on a
    log scale (μ_c and B_c·μ_c/G ≈ 1/μ_c), G being the largest flow unit, or
    without transfers √(B_min·B_max) over the columns with pair traffic.
    Columns without pair traffic have μ_c = 1.
    """
    paired = {c for c, _, _ in ix.pair_keys}
    traffic = {
        c.name: c.pair_bytes_per_s for c in ix.columns if c.name in paired and c.pair_bytes_per_s > 0
    }
    units = {c: 1.0 for c in sorted(paired)}
    if not traffic:
        return units
    if flow_unit:
        g = max(flow_unit.values())
    else:
        g = math.sqrt(min(traffic.values()) * max(traffic.values()))
    for c, b in traffic.items():
        units[c] = 10.0 ** pow10_exponent(math.sqrt(g / b))
    return units


def define_variables(m: pulp.LpProblem, ix: Index) -> Variables:
    """Create the variables with their bounds (in their units, see :class:`Variables`)::

        0 ≤ x ≤ 1,  y ≥ 0,  n ∈ {0..D_s·m_s // u_p},  0 ≤ μ_c·z ≤ min(n bounds),  0 ≤ F_t·f ≤ cap_e

    and w ∈ {0, 1} for single-resource demands that have a choice; F_t and μ_c
    are :func:`flow_units` and :func:`pair_units`.
    """
    v = Variables(index=ix)
    v.flow_unit = flow_units(ix)
    v.pair_unit = pair_units(ix, v.flow_unit)
    tok = ix.names.token
    for r in ix.routes:
        v.x[r.name] = add_var(m, v, "x", (r.name,), [tok("route", r.name)], ub=1)
    for c, q, s in ix.load_keys:
        v.y[c, q, s] = add_var(
            m, v, "y", (c, q, s), [tok("column", c), tok("step", q), tok("site", s)]
        )
    for key in ix.replica_keys:
        c, p, s = key
        ub = ix.replica_ub[key]
        v.n[key] = add_var(
            m, v, "n", key, [tok("column", c), str(p), tok("site", s)], ub=ub, integer=True
        )
        v.primary[key] = ix.unit_coefficient(ix.site[s]) * ix.units[key]
    for c, s0, s1 in ix.pair_keys:
        ub = min(ix.replica_ub[c, 0, s0], ix.replica_ub[c, 1, s1]) / v.pair_unit[c]
        v.z[c, s0, s1] = add_var(
            m, v, "z", (c, s0, s1), [tok("column", c), tok("site", s0), tok("site", s1)], ub=ub
        )
    for t in ix.transfers:
        unit = v.flow_unit[t.name]
        for e in ix.edges:
            v.f[t.name, e] = add_var(
                m,
                v,
                "f",
                (t.name, e),
                [tok("transfer", t.name), tok("node", e[0]), tok("node", e[1])],
                ub=ix.capacity[e] / unit,
            )
    for k, options in ix.choices.items():
        for rho in options:
            tokens = [tok("demand", k), tok("resource", rho)]
            v.w[k, rho] = add_var(m, v, "w", (k, rho), tokens, ub=1, integer=True)
    return v


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
