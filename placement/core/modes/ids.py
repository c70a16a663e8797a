"""Typed names of routes and steps: ``class|mode`` and ``class|mode|stage``.

The solver knows routes and steps by these strings (columns serve steps,
demands are met along routes, transfers join two steps of a route); they
appear in plans as keys of ``load_rps`` and ``capacity_rps_per_replica``.
Every string is made by ``str()`` of a :class:`RouteId` or :class:`StepId`
and read back by their ``parse``; class and mode names never contain ``|``
(class names are checked by the schema, mode names by
:func:`placement.core.modes.registry.register`).

Examples
--------
>>> from placement.core.modes.ids import RouteId, StepId
>>> step = StepId("chat", "pd", "decode")
>>> str(step), str(step.route)
('chat|pd|decode', 'chat|pd')
>>> StepId.parse("chat|pd+draft|prefill")
StepId(traffic_class='chat', mode='pd+draft', stage='prefill')
>>> RouteId.parse("chat|pd-af").step("decode")
StepId(traffic_class='chat', mode='pd-af', stage='decode')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SEPARATOR", "RouteId", "StepId"]

SEPARATOR = "|"


def _fields(text: str, count: int, what: str) -> list[str]:
    parts = text.split(SEPARATOR)
    if len(parts) != count or not all(parts):
        raise ValueError(f"expected a {what} id of {count} non-empty fields joined by {SEPARATOR!r}, got {text!r}")
    return parts


@dataclass(frozen=True, order=True)
class RouteId:
    """How one class is served in one mode: the solver's route ``class|mode``."""

    traffic_class: str
    mode: str

    def __str__(self) -> str:
        return f"{self.traffic_class}{SEPARATOR}{self.mode}"

    @classmethod
    def parse(cls, text: str) -> RouteId:
        """The route named by ``text`` (``ValueError`` if it is not ``class|mode``)."""
        return cls(*_fields(text, 2, "route"))

    def step(self, stage: str) -> StepId:
        """The step of this route that runs ``stage``."""
        return StepId(self.traffic_class, self.mode, stage)

    def transfer(self, name: str) -> str:
        """The solver's name of a transfer between two steps of this route (``class|mode|kv``)."""
        return f"{self}{SEPARATOR}{name}"


@dataclass(frozen=True, order=True)
class StepId:
    """One step of a route: a stage of a class served in a mode, ``class|mode|stage``."""

    traffic_class: str
    mode: str
    stage: str

    def __str__(self) -> str:
        return f"{self.traffic_class}{SEPARATOR}{self.mode}{SEPARATOR}{self.stage}"

    @classmethod
    def parse(cls, text: str) -> StepId:
        """The step named by ``text`` (``ValueError`` if it is not ``class|mode|stage``)."""
        return cls(*_fields(text, 3, "step"))

    @property
    def route(self) -> RouteId:
        return RouteId(self.traffic_class, self.mode)
