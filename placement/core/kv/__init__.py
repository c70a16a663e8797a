"""The KV cache across a plan: session classes, retention across tiers, and where KV travels.

:mod:`~placement.core.kv.kvmodel` expands session classes into outcome classes (hit or miss per tier),
:mod:`~placement.core.kv.kvplan` states a plan's KV tiers and their use, and
:mod:`~placement.core.kv.kv_feeds` derives which prefill pool feeds which decode pool from a plan's
loads and KV flows. The session records themselves are the instance format's
(:mod:`placement.core.instance.sessions`).

Imports: the instance, replica and plan rooms.
"""
