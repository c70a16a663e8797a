"""A time limit that bounds the whole solve: candidate generation first, the solver gets what is left.

:func:`bounded` interrupts a phase (candidate generation) when the limit runs out
during it, with SIGALRM — only in the main thread and only when nobody else
owns SIGALRM (a harness with its own alarm keeps it; the limit is then checked
after the phase). :func:`left_after` is what remains for the solver, or a
:class:`TimeLimitError` (exit 4, "a time limit with no plan") naming the phase
that used it all.

Examples
--------
>>> import time
>>> began = time.monotonic()
>>> 0.9 < left_after(1.0, began, "candidate generation") <= 1.0
True
>>> left_after(None, began, "candidate generation") is None
True
>>> left_after(1e-9, began - 1, "candidate generation")
Traceback (most recent call last):
...
placement.core.pipeline.deadline.TimeLimitError: the time limit of 1e-09 s ran out during candidate generation, before the solver started; give a larger --time-limit
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from placement.core.instance.errors import SolverError

__all__ = ["TimeLimitError", "bounded", "left_after"]


class TimeLimitError(SolverError):
    """The time limit ran out before the solver could start (exit 4: a time limit with no plan)."""


def _spent(limit_s: float, phase: str) -> TimeLimitError:
    return TimeLimitError(f"the time limit of {limit_s:g} s ran out during {phase}, before the solver started; "
                          "give a larger --time-limit")


def left_after(limit_s: float | None, began: float, phase: str) -> float | None:
    """Seconds of ``limit_s`` left since ``began`` (``time.monotonic()``); raises when none are."""
    if limit_s is None:
        return None
    left = limit_s - (time.monotonic() - began)
    if left <= 0:
        raise _spent(limit_s, phase)
    return left


@contextmanager
def bounded(limit_s: float | None, began: float, phase: str) -> Iterator[None]:
    """Raise :class:`TimeLimitError` inside the block when ``limit_s`` since ``began`` runs out."""
    usable = (limit_s is not None and threading.current_thread() is threading.main_thread()
              and hasattr(signal, "setitimer") and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None))
    if not usable:
        yield
        return
    left = left_after(limit_s, began, phase)

    def expire(signum, frame):
        raise _spent(limit_s, phase)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
