"""Measured serving rows priced on a chip, split so that a fit can re-apply its factors cheaply.

:mod:`costmodels.calibration` fits the chip factors; this module prices every mapped row
(:mod:`costmodels.measured_rows`) once on a chip and keeps the parts a factor scales — the weight GEMMs
(the t½ curve), the attention core, the memory, the collectives, the fixed and per-sequence costs — apart.

Examples
--------
>>> from topology.chips import load_chip_catalog
>>> h100 = chip_with(load_chip_catalog()["h100"], 0.70, 0.86, 2.0e-3)
>>> h100.memory_efficiency, h100.step_overhead_s
(0.86, 0.002)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodels.comm import ACTIVATION_BYTES_PER_VALUE, ep_alltoall_s
from costmodels.efficiency import sequence_overhead_s
from costmodels.measured_rows import MappedRow
from costmodels.models import ModelSpec, default_attention_precision
from costmodels.roofline import (
    aggregated_step,
    attention_core_flops,
    forward_cost,
    kv_bytes_per_sequence,
    kv_bytes_read_per_sequence,
    prefill_step,
)
from topology.chips import ChipSpec

__all__ = ["RowCosts", "abs_pct_error", "chip_with", "request_overhead_s", "row_costs"]

#: Share of the aggregated step in flight a new prompt waits for on average (it arrives at a random time).
IN_FLIGHT = 0.5


def chip_with(chip: ChipSpec, compute_efficiency: float, memory_efficiency: float, step_overhead_s: float,
              memory_half_bytes: float = 0.0, compute_half_tokens: float = 0.0,
              layer_overhead_s: float = 0.0, request_overhead_s: float = 0.0,
              allreduce_efficiency: float = 1.0, sequence_overhead_s: float = 0.0,
              kv_memory_efficiency: float = 0.0) -> ChipSpec:
    """A copy of ``chip`` with the calibrated factors (:class:`FitFactors`) replaced.

    ``request_overhead_s`` is no catalogue field: it rides on the copy for the closed-loop TTFT model;
    ``kv_memory_efficiency`` 0 leaves the chip's field unset (KV reads at ``memory_efficiency``).
    """
    return chip.model_copy(update={"compute_efficiency": float(compute_efficiency),
                                   "memory_efficiency": float(memory_efficiency),
                                   "step_overhead_s": float(step_overhead_s),
                                   "memory_half_bytes": float(memory_half_bytes),
                                   "compute_half_tokens": float(compute_half_tokens),
                                   "layer_overhead_s": float(layer_overhead_s),
                                   "request_overhead_s": float(request_overhead_s),
                                   "allreduce_efficiency": float(allreduce_efficiency),
                                   "sequence_overhead_s": float(sequence_overhead_s),
                                   "kv_memory_efficiency": float(kv_memory_efficiency) or None})


def request_overhead_s(chip: ChipSpec) -> float:
    """The closed-loop TTFT model's per-request latency: set by :func:`chip_with` only (plans do not price it)."""
    return float(getattr(chip, "request_overhead_s", 0.0))


def _group_indices(rows: list[MappedRow]) -> dict[tuple, np.ndarray]:
    """Row indices grouped by what must be scalar in a roofline call."""
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(rows):
        groups.setdefault((m.model, m.precision, m.kv_precision, m.layout), []).append(i)
    return {k: np.asarray(v) for k, v in groups.items()}


@dataclass
class RowCosts:
    """Per-row step costs on one chip, split so that the factors can be re-applied.

    TPOT = Σ_j w_j·max(device_j, host_j) over the two step kinds j (the step without prompt tokens, the
    step that carries them, :attr:`MappedRow.carrying_tokens`), each weighted by its share w_j of a
    request's decode steps (``kind_weights``: 1 − q and q, q = :attr:`MappedRow.carrying_share`)::

        device_j = Σ_(k of j) parts[k]·[max(compute[k], memory[k]) + max(core[k], kv[k])] + comm[j] + τ + L·τ_layer
        host_j   = sequences[j]·h                  (overlapping engines: :mod:`costmodels.roofline` notes)

    over K = 4 parts (each part's weight GEMMs and its attention core, :mod:`costmodels.roofline`): k = 0, 1
    the step without prompt tokens, k = 2, 3 the one that carries them; in each pair the first is the whole
    aggregated step, or the attention step of a DP-attention row, the second its FFN step. ``parts[k]`` is 1
    where the part exists, else 0. ``tokens[k]`` is the GEMM row count the compute efficiency depends on
    (:attr:`costmodels.roofline.StepCost.gemm_rows`: a routed expert's GEMM has only the tokens routed to
    it), ``layers`` the layer passes paid a launch
    cost. TTFT (``ttft_model``) = ttft_scale · (one prefill step) + ttft_in_flight · (the aggregated step)
    + the request overhead, ``nan`` on rows that are not TTFT-eligible.
    """

    tpot_compute: np.ndarray  # (4, N) s, the weight GEMMs (scaled by the t½ curve)
    tpot_core: np.ndarray  # (4, N) s, the attention core (not)
    tpot_memory: np.ndarray  # (4, N) s, the weights (the GEMMs' bytes)
    tpot_kv: np.ndarray  # (4, N) s, the KV-cache reads (the attention core's bytes)
    tpot_tokens: np.ndarray  # (4, N)
    tpot_parts: np.ndarray  # (4, N) 1 where the part exists
    tpot_kind_weights: np.ndarray  # (2, N) each step kind's share of the decode steps (1 − q, q)
    tpot_comm: np.ndarray  # (2, N) s, each step kind's
    tpot_layers: np.ndarray  # (N,)
    tpot_sequences: np.ndarray  # (2, N) sequences each step kind holds (the per-sequence host cost's count)
    tpot_s: np.ndarray  # (N,) s, as the roofline returns it on this chip
    ttft_compute: np.ndarray  # (N,) s
    ttft_core: np.ndarray  # (N,) s
    ttft_memory: np.ndarray  # (N,) s, the weights
    ttft_kv: np.ndarray  # (N,) s, the KV cache
    ttft_tokens: np.ndarray  # (N,)
    ttft_comm: np.ndarray  # (N,) s
    ttft_layers: np.ndarray  # (N,)
    ttft_scale: np.ndarray  # (N,) prefills a TTFT waits for: (b + 1)/2 (wave) or 1; nan if not eligible
    ttft_s: np.ndarray  # (N,) s
    ttft_in_flight: np.ndarray  # (N,) share of the aggregated step a new prompt waits for


@dataclass
class _Step:
    """One aggregated step of a group of rows, its two parts (whole or attention; FFN) apart."""

    compute: np.ndarray  # (2, n) s
    core: np.ndarray  # (2, n) s
    memory: np.ndarray  # (2, n) s, weights
    kv: np.ndarray  # (2, n) s, KV cache
    tokens: np.ndarray  # (2, n)
    exists: np.ndarray  # (2, n) 1 where the part exists
    comm: np.ndarray  # (n,) s
    sequences: np.ndarray  # (n,)
    time_s: np.ndarray  # (n,) s


def _chunked_part(chip: ChipSpec, model: ModelSpec, part: str, batch, context, chunk, chunk_ctx, tp, ep, precision,
                  kv_precision, attention_precision=None):
    """One aggregated step of ``part`` (attention or FFN): ``batch`` decode tokens + a ``chunk`` of prompt."""
    attn = batch * np.asarray(attention_core_flops(model, new_tokens=1, context=context, decode=True)) + np.asarray(
        attention_core_flops(model, new_tokens=chunk, context=chunk_ctx, decode=False))
    kv = batch * np.asarray(kv_bytes_read_per_sequence(model, kv_precision, context)) + np.where(
        chunk > 0, np.asarray(kv_bytes_per_sequence(model, kv_precision, chunk_ctx + chunk)), 0.0)
    return forward_cost(chip, model, part=part, sequences=batch + (chunk > 0), tokens=batch + chunk,
                        attention_flops=attn, kv_bytes=kv, tp=tp, ep=ep, precision=precision,
                        attention_precision=attention_precision)


def _step(chip: ChipSpec, model: ModelSpec, layout: str, rs: list[MappedRow], chunk: np.ndarray, precision: str,
          kv_prec: str, attn_prec: str) -> _Step:
    """The aggregated step of the rows ``rs`` (one layout) carrying ``chunk`` prompt tokens."""

    def col(attr):
        return np.array([getattr(m, attr) for m in rs], dtype=float)

    batch, context, tp, pp, ep = col("batch"), col("context"), col("tp"), col("pp"), col("ep")
    isl = np.array([m.row.isl for m in rs], dtype=float)
    n = len(rs)
    c, core, mem, kv, exists = (np.zeros((2, n)) for _ in range(5))
    tok = np.ones((2, n))
    if layout == "tp":
        prompts = np.maximum(chunk / isl, 1.0)  # a budget above the prompt holds several
        seqs = batch + prompts * (chunk > 0)
        st = aggregated_step(chip, model, batch=batch, context=context, chunk_tokens=chunk,
                             chunk_context=np.maximum(isl - chunk, 0.0) / 2.0, chunk_prompts=prompts, tp=tp, pp=pp,
                             ep=ep,
                             precision=precision, kv_precision=kv_prec, attention_precision=attn_prec)
        c[0], core[0] = np.asarray(st.compute_s) - st.core_s, st.core_s
        mem[0], kv[0] = np.asarray(st.memory_s) - st.kv_memory_s, st.kv_memory_s
        tok[0], exists[0] = st.gemm_rows, 1.0
        return _Step(c, core, mem, kv, tok, exists, np.asarray(st.comm_s) + 0.0 * batch, seqs,
                     np.asarray(st.time_s) + 0.0 * batch)
    # ``chunk`` is one attention group's; the experts see every group's
    dp = col("attn_dp")
    seqs = batch + dp * (chunk > 0)
    att = _chunked_part(chip, model, "attention", batch / dp, context, chunk, np.maximum(isl - chunk, 0.0) / 2.0,
                        col("attn_tp"), 1, precision, kv_prec, attn_prec)
    ffn = forward_cost(chip, model, part="ffn", sequences=seqs, tokens=batch + dp * chunk, attention_flops=0.0,
                       kv_bytes=0.0, tp=tp, ep=ep, precision=precision)
    a2a = np.zeros(n)
    if model.moe is not None:
        a2a = model.n_moe_layers * np.asarray(ep_alltoall_s(
            chip, batch + dp * chunk, model.moe.active_experts, model.hidden_size, ACTIVATION_BYTES_PER_VALUE, ep))
    c[0], core[0], tok[0] = np.asarray(att.compute_s) - att.core_s, att.core_s, att.gemm_rows
    mem[0], kv[0] = np.asarray(att.memory_s) - att.kv_memory_s, att.kv_memory_s
    c[1], mem[1], tok[1] = ffn.compute_s, ffn.memory_s, ffn.gemm_rows
    exists[:] = 1.0
    comm = np.asarray(att.comm_s) + np.asarray(ffn.comm_s) + a2a
    # attention and FFN run back to back on the same chips: one framework overhead, each part's layer
    # launches, and the host work of all the step's sequences (the attention part priced a DP group's)
    device = np.asarray(att.device_s) + np.asarray(ffn.device_s) - chip.step_overhead_s + a2a
    return _Step(c, core, mem, kv, tok, exists, comm, seqs, np.maximum(device, sequence_overhead_s(chip) * seqs))


def row_costs(chip: ChipSpec, models: dict[str, ModelSpec], rows: list[MappedRow], ttft_model: str = "wave"
              ) -> RowCosts:
    """Price every row on ``chip`` (vectorised: one roofline call per group and step kind); ``ttft_model`` as
    :data:`costmodels.calibration.TTFT_MODEL`."""
    n = len(rows)
    c, core, mem, kv, parts = (np.zeros((4, n)) for _ in range(5))
    tok = np.ones((4, n))
    kinds, comm, seqs = np.zeros((2, n)), np.zeros((2, n)), np.zeros((2, n))
    layers, tpot = np.zeros(n), np.zeros(n)
    pc, pcore, pm, pkv, ptok, pcomm, player, pscale, ttft, wait = (np.full(n, np.nan) for _ in range(10))
    for (model_name, precision, kv_prec, layout), idx in _group_indices(rows).items():
        model = models[model_name]
        attn_prec = default_attention_precision(model, precision)
        rs = [rows[i] for i in idx]
        q = np.array([m.carrying_share for m in rs])
        plain = _step(chip, model, layout, rs, np.zeros(len(rs)), precision, kv_prec, attn_prec)
        carry = _step(chip, model, layout, rs, np.array([m.carrying_tokens for m in rs]), precision, kv_prec,
                      attn_prec)
        for j, st, w in ((0, plain, 1.0 - q), (1, carry, q)):
            k0 = 2 * j
            c[k0:k0 + 2, idx], core[k0:k0 + 2, idx], mem[k0:k0 + 2, idx] = st.compute, st.core, st.memory
            kv[k0:k0 + 2, idx] = st.kv
            tok[k0:k0 + 2, idx], parts[k0:k0 + 2, idx] = st.tokens, st.exists
            kinds[j, idx], comm[j, idx], seqs[j, idx] = w, st.comm, st.sequences
            tpot[idx] += w * st.time_s
        layers[idx] = model.layers if layout == "tp" else 2 * model.layers
        isl = np.array([m.row.isl for m in rs], dtype=float)
        batch = np.array([m.batch for m in rs], dtype=float)
        elig = np.array([m.ttft_eligible for m in rs])
        if elig.any():
            e = idx[elig]
            tp, pp, ep = (np.array([getattr(m, a) for m in rs], dtype=float)[elig] for a in ("tp", "pp", "ep"))
            pf = prefill_step(chip, model, prompt=isl[elig], batch=1, tp=tp, pp=pp, ep=ep,
                              precision=precision, kv_precision=kv_prec, attention_precision=attn_prec)
            pc[e], pcore[e] = np.asarray(pf.compute_s) - pf.core_s, pf.core_s
            pm[e], pkv[e], pcomm[e] = np.asarray(pf.memory_s) - pf.kv_memory_s, pf.kv_memory_s, pf.comm_s
            ptok[e], player[e] = pf.gemm_rows, model.layers
            if ttft_model == "wave":
                pscale[e], wait[e] = (batch[elig] + 1.0) / 2.0, 0.0
                ttft[e] = pscale[e] * np.asarray(pf.time_s)
            else:  # closed loop: a prompt arrives alone, while the others' step runs (none when b = 1)
                pscale[e], wait[e] = 1.0, np.where(batch[elig] > 1, IN_FLIGHT, 0.0)
                ttft[e] = np.asarray(pf.time_s) + wait[e] * tpot[e] + request_overhead_s(chip)
    return RowCosts(c, core, mem, kv, tok, parts, kinds, comm, layers, seqs, tpot, pc, pcore, pm, pkv, ptok, pcomm,
                    player, pscale, ttft, wait)


def abs_pct_error(pred, meas) -> np.ndarray:
    """|pred − meas| / meas · 100."""
    p, y = np.asarray(pred, dtype=float), np.asarray(meas, dtype=float)
    return np.abs(p - y) / y * 100.0
