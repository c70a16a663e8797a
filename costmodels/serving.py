"""Serving-level formulas: aggregated chunked-prefill serving,
balanced decode batch, economics.

Examples
--------
>>> round(usd_per_million_tokens(2.95, 1000.0), 3)
0.819
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodels.arrays import as_result
from costmodels.models import BYTES_PER_VALUE, ModelSpec
from costmodels.roofline import FLOPS_PER_MAC, aggregated_step, decode_step
from topology.chips import ChipSpec

__all__ = [
    "SECONDS_PER_HOUR",
    "AggregatedServing",
    "aggregated_serving",
    "optimal_batch_closed_form",
    "optimal_decode_batch",
    "power_w",
    "tokens_per_s_per_mw",
    "usd_per_hour",
    "usd_per_million_tokens",
]

SECONDS_PER_HOUR = 3600.0
_TOKENS_PER_MILLION = 1e6
_WATTS_PER_MW = 1e6
#: Batch search range for the roofline crossing (1 … 10⁷ sequences) and bisection steps.
_BATCH_SEARCH_LOG10 = (0.0, 7.0)
_BISECTION_STEPS = 60


# ---- economics -------------------------------------------------------------------


def usd_per_hour(chip: ChipSpec, chips):
    """$/h of ``chips`` chips: chips × chip.usd_per_hour (sum over pools for a fleet)."""
    return as_result(np.asarray(chips, dtype=float) * chip.usd_per_hour)


def power_w(chip: ChipSpec, chips):
    """Power of ``chips`` chips: chips × chip.power_w."""
    return as_result(np.asarray(chips, dtype=float) * chip.power_w)


def usd_per_million_tokens(usd_per_hour_, tokens_per_s):
    """$ per million tokens: $/h ÷ (tokens/s · 3600) · 10⁶ (∞ at zero throughput).

    Examples
    --------
    >>> usd_per_million_tokens(3.6, 1.0)
    1000.0
    """
    tps = np.asarray(tokens_per_s, dtype=float)
    with np.errstate(divide="ignore"):
        return as_result(np.asarray(usd_per_hour_, dtype=float) / (tps * SECONDS_PER_HOUR) * _TOKENS_PER_MILLION)


def tokens_per_s_per_mw(tokens_per_s, power_w_):
    """Throughput per megawatt: tokens/s ÷ (W / 10⁶).

    Examples
    --------
    >>> tokens_per_s_per_mw(700.0, 700.0)
    1000000.0
    """
    return as_result(np.asarray(tokens_per_s, dtype=float) / (np.asarray(power_w_, dtype=float) / _WATTS_PER_MW))


# ---- the balanced batch ------------------------------------------------------------


def optimal_decode_batch(chip: ChipSpec, model: ModelSpec, precision: str = "bf16", *, context: float = 0.0,
                         kv_precision: str | None = None) -> float:
    """Decode batch where the roofline's compute time equals its memory time.

    Found numerically from :func:`decode_step` (tp = pp = 1; both sides scale
    alike with tp): a log-spaced scan for the sign change of compute − memory,
    then bisection in log B. Below it a step is memory-bound (tokens get
    cheaper as B grows), above it compute-bound. ``context`` adds the KV term
    (at 0: weights only, seed 003's setting). Returns ``inf`` when the step
    never becomes compute-bound (long contexts: KV grows as fast as FLOPs).

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> round(optimal_decode_batch(h100(), llama_70b()))
    258
    """
    def gap(b):
        st = decode_step(chip, model, batch=b, context=context, precision=precision, kv_precision=kv_precision)
        return np.asarray(st.compute_s) - np.asarray(st.memory_s)

    grid = np.logspace(*_BATCH_SEARCH_LOG10, 141)
    g = gap(grid)
    if g[0] >= 0:
        return 1.0
    above = np.nonzero(g >= 0)[0]
    if above.size == 0:
        return float("inf")
    lo, hi = np.log(grid[above[0] - 1]), np.log(grid[above[0]])
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if gap(float(np.exp(mid))) >= 0:
            hi = mid
        else:
            lo = mid
    return float(np.exp(0.5 * (lo + hi)))


def optimal_batch_closed_form(chip: ChipSpec, model: ModelSpec, precision: str = "bf16", *,
                              use_efficiencies: bool = True) -> float:
    """Seed 003's balanced batch: ridge × total/active parameters.

    The step is balanced when 2·B·N_active/F = N_total·b_w/BW, i.e.::

        B* = ridge · (b_w / 2) · N_total / N_active

    (ridge × sparsity at BF16, b_w = 2). ``use_efficiencies`` uses the
    achievable ridge F·η_c/(BW·η_m), as :func:`optimal_decode_batch` does,
    and the chip's operating point (:mod:`costmodels.efficiency`): the step
    moves ``x½`` more bytes and its GEMMs run as if ``t½`` rows longer, so
    ``B* = ridge_eff · (N_total·b_w + x½) / (2·N_active) − t½`` (one chip).
    Assumes every expert is touched at B* and no KV traffic.

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> round(optimal_batch_closed_form(h100(), llama_70b(), use_efficiencies=False))
    295
    """
    ridge = chip.ridge_flop_per_byte(precision)
    if use_efficiencies:
        ridge *= chip.compute_efficiency / chip.memory_efficiency
        if chip.memory_half_bytes or chip.compute_half_tokens:
            weight_bytes = model.total_params * BYTES_PER_VALUE[precision] + chip.memory_half_bytes
            return float(ridge * weight_bytes / FLOPS_PER_MAC / model.active_params - chip.compute_half_tokens)
    return float(ridge * BYTES_PER_VALUE[precision] / FLOPS_PER_MAC * model.total_params / model.active_params)


# ---- aggregated (chunked prefill) serving ---------------------------------------------


@dataclass(frozen=True)
class AggregatedServing:
    """Steady state of one aggregated replica (arrays broadcast over the inputs).

    ``step_s`` is also the TPOT; ``ttft_service_s`` excludes queueing (see
    :func:`costmodels.queueing.md1_max_utilisation`); ``requests_per_s`` is the replica's capacity.
    """

    step_s: object
    chunk_tokens: object
    ttft_service_s: object
    requests_per_s: object
    output_tokens_per_s: object


def aggregated_serving(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    prompt,
    output,
    batch,
    token_budget,
    cached=0,
    tp=1,
    ep=1,
    pp=1,
    precision: str = "bf16",
    kv_precision: str | None = None,
) -> AggregatedServing:
    """Capacity of an aggregated replica running chunked prefill, decode first.

    Each step carries the B running decode sequences first, then a prefill
    chunk of C = token_budget − B tokens (vLLM's max_num_batched_tokens). With
    p new prompt tokens after c0 cached, o output tokens (the first comes from
    the prefill) and step time t (from :func:`aggregated_step` at the mean
    decode context c0 + p + o/2 and mean chunk context c0 + (p − C)/2)::

        requests/s = min(C / (p·t), B / ((o − 1)·t))
        TTFT_service = ⌈p / C⌉ · t,   TPOT = t

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> s = aggregated_serving(h100(), llama_70b(), prompt=2000, output=200, batch=64,
    ...                        token_budget=2048, tp=8)
    >>> round(s.requests_per_s, 1), round(s.ttft_service_s, 3)
    (4.0, 0.161)
    """
    b = np.asarray(batch, dtype=float)
    p = np.asarray(prompt, dtype=float)
    o = np.asarray(output, dtype=float)
    c0 = np.asarray(cached, dtype=float)
    chunk = np.maximum(np.asarray(token_budget, dtype=float) - b, 0.0)
    chunk = np.minimum(chunk, np.maximum(p, 0.0))
    st = aggregated_step(
        chip, model, batch=b, context=c0 + p + o / 2.0, chunk_tokens=chunk,
        chunk_context=c0 + np.maximum(p - chunk, 0.0) / 2.0, tp=tp, ep=ep, pp=pp,
        precision=precision, kv_precision=kv_precision,
    )
    t = np.asarray(st.time_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        prefill_rate = np.where(p > 0, chunk / (p * t), np.inf)
        decode_rate = np.where(o > 1, b / ((o - 1.0) * t), np.inf)
        rate = np.minimum(prefill_rate, decode_rate)
        ttft = np.where(p > 0, np.ceil(p / np.where(chunk > 0, chunk, np.nan)) * t, t)
    rate = np.where(np.isfinite(rate), rate, 0.0)
    return AggregatedServing(
        step_s=as_result(t), chunk_tokens=as_result(chunk), ttft_service_s=as_result(np.where(np.isnan(ttft), np.inf, ttft)),
        requests_per_s=as_result(rate), output_tokens_per_s=as_result(rate * o),
    )
