"""The plan: the record a solve returns and everything that describes or writes one.

:mod:`~placement.core.plans.plan` (pools, classes, links, totals; reading a plan file), the
migration record a re-plan carries and its reload rule (:mod:`~placement.core.plans.migration`; the
plan record holds it, so it sits here and not with the re-plans), each domain's KV over its uplink
(:mod:`~placement.core.plans.uplinks`: the plan's ``uplinks`` field and the packing both the assembly and the
verifier use to place replicas in the domains a pool lists), provenance (what makes a plan
self-describing), error bands (:mod:`~placement.core.plans.confidence`), numbers as people read
them, atomic writes of outputs and the JSON Schemas of the instance and plan formats.

Imports: the instance and replica rooms (a pool's configuration is the evaluator's record).
"""
