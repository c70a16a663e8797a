"""Library entry points that wrap the verifier for orchestration code: :func:`check`.

Examples
--------
>>> import placement
>>> inst = placement.load_instance("instances/melange-toy.yaml")
>>> plan = placement.solve(inst, backend="highs")
>>> placement.check(inst, plan)
CheckResult(ok=True, violations=[], warnings=[])
>>> plan.pools[0].replicas += 1
>>> result = placement.check(inst, plan)
>>> result.ok, result.violations[0].split(":")[0]
(False, 'pool pool-01')
>>> plan.provenance.model = "llama-3.1-8b"
>>> placement.check(inst, plan).violations[0]
"provenance.model: the plan says 'llama-3.1-8b', the instance 'llama-2-7b'"
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.schema import Instance
from placement.core.plans.plan import Plan
from placement.core.plans.provenance import as_solved, compare_provenance
from placement.core.verify.verifier import CHECKED_STATUSES, verify

__all__ = ["CheckResult", "check"]


@dataclass(frozen=True)
class CheckResult:
    """The verifier's verdict: ``ok`` when ``violations`` (sentences naming the pool or field) is empty.

    ``warnings`` say what differs without making the plan wrong (the tool version that wrote it,
    :func:`placement.core.plans.provenance.compare_provenance`).
    """

    ok: bool
    violations: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check(instance: Instance, plan: Plan, *, source: str = "<instance>", plan_source: str | None = None,
          ) -> CheckResult:
    """Re-verify ``plan`` against ``instance`` with the cost models (what ``placement check`` does).

    A plan that records failed domains (a re-plan) is checked against the fleet without them; a plan is
    checked at the confidence level, SLO headroom and price set it records
    (:func:`placement.core.plans.provenance.as_solved`). Its provenance (model, draft, precision, framework)
    must be the instance's.

    Raises
    ------
    InputError
        The plan is for another instance, names a model nobody knows, or has no placement (status
        infeasible or error); ``plan_source`` (the plan's file) is named.
    """
    if plan.instance != instance.name:
        raise InputError(f"plan is for instance {plan.instance!r}, not {instance.name!r}", file=plan_source,
                         field="instance")
    if plan.status not in CHECKED_STATUSES:
        raise InputError(f"plan has status {plan.status!r}; nothing to check", file=plan_source, field="status")
    solved, settings = as_solved(instance, plan)
    ctx = Context.of(solved, source)
    mismatches, warnings = compare_provenance(ctx, plan, plan_source or "<plan>")
    violations = mismatches + verify(ctx, plan)
    return CheckResult(ok=not violations, violations=violations, warnings=settings + warnings)
