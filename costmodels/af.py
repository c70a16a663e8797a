"""Attention–FFN replicas whose FFN side is a pipeline, timed layer by layer.

Setting
-------
The attention side has ``dp`` groups of ``tp_a`` chips; each holds B sequences
and splits them into m micro-batches. The FFN side has ``pp`` stages of
``tp_f`` chips; stage s holds n_s of the L layers (contiguous and balanced:
⌈L/pp⌉ or ⌊L/pp⌋, :func:`af_layers_per_stage`).

Activations return to the attention side after *every* layer. A micro-batch is
therefore at one layer at a time, and only the ``tp_f`` chips of the stage
holding that layer work on it: the FFN side is not a pipeline that one
micro-batch fills, it is ``pp`` servers that micro-batches visit in turn. One
micro-batch of T tokens through all L layers costs what one stage's chips
need for all L layers, ``F = decode_ffn_step(batch=T, tp=tp_f, pp=1)`` — not
the ``pp``-stage pipeline step over ``tp_f·pp`` chips.

Streams
-------
What keeps ``pp`` stages busy is several micro-batches at different layers. The
dp·m micro-batches travel in S *streams*; a stream is micro-batch j of dp/k of
the groups (S = m·k with k dividing dp, :func:`af_stream_counts`) and carries
T = dp·B/S tokens. S = m is the lock-step ping-pong of MegaScale-Infer (every
group's micro-batch j together); S = dp·m would let every group's micro-batch
be its own stream. The attention side bounds S: a stream is made of whole
groups' micro-batches, and each group holds only B sequences (its KV memory).
Each stage ping-pongs at most m streams, k ≤ pp: beyond m·pp streams only
queue at the stages while each carries fewer tokens, and ``pp = 1`` keeps the
one-FFN-group ping-pong exactly. The evaluator runs the S that gives the
lowest TPOT.

The closed loop
---------------
Per stream, times for all L layers (as in :func:`costmodels.comm.af_tpot_s`):
A — one micro-batch (B/m sequences) on its attention group; F — the stream on
the FFN stages, layer by layer; C_a — the round trip of a group's micro-batch
over that group's NICs; C_f — the round trip of the stream over the active
stage's NICs (both with the per-crossing latency). A crossing waits for the
slower end, C = max(C_a, C_f). Every sequence emits one token per round, so
TPOT is the round time, and it is bounded below by the stream's own loop and
by every server's work in a round::

    TPOT = max( A + F + C,              a stream laps once per token
                m·A,                    each attention group: its m micro-batches
                S·(⌈L/pp⌉/L)·F,         the busiest FFN stage: S streams, ⌈L/pp⌉ layers
                m·C_a/2,                each direction of a group's NICs
                S·(⌈L/pp⌉/L)·C_f/2 )    each direction of the busiest stage's NICs

These are the asymptotic bounds of a closed network of deterministic servers
(throughput ≤ min(S/loop, 1/busiest demand)); they are reached when the
streams are staggered so that none waits, the MegaScale-Infer ping-pong
argument extended to ``pp`` stages. With S streams the FFN stages are busy a
fraction S·(n_s/L)·F / TPOT each (:func:`af_stage_utilisation`): at most
about min(1, S/pp) when the loop dominates. With ``pp = 1`` and S = m the
bound is exactly :func:`costmodels.comm.af_tpot_s` (C_f then uses all FFN
chips' NICs, C_a all attention chips').

Examples
--------
The audit of the shipped Rubin + LPX plan (DeepSeek-V3; FFN on 2,048 LP30 chips,
tp 64 × pp 32; 72 attention groups × 512 sequences, 2 micro-batches): a
lock-step micro-batch of 72·512/2 = 18,432 tokens costs, layer by layer on
one stage's 64 chips, 45.6 ms (compute 16.2, all-reduce 29.2), not 5.24:

>>> from costmodels.models import load_model_catalog
>>> from costmodels.roofline import decode_ffn_step
>>> from topology.chips import load_chip_catalog
>>> lp30, ds = load_chip_catalog()["lp30"], load_model_catalog()["deepseek-v3"]
>>> st = decode_ffn_step(lp30, ds, batch=18432, tp=64, pp=1, precision="fp8")
>>> [round(x * 1e3, 1) for x in (st.time_s, st.compute_s, st.comm_s)]
[45.6, 16.2, 29.2]
>>> old = decode_ffn_step(lp30, ds, batch=18432, tp=64, pp=32, precision="fp8")
>>> round(old.time_s * 1e3, 2)
5.24
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodels.arrays import as_result
from costmodels.comm import SCALE_OUT_ALLTOALL_FLOOR_S

__all__ = [
    "AFPipeline",
    "af_busiest_stage_layers",
    "af_layers_per_stage",
    "af_micro_batch_counts",
    "af_pipeline",
    "af_pipeline_tpot_s",
    "af_stage_utilisation",
    "af_stream_counts",
]

#: Activations cross twice per layer (there and back); each direction is its own NIC server.
_DIRECTIONS = 2.0
#: Most micro-batches an attention group splits its batch into: each pays the attention step's fixed
#: costs (a GPU's 2 ms framework step, :func:`costmodels.efficiency.overhead_time_s`), so m·A ≥ m·τ; at 8
#: that is 16 ms, beyond the tightest attention–FFN TPOT SLO shipped (15 ms).
MAX_MICRO_BATCHES = 8


def af_layers_per_stage(layers: int, pp: int) -> np.ndarray:
    """Layers held by each of ``pp`` stages: contiguous, the first L mod pp stages one more.

    Examples
    --------
    >>> af_layers_per_stage(61, 32)[:4].tolist(), int(af_layers_per_stage(61, 32).sum())
    ([2, 2, 2, 2], 61)
    >>> af_layers_per_stage(8, 1).tolist()
    [8]
    """
    if pp < 1 or layers < pp:
        raise ValueError(f"pp must be between 1 and the {layers} layers, got {pp}")
    base, extra = divmod(layers, pp)
    return np.array([base + (1 if s < extra else 0) for s in range(pp)], dtype=int)


def af_busiest_stage_layers(layers: int, pp):
    """⌈L/pp⌉: layers of the busiest FFN stage (vectorised over ``pp``).

    Examples
    --------
    >>> af_busiest_stage_layers(61, 32), af_busiest_stage_layers(61, 1)
    (2.0, 61.0)
    """
    return as_result(np.ceil(layers / np.asarray(pp, dtype=float)))


def af_stream_counts(dp: int, micro_batches: int, pp: int) -> list[int]:
    """Stream counts S = m·k a replica can run: k divides the ``dp`` groups and k ≤ ``pp``.

    A stream is micro-batch j of dp/k groups, so streams are equal and made of
    whole micro-batches; S = m is lock-step ping-pong. Each FFN stage
    ping-pongs at most m streams, as the one FFN group of MegaScale-Infer does
    (so ``pp = 1`` is exactly that ping-pong): more would only queue at the
    stages while shrinking the streams the FFN side batches.

    Examples
    --------
    >>> af_stream_counts(12, 2, 32)
    [2, 4, 6, 8, 12, 24]
    >>> af_stream_counts(72, 2, 32)[-3:]
    [24, 36, 48]
    >>> af_stream_counts(72, 2, 1), af_stream_counts(1, 3, 8)
    ([2], [3])
    """
    if dp < 1 or micro_batches < 1 or pp < 1:
        raise ValueError(f"dp, micro_batches and pp must be ≥ 1, got {dp}, {micro_batches} and {pp}")
    return [micro_batches * k for k in range(1, min(dp, pp) + 1) if dp % k == 0]


def af_micro_batch_counts(dp: int, pp: int, *, attention_fixed_s: float = 0.0, layers: int = 1,
                          most: int = MAX_MICRO_BATCHES) -> list[int]:
    """Micro-batch counts m a replica of ``dp`` attention groups and ``pp`` FFN stages may run: powers of two
    from 2 to ``most``, and beyond while m·min(dp, pp) < 2·pp; 1 too where the attention step's fixed cost
    ``attention_fixed_s`` (τ) is at least the ``layers``' crossings' floor, 2·L·60 µs.

    More micro-batches shorten the loop a token's micro-batch runs, A(B/m) + F + C, and let more streams
    (S ≤ m·min(dp, pp), :func:`af_stream_counts`) keep the FFN stages busy, each of which is busy only when
    it ping-pongs two (the one-stage ping-pong of MegaScale-Infer, S = 2 at pp = 1): S ≥ 2·pp. Each costs the
    attention step's fixed costs once more (m·A ≥ m·τ), which bounds m by :data:`MAX_MICRO_BATCHES` unless
    the pipeline's depth asks for more. One micro-batch beats two only through that cost: two run
    2·A(B/2) ≈ A(B) + τ of attention a round, one waits for its own loop A(B) + F + C, and C is never below
    the 2·L crossings' kernel floor (:func:`costmodels.comm.af_round_trip_s`). A group's memory bounds its
    batch B, and a batch splits into m micro-batches only when m ≤ B (the evaluator refuses the others).

    Examples
    --------
    Rubin's 2 ms step against DeepSeek-V3's 61 layers (7.3 ms of crossings), and a 15 ms step:

    >>> af_micro_batch_counts(288, 32, attention_fixed_s=2e-3, layers=61), af_micro_batch_counts(9, 48)
    ([2, 4, 8], [2, 4, 8, 16])
    >>> af_micro_batch_counts(72, 32, attention_fixed_s=14.7e-3, layers=61)
    [1, 2, 4, 8]
    """
    if dp < 1 or pp < 1:
        raise ValueError(f"dp and pp must be ≥ 1, got {dp} and {pp}")
    out, m = [2], 2
    while m < most or m * min(dp, pp) < 2 * pp:
        m *= 2
        out.append(m)
    if attention_fixed_s >= _DIRECTIONS * layers * SCALE_OUT_ALLTOALL_FLOOR_S:
        out.insert(0, 1)
    return out


@dataclass(frozen=True)
class AFPipeline:
    """The closed-loop bound of one attention–FFN replica (arrays broadcast over the inputs).

    ``tpot_s = max(loop_s, attention_bound_s, ffn_stage_bound_s, link_bound_s)``;
    each ``*_utilisation`` is that server's work in a round divided by
    ``tpot_s`` (1 for the server that sets the pace, unless the loop does).
    """

    tpot_s: np.ndarray | float
    loop_s: np.ndarray | float
    attention_bound_s: np.ndarray | float
    ffn_stage_bound_s: np.ndarray | float
    link_bound_s: np.ndarray | float
    streams: int
    attention_utilisation: np.ndarray | float
    busiest_stage_utilisation: np.ndarray | float
    link_utilisation: np.ndarray | float


def af_pipeline(attn_s, ffn_s, attn_comm_s, ffn_comm_s, *, micro_batches: int, streams: int, layers: int,
                pp: int) -> AFPipeline:
    """TPOT of an attention–FFN replica with S streams over a ``pp``-stage FFN side.

    Parameters
    ----------
    attn_s
        A: one micro-batch (B/m sequences) through all L layers on its attention group.
    ffn_s
        F: one stream (T = dp·B/S tokens) through all L layers, each layer on the
        ``tp_f`` chips of the stage holding it.
    attn_comm_s, ffn_comm_s
        C_a, C_f: round trip (both crossings, all layers, with latency) of a
        group's micro-batch over that group's NICs, resp. of a stream over the
        active stage's NICs.
    micro_batches, streams, layers, pp
        m, S, L and the FFN side's stages.

    Notes
    -----
    With C = max(C_a, C_f) and n = ⌈L/pp⌉ (see the module notes)::

        TPOT = max(A + F + C, m·A, S·(n/L)·F, m·C_a/2, S·(n/L)·C_f/2)

    Examples
    --------
    ``pp = 1`` and S = m is the ping-pong of :func:`costmodels.comm.af_tpot_s`:

    >>> af_pipeline(1.0, 1.0, 0.2, 0.2, micro_batches=3, streams=3, layers=4, pp=1).tpot_s
    3.0
    >>> af_pipeline(1.0, 1.0, 0.2, 0.2, micro_batches=1, streams=1, layers=4, pp=1).tpot_s
    2.2

    Spread over 4 stages, 4 streams keep each stage a quarter of the rounds
    busy per stream, and the loop sets the pace:

    >>> p = af_pipeline(0.5, 1.0, 0.2, 0.2, micro_batches=1, streams=4, layers=4, pp=4)
    >>> p.tpot_s, p.busiest_stage_utilisation
    (1.7, 0.5882352941176471)
    """
    loop, attention, stage, link = _bounds_s(attn_s, ffn_s, attn_comm_s, ffn_comm_s, micro_batches=micro_batches,
                                             streams=streams, layers=layers, pp=pp)
    tpot = np.maximum(np.maximum(loop, attention), np.maximum(stage, link))
    return AFPipeline(
        tpot_s=as_result(tpot), loop_s=as_result(loop), attention_bound_s=as_result(attention), ffn_stage_bound_s=as_result(stage),
        link_bound_s=as_result(link), streams=int(streams), attention_utilisation=as_result(attention / tpot),
        busiest_stage_utilisation=as_result(stage / tpot), link_utilisation=as_result(link / tpot),
    )


def af_pipeline_tpot_s(attn_s, ffn_s, attn_comm_s, ffn_comm_s, *, micro_batches, streams, layers: int,
                       pp) -> np.ndarray:
    """``af_pipeline(...).tpot_s`` as an array, without the bounds' utilisations (candidate generation
    asks for millions of TPOTs and reads nothing else). ``micro_batches``, ``streams`` and ``pp`` may be
    arrays broadcasting with the times (one replica layout and stream count per row).

    Examples
    --------
    >>> float(af_pipeline_tpot_s(0.5, 1.0, 0.2, 0.2, micro_batches=1, streams=4, layers=4, pp=4))
    1.7
    >>> af_pipeline_tpot_s(0.5, 1.0, 0.2, 0.2, micro_batches=1, streams=np.array([1, 4]), layers=4,
    ...                    pp=np.array([1, 4])).tolist()
    [1.7, 1.7]
    """
    loop, attention, stage, link = _bounds_s(attn_s, ffn_s, attn_comm_s, ffn_comm_s, micro_batches=micro_batches,
                                             streams=streams, layers=layers, pp=pp)
    return np.maximum(np.maximum(loop, attention), np.maximum(stage, link))


def _bounds_s(attn_s, ffn_s, attn_comm_s, ffn_comm_s, *, micro_batches, streams, layers: int,
              pp) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four lower bounds of :func:`af_pipeline` whose maximum is TPOT: loop, attention, busiest
    FFN stage, busiest link direction (s); ``micro_batches``, ``streams`` and ``pp`` scalars or arrays."""
    a, f, ca, cf = (np.asarray(v, dtype=float) for v in (attn_s, ffn_s, attn_comm_s, ffn_comm_s))
    m, s = np.asarray(micro_batches, dtype=float), np.asarray(streams, dtype=float)
    if np.any((s < m) | (s % m != 0)):
        raise ValueError(f"streams ({streams}) must be a multiple of micro_batches ({micro_batches})")
    # The busiest stage's share of the layers.
    share = np.asarray(af_busiest_stage_layers(layers, pp), dtype=float) / layers
    loop = a + f + np.maximum(ca, cf)
    attention = m * a
    stage = s * share * f
    link = np.maximum(m * ca, s * share * cf) / _DIRECTIONS
    return loop, attention, stage, link


def af_stage_utilisation(ffn_s, tpot_s, *, streams: int, layers: int, pp: int) -> np.ndarray:
    """Busy fraction of each FFN stage: S·(n_s/L)·F / TPOT (last axis: the ``pp`` stages).

    Stage s holds n_s layers (:func:`af_layers_per_stage`) and serves each of
    the S streams for n_s of its L layers per round.

    Examples
    --------
    >>> af_stage_utilisation(1.0, 1.7, streams=4, layers=5, pp=4).round(3).tolist()
    [0.941, 0.471, 0.471, 0.471]
    >>> af_stage_utilisation([1.0, 2.0], [4.0, 4.0], streams=2, layers=2, pp=1).tolist()
    [[0.5], [1.0]]
    """
    f = np.asarray(ffn_s, dtype=float)[..., None]
    t = np.asarray(tpot_s, dtype=float)[..., None]
    n = af_layers_per_stage(layers, pp).astype(float)
    return streams * (n / layers) * f / t
