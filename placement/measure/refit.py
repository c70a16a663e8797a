"""``placement calibrate``: refit the chip factors and error bands on a user's measurements → an overlay.

For every chip the measured points cover, :func:`refit`

1. maps each point to the roofline's inputs (:func:`costmodels.measured_rows.map_row`; a point the model
   cannot price — unknown model, does not fit in memory, saturated — is skipped and reported);
2. fits the chip's factors (:func:`costmodels.calibration.fit_chip`), starting from, and pulled weakly
   towards, the catalogue's values; how many factors it frees grows with the points
   (:data:`FACTORS_BY_POINTS`: a handful of points moves the fixed step cost, not seven factors);
3. predicts every point from a fit that did not see it — one file held out at a time when the points
   come from two files or more; from one file, one concurrency level at a time (all its points: the
   held-out error then includes batches the fit never saw), or one point at a time below three levels. If these held-out TPOTs miss by more (median
   |error|) than the catalogue's factors miss the same points, the refit is not adopted: the chip keeps
   its catalogue factors, and every point, out of sample for them, is its own held-out point. Then it
   takes ``r = measured ÷ predicted`` per
   metric (TPOT; TTFT at light load, ≤ 8 sequences per replica; decode throughput per chip at the
   measured concurrency, ``conc/(chips·TPOT)``, whose ratio is ``TPOT_pred/TPOT_meas``);
4. sets each metric's band to the normal prediction interval of ``ln r`` over those ``n`` held-out
   points::

       q(level) = exp(mean(ln r) + t_{n−1}(level) · sd(ln r) · √(1 + 1/n))

   (Student's t with ``n − 1`` degrees of freedom, :func:`t_quantile`): fewer points (a larger t,
   a larger √(1 + 1/n)) or noisier ones (a larger sd) give a wider band. A metric with fewer than
   :data:`MIN_BAND_POINTS` held-out points keeps the catalogue's band for the chip, and says so.

5. refits, per chip, each serving framework's request latency (TTFT = one prefill + L, on the chip's
   light-load points with its refitted factors; :func:`_refit_frameworks`), scored held out by the same
   groups: the latency of a framework on this deployment, which the other chips do not take.

The factors go into the overlay as fitted on *all* the chip's points; the bands describe how far a
point the fit has not seen falls from it.

Examples
--------
>>> round(t_quantile(0.9, 4), 3), round(t_quantile(0.9, 1000), 3)  # t(0.9; 4) = 1.533; z(0.9) = 1.282
(1.533, 1.282)
>>> band_quantiles([1.0, 1.1, 0.9, 1.05], (0.1, 0.5, 0.9))
[0.8627, 1.0097, 1.1818]
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from statistics import NormalDist

import numpy as np

from costmodels.bands import LEVELS, METRICS, chip_band
from costmodels.calibration import FitFactors, fit_chip, heldout_predictions, predict_rows
from costmodels.efficiency import DEFAULT_SEQUENCE_OVERHEAD_S
from costmodels.framework_fit import fit_latency_s, one_prefill_s
from costmodels.measured_rows import MappedRow, map_row
from costmodels.models import ModelSpec, load_model_catalog
from costmodels.row_costs import chip_with
from placement.core.instance.calibration_overlay import (
    BandRecord,
    CalibrationOverlay,
    ChipCalibration,
    Factors,
    FrameworkCalibration,
    MeasurementFile,
)
from placement.core.instance.errors import InputError
from placement.measure.points import MeasuredPoint, Measurements
from topology.chips import ChipSpec, load_chip_catalog

__all__ = ["FACTORS_BY_POINTS", "MIN_BAND_POINTS", "ChipRefit", "band_quantiles", "refit", "t_quantile"]

#: Why a point with speculative decoding is skipped.
SPECULATIVE = "speculative decoding (the fit prices plain decode steps)"
#: Held-out points a metric needs for a band of its own (fewer: the catalogue's band).
MIN_BAND_POINTS = 3
#: (at least this many mapped points, the factors freed): the first row the chip's count reaches applies.
FACTORS_BY_POINTS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (24, ("compute_efficiency", "memory_efficiency", "step_overhead_s", "sequence_overhead_s", "layer_overhead_s",
          "allreduce_efficiency")),
    (10, ("memory_efficiency", "step_overhead_s", "sequence_overhead_s", "compute_efficiency")),
    (4, ("memory_efficiency", "step_overhead_s")),
    (1, ("step_overhead_s",)),
)


def t_quantile(level: float, dof: int) -> float:
    """Student's t quantile at ``level`` with ``dof`` degrees of freedom (Cornish–Fisher to ν⁻³; within
    1.5 % of the exact value for ν ≥ 2 at the levels 0.05–0.95)."""
    z = NormalDist().inv_cdf(level)
    v = float(dof)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3))


def band_quantiles(ratios, levels: tuple[float, ...] = LEVELS) -> list[float]:
    """The prediction-interval quantiles (module docstring, step 4) of held-out ``measured ÷ predicted``."""
    r = np.log(np.asarray([x for x in ratios if np.isfinite(x) and x > 0], dtype=float))
    n = r.size
    if n < 2:
        raise ValueError("a band needs two ratios at least")
    m, s = float(r.mean()), float(r.std(ddof=1))
    spread = s * math.sqrt(1.0 + 1.0 / n)
    return [round(math.exp(m + t_quantile(lv, n - 1) * spread), 4) for lv in levels]


def _reference(chip: ChipSpec) -> FitFactors:
    """The chip's catalogue factors as the fit's start and prior."""
    return FitFactors(compute_efficiency=chip.compute_efficiency, memory_efficiency=chip.memory_efficiency,
                      step_overhead_s=chip.step_overhead_s, memory_half_bytes=chip.memory_half_bytes,
                      compute_half_tokens=chip.compute_half_tokens, layer_overhead_s=chip.layer_overhead_s,
                      allreduce_efficiency=chip.allreduce_efficiency,
                      sequence_overhead_s=(DEFAULT_SEQUENCE_OVERHEAD_S if chip.sequence_overhead_s is None
                                           else chip.sequence_overhead_s),
                      kv_memory_efficiency=chip.kv_memory_efficiency or 0.0)


def _freed(n: int) -> tuple[str, ...]:
    return next(names for at_least, names in FACTORS_BY_POINTS if n >= at_least)


@dataclass
class ChipRefit:
    """What :func:`refit` did for one chip: the points, the factors, errors before and after, the bands."""

    chip: str
    points: int
    skipped: dict[str, int]
    freed: tuple[str, ...]
    catalogue: dict[str, float]
    fitted: dict[str, float]
    heldout: str
    #: metric -> (catalogue median |error|, held-out median |error| after the refit), fractions
    errors: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    #: metric -> ((catalogue p10, p90), (overlay p10, p90)) of measured ÷ predicted
    spans: dict[str, tuple[tuple[float, float], tuple[float, float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the mapped rows and each one's held-out group (the framework refit reads them)
    rows: list[MappedRow] = field(default_factory=list, repr=False)
    groups: list = field(default_factory=list, repr=False)


def _median_abs(pred: np.ndarray, meas: np.ndarray) -> float | None:
    ok = np.isfinite(pred) & np.isfinite(meas) & (meas > 0)
    return round(float(np.median(np.abs(pred[ok] / meas[ok] - 1.0))), 4) if ok.any() else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _span(quantiles) -> tuple[float, float]:
    """(p10, p90) of stored quantiles at :data:`~costmodels.bands.LEVELS`."""
    return float(np.interp(0.1, LEVELS, quantiles)), float(np.interp(0.9, LEVELS, quantiles))


def _ratios(metric: str, rows: list[MappedRow], tpot: np.ndarray, ttft: np.ndarray) -> np.ndarray:
    """Held-out ``measured ÷ predicted`` of ``metric`` per row (nan where it does not apply)."""
    meas_tpot = np.array([m.row.tpot_ms for m in rows]) / 1e3
    if metric == "tpot":
        return meas_tpot / tpot
    if metric == "ttft":
        return np.array([m.row.ttft_ms / 1e3 for m in rows]) / ttft
    return tpot / meas_tpot  # decode throughput per chip at the measured concurrency, conc/(chips·TPOT)


def _refit_chip(chip: ChipSpec, pts: list[MeasuredPoint], chips: dict[str, ChipSpec],
                models: dict[str, ModelSpec]) -> tuple[ChipCalibration | None, ChipRefit]:
    rows: list[MappedRow] = []
    keys: dict[int, str] = {}
    skipped: dict[str, int] = {}
    for p in pts:
        m = SPECULATIVE if p.speculative else map_row(p.measured_row(), chips, models)
        if isinstance(m, str):
            skipped[m] = skipped.get(m, 0) + 1
            continue
        keys[id(m)] = p.key
        rows.append(m)
    ref = _reference(chip)
    report = ChipRefit(chip.name, len(rows), skipped, (), asdict(ref), asdict(ref), "")
    if not rows:
        report.notes.append("no point could be priced: the chip keeps its catalogue factors and band")
        return None, report
    freed = _freed(len(rows))
    if not any(m.tp > 1 or m.attn_tp > 1 for m in rows):
        freed = tuple(f for f in freed if f != "allreduce_efficiency")  # nothing all-reduces: η_ar unseen
    fit = fit_chip(chip, rows, models, reference=ref, factors=freed)
    report.freed, report.fitted = freed, asdict(fit.fitted)
    files = {keys[id(m)] for m in rows}
    if len(files) >= 2:
        report.heldout = f"one file held out at a time ({len(files)} files, {len(rows)} points)"
        key = lambda m: keys[id(m)]
    elif len(levels := {round(m.row.conc) for m in rows}) >= 3:
        report.heldout = (f"one concurrency held out at a time ({len(levels)} levels, {len(rows)} points of one "
                          "file): the bands see interpolation and extrapolation in batch, not another campaign")
        key = lambda m: round(m.row.conc)
    else:
        report.heldout = f"one point held out at a time ({len(rows)} points of one file)"
        order = {id(m): i for i, m in enumerate(rows)}
        key = lambda m: order[id(m)]
    tpot_h, ttft_h = heldout_predictions(chip, rows, models, key, reference=ref, factors=freed)
    tpot_c, ttft_c = predict_rows(chip, rows, models)
    held_err = _median_abs(tpot_h, np.array([m.row.tpot_ms for m in rows]) / 1e3)
    cat_err = _median_abs(tpot_c, np.array([m.row.tpot_ms for m in rows]) / 1e3)
    if held_err is None or cat_err is None or held_err >= cat_err:
        # The refit predicts points it did not see worse than the catalogue does: keep the catalogue's
        # factors; every point is then out of sample for them, and the band is their residuals'.
        report.notes.append(f"factors not refitted: fitted without a point, TPOT missed it by {_pct(held_err)} "
                            f"(median) against the catalogue's {_pct(cat_err)}; the catalogue's factors kept")
        report.freed, report.fitted = (), asdict(ref)
        report.heldout = f"the catalogue's factors on every point ({len(rows)} points, {len(files)} files)"
        tpot_h, ttft_h = tpot_c, ttft_c
    catalogue_band = chip_band(chip.name)
    bands: dict[str, BandRecord] = {}
    for metric in METRICS:
        held, before = _ratios(metric, rows, tpot_h, ttft_h), _ratios(metric, rows, tpot_c, ttft_c)
        ok = np.isfinite(held) & (held > 0)
        err_after = _median_abs(1.0 / held[ok], np.ones(int(ok.sum()))) if ok.any() else None
        okb = np.isfinite(before) & (before > 0)
        err_before = _median_abs(1.0 / before[okb], np.ones(int(okb.sum()))) if okb.any() else None
        report.errors[metric] = (err_before, err_after)
        if ok.sum() >= MIN_BAND_POINTS:
            q = band_quantiles(held[ok])
            bands[metric] = BandRecord(n=int(ok.sum()), median_abs_error=err_after, quantiles=q)
        else:
            q = [round(x, 4) for x in catalogue_band.quantiles[metric]]
            bands[metric] = BandRecord(n=0, median_abs_error=None, quantiles=q)
            report.notes.append(f"{metric}: {int(ok.sum())} held-out points (< {MIN_BAND_POINTS}): the catalogue's "
                                f"{catalogue_band.family} band kept")
        report.spans[metric] = (_span(catalogue_band.quantiles[metric]), _span(q))
    report.rows, report.groups = rows, [key(m) for m in rows]
    latency, notes = _refit_frameworks(report, chip, models)
    report.notes.extend(notes)
    cal = ChipCalibration(
        factors=Factors(**{f: round(float(report.fitted[f]), 9) for f in report.freed}), bands=bands,
        points=len(rows),
        heldout=report.heldout, frameworks=sorted({m.row.backend for m in rows}),
        models=sorted({m.model for m in rows}),
        batch_per_replica=(min(m.batch for m in rows), max(m.batch for m in rows)),
        pipeline_stages=max(m.row.pp for m in rows), request_latency=latency)
    return cal, report


def refit(measurements: list[Measurements], chips: dict[str, ChipSpec] | None = None,
          models: dict[str, ModelSpec] | None = None, *, only: set[str] | None = None
          ) -> tuple[CalibrationOverlay, list[ChipRefit]]:
    """The overlay fitted on ``measurements`` (module docstring) and a report per chip; ``only``: these chips
    alone (the other points are left out).

    Raises
    ------
    InputError
        No chip with a point the model can price (points on chips the catalogue lacks are reported as
        skipped).
    """
    chips = load_chip_catalog() if chips is None else chips
    models = load_model_catalog() if models is None else models
    by_chip: dict[str, list[MeasuredPoint]] = {}
    files: dict[str, MeasurementFile] = {}
    unknown: dict[str, int] = {}
    for meas in measurements:
        for p in meas.points:
            if only is not None and p.chip not in only:
                continue
            if p.chip in chips:
                by_chip.setdefault(p.chip, []).append(p)
            else:
                unknown[p.chip] = unknown.get(p.chip, 0) + 1
        for s in meas.sources:
            files.setdefault(s.sha256, MeasurementFile(path=s.path, sha256=s.sha256, points=s.points))
    out: dict[str, ChipCalibration] = {}
    reports = []
    for name in sorted(by_chip):
        cal, report = _refit_chip(chips[name], by_chip[name], chips, models)
        reports.append(report)
        if cal is not None:
            out[name] = cal
    reports += [ChipRefit(chip, 0, {"chip not in the catalogue": n}, (), {}, {}, "") for chip, n in sorted(unknown.items())]
    if not out:
        why = "; ".join(f"{r.chip}: " + ", ".join(f"{n} × {k}" for k, n in sorted(r.skipped.items()))
                        for r in reports)
        raise InputError(f"no measured point could be priced ({why}); nothing to calibrate")
    return CalibrationOverlay(levels=list(LEVELS), measurements=sorted(files.values(), key=lambda f: f.path),
                              chips=out), reports


def _refit_frameworks(report: ChipRefit, chip: ChipSpec, models: dict[str, ModelSpec]
                      ) -> tuple[dict[str, FrameworkCalibration], list[str]]:
    """Each framework's request latency on the chip's light-load TTFT points (≤ 8 sequences per replica),
    with the chip's refitted factors: ``TTFT = one prefill + L`` (:func:`costmodels.framework_fit.
    fit_latency_s`, each model weighted equally), scored held out by the chip's groups; a framework with
    fewer than :data:`MIN_BAND_POINTS` such points keeps the catalogue's latency."""
    from costmodels.frameworks import framework_entry, framework_names

    fitted = chip_with(chip, **report.fitted)
    by_fw: dict[str, list[tuple]] = {}
    elig = [(m, g) for m, g in zip(report.rows, report.groups, strict=True) if m.ttft_eligible]
    prefill = one_prefill_s(fitted, [m for m, _ in elig], models) if elig else []
    for (m, g), p in zip(elig, prefill, strict=True):
        by_fw.setdefault(m.row.backend, []).append((float(p), m.row.ttft_ms / 1e3, m.model, str(g)))
    out: dict[str, FrameworkCalibration] = {}
    notes = []
    for fw, pts in sorted(by_fw.items()):
        if fw not in framework_names():
            notes.append(f"framework {fw}: not in costmodels/catalog/frameworks.yaml, its latency not refitted")
            continue
        if len(pts) < MIN_BAND_POINTS:
            notes.append(f"framework {fw}: {len(pts)} light-load TTFT points (< {MIN_BAND_POINTS}): its catalogue "
                         "request latency kept")
            continue
        p = np.array([x[0] for x in pts])
        m = np.array([x[1] for x in pts])
        w = [x[2] for x in pts]
        keys = [x[3] for x in pts]
        latency = fit_latency_s(p, m, w)
        held = np.full(len(pts), np.nan)
        for k in sorted(set(keys)):
            test = np.array([x == k for x in keys])
            if not test.all():
                held[test] = p[test] + fit_latency_s(p[~test], m[~test], [x for x, t in zip(w, test, strict=True)
                                                                          if not t])
        err = _median_abs(held, m)
        out[fw] = FrameworkCalibration(ttft_request_latency_s=round(latency, 6), points=len(pts),
                                       heldout_median_abs_error=err)
        catalogue_s = framework_entry(fw).ttft_request_latency_s
        notes.append(f"framework {fw}: request latency {catalogue_s * 1e3:.0f} → {latency * 1e3:.0f} ms on "
                     f"{len(pts)} light-load TTFT points; TTFT |error| {_pct(_median_abs(p + catalogue_s, m))} → "
                     f"{_pct(err)} held out")
    return out, notes
