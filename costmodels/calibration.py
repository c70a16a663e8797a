"""Calibrate a chip's efficiency factors against measured serving points.

The roofline (:mod:`costmodels.roofline`) prices a step as
``max(FLOPs / (g·F·η_c), bytes / (g·BW·η_m)) + t_comm + τ``. This module maps
measured aggregated-serving points (model, system, layout, ISL/OSL,
concurrency → TTFT, TPOT) to cost-model predictions and fits, per chip, the
three free factors ``compute_efficiency`` (η_c), ``memory_efficiency`` (η_m)
and ``step_overhead_s`` (τ) by a deterministic grid search. It only reports:
it never edits the catalogue.

The measured rows and their mapping to cost-model inputs are
:mod:`costmodels.measured_rows` (its module docstring documents the mapping).

Fit
---
Per chip, over that chip's kept rows, with ``L_X = Σ_rows w_r·|ln(X_pred/X_meas)|``
(row weights ``w_r`` equal per model — :data:`PER_MODEL_WEIGHTS` — so the
model with the most benchmark rows does not set a chip-wide factor alone) and
a weak prior ``P = λ·[ln(η_c/η_c0)² + ln(η_m/η_m0)²]`` towards the catalogue
values (λ = :data:`PRIOR_WEIGHT`; it only decides directions the data cannot
see), in two stages:

1. ``(η_c, η_m, τ) = argmin L_TPOT + P`` over η ∈ [0.05, 1], τ ∈ [0, 20 ms]
   by a coarse-to-fine grid. Decode is memory-bound in almost every row, so
   this sets η_m and τ (η_c stays near its prior).
2. ``η_c = argmin L_TPOT + w·L_TTFT + P`` (w = :data:`TTFT_WEIGHT`) with η_m
   and τ held: the prefill side sets η_c, and the cruder TTFT model (queueing)
   cannot drag the decode factors.

If the catalogue values score better than the result (objective
``L_TPOT + w·L_TTFT + P``), they are returned unchanged. The grid has no
randomness and ties resolve to the first point, so the fit is deterministic.
Every prediction is linear in 1/η and τ, so each row is priced once on a
unit chip (η = 1, τ = 0, a ``model_copy`` of the catalogue record) and
re-assembled per grid point; :func:`predict_rows` prices rows on any chip
directly (the reports use it).

Examples
--------
>>> from topology.chips import load_chip_catalog
>>> h100 = chip_with(load_chip_catalog()["h100"], 0.70, 0.86, 2.0e-3)
>>> h100.memory_efficiency, h100.step_overhead_s
(0.86, 0.002)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from costmodels.comm import ACTIVATION_BYTES_PER_VALUE, ep_alltoall_s
from costmodels.measured_rows import (
    SYSTEM_CHIPS,
    MappedRow,
    MeasuredRow,
    map_rows,
    read_measured_csv,
)
from costmodels.models import ModelSpec, load_model_catalog
from costmodels.roofline import decode_attention_step, decode_ffn_step, decode_step, prefill_step
from topology.chips import ChipSpec, load_chip_catalog

__all__ = [
    "EFFICIENCY_BOUNDS",
    "KERNEL_REFERENCE",
    "OVERHEAD_BOUNDS_S",
    "PER_MODEL_WEIGHTS",
    "PRIOR_WEIGHT",
    "TTFT_WEIGHT",
    "CalibrationResult",
    "ChipFit",
    "FitFactors",
    "GroupError",
    "abs_pct_error",
    "calibrate",
    "chip_with",
    "fit_chip",
    "predict",
    "predict_rows",
]

#: Weight of the TTFT term in the fit objective (TPOT has weight 1).
TTFT_WEIGHT = 1.0
#: Weight every model of a system equally in the objective (else every row).
PER_MODEL_WEIGHTS = True
#: Weak prior pulling η_c, η_m towards the catalogue values (log-space, squared).
PRIOR_WEIGHT = 0.01
#: Search bounds: efficiencies in [lo, 1], overhead in [0, hi] seconds.
EFFICIENCY_BOUNDS = (0.05, 1.0)
OVERHEAD_BOUNDS_S = (0.0, 20e-3)


# ---- predictions ---------------------------------------------------------------


def chip_with(chip: ChipSpec, compute_efficiency: float, memory_efficiency: float, step_overhead_s: float) -> ChipSpec:
    """A copy of ``chip`` with the three calibrated factors replaced."""
    return chip.model_copy(update={"compute_efficiency": float(compute_efficiency),
                                   "memory_efficiency": float(memory_efficiency),
                                   "step_overhead_s": float(step_overhead_s)})


def _group_indices(rows: list[MappedRow]) -> dict[tuple, np.ndarray]:
    """Row indices grouped by what must be scalar in a roofline call."""
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(rows):
        groups.setdefault((m.model, m.precision, m.kv_precision, m.layout), []).append(i)
    return {k: np.asarray(v) for k, v in groups.items()}


@dataclass
class _RowCosts:
    """Per-row step costs on one chip, split so that η and τ can be re-applied.

    TPOT = Σ_k max(tpot_compute[k], tpot_memory[k]) + tpot_comm + τ (k = 0: the
    whole decode step, or the attention step of a DP-attention row; k = 1: its
    FFN step, zero otherwise). TTFT = ttft_scale · (max(ttft_compute,
    ttft_memory) + ttft_comm + τ), ``nan`` on rows that are not TTFT-eligible.
    """

    tpot_compute: np.ndarray  # (2, N) s
    tpot_memory: np.ndarray  # (2, N) s
    tpot_comm: np.ndarray  # (N,) s
    tpot_s: np.ndarray  # (N,) s, as the roofline returns it on this chip
    ttft_compute: np.ndarray  # (N,) s
    ttft_memory: np.ndarray  # (N,) s
    ttft_comm: np.ndarray  # (N,) s
    ttft_scale: np.ndarray  # (N,) the FIFO-wave factor (b + 1)/2
    ttft_s: np.ndarray  # (N,) s


def _row_costs(chip: ChipSpec, models: dict[str, ModelSpec], rows: list[MappedRow]) -> _RowCosts:
    """Price every row on ``chip`` (vectorised: one roofline call per group)."""
    n = len(rows)
    c, mem = np.zeros((2, n)), np.zeros((2, n))
    comm, tpot = np.zeros(n), np.zeros(n)
    pc, pm, pcomm, pscale, ttft = (np.full(n, np.nan) for _ in range(5))
    for (model_name, precision, kv_prec, layout), idx in _group_indices(rows).items():
        model = models[model_name]
        rs = [rows[i] for i in idx]

        def col(attr, rs=rs):
            return np.array([getattr(m, attr) for m in rs], dtype=float)

        batch, context, tp, pp, ep = col("batch"), col("context"), col("tp"), col("pp"), col("ep")
        if layout == "tp":
            st = decode_step(chip, model, batch=batch, context=context, tp=tp, pp=pp, ep=ep,
                             precision=precision, kv_precision=kv_prec)
            c[0, idx], mem[0, idx], comm[idx] = st.compute_s, st.memory_s, st.comm_s
            tpot[idx] = st.time_s
        else:
            att = decode_attention_step(chip, model, batch=batch / col("attn_dp"), context=context,
                                        tp=col("attn_tp"), precision=precision, kv_precision=kv_prec)
            ffn = decode_ffn_step(chip, model, batch=batch, tp=tp, ep=ep, precision=precision)
            a2a = np.zeros(len(idx))
            if model.moe is not None:
                a2a = model.n_moe_layers * np.asarray(ep_alltoall_s(
                    chip, batch, model.moe.active_experts, model.hidden_size, ACTIVATION_BYTES_PER_VALUE, ep))
            c[0, idx], mem[0, idx] = att.compute_s, att.memory_s
            c[1, idx], mem[1, idx] = ffn.compute_s, ffn.memory_s
            comm[idx] = np.asarray(att.comm_s) + np.asarray(ffn.comm_s) + a2a
            # attention and FFN run back to back on the same chips: one step overhead
            tpot[idx] = np.asarray(att.time_s) + np.asarray(ffn.time_s) - chip.step_overhead_s + a2a
        elig = np.array([m.ttft_eligible for m in rs])
        if elig.any():
            e = idx[elig]
            isl = np.array([m.row.isl for m in rs], dtype=float)
            pf = prefill_step(chip, model, prompt=isl[elig], batch=1, tp=tp[elig], pp=pp[elig], ep=ep[elig],
                              precision=precision, kv_precision=kv_prec)
            pc[e], pm[e], pcomm[e] = pf.compute_s, pf.memory_s, pf.comm_s
            pscale[e] = (batch[elig] + 1.0) / 2.0
            ttft[e] = pscale[e] * np.asarray(pf.time_s)
    return _RowCosts(c, mem, comm, tpot, pc, pm, pcomm, pscale, ttft)


def predict_rows(chip: ChipSpec, rows: list[MappedRow], models: dict[str, ModelSpec] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (TPOT, TTFT) arrays in seconds for mapped rows on ``chip``.

    TTFT is ``nan`` for rows that are not TTFT-eligible (see module notes).
    """
    models = load_model_catalog() if models is None else models
    rc = _row_costs(chip, models, rows)
    return rc.tpot_s, rc.ttft_s


def predict(chip: ChipSpec, model: ModelSpec, m: MappedRow) -> tuple[float, float]:
    """Predicted (TPOT, TTFT) in seconds of one mapped row on ``chip``."""
    tpot, ttft = predict_rows(chip, [m], {m.model: model})
    return float(tpot[0]), float(ttft[0])


def abs_pct_error(pred, meas) -> np.ndarray:
    """|pred − meas| / meas · 100."""
    p, y = np.asarray(pred, dtype=float), np.asarray(meas, dtype=float)
    return np.abs(p - y) / y * 100.0


# ---- fit -----------------------------------------------------------------------


@dataclass(frozen=True)
class FitFactors:
    """The three calibrated chip factors."""

    compute_efficiency: float
    memory_efficiency: float
    step_overhead_s: float


#: Uncalibrated kernel-level factors, the fit's starting point: H100 Vidur profiles
#: (large GEMMs 69-76 % of peak, memory-bound GEMMs 80-92 % of HBM bandwidth) and a
#: 2 ms per-step framework overhead (1.5-10 ms measured).
KERNEL_REFERENCE = FitFactors(compute_efficiency=0.70, memory_efficiency=0.86, step_overhead_s=2.0e-3)


@dataclass
class _Terms:
    """Unit-chip decomposition: pred = scale·(Σ_k max(c_k/η_c, m_k/η_m) + comm + τ)."""

    compute: np.ndarray  # (K, N) seconds at η_c = 1
    memory: np.ndarray  # (K, N) seconds at η_m = 1
    comm: np.ndarray  # (N,)
    scale: np.ndarray  # (N,)
    measured: np.ndarray  # (N,) seconds
    weight: np.ndarray  # (N,) sums to 1

    def predict(self, ce: float, me: float, tau: float) -> np.ndarray:
        base = np.maximum(self.compute / ce, self.memory / me).sum(axis=0) + self.comm + tau
        return self.scale * base


def _weights(names: np.ndarray, per_model: bool) -> np.ndarray:
    """Row weights summing to 1: equal per row, or equal per model (then per row within it)."""
    if names.size == 0:
        return np.zeros(0)
    if not per_model:
        return np.full(names.size, 1.0 / names.size)
    uniq, inv, counts = np.unique(names, return_inverse=True, return_counts=True)
    return 1.0 / (len(uniq) * counts[inv])


def _build_terms(chip: ChipSpec, models: dict[str, ModelSpec], rows: list[MappedRow],
                 per_model: bool) -> tuple[_Terms, _Terms]:
    """Price the rows once on a unit chip (η = 1, τ = 0): TPOT and TTFT terms."""
    rc = _row_costs(chip_with(chip, 1.0, 1.0, 0.0), models, rows)
    names = np.array([m.model for m in rows])
    tpot = _Terms(rc.tpot_compute, rc.tpot_memory, rc.tpot_comm, np.ones(len(rows)),
                  np.array([m.row.tpot_ms for m in rows]) / 1e3, _weights(names, per_model))
    e = ~np.isnan(rc.ttft_scale)
    ttft = _Terms(rc.ttft_compute[e][None, :], rc.ttft_memory[e][None, :], rc.ttft_comm[e], rc.ttft_scale[e],
                  np.array([m.row.ttft_ms for m in rows])[e] / 1e3, _weights(names[e], per_model))
    return tpot, ttft


def _grid_losses(terms: _Terms, ce: np.ndarray, me: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Weighted mean |ln(pred/meas)| for every (ce, me, tau) on the grid: shape (len(ce), len(me), len(taus))."""
    out = np.zeros((len(ce), len(me), len(taus)))
    if terms.measured.size == 0:
        return out
    lnm = np.log(terms.measured)
    mem = terms.memory[None, :, :] / me[:, None, None]  # (M, K, N)
    for a, c in enumerate(ce):
        base = np.maximum(terms.compute[None, :, :] / c, mem).sum(axis=1) + terms.comm  # (M, N)
        for t, tau in enumerate(taus):
            out[a, :, t] = np.abs(np.log(terms.scale * (base + tau)) - lnm) @ terms.weight
    return out


def _objective_grid(tpot: _Terms, ttft: _Terms, ce, me, taus, prior: FitFactors, ttft_weight, prior_weight):
    loss = _grid_losses(tpot, ce, me, taus) + ttft_weight * _grid_losses(ttft, ce, me, taus)
    reg = ((np.log(ce / prior.compute_efficiency) ** 2)[:, None, None]
           + (np.log(me / prior.memory_efficiency) ** 2)[None, :, None])
    return loss + prior_weight * reg


def _axis(center: float, half: float, step: float, lo: float, hi: float) -> np.ndarray:
    a = center + step * np.arange(-round(half / step), round(half / step) + 1)
    return np.unique(np.round(np.clip(a, lo, hi), 9))


#: Coarse-to-fine search: (half-width, step) for the efficiencies and for τ (s).
_SEARCH_STAGES = ((None, 0.05, None, 0.5e-3), (0.05, 0.01, 0.5e-3, 0.1e-3), (0.01, 0.002, 0.1e-3, 0.02e-3))


def _search(objective, prior: FitFactors) -> FitFactors:
    """Coarse-to-fine grid minimum of ``objective(ce, me, taus) -> (C, M, T)``; ties → first."""
    lo, hi = EFFICIENCY_BOUNDS
    tlo, thi = OVERHEAD_BOUNDS_S
    best = None
    for half_e, step_e, half_t, step_t in _SEARCH_STAGES:
        if best is None:
            ce = me = _axis(hi, hi - lo, step_e, lo, hi)
            taus = _axis(tlo, thi - tlo, step_t, tlo, thi)
        else:
            ce = _axis(best[0], half_e, step_e, lo, hi)
            me = _axis(best[1], half_e, step_e, lo, hi)
            taus = _axis(best[2], half_t, step_t, tlo, thi)
        obj = objective(ce, me, taus)
        a, b, t = np.unravel_index(int(np.argmin(obj)), obj.shape)
        best = (float(ce[a]), float(me[b]), float(taus[t]))
    f = FitFactors(*best)
    if objective(*(np.array([v]) for v in asdict(prior).values()))[0, 0, 0] <= objective(
            *(np.array([v]) for v in asdict(f).values()))[0, 0, 0]:
        return prior
    return f


def _fit(tpot: _Terms, ttft: _Terms, prior: FitFactors, ttft_weight: float, prior_weight: float) -> FitFactors:
    """Two stages. (1) η_m, τ (and η_c) on TPOT alone: decode is memory-bound
    in almost every row, so TPOT sets η_m and τ and leaves η_c at its prior.
    (2) η_c on TPOT + w·TTFT with η_m and τ held: the prefill side sets η_c, and
    the cruder TTFT model (queueing) cannot drag the decode factors."""
    f1 = _search(lambda ce, me, taus: _objective_grid(tpot, ttft, ce, me, taus, prior, 0.0, prior_weight), prior)
    lo, hi = EFFICIENCY_BOUNDS
    ce = _axis(hi, hi - lo, 0.001, lo, hi)
    obj = _objective_grid(tpot, ttft, ce, np.array([f1.memory_efficiency]), np.array([f1.step_overhead_s]),
                          prior, ttft_weight, prior_weight)[:, 0, 0]
    return FitFactors(float(ce[int(np.argmin(obj))]), f1.memory_efficiency, f1.step_overhead_s)


def _objective(tpot: _Terms, ttft: _Terms, f: FitFactors, prior: FitFactors, ttft_weight, prior_weight) -> float:
    return float(_objective_grid(tpot, ttft, np.array([f.compute_efficiency]), np.array([f.memory_efficiency]),
                                 np.array([f.step_overhead_s]), prior, ttft_weight, prior_weight)[0, 0, 0])


@dataclass(frozen=True)
class GroupError:
    """Absolute % errors of one (system, model) group, catalogue defaults vs fitted.

    ``model == "all"`` is the whole system. TTFT statistics cover the
    TTFT-eligible rows only (``n_ttft``); ``nan`` when there are none.
    """

    system: str
    model: str
    n_tpot: int
    tpot_median_default: float
    tpot_p90_default: float
    tpot_median_fitted: float
    tpot_p90_fitted: float
    n_ttft: int
    ttft_median_default: float
    ttft_p90_default: float
    ttft_median_fitted: float
    ttft_p90_fitted: float


@dataclass
class ChipFit:
    """Fit result of one system: factors before/after, objective, errors per model."""

    system: str
    chip: str
    default: FitFactors
    fitted: FitFactors
    objective_default: float
    objective_fitted: float
    n_tpot: int
    n_ttft: int
    errors: list[GroupError] = field(default_factory=list)
    #: Per-row values in seconds: ``{tpot,ttft}_{measured,default,fitted}`` (ttft nan if not eligible).
    predictions: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    rows: list[MappedRow] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {"system": self.system, "chip": self.chip, "default": asdict(self.default),
                "fitted": asdict(self.fitted), "objective_default": self.objective_default,
                "objective_fitted": self.objective_fitted, "n_tpot": self.n_tpot, "n_ttft": self.n_ttft,
                "errors": [asdict(e) for e in self.errors]}


def _stats(err: np.ndarray) -> tuple[float, float]:
    if err.size == 0:
        return float("nan"), float("nan")
    return float(np.median(err)), float(np.percentile(err, 90))


def _group_errors(system: str, rows: list[MappedRow], pred: dict[str, np.ndarray]) -> list[GroupError]:
    out = []
    names = sorted({m.model for m in rows})
    model_col = np.array([m.model for m in rows])
    for name in [*names, "all"]:
        sel = np.ones(len(rows), bool) if name == "all" else model_col == name
        tp_d = abs_pct_error(pred["tpot_default"][sel], pred["tpot_measured"][sel])
        tp_f = abs_pct_error(pred["tpot_fitted"][sel], pred["tpot_measured"][sel])
        tsel = sel & ~np.isnan(pred["ttft_default"])
        tt_d = abs_pct_error(pred["ttft_default"][tsel], pred["ttft_measured"][tsel])
        tt_f = abs_pct_error(pred["ttft_fitted"][tsel], pred["ttft_measured"][tsel])
        out.append(GroupError(system, name, int(sel.sum()), *_stats(tp_d), *_stats(tp_f),
                              int(tsel.sum()), *_stats(tt_d), *_stats(tt_f)))
    return out


def fit_chip(chip: ChipSpec, rows: list[MappedRow], models: dict[str, ModelSpec] | None = None, *,
             system: str | None = None, ttft_weight: float = TTFT_WEIGHT,
             prior_weight: float = PRIOR_WEIGHT, per_model: bool = PER_MODEL_WEIGHTS,
             reference: FitFactors | None = None) -> ChipFit:
    """Fit η_c, η_m and τ of ``chip`` on ``rows`` (all mapped to that chip).

    The fit starts from, and is reported against, ``reference`` (default
    :data:`KERNEL_REFERENCE`, the uncalibrated kernel-level factors) — not the
    catalogue's values, which for calibrated chips are this fit's own output.
    The reference is kept as the result when no grid point beats it, so the
    fitted objective is never above the reference one.
    """
    models = load_model_catalog() if models is None else models
    if not rows:
        raise ValueError("no rows to fit")
    if any(m.chip != chip.name for m in rows):
        raise ValueError(f"rows for another chip than {chip.name!r}")
    default = KERNEL_REFERENCE if reference is None else reference
    chip = chip_with(chip, default.compute_efficiency, default.memory_efficiency, default.step_overhead_s)
    tpot_terms, ttft_terms = _build_terms(chip, models, rows, per_model)
    fitted = _fit(tpot_terms, ttft_terms, default, ttft_weight, prior_weight)
    obj_d = _objective(tpot_terms, ttft_terms, default, default, ttft_weight, prior_weight)
    obj_f = _objective(tpot_terms, ttft_terms, fitted, default, ttft_weight, prior_weight)
    if obj_f > obj_d:
        fitted, obj_f = default, obj_d
    fitted_chip = chip_with(chip, fitted.compute_efficiency, fitted.memory_efficiency, fitted.step_overhead_s)
    pred = {"tpot_measured": tpot_terms.measured, "ttft_measured": np.array([m.row.ttft_ms for m in rows]) / 1e3}
    pred["tpot_default"], pred["ttft_default"] = predict_rows(chip, rows, models)
    pred["tpot_fitted"], pred["ttft_fitted"] = predict_rows(fitted_chip, rows, models)
    name = system or rows[0].row.system
    return ChipFit(name, chip.name, default, fitted, obj_d, obj_f, len(rows), int(ttft_terms.measured.size),
                   _group_errors(name, rows, pred), pred, list(rows))


@dataclass
class CalibrationResult:
    """Fits of every mapped system plus what was skipped and why."""

    fits: dict[str, ChipFit]
    skipped: Counter
    n_rows: int
    n_kept: int

    def to_dict(self) -> dict:
        return {"n_rows": self.n_rows, "n_kept": self.n_kept, "skipped": dict(sorted(self.skipped.items())),
                "fits": {k: v.to_dict() for k, v in self.fits.items()}}


def calibrate(rows: list[MeasuredRow] | None = None, chips: dict[str, ChipSpec] | None = None,
              models: dict[str, ModelSpec] | None = None, *, systems: list[str] | None = None,
              ttft_weight: float = TTFT_WEIGHT, prior_weight: float = PRIOR_WEIGHT,
              per_model: bool = PER_MODEL_WEIGHTS) -> CalibrationResult:
    """Map ``rows`` (default: the shipped CSV) and fit every system they cover."""
    rows = read_measured_csv() if rows is None else rows
    chips = load_chip_catalog() if chips is None else chips
    models = load_model_catalog() if models is None else models
    kept, skipped = map_rows(rows, chips, models)
    by_system: dict[str, list[MappedRow]] = {}
    for m in kept:
        by_system.setdefault(m.row.system, []).append(m)
    fits = {}
    for system in sorted(by_system):
        if systems is not None and system not in systems:
            continue
        fits[system] = fit_chip(chips[SYSTEM_CHIPS[system]], by_system[system], models, system=system,
                                ttft_weight=ttft_weight, prior_weight=prior_weight, per_model=per_model)
    return CalibrationResult(fits, skipped, len(rows), len(kept))
