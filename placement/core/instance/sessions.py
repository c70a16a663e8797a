"""Agentic sessions and KV-cache tiers: the records of an instance and the gap statistics behind retention.

A session (seed 000; TraceLab, arXiv 2606.30560) is a chain of *requests*
(each started by a human) made of *steps* (LLM calls, each but the last of a
request followed by a tool call). Every LLM call of a session class reads the
session's prefix from the KV cache, if the cache still holds it. After a call
its KV sits idle for a *gap*:

* a tool gap (next step of the same request) with probability (S − 1)/S,
* a human think time (next request) with probability (1/S)·(1 − 1/R),
* forever (last call of the session) with probability 1/(S·R),

S = mean steps per request, R = mean requests per session. These weights are
exact in aggregate: the share of calls that end a request is (#requests /
#calls) = 1/S, and of those the share that end a session is 1/R.

A retention policy keeps the KV in one tier for a window T after each call.
With G the gap of the mixture above:

* hit probability h(T) = P(G ≤ T) (a gap of the "forever" kind never hits);
* expected residence per call E[min(G, T)] = ∫₀ᵀ P(G > t) dt; by Little's
  law a class of λ calls/s under the policy holds λ·E[min(G, T)]·B bytes,
  B the KV bytes of one session's context.

Gap distributions are lognormal from a mean and a median (μ = ln median,
σ² = 2·ln(mean/median); the tails matter: the seed's mean/median ≈ 15 gives
σ ≈ 2.3), exponential from a mean, or empirical quantiles (CDF linear in
log time between the points, linear from 0 below the first; the mass above
the last point is taken as never returning within any window up to it, which
is exact for windows not beyond the last point).

Examples
--------
>>> g = Gap(kind="exponential", mean_s=60.0)
>>> round(hit_probability(g, 60.0), 4), round(expected_min_s(g, 60.0), 3)
(0.6321, 37.927)
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from topology.records import Record

__all__ = [
    "RETENTION_WINDOWS_S",
    "TIERS",
    "Gap",
    "KvTierSpec",
    "Sessions",
    "call_gap_mix",
    "expected_min_s",
    "hit_probability",
    "mean_prefix_tokens",
    "session_hit_and_residence",
]

#: Memory tiers a domain group may add to its HBM (``hbm`` is implicit: every chip has it).
TIERS = ("host", "flash", "remote")

#: Retention windows offered to the optimizer, seconds (1, 5, 15, 60 min, 4 h).
RETENTION_WINDOWS_S = (60.0, 300.0, 900.0, 3600.0, 14400.0)

#: Points of the numerical integral of an empirical survival function (log-spaced; deterministic).
_GRID_POINTS = 4001

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Gap(Record):
    """A distribution of idle gaps, seconds.

    ``lognormal``: ``mean_s`` and ``median_s`` (mean ≥ median); ``exponential``:
    ``mean_s``; ``empirical``: ``quantiles`` as {probability: seconds}, both increasing.

    Examples
    --------
    >>> Gap(kind="lognormal", mean_s=1500.0, median_s=100.0).sigma > 2.3
    True
    """

    kind: Literal["lognormal", "exponential", "empirical"]
    mean_s: Positive | None = None
    median_s: Positive | None = None
    quantiles: dict[Annotated[float, Field(gt=0, le=1)], Positive] | None = None

    @model_validator(mode="after")
    def _complete(self) -> Gap:
        need = {"lognormal": ("mean_s", "median_s"), "exponential": ("mean_s",), "empirical": ("quantiles",)}
        missing = [f for f in need[self.kind] if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.kind} gap needs {', '.join(missing)}")
        if self.kind == "lognormal" and self.mean_s < self.median_s:
            raise ValueError("a lognormal gap has mean_s ≥ median_s")
        if self.kind == "empirical":
            ts = [t for _, t in sorted(self.quantiles.items())]
            if any(b <= a for a, b in pairwise(ts)):
                raise ValueError("empirical quantiles must increase with the probability")
        return self

    @property
    def sigma(self) -> float:
        """σ of a lognormal gap: √(2·ln(mean/median))."""
        return math.sqrt(2.0 * math.log(self.mean_s / self.median_s))

    def cdf(self, t_s: float) -> float:
        """P(gap ≤ t)."""
        if t_s <= 0:
            return 0.0
        if self.kind == "exponential":
            return 1.0 - math.exp(-t_s / self.mean_s)
        if self.kind == "lognormal":
            s = self.sigma
            if s == 0:
                return float(t_s >= self.median_s)
            return 0.5 * math.erfc(-(math.log(t_s / self.median_s)) / (s * math.sqrt(2.0)))
        ps, ts = zip(*sorted(self.quantiles.items()), strict=True)
        if t_s <= ts[0]:
            return ps[0] * t_s / ts[0]
        if t_s >= ts[-1]:
            return ps[-1]
        return float(np.interp(math.log(t_s), np.log(ts), ps))


def hit_probability(gap: Gap, window_s: float) -> float:
    """P(gap ≤ window): the share of reuses a window of ``window_s`` catches."""
    return gap.cdf(window_s)


def expected_min_s(gap: Gap, window_s: float) -> float:
    """E[min(gap, T)] = ∫₀ᵀ P(gap > t) dt, seconds.

    Exponential: m·(1 − e^(−T/m)). Lognormal: E[G; G ≤ T] + T·P(G > T), with
    E[G; G ≤ T] = e^(μ+σ²/2)·Φ((ln T − μ − σ²)/σ). Empirical: the integral on
    a fine log grid (trapezoids) plus the linear part below the first point.

    Examples
    --------
    >>> g = Gap(kind="lognormal", mean_s=10.0, median_s=5.0)
    >>> round(expected_min_s(g, 1e9), 6)   # a window far beyond every gap: the mean
    10.0
    """
    if window_s <= 0:
        return 0.0
    if gap.kind == "exponential":
        return gap.mean_s * (1.0 - math.exp(-window_s / gap.mean_s))
    if gap.kind == "lognormal":
        s, mu = gap.sigma, math.log(gap.median_s)
        if s == 0:
            return min(gap.median_s, window_s)
        phi = 0.5 * math.erfc(-((math.log(window_s) - mu - s * s) / s) / math.sqrt(2.0))
        return gap.mean_s * phi + window_s * (1.0 - gap.cdf(window_s))
    p1 = min(gap.quantiles)
    first = gap.quantiles[p1]
    low = min(first, window_s)
    total = low - p1 * low * low / (2.0 * first)
    if window_s > first:
        t = np.geomspace(first, window_s, _GRID_POINTS)
        surv = 1.0 - np.array([gap.cdf(x) for x in t])
        total += float(np.sum((surv[1:] + surv[:-1]) * np.diff(t)) / 2.0)
    return total


class Sessions(Record):
    """How a class's calls form sessions (TraceLab / seed 000 vocabulary).

    ``steps_per_request`` S and ``requests_per_session`` R are means;
    ``tool_gap`` is the time between two steps of a request (tool execution),
    ``think_time`` the human wait between requests. ``prefix_growth_tokens_per_step``
    g: each call appends its new input and output to the context, so with it the
    class's ``cached_prefix_tokens`` is the prefix of a session's first call and
    every later call reads g more tokens (:func:`mean_prefix_tokens`).
    """

    steps_per_request: float = Field(ge=1, le=1e4)
    requests_per_session: float = Field(ge=1, le=1e6)
    tool_gap: Gap
    think_time: Gap
    prefix_growth_tokens_per_step: float = Field(default=0.0, ge=0, le=1e7)


def mean_prefix_tokens(first_prefix_tokens: float, s: Sessions) -> float:
    """Mean prefix over the calls of a session whose prefix grows by g tokens per call, tokens.

    Call i (i = 0 … N − 1, N = S·R calls per session) reads P₀ + i·g, so the
    mean over the session is P₀ + g·(N − 1)/2 (closed form; N need not be an
    integer, the mean of the arithmetic sequence is linear in N). KV held,
    reloaded and recomputed per call are the KV of this mean prefix: gaps do
    not depend on the call's position, so E[bytes·min(G, T)] = E[bytes]·E[min(G, T)].

    Examples
    --------
    >>> s = Sessions(steps_per_request=9, requests_per_session=9.2, prefix_growth_tokens_per_step=1089,
    ...              tool_gap=Gap(kind="exponential", mean_s=10), think_time=Gap(kind="exponential", mean_s=60))
    >>> round(mean_prefix_tokens(74460, s), 1)   # 74,460 + 1,089·(82.8 − 1)/2
    119000.1
    """
    calls = s.steps_per_request * s.requests_per_session
    return first_prefix_tokens + s.prefix_growth_tokens_per_step * (calls - 1.0) / 2.0


def call_gap_mix(s: Sessions) -> tuple[float, float, float]:
    """Weights (tool gap, think time, never) of the gap after one call (module docstring).

    Examples
    --------
    >>> s = Sessions(steps_per_request=9, requests_per_session=9.2,
    ...              tool_gap=Gap(kind="exponential", mean_s=10), think_time=Gap(kind="exponential", mean_s=60))
    >>> [round(w, 4) for w in call_gap_mix(s)]
    [0.8889, 0.099, 0.0121]
    """
    tool = (s.steps_per_request - 1.0) / s.steps_per_request
    end = 1.0 / (s.steps_per_request * s.requests_per_session)
    return tool, 1.0 - tool - end, end


def session_hit_and_residence(s: Sessions, window_s: float) -> tuple[float, float]:
    """(hit probability, E[min(gap, T)] in seconds) of one call of a session class under window T.

    Examples
    --------
    >>> s = Sessions(steps_per_request=1, requests_per_session=1e6,
    ...              tool_gap=Gap(kind="exponential", mean_s=1), think_time=Gap(kind="exponential", mean_s=60))
    >>> h, r = session_hit_and_residence(s, 60.0)
    >>> round(h, 4), round(r, 3)
    (0.6321, 37.927)
    """
    tool, human, end = call_gap_mix(s)
    hit = tool * hit_probability(s.tool_gap, window_s) + human * hit_probability(s.think_time, window_s)
    resid = (tool * expected_min_s(s.tool_gap, window_s) + human * expected_min_s(s.think_time, window_s)
             + end * window_s)
    return hit, resid


class KvTierSpec(Record):
    """A memory tier of a domain group beside its HBM; missing fields come from the catalogue
    (:mod:`costmodels.kvtiers`) for the group's chip.

    ``capacity_gb`` per scale-up domain; ``bandwidth_gb_per_s`` per chip (each chip's link to the tier:
    PCIe, NVLink-C2C, NIC) for reads, ``write_gb_per_s`` per chip for offloads (a drive writes slower
    than it reads); ``latency_us`` before the first byte; ``usd_per_gb_hour`` the holding price.
    ``node`` (remote tier only): the fleet node (a switch) the store hangs off — reloads flow from it
    and offloads to it over the fleet's links, which they share with every other transfer.
    """

    tier: Literal["host", "flash", "remote"]
    capacity_gb: Positive | None = Field(default=None, le=1e9)
    bandwidth_gb_per_s: Positive | None = Field(default=None, le=1e7)
    write_gb_per_s: Positive | None = Field(default=None, le=1e7)
    node: str | None = None
    latency_us: float | None = Field(default=None, ge=0, le=1e8)
    usd_per_gb_hour: float | None = Field(default=None, ge=0, le=100)
