"""Speculative decoding: tokens per verify, verify step, TPOT.

A draft proposes γ tokens one at a time; the target verifies all of them (plus
its own next token) in one pass over B·(γ+1) tokens. Draft position i is
accepted with probability α_i given that positions < i were, so the expected
tokens a cycle yields (the target's own token included) are::

    E = Σ_{i=0..γ} Π_{j≤i} α_j        (the i = 0 term is 1)
      = (1 − α^{γ+1}) / (1 − α)      for a constant α

and the cycle costs γ·t_draft + t_verify + a round trip when the draft is remote::

    TPOT = (γ·t_draft + t_verify + rtt) / E

A draft co-located with its target runs inside the target's engine step (as
EAGLE and MTP heads do): the cycle pays the per-step overhead τ once, in the
verify, and the draft steps pay none (:func:`draft_step`); its weights and KV
share the target's chips and their one workspace reserve
(:func:`draft_memory_per_chip_bytes`). A remote draft is its own engine: its
steps pay its chip's τ and its chips keep their own workspace.

Examples
--------
>>> round(expected_tokens_per_verify(0.8, 4), 2)
3.36
>>> round(spec_tpot_s(0.001, 0.020, 4, 0.8), 5)
0.00714
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from costmodels.arrays import as_result
from costmodels.comm import DEFAULT_ACTIVATION_PRECISION
from costmodels.memory import DEFAULT_WORKSPACE_FRACTION, memory_per_chip_bytes
from costmodels.models import ModelSpec
from costmodels.roofline import (
    StepCost,
    attention_core_flops,
    decode_step,
    forward_cost,
    kv_bytes_read_per_sequence,
)
from topology.chips import ChipSpec

__all__ = ["draft_memory_per_chip_bytes", "draft_step", "expected_tokens_per_verify", "spec_tpot_s", "verify_step"]


def expected_tokens_per_verify(acceptance: float | Sequence[float] | np.ndarray, gamma: int | None = None):
    """Expected tokens per verify pass, E = Σ_{i=0..γ} Π_{j≤i} α_j (α_0 ≡ 1).

    Parameters
    ----------
    acceptance
        One α (a scalar; ``gamma`` required), or per-position conditional
        acceptances α_1 … α_n along the last axis (leading axes vectorise).
    gamma
        Draft length γ; with per-position acceptances it keeps the first γ
        (default: all n).

    Examples
    --------
    >>> round(expected_tokens_per_verify(0.8, 4), 4)
    3.3616
    >>> expected_tokens_per_verify([0.9, 0.5])
    2.35
    >>> expected_tokens_per_verify(0.0, 3)
    1.0
    """
    a = np.asarray(acceptance, dtype=float)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("acceptance probabilities must lie in [0, 1]")
    if a.ndim == 0:
        if gamma is None:
            raise ValueError("a single acceptance rate needs gamma")
        a = np.full(int(gamma), float(a))
    elif gamma is not None:
        if gamma > a.shape[-1]:
            raise ValueError(f"gamma={gamma} exceeds the {a.shape[-1]} acceptance positions given")
        a = a[..., : int(gamma)]
    return as_result(1.0 + np.sum(np.cumprod(a, axis=-1), axis=-1))


def spec_tpot_s(draft_step_s, verify_step_s, gamma, acceptance, round_trip_s=0.0):
    """TPOT with speculative decoding: (γ·t_draft + t_verify + rtt) / E.

    ``round_trip_s`` is the draft ↔ target round trip when the draft runs on
    other chips (0 when co-located). ``acceptance`` as in
    :func:`expected_tokens_per_verify`.

    Examples
    --------
    >>> spec_tpot_s(0.0, 0.01, 1, [1.0])
    0.005
    """
    e = expected_tokens_per_verify(acceptance, gamma)
    cycle = gamma * np.asarray(draft_step_s, dtype=float) + np.asarray(verify_step_s, dtype=float)
    return as_result((cycle + np.asarray(round_trip_s, dtype=float)) / np.asarray(e))


def verify_step(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    batch,
    context,
    gamma,
    tp=1,
    ep=1,
    pp=1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
    attention_precision: str | None = None,
) -> StepCost:
    """The target's verify pass: B sequences each add γ + 1 tokens at ``context``.

    A short prefill: FLOPs = 2·B·(γ+1)·N_active + attention pairs of γ+1 new
    tokens after c (MLA absorbed, as in decode); bytes = W_touched(B·(γ+1)) +
    B·(c + γ + 1)·κ — the KV is read once per sequence, not once per token.

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> v = verify_step(h100(), llama_70b(), batch=8, context=2048, gamma=4, tp=8)
    >>> bool(v.memory_bound)
    True
    """
    kv_prec = precision if kv_precision is None else kv_precision
    b = np.asarray(batch, dtype=float)
    c = np.asarray(context, dtype=float)
    n = np.asarray(gamma, dtype=float) + 1.0
    # Each new token i attends c + i keys: n·c + n²/2 pairs per layer, absorbed MLA dims.
    per_token_flops = np.asarray(attention_core_flops(model, new_tokens=1, context=c + 0.5 * n, decode=True))
    return forward_cost(
        chip, model, part="full", sequences=b, tokens=b * n,
        attention_flops=b * n * per_token_flops,
        kv_bytes=b * np.asarray(kv_bytes_read_per_sequence(model, kv_prec, c + n)),
        tp=tp, ep=ep, pp=pp, precision=precision, activation_precision=activation_precision,
        attention_precision=attention_precision,
    )


def draft_step(chip: ChipSpec, model: ModelSpec, *, colocated: bool, batch, context, tp=1, ep=1, pp=1,
               precision: str = "bf16", kv_precision: str | None = None,
               activation_precision: str = DEFAULT_ACTIVATION_PRECISION,
               attention_precision: str | None = None) -> StepCost:
    """One draft decode step; without the per-step overhead when co-located with the target.

    Examples
    --------
    >>> from costmodels.examples import h100, llama_8b
    >>> remote = draft_step(h100(), llama_8b(), colocated=False, batch=8, context=2048)
    >>> local = draft_step(h100(), llama_8b(), colocated=True, batch=8, context=2048)
    >>> round((remote.time_s - local.time_s) * 1e3, 3), local.overhead_s
    (2.0, 0.0)
    """
    st = decode_step(chip, model, batch=batch, context=context, tp=tp, ep=ep, pp=pp, precision=precision,
                     kv_precision=kv_precision, activation_precision=activation_precision,
                     attention_precision=attention_precision)
    if not colocated:
        return st
    return replace(st, time_s=as_result(np.asarray(st.device_s) - np.asarray(st.overhead_s)),
                   overhead_s=as_result(0.0 * np.asarray(st.overhead_s)), host_s=as_result(0.0 * np.asarray(st.host_s)))


def draft_memory_per_chip_bytes(chip: ChipSpec, model: ModelSpec, *, colocated: bool, batch, context, tp=1, ep=1,
                                pp=1, precision: str = "bf16", kv_precision: str | None = None,
                                workspace_fraction: float = DEFAULT_WORKSPACE_FRACTION,
                                attention_precision: str | None = None, workspace_of_free: bool = False):
    """Draft weights + KV per chip, plus a workspace only when the draft has chips of its own.

    Co-located, the draft shares the target's chips, whose
    :func:`~costmodels.memory.memory_per_chip_bytes` already reserves the
    workspace: counting it again would take 10 % of the chip twice (14.1 GB on
    an H200).

    Examples
    --------
    >>> from costmodels.examples import h100, llama_8b
    >>> kw = dict(batch=8, context=2048)
    >>> alone = draft_memory_per_chip_bytes(h100(), llama_8b(), colocated=False, **kw)
    >>> shared = draft_memory_per_chip_bytes(h100(), llama_8b(), colocated=True, **kw)
    >>> round((alone - shared) / 1e9, 1)
    8.0
    """
    return memory_per_chip_bytes(chip, model, stage="draft", batch=batch, context=context, tp=tp, ep=ep, pp=pp,
                                 precision=precision, kv_precision=kv_precision,
                                 workspace_fraction=0.0 if colocated else workspace_fraction,
                                 attention_precision=attention_precision, workspace_of_free=workspace_of_free)
