"""Which domain indices each replica of a plan occupies, and placing a re-plan's replicas around kept ones.

A plan lists, per pool and domain group, the set of domain indices its
replicas use, not which replica sits where. :func:`replica_slots` recovers a
per-replica assignment the way the verifier checks one
(:func:`placement.core.verify.fleet.assign_in_listed_domains`: largest
replicas first, first fit in the listed domains), which for a plan packed by
:func:`solvers.packing.pack_into_domains` is exactly its packing.

:func:`place_around` puts a re-plan's replicas into a group: the replicas
kept stay on their domains, the new ones go largest first, first fit, into
the free room of healthy domains (a replica larger than a domain needs
consecutive, whole, free, healthy domains). The MILP bounds the group by its
healthy chips only; kept replicas can leave the free room fragmented, so
placing can fail where the bound holds — the caller then re-packs the group
from scratch and says so.

Examples
--------
>>> replica_slots(8, 2, {"a": (4, 3, [0, 1]), "b": (8, 1, [1])})
>>> replica_slots(8, 2, {"a": (4, 2, [0]), "b": (8, 1, [1])})
{'b': [(1,)], 'a': [(0,), (0,)]}
>>> place_around(8, [0, 1, 2], {"a": (4, [(0,)])}, {"b": (8, 1), "a": (4, 1)})
{'a': [(0,), (0,)], 'b': [(1,)]}
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

__all__ = ["Slot", "place_around", "replica_slots"]

#: The domain indices one replica occupies (one, or consecutive whole domains).
Slot = tuple[int, ...]


def _fits(free: dict[int, int], run: list[int], units: int, size_d: int) -> bool:
    if units <= size_d:
        return free.get(run[0], 0) >= units
    return run[-1] - run[0] == len(run) - 1 and all(free.get(d, 0) == size_d for d in run)


def replica_slots(size_d: int, count: int, sizes: Mapping[Hashable, tuple[int, int, list[int]]],
                  ) -> dict[Hashable, list[Slot]] | None:
    """Per key, the domains each replica occupies, or None if the listed domains cannot host them.

    ``sizes``: key -> (chips per replica, replicas, listed domain indices) in a group of ``count``
    domains of ``size_d`` chips.
    """
    free = dict.fromkeys(range(count), size_d)
    out: dict[Hashable, list[Slot]] = {}
    for key, (units, n, listed) in sorted(sizes.items(), key=lambda kv: (-kv[1][0], str(kv[0]))):
        listed = sorted(set(listed))
        span = -(-units // size_d)
        slots: list[Slot] = []
        at = 0
        for _ in range(n):
            while at + span <= len(listed) and not _fits(free, listed[at:at + span], units, size_d):
                at += 1
            if at + span > len(listed):
                return None
            run = listed[at:at + span]
            for d in run:
                free[d] -= min(units, size_d)
            slots.append(tuple(run))
        out[key] = slots
    return out


def place_around(size_d: int, healthy: list[int], kept: Mapping[Hashable, tuple[int, list[Slot]]],
                 new: Mapping[Hashable, tuple[int, int]]) -> dict[Hashable, list[Slot]] | None:
    """Kept replicas where they are, new ones first fit in the free healthy room; None if they do not fit.

    ``kept``: key -> (chips per replica, slots kept); ``new``: key -> (chips per replica, replicas to add).
    """
    free = dict.fromkeys(healthy, size_d)
    out: dict[Hashable, list[Slot]] = {}
    for key, (units, slots) in kept.items():
        for slot in slots:
            for d in slot:
                free[d] = free.get(d, 0) - min(units, size_d)
        out[key] = list(slots)
    if any(f < 0 for f in free.values()):
        return None
    for key, (units, n) in sorted(new.items(), key=lambda kv: (-kv[1][0], str(kv[0]))):
        span = -(-units // size_d)
        for _ in range(n):
            run = next((healthy[i:i + span] for i in range(len(healthy) - span + 1)
                        if _fits(free, healthy[i:i + span], units, size_d)), None)
            if run is None:
                return None
            for d in run:
                free[d] -= min(units, size_d)
            out.setdefault(key, []).append(tuple(run))
    return out
