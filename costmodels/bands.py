"""Error bands of the cost models: how far measured serving falls from the prediction, per chip family.

``costmodels/catalog/error_bands.yaml`` (written by ``python benchmarks/calibrate.py``,
never by hand) holds, per chip family and metric, quantiles of the ratio
``measured ÷ predicted`` over the *held-out* (leave-one-source-out) predictions
of :mod:`costmodels.calibration`, at the levels :data:`LEVELS`. A ratio above 1
means the real system is slower (TPOT, TTFT) or serves more (throughput) than
predicted. Metrics: ``tpot`` (decode step), ``ttft`` (prefill step) and
``throughput`` (requests or tokens per chip).

Each family-metric record also states ``median_abs_error``: the median of
``|predicted ÷ measured − 1|`` over the same held-out points (None for the
``uncalibrated`` band and for a metric that fell back to it).

A chip that is not calibrated, or whose family has no held-out points, takes
the ``uncalibrated`` band: the spread of the *reference* factors' predictions
(catalogue defaults before any fit) over every measured point of every chip —
what pricing a chip from its datasheet alone has been seen to miss by.

A plan made at confidence ``c`` multiplies every roofline step time by the
``c`` quantile of its chip's ``tpot`` (decode, verify, aggregated steps) or
``ttft`` (prefill steps) ratio (:func:`step_factor`); at ``c = 0.9`` nine
held-out measurements in ten were no slower than the step the plan prices.

Examples
--------
>>> round(interpolate_quantile((0.1, 0.5, 0.9), (0.8, 1.0, 1.5), 0.7), 3)
1.25
>>> band = chip_band("h100")
>>> band.family, step_factor("h100", "decode", 0.9) >= step_factor("h100", "decode", 0.5)
('NVIDIA Hopper', True)
>>> chip_band("no-such-chip").family
'uncalibrated'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from topology.records import read_catalog_yaml

__all__ = [
    "BANDS_PATH",
    "LEVELS",
    "METRICS",
    "PLAN_LEVELS",
    "ChipBand",
    "chip_band",
    "framework_band",
    "interpolate_quantile",
    "ratio_quantiles",
    "stage_metric",
    "step_factor",
]

BANDS_PATH = Path(__file__).with_name("catalog") / "error_bands.yaml"

#: Quantile levels stored per family and metric: 0.05, 0.10, …, 0.95.
LEVELS: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 20))

#: The metrics a band is kept for (keys of the YAML's per-family mapping).
METRICS = ("tpot", "ttft", "throughput")

#: The levels every plan pool reports its band at (p10 / p50 / p90).
PLAN_LEVELS: tuple[float, ...] = (0.1, 0.5, 0.9)

#: The step-time metric each stage's step is banded by: prefill steps by TTFT residuals, the rest by TPOT.
_STAGE_METRIC = {"prefill": "ttft"}


def ratio_quantiles(measured, predicted, levels: tuple[float, ...] = LEVELS) -> list[float]:
    """Quantiles of ``measured ÷ predicted`` over the finite pairs (linear interpolation), at ``levels``.

    Examples
    --------
    >>> ratio_quantiles([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], (0.5,))
    [2.0]
    """
    r = np.asarray(measured, dtype=float) / np.asarray(predicted, dtype=float)
    r = r[np.isfinite(r) & (r > 0)]
    return [float(q) for q in np.quantile(r, levels)] if r.size else []


def interpolate_quantile(levels, values, confidence: float) -> float:
    """The quantile at ``confidence`` from stored ``(levels, values)``, linear between levels, clamped at the ends."""
    return float(np.interp(confidence, levels, values))


@dataclass(frozen=True)
class ChipBand:
    """The band a chip is priced with: its family, where the numbers come from, quantiles per metric."""

    chip: str
    family: str
    provenance: str
    levels: tuple[float, ...]
    quantiles: dict[str, tuple[float, ...]]
    heldout_error: dict[str, float | None] = field(default_factory=dict)

    def factor(self, metric: str, confidence: float) -> float:
        """``measured ÷ predicted`` at ``confidence`` for ``metric`` (``tpot``, ``ttft`` or ``throughput``)."""
        return interpolate_quantile(self.levels, self.quantiles[metric], confidence)

    def span(self, metric: str, levels: tuple[float, ...] = (0.1, 0.9)) -> tuple[float, ...]:
        """``measured ÷ predicted`` of ``metric`` at each of ``levels`` (default: the p10–p90 span)."""
        return tuple(self.factor(metric, lv) for lv in levels)


@lru_cache(maxsize=4)
def _read(path: Path) -> dict:
    doc = read_catalog_yaml(path)
    for fam, rec in doc["families"].items():
        missing = [m for m in METRICS if len(rec.get(m, {}).get("quantiles", [])) != len(doc["levels"])]
        if missing:
            raise ValueError(f"{path}: family {fam!r} lacks {len(doc['levels'])} quantiles for {missing}")
    return doc


def chip_band(chip: str, path: Path = BANDS_PATH) -> ChipBand:
    """The band of ``chip``: its calibrated family's, else the ``uncalibrated`` default."""
    doc = _read(Path(path))
    fam = doc["chips"].get(chip, "uncalibrated")
    rec = doc["families"][fam]
    return ChipBand(chip, fam, rec["provenance"], tuple(doc["levels"]),
                    {m: tuple(rec[m]["quantiles"]) for m in METRICS},
                    {m: rec[m].get("median_abs_error") for m in METRICS})


def framework_band(framework: str, path: Path = BANDS_PATH) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """``(levels, ttft quantiles)`` of a serving framework's TTFT band, None when the file has none for it.

    The YAML's optional ``frameworks`` mapping holds, per framework, measured ÷ predicted over the
    framework-aware TTFT model's held-out predictions (one prefill + the framework's request latency,
    ``benchmarks/ttft_framework.py``); ``pooled`` has none and keeps the chip family's band.
    """
    doc = _read(Path(path))
    rec = doc.get("frameworks", {}).get(framework)
    if rec is None:
        return None
    return tuple(doc["levels"]), tuple(rec["ttft"]["quantiles"])


def stage_metric(stage: str) -> str:
    """The residual metric a stage's step time is banded by.

    Examples
    --------
    >>> stage_metric("prefill"), stage_metric("decode")
    ('ttft', 'tpot')
    """
    return _STAGE_METRIC.get(stage, "tpot")


def step_factor(chip: str, stage: str, confidence: float | None) -> float:
    """What a ``stage`` step time on ``chip`` is multiplied by at ``confidence``; 1 when there is none."""
    if confidence is None:
        return 1.0
    return chip_band(chip).factor(stage_metric(stage), confidence)
