"""The objectives an instance may minimise, each one record saying everything the package says of it.

An :class:`Objective` is the instance's word for it (``objective: cost``), the solver's measure it
minimises (:class:`solvers.problem.Measure`: per unit of a site, and what becomes of it on the
collapsed fleet), its unit and the heading of a comparison's savings, what it measures of a plan (the
figure compare, Pareto and the report read) and of the verifier's re-derived pools (the check that
mirrors it, :func:`placement.core.verify.objective.check_objective`). The instance schema, the plan
record, the problem, the studies and the CLI read them here; a new objective is a
:func:`solvers.problem.register_objective` and a :func:`register` (docs: ARCHITECTURE.md, "Where to
add things").

Examples
--------
>>> [(o.name, o.measure, o.unit) for o in OBJECTIVES.values()]
[('cost', 'cost', '$/h'), ('power', 'power', 'W'), ('chips', 'units', 'chips')]
>>> check_objective_name("latency")
Traceback (most recent call last):
...
pydantic_core._pydantic_core.PydanticCustomError: Input should be 'cost', 'power' or 'chips'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from placement.core.modes.registry import one_of
from solvers.problem import OBJECTIVES as MEASURES

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.plans.plan import Plan

__all__ = ["OBJECTIVES", "Objective", "ObjectiveName", "check_objective_name", "objective", "register"]


@dataclass(frozen=True)
class Objective:
    """One objective (module docstring): ``of_plan(plan)`` the figure of a plan it measures (None: the plan
    states none), ``of_pools(ctx, facts)`` the same from the verifier's re-derived pools."""

    name: str
    measure: str
    unit: str
    heading: str
    of_plan: Callable[[Plan], float | None]
    of_pools: Callable[[Context, list[Any]], float]


#: Every objective an instance may name, in registration order.
OBJECTIVES: dict[str, Objective] = {}


def register(obj: Objective) -> Objective:
    """Add (or replace) ``obj``; its measure must be registered in the solver layer first.

    Raises
    ------
    ValueError
        ``obj.measure`` is not a registered :class:`solvers.problem.Measure`.
    """
    if obj.measure not in MEASURES:
        raise ValueError(f"objective {obj.name!r}: no solver measure {obj.measure!r} "
                         "(solvers.problem.register_objective)")
    OBJECTIVES[obj.name] = obj
    return obj


def objective(name: str) -> Objective:
    """The registered objective ``name`` (``KeyError`` naming the known ones otherwise)."""
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise KeyError(f"unknown objective {name!r}; expected one of {', '.join(OBJECTIVES)}") from None


def check_objective_name(value: str) -> str:
    """Validator of an objective's name: a registered one, else pydantic's error for a literal."""
    return one_of(value, tuple(OBJECTIVES))


def _pools_usd(ctx: Context, facts: list) -> float:
    return sum(f.usd_per_hour for f in facts) + ctx.kv_usd_per_hour


def _pools_w(ctx: Context, facts: list) -> float:
    return sum(f.power_w for f in facts)


def _pools_chips(ctx: Context, facts: list) -> float:
    return float(sum(f.chips for f in facts))


register(Objective("cost", "cost", "$/h", "full plan saves ($/h)", lambda plan: plan.cost_usd_per_hour, _pools_usd))
register(Objective("power", "power", "W", "full plan saves (power)", lambda plan: plan.power_w, _pools_w))
register(Objective("chips", "units", "chips", "full plan saves (chips)",
                   lambda plan: None if plan.chips is None else float(plan.chips), _pools_chips))

#: An objective's name in a record: a registered one (the JSON schema lists those registered here).
ObjectiveName = Annotated[str, AfterValidator(check_objective_name),
                          WithJsonSchema({"enum": list(OBJECTIVES), "type": "string"})]
