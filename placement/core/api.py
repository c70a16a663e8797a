"""Library entry points that wrap the verifier for orchestration code: :func:`check`.

Examples
--------
>>> import placement
>>> inst = placement.load_instance("instances/melange-toy.yaml")
>>> plan = placement.solve(inst, backend="highs")
>>> placement.check(inst, plan)
CheckResult(ok=True, violations=[])
>>> plan.pools[0].replicas += 1
>>> result = placement.check(inst, plan)
>>> result.ok, result.violations[0].split(":")[0]
(False, 'pool pool-01')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement.core.context import Context
from placement.core.errors import InputError
from placement.core.plan import Plan
from placement.core.schema import Instance
from placement.core.verify import CHECKED_STATUSES, verify

__all__ = ["CheckResult", "check"]


@dataclass(frozen=True)
class CheckResult:
    """The verifier's verdict: ``ok`` when ``violations`` (sentences naming the pool or field) is empty."""

    ok: bool
    violations: list[str] = field(default_factory=list)


def check(instance: Instance, plan: Plan, *, source: str = "<instance>") -> CheckResult:
    """Re-verify ``plan`` against ``instance`` with the cost models (what ``placement check`` does).

    A plan that records failed domains (a re-plan) is checked against the fleet without them.

    Raises
    ------
    InputError
        The plan is for another instance, or has no placement (status infeasible or error).
    """
    if plan.instance != instance.name:
        raise InputError(f"plan is for instance {plan.instance!r}, not {instance.name!r}", field="instance")
    if plan.status not in CHECKED_STATUSES:
        raise InputError(f"plan has status {plan.status!r}; nothing to check", field="status")
    violations = verify(Context.of(instance, source), plan)
    return CheckResult(ok=not violations, violations=violations)
