"""Memory fit of a stage replica on its chips.

Per chip of a replica of g = dp·tp·pp chips (bytes)::

    memory = W_rep / (tp·pp) + W_routed·⌈E/ep⌉·ep/E / g + B · kv_bytes(c) · dup(tp) / g + workspace

* ``W_rep``: the stored weights every data-parallel rank holds — all but the
  routed experts (attention, embeddings, dense FFN, shared experts, routers)
  for prefill, decode and draft; attention projections + embeddings for
  ``decode-attention``; dense FFN, shared experts and routers for
  ``decode-ffn``. Sliced ``tp`` ways, one copy per DP rank.
* ``W_routed``: every routed expert, one copy per stage over its dp·tp chips.
  ``ep`` ranks hold whole experts, the fullest ⌈E/ep⌉ of them (E = 256,
  ep = 72: 4 slots a rank, the spare ones EPLB's redundant experts); when ep
  divides E this is W_routed / g, the same as without expert parallelism.
  With dp = 1 and ep | E the whole formula is the familiar W_stage / g.
* KV: B sequences at ``context`` tokens (pass the largest context a sequence
  reaches), B/dp per DP rank. Prefill holds its batch's KV transiently — pass
  ``context = cached + prompt``. The FFN pool holds none. Under tp > kv_heads
  GQA heads are copied; MLA's latent is copied on every tp rank of a group —
  once per DP rank with tp = 1.
* ``workspace = workspace_fraction · capacity``: activations, CUDA graphs,
  allocator fragmentation.

The capacity is the chip's working tier ``chip.memory[0]`` — SRAM on SRAM-only
chips, where the weights must live too: a 500 MB LPU needs ≈ 300 chips per
replica for a 70B BF16 model.

Examples
--------
>>> from costmodels.examples import lpu_500mb, llama_70b
>>> min_chips_for_weights(lpu_500mb(), llama_70b(), precision="bf16")
314
"""

from __future__ import annotations

import numpy as np

from costmodels.arithmetic import routed_expert_bytes
from costmodels.arrays import as_result
from costmodels.models import ModelSpec
from costmodels.roofline import (
    kv_bytes_per_sequence,
    kv_duplication,
    stage_part,
    stored_weight_bytes,
)
from topology.chips import ChipSpec

__all__ = [
    "DEFAULT_WORKSPACE_FRACTION",
    "fits",
    "max_batch_that_fits",
    "memory_per_chip_bytes",
    "min_chips_for_weights",
]

#: Share of the working tier kept free for activations, graphs and fragmentation
#: (vLLM's default gpu_memory_utilization = 0.9 reserves the same 10 %).
DEFAULT_WORKSPACE_FRACTION = 0.10


def _kv_per_chip_per_sequence(model, stage, context, tp, pp, kv_precision, dp=1):
    if stage_part(stage) == "ffn":
        return 0.0 * np.asarray(context, dtype=float)
    g = np.asarray(dp, dtype=float) * np.asarray(tp, dtype=float) * np.asarray(pp, dtype=float)
    kv = np.asarray(kv_bytes_per_sequence(model, kv_precision, context))
    return kv * np.asarray(kv_duplication(model, tp)) / g


def memory_per_chip_bytes(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    stage: str,
    batch,
    context,
    tp=1,
    ep=1,
    pp=1,
    dp=1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    workspace_fraction: float = DEFAULT_WORKSPACE_FRACTION,
    attention_precision: str | None = None,
    workspace_of_free: bool = False,
):
    """Bytes each chip of a ``stage`` replica holds: weights (module notes) + B·kv(c)·dup/g + workspace.

    The workspace is ``workspace_fraction`` of the chip's working tier (vLLM's gpu_memory_utilization
    counts weights in), or with ``workspace_of_free`` of what the weights leave free (TensorRT-LLM's
    free_gpu_memory_fraction).

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> m = memory_per_chip_bytes(h100(), llama_70b(), stage="decode", batch=32, context=8192, tp=8)
    >>> round(m / 1e9, 1)
    36.4

    DeepSeek-V3 FP8 on a Rubin NVL72 domain, wide EP (4 expert slots a chip)
    against TP8 × PP9: each chip holds the attention whole but its latent KV once.

    >>> from costmodels.examples import deepseek_v3
    >>> from topology.chips import load_chip_catalog
    >>> rubin, ds = load_chip_catalog()["rubin"], deepseek_v3()
    >>> kw = dict(stage="decode", batch=4096, context=8192, precision="fp8", workspace_fraction=0.0)
    >>> [round(memory_per_chip_bytes(rubin, ds, dp=72, tp=1, ep=72, **kw) / 1e9, 1),
    ...  round(memory_per_chip_bytes(rubin, ds, tp=8, ep=8, pp=9, **kw) / 1e9, 1)]
    [43.7, 140.3]
    """
    kv_prec = precision if kv_precision is None else kv_precision
    dp_a, tp_a, pp_a = (np.asarray(x, dtype=float) for x in (dp, tp, pp))
    g = dp_a * tp_a * pp_a
    part = stage_part(stage)
    stored = stored_weight_bytes(model, part, precision, attention_precision)
    routed = routed_expert_bytes(model, precision) if part != "attention" else 0.0
    experts = model.moe.experts if model.moe is not None else 1
    ep_a = np.asarray(ep, dtype=float)
    slot_share = np.ceil(experts / ep_a) * ep_a / experts  # fullest EP rank's experts ÷ an even share
    # stored/g, plus the (dp − 1) further copies of the replicated weights and the fullest rank's spare slots.
    weights = (stored + (dp_a - 1.0) * (stored - routed) + routed * (slot_share - 1.0)) / g
    kv = np.asarray(batch, dtype=float) * _kv_per_chip_per_sequence(model, stage, context, tp, pp, kv_prec, dp)
    base = chip.memory_bytes - weights if workspace_of_free else chip.memory_bytes
    return as_result(weights + kv + workspace_fraction * base)


def fits(chip: ChipSpec, memory_or_model, **stage_kwargs):
    """Whether a replica fits the chip's working tier (SRAM on SRAM-only chips).

    ``fits(chip, memory_per_chip_bytes)`` compares bytes with the capacity;
    ``fits(chip, model, stage=…, batch=…, context=…, tp=…, pp=…)`` computes the
    bytes with :func:`memory_per_chip_bytes` first.

    Examples
    --------
    >>> from costmodels.examples import lpu_500mb, llama_70b
    >>> fits(lpu_500mb(), llama_70b(), stage="decode", batch=1, context=1024, tp=8, pp=8)
    False
    >>> fits(lpu_500mb(), llama_70b(), stage="decode", batch=1, context=1024, tp=8, pp=64)
    True
    """
    if isinstance(memory_or_model, ModelSpec):
        memory_or_model = memory_per_chip_bytes(chip, memory_or_model, **stage_kwargs)
    return as_result(np.asarray(memory_or_model, dtype=float) <= chip.memory_bytes)


def min_chips_for_weights(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    stage: str = "decode",
    precision: str = "bf16",
    workspace_fraction: float = DEFAULT_WORKSPACE_FRACTION,
) -> int:
    """Fewest chips whose working tiers hold the stage's weights: ⌈W / ((1 − ws)·capacity)⌉."""
    usable = (1.0 - workspace_fraction) * chip.memory_bytes
    return int(np.ceil(stored_weight_bytes(model, stage_part(stage), precision) / usable))


def max_batch_that_fits(
    chip: ChipSpec,
    model: ModelSpec,
    *,
    stage: str,
    context,
    tp=1,
    ep=1,
    pp=1,
    dp=1,
    precision: str = "bf16",
    kv_precision: str | None = None,
    workspace_fraction: float = DEFAULT_WORKSPACE_FRACTION,
):
    """Largest whole batch whose KV fits beside the weights and workspace (0 if none).

    ``⌊(capacity − W/g − workspace) / (kv(c)·dup/g)⌋``; unbounded (``inf``) for
    the FFN pool, which holds no KV.

    Examples
    --------
    >>> from costmodels.examples import h100, llama_70b
    >>> max_batch_that_fits(h100(), llama_70b(), stage="decode", context=131072, tp=8)
    10.0
    """
    kv_prec = precision if kv_precision is None else kv_precision
    fixed = memory_per_chip_bytes(chip, model, stage=stage, batch=0, context=context, tp=tp, ep=ep, pp=pp,
                                  dp=dp, precision=precision, kv_precision=kv_prec,
                                  workspace_fraction=workspace_fraction)
    per_seq = _kv_per_chip_per_sequence(model, stage, context, tp, pp, kv_prec, dp)
    room = chip.memory_bytes - np.asarray(fixed)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(per_seq > 0, np.floor(np.maximum(room, 0.0) / np.where(per_seq > 0, per_seq, 1.0)),
                     np.where(room >= 0, np.inf, 0.0))
    return as_result(b)
