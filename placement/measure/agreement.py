"""``placement measure compare``: predicted against measured, point by point, and the share inside the bands.

Each measured point is priced as the calibration prices it (:func:`costmodels.calibration.predict_rows`:
the run's layout, batch per replica = concurrency × chips per replica ÷ chips, context = prompt + half
the output, prompt tokens interleaved into decode steps as the engines' chunked prefill does) on the
chip *as the instance sees it* — the catalogue's, the instance's own record, or the calibration
overlay's. The ratio ``measured ÷ predicted`` of TPOT and TTFT (light load only) is set against the
chip's p10–p90 band (the overlay's, else its family's): a plan's p10–p90 figures are trustworthy to the
extent that about 80 % of the user's own points fall inside.

Examples
--------
>>> from placement.measure.points import MeasuredPoint, Measurements, Stats
>>> from placement.core.instance.loading import load_instance
>>> p = MeasuredPoint(source="r.json", format="vllm", sha256="0" * 64, chip="h100", chips=1,
...     model="llama-3.1-8b", framework="vllm", precision="bf16", prompt_tokens=1000, output_tokens=200,
...     concurrency=1, concurrency_basis="stated", ttft_ms=Stats(mean=60.0), tpot_ms=Stats(mean=7.0))
>>> rows, skipped = agreement([Measurements(points=[p])], load_instance("instances/melange-toy.yaml"))
>>> r = rows[0]
>>> r.chip, r.tpot_ms_measured, 0 < r.tpot_ms_predicted < 20, r.tpot_band[0] < r.tpot_band[1], skipped
('h100', 7.0, True, True, {})
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodels.calibration import predict_rows
from costmodels.measured_rows import map_row
from costmodels.models import load_model_catalog
from placement.core.instance.context import Context
from placement.core.instance.schema import Instance
from placement.measure.points import Measurements
from placement.measure.refit import SPECULATIVE

__all__ = ["PointAgreement", "agreement", "inside_share"]


@dataclass(frozen=True)
class PointAgreement:
    """One measured point against its prediction (ms; bands are of ``measured ÷ predicted``)."""

    source: str
    record: int
    chip: str
    model: str
    framework: str
    concurrency: float
    tpot_ms_measured: float
    tpot_ms_predicted: float
    tpot_band: tuple[float, float]
    ttft_ms_measured: float
    ttft_ms_predicted: float | None
    ttft_band: tuple[float, float]
    band_family: str

    @property
    def tpot_ratio(self) -> float:
        return self.tpot_ms_measured / self.tpot_ms_predicted

    @property
    def ttft_ratio(self) -> float | None:
        return None if self.ttft_ms_predicted is None else self.ttft_ms_measured / self.ttft_ms_predicted

    def inside(self, metric: str) -> bool | None:
        """Whether the measured ÷ predicted ratio of ``metric`` lies in its p10–p90 band (None: not compared)."""
        ratio, (lo, hi) = (self.tpot_ratio, self.tpot_band) if metric == "tpot" else (self.ttft_ratio, self.ttft_band)
        return None if ratio is None else lo <= ratio <= hi


def agreement(measurements: list[Measurements], inst: Instance) -> tuple[list[PointAgreement], dict[str, int]]:
    """Every point priced on the instance's chips (module docstring), and the points skipped, by reason."""
    ctx = Context.of(inst)
    models = load_model_catalog()
    out: list[PointAgreement] = []
    skipped: dict[str, int] = {}
    for meas in measurements:
        for p in meas.points:
            m = SPECULATIVE if p.speculative else map_row(p.measured_row(), ctx.chips, models)
            if isinstance(m, str):
                skipped[m] = skipped.get(m, 0) + 1
                continue
            tpot, ttft = predict_rows(ctx.chips[p.chip], [m], models)
            band = ctx.band(p.chip)
            out.append(PointAgreement(
                source=p.source, record=p.record, chip=p.chip, model=p.model, framework=p.framework,
                concurrency=p.concurrency, tpot_ms_measured=m.row.tpot_ms, tpot_ms_predicted=float(tpot[0]) * 1e3,
                tpot_band=band.span("tpot"), ttft_ms_measured=m.row.ttft_ms,
                ttft_ms_predicted=None if np.isnan(ttft[0]) else float(ttft[0]) * 1e3,
                ttft_band=band.span("ttft"), band_family=band.family))
    return out, skipped


def inside_share(rows: list[PointAgreement], metric: str) -> tuple[int, int]:
    """(points inside the p10–p90 band, points compared) for ``metric``."""
    flags = [f for f in (r.inside(metric) for r in rows) if f is not None]
    return sum(flags), len(flags)
