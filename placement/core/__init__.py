"""The core data flow: instance → context → candidates → MILP → plan → verifier.

Modules: :mod:`~placement.core.schema` (the instance format), :mod:`~placement.core.loading`
(reading and validating it), :mod:`~placement.core.context` (catalogue, fleet graph and sites of
one instance), :mod:`~placement.core.candidates` and :mod:`~placement.core.evaluate` (replica
configurations and their cost-model evaluation), :mod:`~placement.core.solve` (the MILP round
trip), :mod:`~placement.core.plan` (the result), :mod:`~placement.core.verify` (the independent
check), :mod:`~placement.core.diagnose` (why an instance is infeasible),
:mod:`~placement.core.errors` and :mod:`~placement.core.output` (exit codes, safe writes).
"""
