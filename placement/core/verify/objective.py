"""The plan's objective re-derived: the mirror of its primary objective in the MILP.

A plan names the objective it was solved for (:mod:`placement.core.instance.objectives`); the figure that
objective measures of the plan (its $/h, W, chips, or an extension's) must be what its pools, as the
verifier re-derives them, give.

Examples
--------
>>> from placement.core.verify.objective import check_objective  # doctest: +SKIP
>>> check_objective(ctx, plan, facts)                             # doctest: +SKIP
[]
"""

from __future__ import annotations

from placement.core.instance.context import Context
from placement.core.instance.objectives import OBJECTIVES
from placement.core.plans.plan import Plan
from placement.core.verify.facts import PoolFacts, close

__all__ = ["check_objective"]


def check_objective(ctx: Context, plan: Plan, facts: list[PoolFacts]) -> list[str]:
    """The plan's objective is a registered one, and what it measures of the plan is its pools'."""
    measured = OBJECTIVES.get(plan.objective)
    if measured is None:
        return [f"objective: {plan.objective!r} is not an objective this verifier knows ({', '.join(OBJECTIVES)})"]
    says, gives = measured.of_plan(plan), measured.of_pools(ctx, facts)
    if says is not None and not close(float(says), gives, 1e-6):
        return [(f"objective {plan.objective}: the plan measures {says:.10g} {measured.unit}, its pools "
                 f"{gives:.10g} {measured.unit}")]
    return []
