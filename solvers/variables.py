"""Decision variables of the placement MILP and the helpers that add them and its rows.

Split from :mod:`solvers.milp` (which re-exports :class:`Variables` and
:func:`define_variables`) to keep modules short; the scaling choices are
described in the :mod:`solvers.milp` docstring.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
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
    "Key3",
]

Key3 = tuple[str, str, str]


@dataclass
class Variables:
    """The decision variables of :func:`build_model` and the scales to read them.

    ``x[route]`` fraction of λ_k, ``y[(column, step, site)]`` replica-equivalents,
    ``n[(column, part, site)]`` integer replicas, ``z[(column, site0, site1)]``
    replica pairs, ``f[(transfer, (u, v))]`` flow in ``flow_scale`` bytes/s,
    ``w[(demand, resource)]`` binary choice of a single-resource demand.
    ``primary`` is the objective without tie-breaks.
    """

    index: Index
    flow_scale: float
    x: dict[str, pulp.LpVariable] = field(default_factory=dict)
    y: dict[Key3, pulp.LpVariable] = field(default_factory=dict)
    n: dict[tuple[str, int, str], pulp.LpVariable] = field(default_factory=dict)
    z: dict[Key3, pulp.LpVariable] = field(default_factory=dict)
    f: dict[tuple[str, tuple[str, str]], pulp.LpVariable] = field(default_factory=dict)
    w: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    primary: dict[tuple[str, int, str], float] = field(default_factory=dict)
    labels: dict[str, tuple[str, tuple]] = field(default_factory=dict)


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
):
    """Add Σ coef·var (sense) rhs; by construction no row repeats a variable in ``terms``."""
    name = "__".join([family, *tokens])
    m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(terms), sense, name, rhs))
    v.labels[name] = (family, key)


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
    j = round(math.log10(reference))
    return value / 10.0**j if j >= 0 else value * 10.0**-j


def _flow_scale(ix: Index) -> float:
    caps = [ix.capacity[e] for e in ix.edges]
    return 10.0 ** round(math.log10(statistics.median(caps))) if caps else 1e9


def define_variables(m: pulp.LpProblem, ix: Index) -> Variables:
    """Create the variables with their bounds::

        0 ≤ x ≤ 1,  y ≥ 0,  n ∈ {0..D_s·m_s // u_p},  0 ≤ z ≤ min(n bounds),  0 ≤ f ≤ cap_e/F

    and w ∈ {0, 1} for single-resource demands that have a choice.
    """
    v = Variables(index=ix, flow_scale=_flow_scale(ix))
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
        v.primary[key] = ix.unit_coefficient(ix.site[s]) * ix.replica_units(key)
    for c, s0, s1 in ix.pair_keys:
        ub = min(ix.replica_ub[c, 0, s0], ix.replica_ub[c, 1, s1])
        v.z[c, s0, s1] = add_var(
            m, v, "z", (c, s0, s1), [tok("column", c), tok("site", s0), tok("site", s1)], ub=ub
        )
    for t in ix.transfers:
        for e in ix.edges:
            v.f[t.name, e] = add_var(
                m,
                v,
                "f",
                (t.name, e),
                [tok("transfer", t.name), tok("node", e[0]), tok("node", e[1])],
                ub=ix.capacity[e] / v.flow_scale,
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
