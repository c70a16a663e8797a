"""Operating-point efficiency: what fraction of peak a step really reaches.

A single memory efficiency and a single per-step overhead per chip cannot fit
both a batch-1 decode (a few MB read per layer: kernels never reach streaming
bandwidth) and a batch-256 decode (long streaming reads, near peak). Three
operating-point effects are priced here, each from a chip field that defaults
to the flat model (so a chip without them behaves as before):

Memory
    Achieved bandwidth saturates with the bytes one chip moves in the step,
    ``x`` (weights + KV per chip)::

        BW_eff(x) = BW · η_m · x / (x + x_half)
        t_mem     = x / BW_eff(x) = (x + x_half) / (BW · η_m)

    i.e. the curve is exactly a fixed memory latency ``x_half / (BW·η_m)``
    added to the streaming time (``x_half`` = ``chip.memory_half_bytes``).
Compute
    GEMM efficiency grows with the M dimension, the tokens one micro-batch
    pushes through every weight matrix (tensor parallelism slices N and K,
    not M)::

        η_c(t) = η_c · t / (t + t_half),   t_comp = FLOPs / (F · η_c(t))

    (``t_half`` = ``chip.compute_half_tokens``). ``t_half`` is a ridge in rows:
    below it a GEMM streams its weights faster than it multiplies them, and that
    ridge scales as the rate × the bytes each weight streams. The fitted
    ``t_half`` holds for weights that run at their own precision's rate; weights
    that run at a wider precision's rate (MXFP4 on Hopper at the BF16 rate: 0.53 B
    streamed per 2 B the units assume) cross over ``b_w / b_rate`` times sooner::

        t_half(p) = t_half · b_w(p) / b_w(rate_for(p))       (1 wherever p runs natively)

    (:func:`half_rows_scale`). Without it a GEMM of a few rows on simulated MXFP4
    is priced as if each weight streamed 4× the bytes it does.
KV reads
    The attention kernels read each sequence's cache from its own paged blocks: they reach their own
    fraction of the bandwidth, ``η_kv`` (``chip.kv_memory_efficiency``, default ``η_m``)::

        t_kv = KV bytes / (BW · η_kv)

Overhead
    A per-step framework cost (scheduling, sampling, host sync:
    ``chip.step_overhead_s``) separate from a per-layer kernel-launch cost
    (``chip.layer_overhead_s``, paid once per layer a token passes) and a
    per-sequence host cost (``chip.sequence_overhead_s``: each sequence's
    scheduling, sampling and detokenisation, for the whole step's B
    sequences — TensorRT-LLM's wide-EP notes: host overhead grows with the
    total batch across attention data-parallel ranks)::

        t_over = τ + L · τ_layer        (on the device's path)
        t_host = B · h                  (beside it: step = max(device step, t_host))

    Engines overlap the host's work with the device's next step (TensorRT-LLM's
    overlap scheduler, SGLang's zero-overhead scheduler, vLLM's async scheduling:
    :mod:`costmodels.roofline` notes), so ``B · h`` bounds the step from below
    rather than adding to it. ``h`` defaults to
    :data:`DEFAULT_SEQUENCE_OVERHEAD_S` where a chip has no fitted value.

All functions broadcast over numpy arrays and, with the flat defaults
(``x_half = t_half = τ_layer = 0``), reproduce the flat roofline bit for bit.

Examples
--------
>>> from costmodels.examples import h100
>>> chip = h100().model_copy(update={"memory_half_bytes": 1e9})
>>> bw = achieved_memory_bandwidth_bytes_per_s(chip, [1e9, 9e9])
>>> (bw / (chip.memory_bandwidth_bytes_per_s * chip.memory_efficiency)).round(2).tolist()
[0.5, 0.9]
"""

from __future__ import annotations

import numpy as np

from costmodels.arithmetic import ArrayLike
from topology.chips import BYTES_PER_VALUE, ChipSpec

__all__ = [
    "DEFAULT_SEQUENCE_OVERHEAD_S",
    "achieved_compute_flops_per_s",
    "achieved_memory_bandwidth_bytes_per_s",
    "compute_time_s",
    "half_rows_scale",
    "kv_memory_efficiency",
    "kv_memory_time_s",
    "memory_time_s",
    "overhead_time_s",
    "sequence_overhead_s",
]

#: Per-sequence host cost of a step where a chip has no fitted one [estimate]: vLLM issue #10634
#: (2024-11-25, Llama-2-7B at batch 256, V0 engine with async output processing) measures 5–6 ms between
#: two decode steps, ~20 µs a sequence; vLLM RFC #6913 times output processing alone at 3.4 ms for
#: batch 32 (~0.1 ms a sequence) before it was overlapped. Overlapped engines hide part of it.
DEFAULT_SEQUENCE_OVERHEAD_S = 20e-6


def achieved_memory_bandwidth_bytes_per_s(chip: ChipSpec, bytes_per_chip: ArrayLike) -> np.ndarray:
    """Working-tier bandwidth one chip reaches when a step moves ``bytes_per_chip``.

    ``BW · η_m · x / (x + x_half)``; ``x_half = 0`` gives the flat ``BW · η_m``.

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> float(achieved_memory_bandwidth_bytes_per_s(h100(), 1e9)) == 3.35e12 * h100().memory_efficiency
    True
    """
    x = np.asarray(bytes_per_chip, dtype=float)
    peak = chip.memory_bandwidth_bytes_per_s * chip.memory_efficiency
    if chip.memory_half_bytes == 0:
        return np.full(np.shape(x), peak)
    return peak * x / (x + chip.memory_half_bytes)


def achieved_compute_flops_per_s(chip: ChipSpec, precision: str, tokens: ArrayLike) -> np.ndarray:
    """FLOP/s one chip reaches on GEMMs with ``tokens`` rows (the M dimension).

    ``F · η_c · t / (t + t_half)``; ``t_half = 0`` gives the flat ``F · η_c``.

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> chip = h100().model_copy(update={"compute_half_tokens": 64.0})
    >>> r = achieved_compute_flops_per_s(chip, "bf16", [64, 576]) / (989.4e12 * chip.compute_efficiency)
    >>> r.round(2).tolist()
    [0.5, 0.9]
    """
    t = np.asarray(tokens, dtype=float)
    peak = chip.flops(precision) * chip.compute_efficiency
    if chip.compute_half_tokens == 0:
        return np.full(np.shape(t), peak)
    half = chip.compute_half_tokens * half_rows_scale(chip, precision)
    return peak * t / (t + half)


def half_rows_scale(chip: ChipSpec, precision: str) -> float:
    """The share of ``t_half`` a GEMM on ``precision`` weights pays: ``b_w(p) / b_w(rate_for(p))``.

    1 where the weights run at their own precision's rate; below 1 where they run at a wider
    precision's (module notes): the weights stream fewer bytes than the units' ridge assumes.

    Examples
    --------
    >>> from topology.chips import load_chip_catalog
    >>> cat = load_chip_catalog()
    >>> [round(half_rows_scale(cat[c], p), 3) for c, p in (("h100", "fp8"), ("h100", "mxfp4"), ("b200", "fp4"))]
    [1.0, 0.266, 1.0]
    """
    rate = chip.rate_for(precision)
    if rate is None or rate == precision:
        return 1.0
    return BYTES_PER_VALUE[precision] / BYTES_PER_VALUE[rate]


def memory_time_s(chip: ChipSpec, total_bytes: ArrayLike, busy_chips: ArrayLike) -> np.ndarray:
    """Time for ``busy_chips`` chips to move ``total_bytes`` (spread evenly) in one step.

    ``(total + busy·x_half) / (busy · BW · η_m)`` — the saturating-bandwidth
    curve written without a division by the bytes (safe at zero bytes).

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> chip = h100().model_copy(update={"memory_efficiency": 1.0, "memory_half_bytes": 3.35e9})
    >>> float(memory_time_s(chip, 2 * 3.35e9, 2)) * 1e3
    2.0
    """
    b = np.asarray(total_bytes, dtype=float)
    g = np.asarray(busy_chips, dtype=float)
    if chip.memory_half_bytes:
        b = b + g * chip.memory_half_bytes
    return b / (g * chip.memory_bandwidth_bytes_per_s * chip.memory_efficiency)


def kv_memory_efficiency(chip: ChipSpec) -> float:
    """η_kv: the fraction of the working tier's bandwidth KV-cache reads reach (``memory_efficiency`` if unset)."""
    return chip.memory_efficiency if chip.kv_memory_efficiency is None else chip.kv_memory_efficiency


def kv_memory_time_s(chip: ChipSpec, kv_bytes: ArrayLike, busy_chips: ArrayLike) -> np.ndarray:
    """Time for ``busy_chips`` chips to read ``kv_bytes`` of KV cache (spread evenly): ``KV / (busy·BW·η_kv)``.

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> chip = h100().model_copy(update={"kv_memory_efficiency": 0.5})
    >>> round(float(kv_memory_time_s(chip, 3.35e9, 1)) * 1e3, 3)
    2.0
    """
    g = np.asarray(busy_chips, dtype=float)
    return np.asarray(kv_bytes, dtype=float) / (g * chip.memory_bandwidth_bytes_per_s * kv_memory_efficiency(chip))


def compute_time_s(chip: ChipSpec, precision: str, flops: ArrayLike, busy_chips: ArrayLike,
                   tokens: ArrayLike) -> np.ndarray:
    """Time for ``busy_chips`` chips to execute ``flops`` on GEMMs of ``tokens`` rows.

    ``FLOPs / (busy · F · η_c) · (1 + t_half / t)``.

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> chip = h100().model_copy(update={"compute_efficiency": 1.0, "compute_half_tokens": 8.0})
    >>> float(compute_time_s(chip, "bf16", 989.4e12, 1, [8.0]).round(6)[0])
    2.0
    """
    f = np.asarray(flops, dtype=float)
    g = np.asarray(busy_chips, dtype=float)
    t = f / (g * chip.flops(precision) * chip.compute_efficiency)
    if chip.compute_half_tokens:
        half = chip.compute_half_tokens * half_rows_scale(chip, precision)
        t = t * (1.0 + half / np.maximum(np.asarray(tokens, dtype=float), 1e-9))
    return t


def overhead_time_s(chip: ChipSpec, layers: ArrayLike) -> np.ndarray:
    """Fixed device-path time of one step that passes ``layers`` layers: ``τ + L·τ_layer``.

    The sequences' host work, ``B·h`` (:func:`sequence_overhead_s`), is not in it: it runs beside the
    device (module notes).

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> chip = h100().model_copy(update={"step_overhead_s": 1e-3, "layer_overhead_s": 10e-6})
    >>> round(float(overhead_time_s(chip, 80)) * 1e3, 3)
    1.8
    """
    n = np.asarray(layers, dtype=float)
    if not chip.layer_overhead_s:
        return np.full(np.shape(n), chip.step_overhead_s)
    return chip.step_overhead_s + n * chip.layer_overhead_s


def sequence_overhead_s(chip: ChipSpec) -> float:
    """The chip's per-sequence host cost per step, or the prior :data:`DEFAULT_SEQUENCE_OVERHEAD_S`."""
    return DEFAULT_SEQUENCE_OVERHEAD_S if chip.sequence_overhead_s is None else chip.sequence_overhead_s