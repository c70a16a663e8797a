"""Solver-neutral result records of a placement solve.

Every record forbids unknown fields. Lists are sorted by names and numbers are
rounded (:func:`clean`) so that the same problem solved by the same backend
gives byte-identical JSON once the timing fields (:data:`TIMING_FIELDS`) are
excluded, see :meth:`Solution.canonical_json`.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_serializer

from solvers.tolerances import ZERO
from topology.records import Record

__all__ = [
    "TIMING_FIELDS",
    "ZERO",
    "EdgeLoad",
    "Flow",
    "Load",
    "Pair",
    "Placement",
    "Solution",
    "Status",
    "clean",
]

Status = Literal["optimal", "feasible", "infeasible", "time_limit", "unbounded", "error"]

#: Fields that vary from run to run; exclude them when comparing solutions.
TIMING_FIELDS = frozenset({"build_seconds", "solve_seconds"})


# Significant digits kept: solver values carry ~1e-9 relative noise, and a
# fixed precision makes the JSON of equal solutions byte-identical.
_DIGITS = 10


def clean(value: float) -> float:
    """Round ``value`` to 10 significant digits and flush tiny values to 0.0.

    Examples
    --------
    >>> clean(2.99999999999)
    3.0
    >>> clean(-1e-12)
    0.0
    """
    if not math.isfinite(value):
        return float(value)
    if abs(value) < ZERO:
        return 0.0
    return float(f"{value:.{_DIGITS}g}")




class Placement(Record):
    """``replicas`` replicas of ``column`` have their part ``part`` in ``site``."""

    column: str
    part: int = Field(ge=0)
    site: str
    replicas: int = Field(ge=0)


class Load(Record):
    """Requests/s of ``step`` served by replicas of ``column`` whose part 0 is in ``site``."""

    column: str
    step: str
    site: str
    rate: float


class Flow(Record):
    """Bytes/s of ``transfer`` carried on the directed edge ``source`` -> ``target``."""

    transfer: str
    source: str
    target: str
    bytes_per_s: float


class Pair(Record):
    """Replica pairs of a two-part column: part 0 in ``source_site``, part 1 in ``target_site``."""

    column: str
    source_site: str
    target_site: str
    replicas: float


class EdgeLoad(Record):
    """Total traffic (transfers and pair traffic) on one directed edge."""

    source: str
    target: str
    load_bytes_per_s: float
    capacity_bytes_per_s: float


class Solution(Record):
    """Result of a solve: status, bounds, model size, timings and the placement.

    ``objective`` is the problem's primary objective (cost, power or units)
    recomputed from the reported replicas, never a solver-internal value that
    includes tie-breaks. ``best_bound`` is a lower bound on it and ``gap`` is
    ``(objective - best_bound) / max(|objective|, 1e-9)``.

    Examples
    --------
    >>> s = Solution(status="infeasible", message="", objective=None, best_bound=None,
    ...              gap=None, backend="cbc", build_seconds=0.0, solve_seconds=0.0,
    ...              variables=0, integer_variables=0, constraints=0, nonzeros=0,
    ...              replicas=[], loads=[], route_rates={}, flows=[], pairs=[],
    ...              edge_loads=[], cost_usd_per_hour=0.0, power_w=0.0, units=0)
    >>> s.ok
    False
    """

    status: Status
    message: str
    objective: float | None
    best_bound: float | None
    gap: float | None
    backend: str
    build_seconds: float
    solve_seconds: float
    variables: int
    integer_variables: int
    constraints: int
    nonzeros: int
    replicas: list[Placement]
    loads: list[Load]
    route_rates: dict[str, float]
    #: π of each policy with a share (:mod:`solvers.kv_rows`); left out of the JSON when empty.
    policy_shares: dict[str, float] = Field(default_factory=dict)
    flows: list[Flow]
    pairs: list[Pair]
    edge_loads: list[EdgeLoad]
    cost_usd_per_hour: float
    power_w: float
    units: int

    @model_serializer(mode="wrap")
    def _without_unused(self, handler):
        out = handler(self)
        if isinstance(out, dict) and not out.get("policy_shares", True):
            out.pop("policy_shares")
        return out

    @property
    def ok(self) -> bool:
        """True when the solution carries a placement (optimal, feasible or timed out with one)."""
        return self.objective is not None and self.status in ("optimal", "feasible", "time_limit")

    def canonical_json(self) -> str:
        """JSON without the timing fields: equal for repeated solves of one problem.

        Examples
        --------
        >>> a = Solution(status="error", message="x", objective=None, best_bound=None,
        ...              gap=None, backend="cbc", build_seconds=1.0, solve_seconds=2.0,
        ...              variables=0, integer_variables=0, constraints=0, nonzeros=0,
        ...              replicas=[], loads=[], route_rates={}, flows=[], pairs=[],
        ...              edge_loads=[], cost_usd_per_hour=0.0, power_w=0.0, units=0)
        >>> a.canonical_json() == a.model_copy(update={"build_seconds": 9.0}).canonical_json()
        True
        """
        return self.model_dump_json(exclude=set(TIMING_FIELDS))
