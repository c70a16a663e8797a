"""One job of an executor (:mod:`placement.studies.executor`, :mod:`placement.studies.ray_executor`):
``call`` runs it and turns what it raises into a failed :class:`Outcome`.

Examples
--------
>>> call(abs, 0, -2), call(int, 1, "x").ok
(Outcome(index=0, value=2, error=None), False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome", "call"]


@dataclass(frozen=True)
class Outcome:
    """What one job gave: its value, or the error that stopped it."""

    index: int
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def call(fn: Callable, index: int, item: Any) -> Outcome:
    """``fn(item)`` as the outcome of job ``index``: its value, or the error it raised."""
    try:
        return Outcome(index, fn(item))
    except Exception as e:  # noqa: BLE001 - a failed point is reported, not raised
        return Outcome(index, error=f"{type(e).__name__}: {e}")
