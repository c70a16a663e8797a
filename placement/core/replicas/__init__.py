"""Replica configurations: what one replica of a class on a chip type can do, and the candidate columns.

:mod:`~placement.core.replicas.evaluate` prices a configuration through the cost models (step
times, memory, capacity; the measured step tables and the queues in front of a replica are part of
it); :mod:`~placement.core.replicas.generation` searches a class's configurations per chip type,
:mod:`~placement.core.replicas.parallel_generation` on processes or Ray,
:mod:`~placement.core.replicas.candidates` gathers the columns of an instance, and
:mod:`~placement.core.replicas.candidate_cache` (with its codec, records and authenticated store)
keeps them between runs.

Imports: the instance room only. A plan is not known here.
"""
