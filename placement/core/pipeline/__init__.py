"""The solve pipeline: one context in, one verified plan (or a diagnosis) out.

:mod:`~placement.core.pipeline.solve` (``solve_context``, scenarios, the families a solve is made of),
:mod:`~placement.core.pipeline.problem` (demands, routes, sites and the candidate columns as the
solver's problem), :mod:`~placement.core.pipeline.assemble` (the solution read back as a plan),
:mod:`~placement.core.pipeline.diagnose` (why an instance is infeasible) and the time limit that
bounds the whole solve (:mod:`~placement.core.pipeline.deadline`).

Imports: the instance, replica, plan, KV and verify rooms; operations import it.
"""
