"""Solver backends by name, as linopy keeps them: ``available_solvers()``, ``get_solver(name)``.

Each backend is a class behind the :class:`Backend` protocol (``name``,
``capabilities``, ``available()``, ``solve(model, options) -> Outcome``):

* ``"cbc"`` — :class:`CbcBackend`, PuLP's bundled CBC (:mod:`solvers.backends.pulp_cmd`);
* ``"highs"`` — :class:`HighsBackend`, highspy in-process (:mod:`solvers.backends.highs`);
* any other solver PuLP names (``"GLPK_CMD"``, ...) — a :class:`PulpBackend`.

:func:`register_solver` adds a backend (a test's fake, another solver);
:func:`run` solves with the backend of a name and turns an unknown or
unavailable name into an error :class:`Outcome` that lists what is there.

Examples
--------
>>> registered_solvers()[:2]
['cbc', 'highs']
>>> get_solver("highs").capabilities.objective_target, get_solver("cbc").capabilities.objective_target
(True, False)
>>> get_solver("nope")
Traceback (most recent call last):
...
solvers.backends.UnknownSolverError: unknown solver 'nope'; registered: cbc, highs (and any solver PuLP names)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pulp

from solvers.backends.base import Backend, Capabilities, Outcome, SolveOptions, unavailable
from solvers.backends.highs import HighsBackend
from solvers.backends.pulp_cmd import CbcBackend, PulpBackend

__all__ = [
    "DEFAULT_BACKEND",
    "Backend",
    "Capabilities",
    "CbcBackend",
    "HighsBackend",
    "Outcome",
    "PulpBackend",
    "SolveOptions",
    "UnknownSolverError",
    "available_solvers",
    "get_solver",
    "register_solver",
    "registered_solvers",
    "run",
    "unregister_solver",
]


#: The backend a solve uses unless told otherwise: HiGHS, by whole-process measurements of both
#: (benchmarks/backend_cases.py): within noise of CBC on the shipped instances; on the bench fleets it proves
#: optima CBC leaves open or finds no plan for, and CBC's model copies in its child took 4-9x the memory.
DEFAULT_BACKEND = "highs"


class UnknownSolverError(ValueError):
    """A solver name neither registered nor known to PuLP."""


_REGISTRY: dict[str, Callable[[], Backend]] = {"cbc": CbcBackend, "highs": HighsBackend}


def register_solver(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``get_solver(name)`` return ``factory()`` (replacing a backend of that name)."""
    _REGISTRY[name] = factory


def unregister_solver(name: str) -> None:
    """Remove the backend registered as ``name`` (no error if there is none)."""
    _REGISTRY.pop(name, None)


def registered_solvers() -> list[str]:
    """Names of the registered backends, in registration order."""
    return list(_REGISTRY)


def get_solver(name: str) -> Backend:
    """The backend of ``name``: a registered one, else PuLP's solver of that name.

    Raises
    ------
    UnknownSolverError
        When neither knows ``name``; the message lists the registered names.
    """
    factory = _REGISTRY.get(name)
    if factory is not None:
        return factory()
    if name in pulp.listSolvers():
        return PulpBackend(name)
    raise UnknownSolverError(
        f"unknown solver {name!r}; registered: {', '.join(_REGISTRY)} (and any solver PuLP names)"
    )


def available_solvers() -> list[str]:
    """Names usable here: the registered backends that are available, then PuLP's other available solvers.

    Examples
    --------
    >>> "cbc" in available_solvers()
    True
    """
    backends = [get_solver(name) for name in _REGISTRY]
    wrapped = {getattr(b, "pulp_name", None) for b in backends}
    names = [b.name for b in backends if b.available()]
    return names + [n for n in pulp.listSolvers(onlyAvailable=True) if n not in wrapped and n not in names]


def run(model: pulp.LpProblem, name: str, options: SolveOptions) -> Outcome:
    """Solve ``model`` with the backend of ``name``; never raises for solver failures.

    Examples
    --------
    >>> m = pulp.LpProblem("t")
    >>> x = m.add_variable("x", 0, 5, pulp.LpInteger)
    >>> m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression({x: 2.0}), pulp.LpConstraintGE, "c", 3))
    >>> m.setObjective(pulp.LpAffineExpression({x: 1.0}))
    >>> o = run(m, "highs", SolveOptions())
    >>> o.status, o.bound
    ('optimal', 2.0)
    >>> o = run(m, "nope", SolveOptions())
    >>> o.status, o.message.startswith("backend 'nope' unavailable (unknown solver 'nope'")
    ('error', True)
    """
    try:
        outcome = get_solver(name).solve(model, options)
    except UnknownSolverError as exc:
        outcome = unavailable(name, str(exc))
    if outcome.unavailable:
        return replace(outcome, message=f"{outcome.message}; available: {', '.join(available_solvers())}")
    return outcome
