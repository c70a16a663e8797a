"""The instance: what a user gives the optimizer, read, validated and turned into one solve's context.

The format (:mod:`~placement.core.instance.schema`, its field types, user-defined chips), reading it
(:mod:`~placement.core.instance.loading`, bounded documents), fields by path (``--set``, sweeps), the
calibration overlay an instance names, and the context of one solve
(:mod:`~placement.core.instance.context`: catalogue, fleet graph, sites, routing), with the fleet left
after failed domains and the groups that cannot reach each other. The package's errors and exit codes
(:mod:`~placement.core.instance.errors`) are here too: bad input is where most are raised, and every
room raises them, so they sit in the bottom room.

Objectives and session classes live here because the format names them: the schema validates an
instance's ``objective`` against the registered objectives and its ``sessions`` against the session
records, so they sit below the schema. This room imports no other room.
"""
