"""Calibrate a chip's efficiency factors against measured serving points.

The roofline (:mod:`costmodels.roofline`, :mod:`costmodels.efficiency`) prices a
step from the factors of :class:`FitFactors`: η_c, η_m, τ, x½, t½, τ_layer and
the serving all-reduce efficiency η_ar. This module maps measured
aggregated-serving points (model, system, layout, ISL/OSL, concurrency → TTFT,
TPOT; :mod:`costmodels.measured_rows` documents the mapping) to predictions and
fits, per chip, the factors its data can determine. It only reports: it never
edits the catalogue.

Fit
---
Per chip, with ``L_X = Σ_rows w_r·|ln(X_pred/X_meas)|`` (row weights equal per
model, :data:`PER_MODEL_WEIGHTS`, so the model with the most rows does not set
a chip-wide factor alone) and a weak prior ``P = λ·[ln(η_c/η_c0)² +
ln(η_m/η_m0)²]`` towards the reference (λ = :data:`PRIOR_WEIGHT`; it only
decides directions the data cannot see), minimise ``L_TPOT + w·L_TTFT + P``
(w = :data:`TTFT_WEIGHT`) by deterministic coordinate descent
(:func:`coordinate_search`, never worse than the reference). Every prediction
is linear in 1/η, 1/η_ar, τ, τ_layer, x½ and t½ given the roofline's max, so
each row is priced once on a unit chip (a ``model_copy``) and re-assembled per
grid point; :func:`predict_rows` prices rows on any chip directly.

Examples
--------
>>> KERNEL_REFERENCE.compute_efficiency, FACTOR_BOUNDS["allreduce_efficiency"]
(0.7, (0.05, 1.0))
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from costmodels.efficiency import DEFAULT_SEQUENCE_OVERHEAD_S
from costmodels.measured_rows import (
    SYSTEM_CHIPS,
    MappedRow,
    MeasuredRow,
    map_rows,
    read_measured_csv,
)
from costmodels.models import ModelSpec, load_model_catalog
from costmodels.row_costs import abs_pct_error, chip_with, row_costs
from topology.chips import ChipSpec, load_chip_catalog

__all__ = [
    "EFFICIENCY_BOUNDS",
    "FACTOR_BOUNDS",
    "GPU_FACTORS",
    "KERNEL_REFERENCE",
    "OFFLINE_FIT_CHIPS",
    "OVERHEAD_BOUNDS_S",
    "PER_MODEL_WEIGHTS",
    "PRIOR_WEIGHT",
    "PUBLIC_FIT_PLAN",
    "SCALE_FIT_CHIPS",
    "SHARED_FITS",
    "SRAM_REFERENCE",
    "TTFT_MODEL",
    "TTFT_WEIGHT",
    "CalibrationResult",
    "ChipFit",
    "FitFactors",
    "GroupError",
    "abs_pct_error",
    "calibrate",
    "chip_with",
    "coordinate_search",
    "fit_chip",
    "heldout_predictions",
    "predict",
    "predict_rows",
]

#: The light-load TTFT model (:mod:`costmodels.measured_rows`): ``wave`` — the replica's prompts arrive
#: together, the mean one waits for half the others, ``(b + 1)/2`` prefills; ``closed-loop`` — a prompt
#: arrives alone at a random time: one prefill + half of the others' aggregated step in flight + a
#: fitted per-request latency ``request_overhead_s``. ``benchmarks/calibrate.py --ttft-model`` picks it.
TTFT_MODEL = "wave"
#: Weight of the TTFT term in the fit objective (TPOT has weight 1). Below 1 because the light-load TTFT
#: model is the cruder one (≈ 45 % held-out median error against ≈ 20 % for TPOT) and would otherwise steer
#: the chip's physical factors: at weight 1 the H200 fit drove η_c to its bound and η_m to 0.39. Measured
#: at 1, 0.25 and 0 (by benchmarks/calibrate.py): 0.25 keeps the in-campaign held-out TPOT
#: and TTFT errors and cuts the H200 error on the public campaign of benchmarks/LAYOUT_ACCURACY.md
#: from 23 % to 17 % — that campaign chose this one number; it fitted nothing else.
TTFT_WEIGHT = 0.25
#: Weight every model of a system equally in the objective (else every row).
PER_MODEL_WEIGHTS = True
#: Weak prior pulling η_c, η_m towards the catalogue values (log-space, squared).
PRIOR_WEIGHT = 0.01
#: Search bounds: efficiencies in [lo, 1], overhead in [0, hi] seconds.
EFFICIENCY_BOUNDS = (0.05, 1.0)
OVERHEAD_BOUNDS_S = (0.0, 20e-3)


# ---- predictions ---------------------------------------------------------------


def predict_rows(chip: ChipSpec, rows: list[MappedRow], models: dict[str, ModelSpec] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (TPOT, TTFT) arrays in seconds for mapped rows on ``chip``.

    TTFT is ``nan`` for rows that are not TTFT-eligible (see module notes).
    """
    models = load_model_catalog() if models is None else models
    rc = row_costs(chip, models, rows, TTFT_MODEL)
    return rc.tpot_s, rc.ttft_s


def predict(chip: ChipSpec, model: ModelSpec, m: MappedRow) -> tuple[float, float]:
    """Predicted (TPOT, TTFT) in seconds of one mapped row on ``chip``."""
    tpot, ttft = predict_rows(chip, [m], {m.model: model})
    return float(tpot[0]), float(ttft[0])


# ---- fit -----------------------------------------------------------------------


@dataclass(frozen=True)
class FitFactors:
    """The calibrated chip factors (:mod:`costmodels.efficiency` explains the last three)."""

    compute_efficiency: float
    memory_efficiency: float
    step_overhead_s: float
    memory_half_bytes: float = 0.0
    compute_half_tokens: float = 0.0
    layer_overhead_s: float = 0.0
    request_overhead_s: float = 0.0
    allreduce_efficiency: float = 1.0
    sequence_overhead_s: float = 0.0
    kv_memory_efficiency: float = 0.0  # 0: KV reads at memory_efficiency (the chip's field unset)


#: Uncalibrated kernel-level factors, the fit's starting point: H100 Vidur profiles
#: (large GEMMs 69-76 % of peak, memory-bound GEMMs 80-92 % of HBM bandwidth) and a
#: 2 ms per-step framework overhead (1.5-10 ms measured); flat operating-point terms.
KERNEL_REFERENCE = FitFactors(compute_efficiency=0.70, memory_efficiency=0.86, step_overhead_s=2.0e-3,
                              sequence_overhead_s=DEFAULT_SEQUENCE_OVERHEAD_S)

#: Search range of every factor: (low, high). Efficiencies are fractions, τ and τ_layer
#: seconds, x_half bytes per chip per step, t_half tokens.
FACTOR_BOUNDS: dict[str, tuple[float, float]] = {
    "compute_efficiency": EFFICIENCY_BOUNDS,
    "memory_efficiency": EFFICIENCY_BOUNDS,
    "step_overhead_s": OVERHEAD_BOUNDS_S,
    "memory_half_bytes": (0.0, 20e9),
    "compute_half_tokens": (0.0, 2048.0),
    "layer_overhead_s": (0.0, 200e-6),
    "request_overhead_s": (0.0, 0.5),
    "allreduce_efficiency": (0.05, 1.0),
    "sequence_overhead_s": (0.0, 200e-6),
    "kv_memory_efficiency": EFFICIENCY_BOUNDS,
}
#: Factors fitted on measured GPU serving rows (all of them; the wave TTFT model drops request_overhead_s).
GPU_FACTORS: tuple[str, ...] = tuple(FACTOR_BOUNDS)
#: Coordinate descent: rounds, grid points per factor and per round.
_ROUNDS, _POINTS = 10, 41


@dataclass
class _Terms:
    """Unit-chip decomposition of one metric (η = 1, flat operating point, no overhead)::

        part_k   = [max(c_k·(1 + t_half/t_k)/η_c, (m_k + x_half/BW)/η_m) + max(a_k/η_c, v_k/η_kv)]·exists_k
        device_j = Σ_(k of kind j) part_k + comm_j + ar_j·(1/η_ar − 1) + τ + layers·τ_layer
        pred     = scale·Σ_j w_j·max(device_j, sequences_j·h) + request·r

    over the metric's step kinds j (``kind_of[k]``: the kind part k belongs to; TPOT: the step without and
    with prompt tokens; TTFT: the prefill, then those two in flight), each at its weight w_j — every step
    is its device time or its sequences' host work, whichever is longer (overlapping engines:
    :mod:`costmodels.roofline` notes). η_kv = η_m where the factor is 0 (not fitted, the chip's field unset).

    ``ar`` is the all-reduce share of ``comm`` (:func:`costmodels.comm.tp_allreduce_s`, which divides by
    the chip's ``allreduce_efficiency`` η_ar); the rest of ``comm`` (all-to-alls, hand-offs) is fixed.
    """

    compute: np.ndarray  # (K, N) seconds at η_c = 1, weight GEMMs
    core: np.ndarray  # (K, N) seconds at η_c = 1, the attention core (no t½ curve)
    memory: np.ndarray  # (K, N) seconds at η_m = 1, the weights
    kv: np.ndarray  # (K, N) seconds at η_kv = 1, the KV cache
    tokens: np.ndarray  # (K, N) GEMM rows
    parts: np.ndarray  # (K, N) 1 where the part exists
    kind_weights: np.ndarray  # (J, N) how many of each step kind the metric pays
    comm: np.ndarray  # (J, N)
    layers: np.ndarray  # (N,)
    sequences: np.ndarray  # (J, N) sequences whose host work each step kind does
    scale: np.ndarray  # (N,)
    measured: np.ndarray  # (N,) seconds
    weight: np.ndarray  # (N,) sums to 1
    bandwidth_bytes_per_s: float
    kind_of: tuple[int, ...] = (0, 0, 1, 1)  # (K,) the step kind of each part
    allreduce: np.ndarray | float = 0.0  # (J, N) the all-reduce share of ``comm`` at η_ar = 1 (scaled by 1/η_ar)
    request: float = 0.0  # 1: the metric pays the request overhead (TTFT)

    def predict_many(self, f: dict[str, np.ndarray]) -> np.ndarray:
        """Predictions for G factor sets at once: every value of ``f`` has shape (G,); returns (G, N)."""
        g = {k: np.asarray(v, dtype=float)[:, None, None] for k, v in f.items()}
        comp = (self.compute[None] * (1.0 + g["compute_half_tokens"] / np.maximum(self.tokens[None], 1e-9))
                / g["compute_efficiency"])
        mem = (self.memory[None] + g["memory_half_bytes"] / self.bandwidth_bytes_per_s) / g["memory_efficiency"]
        eta_kv = np.where(g["kv_memory_efficiency"] > 0, g["kv_memory_efficiency"], g["memory_efficiency"])
        attn = np.maximum(self.core[None] / g["compute_efficiency"], self.kv[None] / eta_kv)
        part = (np.maximum(comp, mem) + attn) * self.parts[None]
        kinds = np.asarray(self.kind_of)
        device = np.stack([part[:, kinds == j].sum(axis=1) for j in range(len(self.kind_weights))], axis=1)
        device = (device + self.comm[None] + np.asarray(self.allreduce)[None] * (1.0 / g["allreduce_efficiency"] - 1.0)
                  + g["step_overhead_s"] + self.layers[None, None] * g["layer_overhead_s"])
        host = self.sequences[None] * g["sequence_overhead_s"]
        steps = (self.kind_weights[None] * np.maximum(device, host)).sum(axis=1)
        return self.scale[None] * steps + self.request * g["request_overhead_s"][:, :, 0]

    def predict(self, f: FitFactors) -> np.ndarray:
        return self.predict_many({k: np.array([v]) for k, v in asdict(f).items()})[0]

    def losses(self, f: dict[str, np.ndarray]) -> np.ndarray:
        """Weighted mean |ln(pred/meas)| for G factor sets: shape (G,)."""
        if self.measured.size == 0:
            return np.zeros(len(next(iter(f.values()))))
        return np.abs(np.log(self.predict_many(f)) - np.log(self.measured)[None]) @ self.weight


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
    """Price the rows once on a unit chip (η = 1, τ = 0, flat): TPOT and TTFT terms."""
    rc = row_costs(chip_with(chip, 1.0, 1.0, 0.0), models, rows, TTFT_MODEL)
    # all-reduce time is linear in 1/η_ar: pricing again at η_ar = ½ adds exactly one more all-reduce share
    rc_half = row_costs(chip_with(chip, 1.0, 1.0, 0.0, allreduce_efficiency=0.5), models, rows, TTFT_MODEL)
    ar_tpot = rc_half.tpot_comm - rc.tpot_comm
    names = np.array([m.model for m in rows])
    bw = chip.memory_bandwidth_bytes_per_s
    tpot = _Terms(rc.tpot_compute, rc.tpot_core, rc.tpot_memory, rc.tpot_kv, rc.tpot_tokens, rc.tpot_parts,
                  rc.tpot_kind_weights, rc.tpot_comm, rc.tpot_layers, rc.tpot_sequences,
                  np.ones(len(rows)), np.array([m.row.tpot_ms for m in rows]) / 1e3, _weights(names, per_model), bw,
                  allreduce=ar_tpot)
    e = ~np.isnan(rc.ttft_scale)
    # the prefill step, then the aggregated steps in flight (TTFT-eligible rows are single-part TP rows:
    # parts 0 and 2, the steps without and with prompt tokens, each at its share of the steps in flight)
    wait = rc.ttft_in_flight[e]
    ttft = _Terms(np.stack([rc.ttft_compute[e], rc.tpot_compute[0, e], rc.tpot_compute[2, e]]),
                  np.stack([rc.ttft_core[e], rc.tpot_core[0, e], rc.tpot_core[2, e]]),
                  np.stack([rc.ttft_memory[e], rc.tpot_memory[0, e], rc.tpot_memory[2, e]]),
                  np.stack([rc.ttft_kv[e], rc.tpot_kv[0, e], rc.tpot_kv[2, e]]),
                  np.stack([rc.ttft_tokens[e], rc.tpot_tokens[0, e], rc.tpot_tokens[2, e]]),
                  np.stack([np.ones(int(e.sum())), rc.tpot_parts[0, e], rc.tpot_parts[2, e]]),
                  np.stack([np.ones(int(e.sum())), wait * rc.tpot_kind_weights[0, e], wait * rc.tpot_kind_weights[1, e]]),
                  np.stack([rc.ttft_comm[e], rc.tpot_comm[0, e], rc.tpot_comm[1, e]]), rc.ttft_layers[e],
                  np.stack([np.ones(int(e.sum())), rc.tpot_sequences[0, e], rc.tpot_sequences[1, e]]), rc.ttft_scale[e],
                  np.array([m.row.ttft_ms for m in rows])[e] / 1e3, _weights(names[e], per_model), bw,
                  kind_of=(0, 1, 2), request=float(TTFT_MODEL != "wave"),
                  allreduce=np.stack([(rc_half.ttft_comm - rc.ttft_comm)[e], ar_tpot[0, e], ar_tpot[1, e]]))
    return tpot, ttft


def _objective_many(tpot: _Terms, ttft: _Terms, f: dict[str, np.ndarray], prior: FitFactors, ttft_weight: float,
                    prior_weight: float) -> np.ndarray:
    loss = tpot.losses(f) + ttft_weight * ttft.losses(f)
    reg = (np.log(f["compute_efficiency"] / prior.compute_efficiency) ** 2
           + np.log(f["memory_efficiency"] / prior.memory_efficiency) ** 2)
    return loss + prior_weight * reg


def _objective(tpot: _Terms, ttft: _Terms, f: FitFactors, prior: FitFactors, ttft_weight, prior_weight) -> float:
    return float(_objective_many(tpot, ttft, {k: np.array([v]) for k, v in asdict(f).items()}, prior, ttft_weight,
                                 prior_weight)[0])


def coordinate_search(objective, start: FitFactors, names: tuple[str, ...]) -> FitFactors:
    """Minimise ``objective(dict of (G,) arrays) -> (G,)`` over the factors ``names``.

    Coordinate descent on 1-D grids of :data:`_POINTS` points: round ``r``
    searches each factor over its :data:`FACTOR_BOUNDS` range narrowed to a
    window of half-width ``range / 2^r`` around the current value. No
    randomness; ties resolve to the first grid point, so it is deterministic.
    Never returns a point worse than ``start``.

    Examples
    --------
    >>> f = coordinate_search(lambda g: (g["step_overhead_s"] - 3e-3) ** 2,
    ...                       KERNEL_REFERENCE, ("step_overhead_s",))
    >>> round(f.step_overhead_s * 1e3, 3)
    3.0
    """
    cur = asdict(start)
    for r in range(_ROUNDS):
        for name in names:
            lo, hi = FACTOR_BOUNDS[name]
            half = (hi - lo) / 2 ** r
            axis = np.unique(np.clip(np.linspace(cur[name] - half, cur[name] + half, _POINTS), lo, hi))
            axis = axis[axis > 0] if name in ("compute_efficiency", "memory_efficiency", "kv_memory_efficiency") \
                else axis
            trial = {k: np.full(axis.size, v) for k, v in cur.items()}
            trial[name] = axis
            obj = objective(trial)
            best = int(np.argmin(obj))
            if obj[best] < objective({k: np.array([v]) for k, v in cur.items()})[0]:
                cur[name] = float(axis[best])
    return FitFactors(**cur)


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


def _concat_terms(terms: list[_Terms]) -> _Terms:
    """One objective over several chips' rows: the arrays side by side, each chip's weights scaled to an equal
    share (so a chip with more rows does not set the shared factors alone)."""
    if len(terms) == 1:
        return terms[0]
    out = {}
    for f in fields(_Terms):
        if f.name in ("request", "kind_of"):
            out[f.name] = getattr(terms[0], f.name)
            continue
        parts = []
        for t in terms:
            v = getattr(t, f.name)
            if f.name == "bandwidth_bytes_per_s" or np.ndim(v) == 0:
                v = np.full(t.measured.size, float(v))
            parts.append(v / len(terms) if f.name == "weight" else np.asarray(v, dtype=float))
        out[f.name] = np.concatenate(parts, axis=-1)
    return _Terms(**out)


def fit_chip(chip: ChipSpec, rows: list[MappedRow], models: dict[str, ModelSpec] | None = None, *,
             system: str | None = None, ttft_weight: float = TTFT_WEIGHT,
             prior_weight: float = PRIOR_WEIGHT, per_model: bool = PER_MODEL_WEIGHTS,
             reference: FitFactors | None = None, factors: tuple[str, ...] = GPU_FACTORS,
             siblings: dict[str, tuple[ChipSpec, list[MappedRow]]] | None = None) -> ChipFit:
    """Fit the ``factors`` of ``chip`` (default: :data:`GPU_FACTORS`) on ``rows``.

    The fit starts from, and is reported against, ``reference`` (default
    :data:`KERNEL_REFERENCE`, the uncalibrated kernel-level factors) — not the
    catalogue's values, which for calibrated chips are this fit's own output.
    The search never returns a point worse than the reference, so the fitted
    objective is never above the reference one. ``siblings`` (name → chip and its rows; :data:`SHARED_FITS`)
    share the factors: their rows, each priced on its own chip, enter the objective with an equal share per
    chip; the errors reported are ``chip``'s own.
    """
    models = load_model_catalog() if models is None else models
    if not rows:
        raise ValueError("no rows to fit")
    if any(m.chip != chip.name for m in rows):
        raise ValueError(f"rows for another chip than {chip.name!r}")
    default = KERNEL_REFERENCE if reference is None else reference
    chip = chip_with(chip, **asdict(default))
    tpot_terms, ttft_terms = _build_terms(chip, models, rows, per_model)
    more = [_build_terms(chip_with(c, **asdict(default)), models, r, per_model)
            for c, r in (siblings or {}).values() if r]
    tpot_all = _concat_terms([tpot_terms, *(m[0] for m in more)])
    ttft_all = _concat_terms([ttft_terms, *(m[1] for m in more)])

    def objective(f):
        return _objective_many(tpot_all, ttft_all, f, default, ttft_weight, prior_weight)

    if TTFT_MODEL == "wave":  # nothing in the wave model pays the request latency: do not search it
        factors = tuple(f for f in factors if f != "request_overhead_s")
    fitted = coordinate_search(objective, default, factors)
    obj_d = _objective(tpot_terms, ttft_terms, default, default, ttft_weight, prior_weight)
    obj_f = _objective(tpot_terms, ttft_terms, fitted, default, ttft_weight, prior_weight)
    fitted_chip = chip_with(chip, **asdict(fitted))
    pred = {"tpot_measured": tpot_terms.measured, "ttft_measured": np.array([m.row.ttft_ms for m in rows]) / 1e3}
    pred["tpot_default"], pred["ttft_default"] = predict_rows(chip, rows, models)
    pred["tpot_fitted"], pred["ttft_fitted"] = predict_rows(fitted_chip, rows, models)
    name = system or rows[0].row.system
    return ChipFit(name, chip.name, default, fitted, obj_d, obj_f, len(rows), int(ttft_terms.measured.size),
                   _group_errors(name, rows, pred), pred, list(rows))


#: Starting point of the SRAM-chip fits: the catalogue's estimates before calibration
#: (GPU GEMM efficiency, streaming SRAM reads, 0.1 ms compiler-scheduled step).
SRAM_REFERENCE = FitFactors(compute_efficiency=0.70, memory_efficiency=0.90, step_overhead_s=1.0e-4,
                            sequence_overhead_s=DEFAULT_SEQUENCE_OVERHEAD_S)
#: AMD GPUs (one model at scale, DeepSeek-R1, TP 4-8; MI300X also a Llama batch sweep): the efficiencies,
#: the fixed step and layer costs, the small-GEMM curve and the serving all-reduce speed.
AMD_FACTORS = ("compute_efficiency", "memory_efficiency", "step_overhead_s", "layer_overhead_s",
               "compute_half_tokens", "allreduce_efficiency")
#: What the public measurements of each non-aiconfigurator chip can determine, and where the fit starts.
#: SRAM chips: only the fixed costs (their memory and compute time is a few % of a step); MI300X (one
#: model, a batch sweep): the efficiencies and the fixed step cost, not a per-layer split.
PUBLIC_FIT_PLAN: dict[str, tuple[tuple[str, ...], FitFactors]] = {
    "wse3": (("step_overhead_s", "layer_overhead_s"), SRAM_REFERENCE),
    "groq-lpu-v1": (("step_overhead_s", "layer_overhead_s"), SRAM_REFERENCE),
    "mi300x": (AMD_FACTORS, KERNEL_REFERENCE),
    "mi355x": (AMD_FACTORS, KERNEL_REFERENCE),
}
#: Chips calibrated on the closed-loop campaigns at scale (``benchmarks/data/throughput_at_scale.csv``,
#: :func:`costmodels.measured_rows.read_scale_csv`): those without rows in the aiconfigurator database.
#: Their campaigns are then fit data, held out one campaign (one month) at a time.
SCALE_FIT_CHIPS: tuple[str, ...] = ("mi300x", "mi355x", "h100", "h200", "b200")
#: Chips fitted as one: the same die and serving software, so one set of factors (each row priced on its own
#: chip's peaks and bandwidth). H100 and H200 are both GH100 (H200 with HBM3e): fitted apart, the same die took
#: η_m 1.0 and 0.45 and held-out TPOT 16.6 % / 24.6 %; fitted as one, 18.5 % / 16.2 % (20.0 → 17.4 % pooled,
#: the InferenceX campaigns 22.9 → 9.7 %; leave-one-source-out, benchmarks/CALIBRATION.md).
SHARED_FITS: dict[str, tuple[str, ...]] = {"h100": ("h200",), "h200": ("h100",)}
#: Chips also calibrated on the offline maximum-throughput campaigns (:mod:`costmodels.offline_rows`: the
#: TensorRT-LLM perf overview's trtllm-bench tables), the only public measurements of a step at the batches
#: a capacity plan runs; each campaign is one held-out source.
OFFLINE_FIT_CHIPS: tuple[str, ...] = ("h100", "h200", "b200")


def heldout_predictions(chip: ChipSpec, rows: list[MappedRow], models: dict[str, ModelSpec], key, *,
                        siblings: dict[str, tuple[ChipSpec, list[MappedRow]]] | None = None, **fit_kw
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Leave one group out: predict each group's rows from a fit on the other groups.

    ``key(row)`` names a row's group (its source, its model). Returns held-out
    (TPOT, TTFT) arrays in seconds, ``nan`` for rows whose group is the only
    one (nothing left to fit on) and TTFT ``nan`` where not eligible.
    ``fit_kw`` goes to :func:`fit_chip`.
    """
    groups = np.array([key(m) for m in rows])
    tpot, ttft = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    for g in sorted(set(groups)):
        test = np.flatnonzero(groups == g)
        train = [rows[i] for i in np.flatnonzero(groups != g)]
        if not train:
            continue
        others = {n: (c, [m for m in r if key(m) != g]) for n, (c, r) in (siblings or {}).items()}
        f = fit_chip(chip, train, models, siblings=others, **fit_kw).fitted
        tpot[test], ttft[test] = predict_rows(chip_with(chip, **asdict(f)), [rows[i] for i in test], models)
    return tpot, ttft


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
