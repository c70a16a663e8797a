"""All-reduce algorithms and the choice of the fastest one per message size.

A tensor-parallel all-reduce of ``S`` bytes per rank over ``n`` ranks, with
``BW`` the per-chip bandwidth per direction and ``λ`` the one-hop latency of
the fabric it runs on (:func:`costmodels.comm.link_for_span`):

============  =======================================  ========================================
algorithm     time                                     needs
============  =======================================  ========================================
ring          2(n−1)/n·S/BW + 2(n−1)·λ                 any fabric (NCCL's default)
one-shot      (n−1)·S/BW + λ                           ``one-shot``: load/store access to
                                                       every peer (one scale-up domain)
two-shot      2(n−1)/n·S/BW + 2·λ                      ``two-shot``: as one-shot
in-switch     (n+1)/n·S/BW + 2·λ                       ``nvls``: NVLink SHARP in the scale-up
                                                       switches; ``sharp``: SHARP in the
                                                       InfiniBand scale-out switches
============  =======================================  ========================================

* **Ring** (reduce-scatter then all-gather around a ring): bandwidth-optimal,
  but 2(n−1) synchronised steps, so latency grows with n.
* **One-shot** (TensorRT-LLM ``ONESHOT``, vLLM/SGLang custom all-reduce):
  every rank reads the full buffers of the n−1 others and reduces locally in
  one step — one latency, (n−1)·S received per rank. Best for small messages.
* **Two-shot** (TensorRT-LLM ``TWOSHOT``): reduce-scatter by direct writes
  to each chunk's owner, then all-gather of the reduced chunks: two steps,
  ring-equal bytes.
* **In-switch** reduction: each rank sends its buffer into the switch, which
  reduces, and receives the reduced result: (n+1)/n·S each way per rank
  (nccl-tests issue #238: "N+1 sends, N+1 receives" instead of 2N), two steps.

The engines pick per message size (TensorRT-LLM's ``AUTO`` strategy; vLLM
uses its custom all-reduce below a size limit and NCCL above), so the model
takes the fastest algorithm the fabric offers (:func:`allreduce_s`). What a
fabric offers is the chip record's ``all_reduce_algorithms`` (sourced in the
catalogue; ring is always available). One-shot, two-shot and NVLS need the
ranks inside one scale-up domain; across domains only ring and, with SHARP,
in-switch reduction remain.

Public measurements on 8×H100 (NVLink 4, 450 GB/s per direction, λ = 1.85 µs):

* 128 MiB NCCL all-reduce at ~417 GB/s algorithm bandwidth (322 µs; Vidur
  profiles): in-switch here 339 µs, ring 548 µs.
* 2 MiB all-reduce ~34 µs with NCCL's ring (Vidur profiles; the catalogue's λ
  is derived from it); the ring formula keeps that value.
* TensorRT-LLM one-shot kernel: 5.9 µs at 512 B, 7.8 µs at 32 KB on TP8
  without CUDA graphs (SGLang PR #2904); NCCL with CUDA graphs measures
  0.5 µs at 1 KB on 4×H800 vs 3.5 µs without (NCCL issue #1984): the launch,
  not the link, sets most of the ungraphed figure. Here: 2.4 µs at 32 KB.
* NVLS on 8×H100: ~470 GB/s bus bandwidth at 1 GB vs ~350 GB/s for the ring
  (NCCL issue #1506); small-message NVLS latency ~6 µs (NCCL issue #1259),
  above one-shot's, hence the switch point.
* The TensorRT-LLM MultiShot blog (developer.nvidia.com, "3x Faster AllReduce
  with NVSwitch and TensorRT-LLM MultiShot"): two synchronisation steps
  regardless of n instead of the ring's 2n − 2, up to 3× faster.

Examples
--------
>>> from costmodels.examples import h100
>>> nvswitch = h100(all_reduce_algorithms=["one-shot", "two-shot", "nvls"],
...                 sources={**h100().sources, "all_reduce_algorithms": "example"})
>>> allreduce_algorithm(nvswitch, 16 * 1024, 8), allreduce_algorithm(nvswitch, 128 * 2**20, 8)
('one-shot', 'in-switch')
>>> round(allreduce_s(nvswitch, 128 * 2**20, 8) * 1e6)    # measured 322 µs; ring 548 µs
339
"""

from __future__ import annotations

import numpy as np

from costmodels.arrays import as_result
from topology.chips import ChipSpec

__all__ = [
    "ALGORITHMS",
    "SCALE_OUT_LATENCY_S",
    "SCALE_UP_ONLY",
    "allreduce_algorithm",
    "allreduce_s",
    "allreduce_times_s",
    "in_switch_s",
    "link_for_span",
    "one_shot_s",
    "ring_s",
    "two_shot_s",
]

#: One-way latency of one RDMA message across a leaf switch (InfiniBand/RoCE
#: NICs quote 1–3 µs per hop; a few hops plus software ≈ 5 µs). ChipSpec has no
#: scale-out latency field, so this is the one assumed value.
SCALE_OUT_LATENCY_S = 5e-6
#: Every algorithm, in the order ties are broken (the first wins).
ALGORITHMS: tuple[str, ...] = ("ring", "one-shot", "two-shot", "in-switch")
#: Algorithms that need load/store access to the peers' memory: one scale-up domain only.
SCALE_UP_ONLY: frozenset[str] = frozenset({"one-shot", "two-shot"})
#: Ring all-reduce = reduce-scatter + all-gather: two passes of n−1 steps.
_RING_PHASES = 2.0
#: Two-shot and in-switch reduction: a reduce step and a broadcast step.
_TWO_STEPS = 2.0


def _out(x):
    return as_result(np.asarray(x, dtype=float))


def link_for_span(chip: ChipSpec, span_chips):
    """(bandwidth per chip per direction, latency) for a group of ``span_chips`` chips.

    Scale-up fabric when the group fits in one scale-up domain, scale-out NICs
    (with :data:`SCALE_OUT_LATENCY_S`) otherwise.
    """
    inside = np.asarray(span_chips, dtype=float) <= chip.scale_up_domain_chips
    bw = np.where(inside, chip.scale_up_bandwidth_bytes_per_s, chip.scale_out_bandwidth_bytes_per_s)
    lat = np.where(inside, chip.scale_up_latency_s, SCALE_OUT_LATENCY_S)
    return bw, lat


def ring_s(bytes_per_rank, n, bandwidth_bytes_per_s, latency_s):
    """Ring: ``2(n−1)/n·S/BW + 2(n−1)·λ``.

    >>> round(ring_s(2 * 2**20, 8, 450e9, 1.85e-6) * 1e6, 1)   # Vidur: ~34 µs
    34.1
    """
    n = np.asarray(n, dtype=float)
    return _out(_RING_PHASES * ((n - 1.0) / n) * np.asarray(bytes_per_rank, dtype=float) / bandwidth_bytes_per_s
            + _RING_PHASES * (n - 1.0) * latency_s)


def one_shot_s(bytes_per_rank, n, bandwidth_bytes_per_s, latency_s):
    """One-shot: every rank receives the other n−1 buffers in one step, ``(n−1)·S/BW + λ``.

    >>> round(one_shot_s(32 * 1024, 8, 450e9, 1.85e-6) * 1e6, 2)
    2.36
    """
    n = np.asarray(n, dtype=float)
    return _out((n - 1.0) * np.asarray(bytes_per_rank, dtype=float) / bandwidth_bytes_per_s + latency_s)


def two_shot_s(bytes_per_rank, n, bandwidth_bytes_per_s, latency_s):
    """Two-shot: direct reduce-scatter then all-gather, ``2(n−1)/n·S/BW + 2·λ``.

    >>> round(two_shot_s(2 * 2**20, 8, 450e9, 1.85e-6) * 1e6, 1)
    11.9
    """
    n = np.asarray(n, dtype=float)
    return _out(_RING_PHASES * ((n - 1.0) / n) * np.asarray(bytes_per_rank, dtype=float) / bandwidth_bytes_per_s
            + _TWO_STEPS * latency_s)


def in_switch_s(bytes_per_rank, n, bandwidth_bytes_per_s, latency_s):
    """In-switch reduction (NVLS, SHARP): ``(n+1)/n·S/BW + 2·λ``.

    >>> round(in_switch_s(128 * 2**20, 8, 450e9, 1.85e-6) * 1e6)
    339
    """
    n = np.asarray(n, dtype=float)
    return _out((n + 1.0) / n * np.asarray(bytes_per_rank, dtype=float) / bandwidth_bytes_per_s + _TWO_STEPS * latency_s)


_FORMULAS = {"ring": ring_s, "one-shot": one_shot_s, "two-shot": two_shot_s, "in-switch": in_switch_s}


def _available(chip: ChipSpec, algorithm: str, inside_domain):
    """Where ``algorithm`` can run: ring always; the others as the chip's fabrics list them.

    ``in-switch`` inside a scale-up domain needs ``nvls`` in
    ``chip.all_reduce_algorithms``; across domains it needs ``sharp``.
    """
    listed = set(chip.all_reduce_algorithms)
    inside = np.asarray(inside_domain, dtype=bool)
    if algorithm == "ring":
        return np.ones_like(inside)
    if algorithm == "in-switch":
        return np.where(inside, "nvls" in listed, "sharp" in listed)
    if algorithm in SCALE_UP_ONLY:
        return inside & (algorithm in listed)
    raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")


def allreduce_times_s(chip: ChipSpec, bytes_per_rank, n, bandwidth_bytes_per_s, latency_s,
                      inside_domain) -> dict[str, np.ndarray]:
    """Time of every algorithm (``inf`` where the fabric does not offer it; 0 for n = 1)."""
    out = {}
    n_a = np.asarray(n, dtype=float)
    for name in ALGORITHMS:
        t = np.asarray(_FORMULAS[name](bytes_per_rank, n_a, bandwidth_bytes_per_s, latency_s))
        t = np.where(_available(chip, name, inside_domain), t, np.inf)
        out[name] = np.where(n_a > 1, t, 0.0)
    return out


def _link(chip: ChipSpec, n):
    bw, lat = link_for_span(chip, n)
    return bw, lat, np.asarray(n, dtype=float) <= chip.scale_up_domain_chips


def allreduce_s(chip: ChipSpec, bytes_per_rank, n):
    """Fastest all-reduce of ``bytes_per_rank`` over ``n`` ranks on ``chip``'s fabric (0 for n = 1).

    Examples
    --------
    >>> from costmodels.examples import h100
    >>> round(allreduce_s(h100(), 2 * 2**20, 8) * 1e6, 1)   # ring only on the example record (λ = 1.8 µs)
    33.4
    """
    bw, lat, inside = _link(chip, n)
    times = allreduce_times_s(chip, bytes_per_rank, n, bw, lat, inside)
    return _out(np.minimum.reduce([times[a] for a in ALGORITHMS]))


def allreduce_algorithm(chip: ChipSpec, bytes_per_rank, n):
    """Name of the algorithm :func:`allreduce_s` picks (ties: the first of :data:`ALGORITHMS`)."""
    bw, lat, inside = _link(chip, n)
    times = allreduce_times_s(chip, bytes_per_rank, n, bw, lat, inside)
    stacked = np.stack(np.broadcast_arrays(*(times[a] for a in ALGORITHMS)))
    names = np.asarray(ALGORITHMS)[np.argmin(stacked, axis=0)]
    return names if names.ndim else str(names)
