"""The core data flow: instance → candidates → MILP → plan → verifier, in rooms that import only the rooms
before them (``tests/test_architecture.py``, ``ROOMS``; ARCHITECTURE.md, "Rooms of placement.core").

* :mod:`placement.core.instance` — the instance: its format, reading it, its context (fleet graph,
  catalogue, sites), the vocabularies the format names (objectives, session classes, failed domains).
* :mod:`placement.core.replicas` — replica configurations: their evaluation by the cost models, the
  queues in front of them, the candidate columns generated per class and chip type, and their cache.
* :mod:`placement.core.plans` — the plan record and what describes or writes one: migrations,
  provenance, error bands, numbers as people read them, atomic writes, the JSON Schemas.
* :mod:`placement.core.kv` — the KV cache: session classes expanded into outcome classes, tier plans,
  which prefill pool feeds which decode pool.
* :mod:`placement.core.verify` — the independent verifier, its physical floors, a second backend's
  opinion (certify) and the library's ``check``.
* :mod:`placement.core.pipeline` — the solve pipeline: the problem, the solve under one deadline, the
  plan assembled, an infeasible model diagnosed.
* :mod:`placement.core.operations` — operations over time: re-plans, N+1 survival, the multi-period
  schedule and its demand profiles.

The package itself re-exports nothing: import from the room that holds a name.
"""
