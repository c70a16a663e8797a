"""Operations over time: what changes a running placement.

Re-plans from a running plan (:mod:`~placement.core.operations.replan`, placing the new replicas
around the kept ones: :mod:`~placement.core.operations.domain_slots`), N+1 survival
(:mod:`~placement.core.operations.survive`), and the multi-period schedule
(:mod:`~placement.core.operations.schedule`, rolling horizons, its records) with its demand profiles
(:mod:`~placement.core.operations.profile`). Each is a scenario or a sequence of solves of the
pipeline.

Imports: every other room; none imports it.
"""
