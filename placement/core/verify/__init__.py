"""The independent verifier: a plan is accepted only for what can be re-derived from the instance.

:mod:`~placement.core.verify.verifier` runs the checks, one per constraint family, kept by name
(:mod:`~placement.core.verify.checks`); the re-derived facts, the checks by subject (fields,
fleet, serving, structure, KV, migration, objective, operation, survival); the physical floors
(:mod:`~placement.core.verify.floors`, sharing no code with the cost models), a second backend's
opinion on a solve (:mod:`~placement.core.verify.certify`) and the library's ``check``
(:mod:`~placement.core.verify.api`).

This ``__init__`` imports nothing: the serving modes import the floors while they load.
Imports: the instance, replica, plan and KV rooms; never the pipeline that produced the plan.
"""
