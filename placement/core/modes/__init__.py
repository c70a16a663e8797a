"""The vocabulary of serving modes: what a mode is, which are registered, and what the enabled ones offer.

What the rest of ``placement.core`` reads of a serving mode: its records
(:mod:`~placement.core.modes.base`: :class:`~placement.core.modes.base.ServingMode`,
:class:`~placement.core.modes.base.PoolKind`, :class:`~placement.core.modes.base.Grid`,
:class:`~placement.core.modes.base.GridSet`, transfers and shared columns), the typed route and step
ids (:mod:`~placement.core.modes.ids`), the registry and the validators that read it
(:mod:`~placement.core.modes.registry`), and what the modes an instance allows offer it: their grids
and transfers (:mod:`~placement.core.modes.enabled`).

The modes themselves are written in :mod:`placement.modes` (a module each), which imports this room
and the evaluator; this room imports none of them. The registry fills itself on its first lookup by
importing the built-in modes' modules by name, then the modes other packages declare as entry points
(:data:`~placement.core.modes.registry.ENTRY_POINT_GROUP`), so no import runs from core to the modes.

It is the bottom room: the instance schema validates an instance's ``modes`` against the registry, so
it sits below the instance room, and it imports no other room.
"""
