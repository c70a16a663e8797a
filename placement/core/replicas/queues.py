"""Queues in front of a replica: how a class's TTFT budget is shared, each queue's capacity, and its waits.

The queue formulas are :mod:`costmodels.queueing`'s; this module applies them to a class.
A class's TTFT is the wait for a
prefill step + the prefill + the KV transfer + the wait for a decode slot
(aggregated: the wait for the chunked-prefill channel + ⌈p/C⌉ steps + the
wait for a slot). The budget is shared at a stated ratio so that every
column's capacity stays a constant of its own: the wait for a slot gets
:data:`ADMISSION_SHARE` of the TTFT SLO, everything before it the rest::

    W_prefill + L_prefill ≤ (1 − s)·SLO,    W_slot ≤ s·SLO

For a mean SLO the two add up to at most the SLO. For a percentile p the
two waits are each held to tail mass (1 − p)/2, so by the union bound
P(TTFT > SLO) ≤ 1 − p. Each capacity is the highest arrival rate whose wait
meets its part of the budget, with utilisation at most
:data:`MAX_UTILISATION`. Evaluated alone, a configuration's TTFT is its
part, waits included, at that rate — the worst its load may bring; within
:func:`at_load` the waits are those at the plan's own arrival rate per replica
(what a plan reports for its pools and classes).

When lengths vary (``prompt_lengths``, ``output_lengths``), a percentile TTFT has a third part, the
prompt's own latency at its tail length (:func:`ttft_tail`, :func:`prompt_tail_ratio`), and the waits
take the service and hold variance.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from costmodels import bulk_max_rate_per_s, bulk_wait_s, slot_max_rate_per_s, slot_wait_s

if TYPE_CHECKING:
    from placement.core.instance.schema import TrafficClass

__all__ = [
    "ADMISSION_SHARE",
    "MAX_UTILISATION",
    "MIN_SLOT_UTILISATION",
    "Load",
    "at_load",
    "prefill_queue",
    "prompt_tail_ratio",
    "slot_admission",
    "ttft_tail",
]

#: Ceiling on a server's (prefill step or decode slots) utilisation whatever the queueing bound allows:
#: arrivals are burstier than Poisson in practice and the bounds → 1 as SLO → ∞.
MAX_UTILISATION = 0.9

#: Share of a class's TTFT SLO given to the wait for a decode slot (the rest: prefill wait + prefill + transfer).
ADMISSION_SHARE = 0.1

#: Slot configurations whose admission wait allows less than this utilisation are refused: a replica kept
#: mostly idle to meet the wait (one slot held for minutes against a budget of ms) is never the cheap way to
#: serve, and its capacity, orders of magnitude below its hardware's, would widen the MILP's coefficient span.
MIN_SLOT_UTILISATION = 0.25


def ttft_tail(cls: TrafficClass) -> float | None:
    """Tail mass each part of a percentile TTFT may exceed its budget with: None for a mean SLO.

    Two waits (prefill, slot) take (1 − p)/2 each; when prompt lengths vary the prompt's own
    latency is a third part, taken at its (1 − (1 − p)/3) length quantile
    (:func:`prompt_tail_ratio`), and each part gets (1 − p)/3: by the union bound
    P(TTFT > SLO) ≤ 1 − p.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> ttft_tail(NS(slo_percentile="p90", prompt_squared_cv=0.0)), ttft_tail(NS(slo_percentile="mean"))
    (0.05, None)
    >>> round(ttft_tail(NS(slo_percentile="p90", prompt_squared_cv=0.25)), 6)
    0.033333
    """
    p = cls.slo_percentile
    if p == "mean":
        return None
    return (100.0 - float(p[1:])) / (300.0 if cls.prompt_squared_cv > 0 else 200.0)


def prompt_tail_ratio(cls: TrafficClass) -> float:
    """The prompt length a percentile TTFT is held at, over the mean prompt: its (1 − tail) quantile
    (:func:`ttft_tail`); 1 for a mean SLO or prompts all the same.

    The prompt's latency (prefill, transfer, the framework's) is scaled by this ratio — linear in
    the prompt, conservative for its fixed parts; attention's quadratic part is not scaled further.
    Never below 1: the step a prompt waits for carries prompts of every length.

    Examples
    --------
    >>> from placement.core.instance.schema import TrafficClass
    >>> c = TrafficClass(name="c", rate_rps=1, prompt_tokens=200, output_tokens=10, ttft_ms=1000, tpot_ms=50,
    ...                  slo_percentile="p90", prompt_lengths={"histogram": [[100, 1], [300, 1]]})
    >>> prompt_tail_ratio(c)
    1.5
    """
    tail = ttft_tail(cls)
    return 1.0 if tail is None or cls.prompt_squared_cv == 0 else max(cls.prompt_quantile_ratio(1.0 - tail), 1.0)


@dataclass
class Load:
    """A replica's arrival rate (req/s) and, once evaluated at it, the busiest of its servers' busy fraction
    (the physical utilisation: a prefill step's λ·I/b, the decode slots' λ·H/B)."""

    rate_rps: float
    busy: float = 0.0


#: The load :func:`at_load` reports waits at; None: at each queue's capacity.
_LOAD: ContextVar[Load | None] = ContextVar("load", default=None)


@contextmanager
def at_load(rate_rps: float) -> Iterator[Load]:
    """Within: the queues of an evaluation report their waits at ``rate_rps`` arrivals per replica (a
    plan's load) instead of at their capacity, and record how busy each server is there
    (:class:`Load`); capacities are unchanged. A load above a queue's capacity is taken at its capacity.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> cls = NS(ttft_s=100.0, slo_percentile="mean", prompt_squared_cv=0.0)
    >>> with at_load(0.45) as load:   # half the capacity: M/D/1 wait ρS/(2(1 − ρ)) = 0.45/1.1
    ...     [round(float(x), 4) for x in prefill_queue(1.0, 1.0, 1.0, cls)]
    [0.9, 1.4091]
    >>> load.busy
    0.45
    """
    load = Load(float(rate_rps))
    token = _LOAD.set(load)
    try:
        yield load
    finally:
        _LOAD.reset(token)


def _waited_at(capacity_rps, channels=1.0):
    """The rate per queue the waits are reported at: its capacity, or the :func:`at_load` rate shared by
    ``channels`` identical queues (no more than the capacity)."""
    load = _LOAD.get()
    return capacity_rps if load is None else np.minimum(capacity_rps, load.rate_rps / np.asarray(channels, dtype=float))


def _record_busy(rate_rps, service_s, servers) -> None:
    """Within :func:`at_load`: the busiest server's fraction of time busy, λ·S/c, kept on the load."""
    if (load := _LOAD.get()) is not None:
        busy = np.asarray(rate_rps, dtype=float) * np.asarray(service_s, dtype=float) / np.asarray(servers, dtype=float)
        load.busy = max(load.busy, float(np.max(busy, initial=0.0)))


def prefill_queue(interval_s, latency_s, batch, cls: TrafficClass, channels=1.0) -> tuple[np.ndarray, np.ndarray]:
    """(capacity req/s, TTFT part s) of a server admitting up to ``batch`` prompts per ``interval_s``.

    The prompt waits W (:func:`costmodels.bulk_wait_s`), then takes
    ``latency_s`` (prefill + transfer); capacity = the highest rate with
    W + latency ≤ (1 − ADMISSION_SHARE)·SLO and utilisation ≤ MAX_UTILISATION.
    The TTFT part is at that rate, or at the :func:`at_load` rate shared by the replica's ``channels``
    such servers.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cls = SimpleNamespace(ttft_s=100.0, slo_percentile="mean", prompt_squared_cv=0.0)
    >>> [round(float(x), 6) for x in prefill_queue(1.0, 1.0, 1.0, cls)]   # a long SLO: capped at MAX_UTILISATION
    [0.9, 5.5]
    >>> [float(x) for x in prefill_queue(1.0, 2.0, 1.0, SimpleNamespace(**{**vars(cls), "ttft_s": 2.0}))]
    [0.0, 2.0]
    """
    interval_s = np.asarray(interval_s, dtype=float)
    batch = np.asarray(batch, dtype=float)
    tail = ttft_tail(cls)
    latency_s = np.asarray(latency_s, dtype=float) * prompt_tail_ratio(cls)
    cv2 = cls.prompt_squared_cv / batch  # a step of b prompts: the variance of their sum
    budget = (1.0 - ADMISSION_SHARE) * cls.ttft_s - latency_s
    rate = np.minimum(bulk_max_rate_per_s(interval_s, batch, budget, tail, cv2), MAX_UTILISATION * batch / interval_s)
    rate = np.where(budget > 0, rate, 0.0)
    at = _waited_at(rate, channels)
    _record_busy(at, interval_s, batch)
    return rate, latency_s + np.asarray(bulk_wait_s(interval_s, batch, at, tail, cv2))


def slot_admission(slots, hold_s, cls: TrafficClass) -> tuple[np.ndarray, np.ndarray]:
    """(capacity req/s, wait s) of ``slots`` decode slots each held ``hold_s``, the wait ≤ ADMISSION_SHARE·SLO
    (the wait at capacity, or at the :func:`at_load` rate).

    :func:`costmodels.slot_max_rate_per_s` (M/D/c mean, M/M/c tail) at
    utilisation ≤ MAX_UTILISATION; 0 below MIN_SLOT_UTILISATION.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> rate, wait = slot_admission(64, 10.0, SimpleNamespace(ttft_s=5.0, slo_percentile="mean", output_squared_cv=0.0))
    >>> round(float(rate), 3), round(float(wait), 3)
    (5.76, 0.269)
    """
    slots = np.asarray(slots)
    rate, wait = slot_max_rate_per_s(slots, hold_s, ADMISSION_SHARE * cls.ttft_s, ttft_tail(cls),
                                     max_utilisation=MAX_UTILISATION, hold_squared_cv=cls.output_squared_cv)
    rate = np.where(np.asarray(rate) * hold_s >= MIN_SLOT_UTILISATION * slots * (1 - 1e-12), rate, 0.0)
    if _LOAD.get() is not None:
        at = _waited_at(rate)
        _record_busy(at, hold_s, slots)
        wait = np.where(rate > 0, slot_wait_s(slots, hold_s, at, ttft_tail(cls),
                                              hold_squared_cv=cls.output_squared_cv), 0.0)
    return np.asarray(rate, dtype=float), np.asarray(wait, dtype=float)
