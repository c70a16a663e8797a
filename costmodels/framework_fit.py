"""The serving framework as an input: a per-framework decode-step factor fitted with the chip factors.

TRT-LLM, vLLM and SGLang measure 10–30 % apart on the same point (same chip,
model, layout, ISL/OSL and concurrency), so one set of chip factors pooled over
frameworks has that spread as an error floor. Here a measured TPOT is priced as

    TPOT_pred = s_f · step(chip factors)

with one multiplicative step factor ``s_f`` per framework ``f``, shared by
every chip. The fit alternates (:func:`fit_joint`): the chip factors of each
chip (:func:`costmodels.calibration.fit_chip`, on measured TPOTs divided by
``s_f``; the loss is ``|ln(pred/meas)|``, so dividing the measurement is
multiplying the prediction), then each ``s_f`` as the weighted median of
``ln(measured / predicted step)`` over that framework's rows on every chip
(the minimiser of the same loss; weights equal per chip-framework campaign and
per model within it). The factors are normalised to a geometric mean of 1
over the frameworks, so the chip factors describe an average framework and a
framework never seen prices at ``s = 1``. The additive form (``additive=True``)
prices ``TPOT = step + τ_f`` instead, a per-step framework cost in seconds
(weighted median of ``measured − predicted step``, normalised to mean 0).

TTFT is left to the chips' fit (its framework-dependent part is a request
latency, not a step: ``benchmarks/CALIBRATION.md``), so only TPOT and the
throughput derived from it carry ``s_f``.

Held out (:func:`heldout_joint`): a *campaign* is one chip × framework. Leaving
one out refits everything without its rows: the chip's factors come from its
other frameworks, the framework's factor from the other chips.

Examples
--------
>>> normalised({"sglang": 2.0, "trtllm": 0.5, "vllm": 1.0})
{'sglang': 2.0, 'trtllm': 0.5, 'vllm': 1.0}
>>> weighted_median(np.array([1.0, 2.0, 10.0]), np.array([0.2, 0.2, 0.6]))
10.0
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, replace

import numpy as np

from costmodels.calibration import FitFactors, chip_with, fit_chip, predict_rows
from costmodels.measured_rows import MappedRow
from costmodels.models import ModelSpec
from costmodels.roofline import prefill_step
from topology.chips import ChipSpec

__all__ = [
    "FRAMEWORKS",
    "JOINT_ROUNDS",
    "JointFit",
    "fit_joint",
    "fit_latency_s",
    "framework_of",
    "heldout_joint",
    "normalised",
    "one_prefill_s",
    "predict_joint",
    "weighted_median",
]

#: Serving frameworks with a step factor (the aiconfigurator campaigns' ``backend``).
FRAMEWORKS: tuple[str, ...] = ("sglang", "trtllm", "vllm")
#: Alternations of :func:`fit_joint`: chip factors at s = 1, then (step factors, chip factors) this many times.
JOINT_ROUNDS = 4


def framework_of(m: MappedRow) -> str | None:
    """The serving framework of a measured row, ``None`` for rows of other sources (public pages)."""
    return m.row.backend if m.row.backend in FRAMEWORKS else None


def weighted_median(x: np.ndarray, w: np.ndarray) -> float:
    """The smallest ``x`` at which the cumulative weight reaches half (the minimiser of Σ w·|x − m|)."""
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(w[order])
    return float(x[order][np.searchsorted(cum, 0.5 * cum[-1])])


def normalised(factors: dict[str, float], additive: bool = False) -> dict[str, float]:
    """Scale step factors to a geometric mean of 1, or shift per-step costs to a mean of 0 (``additive``):
    the chip factors then describe an average framework."""
    if not factors:
        return {}
    if additive:
        mean = float(np.mean(list(factors.values())))
        return {f: float(v - mean) for f, v in sorted(factors.items())}
    g = float(np.exp(np.mean(np.log(list(factors.values())))))
    return {f: float(v / g) for f, v in sorted(factors.items())}


@dataclass(frozen=True)
class JointFit:
    """Chip factors per chip and one step factor per framework (missing framework: 1), or with
    ``additive`` one per-step cost in seconds (missing framework: 0)."""

    chips: dict[str, FitFactors]
    step_factors: dict[str, float]
    additive: bool = False

    def factor(self, framework: str | None) -> float:
        neutral = 0.0 if self.additive else 1.0
        return self.step_factors.get(framework, neutral) if framework else neutral

    def apply(self, step_s: np.ndarray, rows: list[MappedRow]) -> np.ndarray:
        """TPOT in seconds of ``rows`` from their predicted steps."""
        f = np.array([self.factor(framework_of(m)) for m in rows])
        return step_s + f if self.additive else step_s * f


#: The additive form never takes a measured TPOT below this share of itself when it removes τ_f.
_MIN_SHARE = 0.2


def _scaled(rows: list[MappedRow], step_factors: dict[str, float], additive: bool = False) -> list[MappedRow]:
    """The rows with measured TPOT divided by their framework's step factor (or less its per-step cost)."""
    def tpot_ms(m: MappedRow) -> float:
        if additive:
            return max(m.row.tpot_ms - 1e3 * step_factors.get(framework_of(m), 0.0), _MIN_SHARE * m.row.tpot_ms)
        return m.row.tpot_ms / step_factors.get(framework_of(m), 1.0)

    return [replace(m, row=replace(m.row, tpot_ms=tpot_ms(m))) for m in rows]


def _campaign_weights(rows_by_chip: dict[str, list[MappedRow]]) -> dict[str, np.ndarray]:
    """Per chip, row weights: every (chip, framework) campaign weighs 1, split equally over its models."""
    out = {}
    for chip, rows in rows_by_chip.items():
        keys = [(framework_of(m), m.model) for m in rows]
        n_models = {f: len({k[1] for k in keys if k[0] == f}) for f in {k[0] for k in keys}}
        counts = {k: keys.count(k) for k in set(keys)}
        out[chip] = np.array([1.0 / (n_models[k[0]] * counts[k]) for k in keys])
    return out


def _step_factors(rows_by_chip: dict[str, list[MappedRow]], step_s: dict[str, np.ndarray],
                  additive: bool = False) -> dict[str, float]:
    """Each framework's factor: weighted median of ln(measured TPOT / predicted step) over every chip's rows
    (``additive``: of measured TPOT − predicted step, seconds)."""
    weights = _campaign_weights(rows_by_chip)
    logs: dict[str, list[np.ndarray]] = {}
    wts: dict[str, list[np.ndarray]] = {}
    for chip, rows in rows_by_chip.items():
        fw = np.array([framework_of(m) or "" for m in rows])
        meas = np.array([m.row.tpot_ms for m in rows]) / 1e3
        lr = meas - step_s[chip] if additive else np.log(meas / step_s[chip])
        for f in FRAMEWORKS:
            sel = fw == f
            if sel.any():
                logs.setdefault(f, []).append(lr[sel])
                wts.setdefault(f, []).append(weights[chip][sel])
    med = {f: weighted_median(np.concatenate(logs[f]), np.concatenate(wts[f])) for f in logs}
    return normalised({f: v if additive else float(np.exp(v)) for f, v in med.items()}, additive)


def predict_joint(fit: JointFit, chip: ChipSpec, rows: list[MappedRow], models: dict[str, ModelSpec]
                  ) -> np.ndarray:
    """Predicted TPOT in seconds: the chip's step with the joint fit's factors × the row's framework factor."""
    step, _ = predict_rows(chip_with(chip, **asdict(fit.chips[chip.name])), rows, models)
    return fit.apply(step, rows)


def fit_joint(rows_by_chip: dict[str, list[MappedRow]], chips: dict[str, ChipSpec],
              models: dict[str, ModelSpec], fit_kw: dict[str, dict] | None = None,
              rounds: int = JOINT_ROUNDS, additive: bool = False) -> JointFit:
    """Alternate chip factors (:func:`fit_chip` on TPOT ÷ s_f) and step factors, ``rounds`` times.

    ``fit_kw[chip]`` goes to :func:`fit_chip`. Chips without rows are left out.
    """
    fit_kw = fit_kw or {}
    rows_by_chip = {c: r for c, r in rows_by_chip.items() if r}
    step_factors: dict[str, float] = {}
    factors: dict[str, FitFactors] = {}
    for r in range(rounds + 1):
        factors = {c: fit_chip(chips[c], _scaled(rows, step_factors, additive), models, **fit_kw.get(c, {})).fitted
                   for c, rows in rows_by_chip.items()}
        if r == rounds:
            break
        steps = {c: predict_rows(chip_with(chips[c], **asdict(factors[c])), rows, models)[0]
                 for c, rows in rows_by_chip.items()}
        step_factors = _step_factors(rows_by_chip, steps, additive)
    return JointFit(factors, step_factors, additive)


def heldout_joint(rows_by_chip: dict[str, list[MappedRow]], chips: dict[str, ChipSpec],
                  models: dict[str, ModelSpec], key, fit_kw: dict[str, dict] | None = None,
                  rounds: int = JOINT_ROUNDS, additive: bool = False) -> dict[str, np.ndarray]:
    """Leave one group out of the joint fit: per chip, held-out TPOT predictions in seconds.

    ``key(chip, row)`` names a row's group — ``(chip, framework)`` leaves one campaign out, the
    framework alone leaves a framework out of every chip, the model a model. Each group's rows are
    predicted from a joint fit on every other row; ``nan`` where the group's chip has no other rows.
    """
    groups = {c: [key(c, m) for m in rows] for c, rows in rows_by_chip.items()}
    out = {c: np.full(len(rows), np.nan) for c, rows in rows_by_chip.items()}
    for g in sorted({g for gs in groups.values() for g in gs}, key=repr):
        train = {c: [m for m, k in zip(rows, groups[c], strict=True) if k != g] for c, rows in rows_by_chip.items()}
        test = {c: np.flatnonzero([k == g for k in groups[c]]) for c in rows_by_chip}
        fit = fit_joint(train, chips, models, fit_kw, rounds, additive)
        for c, idx in test.items():
            if idx.size and c in fit.chips:
                out[c][idx] = predict_joint(fit, chips[c], [rows_by_chip[c][i] for i in idx], models)
    return out


def fit_latency_s(prefill_s, measured_s, groups) -> float:
    """The request latency ≥ 0 minimising the group-weighted mean |ln((prefill + L)/measured)|; nan if no rows.

    Searched over every row's break point ``measured − prefill`` and a 1 ms grid up to the largest one
    (exact to the millisecond: between break points the loss is a sum of ±ln terms).
    """
    p, m, g = np.asarray(prefill_s, dtype=float), np.asarray(measured_s, dtype=float), np.asarray(groups)
    if p.size == 0:
        return float("nan")
    _, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
    w = 1.0 / counts[inv]
    brk = np.maximum(m - p, 0.0)
    cand = np.unique(np.concatenate([brk, np.arange(0.0, brk.max() + 1e-3, 1e-3)]))
    loss = np.abs(np.log((p[None, :] + cand[:, None]) / m[None, :])) @ w
    return float(cand[int(np.argmin(loss))])


def one_prefill_s(chip, rows, models) -> np.ndarray:
    """One prefill of each row's prompt alone on ``chip`` (vectorised per model and precision)."""
    out = np.full(len(rows), np.nan)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, m in enumerate(rows):
        groups[(m.model, m.precision, m.kv_precision)].append(i)
    for (model, prec, kv), idx in groups.items():
        rs = [rows[i] for i in idx]
        st = prefill_step(chip, models[model], prompt=np.array([m.row.isl for m in rs], dtype=float), batch=1,
                          tp=np.array([m.tp for m in rs], dtype=float), pp=np.array([m.pp for m in rs], dtype=float),
                          ep=np.array([m.ep for m in rs], dtype=float), precision=prec, kv_precision=kv)
        out[idx] = np.asarray(st.time_s, dtype=float)
    return out
