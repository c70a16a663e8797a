"""What every solver backend shares: its protocol, its options and what a run produced.

A backend is a class with a ``name``, ``capabilities``, ``available()`` and
``solve(model, options) -> Outcome``; :mod:`solvers.backends` keeps the
registry by name. ``solve`` never raises for a solver failure: a crash, a
refused model or a missing binary is an :class:`Outcome` with status
``"error"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import pulp

__all__ = ["Backend", "Capabilities", "Outcome", "SolveOptions", "finite_or_none", "unavailable"]


@dataclass(frozen=True)
class Outcome:
    """What a backend run produced; ``bound`` refers to the model's own objective."""

    status: str
    message: str
    has_values: bool
    bound: float | None
    seconds: float
    backend: str
    #: The backend could not run at all (unknown name, not installed): :func:`solvers.backends.run` then
    #: names the backends that can.
    unavailable: bool = False


def unavailable(backend: str, why: str) -> Outcome:
    """The error outcome of a backend that cannot run (:func:`solvers.backends.run` adds what can)."""
    return Outcome("error", f"backend {backend!r} unavailable ({why})", False, None, 0.0, backend, unavailable=True)


@dataclass(frozen=True)
class Capabilities:
    """What a backend does with the options beyond the model (others are ignored, never an error).

    ``start``: takes a starting solution (MIP start); ``best_bound``: reports
    the proven bound when it stops before optimality; ``objective_target``:
    stops at the first plan at most this good; ``time_limit``: honours a
    wall-clock limit.
    """

    start: bool
    best_bound: bool
    objective_target: bool
    time_limit: bool


@dataclass(frozen=True)
class SolveOptions:
    """How to solve a model.

    ``mip`` false solves the LP relaxation; ``gap`` is the relative MIP gap
    (ignored for an LP); ``start`` a value for every variable, handed to
    backends that take one (they check it and drop it if infeasible);
    ``target`` stops at the first plan of at most that objective; ``msg``
    shows the solver's log.
    """

    mip: bool = True
    time_limit_s: float | None = None
    gap: float | None = None
    threads: int | None = None
    msg: bool = False
    start: dict[pulp.LpVariable, float] | None = None
    target: float | None = None
    #: Primal feasibility tolerance, if tighter than the backend's default (HiGHS only; used by repairs).
    feasibility: float | None = None


@runtime_checkable
class Backend(Protocol):
    """A solver behind one name (see :mod:`solvers.backends`)."""

    name: str
    capabilities: Capabilities

    def available(self) -> bool:
        """Whether it can run here (installed, licensed)."""
        ...

    def solve(self, model: pulp.LpProblem, options: SolveOptions) -> Outcome:
        """Solve ``model`` in place (variable values set); never raises for solver failures."""
        ...


def finite_or_none(bound: float | None) -> float | None:
    """``bound``, or None when it is missing or not finite (solvers report ±inf for "no bound")."""
    return bound if bound is not None and math.isfinite(bound) else None
